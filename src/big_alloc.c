/* Zeroed allocations of the large per-particle arrays, backed by transparent huge pages where
 * the system offers them (see internal.h: pbf_big_calloc). */
#if defined(__linux__)
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS, madvise's MADV_HUGEPAGE */
#include <sys/mman.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* AddressSanitizer checks only what the allocator it intercepts hands out: a sanitized build
 * keeps every array on aligned_alloc (no mapping, no huge pages) */
#if defined(__SANITIZE_ADDRESS__)
#define PBF_BIG_MAPPED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PBF_BIG_MAPPED 0
#endif
#endif
#if !defined(PBF_BIG_MAPPED) && defined(__linux__) && defined(MADV_HUGEPAGE)
#define PBF_BIG_MAPPED 1
#endif
#if !defined(PBF_BIG_MAPPED)
#define PBF_BIG_MAPPED 0
#endif

#define HUGE_PAGE ((size_t)2 << 20)
#define HEADER 64 /* before the data: where it came from (alignment of the small ones: 64) */

typedef struct big_header {
    void *map;        /* the mapping, or NULL: from aligned_alloc, starting at the header */
    size_t map_bytes;
} big_header;

void *pbf_big_calloc(size_t bytes, size_t hot) {
    if (bytes > SIZE_MAX - 2 * HUGE_PAGE) return NULL;
#if PBF_BIG_MAPPED
    if (bytes >= PBF_BIG_MIN) {
        /* a 2 MiB-aligned start (the page before it holds the header), mapped zeroed and
         * faulted in on first touch as ever; only whole huge pages of the first `hot` bytes are
         * advised, so that untouched room at the end (list headroom, padding) stays in 4 KiB
         * pages and out of the resident set */
        const size_t map_bytes = bytes + HUGE_PAGE + 4096;
        unsigned char *map =
            mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) return NULL;
        const uintptr_t at = ((uintptr_t)map + 4096 + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        unsigned char *p = (unsigned char *)at;
        big_header h = {map, map_bytes};
        memcpy(p - HEADER, &h, sizeof h);
        const size_t advised = (hot < bytes ? hot : bytes) / HUGE_PAGE * HUGE_PAGE;
        if (advised) (void)madvise(p, advised, MADV_HUGEPAGE); /* advice only: may be refused */
        return p;
    }
#endif
    (void)hot;
    const size_t total = (HEADER + bytes + 63) / 64 * 64;
    unsigned char *q = aligned_alloc(64, total);
    if (!q) return NULL;
    memset(q, 0, total);
    const big_header h = {NULL, 0};
    memcpy(q, &h, sizeof h);
    return q + HEADER;
}

void pbf_big_free(void *p) {
    if (!p) return;
    unsigned char *q = (unsigned char *)p - HEADER;
    big_header h;
    memcpy(&h, q, sizeof h);
#if PBF_BIG_MAPPED
    if (h.map) {
        munmap(h.map, h.map_bytes);
        return;
    }
#endif
    free(q);
}
