/*
 * `pbf validate`'s parts (app/validate/), shared between its files: the cases and their
 * constants, the measurements of a run, the options. See validate.h for the command.
 *
 * Every case but one is a quasi-2D slab: the water is DEPTH_LAYERS particle spacings deep in z
 * between two (density-correct, free-slip) container walls, so three resolutions stay affordable
 * on two cores; the walls-and-edges case (spec.deep) is the dam break in a tank L deep, for its
 * side walls and vertical edges (n = 18 and 36 only). The resolution is n, the number of particles across the column width L = 0.146 m
 * (Koshizuka & Oka 1996); the particle radius is L / (2 n), the column 2 L high (2 n layers).
 * Time steps shrink with the particle size: frames of 1/240 s with n / 9 substeps (dt / h is
 * the same at every resolution, and the speed limit cfl h / dt, 15.6 m/s, is far above every
 * speed of the flow). The stability envelope instead uses `pbf run`'s convention of frames
 * of 1/60 s and 1, 2, 4, 8 substeps.
 *
 * The files:
 *   command.c         the command: options, help, the two suites' drivers
 *   cases.c           the case rows (CASES, METHOD_CASES), the worlds they build, their scenes
 *   run.c             the frame loop of one case (simulate) and the forked jobs that run the cases
 *                     and gnuplot (run_all, run_gnuplot): to move to app/cli/'s run driver
 *   measure.c         what a frame measures (front, column, surface, climb, energy)
 *   analysis.c        the measurements of a run (front error, rise, settled column, energy)
 *   experiments.c     the experiments' data (Koshizuka & Oka, Martin & Moyce)
 *   checks.c          the check rows (targets, CI tolerances), verdicts, checks.json
 *   figures.c         the .dat files and the figure rows (gnuplot scripts)
 *   report.c          docs/validation.md: the report's section rows and their text
 *   report_methods.c  docs/validation_solvers.md (`--solver`)
 *   template.c        the reports' text templates (validate_template.h): fixed text with named
 *                     placeholders
 */
#ifndef PBFAPP_VALIDATE_INTERNAL_H
#define PBFAPP_VALIDATE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "pbf/pbf.h"
#include "progress.h"

/* The time of a full run (51 simulations) and of --fast (8), as README.md says: measured as
 * CPU time on the 2-core development machine (15-16 CPU-minutes, 7:23-7:59 of wall time with
 * --jobs 2 on 2 idle cores; --fast 14 CPU-seconds, 7 s of wall time). Each report states the
 * wall time it took (longer on busy cores). */
#define FULL_RUN_TIME "about 8 minutes on 2 idle cores, 16 CPU-minutes"
#define FAST_RUN_TIME "about 7 s on 2 idle cores"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_FAILED_CHECK 4

/* ---- the constants of the cases ----------------------------------------------------------- */

#define KO_L 0.146        /* column width, m; the column is 2 L high */
#define DEPTH_LAYERS 4    /* slab depth in particle spacings */
#define TANK_LENGTH_L 5.0 /* dam-break tank length in L: the front stays clear of it for T <= 3.5 */
#define TANK_HEIGHT_L 3.0 /* container height in L (both cases) */
#define FRAME_FPS 240.0   /* measurement frames per simulated second */
#define DAM_T_END 3.5     /* front runs end at T = 3.5 */
#define LONG_T_END 1.0    /* s: energy runs and the stability envelope */
#define HYDRO_T_END 5.0   /* s: the hydrostatic column (about 12 periods of the tank's first
                             sloshing mode, 0.43 s: the start-up's ringing has decayed) */
#define SETTLED_LAST 1.0  /* s: the last second of a hydrostatic run is "settled"... */
#define SETTLED_FROM 0.75 /* ...and at most its last quarter (the per-method suite's 1 s runs) */
#define METHOD_HYDRO_T_END 1.0 /* s: the per-method suite's hydrostatic column */
#define STAB_FPS 60.0     /* the envelope's frames, as in `pbf run` scenes */
#define STAB_DENSITY 10.0 /* %: a larger maximum density error counts as unstable */
#define STAB_ENERGY 1.0   /* %: an energy gain E(t) - E(0) above this, of E(0), is unstable */
#define GRAVITY 9.81
#define N_COARSE 18
#define N_MEDIUM 36
#define N_FINE 72

