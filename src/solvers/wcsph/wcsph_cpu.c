/*
 * WCSPH's CPU stages: the shared state-equation stage with Tait's equation (the density, the
 * pressure and the artificial viscosity), then the shared pressure acceleration with the
 * viscosity added (src/solvers/sph/sph_cpu.c).
 */
#include "solvers/sph/sph_cpu.h"
#include "solvers/wcsph/wcsph.h"
#include "solvers/wcsph/wcsph_formulas.h"

/* WCSPH: density (walls included), Tait's pressure as k_i (clamped at 0), and the velocity
 * change of the artificial viscosity over dt into sx, sy, sz (the shared state-equation stage). */
int pbf_wcsph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const pbf_wcsph_params *p = &w->def.wcsph;
    const float visc = pbf_state_viscosity(p->viscosity, p->stiffness, p->exponent, w->k.h,
                                           w->k.rest_density);
    return pbf_cpu_sph_state_pressure(w, ctx, p->stiffness, p->exponent, 0.0f, visc);
}

/* The pressure acceleration with the artificial viscosity of the pressure stage. */
int pbf_wcsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return pbf_cpu_pressure_accel(w, ctx, 0, 1);
}
