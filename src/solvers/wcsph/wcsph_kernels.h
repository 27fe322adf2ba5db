/*
 * WCSPH's GPU kernel (wcsph.cl, launched by wcsph_gpu.c) and its part of the kernels' argument
 * block, as the generated list of every folder's kernels reads them (cmake/solvers.cmake).
 * Compiled as C, C++, OpenCL C and CUDA.
 */
#ifndef PBF_SOLVERS_WCSPH_KERNELS_H
#define PBF_SOLVERS_WCSPH_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in wcsph.cl */
#define PBF_KERNELS_wcsph(X) X(WCSPH_PRESSURE, pbf_k_wcsph_pressure)

/* Its member of pbf_gpu_params, P.m.wcsph (filled by pbf_wcsph_fill_gpu_params, wcsph_gpu.c,
 * the method's pbf_solver.gpu_params): 4-byte members only, the same on the host and every
 * device. */
typedef struct pbf_wcsph_gpu_params {
    float b, gamma; /* Tait equation: stiffness B, exponent gamma */
    float nu;       /* dt V alpha h c_s: the artificial viscosity's factor over a substep */
} pbf_wcsph_gpu_params;
#define PBF_GPU_PARAMS_wcsph pbf_wcsph_gpu_params wcsph;

#endif
