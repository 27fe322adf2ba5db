/*
 * The GPU launches of IISPH's own stages (iisph.cl): the diagonal and the relaxed Jacobi update
 * of the pressure, measured. Buffers: a_ii in s.x, the accumulated k in s.y, the error in s.z,
 * the increment in lambda (iisph.cl). Compiled once for both GPU hosts
 * (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/iisph/iisph.h"
#include "solvers/iisph/iisph_formulas.h"
#include "solvers/sph/sph.h"

void pbf_iisph_diagonal_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_IISPH_DIAGONAL, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(DENSITY)),
                   PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(PBF_GPU_FB(SY)),
                   PBF_GPU_A(PBF_GPU_FB(LAMBDA)), PBF_GPU_A(PBF_GPU_FB(WARM)),
                   PBF_GPU_A(PBF_GPU_FB(WARM_V)), PBF_GPU_A(g->bad), PBF_GPU_A(slot));
}

void pbf_iisph_pressure_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    const float one = 1.0f, zero = 0.0f;
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_IISPH_PRESSURE, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(PBF_GPU_FB(SX)),
                   PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)),
                   PBF_GPU_A(PBF_GPU_FB(LAMBDA)), PBF_GPU_A(PBF_GPU_FB(WARM)), PBF_GPU_A(g->bad),
                   PBF_GPU_A(slot));
    pbf_gpu_measure(w, g, PBF_GPU_FB(SZ), one, zero, c->need_error);
}

/* stage "pressure_accel": the shared pressure acceleration (sph_gpu.c), plain */
void pbf_iisph_accel_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    pbf_sph_pressure_accel_gpu(w, g, c, 0, 0);
}

/* The GPU kernels' IISPH parameters (pbf_solver.gpu_params). */
void pbf_iisph_fill_gpu_params(const pbf_world *w, pbf_gpu_params *P, float dt) {
    (void)dt;
    P->factor_eps = 1e-6f * w->lattice_grad2; /* the diagonal's denominators, as DFSPH's factor */
    P->m.iisph.omega = w->def.iisph.omega;
}
