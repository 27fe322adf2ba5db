/*
 * What the SPH family's CPU stages share (see sph_cpu.h): the packed copies, the wall cache, the
 * per-pair cache's room, the symmetric pressure acceleration and the state-equation pressure.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/sph/sph_cpu.h"

void pbf_cpu_sph_pack(pbf_world *w, const float *K, int with_v, const float **P, const float **PV) {
    float *restrict A = P && pbf_cpu_pack_reserve(w) ? LISTS(w)->pack : NULL;
    float *restrict B = with_v && pbf_cpu_sph_reserve(w) ? LISTS(w)->sph_v : NULL;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) {
        if (A) {
            A[4 * i + 0] = QX[i];
            A[4 * i + 1] = QY[i];
            A[4 * i + 2] = QZ[i];
            if (K) A[4 * i + 3] = K[i];
        }
        if (B) {
            B[4 * i + 0] = VX[i];
            B[4 * i + 1] = VY[i];
            B[4 * i + 2] = VZ[i];
        }
    }
    if (P) *P = A;
    if (PV) *PV = B;
}

void pbf_cpu_sph_pack_k(pbf_world *w, const float *K) {
    float *restrict A = LISTS(w)->pack;
    const float *restrict KK = K;
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) A[4 * i + 3] = KK[i];
}

/* The wall cache a pass at `at` writes (NULL: none; the pass then computes only). */
float *pbf_cpu_sph_wall_begin(pbf_world *w) {
    LISTS(w)->wall_at = WALL_NONE;
    return pbf_cpu_sph_reserve(w) ? LISTS(w)->sph_wall : NULL;
}

#define PAIR_MAX_BYTES ((size_t)1 << 31)

/* The cache's offsets for the current lists and room for it: 0 where there is none. */
int pbf_cpu_pair_reserve(pbf_world *w) {
    cpu_lists *L = LISTS(w);
    L->pair_ok = 0;
    if (!L->ok) return 0;
    const int n = w->count;
    if ((size_t)n + 1 > L->pair_off_cap) {
        free(L->pair_off);
        L->pair_off_cap = 0;
        L->pair_off = malloc(((size_t)n + 1) * sizeof *L->pair_off);
        if (!L->pair_off) return 0;
        L->pair_off_cap = (size_t)n + 1;
    }
    size_t chunks = 0;
    for (int i = 0; i < n; ++i) {
        L->pair_off[i] = (uint32_t)chunks;
        chunks += (list_length(w, i) + PBF_LANES - 1) / PBF_LANES;
        if (chunks > UINT32_MAX) return 0;
    }
    const size_t need = chunks * PBF_LANES; /* floats */
    if (need * sizeof(float) > PAIR_MAX_BYTES) return 0;
    if (need > L->pair_cap) {
        free(L->pair);
        const size_t cap = need + need / 8;
        L->pair = aligned_alloc(64, (cap * sizeof(float) + 63) / 64 * 64);
        L->pair_cap = L->pair ? cap : 0;
        if (!L->pair) return 0;
    }
    return 1;
}

#if PBF_PAIRS
/* The neighbour sums of pressure_accel (from the pair cache) of particles i and i + 1 (a[0],
 * a[1]), bit-identical to it. */
static inline PBF_SIMD_INLINE void accel_pairs2(pbf_world *w, int i, const float *P,
                                               nb_ranges *ca, nb_ranges *cb, float a[2][3]) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict K = w->lambda;
    const pbf_vf16 vol = vf16_set1(w->k.volume), zero = vf16_set1(0.0f);
    const pbf_vf16 xi = vf16_join(vf_set1(QX[i]), vf_set1(QX[i + 1]));
    const pbf_vf16 yi = vf16_join(vf_set1(QY[i]), vf_set1(QY[i + 1]));
    const pbf_vf16 zi = vf16_join(vf_set1(QZ[i]), vf_set1(QZ[i + 1]));
    const pbf_vf16 vki = vf16_join(vf_set1(K[i]), vf_set1(K[i + 1]));
    pbf_vf16 ax = zero, ay = zero, az = zero;
    FOR_PAIRS_PAIR(w, i, ca, cb,
        pbf_vf16 xj, yj, zj, kj;
        load_packed16(P, jv, &xj, &yj, &zj, &kj);
        const pbf_vf16 pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        const pbf_vi16 in = ps != zero;
        pbf_vf16 f = vf16_and((vki + kj) * vol * ps, in);
        ax += vf16_and(f * pdx, in);
        ay += vf16_and(f * pdy, in);
        az += vf16_and(f * pdz, in);
    );
    a[0][0] = vf_hsum(vf16_lo(ax));
    a[1][0] = vf_hsum(vf16_hi(ax));
    a[0][1] = vf_hsum(vf16_lo(ay));
    a[1][1] = vf_hsum(vf16_hi(ay));
    a[0][2] = vf_hsum(vf16_lo(az));
    a[1][2] = vf_hsum(vf16_hi(az));
}
#endif

