/*
 * Boundaries on plain data: the wall density of the container and of box obstacles (and its
 * gradient), collisions and friction. Compiled unchanged as C, OpenCL C and CUDA (see kernel.h);
 * the tables they read are built on the host by boundary.c, where the method is described:
 * the solid is continuum ghost fluid at rest density (Akinci et al. 2012 in the continuum limit),
 * integrated exactly over each box by inclusion-exclusion of tabulated octant integrals.
 */
#ifndef PBF_SPH_WALLS_H
#define PBF_SPH_WALLS_H

#include "kernel.h"

#define PBF_MAX_BOXES 64

/* One solid box in its current position; prev_lo is its lower corner at the start of the step
 * (its displacement over the step drives friction against a moving wall). */
typedef struct pbf_wall_box {
    float lo[3], hi[3], prev_lo[3];
} pbf_wall_box;

/* Everything a wall query needs besides the two tables and the boxes. Plain floats and ints:
 * same layout on the host and on every device. */
typedef struct pbf_walls_consts {
    float lo[3], hi[3];  /* the container */
    float h, h2;         /* kernel radius */
    float inv_step;      /* table nodes per metre: (n - 1) / (2 h) */
    float scale;         /* calibration of the wall density to the discrete lattice: the
                            container's faces and every box */
    float scale_edge;    /* the container's: its edges' overlap terms, then its corners' */
    float scale_corner;  /* (pbf_container_density; boundary.c, pbf_wall_calibration) */
    float radius;        /* particle radius: centres stay this far from every surface */
    float mu_static, mu_dynamic;
    /* bed shear stress (pbf_bed_drag): C_f / layer per container face (the lower face of axis a,
     * then the upper), 1/m, 0 where it is off; a box face takes the coefficient of the container
     * face whose normal it shares. layer: the wall layer's thickness, one spacing 2r, m. */
    float drag_lo[3], drag_hi[3];
    float drag_layer;
    int drag_on;
    int n;               /* table nodes per axis over [-h, h] */
    int nboxes;
} pbf_walls_consts;

PBF_FN float pbf_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Trilinear lookup of a table at (a, b, c), each argument already clamped to [-h, h]. */
PBF_FN float pbf_wall_lookup(const pbf_walls_consts *c, const PBF_GLOBAL float *T, float a,
                             float b, float cc) {
    const int n = c->n;
    float fa = (a + c->h) * c->inv_step, fb = (b + c->h) * c->inv_step,
          fc = (cc + c->h) * c->inv_step;
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
    const PBF_GLOBAL float *p = T + ((ia * n + ib) * n + ic);
    const int sa = n * n, sb = n;
    float c00 = p[0] + (p[1] - p[0]) * fc;
    float c01 = p[sb] + (p[sb + 1] - p[sb]) * fc;
    float c10 = p[sa] + (p[sa + 1] - p[sa]) * fc;
    float c11 = p[sa + sb] + (p[sa + sb + 1] - p[sa + sb]) * fc;
    float c0 = c00 + (c01 - c00) * fb;
    float c1 = c10 + (c11 - c10) * fb;
    return c0 + (c1 - c0) * fa;
}

/* Integral of W_poly6 over the box [lo, hi] relative to point p (value in [0, 1]) and the
 * gradient of that integral with respect to p, with the spiky kernel. F(a, b, c) integrates W
 * over {u.x > a, u.y > b, u.z > c}; G(a, b, c) integrates W_spiky over the plane u.x = a,
 * u.y > b, u.z > c; dF/da = -G, so inclusion-exclusion over the 8 corners gives both. */
PBF_FN float pbf_box_integral(const pbf_walls_consts *c, const PBF_GLOBAL float *F,
                              const PBF_GLOBAL float *G, const float lo[3], const float hi[3],
                              const float p[3], float grad[3]) {
    const float h = c->h;
    float r[3][2];
    grad[0] = grad[1] = grad[2] = 0.0f;
    for (int a = 0; a < 3; ++a) {
        float l = lo[a] - p[a], u = hi[a] - p[a];
        if (!(l < h) || !(u > -h)) return 0.0f; /* the box is beyond the kernel support */
        r[a][0] = pbf_clampf(l, -h, h);
        r[a][1] = pbf_clampf(u, -h, h);
    }
    float integral = 0.0f;
    for (int i = 0; i < 2; ++i) {
        if (r[0][i] >= h) continue; /* F = G = 0 there */
        for (int j = 0; j < 2; ++j) {
            if (r[1][j] >= h) continue;
            for (int k = 0; k < 2; ++k) {
                if (r[2][k] >= h) continue;
                float s = ((i + j + k) & 1) ? -1.0f : 1.0f;
                float a = r[0][i], b = r[1][j], cc = r[2][k];
                integral += s * pbf_wall_lookup(c, F, a, b, cc);
                grad[0] += s * pbf_wall_lookup(c, G, a, b, cc);
                grad[1] += s * pbf_wall_lookup(c, G, b, a, cc);
                grad[2] += s * pbf_wall_lookup(c, G, cc, a, b);
            }
        }
    }
    return integral;
}

