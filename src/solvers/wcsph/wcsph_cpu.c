/*
 * WCSPH's CPU stages: the density, the Tait pressure and the artificial viscosity, then the
 * shared pressure acceleration (src/solvers/sph/sph_cpu.c) with the viscosity added.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sweep.h"
#include "solvers/sph/sph_cpu.h"
#include "solvers/wcsph/wcsph.h"
#include "solvers/wcsph/wcsph_formulas.h"

/* WCSPH: density (walls included), the Tait pressure as k_i, and the velocity change of the
 * artificial viscosity over dt into sx, sy, sz (added by the pressure stage). */
int pbf_wcsph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const float dt = ctx->dt;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density, B = w->def.wcsph.stiffness,
                gamma = w->def.wcsph.exponent, rho0 = w->k.rest_density;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf nu = vf_set1(dt * w->k.volume * pbf_wcsph_viscosity(w->def.wcsph.viscosity, B, gamma, k->h, rho0));
    const pbf_vf eps_h2 = vf_set1(0.01f * k->h2), zero = vf_set1(0.0f);
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
            const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
            const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            pbf_vf rho = vf_set1(0.0f), ax = rho, ay = rho, az = rho;
            FOR_NEIGHBOURS_R(w, i, &cache,
                pbf_vf xj, yj, zj, vxj, vyj, vzj;
                load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
                load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                rho += v_kw(k, r2, in, k->cubic != 0.0f);
                /* Pi_ij = -nu min(v_ij . x_ij, 0) / (|x_ij|^2 + 0.01 h^2); a_i = -sum m Pi_ij grad W */
                pbf_vf vr = vf_and((vxi - vxj) * dx + (vyi - vyj) * dy + (vzi - vzj) * dz, in);
                pbf_vf f = vf_and(nu * (zero - vf_max(zero - vr, zero)) / (r2 + eps_h2) * v_kgrad(k, r2, in, k->cubic != 0.0f), in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            float r = w->k.mass * vf_hsum(rho) + w->k.rest_density * wall;
            w->density[i] = r;
            w->lambda[i] = pbf_wcsph_k(r * inv_rho0, B, gamma, rho0, dt);
            w->sx[i] = vf_hsum(ax);
            w->sy[i] = vf_hsum(ay);
            w->sz[i] = vf_hsum(az);
            if (!isfinite(w->lambda[i] + w->sx[i] + w->sy[i] + w->sz[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    w->solve_error = 100.0 * pbf_cpu_mean_excess(w, w->density, inv_rho0, -1.0f);
    return bad;
}

/* The pressure acceleration with the artificial viscosity of the pressure stage. */
int pbf_wcsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return pbf_cpu_pressure_accel(w, ctx, 0, 1);
}
