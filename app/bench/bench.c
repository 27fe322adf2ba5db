/*
 * `pbf bench`: see bench.h and bench/README.md.
 *
 * The standard cases reproduce the SPlisHSPlasH peer's dam break
 * (shared/peers/splishsplash/dam_break_pbf_fixed4_r*.json): the container is UnitBox.obj scaled
 * by (4, 3, 1.5) and moved up by 1.5 m, i.e. [-2, 2] x [0, 3] x [-0.75, 0.75] m, and the water is
 * the peer's unit block [-1.95, -0.95] x [0.05, 1.05] x [-0.5, 0.5] m. The peer fills that block
 * with round(1 m / 2r) - 1 particles per side (19 at r = 0.025, 39 at r = 0.0125); pbf's block
 * is centred on the peer's with exactly as many lattice sites, so both start from the same
 * particle count and the same centre of mass. `--particles N` scales the whole scene (box and
 * block) by side / 19 at r = 0.025, with side = ceil(cbrt(N)) (by 8 / 19 below 8 per side, so
 * that the box stays wider than two kernel radii).
 *
 * When more than one run is asked for, every run (case x thread count) is made in a forked
 * child process, so that each run's peak resident memory (getrusage ru_maxrss) is its own and no
 * run inherits another's allocations or thread pool. The parent never enters an OpenMP parallel
 * region (libgomp does not survive fork after that) and never opens a device (nor do OpenCL and
 * CUDA runtimes): each child makes its world on the --device. A single run is made in-process,
 * which is what `valgrind --tool=callgrind` wants (bench/callgrind_guard.sh, with --no-limits).
 *
 * The stage limits (bench_limits.c): this machine's bandwidth and peak flops are measured once,
 * before the runs, in a forked child of their own (their 200 MiB and threads stay out of every
 * run's memory figures); each run's model needs its neighbour count (pbf_world_neighbour_pairs,
 * taken after the run's memory figures, as it allocates) and settings.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/bench.h"
#include "bench/bench_limits.h"
#include "io/util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "pbf/pbf.h"
#include "run/jobs.h"
#include "run/progress.h"
#include "run/run_driver.h"
#include "io/scene.h"

#include "bench/bench_internal.h"

/* The peer's geometry, m. */
static const double PEER_BOX_MIN[3] = {-2.0, 0.0, -0.75};
static const double PEER_BOX_MAX[3] = {2.0, 3.0, 0.75};
static const double PEER_BLOCK_CENTRE[3] = {-1.45, 0.55, 0.0};

/* The bar after `done` of the run's warm-up + timed steps (only drawn on a terminal). */
static void bench_tick(const bench_options *o, const bench_case *c, int threads, int done,
                       int total) {
    if (!o->bar || !pbfapp_progress_active(o->bar)) return;
    char what[160];
    snprintf(what, sizeof what, "%s, %d thread%s, step %d/%d", c->name, threads,
             threads == 1 ? "" : "s", done, total);
    pbfapp_progress_work(o->bar, o->bar_base + (double)c->particles * done, what);
}

