/*
 * What the SPH family (WCSPH, DFSPH, PCISPH, IISPH) shares: the stages' declarations.
 */
#ifndef PBF_SOLVERS_SPH_H
#define PBF_SOLVERS_SPH_H

#include "internal.h"

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (sph.cl) on a GPU device, either host (OpenCL, CUDA):
 * sph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "pressure_accel": the symmetric pressure acceleration, with the artificial viscosity
 * (viscous: WCSPH) or at the predicted positions x + dt v (predicted: PCISPH); each method's
 * accel stage calls it with its own flags */
void pbf_sph_pressure_accel_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c,
                                int viscous, int predicted);

/* stage "<method>_pressure" of a state-equation method (WCSPH, SESPH): launches its kernel
 * (`kernel`, a PBF_GK_ id), whose arguments are those of pbf_gpu_state_sums' callers in sph.cl
 * (x*, the neighbour sets, v; density, k_i into lambda, the viscous change into s), and measures
 * the density error. */
void pbf_sph_state_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c,
                                int kernel);

#endif
