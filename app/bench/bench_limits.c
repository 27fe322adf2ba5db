/*
 * `pbf bench`'s stage limits: see bench_limits.h and bench/README.md.
 *
 * The machine: memory bandwidth by a STREAM-like triad a[i] = b[i] + s c[i] over three arrays of
 * doubles much larger than the last-level cache; peak float throughput by independent chains
 * x = x * m + a on vectors of the solver's width, a multiply and an add that stay separate
 * instructions (the build uses -ffp-contract=off, as the solver does: no fused multiply-add).
 * Both at each thread count of the runs, OpenMP threads, the best of several repetitions: the
 * triad's by the wall time of the whole pass (the threads share the memory), the peak's by each
 * thread's own time, the threads' best rates summed (a thread that another process delays does
 * not lower the others': on a busy machine the peak stays the cores'), times processors /
 * threads where the threads outnumber the processors.
 *
 * The work: counted by hand from src/solvers/pbf/pbf_cpu.c and src/solvers/common/common_cpu.c
 * (the PBF solver's stages; see the model below), so a change of those passes must be mirrored
 * here.
 */
#include "bench/bench_limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

/* ---- the machine ---------------------------------------------------------------------------- */

/* The solver's vector width (src/simd.h): 8 floats with AVX, 4 otherwise. */
#if defined(__AVX__)
#define LIM_LANES 8
#else
#define LIM_LANES 4
#endif
typedef float lim_vf __attribute__((vector_size(4 * LIM_LANES)));

/* Independent chains per thread: enough to cover the latency of a multiply then an add on every
 * floating-point pipe (e.g. 4 pipes x 5 cycles / 2 operations per step of a chain = 10). 16 where
 * AVX-512 gives 32 vector registers, else 12 (16 registers: no spills). */
#if defined(__AVX512VL__)
#define LIM_ACC 16
#else
#define LIM_ACC 12
#endif

#define LIM_MIB (1024.0 * 1024.0)
/* Repetitions per thread count, the best kept: at least MIN, more while the thread count's
 * time is under its budget (a short repetition that no other process interrupted is what a best
 * of several finds on a busy machine), at most MAX. */
#define LIM_TRIAD_MIN 3
#define LIM_TRIAD_MAX 12
#define LIM_TRIAD_BUDGET 0.12 /* s per thread count */
#define LIM_PEAK_MIN 5
#define LIM_PEAK_MAX 40
#define LIM_PEAK_BUDGET 0.06
#define LIM_PEAK_SECONDS 0.002 /* per repetition of the peak kernel */

static volatile float lim_sink; /* keeps the kernels' results alive */

/* Size in bytes of a sysfs cache size ("32768K", "1M"), 0 when unreadable. */
static size_t read_cache_size(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long v = 0;
    char unit = 0;
    int got = fscanf(f, "%lu%c", &v, &unit);
    fclose(f);
    if (got < 1) return 0;
    if (unit == 'K') return (size_t)v * 1024u;
    if (unit == 'M') return (size_t)v * 1024u * 1024u;
    if (unit == 'G') return (size_t)v * 1024u * 1024u * 1024u;
    return (size_t)v;
}

/* The highest-level data or unified cache of cpu0 (Linux sysfs), bytes; 0 when unknown. */
static size_t last_level_cache(void) {
    size_t best = 0;
    int best_level = 0;
    for (int k = 0; k < 16; ++k) {
        char path[128], type[32] = "";
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", k);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fscanf(f, "%d", &level) != 1) level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", k);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%31s", type) != 1) type[0] = '\0';
            fclose(f);
        }
        if (strcmp(type, "Instruction") == 0 || level < best_level) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", k);
        size_t size = read_cache_size(path);
        if (size > 0 && (level > best_level || size > best)) {
            best = size;
            best_level = level;
        }
    }
    return best;
}

/* One triad pass at t threads, seconds. */
static double triad_pass(double *restrict a, const double *restrict b, const double *restrict c,
                         long n, double s, int t) {
    const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(t)
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    return omp_get_wtime() - t0;
}