/* Squared distance from p to a box (0 inside). */
PBF_FN float pbf_box_distance2(const float lo[3], const float hi[3], const float p[3]) {
    float d2 = 0.0f;
    for (int a = 0; a < 3; ++a) {
        float d = p[a] < lo[a] ? lo[a] - p[a] : (p[a] > hi[a] ? p[a] - hi[a] : 0.0f);
        d2 += d * d;
    }
    return d2;
}

/* The container's wall density relative to rho_0 at p (the solid is everything outside the box
 * [lo, hi]), calibrated to the discrete lattice face by face, edge by edge and corner by corner,
 * and its gradient with respect to p. The solid is the union of the six half-spaces beyond the
 * faces; with t the distance from p to a face (clamped to [-h, h]) the integral of W beyond one
 * face is F(t, -h, -h) (W is even in each coordinate, so a reflection takes every face to the
 * table's octant), beyond two faces of different axes F(t1, t2, -h), beyond three F(t1, t2, t3),
 * and faces of one axis never overlap. Inclusion-exclusion over the faces within reach:
 *     rho_wall / rho_0 = s1 sum F(t) - s2 sum F(t1, t2) + s3 sum F(t1, t2, t3),
 * where one factor s1 = s2 = s3 would be the continuum scaled as a whole. A single factor fits
 * a flat wall but leaves the lattice's particles along an edge 0.85 % under-dense (and 2 % in a
 * corner, at h = 4r): they sink along the edge from the first step, ahead of their neighbours.
 * s2 and s3 make the edge's and the corner's first lattice site exact as well. The gradient:
 * dF/dt = -G for each active argument (G's first argument is the differentiated one), and
 * dt/dp_a = +1 at a lower face, -1 at an upper one. */
PBF_FN float pbf_container_density(const pbf_walls_consts *c, const PBF_GLOBAL float *F,
                                   const PBF_GLOBAL float *G, const float p[3], float grad[3]) {
    const float h = c->h;
    float t[6];   /* distances to the faces within reach: lower x, upper x, lower y, ... */
    float sg[6];  /* dt/dp along the face's axis */
    int ax[6], nf = 0;
    grad[0] = grad[1] = grad[2] = 0.0f;
    for (int a = 0; a < 3; ++a) {
        const float dl = p[a] - c->lo[a], du = c->hi[a] - p[a];
        if (dl < h) {
            t[nf] = pbf_clampf(dl, -h, h);
            sg[nf] = 1.0f;
            ax[nf++] = a;
        }
        if (du < h) {
            t[nf] = pbf_clampf(du, -h, h);
            sg[nf] = -1.0f;
            ax[nf++] = a;
        }
    }
    const float s1 = c->scale, s2 = c->scale_edge, s3 = c->scale_corner;
    float rel = 0.0f;
    for (int i = 0; i < nf; ++i) {
        rel += s1 * pbf_wall_lookup(c, F, t[i], -h, -h);
        grad[ax[i]] -= s1 * sg[i] * pbf_wall_lookup(c, G, t[i], -h, -h);
        for (int j = i + 1; j < nf; ++j) {
            if (ax[j] == ax[i]) continue;
            rel -= s2 * pbf_wall_lookup(c, F, t[i], t[j], -h);
            grad[ax[i]] += s2 * sg[i] * pbf_wall_lookup(c, G, t[i], t[j], -h);
            grad[ax[j]] += s2 * sg[j] * pbf_wall_lookup(c, G, t[j], t[i], -h);
            for (int k = j + 1; k < nf; ++k) {
                if (ax[k] == ax[i] || ax[k] == ax[j]) continue;
                rel += s3 * pbf_wall_lookup(c, F, t[i], t[j], t[k]);
                grad[ax[i]] -= s3 * sg[i] * pbf_wall_lookup(c, G, t[i], t[j], t[k]);
                grad[ax[j]] -= s3 * sg[j] * pbf_wall_lookup(c, G, t[j], t[i], t[k]);
                grad[ax[k]] -= s3 * sg[k] * pbf_wall_lookup(c, G, t[k], t[i], t[j]);
            }
        }
    }
    return rel;
}

