/*
 * The GPU kernels the SPH family shares (sph.cl, launched by sph_gpu.c), as the generated list of
 * every folder's kernels reads them (cmake/solvers.cmake). Compiled as C, C++, OpenCL C and
 * CUDA. The argument block's members these kernels read stay shared
 * (src/backends/gpu/gpu_prelude.h), so this folder has no block of its own.
 */
#ifndef PBF_SOLVERS_SPH_KERNELS_H
#define PBF_SOLVERS_SPH_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in sph.cl */
#define PBF_KERNELS_sph(X) X(PRESSURE_ACCEL, pbf_k_pressure_accel)

#endif
