/*
 * Boundaries: the container box, static box obstacles and moving walls.
 *
 * Wall density. A particle near a wall misses the neighbours the wall cuts away, so it reads
 * under-dense and the solver pulls fluid into the wall (clumping), or corners "explode". pbf
 * treats the solid as filled with fluid at rest density that never moves, in the continuum limit
 * of Akinci et al. 2012's boundary particles: the wall adds
 *
 *     rho_wall(p) = rho_0 * integral over the solid S of W_poly6(p - y) dy
 *
 * to the density of eq. (2), and its gradient (with the spiky kernel, as the fluid terms of eq. 8)
 * to grad_{p_i} C_i, so lambda (eq. 11) and delta p (eq. 12) feel it with lambda_j = 0 on the wall.
 * The SPH solvers with the cubic spline (sph_kernel = cubic) integrate that kernel for both, so
 * the wall's force is the gradient of its density, as between particles.
 *
 * For a box S = [lo, hi] the integral is exact up to tabulation: with
 *     F(a, b, c) = integral of W over {u : u.x > a, u.y > b, u.z > c}
 * inclusion-exclusion over the 8 corners of S - p gives the box integral, and since dF/da = -G,
 *     G(a, b, c) = integral of W_spiky over the plane u.x = a, u.y > b, u.z > c,
 * gives its gradient. W has support h, so each argument is clamped to [-h, h], where F and G are
 * tabulated once per world (33^3 nodes each, trilinear interpolation). Corners and edges of the
 * container and of obstacles are therefore handled exactly (no double counting). The container's
 * solid is everything outside it: its wall density is rho_0 * (1 - integral over the container).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PI_D 3.14159265358979323846

pbf_status pbf_wall_tables_init(pbf_wall_tables *t, float h, int nodes, int cubic, pbf_error *err) {
    memset(t, 0, sizeof *t);
    const int sub = 4;               /* midpoint samples per node interval */
    const int m = sub * (nodes - 1); /* samples per axis */
    const double hd = h, ds = 2.0 * hd / m, dv = ds * ds * ds;
    const double poly6 = 315.0 / (64.0 * PI_D * pow(hd, 9));
    const double spiky = 15.0 / (PI_D * pow(hd, 6));
    size_t n3 = (size_t)nodes * nodes * nodes;
    size_t m1 = (size_t)m + 1;
    /* acc[j][k] = sum of W over samples i' >= i, j' >= j, k' >= k, built slice by slice from the
     * top, so only two m1 x m1 planes are held (the full cube would be m1^3 doubles) */
    double *acc = calloc(m1 * m1, sizeof *acc);
    double *plane = calloc(m1 * m1, sizeof *plane);
    t->F = malloc(n3 * sizeof *t->F);
    t->G = malloc(n3 * sizeof *t->G);
    if (!acc || !plane || !t->F || !t->G) {
        free(acc);
        free(plane);
        pbf_wall_tables_free(t);
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "wall tables: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    t->n = nodes;
    t->h = h;
    t->inv_step = (float)((nodes - 1) / (2.0 * hd));

#define PL(j, k) plane[(size_t)(j) * m1 + (size_t)(k)]
#define ACC(j, k) acc[(size_t)(j) * m1 + (size_t)(k)]
    for (int i = m; i >= 0; --i) {
        if (i < m) {
            double ux = -hd + (i + 0.5) * ds;
            /* 2-D suffix sums of slice i, added into the running 3-D suffix sums */
            for (int j = m - 1; j >= 0; --j) {
                double uy = -hd + (j + 0.5) * ds;
                for (int k = m - 1; k >= 0; --k) {
                    double uz = -hd + (k + 0.5) * ds;
                    double r2 = ux * ux + uy * uy + uz * uz, w = 0.0;
                    if (r2 < hd * hd) {
                        double d = hd * hd - r2;
                        w = (cubic ? pbf_cubic_value_d(hd, sqrt(r2)) : poly6 * d * d * d) * dv;
                    }
                    PL(j, k) = w + PL(j + 1, k) + PL(j, k + 1) - PL(j + 1, k + 1);
                }
            }
            for (size_t q = 0; q < m1 * m1; ++q) acc[q] += plane[q];
        }
        if (i % sub == 0)
            for (int b2 = 0; b2 < nodes; ++b2)
                for (int c = 0; c < nodes; ++c)
                    t->F[((size_t)(i / sub) * nodes + b2) * nodes + c] = (float)ACC(b2 * sub, c * sub);
    }
    double total = ACC(0, 0); /* analytically 1; normalise the quadrature error away */
    for (size_t q = 0; q < n3; ++q) t->F[q] = (float)(t->F[q] / total);
#undef ACC
    free(acc);

    /* G: for each node plane u.x = a, 2-D suffix sums of W_spiky (or of the cubic spline, whose
     * plane integral is then exactly -dF/da) on that plane. */
    double da = ds * ds;
    for (int a = 0; a < nodes; ++a) {
        double ux = -hd + a * (2.0 * hd / (nodes - 1));
        memset(plane, 0, m1 * m1 * sizeof *plane);
        for (int j = m - 1; j >= 0; --j) {
            double uy = -hd + (j + 0.5) * ds;
            for (int k = m - 1; k >= 0; --k) {
                double uz = -hd + (k + 0.5) * ds;
                double r = sqrt(ux * ux + uy * uy + uz * uz), w = 0.0;
                if (r < hd) {
                    double d = hd - r;
                    w = (cubic ? pbf_cubic_value_d(hd, r) : spiky * d * d * d) * da;
                }
                PL(j, k) = w + PL(j + 1, k) + PL(j, k + 1) - PL(j + 1, k + 1);
            }
        }
        for (int b = 0; b < nodes; ++b)
            for (int c = 0; c < nodes; ++c)
                t->G[((size_t)a * nodes + b) * nodes + c] = (float)PL(b * sub, c * sub);
    }
#undef PL
    free(plane);
    return PBF_OK;
}

