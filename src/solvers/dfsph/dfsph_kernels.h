/*
 * DFSPH's GPU kernels (dfsph.cl, launched by dfsph_gpu.c) and its part of the kernels' argument
 * block, as the generated list of every folder's kernels reads them (cmake/solvers.cmake).
 * Compiled as C, C++, OpenCL C and CUDA.
 */
#ifndef PBF_SOLVERS_DFSPH_KERNELS_H
#define PBF_SOLVERS_DFSPH_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in dfsph.cl */
#define PBF_KERNELS_dfsph(X)                                                                       \
    X(DFSPH_FACTOR, pbf_k_dfsph_factor)                                                            \
    X(DFSPH_SOURCE, pbf_k_dfsph_source)

/* Its member of pbf_gpu_params, P.m.dfsph (filled by pbf_dfsph_fill_gpu_params, dfsph_gpu.c,
 * the method's pbf_solver.gpu_params): 4-byte members only, the same on the host and every
 * device. */
typedef struct pbf_dfsph_gpu_params {
    float warm_v;      /* the divergence solve's warm start's fraction (warm, or
                          dfsph_divergence_warm_start when that is on) */
    int warm_first;    /* dfsph_divergence_warm_start is on (pbf_dfsph_warm_first) */
    float chebyshev_v; /* the divergence solve's Chebyshev weight (pbf_dfsph_cheb_iteration) */
    float full;        /* the warm start: the largest factor of a full neighbourhood */
    float min_rel;     /* dfsph_divergence_min_density (pbf_dfsph_source) */
} pbf_dfsph_gpu_params;
#define PBF_GPU_PARAMS_dfsph pbf_dfsph_gpu_params dfsph;

#endif
