/*
 * The CPU stages several methods share (declared in common.h): the prediction (PBF) and gravity
 * (the SPH solvers), the collisions, the velocity update with the curl pass, vorticity
 * confinement with XSPH, and the SPH solvers' advection; and the solves' error measure
 * (pbf_cpu_mean_excess). The neighbour loops are nblist.h's; see src/backends/cpu/cpu.c for the
 * threading and determinism rules every pass follows.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/common/common.h"
#include "solvers/common/common_cpu.h"

/* A cut of particle i's velocity by the speed limit, counted unless i is a ghost of a
 * distributed run (its owner counts it; predict runs before the ghosts exist). */
static inline int64_t counted_clamp(const pbf_world *w, int i) {
    const pbf_world_hooks *hk = w->hooks;
    return !hk || !hk->is_ghost || !hk->is_ghost(w, i, hk->user);
}

/* The bed shear stress on particle i at x over the step (pbf_bed_drag): an external force, applied
 * with gravity (Algorithm 1, line 2). */
static inline void bed_drag(const pbf_world *w, int i, float dt, float *vx, float *vy, float *vz) {
    const float p[3] = {w->px[i], w->py[i], w->pz[i]};
    float v[3] = {*vx, *vy, *vz};
    pbf_bed_drag(&w->wc, w->wall_boxes, p, dt, v);
    *vx = v[0];
    *vy = v[1];
    *vz = v[2];
}

/* v += dt g (and the bed shear stress), |v| <= vmax (each cut counted); then x* = x + dt v
 * (advance: PBF's prediction, Algorithm 1 lines 2-3) or x* = x (the SPH solvers, which find
 * neighbours and densities at x). */
static int stage_external(pbf_world *w, float dt, float vmax, int advance) {
    const int drag = w->wc.drag_on;
    const int n = w->count;
    const float gx = w->def.gravity.x * dt, gy = w->def.gravity.y * dt, gz = w->def.gravity.z * dt;
    int bad = INT_MAX;
    int64_t clamps = 0;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad) \
    reduction(+ : clamps)
    for (int i = 0; i < n; ++i) {
        float vx = w->vx[i] + gx, vy = w->vy[i] + gy, vz = w->vz[i] + gz;
        if (drag) bed_drag(w, i, dt, &vx, &vy, &vz);
        clamps += pbf_limit_speed(&vx, &vy, &vz, vmax);
        w->vx[i] = vx;
        w->vy[i] = vy;
        w->vz[i] = vz;
        if (advance) {
            w->qx[i] = w->px[i] + dt * vx;
            w->qy[i] = w->py[i] + dt * vy;
            w->qz[i] = w->pz[i] + dt * vz;
            if (!isfinite(w->qx[i] + w->qy[i] + w->qz[i]) && i < bad) bad = i;
        } else {
            w->qx[i] = w->px[i];
            w->qy[i] = w->py[i];
            w->qz[i] = w->pz[i];
            if (!isfinite(vx + vy + vz) && i < bad) bad = i;
        }
    }
    w->solve.speed_clamps += clamps;
    return bad;
}

int pbf_cpu_predict(pbf_world *w, const pbf_step_ctx *ctx) {
    return stage_external(w, ctx->dt, ctx->vmax, 1);
}

/* v += dt g, |v| <= vmax; x* = x: the SPH solvers find neighbours and densities at x. */
int pbf_cpu_gravity(pbf_world *w, const pbf_step_ctx *ctx) {
    return stage_external(w, ctx->dt, ctx->vmax, 0);
}

int pbf_cpu_collide(pbf_world *w, const pbf_step_ctx *ctx) {
    (void)ctx;
    if (LISTS(w)->collided) { /* PBF: delta p has collided x* + delta p into v */
        LISTS(w)->collided = 0;
        swapf(&w->qx, &w->vx);
        swapf(&w->qy, &w->vy);
        swapf(&w->qz, &w->vz);
        return LISTS(w)->collide_bad;
    }
    const int n = w->count;
    int bad = INT_MAX;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad)
    for (int i = 0; i < n; ++i) {
        float x = w->qx[i] + w->sx[i], y = w->qy[i] + w->sy[i], z = w->qz[i] + w->sz[i];
        if (!isfinite(x + y + z) && i < bad) bad = i; /* before the collision clamp hides it */
        float q[3] = {x, y, z}, o[3] = {w->px[i], w->py[i], w->pz[i]};
        if (!pbf_collide_inside(&w->wc, q)) pbf_collide(&w->wc, w->wall_boxes, q, o);
        w->qx[i] = q[0];
        w->qy[i] = q[1];
        w->qz[i] = q[2];
    }
    return bad;
}

/* The curl pass for particle i (vort: with vorticity confinement): the density at x*
 * (eq. 2, walls included) and omega_i = sum_j V grad_i W_ij x (v_j - v_i) (eq. 15), written into
 * x (dead since the velocity pass: the next pass reads each particle's own only, then writes the
 * new velocity over it) with |omega_i| into lambda. Without vorticity confinement omega is
 * never read: the density alone. P: the packed (x*, y*, z*, v_x), or NULL. */
#if PBF_PAIRS

/* curl_particle's neighbour sums for particles i and i + 1 (lists built, P the packed copy):
 * sums[p] = {density sum, omega_x, omega_y, omega_z} of particle i + p, bit-identical. */
static inline PBF_SIMD_INLINE void curl_pair(pbf_world *w, int i, const float *P, nb_ranges *ca,
                                             nb_ranges *cb, const int vort, const int cubic,
                                             float sums[2][4]) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2), vol = vf16_set1(k->volume);
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    pbf_vf16 rho = vf16_set1(0.0f), ox = rho, oy = rho, oz = rho;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj, vxj;
        load_packed16(P, jv, &xj, &yj, &zj, vort ? &vxj : NULL);
        pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi16 in = valid & (r2 < h2v);
        rho += v16_kw(k, r2, in, cubic);
        if (vort) {
            pbf_vf16 f = vol * v16_kgrad(k, r2, in, cubic);
            pbf_vf16 gx = vf16_and(f * dx, in), gy = vf16_and(f * dy, in),
                     gz = vf16_and(f * dz, in);
            pbf_vf16 ux = vf16_and(vxj - vxi, in), uy = vf16_and(vf16_gather_idx(VY, jv) - vyi, in),
                     uz = vf16_and(vf16_gather_idx(VZ, jv) - vzi, in);
            ox += gy * uz - gz * uy;
            oy += gz * ux - gx * uz;
            oz += gx * uy - gy * ux;
        }
    );
    sums[0][0] = vf_hsum(vf16_lo(rho));
    sums[1][0] = vf_hsum(vf16_hi(rho));
    if (vort) {
        sums[0][1] = vf_hsum(vf16_lo(ox)), sums[1][1] = vf_hsum(vf16_hi(ox));
        sums[0][2] = vf_hsum(vf16_lo(oy)), sums[1][2] = vf_hsum(vf16_hi(oy));
        sums[0][3] = vf_hsum(vf16_lo(oz)), sums[1][3] = vf_hsum(vf16_hi(oz));
    }
}
#endif

/* pre: the neighbour sums from curl_pair, or NULL (computed here); keep: lambda is carried to
 * the next step (pbf_lambda_carried), |omega| is not stored. */
static inline PBF_SIMD_INLINE void curl_particle(pbf_world *w, int i, const float *P,
                                                 nb_ranges *cache, const int vort,
                                                 const int cubic, int *bad, const float *pre,
                                                 const int keep) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(k->volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
    float wall = pbf_world_wall_density(w, p, gw);
    float hr, wx, wy, wz; /* the neighbour sums */
    if (pre) {
        hr = pre[0], wx = pre[1], wy = pre[2], wz = pre[3];
    } else {
    pbf_vf rho = vf_set1(0.0f), ox = rho, oy = rho, oz = rho;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, vxj;
        load_neighbours(P, jv, QX, QY, QZ, vort ? VX : NULL, &xj, &yj, &zj, vort ? &vxj : NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        rho += v_kw(k, r2, in, cubic);
        if (vort) {
            /* omega_i = sum_j V grad_i W_ij x (v_j - v_i)  (eq. 15) */
            pbf_vf f = vol * v_kgrad(k, r2, in, cubic);
            pbf_vf gx = vf_and(f * dx, in), gy = vf_and(f * dy, in), gz = vf_and(f * dz, in);
            pbf_vf ux = vf_and(vxj - vxi, in), uy = vf_and(LOAD(VY) - vyi, in),
                   uz = vf_and(LOAD(VZ) - vzi, in);
            ox += gy * uz - gz * uy;
            oy += gz * ux - gx * uz;
            oz += gx * uy - gy * ux;
        }
    );
    hr = vf_hsum(rho);
    wx = vort ? vf_hsum(ox) : 0.0f, wy = vort ? vf_hsum(oy) : 0.0f, wz = vort ? vf_hsum(oz) : 0.0f;
    }
    const float r = w->k.mass * hr + w->k.rest_density * wall;
    w->density[i] = r;
    if (vort) {
        w->px[i] = wx;
        w->py[i] = wy;
        w->pz[i] = wz;
        const float norm = sqrtf(wx * wx + wy * wy + wz * wz);
        /* |omega|, for the post pass; with lambda carried to the next step the post pass takes
         * it from omega itself (omega_norm) */
        if (!keep) w->lambda[i] = norm;
        if (!isfinite(norm) && i < *bad) *bad = i;
    } else if (!isfinite(r) && i < *bad) {
        *bad = i;
    }
}

/* The curl pass's worksharing loop, called inside the stage's parallel region with constant
 * flags (one instance each); pairs: particles i, i + 1 at once (AVX-512, PBF's kernel). */
static inline PBF_SIMD_INLINE void curl_loop(pbf_world *w, int n, const float *PK, const int vort,
                                             const int cubic, const int pairs, int *bad2,
                                             const int keep) {
    nb_ranges cache = NB_RANGES_INIT;
    cache.prefetch = PK;
#if PBF_PAIRS
    nb_ranges cache_b = NB_RANGES_INIT;
    cache_b.prefetch = PK;
    float sums[2][4] = {{0}};
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i) {
        if (pairs && (i & 1) == 0 && i + 1 < n) { /* chunks start even */
            curl_pair(w, i, PK, &cache, &cache_b, vort, cubic, sums);
            curl_particle(w, i, PK, &cache, vort, cubic, bad2, sums[0], keep);
        } else {
            curl_particle(w, i, PK, &cache, vort, cubic, bad2, pairs && (i & 1) ? sums[1] : NULL,
                          keep);
        }
    }
#else
    (void)pairs;
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i) curl_particle(w, i, PK, &cache, vort, cubic, bad2, NULL, keep);
#endif
}

int pbf_cpu_velocity(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt, vmax = ctx->vmax;
    const int n = w->count;
    const float inv_dt = 1.0f / dt;
    int bad = INT_MAX;
    /* the packed copy for the curl pass: (x*, y*, z*, v_x) */
    float *restrict PK = pbf_cpu_pack_reserve(w) ? LISTS(w)->pack : NULL;
    int64_t clamps = 0;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad) \
    reduction(+ : clamps)
    for (int i = 0; i < n; ++i) {
        float vx = (w->qx[i] - w->px[i]) * inv_dt, vy = (w->qy[i] - w->py[i]) * inv_dt,
              vz = (w->qz[i] - w->pz[i]) * inv_dt;
        if (pbf_limit_speed(&vx, &vy, &vz, vmax)) clamps += counted_clamp(w, i);
        w->vx[i] = vx;
        w->vy[i] = vy;
        w->vz[i] = vz;
        if (PK) {
            PK[4 * i + 0] = w->qx[i];
            PK[4 * i + 1] = w->qy[i];
            PK[4 * i + 2] = w->qz[i];
            PK[4 * i + 3] = vx;
        }
        if (!isfinite(vx + vy + vz) && i < bad) bad = i;
    }
    w->solve.speed_clamps += clamps;
    int bad2 = INT_MAX;
    const int vort = w->def.vorticity > 0.0f, cubic = w->k.cubic != 0.0f;
#if PBF_PAIRS
    const int pairs = PK && LISTS(w)->ok;
#else
    const int pairs = 0;
