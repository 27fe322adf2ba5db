/* `pbf validate`: what a frame measures (the front, the column, the free surface, the climb at
 * the side walls, the energy). */
#define _POSIX_C_SOURCE 200809L

#include "validate_internal.h"

#include <math.h>
#include <stdlib.h>

static int cmp_pt_desc(const void *pa, const void *pb) {
    float a = ((const pt3 *)pa)->a, b = ((const pt3 *)pb)->a;
    return (a < b) - (a > b);
}

/* The largest coordinate `amax` among the particles whose coordinate `aband` lies in [lo, hi]
 * and that have at least `minnb` such particles within `rad` (isolated droplets do not count).
 * NAN if there is none. */
static double filtered_max(const pbf_particles *p, int amax, int aband, double lo, double hi,
                           double rad, int minnb, pt3 *buf) {
    const float *c[3] = {p->x, p->y, p->z};
    int o1 = (amax + 1) % 3, o2 = (amax + 2) % 3, m = 0;
    for (int i = 0; i < p->count; ++i) {
        double v = c[aband][i];
        if (v < lo || v > hi) continue;
        buf[m].a = c[amax][i];
        buf[m].b = c[o1][i];
        buf[m].c = c[o2][i];
        ++m;
    }
    qsort(buf, (size_t)m, sizeof *buf, cmp_pt_desc);
    double r2 = rad * rad;
    for (int i = 0; i < m; ++i) {
        int count = 0;
        for (int dir = -1; dir <= 1 && count < minnb; dir += 2) {
            for (int j = i + dir; j >= 0 && j < m && count < minnb; j += dir) {
                double da = (double)buf[j].a - buf[i].a;
                if (fabs(da) > rad) break;
                double db = (double)buf[j].b - buf[i].b, dc = (double)buf[j].c - buf[i].c;
                if (da * da + db * db + dc * dc <= r2) ++count;
            }
        }
        if (count >= minnb) return buf[i].a;
    }
    return NAN;
}

/* Horizontally averaged number density along y (particles per m^3), a hat kernel of half-width
 * s: a rest lattice gives a flat profile that falls to half exactly at the volume's top. */
void number_density(const pbf_particles *p, double s, double area, double dy, int nn, double *out) {
    for (int k = 0; k < nn; ++k) out[k] = 0.0;
    double norm = 1.0 / (s * area);
    for (int i = 0; i < p->count; ++i) {
        double y = p->y[i];
        if (!isfinite(y)) continue;
        int k0 = (int)ceil((y - s) / dy), k1 = (int)floor((y + s) / dy);
        if (k0 < 0) k0 = 0;
        if (k1 > nn - 1) k1 = nn - 1;
        for (int k = k0; k <= k1; ++k) {
            double u = fabs(k * dy - y) / s;
            if (u < 1.0) out[k] += (1.0 - u) * norm;
        }
    }
}

double bulk_of(const double *nd, double dy, int nn, double h0) {
    double sum = 0.0;
    int cnt = 0;
    for (int k = 0; k < nn; ++k) {
        double y = k * dy;
        if (y >= 0.25 * h0 && y <= 0.75 * h0) {
            sum += nd[k];
            ++cnt;
        }
    }
    return cnt ? sum / cnt : NAN;
}

/* The highest y where the number density falls to half the bulk value (linear between samples). */
static double surface_of(const double *nd, double dy, int nn, double bulk) {
    double half = 0.5 * bulk;
    for (int k = nn - 2; k >= 0; --k) {
        if (nd[k] >= half) {
            double a = nd[k], b = nd[k + 1];
            double f = (a - b) > 0 ? (a - half) / (a - b) : 0.0;
            return (k + f) * dy;
        }
    }
    return NAN;
}

/* The lowest y where the number density rises to half the bulk value. */
static double bottom_of(const double *nd, double dy, int nn, double bulk) {
    double half = 0.5 * bulk;
    if (nd[0] >= half) return 0.0;
    for (int k = 1; k < nn; ++k) {
        if (nd[k] >= half) {
            double a = nd[k - 1], b = nd[k];
            return (k - 1 + (half - a) / (b - a)) * dy;
        }
    }
    return NAN;
}

/* Climbing at the side walls and their edges (deep dam break): the particles are binned along
 * x (bins of 2 spacings); in each bin, the highest particle within 1.5 spacings of a side wall
 * (z = 0 or z = depth; a lone one counts, and the vertical edges at the back wall lie in the
 * first bin) is compared with the highest particle of the liquid away from them (3 spacings or
 * more from both side walls) in that bin and its two neighbours. The flow is uniform in z, so
 * any excess is liquid that climbed a wall or an edge. Returns the largest excess, m (NAN if no
 * bin has both). */
