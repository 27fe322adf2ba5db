/*
 * PBF's GPU kernels (pbf.cl, launched by pbf_gpu.c) and its part of the kernels' argument block,
 * as the generated list of every folder's kernels reads them (cmake/solvers.cmake). Compiled as
 * C, C++, OpenCL C and CUDA. (lambda_warm stays in the shared block: the shared curl kernel
 * reads it too.)
 */
#ifndef PBF_SOLVERS_PBF_KERNELS_H
#define PBF_SOLVERS_PBF_KERNELS_H

/* X(id, function): the kernel's id PBF_GK_<id> (gpu_steps.h) and its function in pbf.cl */
#define PBF_KERNELS_pbf(X)                                                                         \
    X(LAMBDA, pbf_k_lambda)                                                                        \
    X(DELTA_P, pbf_k_delta_p)

/* Its member of pbf_gpu_params, P.m.pbf (filled by pbf_pbf_fill_gpu_params, pbf_gpu.c, the
 * method's pbf_solver.gpu_params): 4-byte members only, the same on the host and every device. */
typedef struct pbf_pbf_gpu_params {
    float eps_abs;      /* relaxation of eq. 11, 1/m^2 */
    float ks;           /* -scorr_k / lattice_grad2: s_corr on lambda's scale, against clumping */
    float ksg;          /* s_corr's artificial pressure (pbf_scorr_support_ks) */
    float s_rest;       /* s_corr's shape at the rest spacing */
    float scorr_wall;   /* the walls' share of s_corr on lambda's scale (pbf_scorr_wall_term) */
    float inv_wdq;      /* 1 / W(dq) */
    float omega;        /* over-relaxation of delta p */
    float lambda_carry; /* lambda_carry: the warm start's factor in the first iteration
                           (pbf_warm_lambda_factor) */
    int scorr_n;
    int unilateral;
} pbf_pbf_gpu_params;
#define PBF_GPU_PARAMS_pbf pbf_pbf_gpu_params pbf;

#endif
