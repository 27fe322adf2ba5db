/*
 * implicit incompressible SPH (Ihmsen et al. 2014): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_IISPH_H
#define PBF_SOLVER_IISPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_iisph {PBF_SOLVER_IISPH, "iisph", "implicit incompressible SPH (Ihmsen et al. 2014)"}
#define PBF_SOLVER_KEY_iisph "iisph = implicit incompressible SPH (Ihmsen et al. 2014)"

extern const pbf_solver pbf_solver_iisph;

/* ---- CPU stages (src/solvers/iisph/iisph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_iisph_diagonal_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_iisph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_iisph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (iisph.cl) on a GPU device, either host (OpenCL, CUDA):
 * iisph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "iisph_diagonal": density, a_ii, the pressure zeroed */
void pbf_iisph_diagonal_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "iisph_pressure": the relaxed Jacobi update, measured */
void pbf_iisph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "pressure_accel": the shared pressure acceleration with this method's flags */
void pbf_iisph_accel_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* The GPU kernels' parameters of the method (pbf_solver.gpu_params): P->m.iisph
 * (iisph_kernels.h) and the shared ones it sets. */
struct pbf_gpu_params;
void pbf_iisph_fill_gpu_params(const pbf_world *w, struct pbf_gpu_params *P, float dt);

#endif
