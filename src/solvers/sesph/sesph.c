/*
 * State-equation SPH (Müller et al. 2003, "Particle-based fluid simulation for interactive
 * applications"; the SESPH of Koschier et al. 2019's SPH tutorial): the descriptor. The pressure
 * follows from the density by the linear state equation p = k (rho / rho_0 - 1) (Müller et al.'s
 * ideal gas law with the rest density as offset) instead of Tait's stiff one, with the
 * symmetric pressure force and artificial viscosity of the SPH family. Its step, per substep:
 *
 *   gravity, grid, sesph_pressure, pressure_accel, advect, collide, velocity, vorticity_xsph
 *
 * The sound speed is c_s = sqrt(k / rho_0); the step is split into substeps of at most
 * sesph_cfl h / (c_s + v_max). Below rest density the equation gives a tension, which Müller et
 * al. keep (sesph_tension = 1) and which clumps the particles of a free surface (the tensile
 * instability); the default clamps it (0), as WCSPH does.
 *
 * Its parameters live in its slice of pbf_world_def.method_params (pbf/pbf.h), its GPU kernel in
 * sesph.cl with its list and argument-block member in sesph_kernels.h (gathered by
 * cmake/solvers.cmake): the method adds nothing outside this folder but its line in the registry.
 */
#include "solvers/sesph/sesph.h"

#include <math.h>

#include "solvers/sph/sph_stages.h"

#define F(slot) PBF_METHOD_PARAM(PBF_SESPH_KIND, slot)

/* clang-format off */
static const pbf_param_info params[] = {
    {"sesph_stiffness", PBF_PARAM_FLOAT, "Pa", 350000, {0}, 0, 1e10, 1, NULL, F(SESPH_STIFFNESS),
     "k of the linear state equation p = k (rho / rho_0 - 1) (Müller et al. 2003); the sound "
     "speed is sqrt(k / rho_0), the density error about rho_0 g H / k for a column of height H"},
    {"sesph_tension", PBF_PARAM_FLOAT, "1", 0, {0}, 0, 1, 0, NULL, F(SESPH_TENSION),
     "the share of the negative pressure below rest density that is kept: 1 = Müller et al. "
     "2003 (free-surface particles clump), 0 = clamped at 0"},
    {"sesph_cfl", PBF_PARAM_FLOAT, "1", 0.4, {0}, 0, 1, 1, NULL, F(SESPH_CFL),
     "CFL number: substeps of at most sesph_cfl h / (c_s + v_max)"},
    {"sesph_viscosity", PBF_PARAM_FLOAT, "1", 0.1, {0}, 0, 10, 0, NULL, F(SESPH_VISCOSITY),
     "artificial viscosity alpha (Monaghan 1992), as WCSPH's"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_SPH_HEAD,
    {"sesph_pressure", PBF_TIMING(lambda), 0, D, 0, pbf_sesph_pressure_cpu, pbf_sesph_pressure_gpu, 1, 0,
     PBF_SPH_K},
    PBF_SPH_ACCEL(0, 0, pbf_sesph_accel_cpu, pbf_sesph_accel_gpu),
    PBF_SPH_TAIL,
};
/* clang-format on */
#undef D

static pbf_solve_bounds bounds(const pbf_world_def *d, int loop) {
    (void)d;
    (void)loop;
    return (pbf_solve_bounds){0, 1, 0.0f};
}

/* The sound speed c_s = sqrt(k / rho_0) plus the fastest particle cross cfl h per substep at
 * most. */
static double substep_dt(const pbf_world_def *d, float h, double v) {
    const pbf_sesph_params p = pbf_sesph_params_of(d);
    const double cs = sqrt((double)p.stiffness / d->rest_density);
    return p.cfl * h / (cs + v);
}

const pbf_solver pbf_solver_sesph = {
    .info = PBF_SOLVER_INFO_sesph,
    .params = params,
    .nparams = PBF_COUNT_OF(params),
    .stages = stages,
    .nstages = (int)PBF_COUNT_OF(stages),
    .sph = 1,
    .gpu = 1,
    .bounds = bounds,
    .substep_dt = substep_dt,
    .gpu_params = pbf_sesph_fill_gpu_params,
};
