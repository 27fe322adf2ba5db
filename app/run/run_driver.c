/* The frame loop of `pbf run`, the MPI run, `pbf bench`, `pbf validate` and the viewer's fixed
 * frames (see run_driver.h). */
#include "run/run_driver.h"

#include <stdio.h>
#include <string.h>

static pbf_status guard_step(pbfapp_run_driver *d, int frame, pbfapp_frame_report *rep,
                             double *speed_dt, pbf_error *err) {
    pbf_status st =
        pbfapp_guard_frame(d->guard, d->world, frame, d->fps, d->substeps, d->progress, rep, err);
    *speed_dt = 1.0 / (d->fps * rep->substeps);
    return st;
}

static int stop_requested(const pbfapp_run_driver *d) {
    return d->sinks.stop ? d->sinks.stop(d->sinks.ctx) : pbfapp_stop_requested();
}

static void progress_finish(pbfapp_run_driver *d) {
    if (d->progress) pbfapp_progress_finish(d->progress);
}

int pbfapp_run_one_frame(pbfapp_run_driver *d, int frame) {
    const pbfapp_run_sinks *k = &d->sinks;
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbfapp_frame_report rep;
    double speed_dt = 0.0;
    pbf_status st = k->step ? k->step(k->ctx, d, frame, &rep, &speed_dt, &err)
                            : guard_step(d, frame, &rep, &speed_dt, &err);
    d->steps += rep.steps;
    d->step_seconds += rep.step_seconds;
    if (st != PBF_OK) {
        progress_finish(d);
        if (k->step_failed)
            k->step_failed(k->ctx, frame, &err);
        else
            fprintf(stderr, "pbf: frame %d: simulation step failed: %s\n", frame, err.message);
        return PBFAPP_EXIT_RUNTIME;
    }
    if (!rep.diag.ok) {
        char what[700] = "";
        if (d->guard) pbfapp_guard_describe(d->guard, &rep, frame, what, sizeof what);
        progress_finish(d);
        if (k->unstable)
            k->unstable(k->ctx, d, frame, &rep, what);
        else
            fprintf(stderr, "pbf: %s\n", what);
        return PBFAPP_EXIT_UNSTABLE;
    }
    pbfapp_run_frame f;
    f.frame = frame;
    f.ms = 1000.0 * rep.step_seconds;
    f.report = &rep;
    f.stats = pbf_world_stats(d->world);
    f.stats.speed_clamps = rep.speed_clamps; /* stats.jsonl: the frame's, every step */
    f.checkpoint =
        d->checkpoint_every > 0 && (frame % d->checkpoint_every == 0 || frame == d->frames);
    char warning[700];
    if (d->guard && pbfapp_guard_speed_warning(d->guard, d->world, frame, &rep, speed_dt, warning,
                                               sizeof warning)) {
        progress_finish(d);
        if (k->warning)
            k->warning(k->ctx, warning);
        else
            fprintf(stderr, "pbf: warning: %s\n", warning);
    }
    d->stats = f.stats;
    int rc = k->frame(k->ctx, d, &f);
    if (rc) {
        progress_finish(d);
        return rc;
    }
    d->frames_done = frame;
    if (d->progress)
        pbfapp_progress_update(d->progress, frame, &f.stats,
                               rep.steps > 0 ? f.ms / (double)rep.steps : 0.0);
    return 0;
}

void pbfapp_run_driver_init(pbfapp_run_driver *d, pbf_world *world, const pbfapp_run *run,
                            int start_frame, int resumed, pbfapp_guard *guard,
                            pbfapp_progress *progress) {
    memset(d, 0, sizeof *d);
    d->world = world;
    d->fps = (double)run->fps;
    d->substeps = run->substeps;
    d->frames = run->frames;
    d->start_frame = start_frame;
    d->initial = !resumed;
    d->checkpoint_every = run->checkpoint_every;
    d->guard = guard;
    d->progress = progress;
}

int pbfapp_run_frames(pbfapp_run_driver *d) {
    const pbfapp_run_sinks *k = &d->sinks;
    d->frames_done = d->start_frame;
    d->steps = 0;
    d->step_seconds = 0.0;
    d->stats = pbf_world_stats(d->world);
    int rc = 0;
    if (d->initial) {
        pbfapp_run_frame f;
        memset(&f, 0, sizeof f);
        f.stats = d->stats;
        f.checkpoint = d->checkpoint_every > 0;
        rc = k->frame(k->ctx, d, &f);
    }
    for (int frame = d->start_frame + 1; frame <= d->frames && rc == 0; ++frame) {
        if (stop_requested(d)) break;
        rc = pbfapp_run_one_frame(d, frame);
    }
    progress_finish(d);
    if (rc == PBFAPP_RUN_END) rc = 0;
    int sig = stop_requested(d);
    if (rc == 0 && sig) rc = k->stopped ? k->stopped(k->ctx, d, sig) : 128 + sig;
    return rc;
}
