/*
 * Weakly compressible SPH: the stages' declarations.
 */
#ifndef PBF_SOLVERS_WCSPH_H
#define PBF_SOLVERS_WCSPH_H

#include "internal.h"

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (wcsph.cl) on a GPU device, either host (OpenCL, CUDA):
 * wcsph_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* PBF_STAGE_WCSPH_PRESSURE: density, Tait pressure, viscosity; measured */
void pbf_wcsph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

#endif