#endif
    /* with lambda carried to the next step (and the packed copy, which the post pass then needs)
     * |omega| is not stored: see pbf_cpu_vorticity_xsph */
    const int keep = vort && PK && pbf_lambda_carried(w);
    LISTS(w)->omega_norm = keep;
    /* four instances of the pass: with vorticity confinement off (epsilon 0) omega is never
     * read, and the pass is the density alone (no velocity gathers, no curl); the kernel is a
     * constant in each (PBF's poly6 / spiky, or the SPH solvers' cubic spline) */
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad2)
    {
        const unsigned fp_mode = pbf_denormals_off();
        if (vort && cubic)
            curl_loop(w, n, PK, 1, 1, pairs, &bad2, 0);
        else if (vort)
            curl_loop(w, n, PK, 1, 0, pairs, &bad2, keep);
        else if (cubic)
            curl_loop(w, n, PK, 0, 1, pairs, &bad2, 0);
        else
            curl_loop(w, n, PK, 0, 0, pairs, &bad2, 0);
        pbf_denormals_restore(fp_mode);
    }
    return bad < bad2 ? bad : bad2;
}

/* |omega_i|: stored by the curl pass in lambda, or (onorm: lambda carried to the next step)
 * from omega_i itself, computed as the curl pass computes it (the same bits). */
static inline float omega_norm_at(const pbf_world *w, int i, const int onorm) {
    if (!onorm) return w->lambda[i];
    const float x = w->px[i], y = w->py[i], z = w->pz[i];
    return sqrtf(x * x + y * y + z * z);
}

/* XSPH (eq. 17) and, with vort, vorticity confinement (eq. 16) for particle i; the new
 * velocity into x (omega_i's place), or with onorm into x* (the neighbours read omega_j, x*_j is
 * in the packed copy: see pbf_cpu_vorticity_xsph). P: the packed (x*, y*, z*, m / rho), or NULL. */
#if PBF_PAIRS
/* xsph_particle's neighbour sums for particles i and i + 1 (lists built, P the packed copy):
 * sums[p] = {XSPH x, y, z, eta x, y, z} of particle i + p, bit-identical. */
static inline PBF_SIMD_INLINE void xsph_pair(pbf_world *w, int i, const float *P, const float *PV,
                                             nb_ranges *ca, nb_ranges *cb, const int vort,
                                             const int cubic, float sums[2][6], const int onorm) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict OMEGA = w->lambda;
    const float *restrict WX = w->px, *restrict WY = w->py, *restrict WZ = w->pz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2);
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    const pbf_vf16 wi = vort ? vf16_join(vf_set1(omega_norm_at(w, i, onorm)),
                                         vf_set1(omega_norm_at(w, i + 1, onorm)))
                             : vf16_set1(0.0f);
    pbf_vf16 ex = vf16_set1(0.0f), ey = ex, ez = ex, sx = ex, sy = ex, sz = ex;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj, mj;
        load_packed16(P, jv, &xj, &yj, &zj, &mj);
        pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi16 in = valid & (r2 < h2v);
        pbf_vf16 vj = vf16_and(mj, in);
        pbf_vf16 wk = vj * v16_kw(k, r2, in, cubic);
        pbf_vf16 vxj, vyj, vzj;
        if (PV) {
            load_packed16(PV, jv, &vxj, &vyj, &vzj, NULL);
        } else {
            vxj = vf16_gather_idx(VX, jv);
            vyj = vf16_gather_idx(VY, jv);
            vzj = vf16_gather_idx(VZ, jv);
        }
        sx += vf16_and(wk * (vxj - vxi), in);
        sy += vf16_and(wk * (vyj - vyi), in);
        sz += vf16_and(wk * (vzj - vzi), in);
        if (vort) {
            pbf_vf16 wj;
            if (onorm) {
                const pbf_vf16 ox = vf16_gather_idx(WX, jv), oy = vf16_gather_idx(WY, jv),
                               oz = vf16_gather_idx(WZ, jv);
                wj = (pbf_vf16)_mm512_sqrt_ps((__m512)(ox * ox + oy * oy + oz * oz));
            } else {
                wj = vf16_gather_idx(OMEGA, jv);
            }
            pbf_vf16 f = vf16_and(vj * (wj - wi), in) * v16_kgrad(k, r2, in, cubic);
            ex += vf16_and(f * dx, in);
            ey += vf16_and(f * dy, in);
            ez += vf16_and(f * dz, in);
        }
    );
    sums[0][0] = vf_hsum(vf16_lo(sx)), sums[1][0] = vf_hsum(vf16_hi(sx));
    sums[0][1] = vf_hsum(vf16_lo(sy)), sums[1][1] = vf_hsum(vf16_hi(sy));
    sums[0][2] = vf_hsum(vf16_lo(sz)), sums[1][2] = vf_hsum(vf16_hi(sz));
    if (vort) {
        sums[0][3] = vf_hsum(vf16_lo(ex)), sums[1][3] = vf_hsum(vf16_hi(ex));
        sums[0][4] = vf_hsum(vf16_lo(ey)), sums[1][4] = vf_hsum(vf16_hi(ey));
        sums[0][5] = vf_hsum(vf16_lo(ez)), sums[1][5] = vf_hsum(vf16_hi(ez));
    }
}
#endif

/* pre: the neighbour sums from xsph_pair, or NULL (computed here). PV: the packed velocities
 * (v_x, v_y, v_z, 0), or NULL (gathered from the arrays): the same values either way. */
static inline PBF_SIMD_INLINE void xsph_particle(pbf_world *w, int i, const float *P,
                                                 const float *PV, nb_ranges *cache, const int vort,
                                                 const int cubic, float dt, float vmax, int *bad,
                                                 int64_t *clamps, const float *pre,
                                                 const int onorm) {
    const float eps = w->def.vorticity, c = w->def.xsph_viscosity;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict OMEGA = w->lambda; /* |omega| from the curl pass */
    const float *restrict RHO = w->density;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf mass = vf_set1(w->k.mass);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const float vxs = VX[i], vys = VY[i], vzs = VZ[i];
    const pbf_vf vxi = vf_set1(vxs), vyi = vf_set1(vys), vzi = vf_set1(vzs);
    const float *restrict WX = w->px, *restrict WY = w->py, *restrict WZ = w->pz;
    const pbf_vf wi = vf_set1(vort ? omega_norm_at(w, i, onorm) : 0.0f);
    float hs[6] = {0}; /* the neighbour sums: XSPH, then eta */
    if (pre) {
        for (int a = 0; a < 6; ++a) hs[a] = pre[a];
    } else {
    pbf_vf ex = vf_set1(0.0f), ey = ex, ez = ex, sx = ex, sy = ex, sz = ex;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, mj;
        load_neighbours(P, jv, QX, QY, QZ, RHO, &xj, &yj, &zj, &mj);
        if (!P) mj = mass / mj; /* packed: m / rho_j, divided per particle */
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        pbf_vf vj = vf_and(mj, in);
        /* XSPH: sum_j (m / rho_j) (v_j - v_i) W_ij  (eq. 17); the j = i term is 0 */
        pbf_vf wk = vj * v_kw(k, r2, in, cubic);
        pbf_vf vxj, vyj, vzj;
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        sx += vf_and(wk * (vxj - vxi), in);
        sy += vf_and(wk * (vyj - vyi), in);
        sz += vf_and(wk * (vzj - vzi), in);
        if (vort) {
            /* eta = grad |omega| = sum_j V_j (|omega_j| - |omega_i|) grad_i W_ij  (eq. 16) */
            pbf_vf wj;
            if (onorm) {
                const pbf_vf ox = LOAD(WX), oy = LOAD(WY), oz = LOAD(WZ);
                wj = vf_sqrt(ox * ox + oy * oy + oz * oz);
            } else {
                wj = LOAD(OMEGA);
            }
            pbf_vf f = vf_and(vj * (wj - wi), in) * v_kgrad(k, r2, in, cubic);
            ex += vf_and(f * dx, in);
            ey += vf_and(f * dy, in);
            ez += vf_and(f * dz, in);
        }
    );
    hs[0] = vf_hsum(sx), hs[1] = vf_hsum(sy), hs[2] = vf_hsum(sz);
    if (vort) hs[3] = vf_hsum(ex), hs[4] = vf_hsum(ey), hs[5] = vf_hsum(ez);
    }
    float vx = vxs + c * hs[0], vy = vys + c * hs[1], vz = vzs + c * hs[2];
    if (vort) {
        const float oxi = w->px[i], oyi = w->py[i], ozi = w->pz[i]; /* omega_i */
        float hx = hs[3], hy = hs[4], hz = hs[5];
        float el = sqrtf(hx * hx + hy * hy + hz * hz);
        if (eps > 0.0f && el > 1e-20f) {
            float nx = hx / el, ny = hy / el, nz = hz / el;
            /* f = eps (N x omega), applied as an acceleration over dt */
            vx += dt * eps * (ny * ozi - nz * oyi);
            vy += dt * eps * (nz * oxi - nx * ozi);
            vz += dt * eps * (nx * oyi - ny * oxi);
        }
    }
    if (pbf_limit_speed(&vx, &vy, &vz, vmax)) *clamps += counted_clamp(w, i);
    float *restrict OX = onorm ? w->qx : w->px, *restrict OY = onorm ? w->qy : w->py,
                    *restrict OZ = onorm ? w->qz : w->pz;
    OX[i] = vx;
    OY[i] = vy;
    OZ[i] = vz;
    if (!isfinite(vx + vy + vz) && i < *bad) *bad = i;
}

/* The XSPH pass's worksharing loop, as curl_loop. */
static inline PBF_SIMD_INLINE void xsph_loop(pbf_world *w, int n, const float *PK,
                                             const float *PV, const int vort,
                                             const int cubic, const int pairs, float dt,
                                             float vmax, int *bad, int64_t *clamps,
                                             const int onorm) {
    nb_ranges cache = NB_RANGES_INIT;
    cache.prefetch = PK;
#if PBF_PAIRS
    nb_ranges cache_b = NB_RANGES_INIT;
    cache_b.prefetch = PK;
    float sums[2][6] = {{0}};
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i) {
        if (pairs && (i & 1) == 0 && i + 1 < n) { /* chunks start even */
            xsph_pair(w, i, PK, PV, &cache, &cache_b, vort, cubic, sums, onorm);
            xsph_particle(w, i, PK, PV, &cache, vort, cubic, dt, vmax, bad, clamps, sums[0],
                          onorm);
        } else {
            xsph_particle(w, i, PK, PV, &cache, vort, cubic, dt, vmax, bad, clamps,
                          pairs && (i & 1) ? sums[1] : NULL, onorm);
        }
    }
#else
    (void)pairs;
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i)
        xsph_particle(w, i, PK, PV, &cache, vort, cubic, dt, vmax, bad, clamps, NULL, onorm);
#endif
}

/* Vorticity confinement and XSPH; writes the new velocity into the (now free) x arrays. */
int pbf_cpu_vorticity_xsph(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt, vmax = ctx->vmax;
    const int n = w->count;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict RHO = w->density;
    int bad = INT_MAX;
    /* the packed copy for this pass: (x*, y*, z*, m / rho); the SPH solvers', which have the
     * room (sph_v, free at this point), also the velocities (v_x, v_y, v_z, 0): a neighbour's
     * velocity is then one 16-byte load, not three scattered ones (PBF gathers them) */
    float *restrict PK = pbf_cpu_pack_reserve(w) ? LISTS(w)->pack : NULL;
    float *restrict PV =
        PK && pbf_world_solver(w)->sph && pbf_cpu_sph_reserve(w) ? LISTS(w)->sph_v : NULL;
    if (PK) {
        const float m = w->k.mass;
        const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
        for (int i = 0; i < n; ++i) {
            PK[4 * i + 0] = QX[i];
            PK[4 * i + 1] = QY[i];
            PK[4 * i + 2] = QZ[i];
            PK[4 * i + 3] = m / RHO[i];
            if (PV) {
                PV[4 * i + 0] = VX[i];
                PV[4 * i + 1] = VY[i];
                PV[4 * i + 2] = VZ[i];
            }
        }
    }
    int64_t clamps = 0;
    const int vort = w->def.vorticity > 0.0f, cubic = w->k.cubic != 0.0f;
#if PBF_PAIRS
    const int pairs = PK && LISTS(w)->ok;
#else
    const int pairs = 0;
#endif
    /* lambda carried to the next step: |omega| from omega, the new velocity into x* (x*_j is
     * read from the packed copy, which the curl pass had too when it set omega_norm) */
    const int onorm = vort && LISTS(w)->omega_norm && PK;
    LISTS(w)->omega_norm = 0;
    /* four instances: without vorticity confinement (epsilon 0) no |omega_j| is gathered; the
     * kernel is a constant in each, as in the curl pass */
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad) reduction(+ : clamps)
    {
        const unsigned fp_mode = pbf_denormals_off();
        if (vort && cubic)
            xsph_loop(w, n, PK, PV, 1, 1, pairs, dt, vmax, &bad, &clamps, 0);
        else if (vort)
            xsph_loop(w, n, PK, PV, 1, 0, pairs, dt, vmax, &bad, &clamps, onorm);
        else if (cubic)
            xsph_loop(w, n, PK, PV, 0, 1, pairs, dt, vmax, &bad, &clamps, 0);
        else
            xsph_loop(w, n, PK, PV, 0, 0, pairs, dt, vmax, &bad, &clamps, 0);
        pbf_denormals_restore(fp_mode);
    }
    w->solve.speed_clamps += clamps;
    if (onorm) {
        /* the new velocity is in x*, omega in x: x* back into x from the packed copy (the
         * pass read its own x* before writing over it, the neighbours' from the copy) */
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
        for (int i = 0; i < n; ++i) {
            w->px[i] = PK[4 * i + 0];
            w->py[i] = PK[4 * i + 1];
            w->pz[i] = PK[4 * i + 2];
        }
    } else {
        /* the curl pass stored |omega| in lambda over the carried multipliers (no packed copy
         * there): the next step's solve starts from lambda = 0, as the paper's */
        if (vort && pbf_lambda_carried(w)) memset(w->lambda, 0, (size_t)n * sizeof(float));
        /* rotate roles: x <- x*, v <- new velocity, x* and the old velocity become free */
        swapf(&w->px, &w->qx);
        swapf(&w->py, &w->qy);
        swapf(&w->pz, &w->qz);
    }
    /* now q* holds the new velocity and p holds x*; move the velocity into v */
    swapf(&w->qx, &w->vx);
    swapf(&w->qy, &w->vy);
    swapf(&w->qz, &w->vz);
    return bad;
}

/* delta x = dt v into the scratch arrays: the collide stage applies it with the collisions. */
int pbf_cpu_advect(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) {
        w->sx[i] = dt * w->vx[i];
        w->sy[i] = dt * w->vy[i];
        w->sz[i] = dt * w->vz[i];
    }
    return INT_MAX;
}

double pbf_cpu_mean_excess(pbf_world *w, const float *a, float scale, float offset) {
    const int n = w->count;
    w->solve_sum = 0.0;
    w->solve_count = 0.0;
    if (n <= 0) return 0.0;
    int size = (n + EXCESS_CHUNKS - 1) / EXCESS_CHUNKS;
    if (size < 4096) size = 4096;
    const int chunks = (n + size - 1) / size;
    const pbf_world_hooks *hk = w->hooks;
    const unsigned char *ghost = hk && hk->ghosts ? hk->ghosts(w, hk->user) : NULL;
    double part[EXCESS_CHUNKS];
    int counted[EXCESS_CHUNKS];
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int c = 0; c < chunks; ++c) {
        const int i0 = c * size, i1 = n - i0 > size ? i0 + size : n;
        double sum = 0.0;
        int m = 0;
        for (int i = i0; i < i1; ++i) {
            if (ghost && ghost[i]) continue;
            const float e = a[i] * scale + offset;
            /* e where it is positive, else +0 (by a mask: no branch to mispredict on the sign of
             * each); + 0.0 leaves the sum's bits as they are, so the sum is the positive terms' */
            uint32_t bits;
            memcpy(&bits, &e, sizeof bits);
            bits &= 0u - (uint32_t)(e > 0.0f);
            float ep;
            memcpy(&ep, &bits, sizeof ep);
            sum += (double)ep;
            ++m;
        }
        part[c] = sum;
        counted[c] = m;
    }
    double total = 0.0, count = 0.0;
    for (int c = 0; c < chunks; ++c) {
        total += part[c];
        count += counted[c];
    }
    w->solve_sum = total;
    w->solve_count = count;
    return count > 0.0 ? total / count : 0.0;
}
