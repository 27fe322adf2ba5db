/*
 * What the parts of `pbf bench` share (app/bench/bench.c: options, cases and the runs;
 * app/bench/bench_report.c: the table, the stage limits and the JSON file). Internal to
 * app/bench/.
 */
#ifndef PBFAPP_BENCH_INTERNAL_H
#define PBFAPP_BENCH_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "bench/bench_limits.h"
#include "io/scene.h"
#include "pbf/pbf.h"
#include "run/progress.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#define BENCH_MAX_PARTICLES 1000000000LL
#define BENCH_MAX_CASES 4
#define BENCH_MAX_THREADS 16 /* entries of --threads */
#define BENCH_MAX_SETS 64
/* Particle-steps that the default --steps aims at per run (a few seconds at a few million
 * particle-steps per second), and its bounds. */
#define BENCH_STEP_BUDGET 6.0e6
#define BENCH_MIN_STEPS 10
#define BENCH_MAX_STEPS 1000

typedef struct bench_case {
    char name[16];
    double radius;     /* m (nominal; the world gets it as a float) */
    int side;          /* particles per side of the cube */
    double scale;      /* of the peer's geometry */
    int64_t particles; /* side^3 */
} bench_case;

enum {
    ST_PREDICT,
    ST_GRID,
    ST_LAMBDA,
    ST_DELTA_P,
    ST_COLLIDE,
    ST_VELOCITY,
    ST_STATS,
    ST_OTHER,
    ST_TOTAL,
    ST_COUNT
};
extern const char *const STAGE_NAMES[ST_COUNT]; /* bench_report.c */

/* Plain data (no pointers): a forked child sends it through a pipe. */
typedef struct bench_result {
    int ok;
    char error[600];
    int case_index;
    int threads;
    int steps, warmup;
    int64_t particles;
    double ms_mean, ms_min, ms_median, ms_max; /* wall time of one pbf_world_step, ms */
    double stage_ms[ST_COUNT];                 /* pbf_world_timings per measured step, ms */
    double particle_steps_per_s;
    double setup_s;          /* pbf_world_create + fluid block, s */
    long rss_baseline_kib;   /* ru_maxrss before the world was created */
    long rss_peak_kib;       /* ru_maxrss after the last step */
    long rss_now_before_kib; /* current resident set before the world (-1: unknown) */
    long rss_now_end_kib;    /* current resident set after the last step, world alive */
    double density_error_avg, density_error_max, max_speed, sim_time;
    /* the pressure solve, mean per measured step (pbf_stats): substeps, iterations and the error
     * the density solve reached; the divergence solve's (DFSPH) */
    double substeps, iterations, solver_error, divergence_iterations, divergence_error;
    int nonfinite, escaped;
    double speedup; /* filled by the parent: ms_mean at 1 thread / ms_mean here; < 0 unknown */
    pbf_status create_status;      /* of pbf_world_create (a device that is not there) */
    char backend[16];              /* pbf_world_memory: "cpu", "opencl", "cuda" */
    char device_name[128];         /* the device's name as pbf_list_devices gives it, or "" */
    double mem_bytes_per_particle; /* pbf_world_memory after the last step */
    double mem_grid_bytes;
    double mem_total_bytes;
    /* the stage-limits model's inputs: neighbour pairs (pbf_world_neighbour_pairs after the
     * last step, CPU runs only; < 0 unknown), grid cells, and the settings that change the work */
    double nbr_pairs;
    double grid_cells;
    int solver_pbf, pbf_tolerance, scorr_n, vorticity;
} bench_result;

typedef struct bench_options {
    bench_case cases[BENCH_MAX_CASES];
    int ncases;
    int threads[BENCH_MAX_THREADS];
    int nthreads;
    double dt;
    int iterations;
    int steps; /* 0 = by particle count */
    int warmup;
    const char *json;
    int quiet;
    int fork_runs;
    char device[PBF_DEVICE_NAME_MAX]; /* world_def.device of the runs (--device, --set device) */
    pbfapp_override sets[BENCH_MAX_SETS];
    char *set_keys[BENCH_MAX_SETS];
    char set_labels[BENCH_MAX_SETS][300];
    int nsets;
    int limits;                    /* measure the machine, print the stage limits (--no-limits) */
    pbfapp_machine_limits machine; /* measured before the runs (machine.ok) */
    pbfapp_progress *bar; /* progress bar on a terminal; work = particles x steps */
    double bar_base;      /* work of the runs before this one */
} bench_options;

typedef struct machine_facts {
    char cpu[256];
    char host[256];
    char kernel[256];
    char compiler[256];
    char date[64];
    long cores;
    int omp_max_threads;
} machine_facts;

/* The table of the results (and of the stage limits, the machine's limits) on f. */
void pbfapp_bench_print_table(FILE *f, const bench_options *o, const machine_facts *m,
                              const bench_result *res, int nres);
/* The JSON document of --json. */
cJSON *pbfapp_bench_json_results(const bench_options *o, const machine_facts *m,
                                 const bench_result *res, int nres);
/* Writes it to path (atomically); 0 or the exit status after a message. */
int pbfapp_bench_write_json(const char *path, cJSON *root);

#endif /* PBFAPP_BENCH_INTERNAL_H */
