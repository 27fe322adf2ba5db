/*
 * Boundaries: the container box, static box obstacles and moving walls.
 *
 * Wall density. A particle near a wall misses the neighbours the wall cuts away, so it reads
 * under-dense and the solver pulls fluid into the wall (clumping), or corners "explode" (seed
 * 000). pbf treats the solid as filled with fluid at rest density that never moves, in the
 * continuum limit of Akinci et al. 2012's boundary particles: the wall adds
 *
 *     rho_wall(p) = rho_0 * integral over the solid S of W_poly6(p - y) dy
 *
 * to the density of eq. (2), and its gradient (with the spiky kernel, as the fluid terms of eq. 8)
 * to grad_{p_i} C_i, so lambda (eq. 11) and delta p (eq. 12) feel it with lambda_j = 0 on the wall.
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

pbf_status pbf_wall_tables_init(pbf_wall_tables *t, float h, int nodes, pbf_error *err) {
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
                        w = poly6 * d * d * d * dv;
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

    /* G: for each node plane u.x = a, 2-D suffix sums of W_spiky on that plane. */
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
                    w = spiky * d * d * d * da;
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

/* Trilinear lookup of a table at (a, b, c) with each argument already clamped to [-h, h]. */
static float lookup(const pbf_wall_tables *t, const float *T, float a, float b, float c) {
    const int n = t->n;
    float fa = (a + t->h) * t->inv_step, fb = (b + t->h) * t->inv_step,
          fc = (c + t->h) * t->inv_step;
    int ia = (int)fa, ib = (int)fb, ic = (int)fc;
    if (ia > n - 2) ia = n - 2;
    if (ib > n - 2) ib = n - 2;
    if (ic > n - 2) ic = n - 2;
    if (ia < 0) ia = 0;
    if (ib < 0) ib = 0;
    if (ic < 0) ic = 0;
    fa -= (float)ia;
    fb -= (float)ib;
    fc -= (float)ic;
    const float *p = T + ((size_t)ia * n + ib) * n + ic;
    const size_t sa = (size_t)n * n, sb = (size_t)n;
    float c00 = p[0] + (p[1] - p[0]) * fc;
    float c01 = p[sb] + (p[sb + 1] - p[sb]) * fc;
    float c10 = p[sa] + (p[sa + 1] - p[sa]) * fc;
    float c11 = p[sa + sb] + (p[sa + sb + 1] - p[sa + sb]) * fc;
    float c0 = c00 + (c01 - c00) * fb;
    float c1 = c10 + (c11 - c10) * fb;
    return c0 + (c1 - c0) * fa;
}

static inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

float pbf_box_integral(const pbf_wall_tables *t, const float lo[3], const float hi[3],
                       const float p[3], float grad[3]) {
    const float h = t->h;
    float r[3][2];
    grad[0] = grad[1] = grad[2] = 0.0f;
    for (int a = 0; a < 3; ++a) {
        float l = lo[a] - p[a], u = hi[a] - p[a];
        if (!(l < h) || !(u > -h)) return 0.0f; /* the box is beyond the kernel support */
        r[a][0] = clampf(l, -h, h);
        r[a][1] = clampf(u, -h, h);
    }
    float integral = 0.0f;
    for (int i = 0; i < 2; ++i) {
        if (r[0][i] >= h) continue; /* F = G = 0 there */
        for (int j = 0; j < 2; ++j) {
            if (r[1][j] >= h) continue;
            for (int k = 0; k < 2; ++k) {
                if (r[2][k] >= h) continue;
                float s = ((i + j + k) & 1) ? -1.0f : 1.0f;
                float a = r[0][i], b = r[1][j], c = r[2][k];
                integral += s * lookup(t, t->F, a, b, c);
                grad[0] += s * lookup(t, t->G, a, b, c);
                grad[1] += s * lookup(t, t->G, b, a, c);
                grad[2] += s * lookup(t, t->G, c, a, b);
            }
        }
    }
    return integral;
}

/* Distance from p to a box (0 inside). */
static float box_distance2(const float lo[3], const float hi[3], const float p[3]) {
    float d2 = 0.0f;
    for (int a = 0; a < 3; ++a) {
        float d = p[a] < lo[a] ? lo[a] - p[a] : (p[a] > hi[a] ? p[a] - hi[a] : 0.0f);
        d2 += d * d;
    }
    return d2;
}

float pbf_wall_density(const pbf_world *w, const float p[3], float grad[3]) {
    const float h = w->h;
    const float *lo = w->lo, *hi = w->hi;
    float rel = 0.0f, g[3];
    grad[0] = grad[1] = grad[2] = 0.0f;
    /* container: solid outside [lo, hi] */
    if (p[0] - lo[0] < h || hi[0] - p[0] < h || p[1] - lo[1] < h || hi[1] - p[1] < h ||
        p[2] - lo[2] < h || hi[2] - p[2] < h) {
        float inside = pbf_box_integral(&w->walls, lo, hi, p, g);
        rel += 1.0f - inside;
        grad[0] -= g[0];
        grad[1] -= g[1];
        grad[2] -= g[2];
    }
    for (int b = 0; b < w->nboxes; ++b) {
        const pbf_box_state *bs = &w->boxes[b];
        float blo[3], bhi[3];
        /* only the part of the box inside the container is solid that the container lacks */
        for (int a = 0; a < 3; ++a) {
            blo[a] = fmaxf(bs->lo[a], lo[a]);
            bhi[a] = fminf(bs->hi[a], hi[a]);
        }
        if (!(blo[0] < bhi[0] && blo[1] < bhi[1] && blo[2] < bhi[2])) continue;
        if (box_distance2(blo, bhi, p) >= w->h2) continue;
        rel += pbf_box_integral(&w->walls, blo, bhi, p, g);
        grad[0] += g[0];
        grad[1] += g[1];
        grad[2] += g[2];
    }
    const float k = w->wall_scale;
    grad[0] *= k;
    grad[1] *= k;
    grad[2] *= k;
    return k * rel;
}

float pbf_wall_calibration(const pbf_world *w) {
    /* A lattice particle one radius from a flat wall misses the ghost layers at 2r, 4r, ...
     * behind it. Their share of the kernel sum, sum over ghost sites of W / sum over all sites,
     * is what the wall must supply; the continuum integral supplies the share of the half space
     * beyond r. Their ratio scales the wall so that resting fluid at a wall is at rest density
     * (the continuum alone over-counts by ~3 % per wall, ~4 % in a corner, at h = 4r). */
    const float d = w->spacing, h = w->h;
    const int K = (int)ceilf(h / d);
    double all = 0.0, ghost = 0.0;
    for (int i = -K; i <= K; ++i)
        for (int j = -K; j <= K; ++j)
            for (int l = -K; l <= K; ++l) {
                float r2 = (float)(i * i + j * j + l * l) * d * d;
                if (r2 >= w->h2) continue;
                float dd = w->h2 - r2;
                double wv = (double)dd * dd * dd;
                all += wv;
                if (l < 0) ghost += wv;
            }
    const float big = 1e3f * h;
    float lo[3] = {-big, -big, -big}, hi[3] = {big, -0.5f * d, big}, p[3] = {0, 0, 0}, g[3];
    float continuum = pbf_box_integral(&w->walls, lo, hi, p, g);
    return continuum > 0.0f ? (float)(ghost / all) / continuum : 1.0f;
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
        pbf_box_state *bs = &w->boxes[b];
        pbf_vec3 o = motion_offset(bs, t);
        float off[3], mn[3], mx[3];
        pbf_v3(o, off);
        pbf_v3(bs->def.min, mn);
        pbf_v3(bs->def.max, mx);
        for (int a = 0; a < 3; ++a) {
            bs->prev_lo[a] = bs->lo[a];
            bs->lo[a] = mn[a] + off[a];
            bs->hi[a] = mx[a] + off[a];
        }
    }
}

/* Position-based friction (Macklin et al. 2014, eq. 24; seed 003): the tangential part of the
 * particle's motion relative to the surface is removed when small (static) or reduced
 * (dynamic), in proportion to the penetration depth just resolved. */
static void friction(const pbf_world *w, float q[3], const float disp[3], const float n[3],
                     float depth) {
    float ms = w->def.friction_static, mk = w->def.friction_dynamic;
    if (ms <= 0.0f && mk <= 0.0f) return;
    float dn = disp[0] * n[0] + disp[1] * n[1] + disp[2] * n[2];
    float dt[3] = {disp[0] - dn * n[0], disp[1] - dn * n[1], disp[2] - dn * n[2]};
    float len = sqrtf(dt[0] * dt[0] + dt[1] * dt[1] + dt[2] * dt[2]);
    if (len <= 0.0f) return;
    float k = (len < ms * depth) ? 1.0f : fminf(mk * depth / len, 1.0f);
    q[0] -= k * dt[0];
    q[1] -= k * dt[1];
    q[2] -= k * dt[2];
}

void pbf_collide(const pbf_world *w, float *x, float *y, float *z, float ox, float oy, float oz) {
    const float rc = w->def.particle_radius; /* centres stay one radius from every surface */
    float q[3] = {*x, *y, *z};
    for (int b = 0; b < w->nboxes; ++b) {
        const pbf_box_state *bs = &w->boxes[b];
        const float *lo = bs->lo, *hi = bs->hi;
        float best = INFINITY;
        int axis = -1, side = 0;
        for (int a = 0; a < 3; ++a) {
            float dl = q[a] - (lo[a] - rc), dh = (hi[a] + rc) - q[a];
            if (!(dl > 0.0f && dh > 0.0f)) {
                axis = -2; /* outside this box */
                break;
            }
            if (dl < best) { best = dl; axis = a; side = -1; }
            if (dh < best) { best = dh; axis = a; side = 1; }
        }
        if (axis < 0) continue;
        float n[3] = {0, 0, 0};
        n[axis] = (float)side;
        q[axis] = side < 0 ? lo[axis] - rc : hi[axis] + rc;
        float wall[3] = {lo[0] - bs->prev_lo[0], lo[1] - bs->prev_lo[1], lo[2] - bs->prev_lo[2]};
        float disp[3] = {q[0] - ox - wall[0], q[1] - oy - wall[1], q[2] - oz - wall[2]};
        friction(w, q, disp, n, best);
    }
    const float *lo = w->lo, *hi = w->hi;
    const float o[3] = {ox, oy, oz};
    for (int a = 0; a < 3; ++a) {
        float l = lo[a] + rc, u = hi[a] - rc, depth = 0.0f;
        float n[3] = {0, 0, 0};
        if (!(q[a] >= l)) { /* also catches NaN */
            depth = isfinite(q[a]) ? l - q[a] : 0.0f;
            q[a] = l;
            n[a] = 1.0f;
        } else if (q[a] > u) {
            depth = q[a] - u;
            q[a] = u;
            n[a] = -1.0f;
        } else {
            continue;
        }
        float disp[3] = {q[0] - o[0], q[1] - o[1], q[2] - o[2]};
        friction(w, q, disp, n, depth);
    }
    /* friction only moves tangentially, but keep the container guarantee exact */
    for (int a = 0; a < 3; ++a) q[a] = clampf(q[a], lo[a] + rc, hi[a] - rc);
    *x = q[0];
    *y = q[1];
    *z = q[2];
}
