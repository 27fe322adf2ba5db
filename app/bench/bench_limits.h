/*
 * `pbf bench`'s stage limits (bench/README.md): this machine's limits, measured once per
 * invocation (a STREAM-like triad for the memory bandwidth, independent vector multiply-and-add
 * chains for the peak float throughput, at each thread count of the runs), and a model of the
 * work of the CPU backend's PBF stages (bytes streamed and floating-point operations per step),
 * so that each stage's time reads as a share of the bandwidth and of the peak.
 */
#ifndef PBFAPP_BENCH_LIMITS_H
#define PBFAPP_BENCH_LIMITS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PBFAPP_LIMITS_MAX_THREADS 16 /* thread counts measured (bench's --threads entries) */

/* Plain data (no pointers): measured in a forked child, sent through a pipe. */
typedef struct pbfapp_machine_limits {
    int ok; /* 0: not measured (error says why) */
    char error[200];
    size_t llc_bytes;   /* last-level cache of cpu0 (sysfs), 0 when unknown */
    size_t array_bytes; /* each of the triad's three arrays of doubles */
    int lanes;          /* floats per vector of the peak kernel: the solver's (src/simd.h) */
    int accumulators;   /* independent multiply-add chains per thread */
    int triad_reps;     /* timed repetitions per thread count, the fewest of any (the best of
                            them is kept) */
    int peak_reps;
    double seconds; /* wall time of the whole measurement */
    int n;
    int threads[PBFAPP_LIMITS_MAX_THREADS];
    double triad_gbs[PBFAPP_LIMITS_MAX_THREADS];   /* 24 bytes per element, 1e9 B/s */
    double peak_gflops[PBFAPP_LIMITS_MAX_THREADS]; /* multiplies + adds, 1e9 per s */
} pbfapp_machine_limits;

/* Measures at each of threads[0..n) (n <= PBFAPP_LIMITS_MAX_THREADS) in this process, in about
 * 0.2 s per thread count and 0.1 to 0.3 s to set up. Enters OpenMP parallel regions: a process
 * that forks later (bench's runs) calls it in a child. */
void pbfapp_measure_limits(const int *threads, int n, pbfapp_machine_limits *out);

/* Index of `threads` in the measurement, -1 when not measured there. */
int pbfapp_limits_index(const pbfapp_machine_limits *m, int threads);

/* The stages of the model, in the order of `pbf bench`'s stage table. */
enum {
    PBFAPP_MS_PREDICT,
    PBFAPP_MS_GRID,
    PBFAPP_MS_LAMBDA,
    PBFAPP_MS_DELTA_P,
    PBFAPP_MS_COLLIDE,
    PBFAPP_MS_VELOCITY,
    PBFAPP_MS_STATS,
    PBFAPP_MS_COUNT
};

/* What the model needs of a run, per step (means over the measured steps). */
typedef struct pbfapp_model_input {
    double particles;
    double pairs;      /* neighbour pairs, self included: pbf_world_neighbour_pairs */
    double cells;      /* grid cells */
    double substeps;   /* substeps per step */
    double iterations; /* solver iterations per step, over all substeps */
    int tolerance;     /* pbf_tolerance > 0: the density pass runs once more per substep */
    int scorr_n;       /* exponent of the artificial pressure */
    int vorticity;     /* vorticity confinement on (epsilon > 0) */
} pbfapp_model_input;

typedef struct pbfapp_stage_work {
    double passes; /* times the stage's code runs per step */
    /* per pass: per neighbour pair, per particle, per grid cell */
    double flops_pair, flops_particle;
    double bytes_pair, bytes_particle, bytes_cell;
    /* per step: passes x (pairs x per pair + particles x per particle + cells x per cell) */
    double bytes; /* bytes of per-particle arrays read and written (see the .c) */
    double flops; /* additions, subtractions, multiplications, divisions, square roots */
} pbfapp_stage_work;

/* The work of the CPU backend's PBF stages per step (app/bench/bench_limits.c says how it is
 * counted). */
void pbfapp_stage_model(const pbfapp_model_input *in, pbfapp_stage_work work[PBFAPP_MS_COUNT]);

/* The assumptions of the model, one paragraph (JSON note). */
extern const char *const pbfapp_stage_model_note;

/* "memory", "compute", "latency/other" (both shares under 50 %) or "none" (no time or no work
 * modelled), from the shares of the bandwidth and of the peak, percent. */
const char *pbfapp_stage_bound(double bandwidth_pct, double peak_pct, int has_work);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_BENCH_LIMITS_H */
