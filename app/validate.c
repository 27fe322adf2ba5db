/*
 * `pbf validate`: see validate.h. The report is docs/validation.md (OUT.md for --out OUT).
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
 * Simulations are independent: with --jobs N > 1 each runs in a forked child process (one
 * thread each; results are bit-identical for any thread count) and hands its measurements back
 * through a file; the parent never enters an OpenMP parallel region (libgomp does not survive a
 * fork after that).
 */
#define _POSIX_C_SOURCE 200809L

#include "validate.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pbf/params.h"
#include "pbf/pbf.h"
#include "pbf_git_state.h" /* PBF_GIT_COMMIT, PBF_GIT_DIRTY: written at every build */
#include "progress.h"
#include "scene.h"

/* CPU time (user + system) of this process and of the finished simulations it waited for, s. */
static double run_cpu_seconds(void) {
    double t = 0.0;
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) == 0)
        t += (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
             (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
    if (getrusage(RUSAGE_CHILDREN, &u) == 0)
        t += (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
             (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
    return t;
}

/* The time of a full run (51 simulations) and of --fast (8), as README.md says: measured as
 * CPU time on the 2-core development machine (15-16 CPU-minutes, 7:23-7:59 of wall time with
 * --jobs 2 on 2 idle cores; --fast 14 CPU-seconds, 7 s of wall time). Each report states the
 * wall time it took (longer on busy cores). */
#define FULL_RUN_TIME "about 8 minutes on 2 idle cores, 16 CPU-minutes"
#define FAST_RUN_TIME "about 7 s on 2 idle cores"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_FAILED_CHECK 4

/* ---- the cases ----------------------------------------------------------------------------- */

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

/* Koshizuka & Oka (1996), surge front, T = t sqrt(2 g / L), Z = z / L: the experiment as
 * PySPH's dam-break example tabulates it. */
static const double KO_T[] = {0.000, 0.381, 0.769, 1.153, 1.537, 1.935, 2.323, 2.719, 3.096};
static const double KO_Z[] = {1.000, 1.111, 1.252, 1.505, 1.892, 2.241, 2.615, 3.003, 3.624};
#define KO_POINTS ((int)(sizeof KO_T / sizeof KO_T[0]))
/* Martin & Moyce (1952), the same geometry (a column a wide and 2a high, n^2 = 2), T =
 * t sqrt(2 g / a), Z = z / a, from their Figure 3 as PySPH's dam-break example tabulates it, for
 * a = 2.25 in (57.2 mm) and a = 1.125 in (28.6 mm); (0, 1) is the release. The points up to
 * T = 3.6, a little past the comparison's T <= 3. A second experiment: the report scores pbf
 * against it and scores it against Koshizuka & Oka's by the same measure. */
static const double MM2_T[] = {0.000, 0.832, 1.219, 1.997, 2.547, 3.345};
static const double MM2_Z[] = {1.000, 1.217, 1.474, 2.292, 2.995, 4.134};
static const double MM1_T[] = {0.000, 0.849, 1.212, 1.602, 2.283, 2.950, 3.598};
static const double MM1_Z[] = {1.000, 1.245, 1.443, 1.884, 2.689, 3.728, 4.528};
typedef struct experiment {
    const double *t, *z;
    int count;
} experiment;
static const experiment EXP_KO = {KO_T, KO_Z, KO_POINTS};
static const experiment EXP_MM2 = {MM2_T, MM2_Z, (int)(sizeof MM2_T / sizeof MM2_T[0])};
static const experiment EXP_MM1 = {MM1_T, MM1_Z, (int)(sizeof MM1_T / sizeof MM1_T[0])};
#define KO_T_MAX 3.0   /* compare for T <= 3 */
#define SHIFT_MAX 0.2  /* allowed time shift in T */
#define FRONT_TOL 5.0  /* %: the target */
#define FRONT_CI 10.0  /* %: CI's looser bound while the default misses the target */
#define RELEASE_T 2.0  /* column release: the rise of the top at the wall is measured for T <= 2 */
#define RISE_TOL 0.5   /* column release: the top at the wall rises at most half a radius */
#define CLIMB_TOL 2.0  /* walls and edges: no particle more than a diameter above the liquid */
#define COLUMN_RELEASE_READING                                                                     \
    "Reading: s_corr (eq. 13) does two things. Pairs closer than the rest spacing are pushed "     \
    "apart, which keeps particles from clumping (`scorr_k`), and every pair within h is pushed "   \
    "apart by a small artificial pressure. With the unilateral constraint nothing holds an "      \
    "under-dense region together, so that pressure expands it like a gas, and as a position "     \
    "correction in every iteration its push does not shrink with the time step, while "           \
    "gravity's g dt² does: at a fixed strength (k = 0.1 at every resolution, pbf's earlier "       \
    "s_corr) the top of the released column rose by 0.34, 4.6 and 13 particle radii at n = 18, "  \
    "36 and 72, the upper column expanded to 0.6-0.9 ρ0, and a lone particle climbed the wall. "  \
    "pbf now scales the artificial pressure with g dt² (`scorr_support` = 1: it pushes a "         \
    "surface particle of the rest lattice up by its weight), so that it holds the surface layer " \
    "without lifting it at every resolution and time step."


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
    int cfl_off; /* 1: the SPH solver's CFL substeps off (its *_cfl = 0): the step as given */
    char set[256]; /* --set KEY=VALUE overrides, one per line, applied to every case's world */
    int deep;      /* dam break in a tank L deep (3D: two side walls and the edges) instead of the
                      DEPTH_LAYERS slab: the walls-and-edges case */
} spec;

/* ---- measurements -------------------------------------------------------------------------- */

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

typedef struct pt3 {
    float a, b, c;
} pt3;

static int cmp_pt_desc(const void *pa, const void *pb) {
    float a = ((const pt3 *)pa)->a, b = ((const pt3 *)pb)->a;
    return (a < b) - (a > b);
}

/* The largest coordinate `amax` among the particles whose coordinate `aband` lies in [lo, hi]
 * and that have at least `minnb` such particles within `rad` (isolated droplets do not count).
 * NAN if there is none. */
static double filtered_max(const pbf_particles *p, int amax, int aband, double lo, double hi,
                           double rad, int minnb, pt3 *buf) {
    const float *c[3] = {p->x, p->y, p->z};
    int o1 = (amax + 1) % 3, o2 = (amax + 2) % 3, m = 0;
    for (int i = 0; i < p->count; ++i) {
        double v = c[aband][i];
        if (v < lo || v > hi) continue;
        buf[m].a = c[amax][i];
        buf[m].b = c[o1][i];
        buf[m].c = c[o2][i];
        ++m;
    }
    qsort(buf, (size_t)m, sizeof *buf, cmp_pt_desc);
    double r2 = rad * rad;
    for (int i = 0; i < m; ++i) {
        int count = 0;
        for (int dir = -1; dir <= 1 && count < minnb; dir += 2) {
            for (int j = i + dir; j >= 0 && j < m && count < minnb; j += dir) {
                double da = (double)buf[j].a - buf[i].a;
                if (fabs(da) > rad) break;
                double db = (double)buf[j].b - buf[i].b, dc = (double)buf[j].c - buf[i].c;
                if (da * da + db * db + dc * dc <= r2) ++count;
            }
        }
        if (count >= minnb) return buf[i].a;
    }
    return NAN;
}

/* Horizontally averaged number density along y (particles per m^3), a hat kernel of half-width
 * s: a rest lattice gives a flat profile that falls to half exactly at the volume's top. */
static void number_density(const pbf_particles *p, double s, double area, double dy, int nn,
                           double *out) {
    for (int k = 0; k < nn; ++k) out[k] = 0.0;
    double norm = 1.0 / (s * area);
    for (int i = 0; i < p->count; ++i) {
        double y = p->y[i];
        if (!isfinite(y)) continue;
        int k0 = (int)ceil((y - s) / dy), k1 = (int)floor((y + s) / dy);
        if (k0 < 0) k0 = 0;
        if (k1 > nn - 1) k1 = nn - 1;
        for (int k = k0; k <= k1; ++k) {
            double u = fabs(k * dy - y) / s;
            if (u < 1.0) out[k] += (1.0 - u) * norm;
        }
    }
}

static double bulk_of(const double *nd, double dy, int nn, double h0) {
    double sum = 0.0;
    int cnt = 0;
    for (int k = 0; k < nn; ++k) {
        double y = k * dy;
        if (y >= 0.25 * h0 && y <= 0.75 * h0) {
            sum += nd[k];
            ++cnt;
        }
    }
    return cnt ? sum / cnt : NAN;
}

/* The highest y where the number density falls to half the bulk value (linear between samples). */
static double surface_of(const double *nd, double dy, int nn, double bulk) {
    double half = 0.5 * bulk;
    for (int k = nn - 2; k >= 0; --k) {
        if (nd[k] >= half) {
            double a = nd[k], b = nd[k + 1];
            double f = (a - b) > 0 ? (a - half) / (a - b) : 0.0;
            return (k + f) * dy;
        }
    }
    return NAN;
}

/* The lowest y where the number density rises to half the bulk value. */
static double bottom_of(const double *nd, double dy, int nn, double bulk) {
    double half = 0.5 * bulk;
    if (nd[0] >= half) return 0.0;
    for (int k = 1; k < nn; ++k) {
        if (nd[k] >= half) {
            double a = nd[k - 1], b = nd[k];
            return (k - 1 + (half - a) / (b - a)) * dy;
        }
    }
    return NAN;
}

static void apply_method(pbf_world_def *d, const spec *sp);

/* The keys a case sets itself (resolution, iterations, container, threads, solver): --set
 * refuses them. */
static const char *const CASE_KEYS[] = {"particle_radius", "solver_iterations", "domain_min",
                                        "domain_max", "threads", "solver"};

/* Applies the --set lines of `set` to d; 0 with the message in err on a bad one. */
static int apply_sets(pbf_world_def *d, const char *set, pbf_error *err) {
    pbfapp_run run = pbfapp_default_run();
    const char *line = set;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char kv[256];
        snprintf(kv, sizeof kv, "%.*s", (int)len, line);
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv) {
            snprintf(err->message, sizeof err->message,
                     "--set %s: expected KEY=VALUE, e.g. --set friction_dynamic=0.2", kv);
            return 0;
        }
        *eq = '\0';
        for (size_t k = 0; k < sizeof CASE_KEYS / sizeof CASE_KEYS[0]; ++k)
            if (strcmp(kv, CASE_KEYS[k]) == 0) {
                snprintf(err->message, sizeof err->message,
                         "--set %s: every case sets this key itself (resolution, iterations, "
                         "container, threads, solver)",
                         kv);
                return 0;
            }
        size_t rn = 0;
        const pbf_param_info *rt = pbfapp_run_params(&rn);
        if (pbf_param_find(rt, rn, kv)) {
            snprintf(err->message, sizeof err->message,
                     "--set %s: a key of `pbf run`, not of the world: every case sets its own "
                     "frames and steps",
                     kv);
            return 0;
        }
        char label[300];
        snprintf(label, sizeof label, "--set %.280s", kv);
        if (pbfapp_apply_override(d, &run, kv, eq + 1, label, err) != PBF_OK) return 0;
        line += len + (end ? 1 : 0);
    }
    return 1;
}

static pbf_world_def def_of(const spec *sp, int threads) {
    pbf_world_def d = pbf_default_world_def();
    apply_method(&d, sp);
    pbf_error err;
    apply_sets(&d, sp->set, &err); /* checked before any case runs */
    float s = (float)(KO_L / sp->n);
    d.particle_radius = 0.5f * s;
    d.pbf.solver_iterations = sp->iterations;
    if (sp->vort_off) d.vorticity = 0.0f;
    d.threads = threads;
    d.domain_min = (pbf_vec3){0, 0, 0};
    double len = sp->kind == CASE_HYDRO ? KO_L : TANK_LENGTH_L * KO_L;
    d.domain_max = (pbf_vec3){(float)len, (float)(TANK_HEIGHT_L * KO_L),
                              sp->deep ? (float)KO_L : DEPTH_LAYERS * s};
    return d;
}

static pbf_fluid_block block_of(const spec *sp) {
    float s = (float)(KO_L / sp->n);
    pbf_fluid_block b = {{0, 0, 0},
                         {(float)KO_L, (float)(2.0 * KO_L), sp->deep ? (float)KO_L : DEPTH_LAYERS * s},
                         {0, 0, 0}};
    return b;
}

/* Climbing at the side walls and their edges (deep dam break): the particles are binned along
 * x (bins of 2 spacings); in each bin, the highest particle within 1.5 spacings of a side wall
 * (z = 0 or z = depth; a lone one counts, and the vertical edges at the back wall lie in the
 * first bin) is compared with the highest particle of the liquid away from them (3 spacings or
 * more from both side walls) in that bin and its two neighbours. The flow is uniform in z, so
 * any excess is liquid that climbed a wall or an edge. Returns the largest excess, m (NAN if no
 * bin has both). */
#define CLIMB_BINS 512
static double climb_of(const pbf_particles *p, const pbf_world_def *def) {
    const double s = 2.0 * def->particle_radius, bw = 2.0 * s;
    const double x0 = def->domain_min.x, z0 = def->domain_min.z, z1 = def->domain_max.z;
    int nb = (int)ceil(((double)def->domain_max.x - x0) / bw);
    if (nb > CLIMB_BINS) nb = CLIMB_BINS;
    double top[CLIMB_BINS], ref[CLIMB_BINS];
    for (int b = 0; b < nb; ++b) top[b] = ref[b] = -INFINITY;
    for (int i = 0; i < p->count; ++i) {
        double x = p->x[i], y = p->y[i], z = p->z[i];
        if (!isfinite(x + y + z)) continue;
        int b = (int)floor((x - x0) / bw);
        b = b < 0 ? 0 : (b >= nb ? nb - 1 : b);
        if (z < z0 + 1.5 * s || z > z1 - 1.5 * s) {
            if (y > top[b]) top[b] = y;
        } else if (z >= z0 + 3.0 * s && z <= z1 - 3.0 * s) {
            if (y > ref[b]) ref[b] = y;
        }
    }
    double worst = NAN;
    for (int b = 0; b < nb; ++b) {
        double r = ref[b];
        if (b > 0 && ref[b - 1] > r) r = ref[b - 1];
        if (b + 1 < nb && ref[b + 1] > r) r = ref[b + 1];
        if (!isfinite(top[b]) || !isfinite(r)) continue;
        if (!(top[b] - r <= worst)) worst = top[b] - r;
    }
    return worst;
}

static void measure(const pbf_world *w, const spec *sp, const pbf_world_def *def, double mass,
                    double h0, pt3 *buf, double *nd, int nn, double dy, frame_rec *r) {
    pbf_stats st = pbf_world_stats(w);
    pbf_particles p = pbf_world_particles(w);
    r->t = st.time;
    r->err_avg = st.density_error_avg;
    r->err_max = st.density_error_max;
    r->vmax = st.max_speed;
    double sv = 0.0, ek = 0.0, ep = 0.0;
    for (int i = 0; i < p.count; ++i) {
        double v2 =
            (double)p.vx[i] * p.vx[i] + (double)p.vy[i] * p.vy[i] + (double)p.vz[i] * p.vz[i];
        sv += sqrt(v2);
        ek += 0.5 * v2;
        ep -= (double)def->gravity.x * (p.x[i] - def->domain_min.x) +
              (double)def->gravity.y * (p.y[i] - def->domain_min.y) +
              (double)def->gravity.z * (p.z[i] - def->domain_min.z);
    }
    r->vmean = p.count ? sv / p.count : 0.0;
    r->ekin = mass * ek;
    r->epot = mass * ep;
    double s = 2.0 * def->particle_radius, rad = def->particle_radius;
    r->front = r->column = r->surface = r->bottom = r->wall_top = r->climb = NAN;
    if (sp->kind == CASE_DAM) {
        r->front = filtered_max(&p, 0, 1, def->domain_min.y, def->domain_min.y + 2.0 * s, 2.0 * s,
                                4, buf) +
                   rad - def->domain_min.x;
        r->column = filtered_max(&p, 1, 0, def->domain_min.x, def->domain_min.x + 2.0 * s, 2.0 * s,
                                 4, buf) +
                    rad - def->domain_min.y;
        /* every particle counts here, a lone one climbing the wall too */
        double top = -INFINITY;
        for (int i = 0; i < p.count; ++i)
            if (p.x[i] <= def->domain_min.x + 2.0 * s && p.y[i] > top) top = p.y[i];
        r->wall_top = top + rad - def->domain_min.y;
        if (sp->deep) r->climb = climb_of(&p, def);
    } else if (sp->kind == CASE_HYDRO) {
        double area = ((double)def->domain_max.x - def->domain_min.x) *
                      ((double)def->domain_max.z - def->domain_min.z);
        number_density(&p, s, area, dy, nn, nd);
        double bulk = bulk_of(nd, dy, nn, h0);
        r->surface = surface_of(nd, dy, nn, bulk);
        r->bottom = bottom_of(nd, dy, nn, bulk);
    }
}

static void sim_free(sim_result *r) {
    free(r->rec);
    free(r->bins);
    free(r->curve);
    r->rec = NULL;
    r->bins = r->curve = NULL;
}

/* Runs one case in this process. */
/* %: `pbf run`'s default guard_density_error (the scene files' default run parameters): a run
 * whose largest density error goes above it stops there (exit 3), so the stability envelope
 * counts it unstable too, as the case's scene file would stop under `pbf run`. */
static double stab_guard(void) { return pbfapp_default_run().guard_density_error; }

static void simulate(const spec *sp, int threads, sim_result *res) {
    const double guard = stab_guard();
    memset(res, 0, sizeof *res);
    res->h.sp = *sp;
    pbf_error err;
    pbf_world *w = NULL;
    pbf_world_def def = def_of(sp, threads);
    pbf_fluid_block blk = block_of(sp);
    pt3 *buf = NULL;
    double *nd = NULL;
    double t0 = pbfapp_now();
    res->h.max_over_t = -1.0;
    if (pbf_world_create(&def, &w, &err) != PBF_OK ||
        pbf_world_add_fluid_block(w, &blk, &err) != PBF_OK) {
        snprintf(res->h.message, sizeof res->h.message, "%s: %.400s", sp->name, err.message);
        pbf_world_destroy(w);
        return;
    }
    pbf_particles p0 = pbf_world_particles(w);
    double s = 2.0 * def.particle_radius;
    res->h.particles = p0.count;
    res->h.mass = pbf_world_derived(w).mass;
    res->h.h0 = p0.count * s * s * s /
                (((double)def.domain_max.x - def.domain_min.x) *
                 ((double)def.domain_max.z - def.domain_min.z));
    double top = (double)def.domain_max.y - def.domain_min.y;
    double dy = s / 16.0;
    int nn = (int)ceil(top / dy) + 1;
    res->rec = calloc((size_t)sp->frames + 1, sizeof *res->rec);
    buf = malloc((size_t)(p0.count > 0 ? p0.count : 1) * sizeof *buf);
    nd = malloc((size_t)nn * sizeof *nd);
    if (!res->rec || !buf || !nd) {
        snprintf(res->h.message, sizeof res->h.message, "%s: out of memory", sp->name);
        goto done;
    }
    double dt = 1.0 / (sp->fps * sp->substeps);
    measure(w, sp, &def, res->h.mass, res->h.h0, buf, nd, nn, dy, &res->rec[0]);
    const double e0 = res->rec[0].ekin + res->rec[0].epot;
    res->h.nrec = 1;
    res->h.peak_gain = 0.0;
    for (int f = 1; f <= sp->frames; ++f) {
        int stop = 0;
        for (int k = 0; k < sp->substeps && !stop; ++k) {
            if (pbf_world_step(w, (float)dt, &err) != PBF_OK) {
                snprintf(res->h.message, sizeof res->h.message, "%s: %.400s", sp->name,
                         err.message);
                goto done;
            }
            ++res->h.steps;
            pbf_stats st = pbf_world_stats(w);
            int fail = st.nonfinite > 0                       ? 1
                       : st.escaped > 0                       ? 2
                       : st.density_error_avg >= STAB_DENSITY ? 3
                       : st.density_error_max > guard         ? 4
                                                              : 0;
            if (fail != 1 && st.density_error_max >= STAB_DENSITY && res->h.max_over_t < 0)
                res->h.max_over_t = st.time;
            if (fail && !res->h.fail) {
                res->h.fail = fail;
                res->h.fail_t = st.time;
            }
            if (fail != 1) {
                if (st.density_error_avg > res->h.peak_avg) res->h.peak_avg = st.density_error_avg;
                if (st.density_error_max > res->h.peak_max) res->h.peak_max = st.density_error_max;
            }
            if (fail == 1 || fail == 2 || (fail && sp->kind == CASE_STAB)) stop = 1;
        }
        if (stop) break;
        measure(w, sp, &def, res->h.mass, res->h.h0, buf, nd, nn, dy, &res->rec[f]);
        res->h.nrec = f + 1;
        /* a run that explodes can keep every density: the envelope also asks that nothing gains
         * energy (gravity and walls at rest add none; vorticity confinement adds little) */
        const double gain = 100.0 * (res->rec[f].ekin + res->rec[f].epot - e0) / e0;
        if (gain > res->h.peak_gain) res->h.peak_gain = gain;
        if (sp->kind == CASE_STAB && gain > STAB_ENERGY && !res->h.fail) {
            res->h.fail = 5;
            res->h.fail_t = res->rec[f].t;
            break;
        }
    }
    if (sp->kind == CASE_HYDRO) {
        /* final profiles: mean density per layer of height s, number density / bulk */
        pbf_particles p = pbf_world_particles(w);
        int nb = (int)ceil(top / s);
        res->bins = calloc((size_t)nb * 3, sizeof *res->bins);
        res->curve = malloc((size_t)nn * 2 * sizeof *res->curve);
        if (!res->bins || !res->curve) {
            snprintf(res->h.message, sizeof res->h.message, "%s: out of memory", sp->name);
            goto done;
        }
        /* hat-weighted (half-width one spacing) mean density at heights (b + 1/2) s: no
         * aliasing between the bins and the particle layers */
        for (int i = 0; i < p.count; ++i) {
            double y = (double)p.y[i] - def.domain_min.y;
            if (!isfinite(y)) continue;
            int b0 = (int)floor(y / s - 1.5), b1 = (int)ceil(y / s + 0.5);
            for (int b = b0 < 0 ? 0 : b0; b <= b1 && b < nb; ++b) {
                double u = fabs((b + 0.5) * s - y) / s;
                if (u >= 1.0) continue;
                res->bins[3 * b + 1] += (1.0 - u) * p.density[i] / def.rest_density;
                res->bins[3 * b + 2] += 1.0 - u;
            }
        }
        int used = 0;
        for (int b = 0; b < nb; ++b) {
            if (res->bins[3 * b + 2] < 1.0) continue; /* less than one particle's weight */
            res->bins[3 * used + 0] = (b + 0.5) * s;
            res->bins[3 * used + 1] = res->bins[3 * b + 1] / res->bins[3 * b + 2];
            res->bins[3 * used + 2] = res->bins[3 * b + 2];
            ++used;
        }
        res->h.nbins = used;
        double area = ((double)def.domain_max.x - def.domain_min.x) *
                      ((double)def.domain_max.z - def.domain_min.z);
        number_density(&p, s, area, dy, nn, nd);
        double bulk = bulk_of(nd, dy, nn, res->h.h0);
        for (int k = 0; k < nn; ++k) {
            res->curve[2 * k] = k * dy;
            res->curve[2 * k + 1] = nd[k] / bulk;
        }
        res->h.ncurve = nn;
    }
    res->h.ok = 1;
done:
    res->h.wall_s = pbfapp_now() - t0;
    free(buf);
    free(nd);
    pbf_world_destroy(w);
}

