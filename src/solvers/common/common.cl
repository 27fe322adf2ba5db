/*
 * The GPU kernels of the stages several methods share (src/solvers/common/): the velocity update
 * with gravity and the external forces (predict for PBF, gravity for the SPH family), the
 * neighbour sums of the density and its gradient (PBF's lambda, DFSPH's factor, IISPH's
 * diagonal), the collisions, the velocity and curl, vorticity confinement with XSPH, and the
 * SPH family's advect. Part of the one kernel source of the GPU backends: included by
 * src/backends/gpu/pbf_kernels.cl after its prelude and neighbour loops (not compiled alone);
 * the launches are common_gpu.c.
 */

/* The velocity both pbf_k_predict and pbf_k_gravity start from (cpu.c stage_predict,
 * stage_gravity): v + dt g, the bed shear stress (pbf_bed_drag, an external force) and the speed
 * limit, each clamp counted. */
PBF_DEVICE_FN void pbf_gpu_external(const pbf_gpu_params *P, const PBF_GLOBAL pbf_wall_box *boxes,
                                    const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                                    const PBF_GLOBAL float *pz, const PBF_GLOBAL float *vx,
                                    const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                                    PBF_GLOBAL int *bad, int i, float u[3]) {
    u[0] = vx[i] + P->gdt[0];
    u[1] = vy[i] + P->gdt[1];
    u[2] = vz[i] + P->gdt[2];
    if (P->wc.drag_on) {
        const pbf_walls_consts wc = P->wc;
        const float p[3] = {px[i], py[i], pz[i]};
        pbf_bed_drag(&wc, boxes, p, P->dt, u);
    }
    if (pbf_limit_speed(&u[0], &u[1], &u[2], P->vmax)) PBF_ATOMIC_ADD_U32(&bad[P->clamp_at], 1u);
}

