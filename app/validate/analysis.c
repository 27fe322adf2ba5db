/* `pbf validate`: the measurements of a run, from its frames: the front against the experiments
 * and Ritter's solution, the column release, the climb at the side walls, the settled column,
 * the energy budget, and the summary of one method's suite. */
#define _POSIX_C_SOURCE 200809L

#include "validate_internal.h"

#include <math.h>
#include <string.h>

double t_scale(void) {
    return sqrt(2.0 * GRAVITY / KO_L);
} /* T = t * t_scale */

/* Front Z at non-dimensional time T (linear interpolation; 1 before the start, NAN after the
 * end). */
double front_at(const sim_result *r, double T) {
    double ts = t_scale();
    if (r->h.nrec < 1) return NAN;
    if (T <= r->rec[0].t * ts) return r->rec[0].front / KO_L;
    for (int k = 1; k < r->h.nrec; ++k) {
        double T0 = r->rec[k - 1].t * ts, T1 = r->rec[k].t * ts;
        if (T <= T1) {
            double f = (T - T0) / (T1 - T0);
            return ((1.0 - f) * r->rec[k - 1].front + f * r->rec[k].front) / KO_L;
        }
    }
    return NAN;
}

/* Largest relative error (%) of the front Z(T) against experiment x's points with
 * 0 < T_k <= KO_T_MAX when Z is delayed by `shift` (compared at T_k - shift). */
static double curve_error(double (*zf)(const void *, double), const void *ctx, const experiment *x,
                          double shift) {
    double worst = 0.0;
    for (int k = 1; k < x->count; ++k) {
        if (x->t[k] > KO_T_MAX) continue;
        double z = zf(ctx, x->t[k] - shift);
        if (!isfinite(z)) return INFINITY;
        double e = 100.0 * fabs(z - x->z[k]) / x->z[k];
        if (e > worst) worst = e;
    }
    return worst;
}

/* The shift in [-limit, limit] (steps of 0.001) that minimises curve_error. */
double curve_best_shift(double (*zf)(const void *, double), const void *ctx, const experiment *x,
                        double limit, double *err) {
    double best = 0.0, be = curve_error(zf, ctx, x, 0.0);
    int n = (int)lround(limit / 0.001);
    for (int k = -n; k <= n; ++k) {
        double sh = k * 0.001, e = curve_error(zf, ctx, x, sh);
        if (e < be - 1e-12) {
            be = e;
            best = sh;
        }
    }
    *err = be;
    return best;
}

static double sim_front(const void *r, double T) {
    return front_at((const sim_result *)r, T);
}

/* An experiment's own front, piecewise linear between its points (NAN past its last). */
double exp_front(const void *x, double T) {
    const experiment *e = (const experiment *)x;
    if (T <= e->t[0]) return e->z[0];
    for (int k = 1; k < e->count; ++k)
        if (T <= e->t[k])
            return e->z[k - 1] +
                   (e->z[k] - e->z[k - 1]) * (T - e->t[k - 1]) / (e->t[k] - e->t[k - 1]);
    return NAN;
}

/* pbf's front against experiment x, and against Koshizuka & Oka (the target's experiment). */
double best_shift_vs(const sim_result *r, const experiment *x, double limit, double *err) {
    return curve_best_shift(sim_front, r, x, limit, err);
}
double front_error(const sim_result *r, double shift) {
    return curve_error(sim_front, r, &EXP_KO, shift);
}
double best_shift(const sim_result *r, double limit, double *err) {
    return best_shift_vs(r, &EXP_KO, limit, err);
}

/* Largest lead over Ritter's front, Z - (1 + 2 T), over the run after the start (< 0: never
 * ahead; at T = 0 both are 1). */
double ritter_lead(const sim_result *r) {
    double worst = -INFINITY, ts = t_scale();
    for (int k = 1; k < r->h.nrec; ++k) {
        double T = r->rec[k].t * ts, d = r->rec[k].front / KO_L - (1.0 + 2.0 * T);
        if (isfinite(d) && d > worst) worst = d;
    }
    return worst;
}

/* Column release: the largest rise of the top of the liquid at the back wall above its initial
 * height for T <= RELEASE_T (before anything can come back to the wall), in particle radii
 * (every particle within 2 spacings of the wall; *col: the same for the residual column, which
 * ignores lone particles), and the T of the largest rise. */
