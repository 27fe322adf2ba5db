/*
 * The stage runner: one step of Position Based Fluids (Macklin & Müller 2013, Algorithm 1) as a
 * table of named stages, run by the world's backend.
 *
 *   predict         v += dt g, |v| <= v_max (CFL), x* = x + dt v                   (lines 1-4)
 *   grid            counting sort by the cell of x*, reorder every sorted field      (lines 5-7)
 *   lambda          rho_i (eq. 2) with the wall, C_i (eq. 1), lambda_i (eq. 11)  \
 *   delta_p         delta p_i with s_corr (eq. 12-14) and the wall term           } iterations
 *   collide         x* += delta p, collision response and friction               /  (lines 8-19)
 *   velocity        v = (x* - x) / dt, |v| <= v_max, omega (eq. 15), rho at x*      (line 21)
 *   vorticity_xsph  vorticity confinement (eq. 16), XSPH (eq. 17), x = x*          (lines 22-23)
 *   stats           statistics of the new state
 *
 * A stage's name is written once, here: the timings (pbf_world_timings, `pbf bench`'s breakdown)
 * and the guard's "first stage that produced a non-finite value" both come from this table.
 */
#include <limits.h>
#include <omp.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

#define TIMING(f) offsetof(pbf_timings, f)

/* clang-format off */
static const pbf_stage_desc stages[PBF_STAGE_COUNT] = {
    {PBF_STAGE_PREDICT,        "predict",        TIMING(predict),  0},
    {PBF_STAGE_GRID,           "grid",           TIMING(grid),     0},
    {PBF_STAGE_LAMBDA,         "lambda",         TIMING(lambda),   1},
    {PBF_STAGE_DELTA_P,        "delta_p",        TIMING(delta_p),  1},
    {PBF_STAGE_COLLIDE,        "collide",        TIMING(collide),  1},
    {PBF_STAGE_VELOCITY,       "velocity",       TIMING(velocity), 0},
    {PBF_STAGE_VORTICITY_XSPH, "vorticity_xsph", TIMING(velocity), 0},
    {PBF_STAGE_STATS,          "stats",          TIMING(stats),    0},
};
/* clang-format on */

const pbf_stage_desc *pbf_stage_table(int *count) {
    if (count) *count = PBF_STAGE_COUNT;
    return stages;
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

void pbf_run_step(pbf_world *w, float dt) {
    const pbf_backend_ops *be = w->backend;
    const pbf_step_ctx ctx = {dt, w->def.cfl * w->k.h / dt};
    const char *bad = NULL;
    w->bad.index = -1;
    w->bad.id = 0;
    w->bad.position = (pbf_vec3){0, 0, 0};
    double t0 = omp_get_wtime(), start = t0;
    pbf_boxes_update(w, w->time + dt);
    be->boxes_changed(w);
    const pbf_world_hooks *hk = w->hooks; /* distributed run: every stage, then its hook */
    if (w->count > 0 || hk) {
        for (int s = 0; s < PBF_STAGE_STATS; ++s) {
            const pbf_stage_desc *sd = &stages[s];
            if (sd->per_iteration) {
                /* the iteration block: every per-iteration stage in table order, repeated */
                int last = s;
                while (last + 1 < PBF_STAGE_STATS && stages[last + 1].per_iteration) ++last;
                for (int it = 0; it < w->def.pbf.solver_iterations; ++it)
                    for (int b = s; b <= last; ++b) {
                        note_bad(w, &stages[b], be->run_stage(w, stages[b].id, &ctx), &bad);
                        if (hk) hk->after_stage(w, stages[b].id, hk->user);
                        lap(w, &stages[b], &t0);
                    }
                s = last;
                continue;
            }
            note_bad(w, sd, be->run_stage(w, sd->id, &ctx), &bad);
            if (sd->id == PBF_STAGE_GRID && bad) /* the sort moved the particles */
                for (int i = 0; i < w->count; ++i)
                    if (w->id[i] == w->bad.id) w->bad.index = i;
            if (hk) hk->after_stage(w, sd->id, hk->user);
            lap(w, sd, &t0);
        }
    }
    w->time += dt;
    w->steps += 1;
    if (be->finish_step && w->count > 0) {
        pbf_bad_particle dev_bad[PBF_STAGE_COUNT];
        be->finish_step(w, dev_bad);
        for (int s = 0; s < PBF_STAGE_COUNT && !bad; ++s)
            if (dev_bad[s].index != INT_MAX) {
                bad = stages[s].name;
                w->bad = dev_bad[s];
            }
    }
    pbf_update_stats(w); /* waits for the device: the step is complete */
    lap(w, &stages[PBF_STAGE_STATS], &t0);
    if (!w->stage_timing) t0 = omp_get_wtime();
    w->timings.total += t0 - start;
    w->timings.steps += 1;
    w->stats.bad_stage = bad;
}

void pbf_update_stats(pbf_world *w) {
    const pbf_step_ctx ctx = {0.0f, 0.0f};
    w->backend->run_stage(w, PBF_STAGE_STATS, &ctx);
    w->stats.time = w->time;
    w->stats.steps = w->steps;
    if (!w->hooks) w->stats.particles = w->count; /* distributed: the global count */
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
    if (w->hooks && w->hooks->reduce_stats) { /* distributed: over every process */
        if (acc) memcpy(global, acc, sizeof global);
        double count = n;
        w->hooks->reduce_stats(w, global, &count, w->hooks->user);
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
    }
    w->stats = s;
}
