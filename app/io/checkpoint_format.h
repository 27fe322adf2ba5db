/*
 * What the two halves of the checkpoint code share (app/io/checkpoint.c: single files, the scene
 * hash, a directory's checkpoints; app/io/checkpoint_pieces.c: pieces and their index): the file
 * head's magic and byte-order marker, byte copies, and the header checks. Internal to app/io/.
 */
#ifndef PBFAPP_CHECKPOINT_FORMAT_H
#define PBFAPP_CHECKPOINT_FORMAT_H

#include <stdint.h>
#include <string.h>

#include "pbf/pbf.h"

#define PBFAPP_CHECKPOINT_MAGIC {'P', 'B', 'F', 'C', 'K', 'P', 'T', '\0'}
#define ENDIAN_MARKER 0x01020304u
#define ENDIAN_SWAPPED 0x04030201u

static inline void put(unsigned char *dst, size_t *at, const void *src, size_t n) {
    if (n) memcpy(dst + *at, src, n);
    *at += n;
}

static inline void get(const unsigned char *src, size_t at, void *dst, size_t n) {
    memcpy(dst, src + at, n);
}

/* The header checks, on the first `avail` bytes of a file or buffer of `total` bytes: magic,
 * version, byte order, header size, particle count, and the size that count implies. */
pbf_status pbfapp_checkpoint_check_header(const unsigned char *p, size_t avail, uint64_t total,
                                          const char *name, int32_t *count_out,
                                          uint32_t *version_out, pbf_error *err);

#endif /* PBFAPP_CHECKPOINT_FORMAT_H */
