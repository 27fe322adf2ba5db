/* Instability guard with adaptive retries, and the stop signals of `pbf run`. */
#define _XOPEN_SOURCE 700

#include "run/guard.h"
#include "io/particle_fields.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pbfapp_guard_init(pbfapp_guard *g, double density_limit, int adaptive) {
    memset(g, 0, sizeof *g);
    g->density_limit = density_limit;
    g->adaptive = adaptive;
}

void pbfapp_guard_free(pbfapp_guard *g) {
    if (!g) return;
    free(g->buf);
    g->buf = NULL;
    g->cap = 0;
}

/* Copies the world's state, every column of the public field table, into the guard (for a retry
 * from the frame's start). */
static pbf_status save_start(pbfapp_guard *g, const pbf_world *w, pbf_snapshot *out,
                             pbf_error *err) {
    pbf_snapshot s = pbf_world_snapshot(w);
    size_t n = s.count > 0 ? (size_t)s.count : 0;
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    const char *fail = NULL;
    if (ncol > PBFAPP_MAX_COLUMNS) fail = "too many particle columns";
    const size_t rows = ncol + (s.lambda ? 1 : 0); /* the columns, PBF's multipliers */
    if (!fail && n * rows > g->cap) {
        uint32_t *b = realloc(g->buf, n * rows * sizeof *b);
        if (!b)
            fail = "out of memory";
        else {
            g->buf = b;
            g->cap = n * rows;
        }
    }
    pbf_particles view = pbfapp_snapshot_particles(&s);
    *out = s;
    out->lambda = NULL;
    if (s.lambda && !fail) {
        float *dst = (float *)(void *)(g->buf + ncol * n);
        if (n) memcpy(dst, s.lambda, n * sizeof *dst);
        out->lambda = dst;
    }
    for (size_t j = 0; j < ncol && !fail; ++j) {
        uint32_t *dst = g->buf + j * n;
        const void *src = pbfapp_column_data(&view, &col[j]);
        if (n && src) memcpy(dst, src, n * PBFAPP_FIELD_ELEMENT_BYTES);
        if (!pbfapp_snapshot_set_column(out, &col[j], dst))
            fail = "a field without a snapshot member";
    }
    if (fail) {
        pbf_status st = strcmp(fail, "out of memory") == 0 ? PBF_ERR_OUT_OF_MEMORY : PBF_ERR_LIMIT;
        if (err) {
            err->status = st;
            snprintf(err->message, sizeof err->message, "%s copying %zu particles for --adaptive",
                     fail, n);
        }
        return st;
    }
    return PBF_OK;
}

pbf_status pbfapp_guard_frame(pbfapp_guard *g, pbf_world *world, int frame, double fps,
                              int substeps, pbfapp_progress *progress, pbfapp_frame_report *r,
                              pbf_error *err) {
    memset(r, 0, sizeof *r);
    r->diag.ok = 1;
    r->diag.index = -1;
    r->factor = 1;
    pbf_snapshot start;
    memset(&start, 0, sizeof start);
    if (g->adaptive) {
        pbf_status st = save_start(g, world, &start, err);
        if (st != PBF_OK) return st;
    }
    for (int factor = 1;; factor *= 2) {
        int n = substeps * factor;
        const float dt = (float)(1.0 / (fps * (double)n));
        r->factor = factor;
        r->substeps = n;
        r->diag.ok = 1;
        r->speed_clamps = 0;
        for (int s = 0; s < n; ++s) {
            double t0 = pbfapp_now();
            pbf_status st = pbf_world_step(world, dt, err);
            r->step_seconds += pbfapp_now() - t0;
            if (st != PBF_OK) return st;
            ++r->steps;
            r->speed_clamps += pbf_world_stats(world).speed_clamps;
            pbf_diagnosis d = pbf_world_diagnose(world, g->density_limit);
            if (!d.ok) {
                r->diag = d;
                r->step = pbf_world_stats(world).steps;
                r->substep = s + 1;
                break;
            }
        }
        if (r->diag.ok) return PBF_OK;
        if (!g->adaptive || factor * 2 > PBFAPP_ADAPTIVE_MAX_FACTOR) return PBF_OK;
        char what[640];
        pbfapp_guard_describe(g, r, frame, what, sizeof what);
        if (progress) pbfapp_progress_finish(progress);
        fprintf(stderr,
                "pbf: %s\npbf: --adaptive: retrying frame %d from its start with %dx substeps "
                "(%d steps of %.4g ms)\n",
                what, frame, factor * 2, substeps * factor * 2,
                1000.0 / (fps * (double)(substeps * factor * 2)));
        fflush(stderr);
        pbf_status st = pbf_world_restore(world, &start, err);
        if (st != PBF_OK) return st;
    }
}

