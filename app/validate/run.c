/*
 * `pbf validate`: running the cases. The frame loop of one case (simulate) and the cases and
 * gnuplot as forked jobs (the program's job helper, app/run/jobs.c: a job dies with the
 * command that started it).
 *
 * Simulations are independent: with --jobs N > 1 each runs in a forked child process (one
 * thread each; results are bit-identical for any thread count) and hands its measurements back
 * through a file; the parent never enters an OpenMP parallel region (libgomp does not survive a
 * fork after that).
 */
#define _POSIX_C_SOURCE 200809L

#include "validate_internal.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/jobs.h"
#include "run/run_driver.h"
#include "scene.h"

/* CPU time (user + system) of this process and of the finished simulations it waited for, s. */
double run_cpu_seconds(void) {
    double t = 0.0;
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) == 0)
        t += (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
             (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
    if (getrusage(RUSAGE_CHILDREN, &u) == 0)
        t += (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
             (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
    return t;
}

void sim_free(sim_result *r) {
    free(r->rec);
    free(r->bins);
    free(r->curve);
    r->rec = NULL;
    r->bins = r->curve = NULL;
}

/* Runs one case in this process. */
/* %: `pbf run`'s default guard_density_error (the scene files' default run parameters): a run
 * whose largest density error goes above it stops there (exit 3), so the stability envelope
 * counts it unstable too, as the case's scene file would stop under `pbf run`. */
double stab_guard(void) {
    return pbfapp_default_run().guard_density_error;
}

/* One case's frames through the program's frame loop (app/run/run_driver.h), without its guard
 * or progress line: the substeps and the stability checks after each in the step sink, a
 * measurement per frame (frame 0 included) in the frame sink; a run that fails a check that
 * ends it (or gains energy, in the stability envelope) ends the loop there (PBFAPP_RUN_END),
 * the frame it failed in unmeasured. */
typedef struct sim_loop {
    const spec *sp;
    sim_result *res;
    const pbf_world_def *def;
    pt3 *buf;
    double *nd;
    int nn;
    double dy;
    double guard; /* stab_guard() */
    double dt;    /* of a step */
    double e0;    /* energy at frame 0 */
    int stop;     /* a check ended the run in this frame */
} sim_loop;

static pbf_status sim_step(void *ctx, pbfapp_run_driver *d, int frame, pbfapp_frame_report *rep,
                           double *speed_dt, pbf_error *err) {
    (void)frame;
    sim_loop *L = ctx;
    const spec *sp = L->sp;
    sim_result *res = L->res;
    memset(rep, 0, sizeof *rep);
    rep->diag.ok = 1;
    rep->substeps = sp->substeps;
    rep->factor = 1;
    *speed_dt = L->dt;
    for (int k = 0; k < sp->substeps && !L->stop; ++k) {
        pbf_status status = pbf_world_step(d->world, (float)L->dt, err);
        if (status != PBF_OK) return status;
        ++rep->steps;
        ++res->h.steps;
        pbf_stats st = pbf_world_stats(d->world);
        int fail = st.nonfinite > 0                       ? 1
                   : st.escaped > 0                       ? 2
                   : st.density_error_avg >= STAB_DENSITY ? 3
                   : st.density_error_max > L->guard      ? 4
                                                          : 0;
        if (fail != 1 && st.density_error_max >= STAB_DENSITY && res->h.max_over_t < 0)
            res->h.max_over_t = st.time;
        if (fail && !res->h.fail) {
            res->h.fail = fail;
            res->h.fail_t = st.time;
        }
        if (fail != 1) {
            if (st.density_error_avg > res->h.peak_avg) res->h.peak_avg = st.density_error_avg;
            if (st.density_error_max > res->h.peak_max) res->h.peak_max = st.density_error_max;
        }
        if (fail == 1 || fail == 2 || (fail && sp->kind == CASE_STAB)) L->stop = 1;
    }
    return PBF_OK;
}

static int sim_frame(void *ctx, pbfapp_run_driver *d, const pbfapp_run_frame *fr) {
    sim_loop *L = ctx;
    const spec *sp = L->sp;
    sim_result *res = L->res;
    const int f = fr->frame;
    if (L->stop) return PBFAPP_RUN_END;
    measure(d->world, sp, L->def, res->h.mass, res->h.h0, L->buf, L->nd, L->nn, L->dy,
            &res->rec[f]);
    res->h.nrec = f + 1;
    if (f == 0) {
        L->e0 = res->rec[0].ekin + res->rec[0].epot;
        res->h.peak_gain = 0.0;
        return 0;
    }
    /* a run that explodes can keep every density: the envelope also asks that nothing gains
     * energy (gravity and walls at rest add none; vorticity confinement adds little) */
    const double gain = 100.0 * (res->rec[f].ekin + res->rec[f].epot - L->e0) / L->e0;
    if (gain > res->h.peak_gain) res->h.peak_gain = gain;
    if (sp->kind == CASE_STAB && gain > STAB_ENERGY && !res->h.fail) {
        res->h.fail = 5;
        res->h.fail_t = res->rec[f].t;
        return PBFAPP_RUN_END;
    }
    return 0;
}

static void sim_step_failed(void *ctx, int frame, const pbf_error *err) {
    (void)frame;
    sim_loop *L = ctx;
    snprintf(L->res->h.message, sizeof L->res->h.message, "%s: %.400s", L->sp->name, err->message);
}

void simulate(const spec *sp, int threads, sim_result *res) {
    const double guard = stab_guard();
    memset(res, 0, sizeof *res);
    res->h.sp = *sp;
    pbf_error err;
    pbf_world *w = NULL;
    pbf_world_def def = def_of(sp, threads);
    pbf_fluid_block blk = block_of(sp);
    pt3 *buf = NULL;
    double *nd = NULL;
    double t0 = pbfapp_now();
    res->h.max_over_t = -1.0;
    if (pbf_world_create(&def, &w, &err) != PBF_OK ||
        pbf_world_add_fluid_block(w, &blk, &err) != PBF_OK) {
        snprintf(res->h.message, sizeof res->h.message, "%s: %.400s", sp->name, err.message);
        pbf_world_destroy(w);
        return;
    }
    pbf_particles p0 = pbf_world_particles(w);
    double s = 2.0 * def.particle_radius;
    res->h.particles = p0.count;
    res->h.mass = pbf_world_derived(w).mass;
    res->h.h0 = p0.count * s * s * s /
                (((double)def.domain_max.x - def.domain_min.x) *
                 ((double)def.domain_max.z - def.domain_min.z));
    double top = (double)def.domain_max.y - def.domain_min.y;
    double dy = s / 16.0;
    int nn = (int)ceil(top / dy) + 1;
    res->rec = calloc((size_t)sp->frames + 1, sizeof *res->rec);
    buf = malloc((size_t)(p0.count > 0 ? p0.count : 1) * sizeof *buf);
    nd = malloc((size_t)nn * sizeof *nd);
    if (!res->rec || !buf || !nd) {
        snprintf(res->h.message, sizeof res->h.message, "%s: out of memory", sp->name);
        goto done;
    }
    sim_loop L;
    memset(&L, 0, sizeof L);
    L.sp = sp;
    L.res = res;
    L.def = &def;
    L.buf = buf;
    L.nd = nd;
    L.nn = nn;
    L.dy = dy;
    L.guard = guard;
    L.dt = 1.0 / (sp->fps * sp->substeps);
    pbfapp_run_driver d;
    memset(&d, 0, sizeof d);
    d.world = w;
    d.fps = sp->fps;
    d.substeps = sp->substeps;
    d.frames = sp->frames;
    d.initial = 1;
    d.sinks.ctx = &L;
    d.sinks.step = sim_step;
    d.sinks.frame = sim_frame;
    d.sinks.step_failed = sim_step_failed;
    if (pbfapp_run_frames(&d) != 0) goto done; /* a failed step: res->h.message says why */
    if (sp->kind == CASE_HYDRO) {
        /* final profiles: mean density per layer of height s, number density / bulk */
        pbf_particles p = pbf_world_particles(w);
        int nb = (int)ceil(top / s);
        res->bins = calloc((size_t)nb * 3, sizeof *res->bins);
        res->curve = malloc((size_t)nn * 2 * sizeof *res->curve);
        if (!res->bins || !res->curve) {
            snprintf(res->h.message, sizeof res->h.message, "%s: out of memory", sp->name);
            goto done;
        }
        /* hat-weighted (half-width one spacing) mean density at heights (b + 1/2) s: no
         * aliasing between the bins and the particle layers */
        for (int i = 0; i < p.count; ++i) {
            double y = (double)p.y[i] - def.domain_min.y;
            if (!isfinite(y)) continue;
            int b0 = (int)floor(y / s - 1.5), b1 = (int)ceil(y / s + 0.5);
            for (int b = b0 < 0 ? 0 : b0; b <= b1 && b < nb; ++b) {
                double u = fabs((b + 0.5) * s - y) / s;
                if (u >= 1.0) continue;
                res->bins[3 * b + 1] += (1.0 - u) * p.density[i] / def.rest_density;
                res->bins[3 * b + 2] += 1.0 - u;
            }
        }
        int used = 0;
        for (int b = 0; b < nb; ++b) {
            if (res->bins[3 * b + 2] < 1.0) continue; /* less than one particle's weight */
            res->bins[3 * used + 0] = (b + 0.5) * s;
            res->bins[3 * used + 1] = res->bins[3 * b + 1] / res->bins[3 * b + 2];
            res->bins[3 * used + 2] = res->bins[3 * b + 2];
            ++used;
        }
        res->h.nbins = used;
        double area = ((double)def.domain_max.x - def.domain_min.x) *
                      ((double)def.domain_max.z - def.domain_min.z);
        number_density(&p, s, area, dy, nn, nd);
        double bulk = bulk_of(nd, dy, nn, res->h.h0);
        for (int k = 0; k < nn; ++k) {
            res->curve[2 * k] = k * dy;
            res->curve[2 * k + 1] = nd[k] / bulk;
        }
        res->h.ncurve = nn;
    }
    res->h.ok = 1;
done:
    res->h.wall_s = pbfapp_now() - t0;
    free(buf);
    free(nd);
    pbf_world_destroy(w);
}

static int write_all(FILE *f, const void *p, size_t size) {
    return size == 0 || fwrite(p, size, 1, f) == 1;
}

static int save_result(const char *path, const sim_result *r) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = write_all(f, &r->h, sizeof r->h) &&
             write_all(f, r->rec, (size_t)r->h.nrec * sizeof *r->rec) &&
             write_all(f, r->bins, (size_t)r->h.nbins * 3 * sizeof *r->bins) &&
             write_all(f, r->curve, (size_t)r->h.ncurve * 2 * sizeof *r->curve);
    return fclose(f) == 0 && ok;
}

static int load_result(const char *path, sim_result *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int ok = fread(&r->h, sizeof r->h, 1, f) == 1 && r->h.nrec >= 0 && r->h.nbins >= 0 &&
             r->h.ncurve >= 0 && r->h.nrec < 10000000 && r->h.ncurve < 10000000;
    if (ok) {
        r->rec = calloc((size_t)r->h.nrec + 1, sizeof *r->rec);
        r->bins = calloc((size_t)r->h.nbins * 3 + 1, sizeof *r->bins);
        r->curve = calloc((size_t)r->h.ncurve * 2 + 1, sizeof *r->curve);
        ok = r->rec && r->bins && r->curve &&
             (r->h.nrec == 0 ||
              fread(r->rec, sizeof *r->rec, (size_t)r->h.nrec, f) == (size_t)r->h.nrec) &&
             (r->h.nbins == 0 || fread(r->bins, sizeof *r->bins, (size_t)r->h.nbins * 3, f) ==
                                     (size_t)r->h.nbins * 3) &&
             (r->h.ncurve == 0 || fread(r->curve, sizeof *r->curve, (size_t)r->h.ncurve * 2, f) ==
                                      (size_t)r->h.ncurve * 2);
    }
    fclose(f);
    if (!ok) sim_free(r);
    return ok;
}

/* Estimated cost of a case (particle-iteration-steps), to start the longest first. */
static double cost_of(const spec *sp) {
    double particles = (sp->deep ? 2.0 * sp->n : 8.0) * sp->n * sp->n;
    return particles * (sp->iterations + 1.5) * sp->frames * (double)sp->substeps *
           (sp->solver == PBF_SOLVER_PBF ? 1.0 : 8.0); /* the SPH solvers: ~8x PBF's 4 iterations */
}

static void progress_line(const validate_options *o, int done, int total, const spec *sp,
                          const sim_result *r) {
    if (o->quiet) return;
    fprintf(stderr, "pbf validate: [%2d/%d] %-24s %6d particles %6lld steps %7.1f s%s%s\n", done,
            total, sp->name, r->h.particles, (long long)r->h.steps, r->h.wall_s,
            r->h.ok ? "" : "  FAILED: ", r->h.ok ? "" : r->h.message);
}

/* A case is done: its line, with the bar (on a terminal) redrawn below it. */
static void case_done(const validate_options *o, int done, int total, const spec *sp,
                      const sim_result *r, double *work_done) {
    pbfapp_progress_clear(o->bar);
    progress_line(o, done, total, sp, r);
    *work_done += cost_of(sp);
    char what[64];
    snprintf(what, sizeof what, "%d/%d cases", done, total);
    pbfapp_progress_work(o->bar, *work_done, what);
}

/* With --cache: loads the cached result of a case (1) if it is there and of the same case. */
static int from_cache(const validate_options *o, const spec *sp, sim_result *r) {
    if (!o->cache) return 0;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.bin", o->cache, sp->name);
    if (!load_result(path, r)) return 0;
    if (r->h.ok && memcmp(&r->h.sp, sp, sizeof *sp) == 0) return 1;
    sim_free(r);
    memset(r, 0, sizeof *r);
    return 0;
}

static void to_cache(const validate_options *o, const spec *sp, const sim_result *r) {
    if (!o->cache || !r->h.ok) return;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.bin", o->cache, sp->name);
    if (!save_result(path, r))
        fprintf(stderr, "pbf validate: warning: %s: cannot write the cache\n", path);
}

/* One case in a child of run_all: simulate it and leave its result in `path`. */
typedef struct case_job {
    const spec *sp;
    int threads;
    const char *path;
} case_job;
static int run_case_job(void *arg) {
    const case_job *j = arg;
    sim_result r;
    simulate(j->sp, j->threads, &r);
    return save_result(j->path, &r) ? 0 : 1;
}

/* Runs every case; results[i] for specs[i]. Returns 0 on success. */
int run_all(validate_options *o, const char *workdir, spec *specs, int nspec, sim_result *results) {
    int *order = malloc((size_t)nspec * sizeof *order);
    if (!order) return 1;
    int done = 0, rc = 0, ntodo = 0;
    double work_done = 0, work_total = 0;
    for (int i = 0; i < nspec; ++i) work_total += cost_of(&specs[i]);
    pbfapp_progress bar;
    pbfapp_progress_start(&bar, stderr, "validate", work_total, o->quiet, -1);
    o->bar = &bar;
    for (int i = 0; i < nspec; ++i) {
        if (from_cache(o, &specs[i], &results[i])) {
            work_done += cost_of(&specs[i]);
            ++o->cached;
            if (!o->quiet)
                fprintf(stderr, "pbf validate: [%2d/%d] %-24s from the cache %s/\n", ++done, nspec,
                        specs[i].name, o->cache);
            else
                ++done;
        } else
            order[ntodo++] = i;
    }
    for (int i = 1; i < ntodo; ++i) { /* insertion sort by cost, descending */
        int v = order[i], j = i;
        while (j > 0 && cost_of(&specs[order[j - 1]]) < cost_of(&specs[v])) {
            order[j] = order[j - 1];
            --j;
        }
        order[j] = v;
    }
    {
        char what[64];
        snprintf(what, sizeof what, "%d/%d cases", done, nspec);
        pbfapp_progress_work(&bar, work_done, what);
    }
    if (o->jobs <= 1) {
        for (int k = 0; k < ntodo; ++k) {
            int i = order[k];
            simulate(&specs[i], o->threads, &results[i]);
            to_cache(o, &specs[i], &results[i]);
            case_done(o, ++done, nspec, &specs[i], &results[i], &work_done);
        }
        pbfapp_progress_finish(&bar);
        o->bar = NULL;
        free(order);
        return 0;
    }
    pid_t *pids = calloc((size_t)nspec, sizeof *pids);
    if (!pids) {
        pbfapp_progress_finish(&bar);
        o->bar = NULL;
        free(order);
        return 1;
    }
    int next = 0, running = 0;
    char path[4400];
    while (done < nspec) {
        while (running < o->jobs && next < ntodo) {
            int i = order[next++];
            snprintf(path, sizeof path, "%s/%s.bin", workdir, specs[i].name);
            case_job job = {&specs[i], o->threads, path};
            pid_t pid = pbfapp_job_start(run_case_job, &job);
            if (pid < 0) {
                fprintf(stderr, "pbf validate: fork: %s\n", strerror(errno));
                rc = 1;
                next = ntodo;
                break;
            }
            pids[i] = pid;
            ++running;
        }
        if (running == 0) break;
        int status = 0;
        pid_t pid = pbfapp_job_wait(-1, &status);
        if (pid < 0) {
            fprintf(stderr, "pbf validate: waitpid: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        int i = -1;
        for (int k = 0; k < nspec; ++k)
            if (pids[k] == pid) i = k;
        if (i < 0) continue;
        pids[i] = 0;
        --running;
        snprintf(path, sizeof path, "%s/%s.bin", workdir, specs[i].name);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || !load_result(path, &results[i])) {
            memset(&results[i], 0, sizeof results[i]);
            snprintf(results[i].h.message, sizeof results[i].h.message,
                     "%s: the simulation process ended without a result (%s %d)", specs[i].name,
                     WIFSIGNALED(status) ? "signal" : "exit",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        }
        remove(path);
        to_cache(o, &specs[i], &results[i]);
        case_done(o, ++done, nspec, &specs[i], &results[i], &work_done);
    }
    pbfapp_progress_finish(&bar);
    o->bar = NULL;
    free(pids);
    free(order);
    return rc;
}

/* gnuplot in a child: chdir, then exec (126: no such directory, 127: no gnuplot). */
typedef struct gnuplot_job {
    const char *dir, *gp;
} gnuplot_job;
static int run_gnuplot_job(void *arg) {
    const gnuplot_job *j = arg;
    if (chdir(j->dir) != 0) return 126;
    execlp("gnuplot", "gnuplot", j->gp, (char *)NULL);
    return 127;
}

/* Runs `gnuplot NAME.gp` in dir. */
int run_gnuplot(const char *dir, const char *name) {
    char gp[128];
    snprintf(gp, sizeof gp, "%s.gp", name);
    gnuplot_job job = {dir, gp};
    pid_t pid = pbfapp_job_start(run_gnuplot_job, &job);
    if (pid < 0) return 0;
    int status = 0;
    if (pbfapp_job_wait(pid, &status) < 0) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        fprintf(stderr, "pbf validate: gnuplot not found: install gnuplot-nox "
                        "(scripts/debian-packages.txt), or use --no-plots\n");
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "pbf validate: `gnuplot %s` in %s failed\n", gp, dir);
        return 0;
    }
    return 1;
}
