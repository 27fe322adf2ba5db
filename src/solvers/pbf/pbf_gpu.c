/*
 * The GPU launches of PBF's own stages (pbf.cl): lambda, measured, and delta p. Compiled once for
 * both GPU hosts (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/pbf/pbf.h"

void pbf_pbf_lambda_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    /* the neighbour sets' positions: PBF's grid leaves x*_0 in the velocity buffers */
    const pbf_gpu_mem q0v[3] = {PBF_GPU_FB(VX), PBF_GPU_FB(VY), PBF_GPU_FB(VZ)};
    const float inv_rho0 = P.inv_rho0, minus_one = -1.0f;
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_LAMBDA, n, wg, PBF_GPU_NB(q0v), PBF_GPU_A(PBF_GPU_FB(DENSITY)),
                   PBF_GPU_A(PBF_GPU_FB(LAMBDA)), PBF_GPU_A(g->bad), PBF_GPU_A(slot));
    pbf_gpu_measure(w, g, PBF_GPU_FB(DENSITY), inv_rho0, minus_one,
                    c->need_error);
}

void pbf_pbf_delta_p_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0v[3] = {PBF_GPU_FB(VX), PBF_GPU_FB(VY), PBF_GPU_FB(VZ)};
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_DELTA_P, n, wg, PBF_GPU_NB(q0v), PBF_GPU_A(PBF_GPU_FB(LAMBDA)),
                   PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
}

/* The GPU kernels' PBF parameters (pbf_solver.gpu_params). */
void pbf_pbf_fill_gpu_params(const pbf_world *w, pbf_gpu_params *P, float dt) {
    const pbf_pbf_consts *pc = pbf_pbf_consts_of(w);
    P->m.pbf.eps_abs = pc->eps_abs;
    P->m.pbf.ks = -w->def.pbf.scorr_k / w->lattice_grad2;
    P->m.pbf.ksg = pbf_scorr_support_ks(w, dt);
    P->m.pbf.s_rest = pc->scorr_s_rest;
    P->m.pbf.scorr_wall = pbf_scorr_wall_term(w, dt);
    P->m.pbf.inv_wdq = pc->scorr_inv_wdq;
    P->m.pbf.omega = w->def.pbf.over_relaxation;
    P->lambda_warm = pbf_lambda_carried(w) ? w->def.pbf.lambda_warm_start : 0.0f;
    P->m.pbf.lambda_carry = w->def.pbf.lambda_carry;
    P->m.pbf.scorr_n = w->def.pbf.scorr_n;
    P->m.pbf.unilateral = w->def.pbf.constraint == PBF_CONSTRAINT_UNILATERAL;
}