void pbfapp_bench_print_help(FILE *f) {
    fprintf(
        f,
        "usage: pbf bench [options]\n"
        "\n"
        "Times the solver on standard cases that need no scene file: the dam break of the\n"
        "SPlisHSPlasH peer (water block 19, 39 or 79 particles per side in a 4 x 3 x 1.5 m\n"
        "box), at a fixed time step and iteration count, with no output I/O. Each case runs\n"
        "once per thread count: --warmup steps (not measured), then --steps measured steps.\n"
        "Reports ms per step (mean, min, median), the per-stage breakdown, particle-steps per\n"
        "second, peak resident memory, the memory the world holds on its device, the speed-up\n"
        "from 1 thread, the final density error and, on the CPU, each stage's share of this\n"
        "machine's memory bandwidth and peak flops. On a GPU the stages are timed in a second\n"
        "run of as many steps that waits for the device after every stage, and shown as\n"
        "shares of the first run's time.\n"
        "\n"
        "options:\n"
        "  --case LIST         comma-separated cases (default: small,medium):\n"
        "                        small   r = 0.025 m,   19^3 =   6,859 particles\n"
        "                        medium  r = 0.0125 m,  39^3 =  59,319 particles\n"
        "                        large   r = 0.00625 m, 79^3 = 493,039 particles\n"
        "  --particles N       a cube of ceil(cbrt(N))^3 particles at r = 0.025 m, the box\n"
        "                      and block of 'small' scaled by side/19 (N <= 1,000,000,000);\n"
        "                      replaces the default cases (add --case to run both)\n"
        "  --dt S              time step, s (default 0.005, as the peer)\n"
        "  --iterations N      solver iterations per step (default 4, as the peer)\n"
        "  --steps N           measured steps per run (default: %.0e / particles, within\n"
        "                      [%d, %d], a few seconds per run)\n"
        "  --warmup N          steps before the measured ones, excluded (default 5)\n"
        "  --threads LIST      comma-separated thread counts, 'all' = the OpenMP default\n"
        "                      (default: 1,all on the CPU, all on another device)\n"
        "  --device D          where the runs are made: cpu (default), opencl,\n"
        "                      opencl:PLATFORM.DEVICE, cuda or cuda:N (same as --set device=D;\n"
        "                      `pbf devices` lists this machine's)\n"
        "  --set KEY=VALUE     override a world parameter (see `pbf run --help`), after the\n"
        "                      case's own settings; may be repeated\n"
        "  --json FILE         also write the results as JSON to FILE ('-': stdout, the table\n"
        "                      then goes to stderr)\n"
        "  --no-limits         do not measure this machine's limits (no stage-limits table)\n"
        "  -q, --quiet         no progress lines on stderr and no progress bar (a bar with the\n"
        "                      time left is drawn on stderr when it is a terminal)\n"
        "  -h, --help          this help\n"
        "\n"
        "Memory: 'peak' is the peak resident set (getrusage ru_maxrss) of the run minus\n"
        "ru_maxrss before the world was created (the process baseline; both in the JSON);\n"
        "'live' the resident set after the last step, world alive, minus the resident set\n"
        "before the world, also per particle. With more than one run each run is a forked\n"
        "child process, so each peak is its own. 'device memory' is pbf_world_memory after the\n"
        "last step: bytes per particle of capacity (every array and, on the CPU, the neighbour\n"
        "lists as sized then), the grid's bytes and everything the world holds on its device.\n"
        "\n",
        BENCH_STEP_BUDGET, BENCH_MIN_STEPS, BENCH_MAX_STEPS);
    fprintf(
        f,
        "Stage limits (CPU): before the runs (under a second) the memory bandwidth is measured\n"
        "by a STREAM triad a[i] = b[i] + s*c[i] over 3 arrays of doubles of at least 64 MiB\n"
        "and 4/3 of the last-level cache each, 24 bytes counted per element (the write-allocate\n"
        "read of a[i] is not), and the peak float throughput by independent chains of separate\n"
        "multiplies and adds on the solver's vectors (no FMA: the build's -ffp-contract=off),\n"
        "at each --threads count, the best of several repetitions (the peak: each thread's best\n"
        "rate, summed). A model of the CPU backend's PBF stages gives each stage's bytes and\n"
        "flops per step; over the stage's time they are GB/s and GFLOP/s, shares of those\n"
        "limits, and the bound: memory or compute where that share is the larger and at least\n"
        "50 %%, else latency/other (gathers, shuffles, the divider, synchronisation). The model\n"
        "assumes: bytes are the per-particle arrays each pass reads and writes, plus 1.5 per\n"
        "neighbour-list entry; the neighbours' data (packed 16-byte copies) hits in cache, as\n"
        "particles are sorted by cell, and is counted once per pass, so DRAM bytes = streamed\n"
        "bytes, a lower bound (a share above 100 %% means the data stayed in cache); flops count\n"
        "each add, subtract, multiply, division and square root once (a division or root holds\n"
        "the divider for several cycles), over listed neighbours and per particle, without the\n"
        "wall terms near walls, a lower bound; the neighbours are those within h at the end of\n"
        "the run (pbf_world_neighbour_pairs); the passes follow the run's iterations. On a busy\n"
        "machine the figures are indicative.\n"
        "Exit status: 0 success, 1 runtime error (a run failed), 2 usage error.\n");
}

static int usage(const char *fmt, const char *a) {
    fputs("pbf bench: ", stderr);
    fprintf(stderr, fmt, a);
    fputs(" (see `pbf bench --help`)\n", stderr);
    return EXIT_USAGE;
}