/* LIM_ACC independent chains x = x * m + a for `iters` steps (2 LIM_ACC LIM_LANES flops each). */
static float peak_chains(long iters, float m, float add) {
    const lim_vf vm = m - (lim_vf){0}, va = add - (lim_vf){0};
    /* different starts: identical chains would be computed once */
    const lim_vf d = 0.01f * va;
    lim_vf x0 = vm, x1 = x0 + d, x2 = x1 + d, x3 = x2 + d, x4 = x3 + d, x5 = x4 + d, x6 = x5 + d,
           x7 = x6 + d, x8 = x7 + d, x9 = x8 + d, x10 = x9 + d, x11 = x10 + d;
#if LIM_ACC == 16
    lim_vf x12 = x11 + d, x13 = x12 + d, x14 = x13 + d, x15 = x14 + d;
#endif
    for (long it = 0; it < iters; ++it) {
        x0 = x0 * vm + va;
        x1 = x1 * vm + va;
        x2 = x2 * vm + va;
        x3 = x3 * vm + va;
        x4 = x4 * vm + va;
        x5 = x5 * vm + va;
        x6 = x6 * vm + va;
        x7 = x7 * vm + va;
        x8 = x8 * vm + va;
        x9 = x9 * vm + va;
        x10 = x10 * vm + va;
        x11 = x11 * vm + va;
#if LIM_ACC == 16
        x12 = x12 * vm + va;
        x13 = x13 * vm + va;
        x14 = x14 * vm + va;
        x15 = x15 * vm + va;
#endif
    }
    lim_vf s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)) + ((x8 + x9) + (x10 + x11));
#if LIM_ACC == 16
    s += (x12 + x13) + (x14 + x15);
#endif
    float r = 0.0f;
    for (int l = 0; l < LIM_LANES; ++l) r += s[l];
    return r;
}

/* `iters` steps of the chains on each of t threads, started together; each thread's own seconds
 * into sec[thread] (NULL: not kept). Returns the wall seconds of the whole. */
static double peak_run(long iters, int t, float m, float add, double *sec) {
    const double t0 = omp_get_wtime();
    float total = 0.0f;
#pragma omp parallel num_threads(t) reduction(+ : total)
    {
        const double a = omp_get_wtime();
        total += peak_chains(iters, m, add);
        if (sec) sec[omp_get_thread_num()] = omp_get_wtime() - a;
    }
    const double dt = omp_get_wtime() - t0;
    lim_sink = total;
    return dt;
}

void pbfapp_measure_limits(const int *threads, int n, pbfapp_machine_limits *out) {
    memset(out, 0, sizeof *out);
    const double start = omp_get_wtime();
    if (n > PBFAPP_LIMITS_MAX_THREADS) n = PBFAPP_LIMITS_MAX_THREADS;
    int tmax = 1;
    for (int k = 0; k < n; ++k) tmax = threads[k] > tmax ? threads[k] : tmax;
    out->llc_bytes = last_level_cache();
    /* each array at least 64 MiB, the three at least 4 times the last-level cache (at most 1 GiB
     * each) */
    size_t bytes = (size_t)(64.0 * LIM_MIB);
    if (out->llc_bytes > 0 && 4 * out->llc_bytes / 3 > bytes) bytes = 4 * out->llc_bytes / 3;
    if (bytes > ((size_t)1 << 30)) bytes = (size_t)1 << 30;
    const long len = (long)(bytes / sizeof(double));
    out->array_bytes = (size_t)len * sizeof(double);
    out->lanes = LIM_LANES;
    out->accumulators = LIM_ACC;
    double *a = malloc(out->array_bytes), *b = malloc(out->array_bytes),
           *c = malloc(out->array_bytes);
    if (!a || !b || !c) {
        snprintf(out->error, sizeof out->error, "cannot allocate 3 x %.0f MiB for the triad",
                 (double)out->array_bytes / LIM_MIB);
        free(a);
        free(b);
        free(c);
        return;
    }
    /* first touch by the threads that use the pages (the same static split as the triad) */
#pragma omp parallel for schedule(static) num_threads(tmax)
    for (long i = 0; i < len; ++i) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    /* the peak kernel's length: about LIM_PEAK_SECONDS per repetition, from a short run */
    volatile float m_src = 0.5f, a_src = 0.5f; /* x = 0.5 x + 0.5 tends to 1: no denormals */
    const float m = m_src, add = a_src;
    (void)peak_run(1L << 12, 1, m, add, NULL);
    long probe = 1L << 14;
    double dt = peak_run(probe, 1, m, add, NULL);
    while (dt < 1e-3 && probe < (1L << 30)) {
        probe *= 4;
        dt = peak_run(probe, 1, m, add, NULL);
    }
    long iters = (long)((double)probe * LIM_PEAK_SECONDS / (dt > 0.0 ? dt : 1e-3));
    if (iters < 1000) iters = 1000;
    for (int k = 0; k < n; ++k) {
        const int t = threads[k] > 0 ? threads[k] : 1;
        double best = INFINITY, spent = 0.0;
        (void)triad_pass(a, b, c, len, 3.0, t); /* threads started, pages mapped */
        int r = 0;
        for (; r < LIM_TRIAD_MAX && (r < LIM_TRIAD_MIN || spent < LIM_TRIAD_BUDGET); ++r) {
            double s = triad_pass(a, b, c, len, 3.0, t);
            spent += s;
            if (s < best) best = s;
        }
        out->triad_reps = r < out->triad_reps || !out->triad_reps ? r : out->triad_reps;
        /* each thread's best time, summed as rates: a thread that another process delays
         * does not count against the others (the whole's wall time would) */
        double *sec = malloc((size_t)t * sizeof *sec), *best_sec = malloc((size_t)t * sizeof *sec);
        if (!sec || !best_sec) {
            free(sec);
            free(best_sec);
            snprintf(out->error, sizeof out->error, "out of memory");
            free(a);
            free(b);
            free(c);
            return;
        }
        for (int k2 = 0; k2 < t; ++k2) best_sec[k2] = INFINITY;
        spent = 0.0;
        for (r = 0; r < LIM_PEAK_MAX && (r < LIM_PEAK_MIN || spent < LIM_PEAK_BUDGET); ++r) {
            for (int k2 = 0; k2 < t; ++k2) sec[k2] = INFINITY;
            spent += peak_run(iters, t, m, add, sec);
            for (int k2 = 0; k2 < t; ++k2)
                if (sec[k2] < best_sec[k2]) best_sec[k2] = sec[k2];
        }
        double rate = 0.0; /* steps per second, all threads */
        for (int k2 = 0; k2 < t; ++k2)
            if (best_sec[k2] > 0.0 && best_sec[k2] < INFINITY) rate += (double)iters / best_sec[k2];
        const int procs = omp_get_num_procs(); /* more threads than processors share them */
        if (procs > 0 && t > procs) rate *= (double)procs / (double)t;
        free(sec);
        free(best_sec);
        out->peak_reps = r < out->peak_reps || !out->peak_reps ? r : out->peak_reps;
        out->threads[k] = t;
        out->triad_gbs[k] = 3.0 * (double)out->array_bytes / best / 1e9;
        out->peak_gflops[k] = rate * 2.0 * LIM_ACC * LIM_LANES / 1e9;
    }
    lim_sink = (float)a[len / 2]; /* the triad's result is used */
    free(a);
    free(b);
    free(c);
    out->n = n;
    out->ok = 1;
    out->seconds = omp_get_wtime() - start;
}

int pbfapp_limits_index(const pbfapp_machine_limits *m, int threads) {
    if (!m || !m->ok) return -1;
    for (int k = 0; k < m->n; ++k)
        if (m->threads[k] == threads) return k;
    return -1;
}