double top_rise(const sim_result *r, double *at_T, double *col) {
    const double rad = 0.5 * KO_L / r->h.sp.n;
    double worst = 0.0, cw = 0.0;
    *at_T = 0.0;
    if (col) *col = NAN;
    for (int k = 1; k < r->h.nrec && r->rec[k].t * t_scale() <= RELEASE_T + 1e-9; ++k) {
        double d = (r->rec[k].wall_top - r->rec[0].wall_top) / rad;
        double c = (r->rec[k].column - r->rec[0].column) / rad;
        if (!isfinite(d)) return INFINITY;
        if (d > worst) {
            worst = d;
            *at_T = r->rec[k].t * t_scale();
        }
        if (c > cw) cw = c;
    }
    if (col) *col = cw;
    return worst;
}

/* Walls and edges: the largest climb (climb_of) over the run, in particle radii, and its T. */
double climb_max(const sim_result *r, double *at_T) {
    const double rad = 0.5 * KO_L / r->h.sp.n;
    double worst = -INFINITY;
    *at_T = NAN;
    for (int k = 1; k < r->h.nrec; ++k) {
        double c = r->rec[k].climb / rad;
        if (!isfinite(c)) return INFINITY;
        if (c > worst) {
            worst = c;
            *at_T = r->rec[k].t * t_scale();
        }
    }
    return worst;
}

/* The start of a hydrostatic run's settled window (s) for a run that ends at tend. */
double settled_from(double tend) {
    return fmax(SETTLED_FROM * tend, tend - SETTLED_LAST);
}

hydro_sum hydro_summary(const sim_result *r) {
    hydro_sum s;
    memset(&s, 0, sizeof s);
    if (r->h.nrec < 2) {
        s.surface = s.surface_err = s.bottom = NAN;
        return s;
    }
    double tend = r->rec[r->h.nrec - 1].t, from = settled_from(tend);
    double sa = 0.0, ss = 0.0, sm = 0.0, sb = 0.0;
    int n = 0;
    s.init_avg = r->rec[0].err_avg;
    s.init_max = r->rec[0].err_max;
    for (int k = 1; k < r->h.nrec; ++k) {
        const frame_rec *f = &r->rec[k];
        if (f->err_avg > s.run_avg) s.run_avg = f->err_avg;
        if (f->err_max > s.run_max) s.run_max = f->err_max;
        if (f->t < from - 1e-9) continue;
        sa += f->err_avg;
        ss += f->surface;
        sb += f->bottom;
        sm += f->vmean;
        if (f->err_max > s.set_max) s.set_max = f->err_max;
        if (f->vmax > s.set_vmax) s.set_vmax = f->vmax;
        ++n;
    }
    s.set_avg = n ? sa / n : NAN;
    s.surface = n ? ss / n : NAN;
    s.bottom = n ? sb / n : NAN;
    s.set_vmean = n ? sm / n : NAN;
    s.surface_err = 100.0 * (s.surface - r->h.h0) / r->h.h0;
    s.vref = sqrt(GRAVITY * r->h.h0);
    return s;
}

/* Time-averaged mean density error of a run (frames after the first step), %. */
double mean_err_avg(const sim_result *r) {
    double s = 0.0;
    int n = 0;
    for (int k = 1; k < r->h.nrec; ++k) {
        s += r->rec[k].err_avg;
        ++n;
    }
    return n ? s / n : NAN;
}

double peak_err_max(const sim_result *r) {
    double m = 0.0;
    for (int k = 1; k < r->h.nrec; ++k)
        if (r->rec[k].err_max > m) m = r->rec[k].err_max;
    return m;
}

/* Largest difference of two runs' fronts (in Z) for T <= KO_T_MAX. */
double front_distance(const sim_result *a, const sim_result *b) {
    double worst = 0.0;
    for (double T = 0.0; T <= KO_T_MAX + 1e-9; T += 0.01) {
        double d = fabs(front_at(a, T) - front_at(b, T));
        if (!isfinite(d)) return INFINITY;
        if (d > worst) worst = d;
    }
    return worst;
}

/* Energy: largest increase of E = Ekin + Epot between consecutive frames, relative to the
 * initial energy (%), and the final energy relative to the initial one. */
