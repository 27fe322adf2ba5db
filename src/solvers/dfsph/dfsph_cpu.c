/*
 * DFSPH's CPU stages: the factor (with the step's pair cache), the source terms of the divergence
 * and density solves and their warm starts, and the shared pressure acceleration.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/dfsph/dfsph.h"
#include "solvers/dfsph/dfsph_formulas.h"
#include "solvers/sph/sph_cpu.h"

/* DFSPH: density (walls included) and the factor of eq. 11 into sx; the step's pair cache; and,
 * as the stage that follows measures the divergence of the same velocities (the divergence
 * solve's first measure, or its warm start's; not distributed, whose hooks exchange between
 * stages), that measure's D_i into sz (rate_ok), read there instead of a pass of its own. */
int pbf_dfsph_factor_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    (void)ctx;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float eps = 1e-6f * w->lattice_grad2;
    int bad = INT_MAX;
    float *WC = pbf_cpu_sph_wall_begin(w);
    float *PC = pbf_cpu_pair_reserve(w) ? LISTS(w)->pair : NULL;
    const int rate = PC && !w->hooks && w->sz;
    const float *P = NULL, *PV = NULL;
    pbf_cpu_sph_pack(w, NULL, rate, &P, &PV);
    const int store = rate && P && PV;
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
            grad_sums_cached(w, i, n, P, store ? PV : NULL, PC, &cache, &cache_b, &rho, g, &s2,
                             o2, d2, store ? w->sz : NULL, gw);
            float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
            w->density[i] = w->k.mass * rho + w->k.rest_density * wall;
            w->sx[i] = pbf_dfsph_factor(gix * gix + giy * giy + giz * giz, s2, eps);
            if (!isfinite(w->density[i] + w->sx[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    if (PC) LISTS(w)->pair_ok = 1;
    LISTS(w)->rate_ok = store;
    LISTS(w)->xv_packed = store; /* (store: both packed, not distributed) */
    return bad;
}

/* DFSPH: the source term of the divergence (divergence != 0) or density solve from the current
 * velocities, k_i = factor_i * source_i, and the average source as the solve's error.
 * With the warm start (dfsph_warm_start > 0): `start` computes the solve's first k_i from the
 * previous substep's kappa_i (warm_v: divergence, warm: density) where the source is positive
 * (pbf_dfsph_warm_k; the pressure acceleration that follows applies it) and measures nothing;
 * the measuring stage sums the k_i the solve applied (the start's, then each iteration's: lambda
 * holds the last one applied) in the warm row itself, 0 where the neighbourhood is not full
 * (pbf_dfsph_warm_keep with dt = 1), and the next substep's start takes kappa_i = sum / dt^2 with
 * the dt of that substep (warm_dt): the same operations as keeping kappa_i, so the same bits as
 * the GPU kernels, which keep the sum apart (ksum); sz stays free for D_i, so that the starts,
 * like the cold solves' first measures, read D_i from the stage before instead of a pass.
 * With dfsph_divergence_warm_start the divergence solve has no start: its first iteration takes
 * the warm k_i from kappa^v_i itself (pbf_dfsph_warm_first), its sum starting at 0. */
static int dfsph_source(pbf_world *w, float dt, int divergence, int start, int iteration) {
    /* what the stage before left: D_i in sz, the packed x and v (see pbf_cpu_stage) */
    const int rate_ok = LISTS(w)->rate_prev, xv = LISTS(w)->xv_prev;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density;
    /* the divergence solve's warm start within its first iteration (pbf_dfsph_warm_first) */
    const float first_warm = divergence ? pbf_first_warm(&w->def) : 0.0f;
    const int first = first_warm > 0.0f;
    const float frac = first ? first_warm : w->def.dfsph.warm_start;
    const float min_rel = w->def.dfsph.divergence_min_density;
    float *restrict WK = divergence ? w->warm_v : w->warm;
    const int keep = frac > 0.0f && WK;
    const float full = 2.0f / w->lattice_grad2;
    const float omega = pbf_chebyshev_omega(w->def.dfsph.chebyshev_rho,
                                            pbf_dfsph_cheb_iteration(iteration, first));
    int bad = INT_MAX;
    const int pairs = LISTS(w)->pair_ok;
    /* D_i of these velocities is in sz already (the factor pass's for the divergence solve's
     * first measure or its start, the divergence solve's last measure's for the density solve's
     * first or its start: no stage between changes the velocities; a pressure acceleration
     * between two stages drops rate_ok) */
    const int reuse = rate_ok;
    /* keep D_i for the density solve's first measure or start (see pbf_dfsph_factor_cpu) */
    const int store = divergence && !start && !w->hooks && w->sz;
    const float dtp = LISTS(w)->warm_dt[divergence != 0];
    float *restrict SZ = w->sz;
    const float *P = NULL, *PV = NULL;
    if (reuse) {
    } else if (xv) {
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
            const float d =
                reuse ? SZ[i] : rate_cached(w, i, n, pairs, P, PV, &cache, &cache_b, d2, gw);
            if (store) SZ[i] = d;
            float c = pbf_dfsph_source(w->density[i] * inv_rho0, d, dt, divergence, min_rel);
            if (start) {
                const float kappa = dtp > 0.0f ? WK[i] / (dtp * dtp) : 0.0f;
                w->lambda[i] = keep ? pbf_dfsph_warm_k(frac, kappa, c, w->sx[i], full, dt) : 0.0f;
            } else {
                float kw = 0.0f; /* the warm k of the first iteration (first) */
                const int warm_first = keep && first && iteration == 0;
                if (warm_first) {
                    const float kappa = dtp > 0.0f ? WK[i] / (dtp * dtp) : 0.0f;
                    kw = pbf_dfsph_warm_k(frac, kappa, c, w->sx[i], full, dt);
                    WK[i] = 0.0f; /* no k applied yet in this substep */
                } else if (keep) {
                    const float sum = iteration == 0 ? w->lambda[i] : WK[i] + w->lambda[i];
                    WK[i] = pbf_dfsph_warm_keep(sum, w->sx[i], full, 1.0f);
                }
                w->sy[i] = c;
                const float k = pbf_dfsph_k(c, w->sx[i], w->lambda[i], omega, divergence);
                w->lambda[i] = warm_first ? pbf_dfsph_warm_first(k, kw) : k;
            }
            if (!isfinite(w->lambda[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (!start) w->solve_error = 100.0 * pbf_cpu_mean_excess(w, w->sy, 1.0f, 0.0f);
    if (!start && keep) LISTS(w)->warm_dt[divergence != 0] = dt;
    LISTS(w)->rate_ok = store;
    LISTS(w)->xv_packed = !w->hooks && (xv || (P && PV));
    return bad;
}

int pbf_dfsph_divergence_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return dfsph_source(w, ctx->dt, 1, 0, ctx->iteration);
}
int pbf_dfsph_density_adv_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return dfsph_source(w, ctx->dt, 0, 0, ctx->iteration);
}
int pbf_dfsph_warm_v_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return dfsph_source(w, ctx->dt, 1, 1, 0);
}
int pbf_dfsph_warm_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return dfsph_source(w, ctx->dt, 0, 1, 0);
}
int pbf_dfsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return pbf_cpu_pressure_accel(w, ctx, 0, 0);
}