static int parse_long(const char *s, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static void make_case(bench_case *c, const char *name, double radius, int side, double scale) {
    snprintf(c->name, sizeof c->name, "%s", name);
    c->radius = radius;
    c->side = side;
    c->scale = scale;
    c->particles = (int64_t)side * side * side;
}

static int add_named_case(bench_options *o, const char *name) {
    if (o->ncases >= BENCH_MAX_CASES) return 0;
    bench_case *c = &o->cases[o->ncases];
    if (strcmp(name, "small") == 0)
        make_case(c, "small", 0.025, 19, 1.0);
    else if (strcmp(name, "medium") == 0)
        make_case(c, "medium", 0.0125, 39, 1.0);
    else if (strcmp(name, "large") == 0)
        make_case(c, "large", 0.00625, 79, 1.0);
    else
        return -1;
    for (int k = 0; k < o->ncases; ++k)
        if (strcmp(o->cases[k].name, name) == 0) return 1; /* given twice: once is enough */
    ++o->ncases;
    return 1;
}

/* Smallest side with side^3 >= n. */
static int cube_side(long long n) {
    long long s = (long long)cbrt((double)n);
    while (s * s * s < n) ++s;
    while (s > 1 && (s - 1) * (s - 1) * (s - 1) >= n) --s;
    return (int)s;
}

/* The world definition and fluid block of a case (before --set). */
static void case_geometry(const bench_case *c, pbf_world_def *def, pbf_fluid_block *blk) {
    double s = c->scale;
    def->domain_min = (pbf_vec3){(float)(s * PEER_BOX_MIN[0]), (float)(s * PEER_BOX_MIN[1]),
                                 (float)(s * PEER_BOX_MIN[2])};
    def->domain_max = (pbf_vec3){(float)(s * PEER_BOX_MAX[0]), (float)(s * PEER_BOX_MAX[1]),
                                 (float)(s * PEER_BOX_MAX[2])};
    def->particle_radius = (float)c->radius;
    double half = 0.5 * (double)c->side * 2.0 * (double)(float)c->radius;
    float mn[3], mx[3];
    for (int a = 0; a < 3; ++a) {
        double centre = s * PEER_BLOCK_CENTRE[a];
        mn[a] = (float)(centre - half);
        mx[a] = (float)(centre + half);
    }
    memset(blk, 0, sizeof *blk);
    blk->min = (pbf_vec3){mn[0], mn[1], mn[2]};
    blk->max = (pbf_vec3){mx[0], mx[1], mx[2]};
}

static pbf_status build_def(const bench_options *o, const bench_case *c, int threads,
                            pbf_world_def *def, pbf_fluid_block *blk, pbf_error *err) {
    *def = pbf_default_world_def();
    case_geometry(c, def, blk);
    def->pbf.solver_iterations = o->iterations;
    def->threads = threads;
    def->max_particles = (int)c->particles;
    pbfapp_run run = pbfapp_default_run();
    for (int k = 0; k < o->nsets; ++k) {
        pbf_status st = pbfapp_apply_override(def, &run, o->sets[k].key, o->sets[k].value,
                                              o->sets[k].label, err);
        if (st != PBF_OK) return st;
    }
    pbf_status st = pbf_world_def_validate(def, err);
    if (st != PBF_OK) return st;
    int64_t n = pbf_fluid_block_count(def, blk);
    if (n != c->particles) {
        memset(err, 0, sizeof *err);
        err->status = PBF_ERR_INVALID_ARGUMENT;
        snprintf(err->message, sizeof err->message,
                 "case %s: the fluid block holds %lld particles, not %lld (did --set change "
                 "particle_radius or the domain?)",
                 c->name, (long long)n, (long long)c->particles);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

static long maxrss_kib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return ru.ru_maxrss; /* KiB on Linux */
}

/* Current resident set (Linux /proc/self/statm), KiB; -1 when unknown. */
static long rss_now_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long size = 0, resident = -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return resident < 0 || page <= 0 ? -1 : resident * (page / 1024);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int steps_for(const bench_options *o, const bench_case *c) {
    if (o->steps > 0) return o->steps;
    double s = BENCH_STEP_BUDGET / (double)c->particles;
    if (s < BENCH_MIN_STEPS) s = BENCH_MIN_STEPS;
    if (s > BENCH_MAX_STEPS) s = BENCH_MAX_STEPS;
    return (int)s;
}

/* The name pbf_list_devices gives the device `id` names ("" when it does not list it): the entry
 * of that id, or for a bare "opencl" / "cuda" the first device of that kind (the library does not
 * say which device a bare kind opened). */
static void device_name(const char *id, char *name, size_t size) {
    name[0] = '\0';
    pbf_device_info dev[32];
    int n = pbf_list_devices(dev, 32, NULL, 0);
    if (n > 32) n = 32;
    const char *want = id[0] ? id : "cpu";
    size_t len = strlen(want);
    for (int k = 0; k < n; ++k)
        if (strcmp(dev[k].id, want) == 0) {
            snprintf(name, size, "%s", dev[k].name);
            return;
        }
    if (strchr(want, ':')) return;
    for (int k = 0; k < n; ++k)
        if (strncmp(dev[k].id, want, len) == 0 && dev[k].id[len] == ':') {
            snprintf(name, size, "%s", dev[k].name);
            return;
        }
}

/* The steps of one run, through the program's frame loop (app/run/run_driver.h): frames of one
 * step each (fps = 1 / dt), without the instability guard or the run's progress line. */
enum { BENCH_WARMUP, BENCH_MEASURED, BENCH_STAGED };

typedef struct bench_pass {
    const bench_options *o;
    const bench_case *c;
    int threads;
    float dt;
    int phase;       /* BENCH_WARMUP, BENCH_MEASURED (timed, averaged), BENCH_STAGED */
    int all_steps;   /* warm-up and measured steps: the bar's total */
    bench_result *r; /* the measured steps' averages */
    double *times;   /* the measured steps' wall times, s */
    double sum;      /* their sum */
    pbf_error err;   /* of a failed step */
} bench_pass;

static pbf_status bench_step(void *ctx, pbfapp_run_driver *d, int frame, pbfapp_frame_report *rep,
                             double *speed_dt, pbf_error *err) {
    bench_pass *p = ctx;
    memset(rep, 0, sizeof *rep);
    rep->diag.ok = 1;
    rep->substeps = 1;
    rep->factor = 1;
    *speed_dt = p->dt;
    double a = pbfapp_now();
    pbf_status st = pbf_world_step(d->world, p->dt, err);
    if (st != PBF_OK) return st;
    rep->step_seconds = pbfapp_now() - a;
    rep->steps = 1;
    if (p->phase == BENCH_MEASURED) {
        p->times[frame - 1] = rep->step_seconds;
        p->sum += rep->step_seconds;
    }
    return PBF_OK;
}

static int bench_frame(void *ctx, pbfapp_run_driver *d, const pbfapp_run_frame *f) {
    (void)d;
    bench_pass *p = ctx;
    bench_result *r = p->r;
    if (p->phase == BENCH_WARMUP) bench_tick(p->o, p->c, p->threads, f->frame, p->all_steps);
    if (p->phase != BENCH_MEASURED) return 0;
    bench_tick(p->o, p->c, p->threads, r->warmup + f->frame, p->all_steps);
    const pbf_stats *ss = &f->stats;
    r->substeps += ss->substeps / (double)r->steps;
    r->iterations += ss->iterations / (double)r->steps;
    r->solver_error += ss->solver_error / r->steps;
    r->divergence_iterations += ss->divergence_iterations / (double)r->steps;
    r->divergence_error += ss->divergence_error / r->steps;
    return 0;
}

static void bench_step_failed(void *ctx, int frame, const pbf_error *err) {
    (void)frame;
    ((bench_pass *)ctx)->err = *err;
}

/* `steps` steps of the pass's phase; 0, or 1 after a failed step (p->err). */
static int bench_steps(pbf_world *w, bench_pass *p, int phase, int steps) {
    pbfapp_run_driver d;
    memset(&d, 0, sizeof d);
    d.world = w;
    d.fps = 1.0 / (double)p->dt;
    d.substeps = 1;
    d.frames = steps;
    d.sinks.ctx = p;
    d.sinks.step = bench_step;
    d.sinks.frame = bench_frame;
    d.sinks.step_failed = bench_step_failed;
    p->phase = phase;
    return pbfapp_run_frames(&d) != 0;
}

/* One run of one case at one thread count, in this process. */
static void run_one(const bench_options *o, int ci, int threads, bench_result *r) {
    const bench_case *c = &o->cases[ci];
    memset(r, 0, sizeof *r);
    r->case_index = ci;
    r->threads = threads;
    r->particles = c->particles;
    r->warmup = o->warmup;
    r->steps = steps_for(o, c);
    r->speedup = -1.0;
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_world_def def;
    pbf_fluid_block blk;
    if (build_def(o, c, threads, &def, &blk, &err) != PBF_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.message);
        return;
    }
    double *times = malloc((size_t)r->steps * sizeof *times);
    if (!times) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return;
    }
    r->rss_now_before_kib = rss_now_kib();
    r->rss_baseline_kib = maxrss_kib();
    double t0 = pbfapp_now();
    pbf_world *w = NULL;
    r->create_status = pbf_world_create(&def, &w, &err);
    if (r->create_status != PBF_OK || pbf_world_add_fluid_block(w, &blk, &err)) {
        snprintf(r->error, sizeof r->error, "%s", err.message);
        pbf_world_destroy(w);
        free(times);
        return;
    }
    r->setup_s = pbfapp_now() - t0;
    bench_pass pass;
    memset(&pass, 0, sizeof pass);
    pass.o = o;
    pass.c = c;
    pass.threads = threads;
    pass.dt = (float)o->dt;
    pass.all_steps = r->warmup + r->steps;
    pass.r = r;
    pass.times = times;
    if (bench_steps(w, &pass, BENCH_WARMUP, r->warmup)) goto step_failed;
    pbf_world_reset_timings(w);
    if (bench_steps(w, &pass, BENCH_MEASURED, r->steps)) goto step_failed;
    const double sum = pass.sum;
    r->rss_peak_kib = maxrss_kib();
    r->rss_now_end_kib = rss_now_kib();
    pbf_stats st = pbf_world_stats(w); /* the state after the measured steps, on every device */
    pbf_timings tm = pbf_world_timings(w);
    /* A GPU times its stages only on request (each stage then waits for the device, a round trip
     * the plain steps do not make): the measured steps above ran without, and the breakdown comes
     * from as many steps again with stage timing on, scaled to the plain steps' total. */
    if (!pbf_world_set_stage_timing(w, 1)) {
        const double plain_total = tm.total;
        pbf_world_reset_timings(w);
        if (bench_steps(w, &pass, BENCH_STAGED, r->steps)) goto step_failed;
        tm = pbf_world_timings(w);
        const double scale = tm.total > 0.0 ? plain_total / tm.total : 0.0;
        tm.predict *= scale;
        tm.grid *= scale;
        tm.lambda *= scale;
        tm.delta_p *= scale;
        tm.collide *= scale;
        tm.velocity *= scale;
        tm.stats *= scale;
        tm.total = plain_total;
    }
    double per = tm.steps > 0 ? 1000.0 / (double)tm.steps : 0.0;
    r->stage_ms[ST_PREDICT] = tm.predict * per;
    r->stage_ms[ST_GRID] = tm.grid * per;
    r->stage_ms[ST_LAMBDA] = tm.lambda * per;
    r->stage_ms[ST_DELTA_P] = tm.delta_p * per;
    r->stage_ms[ST_COLLIDE] = tm.collide * per;
    r->stage_ms[ST_VELOCITY] = tm.velocity * per;
    r->stage_ms[ST_STATS] = tm.stats * per;
    r->stage_ms[ST_TOTAL] = tm.total * per;
    double parts = 0.0;
    for (int k = ST_PREDICT; k <= ST_STATS; ++k) parts += r->stage_ms[k];
    r->stage_ms[ST_OTHER] = r->stage_ms[ST_TOTAL] - parts;
    r->ms_mean = 1000.0 * sum / (double)r->steps;
    qsort(times, (size_t)r->steps, sizeof *times, cmp_double);
    r->ms_min = 1000.0 * times[0];
    r->ms_max = 1000.0 * times[r->steps - 1];
    r->ms_median = 1000.0 * (r->steps % 2 ? times[r->steps / 2]
                                          : 0.5 * (times[r->steps / 2 - 1] + times[r->steps / 2]));
    r->particle_steps_per_s = sum > 0 ? (double)r->particles * (double)r->steps / sum : 0.0;
    r->density_error_avg = st.density_error_avg;
    r->density_error_max = st.density_error_max;
    r->max_speed = st.max_speed;
    r->sim_time = st.time;
    r->nonfinite = st.nonfinite;
    r->escaped = st.escaped;
    pbf_memory mem = pbf_world_memory(w);
    snprintf(r->backend, sizeof r->backend, "%s", mem.device ? mem.device : "?");
    r->mem_bytes_per_particle = mem.bytes_per_particle;
    r->mem_grid_bytes = (double)mem.grid_bytes;
    r->mem_total_bytes = (double)mem.total_bytes;
    r->grid_cells = mem.grid_bytes >= 2 * sizeof(uint32_t)
                        ? (double)(mem.grid_bytes / sizeof(uint32_t) - 1)
                        : 0.0;
    /* for the stage limits: counted after the memory figures (it allocates), on the CPU only
     * (the model's device) */
    r->nbr_pairs =
        o->limits && strcmp(r->backend, "cpu") == 0 ? (double)pbf_world_neighbour_pairs(w) : -1.0;
    r->solver_pbf = def.solver == PBF_SOLVER_PBF;
    r->pbf_tolerance = def.pbf.tolerance > 0.0f;
    r->scorr_n = def.pbf.scorr_n;
    r->vorticity = def.vorticity > 0.0f;
    /* the name of a GPU device (listing the devices starts their runtimes: not for the CPU,
     * whose name is the machine's, so that a CPU run executes nothing else) */
    if (def.device[0] && strcmp(def.device, "cpu") != 0)
        device_name(def.device, r->device_name, sizeof r->device_name);
    r->ok = 1;
    pbf_world_destroy(w);
    free(times);
    return;
step_failed:
    snprintf(r->error, sizeof r->error, "step failed: %s", pass.err.message);
    pbf_world_destroy(w);
    free(times);
}

