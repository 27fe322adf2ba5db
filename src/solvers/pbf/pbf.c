/*
 * Position Based Fluids (Macklin & Müller 2013, Algorithm 1): the descriptor. Its step:
 *
 *   predict         v += dt g, |v| <= v_max (CFL), x* = x + dt v                   (lines 1-4)
 *   grid            counting sort by the cell of x*, reorder every sorted field      (lines 5-7)
 *   lambda          rho_i (eq. 2) with the wall, C_i (eq. 1), lambda_i (eq. 11)  \
 *   delta_p         delta p_i with s_corr (eq. 12-14) and the wall term           } iterations
 *   collide         x* += delta p, collision response and friction               /  (lines 8-19)
 *   velocity        v = (x* - x) / dt, |v| <= v_max, omega (eq. 15), rho at x*      (line 21)
 *   vorticity_xsph  vorticity confinement (eq. 16), XSPH (eq. 17), x = x*          (lines 22-23)
 *   stats           statistics of the new state
 *
 * The iterations run solver_iterations times, or with pbf_tolerance > 0 until the average
 * density error is at most it (pbf_min_iterations .. pbf_max_iterations). PBF takes the step as
 * given (no substeps). Its warm start carries lambda to the next step (pbf_carried_row).
 */
#include "solvers/pbf/pbf.h"

#include "fields.h"
#include "solvers/common/common.h"
#include "internal.h"

static const char *const constraint_names[] = {"unilateral", "bilateral", NULL};

#define F(field) offsetof(pbf_world_def, field)

/* Position Based Fluids' own parameters (Macklin & Mueller 2013). */
/* clang-format off */
static const pbf_param_info params[] = {
    {"solver_iterations", PBF_PARAM_INT, "1", 4, {0}, 1, 1000, 0, NULL, F(pbf.solver_iterations),
     "Jacobi iterations of the density constraint per step"},
    {"relaxation", PBF_PARAM_FLOAT, "1", 0.01, {0}, 0, 100, 0, NULL, F(pbf.relaxation),
     "constraint force mixing epsilon (eq. 11), relative to sum|grad C|^2 of a rest particle"},
    {"over_relaxation", PBF_PARAM_FLOAT, "1", 1.0, {0}, 0, 1.9, 1, NULL, F(pbf.over_relaxation),
     "omega scaling each Jacobi correction (successive over-relaxation); 1 = the paper, ~1.3 converges faster"},
    {"chebyshev_rho", PBF_PARAM_FLOAT, "1", 0.0, {0}, 0, 0.95, 0, NULL, F(pbf.chebyshev_rho),
     "Chebyshev semi-iterative acceleration of the Jacobi iterations (Wang 2015), on lambda: "
     "the estimated spectral radius rho; larger converges faster per iteration, too large "
     "leaves the fluid jittering; 0 = plain Jacobi, the paper"},
    {"lambda_warm_start", PBF_PARAM_FLOAT, "1", 0.5, {0}, 0, 0.9, 0, NULL,
     F(pbf.lambda_warm_start),
     "warm start of the multipliers beta: each iteration adds beta times the previous one's lambda, "
     "the first that of the previous step's last (heavy-ball momentum carried across steps, as "
     "XPBD carries its multipliers: Macklin, Mueller & Chentanez 2016); halves the compression "
     "the 4 iterations leave at 0.5; 0 = each step solves from lambda = 0, the paper. It acts only "
     "when every step runs at least 3 iterations (solver_iterations, or pbf_min_iterations with "
     "pbf_tolerance): with fewer its momentum made a resting column boil, so such steps solve "
     "from lambda = 0"},
    {"lambda_carry", PBF_PARAM_FLOAT, "1", 0.6, {0}, 0, 1, 0, NULL, F(pbf.lambda_carry),
     "with the warm start: the multiple of the previous step's last lambda that the first "
     "iteration adds (the later ones add lambda_warm_start times the previous iteration's); "
     "carried at lambda_warm_start itself (0.5) a settled column keeps an odd-even oscillation "
     "from step to step at mid-depth, which 0.6 damps; above 0.6 the dam break's start gains "
     "energy"},
    {"constraint", PBF_PARAM_ENUM, "-", 0, {0}, 0, 0, 0, constraint_names, F(pbf.constraint),
     "unilateral: only compression is corrected; bilateral: C_i = 0 as in the paper "
     "(needs relaxation ~1, the paper's large epsilon, to stay stable)"},
    {"scorr_k", PBF_PARAM_FLOAT, "1", 0.1, {0}, 0, 10, 0, NULL, F(pbf.scorr_k),
     "tensile correction strength k (eq. 13), relative to a rest particle's lambda scale, for "
     "pairs closer than the rest spacing (keeps particles from clumping)"},
    {"scorr_n", PBF_PARAM_INT, "1", 4, {0}, 1, 16, 0, NULL, F(pbf.scorr_n),
     "tensile correction exponent n (eq. 13)"},
    {"scorr_dq", PBF_PARAM_FLOAT, "1", 0.2, {0}, 0, 0.99, 0, NULL, F(pbf.scorr_dq),
     "tensile correction distance |dq| as a fraction of h (eq. 13)"},
    {"scorr_support", PBF_PARAM_FLOAT, "1", 1.0, {0}, 0, 10, 0, NULL, F(pbf.scorr_support),
     "s_corr's artificial pressure (its part up to the value at the rest spacing) as a multiple "
     "of gravity: a surface particle of the rest lattice is pushed up by scorr_support times its "
     "weight per step, whatever the resolution and time step (1 holds the surface layer at the "
     "rest spacing without lifting it; 0 = s_corr only keeps particles from clumping)"},
    {"scorr_wall", PBF_PARAM_FLOAT, "1", 1.0, {0}, 0, 10, 0, NULL, F(pbf.scorr_wall),
     "the walls' share of s_corr's artificial pressure: the solid (ghost fluid at rest density, "
     "as in the wall density) pushes a particle off the wall as ghost neighbours at the rest "
     "spacing would, times this (1: the wall like the fluid, so no single-file stack of "
     "particles stands in a container's edge; 0 = the walls take no part in s_corr)"},
    {"pbf_tolerance", PBF_PARAM_FLOAT, "%", 0, {0}, 0, 100, 0, NULL, F(pbf.tolerance),
     "stop the iterations when the average density error (eq. 1, compression) is at most this; "
     "0 = always solver_iterations iterations"},
    {"pbf_min_iterations", PBF_PARAM_INT, "1", 1, {0}, 0, 1000, 0, NULL, F(pbf.min_iterations),
     "iterations at least, when pbf_tolerance > 0"},
    {"pbf_max_iterations", PBF_PARAM_INT, "1", 100, {0}, 1, 10000, 0, NULL, F(pbf.max_iterations),
     "iterations at most, when pbf_tolerance > 0"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_ROW_PREDICT,
    PBF_ROW_GRID,
    {PBF_STAGE_LAMBDA,  PBF_TIMING(lambda),  D, D, 0, pbf_pbf_lambda_cpu,  pbf_pbf_lambda_gpu,  1, 0,
     PBF_ROW(PBF_F_LAMBDA), NULL}, /* delta p reads lambda_j */
    {PBF_STAGE_DELTA_P, PBF_TIMING(delta_p), D, 0, 0, pbf_pbf_delta_p_cpu, pbf_pbf_delta_p_gpu, 1, 0, 0, NULL},
    PBF_ROW_COLLIDE(D),
    PBF_ROW_VELOCITY,
    PBF_ROW_VORTICITY_XSPH,
    PBF_ROW_STATS,
};
/* clang-format on */
#undef D

static pbf_solve_bounds bounds(const pbf_world_def *d, int loop) {
    (void)loop;
    if (d->pbf.tolerance > 0.0f)
        return (pbf_solve_bounds){d->pbf.min_iterations, d->pbf.max_iterations, d->pbf.tolerance};
    return (pbf_solve_bounds){d->pbf.solver_iterations, d->pbf.solver_iterations, 0.0f};
}

/* The warm start carries lambda when every step runs at least PBF_WARM_MIN_ITERATIONS
 * iterations: the fewest a step runs is solver_iterations, or pbf_min_iterations with a
 * tolerance. */
static int carried_row(const pbf_world_def *d) {
    const int least = d->pbf.tolerance > 0.0f ? d->pbf.min_iterations : d->pbf.solver_iterations;
    return d->pbf.lambda_warm_start != 0.0f && least >= PBF_WARM_MIN_ITERATIONS ? PBF_F_LAMBDA
                                                                                 : -1;
}

static float chebyshev_rho(const pbf_world_def *d) { return d->pbf.chebyshev_rho; }

static pbf_status check(const pbf_world_def *d, pbf_error *err) {
    return pbf_check_iteration_bounds(d->pbf.min_iterations, d->pbf.max_iterations,
                                      "pbf_min_iterations", "pbf_max_iterations", err);
}

const pbf_solver pbf_solver_pbf = {
    .info = PBF_SOLVER_INFO_pbf,
    .params = params,
    .nparams = PBF_COUNT_OF(params),
    .stages = stages,
    .nstages = (int)PBF_COUNT_OF(stages),
    .sph = 0,
    .gpu = 1,
    .bounds = bounds,
    .carried_row = carried_row,
    .chebyshev_rho = chebyshev_rho,
    .check = check,
};
