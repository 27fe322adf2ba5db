/*
 * IISPH's GPU kernels (iisph.cl, launched by iisph_gpu.c) and its part of the kernels' argument
 * block, as the generated list of every folder's kernels reads them (cmake/solvers.cmake).
 * Compiled as C, C++, OpenCL C and CUDA.
 */
#ifndef PBF_SOLVERS_IISPH_KERNELS_H
#define PBF_SOLVERS_IISPH_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in iisph.cl */
#define PBF_KERNELS_iisph(X)                                                                       \
    X(IISPH_DIAGONAL, pbf_k_iisph_diagonal)                                                        \
    X(IISPH_PRESSURE, pbf_k_iisph_pressure)

/* Its member of pbf_gpu_params, P.m.iisph (filled by pbf_iisph_fill_gpu_params, iisph_gpu.c,
 * the method's pbf_solver.gpu_params): 4-byte members only, the same on the host and every
 * device. */
typedef struct pbf_iisph_gpu_params {
    float omega; /* relaxation of the Jacobi update */
} pbf_iisph_gpu_params;
#define PBF_GPU_PARAMS_iisph pbf_iisph_gpu_params iisph;

#endif
