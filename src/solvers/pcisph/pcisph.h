/*
 * Predictive-corrective incompressible SPH: the stages' declarations.
 */
#ifndef PBF_SOLVERS_PCISPH_H
#define PBF_SOLVERS_PCISPH_H

#include "internal.h"

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (pcisph.cl) on a GPU device, either host (OpenCL, CUDA):
 * pcisph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* PBF_STAGE_PCISPH_INIT: k = 0 and the velocities the walls allow */
void pbf_pcisph_init_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* PBF_STAGE_PCISPH_PRESSURE: the pressure correction, measured */
void pbf_pcisph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif
