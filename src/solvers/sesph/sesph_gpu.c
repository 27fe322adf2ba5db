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
    pbf_sph_state_pressure_gpu(w, g, c, PBF_GK_SESPH_PRESSURE);
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