/* v += dt g (and the bed shear stress), |v| <= vmax, x* = x + dt v  (cpu.c stage_predict) */
PBF_KERNEL pbf_k_predict(const pbf_gpu_params P, const PBF_GLOBAL float *px,
                       const PBF_GLOBAL float *py, const PBF_GLOBAL float *pz,
                       PBF_GLOBAL float *vx, PBF_GLOBAL float *vy, PBF_GLOBAL float *vz,
                       PBF_GLOBAL float *qx, PBF_GLOBAL float *qy, PBF_GLOBAL float *qz,
                       const PBF_GLOBAL pbf_wall_box *boxes,
                       PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    float u[3];
    pbf_gpu_external(&P, boxes, px, py, pz, vx, vy, vz, bad, i, u);
    const float ux = u[0], uy = u[1], uz = u[2];
    vx[i] = ux;
    vy[i] = uy;
    vz[i] = uz;
    const float x = px[i] + P.dt * ux, y = py[i] + P.dt * uy, z = pz[i] + P.dt * uz;
    qx[i] = x;
    qy[i] = y;
    qz[i] = z;
    if (!isfinite(x + y + z)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* The neighbour sums of particle i at x* that PBF's lambda (eq. 11) and DFSPH's factor share
 * (cpu.c density_grad_sums): sum_j W_ij, sum_j V grad W_ij (= -grad_{p_j} C_i, eq. 8; zero for
 * j = i) and sum_j |V grad W_ij|^2. */
PBF_DEVICE_FN void pbf_gpu_density_grad_sums(const pbf_gpu_params *P, const PBF_GLOBAL float *qx,
                                             const PBF_GLOBAL float *qy,
                                             const PBF_GLOBAL float *qz,
                                             const PBF_GLOBAL unsigned int *cell,
                                             const PBF_GLOBAL unsigned int *start,
                                             const PBF_GLOBAL float *q0x,
                                             const PBF_GLOBAL float *q0y,
                                             const PBF_GLOBAL float *q0z, int i, float *rho_sum,
                                             float g[3], float *s2_sum) {
    const pbf_sph_consts k = P->k;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    float rho[PBF_LANES], gx[PBF_LANES], gy[PBF_LANES], gz[PBF_LANES], s2[PBF_LANES];
    PBF_LANE_ZERO(rho);
    PBF_LANE_ZERO(gx);
    PBF_LANE_ZERO(gy);
    PBF_LANE_ZERO(gz);
    PBF_LANE_ZERO(s2);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                             \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        rho[l] += in ? pbf_kernel_w(&k, r2) : 0.0f;                                                \
        const float f = k.volume * (in ? pbf_kernel_grad(&k, r2) : 0.0f);                          \
        const float ax = in ? f * dx : 0.0f, ay = in ? f * dy : 0.0f, az = in ? f * dz : 0.0f;     \
        gx[l] += ax;                                                                               \
        gy[l] += ay;                                                                               \
        gz[l] += az;                                                                               \
        s2[l] += ax * ax + ay * ay + az * az;
    PBF_FOR_NEIGHBOURS((*P), start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    *rho_sum = pbf_gpu_hsum(rho);
    g[0] = pbf_gpu_hsum(gx);
    g[1] = pbf_gpu_hsum(gy);
    g[2] = pbf_gpu_hsum(gz);
    *s2_sum = pbf_gpu_hsum(s2);
}

/* x* += delta p, collisions with the boxes and the container, friction. */
PBF_KERNEL pbf_k_collide(const pbf_gpu_params P, PBF_GLOBAL float *qx, PBF_GLOBAL float *qy,
                       PBF_GLOBAL float *qz, const PBF_GLOBAL float *sx,
                       const PBF_GLOBAL float *sy, const PBF_GLOBAL float *sz,
                       const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                       const PBF_GLOBAL float *pz, const PBF_GLOBAL pbf_wall_box *boxes,
                       PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    const float x = qx[i] + sx[i], y = qy[i] + sy[i], z = qz[i] + sz[i];
    if (!isfinite(x + y + z)) PBF_ATOMIC_MIN_I32(&bad[slot], i); /* before the clamp hides it */
    float q[3] = {x, y, z}, o[3] = {px[i], py[i], pz[i]};
    if (!pbf_collide_inside(&wc, q)) pbf_collide(&wc, boxes, q, o);
    qx[i] = q[0];
    qy[i] = q[1];
    qz[i] = q[2];
}

/* v = (x* - x) / dt, |v| <= vmax (the first half of stage "velocity"). */
PBF_KERNEL pbf_k_velocity(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                        const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                        const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                        const PBF_GLOBAL float *pz, PBF_GLOBAL float *vx, PBF_GLOBAL float *vy,
                        PBF_GLOBAL float *vz, const PBF_GLOBAL unsigned char *ghost,
                        PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    float ux = (qx[i] - px[i]) * P.inv_dt, uy = (qy[i] - py[i]) * P.inv_dt,
          uz = (qz[i] - pz[i]) * P.inv_dt;
    if (pbf_limit_speed(&ux, &uy, &uz, P.vmax) && !PBF_IS_GHOST(ghost, i))
        PBF_ATOMIC_ADD_U32(&bad[P.clamp_at], 1u);
    vx[i] = ux;
    vy[i] = uy;
    vz[i] = uz;
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* Vorticity omega_i (eq. 15) into s, |omega_i| into `omega`, density at x* (second half of
 * "velocity"). */
PBF_KERNEL pbf_k_curl(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                      const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                      const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                      const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                      const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *F,
                      const PBF_GLOBAL float *G, const PBF_GLOBAL pbf_wall_box *boxes,
                      const PBF_GLOBAL float *vx, const PBF_GLOBAL float *vy,
                      const PBF_GLOBAL float *vz, PBF_GLOBAL float *density, PBF_GLOBAL float *sx,
                      PBF_GLOBAL float *sy, PBF_GLOBAL float *sz, PBF_GLOBAL float *omega,
                      PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxi = vx[i], vyi = vy[i], vzi = vz[i];
    float p[3] = {xi, yi, zi}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    float rho[PBF_LANES], ox[PBF_LANES], oy[PBF_LANES], oz[PBF_LANES];
    PBF_LANE_ZERO(rho);
    PBF_LANE_ZERO(ox);
    PBF_LANE_ZERO(oy);
    PBF_LANE_ZERO(oz);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                             \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        rho[l] += in ? pbf_kernel_w(&k, r2) : 0.0f;                                                \
        /* omega_i = sum_j V grad_i W_ij x (v_j - v_i)  (eq. 15) */                                \
        const float f = k.volume * (in ? pbf_kernel_grad(&k, r2) : 0.0f);                          \
        const float gx = f * dx, gy = f * dy, gz = f * dz;                                         \
        const float ux = in ? vx[j] - vxi : 0.0f, uy = in ? vy[j] - vyi : 0.0f,                    \
                    uz = in ? vz[j] - vzi : 0.0f;                                                  \
        ox[l] += in ? gy * uz - gz * uy : 0.0f;                                                    \
        oy[l] += in ? gz * ux - gx * uz : 0.0f;                                                    \
        oz[l] += in ? gx * uy - gy * ux : 0.0f;
    PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    density[i] = k.mass * pbf_gpu_hsum(rho) + k.rest_density * wall;
    const float wx = pbf_gpu_hsum(ox), wy = pbf_gpu_hsum(oy), wz = pbf_gpu_hsum(oz);
    sx[i] = wx;
    sy[i] = wy;
    sz[i] = wz;
    const float w = PBF_SQRTF(wx * wx + wy * wy + wz * wz);
    /* without vorticity confinement |omega| is never read: lambda, which `omega` is then when
     * PBF's warm start carries it to the next step (P.lambda_warm), keeps its values */
    if (P.vorticity > 0.0f || P.lambda_warm == 0.0f) omega[i] = w;
    if (!isfinite(w)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* Vorticity confinement (eq. 16) and XSPH (eq. 17); the new velocity goes into `out` (which may
 * be the buffer of s: each work-item reads only its own omega before it writes). */
PBF_KERNEL pbf_k_vorticity_xsph(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                                const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                                const PBF_GLOBAL unsigned int *cell,
                                const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                                const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                                const PBF_GLOBAL float *vx, const PBF_GLOBAL float *vy,
                                const PBF_GLOBAL float *vz, const PBF_GLOBAL float *sx,
                                const PBF_GLOBAL float *sy, const PBF_GLOBAL float *sz,
                                const PBF_GLOBAL float *omega, const PBF_GLOBAL float *density,
                                PBF_GLOBAL float *outx, PBF_GLOBAL float *outy,
                                PBF_GLOBAL float *outz, const PBF_GLOBAL unsigned char *ghost,
                                PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxs = vx[i], vys = vy[i], vzs = vz[i];
    const float oxi = sx[i], oyi = sy[i], ozi = sz[i], wi = omega[i];
    float ex[PBF_LANES], ey[PBF_LANES], ez[PBF_LANES], ax[PBF_LANES], ay[PBF_LANES],
        az[PBF_LANES];
    PBF_LANE_ZERO(ex);
    PBF_LANE_ZERO(ey);
    PBF_LANE_ZERO(ez);
    PBF_LANE_ZERO(ax);
    PBF_LANE_ZERO(ay);
    PBF_LANE_ZERO(az);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                             \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        const float vj = in ? k.mass / density[j] : 0.0f;                                          \
        /* XSPH: sum_j (m / rho_j) (v_j - v_i) W_ij  (eq. 17); the j = i term is 0 */              \
        const float wk = vj * (in ? pbf_kernel_w(&k, r2) : 0.0f);                                  \
        ax[l] += in ? wk * (vx[j] - vxs) : 0.0f;                                                   \
        ay[l] += in ? wk * (vy[j] - vys) : 0.0f;                                                   \
        az[l] += in ? wk * (vz[j] - vzs) : 0.0f;                                                   \
        /* eta = grad |omega| = sum_j V_j (|omega_j| - |omega_i|) grad_i W_ij  (eq. 16) */         \
        const float f = (in ? vj * (omega[j] - wi) : 0.0f) * (in ? pbf_kernel_grad(&k, r2) : 0.0f);  \
        ex[l] += in ? f * dx : 0.0f;                                                               \
        ey[l] += in ? f * dy : 0.0f;                                                               \
        ez[l] += in ? f * dz : 0.0f;
    PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    float ux = vxs + P.xsph * pbf_gpu_hsum(ax), uy = vys + P.xsph * pbf_gpu_hsum(ay),
          uz = vzs + P.xsph * pbf_gpu_hsum(az);
    const float hx = pbf_gpu_hsum(ex), hy = pbf_gpu_hsum(ey), hz = pbf_gpu_hsum(ez);
    const float el = PBF_SQRTF(hx * hx + hy * hy + hz * hz);
    if (P.vorticity > 0.0f && el > 1e-20f) {
        const float nx = hx / el, ny = hy / el, nz = hz / el;
        /* f = eps (N x omega), applied as an acceleration over dt */
        ux += P.dt * P.vorticity * (ny * ozi - nz * oyi);
        uy += P.dt * P.vorticity * (nz * oxi - nx * ozi);
        uz += P.dt * P.vorticity * (nx * oyi - ny * oxi);
    }
    if (pbf_limit_speed(&ux, &uy, &uz, P.vmax) && !PBF_IS_GHOST(ghost, i))
        PBF_ATOMIC_ADD_U32(&bad[P.clamp_at], 1u);
    outx[i] = ux;
    outy[i] = uy;
    outz[i] = uz;
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* v += dt g (and the bed shear stress), |v| <= vmax; x* = x: the SPH solvers find neighbours
 * and densities at x. */
PBF_KERNEL pbf_k_gravity(const pbf_gpu_params P, const PBF_GLOBAL float *px,
                         const PBF_GLOBAL float *py, const PBF_GLOBAL float *pz,
                         PBF_GLOBAL float *vx, PBF_GLOBAL float *vy, PBF_GLOBAL float *vz,
                         PBF_GLOBAL float *qx, PBF_GLOBAL float *qy, PBF_GLOBAL float *qz,
                         const PBF_GLOBAL pbf_wall_box *boxes,
                         PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    float u[3];
    pbf_gpu_external(&P, boxes, px, py, pz, vx, vy, vz, bad, i, u);
    const float ux = u[0], uy = u[1], uz = u[2];
    vx[i] = ux;
    vy[i] = uy;
    vz[i] = uz;
    qx[i] = px[i];
    qy[i] = py[i];
    qz[i] = pz[i];
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* delta x = dt v into s (applied with the collisions by pbf_k_collide); the velocity buffers,
 * whose value the velocity stage computes anew, take q0 = x (the positions of the neighbour
 * sets, which collide moves x* away from), as PBF's grid leaves them for the stages after it. */
PBF_KERNEL pbf_k_advect(const pbf_gpu_params P, const PBF_GLOBAL float *px,
                        const PBF_GLOBAL float *py, const PBF_GLOBAL float *pz,
                        PBF_GLOBAL float *vx, PBF_GLOBAL float *vy, PBF_GLOBAL float *vz,
                        PBF_GLOBAL float *sx, PBF_GLOBAL float *sy, PBF_GLOBAL float *sz) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    sx[i] = P.dt * vx[i];
    sy[i] = P.dt * vy[i];
    sz[i] = P.dt * vz[i];
    vx[i] = px[i];
    vy[i] = py[i];
    vz[i] = pz[i];
}
