/* Small helpers shared by the app's commands: errors, options, atomic files. */
#ifndef PBFAPP_UTIL_H
#define PBFAPP_UTIL_H

#include <stdio.h>

#include "pbf/pbf.h"

/* Fills err (if not NULL) with the formatted message and returns status. */
pbf_status pbfapp_fail(pbf_error *err, pbf_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Matches argv[*i] against "--name VALUE" or "--name=VALUE": 1 matched (*value set, *i advanced
 * past a separate value), -1 the value is missing, 0 another option. */
int pbfapp_option_value(int argc, char **argv, int *i, const char *name, const char **value);

/* Finishes an atomic write: f holds the complete new contents of `path`, written to `tmp`.
 * Flushes, fsyncs and closes f, renames tmp over path and fsyncs the directory. On any error
 * tmp is removed, path is untouched, and the message names the file (and says "disk full or
 * file size limit" when that is the cause). f is closed in every case. */
pbf_status pbfapp_commit_file(FILE *f, const char *tmp, const char *path, pbf_error *err);

/* fsync of the directory holding `path`, so that a rename in it is durable (filesystems that
 * cannot sync directories count as success). Returns 0 or an errno value. */
int pbfapp_sync_parent_dir(const char *path);

/* " (disk full or file size limit)" for the errno values that mean it, else "". */
const char *pbfapp_space_hint(int e);

#endif
