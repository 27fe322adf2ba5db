/*
 * Implicit incompressible SPH (Ihmsen et al. 2014): the stages' declarations.
 */
#ifndef PBF_SOLVERS_IISPH_H
#define PBF_SOLVERS_IISPH_H

#include "internal.h"

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (iisph.cl) on a GPU device, either host (OpenCL, CUDA):
 * iisph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* PBF_STAGE_IISPH_DIAGONAL: density, a_ii, the pressure zeroed */
void pbf_iisph_diagonal_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_IISPH_PRESSURE: the relaxed Jacobi update, measured */
void pbf_iisph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif
