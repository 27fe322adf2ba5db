/*
 * The GPU kernel of WCSPH's own stage: the Tait pressure and the artificial viscosity. Part of
 * the one kernel source of the GPU backends: included by src/backends/gpu/pbf_kernels.cl after
 * sph.cl (not compiled alone); the launch is wcsph_gpu.c.
 */

#include "wcsph_formulas.h"

/* WCSPH: density (walls included), the Tait pressure as k_i, and the velocity change of the
 * artificial viscosity over dt into a (added by the pressure acceleration); the sums are the
 * state-equation methods' (sph.cl, pbf_gpu_state_sums). */
PBF_KERNEL pbf_k_wcsph_pressure(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                                const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                const PBF_GLOBAL unsigned int *cell,
                                const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                                const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                                const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                                const PBF_GLOBAL pbf_wall_box *boxes, const PBF_GLOBAL float *vx,
                                const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                                PBF_GLOBAL float *density, PBF_GLOBAL float *kk,
                                PBF_GLOBAL float *avx, PBF_GLOBAL float *avy,
                                PBF_GLOBAL float *avz, PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    float a[3];
    const float r = pbf_gpu_state_sums(&P, qx, qy, qz, cell, start, q0x, q0y, q0z, F, G, boxes, vx,
                                       vy, vz, i, P.m.wcsph.nu, a);
    density[i] = r;
    const float ki =
        pbf_wcsph_k(r * P.inv_rho0, P.m.wcsph.b, P.m.wcsph.gamma, P.k.rest_density, P.dt);
    kk[i] = ki;
    avx[i] = a[0];
    avy[i] = a[1];
    avz[i] = a[2];
    if (!isfinite(ki + a[0] + a[1] + a[2])) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}
