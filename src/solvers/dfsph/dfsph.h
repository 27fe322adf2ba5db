/*
 * Divergence-free SPH (Bender & Koschier 2017): the stages' declarations.
 */
#ifndef PBF_SOLVERS_DFSPH_H
#define PBF_SOLVERS_DFSPH_H

#include "internal.h"

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (dfsph.cl) on a GPU device, either host (OpenCL, CUDA):
 * dfsph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* PBF_STAGE_DFSPH_FACTOR: density and the factor */
void pbf_dfsph_factor_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_DIVERGENCE: the divergence solve's k_i, measured */
void pbf_dfsph_divergence_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_DENSITY_ADV: the density solve's k_i, measured */
void pbf_dfsph_density_adv_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_DFSPH_WARM_V: the divergence solve's warm start */
void pbf_dfsph_warm_v_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_DFSPH_WARM: the density solve's warm start */
void pbf_dfsph_warm_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif
