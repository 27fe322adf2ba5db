/* `pbf bench`: the table of the results, the stage limits and the JSON file (see bench.c). */
#define _POSIX_C_SOURCE 200809L

#include "bench/bench_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/util.h"

#ifndef PBF_BENCH_BUILD_TYPE
#define PBF_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef PBF_BENCH_FLAGS
#define PBF_BENCH_FLAGS "unknown"
#endif
#ifndef PBF_BENCH_GIT
#define PBF_BENCH_GIT ""
#endif

const char *const STAGE_NAMES[ST_COUNT] = {
    "predict", "grid", "lambda", "delta_p", "collide", "velocity", "stats", "other", "total"};

/* ---- output ------------------------------------------------------------------------------- */

static double mib(long kib) {
    return (double)kib / 1024.0;
}

static long rss_world_kib(const bench_result *r) {
    return r->rss_peak_kib > r->rss_baseline_kib ? r->rss_peak_kib - r->rss_baseline_kib : 0;
}

/* Resident memory held at the end of the run (world alive) beyond the resident set before it. */
static long rss_live_kib(const bench_result *r) {
    if (r->rss_now_before_kib < 0 || r->rss_now_end_kib < 0) return -1;
    return r->rss_now_end_kib > r->rss_now_before_kib ? r->rss_now_end_kib - r->rss_now_before_kib
                                                      : 0;
}

/* ---- stage limits (bench_limits.c) ---------------------------------------------------------- */

_Static_assert(ST_STATS - ST_PREDICT + 1 == PBFAPP_MS_COUNT && ST_PREDICT == 0,
               "the model's stages are the stage table's first ones, in its order");
_Static_assert(BENCH_MAX_THREADS <= PBFAPP_LIMITS_MAX_THREADS,
               "every --threads entry is measured");

/* Why the limits are not shown at all ("" when they are). */
static const char *limits_off(const bench_options *o) {
    if (strcmp(o->device, "cpu") != 0) return "the model is the CPU backend's";
    if (!o->limits) return "--no-limits";
    if (!o->machine.ok) return o->machine.error;
    return "";
}

/* The model of run r: 1 and work[] with the index of its thread count in the measurement, or 0
 * with *why. */
static int run_model(const bench_options *o, const bench_result *r,
                     pbfapp_stage_work work[PBFAPP_MS_COUNT], int *li, const char **why) {
    *why = limits_off(o);
    *li = -1;
    if ((*why)[0]) return 0;
    if (!r->solver_pbf) {
        *why = "the model covers the PBF solver's stages";
        return 0;
    }
    if (!(r->nbr_pairs >= 0.0)) {
        *why = "the neighbours could not be counted (pbf_world_neighbour_pairs)";
        return 0;
    }
    *li = pbfapp_limits_index(&o->machine, r->threads);
    if (*li < 0) {
        *why = "this thread count was not measured";
        return 0;
    }
    const pbfapp_model_input in = {(double)r->particles, r->nbr_pairs, r->grid_cells,
                                   r->substeps > 0 ? r->substeps : 1.0, r->iterations,
                                   r->pbf_tolerance, r->scorr_n, r->vorticity};
    pbfapp_stage_model(&in, work);
    return 1;
}

typedef struct stage_share {
    double ms, gbs, bw_pct, gflops, peak_pct;
    const char *bound;
} stage_share;

static stage_share share_of(const bench_options *o, const bench_result *r, int li,
                            const pbfapp_stage_work *wk, int stage) {
    stage_share sh = {r->stage_ms[stage], 0, 0, 0, 0, NULL};
    const double sec = sh.ms / 1000.0;
    const int has = sec > 0.0 && (wk->bytes > 0.0 || wk->flops > 0.0);
    if (has) {
        sh.gbs = wk->bytes / sec / 1e9;
        sh.gflops = wk->flops / sec / 1e9;
        if (o->machine.triad_gbs[li] > 0) sh.bw_pct = 100.0 * sh.gbs / o->machine.triad_gbs[li];
        if (o->machine.peak_gflops[li] > 0)
            sh.peak_pct = 100.0 * sh.gflops / o->machine.peak_gflops[li];
    }
    sh.bound = pbfapp_stage_bound(sh.bw_pct, sh.peak_pct, has);
    return sh;
}

static void print_limits_header(FILE *f, const bench_options *o) {
    const char *off = limits_off(o);
    if (strcmp(o->device, "cpu") != 0 || !o->limits) return;
    if (off[0]) {
        fprintf(f, "machine limits: not measured (%s)\n", off);
        return;
    }
    const pbfapp_machine_limits *m = &o->machine;
    char llc[32] = "unknown";
    if (m->llc_bytes) snprintf(llc, sizeof llc, "%.0f MiB", (double)m->llc_bytes / 1048576.0);
    fprintf(f,
            "memory bandwidth (STREAM triad a = b + s c over 3 x %.0f MiB of doubles, last-level "
            "cache %s, 24 B per element, best of %d or more):",
            (double)m->array_bytes / 1048576.0, llc, m->triad_reps);
    for (int k = 0; k < m->n; ++k)
        fprintf(f, "%s %.1f GB/s at %d thread%s", k ? "," : "", m->triad_gbs[k], m->threads[k],
                m->threads[k] == 1 ? "" : "s");
    fprintf(f,
            "\npeak float throughput (%d-wide multiplies and adds as the solver's, no FMA, %d "
            "chains per thread, best of %d or more):",
            m->lanes, m->accumulators, m->peak_reps);
    for (int k = 0; k < m->n; ++k)
        fprintf(f, "%s %.1f GFLOP/s at %d thread%s", k ? "," : "", m->peak_gflops[k],
                m->threads[k], m->threads[k] == 1 ? "" : "s");
    fprintf(f, " (both measured in %.2f s)\n", m->seconds);
}

static void print_stage_limits(FILE *f, const bench_options *o, const bench_result *res,
                               int nres) {
    const char *off = limits_off(o);
    if (off[0]) {
        fprintf(f, "\nstage limits: not shown (%s)\n", off);
        return;
    }
    fprintf(f, "\nstage limits (a model of the CPU backend's PBF stages, see `pbf bench --help`: "
               "bytes streamed and flops per step over the stage's time,\nas shares of the "
               "bandwidth and peak above at the run's thread count; bound: the share >= 50 %%, "
               "else latency/other):\n");
    fprintf(f, "%-8s %3s %-9s %9s %8s %6s %8s %6s  %s\n", "case", "thr", "stage", "ms", "GB/s",
            "% bw", "GFLOP/s", "% peak", "bound");
    for (int k = 0; k < nres; ++k) {
        const bench_result *r = &res[k];
        if (!r->ok) continue;
        const char *name = o->cases[r->case_index].name, *why = "";
        pbfapp_stage_work work[PBFAPP_MS_COUNT];
        int li;
        if (!run_model(o, r, work, &li, &why)) {
            fprintf(f, "%-8s %3d no model: %s\n", name, r->threads, why);
            continue;
        }
        fprintf(f, "%-8s %3d (%.1f neighbours per particle; passes per step: lambda %.0f, "
                   "delta_p %.0f)\n",
                name, r->threads, r->nbr_pairs / (double)r->particles,
                work[PBFAPP_MS_LAMBDA].passes, work[PBFAPP_MS_DELTA_P].passes);
        for (int s = 0; s < PBFAPP_MS_COUNT; ++s) {
            const stage_share sh = share_of(o, r, li, &work[s], ST_PREDICT + s);
            fprintf(f, "%-8s %3d %-9s %9.3f %8.2f %6.1f %8.2f %6.1f  %s\n", name, r->threads,
                    STAGE_NAMES[ST_PREDICT + s], sh.ms, sh.gbs, sh.bw_pct, sh.gflops,
                    sh.peak_pct, sh.bound);
        }
    }
}

