/*
 * The GPU launch of WCSPH's own stage (wcsph.cl): the pressure, measured. Compiled once for both
 * GPU hosts (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/wcsph/wcsph.h"
#include "solvers/wcsph/wcsph_formulas.h"
#include "solvers/sph/sph.h"

void pbf_wcsph_pressure_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    pbf_sph_state_pressure_gpu(w, g, c, PBF_GK_WCSPH_PRESSURE);
}

/* stage "pressure_accel": the shared pressure acceleration (sph_gpu.c), with the artificial viscosity */
void pbf_wcsph_accel_gpu(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    pbf_sph_pressure_accel_gpu(w, g, c, 1, 0);
}

/* The GPU kernels' WCSPH parameters (pbf_solver.gpu_params). */
void pbf_wcsph_fill_gpu_params(const pbf_world *w, pbf_gpu_params *P, float dt) {
    const pbf_wcsph_params *wp = &w->def.wcsph;
    P->m.wcsph.b = wp->stiffness;
    P->m.wcsph.gamma = wp->exponent;
    P->m.wcsph.nu =
        dt * w->k.volume *
        pbf_state_viscosity(wp->viscosity, wp->stiffness, wp->exponent, w->k.h, w->k.rest_density);
}
