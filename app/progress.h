/*
 * Progress report on stderr. On a terminal: one line redrawn with '\r' (frame k/N, simulated
 * time, particles, ms per step, density error avg/max, ETA). Elsewhere (logs, CI): plain lines,
 * at most one a second plus the last frame.
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
} pbfapp_progress;

/* Seconds of a monotonic clock. */
double pbfapp_now(void);

/* `tty` < 0 asks isatty(fileno(stream)). */
void pbfapp_progress_init(pbfapp_progress *p, FILE *stream, int frames, int quiet, int tty);

/* After frame `frame` (1..N) is written: `ms_per_step` is the mean wall time of its steps. */
void pbfapp_progress_update(pbfapp_progress *p, int frame, const pbf_stats *s, double ms_per_step);

/* Ends the progress line (before any other message is printed). */
void pbfapp_progress_finish(pbfapp_progress *p);

/* Formats seconds as "1:02:03", "2:03" or "4.5 s". */
void pbfapp_format_duration(char *buf, size_t size, double seconds);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_PROGRESS_H */