int pbfapp_guard_speed_warning(pbfapp_guard *g, const pbf_world *world, int frame,
                               const pbfapp_frame_report *r, double dt, char *buf, size_t size) {
    pbf_stats st = pbf_world_stats(world);
    if (g->speed_warned || st.particles <= 0 ||
        !((double)r->speed_clamps > PBFAPP_SPEED_CLAMP_FRACTION * st.particles))
        return 0;
    g->speed_warned = 1;
    pbf_derived dv = pbf_world_derived(world);
    const double cfl = dv.h > 0.0f ? (double)dv.max_speed / dv.h : 0.0;
    /* the limit holds per substep: a step the method's CFL rule split has a higher one */
    const int split = st.substeps > 1 ? st.substeps : 1;
    char substeps[80] = "";
    if (split > 1) {
        dt /= split;
        snprintf(substeps, sizeof substeps, " (the last step split into %d substeps)", split);
    }
    snprintf(buf, size,
             "frame %d: the speed limit cut %lld particle velocities (%.2g %% of the particles; "
             "a particle counts once per velocity update that hit it): |v| <= cfl * h / dt = "
             "%.3g m/s with cfl = %.3g, h = %.4g m, dt = %.4g s%s, so those particles moved slower "
             "than the simulation made them. Raise the limit with --set cfl=%.3g (the scene key "
             "\"cfl\"), or take shorter steps with more substeps; stats.jsonl's speed_clamps "
             "counts the cuts of every frame (this warning is given once per run)",
             frame, (long long)r->speed_clamps, 100.0 * (double)r->speed_clamps / st.particles,
             (double)dv.max_speed / dt, cfl, (double)dv.h, dt, substeps, 2.0 * cfl);
    return 1;
}

void pbfapp_guard_describe(const pbfapp_guard *g, const pbfapp_frame_report *r, int frame,
                           char *buf, size_t size) {
    const pbf_diagnosis *d = &r->diag;
    char where[200], who[200], what[220];
    snprintf(where, sizeof where, "step %lld (frame %d, substep %d of %d%s)", (long long)r->step,
             frame, r->substep, r->substeps, r->factor > 1 ? ", adaptive" : "");
    if (d->index >= 0)
        snprintf(who, sizeof who, "particle index %d (id %u) at (%.6g, %.6g, %.6g)", d->index,
                 (unsigned)d->id, (double)d->position.x, (double)d->position.y,
                 (double)d->position.z);
    else
        snprintf(who, sizeof who, "no particle identified");
    const char *check = d->check ? d->check : "unknown";
    if (strcmp(check, "density") == 0)
        snprintf(what, sizeof what, "density error %.6g%% > guard_density_error %.6g%%", d->value,
                 g->density_limit);
    else if (strcmp(check, "escaped") == 0)
        snprintf(what, sizeof what, "%.6g m outside the container", d->value);
    else if (strcmp(check, "non-finite") == 0)
        snprintf(what, sizeof what, "a non-finite position or velocity (value %g)", d->value);
    else
        snprintf(what, sizeof what, "value %g", d->value);
    snprintf(buf, size, "unstable simulation at %s: check \"%s\" failed, stage %s%s%s: %s: %s",
             where, check, d->stage ? "\"" : "", d->stage ? d->stage : "-", d->stage ? "\"" : "",
             who, what);
}

/* ---- stop signals ------------------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal = 0;

static void on_stop_signal(int sig) {
    stop_signal = sig; /* async-signal-safe: one store */
}

void pbfapp_stop_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C stops at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGXFSZ, &ign, NULL);
}

int pbfapp_stop_requested(void) {
    return (int)stop_signal;
}
