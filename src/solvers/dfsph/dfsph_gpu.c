/*
 * The GPU launches of DFSPH's own stages (dfsph.cl): the factor, and the source term of the
 * divergence and density solves (measured) and of their warm starts. Compiled once for both GPU
 * hosts (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/dfsph/dfsph.h"
#include "solvers/dfsph/dfsph_formulas.h"
#include "solvers/sph/sph.h"

void pbf_dfsph_factor_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_DFSPH_FACTOR, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(DENSITY)),
                   PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(g->bad), PBF_GPU_A(slot));
}

/* The source stages: "divergence", "density_adv" and the warm starts "dfsph_warm_v",
 * "dfsph_warm" (divergence: of the divergence solve; start: a warm start's). */
static void dfsph_source(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c, int divergence,
                         int start) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    const float one = 1.0f, zero = 0.0f;
    /* the warm start (cpu.c stage_dfsph_source): the sum of the applied k in s.z, kappa in
     * the solve's warm row */
    const int slot = pbf_gpu_next_slot(&g->step);
    pbf_gpu_mem warm = g->field[divergence ? PBF_F_WARM_V : PBF_F_WARM];
    PBF_GPU_LAUNCH(g, PBF_GK_DFSPH_SOURCE, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(PBF_GPU_FB(SX)),
                   PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(LAMBDA)), PBF_GPU_A(divergence),
                   PBF_GPU_A(start), PBF_GPU_A(PBF_GPU_FB(SZ)), PBF_GPU_A(warm), PBF_GPU_A(g->bad),
                   PBF_GPU_A(slot));
    if (!start) pbf_gpu_measure(w, g, PBF_GPU_FB(SY), one, zero, c->need_error);
}

void pbf_dfsph_divergence_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    dfsph_source(w, g, c, 1, 0);
}

void pbf_dfsph_density_adv_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    dfsph_source(w, g, c, 0, 0);
}

void pbf_dfsph_warm_v_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    dfsph_source(w, g, c, 1, 1);
}

void pbf_dfsph_warm_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    dfsph_source(w, g, c, 0, 1);
}

/* stage "pressure_accel": the shared pressure acceleration (sph_gpu.c), plain */
void pbf_dfsph_accel_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    pbf_sph_pressure_accel_gpu(w, g, c, 0, 0);
}

/* The GPU kernels' DFSPH parameters (pbf_solver.gpu_params). */
void pbf_dfsph_fill_gpu_params(const pbf_world *w, pbf_gpu_params *P, float dt) {
    (void)dt;
    /* the divergence solve's warm start and Chebyshev weight (pbf_dfsph_cheb_iteration) */
    const float first_warm = pbf_first_warm(&w->def);
    const int first = first_warm > 0.0f;
    P->m.dfsph.warm_v = first ? first_warm : P->warm;
    P->m.dfsph.warm_first = first;
    P->m.dfsph.chebyshev_v = pbf_chebyshev_omega(w->def.dfsph.chebyshev_rho,
                                                 pbf_dfsph_cheb_iteration(P->iteration, first));
    P->factor_eps = 1e-6f * w->lattice_grad2;
    P->m.dfsph.full = 2.0f / w->lattice_grad2;
    P->m.dfsph.min_rel = w->def.dfsph.divergence_min_density;
}
