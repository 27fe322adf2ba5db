/*
 * Predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009): the descriptor. Its
 * step, per substep:
 *
 *   gravity, grid, pcisph_init, [pcisph_pressure, pressure_accel] (the predict-correct loop),
 *   advect, collide, velocity, vorticity_xsph
 *
 * Substeps of at most pcisph_cfl * 2r / v_max.
 */
#include "solvers/pcisph/pcisph.h"

#include "solvers/sph/sph_stages.h"

#define F(field) offsetof(pbf_world_def, field)

/* Predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009). */
/* clang-format off */
static const pbf_param_info params[] = {
    {"pcisph_tolerance", PBF_PARAM_FLOAT, "%", 0.1, {0}, 0, 100, 0, NULL, F(pcisph.tolerance),
     "predict-correct loop: p_i += delta (rho*_i - rho_0) at the predicted positions, delta of "
     "eq. 8 for a full neighbourhood, p_i >= 0; stop when the average error (compression) is at "
     "most this; 0 = always pcisph_max_iterations"},
    {"pcisph_min_iterations", PBF_PARAM_INT, "1", 3, {0}, 0, 1000, 0, NULL,
     F(pcisph.min_iterations), "iterations at least (3 in the paper, against temporal "
     "fluctuations)"},
    {"pcisph_max_iterations", PBF_PARAM_INT, "1", 100, {0}, 1, 10000, 0, NULL,
     F(pcisph.max_iterations), "iterations at most"},
    {"pcisph_cfl", PBF_PARAM_FLOAT, "1", 0.4, {0}, 0, 1, 0, NULL, F(pcisph.cfl),
     "CFL number: each step is split into substeps of at most cfl * 2r / v_max; 0 = the step "
     "as given"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_SPH_HEAD,
    {"pcisph_init", PBF_TIMING(lambda), 0, 0, 0, pbf_pcisph_init_cpu,
     pbf_pcisph_init_gpu, 1, 0, 0, NULL},
    {"pcisph_pressure", PBF_TIMING(lambda), D, D, 0, pbf_pcisph_pressure_cpu,
     pbf_pcisph_pressure_gpu, 1, 0, PBF_SPH_K},
    PBF_SPH_ACCEL(D, 0, pbf_pcisph_accel_cpu, pbf_pcisph_accel_gpu),
    PBF_SPH_TAIL,
};
/* clang-format on */
#undef D

static pbf_solve_bounds bounds(const pbf_world_def *d, int loop) {
    (void)loop;
    return (pbf_solve_bounds){d->pcisph.min_iterations, d->pcisph.max_iterations,
                              d->pcisph.tolerance};
}

static double substep_dt(const pbf_world_def *d, float h, double v) {
    (void)h;
    return pbf_sph_cfl_dt(d, d->pcisph.cfl, v);
}

static pbf_status check(const pbf_world_def *d, pbf_error *err) {
    return pbf_check_iteration_bounds(d->pcisph.min_iterations, d->pcisph.max_iterations,
                                      "pcisph_min_iterations", "pcisph_max_iterations", err);
}

const pbf_solver pbf_solver_pcisph = {
    .info = PBF_SOLVER_INFO_pcisph,
    .params = params,
    .nparams = PBF_COUNT_OF(params),
    .stages = stages,
    .nstages = (int)PBF_COUNT_OF(stages),
    .sph = 1,
    .gpu = 1,
    .bounds = bounds,
    .substep_dt = substep_dt,
    .gpu_params = pbf_pcisph_fill_gpu_params,
    .check = check,
};
