/* `pbf validate`: the cases, one row each (CASES: the Position Based Fluids suite; METHOD_CASES:
 * the suite of each pressure solver, `--solver`), the worlds they build and the scenes that
 * reproduce them with `pbf run`. */
#define _POSIX_C_SOURCE 200809L

#include "validate_internal.h"
#include "util.h"

#include <math.h>
#include <string.h>

#include "pbf/params.h"
#include "scene.h"

static void apply_method(pbf_world_def *d, const spec *sp);

/* The keys a case sets itself (resolution, iterations, container, threads, solver): --set
 * refuses them. */
static const char *const CASE_KEYS[] = {"particle_radius", "solver_iterations", "domain_min",
                                        "domain_max",      "threads",           "solver"};

/* Applies the --set lines of `set` to d; 0 with the message in err on a bad one. */
int apply_sets(pbf_world_def *d, const char *set, pbf_error *err) {
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

pbf_world_def def_of(const spec *sp, int threads) {
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

pbf_fluid_block block_of(const spec *sp) {
    float s = (float)(KO_L / sp->n);
    pbf_fluid_block b = {
        {0, 0, 0},
        {(float)KO_L, (float)(2.0 * KO_L), sp->deep ? (float)KO_L : DEPTH_LAYERS * s},
        {0, 0, 0}};
    return b;
}

/* ---- the case rows ------------------------------------------------------------------------- */

/* When a row's cases end. */
typedef enum case_end {
    END_HYDRO,       /* HYDRO_T_END */
    END_LONG,        /* LONG_T_END: the energy runs and the stability envelope */
    END_DAM,         /* T = DAM_T_END: the front runs */
    END_DAM_OR_LONG, /* LONG_T_END at n = 18 and 36 without --fast (the energy runs with
                         confinement on), else T = DAM_T_END */
    END_EDGES,       /* T = KO_T_MAX */
    END_METHOD_HYDRO /* METHOD_HYDRO_T_END */
} case_end;

#define R18 1
#define R36 2
#define R72 4

/* A row: the cases it makes at each resolution it names (bits R18, R36, R72), in this order at
 * each resolution. grid 1: one case per substeps x iterations of the stability envelope
 * (SUBSTEPS x STAB_ITERS; --fast: only the default cell, 4 x 4), grid 2: one per substeps
 * (SUBSTEPS, the per-method envelope, SPH CFL substeps off). full_only: not in --fast. */
typedef struct case_row {
    const char *name; /* (n, iterations), grid 1 (n, substeps, iterations); METHOD_CASES:
                         (method, n), grid 2 (method, n, substeps) */
    case_kind kind;
    int res;
    int iterations;
    int vort_off, deep;
    case_end end;
    int grid;
    int full_only;
} case_row;

static const case_row CASES[] = {
    {"hydro_n%d_it%d", CASE_HYDRO, R18 | R36 | R72, 4, 0, 0, END_HYDRO, 0, 0},
    {"hydro_n%d_it%d", CASE_HYDRO, R36, 2, 0, 0, END_HYDRO, 0, 0},
    {"hydro_n%d_it%d", CASE_HYDRO, R36, 8, 0, 0, END_HYDRO, 0, 0},
    {"hydro_n%d_it%d", CASE_HYDRO, R36, 16, 0, 0, END_HYDRO, 0, 0},
    {"dam_n%d_it%d", CASE_DAM, R18 | R36, 2, 0, 0, END_DAM, 0, 0},
    /* the 4-iteration runs of n = 18, 36 are also the energy runs with confinement on:
     * longer (--fast needs only the front: the same steps, stopped at T = 3.5) */
    {"dam_n%d_it%d", CASE_DAM, R18 | R36 | R72, 4, 0, 0, END_DAM_OR_LONG, 0, 0},
    {"dam_n%d_it%d", CASE_DAM, R18 | R36, 8, 0, 0, END_DAM, 0, 0},
    {"dam_n%d_it%d", CASE_DAM, R18 | R36, 16, 0, 0, END_DAM, 0, 0},
    {"dam_n%d_it%d_vort0", CASE_DAM, R18 | R36, 4, 1, 0, END_LONG, 0, 0},
    /* walls and edges: the dam break L deep, T <= 3 (n = 72: 746k particles, beyond the time
     * budget) */
    {"edges_n%d_it%d", CASE_DAM, R18 | R36, 4, 0, 1, END_EDGES, 0, 0},
    {"stab_n%d_s%d_it%d", CASE_STAB, R18 | R36, 0, 0, 0, END_LONG, 1, 0},
};

/* The per-method suite (`--solver`): PBF's iteration sweep has no counterpart (the SPH solvers
 * stop at their tolerance, which keeps its default). */
static const case_row METHOD_CASES[] = {
    {"%s_hydro_n%d", CASE_HYDRO, R18 | R36, 4, 0, 0, END_METHOD_HYDRO, 0, 0},
    {"%s_dam_n%d_vort0", CASE_DAM, R18 | R36, 4, 1, 0, END_LONG, 0, 0},
    {"%s_stab_n%d_s%d", CASE_STAB, R18, 4, 0, 0, END_LONG, 2, 1},
};

const int RES[3] = {N_COARSE, N_MEDIUM, N_FINE};
const int ITERS[4] = {2, 4, 8, 16};
const int SUBSTEPS[4] = {1, 2, 4, 8};
const int STAB_ITERS[4] = {1, 2, 4, 8};
int method_order(int *out) {
    static const int first[] = {PBF_SOLVER_PBF, PBF_SOLVER_WCSPH, PBF_SOLVER_PCISPH,
                                PBF_SOLVER_IISPH, PBF_SOLVER_DFSPH};
    const int nfirst = (int)(sizeof first / sizeof first[0]);
    int n = 0;
    for (int k = 0; k < nfirst; ++k) out[n++] = first[k];
    size_t ns = 0;
    const pbf_solver_info *s = pbf_solvers(&ns);
    for (size_t i = 0; i < ns && n < METHOD_MAX; ++i) {
        int seen = 0;
        for (int k = 0; k < nfirst; ++k) seen |= (int)s[i].kind == first[k];
        if (!seen) out[n++] = (int)s[i].kind;
    }
    return n;
}

static double end_time(case_end e, int n, int fast) {
    switch (e) {
    case END_HYDRO: return HYDRO_T_END;
    case END_LONG: return LONG_T_END;
    case END_DAM: return DAM_T_END / t_scale();
    case END_DAM_OR_LONG: return n != N_FINE && !fast ? LONG_T_END : DAM_T_END / t_scale();
    case END_EDGES: return KO_T_MAX / t_scale();
    case END_METHOD_HYDRO: break;
    }
    return METHOD_HYDRO_T_END;
}

/* One case of row w at resolution n; solver >= 0: a case of METHOD_CASES for that method. */
static void add_spec(spec *v, int *count, const char *name, const case_row *w, int n, int it,
                     int substeps_stab, double t_end, int fast, int solver) {
    spec *s = &v[(*count)++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->kind = w->kind;
    s->n = n;
    s->iterations = it;
    s->vort_off = w->vort_off;
    s->fast = fast;
    if (w->kind == CASE_STAB) {
        s->fps = STAB_FPS;
        s->substeps = substeps_stab;
    } else {
        s->fps = FRAME_FPS;
        s->substeps = n / 9;
    }
    s->frames = (int)ceil(t_end * s->fps - 1e-9);
    s->deep = w->deep;
    if (solver >= 0) {
        s->solver = solver;
        s->cfl_off = w->grid == 2;
    }
    /* the envelope's steps as given, but in the shipped scenes' cell */
    if (w->grid == 1 && !(substeps_stab == 4 && it == 4)) s->cfl_off = 1;
}

/* The cases of row w at resolution n (solver: the method of METHOD_CASES, else -1). */
static void add_row(spec *v, int *c, const case_row *w, int n, int fast, int solver) {
    const char *mn = solver >= 0 ? method_name(solver) : NULL;
    const double tend = end_time(w->end, n, fast);
    const int ci = !w->full_only && n == N_COARSE;
    char name[sizeof v->name];
    if (w->grid == 0) {
        if (mn)
            snprintf(name, sizeof name, w->name, mn, n);
        else
            snprintf(name, sizeof name, w->name, n, w->iterations);
        add_spec(v, c, name, w, n, w->iterations, 0, tend, ci, solver);
        return;
    }
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < (w->grid == 1 ? 4 : 1); ++b) {
            int it = w->grid == 1 ? STAB_ITERS[b] : w->iterations;
            if (w->grid == 1 && fast && !(SUBSTEPS[a] == 4 && it == 4)) continue; /* the default */
            if (mn)
                snprintf(name, sizeof name, w->name, mn, n, SUBSTEPS[a]);
            else
                snprintf(name, sizeof name, w->name, n, SUBSTEPS[a], it);
            add_spec(v, c, name, w, n, it, SUBSTEPS[a], tend, ci, solver);
        }
}

static int row_runs(const case_row *w, int n, int fast) {
    int bit = n == N_COARSE ? R18 : n == N_MEDIUM ? R36 : R72;
    return (w->res & bit) && !(fast && w->full_only);
}

/* fast: the CI subset at one resolution (only_n; N_COARSE for --fast) */
int make_specs(spec *v, int fast, int only_n) {
    int c = 0;
    for (int k = 0; k < 3; ++k) {
        int n = RES[k];
        if (fast && n != only_n) continue;
        for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; ++i)
            if (row_runs(&CASES[i], n, fast)) add_row(v, &c, &CASES[i], n, fast, -1);
    }
    return c;
}

/* The per-method suite: n = 18 and 36 (--fast: n = 18) for each solver. */
int make_method_specs(spec *v, const int *solvers, int ns, int fast) {
    int c = 0;
    for (int k = 0; k < ns; ++k)
        for (int r = 0; r < (fast ? 1 : 2); ++r)
            for (size_t i = 0; i < sizeof METHOD_CASES / sizeof METHOD_CASES[0]; ++i)
                if (row_runs(&METHOD_CASES[i], RES[r], fast))
                    add_row(v, &c, &METHOD_CASES[i], RES[r], fast, solvers[k]);
    return c;
}

int find_spec(const spec *v, int count, const char *name) {
    for (int i = 0; i < count; ++i)
        if (strcmp(v[i].name, name) == 0) return i;
    return -1;
}

/* The result of a case by name, NULL if it was not run or failed. */
const sim_result *get(const run_set *rs, const char *fmt, int a, int b) {
    char name[64];
    snprintf(name, sizeof name, fmt, a, b);
    int i = find_spec(rs->specs, rs->count, name);
    if (i < 0 || !rs->res[i].h.ok) return NULL;
    return &rs->res[i];
}

int write_scenes(const char *dir, const spec *specs, int count) {
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
        else if (sp->cfl_off)
            snprintf(how, sizeof how, "%d iterations without CFL substeps", sp->iterations);
        snprintf(desc, sizeof desc,
                 "pbf validate case %s: %s, %d particles across L = 0.146 m, %s%s%s", sp->name,
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

/* ---- the methods (`--solver`) ------------------------------------------------------------ */

const char *method_name(int solver) {
    size_t n = 0;
    const pbf_solver_info *s = pbf_solvers(&n);
    for (size_t i = 0; i < n; ++i)
        if ((int)s[i].kind == solver) return s[i].name;
    return "?";
}

const char *method_title(int solver) {
    size_t n = 0;
    const pbf_solver_info *s = pbf_solvers(&n);
    for (size_t i = 0; i < n; ++i)
        if ((int)s[i].kind == solver) return s[i].title;
    return "?";
}

/* A key of the solver's own table named "<solver>_<what>" (its tolerance, CFL number, state
 * equation), NULL if it has none: the suite asks the methods by their keys. */
static const pbf_param_info *method_key(int solver, const char *what) {
    size_t n = 0;
    const pbf_param_info *t = pbf_solver_params((pbf_solver_kind)solver, &n);
    char key[64];
    snprintf(key, sizeof key, "%s_%s", method_name(solver), what);
    return t ? pbf_param_find(t, n, key) : NULL;
}

/* The spec's solver into a world definition; substeps off where the solver allows it (its
 * <solver>_cfl and <solver>_gravity_cfl keys take 0). */
static void apply_method(pbf_world_def *d, const spec *sp) {
    d->solver = (pbf_solver_kind)sp->solver;
    if (!sp->cfl_off) return;
    static const char *const keys[] = {"cfl", "gravity_cfl"}; /* (PBF has both) */
    for (int k = 0; k < 2; ++k) {
        const pbf_param_info *cfl = method_key(sp->solver, keys[k]);
        if (cfl && pbf_param_check_number(cfl, 0.0, NULL, NULL) == PBF_OK)
            pbf_param_set_number(cfl, d, 0, 0.0, NULL, NULL);
    }
}

/* The density tolerance of the solver's solve (%, its <solver>_tolerance key's default), NAN for
 * those without one (PBF's fixed iterations, the state-equation methods). */
double method_tolerance(int solver) {
    if (solver == PBF_SOLVER_PBF) return NAN; /* (its tolerance is off by default) */
    const pbf_param_info *p = method_key(solver, "tolerance");
    return p ? p->def : NAN;
}

/* The compression a state-equation method (<solver>_stiffness B and <solver>_exponent gamma, 1
 * when it has none: the linear equation) predicts for the column, twice its mean
 * rho0 g H0 / (2 B gamma) (linearised, H0 = 2 L), percent; NAN for the others. */
double method_state_bound(int solver) {
    const pbf_param_info *b = method_key(solver, "stiffness"), *e = method_key(solver, "exponent");
    if (!b || isfinite(method_tolerance(solver))) return NAN;
    const pbf_world_def d = pbf_default_world_def();
    return 2.0 * 100.0 * d.rest_density * GRAVITY * (2.0 * KO_L) /
           (2.0 * b->def * (e ? e->def : 1.0));
}

/* The CI bound on the settled average density error of the column (%): METHOD_TOL_FACTOR x the
 * tolerance for a solve stopped at one; a state-equation method (WCSPH, SESPH): twice the mean
 * compression its equation predicts (method_state_bound); PBF: its suite's. */
double method_density_bound(int solver) {
    if (solver == PBF_SOLVER_PBF) return METHOD_PBF_BOUND;
    const double state = method_state_bound(solver);
    if (isfinite(state)) return state;
    return METHOD_TOL_FACTOR * method_tolerance(solver);
}

const sim_result *get_method(const run_set *rs, int solver, const char *fmt, int a, int b) {
    char name[64], full[80];
    snprintf(name, sizeof name, fmt, a, b);
    snprintf(full, sizeof full, "%s_%s", method_name(solver), name);
    int i = find_spec(rs->specs, rs->count, full);
    if (i < 0 || !rs->res[i].h.ok) return NULL;
    return &rs->res[i];
}
