/*
 * How the CPU backend's neighbour passes split particles among OpenMP threads (see sweep_make).
 * Header-only, so that tests/test_sweep.c checks the same code the passes run.
 */
#ifndef PBF_CPU_SWEEP_H
#define PBF_CPU_SWEEP_H

#include <stdint.h>

/* The chunks of a pass over particles 0 .. n - 1 (`#pragma omp for schedule(monotonic :
 * dynamic, 1)` over chunk indices), guided and even: level l of the range, [n - n / 2^l,
 * n - n / 2^(l + 1)), is cut into one chunk per thread, while those chunks hold at least
 * SWEEP_MIN particles; the rest goes in chunks of SWEEP_MIN. So each thread starts on a long
 * run of consecutive particles, whose neighbours (the cells around them) stay in its own
 * cache, and the short chunks at the end even out the threads' finishing times. Chunks of 256
 * taken in turn by the threads (as before) made each core fetch nearly every neighbour line
 * the other one fetched: at 1M particles on 2 threads (`pbf bench --particles 1000000
 * --set vorticity=0`, 2-core AMD EPYC VM, runs alternated) a step took 495 ms against 457 ms
 * so (means of 6), and 1 -> 2 threads gave 1.73-1.93x against 1.83-2.08x (4 pairs); 59k
 * particles and 1 thread unchanged. Chunk starts are even (the paired AVX-512 loops take i and
 * i + 1 together). Every particle's result is computed alone, so the chunking never changes
 * a bit. */
#define SWEEP_MIN 256
typedef struct sweep {
    int n, threads, min, levels, count;
} sweep;
/* items 0 .. n - 1 (particles, or blocks of them: min = 1), chunks of at least min */
static inline sweep sweep_make_min(int n, int threads, int min) {
    sweep s = {n, threads > 0 ? threads : 1, min, 0, 0};
    /* levels while a level's chunk, n / 2^(l + 1) / threads, holds min items */
    while (s.levels < 30 && (n >> (s.levels + 1)) / s.threads >= min) ++s.levels;
    const int tail0 = (n - (n >> s.levels)) & ~1;
    s.count = s.threads * s.levels + (n - tail0 + min - 1) / min;
    return s;
}
static inline sweep sweep_make(int n, int threads) {
    return sweep_make_min(n, threads, SWEEP_MIN);
}
/* the first particle of chunk c (c = s.count: n) */
static inline int sweep_start(const sweep *s, int c) {
    if (c >= s->count) return s->n;
    const int l = c / s->threads;
    if (l < s->levels) {
        const int a = (s->n - (s->n >> l)) & ~1, b = (s->n - (s->n >> (l + 1))) & ~1;
        return (a + (int)((int64_t)(b - a) * (c % s->threads) / s->threads)) & ~1;
    }
    const int tail0 = (s->n - (s->n >> s->levels)) & ~1;
    const int64_t i = tail0 + (int64_t)(c - s->threads * s->levels) * s->min;
    return i < s->n ? (int)i : s->n;
}
/* Inside a parallel region:
 *     const sweep sweep_i = sweep_make(n, omp_get_num_threads());
 *     #pragma omp for schedule(monotonic : dynamic, 1)
 *     SWEEP_FOR(sweep_i, i) { body }
 * runs the body for i = 0 .. n - 1, chunked as above. */
#define SWEEP_FOR(sw, i)                                                                           \
    for (int i##_c = 0; i##_c < (sw).count; ++i##_c)                                               \
        for (int i = sweep_start(&(sw), i##_c), i##_e = sweep_start(&(sw), i##_c + 1); i < i##_e;  \
             ++i)

#endif /* PBF_CPU_SWEEP_H */
