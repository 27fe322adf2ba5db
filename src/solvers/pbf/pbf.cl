/*
 * The GPU kernels of PBF's own stages (Macklin & Mueller 2013): lambda (eq. 11) and delta p
 * (eq. 12-14). Part of the one kernel source of the GPU backends: included by
 * src/backends/gpu/pbf_kernels.cl after common.cl (not compiled alone); the launches are
 * pbf_gpu.c.
 */

/* rho_i (eq. 2) with the wall, C_i (eq. 1, clamped at 0 when unilateral), lambda_i (eq. 11),
 * Chebyshev-accelerated (pbf_chebyshev_lambda) when P.chebyshev != 1, warm-started
 * (pbf_warm_lambda) when P.lambda_warm != 0, by P.m.pbf.lambda_carry in the first iteration
 * (pbf_warm_lambda_factor). */
PBF_KERNEL pbf_k_lambda(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                        const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                        const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                        const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                        const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *F,
                        const PBF_GLOBAL float *G, const PBF_GLOBAL pbf_wall_box *boxes,
                        PBF_GLOBAL float *density, PBF_GLOBAL float *lambda, PBF_GLOBAL int *bad,
                        int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    float p[3] = {qx[i], qy[i], qz[i]}, gw[3], rho, g[3], s2;
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    pbf_gpu_density_grad_sums(&P, qx, qy, qz, cell, start, q0x, q0y, q0z, i, &rho, g, &s2);
    const float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
    const float r = P.k.mass * rho + P.k.rest_density * wall;
    density[i] = r;
    float cc = r * P.inv_rho0 - 1.0f; /* eq. 1 */
    if (P.m.pbf.unilateral && cc < 0.0f) cc = 0.0f;
    const float sum2 = s2 + gix * gix + giy * giy + giz * giz;
    float lam = -cc / (sum2 + P.m.pbf.eps_abs); /* eq. 11 */
    /* lambda still holds the previous iteration's (each work-item reads its own) */
    lam = pbf_chebyshev_lambda(lam, lambda[i], P.chebyshev);
    /* the warm start: lambda holds the previous iteration's, or the previous step's last */
    if (P.lambda_warm != 0.0f)
        lam = pbf_warm_lambda(
            lam, lambda[i],
            pbf_warm_lambda_factor(P.lambda_warm, P.m.pbf.lambda_carry, P.iteration));
    lambda[i] = lam;
    if (!isfinite(lam)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* delta p_i with s_corr (eq. 12-14), the wall term and over-relaxation, into s. */
PBF_KERNEL pbf_k_delta_p(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                         const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                         const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                         const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                         const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *F,
                         const PBF_GLOBAL float *G, const PBF_GLOBAL pbf_wall_box *boxes,
                         const PBF_GLOBAL float *lambda, PBF_GLOBAL float *sx,
                         PBF_GLOBAL float *sy, PBF_GLOBAL float *sz, PBF_GLOBAL int *bad,
                         int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i], li = lambda[i];
    float p[3] = {xi, yi, zi}, gw[3];
    pbf_wall_density(&wc, F, G, boxes, p, gw);
    float ax[PBF_LANES], ay[PBF_LANES], az[PBF_LANES];
    PBF_LANE_ZERO(ax);
    PBF_LANE_ZERO(ay);
    PBF_LANE_ZERO(az);
    /* the default n = 4 with a constant exponent: no loop in the lanes, which then vectorise */
#define PBF_DELTA_P_LANE(n)                                                                        \
    const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                                 \
    const float r2 = dx * dx + dy * dy + dz * dz;                                                  \
    const int in = valid && r2 < k.h2;                                                             \
    const float w = in ? pbf_poly6(&k, r2) : 0.0f;                                                 \
    const float scorr = /* eq. 13 */                                                               \
        pbf_scorr_split(pbf_scorr_shape(w, P.m.pbf.inv_wdq, (n)), P.m.pbf.s_rest, P.m.pbf.ks,      \
                        P.m.pbf.ksg);                                                              \
    const float f = (li + lambda[j] + scorr) * k.volume * (in ? pbf_spiky(&k, r2) : 0.0f);         \
    ax[l] += in ? f * dx : 0.0f;                                                                   \
    ay[l] += in ? f * dy : 0.0f;                                                                   \
    az[l] += in ? f * dz : 0.0f;
    if (P.m.pbf.scorr_n == 4) {
        #define PBF_NBR_BODY()                                                                     \
            PBF_DELTA_P_LANE(4)
        PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
        #undef PBF_NBR_BODY
    } else {
        #define PBF_NBR_BODY()                                                                     \
            PBF_DELTA_P_LANE(P.m.pbf.scorr_n)
        PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
        #undef PBF_NBR_BODY
    }
#undef PBF_DELTA_P_LANE
    /* over-relaxation of the Jacobi step (SOR): omega = 1 is the paper; the wall's term with its
     * share of s_corr (pbf_scorr_wall_term) */
    const float lw = li + P.m.pbf.scorr_wall;
    const float dpx = P.m.pbf.omega * (lw * gw[0] + pbf_gpu_hsum(ax)),
                dpy = P.m.pbf.omega * (lw * gw[1] + pbf_gpu_hsum(ay)),
                dpz = P.m.pbf.omega * (lw * gw[2] + pbf_gpu_hsum(az));
    sx[i] = dpx; /* eq. 14 */
    sy[i] = dpy;
    sz[i] = dpz;
    if (!isfinite(dpx + dpy + dpz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}
