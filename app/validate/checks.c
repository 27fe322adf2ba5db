/* `pbf validate`: the targets and the checks of CI, one row each (CHECKS: what is measured, at
 * which resolutions, its target and its CI tolerance), their two verdicts, the lines printed on
 * stderr and DIR/checks.json; the checks of each method (`--solver`). */
#define _POSIX_C_SOURCE 200809L

#include "validate.h"
#include "validate_internal.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "pbf_git_state.h" /* PBF_GIT_COMMIT, PBF_GIT_DIRTY: written at every build */
#include "util.h"

/* v meets `bound` (a target or a CI tolerance) in the direction ge; a value that is not a
 * finite number (not measured, or a failed run) does not. */
int within(double v, double bound, int ge) {
    if (!isfinite(v)) return 0;
    return ge ? v >= bound - 1e-12 : v <= bound + 1e-12;
}

int passes(const check *c, double v, double bound) {
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

/* "≤ 0.5 %", "≥ 1 %", or "yes" for a yes/no check (unit ""). */
const char *fmt_bound(char *buf, size_t size, double bound, const char *unit, int ge) {
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
const char *stab_failure(int fail, int sentence) {
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

/* ---- the check rows ------------------------------------------------------------------------ */

/* The results of the 4-iteration runs at resolution RES[j] (NULL: not run). */
static const sim_result *hydro4(const run_set *rs, int j) {
    return get(rs, "hydro_n%d_it%d", RES[j], 4);
}
static const sim_result *dam4(const run_set *rs, int j) {
    return get(rs, "dam_n%d_it%d", RES[j], 4);
}

static double v_set_avg(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    return r ? hydro_summary(r).set_avg : NAN;
}
static double v_set_max(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    return r ? hydro_summary(r).set_max : NAN;
}
static double v_run_avg(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    return r ? hydro_summary(r).run_avg : NAN;
}
static double v_run_max(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    return r ? hydro_summary(r).run_max : NAN;
}
static double v_surface(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    return r ? fabs(hydro_summary(r).surface_err) : NAN;
}
static double v_vmax(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    if (!r) return NAN;
    hydro_sum hs = hydro_summary(r);
    return 100.0 * hs.set_vmax / hs.vref;
}
static double v_vmean(const run_set *rs, int j) {
    const sim_result *r = hydro4(rs, j);
    if (!r) return NAN;
    hydro_sum hs = hydro_summary(r);
    return 100.0 * hs.set_vmean / hs.vref;
}
static double v_front_ko(const run_set *rs, int j) {
    const sim_result *r = dam4(rs, j);
    double e = NAN;
    if (r) best_shift(r, SHIFT_MAX, &e);
    return e;
}
static double v_front_mm2(const run_set *rs, int j) {
    const sim_result *r = dam4(rs, j);
    double e = NAN;
    if (r) best_shift_vs(r, &EXP_MM2, SHIFT_MAX, &e);
    return e;
}
static double v_ritter(const run_set *rs, int j) {
    const sim_result *r = dam4(rs, j);
    return r ? ritter_lead(r) : NAN;
}
static double v_rise(const run_set *rs, int j) {
    const sim_result *r = dam4(rs, j);
    double at;
    return r ? top_rise(r, &at, NULL) : NAN;
}
static double v_climb(const run_set *rs, int j) {
    const sim_result *r = get(rs, "edges_n%d_it%d", RES[j], 4);
    double at;
    return r ? climb_max(r, &at) : NAN;
}
static double energy_inc(const run_set *rs, int j, double from_t) {
    const sim_result *r = get(rs, "dam_n%d_it%d_vort0", RES[j], 4);
    if (!r) return NAN;
    double inc, inc_t, fin;
    energy_summary(r, from_t, &inc, &inc_t, &fin);
    return inc;
}
static double v_energy(const run_set *rs, int j) {
    return energy_inc(rs, j, 0.0);
}
static double v_energy_after(const run_set *rs, int j) {
    return energy_inc(rs, j, STARTUP_T);
}
static double v_iterations(const run_set *rs, int j) {
    return iter_monotone(rs, RES[j]);
}
static double v_stable(const run_set *rs, int j) {
    return stab_ok(rs, RES[j], 4, 4);
}
/* the convergence checks: at n = 72 only, with all three resolutions run */
static double v_conv_front(const run_set *rs, int j) {
    const sim_result *a0 = dam4(rs, 0), *a1 = dam4(rs, 1), *a2 = dam4(rs, 2);
    if (j != 2 || !a0 || !a1 || !a2) return NAN;
    return front_distance(a2, a1) < front_distance(a1, a0);
}
static double v_conv_hydro(const run_set *rs, int j) {
    const sim_result *b0 = hydro4(rs, 0), *b1 = hydro4(rs, 1), *b2 = hydro4(rs, 2);
    if (j != 2 || !b0 || !b1 || !b2) return NAN;
    double e0 = hydro_summary(b0).set_avg, e1 = hydro_summary(b1).set_avg,
           e2 = hydro_summary(b2).set_avg;
    return fabs(e2 - e1) < fabs(e1 - e0);
}

/* A check: `what` (a printf format of p[0], p[1]), its unit, target and direction, its CI bound
 * on the n = 18 value (gate; NAN: not checked by CI; the target, or looser: note says why) and
 * its value at resolution RES[j]. */
typedef struct check_row {
    const char *what;
    double p[2];
    const char *unit;
    double target;
    int ge;
    double gate;
    const char *note;
    double (*value)(const run_set *rs, int j);
} check_row;

/* CI bounds: the target where the full run meets it at n = 18, else a looser bound (set from the
 * full run of docs/validation.md; the notes say why). */
static const check_row CHECKS[] = {
    /* hydrostatic column, 4 iterations */
    {"hydrostatic, settled: average density error ≤ 0.5 %%",
     {0, 0},
     "%",
     0.5,
     0,
     0.5 /* met at n = 18 and 36 with PBF's warm start (lambda_warm_start 0.5) */,
     NULL,
     v_set_avg},
    {"hydrostatic, settled: maximum density error ≤ 3 %%",
     {0, 0},
     "%",
     3.0,
     0,
     3.0,
     NULL,
     v_set_max},
    {"hydrostatic, whole run (every frame after the first step): average density error "
     "≤ 0.5 %% (added: the start-up included)",
     {0, 0},
     "%",
     0.5,
     0,
     1.0,
     "missed: the start-up transient, while the column first compresses, overshoots "
     "the settled error",
     v_run_avg},
    {"hydrostatic, whole run: maximum density error ≤ 3 %% (added: the start-up "
     "included)",
     {0, 0},
     "%",
     3.0,
     0,
     3.0,
     NULL,
     v_run_max},
    {"hydrostatic, settled: free-surface height within 1 %% of the volume's height",
     {0, 0},
     "%",
     1.0,
     0,
     1.0,
     NULL,
     v_surface},
    {"hydrostatic, settled: maximum speed ≤ 1 %% of sqrt(g H0)",
     {0, 0},
     "%",
     1.0,
     0,
     3.0 /* chaotic: 0.2-1.2 % at n = 18 when one parameter's last bit changes */,
     "missed at n = 72, where the mean speed stops falling at about 0.2 % and the "
     "boundaries between the domains into which the lattice recrystallises keep moving; "
     "met at n = 18 and "
     "36 in this slab only: in a 3-D box L deep (`bench/settled_column.py`, n = 18) the "
     "column still moves at 5.7 % after 5 s (mean 0.57 %), as SPlisHSPlasH's does "
     "(6.6 %, mean 0.55 %); and at n = 18 the settled maximum is chaotic, 0.2 to 1.2 % "
     "when the last bit of one parameter changes (CI's gcc, clang and sanitizer builds "
     "agree today, at 0.326 %), so any change of rounding in the solver can move it "
     "(section 1)",
     v_vmax},
    {"hydrostatic, settled: mean speed ≤ 1 %% of sqrt(g H0) (added: the bulk at rest)",
     {0, 0},
     "%",
     1.0,
     0,
     1.0,
     NULL,
     v_vmean},
    /* dam break */
    {"dam break: front within %.0f %% of the experiment for T ≤ 3 with one time shift of "
     "at most 0.2 in T",
     {FRONT_TOL, 0},
     "%",
     FRONT_TOL,
     0,
     FRONT_CI,
     "missed at every resolution (worst at n = 72): the simulated surge runs ahead of "
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
     "at n = 18, 36 and 72 (4.2, 4.4, 4.9 %), four times a smooth bed's coefficient",
     v_front_ko},
    {"dam break: the same against Martin & Moyce (1952), the 2.25-inch column of the "
     "same shape (added: a second experiment)",
     {0, 0},
     "%",
     FRONT_TOL,
     0,
     FRONT_TOL,
     NULL,
     v_front_mm2},
    {"dam break: front never ahead of Ritter's Z = 1 + 2T (largest Z - Ritter after T = 0)",
     {0, 0},
     "Z",
     0.0,
     0,
     0.0,
     NULL,
     v_ritter},
    /* column release */
    {"column release: the top of the liquid at the back wall never rises more than half "
     "a particle radius above its initial height (largest rise for T ≤ %.0f)",
     {RELEASE_T, 0},
     "r",
     RISE_TOL,
     0,
     RISE_TOL,
     NULL,
     v_rise},
    /* walls and edges */
    {"walls and edges: no particle at a side wall or its edges more than %.0f particle "
     "radii above the liquid beside it (dam break L deep, T ≤ %.0f)",
     {CLIMB_TOL, KO_T_MAX},
     "r",
     CLIMB_TOL,
     0,
     CLIMB_TOL,
     NULL,
     v_climb},
    /* energy */
    {"energy, vorticity 0: largest increase of E between frames ≤ %.2g %% of E(0) "
     "(noise level)",
     {ENERGY_NOISE, 0},
     "%",
     ENERGY_NOISE,
     0,
     ENERGY_NOISE,
     NULL,
     v_energy},
    {"energy, vorticity 0: the same after the start-up (t ≥ %.2g s)",
     {STARTUP_T, 0},
     "%",
     ENERGY_NOISE,
     0,
     ENERGY_NOISE,
     NULL,
     v_energy_after},
    /* convergence and stability */
    {"convergence: the dam break's mean density error falls with every doubling of "
     "the iterations (2, 4, 8, 16)",
     {0, 0},
     "",
     1.0,
     1,
     1.0,
     NULL,
     v_iterations},
    {"stability: the dam break at 60 frames/s, 4 substeps, 4 iterations (the shipped "
     "scenes' setting) is stable for 1 s",
     {0, 0},
     "",
     1.0,
     1,
     1.0,
     NULL,
     v_stable},
    {"convergence: the dam-break front changes less from n = 36 to 72 than from 18 to 36 "
     "(largest ΔZ for T ≤ 3)",
     {0, 0},
     "",
     1.0,
     1,
     NAN,
     NULL,
     v_conv_front},
    {"convergence: the settled hydrostatic average density error changes less from "
     "n = 36 to 72 than from 18 to 36",
     {0, 0},
     "",
     1.0,
     1,
     NAN,
     NULL,
     v_conv_hydro},
};

int build_checks(const run_set *rs, check *c) {
    int k = 0;
    for (size_t i = 0; i < sizeof CHECKS / sizeof CHECKS[0] && k < MAX_CHECKS; ++i, ++k) {
        const check_row *w = &CHECKS[i];
        memset(&c[k], 0, sizeof c[k]);
        snprintf(c[k].what, sizeof c[k].what, w->what, w->p[0], w->p[1]);
        c[k].unit = w->unit;
        c[k].target = w->target;
        c[k].ge = w->ge;
        c[k].gate = w->gate;
        c[k].note = w->note;
        for (int j = 0; j < 3; ++j) c[k].v[j] = w->value(rs, j);
        /* a CI bound that the target already meets needs no note: keep notes only where
         * looser */
        if (isfinite(c[k].gate) && c[k].gate == c[k].target) c[k].note = NULL;
    }
    return k;
}

/* Prints the checks of CI: each n = 18 value against its target (met / missed) and, where CI
 * allows more than the target, against that CI tolerance; then a count. Returns the number
 * outside their CI tolerance (CI fails). at_n: the resolution whose values are printed (another
 * than n = 18 with --resolution: printed only, CI checks n = 18). */
int evaluate_checks(const run_set *rs, int print, FILE *f, int at_n) {
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
int write_checks_json(const char *dir, const validate_options *o, const run_set *rs) {
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
            !PBF_GIT_COMMIT[0]   ? "unknown"
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
                have == 0     ? "not run"
                : met == have ? "met"
                : met == 0    ? "missed"
                              : "partly met");
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
const char *fmt_v(char *buf, size_t size, double v, const char *unit) {
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

int method_checks(const method_sum *m, int solver, method_check *c) {
    c[0] = (method_check){"no energy gain: E = kinetic + potential never above E(0) (largest "
                          "E(t) - E(0), dam break, vorticity 0)",
                          "%",
                          m->energy_gain,
                          ENERGY_NOISE,
                          ENERGY_NOISE,
                          NULL};
    /* E may fall and never rise: a gain after an earlier loss (which the check above cannot
     * see) is caught here. The SPH solvers' pressure force is conservative only with a kernel
     * whose gradient is that of the density's (sph_kernel = cubic); with poly6 / spiky PCISPH,
     * IISPH and DFSPH raise E by 0.07 to 0.5 % of E(0) between two frames of the surge. */
    c[3] = (method_check){"energy never rises: largest increase of E between two frames "
                          "(dam break, vorticity 0, from t = 0)",
                          "%",
                          m->energy_inc,
                          ENERGY_NOISE,
                          ENERGY_NOISE,
                          NULL};
    c[1] = (method_check){"column release: the top at the back wall rises at most half a radius",
                          "r",
                          m->rise,
                          RISE_TOL,
                          RISE_TOL,
                          NULL};
    c[2] = (method_check){"hydrostatic, settled: average density error within the method's bound",
                          "%",
                          m->set_avg,
                          method_density_bound(solver),
                          method_density_bound(solver),
                          NULL};
    return METHOD_CHECKS;
}

int method_failures(const run_set *rs, const int *solvers, int ns, int print, FILE *f) {
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
                        !ok   ? "; outside the CI tolerance: FAIL"
                        : met ? ""
                              : "; within the looser CI tolerance");
        }
    }
    return failed;
}
