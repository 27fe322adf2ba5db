/*
 * Run guards of `pbf run`:
 *  - the instability guard: pbf_world_diagnose after every solver step (non-finite values,
 *    particles outside the container, density error above the run parameter
 *    guard_density_error); with `adaptive` a failed frame is retried from its start with 2x, 4x,
 *    8x the substeps before the run gives up;
 *  - stop signals: SIGINT and SIGTERM only set a flag (the run finishes the current frame, writes
 *    a checkpoint and exits 130 or 143); SIGXFSZ is ignored so that a write over the file size
 *    limit fails with EFBIG and is reported like a full disk.
 */
#ifndef PBFAPP_GUARD_H
#define PBFAPP_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "pbf/pbf.h"
#include "run/progress.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PBFAPP_ADAPTIVE_MAX_FACTOR 8 /* --adaptive: at most 8x the scene's substeps */

typedef struct pbfapp_guard {
    double density_limit; /* percent; <= 0: the density check is off (the others stay on) */
    int adaptive;         /* retry an unstable frame with more substeps */
    /* copy of the frame's start state, for adaptive retries: one array of 4-byte elements per
     * column of the public field table (app/io/particle_fields.h) */
    uint32_t *buf;
    size_t cap; /* elements of buf */
    int speed_warned; /* the speed-limit warning was given (once per run) */
} pbfapp_guard;

/* A frame in which the speed limit cut more than this fraction of the particles' velocities
 * draws the run's one speed-limit warning. */
#define PBFAPP_SPEED_CLAMP_FRACTION 0.001

/* What happened in one frame. */
typedef struct pbfapp_frame_report {
    pbf_diagnosis diag;  /* the failed check (diag.ok = 1 when the frame is fine) */
    int64_t step;        /* the world's step count after the failed step */
    int substep;         /* 1-based index of the failed step in its attempt */
    int substeps;        /* steps of the failed (or last) attempt */
    int factor;          /* substep multiplier of the accepted attempt (1 normally) */
    int64_t steps;       /* steps taken, all attempts */
    double step_seconds; /* wall time spent in pbf_world_step, all attempts */
    int64_t speed_clamps; /* velocities the speed limit cut in the accepted attempt's steps */
} pbfapp_frame_report;

void pbfapp_guard_init(pbfapp_guard *g, double density_limit, int adaptive);
void pbfapp_guard_free(pbfapp_guard *g);

/* Advances the world by one frame of `substeps` steps of dt = 1 / (fps * substeps), checking
 * the state after every step. Returns PBF_OK with report->diag.ok = 1 when the frame is done,
 * PBF_OK with report->diag.ok = 0 when the state is unstable (the world is left at the failed
 * step), or the error of a failed pbf_world_step / allocation. Adaptive retries are announced on
 * stderr (after pbfapp_progress_finish(progress), which may be NULL). */
pbf_status pbfapp_guard_frame(pbfapp_guard *g, pbf_world *world, int frame, double fps,
                              int substeps, pbfapp_progress *progress, pbfapp_frame_report *report,
                              pbf_error *err);

/* The run's one warning about the speed limit (the world parameter cfl): returns 1 and writes
 * it into buf the first time a frame's cuts (report->speed_clamps) exceed
 * PBFAPP_SPEED_CLAMP_FRACTION of the particles, else 0. dt is the frame's step. */
int pbfapp_guard_speed_warning(pbfapp_guard *g, const pbf_world *world, int frame,
                               const pbfapp_frame_report *report, double dt, char *buf,
                               size_t size);

/* One line describing a failed diagnosis: "check \"density\" failed: ...". */
void pbfapp_guard_describe(const pbfapp_guard *g, const pbfapp_frame_report *r, int frame,
                           char *buf, size_t size);

/* Installs the SIGINT/SIGTERM handlers (one-shot: a second signal of the same kind acts as if
 * there were no handler) and ignores SIGXFSZ. */
void pbfapp_stop_install(void);

/* The signal number of a stop request (SIGINT, SIGTERM), or 0. */
int pbfapp_stop_requested(void);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_GUARD_H */