void pbf_wall_tables_free(pbf_wall_tables *t) {
    free(t->F);
    free(t->G);
    t->F = t->G = NULL;
}

void pbf_wall_calibration(const pbf_world *w, float *face, float *edge, float *corner) {
    /* A lattice particle one radius from a flat wall misses the ghost layers at 2r, 4r, ...
     * behind it. Their share of the kernel sum, sum over ghost sites of W / sum over all sites,
     * is what the wall must supply; the continuum integral supplies the share of the half space
     * beyond r. Their ratio scales the wall so that resting fluid at a wall is at rest density
     * (the continuum alone over-counts by ~3 % per wall, ~4 % in a corner, at h = 4r). The same
     * for the lattice site in an edge (ghost sites beyond either of two walls) and in a corner
     * (beyond any of three) gives the factors of the container's edge and corner terms
     * (pbf_container_density): s1 2H - s2 Q = edge share, s1 3H - s2 3Q + s3 O = corner share,
     * with H, Q, O the continuum beyond one, two and three walls. At h = 4r: s1 = 0.881,
     * s2 = 0.689, s3 = 0.365. */
    const float d = w->spacing, h = w->k.h;
    const int K = (int)ceilf(h / d);
    double all = 0.0, ghost = 0.0, ghost2 = 0.0, ghost3 = 0.0;
    for (int i = -K; i <= K; ++i)
        for (int j = -K; j <= K; ++j)
            for (int l = -K; l <= K; ++l) {
                float r2 = (float)(i * i + j * j + l * l) * d * d;
                if (r2 >= w->k.h2) continue;
                float dd = w->k.h2 - r2;
                double wv = w->k.cubic != 0.0f ? pbf_cubic_value_d(h, sqrt((double)r2))
                                               : (double)dd * dd * dd;
                all += wv;
                if (l < 0) ghost += wv;
                if (l < 0 || i < 0) ghost2 += wv;
                if (l < 0 || i < 0 || j < 0) ghost3 += wv;
            }
    const float t = 0.5f * d;
    const float H = pbf_wall_lookup(&w->wc, w->walls.F, t, -h, -h);
    const float Q = pbf_wall_lookup(&w->wc, w->walls.F, t, t, -h);
    const float O = pbf_wall_lookup(&w->wc, w->walls.F, t, t, t);
    const double s1 = H > 0.0f ? ghost / all / H : 1.0;
    const double s2 = Q > 1e-6f ? (s1 * 2.0 * H - ghost2 / all) / Q : s1;
    const double s3 = O > 1e-6f ? (ghost3 / all - 3.0 * s1 * H + 3.0 * s2 * Q) / O : s1;
    *face = (float)s1;
    *edge = (float)s2;
    *corner = (float)s3;
}

static pbf_vec3 motion_offset(const pbf_box_state *bs, double t) {
    const pbf_motion *m = &bs->def.motion;
    pbf_vec3 o = {0, 0, 0};
    if (m->type == PBF_MOTION_NONE) return o;
    double te = t < m->start ? m->start : t;
    if (m->stop >= 0 && te > m->stop) te = m->stop;
    double s = 0.0;
    if (m->type == PBF_MOTION_OSCILLATE)
        s = m->amplitude * sin(2.0 * PI_D * (te - m->start) / m->period + m->phase);
    else if (m->type == PBF_MOTION_LINEAR)
        s = m->speed * (te - m->start);
    o.x = (float)(bs->dir.x * s);
    o.y = (float)(bs->dir.y * s);
    o.z = (float)(bs->dir.z * s);
    return o;
}

void pbf_boxes_update(pbf_world *w, double t) {
    for (int b = 0; b < w->nboxes; ++b) {
        const pbf_box_state *bs = &w->boxes[b];
        pbf_wall_box *wb = &w->wall_boxes[b];
        pbf_vec3 o = motion_offset(bs, t);
        float off[3], mn[3], mx[3];
        pbf_v3(o, off);
        pbf_v3(bs->def.min, mn);
        pbf_v3(bs->def.max, mx);
        for (int a = 0; a < 3; ++a) {
            wb->prev_lo[a] = wb->lo[a];
            wb->lo[a] = mn[a] + off[a];
            wb->hi[a] = mx[a] + off[a];
        }
    }
}

