/*
 * PBF's CPU stages: lambda (eq. 11, with the density of eq. 2) and delta p (eq. 12-14) with
 * s_corr and the walls, which also applies the collisions (pbf_cpu_collide then swaps the rows).
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/common/common_cpu.h"
#include "solvers/pbf/pbf.h"

#if PBF_PAIRS
/* density_grad_sums of particles i and i + 1 (index 0 and 1 of each result) from the packed
 * copy and the lists, bit-identical to it. */
static inline PBF_SIMD_INLINE void density_grad_sums_pair(pbf_world *w, int i, float rho_sum[2],
                                                          float g[2][3], float s2_sum[2],
                                                          const float *restrict P,
                                                          nb_ranges *ca, nb_ranges *cb) {
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2);
    const pbf_vf16 vol = vf16_set1(k->volume);
    pbf_vf16 rho = vf16_set1(0.0f), gx = rho, gy = rho, gz = rho, s2 = rho;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj;
        load_packed16(P, jv, &xj, &yj, &zj, NULL);
        pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi16 in = valid & (r2 < h2v);
        rho += v16_poly6(k, r2, in);
        pbf_vf16 f = vol * v16_spiky(k, r2, in);
        pbf_vf16 ax = vf16_and(f * dx, in), ay = vf16_and(f * dy, in), az = vf16_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
    );
    rho_sum[0] = vf_hsum(vf16_lo(rho));
    rho_sum[1] = vf_hsum(vf16_hi(rho));
    g[0][0] = vf_hsum(vf16_lo(gx));
    g[1][0] = vf_hsum(vf16_hi(gx));
    g[0][1] = vf_hsum(vf16_lo(gy));
    g[1][1] = vf_hsum(vf16_hi(gy));
    g[0][2] = vf_hsum(vf16_lo(gz));
    g[1][2] = vf_hsum(vf16_hi(gz));
    s2_sum[0] = vf_hsum(vf16_lo(s2));
    s2_sum[1] = vf_hsum(vf16_hi(s2));
}
#endif

/* cheb: the Chebyshev weight of this iteration (pbf_chebyshev_omega; 1 = plain Jacobi);
 * iteration: its number in the step (the first, 0, adds lambda_carry times the carried lambda). */
int pbf_pbf_lambda_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const int iteration = ctx->iteration;
    const float cheb = pbf_chebyshev_omega(w->def.pbf.chebyshev_rho, iteration);
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density;
    const int unilateral = w->def.pbf.constraint == PBF_CONSTRAINT_UNILATERAL;
    const float eps_abs = pbf_pbf_consts_of(w)->eps_abs; /* relaxation (eq. 11) */
    const int warm = pbf_lambda_carried(w);
    const float beta = pbf_warm_lambda_factor(w->def.pbf.lambda_warm_start,
                                              w->def.pbf.lambda_carry, iteration);
    int bad = INT_MAX;
    const float *P = pbf_cpu_pack_reserve(w) ? (pbf_cpu_pack_xyzl(w, 0), LISTS(w)->pack) : NULL;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        cache.prefetch = P;
#if PBF_PAIRS
        nb_ranges cache_b = NB_RANGES_INIT;
        cache_b.prefetch = P;
        const int pairs = P && LISTS(w)->ok;
        float pr[2] = {0}, pg[2][3] = {{0}}, ps2[2] = {0};
#endif
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3], rho, g[3], s2;
            float wall = pbf_world_wall_density(w, p, gw);
            /* the wall's gradient at x* for delta p, which follows at the same x*: into v,
             * dead from the prediction to the velocity stage (delta p reads its own, then
             * writes x* + delta p over it) */
            w->vx[i] = gw[0];
            w->vy[i] = gw[1];
            w->vz[i] = gw[2];
#if PBF_PAIRS
            /* the sweep's chunks start even: i even takes i and i + 1 */
            if (pairs && (i & 1) == 0 && i + 1 < n) {
                density_grad_sums_pair(w, i, pr, pg, ps2, P, &cache, &cache_b);
                rho = pr[0], g[0] = pg[0][0], g[1] = pg[0][1], g[2] = pg[0][2], s2 = ps2[0];
            } else if (pairs && (i & 1)) {
                rho = pr[1], g[0] = pg[1][0], g[1] = pg[1][1], g[2] = pg[1][2], s2 = ps2[1];
            } else
#endif
            density_grad_sums(w, i, &rho, g, &s2, P, &cache, 0);
            float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
            float r = w->k.mass * rho + w->k.rest_density * wall;
            w->density[i] = r;
            float c = r * inv_rho0 - 1.0f; /* eq. 1 */
            if (unilateral && c < 0.0f) c = 0.0f;
            float sum2 = s2 + gix * gix + giy * giy + giz * giz;
            float lambda = -c / (sum2 + eps_abs); /* eq. 11 */
            /* lambda still holds the previous iteration's (each particle reads its own) */
            lambda = pbf_chebyshev_lambda(lambda, w->lambda[i], cheb);
            /* the warm start: lambda holds the previous iteration's, or the previous step's last */
            if (warm) lambda = pbf_warm_lambda(lambda, w->lambda[i], beta);
            w->lambda[i] = lambda;
            if (!isfinite(w->lambda[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    /* the error of the iteration (compression only, as the statistics count it) */
    w->solve_error = 100.0 * pbf_cpu_mean_excess(w, w->density, inv_rho0, -1.0f);
    return bad;
}

int pbf_pbf_delta_p_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict LAMBDA = w->lambda;
    const int n = w->count;
    /* s_corr on lambda's scale: against clumping, and the artificial pressure (pbf_scorr_split) */
    const float ks = -w->def.pbf.scorr_k / w->lattice_grad2, ksg = pbf_scorr_support_ks(w, dt);
    const float s_rest = pbf_pbf_consts_of(w)->scorr_s_rest, sw = pbf_scorr_wall_term(w, dt);
    const pbf_vf inv_wdq = vf_set1(pbf_pbf_consts_of(w)->scorr_inv_wdq);
    const int sn = w->def.pbf.scorr_n;
    const float om = w->def.pbf.over_relaxation;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(w->k.volume);
    int bad = INT_MAX;
    const float *P = pbf_cpu_pack_reserve(w) ? (pbf_cpu_pack_xyzl(w, 1), LISTS(w)->pack) : NULL;
    int bad_c = INT_MAX;
    const float *restrict PX = w->px, *restrict PY = w->py, *restrict PZ = w->pz;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad, bad_c)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        cache.prefetch = P;
#if PBF_PAIRS
        nb_ranges cache_b = NB_RANGES_INIT;
        cache_b.prefetch = P;
        const int pairs = P && LISTS(w)->ok && sn == 4;
        float pa[2][3] = {{0}};
        const pbf_vf16 h2w = vf16_set1(k->h2), volw = vf16_set1(w->k.volume);
        const pbf_vf16 inv_wdq16 = vf16_set1(pbf_pbf_consts_of(w)->scorr_inv_wdq);
#endif
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
            const float li = LAMBDA[i];
            const pbf_vf vli = vf_set1(li);
            /* the wall's gradient at x*, as lambda left it in v (pbf_world_wall_density) */
            const float p[3] = {QX[i], QY[i], QZ[i]}, gw[3] = {w->vx[i], w->vy[i], w->vz[i]};
            pbf_vf ax = vf_set1(0.0f), ay = ax, az = ax;
            float hx, hy, hz; /* the neighbour sums */
#if PBF_PAIRS
            /* i even takes i and i + 1 (the sweep's chunks start even), as in pbf_pbf_lambda_cpu */
            if (pairs && (i & 1) == 0 && i + 1 < n) {
                const pbf_vf16 vl = vf16_join(vli, vf_set1(LAMBDA[i + 1]));
                pbf_vf16 bx = vf16_set1(0.0f), by = bx, bz = bx;
                FOR_NEIGHBOURS_PAIR(w, i, &cache, &cache_b, QX, QY, QZ,
                    pbf_vf16 xj, yj, zj, lj;
                    load_packed16(P, jv, &xj, &yj, &zj, &lj);
                    pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
                    pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
                    pbf_vi16 in = valid & (r2 < h2w);
                    pbf_vf16 ratio = v16_poly6(k, r2, in) * inv_wdq16, s16;
                    s16 = ratio * ratio;
                    s16 = s16 * s16;
                    pbf_vf16 scorr = pbf_scorr_split_v16(s16, s_rest, ks, ksg); /* eq. 13 */
                    pbf_vf16 f = (vl + lj + scorr) * volw * v16_spiky(k, r2, in);
                    bx += vf16_and(f * dx, in);
                    by += vf16_and(f * dy, in);
                    bz += vf16_and(f * dz, in);
                );
                hx = vf_hsum(vf16_lo(bx)), hy = vf_hsum(vf16_lo(by)), hz = vf_hsum(vf16_lo(bz));
                pa[1][0] = vf_hsum(vf16_hi(bx));
                pa[1][1] = vf_hsum(vf16_hi(by));
                pa[1][2] = vf_hsum(vf16_hi(bz));
            } else if (pairs && (i & 1)) { /* the pair's second: its sums are ready */
                hx = pa[1][0], hy = pa[1][1], hz = pa[1][2];
            } else
#endif
            {
            FOR_NEIGHBOURS_R(w, i, &cache, 
                pbf_vf xj, yj, zj, lj;
                load_neighbours(P, jv, QX, QY, QZ, LAMBDA, &xj, &yj, &zj, &lj);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                pbf_vf ratio = v_poly6(k, r2, in) * inv_wdq, s;
                if (sn == 4) { /* the default n: two squarings, no loop in the hot path */
                    s = ratio * ratio;
                    s = s * s;
                } else {
                    s = ratio;
                    for (int e = 1; e < sn; ++e) s *= ratio;
                }
                pbf_vf scorr = pbf_scorr_split_v(s, s_rest, ks, ksg); /* eq. 13 */
                /* lambda_j of a masked lane may be anything: the products are masked */
                pbf_vf f = (vli + lj + scorr) * vol * v_spiky(k, r2, in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            hx = vf_hsum(ax), hy = vf_hsum(ay), hz = vf_hsum(az);
            }
            /* over-relaxation of the Jacobi step (successive over-relaxation): omega = 1 is the
             * paper; the wall's term with its share of s_corr (pbf_scorr_wall_term) */
            const float lw = li + sw;
            float dpx = om * (lw * gw[0] + hx), dpy = om * (lw * gw[1] + hy),
                  dpz = om * (lw * gw[2] + hz);
            if (!isfinite(dpx + dpy + dpz) && i < bad) bad = i;
            /* the collision stage's work, done here: x* + delta p (eq. 14) pushed out of the walls,
             * into v, dead from the prediction to the velocity stage; the collision stage then
             * swaps v and x* (delta p's neighbours read x*, so it cannot be written in place) */
            float q[3] = {p[0] + dpx, p[1] + dpy, p[2] + dpz}, o[3] = {PX[i], PY[i], PZ[i]};
            /* before the clamp hides it */
            if (!isfinite(q[0] + q[1] + q[2]) && i < bad_c) bad_c = i;
            if (!pbf_collide_inside(&w->wc, q)) pbf_collide(&w->wc, w->wall_boxes, q, o);
            w->vx[i] = q[0];
            w->vy[i] = q[1];
            w->vz[i] = q[2];
        }
        pbf_denormals_restore(fp_mode);
    }
    LISTS(w)->collided = 1;
    LISTS(w)->collide_bad = bad_c;
    return bad;
}
