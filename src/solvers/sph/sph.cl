/*
 * The GPU kernels the SPH family (WCSPH, DFSPH, PCISPH, IISPH) shares: the rate of change of the
 * density from the velocities (DFSPH's source, IISPH's pressure) and the symmetric pressure
 * acceleration. Part of the one kernel source of the GPU backends: included by
 * src/backends/gpu/pbf_kernels.cl after common.cl (not compiled alone); the launches are
 * sph_gpu.c.
 */

/* ---- the SPH solvers' stages (formulas: the methods' <name>_formulas.h; the CPU stages of the
 * same names are the reference, term for term). Buffers during their pressure stages: density
 * rho_i,
 * s the DFSPH factor (x) and the per-particle error of the last measuring stage (y) or WCSPH's
 * viscous velocity change (x, y, z), lambda the k_i of the pressure acceleration; x* = x, so the
 * neighbour sets' positions q0 are x* itself until advect. */

/* D_i = sum_j V (v_i - v_j) . grad W_ij + v_i . grad wall_i, the rate of change of rho_i / rho_0
 * from the current velocities (the wall is at rest; gw its gradient at x_i): cpu.c density_rate. */
PBF_DEVICE_FN float pbf_gpu_density_rate(const pbf_gpu_params *P, const PBF_GLOBAL float *qx,
                                         const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                         const PBF_GLOBAL unsigned int *cell,
                                         const PBF_GLOBAL unsigned int *start,
                                         const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                                         const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *vx,
                                         const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                                         int i, const float gw[3]) {
    const pbf_sph_consts k = P->k;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxi = vx[i], vyi = vy[i], vzi = vz[i];
    float ds[PBF_LANES];
    PBF_LANE_ZERO(ds);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                             \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        const float f = k.volume * (in ? pbf_kernel_grad(&k, r2) : 0.0f);                          \
        const float ux = in ? vxi - vx[j] : 0.0f, uy = in ? vyi - vy[j] : 0.0f,                    \
                    uz = in ? vzi - vz[j] : 0.0f;                                                  \
        ds[l] += (in ? f * dx : 0.0f) * ux + (in ? f * dy : 0.0f) * uy + (in ? f * dz : 0.0f) * uz;
    PBF_FOR_NEIGHBOURS((*P), start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    return pbf_gpu_hsum(ds) + vxi * gw[0] + vyi * gw[1] + vzi * gw[2];
}

/* The symmetric pressure acceleration of every SPH solver over dt, from k = dt^2 rho_0 p / rho^2:
 * v_i -= (sum_j V (k_i + k_j) grad W_ij + k_i grad wall_i) / dt, plus WCSPH's viscous change
 * (viscous != 0), then the collisions and friction on the motion dt v, into o. Without
 * `predicted`, o may be v itself (a work-item reads only its own velocity). With `predicted`
 * (PCISPH) the gradients are taken at the predicted positions x + dt v, which read the
 * neighbours' velocities: o must be other buffers (the host then swaps them with v), as cpu.c's
 * pressure_accel writes s. */
PBF_KERNEL pbf_k_pressure_accel(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                                const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                const PBF_GLOBAL unsigned int *cell,
                                const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                                const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                                const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                                const PBF_GLOBAL pbf_wall_box *boxes, const PBF_GLOBAL float *kk,
                                const PBF_GLOBAL float *avx, const PBF_GLOBAL float *avy,
                                const PBF_GLOBAL float *avz, int viscous, int predicted,
                                const PBF_GLOBAL float *vx, const PBF_GLOBAL float *vy,
                                const PBF_GLOBAL float *vz, PBF_GLOBAL float *ox,
                                PBF_GLOBAL float *oy, PBF_GLOBAL float *oz, PBF_GLOBAL int *bad,
                                int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float ki = kk[i];
    float p[3] = {qx[i], qy[i], qz[i]}, gw[3];
    float g[3] = {p[0], p[1], p[2]}; /* where the gradients are taken */
    if (predicted) {
        g[0] += P.dt * vx[i];
        g[1] += P.dt * vy[i];
        g[2] += P.dt * vz[i];
    }
    const float xi = g[0], yi = g[1], zi = g[2];
    pbf_wall_density(&wc, F, G, boxes, g, gw);
    float ax[PBF_LANES], ay[PBF_LANES], az[PBF_LANES];
    PBF_LANE_ZERO(ax);
    PBF_LANE_ZERO(ay);
    PBF_LANE_ZERO(az);
    #define PBF_NBR_BODY()                                                                         \
        float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                                   \
        if (predicted) {                                                                           \
            dx -= P.dt * vx[j];                                                                    \
            dy -= P.dt * vy[j];                                                                    \
            dz -= P.dt * vz[j];                                                                    \
        }                                                                                          \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        const float f = in ? (ki + kk[j]) * k.volume * pbf_kernel_grad(&k, r2) : 0.0f;             \
        ax[l] += in ? f * dx : 0.0f;                                                               \
        ay[l] += in ? f * dy : 0.0f;                                                               \
        az[l] += in ? f * dz : 0.0f;
    PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    float ux = vx[i] - (pbf_gpu_hsum(ax) + ki * gw[0]) * P.inv_dt;
    float uy = vy[i] - (pbf_gpu_hsum(ay) + ki * gw[1]) * P.inv_dt;
    float uz = vz[i] - (pbf_gpu_hsum(az) + ki * gw[2]) * P.inv_dt;
    if (viscous) {
        ux += avx[i];
        uy += avy[i];
        uz += avz[i];
    }
    pbf_sph_collide_velocity(&wc, boxes, p, P.dt, &ux, &uy, &uz);
    ox[i] = ux;
    oy[i] = uy;
    oz[i] = uz;
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* ---- PCISPH and IISPH (cpu.c's stages of the same names): the pressure k accumulates over the
 * iterations (PCISPH: in density, IISPH: in s.y), lambda holds each iteration's increment, which
 * pbf_k_pressure_accel applies (the acceleration is linear in k); PCISPH's per-particle error
 * goes to s.x (free until its predicted pressure acceleration writes s), IISPH keeps a_ii in s.x
 * and its error in s.z. */

/* The sums of the state-equation methods' pressure stage (WCSPH, SESPH: their kernels) at
 * particle i: returns the density (walls included, wall the wall's part) and puts the velocity
 * change of the artificial viscosity over dt (nu = dt V alpha h c_s, pbf_state_viscosity) into
 * a; the CPU's pbf_cpu_sph_state_pressure, term for term. */
PBF_DEVICE_FN float pbf_gpu_state_sums(const pbf_gpu_params *P, const PBF_GLOBAL float *qx,
                                       const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                       const PBF_GLOBAL unsigned int *cell,
                                       const PBF_GLOBAL unsigned int *start,
                                       const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                                       const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *F,
                                       const PBF_GLOBAL float *G,
                                       const PBF_GLOBAL pbf_wall_box *boxes,
                                       const PBF_GLOBAL float *vx, const PBF_GLOBAL float *vy,
                                       const PBF_GLOBAL float *vz, int i, float nu, float a[3]) {
    const pbf_sph_consts k = P->k;
    const pbf_walls_consts wc = P->wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxi = vx[i], vyi = vy[i], vzi = vz[i];
    const float eps_h2 = 0.01f * k.h2;
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
    PBF_FOR_NEIGHBOURS((*P), start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    a[0] = pbf_gpu_hsum(ax);
    a[1] = pbf_gpu_hsum(ay);
    a[2] = pbf_gpu_hsum(az);
    return k.mass * pbf_gpu_hsum(rho) + k.rest_density * wall;
}
