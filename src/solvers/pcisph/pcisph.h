/*
 * predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_PCISPH_H
#define PBF_SOLVER_PCISPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_pcisph {PBF_SOLVER_PCISPH, "pcisph", "predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009)"}
#define PBF_SOLVER_KEY_pcisph "pcisph = predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009)"

extern const pbf_solver pbf_solver_pcisph;

/* ---- CPU stages (src/solvers/pcisph/pcisph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_pcisph_init_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_pcisph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_pcisph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (pcisph.cl) on a GPU device, either host (OpenCL, CUDA):
 * pcisph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "pcisph_init": k = 0 and the velocities the walls allow */
void pbf_pcisph_init_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "pcisph_pressure": the pressure correction, measured */
void pbf_pcisph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "pressure_accel": the shared pressure acceleration with this method's flags */
void pbf_pcisph_accel_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* The GPU kernels' parameters of the method (pbf_solver.gpu_params): P->m.pcisph
 * (pcisph_kernels.h). */
struct pbf_gpu_params;
void pbf_pcisph_fill_gpu_params(const pbf_world *w, struct pbf_gpu_params *P, float dt);

#endif
