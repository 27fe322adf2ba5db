/*
 * SESPH's GPU kernel (sesph.cl, launched by sesph_gpu.c) and its part of the kernels' argument
 * block, as the generated list of every folder's kernels reads them (cmake/solvers.cmake).
 * Compiled as C, C++, OpenCL C and CUDA.
 */
#ifndef PBF_SOLVERS_SESPH_KERNELS_H
#define PBF_SOLVERS_SESPH_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in sesph.cl */
#define PBF_KERNELS_sesph(X) X(SESPH_PRESSURE, pbf_k_sesph_pressure)

/* Its member of pbf_gpu_params, P.m.sesph (filled by pbf_sesph_fill_gpu_params, sesph_gpu.c):
 * 4-byte members only, the same on the host and every device. */
typedef struct pbf_sesph_gpu_params {
    float k;       /* the linear state equation's stiffness, Pa */
    float tension; /* the share of the negative pressure kept */
    float nu;      /* dt V alpha h c_s: the artificial viscosity's factor over a substep */
} pbf_sesph_gpu_params;
#define PBF_GPU_PARAMS_sesph pbf_sesph_gpu_params sesph;

#endif