/* The run's stage limits as JSON (NULL when it has no model). */
static cJSON *json_stage_limits(const bench_options *o, const bench_result *r) {
    pbfapp_stage_work work[PBFAPP_MS_COUNT];
    int li;
    const char *why;
    if (!run_model(o, r, work, &li, &why)) return NULL;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "neighbour_pairs", r->nbr_pairs);
    cJSON_AddNumberToObject(j, "neighbours_per_particle", r->nbr_pairs / (double)r->particles);
    cJSON_AddNumberToObject(j, "grid_cells", r->grid_cells);
    cJSON_AddNumberToObject(j, "triad_gb_per_s", o->machine.triad_gbs[li]);
    cJSON_AddNumberToObject(j, "peak_gflop_per_s", o->machine.peak_gflops[li]);
    cJSON *st = cJSON_AddObjectToObject(j, "stages");
    for (int s = 0; s < PBFAPP_MS_COUNT; ++s) {
        const stage_share sh = share_of(o, r, li, &work[s], ST_PREDICT + s);
        cJSON *sj = cJSON_AddObjectToObject(st, STAGE_NAMES[ST_PREDICT + s]);
        cJSON_AddNumberToObject(sj, "ms", sh.ms);
        cJSON_AddNumberToObject(sj, "passes_per_step", work[s].passes);
        cJSON_AddNumberToObject(sj, "flops_per_neighbour_pass", work[s].flops_pair);
        cJSON_AddNumberToObject(sj, "flops_per_particle_pass", work[s].flops_particle);
        cJSON_AddNumberToObject(sj, "bytes_per_neighbour_pass", work[s].bytes_pair);
        cJSON_AddNumberToObject(sj, "bytes_per_particle_pass", work[s].bytes_particle);
        cJSON_AddNumberToObject(sj, "bytes_per_cell_pass", work[s].bytes_cell);
        cJSON_AddNumberToObject(sj, "bytes_per_step", work[s].bytes);
        cJSON_AddNumberToObject(sj, "flops_per_step", work[s].flops);
        cJSON_AddNumberToObject(sj, "gb_per_s", sh.gbs);
        cJSON_AddNumberToObject(sj, "bandwidth_pct", sh.bw_pct);
        cJSON_AddNumberToObject(sj, "gflop_per_s", sh.gflops);
        cJSON_AddNumberToObject(sj, "peak_pct", sh.peak_pct);
        cJSON_AddStringToObject(sj, "bound", sh.bound);
    }
    return j;
}

static cJSON *json_machine_limits(const bench_options *o) {
    cJSON *j = cJSON_CreateObject();
    const char *off = limits_off(o);
    cJSON_AddBoolToObject(j, "measured", !off[0]);
    if (off[0]) {
        cJSON_AddStringToObject(j, "reason", off);
        return j;
    }
    const pbfapp_machine_limits *m = &o->machine;
    cJSON_AddStringToObject(j, "bandwidth_method",
                            "STREAM-like triad a[i] = b[i] + s * c[i] over three arrays of "
                            "doubles (OpenMP, static schedule, first touch by the same threads), "
                            "24 bytes counted per element (the read for ownership of a[i], "
                            "write-allocate, is not: 32 bytes actually move), best of triad_reps "
                            "after one untimed pass");
    cJSON_AddStringToObject(j, "peak_method",
                            "independent chains x = x * m + a on vectors of vector_lanes floats "
                            "(the solver's width), a multiply and an add as separate "
                            "instructions (-ffp-contract=off, no FMA), accumulators chains per "
                            "thread, 2 flops per lane and step; each thread times itself, the "
                            "threads' best rates over peak_reps repetitions summed");
    cJSON_AddNumberToObject(j, "last_level_cache_bytes", (double)m->llc_bytes);
    cJSON_AddNumberToObject(j, "triad_array_bytes", (double)m->array_bytes);
    cJSON_AddNumberToObject(j, "triad_bytes_per_element", 24);
    cJSON_AddNumberToObject(j, "triad_reps", m->triad_reps);
    cJSON_AddNumberToObject(j, "vector_lanes", m->lanes);
    cJSON_AddNumberToObject(j, "accumulators", m->accumulators);
    cJSON_AddNumberToObject(j, "peak_reps", m->peak_reps);
    cJSON_AddNumberToObject(j, "measure_s", m->seconds);
    cJSON *by = cJSON_AddArrayToObject(j, "by_threads");
    for (int k = 0; k < m->n; ++k) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "threads", m->threads[k]);
        cJSON_AddNumberToObject(e, "triad_gb_per_s", m->triad_gbs[k]);
        cJSON_AddNumberToObject(e, "peak_gflop_per_s", m->peak_gflops[k]);
        cJSON_AddItemToArray(by, e);
    }
    return j;
}

