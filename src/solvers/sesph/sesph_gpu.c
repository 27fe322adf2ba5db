/*
 * The GPU launch of SESPH's own stage (sesph.cl): the pressure, measured. Compiled once for both
 * GPU hosts (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/sesph/sesph.h"
#include "solvers/sph/sph.h"

void pbf_sesph_pressure_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    const float inv_rho0 = P.inv_rho0, minus_one = -1.0f;
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_SESPH_PRESSURE, n, wg, PBF_GPU_NB(q0q), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(PBF_GPU_FB(LAMBDA)),
                   PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
    pbf_gpu_measure(w, g, PBF_GPU_FB(DENSITY), inv_rho0, minus_one, c->need_error);
}

/* stage "pressure_accel": the shared pressure acceleration (sph_gpu.c), with the artificial
 * viscosity */
void pbf_sesph_accel_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    pbf_sph_pressure_accel_gpu(w, g, c, 1, 0);
}

/* The GPU kernels' SESPH parameters (pbf_solver.gpu_params). */
void pbf_sesph_fill_gpu_params(const pbf_world *w, pbf_gpu_params *P, float dt) {
    const pbf_sesph_params p = pbf_sesph_params_of(&w->def);
    P->m.sesph.k = p.stiffness;
    P->m.sesph.tension = p.tension;
    P->m.sesph.nu = dt * w->k.volume *
                    pbf_state_viscosity(p.viscosity, p.stiffness, 1.0f, w->k.h, w->k.rest_density);
}
