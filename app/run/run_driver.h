/*
 * The one frame loop of the program: steps the world one frame at a time and hands every frame
 * to what consumes it (the caller's frame sink), with the instability guard and its adaptive
 * retries (app/run/guard.h), the speed-limit warning, progress, and the stop signals (SIGINT /
 * SIGTERM finish the frame in progress; the caller's stop sink checkpoints it). Its callers:
 *
 *   `pbf run` (app/cli/main.c)        frame writers, stats.jsonl, images, meshes, checkpoints
 *   the MPI run (app/cli/mpi_run.c)   the same, with collective stepping, stop and messages
 *   `pbf bench` (app/bench/bench.c)   frames of one step (fps = 1 / dt) without guard or
 *                                     progress line: warm-up, measured and stage-timed passes,
 *                                     each step timed in its step sink
 *   `pbf validate` (app/validate/run.c) its cases' frames: substeps and stability checks in its
 *                                     step sink, a measurement in its frame sink, early stops
 *                                     by PBFAPP_RUN_END
 *   `pbf view --frames` (app/viewer/)  one scene frame per displayed frame (pbfapp_run_one_frame)
 *
 * The caller sets up the world and its sinks, then calls pbfapp_run_frames once:
 *
 *   frame 0 (d->initial)      sinks.frame with frame 0 (checkpoint due when checkpoint_every > 0)
 *   frame k = start+1..frames a stop request ends the loop; pbfapp_run_one_frame(d, k):
 *                             sinks.step (default: the guard, pbfapp_guard_frame) steps the
 *                             frame; a failed step or an unstable state ends it
 *                             (sinks.step_failed / sinks.unstable say so, after the progress line
 *                             is ended); the speed-limit warning; sinks.frame; the progress line
 *   after the loop            a stop request: sinks.stopped checkpoints the last frame and says so
 *
 * Sinks print their own messages; a sink that fails returns the exit status of the command (1
 * runtime error), which ends the loop. A frame sink that returns PBFAPP_RUN_END ends the loop
 * without an error (pbfapp_run_frames then goes on as after the last frame). Every sink but frame
 * may be NULL (the default is given with it). Without a guard (d->guard NULL: a step sink is then
 * required) there is no speed-limit warning and the unstable sink gets an empty line; without a
 * progress line (d->progress NULL) nothing is drawn.
 */
#ifndef PBFAPP_RUN_DRIVER_H
#define PBFAPP_RUN_DRIVER_H

#include <stdint.h>

#include "io/scene.h"
#include "pbf/pbf.h"
#include "run/guard.h"
#include "run/progress.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PBFAPP_EXIT_RUNTIME 1  /* I/O, disk full, a failed step */
#define PBFAPP_EXIT_UNSTABLE 3 /* the instability guard stopped the run */
#define PBFAPP_RUN_END (-1)    /* a frame sink's "the loop ends here", not an error */

/* One frame handed to the frame sink. */
typedef struct pbfapp_run_frame {
    int frame;                         /* 0: the initial state */
    int checkpoint;                    /* a checkpoint of this frame is due (checkpoint_every) */
    double ms;                         /* wall time of the frame's steps, ms (0 for frame 0) */
    const pbfapp_frame_report *report; /* the frame's steps; NULL for frame 0 */
    pbf_stats stats; /* pbf_world_stats after the frame; speed_clamps: the frame's (not frame 0) */
} pbfapp_run_frame;

typedef struct pbfapp_run_driver pbfapp_run_driver;

typedef struct pbfapp_run_sinks {
    void *ctx; /* passed to every sink */
    /* Steps frame `frame` and fills the report (as pbfapp_guard_frame); *speed_dt: the step of the
     * speed-limit warning. NULL: pbfapp_guard_frame with d->guard (adaptive retries announced
     * after d->progress is ended) and *speed_dt = 1 / (fps * report->substeps). */
    pbf_status (*step)(void *ctx, pbfapp_run_driver *d, int frame, pbfapp_frame_report *report,
                       double *speed_dt, pbf_error *err);
    /* The signal number of a stop request, or 0 (called at the start of every frame and once
     * after the loop). NULL: pbfapp_stop_requested. */
    int (*stop)(void *ctx);
    /* Consumes a frame: writes it, its stats line, and a checkpoint when due. Returns 0, or the
     * exit status after printing why (ending d->progress first). Required. */
    int (*frame)(void *ctx, pbfapp_run_driver *d, const pbfapp_run_frame *f);
    /* After a stop request (signal `sig`), frame `frames_done` being the last one written:
     * checkpoints it and says how to resume. Returns the exit status (128 + sig, or 1 when the
     * checkpoint failed). NULL: returns 128 + sig. */
    int (*stopped)(void *ctx, pbfapp_run_driver *d, int sig);
    /* A failed step of `frame`. NULL: "pbf: frame N: simulation step failed: MESSAGE". */
    void (*step_failed)(void *ctx, int frame, const pbf_error *err);
    /* An unstable frame; `what` is pbfapp_guard_describe's line. NULL: "pbf: WHAT". */
    void (*unstable)(void *ctx, pbfapp_run_driver *d, int frame, const pbfapp_frame_report *r,
                     const char *what);
    /* The run's one speed-limit warning. NULL: "pbf: warning: TEXT". */
    void (*warning)(void *ctx, const char *text);
} pbfapp_run_sinks;

struct pbfapp_run_driver {
    /* set by the caller */
    pbf_world *world;
    double fps;
    int substeps;              /* of a frame (the scene's) */
    int frames;                /* the last frame */
    int start_frame;           /* the last frame already written (a resumed run), else 0 */
    int initial;               /* hand frame 0 (the initial state) to the frame sink first */
    int checkpoint_every;      /* 0: none */
    pbfapp_guard *guard;       /* the instability guard and the one speed-limit warning; NULL:
                                  neither (the step sink then checks what it needs) */
    pbfapp_progress *progress; /* the progress line (pbfapp_progress_init); NULL: none */
    pbfapp_run_sinks sinks;
    /* set by pbfapp_run_frames */
    int frames_done;     /* the last frame written */
    int64_t steps;       /* solver steps taken, adaptive retries included */
    double step_seconds; /* their wall time */
    pbf_stats stats;     /* of the last frame written (at the start: the world's) */
};

/* A driver for `world` and the scene's run settings (frame rate, substeps, frames, checkpoint
 * interval), from frame start_frame (0, or a resumed run's last frame; frame 0 is handed to the
 * frame sink first unless resumed), with the guard and the progress line; the sinks are left
 * empty for the caller. */
void pbfapp_run_driver_init(pbfapp_run_driver *d, pbf_world *world, const pbfapp_run *run,
                            int start_frame, int resumed, pbfapp_guard *guard,
                            pbfapp_progress *progress);

/* Runs the frames; returns 0 or the exit status (1 runtime error, 3 unstable, 128 + signal). */
int pbfapp_run_frames(pbfapp_run_driver *d);

/* One frame of the loop: steps frame `frame` through sinks.step and hands it to sinks.frame
 * (d->steps, d->step_seconds, d->stats and d->frames_done are updated; call after
 * pbfapp_run_driver_init or with those fields zeroed). Returns 0, the frame sink's return
 * (PBFAPP_RUN_END included) or the exit status of a failed or unstable frame. For callers that
 * pace frames themselves (the viewer); pbfapp_run_frames calls it for every frame. */
int pbfapp_run_one_frame(pbfapp_run_driver *d, int frame);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_RUN_DRIVER_H */