/* Wall density relative to rho_0 at p, from the container (solid outside it) and every box, with
 * its gradient (the wall's grad C term of eq. 8, lambda_j = 0 on the wall). */
PBF_FN float pbf_wall_density(const pbf_walls_consts *c, const PBF_GLOBAL float *F,
                              const PBF_GLOBAL float *G, const PBF_GLOBAL pbf_wall_box *boxes,
                              const float p[3], float grad[3]) {
    float rel = 0.0f, g[3];
    grad[0] = grad[1] = grad[2] = 0.0f;
    for (int b = 0; b < c->nboxes; ++b) {
        float blo[3], bhi[3];
        /* only the part of the box inside the container is solid that the container lacks */
        for (int a = 0; a < 3; ++a) {
            blo[a] = boxes[b].lo[a] > c->lo[a] ? boxes[b].lo[a] : c->lo[a];
            bhi[a] = boxes[b].hi[a] < c->hi[a] ? boxes[b].hi[a] : c->hi[a];
        }
        if (!(blo[0] < bhi[0] && blo[1] < bhi[1] && blo[2] < bhi[2])) continue;
        if (pbf_box_distance2(blo, bhi, p) >= c->h2) continue;
        rel += pbf_box_integral(c, F, G, blo, bhi, p, g);
        grad[0] += g[0];
        grad[1] += g[1];
        grad[2] += g[2];
    }
    const float k = c->scale;
    rel *= k;
    grad[0] *= k;
    grad[1] *= k;
    grad[2] *= k;
    rel += pbf_container_density(c, F, G, p, g); /* 0 beyond h of every face */
    grad[0] += g[0];
    grad[1] += g[1];
    grad[2] += g[2];
    return rel;
}

/* Position-based friction (Macklin et al. 2014, eq. 24): the tangential part of the particle's
 * motion relative to the surface is removed when small (static) or reduced (dynamic), in
 * proportion to the penetration depth just resolved. */
PBF_FN void pbf_friction(const pbf_walls_consts *c, float q[3], const float disp[3],
                         const float n[3], float depth) {
    float ms = c->mu_static, mk = c->mu_dynamic;
    if (ms <= 0.0f && mk <= 0.0f) return;
    float dn = disp[0] * n[0] + disp[1] * n[1] + disp[2] * n[2];
    float dt[3] = {disp[0] - dn * n[0], disp[1] - dn * n[1], disp[2] - dn * n[2]};
    float len = PBF_SQRTF(dt[0] * dt[0] + dt[1] * dt[1] + dt[2] * dt[2]);
    if (len <= 0.0f) return;
    float k = 1.0f;
    if (!(len < ms * depth)) {
        k = mk * depth / len;
        k = k < 1.0f ? k : 1.0f;
    }
    q[0] -= k * dt[0];
    q[1] -= k * dt[1];
    q[2] -= k * dt[2];
}

/* The quadratic drag of one wall face on a particle of its wall layer: the velocity relative to the
 * wall w, tangential to the face (axis a normal), decays as the bed shear stress
 * tau = rho C_f |u_t| u_t acting on the layer's mass per area rho * layer says,
 * du_t/dt = -(C_f / layer) |u_t| u_t, integrated exactly over dt: u_t / (1 + dt k |u_t|), with
 * k = C_f / layer. The normal component is left to the collisions. */
PBF_FN void pbf_drag_face(float v[3], const float w[3], int a, float kdt) {
    const int b = a == 0 ? 1 : 0, c = a == 2 ? 1 : 2;
    float ub = v[b] - w[b], uc = v[c] - w[c];
    float f = 1.0f / (1.0f + kdt * PBF_SQRTF(ub * ub + uc * uc));
    v[b] = w[b] + f * ub;
    v[c] = w[c] + f * uc;
}

/* Bed shear stress (the quadratic friction law tau = rho C_f |u| u of open-channel hydraulics,
 * Chezy's law, Chow 1959, section 5; the bed-friction source term of shallow-water codes such as
 * GeoClaw's Manning friction, which is this law with C_f = g n^2 / h^(1/3)): an external
 * force on the particles within one spacing (drag_layer) of a wall face that has a coefficient,
 * applied to the velocity v of a particle at p over dt as pbf_drag_face says. The force per wall
 * area does not depend on the resolution; it is zero at rest, so it holds nothing on a wall.
 * Moving boxes drag with their velocity over the step (lo - prev_lo) / dt. */
PBF_FN void pbf_bed_drag(const pbf_walls_consts *c, const PBF_GLOBAL pbf_wall_box *boxes,
                         const float p[3], float dt, float v[3]) {
    const float layer = c->drag_layer;
    const float still[3] = {0.0f, 0.0f, 0.0f};
    for (int a = 0; a < 3; ++a) {
        if (c->drag_lo[a] > 0.0f && p[a] - c->lo[a] < layer)
            pbf_drag_face(v, still, a, dt * c->drag_lo[a]);
        if (c->drag_hi[a] > 0.0f && c->hi[a] - p[a] < layer)
            pbf_drag_face(v, still, a, dt * c->drag_hi[a]);
    }
    for (int bi = 0; bi < c->nboxes; ++bi) {
        const float lo[3] = {boxes[bi].lo[0], boxes[bi].lo[1], boxes[bi].lo[2]};
        const float hi[3] = {boxes[bi].hi[0], boxes[bi].hi[1], boxes[bi].hi[2]};
        /* the face a particle faces: outside the box along exactly one axis, within a layer */
        int axis = -1, side = 0, out = 0;
        for (int a = 0; a < 3; ++a) {
            if (p[a] < lo[a]) { ++out; axis = a; side = -1; }
            else if (p[a] > hi[a]) { ++out; axis = a; side = 1; }
        }
        if (out != 1) continue;
        float d = side < 0 ? lo[axis] - p[axis] : p[axis] - hi[axis];
        /* the box's upper face has the container's lower face's normal, and so on */
        float k = side > 0 ? c->drag_lo[axis] : c->drag_hi[axis];
        if (!(d < layer) || !(k > 0.0f)) continue;
        float w[3];
        for (int a = 0; a < 3; ++a) w[a] = dt > 0.0f ? (lo[a] - boxes[bi].prev_lo[a]) / dt : 0.0f;
        pbf_drag_face(v, w, axis, dt * k);
    }
}

/* Does pbf_collide leave q as it is: no box to push out of and q inside the container's inner
 * box (at least the particle radius from every face; NaN is not)? Most particles, in every pass:
 * the callers test this alone there, which keeps q in registers (the call, not inlined, stores
 * and reloads it: measured a quarter of the SPH solvers' pressure acceleration pass). */
PBF_FN int pbf_collide_inside(const pbf_walls_consts *c, const float q[3]) {
    const float rc = c->radius;
    return c->nboxes == 0 && q[0] >= c->lo[0] + rc && q[0] <= c->hi[0] - rc &&
           q[1] >= c->lo[1] + rc && q[1] <= c->hi[1] - rc && q[2] >= c->lo[2] + rc &&
           q[2] <= c->hi[2] - rc;
}

/* Collision response for one particle: pushes it out of boxes and into the container, with
 * friction from its start-of-step position o. Non-finite coordinates end on the container
 * wall (the stage that produced them reports them first). */
PBF_FN void pbf_collide(const pbf_walls_consts *c, const PBF_GLOBAL pbf_wall_box *boxes,
                        float q[3], const float o[3]) {
    const float rc = c->radius;
    for (int b = 0; b < c->nboxes; ++b) {
        float lo[3] = {boxes[b].lo[0], boxes[b].lo[1], boxes[b].lo[2]};
        float hi[3] = {boxes[b].hi[0], boxes[b].hi[1], boxes[b].hi[2]};
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
        float n[3] = {0.0f, 0.0f, 0.0f};
        n[axis] = (float)side;
        q[axis] = side < 0 ? lo[axis] - rc : hi[axis] + rc;
        float wall[3] = {lo[0] - boxes[b].prev_lo[0], lo[1] - boxes[b].prev_lo[1],
                         lo[2] - boxes[b].prev_lo[2]};
        float disp[3] = {q[0] - o[0] - wall[0], q[1] - o[1] - wall[1], q[2] - o[2] - wall[2]};
        pbf_friction(c, q, disp, n, best);
    }
    for (int a = 0; a < 3; ++a) {
        float l = c->lo[a] + rc, u = c->hi[a] - rc, depth = 0.0f;
        float n[3] = {0.0f, 0.0f, 0.0f};
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
        pbf_friction(c, q, disp, n, depth);
    }
    /* friction only moves tangentially, but keep the container guarantee exact */
    for (int a = 0; a < 3; ++a) q[a] = pbf_clampf(q[a], c->lo[a] + rc, c->hi[a] - rc);
}

#endif
