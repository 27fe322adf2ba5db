/*
 * The stage runner: one step of the world's method as its table of named stages (the method's
 * descriptor, src/solvers/<name>/<name>.c), run by the world's backend.
 *
 * An iterative solve is a block of stages with the same `loop`: its first stage measures the
 * error (w->solve_error); the block repeats until the error is at most the tolerance after at
 * least the minimum number of iterations, or the maximum is reached (the method's bounds). A
 * tolerance of 0 runs a fixed count of iterations (PBF's solver_iterations), exactly as a plain
 * loop does.
 *
 * Stages marked `warm` belong to a warm start (the method's warm_start > 0): the solve starts
 * from a fraction of the previous substep's solution, kept per particle (the registry's WARM
 * rows), and these stages apply it before the first iteration; a method whose first_warm is on
 * warm-starts its divergence solve inside the first iteration instead, so that solve's warm
 * stages are skipped.
 *
 * A method with a CFL rule (substep_dt) splits a step into substeps; the step's dt stays what
 * the caller asked for, so frames and outputs keep their times.
 *
 * A stage's name is its row's: the guard's "first stage that produced a non-finite value" names
 * it, and its timing slot says where the timings' breakdown (pbf_world_timings, `pbf bench`)
 * counts it.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

const pbf_stage_desc *pbf_stage_table(pbf_solver_kind solver, int *count) {
    const pbf_solver *m = pbf_solver_of(solver);
    if (!m) m = pbf_solver_all(NULL)[0]; /* (a definition that passed validation has one) */
    if (count) *count = m->nstages;
    return m->stages;
}

float pbf_warm_start(const pbf_world_def *def) {
    const pbf_solver *m = pbf_solver_of(def->solver);
    return m && m->warm_start ? m->warm_start(def) : 0.0f;
}

float pbf_first_warm(const pbf_world_def *def) {
    const pbf_solver *m = pbf_solver_of(def->solver);
    return m && m->first_warm ? m->first_warm(def) : 0.0f;
}

static pbf_solve_bounds bounds(const pbf_world *w, int loop) {
    const pbf_solver *m = pbf_world_solver(w);
    return m->bounds ? m->bounds(&w->def, loop) : (pbf_solve_bounds){0, 1, 0.0f};
}

/* Substeps of a step of dt: the solver's CFL condition, from the largest speed of the current
 * state (its statistics) plus what gravity adds over the step. */
static int substeps(const pbf_world *w, float dt) {
    const pbf_world_def *d = &w->def;
    double g = sqrt((double)d->gravity.x * d->gravity.x + (double)d->gravity.y * d->gravity.y +
                    (double)d->gravity.z * d->gravity.z);
    double v = w->stats.max_speed + g * dt;
    if (!isfinite(v)) v = 0.0;
    /* the method's CFL condition: its longest substep at that speed */
    const pbf_solver *m = pbf_world_solver(w);
    const double limit = m->substep_dt ? m->substep_dt(d, w->k.h, v) : 0.0;
    if (!(limit > 0.0) || dt <= limit) return 1;
    double n = ceil(dt / limit);
    return n > 10000.0 ? 10000 : (int)n;
}

/* The time since *t0 goes to stage s (with per-stage timing: see pbf_world_set_stage_timing). */
static void lap(pbf_world *w, const pbf_stage_desc *s, double *t0) {
    if (!w->stage_timing) return;
    w->backend->sync(w);
    double t1 = omp_get_wtime();
    *(double *)((char *)&w->timings + s->timing) += t1 - *t0;
    *t0 = t1;
}

/* Records the first stage of the step that produced a non-finite value (CPU: at once, with the
 * particle's start-of-step position; its index is followed through the sort by id). */
static void note_bad(pbf_world *w, const pbf_stage_desc *s, int first, const char **bad) {
    if (first == INT_MAX || *bad) return;
    *bad = s->name;
    w->bad.index = first;
    w->bad.id = w->id[first];
    w->bad.position = (pbf_vec3){w->px[first], w->py[first], w->pz[first]};
}

