/*
 * The GPU kernels of IISPH's own stages (Ihmsen et al. 2014): the diagonal a_ii and the relaxed
 * Jacobi update of the pressure. Part of the one kernel source of the GPU backends: included by
 * src/backends/gpu/pbf_kernels.cl after sph.cl (not compiled alone); the launches are
 * iisph_gpu.c.
 */

#include "iisph_formulas.h"

/* IISPH: density (walls included), the diagonal a_ii (Ihmsen et al. 2014) into aii, the pressure
 * zeroed. */
PBF_KERNEL pbf_k_iisph_diagonal(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                                const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                const PBF_GLOBAL unsigned int *cell,
                                const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                                const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                                const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                                const PBF_GLOBAL pbf_wall_box *boxes, PBF_GLOBAL float *density,
                                PBF_GLOBAL float *aii, PBF_GLOBAL float *kacc,
                                PBF_GLOBAL float *kk, const PBF_GLOBAL float *warm,
                                PBF_GLOBAL float *warm_v, PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    float p[3] = {qx[i], qy[i], qz[i]}, gw[3], rho, g[3], s2;
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    pbf_gpu_density_grad_sums(&P, qx, qy, qz, cell, start, q0x, q0y, q0z, i, &rho, g, &s2);
    const float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
    const float r = P.k.mass * rho + P.k.rest_density * wall;
    const float a = pbf_iisph_diagonal(gix * gix + giy * giy + giz * giz, s2);
    density[i] = r;
    aii[i] = a;
    if (P.warm > 0.0f) { /* the warm start: applied by the pressure acceleration that follows */
        const float pw = pbf_iisph_warm_p(warm[i], warm_v[i]);
        warm_v[i] = warm[i];
        const float k0 = pbf_iisph_warm_k(P.warm, pw, r * P.inv_rho0, P.dt);
        kacc[i] = k0;
        kk[i] = k0;
    } else {
        kacc[i] = 0.0f;
    }
    if (!isfinite(r + a)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* IISPH: the density rho_i^l / rho_0 = rho_i / rho_0 + dt D_i predicted from the velocities the
 * current pressure gives, its error into err, and the relaxed Jacobi update of the pressure
 * (kacc), with the increment in kk. */
PBF_KERNEL pbf_k_iisph_pressure(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                                const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                const PBF_GLOBAL unsigned int *cell,
                                const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                                const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                                const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                                const PBF_GLOBAL pbf_wall_box *boxes, const PBF_GLOBAL float *vx,
                                const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                                const PBF_GLOBAL float *density, const PBF_GLOBAL float *aii,
                                PBF_GLOBAL float *kacc, PBF_GLOBAL float *err,
                                PBF_GLOBAL float *kk, PBF_GLOBAL float *warm, PBF_GLOBAL int *bad,
                                int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    float p[3] = {qx[i], qy[i], qz[i]}, gw[3];
    pbf_wall_density(&wc, F, G, boxes, p, gw);
    const float d =
        pbf_gpu_density_rate(&P, qx, qy, qz, cell, start, q0x, q0y, q0z, vx, vy, vz, i, gw);
    const float rel = density[i] * P.inv_rho0 + P.dt * d;
    const float k0 = kacc[i], kn = pbf_iisph_k(k0, rel, aii[i], P.m.iisph.omega, P.factor_eps);
    const float dk = kn - k0;
    if (P.warm > 0.0f) warm[i] = pbf_iisph_warm_keep(kn, density[i] * P.inv_rho0, P.dt);
    err[i] = rel - 1.0f;
    kk[i] = dk;
    kacc[i] = kn;
    if (!isfinite(dk)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}