/* ---- the experiments (experiments.c) ------------------------------------------------------- */

/* A measured surge front: T = t sqrt(2 g / a), Z = z / a at `count` points. */
typedef struct experiment {
    const double *t, *z;
    int count;
} experiment;
extern const double KO_T[], KO_Z[];
extern const int KO_POINTS;
extern const experiment EXP_KO, EXP_MM2, EXP_MM1;
#define KO_T_MAX 3.0   /* compare for T <= 3 */
#define SHIFT_MAX 0.2  /* allowed time shift in T */
#define FRONT_TOL 5.0  /* %: the target */
#define FRONT_CI 10.0  /* %: CI's looser bound while the default misses the target */
#define RELEASE_T 2.0  /* column release: the rise of the top at the wall is measured for T <= 2 */
#define RISE_TOL 0.5   /* column release: the top at the wall rises at most half a radius */
#define CLIMB_TOL 2.0  /* walls and edges: no particle more than a diameter above the liquid */

/* ---- the cases (cases.c) ------------------------------------------------------------------- */

typedef enum { CASE_HYDRO = 0, CASE_DAM = 1, CASE_STAB = 2 } case_kind;

typedef struct spec {
    char name[48];
    case_kind kind;
    int n; /* particles across L */
    int iterations;
    int vort_off; /* 1: vorticity = 0 (default otherwise) */
    double fps;   /* frames per second */
    int substeps;
    int frames;
    int fast; /* part of --fast */
    int solver;  /* pbf_solver_kind: PBF unless `pbf validate --solver` */
    int cfl_off; /* 1: the solver's CFL substeps off (its *_cfl = 0): the step as given */
    char set[256]; /* --set KEY=VALUE overrides, one per line, applied to every case's world */
    int deep;      /* dam break in a tank L deep (3D: two side walls and the edges) instead of the
                      DEPTH_LAYERS slab: the walls-and-edges case */
} spec;

/* ---- the measurements of a case (measure.c, run.c) ------------------------------------------ */

typedef struct frame_rec {
    double t;
    double err_avg, err_max; /* % */
    double vmax, vmean;      /* m/s */
    double front, column;    /* dam break: front x and column height at the back wall, m */
    double wall_top;         /* dam break: the highest particle top (y + r) at the back wall, m */
    double climb;            /* deep dam break: the largest height of a particle at a side wall
                                above the liquid beside it (climb_of), m */
    double surface;          /* hydrostatic: free-surface height, m */
    double bottom;           /* hydrostatic: lower edge (half bulk number density), m */
    double ekin, epot;       /* J (per slab), potential from the floor */
} frame_rec;

/* Plain data; a forked child writes it, then the arrays, to a file. */
typedef struct sim_head {
    spec sp; /* the case, so that a cached result is used only for the same case */
    int ok;
    char message[512];
    int nrec, nbins, ncurve, particles;
    int fail;      /* first failure: 0 none, 1 non-finite, 2 escaped, 3 average density error
                        >= STAB_DENSITY, 4 largest density error > stab_guard(), 5 (stability
                        envelope) energy gain above STAB_ENERGY % of E(0) at a frame */
    double fail_t; /* s */
    double peak_avg, peak_max; /* % over every step */
    double peak_gain;  /* largest E(t) - E(0) over the frames, % of E(0) */
    double max_over_t; /* first time the maximum density error reached STAB_DENSITY, or -1 */
    int64_t steps;
    double wall_s, mass, h0; /* h0: height the volume implies (hydrostatic), m */
} sim_head;

typedef struct sim_result {
    sim_head h;
    frame_rec *rec;
    double *bins;  /* nbins x 3: y centre (m), mean rho / rho0, particles */
    double *curve; /* ncurve x 2: y (m), number density / bulk */
} sim_result;

/* The results of a case list: res[i] for specs[i]. */
typedef struct run_set {
    spec *specs;
    sim_result *res;
    int count;
} run_set;

#define MAX_SPECS 64
#define METHOD_MAX 16 /* methods of the per-method suite at most (the registry's) */
#define METHOD_MAX_SPECS (METHOD_MAX * 8)
extern const int RES[3];
extern const int ITERS[4];
extern const int SUBSTEPS[4];
extern const int STAB_ITERS[4];
/* The methods of the per-method suite, in the order of its report: the five of its first
 * edition, then every other method the library lists (pbf_solvers), into out (room for
 * METHOD_MAX); returns their count. */
int method_order(int *out);

int make_specs(spec *v, int fast, int only_n);
int make_method_specs(spec *v, const int *solvers, int ns, int fast);
int find_spec(const spec *v, int count, const char *name);
const sim_result *get(const run_set *rs, const char *fmt, int a, int b);
const sim_result *get_method(const run_set *rs, int solver, const char *fmt, int a, int b);
int apply_sets(pbf_world_def *d, const char *set, pbf_error *err);
pbf_world_def def_of(const spec *sp, int threads);
pbf_fluid_block block_of(const spec *sp);
int write_scenes(const char *dir, const spec *specs, int count);
const char *method_name(int solver);
const char *method_title(int solver);
double method_tolerance(int solver);
double method_density_bound(int solver);
double method_state_bound(int solver);

/* ---- running the cases (run.c, measure.c) --------------------------------------------------- */

typedef struct validate_options {
    const char *out;
    const char *report; /* NULL: OUT.md */
    const char *cache;  /* --cache DIR: keep results there and reuse them */
    int cached;         /* results reused from the cache (set by run_all) */
    int fast;
    int jobs;
    int threads;
    int plots;
    int quiet;
    const char *solver;   /* --solver NAME|all: the per-method suite (validate_methods) */
    char set[256];        /* --set KEY=VALUE overrides, one per line (spec.set) */
    int resolution;       /* --resolution N: the --fast cases at n = N; 0: not given */
    pbfapp_progress *bar; /* on a terminal: the cases done, in units of cost_of */
} validate_options;

double stab_guard(void);
void simulate(const spec *sp, int threads, sim_result *res);
void sim_free(sim_result *r);
int run_all(validate_options *o, const char *workdir, spec *specs, int nspec,
            sim_result *results);
int run_gnuplot(const char *dir, const char *name);
double run_cpu_seconds(void);

typedef struct pt3 {
    float a, b, c;
} pt3;
void measure(const pbf_world *w, const spec *sp, const pbf_world_def *def, double mass, double h0,
             pt3 *buf, double *nd, int nn, double dy, frame_rec *r);
void number_density(const pbf_particles *p, double s, double area, double dy, int nn,
                    double *out);
double bulk_of(const double *nd, double dy, int nn, double h0);

/* ---- the measurements of a run (analysis.c) ------------------------------------------------- */

/* Hydrostatic summary. "run" values are over every frame after the first step; "settled" ones
 * over the last SETTLED_LAST seconds, at most the last quarter of the run (settled_from). */
typedef struct hydro_sum {
    double run_avg, run_max;     /* peak of the per-frame avg / max density error, % */
    double set_avg, set_max;     /* settled: mean of avg, peak of max, % */
    double surface, surface_err; /* settled mean surface height (m), error vs h0 (%) */
    double bottom;               /* settled mean lower edge (m) */
    double set_vmax, set_vmean;  /* settled: peak max speed, mean mean speed (m/s) */
    double vref;                 /* sqrt(g h0) */
    double init_avg, init_max;   /* frame 0 (the initial lattice, before any step) */
} hydro_sum;

typedef struct method_sum {
    double set_avg, set_max;  /* hydrostatic, settled, % */
    double slope;             /* load_slope */
    double front_err;         /* largest front error vs the experiment (best shift), % */
    double energy_inc;        /* largest increase of E between frames for t >= STARTUP_T, % E0 */
    double energy_gain;       /* largest E(t) - E(0) over the run, % E0 (<= 0: never gained) */
    double rise;              /* column release: largest rise of the top at the wall, r */
    double wall_per_s;        /* dam break: wall s per simulated s (one thread) */
    int particles;            /* dam break */
    double max_stable_dt;     /* the envelope's largest stable step, s (NAN: not run) */
    int stab_runs, stab_ok;   /* envelope runs made, stable */
} method_sum;

