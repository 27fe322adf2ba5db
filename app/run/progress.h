/*
 * Progress report on stderr.
 *
 * `pbf run` (pbfapp_progress_init / _update): on a terminal one line redrawn with '\r' (a bar,
 * frame k/N, simulated time, particles, ms per step, density error avg/max, ETA). Elsewhere
 * (logs, CI): plain lines, at most one a second plus the last frame.
 *
 * Other long work (`pbf render`, `pbf validate`, `pbf bench`: pbfapp_progress_start / _work):
 * on a terminal a bar "[#####.....] LABEL WHAT  ETA 1:23" redrawn in place, at most 10 times a
 * second; nothing with quiet or when the stream is not a terminal (their own lines say what was
 * done). The estimate of the time left is elapsed / done * (total - done), in the caller's units
 * of work (frames, or a cost estimate).
 */
#ifndef PBFAPP_PROGRESS_H
#define PBFAPP_PROGRESS_H

#include <stdio.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbfapp_progress {
    FILE *stream;
    int tty;        /* redraw one line with '\r' */
    int quiet;      /* print nothing */
    int frames;     /* total frames N */
    double start_s; /* monotonic clock at pbfapp_progress_init */
    double last_s;  /* monotonic clock of the last line printed */
    int line_open;  /* a '\r' line is on screen without its newline */
    /* pbfapp_progress_start */
    const char *label; /* e.g. "render" */
    double total;      /* units of work */
    double done;       /* units done so far */
    double drawn_done; /* `done` of the last bar drawn */
} pbfapp_progress;

/* Seconds of a monotonic clock. */
double pbfapp_now(void);

/* `tty` < 0 asks isatty(fileno(stream)). */
void pbfapp_progress_init(pbfapp_progress *p, FILE *stream, int frames, int quiet, int tty);

/* After frame `frame` (1..N) is written: `ms_per_step` is the mean wall time of its steps. */
void pbfapp_progress_update(pbfapp_progress *p, int frame, const pbf_stats *s, double ms_per_step);

/* Ends the progress line (before any other message is printed); after pbfapp_progress_start,
 * the last bar stays on screen. */
void pbfapp_progress_finish(pbfapp_progress *p);

/* A bar for `total` units of work labelled `label` (a string that outlives p). `tty` < 0 asks
 * isatty(fileno(stream)); the bar is drawn only on a terminal and without quiet. */
void pbfapp_progress_start(pbfapp_progress *p, FILE *stream, const char *label, double total,
                           int quiet, int tty);

/* `done` units of the total are done; `what` (may be NULL) says where the work is, e.g.
 * "frame 3/10". Redraws at most 10 times a second, and always when done reaches the total. */
void pbfapp_progress_work(pbfapp_progress *p, double done, const char *what);

/* Erases the bar's line, before other text is written to the terminal; the next
 * pbfapp_progress_work draws it again. */
void pbfapp_progress_clear(pbfapp_progress *p);

/* 1 when the bar is drawn (a terminal, not quiet). */
int pbfapp_progress_active(const pbfapp_progress *p);

/* Formats seconds as "1:02:03", "2:03" or "4.5 s". */
void pbfapp_format_duration(char *buf, size_t size, double seconds);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_PROGRESS_H */