/* ---- running cases in forked children -------------------------------------------------------- */

static int write_all(FILE *f, const void *p, size_t size) {
    return size == 0 || fwrite(p, size, 1, f) == 1;
}

static int save_result(const char *path, const sim_result *r) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = write_all(f, &r->h, sizeof r->h) &&
             write_all(f, r->rec, (size_t)r->h.nrec * sizeof *r->rec) &&
             write_all(f, r->bins, (size_t)r->h.nbins * 3 * sizeof *r->bins) &&
             write_all(f, r->curve, (size_t)r->h.ncurve * 2 * sizeof *r->curve);
    return fclose(f) == 0 && ok;
}

static int load_result(const char *path, sim_result *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int ok = fread(&r->h, sizeof r->h, 1, f) == 1 && r->h.nrec >= 0 && r->h.nbins >= 0 &&
             r->h.ncurve >= 0 && r->h.nrec < 10000000 && r->h.ncurve < 10000000;
    if (ok) {
        r->rec = calloc((size_t)r->h.nrec + 1, sizeof *r->rec);
        r->bins = calloc((size_t)r->h.nbins * 3 + 1, sizeof *r->bins);
        r->curve = calloc((size_t)r->h.ncurve * 2 + 1, sizeof *r->curve);
        ok = r->rec && r->bins && r->curve &&
             (r->h.nrec == 0 ||
              fread(r->rec, sizeof *r->rec, (size_t)r->h.nrec, f) == (size_t)r->h.nrec) &&
             (r->h.nbins == 0 || fread(r->bins, sizeof *r->bins, (size_t)r->h.nbins * 3, f) ==
                                     (size_t)r->h.nbins * 3) &&
             (r->h.ncurve == 0 || fread(r->curve, sizeof *r->curve, (size_t)r->h.ncurve * 2, f) ==
                                      (size_t)r->h.ncurve * 2);
    }
    fclose(f);
    if (!ok) sim_free(r);
    return ok;
}

/* Estimated cost of a case (particle-iteration-steps), to start the longest first. */
static double cost_of(const spec *sp) {
    double particles = (sp->deep ? 2.0 * sp->n : 8.0) * sp->n * sp->n;
    return particles * (sp->iterations + 1.5) * sp->frames * (double)sp->substeps *
           (sp->solver == PBF_SOLVER_PBF ? 1.0 : 8.0); /* the SPH solvers: ~8x PBF's 4 iterations */
}

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

static void progress_line(const validate_options *o, int done, int total, const spec *sp,
                          const sim_result *r) {
    if (o->quiet) return;
    fprintf(stderr, "pbf validate: [%2d/%d] %-24s %6d particles %6lld steps %7.1f s%s%s\n", done,
            total, sp->name, r->h.particles, (long long)r->h.steps, r->h.wall_s,
            r->h.ok ? "" : "  FAILED: ", r->h.ok ? "" : r->h.message);
}

/* A case is done: its line, with the bar (on a terminal) redrawn below it. */
static void case_done(const validate_options *o, int done, int total, const spec *sp,
                      const sim_result *r, double *work_done) {
    pbfapp_progress_clear(o->bar);
    progress_line(o, done, total, sp, r);
    *work_done += cost_of(sp);
    char what[64];
    snprintf(what, sizeof what, "%d/%d cases", done, total);
    pbfapp_progress_work(o->bar, *work_done, what);
}

/* With --cache: loads the cached result of a case (1) if it is there and of the same case. */
static int from_cache(const validate_options *o, const spec *sp, sim_result *r) {
    if (!o->cache) return 0;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.bin", o->cache, sp->name);
    if (!load_result(path, r)) return 0;
    if (r->h.ok && memcmp(&r->h.sp, sp, sizeof *sp) == 0) return 1;
    sim_free(r);
    memset(r, 0, sizeof *r);
    return 0;
}

static void to_cache(const validate_options *o, const spec *sp, const sim_result *r) {
    if (!o->cache || !r->h.ok) return;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.bin", o->cache, sp->name);
    if (!save_result(path, r))
        fprintf(stderr, "pbf validate: warning: %s: cannot write the cache\n", path);
}

/* Runs every case; results[i] for specs[i]. Returns 0 on success. */
static int run_all(validate_options *o, const char *workdir, spec *specs, int nspec,
                   sim_result *results) {
    int *order = malloc((size_t)nspec * sizeof *order);
    if (!order) return 1;
    int done = 0, rc = 0, ntodo = 0;
    double work_done = 0, work_total = 0;
    for (int i = 0; i < nspec; ++i) work_total += cost_of(&specs[i]);
    pbfapp_progress bar;
    pbfapp_progress_start(&bar, stderr, "validate", work_total, o->quiet, -1);
    o->bar = &bar;
    for (int i = 0; i < nspec; ++i) {
        if (from_cache(o, &specs[i], &results[i])) {
            work_done += cost_of(&specs[i]);
            ++o->cached;
            if (!o->quiet)
                fprintf(stderr, "pbf validate: [%2d/%d] %-24s from the cache %s/\n", ++done, nspec,
                        specs[i].name, o->cache);
            else
                ++done;
        } else
            order[ntodo++] = i;
    }
    for (int i = 1; i < ntodo; ++i) { /* insertion sort by cost, descending */
        int v = order[i], j = i;
        while (j > 0 && cost_of(&specs[order[j - 1]]) < cost_of(&specs[v])) {
            order[j] = order[j - 1];
            --j;
        }
        order[j] = v;
    }
    {
        char what[64];
        snprintf(what, sizeof what, "%d/%d cases", done, nspec);
        pbfapp_progress_work(&bar, work_done, what);
    }
    if (o->jobs <= 1) {
        for (int k = 0; k < ntodo; ++k) {
            int i = order[k];
            simulate(&specs[i], o->threads, &results[i]);
            to_cache(o, &specs[i], &results[i]);
            case_done(o, ++done, nspec, &specs[i], &results[i], &work_done);
        }
        pbfapp_progress_finish(&bar);
        o->bar = NULL;
        free(order);
        return 0;
    }
    pid_t *pids = calloc((size_t)nspec, sizeof *pids);
    if (!pids) {
        pbfapp_progress_finish(&bar);
        o->bar = NULL;
        free(order);
        return 1;
    }
    int next = 0, running = 0;
    char path[4400];
    while (done < nspec) {
        while (running < o->jobs && next < ntodo) {
            int i = order[next++];
            snprintf(path, sizeof path, "%s/%s.bin", workdir, specs[i].name);
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) {
                fprintf(stderr, "pbf validate: fork: %s\n", strerror(errno));
                rc = 1;
                next = ntodo;
                break;
            }
            if (pid == 0) {
                sim_result r;
                simulate(&specs[i], o->threads, &r);
                _exit(save_result(path, &r) ? 0 : 1);
            }
            pids[i] = pid;
            ++running;
        }
        if (running == 0) break;
        int status = 0;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "pbf validate: waitpid: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        int i = -1;
        for (int k = 0; k < nspec; ++k)
            if (pids[k] == pid) i = k;
        if (i < 0) continue;
        pids[i] = 0;
        --running;
        snprintf(path, sizeof path, "%s/%s.bin", workdir, specs[i].name);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || !load_result(path, &results[i])) {
            memset(&results[i], 0, sizeof results[i]);
            snprintf(results[i].h.message, sizeof results[i].h.message,
                     "%s: the simulation process ended without a result (%s %d)", specs[i].name,
                     WIFSIGNALED(status) ? "signal" : "exit",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        }
        remove(path);
        to_cache(o, &specs[i], &results[i]);
        case_done(o, ++done, nspec, &specs[i], &results[i], &work_done);
    }
    pbfapp_progress_finish(&bar);
    o->bar = NULL;
    free(pids);
    free(order);
    return rc;
}

/* ---- analysis -------------------------------------------------------------------------------- */

static double t_scale(void) {
    return sqrt(2.0 * GRAVITY / KO_L);
} /* T = t * t_scale */

/* Front Z at non-dimensional time T (linear interpolation; 1 before the start, NAN after the
 * end). */
static double front_at(const sim_result *r, double T) {
    double ts = t_scale();
    if (r->h.nrec < 1) return NAN;
    if (T <= r->rec[0].t * ts) return r->rec[0].front / KO_L;
    for (int k = 1; k < r->h.nrec; ++k) {
        double T0 = r->rec[k - 1].t * ts, T1 = r->rec[k].t * ts;
        if (T <= T1) {
            double f = (T - T0) / (T1 - T0);
            return ((1.0 - f) * r->rec[k - 1].front + f * r->rec[k].front) / KO_L;
        }
    }
    return NAN;
}

/* Largest relative error (%) of the front Z(T) against experiment x's points with
 * 0 < T_k <= KO_T_MAX when Z is delayed by `shift` (compared at T_k - shift). */
static double curve_error(double (*zf)(const void *, double), const void *ctx,
                          const experiment *x, double shift) {
    double worst = 0.0;
    for (int k = 1; k < x->count; ++k) {
        if (x->t[k] > KO_T_MAX) continue;
        double z = zf(ctx, x->t[k] - shift);
        if (!isfinite(z)) return INFINITY;
        double e = 100.0 * fabs(z - x->z[k]) / x->z[k];
        if (e > worst) worst = e;
    }
    return worst;
}

/* The shift in [-limit, limit] (steps of 0.001) that minimises curve_error. */
static double curve_best_shift(double (*zf)(const void *, double), const void *ctx,
                               const experiment *x, double limit, double *err) {
    double best = 0.0, be = curve_error(zf, ctx, x, 0.0);
    int n = (int)lround(limit / 0.001);
    for (int k = -n; k <= n; ++k) {
        double sh = k * 0.001, e = curve_error(zf, ctx, x, sh);
        if (e < be - 1e-12) {
            be = e;
            best = sh;
        }
    }
    *err = be;
    return best;
}

static double sim_front(const void *r, double T) { return front_at((const sim_result *)r, T); }

/* An experiment's own front, piecewise linear between its points (NAN past its last). */
static double exp_front(const void *x, double T) {
    const experiment *e = (const experiment *)x;
    if (T <= e->t[0]) return e->z[0];
    for (int k = 1; k < e->count; ++k)
        if (T <= e->t[k])
            return e->z[k - 1] +
                   (e->z[k] - e->z[k - 1]) * (T - e->t[k - 1]) / (e->t[k] - e->t[k - 1]);
    return NAN;
}

/* pbf's front against experiment x, and against Koshizuka & Oka (the target's experiment). */
static double best_shift_vs(const sim_result *r, const experiment *x, double limit, double *err) {
    return curve_best_shift(sim_front, r, x, limit, err);
}
static double front_error(const sim_result *r, double shift) {
    return curve_error(sim_front, r, &EXP_KO, shift);
}
static double best_shift(const sim_result *r, double limit, double *err) {
    return best_shift_vs(r, &EXP_KO, limit, err);
}

/* Largest lead over Ritter's front, Z - (1 + 2 T), over the run after the start (< 0: never
 * ahead; at T = 0 both are 1). */
static double ritter_lead(const sim_result *r) {
    double worst = -INFINITY, ts = t_scale();
    for (int k = 1; k < r->h.nrec; ++k) {
        double T = r->rec[k].t * ts, d = r->rec[k].front / KO_L - (1.0 + 2.0 * T);
        if (isfinite(d) && d > worst) worst = d;
    }
    return worst;
}

/* Column release: the largest rise of the top of the liquid at the back wall above its initial
 * height for T <= RELEASE_T (before anything can come back to the wall), in particle radii
 * (every particle within 2 spacings of the wall; *col: the same for the residual column, which
 * ignores lone particles), and the T of the largest rise. */
static double top_rise(const sim_result *r, double *at_T, double *col) {
    const double rad = 0.5 * KO_L / r->h.sp.n;
    double worst = 0.0, cw = 0.0;
    *at_T = 0.0;
    if (col) *col = NAN;
    for (int k = 1; k < r->h.nrec && r->rec[k].t * t_scale() <= RELEASE_T + 1e-9; ++k) {
        double d = (r->rec[k].wall_top - r->rec[0].wall_top) / rad;
        double c = (r->rec[k].column - r->rec[0].column) / rad;
        if (!isfinite(d)) return INFINITY;
        if (d > worst) {
            worst = d;
            *at_T = r->rec[k].t * t_scale();
        }
        if (c > cw) cw = c;
    }
    if (col) *col = cw;
    return worst;
}

/* Walls and edges: the largest climb (climb_of) over the run, in particle radii, and its T. */
static double climb_max(const sim_result *r, double *at_T) {
    const double rad = 0.5 * KO_L / r->h.sp.n;
    double worst = -INFINITY;
    *at_T = NAN;
    for (int k = 1; k < r->h.nrec; ++k) {
        double c = r->rec[k].climb / rad;
        if (!isfinite(c)) return INFINITY;
        if (c > worst) {
            worst = c;
            *at_T = r->rec[k].t * t_scale();
        }
    }
    return worst;
}

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

/* The start of a hydrostatic run's settled window (s) for a run that ends at tend. */
static double settled_from(double tend) { return fmax(SETTLED_FROM * tend, tend - SETTLED_LAST); }

static hydro_sum hydro_summary(const sim_result *r) {
    hydro_sum s;
    memset(&s, 0, sizeof s);
    if (r->h.nrec < 2) {
        s.surface = s.surface_err = s.bottom = NAN;
        return s;
    }
    double tend = r->rec[r->h.nrec - 1].t, from = settled_from(tend);
    double sa = 0.0, ss = 0.0, sm = 0.0, sb = 0.0;
    int n = 0;
    s.init_avg = r->rec[0].err_avg;
    s.init_max = r->rec[0].err_max;
    for (int k = 1; k < r->h.nrec; ++k) {
        const frame_rec *f = &r->rec[k];
        if (f->err_avg > s.run_avg) s.run_avg = f->err_avg;
        if (f->err_max > s.run_max) s.run_max = f->err_max;
        if (f->t < from - 1e-9) continue;
        sa += f->err_avg;
        ss += f->surface;
        sb += f->bottom;
        sm += f->vmean;
        if (f->err_max > s.set_max) s.set_max = f->err_max;
        if (f->vmax > s.set_vmax) s.set_vmax = f->vmax;
        ++n;
    }
    s.set_avg = n ? sa / n : NAN;
    s.surface = n ? ss / n : NAN;
    s.bottom = n ? sb / n : NAN;
    s.set_vmean = n ? sm / n : NAN;
    s.surface_err = 100.0 * (s.surface - r->h.h0) / r->h.h0;
    s.vref = sqrt(GRAVITY * r->h.h0);
    return s;
}

/* Time-averaged mean density error of a run (frames after the first step), %. */
static double mean_err_avg(const sim_result *r) {
    double s = 0.0;
    int n = 0;
    for (int k = 1; k < r->h.nrec; ++k) {
        s += r->rec[k].err_avg;
        ++n;
    }
    return n ? s / n : NAN;
}

static double peak_err_max(const sim_result *r) {
    double m = 0.0;
    for (int k = 1; k < r->h.nrec; ++k)
        if (r->rec[k].err_max > m) m = r->rec[k].err_max;
    return m;
}

/* Largest difference of two runs' fronts (in Z) for T <= KO_T_MAX. */
static double front_distance(const sim_result *a, const sim_result *b) {
    double worst = 0.0;
    for (double T = 0.0; T <= KO_T_MAX + 1e-9; T += 0.01) {
        double d = fabs(front_at(a, T) - front_at(b, T));
        if (!isfinite(d)) return INFINITY;
        if (d > worst) worst = d;
    }
    return worst;
}

/* Energy: largest increase of E = Ekin + Epot between consecutive frames, relative to the
 * initial energy (%), and the final energy relative to the initial one. */
static void energy_summary(const sim_result *r, double from_t, double *max_inc, double *max_inc_t,
                           double *final_rel) {
    *max_inc = 0.0;
    *max_inc_t = NAN;
    *final_rel = NAN;
    if (r->h.nrec < 2) return;
    double e0 = r->rec[0].ekin + r->rec[0].epot;
    for (int k = 1; k < r->h.nrec; ++k) {
        if (r->rec[k].t < from_t - 1e-9) continue;
        double d = (r->rec[k].ekin + r->rec[k].epot) - (r->rec[k - 1].ekin + r->rec[k - 1].epot);
        if (100.0 * d / e0 > *max_inc) {
            *max_inc = 100.0 * d / e0;
            *max_inc_t = r->rec[k].t;
        }
    }
    const frame_rec *l = &r->rec[r->h.nrec - 1];
    *final_rel = (l->ekin + l->epot) / e0;
}

/* ---- the case list --------------------------------------------------------------------------- */

#define MAX_SPECS 64

static void add_spec(spec *v, int *count, case_kind kind, int n, int it, int vort_off,
                     int substeps_stab, double t_end, int fast) {
    spec *s = &v[(*count)++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->n = n;
    s->iterations = it;
    s->vort_off = vort_off;
    s->fast = fast;
    if (kind == CASE_STAB) {
        s->fps = STAB_FPS;
        s->substeps = substeps_stab;
        snprintf(s->name, sizeof s->name, "stab_n%d_s%d_it%d", n, substeps_stab, it);
    } else {
        s->fps = FRAME_FPS;
        s->substeps = n / 9;
        snprintf(s->name, sizeof s->name, "%s_n%d_it%d%s", kind == CASE_HYDRO ? "hydro" : "dam", n,
                 it, vort_off ? "_vort0" : "");
    }
    s->frames = (int)ceil(t_end * s->fps - 1e-9);
}

static const int RES[3] = {N_COARSE, N_MEDIUM, N_FINE};
static const int ITERS[4] = {2, 4, 8, 16};
static const int SUBSTEPS[4] = {1, 2, 4, 8};
static const int STAB_ITERS[4] = {1, 2, 4, 8};

/* fast: the CI subset at one resolution (only_n; N_COARSE for --fast) */
static int make_specs(spec *v, int fast, int only_n) {
    int c = 0;
    double dam_end = DAM_T_END / t_scale();
    const int res[3] = {N_COARSE, N_MEDIUM, N_FINE};
    for (int k = 0; k < 3; ++k) {
        int n = res[k];
        if (fast && n != only_n) continue;
        add_spec(v, &c, CASE_HYDRO, n, 4, 0, 0, HYDRO_T_END, n == N_COARSE);
        if (n == N_MEDIUM)
            for (int i = 0; i < 4; ++i)
                if (ITERS[i] != 4) add_spec(v, &c, CASE_HYDRO, n, ITERS[i], 0, 0, HYDRO_T_END, 0);
        for (int i = 0; i < 4; ++i) {
            if (n == N_FINE && ITERS[i] != 4) continue;
            /* the 4-iteration runs of n = 18, 36 are also the energy runs with confinement on:
             * longer (--fast needs only the front: the same steps, stopped at T = 3.5) */
            double tend = (ITERS[i] == 4 && n != N_FINE && !fast) ? LONG_T_END : dam_end;
            add_spec(v, &c, CASE_DAM, n, ITERS[i], 0, 0, tend, n == N_COARSE);
        }
        if (n != N_FINE) add_spec(v, &c, CASE_DAM, n, 4, 1, 0, LONG_T_END, n == N_COARSE);
        if (n != N_FINE) { /* walls and edges: the dam break L deep, T <= 3 (n = 72: 746k
                              particles, beyond the time budget) */
            add_spec(v, &c, CASE_DAM, n, 4, 0, 0, KO_T_MAX / t_scale(), n == N_COARSE);
            v[c - 1].deep = 1;
            snprintf(v[c - 1].name, sizeof v[c - 1].name, "edges_n%d_it4", n);
        }
        if (n != N_FINE)
            for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b)
                    if (!fast || (SUBSTEPS[a] == 4 && STAB_ITERS[b] == 4)) /* --fast: the default */
                        add_spec(v, &c, CASE_STAB, n, STAB_ITERS[b], 0, SUBSTEPS[a], LONG_T_END,
                                 n == N_COARSE);
    }
    return c;
}

static int find_spec(const spec *v, int count, const char *name) {
    for (int i = 0; i < count; ++i)
        if (strcmp(v[i].name, name) == 0) return i;
    return -1;
}

/* The result of a case by name, NULL if it was not run or failed. */
typedef struct run_set {
    spec *specs;
    sim_result *res;
    int count;
} run_set;

static const sim_result *get(const run_set *rs, const char *fmt, int a, int b) {
    char name[64];
    snprintf(name, sizeof name, fmt, a, b);
    int i = find_spec(rs->specs, rs->count, name);
    if (i < 0 || !rs->res[i].h.ok) return NULL;
    return &rs->res[i];
}

/* ---- data files, gnuplot scripts ---------------------------------------------------------- */

static FILE *open_in(const char *dir, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "pbf validate: %s: cannot create: %s\n", path, strerror(errno));
    return f;
}

static int close_checked(FILE *f, const char *path) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "pbf validate: %s: write error: %s\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

static int write_data(const char *dir, const run_set *rs) {
    char path[4400], name[128];
    FILE *f = open_in(dir, "ko_experiment.dat", path, sizeof path);
    if (!f) return 0;
    fprintf(f, "# Koshizuka & Oka (1996) surge front: T = t sqrt(2g/L), Z = z/L\n# T Z\n");
    for (int k = 0; k < KO_POINTS; ++k) fprintf(f, "%.3f %.3f\n", KO_T[k], KO_Z[k]);
    if (!close_checked(f, path)) return 0;
    if (!(f = open_in(dir, "mm_experiment.dat", path, sizeof path))) return 0;
    fprintf(f, "# Martin & Moyce (1952) surge front, column a wide and 2a high: T = t sqrt(2g/a), "
               "Z = z/a\n# index 0: a = 2.25 in; index 1: a = 1.125 in\n# T Z\n");
    for (int k = 1; k < EXP_MM2.count; ++k) fprintf(f, "%.3f %.3f\n", MM2_T[k], MM2_Z[k]);
    fprintf(f, "\n\n");
    for (int k = 1; k < EXP_MM1.count; ++k) fprintf(f, "%.3f %.3f\n", MM1_T[k], MM1_Z[k]);
    if (!close_checked(f, path)) return 0;
    for (int i = 0; i < rs->count; ++i) {
        const spec *sp = &rs->specs[i];
        const sim_result *r = &rs->res[i];
        if (!r->h.ok || sp->kind == CASE_STAB) continue;
        snprintf(name, sizeof name, "%s.dat", sp->name);
        if (!(f = open_in(dir, name, path, sizeof path))) return 0;
        if (sp->kind == CASE_HYDRO) {
            double vref = sqrt(GRAVITY * r->h.h0);
            fprintf(f,
                    "# %s: hydrostatic column, %d particles, H0 = %.6f m (volume height)\n"
                    "# t(s) err_avg(%%) err_max(%%) vmax(m/s) vmean(m/s) surface(m) "
                    "surface_err(%%) vmax/sqrt(gH0) vmean/sqrt(gH0) bottom(m)\n",
                    sp->name, r->h.particles, r->h.h0);
            for (int k = 0; k < r->h.nrec; ++k) {
                const frame_rec *q = &r->rec[k];
                fprintf(f, "%.6f %.6g %.6g %.6g %.6g %.7f %.6g %.6g %.6g %.7f\n", q->t, q->err_avg,
                        q->err_max, q->vmax, q->vmean, q->surface,
                        100.0 * (q->surface - r->h.h0) / r->h.h0, q->vmax / vref, q->vmean / vref,
                        q->bottom);
            }
            if (!close_checked(f, path)) return 0;
            snprintf(name, sizeof name, "%s_profile.dat", sp->name);
            if (!(f = open_in(dir, name, path, sizeof path))) return 0;
            fprintf(f,
                    "# %s: final state; mean density around heights one spacing apart "
                    "(hat weights of half-width one spacing)\n# y/H0 rho/rho0 weight\n",
                    sp->name);
            for (int k = 0; k < r->h.nbins; ++k)
                fprintf(f, "%.6f %.7f %.2f\n", r->bins[3 * k] / r->h.h0, r->bins[3 * k + 1],
                        r->bins[3 * k + 2]);
            if (!close_checked(f, path)) return 0;
            snprintf(name, sizeof name, "%s_ndens.dat", sp->name);
            if (!(f = open_in(dir, name, path, sizeof path))) return 0;
            fprintf(f,
                    "# %s: final state; horizontally averaged number density / bulk value\n"
                    "# y/H0 n/n_bulk\n",
                    sp->name);
            for (int k = 0; k < r->h.ncurve; ++k)
                fprintf(f, "%.6f %.6f\n", r->curve[2 * k] / r->h.h0, r->curve[2 * k + 1]);
            if (!close_checked(f, path)) return 0;
        } else {
            double e0 = r->rec[0].ekin + r->rec[0].epot, ts = t_scale();
            const double rad = 0.5 * KO_L / sp->n;
            fprintf(f,
                    "# %s: dam break, %d particles; L = %.3f m, T = t sqrt(2g/L), r = %.6f m\n"
                    "# t(s) T Z=front/L column/(2L) err_avg(%%) err_max(%%) vmax(m/s) "
                    "Ekin/E0 Epot/E0 E/E0 top_rise(r) column_rise(r) climb(r)\n",
                    sp->name, r->h.particles, KO_L, rad);
            for (int k = 0; k < r->h.nrec; ++k) {
                const frame_rec *q = &r->rec[k];
                fprintf(f, "%.6f %.5f %.6f %.6f %.6g %.6g %.6g %.8f %.8f %.8f %.4f %.4f %.4f\n",
                        q->t, q->t * ts, q->front / KO_L, q->column / (2.0 * KO_L), q->err_avg,
                        q->err_max, q->vmax, q->ekin / e0, q->epot / e0, (q->ekin + q->epot) / e0,
                        (q->wall_top - r->rec[0].wall_top) / rad,
                        (q->column - r->rec[0].column) / rad, q->climb / rad);
            }
            if (!close_checked(f, path)) return 0;
        }
    }
    return 1;
}

/* Writes NAME.gp: `setup` lines, then `plot` + the plot clauses (NULL-terminated), skipping
 * clauses whose data file (the first quoted word) is not in `dir`. Returns 0 on error, -1 if
 * no clause is left (no figure). */
static int write_gp(const char *dir, const char *name, const char *size, const char *setup,
                    const char *const *clauses) {
    char path[4400], gp[128];
    int kept = 0;
    snprintf(gp, sizeof gp, "%s.gp", name);
    for (int k = 0; clauses[k]; ++k) {
        char file[256] = "";
        const char *q = clauses[k][0] == '\'' ? clauses[k] : NULL; /* a data file */
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        if (q && e && (size_t)(e - q - 1) < sizeof file) {
            memcpy(file, q + 1, (size_t)(e - q - 1));
            file[e - q - 1] = '\0';
        }
        snprintf(path, sizeof path, "%s/%s", dir, file);
        struct stat sb;
        if (file[0] && strcmp(file, "+") != 0 && stat(path, &sb) == 0) ++kept;
    }
    if (kept == 0) return -1;
    FILE *f = open_in(dir, gp, path, sizeof path);
    if (!f) return 0;
    fprintf(f,
            "# %s.png from the .dat files of this folder; written by `pbf validate`.\n"
            "# Redraw: cd into this folder, then `gnuplot %s.gp`.\n"
            "set terminal pngcairo size %s noenhanced font \",11\"\n"
            "set output '%s.png'\n"
            "set grid\n"
            "set key box opaque\n"
            "%s\n",
            name, name, size, name, setup);
    int first = 1;
    for (int k = 0; clauses[k]; ++k) {
        char file[256] = "";
        const char *q = clauses[k][0] == '\'' ? clauses[k] : NULL; /* a data file */
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        if (q && e && (size_t)(e - q - 1) < sizeof file) {
            memcpy(file, q + 1, (size_t)(e - q - 1));
            file[e - q - 1] = '\0';
        }
        char p2[4400];
        snprintf(p2, sizeof p2, "%s/%s", dir, file);
        struct stat sb;
        if (file[0] && strcmp(file, "+") != 0 && stat(p2, &sb) != 0) continue;
        fprintf(f, "%s%s", first ? "plot " : ", \\\n     ", clauses[k]);
        first = 0;
    }
    fputs("\n", f);
    if (strstr(setup, "set multiplot")) fputs("unset multiplot\n", f);
    return close_checked(f, path);
}

/* "plot A, B, ..." of the clauses whose data file (the first quoted word) is in dir, as write_gp
 * keeps them: the first panel of a multiplot figure, written into its setup lines. */
static void plot_command(const char *dir, const char *const *clauses, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; clauses[k]; ++k) {
        char file[256] = "", p2[4400];
        const char *q = clauses[k][0] == '\'' ? clauses[k] : NULL;
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        if (q && e && (size_t)(e - q - 1) < sizeof file) {
            memcpy(file, q + 1, (size_t)(e - q - 1));
            file[e - q - 1] = '\0';
        }
        snprintf(p2, sizeof p2, "%s/%s", dir, file);
        struct stat sb;
        if (file[0] && stat(p2, &sb) != 0) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", \\\n     " : "plot ",
                         clauses[k]);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
}

/* Runs `gnuplot NAME.gp` in dir. */
static int run_gnuplot(const char *dir, const char *name) {
    char gp[128];
    snprintf(gp, sizeof gp, "%s.gp", name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(126);
        execlp("gnuplot", "gnuplot", gp, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        fprintf(stderr, "pbf validate: gnuplot not found: install gnuplot-nox "
                        "(scripts/debian-packages.txt), or use --no-plots\n");
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "pbf validate: `gnuplot %s` in %s failed\n", gp, dir);
        return 0;
    }
    return 1;
}

#define MAX_FIGS 16
typedef struct figure_list {
    char name[MAX_FIGS][64];
    int count;
} figure_list;

static int figure(figure_list *fl, const char *dir, const char *name, const char *size,
                  const char *setup, const char *const *clauses) {
    int r = write_gp(dir, name, size, setup, clauses);
    if (r == 0) return 0;
    if (r > 0 && fl->count < MAX_FIGS) snprintf(fl->name[fl->count++], 64, "%s", name);
    return 1;
}

static int has_figure(const figure_list *fl, const char *name) {
    for (int k = 0; k < fl->count; ++k)
        if (strcmp(fl->name[k], name) == 0) return 1;
    return 0;
}

static int write_figures(const char *dir, figure_list *fl, int ref_n, double ref_shift) {
    fl->count = 0;
    char shifted[256];
    snprintf(shifted, sizeof shifted,
             "'dam_n%d_it4.dat' using ($2+%.3f):3 title 'pbf n = %d, shifted by dT = %+.3f' "
             "with lines dt 2 lw 2 lc rgb 'black'",
             ref_n, ref_shift, ref_n, ref_shift);
    {
        const char *c[] = {"'hydro_n18_it4.dat' using 1:2 title 'avg, n = 18' with lines lw 2 lc 1",
                           "'hydro_n36_it4.dat' using 1:2 title 'avg, n = 36' with lines lw 2 lc 2",
                           "'hydro_n72_it4.dat' using 1:2 title 'avg, n = 72' with lines lw 2 lc 3",
                           "'hydro_n18_it4.dat' using 1:3 title 'max, n = 18' with lines dt 2 lc 1",
                           "'hydro_n36_it4.dat' using 1:3 title 'max, n = 36' with lines dt 2 lc 2",
                           "'hydro_n72_it4.dat' using 1:3 title 'max, n = 72' with lines dt 2 lc 3",
                           "0.5 title 'target avg 0.5 %' with lines lc rgb 'black' dt 3",
                           "3.0 title 'target max 3 %' with lines lc rgb 'gray30' dt 4",
                           NULL};
        if (!figure(fl, dir, "hydro_density", "1000,600",
                    "set title 'Hydrostatic column: density error over time (4 iterations)'\n"
                    "set xlabel 't (s)'\nset ylabel 'density error (%)'\nset logscale y\n"
                    "set key outside right",
                    c))
            return 0;
    }
    {
        const char *c[] = {"'hydro_n36_it2.dat' using 1:2 title 'avg, 2 it' with lines lw 2 lc 1",
                           "'hydro_n36_it4.dat' using 1:2 title 'avg, 4 it' with lines lw 2 lc 2",
                           "'hydro_n36_it8.dat' using 1:2 title 'avg, 8 it' with lines lw 2 lc 3",
                           "'hydro_n36_it16.dat' using 1:2 title 'avg, 16 it' with lines lw 2 lc 4",
                           "'hydro_n36_it2.dat' using 1:3 title 'max, 2 it' with lines dt 2 lc 1",
                           "'hydro_n36_it4.dat' using 1:3 title 'max, 4 it' with lines dt 2 lc 2",
                           "'hydro_n36_it8.dat' using 1:3 title 'max, 8 it' with lines dt 2 lc 3",
                           "'hydro_n36_it16.dat' using 1:3 title 'max, 16 it' with lines dt 2 lc 4",
                           NULL};
        if (!figure(fl, dir, "hydro_iterations", "1000,600",
                    "set title 'Hydrostatic column: density error vs solver iterations (n = 36)'\n"
                    "set xlabel 't (s)'\nset ylabel 'density error (%)'\nset logscale y\n"
                    "set key outside right",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'hydro_n18_it4_profile.dat' using 2:1 title 'rho/rho0, n = 18' with linespoints "
            "pt 7 ps 0.6 lc 1",
            "'hydro_n36_it4_profile.dat' using 2:1 title 'rho/rho0, n = 36' with linespoints "
            "pt 7 ps 0.5 lc 2",
            "'hydro_n72_it4_profile.dat' using 2:1 title 'rho/rho0, n = 72' with linespoints "
            "pt 7 ps 0.4 lc 3",
            "'+' using (1):($0/100.0*1.2) title 'hydrostatic expectation (incompressible): "
            "rho0' with lines lw 2 lc rgb 'black' dt 2",
            NULL};
        if (!figure(fl, dir, "hydro_profile", "900,700",
                    "set title 'Hydrostatic column: settled density against height (final state)'\n"
                    "set ylabel 'height y / H0 (H0: height of the initial volume)'\n"
                    "set xlabel 'mean density of a layer / rest density'\n"
                    "set yrange [0:1.15]\nset xrange [0.9:1.04]\nset samples 101\n"
                    "set key bottom left",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'hydro_n18_it4.dat' using 1:7 title 'surface, n = 18' with lines lw 2 lc 1",
            "'hydro_n36_it4.dat' using 1:7 title 'surface, n = 36' with lines lw 2 lc 2",
            "'hydro_n72_it4.dat' using 1:7 title 'surface, n = 72' with lines lw 2 lc 3",
            "'hydro_n36_it8.dat' using 1:7 title 'surface, n = 36, 8 it' with lines dt 2 lc 4",
            "'hydro_n36_it16.dat' using 1:7 title 'surface, n = 36, 16 it' with lines dt 2 lc 5",
            "1 title 'target +-1 %' with lines lc rgb 'black' dt 3",
            "-1 notitle with lines lc rgb 'black' dt 3",
            NULL};
        if (!figure(fl, dir, "hydro_surface", "1000,600",
                    "set title 'Hydrostatic column: free-surface height (4 iterations unless "
                    "named)'\nset xlabel 't (s)'\n"
                    "set ylabel 'surface height - H0, % of H0'\nset yrange [-3:3]\n"
                    "set key outside right",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'hydro_n18_it4.dat' using 1:($8*100) title 'max, n = 18' with lines lc 1",
            "'hydro_n36_it4.dat' using 1:($8*100) title 'max, n = 36' with lines lc 2",
            "'hydro_n72_it4.dat' using 1:($8*100) title 'max, n = 72' with lines lc 3",
            "'hydro_n18_it4.dat' using 1:($9*100) title 'mean, n = 18' with lines lw 2 dt 2 lc 1",
            "'hydro_n36_it4.dat' using 1:($9*100) title 'mean, n = 36' with lines lw 2 dt 2 lc 2",
            "'hydro_n72_it4.dat' using 1:($9*100) title 'mean, n = 72' with lines lw 2 dt 2 lc 3",
            "1 title 'target 1 %' with lines lc rgb 'black' dt 3",
            NULL};
        if (!figure(fl, dir, "hydro_speed", "1000,600",
                    "set title 'Hydrostatic column: residual speed (4 iterations)'\n"
                    "set xlabel 't (s)'\nset ylabel 'speed / sqrt(g H0) (%)'\nset logscale y\n"
                    "set key outside right",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996 (experiment)' with "
            "points pt 5 ps 1.4 lc rgb 'black'",
            "'mm_experiment.dat' index 0 using 1:2 title 'Martin & Moyce 1952, a = 2.25 in' with "
            "points pt 7 ps 1.2 lc rgb 'gray30'",
            "'mm_experiment.dat' index 1 using 1:2 title 'Martin & Moyce 1952, a = 1.125 in' with "
            "points pt 6 ps 1.2 lc rgb 'gray30'",
            "1+2*x title 'Ritter (inviscid shallow water): Z = 1 + 2T' with lines lc rgb "
            "'gray40' dt 2",
            "'dam_n18_it4.dat' using 2:3 title 'pbf n = 18' with lines lw 2 lc 1",
            "'dam_n36_it4.dat' using 2:3 title 'pbf n = 36' with lines lw 2 lc 2",
            "'dam_n72_it4.dat' using 2:3 title 'pbf n = 72' with lines lw 2 lc 3",
            ref_n > 0 ? shifted : NULL,
            NULL};
        if (!figure(fl, dir, "dam_front", "1000,650",
                    "set title 'Dam break: surge front (4 iterations)'\n"
                    "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'Z = front / L'\n"
                    "set xrange [0:3.5]\nset yrange [0.9:5]\nset key top left",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996 (experiment)' with "
            "points pt 5 ps 1.4 lc rgb 'black'",
            "'dam_n36_it2.dat' using 2:3 title '2 iterations' with lines lw 2 lc 1",
            "'dam_n36_it4.dat' using 2:3 title '4 iterations' with lines lw 2 lc 2",
            "'dam_n36_it8.dat' using 2:3 title '8 iterations' with lines lw 2 lc 3",
            "'dam_n36_it16.dat' using 2:3 title '16 iterations' with lines lw 2 lc 4",
            "'dam_n18_it2.dat' using 2:3 title '2 iterations (n = 18)' with lines lc 1 dt 2",
            "'dam_n18_it16.dat' using 2:3 title '16 iterations (n = 18)' with lines lc 4 dt 2",
            NULL};
        if (!figure(
                fl, dir, "dam_front_iterations", "1000,650",
                "set title 'Dam break: surge front vs solver iterations (n = 36; dashed n = 18)'\n"
                "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'Z = front / L'\n"
                "set xrange [0:3.5]\nset yrange [0.9:5]\nset key top left",
                c))
            return 0;
    }
    {
        const char *c[] = {"'dam_n18_it4.dat' using 2:4 title 'n = 18' with lines lw 2 lc 1",
                           "'dam_n36_it4.dat' using 2:4 title 'n = 36' with lines lw 2 lc 2",
                           "'dam_n72_it4.dat' using 2:4 title 'n = 72' with lines lw 2 lc 3", NULL};
        if (!figure(fl, dir, "dam_column", "1000,600",
                    "set title 'Dam break: residual column height at the back wall'\n"
                    "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'height / initial height 2L'\n"
                    "set xrange [0:3.5]\nset yrange [0:1.05]\nset key top right",
                    c))
            return 0;
    }
    {
        /* column release: the top at the back wall (left), the front (right), T <= 2 */
        const char *top[] = {
            "'dam_n18_it4.dat' using 2:11 title 'top at the wall, n = 18' with lines lw 2 lc 1",
            "'dam_n36_it4.dat' using 2:11 title 'top at the wall, n = 36' with lines lw 2 lc 2",
            "'dam_n72_it4.dat' using 2:11 title 'top at the wall, n = 72' with lines lw 2 lc 3",
            "'dam_n18_it4.dat' using 2:12 title 'column (no lone particles), n = 18' with lines "
            "dt 2 lc 1",
            "'dam_n36_it4.dat' using 2:12 title 'column (no lone particles), n = 36' with lines "
            "dt 2 lc 2",
            "'dam_n72_it4.dat' using 2:12 title 'column (no lone particles), n = 72' with lines "
            "dt 2 lc 3",
            "0.5 title 'target: at most +0.5 r' with lines lc rgb 'black' dt 3",
            NULL};
        char first[2048], setup[3072];
        plot_command(dir, top, first, sizeof first);
        snprintf(setup, sizeof setup,
                 "set multiplot layout 1,2 title 'Column release: the column at the back wall "
                 "after the release (4 iterations)'\n"
                 "set title 'height at the back wall - initial height'\n"
                 "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'rise (particle radii r)'\n"
                 "set xrange [0:%.1f]\nset yrange [-6:2]\nset key bottom left\n%s\n"
                 "set title 'surge front'\nset ylabel 'Z = front / L'\nset yrange [0.9:5]\n"
                 "set key top left",
                 RELEASE_T, first);
        const char *c[] = {
            "'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996' with points pt 5 ps 1.2 "
            "lc rgb 'black'",
            "1+2*x title 'Ritter: Z = 1 + 2T' with lines lc rgb 'gray40' dt 2",
            "'dam_n18_it4.dat' using 2:3 title 'n = 18' with lines lw 2 lc 1",
            "'dam_n36_it4.dat' using 2:3 title 'n = 36' with lines lw 2 lc 2",
            "'dam_n72_it4.dat' using 2:3 title 'n = 72' with lines lw 2 lc 3",
            NULL};
        if (first[0] && !figure(fl, dir, "column_release", "1400,600", setup, c)) return 0;
    }
    {
        const char *c[] = {
            "'edges_n18_it4.dat' using 2:13 title 'n = 18' with lines lw 2 lc 1",
            "'edges_n36_it4.dat' using 2:13 title 'n = 36' with lines lw 2 lc 2",
            "2 title 'target: at most 2 r' with lines lc rgb 'black' dt 3", NULL};
        if (!figure(fl, dir, "edges", "900,600",
                    "set title 'Walls and edges: highest particle at a side wall above the "
                    "liquid beside it (dam break L deep)'\n"
                    "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'climb (particle radii r)'\n"
                    "set key top left",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'dam_n36_it2.dat' using 2:5 title 'avg, 2 it' with lines lw 2 lc 1",
            "'dam_n36_it4.dat' using 2:5 title 'avg, 4 it' with lines lw 2 lc 2",
            "'dam_n36_it8.dat' using 2:5 title 'avg, 8 it' with lines lw 2 lc 3",
            "'dam_n36_it16.dat' using 2:5 title 'avg, 16 it' with lines lw 2 lc 4",
            "'dam_n18_it2.dat' using 2:5 title 'avg, 2 it (n = 18)' with lines dt 2 lc 1",
            "'dam_n18_it4.dat' using 2:5 title 'avg, 4 it (n = 18)' with lines dt 2 lc 2",
            "'dam_n18_it8.dat' using 2:5 title 'avg, 8 it (n = 18)' with lines dt 2 lc 3",
            "'dam_n18_it16.dat' using 2:5 title 'avg, 16 it (n = 18)' with lines dt 2 lc 4",
            NULL};
        if (!figure(fl, dir, "dam_density", "1000,600",
                    "set title 'Dam break: average density error vs solver iterations'\n"
                    "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'average density error (%)'\n"
                    "set xrange [0:3.5]\nset logscale y\nset key outside right",
                    c))
            return 0;
    }
    {
        const char *c[] = {
            "'dam_n36_it4_vort0.dat' using 1:10 title 'E, vorticity 0 (n = 36)' with lines lw 2 "
            "lc 1",
            "'dam_n36_it4.dat' using 1:10 title 'E, vorticity 0.01 (n = 36)' with lines lw 2 lc 2",
            "'dam_n18_it4_vort0.dat' using 1:10 title 'E, vorticity 0 (n = 18)' with lines dt 2 "
            "lc 1",
            "'dam_n18_it4.dat' using 1:10 title 'E, vorticity 0.01 (n = 18)' with lines dt 2 lc 2",
            "'dam_n36_it4_vort0.dat' using 1:8 title 'kinetic, vorticity 0 (n = 36)' with lines "
            "lc 3",
            "'dam_n36_it4_vort0.dat' using 1:9 title 'potential, vorticity 0 (n = 36)' with "
            "lines lc 4",
            NULL};
        if (!figure(fl, dir, "energy", "1000,600",
                    "set title 'Dam break: energy (kinetic + potential from the floor) / initial'\n"
                    "set xlabel 't (s)'\nset ylabel 'E / E(0)'\nset yrange [0:1.05]\n"
                    "set key outside right",
                    c))
            return 0;
    }
    return 1;
}

/* ---- scenes for `pbf run` ------------------------------------------------------------------ */

static const char *method_name(int solver);

static int write_scenes(const char *dir, const spec *specs, int count) {
    char path[4400];
    for (int i = 0; i < count; ++i) {
        const spec *sp = &specs[i];
        pbfapp_scene sc;
        memset(&sc, 0, sizeof sc);
        char name[64], desc[256];
        snprintf(name, sizeof name, "%s", sp->name);
        char how[64];
        snprintf(how, sizeof how, "%d iterations", sp->iterations);
        if (sp->solver != PBF_SOLVER_PBF)
            snprintf(how, sizeof how, "solver %s%s", method_name(sp->solver),
                     sp->cfl_off ? " without CFL substeps" : "");
        snprintf(desc, sizeof desc,
                 "pbf validate case %s: %s, %d particles across L = 0.146 m, %s%s%s",
                 sp->name,
                 sp->kind == CASE_HYDRO ? "hydrostatic column"
                 : sp->kind == CASE_DAM ? "Koshizuka & Oka dam break"
                                        : "dam break, stability envelope",
                 sp->n, how, sp->vort_off ? ", vorticity confinement off" : "",
                 sp->deep ? ", in a tank L deep (walls and edges)" : "");
        sc.name = name;
        sc.description = desc;
        sc.def = def_of(sp, 0);
        sc.run = pbfapp_default_run();
        sc.run.frames = sp->frames;
        sc.run.fps = (float)sp->fps;
        sc.run.substeps = sp->substeps;
        pbf_fluid_block blk = block_of(sp);
        sc.blocks = &blk;
        sc.block_count = 1;
        sc.particles = pbf_fluid_block_count(&sc.def, &blk);
        snprintf(path, sizeof path, "%s/%s.json", dir, sp->name);
        pbf_error err;
        if (pbfapp_scene_write(&sc, path, &err) != PBF_OK) {
            fprintf(stderr, "pbf validate: %s\n", err.message);
            return 0;
        }
    }
    return 1;
}

/* ---- the command ----------------------------------------------------------------------------- */

static int mkdir_p(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, path, n + 1);
    for (size_t k = 1; k <= n; ++k) {
        if (buf[k] == '/' || buf[k] == '\0') {
            char c = buf[k];
            buf[k] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "pbf validate: %s: cannot create: %s\n", buf, strerror(errno));
                return 0;
            }
            buf[k] = c;
        }
    }
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

void pbfapp_validate_print_help(FILE *f) {
    fprintf(f,
            "usage: pbf validate [--out DIR] [--fast] [options]\n"
            "\n"
            "Validates pbf against physics and experiment and writes the report DIR.md with\n"
            "tables and PNG plots in DIR (default DIR: docs/validation, so docs/validation.md):\n"
            "  1. a hydrostatic column settling: density error, free-surface height, residual\n"
            "     speed, density profile;\n"
            "  2. the dam break of Koshizuka & Oka (1996): surge front against that experiment,\n"
            "     Martin & Moyce's (1952) and Ritter's solution, residual column height;\n"
            "  3. convergence: three resolutions, 2/4/8/16 solver iterations;\n"
            "  4. energy (kinetic + potential) with and without vorticity confinement;\n"
            "  5. the stability envelope: substeps 1/2/4/8 x iterations 1/2/4/8;\n"
            "  6. column release: the top of the liquid at the wall after the dam break's\n"
            "     release, at three resolutions (it must fall, never rise);\n"
            "  7. walls and edges: the dam break in a tank L deep; no particle may climb a\n"
            "     side wall or a vertical edge above the liquid beside it.\n"
            "The worlds are built with the library (no scene file needed); DIR/scenes/NAME.json\n"
            "reproduces each with `pbf run`. Plots need gnuplot (Debian: gnuplot-nox); the\n"
            "scripts DIR/NAME.gp redraw them from the DIR/*.dat files.\n"
            "\n"
            "options:\n"
            "  --out DIR     output folder (default docs/validation); the report is DIR.md\n"
            "  --report FILE write the report here instead of DIR.md\n"
            "  --fast        only the coarse resolution (n = 18), the CI subset (ctest -L\n"
            "                validation): " FAST_RUN_TIME "; the full run takes\n"
            "                " FULL_RUN_TIME "\n"
            "  --jobs N      simulations run at once, each in its own process (default: the\n"
            "                number of CPUs); 1 runs them in this process\n"
            "  --threads N   OpenMP threads per simulation (default 1 with --jobs > 1, else 0 =\n"
            "                the OpenMP default); results do not depend on it\n"
            "  --no-plots    write the data and the gnuplot scripts, but do not run gnuplot\n"
            "  --cache DIR   keep every case's measurements in DIR and reuse those of the same\n"
            "                case on the next run (for editing the report; delete DIR after a\n"
            "                change to the library)\n"
            "  --resolution N  the cases of --fast at n = N (18, 36 or 72) instead; the\n"
            "                checks are printed for that resolution (CI checks n = 18)\n"
            "  --set KEY=VALUE  a world parameter for every case (as `pbf run --set`), e.g.\n"
            "                friction_dynamic=0.2; repeatable; the report's first line names\n"
            "                it; keys a case sets itself (particle_radius, solver_iterations,\n"
            "                domain_min/max, threads, solver) are refused\n"
            "  --solver NAME the per-method suite instead, for one pressure solver (pbf, wcsph,\n"
            "                pcisph, iisph, dfsph) or all: hydrostatic column, dam break,\n"
            "                energy, column release, wall time, stability envelope over time\n"
            "                steps; one table per method in DIR.md (default DIR:\n"
            "                docs/validation_solvers); --fast: n = 18, no envelope (CI)\n"
            "  -q, --quiet   no progress lines, no progress bar (drawn only on a terminal)\n"
            "  -h, --help    this help\n"
            "\n"
            "Each check has two verdicts, printed on stderr and written to the report and to\n"
            "DIR/checks.json: its target met or missed, and its value within or outside the CI\n"
            "tolerance (the target, or a looser bound where the full run misses the target).\n"
            "The report names the commit pbf was built from and whether that tree had\n"
            "uncommitted changes.\n"
            "\n"
            "exit status: 0 every value within its CI tolerance (targets may be missed); 1 runtime\n"
            "  error (I/O, gnuplot); 2 usage; 4 a value outside its CI tolerance (stderr and the\n"
            "  report's section \"What CI checks\" say which).\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

/* The end of a validate run: the summary line (unless quiet), then the simulations freed. */
static int finish_run(int rc, int quiet, double t0, const char *report, spec *specs,
                      sim_result *res, int count) {
    if (!quiet) {
        char d[32];
        pbfapp_format_duration(d, sizeof d, pbfapp_now() - t0);
        fprintf(stderr, "pbf validate: %s in %s; report %s\n",
                rc == 0                   ? "done"
                : rc == EXIT_FAILED_CHECK ? "CHECKS FAILED"
                                          : "failed",
                d, report);
    }
    for (int i = 0; i < count; ++i) sim_free(&res[i]);
    free(specs);
    free(res);
    return rc;
}

static int write_report(const validate_options *o, const char *report, const run_set *rs,
                        const figure_list *fl, int argc, char **argv, double wall);
static int write_checks_json(const char *dir, const validate_options *o, const run_set *rs);
static int evaluate_checks(const run_set *rs, int print, FILE *f, int at_n);
static int validate_methods(validate_options *o, int argc, char **argv);

int pbfapp_validate_command(int argc, char **argv) {
    validate_options o;
    memset(&o, 0, sizeof o);
    o.out = "docs/validation";
    o.plots = 1;
    o.threads = -1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o.jobs = ncpu > 0 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    int out_given = 0;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            pbfapp_validate_print_help(stdout);
            return 0;
        } else if (strcmp(a, "--fast") == 0) {
            o.fast = 1;
        } else if (strcmp(a, "--no-plots") == 0) {
            o.plots = 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o.quiet = 1;
        } else if ((strcmp(a, "--out") == 0 || strcmp(a, "--report") == 0 ||
                    strcmp(a, "--cache") == 0 || strcmp(a, "--jobs") == 0 ||
                    strcmp(a, "--threads") == 0 || strcmp(a, "--solver") == 0 ||
                    strcmp(a, "--set") == 0 || strcmp(a, "--resolution") == 0)) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "pbf validate: %s needs a value (see `pbf validate --help`)\n", a);
                return EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--out") == 0) {
                o.out = v;
                out_given = 1;
            } else if (strcmp(a, "--resolution") == 0) {
                if (!parse_int(v, 0, 1000, &o.resolution) ||
                    (o.resolution != N_COARSE && o.resolution != N_MEDIUM &&
                     o.resolution != N_FINE)) {
                    fprintf(stderr, "pbf validate: --resolution: \"%s\" is not 18, 36 or 72\n", v);
                    return EXIT_USAGE;
                }
                o.fast = 1;
            } else if (strcmp(a, "--set") == 0) {
                size_t used = strlen(o.set);
                if (used + strlen(v) + 2 > sizeof o.set || strchr(v, '\n')) {
                    fprintf(stderr, "pbf validate: --set %s: too many or too long overrides\n", v);
                    return EXIT_USAGE;
                }
                snprintf(o.set + used, sizeof o.set - used, "%s%s", used ? "\n" : "", v);
                pbf_world_def probe = pbf_default_world_def();
                pbf_error err;
                if (!apply_sets(&probe, o.set, &err)) {
                    fprintf(stderr, "pbf validate: %s\n", err.message);
                    return EXIT_USAGE;
                }
            } else if (strcmp(a, "--solver") == 0) {
                o.solver = v;
            } else if (strcmp(a, "--report") == 0) {
                o.report = v;
            } else if (strcmp(a, "--cache") == 0) {
                o.cache = v;
            } else if (strcmp(a, "--jobs") == 0 ? !parse_int(v, 1, 256, &o.jobs)
                                                : !parse_int(v, 0, 1024, &o.threads)) {
                fprintf(stderr, "pbf validate: %s: \"%s\" is not a whole number in range\n", a, v);
                return EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "pbf validate: unknown option \"%s\" (see `pbf validate --help`)\n", a);
            return EXIT_USAGE;
        }
    }
    if (o.threads < 0) o.threads = o.jobs > 1 ? 1 : 0;
    if (o.solver) {
        if (!out_given) o.out = "docs/validation_solvers";
        return validate_methods(&o, argc, argv);
    }

    /* the folder and the report path: DIR.md beside DIR */
    char out[4096], report[4200], work[4200], scenes[4200];
    size_t n = strlen(o.out);
    if (n >= sizeof out - 16) {
        fprintf(stderr, "pbf validate: --out: path too long\n");
        return EXIT_USAGE;
    }
    memcpy(out, o.out, n + 1);
    while (n > 1 && out[n - 1] == '/') out[--n] = '\0';
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (o.report)
        snprintf(report, sizeof report, "%s", o.report);
    else if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(out, "/") == 0)
        snprintf(report, sizeof report, "%s/validation.md", out);
    else
        snprintf(report, sizeof report, "%s.md", out);
    snprintf(work, sizeof work, "%s/.work", out);
    snprintf(scenes, sizeof scenes, "%s/scenes", out);
    if (!mkdir_p(out) || !mkdir_p(scenes) || !mkdir_p(work) || (o.cache && !mkdir_p(o.cache)))
        return EXIT_RUNTIME;

    spec *specs = calloc(MAX_SPECS, sizeof *specs);
    sim_result *res = calloc(MAX_SPECS, sizeof *res);
    if (!specs || !res) {
        free(specs);
        free(res);
        fputs("pbf validate: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    int count = make_specs(specs, o.fast, o.resolution ? o.resolution : N_COARSE);
    for (int i = 0; i < count; ++i) memcpy(specs[i].set, o.set, sizeof o.set);
    double t0 = pbfapp_now();
    if (!o.quiet)
        fprintf(stderr,
                "pbf validate: %d simulations (%s), %d at once, %d thread%s each; output "
                "in %s/, report %s\n",
                count, o.fast ? "--fast: n = 18 only" : "full", o.jobs, o.threads,
                o.threads == 1 ? "" : "s", out, report);
    int rc = 0;
    run_set rs = {specs, res, count};
    if (!write_scenes(scenes, specs, count) || run_all(&o, work, specs, count, res) != 0)
        rc = EXIT_RUNTIME;
    rmdir(work);
    for (int i = 0; i < count && rc == 0; ++i)
        if (!res[i].h.ok) {
            fprintf(stderr, "pbf validate: %s\n", res[i].h.message);
            rc = EXIT_RUNTIME;
        }
    figure_list fl;
    memset(&fl, 0, sizeof fl);
    int ref_n = 0;
    double ref_shift = 0.0;
    for (int k = 1; k >= 0 && rc == 0; --k) { /* the reference run: n = 36, else n = 18 */
        const sim_result *r = get(&rs, "dam_n%d_it%d", RES[k], 4);
        if (r && !ref_n) {
            double e;
            ref_shift = best_shift(r, SHIFT_MAX, &e);
            ref_n = RES[k];
        }
    }
    if (rc == 0 && (!write_data(out, &rs) || !write_figures(out, &fl, ref_n, ref_shift)))
        rc = EXIT_RUNTIME;
    for (int k = 0; rc == 0 && o.plots && k < fl.count; ++k)
        if (!run_gnuplot(out, fl.name[k])) rc = EXIT_RUNTIME;
    if (rc == 0) {
        if (!write_report(&o, report, &rs, &fl, argc, argv, pbfapp_now() - t0) ||
            !write_checks_json(out, &o, &rs))
            rc = EXIT_RUNTIME;
        else if (evaluate_checks(&rs, !o.quiet, stderr,
                                 o.resolution ? o.resolution : N_COARSE) != 0)
            rc = EXIT_FAILED_CHECK;
    }
    return finish_run(rc, o.quiet, t0, report, specs, res, count);
}

/* ---- targets and the checks of CI ------------------------------------------------------------ */

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

/* v meets `bound` (a target or a CI tolerance) in the direction ge; a value that is not a
 * finite number (not measured, or a failed run) does not. */
static int within(double v, double bound, int ge) {
    if (!isfinite(v)) return 0;
    return ge ? v >= bound - 1e-12 : v <= bound + 1e-12;
}

static int passes(const check *c, double v, double bound) {
    return within(v, bound, c->ge);
}

pbfapp_verdict pbfapp_validate_verdict(double value, double target, int ge) {
    if (isnan(value)) return PBFAPP_VERDICT_NOT_RUN;
    return within(value, target, ge) ? PBFAPP_VERDICT_MET : PBFAPP_VERDICT_MISSED;
}

pbfapp_ci_verdict pbfapp_validate_ci_verdict(double value, double ci_bound, int ge) {
    if (isnan(ci_bound)) return PBFAPP_CI_NOT_CHECKED;
    return within(value, ci_bound, ge) ? PBFAPP_CI_WITHIN : PBFAPP_CI_OUTSIDE;
}

const char *pbfapp_validate_verdict_name(pbfapp_verdict v) {
    switch (v) {
    case PBFAPP_VERDICT_MET: return "met";
    case PBFAPP_VERDICT_MISSED: return "missed";
    case PBFAPP_VERDICT_NOT_RUN: break;
    }
    return "not run";
}

const char *pbfapp_validate_ci_verdict_name(pbfapp_ci_verdict v) {
    switch (v) {
    case PBFAPP_CI_WITHIN: return "within the CI tolerance";
    case PBFAPP_CI_OUTSIDE: return "outside the CI tolerance";
    case PBFAPP_CI_NOT_CHECKED: break;
    }
    return "not checked by CI";
}

static const char *fmt_v(char *buf, size_t size, double v, const char *unit);

/* "≤ 0.5 %", "≥ 1 %", or "yes" for a yes/no check (unit ""). */
static const char *fmt_bound(char *buf, size_t size, double bound, const char *unit, int ge) {
    char v[48];
    fmt_v(v, sizeof v, bound, unit);
    if (unit[0] == '\0')
        snprintf(buf, size, "%s", v);
    else
        snprintf(buf, size, "%s %s", ge ? "≥" : "≤", v);
    return buf;
}

void pbfapp_validate_check_line(char *buf, size_t size, const char *what, const char *unit,
                                double value, double target, double ci_bound, int ge, int n) {
    char v[64], t[64], b[64];
    pbfapp_verdict verdict = pbfapp_validate_verdict(value, target, ge);
    pbfapp_ci_verdict ci = pbfapp_validate_ci_verdict(value, ci_bound, ge);
    int same = !isnan(ci_bound) && fabs(ci_bound - target) <= 1e-12;
    int used = snprintf(buf, size, "%-7s %s: n = %d: %s (target %s)",
                        pbfapp_validate_verdict_name(verdict), what, n,
                        fmt_v(v, sizeof v, value, unit), fmt_bound(t, sizeof t, target, unit, ge));
    if (used < 0 || (size_t)used >= size) return;
    fmt_bound(b, sizeof b, ci_bound, unit, ge);
    if (ci == PBFAPP_CI_OUTSIDE && unit[0] == '\0')
        snprintf(buf + used, size - (size_t)used, "; the CI test requires %s: FAIL", b);
    else if (ci == PBFAPP_CI_OUTSIDE)
        snprintf(buf + used, size - (size_t)used, "; outside the CI tolerance %s%s: FAIL", b,
                 same ? " (the target)" : "");
    else if (ci == PBFAPP_CI_WITHIN && verdict == PBFAPP_VERDICT_MISSED)
        snprintf(buf + used, size - (size_t)used, "; within the looser CI tolerance %s", b);
}

/* What stopped a run (sim_head.fail 1 to 4), in a table cell's words or in a sentence's. */
static const char *stab_failure(int fail, int sentence) {
    switch (fail) {
    case 1: return "non-finite";
    case 2: return "escaped";
    case 3: return sentence ? "average density error" : "avg density";
    default: return sentence ? "a density error above the guard" : "guard";
    }
}

static double stab_ok(const run_set *rs, int n, int sub, int it) {
    const sim_result *r = get(rs, "stab_n%d_s%d_it4", n, sub);
    if (it != 4) {
        char name[64];
        snprintf(name, sizeof name, "stab_n%d_s%d_it%d", n, sub, it);
        int i = find_spec(rs->specs, rs->count, name);
        r = (i >= 0 && rs->res[i].h.ok) ? &rs->res[i] : NULL;
    }
    if (!r) return NAN;
    return r->h.fail == 0 ? 1.0 : 0.0;
}

/* 1 if the mean density error of the dam break decreases strictly with the iterations 2..16. */
static double iter_monotone(const run_set *rs, int n) {
    double prev = INFINITY;
    for (int i = 0; i < 4; ++i) {
        const sim_result *r = get(rs, "dam_n%d_it%d", n, ITERS[i]);
        if (!r) return NAN;
        double e = mean_err_avg(r);
        if (!(e < prev)) return 0.0;
        prev = e;
    }
    return 1.0;
}

static int build_checks(const run_set *rs, check *c) {
    int k = 0;
    for (int i = 0; i < MAX_CHECKS; ++i) {
        memset(&c[i], 0, sizeof c[i]);
        for (int j = 0; j < 3; ++j) c[i].v[j] = NAN;
        c[i].gate = NAN;
    }
    /* hydrostatic column, 4 iterations */
    check *h1 = &c[k++], *h2 = &c[k++], *h3 = &c[k++], *h4 = &c[k++], *h5 = &c[k++], *h6 = &c[k++],
          *h7 = &c[k++];
    snprintf(h1->what, sizeof h1->what, "hydrostatic, settled: average density error ≤ 0.5 %%");
    snprintf(h2->what, sizeof h2->what, "hydrostatic, settled: maximum density error ≤ 3 %%");
    snprintf(h3->what, sizeof h3->what,
             "hydrostatic, whole run (every frame after the first step): average density error "
             "≤ 0.5 %% (added: the start-up included)");
    snprintf(h4->what, sizeof h4->what,
             "hydrostatic, whole run: maximum density error ≤ 3 %% (added: the start-up "
             "included)");
    snprintf(h5->what, sizeof h5->what,
             "hydrostatic, settled: free-surface height within 1 %% of the volume's height");
    snprintf(h6->what, sizeof h6->what, "hydrostatic, settled: maximum speed ≤ 1 %% of sqrt(g H0)");
    snprintf(h7->what, sizeof h7->what,
             "hydrostatic, settled: mean speed ≤ 1 %% of sqrt(g H0) (added: the bulk at rest)");
    h1->unit = h2->unit = h3->unit = h4->unit = h5->unit = h6->unit = h7->unit = "%";
    h1->target = h3->target = 0.5;
    h2->target = h4->target = 3.0;
    h5->target = h6->target = h7->target = 1.0;
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "hydro_n%d_it%d", RES[j], 4);
        if (!r) continue;
        hydro_sum hs = hydro_summary(r);
        h1->v[j] = hs.set_avg;
        h2->v[j] = hs.set_max;
        h3->v[j] = hs.run_avg;
        h4->v[j] = hs.run_max;
        h5->v[j] = fabs(hs.surface_err);
        h6->v[j] = 100.0 * hs.set_vmax / hs.vref;
        h7->v[j] = 100.0 * hs.set_vmean / hs.vref;
    }
    /* CI bounds: the target where the full run meets it at n = 18, else a looser bound (set
     * from the full run of docs/validation.md; the notes say why) */
    h1->gate = 0.5; /* met at n = 18 and 36 with PBF's warm start (lambda_warm_start 0.5) */
    h2->gate = 3.0;
    h3->gate = 1.0;
    h3->note = "missed: the start-up transient, while the column first compresses, overshoots "
               "the settled error";
    h4->gate = 3.0;
    h5->gate = 1.0;
    h6->gate = 3.0; /* chaotic: 0.2-1.2 % at n = 18 when one parameter's last bit changes */
    h6->note = "missed at n = 72, where the mean speed stops falling at about 0.2 % and the "
               "boundaries between the domains into which the lattice recrystallises keep moving; "
               "met at n = 18 and "
               "36 in this slab only: in a 3-D box L deep (`bench/settled_column.py`, n = 18) the "
               "column still moves at 5.7 % after 5 s (mean 0.57 %), as SPlisHSPlasH's does "
               "(6.6 %, mean 0.55 %); and at n = 18 the settled maximum is chaotic, 0.2 to 1.2 % "
               "when the last bit of one parameter changes (CI's gcc, clang and sanitizer builds "
               "agree today, at 0.326 %), so any change of rounding in the solver can move it "
               "(section 1)";
    h7->gate = 1.0;
    /* dam break */
    check *d1 = &c[k++], *d3 = &c[k++], *d2 = &c[k++];
    snprintf(d1->what, sizeof d1->what,
             "dam break: front within %.0f %% of the experiment for T ≤ 3 with one time shift of "
             "at most 0.2 in T",
             FRONT_TOL);
    snprintf(
        d2->what, sizeof d2->what,
        "dam break: front never ahead of Ritter's Z = 1 + 2T (largest Z - Ritter after T = 0)");
    snprintf(d3->what, sizeof d3->what,
             "dam break: the same against Martin & Moyce (1952), the 2.25-inch column of the "
             "same shape (added: a second experiment)");
    d1->unit = d3->unit = "%";
    d2->unit = "Z";
    d1->target = d3->target = FRONT_TOL;
    d2->target = 0.0;
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], 4);
        if (!r) continue;
        double e;
        best_shift(r, SHIFT_MAX, &e);
        d1->v[j] = e;
        best_shift_vs(r, &EXP_MM2, SHIFT_MAX, &e);
        d3->v[j] = e;
        d2->v[j] = ritter_lead(r);
    }
    d1->gate = FRONT_CI;
    d3->gate = FRONT_TOL;
    d1->note = "missed at every resolution (worst at n = 72): the simulated surge runs ahead of "
               "the experiment's after the time shift, faster the finer the resolution. The "
               "target is tighter than the experiments agree: Martin & Moyce's (1952) fronts of "
               "the same shape, scored against this one by the same measure, miss it too (6.4 "
               "and 8.7 % for their 2.25- and 1.125-inch columns; section 2), and pbf's front is "
               "within it against the 2.25-inch column at every resolution (the next row). "
               "SPlisHSPlasH misses it by more: on the same column in a box L deep at n = 18, "
               "settled before the release, its DFSPH by 12.1 % and its PBF by 11.1 %, against "
               "pbf's 7.8 % there (`bench/dam_front_peers.py`). Wall "
               "friction was measured (section 2) and is not the default: on every wall it meets "
               "the target at n = 18 and 36 only through the slab's side walls, misses it at "
               "n = 72, and holds water up the walls and edges of the shipped scenes; on the "
               "floor alone it gets no lower than 4.7 % at n = 18. A bed shear stress (quadratic "
               "law, `bed_friction`) on the floor layer meets it at n = 18 only at C_f = 0.03, "
               "three times a smooth bed's, and at no coefficient at n = 36 (6.2 % at "
               "C_f = 0.1); shared over the liquid's depth (a modified build) C_f = 0.04 meets it "
               "at n = 18, 36 and 72 (4.2, 4.4, 4.9 %), four times a smooth bed's coefficient";
    d2->gate = 0.0;
    /* column release */
    check *r1 = &c[k++];
    snprintf(r1->what, sizeof r1->what,
             "column release: the top of the liquid at the back wall never rises more than half "
             "a particle radius above its initial height (largest rise for T ≤ %.0f)",
             RELEASE_T);
    r1->unit = "r";
    r1->target = RISE_TOL;
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], 4);
        if (!r) continue;
        double at;
        r1->v[j] = top_rise(r, &at, NULL);
    }
    r1->gate = RISE_TOL;
    /* walls and edges */
    check *w1 = &c[k++];
    snprintf(w1->what, sizeof w1->what,
             "walls and edges: no particle at a side wall or its edges more than %.0f particle "
             "radii above the liquid beside it (dam break L deep, T ≤ %.0f)",
             CLIMB_TOL, KO_T_MAX);
    w1->unit = "r";
    w1->target = CLIMB_TOL;
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "edges_n%d_it%d", RES[j], 4);
        if (!r) continue;
        double at;
        w1->v[j] = climb_max(r, &at);
    }
    w1->gate = CLIMB_TOL;
    /* energy */
    check *e1 = &c[k++], *e2 = &c[k++];
    snprintf(e1->what, sizeof e1->what,
             "energy, vorticity 0: largest increase of E between frames ≤ %.2g %% of E(0) "
             "(noise level)",
             ENERGY_NOISE);
    snprintf(e2->what, sizeof e2->what,
             "energy, vorticity 0: the same after the start-up (t ≥ %.2g s)", STARTUP_T);
    e1->unit = e2->unit = "%";
    e1->target = e2->target = ENERGY_NOISE;
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "dam_n%d_it%d_vort0", RES[j], 4);
        if (!r) continue;
        double inc, inc_t, fin;
        energy_summary(r, 0.0, &inc, &inc_t, &fin);
        e1->v[j] = inc;
        energy_summary(r, STARTUP_T, &inc, &inc_t, &fin);
        e2->v[j] = inc;
    }
    e1->gate = ENERGY_NOISE;
    e2->gate = ENERGY_NOISE;
    /* convergence and stability */
    check *c1 = &c[k++], *s1 = &c[k++];
    snprintf(c1->what, sizeof c1->what,
             "convergence: the dam break's mean density error falls with every doubling of "
             "the iterations (2, 4, 8, 16)");
    snprintf(s1->what, sizeof s1->what,
             "stability: the dam break at 60 frames/s, 4 substeps, 4 iterations (the shipped "
             "scenes' setting) is stable for 1 s");
    c1->unit = s1->unit = "";
    c1->target = s1->target = 1.0;
    c1->ge = s1->ge = 1;
    for (int j = 0; j < 3; ++j) {
        c1->v[j] = iter_monotone(rs, RES[j]);
        s1->v[j] = stab_ok(rs, RES[j], 4, 4);
    }
    c1->gate = s1->gate = 1.0;
    check *c2 = &c[k++], *c3 = &c[k++];
    snprintf(c2->what, sizeof c2->what,
             "convergence: the dam-break front changes less from n = 36 to 72 than from 18 to 36 "
             "(largest ΔZ for T ≤ 3)");
    snprintf(c3->what, sizeof c3->what,
             "convergence: the settled hydrostatic average density error changes less from "
             "n = 36 to 72 than from 18 to 36");
    c2->unit = c3->unit = "";
    c2->target = c3->target = 1.0;
    c2->ge = c3->ge = 1;
    {
        const sim_result *a0 = get(rs, "dam_n%d_it%d", N_COARSE, 4),
                         *a1 = get(rs, "dam_n%d_it%d", N_MEDIUM, 4),
                         *a2 = get(rs, "dam_n%d_it%d", N_FINE, 4);
        if (a0 && a1 && a2) c2->v[2] = front_distance(a2, a1) < front_distance(a1, a0);
        const sim_result *b0 = get(rs, "hydro_n%d_it%d", N_COARSE, 4),
                         *b1 = get(rs, "hydro_n%d_it%d", N_MEDIUM, 4),
                         *b2 = get(rs, "hydro_n%d_it%d", N_FINE, 4);
        if (b0 && b1 && b2) {
            double e0 = hydro_summary(b0).set_avg, e1 = hydro_summary(b1).set_avg,
                   e2 = hydro_summary(b2).set_avg;
            c3->v[2] = fabs(e2 - e1) < fabs(e1 - e0);
        }
    }
    /* a CI bound that the target already meets needs no note: keep notes only where looser */
    for (int i = 0; i < k; ++i)
        if (isfinite(c[i].gate) && c[i].gate == c[i].target) c[i].note = NULL;
    return k;
}

/* Prints the checks of CI: each n = 18 value against its target (met / missed) and, where CI
 * allows more than the target, against that CI tolerance; then a count. Returns the number
 * outside their CI tolerance (CI fails). at_n: the resolution whose values are printed (another
 * than n = 18 with --resolution: printed only, CI checks n = 18). */
static int evaluate_checks(const run_set *rs, int print, FILE *f, int at_n) {
    check c[MAX_CHECKS];
    int n = build_checks(rs, c), failed = 0, met = 0, missed = 0, j = 0;
    while (j < 2 && RES[j] != at_n) ++j;
    for (int i = 0; i < n; ++i) {
        if (!isfinite(c[i].gate)) continue;
        pbfapp_verdict v = pbfapp_validate_verdict(c[i].v[j], c[i].target, c[i].ge);
        int outside =
            pbfapp_validate_ci_verdict(c[i].v[j], c[i].gate, c[i].ge) == PBFAPP_CI_OUTSIDE;
        failed += outside;
        met += v == PBFAPP_VERDICT_MET;
        missed += v != PBFAPP_VERDICT_MET;
        if (print || outside) {
            char line[700];
            pbfapp_validate_check_line(line, sizeof line, c[i].what, c[i].unit, c[i].v[j],
                                       c[i].target, c[i].gate, c[i].ge, at_n);
            fprintf(f, "pbf validate: %s\n", line);
        }
    }
    if (print || failed)
        fprintf(f,
                "pbf validate: n = %d: %d of %d targets met, %d missed; %d outside the CI "
                "tolerance%s\n",
                at_n, met, met + missed, missed, failed,
                failed && at_n != N_COARSE ? " (CI checks n = 18 only)"
                : failed                   ? " (CI fails)"
                : missed ? " (the missed targets are within their looser CI tolerances)"
                         : "");
    return at_n == N_COARSE ? failed : 0;
}

/* ---- the report ------------------------------------------------------------------------------ */

/* A JSON string (the check texts are UTF-8 without control characters; escaped anyway). */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; ++s) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

/* DIR/checks.json: the build, then every check with its values, its target verdict per
 * resolution and overall, and its CI verdict (n = 18). */
static int write_checks_json(const char *dir, const validate_options *o, const run_set *rs) {
    char path[4300], tmp[4400];
    snprintf(path, sizeof path, "%s/checks.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "pbf validate: %s: cannot create: %s\n", tmp, strerror(errno));
        return 0;
    }
    check c[MAX_CHECKS];
    int nc = build_checks(rs, c);
    fprintf(f, "{\n  \"pbf_version\": ");
    json_string(f, PBF_VERSION_STRING);
    fprintf(f, ",\n  \"commit\": ");
    json_string(f, PBF_GIT_COMMIT);
    fprintf(f, ",\n  \"tree\": \"%s\",\n  \"run\": \"%s\",\n  \"checks\": [",
            !PBF_GIT_COMMIT[0]    ? "unknown"
            : PBF_GIT_DIRTY == 0 ? "clean"
            : PBF_GIT_DIRTY == 1 ? "uncommitted changes"
                                 : "unknown",
            o->fast ? "fast" : "full");
    for (int i = 0; i < nc; ++i) {
        const check *k = &c[i];
        int have = 0, met = 0;
        fprintf(f, "%s\n    {\"check\": ", i ? "," : "");
        json_string(f, k->what);
        fprintf(f, ", \"unit\": ");
        json_string(f, k->unit[0] ? k->unit : "yes/no");
        fprintf(f, ", \"target\": ");
        json_number(f, k->target);
        fprintf(f, ", \"direction\": \"%s\",\n     \"values\": {", k->ge ? ">=" : "<=");
        for (int j = 0; j < 3; ++j) {
            fprintf(f, "%s\"n%d\": ", j ? ", " : "", RES[j]);
            json_number(f, k->v[j]);
        }
        fprintf(f, "}, \"verdicts\": {");
        for (int j = 0; j < 3; ++j) {
            pbfapp_verdict v = pbfapp_validate_verdict(k->v[j], k->target, k->ge);
            have += v != PBFAPP_VERDICT_NOT_RUN;
            met += v == PBFAPP_VERDICT_MET;
            fprintf(f, "%s\"n%d\": \"%s\"", j ? ", " : "", RES[j], pbfapp_validate_verdict_name(v));
        }
        fprintf(f, "},\n     \"verdict\": \"%s\", \"ci_tolerance\": ",
                have == 0 ? "not run" : met == have ? "met" : met == 0 ? "missed" : "partly met");
        json_number(f, k->gate);
        fprintf(f, ", \"ci_verdict\": \"%s\"}",
                pbfapp_validate_ci_verdict(k->v[0], k->gate, k->ge) == PBFAPP_CI_NOT_CHECKED
                    ? "not checked"
                : pbfapp_validate_ci_verdict(k->v[0], k->gate, k->ge) == PBFAPP_CI_WITHIN
                    ? "within"
                    : "outside");
    }
    fprintf(f, "\n  ]\n}\n");
    pbf_error err;
    if (pbfapp_commit_file(f, tmp, path, &err) != PBF_OK) {
        fprintf(stderr, "pbf validate: %s\n", err.message);
        return 0;
    }
    return 1;
}

/* "commit 0123456789ab, clean tree", "commit ..., with uncommitted changes", ... */
static void describe_build(char *buf, size_t size) {
    if (!PBF_GIT_COMMIT[0])
        snprintf(buf, size, "not built from a git checkout");
    else
        snprintf(buf, size, "commit %s, %s", PBF_GIT_COMMIT,
                 PBF_GIT_DIRTY == 0   ? "clean tree"
                 : PBF_GIT_DIRTY == 1 ? "with uncommitted changes"
                                      : "tree state unknown");
}

static const char *fmt_v(char *buf, size_t size, double v, const char *unit) {
    if (!isfinite(v)) {
        snprintf(buf, size, "n/a");
        return buf;
    }
    if (unit[0] == '\0')
        snprintf(buf, size, "%s", v >= 0.5 ? "yes" : "no");
    else if (strcmp(unit, "Z") == 0)
        snprintf(buf, size, "%+.3f", v);
    else
        snprintf(buf, size, "%.3g %s", v, unit);
    return buf;
}

static void fig(FILE *f, const figure_list *fl, const char *link, const char *out, const char *name,
                const char *caption) {
    if (!has_figure(fl, name)) return;
    fprintf(f, "![%s](%s/%s.png)\n\n", caption, link, name);
    fprintf(f, "*%s* — drawn by `cd %s && gnuplot %s.gp` from the `.dat` files there.\n\n", caption,
            out, name);
}

static int write_report(const validate_options *o, const char *report, const run_set *rs,
                        const figure_list *fl, int argc, char **argv, double wall) {
    char tmp[4300], a[64], b[64], cc[64], d[64];
    snprintf(tmp, sizeof tmp, "%s.tmp", report);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "pbf validate: %s: cannot create: %s\n", tmp, strerror(errno));
        return 0;
    }
    /* the folder as the report links it: relative to the report's folder when the report is
     * DIR.md beside DIR, else as given */
    char link[4096];
    const char *out = o->out;
    {
        char tmpo[4096];
        snprintf(tmpo, sizeof tmpo, "%s", out);
        size_t n = strlen(tmpo);
        while (n > 1 && tmpo[n - 1] == '/') tmpo[--n] = '\0';
        const char *base = strrchr(tmpo, '/');
        snprintf(link, sizeof link, "%s", o->report ? tmpo : base ? base + 1 : tmpo);
    }
    char cmd[1024] = "pbf validate";
    for (int i = 0; i < argc; ++i) {
        size_t used = strlen(cmd);
        snprintf(cmd + used, sizeof cmd - used, " %s", argv[i]);
    }
    char dur[32], cpu[32];
    pbfapp_format_duration(dur, sizeof dur, wall);
    pbfapp_format_duration(cpu, sizeof cpu, run_cpu_seconds());
    const double ts = t_scale();
    pbf_world_def dd = pbf_default_world_def();

    char build[128];
    describe_build(build, sizeof build);
    fprintf(f, "# Fidelity of pbf: validation against physics and experiment\n\n");
    fprintf(f,
            "Generated by `%s` (pbf %s built from %s; %s) in %s of wall time and %s of CPU time, "
            "%d simulations, "
            "%d at once with %d thread%s each. Do not edit by hand: rerun the command. `pbf "
            "validate --out docs/validation` regenerates this file, every table and every figure; "
            "`--fast` runs only the coarse resolution (the CI test).\n\n",
            cmd, PBF_VERSION_STRING, build, o->fast ? "fast subset: n = 18 only" : "full run",
            dur, cpu, rs->count, o->jobs, o->threads, o->threads == 1 ? "" : "s");
    if (PBF_GIT_DIRTY == 1)
        fprintf(f,
                "**Built from a tree with uncommitted changes:** the numbers below may not be "
                "those of commit %s. Commit, rebuild and rerun to get a report that names the "
                "code it measured.\n\n",
                PBF_GIT_COMMIT);
    if (o->cached > 0)
        fprintf(f,
                "**%d of these %d results were reused from the cache of an earlier run** "
                "(`--cache %s`), so the wall time above does not include them.\n\n",
                o->cached, rs->count, o->cache);
    fprintf(f,
            "Each figure names the gnuplot script that draws it from the `.dat` files of "
            "`%s/`. Every simulation is also written as a scene, `%s/scenes/NAME.json`: `pbf run "
            "%s/scenes/NAME.json` runs the same world with the same steps (bit-identical; "
            "results do not depend on the thread count).\n\n",
            out, out, out);

    /* ---- summary ---- */
    check c[MAX_CHECKS];
    int nc = build_checks(rs, c);
    fprintf(f, "## Summary\n\n");
    fprintf(f, "The fidelity targets, measured at three resolutions (n particles across the "
               "column; 4 solver iterations unless named). ✅ met, ❌ missed. The last column is "
               "the CI tolerance, what the CI test (`pbf validate --fast`, ctest label "
               "`validation`) requires of the n = 18 runs: the target itself where the full run "
               "meets it at n = 18, otherwise a looser bound, named as such. A value within a "
               "looser CI tolerance is still a missed target.\n\n");
    fprintf(f, "| target | n = 18 | n = 36 | n = 72 | verdict | CI tolerance (n = 18) |\n");
    fprintf(f, "|---|---|---|---|---|---|\n");
    for (int i = 0; i < nc; ++i) {
        const check *k = &c[i];
        fprintf(f, "| %s |", k->what);
        int have = 0, met = 0, last = -1;
        for (int j = 0; j < 3; ++j) {
            if (!isfinite(k->v[j])) {
                fprintf(f, " — |");
                continue;
            }
            int ok = passes(k, k->v[j], k->target);
            ++have;
            met += ok;
            last = j;
            fprintf(f, " %s %s |", fmt_v(a, sizeof a, k->v[j], k->unit), ok ? "✅" : "❌");
        }
        if (have == 0)
            fprintf(f, " not run |");
        else if (met == have)
            fprintf(f, " **met** |");
        else {
            fprintf(f, " **%s**", met == 0 ? "missed" : "partly met");
            const char *sep = met == 0 ? " by " : ": ";
            for (int j = 0; j <= last; ++j) {
                if (!isfinite(k->v[j])) continue;
                if (passes(k, k->v[j], k->target)) {
                    fprintf(f, "%smet at n = %d", sep, RES[j]);
                } else {
                    if (met > 0) fprintf(f, "%smissed", sep);
                    if (k->unit[0] && strcmp(k->unit, "Z") != 0)
                        fprintf(f, "%s%s", met > 0 ? " by " : sep,
                                fmt_v(b, sizeof b, fabs(k->v[j] - k->target), k->unit));
                    fprintf(f, " at n = %d", RES[j]);
                }
                sep = "; ";
            }
            fprintf(f, " |");
        }
        if (!isfinite(k->gate))
            fprintf(f, " not checked |\n");
        else if (k->note)
            fprintf(f, " looser: %s — %s |\n", fmt_bound(b, sizeof b, k->gate, k->unit, k->ge),
                    k->note);
        else
            fprintf(f, " the target |\n");
    }
    fprintf(f, "\n");

    /* ---- setup ---- */
    fprintf(f, "## Setup\n\n");
    fprintf(f,
            "Both cases use the Koshizuka & Oka (1996) column: L = %.3f m wide, 2L = %.3f m high, "
            "filled with the rest lattice. They are quasi-2D slabs, %d particle spacings deep in "
            "z between two container walls (density-correct, free-slip), so that three "
            "resolutions fit in the time budget. The hydrostatic column fills a container "
            "L wide and 3L high; the dam break releases it at the back wall (x = 0) of a dry "
            "tank %.0fL = %.3f m long and 3L high, so the front does not reach the far wall "
            "before T = %.1f. Every other parameter is pbf's default (`pbf run --help`). Each "
            "frame is 1/%.0f s; the time step shrinks with the particle size (dt / h is the "
            "same at every resolution; the speed limit cfl·h/dt is %.1f m/s, above every speed "
            "of the flow up to T = 3.5).\n\n",
            KO_L, 2 * KO_L, DEPTH_LAYERS, TANK_LENGTH_L, TANK_LENGTH_L * KO_L, DAM_T_END, FRAME_FPS,
            dd.cfl * dd.kernel_ratio * KO_L / N_COARSE * FRAME_FPS * (N_COARSE / 9));
    fprintf(f, "| n (particles across L) | particle radius | kernel radius h | particles | "
               "substeps per frame | dt |\n|---|---|---|---|---|---|\n");
    for (int j = 0; j < 3; ++j) {
        int n = RES[j];
        if (!get(rs, "hydro_n%d_it%d", n, 4) && !get(rs, "dam_n%d_it%d", n, 4)) continue;
        double s = KO_L / n;
        fprintf(f, "| %d | %.4f mm | %.3f mm | %d | %d | %.4f ms |\n", n, 500.0 * s,
                1000.0 * dd.kernel_ratio * s, 8 * n * n, n / 9, 1000.0 / (FRAME_FPS * (n / 9)));
    }
    fprintf(f,
            "\nDefaults that matter here: %d solver iterations, relaxation %.3g, %s "
            "constraint, s_corr k = %.3g (n = %d, |dq| = %.2g h) with its artificial pressure at "
            "scorr_support = %.3g (section 6) and the walls' share of it at scorr_wall = %.3g "
            "(section 7), XSPH c = %.3g, vorticity %.3g m/s, cfl %.2g, no "
            "wall friction, rest density %.0f kg/m³.\n\n",
            dd.pbf.solver_iterations, dd.pbf.relaxation,
            dd.pbf.constraint == PBF_CONSTRAINT_UNILATERAL ? "unilateral" : "bilateral",
            dd.pbf.scorr_k, dd.pbf.scorr_n, dd.pbf.scorr_dq, dd.pbf.scorr_support,
            dd.pbf.scorr_wall,
            dd.xsph_viscosity, dd.vorticity, dd.cfl, dd.rest_density);

    /* ---- hydrostatic ---- */
    fprintf(f, "## 1. Hydrostatic column\n\n");
    fprintf(f,
            "The column starts as the rest lattice and settles for %.1f s, about 12 periods of "
            "the tank's first sloshing mode (0.43 s); \"settled\" is the last second "
            "(t ≥ %.2f s). The density error is pbf's statistic: over particles, "
            "max(ρ/ρ0 − 1, 0) in percent (average and maximum). The free surface is the height "
            "where the horizontally averaged number density (a hat kernel of half-width one "
            "spacing) falls to half its bulk value (the mean over 0.25–0.75 H0); for the rest "
            "lattice this is exactly the height H0 = N·s³ / (L·depth) that the initial volume "
            "implies. The lower edge is the same crossing at the floor. Frame 0 is the lattice "
            "before any step.\n\n",
            HYDRO_T_END, settled_from(HYDRO_T_END));
    fprintf(f, "| case | frame 0 avg / max | whole run: peak avg / peak max | settled avg / "
               "max | surface − H0 | lower edge | settled max speed | settled mean speed |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < rs->count; ++i) {
        const spec *sp = &rs->specs[i];
        const sim_result *r = &rs->res[i];
        if (sp->kind != CASE_HYDRO || !r->h.ok) continue;
        hydro_sum hs = hydro_summary(r);
        fprintf(f,
                "| n = %d, %d it | %.2f / %.2f %% | %.2f / %.2f %% | %.3f / %.2f %% | %+.2f mm "
                "(%+.2f %%) | %.2f mm | %.3f m/s = %.1f %% √(gH0) | %.4f m/s = %.2f %% √(gH0) |\n",
                sp->n, sp->iterations, hs.init_avg, hs.init_max, hs.run_avg, hs.run_max, hs.set_avg,
                hs.set_max, 1000.0 * (hs.surface - r->h.h0), hs.surface_err, 1000.0 * hs.bottom,
                hs.set_vmax, 100.0 * hs.set_vmax / hs.vref, hs.set_vmean,
                100.0 * hs.set_vmean / hs.vref);
    }
    fprintf(f, "\nH0 = %.3f m, √(gH0) = %.3f m/s.\n\n", 2 * KO_L, sqrt(GRAVITY * 2 * KO_L));
    fig(f, fl, link, out, "hydro_density", "Hydrostatic column: density error over time");
    fig(f, fl, link, out, "hydro_profile",
        "Hydrostatic column: mean density of each layer against height, final state");
    fig(f, fl, link, out, "hydro_surface", "Hydrostatic column: free-surface height over time");
    fig(f, fl, link, out, "hydro_speed",
        "Hydrostatic column: residual maximum and mean speed over time");
    fprintf(f, "Reading: PBF is incompressible, so the hydrostatic expectation is a flat ρ0 "
               "(real water would be denser at the bottom by ρgH/K ≈ 1e-6). With 4 Jacobi "
               "iterations per step the column stays compressed in proportion to depth: the "
               "profile rises linearly from about ρ0 at the surface to its largest value at the "
               "floor, and the same profile appears at every resolution (dt shrinks with the "
               "particle size), while more iterations flatten it (section 3). The warm start of "
               "the multipliers (lambda_warm_start 0.5: each iteration adds half the previous "
               "one's lambda; the first adds lambda_carry 0.6 times the previous step's last) "
               "halves that slope; lambda_warm_start 0, the paper's plain solve, leaves about "
               "0.85 %% on average. With the previous step's lambda carried at 0.5 itself, a "
               "settled column kept an odd-even oscillation from step to step at mid-depth (at "
               "n = 36 after 2.5 s, 1,069 of 10,368 particles above 0.5 %% of sqrt(g H0)); 0.6 "
               "damps it. What moves is the start-up's ringing: the column first falls into the "
               "compression the iterations leave, rebounds (the surface oscillates, figure above) "
               "and leaves disordered motion that decays over seconds (the speed figure). In the "
               "first 0.15 s the fastest particles (8 to 18 %% of sqrt(g H0) at n = 18) are the "
               "top of the column at the walls, falling, then the surface rebounding, then the "
               "floor layer pushed sideways at the peak of the compression. At 1 s the fastest "
               "still move at 7 to 11 %% at every resolution (the window this report used "
               "before); at n = 18 and 36 "
               "the last of them come to rest below 1 %% by about 2.5 and 3.5 s, hence the 5 s "
               "run. ");
    fprintf(f, "At n = 72 the mean speed stops falling at about 0.2 %% from 1.5 s on, and "
               "single particles keep being kicked to 4 to 8 %%. The lattice has recrystallised "
               "into domains of different orientation, and the fast particles lie along the "
               "boundaries between them, which keep moving: over 1-1.5 s, 8,716 of the 41,472 "
               "particles went faster than 1 %% at some frame, in bands about 10-17 spacings "
               "from the left and right walls at 25-45 and 75-130 spacings up, moving in the "
               "slab's plane in its wall layers as in its inner ones (a map of each particle's "
               "largest speed, made from `pbf run` frames of this case; at n = 18 and 36 the "
               "motion dies out by 2.5 and 3.5 s, above). A fill already hexagonal in the slab's "
               "plane (rows offset by half a spacing, stretched to the width) does not help: "
               "8.55 %% at 4-5 s, a mean of 0.36 %%, the fastest then at the left and right "
               "walls, where the rows do not fit. Measured at n = 72 (to 3 or 5 s): vorticity 0 "
               "leaves the same "
               "(4 to 6 %%; at n = 18 and 36 it leaves more, not less: 2.1 and 0.5 %% at 4.5-5 s); "
               "four times the XSPH viscosity (c = 0.04) brings the mean to 0.10 %% at 3 s but not "
               "the kicks (4.6 to 6 %%); 8 iterations leave more motion (a mean of 0.47 %% at "
               "1-1.5 s, against 0.24 %%), and so do the paper's plain solve (1.3 to 1.6 %%, not "
               "decaying) and no s_corr (0.8 to 1.1 %%). In three dimensions the column does not "
               "come to rest either: in a box L deep at n = 18 (`bench/settled_column.py`, the same "
               "column Froude-scaled), pbf's still moves at 5.7 %% of sqrt(g H0) after 5 s (mean "
               "0.57 %%; 5.7 to 10.8 %% and 0.57 to 0.95 %% when the last bit of one parameter "
               "changes), SPlisHSPlasH's PBF at 6.6 %% (mean 0.55 %%): the slab's side walls, four "
               "spacings apart, hold the motion that the box's interior keeps. ");
    fprintf(f, "The settled maximum is chaotic: at n = 18, changing the last bit of one "
               "parameter (XSPH, "
               "s_corr's k or dq, the relaxation, the vorticity) moves it between 0.2 and 1.1 %%, "
               "the fastest then being one particle of the compressed bottom rows swinging in "
               "place (0.13 r, period about 0.2 s) while the mean is 0.01 to 0.05 %%. Measured "
               "and not adopted, each against the 1 s run's window (t ≥ 0.75 s, n = 18, the "
               "fastest over every frame, 10.5 %% with the defaults): stronger XSPH (c = 0.05, "
               "0.1), the bilateral constraint, no s_corr on the walls and wall friction 0.1 "
               "(each with vorticity 0: 5.9 to 9.8 %%); a first step solved to convergence (12.4 "
               "against 11.0 %%, over every step); a divergence-free pass after the velocity "
               "update (DFSPH's divergence solve on PBF's velocities, a modified build, vorticity "
               "0: 10.7, 7.2 and 4.8 %% with 1, 5 and 20 iterations against 8.6 %%, and the "
               "settled average density error 0.54 %% against 0.40 %%); a hexagonal fill in the "
               "slab's plane instead of the cubic lattice (6.2 %%, the mean unchanged at "
               "0.68 %%); the multipliers of a settled column given to the lattice at the start "
               "(7.5 %%); a damped pre-run, the velocities zeroed after every step for 0.5 or "
               "1 s (8.9 and 7.0 %%: that relaxation is slow, and the released column moves "
               "again at a mean 2 %% of sqrt(g H0) within 0.1 s). The whole run's average error is "
               "the start-up's first compression, about 1.5 times the settled error at 0.03 s "
               "(first figure). Measured at n = 18 and 36 (1 s runs), the settings that lower "
               "that peak buy it with motion: Chebyshev acceleration (chebyshev_rho 0.5: 0.45 "
               "and 0.53 %%, the mean speed above 1 %%), stronger warm starts "
               "(lambda_warm_start 0.6 with lambda_carry 0.9: 0.40 and 0.47 %%, but at n = 36 a "
               "mean speed of 0.55 %% still at 3 s, against 0.05 %% with the defaults).\n\n");

    /* ---- dam break ---- */
    fprintf(f, "## 2. Dam break against Koshizuka & Oka (1996) and Martin & Moyce (1952)\n\n");
    fprintf(f,
            "T = t·√(2g/L), Z = front / L, from the back wall. The front is the largest x + r "
            "over the particles within 2 spacings of the floor that have at least 4 such "
            "particles within 2 spacings (isolated droplets ahead of the surge do not count). "
            "The experiment's 9 points are those of Koshizuka & Oka (1996) as PySPH's dam-break "
            "example tabulates them (compiled into pbf; written to `%s/ko_experiment.dat`), "
            "and the same table's Martin & Moyce (1952) points for columns of the same shape, "
            "2.25 and 1.125 in wide (`%s/mm_experiment.dat`). The comparison uses the points "
            "with 0 < T ≤ %.0f: the largest relative error "
            "|Z_sim(T − ΔT) − Z_exp| / Z_exp, with one time shift ΔT fitted in [−%.1f, %.1f] "
            "(ΔT > 0: the simulation runs ahead of the experiment, whose gate took time to "
            "open).\n\n",
            out, out, KO_T_MAX, SHIFT_MAX, SHIFT_MAX);
    fprintf(f,
            "| case | error, no shift | fitted ΔT (−%.1f ≤ ΔT ≤ %.1f) | error at that ΔT | free "
            "best ΔT (−1 ≤ ΔT ≤ 1) | error there | Martin & Moyce a = 2.25 in: ΔT, error | "
            "a = 1.125 in: ΔT, error | lead over Ritter |\n"
            "|---|---|---|---|---|---|---|---|---|\n",
            SHIFT_MAX, SHIFT_MAX);
    for (int i = 0; i < rs->count; ++i) {
        const spec *sp = &rs->specs[i];
        const sim_result *r = &rs->res[i];
        if (sp->kind != CASE_DAM || !r->h.ok || sp->vort_off || sp->deep) continue;
        double e, e1, em2, em1;
        double sh = best_shift(r, SHIFT_MAX, &e), sh1 = best_shift(r, 1.0, &e1);
        double shm2 = best_shift_vs(r, &EXP_MM2, SHIFT_MAX, &em2);
        double shm1 = best_shift_vs(r, &EXP_MM1, SHIFT_MAX, &em1);
        fprintf(f,
                "| n = %d, %d it | %.1f %% | %+.3f | %.1f %% %s | %+.3f | %.1f %% | %+.3f, %.1f %% "
                "| %+.3f, %.1f %% | %+.3f |\n",
                sp->n, sp->iterations, front_error(r, 0.0), sh, e, e <= FRONT_TOL ? "✅" : "❌", sh1,
                e1, shm2, em2, shm1, em1, ritter_lead(r));
    }
    fprintf(f, "\n");
    const sim_result *ref = get(rs, "dam_n%d_it%d", N_MEDIUM, 4);
    int refn = N_MEDIUM;
    if (!ref) {
        ref = get(rs, "dam_n%d_it%d", N_COARSE, 4);
        refn = N_COARSE;
    }
    if (ref) {
        double e, sh = best_shift(ref, SHIFT_MAX, &e);
        fprintf(f, "Point by point, n = %d, 4 iterations, ΔT = %+.3f:\n\n", refn, sh);
        fprintf(f, "| T | Z experiment | Z pbf at T | Z pbf at T − ΔT | error at T − ΔT | Ritter "
                   "1 + 2T |\n|---|---|---|---|---|---|\n");
        for (int k = 0; k < KO_POINTS; ++k) {
            double z0 = front_at(ref, KO_T[k]), z1 = front_at(ref, KO_T[k] - sh);
            fprintf(f, "| %.3f | %.3f | %.3f | %.3f | %+.1f %%%s | %.3f |\n", KO_T[k], KO_Z[k], z0,
                    z1, 100.0 * (z1 - KO_Z[k]) / KO_Z[k],
                    KO_T[k] > KO_T_MAX ? " (T > 3: not "
                                         "scored)"
                                       : "",
                    1.0 + 2.0 * KO_T[k]);
        }
        fprintf(f, "\n");
    }
    fig(f, fl, link, out, "dam_front", "Dam break: surge front against the experiment");
    fprintf(f, "Reading: the simulated front runs ahead of the measured one, as inviscid and "
               "particle simulations of this experiment do: in the experiment a gate had to be "
               "lifted, and the real floor has friction (every wall is free-slip here). The time "
               "shift absorbs the start; what remains grows with T because the simulated front is "
               "also faster, and more so the finer the resolution. It never overtakes Ritter's "
               "bound.\n\n");
    {
        /* the two experiments against each other, by the target's own measure */
        double ek2, ek1, em[3];
        double sk2 = curve_best_shift(exp_front, &EXP_MM2, &EXP_KO, SHIFT_MAX, &ek2);
        double sk1 = curve_best_shift(exp_front, &EXP_MM1, &EXP_KO, SHIFT_MAX, &ek1);
        int kk = 0; /* Koshizuka & Oka's last scored point */
        for (int k = 0; k < KO_POINTS; ++k)
            if (KO_T[k] <= KO_T_MAX) kk = k;
        double zm = exp_front(&EXP_MM2, KO_T[kk]);
        char txt[3][32];
        for (int j = 0; j < 3; ++j) {
            const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], 4);
            em[j] = NAN;
            if (r) best_shift_vs(r, &EXP_MM2, SHIFT_MAX, &em[j]);
            if (isfinite(em[j]))
                snprintf(txt[j], sizeof txt[j], "%.1f %%", em[j]);
            else
                snprintf(txt[j], sizeof txt[j], "— (not run)");
        }
        fprintf(f,
                "A second experiment of the same shape says how far the first can be trusted. "
                "Martin & Moyce (1952) released columns a wide and 2a high with a = 2.25 and "
                "1.125 in (57 and 29 mm, against Koshizuka & Oka's 146 mm); their fronts, "
                "scored against Koshizuka & Oka's by the measure above (one shift of at most "
                "%.1f), differ from it by %.1f %% (ΔT = %+.3f) and %.1f %% (ΔT = %+.3f). At "
                "T = %.3f the 2.25-inch column's front is at Z = %.2f, %+.1f %% from Koshizuka & "
                "Oka's %.3f. The target's %.0f %% is tighter than the two experiments agree with "
                "each other, and a simulation that reproduced Martin & Moyce's larger column "
                "exactly would miss it. Against that column, the closer of the two in size, "
                "pbf's front is within %s, %s and %s at n = 18, 36 and 72 (4 iterations; the "
                "table's Martin & Moyce columns). SPlisHSPlasH, the field's reference "
                "implementation of these solvers, does no better against Koshizuka & Oka: on "
                "the same column in a box L deep at n = 18, its own column settled before the "
                "release, its DFSPH misses it by 12.1 %% and its PBF by 11.1 %%, and both are "
                "within 2.8 %% of Martin & Moyce's 2.25-inch column; pbf there gives 7.8 and "
                "1.6 %% (`bench/dam_front_peers.py`, "
                "`bench/results/dam_front_peers_20261125_vm.json`).\n\n",
                SHIFT_MAX, ek2, sk2, ek1, sk1, KO_T[kk], zm, 100.0 * (zm - KO_Z[kk]) / KO_Z[kk],
                KO_Z[kk], FRONT_TOL, txt[0], txt[1], txt[2]);
    }
    fprintf(f, "Wall friction is not on in these runs, nor by default. Measured with `pbf "
               "validate --resolution N --set friction_dynamic=0.2` (friction on every wall), "
               "the fitted error is 2.98, 3.46 and 9.07 %% at n = 18, 36 and 72: below the target "
               "at the two coarser resolutions only, and there mostly through the slab's two "
               "side walls, which touch half of its particles (friction on the floor alone, "
               "measured with a modified build, gave 5.4 %% at n = 18 with a coefficient of "
               "0.2 and no less than 4.7 %% with larger ones). In the shipped dam break the same "
               "friction holds the splash against the far wall and, before `scorr_wall`, raised "
               "the edge stacks of section 7 (13 against 9 particle radii at n = 18).\n\n"
               "A bed shear stress is not on either: `bed_friction`, the quadratic law tau = "
               "ρ C_f |u| u of open-channel hydraulics on the particles within one spacing of "
               "the floor, whose force per floor area does not depend on the resolution and "
               "which, zero at rest, holds nothing on a wall. Measured with `pbf validate "
               "--resolution N --set bed_friction=C_f`, the fitted error is 7.47 %% at n = 18 "
               "for C_f = 0.003; 6.39, 7.13 and 8.25 %% at n = 18, 36 and 72 for C_f = 0.01 "
               "(the top of a smooth bed's range); 4.96 and 6.77 %% at n = 18 and 36 for "
               "C_f = 0.03; 5.13, 6.21 and 7.19 %% for C_f = 0.1, ten times a smooth bed's. "
               "No one coefficient meets the target at the three resolutions: the stress slows "
               "the layer on the floor (1.3-1.9 against 2.1-2.3 m/s in the liquid above it near "
               "the front at T = 2.7, n = 36, C_f = 0.03; without it both move at 2.3-2.4 m/s), "
               "and the liquid above, which nothing but the weak XSPH smoothing couples to it, "
               "rides over that layer and carries the front, more so the thinner the layer. "
               "Neither a thicker layer (the same stress over 2 or 4 spacings at n = 18: 6.97 "
               "and 7.13 %% at C_f = 0.01) nor a stronger XSPH coupling (c = 0.05: 6.63 %%) "
               "helps; on every wall of the slab it gives 6.25 %% at n = 18 (C_f = 0.01). "
               "Shared over the whole depth of the liquid above each point of the floor, as "
               "shallow-water models apply it (du/dt = -C_f |u| u / depth; measured with a "
               "modified build), the same coefficient slows the front alike at every "
               "resolution: 4.19, 4.44 and 4.94 %% at n = 18, 36 and 72 for C_f = 0.04, within "
               "the target at all three, no other check of those runs changing its verdict; "
               "4.87, 4.97 and 5.49 %% for C_f = 0.03; 6.74 and 7.17 %% at n = 18 for 0.01 and "
               "0.005. The floor layer alone gives 4.96 and 6.77 %% at n = 18 and 36 for 0.03, "
               "and 7.19 %% at n = 72 even for 0.1. But 0.04 is four times the top of a smooth "
               "bed's range, so it says what the experiment's front needs, not that pbf's bed "
               "is that rough: what else slows a surge on a dry bed (the lifted gate, the "
               "moving contact line at its tip) is not in the model. "
               "Water's own viscosity with no-slip walls would add less than any of these: over "
               "the 0.25 s of the comparison its boundary layer, √(ν t) ≈ 0.5 mm, is thinner "
               "than a particle at every resolution here, and its wall stress, "
               "ρ u √(ν / (π t)), is that of C_f ≈ 0.001. The front measure is the "
               "experiment's (the leading edge of the liquid on the floor; lone droplets "
               "ahead of it do not count), so nothing in it is ours to change.\n\n");
    fprintf(f,
            "The residual column is the largest y + r over the particles within 2 spacings of "
            "the back wall that have at least 4 such neighbours, over the initial height 2L.\n\n");
    fig(f, fl, link, out, "dam_column", "Dam break: residual column height at the back wall");
    fprintf(f, "| T | 0.5 | 1.0 | 1.5 | 2.0 | 2.5 | 3.0 |\n|---|---|---|---|---|---|---|\n");
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], 4);
        if (!r) continue;
        fprintf(f, "| column / 2L, n = %d |", RES[j]);
        for (int q = 1; q <= 6; ++q) {
            double T = 0.5 * q, best = NAN, bd = INFINITY;
            for (int k = 0; k < r->h.nrec; ++k) {
                double dt = fabs(r->rec[k].t * ts - T);
                if (dt < bd) {
                    bd = dt;
                    best = r->rec[k].column / (2.0 * KO_L);
                }
            }
            fprintf(f, " %.3f |", best);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");

    /* ---- convergence ---- */
    fprintf(f, "## 3. Convergence\n\n");
    fprintf(f, "Resolution (4 iterations): the particle radius halves twice from n = 18. "
               "\"Front distance\" is the largest |ΔZ| for T ≤ 3 between this resolution and the "
               "next coarser one.\n\n");
    fprintf(f, "| n | hydrostatic settled avg / max | surface − H0 | dam break mean avg / peak "
               "max density error | front error (best −0.2 ≤ ΔT ≤ 0.2) | front distance to the "
               "coarser |\n|---|---|---|---|---|---|\n");
    for (int j = 0; j < 3; ++j) {
        const sim_result *h = get(rs, "hydro_n%d_it%d", RES[j], 4);
        const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], 4);
        if (!h && !r) continue;
        fprintf(f, "| %d |", RES[j]);
        if (h) {
            hydro_sum hs = hydro_summary(h);
            fprintf(f, " %.3f / %.2f %% | %+.2f %% |", hs.set_avg, hs.set_max, hs.surface_err);
        } else
            fprintf(f, " — | — |");
        if (r) {
            double e;
            best_shift(r, SHIFT_MAX, &e);
            const sim_result *prev = j > 0 ? get(rs, "dam_n%d_it%d", RES[j - 1], 4) : NULL;
            fprintf(f, " %.3f / %.2f %% | %.1f %% |", mean_err_avg(r), peak_err_max(r), e);
            if (prev)
                fprintf(f, " %.3f |\n", front_distance(r, prev));
            else
                fprintf(f, " — |\n");
        } else
            fprintf(f, " — | — | — |\n");
    }
    fprintf(f, "\nSolver iterations:\n\n");
    fprintf(f, "| n | iterations | hydrostatic settled avg / max | surface − H0 | dam break mean "
               "avg / peak max density error | front error, no shift | fitted ΔT | error at "
               "ΔT |\n|---|---|---|---|---|---|---|---|\n");
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 4; ++i) {
            const sim_result *h = get(rs, "hydro_n%d_it%d", RES[j], ITERS[i]);
            const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], ITERS[i]);
            if (!h && !r) continue;
            fprintf(f, "| %d | %d |", RES[j], ITERS[i]);
            if (h) {
                hydro_sum hs = hydro_summary(h);
                fprintf(f, " %.3f / %.2f %% | %+.2f %% |", hs.set_avg, hs.set_max, hs.surface_err);
            } else
                fprintf(f, " — | — |");
            if (r) {
                double e, sh = best_shift(r, SHIFT_MAX, &e);
                fprintf(f, " %.3f / %.2f %% | %.1f %% | %+.3f | %.1f %% |\n", mean_err_avg(r),
                        peak_err_max(r), front_error(r, 0.0), sh, e);
            } else
                fprintf(f, " — | — | — | — |\n");
        }
    fprintf(f, "\n");
    {
        const sim_result *a0 = get(rs, "dam_n%d_it%d", N_COARSE, 4),
                         *a1 = get(rs, "dam_n%d_it%d", N_MEDIUM, 4),
                         *a2 = get(rs, "dam_n%d_it%d", N_FINE, 4);
        if (a0 && a1 && a2)
            fprintf(f,
                    "Front: the largest change for T ≤ 3 is %.3f L from n = 18 to 36 and %.3f L "
                    "from 36 to 72 (ratio %.2f: converging, about order %.1f in the particle "
                    "radius).\n\n",
                    front_distance(a1, a0), front_distance(a2, a1),
                    front_distance(a2, a1) / front_distance(a1, a0),
                    log(front_distance(a1, a0) / front_distance(a2, a1)) / log(2.0));
        int first = 0;
        for (int i = 0; i < 4 && !first; ++i) {
            const sim_result *h = get(rs, "hydro_n%d_it%d", N_MEDIUM, ITERS[i]);
            if (!h) continue;
            hydro_sum hs = hydro_summary(h);
            if (hs.set_avg <= 0.5 && hs.set_max <= 3.0) first = ITERS[i];
        }
        if (get(rs, "hydro_n%d_it%d", N_MEDIUM, 16)) {
            if (first)
                fprintf(f,
                        "Density error: at a fixed number of iterations the settled hydrostatic "
                        "error hardly changes with resolution (the time step shrinks with the "
                        "particles), and it falls with every doubling of the iterations; the "
                        "settled targets of section 1 (average ≤ 0.5 %%, maximum ≤ 3 %%) are met "
                        "from %d iterations on (n = 36).\n\n",
                        first);
            else
                fprintf(f, "Density error: the settled targets of section 1 (average ≤ 0.5 %%, "
                           "maximum ≤ 3 %%) are not met even at 16 iterations (n = 36).\n\n");
        }
    }
    fig(f, fl, link, out, "hydro_iterations",
        "Hydrostatic column: density error against solver iterations");
    fig(f, fl, link, out, "dam_density", "Dam break: average density error against iterations");
    fig(f, fl, link, out, "dam_front_iterations", "Dam break: front against solver iterations");

    /* ---- energy ---- */
    fprintf(f, "## 4. Energy\n\n");
    fprintf(f,
            "E = Σ m (|v|²/2 + g y), y from the floor, per frame (1/%.0f s), relative to E(0). "
            "Without vorticity confinement (`--set vorticity=0`) nothing in the model adds "
            "energy, so E may only decay; with it (the default, ε = %.3g m/s) confinement may "
            "add some. \"Noise level\" is taken as %.2g %% of E(0) per frame.\n\n",
            FRAME_FPS, dd.vorticity, ENERGY_NOISE);
    fprintf(f,
            "| case | largest increase between frames (%% of E0), at t | same for t ≥ %.2g s | "
            "E at T = 3 | E at the end (t = %.1f s) |\n|---|---|---|---|---|\n",
            STARTUP_T, LONG_T_END);
    for (int j = 0; j < 3; ++j)
        for (int v = 1; v >= 0; --v) {
            const sim_result *r = get(rs, v ? "dam_n%d_it%d_vort0" : "dam_n%d_it%d", RES[j], 4);
            if (!r || r->rec[r->h.nrec - 1].t < LONG_T_END - 1e-6) continue;
            double inc, inc_t, fin, inc2, inc2_t;
            energy_summary(r, 0.0, &inc, &inc_t, &fin);
            energy_summary(r, STARTUP_T, &inc2, &inc2_t, &fin);
            double e0 = r->rec[0].ekin + r->rec[0].epot, e3 = NAN, bd = INFINITY;
            for (int k = 0; k < r->h.nrec; ++k) {
                double dt = fabs(r->rec[k].t * ts - 3.0);
                if (dt < bd) {
                    bd = dt;
                    e3 = (r->rec[k].ekin + r->rec[k].epot) / e0;
                }
            }
            char i1[64], i2[64];
            if (isfinite(inc_t))
                snprintf(i1, sizeof i1, "%.4f %% at %.3f s", inc, inc_t);
            else
                snprintf(i1, sizeof i1, "none");
            if (isfinite(inc2_t))
                snprintf(i2, sizeof i2, "%.4f %% at %.3f s", inc2, inc2_t);
            else
                snprintf(i2, sizeof i2, "none");
            fprintf(f, "| n = %d, vorticity %s | %s | %s | %.4f | %.4f |\n", RES[j], v ? "0" : "on",
                    i1, i2, e3, fin);
        }
    fprintf(f, "\n");
    for (int j = 0; j < 3; ++j) {
        const sim_result *off = get(rs, "dam_n%d_it%d_vort0", RES[j], 4);
        const sim_result *on = get(rs, "dam_n%d_it%d", RES[j], 4);
        if (!off || !on || on->h.nrec != off->h.nrec) continue;
        double e0 = on->rec[0].ekin + on->rec[0].epot, worst = 0.0, wt = 0.0;
        for (int k = 0; k < on->h.nrec; ++k) {
            double dlt =
                (on->rec[k].ekin + on->rec[k].epot - off->rec[k].ekin - off->rec[k].epot) / e0;
            if (fabs(dlt) > fabs(worst)) {
                worst = dlt;
                wt = on->rec[k].t;
            }
        }
        const frame_rec *a1 = &on->rec[on->h.nrec - 1], *a0 = &off->rec[off->h.nrec - 1];
        fprintf(
            f,
            "With confinement on, n = %d: E differs from the run without it by at most "
            "%+.3f %% of E(0) (at t = %.3f s); at the end E(on) − E(off) = %+.3f %% of E(0).\n\n",
            RES[j], 100.0 * worst, wt,
            100.0 * ((a1->ekin + a1->epot) - (a0->ekin + a0->epot)) / e0);
    }
    fig(f, fl, link, out, "energy", "Dam break: energy over time");

    /* ---- stability ---- */
    fprintf(f, "## 5. Stability envelope\n\n");
    fprintf(f,
            "The dam break at the `pbf run` convention of 60 frames/s with 1, 2, 4 or 8 "
            "substeps (dt = 1/60 … 1/480 s) and 1, 2, 4 or 8 iterations, for %.1f s (the front "
            "hits the far wall and runs up it). Stable: no non-finite value, no particle "
            "outside the container, an average density error under %.0f %% and no particle's "
            "density error above %.0f %% (\"guard\": where `pbf run`'s default "
            "`guard_density_error` stops a run) after every step of the run, and no gain of "
            "energy (kinetic + potential) above E(0) by more than %.0f %% of E(0) at a frame: "
            "a run that blows up can keep its densities, and nothing in the dam break adds "
            "energy. Each cell gives the peak average / peak maximum density error; "
            "⚠ marks a cell whose maximum (one particle) went over %.0f %% (first at the time "
            "given) while the average stayed under.\n\n",
            LONG_T_END, STAB_DENSITY, stab_guard(), STAB_ENERGY, STAB_DENSITY);
    for (int j = 0; j < 2; ++j) {
        if (!get(rs, "stab_n%d_s%d_it4", RES[j], 4)) continue;
        double s = KO_L / RES[j];
        fprintf(f, "n = %d (r = %.2f mm, h = %.1f mm):\n\n| substeps (dt) |", RES[j], 500.0 * s,
                1000.0 * dd.kernel_ratio * s);
        for (int b2 = 0; b2 < 4; ++b2)
            fprintf(f, " %d iteration%s |", STAB_ITERS[b2], STAB_ITERS[b2] > 1 ? "s" : "");
        fprintf(f, "\n|---|---|---|---|---|\n");
        for (int a2 = 0; a2 < 4; ++a2) {
            fprintf(f, "| %d (%.2f ms) |", SUBSTEPS[a2], 1000.0 / (STAB_FPS * SUBSTEPS[a2]));
            for (int b2 = 0; b2 < 4; ++b2) {
                char name[64];
                snprintf(name, sizeof name, "stab_n%d_s%d_it%d", RES[j], SUBSTEPS[a2],
                         STAB_ITERS[b2]);
                int i = find_spec(rs->specs, rs->count, name);
                const sim_result *r = i >= 0 && rs->res[i].h.ok ? &rs->res[i] : NULL;
                if (!r) {
                    fprintf(f, " — |");
                    continue;
                }
                if (r->h.fail == 5)
                    fprintf(f, " ❌ energy +%.1f %% at %.3f s (peak %.1f / %.1f %%) |",
                            r->h.peak_gain, r->h.fail_t, r->h.peak_avg, r->h.peak_max);
                else if (r->h.fail)
                    fprintf(f, " ❌ %s at %.3f s (peak %.1f / %.1f %%) |",
                            stab_failure(r->h.fail, 0), r->h.fail_t, r->h.peak_avg,
                            r->h.peak_max);
                else if (r->h.max_over_t >= 0)
                    fprintf(f, " ✅ %.2f / %.1f %% ⚠ %.3f s |", r->h.peak_avg, r->h.peak_max,
                            r->h.max_over_t);
                else
                    fprintf(f, " ✅ %.2f / %.1f %% |", r->h.peak_avg, r->h.peak_max);
            }
            fprintf(f, "\n");
        }
        fprintf(f, "\n");
    }

    /* ---- column release ---- */
    fprintf(f, "## 6. Column release\n\n");
    fprintf(f,
            "The dam break's column (section 2), released from rest at the back wall: the top of "
            "the liquid at the wall must fall, never rise. The top is the highest y + r over "
            "every particle within 2 spacings of the back wall, so a lone particle climbing the "
            "wall counts; the residual column of section 2, which ignores lone particles, is "
            "drawn dashed. The rise is measured against the initial height for T ≤ %.0f, frames "
            "of 1/%.0f s, in particle radii r (r = L / 2n: %.3f, %.3f, %.3f mm at n = 18, 36, "
            "72).\n\n",
            RELEASE_T, FRAME_FPS, 500.0 * KO_L / N_COARSE, 500.0 * KO_L / N_MEDIUM,
            500.0 * KO_L / N_FINE);
    fprintf(f, "| n | largest rise of the top at the wall | at T | largest rise of the column | "
               "top − initial at T = 0.5 / 1.0 / 1.5 |\n|---|---|---|---|---|\n");
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "dam_n%d_it%d", RES[j], 4);
        if (!r) continue;
        const double rad = 0.5 * KO_L / RES[j];
        double at, col, rise = top_rise(r, &at, &col);
        fprintf(f, "| %d | %.2f r = %.2f mm %s | %.3f | %.2f r |", RES[j], rise,
                1000.0 * rise * rad, rise <= RISE_TOL ? "✅" : "❌", at, col);
        for (int q = 1; q <= 3; ++q) {
            double T = 0.5 * q, best = NAN, bd = INFINITY;
            for (int k = 0; k < r->h.nrec; ++k) {
                double dt = fabs(r->rec[k].t * ts - T);
                if (dt < bd) {
                    bd = dt;
                    best = (r->rec[k].wall_top - r->rec[0].wall_top) / rad;
                }
            }
            fprintf(f, "%s%+.1f r", q == 1 ? " " : " / ", best);
        }
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
    fig(f, fl, link, out, "column_release",
        "Column release: height at the back wall and surge front after the release");
    fprintf(f, "%s\n\n", COLUMN_RELEASE_READING);

    /* ---- 7. walls and edges ---- */
    fprintf(f, "## 7. Walls and edges\n\n");
    fprintf(f,
            "The dam break of section 2 in a tank L = 0.146 m deep instead of the thin slab, so "
            "that it has two side walls and four vertical edges (two at the back wall, where "
            "the column falls), run to T = %.0f (the front is still short of the far wall). "
            "Every frame the particles are binned along x (bins of 2 spacings); in each bin the "
            "highest particle within 1.5 spacings of a side wall (a lone one counts; the edges "
            "at the back wall are in the first bin) is compared with the highest particle 3 or "
            "more spacings from both side walls in that bin and its two neighbours. The flow "
            "does not depend on z, so any excess is liquid that climbed a wall or an edge. "
            "Target: at most %.0f particle radii (one diameter) at any time.\n\n",
            KO_T_MAX, CLIMB_TOL);
    fprintf(f, "| n | particles | largest climb | at T |\n|---|---|---|---|\n");
    for (int j = 0; j < 3; ++j) {
        const sim_result *r = get(rs, "edges_n%d_it%d", RES[j], 4);
        if (!r) continue;
        double at, c = climb_max(r, &at);
        fprintf(f, "| %d | %d | %.1f r = %.1f mm %s | %.2f |\n", RES[j], r->h.particles, c,
                c * 1000.0 * 0.5 * KO_L / RES[j], c <= CLIMB_TOL ? "✅" : "❌", at);
    }
    fprintf(f, "\n");
    fig(f, fl, link, out, "edges", "Walls and edges: the largest climb at the side walls");
    fprintf(f,
            "Reading: what used to climb (`--set scorr_wall=0`: 9.0 r at n = 18, 7.2 r at "
            "n = 36) is a single-file stack of particles in each vertical edge at the back "
            "wall, which stays up while the column beside it falls. Its particles are "
            "under-dense (the unilateral constraint gives them no pressure, so the wall's "
            "density gradient does not push them off) and closer than the rest spacing: "
            "s_corr's anti-clumping part pushes such pairs apart, so the stack stands like a "
            "column of marbles, and the clamp at the two walls keeps it exactly in the edge. "
            "The wall is ghost fluid at rest density in the density sum; pbf now gives it its "
            "share of s_corr's artificial pressure too (`scorr_wall` = 1: a particle is pushed "
            "off a wall as ghost neighbours at the rest spacing would push it), which moves the "
            "stack out of the edge, where it falls with the liquid. Without that, `scorr_k` = 0 "
            "also removed the stacks (1.35 r) but let particles clump in the splash again (12 "
            "closer than half a spacing after 0.5 s, none with the default), and wall friction "
            "raised them (13 r at a coefficient of 0.2). The container's edges and corners "
            "have their own calibration of the wall density (ARCHITECTURE.md, Boundaries): "
            "with the flat wall's alone the lattice along an edge read 0.85 %% under-dense, "
            "the liquid sank along the edges from the first step, and the largest climb was "
            "0.91 r at n = 18 and 1.83 r at n = 36.\n\n");

    /* ---- CI ---- */
    fprintf(f, "## What CI checks\n\n");
    fprintf(f,
            "`ctest -L validation` runs `pbf validate --fast`: the n = 18 cases of the full run "
            "(the same worlds and steps, so the same numbers; the 4-iteration dam break stops at "
            "T = 3.5 and of the stability envelope only the default cell runs) and fails (exit 4) "
            "when a value is outside its CI tolerance. It prints both verdicts of each check, "
            "also written to `%s/checks.json`: the target met or missed, and the value within or "
            "outside the CI tolerance.\n\n"
            "| check | target | CI tolerance | n = 18 now | target verdict | CI verdict |\n"
            "|---|---|---|---|---|---|\n",
            out);
    for (int i = 0; i < nc; ++i) {
        if (!isfinite(c[i].gate)) continue;
        char tb[64];
        fprintf(f, "| %s | %s | %s%s | %s | %s | %s |\n", c[i].what,
                fmt_bound(tb, sizeof tb, c[i].target, c[i].unit, c[i].ge),
                fmt_bound(cc, sizeof cc, c[i].gate, c[i].unit, c[i].ge),
                c[i].note ? " (looser than the target: see the summary)" : " (the target)",
                fmt_v(d, sizeof d, c[i].v[0], c[i].unit),
                pbfapp_validate_verdict_name(
                    pbfapp_validate_verdict(c[i].v[0], c[i].target, c[i].ge)),
                pbfapp_validate_ci_verdict(c[i].v[0], c[i].gate, c[i].ge) == PBFAPP_CI_OUTSIDE
                    ? "**outside: CI fails**"
                    : "within");
    }
    fprintf(f, "\n## Files\n\n");
    fprintf(f,
            "- `%s/*.dat`: the measured series (a header line names the columns).\n"
            "- `%s/*.gp`, `%s/*.png`: the figures and their gnuplot scripts.\n"
            "- `%s/scenes/*.json`: every simulation as a `pbf run` scene.\n"
            "- `app/validate.c`: the cases, the measurements and this report.\n",
            out, out, out, out);
    pbf_error err;
    if (pbfapp_commit_file(f, tmp, report, &err) != PBF_OK) {
        fprintf(stderr, "pbf validate: %s\n", err.message);
        return 0;
    }
    return 1;
}

