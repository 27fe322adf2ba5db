/*
 * The stages several methods share: the prediction and the SPH solvers' gravity, the grid, the
 * collisions, the velocity update with the curl, vorticity confinement and XSPH, the advection
 * and the statistics.
 */
#ifndef PBF_SOLVERS_COMMON_H
#define PBF_SOLVERS_COMMON_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/common/common_cpu.c; grid and stats: src/backends/cpu/cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_cpu_predict(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_grid(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_collide(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_velocity(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_vorticity_xsph(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_gravity(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_advect(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_stats(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (common.cl) on a GPU device, either host (OpenCL, CUDA):
 * common_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* PBF_STAGE_PREDICT: v += dt g (and the bed shear stress), |v| <= vmax, x* = x + dt v */
void pbf_gpu_predict(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_COLLIDE: x* += delta p, collisions and friction */
void pbf_gpu_collide(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_VELOCITY: v = (x* - x) / dt, the curl omega and the density at x* */
void pbf_gpu_velocity(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_VORTICITY_XSPH: vorticity confinement, XSPH, x = x* */
void pbf_gpu_vorticity_xsph(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_GRAVITY: v += dt g (and the bed shear stress), |v| <= vmax, x* = x */
void pbf_gpu_gravity(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_ADVECT: delta x = dt v, applied with the collisions */
void pbf_gpu_advect(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif /* PBF_SOLVERS_COMMON_H */
