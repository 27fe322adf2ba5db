/*
 * divergence-free SPH (Bender & Koschier 2015, 2017): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_DFSPH_H
#define PBF_SOLVER_DFSPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_dfsph {PBF_SOLVER_DFSPH, "dfsph", "divergence-free SPH (Bender & Koschier 2015, 2017)"}
#define PBF_SOLVER_KEY_dfsph "dfsph = divergence-free SPH (Bender & Koschier 2017)"

extern const pbf_solver pbf_solver_dfsph;

/* ---- CPU stages (src/solvers/dfsph/dfsph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_dfsph_factor_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_divergence_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_density_adv_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_warm_v_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_warm_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (dfsph.cl) on a GPU device, either host (OpenCL, CUDA):
 * dfsph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "dfsph_factor": density and the factor */
void pbf_dfsph_factor_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "divergence": the divergence solve's k_i, measured */
void pbf_dfsph_divergence_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "density_adv": the density solve's k_i, measured */
void pbf_dfsph_density_adv_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "dfsph_warm_v": the divergence solve's warm start */
void pbf_dfsph_warm_v_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "dfsph_warm": the density solve's warm start */
void pbf_dfsph_warm_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "pressure_accel": the shared pressure acceleration with this method's flags */
void pbf_dfsph_accel_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* The GPU kernels' parameters of the method (pbf_solver.gpu_params): P->m.dfsph
 * (dfsph_kernels.h) and the shared ones it sets. */
struct pbf_gpu_params;
void pbf_dfsph_fill_gpu_params(const pbf_world *w, struct pbf_gpu_params *P, float dt);

#endif