double t_scale(void);
double front_at(const sim_result *r, double T);
double curve_best_shift(double (*zf)(const void *, double), const void *ctx, const experiment *x,
                        double limit, double *err);
double exp_front(const void *x, double T);
double best_shift_vs(const sim_result *r, const experiment *x, double limit, double *err);
double front_error(const sim_result *r, double shift);
double best_shift(const sim_result *r, double limit, double *err);
double ritter_lead(const sim_result *r);
double top_rise(const sim_result *r, double *at_T, double *col);
double climb_max(const sim_result *r, double *at_T);
double settled_from(double tend);
hydro_sum hydro_summary(const sim_result *r);
double mean_err_avg(const sim_result *r);
double peak_err_max(const sim_result *r);
double front_distance(const sim_result *a, const sim_result *b);
void energy_summary(const sim_result *r, double from_t, double *max_inc, double *max_inc_t,
                    double *final_rel);
method_sum method_summary(const run_set *rs, int solver, int n);

/* ---- the checks (checks.c) ------------------------------------------------------------------ */

#define ENERGY_NOISE 0.01 /* % of E(0) per frame: the "noise level" of an energy increase */
#define STARTUP_T 0.05    /* s: the start-up transient excluded from the second energy check */

typedef struct check {
    char what[200];
    const char *unit; /* "%", "Z", "" for yes/no */
    double target;
    int ge;           /* 1: passes when value >= target */
    double v[3];      /* at n = 18, 36, 72; NAN: not run */
    double gate;      /* CI bound on v[0] (n = 18); NAN: not checked by CI */
    const char *note; /* why the CI bound differs from the target; NULL if it does not */
} check;

#define MAX_CHECKS 20

/* The checks of CI, per method, on the n = 18 runs. */
typedef struct method_check {
    const char *what;
    const char *unit;
    double value, target, bound; /* bound: the CI tolerance (the target, or looser: note) */
    const char *note;
} method_check;

#define METHOD_CHECKS 4
#define METHOD_TOL_FACTOR 5.0 /* CI: settled average density error <= 5 x the solve's tolerance */
#define METHOD_PBF_BOUND 1.0  /* CI, PBF (fixed iterations, no tolerance): the PBF suite's bound */

int within(double v, double bound, int ge);
int passes(const check *c, double v, double bound);
int build_checks(const run_set *rs, check *c);
int evaluate_checks(const run_set *rs, int print, FILE *f, int at_n);
int write_checks_json(const char *dir, const validate_options *o, const run_set *rs);
const char *fmt_v(char *buf, size_t size, double v, const char *unit);
const char *fmt_bound(char *buf, size_t size, double bound, const char *unit, int ge);
const char *stab_failure(int fail, int sentence);
int method_checks(const method_sum *m, int solver, method_check *c);
int method_failures(const run_set *rs, const int *solvers, int ns, int print, FILE *f);

/* ---- data files, figures, reports ----------------------------------------------------------- */

#define MAX_FIGS 16
typedef struct figure_list {
    char name[MAX_FIGS][64];
    int count;
} figure_list;

FILE *open_in(const char *dir, const char *name, char *path, size_t size);
int close_checked(FILE *f, const char *path);
int write_experiment_data(const char *dir);
int write_data(const char *dir, const run_set *rs);
int write_figures(const char *dir, figure_list *fl, int ref_n, double ref_shift);
int has_figure(const figure_list *fl, const char *name);
void describe_build(char *buf, size_t size);
int write_report(const validate_options *o, const char *report, const run_set *rs,
                 const figure_list *fl, int argc, char **argv, double wall);
int write_method_report(const validate_options *o, const char *report, const run_set *rs,
                        const int *solvers, int ns, int argc, char **argv, double wall);

#endif /* PBFAPP_VALIDATE_INTERNAL_H */
