/*
 * The GPU kernel of WCSPH's own stage: the Tait pressure and the artificial viscosity. Part of
 * the one kernel source of the GPU backends: included by src/backends/gpu/pbf_kernels.cl after
 * sph.cl (not compiled alone); the launch is wcsph_gpu.c.
 */

#include "wcsph_formulas.h"

/* WCSPH: density (walls included), the Tait pressure as k_i, and the velocity change of the
 * artificial viscosity over dt into a (added by the pressure acceleration). */
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
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxi = vx[i], vyi = vy[i], vzi = vz[i];
    const float nu = P.m.wcsph.nu, eps_h2 = 0.01f * k.h2;
    float p[3] = {xi, yi, zi}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    float rho[PBF_LANES], ax[PBF_LANES], ay[PBF_LANES], az[PBF_LANES];
    PBF_LANE_ZERO(rho);
    PBF_LANE_ZERO(ax);
    PBF_LANE_ZERO(ay);
    PBF_LANE_ZERO(az);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                             \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        rho[l] += in ? pbf_kernel_w(&k, r2) : 0.0f;                                                \
        /* Pi_ij = -nu min(v_ij . x_ij, 0) / (|x_ij|^2 + 0.01 h^2); a_i = -sum m Pi_ij grad W */   \
        const float vr =                                                                           \
            in ? (vxi - vx[j]) * dx + (vyi - vy[j]) * dy + (vzi - vz[j]) * dz : 0.0f;              \
        const float nvr = 0.0f - vr, mx = nvr > 0.0f ? nvr : 0.0f;                                 \
        const float f = in ? nu * (0.0f - mx) / (r2 + eps_h2) * pbf_kernel_grad(&k, r2) : 0.0f;    \
        ax[l] += in ? f * dx : 0.0f;                                                               \
        ay[l] += in ? f * dy : 0.0f;                                                               \
        az[l] += in ? f * dz : 0.0f;
    PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    const float r = k.mass * pbf_gpu_hsum(rho) + k.rest_density * wall;
    density[i] = r;
    const float ki =
        pbf_wcsph_k(r * P.inv_rho0, P.m.wcsph.b, P.m.wcsph.gamma, k.rest_density, P.dt);
    kk[i] = ki;
    const float a0 = pbf_gpu_hsum(ax), a1 = pbf_gpu_hsum(ay), a2 = pbf_gpu_hsum(az);
    avx[i] = a0;
    avy[i] = a1;
    avz[i] = a2;
    if (!isfinite(ki + a0 + a1 + a2)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}