/* The symmetric pressure acceleration of every SPH solver over dt, from k = dt^2 rho_0 p / rho^2:
 * v_i -= (sum_j V (k_i + k_j) grad W_ij + k_i grad wall_i) / dt, then the collisions and
 * friction on the motion dt v (as PBF's collide stage does inside its iterations), so that the
 * next measure of the solve sees the motion the walls allow. With `predicted` (PCISPH) the
 * gradients are taken at the predicted positions x + dt v (the velocities before this pass) and
 * the new velocities go to sx, sy, sz, which then swap roles with vx, vy, vz. */
static inline PBF_SIMD_INLINE int pressure_accel(pbf_world *w, float dt, const int predicted,
                                                 const int xv, const int viscous) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    /* no restrict: without `predicted` the new velocities overwrite the ones read */
    const float *VX = w->vx, *VY = w->vy, *VZ = w->vz;
    const float *restrict K = w->lambda;
    float *OX = predicted ? w->sx : w->vx, *OY = predicted ? w->sy : w->vy,
          *OZ = predicted ? w->sz : w->vz;
    const int n = w->count;
    const float inv_dt = 1.0f / dt;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2), dtv = vf_set1(dt);
    const pbf_vf vol = vf_set1(w->k.volume);
    int bad = INT_MAX;
    const int pairs = !predicted && LISTS(w)->pair_ok; /* DFSPH: gradient factors cached */
    const float *P = NULL, *PV = NULL;
    float *restrict PVW = NULL; /* DFSPH: the new velocities into sph_v too (pbf_cpu_sph_pack_k) */
    if (pairs && xv) {
        P = LISTS(w)->pack;
        pbf_cpu_sph_pack_k(w, K);
        PVW = LISTS(w)->sph_v;
    } else {
        pbf_cpu_sph_pack(w, K, predicted, &P, &PV);
        if (pairs && P && !w->hooks && pbf_cpu_sph_reserve(w)) PVW = LISTS(w)->sph_v;
    }
    const int wall_at = predicted ? WALL_AT_PREDICTED : WALL_AT_X;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
#if PBF_PAIRS
        nb_ranges cache_b = NB_RANGES_INIT;
        const int two = pairs && P;
        float a2[2][3] = {{0}};
#endif
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            float g[3] = {p[0], p[1], p[2]}; /* where the gradients are taken */
            if (predicted) {
                g[0] += dt * VX[i];
                g[1] += dt * VY[i];
                g[2] += dt * VZ[i];
            }
            const pbf_vf xi = vf_set1(g[0]), yi = vf_set1(g[1]), zi = vf_set1(g[2]);
            const float ki = K[i];
            const pbf_vf vki = vf_set1(ki);
            sph_wall_get(w, i, wall_at, g, gw);
            pbf_vf ax = vf_set1(0.0f), ay = ax, az = ax;
            float sx, sy, sz;
#if PBF_PAIRS
            /* the sweep's chunks start even: i even takes i and i + 1 (whose sums
             * read no velocity, which this pass writes) */
            if (two && (i & 1) == 0 && i + 1 < n) {
                accel_pairs2(w, i, P, &cache, &cache_b, a2);
                sx = a2[0][0], sy = a2[0][1], sz = a2[0][2];
            } else if (two && (i & 1)) {
                sx = a2[1][0], sy = a2[1][1], sz = a2[1][2];
            } else
#endif
            {
            if (pairs) {
                FOR_PAIRS(w, i, &cache,
                    pbf_vf xj, yj, zj, kj;
                    load_neighbours(P, jv, QX, QY, QZ, K, &xj, &yj, &zj, &kj);
                    const pbf_vf pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
                    const pbf_vi in = ps != vf_set1(0.0f);
                    pbf_vf f = vf_and((vki + kj) * vol * ps, in);
                    ax += vf_and(f * pdx, in);
                    ay += vf_and(f * pdy, in);
                    az += vf_and(f * pdz, in);
                );
            } else FOR_NEIGHBOURS_R(w, i, &cache,
                pbf_vf xj, yj, zj, kj;
                load_neighbours(P, jv, QX, QY, QZ, K, &xj, &yj, &zj, &kj);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                if (predicted) {
                    pbf_vf vxj, vyj, vzj;
                    load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
                    dx -= dtv * vxj;
                    dy -= dtv * vyj;
                    dz -= dtv * vzj;
                }
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                pbf_vf f = vf_and((vki + kj) * vol * v_kgrad(k, r2, in, k->cubic != 0.0f), in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            sx = vf_hsum(ax), sy = vf_hsum(ay), sz = vf_hsum(az);
            }
            float vx = VX[i] - (sx + ki * gw[0]) * inv_dt;
            float vy = VY[i] - (sy + ki * gw[1]) * inv_dt;
            float vz = VZ[i] - (sz + ki * gw[2]) * inv_dt;
            if (viscous) { /* WCSPH's artificial viscosity, from its pressure stage */
                vx += w->sx[i];
                vy += w->sy[i];
                vz += w->sz[i];
            }
            pbf_sph_collide_velocity(&w->wc, w->wall_boxes, p, dt, &vx, &vy, &vz);
            OX[i] = vx;
            OY[i] = vy;
            OZ[i] = vz;
            if (PVW) {
                PVW[4 * (size_t)i + 0] = vx;
                PVW[4 * (size_t)i + 1] = vy;
                PVW[4 * (size_t)i + 2] = vz;
            }
            if (!isfinite(vx + vy + vz) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    LISTS(w)->xv_packed = PVW != NULL;
    if (predicted) {
        LISTS(w)->wall_at = WALL_NONE; /* the velocities, and so the predicted points, changed */
        swapf(&w->vx, &w->sx);
        swapf(&w->vy, &w->sy);
        swapf(&w->vz, &w->sz);
    }
    return bad;
}

int pbf_cpu_pressure_accel(pbf_world *w, const pbf_step_ctx *ctx, int predicted, int viscous) {
    const int xv = LISTS(w)->xv_prev;
    if (predicted) return pressure_accel(w, ctx->dt, 1, 0, 0);
    return viscous ? pressure_accel(w, ctx->dt, 0, xv, 1) : pressure_accel(w, ctx->dt, 0, xv, 0);
}

int pbf_cpu_sph_state_pressure(pbf_world *w, const pbf_step_ctx *ctx, float B, float gamma,
                               float tension, float visc) {
    const float dt = ctx->dt;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density, rho0 = w->k.rest_density;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf nu = vf_set1(dt * w->k.volume * visc);
    const pbf_vf eps_h2 = vf_set1(0.01f * k->h2), zero = vf_set1(0.0f);
    int bad = INT_MAX;
    const float *P, *PV;
    pbf_cpu_sph_pack(w, NULL, 1, &P, &PV);
    float *WC = pbf_cpu_sph_wall_begin(w);
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
            const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            pbf_vf rho = vf_set1(0.0f), ax = rho, ay = rho, az = rho;
            FOR_NEIGHBOURS_R(w, i, &cache,
                pbf_vf xj, yj, zj, vxj, vyj, vzj;
                load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
                load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                rho += v_kw(k, r2, in, k->cubic != 0.0f);
                /* Pi_ij = -nu min(v_ij . x_ij, 0) / (|x_ij|^2 + 0.01 h^2); a_i = -sum m Pi_ij grad W */
                pbf_vf vr = vf_and((vxi - vxj) * dx + (vyi - vyj) * dy + (vzi - vzj) * dz, in);
                pbf_vf f = vf_and(nu * (zero - vf_max(zero - vr, zero)) / (r2 + eps_h2) * v_kgrad(k, r2, in, k->cubic != 0.0f), in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            float r = w->k.mass * vf_hsum(rho) + w->k.rest_density * wall;
            w->density[i] = r;
            w->lambda[i] = pbf_state_k(r * inv_rho0, B, gamma, tension, rho0, dt);
            w->sx[i] = vf_hsum(ax);
            w->sy[i] = vf_hsum(ay);
            w->sz[i] = vf_hsum(az);
            if (!isfinite(w->lambda[i] + w->sx[i] + w->sy[i] + w->sz[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    w->solve_error = 100.0 * pbf_cpu_mean_excess(w, w->density, inv_rho0, -1.0f);
    return bad;
}
