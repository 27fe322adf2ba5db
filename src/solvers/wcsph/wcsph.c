/*
 * Weakly compressible SPH (Becker & Teschner 2007): the descriptor. Its step, per substep:
 *
 *   gravity, grid, wcsph_pressure, pressure_accel, advect, collide, velocity, vorticity_xsph
 *
 * gravity keeps x* = x so that the grid and the densities are those of the current positions;
 * the pressure stage measures the density error (Tait's equation of state, no iterations). The
 * step is split into substeps of at most wcsph_cfl h / (c_s + v_max) (Becker & Teschner 2007).
 */
#include "solvers/wcsph/wcsph.h"

#include <math.h>

#include "solvers/sph/sph_stages.h"

#define F(field) offsetof(pbf_world_def, field)

/* Weakly compressible SPH (Becker & Teschner 2007). */
/* clang-format off */
static const pbf_param_info params[] = {
    {"wcsph_stiffness", PBF_PARAM_FLOAT, "Pa", 50000, {0}, 0, 1e9, 1, NULL, F(wcsph.stiffness),
     "stiffness B of the Tait equation p = B ((rho/rho_0)^gamma - 1), p >= 0 (Becker & Teschner "
     "2007); sound speed c_s = sqrt(B gamma / rho_0)"},
    {"wcsph_exponent", PBF_PARAM_FLOAT, "1", 7, {0}, 1, 20, 0, NULL, F(wcsph.exponent),
     "exponent gamma of the Tait equation"},
    {"wcsph_cfl", PBF_PARAM_FLOAT, "1", 0.4, {0}, 0, 1, 1, NULL, F(wcsph.cfl),
     "CFL number lambda: each step is split into substeps of at most lambda h / (c_s + v_max) "
     "(Becker & Teschner 2007, time step)"},
    {"wcsph_viscosity", PBF_PARAM_FLOAT, "1", 0.1, {0}, 0, 10, 0, NULL, F(wcsph.viscosity),
     "artificial viscosity alpha: Pi_ij = -(alpha h c_s / rho_0) min(v_ij . x_ij, 0) / (|x_ij|^2 + "
     "0.01 h^2) (Monaghan 1992, as Becker & Teschner 2007 use it); damps the acoustic waves"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_SPH_HEAD,
    {"wcsph_pressure", PBF_TIMING(lambda), 0, D, 0, pbf_wcsph_pressure_cpu,
     pbf_wcsph_pressure_gpu, 1, 0, PBF_SPH_K},
    PBF_SPH_ACCEL(0, 0, pbf_wcsph_accel_cpu, pbf_wcsph_accel_gpu),
    PBF_SPH_TAIL,
};
/* clang-format on */
#undef D

static pbf_solve_bounds bounds(const pbf_world_def *d, int loop) {
    (void)d;
    (void)loop;
    return (pbf_solve_bounds){0, 1, 0.0f};
}

/* Becker & Teschner 2007: the sound speed c_s = sqrt(B gamma / rho_0) plus the fastest particle
 * cross cfl h per substep at most. */
static double substep_dt(const pbf_world_def *d, float h, double v) {
    double cs = sqrt((double)d->wcsph.stiffness * d->wcsph.exponent / d->rest_density);
    return d->wcsph.cfl * h / (cs + v);
}

const pbf_solver pbf_solver_wcsph = {
    .info = PBF_SOLVER_INFO_wcsph,
    .params = params,
    .nparams = PBF_COUNT_OF(params),
    .stages = stages,
    .nstages = (int)PBF_COUNT_OF(stages),
    .sph = 1,
    .gpu = 1,
    .bounds = bounds,
    .substep_dt = substep_dt,
    .gpu_params = pbf_wcsph_fill_gpu_params,
};