#define CLIMB_BINS 512
static double climb_of(const pbf_particles *p, const pbf_world_def *def) {
    const double s = 2.0 * def->particle_radius, bw = 2.0 * s;
    const double x0 = def->domain_min.x, z0 = def->domain_min.z, z1 = def->domain_max.z;
    int nb = (int)ceil(((double)def->domain_max.x - x0) / bw);
    if (nb > CLIMB_BINS) nb = CLIMB_BINS;
    double top[CLIMB_BINS], ref[CLIMB_BINS];
    for (int b = 0; b < nb; ++b) top[b] = ref[b] = -INFINITY;
    for (int i = 0; i < p->count; ++i) {
        double x = p->x[i], y = p->y[i], z = p->z[i];
        if (!isfinite(x + y + z)) continue;
        int b = (int)floor((x - x0) / bw);
        b = b < 0 ? 0 : (b >= nb ? nb - 1 : b);
        if (z < z0 + 1.5 * s || z > z1 - 1.5 * s) {
            if (y > top[b]) top[b] = y;
        } else if (z >= z0 + 3.0 * s && z <= z1 - 3.0 * s) {
            if (y > ref[b]) ref[b] = y;
        }
    }
    double worst = NAN;
    for (int b = 0; b < nb; ++b) {
        double r = ref[b];
        if (b > 0 && ref[b - 1] > r) r = ref[b - 1];
        if (b + 1 < nb && ref[b + 1] > r) r = ref[b + 1];
        if (!isfinite(top[b]) || !isfinite(r)) continue;
        if (!(top[b] - r <= worst)) worst = top[b] - r;
    }
    return worst;
}

void measure(const pbf_world *w, const spec *sp, const pbf_world_def *def, double mass, double h0,
             pt3 *buf, double *nd, int nn, double dy, frame_rec *r) {
    pbf_stats st = pbf_world_stats(w);
    pbf_particles p = pbf_world_particles(w);
    r->t = st.time;
    r->err_avg = st.density_error_avg;
    r->err_max = st.density_error_max;
    r->vmax = st.max_speed;
    double sv = 0.0, ek = 0.0, ep = 0.0;
    for (int i = 0; i < p.count; ++i) {
        double v2 =
            (double)p.vx[i] * p.vx[i] + (double)p.vy[i] * p.vy[i] + (double)p.vz[i] * p.vz[i];
        sv += sqrt(v2);
        ek += 0.5 * v2;
        ep -= (double)def->gravity.x * (p.x[i] - def->domain_min.x) +
              (double)def->gravity.y * (p.y[i] - def->domain_min.y) +
              (double)def->gravity.z * (p.z[i] - def->domain_min.z);
    }
    r->vmean = p.count ? sv / p.count : 0.0;
    r->ekin = mass * ek;
    r->epot = mass * ep;
    double s = 2.0 * def->particle_radius, rad = def->particle_radius;
    r->front = r->column = r->surface = r->bottom = r->wall_top = r->climb = NAN;
    if (sp->kind == CASE_DAM) {
        r->front = filtered_max(&p, 0, 1, def->domain_min.y, def->domain_min.y + 2.0 * s, 2.0 * s,
                                4, buf) +
                   rad - def->domain_min.x;
        r->column = filtered_max(&p, 1, 0, def->domain_min.x, def->domain_min.x + 2.0 * s, 2.0 * s,
                                 4, buf) +
                    rad - def->domain_min.y;
        /* every particle counts here, a lone one climbing the wall too */
        double top = -INFINITY;
        for (int i = 0; i < p.count; ++i)
            if (p.x[i] <= def->domain_min.x + 2.0 * s && p.y[i] > top) top = p.y[i];
        r->wall_top = top + rad - def->domain_min.y;
        if (sp->deep) r->climb = climb_of(&p, def);
    } else if (sp->kind == CASE_HYDRO) {
        double area = ((double)def->domain_max.x - def->domain_min.x) *
                      ((double)def->domain_max.z - def->domain_min.z);
        number_density(&p, s, area, dy, nn, nd);
        double bulk = bulk_of(nd, dy, nn, h0);
        r->surface = surface_of(nd, dy, nn, bulk);
        r->bottom = bottom_of(nd, dy, nn, bulk);
    }
}