/* A run in a forked child (app/run/jobs.h). */
typedef struct forked_run {
    const bench_options *o;
    int ci, threads;
} forked_run;

static void forked_run_job(void *arg, void *result) {
    const forked_run *f = arg;
    run_one(f->o, f->ci, f->threads, result);
}

/* The same in a forked child; the result comes back through a pipe. */
static void run_forked(const bench_options *o, int ci, int threads, bench_result *r) {
    memset(r, 0, sizeof *r);
    r->case_index = ci;
    r->threads = threads;
    r->speedup = -1.0;
    forked_run job = {o, ci, threads};
    pbfapp_job_outcome how;
    if (pbfapp_job_run(forked_run_job, &job, r, sizeof *r, &how)) return;
    if (how.failed) {
        snprintf(r->error, sizeof r->error, "%s: %s", how.failed, strerror(how.error));
        return;
    }
    const int status = how.status;
    memset(r, 0, sizeof *r);
    r->case_index = ci;
    r->threads = threads;
    r->speedup = -1.0;
    if (WIFSIGNALED(status))
        snprintf(r->error, sizeof r->error, "the run was killed by signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == 9 ? " (out of memory?)" : "");
    else
        snprintf(r->error, sizeof r->error, "the run ended without a result (exit %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void measure_limits_job(void *arg, void *result) {
    const bench_options *o = arg;
    pbfapp_measure_limits(o->threads, o->nthreads, result);
}

/* This machine's memory bandwidth and peak flops at each --threads count (bench_limits.c),
 * measured in a forked child: the parent never enters an OpenMP parallel region (see the top of
 * the file). */
static void measure_limits(const bench_options *o, pbfapp_machine_limits *m) {
    memset(m, 0, sizeof *m);
    pbfapp_job_outcome how;
    if (pbfapp_job_run(measure_limits_job, (void *)o, m, sizeof *m, &how)) return;
    if (how.failed) {
        snprintf(m->error, sizeof m->error, "%s: %s", how.failed, strerror(how.error));
        return;
    }
    const int status = how.status;
    memset(m, 0, sizeof *m);
    snprintf(m->error, sizeof m->error, "the measurement ended without a result (%s %d)",
             WIFSIGNALED(status) ? "signal" : "exit",
             WIFSIGNALED(status) ? WTERMSIG(status)
                                 : (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
}

/* ---- machine facts ------------------------------------------------------------------------ */

static void trim(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
}

static void get_machine(machine_facts *m) {
    memset(m, 0, sizeof *m);
    snprintf(m->cpu, sizeof m->cpu, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                const char *colon = strchr(line, ':');
                if (colon) {
                    colon += 1;
                    while (*colon == ' ' || *colon == '\t') ++colon;
                    snprintf(m->cpu, sizeof m->cpu, "%s", colon);
                    trim(m->cpu);
                }
                break;
            }
        }
        fclose(f);
    }
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(m->host, sizeof m->host, "%s", u.nodename);
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    }
    m->cores = sysconf(_SC_NPROCESSORS_ONLN);
    m->omp_max_threads = omp_get_max_threads(); /* reads the ICVs; starts no thread */
#if defined(__clang__)
    snprintf(m->compiler, sizeof m->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(m->compiler, sizeof m->compiler, "gcc %s", __VERSION__);
#else
    snprintf(m->compiler, sizeof m->compiler, "unknown");
#endif
    trim(m->compiler);
    time_t now = time(NULL);
    struct tm tmv;
    if (gmtime_r(&now, &tmv)) strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* ---- the command -------------------------------------------------------------------------- */

static void free_options(bench_options *o) {
    for (int k = 0; k < o->nsets; ++k) free(o->set_keys[k]);
}

/* Next item of a comma-separated list into item[size]: 1 an item, 0 the end, -1 malformed (an
 * empty item, a trailing comma or an item too long). */
static int next_item(const char **p, char *item, size_t size) {
    if (!**p) return 0;
    const char *comma = strchr(*p, ',');
    size_t n = comma ? (size_t)(comma - *p) : strlen(*p);
    if (n == 0 || n >= size) return -1;
    memcpy(item, *p, n);
    item[n] = '\0';
    *p += n;
    if (**p == ',') {
        ++*p;
        if (!**p) return -1;
    }
    return 1;
}

static int parse_threads(bench_options *o, const char *list, int all) {
    o->nthreads = 0;
    char item[32];
    int r;
    while ((r = next_item(&list, item, sizeof item)) > 0) {
        long long v;
        if (strcmp(item, "all") == 0)
            v = all;
        else if (!parse_long(item, 1, 1024, &v))
            return 0;
        int dup = 0;
        for (int k = 0; k < o->nthreads; ++k) dup |= o->threads[k] == (int)v;
        if (!dup) {
            if (o->nthreads >= BENCH_MAX_THREADS) return 0;
            o->threads[o->nthreads++] = (int)v;
        }
    }
    return r == 0 && o->nthreads > 0;
}

static int parse_cases(bench_options *o, const char *list) {
    char item[32];
    int r;
    while ((r = next_item(&list, item, sizeof item)) > 0)
        if (add_named_case(o, item) <= 0) return 0;
    return r == 0;
}

/* The command line; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, bench_options *o, const char **case_list_out,
                      const char **threads_list_out, long long *particles_out) {
    const char *case_list = NULL, *threads_list = NULL;
    long long particles = 0;
    int rc = -1;
    for (int i = 0; i < argc && rc < 0; ++i) {
        const char *arg = argv[i], *v = NULL;
        long long n;
        int m;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            pbfapp_bench_print_help(stdout);
            rc = 0;
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(arg, "--no-limits") == 0) {
            o->limits = 0;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--case", &v)) != 0) {
            if (m < 0)
                rc = usage("%s needs a value", "--case");
            else
                case_list = v;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--particles", &v)) != 0) {
            if (m < 0 || !parse_long(v, 1, BENCH_MAX_PARTICLES, &n))
                rc = usage("--particles %s: expected a whole number from 1 to 1000000000",
                           m < 0 ? "" : v);
            else
                particles = n;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--dt", &v)) != 0) {
            char *end = NULL;
            double d = m < 0 ? 0.0 : strtod(v, &end);
            if (m < 0 || !end || *end || !(d > 0.0) || !(d <= 1.0))
                rc = usage("--dt %s: expected a time step in seconds, in (0, 1]", m < 0 ? "" : v);
            else
                o->dt = d;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--iterations", &v)) != 0) {
            if (m < 0 || !parse_long(v, 1, 1000, &n))
                rc = usage("--iterations %s: expected a whole number from 1 to 1000",
                           m < 0 ? "" : v);
            else
                o->iterations = (int)n;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--steps", &v)) != 0) {
            if (m < 0 || !parse_long(v, 1, 10000000, &n))
                rc = usage("--steps %s: expected a whole number from 1", m < 0 ? "" : v);
            else
                o->steps = (int)n;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--warmup", &v)) != 0) {
            if (m < 0 || !parse_long(v, 0, 10000000, &n))
                rc = usage("--warmup %s: expected a whole number from 0", m < 0 ? "" : v);
            else
                o->warmup = (int)n;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--threads", &v)) != 0) {
            if (m < 0)
                rc = usage("%s needs a value, e.g. --threads 1,2 or --threads 1,all", "--threads");
            else
                threads_list = v;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--device", &v)) != 0) {
            if (m < 0 || !v[0]) {
                rc = usage("%s needs a value: cpu, opencl[:PLATFORM.DEVICE] or cuda[:N]",
                           "--device");
            } else if (o->nsets >= BENCH_MAX_SETS) {
                rc = usage("at most 64 --set and --device options%s", "");
            } else {
                int k = o->nsets++;
                snprintf(o->set_labels[k], sizeof o->set_labels[k], "--device");
                o->sets[k] = (pbfapp_override){"device", v, o->set_labels[k]};
            }
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--json", &v)) != 0) {
            if (m < 0 || !v[0])
                rc = usage("%s needs a file name ('-' for stdout)", "--json");
            else
                o->json = v;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--set", &v)) != 0) {
            const char *eq = m < 0 ? NULL : strchr(v, '=');
            if (!eq || eq == v) {
                rc = usage("--set %s: expected KEY=VALUE, e.g. --set kernel_ratio=2.2",
                           m < 0 ? "" : v);
            } else if (o->nsets >= BENCH_MAX_SETS) {
                rc = usage("at most 64 --set options%s", "");
            } else {
                size_t klen = (size_t)(eq - v);
                char *key = malloc(klen + 1);
                if (!key) {
                    rc = EXIT_RUNTIME;
                    break;
                }
                memcpy(key, v, klen);
                key[klen] = '\0';
                int k = o->nsets++;
                o->set_keys[k] = key;
                snprintf(o->set_labels[k], sizeof o->set_labels[k], "--set %.280s", key);
                o->sets[k] = (pbfapp_override){key, eq + 1, o->set_labels[k]};
            }
        } else {
            rc = usage("unknown option \"%s\"", arg);
        }
    }
    *case_list_out = case_list;
    *threads_list_out = threads_list;
    *particles_out = particles;
    return rc;
}

/* The device, the thread counts and the cases, each case's definition checked (with the --set
 * overrides) before anything runs; -1 to go on, else the exit status. */
static int setup_cases(bench_options *o, const machine_facts *mf, const char *case_list,
                       const char *threads_list, long long particles) {
    /* the device of the runs: --device and --set device, in order (each checked below) */
    {
        pbf_world_def d = pbf_default_world_def();
        pbfapp_run run = pbfapp_default_run();
        for (int k = 0; k < o->nsets; ++k)
            if (strcmp(o->sets[k].key, "device") == 0)
                (void)pbfapp_apply_override(&d, &run, "device", o->sets[k].value, o->sets[k].label,
                                            NULL);
        snprintf(o->device, sizeof o->device, "%s", d.device[0] ? d.device : "cpu");
    }
    if (!threads_list) threads_list = strcmp(o->device, "cpu") == 0 ? "1,all" : "all";
    if (!parse_threads(o, threads_list, mf->omp_max_threads > 0 ? mf->omp_max_threads : 1)) {
        return usage("--threads %s: expected a comma-separated list of thread counts (1 to "
                     "1024) or 'all', e.g. 1,all",
                     threads_list);
    }
    if (case_list && !parse_cases(o, case_list)) {
        return usage("--case %s: expected a comma-separated list of small, medium, large",
                     case_list);
    }
    if (!case_list && !particles) {
        add_named_case(o, "small");
        add_named_case(o, "medium");
    }
    if (particles) {
        int side = cube_side(particles);
        /* below 8 per side the box would get too thin for the kernel: keep it at 8/19 */
        make_case(&o->cases[o->ncases], "custom", 0.025, side,
                  (double)(side < 8 ? 8 : side) / 19.0);
        ++o->ncases;
    }
    /* Check every case's definition (and the --set overrides) before running anything. */
    for (int c = 0; c < o->ncases; ++c) {
        pbf_world_def def;
        pbf_fluid_block blk;
        pbf_error err;
        memset(&err, 0, sizeof err);
        pbf_status st = build_def(o, &o->cases[c], o->threads[0], &def, &blk, &err);
        if (st != PBF_OK) {
            fprintf(stderr, "pbf bench: %s\n", err.message);
            return EXIT_USAGE;
        }
    }

    return -1;
}

/* The machine's limits, then every run (case x thread count) into res; -1 when they ran (*failed:
 * some failed), else the exit status. */
static int run_all(bench_options *o, bench_result *res, int nres, int *failed_out) {
    o->fork_runs = nres > 1;
    /* this machine's limits, once, before the runs (the CPU's: the model is its backend's) */
    if (o->limits && strcmp(o->device, "cpu") == 0) {
        if (!o->quiet) {
            fputs("pbf bench: measuring memory bandwidth and peak flops ...", stderr);
            fflush(stderr);
        }
        measure_limits(o, &o->machine);
        if (!o->quiet) {
            if (o->machine.ok)
                fprintf(stderr, " %.2f s\n", o->machine.seconds);
            else
                fprintf(stderr, " failed: %s\n", o->machine.error);
        }
    }
    /* On a terminal: a bar with the time left over all runs (work = particles x steps); each
     * run's line is printed whole when it ends. Elsewhere the line is started before the run. */
    pbfapp_progress bar;
    double work_total = 0;
    for (int c = 0; c < o->ncases; ++c)
        work_total += (double)o->nthreads * (double)o->cases[c].particles *
                      (double)(o->warmup + steps_for(o, &o->cases[c]));
    pbfapp_progress_start(&bar, stderr, "bench", work_total, o->quiet, -1);
    o->bar = &bar;
    const int bar_on = pbfapp_progress_active(&bar);
    int failed = 0;
    for (int c = 0, k = 0; c < o->ncases; ++c) {
        for (int t = 0; t < o->nthreads; ++t, ++k) {
            const bench_case *cs = &o->cases[c];
            pbfapp_progress_work(&bar, o->bar_base, NULL);
            if (!o->quiet && !bar_on) {
                fprintf(stderr, "pbf bench: %s, %lld particles, %s, %d thread%s, %d + %d steps ...",
                        cs->name, (long long)cs->particles, o->device, o->threads[t],
                        o->threads[t] == 1 ? "" : "s", o->warmup, steps_for(o, cs));
                fflush(stderr);
            }
            if (o->fork_runs)
                run_forked(o, c, o->threads[t], &res[k]);
            else
                run_one(o, c, o->threads[t], &res[k]);
            o->bar_base += (double)cs->particles * (double)(o->warmup + steps_for(o, cs));
            if (bar_on) { /* the run's line, whole, where the bar was */
                pbfapp_progress_clear(&bar);
                fprintf(stderr, "pbf bench: %s, %lld particles, %s, %d thread%s, %d + %d steps ...",
                        cs->name, (long long)cs->particles, o->device, o->threads[t],
                        o->threads[t] == 1 ? "" : "s", o->warmup, steps_for(o, cs));
            }
            if (res[k].create_status == PBF_ERR_INVALID_ARGUMENT) {
                /* the world cannot be made here (a device that is not there): no run can */
                if (!o->quiet) fputs(" failed\n", stderr);
                fprintf(stderr, "pbf bench: %s\n", res[k].error);
                return EXIT_USAGE;
            }
            if (!o->quiet) {
                if (res[k].ok)
                    fprintf(stderr, " %.3f ms/step\n", res[k].ms_mean);
                else
                    fprintf(stderr, " failed: %s\n", res[k].error);
            }
            failed |= !res[k].ok;
        }
    }
    pbfapp_progress_clear(&bar);
    *failed_out = failed;
    return -1;
}

int pbfapp_bench_command(int argc, char **argv) {
    bench_options o;
    memset(&o, 0, sizeof o);
    o.dt = 0.005;
    o.iterations = 4;
    o.warmup = 5;
    o.limits = 1;
    const char *case_list = NULL, *threads_list = NULL;
    long long particles = 0;
    int rc = parse_args(argc, argv, &o, &case_list, &threads_list, &particles);
    if (rc >= 0) {
        free_options(&o);
        return rc;
    }
    machine_facts mf;
    get_machine(&mf);
    rc = setup_cases(&o, &mf, case_list, threads_list, particles);
    if (rc >= 0) {
        free_options(&o);
        return rc;
    }
    int nres = o.ncases * o.nthreads;
    bench_result *res = calloc((size_t)nres, sizeof *res);
    if (!res) {
        fputs("pbf bench: out of memory\n", stderr);
        free_options(&o);
        return EXIT_RUNTIME;
    }
    int failed = 0;
    rc = run_all(&o, res, nres, &failed);
    if (rc >= 0) {
        free(res);
        free_options(&o);
        return rc;
    }
    /* speed-up from the 1-thread run of the same case */
    for (int k = 0; k < nres; ++k) {
        if (!res[k].ok) continue;
        for (int j = 0; j < nres; ++j)
            if (res[j].ok && res[j].case_index == res[k].case_index && res[j].threads == 1 &&
                res[k].ms_mean > 0)
                res[k].speedup = res[j].ms_mean / res[k].ms_mean;
    }
    int json_stdout = o.json && strcmp(o.json, "-") == 0;
    FILE *table = json_stdout ? stderr : stdout;
    pbfapp_bench_print_table(table, &o, &mf, res, nres);
    fflush(table);
    rc = failed ? EXIT_RUNTIME : 0;
    if (o.json) {
        cJSON *root = pbfapp_bench_json_results(&o, &mf, res, nres);
        int jrc = root ? pbfapp_bench_write_json(o.json, root) : EXIT_RUNTIME;
        cJSON_Delete(root);
        if (jrc) rc = EXIT_RUNTIME;
    }
    free(res);
    free_options(&o);
    return rc;
}
