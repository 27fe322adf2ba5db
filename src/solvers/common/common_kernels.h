/*
 * The GPU kernels of the stages several methods share (common.cl, launched by common_gpu.c), as
 * the generated list of every folder's kernels reads them (cmake/solvers.cmake: the list
 * PBF_KERNELS_<folder> of each folder's <folder>_kernels.h, into PBF_SOLVER_KERNELS). Compiled as
 * C, C++, OpenCL C and CUDA. The argument block's members these kernels read stay shared
 * (src/backends/gpu/gpu_prelude.h), so this folder has no block of its own.
 */
#ifndef PBF_SOLVERS_COMMON_KERNELS_H
#define PBF_SOLVERS_COMMON_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in common.cl */
#define PBF_KERNELS_common(X)                                                                      \
    X(PREDICT, pbf_k_predict)                                                                      \
    X(COLLIDE, pbf_k_collide)                                                                      \
    X(VELOCITY, pbf_k_velocity)                                                                    \
    X(CURL, pbf_k_curl)                                                                            \
    X(VORTICITY_XSPH, pbf_k_vorticity_xsph)                                                        \
    X(GRAVITY, pbf_k_gravity)                                                                      \
    X(ADVECT, pbf_k_advect)

#endif
