/*
 * Position Based Fluids (Macklin & Mueller 2013): the stages' declarations.
 */
#ifndef PBF_SOLVERS_PBF_H
#define PBF_SOLVERS_PBF_H

#include "internal.h"

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (pbf.cl) on a GPU device, either host (OpenCL, CUDA):
 * pbf_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* PBF_STAGE_LAMBDA: density, C_i, lambda_i (eq. 11), measured */
void pbf_pbf_lambda_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_DELTA_P: delta p with s_corr (eq. 12-14) into s */
void pbf_pbf_delta_p_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif
