/*
 * Implicit incompressible SPH (Ihmsen et al. 2014): the descriptor. Its step, per substep:
 *
 *   gravity, grid, iisph_diagonal, (pressure_accel), [iisph_pressure, pressure_accel] (relaxed
 *   Jacobi, Algorithm 1), advect, collide, velocity, vorticity_xsph
 *
 * (pressure_accel): the warm start (iisph_warm_start, skipped when it is 0) applies a fraction
 * of the previous substep's pressure, kept per particle (the registry's WARM rows; WARM is
 * carried to the next step and kept by snapshots), before the first iteration. Substeps of at
 * most iisph_cfl * 2r / v_max.
 */
#include "solvers/iisph/iisph.h"

#include "fields.h"
#include "internal.h"
#include "solvers/sph/sph_stages.h"

#define F(field) offsetof(pbf_world_def, field)

/* With the warm start the diagonal stage leaves the starting pressure in lambda, which the warm
 * pressure acceleration reads from neighbours. */
static unsigned diagonal_halo(const pbf_world *w);

/* Implicit incompressible SPH (Ihmsen et al. 2014). */
/* clang-format off */
static const pbf_param_info params[] = {
    {"iisph_tolerance", PBF_PARAM_FLOAT, "%", 0.1, {0}, 0, 100, 0, NULL, F(iisph.tolerance),
     "pressure solve (Algorithm 1): stop when the average predicted density error "
     "(compression) is at most this; 0 = always iisph_max_iterations"},
    {"iisph_min_iterations", PBF_PARAM_INT, "1", 2, {0}, 0, 1000, 0, NULL,
     F(iisph.min_iterations), "iterations at least (2 in the paper)"},
    {"iisph_max_iterations", PBF_PARAM_INT, "1", 100, {0}, 1, 10000, 0, NULL,
     F(iisph.max_iterations), "iterations at most"},
    {"iisph_omega", PBF_PARAM_FLOAT, "1", 0.5, {0}, 0, 1, 1, NULL, F(iisph.omega),
     "relaxation omega of the Jacobi update p_i = max((1 - omega) p_i + omega (rho_0 - "
     "rho_adv_i - sum_j!=i a_ij p_j) / a_ii, 0) with the diagonal a_ii from d_ii (Ihmsen et al. "
     "2014, section 3; 0.5 in the paper)"},
    {"iisph_cfl", PBF_PARAM_FLOAT, "1", 0.4, {0}, 0, 1, 0, NULL, F(iisph.cfl),
     "CFL number: each step is split into substeps of at most cfl * 2r / v_max; 0 = the step "
     "as given"},
    {"iisph_warm_start", PBF_PARAM_FLOAT, "1", 0.5, {0}, 0, 1, 0, NULL, F(iisph.warm_start),
     "warm start: the Jacobi iterations start from p_i^0 = this times p_i of the previous "
     "substep (Ihmsen et al. 2014: p_i^0 = 0.5 p_i(t - dt), as SPlisHSPlasH), or of the one "
     "before where that was smaller (a pressure that held for two substeps, not the correction "
     "of a transient, which applied again gains energy); 0 = from p = 0"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
#define R PBF_STAGE_REUSES_CACHE
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_SPH_HEAD,
    {"iisph_diagonal", PBF_TIMING(lambda), 0, 0, 0, pbf_iisph_diagonal_cpu,
     pbf_iisph_diagonal_gpu, 1, 0, 0, diagonal_halo},
    PBF_SPH_ACCEL(0, 1, pbf_iisph_accel_cpu, pbf_iisph_accel_gpu),
    {"iisph_pressure", PBF_TIMING(lambda), D, D, 0, pbf_iisph_pressure_cpu,
     pbf_iisph_pressure_gpu, 1, R, PBF_SPH_K},
    PBF_SPH_ACCEL(D, 0, pbf_iisph_accel_cpu, pbf_iisph_accel_gpu),
    PBF_SPH_TAIL,
};
/* clang-format on */
#undef D
#undef R

static unsigned diagonal_halo(const pbf_world *w) {
    return w->def.iisph.warm_start > 0.0f ? PBF_ROW(PBF_F_LAMBDA) : 0u;
}

static pbf_solve_bounds bounds(const pbf_world_def *d, int loop) {
    (void)loop;
    return (pbf_solve_bounds){d->iisph.min_iterations, d->iisph.max_iterations, d->iisph.tolerance};
}

static double substep_dt(const pbf_world_def *d, float h, double v) {
    (void)h;
    return pbf_sph_cfl_dt(d, d->iisph.cfl, v);
}

static float warm_start(const pbf_world_def *d) {
    return d->iisph.warm_start;
}

/* The pressure of the last substep (WARM) and of the one before (WARM_V), with the warm start. */
static int field_used(int f, const pbf_world_def *d) {
    return (f == PBF_F_WARM || f == PBF_F_WARM_V) && d->iisph.warm_start > 0.0f;
}

/* The last substep's pressure, with the warm start (a resumed run starts from it). */
static int carried_row(const pbf_world_def *d) {
    return d->iisph.warm_start > 0.0f ? PBF_F_WARM : -1;
}

static pbf_status check(const pbf_world_def *d, pbf_error *err) {
    return pbf_check_iteration_bounds(d->iisph.min_iterations, d->iisph.max_iterations,
                                      "iisph_min_iterations", "iisph_max_iterations", err);
}

const pbf_solver pbf_solver_iisph = {
    .info = PBF_SOLVER_INFO_iisph,
    .params = params,
    .nparams = PBF_COUNT_OF(params),
    .stages = stages,
    .nstages = (int)PBF_COUNT_OF(stages),
    .sph = 1,
    .gpu = 1,
    .bounds = bounds,
    .substep_dt = substep_dt,
    .gpu_params = pbf_iisph_fill_gpu_params,
    .warm_start = warm_start,
    .field_used = field_used,
    .carried_row = carried_row,
    .check = check,
};
