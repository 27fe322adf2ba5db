/*
 * The stages several methods share (PBF and the SPH family): the stages' declarations.
 */
#ifndef PBF_SOLVERS_COMMON_H
#define PBF_SOLVERS_COMMON_H

#include "internal.h"

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

#endif
