/*
 * weakly compressible SPH (Becker & Teschner 2007): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_WCSPH_H
#define PBF_SOLVER_WCSPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_wcsph {PBF_SOLVER_WCSPH, "wcsph", "weakly compressible SPH (Becker & Teschner 2007)"}
#define PBF_SOLVER_KEY_wcsph "wcsph = weakly compressible SPH (Becker & Teschner 2007)"

extern const pbf_solver pbf_solver_wcsph;

/* ---- CPU stages (src/solvers/wcsph/wcsph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_wcsph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_wcsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (wcsph.cl) on a GPU device, either host (OpenCL, CUDA):
 * wcsph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "wcsph_pressure": density, Tait pressure, viscosity; measured */
void pbf_wcsph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "pressure_accel": the shared pressure acceleration with this method's flags */
void pbf_wcsph_accel_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* The GPU kernels' parameters of the method (pbf_solver.gpu_params): P->m.wcsph
 * (wcsph_kernels.h). */
struct pbf_gpu_params;
void pbf_wcsph_fill_gpu_params(const pbf_world *w, struct pbf_gpu_params *P, float dt);

#endif
