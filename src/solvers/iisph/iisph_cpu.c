/*
 * IISPH's CPU stages: the density and the diagonal a_ii (with the step's pair cache), the
 * relaxed Jacobi update of the pressure, and the shared pressure acceleration.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/iisph/iisph.h"
#include "solvers/iisph/iisph_formulas.h"
#include "solvers/sph/sph_cpu.h"

/* IISPH: density (walls included), the diagonal a_ii into sx, the pressure zeroed; with the warm
 * start (iisph_warm_start > 0) the pressure starts from that fraction of the smaller of the last
 * two substeps' (pbf_iisph_warm_p, pbf_iisph_warm_k; warm_v takes the last one's), in sy and in
 * lambda, which the pressure acceleration that follows applies. */
int pbf_iisph_diagonal_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float frac = w->def.iisph.warm_start, inv_rho0 = 1.0f / w->k.rest_density;
    const int warm = frac > 0.0f && w->warm && w->warm_v;
    int bad = INT_MAX;
    const float *P = pbf_cpu_pack_reserve(w) ? (pbf_cpu_pack_xyzl(w, 0), LISTS(w)->pack) : NULL;
    float *WC = pbf_cpu_sph_wall_begin(w);
    float *PC = pbf_cpu_pair_reserve(w) ? LISTS(w)->pair : NULL;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT, cache_b = NB_RANGES_INIT;
        float o2[2][5] = {{0}}, d2[2] = {0};
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3], rho, g[3], s2;
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            grad_sums_cached(w, i, n, P, NULL, PC, &cache, &cache_b, &rho, g, &s2, o2, d2, NULL,
                             gw);
            float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
            w->density[i] = w->k.mass * rho + w->k.rest_density * wall;
            w->sx[i] = pbf_iisph_diagonal(gix * gix + giy * giy + giz * giz, s2);
            if (warm) {
                const float pw = pbf_iisph_warm_p(w->warm[i], w->warm_v[i]);
                w->warm_v[i] = w->warm[i];
                const float k0 = pbf_iisph_warm_k(frac, pw, w->density[i] * inv_rho0, dt);
                w->sy[i] = k0;
                w->lambda[i] = k0;
            } else {
                w->sy[i] = 0.0f;
            }
            if (!isfinite(w->density[i] + w->sx[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    if (PC) LISTS(w)->pair_ok = 1;
    return bad;
}

/* IISPH: the density rho_i^l predicted from the velocities the current pressure gives, its error
 * into sz, and the relaxed Jacobi update of the pressure; the average error (compression). */
int pbf_iisph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const int xv = LISTS(w)->xv_prev; /* pack and sph_v hold x and v (see pbf_cpu_sph_pack_k) */
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density, omega = w->def.iisph.omega;
    const float eps = 1e-6f * w->lattice_grad2;
    float *restrict WK = w->def.iisph.warm_start > 0.0f ? w->warm : NULL;
    int bad = INT_MAX;
    const int pairs = LISTS(w)->pair_ok;
    const float *P = NULL, *PV = NULL;
    if (xv) {
        P = LISTS(w)->pack;
        PV = LISTS(w)->sph_v;
    } else {
        pbf_cpu_sph_pack(w, NULL, 1, &P, &PV);
    }
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT, cache_b = NB_RANGES_INIT;
        float d2[2] = {0};
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            sph_wall_get(w, i, WALL_AT_X, p, gw);
            const float d = rate_cached(w, i, n, pairs, P, PV, &cache, &cache_b, d2, gw);
            float rel = w->density[i] * inv_rho0 + dt * d;
            float kn = pbf_iisph_k(w->sy[i], rel, w->sx[i], omega, eps);
            if (WK) WK[i] = pbf_iisph_warm_keep(kn, w->density[i] * inv_rho0, dt);
            w->sz[i] = rel - 1.0f;
            w->lambda[i] = kn - w->sy[i];
            w->sy[i] = kn;
            if (!isfinite(w->lambda[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    w->solve_error = 100.0 * pbf_cpu_mean_excess(w, w->sz, 1.0f, 0.0f);
    LISTS(w)->xv_packed = !w->hooks && P && PV;
    return bad;
}

int pbf_iisph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return pbf_cpu_pressure_accel(w, ctx, 0, 0);
}
