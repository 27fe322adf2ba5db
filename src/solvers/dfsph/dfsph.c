/*
 * Divergence-free SPH (Bender & Koschier 2015, 2017): the descriptor. Its step, per substep:
 *
 *   gravity, grid, dfsph_factor, (dfsph_warm_v, pressure_accel), [divergence, pressure_accel]
 *   (the divergence solve, Algorithm 2), (dfsph_warm, pressure_accel), [density_adv,
 *   pressure_accel] (the density solve, Algorithm 3), advect, collide, velocity, vorticity_xsph
 *
 * (...): the warm start (dfsph_warm_start; stages marked `warm`, skipped when it is 0): a solve
 * starts from a fraction of the previous substep's stiffness sums, kept per particle (the
 * registry's WARM rows). dfsph_divergence_warm_start warm-starts the divergence solve inside
 * its first iteration instead (its measuring stage), so that solve's warm stages are skipped.
 * Substeps of at most dfsph_cfl * 2r / v_max (Bender & Koschier 2017, section 5).
 */
#include "solvers/dfsph/dfsph.h"

#include "fields.h"
#include "solvers/sph/sph_stages.h"

#define F(field) offsetof(pbf_world_def, field)

/* Divergence-free SPH (Bender & Koschier 2015, 2017). */
/* clang-format off */
static const pbf_param_info params[] = {
    {"dfsph_tolerance", PBF_PARAM_FLOAT, "%", 0.1, {0}, 0, 100, 0, NULL, F(dfsph.tolerance),
     "density solve (Algorithm 3): stop when the average predicted density error is at most "
     "this; 0 = always dfsph_max_iterations"},
    {"dfsph_min_iterations", PBF_PARAM_INT, "1", 2, {0}, 0, 1000, 0, NULL,
     F(dfsph.min_iterations), "density solve: iterations at least"},
    {"dfsph_max_iterations", PBF_PARAM_INT, "1", 100, {0}, 1, 10000, 0, NULL,
     F(dfsph.max_iterations), "density solve: iterations at most"},
    {"dfsph_divergence_tolerance", PBF_PARAM_FLOAT, "%", 0.1, {0}, 0, 100, 0, NULL,
     F(dfsph.divergence_tolerance),
     "divergence solve (Algorithm 2): stop when the average density change over a substep "
     "dt * Drho/Dt / rho_0 is at most this; 0 = always dfsph_divergence_max_iterations"},
    {"dfsph_divergence_min_iterations", PBF_PARAM_INT, "1", 1, {0}, 0, 1000, 0, NULL,
     F(dfsph.divergence_min_iterations), "divergence solve: iterations at least"},
    {"dfsph_divergence_max_iterations", PBF_PARAM_INT, "1", 100, {0}, 0, 10000, 0, NULL,
     F(dfsph.divergence_max_iterations), "divergence solve: iterations at most; 0 disables it"},
    {"dfsph_cfl", PBF_PARAM_FLOAT, "1", 0.4, {0}, 0, 1, 0, NULL, F(dfsph.cfl),
     "CFL number: each step is split into substeps of at most cfl * 2r / v_max (Bender & "
     "Koschier 2017, section 5); 0 = the step as given"},
    {"dfsph_warm_start", PBF_PARAM_FLOAT, "1", 0, {0}, 0, 1, 0, NULL, F(dfsph.warm_start),
     "warm start of both solves (Bender & Koschier 2017; SPlisHSPlasH's TimeStepDFSPH: 0.5): "
     "each starts by applying this fraction of the sum of the previous substep's stiffness "
     "parameters kappa_i (kappa^v_i), where the particle compresses and has a full "
     "neighbourhood; 0 (the default) = off. DFSPH's iterations only add pressure, so a start "
     "above what the substep needs stays: at 0.5 the dam break (36 particles across) gains "
     "0.30 % of E(0) between two frames at its release, with the Chebyshev iterations"},
    {"dfsph_divergence_warm_start", PBF_PARAM_FLOAT, "1", 0, {0}, 0, 1, 0, NULL,
     F(dfsph.divergence_warm_start),
     "warm start of the divergence solve within its first iteration: where the particle "
     "compresses and has a full neighbourhood, the first iteration's k_i is the larger of its "
     "Jacobi update and this fraction of the previous substep's kappa^v_i (SPlisHSPlasH's "
     "TimeStepDFSPH starts from 0.5), and the Chebyshev weights restart after it; unlike "
     "dfsph_warm_start it needs no pass of its own, and it replaces dfsph_warm_start for the "
     "divergence solve (which then starts only the density solve); at an impact, where the "
     "substep needs less than the warm pressure, it pushes the fluid apart (a block falling "
     "onto the floor at 5 ms steps: E rose by 0.13 % of E(0) in one step, never without it); "
     "0 (the default) = off"},
    {"dfsph_divergence_min_density", PBF_PARAM_FLOAT, "1", 0, {0}, 0, 2, 0, NULL,
     F(dfsph.divergence_min_density),
     "divergence solve: leave out particles whose density number rho_i / rho_0 (fluid and "
     "walls) is below this: their source is 0, as SPlisHSPlasH's DFSPH leaves out particles "
     "with fewer than 20 neighbours (\"particle deficiency\"; its count includes boundary "
     "particles, which pbf's wall density term stands for: a rest-lattice particle has 1 at a "
     "wall, 0.85 at a free surface, 0.72 on an edge); a splash or surface particle has a large "
     "factor, so a large pressure for a divergence it cannot resolve; 0 (the default) = none"},
    {"dfsph_chebyshev_rho", PBF_PARAM_FLOAT, "1", 0.8, {0}, 0, 0.9, 0, NULL,
     F(dfsph.chebyshev_rho),
     "Chebyshev semi-iterative acceleration (Wang 2015, eq. 10-12) of both solves' Jacobi "
     "iterations, on the stiffness k_i each iteration applies (in the divergence solve only "
     "where the particle compresses: extrapolating the push of a particle that already expands "
     "adds energy, without bound in the splashes of a large step): the estimated spectral "
     "radius rho; the default 0.8 needs a fifth fewer iterations for the same tolerance and is "
     "the value the validation runs (it gains no energy there); 0 = plain Jacobi, the paper's"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
#define R PBF_STAGE_REUSES_CACHE
#define V PBF_SOLVE_DIVERGENCE
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_SPH_HEAD,
    {"dfsph_factor", PBF_TIMING(lambda), 0, 0, 0, pbf_dfsph_factor_cpu,
     pbf_dfsph_factor_gpu, 1, 0, 0, NULL},
    {"dfsph_warm_v", PBF_TIMING(lambda), 0, 0, 1, pbf_dfsph_warm_v_cpu,
     pbf_dfsph_warm_v_gpu, 1, R, PBF_SPH_K},
    PBF_SPH_ACCEL(0, 1, pbf_dfsph_accel_cpu, pbf_dfsph_accel_gpu),
    {"divergence", PBF_TIMING(lambda), V, V, 0, pbf_dfsph_divergence_cpu,
     pbf_dfsph_divergence_gpu, 1, R, PBF_SPH_K},
    PBF_SPH_ACCEL(V, 0, pbf_dfsph_accel_cpu, pbf_dfsph_accel_gpu),
    {"dfsph_warm", PBF_TIMING(lambda), 0, 0, 1, pbf_dfsph_warm_cpu,
     pbf_dfsph_warm_gpu, 1, R, PBF_SPH_K},
    PBF_SPH_ACCEL(0, 1, pbf_dfsph_accel_cpu, pbf_dfsph_accel_gpu),
    {"density_adv", PBF_TIMING(lambda), D, D, 0, pbf_dfsph_density_adv_cpu,
     pbf_dfsph_density_adv_gpu, 1, R, PBF_SPH_K},
    PBF_SPH_ACCEL(D, 0, pbf_dfsph_accel_cpu, pbf_dfsph_accel_gpu),
    PBF_SPH_TAIL,
};
/* clang-format on */
#undef D
#undef R
#undef V

static pbf_solve_bounds bounds(const pbf_world_def *d, int loop) {
    if (loop == PBF_SOLVE_DIVERGENCE)
        return (pbf_solve_bounds){d->dfsph.divergence_min_iterations,
                                  d->dfsph.divergence_max_iterations,
                                  d->dfsph.divergence_tolerance};
    return (pbf_solve_bounds){d->dfsph.min_iterations, d->dfsph.max_iterations, d->dfsph.tolerance};
}

static double substep_dt(const pbf_world_def *d, float h, double v) {
    (void)h;
    return pbf_sph_cfl_dt(d, d->dfsph.cfl, v);
}

static float warm_start(const pbf_world_def *d) {
    return d->dfsph.warm_start;
}
static float first_warm(const pbf_world_def *d) {
    return d->dfsph.divergence_warm_start;
}

/* kappa_i (WARM) with the warm start of both solves; kappa^v_i (WARM_V) also with the
 * divergence solve's own warm start alone. */
static int field_used(int f, const pbf_world_def *d) {
    if (f == PBF_F_WARM) return d->dfsph.warm_start > 0.0f;
    if (f == PBF_F_WARM_V)
        return d->dfsph.warm_start > 0.0f || d->dfsph.divergence_warm_start > 0.0f;
    return 0;
}

static float chebyshev_rho(const pbf_world_def *d) {
    return d->dfsph.chebyshev_rho;
}

static pbf_status check(const pbf_world_def *d, pbf_error *err) {
    pbf_status s = pbf_check_iteration_bounds(d->dfsph.min_iterations, d->dfsph.max_iterations,
                                              "dfsph_min_iterations", "dfsph_max_iterations", err);
    if (s != PBF_OK) return s;
    return pbf_check_iteration_bounds(
        d->dfsph.divergence_min_iterations, d->dfsph.divergence_max_iterations,
        "dfsph_divergence_min_iterations", "dfsph_divergence_max_iterations", err);
}

const pbf_solver pbf_solver_dfsph = {
    .info = PBF_SOLVER_INFO_dfsph,
    .params = params,
    .nparams = PBF_COUNT_OF(params),
    .stages = stages,
    .nstages = (int)PBF_COUNT_OF(stages),
    .sph = 1,
    .gpu = 1,
    .bounds = bounds,
    .substep_dt = substep_dt,
    .gpu_params = pbf_dfsph_fill_gpu_params,
    .warm_start = warm_start,
    .first_warm = first_warm,
    .field_used = field_used,
    .chebyshev_rho = chebyshev_rho,
    .check = check,
};
