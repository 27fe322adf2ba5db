/*
 * SESPH's CPU stages: the shared state-equation stage with the linear equation (the density, the
 * pressure and the artificial viscosity), then the shared pressure acceleration with the
 * viscosity added (src/solvers/sph/sph_cpu.c).
 */
#include "solvers/sesph/sesph.h"
#include "solvers/sph/sph_cpu.h"

/* The density (walls included), p = k (rho / rho_0 - 1) as k_i (its negative part times the
 * tension), and the velocity change of the artificial viscosity over dt into sx, sy, sz. */
int pbf_sesph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    const pbf_sesph_params p = pbf_sesph_params_of(&w->def);
    const float visc =
        pbf_state_viscosity(p.viscosity, p.stiffness, 1.0f, w->k.h, w->k.rest_density);
    return pbf_cpu_sph_state_pressure(w, ctx, p.stiffness, 1.0f, p.tension, visc);
}

/* The pressure acceleration with the artificial viscosity of the pressure stage. */
int pbf_sesph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx) {
    return pbf_cpu_pressure_accel(w, ctx, 0, 1);
}
