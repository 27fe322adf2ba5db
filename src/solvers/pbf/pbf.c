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
 * density error is at most it (pbf_min_iterations .. pbf_max_iterations). Macklin & Müller take
 * fixed steps; pbf splits a step into substeps where the force condition (pbf_gravity_cfl) or
 * the CFL condition (pbf_cfl, off by default) asks for shorter ones (substep_dt), which at the
 * defaults happens only in a scene finer than the shipped ones. Its warm start carries lambda to
 * the next step (pbf_carried_row).
 */
#include "solvers/pbf/pbf.h"

#include <math.h>
#include <stdlib.h>

#include "fields.h"
#include "solvers/common/common.h"
#include "internal.h"

#define PBF_PI_F 3.14159265358979323846f

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
    {"pbf_cfl", PBF_PARAM_FLOAT, "1", PBF_CFL_DEFAULT, {0}, 0, 100, 0, NULL, F(pbf.cfl),
     "CFL condition (as the SPH solvers'): substeps in which the fastest particle moves at most "
     "pbf_cfl particle diameters 2r; 0 = off, the default: each split raises the speed limit "
     "cfl * h / dt, so a flow already unstable runs away instead of being held at the limit"},
    {"pbf_gravity_cfl", PBF_PARAM_FLOAT, "1", PBF_GRAVITY_CFL_DEFAULT, {0}, 0, 10, 0, NULL,
     F(pbf.gravity_cfl),
     "force condition (Monaghan 1992; Morris et al. 1997): substeps of at most "
     "pbf_gravity_cfl sqrt(h / |g|), so that a finer scene's iterations still hold its liquid; "
     "0.09: the shipped scenes' steps (0.065 and 0.075) are taken as given, those of the same "
     "scenes with half the particle_radius (0.092 and 0.107) are split; 0 = off (with pbf_cfl "
     "= 0: the step as given, Macklin & Mueller 2013's fixed steps)"},
};
/* clang-format on */
#undef F

#define D PBF_SOLVE_DENSITY
/* clang-format off */
static const pbf_stage_desc stages[] = {
    PBF_ROW_PREDICT,
    PBF_ROW_GRID,
    {"lambda",  PBF_TIMING(lambda),  D, D, 0, pbf_pbf_lambda_cpu,  pbf_pbf_lambda_gpu,  1, 0,
     PBF_ROW(PBF_F_LAMBDA), NULL}, /* delta p reads lambda_j */
    {"delta_p", PBF_TIMING(delta_p), D, 0, 0, pbf_pbf_delta_p_cpu, pbf_pbf_delta_p_gpu, 1, 0, 0, NULL},
    PBF_ROW_COLLIDE(D),
    PBF_ROW_VELOCITY,
    PBF_ROW_VORTICITY_XSPH,
    PBF_ROW_STATS,
};
/* clang-format on */
#undef D

/* The longest substep (0: the step as given): the smaller of the force condition's
 * pbf_gravity_cfl sqrt(h / |g|) (dt <= 0.25 sqrt(h / |f|): Monaghan 1992, Morris et al. 1997;
 * gravity is PBF's only force) and the CFL condition's, in which a particle at speed v moves
 * pbf_cfl particle diameters (as pbf_sph_cfl_dt; off by default). The force condition bounds
 * the step by the resolution: with a fixed count of Jacobi iterations the liquid falls g dt^2
 * per step into the constraint, which those iterations undo only while that is a small fraction
 * of h. At 60 frames/s of 4 steps and 4 iterations, dt sqrt(|g| / h) = 0.092 (the moving wall
 * with half its particle radius), 0.107 (the dam breaks with half their radius) and 0.145 (the
 * validation's dam break at 36 particles across) each drove particles to the speed limit within
 * 0.05 s and the dam breaks gained energy (+88 % of E(0) in 0.25 s at 36 across); split in two,
 * the dam breaks gain none and stay below the limit but where the two fronts of the double dam
 * break meet, and so does the moving wall in a slab 4 particles deep, while in its full depth
 * it still reaches the limit (733 cuts in 0.2 s against 34,408; 3 substeps hold it). The
 * shipped scenes' 0.065 and 0.075 are taken as given. A rule on the speed alone cannot tell
 * these apart: the shipped dam break reaches 2.0 particle diameters per step, while the
 * 36-particle column's instability starts below 1 (a limit of 2.0 still let it gain 1.8 % of
 * E(0), one of 2.5 let it blow up), and since each split raises the speed limit cfl * h / dt, a
 * flow already unstable can run away under it (the moving wall above, split at 4 diameters: 72
 * m/s). */
static double substep_dt(const pbf_world_def *d, float h, double v) {
    double dt = 0.0;
    if (d->pbf.cfl > 0.0f && v > 0.0) dt = (double)d->pbf.cfl * 2.0 * d->particle_radius / v;
    const double g =
        sqrt((double)d->gravity.x * d->gravity.x + (double)d->gravity.y * d->gravity.y +
             (double)d->gravity.z * d->gravity.z);
    if (d->pbf.gravity_cfl > 0.0f && g > 0.0) {
        const double dg = (double)d->pbf.gravity_cfl * sqrt((double)h / g);
        if (!(dt > 0.0) || dg < dt) dt = dg;
    }
    return dt;
}

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
    return d->pbf.lambda_warm_start != 0.0f && least >= PBF_WARM_MIN_ITERATIONS ? PBF_F_LAMBDA : -1;
}

static float chebyshev_rho(const pbf_world_def *d) {
    return d->pbf.chebyshev_rho;
}

const pbf_pbf_consts *pbf_pbf_consts_of(const pbf_world *w) {
    return w->method_state;
}

/* s_corr's shape at the rest spacing, and the lift its artificial pressure gives the top particle
 * of a rest lattice per iteration (per unit of strength on lambda's scale): the sum over the
 * lattice neighbours below it of min(shape, shape at rest) V |grad W| dy / r. */
static void scorr_constants(const pbf_world *w, pbf_pbf_consts *c) {
    const float d = w->spacing;
    const int n = w->def.pbf.scorr_n;
    c->scorr_s_rest = pbf_scorr_shape(pbf_poly6(&w->k, d * d), c->scorr_inv_wdq, n);
    const int K = (int)ceilf(w->k.h / d);
    double lift = 0.0;
    for (int i = -K; i <= K; ++i)
        for (int j = -K; j <= -1; ++j)
            for (int k = -K; k <= K; ++k) {
                float r2 = (float)(i * i + j * j + k * k) * d * d;
                if (!(r2 < w->k.h2)) continue;
                float s = pbf_scorr_shape(pbf_poly6(&w->k, r2), c->scorr_inv_wdq, n);
                if (s > c->scorr_s_rest) s = c->scorr_s_rest;
                lift +=
                    (double)s * w->k.volume * fabs((double)pbf_spiky(&w->k, r2)) * (-j * (double)d);
            }
    c->scorr_lift = lift;
}

/* The relaxation on the lattice's scale and s_corr's constants (eq. 11, 13). */
static pbf_status create_state(const pbf_world *w, void **state, pbf_error *err) {
    const pbf_world_def *def = &w->def;
    pbf_pbf_consts *c = calloc(1, sizeof *c);
    if (!c) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "pbf_world_create: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    const float h = w->k.h, r2 = def->pbf.scorr_dq * def->pbf.scorr_dq * w->k.h2, dd = h * h - r2;
    c->eps_abs = def->pbf.relaxation * w->lattice_grad2;
    /* W_poly6 at |dq| (as pbf_poly6 with the constant computed here, as the world's) */
    c->scorr_inv_wdq = 1.0f / (315.0f / (64.0f * PBF_PI_F * powf(h, 9.0f)) * dd * dd * dd);
    scorr_constants(w, c);
    if (!isfinite(c->scorr_inv_wdq)) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "particle_radius = %g: the kernel constants overflow single "
                      "precision at this scale (h = %g m); use a radius between 1e-4 and 1 m",
                      def->particle_radius, h);
        free(c);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *state = c;
    return PBF_OK;
}

float pbf_scorr_support_ks(const pbf_world *w, float dt) {
    const pbf_world_def *d = &w->def;
    const double g =
        sqrt((double)d->gravity.x * d->gravity.x + (double)d->gravity.y * d->gravity.y +
             (double)d->gravity.z * d->gravity.z);
    const double per_step = (double)d->pbf.over_relaxation * d->pbf.solver_iterations *
                            pbf_pbf_consts_of(w)->scorr_lift;
    if (!(per_step > 0.0) || !(d->pbf.scorr_support > 0.0f)) return 0.0f;
    return (float)(-(double)d->pbf.scorr_support * g * (double)dt * dt / per_step);
}

float pbf_scorr_wall_term(const pbf_world *w, float dt) {
    return w->def.pbf.scorr_wall * pbf_scorr_support_ks(w, dt) * pbf_pbf_consts_of(w)->scorr_s_rest;
}

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
    .substep_dt = substep_dt,
    .carried_row = carried_row,
    .chebyshev_rho = chebyshev_rho,
    .create_state = create_state,
    .gpu_params = pbf_pbf_fill_gpu_params,
    .check = check,
};
