/*
 * `pbf validate --solver NAME|all`: the report of the per-method suite,
 * docs/validation_solvers.md, as rows (METHOD_REPORT): template text (validate_template.h), the
 * overview and one table per method.
 *
 * The suite again, for each pressure solver: the hydrostatic column (settled density error, the
 * hydrostatic load against rho0 g d along the depth), the dam break with vorticity confinement
 * off (front against the experiment, energy, column release, wall time per simulated second)
 * and, without --fast, the stability envelope over time steps at n = 18 (frames of 1/60 s split
 * into 1, 2, 4, 8 steps, with the solvers' CFL substeps off where they can be: the step as
 * given). PBF's iteration sweep has no counterpart: the SPH solvers stop at their tolerance,
 * which keeps its default. The PBF suite (no --solver) is unchanged.
 */
#define _POSIX_C_SOURCE 200809L

#include "validate_internal.h"
#include "validate_template.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "pbf_git_state.h" /* PBF_GIT_COMMIT, PBF_GIT_DIRTY: written at every build */

typedef struct mreport_ctx {
    FILE *f;
    const validate_options *o;
    const run_set *rs;
    const int *solvers;
    int ns;
    int nres; /* resolutions run: 1 (--fast, n = 18) or 2 (n = 18, 36) */
    pbf_world_def dd;
    const char *cmd, *build, *dur;
} mreport_ctx;

/* The stability envelope of one method, run by run: "1/60 s ❌ energy +11 % at 0.400 s; ...". */
static void envelope_line(FILE *f, const run_set *rs, int solver, int n) {
    int any = 0;
    for (int a = 0; a < 4; ++a) {
        const sim_result *r = get_method(rs, solver, "stab_n%d_s%d", n, SUBSTEPS[a]);
        if (!r) continue;
        fprintf(f, "%s1/%.0f s ",
                any++ ? "; " : " Stability envelope (n = 18): ", STAB_FPS * SUBSTEPS[a]);
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

static void method_cell(FILE *f, double v, const char *fmt) {
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fprintf(f, " — |");
}

static void sec_overview(const mreport_ctx *x) {
    FILE *f = x->f;
    const run_set *rs = x->rs;
    const int *solvers = x->solvers;
    const int ns = x->ns;
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
}

/* One method: its table, then what bounds it and its envelope. */
static void method_table(const mreport_ctx *x, int sv) {
    FILE *f = x->f;
    const run_set *rs = x->rs;
    const int nres = x->nres;
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
        {"hydrostatic, settled: average density error (%)",
         " %.3f |",
         {m[0].set_avg, m[1].set_avg},
         "≤ %.3g %%",
         c[2].bound},
        {"hydrostatic, settled: largest density error (%)",
         " %.2f |",
         {m[0].set_max, m[1].set_max},
         NULL,
         0},
        {"hydrostatic load against ρ0 g d: slope", " %.4f |", {m[0].slope, m[1].slope}, NULL, 0},
        {"dam break: front error against the experiment, T ≤ 3 (%)",
         " %.1f |",
         {m[0].front_err, m[1].front_err},
         NULL,
         0},
        {"dam break: no energy gain, largest E(t) - E(0) (% of E(0))",
         " %.4f |",
         {m[0].energy_gain, m[1].energy_gain},
         "≤ %.2g %%",
         c[0].bound},
        {"dam break: largest energy increase between two frames (% of E(0))",
         " %.4f |",
         {m[0].energy_inc, m[1].energy_inc},
         "≤ %.2g %%",
         c[3].bound},
        {"column release: largest rise of the top at the wall, T ≤ 2 (r)",
         " %.2f |",
         {m[0].rise, m[1].rise},
         "≤ %.2g r",
         RISE_TOL},
        {"wall time per simulated second, dam break, one thread (s)",
         " %.1f |",
         {m[0].wall_per_s, m[1].wall_per_s},
         NULL,
         0},
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
        fprintf(f, " 1/%.0f s (%d of %d steps stable) |", 1.0 / m[0].max_stable_dt, m[0].stab_ok,
                m[0].stab_runs);
    else
        fprintf(f, " %s |", m[0].stab_runs ? "none stable" : "not run (--fast)");
    fprintf(f, "%s — |\n\n", nres > 1 ? " — |" : "");
    fprintf(f, "Dam break: %d particles at n = 18%s.", m[0].particles,
            nres > 1 ? "" : " (--fast: n = 18 only)");
    if (isfinite(method_state_bound(sv)))
        fprintf(f, " Density bound: twice the mean compression the state equation predicts "
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

static void sec_method_tables(const mreport_ctx *x) {
    for (int k = 0; k < x->ns; ++k) method_table(x, x->solvers[k]);
}

typedef enum row_when { ALWAYS, WHEN_DIRTY, WHEN_CACHED } row_when;

typedef struct mreport_row {
    row_when when;
    const char *text;
    void (*write)(const mreport_ctx *x);
} mreport_row;

/* clang-format off */
#define TEXT(t) {ALWAYS, (t), NULL}
#define TEXT_DIRTY(t) {WHEN_DIRTY, (t), NULL}
#define TEXT_CACHED(t) {WHEN_CACHED, (t), NULL}
#define TABLE(write) {ALWAYS, NULL, (write)}
/* clang-format on */

static const mreport_row METHOD_REPORT[] = {
    TEXT(
        "# Fidelity of pbf's pressure solvers, method by method\n\n"
        "Generated by `{command}` (pbf {version} built from {build}; {run_kind}) in {wall_time} of "
        "wall time, {simulations} simulations, {jobs} at once with {threads} thread{threads_s} "
        "each. "
        "Do not edit by hand: rerun the command. The Position Based Fluids suite (iteration "
        "sweeps, "
        "figures) is [docs/validation.md](validation.md); this report runs its cases for every "
        "method.\n\n"),
    TEXT_DIRTY("**Built from a tree with uncommitted changes** (commit {commit}).\n\n"),
    TEXT_CACHED(
        "**{cached} of these {simulations} results were reused from the cache of an earlier run** "
        "(`--cache {cache}`), so the wall time above does not include them.\n\n"),
    TEXT(
        "Cases (quasi-2D slabs, {depth_layers} particle spacings deep; n particles across L = "
        "0.146 "
        "m; frames of 1/240 s split into n / 9 steps; every parameter at its default unless named; "
        "`{out}/scenes/NAME.json` reproduces each with `pbf run`):\n\n"
        "- **hydrostatic column** (1 s): settled (last quarter) average and largest density error; "
        "the hydrostatic load along the depth, p(d) = g × (mass above) / area at each layer of the "
        "final state against ρ0 g d below the settled surface: the least-squares slope, 1 for a "
        "column at rest density (equilibrium needs dp/dd = ρ g, so the slope is the column's mean "
        "density over ρ0; pbf's API exposes no pressure field, and in a column at rest the "
        "pressure "
        "gradient that moves the particles must balance this load);\n- **dam break** of Koshizuka "
        "& "
        "Oka (1996), vorticity confinement off, 1 s: the largest front error against the "
        "experiment "
        "for T ≤ 3 (one time shift of at most 0.2 in T), the energy E = kinetic + potential: its "
        "largest value above E(0) (no gain: ≤ {energy_noise:%.2g} % of E(0)) and its largest "
        "increase between two frames (≤ {energy_noise:%.2g} %, the noise level: nothing in the "
        "model "
        "adds energy), the largest rise of the top of the liquid at the back wall after the "
        "release "
        "for T ≤ {release_T:%.0f} (particle radii; a released column falls), and the wall time per "
        "simulated second (one thread);\n- **stability envelope** (n = 18, full run only): frames "
        "of "
        "1/60 s split into 1, 2, 4, 8 steps, 1 s; stable = no non-finite value, no escape, average "
        "density error below {stab_density:%.0f} %, no particle's above {stab_guard:%.0f} % (where "
        "`pbf run`'s default `guard_density_error` stops a run) and no energy gain above "
        "{stab_energy:%.0f} % of E(0) at a frame (a run that blows up can keep its densities). The "
        "solvers' CFL substeps are off (`pbf_cfl`, `pbf_gravity_cfl`, `dfsph_cfl`, `pcisph_cfl`, "
        "`iisph_cfl` = 0: the step "
        "as "
        "given); WCSPH's cannot be (its substeps follow the sound speed), so its envelope shows "
        "the "
        "outer step only.\n\n"
        "Solver settings (defaults): PBF {iterations} iterations; WCSPH B = {wcsph_stiffness:%.0f} "
        "Pa, γ = {wcsph_exponent:%.0f}, CFL {wcsph_cfl:%.2g}; PCISPH, IISPH, DFSPH tolerance "
        "{tolerance:%.2g} % (DFSPH's divergence {divergence_tolerance:%.2g} %), their CFL "
        "{sph_cfl:%.2g} (substeps of at most cfl × 2r / v_max). Kernels: PBF poly6 for the density "
        "and spiky for its gradients (Müller et al. 2003, as Macklin & Müller 2013); the SPH "
        "solvers "
        "{sph_kernel}.\n\n"
        "## Overview (n = {n_coarse})\n\n"
        "| method | settled density error avg / max | load slope | front error | energy gain E(t) "
        "- "
        "E(0) | largest increase between frames | release rise | wall s per simulated s | largest "
        "stable step |\n|---|---|---|---|---|---|---|---|---|\n"),
    TABLE(sec_overview),
    TEXT("\n"),
    TABLE(sec_method_tables),
    TEXT("## What CI checks\n\n"
         "`ctest -L validation` runs `pbf validate --solver all --fast` and fails (exit 4) when, "
         "for "
         "any method at n = 18, the energy E(t) exceeds E(0) by more than {energy_noise:%.2g} % of "
         "E(0) or rises between two frames by more than that, the released column's top rises by "
         "more "
         "than {rise_tol:%.2g} r, or the settled average density error exceeds the method's bound "
         "above.\n"),
};

#define MREPORT_VALUES 40
static size_t mreport_values(const mreport_ctx *x, tvalue *v) {
    const tvalue all[] = {
        TV_S("command", x->cmd),
        TV_S("version", PBF_VERSION_STRING),
        TV_S("build", x->build),
        TV_S("run_kind", x->o->fast ? "--fast: n = 18, no envelope" : "full run"),
        TV_S("wall_time", x->dur),
        TV_D("simulations", x->rs->count),
        TV_D("jobs", x->o->jobs),
        TV_D("threads", x->o->threads),
        TV_S("threads_s", x->o->threads == 1 ? "" : "s"),
        TV_S("commit", PBF_GIT_COMMIT),
        TV_D("cached", x->o->cached),
        TV_S("cache", x->o->cache),
        TV_D("depth_layers", DEPTH_LAYERS),
        TV_S("out", x->o->out),
        TV_F("energy_noise", ENERGY_NOISE),
        TV_F("release_T", RELEASE_T),
        TV_F("stab_density", STAB_DENSITY),
        TV_F("stab_guard", stab_guard()),
        TV_F("stab_energy", STAB_ENERGY),
        TV_D("iterations", x->dd.pbf.solver_iterations),
        TV_F("wcsph_stiffness", x->dd.wcsph.stiffness),
        TV_F("wcsph_exponent", x->dd.wcsph.exponent),
        TV_F("wcsph_cfl", x->dd.wcsph.cfl),
        TV_F("tolerance", x->dd.pcisph.tolerance),
        TV_F("divergence_tolerance", x->dd.dfsph.divergence_tolerance),
        TV_F("sph_cfl", x->dd.dfsph.cfl),
        TV_S("sph_kernel",
             x->dd.sph_kernel == PBF_SPH_KERNEL_CUBIC
                 ? "the cubic spline (Monaghan 1992) for both, so that their pressure force is the "
                   "gradient of the density they measure (`sph_kernel` = cubic)"
                 : "poly6 / spiky, as PBF (`sph_kernel` = poly6_spiky)"),
        TV_F("rise_tol", RISE_TOL),
        TV_D("n_coarse", N_COARSE),
    };
    memcpy(v, all, sizeof all);
    return sizeof all / sizeof all[0];
}

int write_method_report(const validate_options *o, const char *report, const run_set *rs,
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
    mreport_ctx x = {f,   o,     rs, solvers, ns, o->fast ? 1 : 2, pbf_default_world_def(),
                     cmd, build, dur};
    tvalue v[MREPORT_VALUES];
    size_t nv = mreport_values(&x, v);
    for (size_t i = 0; i < sizeof METHOD_REPORT / sizeof METHOD_REPORT[0]; ++i) {
        const mreport_row *w = &METHOD_REPORT[i];
        if ((w->when == WHEN_DIRTY && PBF_GIT_DIRTY != 1) ||
            (w->when == WHEN_CACHED && o->cached <= 0))
            continue;
        if (w->text) template_write(f, w->text, v, nv);
        if (w->write) w->write(&x);
    }
    pbf_error err;
    if (pbfapp_commit_file(f, tmp, report, &err) != PBF_OK) {
        fprintf(stderr, "pbf validate: %s\n", err.message);
        return 0;
    }
    return 1;
}