static void run_one(pbf_world *w, const pbf_stage_desc *sd, const pbf_step_ctx *ctx, double *t0,
                    const char **bad) {
    note_bad(w, sd, w->backend->run_stage(w, sd, ctx), bad);
    if ((sd->flags & PBF_STAGE_SORTS) && *bad) /* the sort moved the particles */
        for (int i = 0; i < w->count; ++i)
            if (w->id[i] == w->bad.id) w->bad.index = i;
    if (w->hooks) w->hooks->after_stage(w, sd, w->hooks->user); /* may make it global */
    if (sd->measures == PBF_SOLVE_DENSITY) w->solve.error = w->solve_error;
    if (sd->measures == PBF_SOLVE_DIVERGENCE) w->solve.divergence_error = w->solve_error;
    lap(w, sd, t0);
}

/* Does the warm start's stage s run: the solver's warm start is on and the solve it starts (the
 * next block of iterations) runs at least one iteration? DFSPH's divergence solve has none with
 * dfsph_divergence_warm_start, which warm-starts it within its first iteration. */
static int warm_runs(const pbf_world *w, const pbf_stage_desc *st, int s, int n) {
    if (!(pbf_warm_start(&w->def) > 0.0f)) return 0;
    for (int k = s; k < n; ++k)
        if (st[k].loop) {
            if (st[k].loop == PBF_SOLVE_DIVERGENCE && pbf_first_warm(&w->def) > 0.0f)
                return 0;
            return bounds(w, st[k].loop).max > 0;
        }
    return 0;
}

/* One substep of dt: the solver's stages up to the statistics. */
static void substep(pbf_world *w, const pbf_stage_desc *st, int n, float dt, double *t0,
                    const char **bad) {
    const pbf_step_ctx ctx = {dt, w->def.cfl * w->k.h / dt, 0, 0};
    for (int s = 0; s < n && !(st[s].flags & PBF_STAGE_STATS); ++s) {
        if (st[s].warm && !warm_runs(w, st, s, n)) continue;
        if (!st[s].loop) {
            run_one(w, &st[s], &ctx, t0, bad);
            continue;
        }
        /* an iterative solve: the block of stages with this loop, its first stage measures */
        const int loop = st[s].loop;
        int last = s;
        while (last + 1 < n && st[last + 1].loop == loop) ++last;
        const pbf_solve_bounds b = bounds(w, loop);
        pbf_step_ctx measure = ctx; /* the stop needs the measured error now */
        measure.need_error = b.tol > 0.0f;
        int it = 0;
        pbf_step_ctx iter = ctx;
        for (;;) {
            measure.iteration = iter.iteration = it;
            if (b.tol > 0.0f || it < b.max) run_one(w, &st[s], &measure, t0, bad);
            const double err = loop == PBF_SOLVE_DIVERGENCE ? w->solve.divergence_error
                                                            : w->solve.error;
            if (b.tol > 0.0f ? (it >= b.max || (it >= b.min && err <= b.tol)) : it >= b.max)
                break;
            for (int k = s + 1; k <= last; ++k) run_one(w, &st[k], &iter, t0, bad);
            ++it;
        }
        if (loop == PBF_SOLVE_DIVERGENCE)
            w->solve.divergence_iterations += it;
        else
            w->solve.iterations += it;
        s = last;
    }
}