const char *pbfapp_stage_bound(double bandwidth_pct, double peak_pct, int has_work) {
    if (!has_work) return "none";
    if (bandwidth_pct < 50.0 && peak_pct < 50.0) return "latency/other";
    return bandwidth_pct >= peak_pct ? "memory" : "compute";
}

/* ---- the work ------------------------------------------------------------------------------
 * Counted from the CPU stages of PBF (src/solvers/pbf/, its stage table: predict; grid = sort,
 * reorder and the neighbour lists; lambda; delta_p with the collisions; collide, for PBF a swap
 * of buffers; velocity = the velocity update with the curl pass, then the vorticity and XSPH
 * pass; stats).
 *
 * Flops: every addition, subtraction, multiplication, division and square root of floats (and
 * of the doubles of the statistics and the cell index), one each; comparisons, min/max, masks
 * and conversions are not counted. Neighbour loops run on 8 lanes: only the lanes of listed
 * neighbours count (the last chunk of a list is partly masked, some 10 % more lanes executed).
 * A horizontal sum of a vector counts 7 additions. The wall terms (the wall density's integral
 * tables near a wall, collisions and friction at a wall) are not counted beyond the tests that
 * every particle makes, nor are rare branches (speed limit, non-finite values): the flops are a
 * lower bound.
 *
 * Bytes: the per-particle arrays each pass reads and writes as the code names them, once per
 * particle (4 bytes a float or index), plus 1.5 bytes per listed neighbour (12-bit codes),
 * STREAM's convention (a written line's read for ownership is not counted, on either side of
 * the comparison). Data gathered from neighbours (the packed 16-byte copies, velocities) is
 * assumed to hit in cache: particles are sorted by cell, so the neighbours of consecutive
 * particles are the same few cell ranges; only its first use in a pass comes from memory, counted
 * as one read of the array per particle. So the bytes are a lower bound of the memory traffic.
 *
 * Neighbours: P pairs within h, self included (pbf_world_neighbour_pairs after the last measured
 * step: the lists' entries of a step, up to the small move from x to the predicted x*); the
 * grid's scan tests the candidates of 27 cells of side h, 27 / (4 pi / 3) = 6.45 per neighbour
 * at uniform density. */

#define CANDIDATES_PER_NEIGHBOUR (27.0 / (4.0 * 3.14159265358979 / 3.0))

/* Shared pieces of a neighbour's work. */
#define F_DIST 8      /* dx, dy, dz: 3 sub; r2: 3 mul + 2 add */
#define F_POLY6 4     /* d = h2 - r2; poly6 * d * d * d */
#define F_SPIKY 5     /* sqrt; d = h - r; spiky * d * d; / r */
#define F_HSUM 7      /* a horizontal sum of 8 lanes */
#define F_WALL_TEST 6 /* pbf_wall_density's 6 distances to the container's faces */

const char *const pbfapp_stage_model_note =
    "stage_limits: a model of the CPU backend's PBF stages (app/bench/bench_limits.c, counted from "
    "src/backends/cpu/cpu.c) over each stage's time. bytes_per_step: the per-particle arrays "
    "each pass reads and writes, once per particle, plus 1.5 bytes per neighbour-list entry; data "
    "gathered from neighbours (the packed 16-byte copies) is assumed to hit in cache because the "
    "particles are sorted by cell, only its first use per pass counted: a lower bound of the "
    "memory traffic, compared with the triad's bandwidth counted the same way (no write-allocate "
    "reads on either side). flops_per_step: adds, subtracts, multiplies, divisions and square "
    "roots (one each) of the listed neighbours' lanes and per particle, without the wall terms "
    "near walls: a lower bound, compared with the peak of separate 8-wide multiplies and adds "
    "(a division or square root occupies the divider for several cycles, so a stage can be "
    "compute-bound below 100 %). Neighbours: pbf_world_neighbour_pairs after the last "
    "measured step (pairs within h, self included, at the current positions); the grid's list "
    "scan tests 27 / (4 pi / 3) = 6.45 candidates per neighbour. bound: memory or compute when "
    "that share is the larger and at least 50 %, "
    "latency/other when both are under 50 % (gathers, shuffles, the divider, synchronisation, "
    "the sequential counting sort), none when there is no time or no modelled work (PBF's "
    "collide is a swap of buffers). Shares above 100 % of the bandwidth mean the stage's data "
    "stayed in cache (small cases).";

