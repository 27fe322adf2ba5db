/*
 * The frame files of a run's directory (frame_NNNNN.EXT, 5 or more digits), in frame order: what
 * `pbf render DIR` and `pbf mesh DIR` read.
 */
#ifndef PBFAPP_FRAME_FILES_H
#define PBFAPP_FRAME_FILES_H

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbfapp_frame_file {
    int number; /* NNNNN */
    char *name; /* the file name (owned) */
} pbfapp_frame_file;

/* frame_NNNNN.EXT (5 or more digits) -> NNNNN, else -1. */
int pbfapp_frame_file_number(const char *name, const char *ext);

/* The files frame_NNNNN.EXT of dir, sorted by frame number (an allocation failure ends the list
 * early). PBF_ERR_IO ("DIR: cannot open the directory: REASON") when dir cannot be read. */
pbf_status pbfapp_frame_files_list(const char *dir, const char *ext, pbfapp_frame_file **out,
                                   int *count, pbf_error *err);

/* The frame files of the first of the extensions `ext`, then exts[0..n_exts), that has any
 * (*ext_out: that extension; none found: *count = 0 with the last one tried). Errors as
 * pbfapp_frame_files_list. */
pbf_status pbfapp_frame_files_find(const char *dir, const char *ext, const char *const *exts,
                                   int n_exts, pbfapp_frame_file **out, int *count,
                                   const char **ext_out, pbf_error *err);

void pbfapp_frame_files_free(pbfapp_frame_file *list, int n);

/* --frames A:B, A: or :B (0 <= A <= B; a missing end is open) into *first, *last; 0 when
 * malformed (*first, *last then unchanged). */
int pbfapp_frame_range_parse(const char *range, int *first, int *last);

/* Keeps the files of frames first..last (in order, at the front of list) and frees the others;
 * returns how many are kept. */
int pbfapp_frame_files_keep(pbfapp_frame_file *list, int n, int first, int last);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_FRAME_FILES_H */
