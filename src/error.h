/*
 * The ground floor of the library (error.c): what every layer may call and which calls nothing
 * above it. Allocation of the large per-particle arrays is its neighbour, big_alloc.c.
 */
#ifndef PBF_ERROR_H
#define PBF_ERROR_H

#include <pbf/pbf.h>

/* Fills err (when not NULL) with the status and the formatted message (truncated to its size). */
void pbf_set_error(pbf_error *err, pbf_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