void pbfapp_bench_print_table(FILE *f, const bench_options *o, const machine_facts *m,
                              const bench_result *res, int nres) {
    fprintf(f, "pbf bench %s: %s, %ld cores (OpenMP default %d threads), %s\n", PBF_VERSION_STRING,
            m->cpu, m->cores, m->omp_max_threads, m->compiler);
    fprintf(f, "build %s: %s%s%s\n", PBF_BENCH_BUILD_TYPE, PBF_BENCH_FLAGS,
            PBF_BENCH_GIT[0] ? "; commit " : "", PBF_BENCH_GIT);
    const char *name = strcmp(o->device, "cpu") == 0 ? m->cpu : "";
    for (int k = 0; k < nres && !name[0]; ++k)
        if (res[k].ok) name = res[k].device_name;
    fprintf(f, "device %s%s%s%s\n", o->device, name[0] ? " (" : "", name, name[0] ? ")" : "");
    print_limits_header(f, o);
    fprintf(
        f,
        "dt %g s, %d iterations, %d warm-up steps excluded. Memory: peak = ru_maxrss of the run "
        "minus ru_maxrss before the world was created;\nlive = resident set after the last "
        "step (world alive) minus the resident set before the world, also per particle\n\n",
        o->dt, o->iterations, o->warmup);
    fprintf(f, "%-8s %9s %3s %5s %9s %9s %9s %8s %8s %8s %8s %6s %15s\n", "case", "particles",
            "thr", "steps", "ms/step", "min", "median", "Mpst/s", "speed-up", "peak MiB",
            "live MiB", "B/part", "dens.err avg/max");
    for (int k = 0; k < nres; ++k) {
        const bench_result *r = &res[k];
        const bench_case *c = &o->cases[r->case_index];
        if (!r->ok) {
            fprintf(f, "%-8s %9lld %3d  failed: %s\n", c->name, (long long)c->particles, r->threads,
                    r->error);
            continue;
        }
        char sp[16] = "-", live[16] = "-", per[16] = "-";
        if (r->speedup > 0) snprintf(sp, sizeof sp, "%.2f", r->speedup);
        long lk = rss_live_kib(r);
        if (lk >= 0) {
            snprintf(live, sizeof live, "%.1f", mib(lk));
            snprintf(per, sizeof per, "%.0f", (double)lk * 1024.0 / (double)r->particles);
        }
        fprintf(f, "%-8s %9lld %3d %5d %9.3f %9.3f %9.3f %8.3f %8s %8.1f %8s %6s %7.3f %7.3f%s\n",
                c->name, (long long)r->particles, r->threads, r->steps, r->ms_mean, r->ms_min,
                r->ms_median, r->particle_steps_per_s / 1e6, sp, mib(rss_world_kib(r)), live, per,
                r->density_error_avg, r->density_error_max,
                r->nonfinite || r->escaped ? "  UNSTABLE" : "");
    }
    fprintf(f, "(Mpst/s: million particle-steps per second; density error in %% above rest)\n");
    fprintf(f, "\nstages, ms per step (pbf_world_timings; grid = sort + reorder, collide = apply + "
               "collisions + friction, velocity = velocity + vorticity + XSPH):\n");
    fprintf(f, "%-8s %3s", "case", "thr");
    for (int s = 0; s < ST_COUNT; ++s) fprintf(f, " %8s", STAGE_NAMES[s]);
    fputc('\n', f);
    for (int k = 0; k < nres; ++k) {
        const bench_result *r = &res[k];
        if (!r->ok) continue;
        fprintf(f, "%-8s %3d", o->cases[r->case_index].name, r->threads);
        for (int s = 0; s < ST_COUNT; ++s) fprintf(f, " %8.3f", r->stage_ms[s]);
        fputc('\n', f);
    }
    print_stage_limits(f, o, res, nres);
    fprintf(f, "\npressure solve, mean per step (iterations over all substeps; the average "
               "density error, %%, the solve reached; divergence: DFSPH):\n");
    fprintf(f, "%-8s %3s %9s %10s %10s %10s %10s\n", "case", "thr", "substeps", "iterations",
            "error %", "div iters", "div err %");
    for (int k = 0; k < nres; ++k) {
        const bench_result *r = &res[k];
        if (!r->ok) continue;
        fprintf(f, "%-8s %3d %9.2f %10.2f %10.4f %10.2f %10.4f\n", o->cases[r->case_index].name,
                r->threads, r->substeps, r->iterations, r->solver_error, r->divergence_iterations,
                r->divergence_error);
    }
    fprintf(f,
            "\ndevice memory (pbf_world_memory after the last step: per particle of capacity, "
            "every array%s; the grid's cell starts; all the world holds on the device):\n",
            strcmp(o->device, "cpu") == 0 ? " and the neighbour lists" : "");
    fprintf(f, "%-8s %3s %-8s %12s %10s %10s\n", "case", "thr", "backend", "B/particle", "grid KiB",
            "total MiB");
    for (int k = 0; k < nres; ++k) {
        const bench_result *r = &res[k];
        if (!r->ok) continue;
        fprintf(f, "%-8s %3d %-8s %12.1f %10.1f %10.2f\n", o->cases[r->case_index].name, r->threads,
                r->backend, r->mem_bytes_per_particle, r->mem_grid_bytes / 1024.0,
                r->mem_total_bytes / (1024.0 * 1024.0));
    }
}

cJSON *pbfapp_bench_json_results(const bench_options *o, const machine_facts *m,
                                 const bench_result *res, int nres) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "pbf bench");
    cJSON_AddStringToObject(root, "pbf_version", PBF_VERSION_STRING);
    cJSON_AddStringToObject(root, "date", m->date);
    cJSON *mj = cJSON_AddObjectToObject(root, "machine");
    cJSON_AddStringToObject(mj, "host", m->host);
    cJSON_AddStringToObject(mj, "cpu", m->cpu);
    cJSON_AddNumberToObject(mj, "cores_online", (double)m->cores);
    cJSON_AddNumberToObject(mj, "omp_default_threads", m->omp_max_threads);
    cJSON_AddStringToObject(mj, "kernel", m->kernel);
    cJSON *bj = cJSON_AddObjectToObject(root, "build");
    cJSON_AddStringToObject(bj, "compiler", m->compiler);
    cJSON_AddStringToObject(bj, "build_type", PBF_BENCH_BUILD_TYPE);
    cJSON_AddStringToObject(bj, "flags", PBF_BENCH_FLAGS);
    if (PBF_BENCH_GIT[0])
        cJSON_AddStringToObject(bj, "git_commit", PBF_BENCH_GIT);
    else
        cJSON_AddNullToObject(bj, "git_commit");
    cJSON *sj = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(sj, "dt", o->dt);
    cJSON_AddNumberToObject(sj, "iterations", o->iterations);
    cJSON_AddNumberToObject(sj, "warmup_steps", o->warmup);
    cJSON_AddStringToObject(sj, "device", o->device);
    cJSON *sets = cJSON_AddArrayToObject(sj, "set");
    for (int k = 0; k < o->nsets; ++k) {
        char kv[600];
        snprintf(kv, sizeof kv, "%s=%s", o->sets[k].key, o->sets[k].value);
        cJSON_AddItemToArray(sets, cJSON_CreateString(kv));
    }
    cJSON_AddStringToObject(sj, "rss_note",
                            "rss_kib = rss_peak_kib - rss_baseline_kib: peak resident set "
                            "(getrusage ru_maxrss) of the run minus ru_maxrss before the world "
                            "was created; one process per run when several runs are made. "
                            "rss_live_kib = resident set (/proc/self/statm) after the last step, "
                            "world alive, minus the resident set before the world was created "
                            "(the peak also holds transients of pbf_world_create)");
    cJSON_AddStringToObject(sj, "device_memory_note",
                            "device_memory: pbf_world_memory after the last step; "
                            "bytes_per_particle: every array per particle of capacity (on the "
                            "CPU also the neighbour lists as sized then), grid_bytes: the grid's "
                            "cell starts, total_bytes: everything the world holds on its device");
    cJSON_AddStringToObject(sj, "ms_note",
                            "ms_per_step_*: wall time of each pbf_world_step after the warm-up; "
                            "stages_ms: pbf_world_timings over the same steps, per step");
    cJSON_AddStringToObject(sj, "stage_limits_note", pbfapp_stage_model_note);
    cJSON_AddItemToObject(root, "machine_limits", json_machine_limits(o));
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (int k = 0; k < nres; ++k) {
        const bench_result *r = &res[k];
        const bench_case *c = &o->cases[r->case_index];
        cJSON *rj = cJSON_CreateObject();
        cJSON_AddItemToArray(runs, rj);
        cJSON_AddStringToObject(rj, "case", c->name);
        cJSON_AddNumberToObject(rj, "particles", (double)c->particles);
        cJSON_AddNumberToObject(rj, "particle_radius", c->radius);
        cJSON_AddNumberToObject(rj, "particles_per_side", c->side);
        cJSON_AddNumberToObject(rj, "geometry_scale", c->scale);
        cJSON_AddNumberToObject(rj, "threads", r->threads);
        cJSON_AddStringToObject(rj, "device", o->device);
        cJSON_AddBoolToObject(rj, "ok", r->ok);
        if (!r->ok) {
            cJSON_AddStringToObject(rj, "error", r->error);
            continue;
        }
        cJSON_AddNumberToObject(rj, "warmup_steps", r->warmup);
        cJSON_AddNumberToObject(rj, "steps", r->steps);
        cJSON_AddNumberToObject(rj, "ms_per_step_mean", r->ms_mean);
        cJSON_AddNumberToObject(rj, "ms_per_step_min", r->ms_min);
        cJSON_AddNumberToObject(rj, "ms_per_step_median", r->ms_median);
        cJSON_AddNumberToObject(rj, "ms_per_step_max", r->ms_max);
        cJSON *st = cJSON_AddObjectToObject(rj, "stages_ms");
        for (int s = 0; s < ST_COUNT; ++s)
            cJSON_AddNumberToObject(st, STAGE_NAMES[s], r->stage_ms[s]);
        cJSON *lim = json_stage_limits(o, r);
        if (lim)
            cJSON_AddItemToObject(rj, "stage_limits", lim);
        else
            cJSON_AddNullToObject(rj, "stage_limits");
        cJSON_AddNumberToObject(rj, "particle_steps_per_s", r->particle_steps_per_s);
        if (r->speedup > 0)
            cJSON_AddNumberToObject(rj, "speedup_vs_1_thread", r->speedup);
        else
            cJSON_AddNullToObject(rj, "speedup_vs_1_thread");
        cJSON_AddNumberToObject(rj, "setup_s", r->setup_s);
        cJSON_AddNumberToObject(rj, "rss_baseline_kib", (double)r->rss_baseline_kib);
        cJSON_AddNumberToObject(rj, "rss_peak_kib", (double)r->rss_peak_kib);
        cJSON_AddNumberToObject(rj, "rss_kib", (double)rss_world_kib(r));
        cJSON_AddNumberToObject(rj, "rss_bytes_per_particle",
                                (double)rss_world_kib(r) * 1024.0 / (double)r->particles);
        cJSON_AddNumberToObject(rj, "library_bytes_per_particle", (double)pbf_bytes_per_particle());
        if (strcmp(o->device, "cpu") == 0)
            cJSON_AddStringToObject(rj, "device_name", m->cpu);
        else if (r->device_name[0])
            cJSON_AddStringToObject(rj, "device_name", r->device_name);
        else
            cJSON_AddNullToObject(rj, "device_name");
        cJSON *mj = cJSON_AddObjectToObject(rj, "device_memory");
        cJSON_AddStringToObject(mj, "backend", r->backend);
        cJSON_AddNumberToObject(mj, "bytes_per_particle", r->mem_bytes_per_particle);
        cJSON_AddNumberToObject(mj, "grid_bytes", r->mem_grid_bytes);
        cJSON_AddNumberToObject(mj, "total_bytes", r->mem_total_bytes);
        long lk = rss_live_kib(r);
        if (lk >= 0) {
            cJSON_AddNumberToObject(rj, "rss_now_before_kib", (double)r->rss_now_before_kib);
            cJSON_AddNumberToObject(rj, "rss_now_end_kib", (double)r->rss_now_end_kib);
            cJSON_AddNumberToObject(rj, "rss_live_kib", (double)lk);
            cJSON_AddNumberToObject(rj, "rss_live_bytes_per_particle",
                                    (double)lk * 1024.0 / (double)r->particles);
        } else {
            cJSON_AddNullToObject(rj, "rss_live_kib");
        }
        cJSON_AddNumberToObject(rj, "simulated_time_s", r->sim_time);
        cJSON_AddNumberToObject(rj, "density_error_avg", r->density_error_avg);
        cJSON_AddNumberToObject(rj, "density_error_max", r->density_error_max);
        cJSON_AddNumberToObject(rj, "substeps_per_step", r->substeps);
        cJSON_AddNumberToObject(rj, "iterations_per_step", r->iterations);
        cJSON_AddNumberToObject(rj, "solver_error", r->solver_error);
        cJSON_AddNumberToObject(rj, "divergence_iterations_per_step", r->divergence_iterations);
        cJSON_AddNumberToObject(rj, "divergence_error", r->divergence_error);
        cJSON_AddNumberToObject(rj, "max_speed", r->max_speed);
        cJSON_AddNumberToObject(rj, "nonfinite", r->nonfinite);
        cJSON_AddNumberToObject(rj, "escaped", r->escaped);
    }
    return root;
}

int pbfapp_bench_write_json(const char *path, cJSON *root) {
    char *text = cJSON_Print(root);
    if (!text) {
        fputs("pbf bench: out of memory writing JSON\n", stderr);
        return EXIT_RUNTIME;
    }
    int rc = 0;
    if (strcmp(path, "-") == 0) {
        if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0) rc = 1;
    } else {
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "pbf bench: --json %s: cannot create the file: %s\n", path,
                    strerror(errno));
            free(text);
            return EXIT_RUNTIME;
        }
        int bad = fputs(text, f) < 0 || fputc('\n', f) < 0;
        if (fclose(f) != 0) bad = 1;
        if (bad) {
            fprintf(stderr, "pbf bench: --json %s: write failed: %s\n", path, strerror(errno));
            rc = EXIT_RUNTIME;
        }
    }
    free(text);
    return rc;
}