static void set_work(pbfapp_stage_work *w, double passes, double flops_pair, double flops_particle,
                     double bytes_pair, double bytes_particle, double bytes_cell,
                     const pbfapp_model_input *in) {
    w->passes = passes;
    w->flops_pair = flops_pair;
    w->flops_particle = flops_particle;
    w->bytes_pair = bytes_pair;
    w->bytes_particle = bytes_particle;
    w->bytes_cell = bytes_cell;
    w->flops = passes * (flops_pair * in->pairs + flops_particle * in->particles);
    w->bytes =
        passes * (bytes_pair * in->pairs + bytes_particle * in->particles + bytes_cell * in->cells);
}

void pbfapp_stage_model(const pbfapp_model_input *in, pbfapp_stage_work w[PBFAPP_MS_COUNT]) {
    memset(w, 0, sizeof(pbfapp_stage_work) * PBFAPP_MS_COUNT);
    const double S = in->substeps, I = in->iterations;
    const double scorr_muls = in->scorr_n == 4 ? 2.0 : (double)(in->scorr_n - 1);

    /* predict (stage_predict), per particle: v += g dt (3), the speed limit's |v|^2 (5),
     * x* = x + dt v (6), the non-finite test's sum (2). Reads v, x; writes v, x*. */
    set_work(&w[PBFAPP_MS_PREDICT], S, 0, 16, 0, 48, 0, in);

    /* grid (stage_grid): the cell of x* in double (3 sub + 3 mul), read x*, write the cell (16 B);
     * the counting sort's histogram (read the cell, 4 B) and scatter (read the cell, write the
     * permutation, 8 B), and the cell starts (clear, prefix sum, shift: 20 B per cell); the
     * reorder of the 8 sorted fields PBF keeps live (x, x*, id, cell; the velocity is dead until
     * the velocity stage): read the permutation and the field, write it (12 B each); the lists
     * (build_lists): read x* and the cell (16 B), write the 2-byte list start, write 1.5 B per
     * entry (12-bit codes); 8 flops per candidate tested. */
    set_work(&w[PBFAPP_MS_GRID], S, CANDIDATES_PER_NEIGHBOUR * F_DIST, 6, 1.5,
             16 + 4 + 8 + 8 * 12 + 16 + 2, 20, in);

    /* lambda (stage_lambda, density_grad_sums), per entry: distance, W, rho += W, f = V grad W
     * (1 + spiky), f dx, dy, dz (3), the gradient sum (3), |f d|^2 summed (6) = 31; per particle:
     * the wall test, 5 horizontal sums, the wall gradient (3), rho (3), C (2), the sum of squares
     * (6), lambda (add, div), the error's mean (3) = 60. Bytes: the packed copy (read x*, write
     * 12 B of it), then read x*, the cell, the list start (2 B), the packed copy once (16 B),
     * write density and lambda and the wall gradient (into v, for delta p), read the density for
     * the error: 82 B, and 1.5 B per entry. */
    set_work(&w[PBFAPP_MS_LAMBDA], I + (in->tolerance ? S : 0.0),
             F_DIST + F_POLY6 + 1 + 1 + F_SPIKY + 3 + 3 + 6,
             F_WALL_TEST + 5 * F_HSUM + 3 + 3 + 2 + 6 + 2 + 3, 1.5, 82, 0, in);

    /* delta_p (stage_delta_p), per entry: distance, W, W / W(dq) (1), its power (2 for n = 4),
     * s_corr (1), lambda_i + lambda_j + s_corr (2), times V and grad W (2 + spiky), f d (3), the
     * sums (3) = 31; per particle: 3 horizontal sums, delta p with omega (9), the non-finite
     * tests (2 + 2), x* + delta p (3), the container's collision bounds (6; the collision itself
     * only outside them) = 43 (the wall gradient is lambda's, read back from v). Bytes: the packed
     * copy with lambda (read 16, write 16), then read x*, lambda, the wall gradient, the cell,
     * the list start (2 B), x (friction), the packed copy once, write x* + delta p into v (dead
     * until the velocity stage): 106 B, and 1.5 B per entry. */
    set_work(&w[PBFAPP_MS_DELTA_P], I,
             F_DIST + F_POLY6 + 1 + scorr_muls + 1 + 2 + 2 + F_SPIKY + 3 + 3,
             3 * F_HSUM + 9 + 4 + 3 + 6, 1.5, 106, 0, in);

    /* collide (stage_collide): PBF's delta p has collided; a swap of buffers, no work. */
    set_work(&w[PBFAPP_MS_COLLIDE], I, 0, 0, 0, 0, 0, in);

    /* velocity (stage_velocity + stage_vorticity_xsph). The velocity update per particle:
     * (x* - x) / dt (6), the speed limit (5), the non-finite test (2); reads x*, x, writes v and
     * the packed (x*, v_x): 52 B. The curl pass per entry: distance, W, rho += W, f = V grad W,
     * f d (3), v_j - v_i (3), the cross product summed (12) = 37; per particle: the wall test,
     * 4 horizontal sums, the density (3), |omega| (6) = 43; reads x*, v, the cell, the list
     * start (2 B), the packed copy once, writes the density, omega and |omega|: 66 B. The packed
     * (x*, m / rho): 1 division; reads x*, rho, writes 16 B: 32 B. The vorticity and XSPH pass
     * per entry: distance, m/rho W (1 + W), XSPH's sum (9), (|omega_j| - |omega_i|) m/rho grad W
     * (3 + spiky), eta's sum (6) = 36; per particle: 6 horizontal sums, XSPH (6), |eta| (6),
     * with confinement N and eps (N x omega) dt (21), the speed limit (5), the test (2) = 61 +
     * 21; reads x*, v, omega, |omega|, the cell, the list start, the packed copy once, writes
     * the new velocity: 74 B. And 1.5 B per entry in each of the two passes.
     * Without vorticity confinement (vorticity 0) omega is never computed: the curl pass is the
     * density alone (per entry distance, W, rho += W = 13; per particle the wall test, 1
     * horizontal sum, the density (3) = 16; reads x*, the cell, the list start, the packed copy
     * once, writes the density: 38 B), and the XSPH pass gathers no |omega| (per entry 22; per
     * particle 3 horizontal sums, XSPH (6), the speed limit (5), the test (2) = 34; 58 B). */
    if (in->vorticity)
        set_work(&w[PBFAPP_MS_VELOCITY], S,
                 (F_DIST + F_POLY6 + 1 + 1 + F_SPIKY + 3 + 3 + 12) +
                     (F_DIST + 1 + F_POLY6 + 9 + 3 + F_SPIKY + 6),
                 13 + (F_WALL_TEST + 4 * F_HSUM + 3 + 6) + 1 + (6 * F_HSUM + 6 + 6 + 5 + 2 + 21),
                 3, 52 + 66 + 32 + 74, 0, in);
    else
        set_work(&w[PBFAPP_MS_VELOCITY], S,
                 (F_DIST + F_POLY6 + 1) + (F_DIST + 1 + F_POLY6 + 9),
                 13 + (F_WALL_TEST + F_HSUM + 3) + 1 + (3 * F_HSUM + 6 + 5 + 2), 3,
                 52 + 38 + 32 + 58, 0, in);

    /* stats (stage_stats), per particle: the density error (2) summed (1), |v|^2 (5); reads the
     * density, v and x: 28 B. Once per step. */
    set_work(&w[PBFAPP_MS_STATS], 1, 0, 8, 0, 28, 0, in);
}