void energy_summary(const sim_result *r, double from_t, double *max_inc, double *max_inc_t,
                    double *final_rel) {
    *max_inc = 0.0;
    *max_inc_t = NAN;
    *final_rel = NAN;
    if (r->h.nrec < 2) return;
    double e0 = r->rec[0].ekin + r->rec[0].epot;
    for (int k = 1; k < r->h.nrec; ++k) {
        if (r->rec[k].t < from_t - 1e-9) continue;
        double d = (r->rec[k].ekin + r->rec[k].epot) - (r->rec[k - 1].ekin + r->rec[k - 1].epot);
        if (100.0 * d / e0 > *max_inc) {
            *max_inc = 100.0 * d / e0;
            *max_inc_t = r->rec[k].t;
        }
    }
    const frame_rec *l = &r->rec[r->h.nrec - 1];
    *final_rel = (l->ekin + l->epot) / e0;
}

/* ---- one method (`--solver`) ------------------------------------------------------------- */

/* The hydrostatic load along the depth of the settled column: at the centre y_b of each layer
 * of the final density profile, p_b = g m (particles above + half the layer's) / area, against
 * rho0 g d_b with d_b = surface - y_b (the settled surface); the least-squares slope over the
 * layers at least one spacing from the surface and the floor. Equilibrium needs dp/dd = rho g,
 * so the slope is the column's mean density over rho0 along the depth (1: at rest density). */
static double load_slope(const sim_result *r, double surface) {
    const double s = KO_L / r->h.sp.n, area = KO_L * DEPTH_LAYERS * s;
    const double rho0 = pbf_default_world_def().rest_density;
    double above = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0;
    int cnt = 0;
    for (int b = r->h.nbins - 1; b >= 0; --b) {
        double y = r->bins[3 * b], w = r->bins[3 * b + 2];
        double p = GRAVITY * r->h.mass * (above + 0.5 * w) / area, d = surface - y;
        above += w;
        if (d < s || y < s) continue;
        double x = rho0 * GRAVITY * d;
        sx += x;
        sy += p;
        sxx += x * x;
        sxy += x * p;
        ++cnt;
    }
    double den = cnt * sxx - sx * sx;
    return cnt >= 3 && den > 0 ? (cnt * sxy - sx * sy) / den : NAN;
}

method_sum method_summary(const run_set *rs, int solver, int n) {
    method_sum m;
    memset(&m, 0, sizeof m);
    m.set_avg = m.set_max = m.slope = m.front_err = m.energy_inc = m.rise = m.wall_per_s = NAN;
    m.energy_gain = NAN;
    m.max_stable_dt = NAN;
    const sim_result *h = get_method(rs, solver, "hydro_n%d", n, 0);
    if (h) {
        hydro_sum hs = hydro_summary(h);
        m.set_avg = hs.set_avg;
        m.set_max = hs.set_max;
        m.slope = load_slope(h, hs.surface);
    }
    const sim_result *d = get_method(rs, solver, "dam_n%d_vort0", n, 0);
    if (d && d->h.nrec > 1) {
        double e, t, fin, at;
        best_shift(d, SHIFT_MAX, &e);
        m.front_err = e;
        energy_summary(d, 0.0, &m.energy_inc, &t, &fin);
        double e0 = d->rec[0].ekin + d->rec[0].epot;
        m.energy_gain = -INFINITY;
        for (int k = 1; k < d->h.nrec; ++k) {
            double g = 100.0 * (d->rec[k].ekin + d->rec[k].epot - e0) / e0;
            if (g > m.energy_gain) m.energy_gain = g;
        }
        m.rise = top_rise(d, &at, NULL);
        m.wall_per_s = d->h.wall_s / d->rec[d->h.nrec - 1].t;
        m.particles = d->h.particles;
    }
    for (int a = 0; a < 4; ++a) {
        const sim_result *s = get_method(rs, solver, "stab_n%d_s%d", n, SUBSTEPS[a]);
        if (!s) continue;
        ++m.stab_runs;
        if (s->h.fail) continue;
        ++m.stab_ok;
        double dt = 1.0 / (STAB_FPS * SUBSTEPS[a]);
        if (!(m.max_stable_dt >= dt)) m.max_stable_dt = dt;
    }
    return m;
}