/* ==== per method: `pbf validate --solver NAME|all` ============================================ */
/*
 * The suite again, for each pressure solver: the hydrostatic column (settled density error, the
 * hydrostatic load against rho0 g d along the depth), the dam break with vorticity confinement
 * off (front against the experiment, energy, column release, wall time per simulated second)
 * and, without --fast, the stability envelope over time steps at n = 18 (frames of 1/60 s split
 * into 1, 2, 4, 8 steps, with the SPH solvers' CFL substeps off where they can be: the step as
 * given). PBF's iteration sweep has no counterpart: the SPH solvers stop at their tolerance,
 * which keeps its default. The PBF suite above (no --solver) is unchanged.
 */

#define METHOD_COUNT 5
static const int METHOD_ORDER[METHOD_COUNT] = {PBF_SOLVER_PBF, PBF_SOLVER_WCSPH, PBF_SOLVER_PCISPH,
                                               PBF_SOLVER_IISPH, PBF_SOLVER_DFSPH};
#define METHOD_TOL_FACTOR 5.0 /* CI: settled average density error <= 5 x the solve's tolerance */
#define METHOD_PBF_BOUND 1.0  /* CI, PBF (fixed iterations, no tolerance): the PBF suite's bound */
#define METHOD_MAX_SPECS (METHOD_COUNT * 8)

static const char *method_name(int solver) {
    size_t n = 0;
    const pbf_solver_info *s = pbf_solvers(&n);
    for (size_t i = 0; i < n; ++i)
        if ((int)s[i].kind == solver) return s[i].name;
    return "?";
}

static const char *method_title(int solver) {
    size_t n = 0;
    const pbf_solver_info *s = pbf_solvers(&n);
    for (size_t i = 0; i < n; ++i)
        if ((int)s[i].kind == solver) return s[i].title;
    return "?";
}

/* The spec's solver into a world definition; CFL substeps off where the solver allows it. */
static void apply_method(pbf_world_def *d, const spec *sp) {
    d->solver = (pbf_solver_kind)sp->solver;
    if (!sp->cfl_off) return;
    if (sp->solver == PBF_SOLVER_DFSPH) d->dfsph.cfl = 0.0f;
    if (sp->solver == PBF_SOLVER_PCISPH) d->pcisph.cfl = 0.0f;
    if (sp->solver == PBF_SOLVER_IISPH) d->iisph.cfl = 0.0f;
}

/* The density tolerance of the solver's solve (%), NAN for PBF (fixed iterations) and WCSPH. */
static double method_tolerance(int solver) {
    pbf_world_def d = pbf_default_world_def();
    switch (solver) {
    case PBF_SOLVER_DFSPH: return d.dfsph.tolerance;
    case PBF_SOLVER_PCISPH: return d.pcisph.tolerance;
    case PBF_SOLVER_IISPH: return d.iisph.tolerance;
    default: return NAN;
    }
}

/* The CI bound on the settled average density error of the column (%): METHOD_TOL_FACTOR x the
 * tolerance for a solve stopped at one; WCSPH: twice the mean compression the Tait equation
 * predicts for the column, rho0 g H0 / (2 B gamma) (linearised, H0 = 2 L); PBF: its suite's. */
static double method_density_bound(int solver) {
    pbf_world_def d = pbf_default_world_def();
    if (solver == PBF_SOLVER_WCSPH)
        return 2.0 * 100.0 * d.rest_density * GRAVITY * (2.0 * KO_L) /
               (2.0 * d.wcsph.stiffness * d.wcsph.exponent);
    if (solver == PBF_SOLVER_PBF) return METHOD_PBF_BOUND;
    return METHOD_TOL_FACTOR * method_tolerance(solver);
}

static int make_method_specs(spec *v, const int *solvers, int ns, int fast) {
    int c = 0;
    for (int k = 0; k < ns; ++k) {
        const char *mn = method_name(solvers[k]);
        for (int r = 0; r < (fast ? 1 : 2); ++r) {
            int n = RES[r];
            add_spec(v, &c, CASE_HYDRO, n, 4, 0, 0, METHOD_HYDRO_T_END, n == N_COARSE);
            snprintf(v[c - 1].name, sizeof v[c - 1].name, "%s_hydro_n%d", mn, n);
            v[c - 1].solver = solvers[k];
            add_spec(v, &c, CASE_DAM, n, 4, 1, 0, LONG_T_END, n == N_COARSE);
            snprintf(v[c - 1].name, sizeof v[c - 1].name, "%s_dam_n%d_vort0", mn, n);
            v[c - 1].solver = solvers[k];
            if (fast || n != N_COARSE) continue;
            for (int a = 0; a < 4; ++a) {
                add_spec(v, &c, CASE_STAB, n, 4, 0, SUBSTEPS[a], LONG_T_END, 0);
                snprintf(v[c - 1].name, sizeof v[c - 1].name, "%s_stab_n%d_s%d", mn, n,
                         SUBSTEPS[a]);
                v[c - 1].solver = solvers[k];
                v[c - 1].cfl_off = 1;
            }
        }
    }
    return c;
}

