/*
 * PCISPH's GPU kernels (pcisph.cl, launched by pcisph_gpu.c) and its part of the kernels'
 * argument block, as the generated list of every folder's kernels reads them
 * (cmake/solvers.cmake). Compiled as C, C++, OpenCL C and CUDA.
 */
#ifndef PBF_SOLVERS_PCISPH_KERNELS_H
#define PBF_SOLVERS_PCISPH_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in pcisph.cl */
#define PBF_KERNELS_pcisph(X)                                                                      \
    X(PCISPH_INIT, pbf_k_pcisph_init)                                                              \
    X(PCISPH_PRESSURE, pbf_k_pcisph_pressure)

/* Its member of pbf_gpu_params, P.m.pcisph (filled by pbf_pcisph_fill_gpu_params, pcisph_gpu.c,
 * the method's pbf_solver.gpu_params): 4-byte members only, the same on the host and every
 * device. */
typedef struct pbf_pcisph_gpu_params {
    float delta; /* pbf_pcisph_delta of the rest lattice (m^2 in k) */
} pbf_pcisph_gpu_params;
#define PBF_GPU_PARAMS_pcisph pbf_pcisph_gpu_params pcisph;

#endif
