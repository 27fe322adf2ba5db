/* The app's one error helper: fills err (if not NULL) and returns status. */
#ifndef PBFAPP_FAIL_H
#define PBFAPP_FAIL_H

#include "pbf/pbf.h"

pbf_status pbfapp_fail(pbf_error *err, pbf_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
