/*
 * The GPU kernels of PCISPH's own stages: the start of the solve and the pressure correction.
 * Part of the one kernel source of the GPU backends: included by src/backends/gpu/pbf_kernels.cl
 * after sph.cl (not compiled alone); the launches are pcisph_gpu.c.
 */

#include "pcisph_formulas.h"

/* PCISPH: p = 0 before the loop, and the velocities the walls allow (the collisions on dt v), so
 * that the first prediction x + dt v lies inside the container and outside the boxes. */
PBF_KERNEL pbf_k_pcisph_init(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                             const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                             const PBF_GLOBAL pbf_wall_box *boxes, PBF_GLOBAL float *vx,
                             PBF_GLOBAL float *vy, PBF_GLOBAL float *vz, PBF_GLOBAL float *kacc,
                             PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    float p[3] = {qx[i], qy[i], qz[i]};
    float ux = vx[i], uy = vy[i], uz = vz[i];
    pbf_sph_collide_velocity(&wc, boxes, p, P.dt, &ux, &uy, &uz);
    vx[i] = ux;
    vy[i] = uy;
    vz[i] = uz;
    kacc[i] = 0.0f;
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* PCISPH: the density error at the predicted positions x + dt v (walls included) into err, and
 * the pressure corrected by delta times the error (eq. 8), >= 0, with the increment in kk. */
PBF_KERNEL pbf_k_pcisph_pressure(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                                 const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                 const PBF_GLOBAL unsigned int *cell,
                                 const PBF_GLOBAL unsigned int *start,
                                 const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                                 const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *F,
                                 const PBF_GLOBAL float *G, const PBF_GLOBAL pbf_wall_box *boxes,
                                 const PBF_GLOBAL float *vx, const PBF_GLOBAL float *vy,
                                 const PBF_GLOBAL float *vz, PBF_GLOBAL float *kacc,
                                 PBF_GLOBAL float *err, PBF_GLOBAL float *kk, PBF_GLOBAL int *bad,
                                 int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float dt = P.dt;
    float p[3] = {qx[i] + dt * vx[i], qy[i] + dt * vy[i], qz[i] + dt * vz[i]}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    const float xi = p[0], yi = p[1], zi = p[2];
    float rho[PBF_LANES];
    PBF_LANE_ZERO(rho);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j] - dt * vx[j], dy = yi - qy[j] - dt * vy[j],                    \
                    dz = zi - qz[j] - dt * vz[j];                                                  \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        rho[l] += in ? pbf_kernel_w(&k, r2) : 0.0f;
    PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    const float e = k.volume * pbf_gpu_hsum(rho) + wall - 1.0f;
    err[i] = e;
    if (!isfinite(e)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
    const float k0 = kacc[i], kn = pbf_pcisph_k(k0, e, P.m.pcisph.delta);
    kk[i] = kn - k0;
    kacc[i] = kn;
}
