/*
 * PCISPH's CPU stages: the start of the loop, the pressure corrected from the density at the
 * predicted positions, and the shared pressure acceleration at those positions.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/pcisph/pcisph.h"
#include "solvers/pcisph/pcisph_formulas.h"
#include "solvers/sph/sph_cpu.h"

/* PCISPH: p = 0 and F^p = 0 before the loop, and the velocities that the walls allow (the
 * collisions on dt v, as pressure_accel applies them after every correction), so that the first
 * prediction x + dt v already lies inside the container and outside the boxes. */
int pbf_pcisph_init_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const int n = w->count;
    int bad = INT_MAX;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad)
    for (int i = 0; i < n; ++i) {
        float p[3] = {w->qx[i], w->qy[i], w->qz[i]};
        pbf_sph_collide_velocity(&w->wc, w->wall_boxes, p, dt, &w->vx[i], &w->vy[i], &w->vz[i]);
        w->density[i] = 0.0f;
        if (!isfinite(w->vx[i] + w->vy[i] + w->vz[i]) && i < bad) bad = i;
    }
    return bad;
}

/* sum_j W(x*_i - x*_j) over the step's neighbours at the predicted positions x* = x + dt v. */
static inline PBF_SIMD_INLINE float predicted_kernel_sum(pbf_world *w, int i, float dt,
                                                        const float *P, const float *PV,
                                                        nb_ranges *cache) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2), dtv = vf_set1(dt);
    const pbf_vf xi = vf_set1(QX[i] + dt * VX[i]), yi = vf_set1(QY[i] + dt * VY[i]),
                 zi = vf_set1(QZ[i] + dt * VZ[i]);
    pbf_vf rho = vf_set1(0.0f);
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        pbf_vf dx = xi - xj - dtv * vxj, dy = yi - yj - dtv * vyj, dz = zi - zj - dtv * vzj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        rho += v_kw(k, r2, valid & (r2 < h2v), k->cubic != 0.0f);
    );
    return vf_hsum(rho);
}

/* PCISPH: the density error at the predicted positions x* = x + dt v (walls included) into sz
 * (dead: pressure_accel's scratch), its average (compression) as the error of the loop, and the
 * pressure corrected by delta times the error (eq. 8), >= 0, with the increment in lambda. */
int pbf_pcisph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const int n = w->count;
    const float delta = pbf_pcisph_delta(w->lattice_grad2);
    int bad = INT_MAX;
    const float *P, *PV;
    pbf_cpu_sph_pack(w, NULL, 1, &P, &PV);
    float *WC = pbf_cpu_sph_wall_begin(w);
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {w->qx[i] + dt * w->vx[i], w->qy[i] + dt * w->vy[i],
                          w->qz[i] + dt * w->vz[i]},
                  gw[3];
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            float rel = w->k.volume * predicted_kernel_sum(w, i, dt, P, PV, &cache) + wall;
            const float err = rel - 1.0f, kn = pbf_pcisph_k(w->density[i], err, delta);
            w->sz[i] = err;
            w->lambda[i] = kn - w->density[i];
            w->density[i] = kn;
            if (!isfinite(err) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_PREDICTED;
    w->solve_error = 100.0 * pbf_cpu_mean_excess(w, w->sz, 1.0f, 0.0f);
    return bad;
}

/* The pressure acceleration with the gradients at the predicted positions x + dt v. */
int pbf_pcisph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return pbf_cpu_pressure_accel(w, ctx, 1, 0);
}