void pbf_run_step(pbf_world *w, float dt) {
    const pbf_backend_ops *be = w->backend;
    int nst = 0;
    const pbf_stage_desc *st = pbf_stage_table(w->def.solver, &nst);
    const char *bad = NULL;
    w->bad.index = -1;
    w->bad.id = 0;
    w->bad.position = (pbf_vec3){0, 0, 0};
    memset(&w->solve, 0, sizeof w->solve);
    double t0 = omp_get_wtime(), start = t0;
    const double t_start = w->time;
    /* distributed (hooks): every process runs every stage, its hooks are collective */
    const int active = w->count > 0 || w->hooks;
    const int n = active ? substeps(w, dt) : 1;
    const float sub = n > 1 ? (float)((double)dt / n) : dt;
    w->solve.substeps = n;
    for (int k = 0; k < n; ++k) {
        const double t_end = k + 1 == n ? t_start + dt : t_start + (double)sub * (k + 1);
        pbf_boxes_update(w, t_end);
        be->boxes_changed(w);
        if (active) substep(w, st, nst, sub, &t0, &bad);
        w->time = t_end;
    }
    w->steps += 1;
    /* (distributed: also on a process that holds no particle now, whose device counted this
     * step's speed-limit cuts before its particles left, and ends its step bookkeeping) */
    if (be->finish_step && (w->count > 0 || w->hooks)) {
        pbf_bad_particle dev_bad;
        const int row = be->finish_step(w, &dev_bad);
        if (!bad && row >= 0 && row < nst) {
            bad = st[row].name;
            w->bad = dev_bad;
        }
    }
    pbf_update_stats(w); /* waits for the device: the step is complete */
    lap(w, &st[nst - 1], &t0);
    if (!w->stage_timing) t0 = omp_get_wtime();
    w->timings.total += t0 - start;
    w->timings.steps += 1;
    w->stats.bad_stage = bad;
}

void pbf_update_stats(pbf_world *w) {
    const pbf_step_ctx ctx = {0.0f, 0.0f, 0, 0};
    int nst = 0;
    const pbf_stage_desc *st = pbf_stage_table(w->def.solver, &nst);
    w->backend->run_stage(w, &st[nst - 1], &ctx); /* the table ends with the statistics */
    w->stats.time = w->time;
    w->stats.steps = w->steps;
    if (!w->hooks) w->stats.particles = w->count; /* distributed: the global count */
    w->stats.substeps = w->solve.substeps;
    w->stats.iterations = w->solve.iterations;
    w->stats.solver_error = w->solve.error;
    w->stats.divergence_iterations = w->solve.divergence_iterations;
    w->stats.divergence_error = w->solve.divergence_error;
}

void pbf_refresh(pbf_world *w) {
    if (w->count > 0) w->backend->refresh(w);
}

void pbf_sync_host(const pbf_world *w) {
    if (!w || !w->host_stale) return;
    /* the host arrays are a cache of the device state: refreshing them does not change the
     * world's value, so views taken from a const world may do it (the world is never an object
     * defined const: it is allocated by pbf_world_create) */
    pbf_world *mw = (pbf_world *)w;
    if (mw->backend->download(mw, NULL) == PBF_OK) mw->host_stale = 0;
}

void pbf_stats_accumulate(double acc[PBF_STATS_PARTIALS], const double v[PBF_STATS_PARTIALS]) {
    acc[0] += v[0];
    if (v[1] > acc[1]) acc[1] = v[1];
    if (v[2] > acc[2]) acc[2] = v[2];
    acc[3] += v[3];
    acc[4] += v[4];
}

void pbf_stats_finish(pbf_world *w, const double acc[PBF_STATS_PARTIALS], int lost) {
    int n = w->count;
    double global[PBF_STATS_PARTIALS] = {0};
    double clamps = (double)w->solve.speed_clamps;
    if (w->hooks && w->hooks->reduce_stats) { /* distributed: over every process */
        if (acc) memcpy(global, acc, sizeof global);
        double count = n;
        w->hooks->reduce_stats(w, global, &count, &clamps, w->hooks->user);
        n = (int)count;
        acc = global;
    }
    pbf_stats s;
    memset(&s, 0, sizeof s);
    s.time = w->time;
    s.steps = w->steps;
    s.particles = n;
    if (lost) {
        s.nonfinite = n;
    } else if (n > 0 && acc) {
        s.density_error_avg = 100.0 * acc[0] / n;
        s.density_error_max = 100.0 * acc[1];
        s.max_speed = sqrt(acc[2]);
        s.nonfinite = (int)acc[3];
        s.escaped = (int)acc[4];
        s.speed_clamps = (int64_t)clamps;
    }
    w->stats = s;
}
