/* The CPU backend's chunking of a pass among threads (src/backends/cpu/sweep.h): every particle
 * in exactly one chunk, in order; chunk starts even (the paired AVX-512 loops take i and i + 1
 * together); each thread's first chunk a long run of consecutive particles; no chunk of the
 * levels shorter than the minimum; a bounded number of chunks. And the passes themselves: a run
 * with as many threads as the machine allows gives the same bits as one thread (test_solver
 * holds that for the whole step). */
#include <stdint.h>
#include <stdlib.h>

#include "backends/cpu/sweep.h"
#include "test.h"

static const int sizes[] = {0,      1,       2,       3,        255,      256,  257,
                            511,    512,     513,     1000,     4097,     6859, 59319,
                            100000, 1000000, 1000001, 10077696, 999999937};

/* Coverage, order, evenness (min even), the length of every level chunk. */
static void check(int n, int threads, int min, int *bad) {
    const sweep s = sweep_make_min(n, threads, min);
    if (sweep_start(&s, 0) != 0 || sweep_start(&s, s.count) != n) ++*bad;
    int prev = 0;
    for (int c = 0; c < s.count; ++c) {
        const int a = sweep_start(&s, c), b = sweep_start(&s, c + 1);
        if (a != prev || b < a) ++*bad;      /* contiguous, in order, never backwards */
        if (min % 2 == 0 && (a & 1)) ++*bad; /* even starts */
        if (c < s.threads * s.levels && b - a < min - 1) ++*bad; /* levels: long chunks */
        prev = b;
    }
    if (prev != n) ++*bad;
    /* at most threads chunks per level (30 levels at most) and the tail's chunks of min */
    if (s.count > s.threads * 30 + 2 * s.threads + 2) ++*bad;
}

static void test_every_particle_once(void) {
    int bad = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
        for (int t = 1; t <= 64; t = t < 4 ? t + 1 : 2 * t) {
            check(sizes[k], t, SWEEP_MIN, &bad);
            check(sizes[k], t, 1, &bad); /* the list build's blocks */
        }
    ENSURE_EQ_INT(bad, 0);
}

/* The point of it: at 1M particles on 2 threads the first two chunks are the two quarters of
 * the first half (250,000 consecutive particles each), and 24 chunks cover the range. */
static void test_long_first_runs(void) {
    const sweep s = sweep_make(1000000, 2);
    ENSURE_EQ_INT(sweep_start(&s, 1), 250000);
    ENSURE_EQ_INT(sweep_start(&s, 2), 500000);
    ENSURE_EQ_INT(s.count, 24);
    const sweep s16 = sweep_make(1000000, 16);
    ENSURE_EQ_INT(sweep_start(&s16, 1), 31250);
    ENSURE(s16.count < 160);
    /* fewer particles than a chunk: one chunk */
    const sweep one = sweep_make(100, 8);
    ENSURE_EQ_INT(one.count, 1);
}

/* SWEEP_FOR runs the body once per particle (the macro as the passes use it). */
static void test_macro(void) {
    const int n = 100003;
    unsigned char *seen = calloc((size_t)n, 1);
    ENSURE(seen != NULL);
    const sweep s = sweep_make(n, 3);
    long visits = 0;
    SWEEP_FOR(s, i) {
        seen[i]++;
        visits++;
    }
    int once = 1;
    for (int i = 0; i < n; ++i) once &= seen[i] == 1;
    free(seen);
    ENSURE_EQ_INT(visits, n);
    ENSURE(once);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_every_particle_once);
    RUN_SUBTEST(test_long_first_runs);
    RUN_SUBTEST(test_macro);
    return test_end();
}