static const sim_result *get_method(const run_set *rs, int solver, const char *fmt, int a, int b) {
    char name[64], full[80];
    snprintf(name, sizeof name, fmt, a, b);
    snprintf(full, sizeof full, "%s_%s", method_name(solver), name);
    int i = find_spec(rs->specs, rs->count, full);
    if (i < 0 || !rs->res[i].h.ok) return NULL;
    return &rs->res[i];
}

/* The stability envelope of one method, run by run: "1/60 s ❌ energy +11 % at 0.400 s; ...". */
static void envelope_line(FILE *f, const run_set *rs, int solver, int n) {
    int any = 0;
    for (int a = 0; a < 4; ++a) {
        const sim_result *r = get_method(rs, solver, "stab_n%d_s%d", n, SUBSTEPS[a]);
        if (!r) continue;
        fprintf(f, "%s1/%.0f s ", any++ ? "; " : " Stability envelope (n = 18): ",
                STAB_FPS * SUBSTEPS[a]);
        if (r->h.fail == 5)
            fprintf(f, "❌ energy +%.1f %% of E(0) at %.3f s", r->h.peak_gain, r->h.fail_t);
        else if (r->h.fail)
            fprintf(f, "❌ %s at %.3f s", stab_failure(r->h.fail, 1), r->h.fail_t);
        else
            fprintf(f, "✅ (energy gain %+.2f %%, peak density error %.2f / %.1f %%)",
                    r->h.peak_gain, r->h.peak_avg, r->h.peak_max);
    }
    if (any) fprintf(f, ".");
}

/* The hydrostatic load along the depth of the settled column: at the centre y_b of each layer
 * of the final density profile, p_b = g m (particles above + half the layer's) / area, against
 * rho0 g d_b with d_b = surface - y_b (the settled surface); the least-squares slope over the
 * layers at least one spacing from the surface and the floor. Equilibrium needs dp/dd = rho g,
 * so the slope is the column's mean density over rho0 along the depth (1: at rest density). */
static double load_slope(const sim_result *r, double surface) {
    const double s = KO_L / r->h.sp.n, area = KO_L * DEPTH_LAYERS * s;
    const double rho0 = pbf_default_world_def().rest_density;
    double above = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0;
    int cnt = 0;
    for (int b = r->h.nbins - 1; b >= 0; --b) {
        double y = r->bins[3 * b], w = r->bins[3 * b + 2];
        double p = GRAVITY * r->h.mass * (above + 0.5 * w) / area, d = surface - y;
        above += w;
        if (d < s || y < s) continue;
        double x = rho0 * GRAVITY * d;
        sx += x;
        sy += p;
        sxx += x * x;
        sxy += x * p;
        ++cnt;
    }
    double den = cnt * sxx - sx * sx;
    return cnt >= 3 && den > 0 ? (cnt * sxy - sx * sy) / den : NAN;
}

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

static method_sum method_summary(const run_set *rs, int solver, int n) {
    method_sum m;
    memset(&m, 0, sizeof m);
    m.set_avg = m.set_max = m.slope = m.front_err = m.energy_inc = m.rise = m.wall_per_s = NAN;
    m.energy_gain = NAN;
    m.max_stable_dt = NAN;
    const sim_result *h = get_method(rs, solver, "hydro_n%d", n, 0);
    if (h) {
        hydro_sum hs = hydro_summary(h);
        m.set_avg = hs.set_avg;
        m.set_max = hs.set_max;
        m.slope = load_slope(h, hs.surface);
    }
    const sim_result *d = get_method(rs, solver, "dam_n%d_vort0", n, 0);
    if (d && d->h.nrec > 1) {
        double e, t, fin, at;
        best_shift(d, SHIFT_MAX, &e);
        m.front_err = e;
        energy_summary(d, 0.0, &m.energy_inc, &t, &fin);
        double e0 = d->rec[0].ekin + d->rec[0].epot;
        m.energy_gain = -INFINITY;
        for (int k = 1; k < d->h.nrec; ++k) {
            double g = 100.0 * (d->rec[k].ekin + d->rec[k].epot - e0) / e0;
            if (g > m.energy_gain) m.energy_gain = g;
        }
        m.rise = top_rise(d, &at, NULL);
        m.wall_per_s = d->h.wall_s / d->rec[d->h.nrec - 1].t;
        m.particles = d->h.particles;
    }
    for (int a = 0; a < 4; ++a) {
        const sim_result *s = get_method(rs, solver, "stab_n%d_s%d", n, SUBSTEPS[a]);
        if (!s) continue;
        ++m.stab_runs;
        if (s->h.fail) continue;
        ++m.stab_ok;
        double dt = 1.0 / (STAB_FPS * SUBSTEPS[a]);
        if (!(m.max_stable_dt >= dt)) m.max_stable_dt = dt;
    }
    return m;
}

/* The checks of CI, per method, on the n = 18 runs. */
typedef struct method_check {
    const char *what;
    const char *unit;
    double value, target, bound; /* bound: the CI tolerance (the target, or looser: note) */
    const char *note;
} method_check;

#define METHOD_CHECKS 4

static int method_checks(const method_sum *m, int solver, method_check *c) {
    c[0] = (method_check){"no energy gain: E = kinetic + potential never above E(0) (largest "
                          "E(t) - E(0), dam break, vorticity 0)",
                          "%", m->energy_gain, ENERGY_NOISE, ENERGY_NOISE, NULL};
    /* E may fall and never rise: a gain after an earlier loss (which the check above cannot
     * see) is caught here. The SPH solvers' pressure force is conservative only with a kernel
     * whose gradient is that of the density's (sph_kernel = cubic); with poly6 / spiky PCISPH,
     * IISPH and DFSPH raise E by 0.07 to 0.5 % of E(0) between two frames of the surge. */
    c[3] = (method_check){"energy never rises: largest increase of E between two frames "
                          "(dam break, vorticity 0, from t = 0)",
                          "%", m->energy_inc, ENERGY_NOISE, ENERGY_NOISE, NULL};
    c[1] = (method_check){"column release: the top at the back wall rises at most half a radius",
                          "r", m->rise, RISE_TOL, RISE_TOL, NULL};
    c[2] = (method_check){"hydrostatic, settled: average density error within the method's bound",
                          "%", m->set_avg, method_density_bound(solver),
                          method_density_bound(solver), NULL};
    return METHOD_CHECKS;
}

static int method_failures(const run_set *rs, const int *solvers, int ns, int print, FILE *f) {
    int failed = 0;
    for (int k = 0; k < ns; ++k) {
        method_sum m = method_summary(rs, solvers[k], N_COARSE);
        method_check c[METHOD_CHECKS];
        int nc = method_checks(&m, solvers[k], c);
        for (int i = 0; i < nc; ++i) {
            int ok = within(c[i].value, c[i].bound, 0), met = within(c[i].value, c[i].target, 0);
            failed += !ok;
            if (print || !ok)
                fprintf(f, "pbf validate: %-6s %-7s %s: n = %d: %.3g %s (target ≤ %.3g %s)%s\n",
                        method_name(solvers[k]), met ? "met" : "missed", c[i].what, N_COARSE,
                        c[i].value, c[i].unit, c[i].target, c[i].unit,
                        !ok  ? "; outside the CI tolerance: FAIL"
                        : met ? ""
                              : "; within the looser CI tolerance");
        }
    }
    return failed;
}

static void method_cell(FILE *f, double v, const char *fmt) {
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fprintf(f, " — |");
}

static int write_method_report(const validate_options *o, const char *report, const run_set *rs,
                               const int *solvers, int ns, int argc, char **argv, double wall) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", report);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "pbf validate: %s: cannot create: %s\n", tmp, strerror(errno));
        return 0;
    }
    char cmd[1024] = "pbf validate", build[128], dur[32];
    for (int i = 0; i < argc; ++i) {
        size_t used = strlen(cmd);
        snprintf(cmd + used, sizeof cmd - used, " %s", argv[i]);
    }
    pbfapp_format_duration(dur, sizeof dur, wall);
    describe_build(build, sizeof build);
    const int nres = o->fast ? 1 : 2;
    pbf_world_def dd = pbf_default_world_def();
    fprintf(f, "# Fidelity of pbf's pressure solvers, method by method\n\n");
    fprintf(f,
            "Generated by `%s` (pbf %s built from %s; %s) in %s of wall time, %d simulations, "
            "%d at once with %d thread%s each. Do not edit by hand: rerun the command. The "
            "Position Based Fluids suite (iteration sweeps, figures) is "
            "[docs/validation.md](validation.md); this report runs its cases for every "
            "method.\n\n",
            cmd, PBF_VERSION_STRING, build, o->fast ? "--fast: n = 18, no envelope" : "full run",
            dur, rs->count, o->jobs, o->threads, o->threads == 1 ? "" : "s");
    if (PBF_GIT_DIRTY == 1)
        fprintf(f, "**Built from a tree with uncommitted changes** (commit %s).\n\n",
                PBF_GIT_COMMIT);
    if (o->cached > 0)
        fprintf(f,
                "**%d of these %d results were reused from the cache of an earlier run** "
                "(`--cache %s`), so the wall time above does not include them.\n\n",
                o->cached, rs->count, o->cache);
    fprintf(f,
            "Cases (quasi-2D slabs, %d particle spacings deep; n particles across L = 0.146 m; "
            "frames of 1/240 s split into n / 9 steps; every parameter at its default unless "
            "named; `%s/scenes/NAME.json` reproduces each with `pbf run`):\n\n"
            "- **hydrostatic column** (1 s): settled (last quarter) average and largest density "
            "error; the hydrostatic load along the depth, p(d) = g × (mass above) / area at each "
            "layer of the final state against ρ0 g d below the settled surface: the least-squares "
            "slope, 1 for a column at rest density (equilibrium needs dp/dd = ρ g, so the slope is "
            "the column's mean density over ρ0; pbf's API exposes no pressure field, and in a "
            "column at rest the pressure gradient that moves the particles must balance this "
            "load);\n"
            "- **dam break** of Koshizuka & Oka (1996), vorticity confinement off, 1 s: the "
            "largest front error against the experiment for T ≤ 3 (one time shift of at most "
            "0.2 in T), the energy E = kinetic + potential: its largest value above E(0) (no "
            "gain: ≤ %.2g %% of E(0)) and its largest increase between two frames (≤ %.2g %%, "
            "the noise level: nothing in the model adds energy), the largest rise of the top of the "
            "liquid at the back wall after the release for T ≤ %.0f (particle radii; a released "
            "column falls), and the wall time per simulated second (one thread);\n"
            "- **stability envelope** (n = 18, full run only): frames of 1/60 s split into 1, 2, "
            "4, 8 steps, 1 s; stable = no non-finite value, no escape, average density error "
            "below %.0f %%, no particle's above %.0f %% (where `pbf run`'s default "
            "`guard_density_error` stops a run) and no energy gain above %.0f %% of E(0) at a "
            "frame (a run that blows up can keep its densities). The SPH solvers' CFL substeps "
            "are off (`dfsph_cfl`, `pcisph_cfl`, `iisph_cfl` = 0: the step as given); WCSPH's "
            "cannot be (its substeps follow the sound speed), so its envelope shows the outer step "
            "only.\n\n",
            DEPTH_LAYERS, o->out, ENERGY_NOISE, ENERGY_NOISE, RELEASE_T, STAB_DENSITY,
            stab_guard(), STAB_ENERGY);
    fprintf(f,
            "Solver settings (defaults): PBF %d iterations; WCSPH B = %.0f Pa, γ = %.0f, CFL "
            "%.2g; PCISPH, IISPH, DFSPH tolerance %.2g %% (DFSPH's divergence %.2g %%), their "
            "CFL %.2g (substeps of at most cfl × 2r / v_max). Kernels: PBF poly6 for the density "
            "and spiky for its gradients (Müller et al. 2003, as Macklin & Müller 2013); the SPH "
            "solvers %s.\n\n",
            dd.pbf.solver_iterations, dd.wcsph.stiffness, dd.wcsph.exponent, dd.wcsph.cfl,
            dd.pcisph.tolerance, dd.dfsph.divergence_tolerance, dd.dfsph.cfl,
            dd.sph_kernel == PBF_SPH_KERNEL_CUBIC
                ? "the cubic spline (Monaghan 1992) for both, so that their pressure force is the "
                  "gradient of the density they measure (`sph_kernel` = cubic)"
                : "poly6 / spiky, as PBF (`sph_kernel` = poly6_spiky)");
    /* the overview */
    fprintf(f, "## Overview (n = %d)\n\n", N_COARSE);
    fprintf(f, "| method | settled density error avg / max | load slope | front error | energy "
               "gain E(t) - E(0) | largest increase between frames | release rise | wall s per "
               "simulated s | largest stable step |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < ns; ++k) {
        method_sum m = method_summary(rs, solvers[k], N_COARSE);
        fprintf(f, "| `%s` |", method_name(solvers[k]));
        if (isfinite(m.set_avg))
            fprintf(f, " %.3f %% / %.2f %% |", m.set_avg, m.set_max);
        else
            fprintf(f, " — |");
        method_cell(f, m.slope, " %.4f |");
        method_cell(f, m.front_err, " %.1f %% |");
        method_cell(f, m.energy_gain, " %.3f %% |");
        method_cell(f, m.energy_inc, " %.4f %% |");
        method_cell(f, m.rise, " %.2f r |");
        method_cell(f, m.wall_per_s, " %.1f |");
        if (isfinite(m.max_stable_dt))
            fprintf(f, " 1/%.0f s |\n", 1.0 / m.max_stable_dt);
        else
            fprintf(f, " %s |\n", m.stab_runs ? "none" : "—");
    }
    fprintf(f, "\n");
    /* one table per method */
    for (int k = 0; k < ns; ++k) {
        int sv = solvers[k];
        fprintf(f, "## `%s`: %s\n\n", method_name(sv), method_title(sv));
        fprintf(f, "| measurement | n = 18 |%s CI bound (n = 18) |\n", nres > 1 ? " n = 36 |" : "");
        fprintf(f, "|---|---|%s---|\n", nres > 1 ? "---|" : "");
        method_sum m[2];
        for (int r = 0; r < nres; ++r) m[r] = method_summary(rs, sv, RES[r]);
        method_check c[METHOD_CHECKS];
        method_checks(&m[0], sv, c);
        struct {
            const char *what, *fmt;
            double v[2];
            const char *bound;
            double bv;
        } rows[] = {
            {"hydrostatic, settled: average density error (%)", " %.3f |",
             {m[0].set_avg, m[1].set_avg}, "≤ %.3g %%", c[2].bound},
            {"hydrostatic, settled: largest density error (%)", " %.2f |",
             {m[0].set_max, m[1].set_max}, NULL, 0},
            {"hydrostatic load against ρ0 g d: slope", " %.4f |", {m[0].slope, m[1].slope},
             NULL, 0},
            {"dam break: front error against the experiment, T ≤ 3 (%)", " %.1f |",
             {m[0].front_err, m[1].front_err}, NULL, 0},
            {"dam break: no energy gain, largest E(t) - E(0) (% of E(0))", " %.4f |",
             {m[0].energy_gain, m[1].energy_gain}, "≤ %.2g %%", c[0].bound},
            {"dam break: largest energy increase between two frames (% of E(0))", " %.4f |",
             {m[0].energy_inc, m[1].energy_inc}, "≤ %.2g %%", c[3].bound},
            {"column release: largest rise of the top at the wall, T ≤ 2 (r)", " %.2f |",
             {m[0].rise, m[1].rise}, "≤ %.2g r", RISE_TOL},
            {"wall time per simulated second, dam break, one thread (s)", " %.1f |",
             {m[0].wall_per_s, m[1].wall_per_s}, NULL, 0},
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
            fprintf(f, "| %s |", rows[i].what);
            for (int r = 0; r < nres; ++r) method_cell(f, rows[i].v[r], rows[i].fmt);
            if (rows[i].bound) {
                char b[64];
                snprintf(b, sizeof b, rows[i].bound, rows[i].bv);
                int ok = within(rows[i].v[0], rows[i].bv, 0);
                fprintf(f, " %s %s%s |\n", b, ok ? "✅" : "❌",
                        rows[i].bv == c[0].bound && c[0].note && i == 4 ? " (looser than the target: "
                                                                          "see below)"
                                                                        : "");
            } else
                fprintf(f, " — |\n");
        }
        fprintf(f, "| largest stable step of the envelope (n = 18) |");
        if (isfinite(m[0].max_stable_dt))
            fprintf(f, " 1/%.0f s (%d of %d steps stable) |", 1.0 / m[0].max_stable_dt,
                    m[0].stab_ok, m[0].stab_runs);
        else
            fprintf(f, " %s |", m[0].stab_runs ? "none stable" : "not run (--fast)");
        fprintf(f, "%s — |\n\n", nres > 1 ? " — |" : "");
        fprintf(f, "Dam break: %d particles at n = 18%s.", m[0].particles,
                nres > 1 ? "" : " (--fast: n = 18 only)");
        if (sv == PBF_SOLVER_WCSPH)
            fprintf(f, " Density bound: twice the mean compression the Tait equation predicts "
                       "for the column, ρ0 g H0 / (2 B γ) with H0 = 2 L.");
        else if (sv == PBF_SOLVER_PBF)
            fprintf(f, " Density bound: the PBF suite's CI bound (fixed iterations, no "
                       "tolerance).");
        else
            fprintf(f, " Density bound: %.0f × the solve's tolerance (%.2g %%).", METHOD_TOL_FACTOR,
                    method_tolerance(sv));
        envelope_line(f, rs, sv, N_COARSE);
        for (int i = 0; i < METHOD_CHECKS; ++i)
            if (c[i].note)
                fprintf(f, " CI tolerance of \"%s\": %.2g %s, looser than the target %.2g %s: %s.",
                        c[i].what, c[i].bound, c[i].unit, c[i].target, c[i].unit, c[i].note);
        fprintf(f, "\n\n");
    }
    fprintf(f, "## What CI checks\n\n`ctest -L validation` runs `pbf validate --solver all "
               "--fast` and fails (exit 4) when, for any method at n = 18, the energy E(t) "
               "exceeds E(0) by more than %.2g %% of E(0) or rises between two frames by more "
               "than that, the released "
               "column's top rises by more than %.2g r, or the settled average density error "
               "exceeds the method's bound above.\n",
            ENERGY_NOISE, RISE_TOL);
    pbf_error err;
    if (pbfapp_commit_file(f, tmp, report, &err) != PBF_OK) {
        fprintf(stderr, "pbf validate: %s\n", err.message);
        return 0;
    }
    return 1;
}

static int validate_methods(validate_options *o, int argc, char **argv) {
    int solvers[METHOD_COUNT], ns = 0;
    if (strcmp(o->solver, "all") == 0) {
        for (int k = 0; k < METHOD_COUNT; ++k) solvers[ns++] = METHOD_ORDER[k];
    } else {
        for (int k = 0; k < METHOD_COUNT; ++k)
            if (strcmp(o->solver, method_name(METHOD_ORDER[k])) == 0) solvers[ns++] = METHOD_ORDER[k];
        if (ns == 0) {
            fprintf(stderr,
                    "pbf validate: --solver: \"%s\" is not a solver (pbf, wcsph, pcisph, iisph, "
                    "dfsph or all)\n",
                    o->solver);
            return EXIT_USAGE;
        }
    }
    char out[4096], report[4200], work[4200], scenes[4200];
    size_t n = strlen(o->out);
    if (n >= sizeof out - 16) {
        fprintf(stderr, "pbf validate: --out: path too long\n");
        return EXIT_USAGE;
    }
    memcpy(out, o->out, n + 1);
    while (n > 1 && out[n - 1] == '/') out[--n] = '\0';
    if (o->report)
        snprintf(report, sizeof report, "%s", o->report);
    else
        snprintf(report, sizeof report, "%s.md", out);
    snprintf(work, sizeof work, "%s/.work", out);
    snprintf(scenes, sizeof scenes, "%s/scenes", out);
    if (!mkdir_p(out) || !mkdir_p(scenes) || !mkdir_p(work) || (o->cache && !mkdir_p(o->cache)))
        return EXIT_RUNTIME;
    spec *specs = calloc(METHOD_MAX_SPECS, sizeof *specs);
    sim_result *res = calloc(METHOD_MAX_SPECS, sizeof *res);
    if (!specs || !res) {
        free(specs);
        free(res);
        fputs("pbf validate: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    int count = make_method_specs(specs, solvers, ns, o->fast);
    for (int i = 0; i < count; ++i) memcpy(specs[i].set, o->set, sizeof o->set);
    double t0 = pbfapp_now();
    if (!o->quiet)
        fprintf(stderr,
                "pbf validate: --solver %s: %d simulations (%s), %d at once, %d thread%s each; "
                "report %s\n",
                o->solver, count, o->fast ? "--fast: n = 18, no envelope" : "n = 18, 36", o->jobs,
                o->threads, o->threads == 1 ? "" : "s", report);
    int rc = 0;
    run_set rs = {specs, res, count};
    if (!write_scenes(scenes, specs, count) || run_all(o, work, specs, count, res) != 0)
        rc = EXIT_RUNTIME;
    rmdir(work);
    for (int i = 0; i < count && rc == 0; ++i)
        if (!res[i].h.ok) {
            fprintf(stderr, "pbf validate: %s\n", res[i].h.message);
            rc = EXIT_RUNTIME;
        }
    if (rc == 0 && !write_data(out, &rs)) rc = EXIT_RUNTIME;
    if (rc == 0) {
        if (!write_method_report(o, report, &rs, solvers, ns, argc, argv, pbfapp_now() - t0))
            rc = EXIT_RUNTIME;
        else if (method_failures(&rs, solvers, ns, !o->quiet, stderr) != 0)
            rc = EXIT_FAILED_CHECK;
    }
    return finish_run(rc, o->quiet, t0, report, specs, res, count);
}
