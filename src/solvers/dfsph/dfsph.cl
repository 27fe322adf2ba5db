/*
 * The GPU kernels of DFSPH's own stages (Bender & Koschier 2017): the factor and the source term
 * of the divergence and density solves (with their warm starts). Part of the one kernel source
 * of the GPU backends: included by src/backends/gpu/pbf_kernels.cl after sph.cl (not compiled
 * alone); the launches are dfsph_gpu.c.
 */

#include "dfsph_formulas.h"

/* DFSPH: density (walls included) and the factor of eq. 11 (Bender & Koschier 2017). */
PBF_KERNEL pbf_k_dfsph_factor(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                              const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                              const PBF_GLOBAL unsigned int *cell,
                              const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                              const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                              const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                              const PBF_GLOBAL pbf_wall_box *boxes, PBF_GLOBAL float *density,
                              PBF_GLOBAL float *factor, PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    float p[3] = {qx[i], qy[i], qz[i]}, gw[3], rho, g[3], s2;
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    pbf_gpu_density_grad_sums(&P, qx, qy, qz, cell, start, q0x, q0y, q0z, i, &rho, g, &s2);
    const float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
    const float r = P.k.mass * rho + P.k.rest_density * wall;
    const float a = pbf_dfsph_factor(gix * gix + giy * giy + giz * giz, s2, P.factor_eps);
    density[i] = r;
    factor[i] = a;
    if (!isfinite(r + a)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* DFSPH: the source term of the divergence (divergence != 0) or density solve from the current
 * velocities into err, and k_i = factor_i * source_i. */
PBF_KERNEL pbf_k_dfsph_source(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                              const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                              const PBF_GLOBAL unsigned int *cell,
                              const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                              const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                              const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                              const PBF_GLOBAL pbf_wall_box *boxes, const PBF_GLOBAL float *vx,
                              const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                              const PBF_GLOBAL float *density, const PBF_GLOBAL float *factor,
                              PBF_GLOBAL float *err, PBF_GLOBAL float *kk, int divergence,
                              int warm_start, PBF_GLOBAL float *ksum, PBF_GLOBAL float *warm,
                              PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    float p[3] = {qx[i], qy[i], qz[i]}, gw[3];
    pbf_wall_density(&wc, F, G, boxes, p, gw);
    const float d =
        pbf_gpu_density_rate(&P, qx, qy, qz, cell, start, q0x, q0y, q0z, vx, vy, vz, i, gw);
    const float c =
        pbf_dfsph_source(density[i] * P.inv_rho0, d, P.dt, divergence, P.m.dfsph.min_rel);
    /* the divergence solve's warm start within its first iteration (pbf_dfsph_warm_first) */
    const int first = divergence && P.m.dfsph.warm_first;
    const float frac = divergence ? P.m.dfsph.warm_v : P.warm;
    const int keep = frac > 0.0f;
    float ki;
    if (warm_start) { /* cpu.c's stage_dfsph_source with start: the solve's first k */
        ki = keep ? pbf_dfsph_warm_k(frac, warm[i], c, factor[i], P.m.dfsph.full, P.dt) : 0.0f;
    } else {
        float kw = 0.0f;
        const int warm_first = keep && first && P.iteration == 0;
        if (warm_first) { /* kappa^v_i, read before it is replaced */
            kw = pbf_dfsph_warm_k(frac, warm[i], c, factor[i], P.m.dfsph.full, P.dt);
            ksum[i] = 0.0f; /* no k applied yet in this substep */
            warm[i] = 0.0f;
        } else if (keep) { /* the k applied so far: the start's, then each iteration's */
            const float sum = P.iteration == 0 ? kk[i] : ksum[i] + kk[i];
            ksum[i] = sum;
            warm[i] = pbf_dfsph_warm_keep(sum, factor[i], P.m.dfsph.full, P.dt);
        }
        ki = pbf_dfsph_k(c, factor[i], kk[i], divergence ? P.m.dfsph.chebyshev_v : P.chebyshev,
                         divergence);
        if (warm_first) ki = pbf_dfsph_warm_first(ki, kw);
        err[i] = c;
    }
    kk[i] = ki;
    if (!isfinite(ki)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}
