/*
 * The GPU launches of what the SPH family shares (sph.cl): the pressure acceleration. Buffers
 * during the pressure stages (sph.cl): density, s, lambda as cpu.c; x* = x is still where the
 * grid was built, so the neighbour sets' positions q0 are x*. Compiled once for both GPU hosts
 * (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/sph/sph.h"

void pbf_sph_pressure_accel_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c, int viscous,
                                int predicted) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    /* PCISPH: gradients at x + dt v, the new velocities into s, then s and v swap roles */
    const int slot = pbf_gpu_next_slot(&g->step);
    pbf_gpu_mem o[3];
    for (int a = 0; a < 3; ++a) o[a] = g->field[(predicted ? PBF_F_SX : PBF_F_VX) + a];
    PBF_GPU_LAUNCH(g, PBF_GK_PRESSURE_ACCEL, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(LAMBDA)),
                   PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)),
                   PBF_GPU_A(viscous), PBF_GPU_A(predicted), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)), PBF_GPU_A(o[0]),
                   PBF_GPU_A(o[1]), PBF_GPU_A(o[2]), PBF_GPU_A(g->bad), PBF_GPU_A(slot));
    for (int a = 0; a < 3 && predicted; ++a) {
        pbf_gpu_mem v = g->field[PBF_F_VX + a];
        g->field[PBF_F_VX + a] = g->field[PBF_F_SX + a];
        g->field[PBF_F_SX + a] = v;
    }
}

void pbf_sph_state_pressure_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c, int kernel) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    const float inv_rho0 = P.inv_rho0, minus_one = -1.0f;
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, kernel, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(PBF_GPU_FB(LAMBDA)),
                   PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
    pbf_gpu_measure(w, g, PBF_GPU_FB(DENSITY), inv_rho0, minus_one, c->need_error);
}
