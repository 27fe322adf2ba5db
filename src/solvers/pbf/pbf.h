/*
 * Position Based Fluids (Macklin & Mueller 2013): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_PBF_H
#define PBF_SOLVER_PBF_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_pbf {PBF_SOLVER_PBF, "pbf", "Position Based Fluids (Macklin & Mueller 2013)"}
#define PBF_SOLVER_KEY_pbf "pbf = Position Based Fluids (Macklin & Mueller 2013)"

extern const pbf_solver pbf_solver_pbf;

/* The CFL rule's defaults (pbf_cfl, pbf_gravity_cfl; see substep_dt in pbf.c). */
#define PBF_CFL_DEFAULT 0.0
#define PBF_GRAVITY_CFL_DEFAULT 0.09

/* PBF's derived constants (the world's method_state; pbf_pbf_consts_of). */
typedef struct pbf_pbf_consts {
    float eps_abs;       /* relaxation in 1/m^2 */
    float scorr_inv_wdq; /* 1 / W(dq) */
    float scorr_s_rest;  /* s_corr's shape (W(s) / W(dq))^n at the rest spacing s */
    double scorr_lift;   /* upward delta p of the top particle of a rest lattice, per iteration
                            and per unit of s_corr's artificial pressure on lambda's scale (m) */
} pbf_pbf_consts;
const pbf_pbf_consts *pbf_pbf_consts_of(const pbf_world *w);

/* The strength of s_corr's artificial pressure on lambda's scale for a step of dt
 * (pbf_scorr_split's ksg, <= 0): the top particle of a rest lattice is pushed up by
 * scorr_support |g| dt^2 per step (solver_iterations iterations, over-relaxation included), so
 * that the pressure's effect against gravity is the same at every resolution and time step.
 * Every backend takes this one float. */
float pbf_scorr_support_ks(const pbf_world *w, float dt);
/* The walls' share of s_corr on lambda's scale (the factor of the wall gradient in delta p, added
 * to lambda_i): the solid is ghost fluid at rest density (boundary.c), so its pairs with a
 * particle get s_corr's artificial pressure too, taken at its value at the rest spacing:
 * scorr_wall * pbf_scorr_support_ks * s_rest. Without it nothing but the clamp holds a particle
 * off a wall where it is under-dense (lambda = 0), and in a container's vertical edge, which the
 * clamp keeps it in on two sides, particles stand in single file on s_corr's anti-clumping part
 * while the liquid beside them falls. Computed on the host, the same float on every device. */
float pbf_scorr_wall_term(const pbf_world *w, float dt);


/* The GPU kernels' PBF parameters (pbf_gpu.c): P->m.pbf (pbf_kernels.h) and lambda_warm. */
void pbf_pbf_fill_gpu_params(const pbf_world *w, struct pbf_gpu_params *P, float dt);

/* PBF's warm start acts only when every step runs at least this many iterations
 * (solver_iterations, or pbf_min_iterations with pbf_tolerance); with fewer the step solves from
 * lambda = 0, the paper's solve. Measured on the validation's resting column, 36 particles
 * across, 1/960 s steps: at 2 iterations the warm start (0.5, carry 0.6) made it boil within
 * 0.03 s (15.6 m/s, the speed limit), as it did with the in-step momentum alone (carry 0:
 * 4.3 m/s) and with a tolerance of 1 % from one iteration; the paper's solve stayed below
 * 0.84 m/s; from 3 iterations the warm start is the calmer (0.38 against 0.49 m/s), and so with
 * a tolerance and 3 iterations at least. */
#define PBF_WARM_MIN_ITERATIONS 3

/* ---- CPU stages (src/solvers/pbf/pbf_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_pbf_lambda_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_pbf_delta_p_cpu(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (pbf.cl) on a GPU device, either host (OpenCL, CUDA):
 * pbf_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "lambda": density, C_i, lambda_i (eq. 11), measured */
void pbf_pbf_lambda_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "delta_p": delta p with s_corr (eq. 12-14) into s */
void pbf_pbf_delta_p_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif
