/* Progress bar on a terminal, plain lines elsewhere. */
#define _POSIX_C_SOURCE 200809L

#include "run/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int terminal_columns(FILE *stream) {
#ifdef TIOCGWINSZ
    struct winsize ws;
    if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
#else
    (void)stream;
#endif
    const char *env = getenv("COLUMNS");
    int cols = env ? atoi(env) : 0;
    return cols > 0 ? cols : 80;
}

double pbfapp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pbfapp_format_duration(char *buf, size_t size, double seconds) {
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, size, "?");
        return;
    }
    if (seconds < 60) {
        snprintf(buf, size, "%.1f s", seconds);
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else
        snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

void pbfapp_progress_init(pbfapp_progress *p, FILE *stream, int frames, int quiet, int tty) {
    memset(p, 0, sizeof *p);
    p->stream = stream;
    p->quiet = quiet;
    p->frames = frames;
    p->tty = tty < 0 ? isatty(fileno(stream)) : tty;
    p->start_s = pbfapp_now();
    p->last_s = p->start_s;
}

/* "\r[####....] text\033[K": one terminal line, the bar taking what the text leaves (at most
 * 20 columns, none below 5), cut to the terminal's width so that '\r' redraws it in place. */
static void draw_bar(pbfapp_progress *p, double fraction, const char *text) {
    char bar[32], line[512];
    int cols = terminal_columns(p->stream);
    int width = cols - 4 - (int)strlen(text);
    if (width > 20) width = 20;
    if (!(fraction >= 0)) fraction = 0;
    if (fraction > 1) fraction = 1;
    if (width >= 5) {
        int filled = (int)(width * fraction + 1e-9);
        for (int i = 0; i < width; ++i) bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        snprintf(line, sizeof line, "[%s] %s", bar, text);
    } else {
        snprintf(line, sizeof line, "%s", text);
    }
    if (cols > 1 && (size_t)cols - 1 < strlen(line)) line[cols - 1] = '\0';
    fprintf(p->stream, "\r%s\033[K", line);
    p->line_open = 1;
    fflush(p->stream);
}

void pbfapp_progress_start(pbfapp_progress *p, FILE *stream, const char *label, double total,
                           int quiet, int tty) {
    pbfapp_progress_init(p, stream, 0, quiet, tty);
    p->label = label ? label : "";
    p->total = total;
    p->last_s = 0; /* the first update draws */
}

int pbfapp_progress_active(const pbfapp_progress *p) {
    return !p->quiet && p->tty;
}

void pbfapp_progress_work(pbfapp_progress *p, double done, const char *what) {
    if (!pbfapp_progress_active(p)) return;
    p->done = done;
    double now = pbfapp_now();
    int last = done >= p->total;
    /* at most 10 redraws a second, but the first one with work done (an ETA) always */
    if (!last && now - p->last_s < 0.1 && (p->drawn_done > 0 || !(done > 0))) return;
    double elapsed = now - p->start_s;
    char t[32], text[400];
    if (last) {
        pbfapp_format_duration(t, sizeof t, elapsed);
        snprintf(text, sizeof text, "%s %s  took %s", p->label, what ? what : "", t);
    } else if (done > 0) {
        pbfapp_format_duration(t, sizeof t, elapsed / done * (p->total - done));
        snprintf(text, sizeof text, "%s %s  ETA %s", p->label, what ? what : "", t);
    } else {
        pbfapp_format_duration(t, sizeof t, elapsed);
        snprintf(text, sizeof text, "%s %s  ETA ? (%s so far)", p->label, what ? what : "", t);
    }
    draw_bar(p, p->total > 0 ? done / p->total : 1.0, text);
    p->last_s = now;
    p->drawn_done = done;
}

void pbfapp_progress_clear(pbfapp_progress *p) {
    /* also when this process drew nothing: a forked child may have (pbf bench) */
    if (!p->line_open && !pbfapp_progress_active(p)) return;
    fputs("\r\033[K", p->stream);
    fflush(p->stream);
    p->line_open = 0;
    p->last_s = 0; /* redraw at the next update */
}

void pbfapp_progress_update(pbfapp_progress *p, int frame, const pbf_stats *s, double ms_per_step) {
    if (p->quiet) return;
    double now = pbfapp_now();
    double elapsed = now - p->start_s;
    double eta = frame > 0 ? elapsed / frame * (p->frames - frame) : -1;
    char eta_s[32], el_s[32];
    pbfapp_format_duration(eta_s, sizeof eta_s, eta);
    pbfapp_format_duration(el_s, sizeof el_s, elapsed);
    int last = frame >= p->frames;
    if (p->tty) {
        char text[400];
        snprintf(text, sizeof text, "frame %d/%d t=%.3fs %dp %.2fms/step err %.3f/%.3f%% %s %s",
                 frame, p->frames, s->time, s->particles, ms_per_step, s->density_error_avg,
                 s->density_error_max, last ? "took" : "ETA", last ? el_s : eta_s);
        draw_bar(p, p->frames > 0 ? (double)frame / p->frames : 1.0, text);
        p->last_s = now;
        return;
    }
    if (!last && now - p->last_s < 1.0) return;
    fprintf(p->stream,
            "pbf: frame %d/%d  t=%.3f s  %d particles  %.2f ms/step  density error avg "
            "%.3f%% max %.3f%%  elapsed %s  ETA %s\n",
            frame, p->frames, s->time, s->particles, ms_per_step, s->density_error_avg,
            s->density_error_max, el_s, last ? "0.0 s" : eta_s);
    fflush(p->stream);
    p->last_s = now;
}

void pbfapp_progress_finish(pbfapp_progress *p) {
    if (p->line_open) {
        fputc('\n', p->stream);
        fflush(p->stream);
        p->line_open = 0;
    }
}
