/*
 * The portability prelude of the GPU kernels (backends/gpu/pbf_kernels.cl): one kernel source
 * compiled as OpenCL C 1.2 (the OpenCL backend, which embeds it at build time) and as CUDA (a .cu
 * file that #includes pbf_kernels.cl). Also included by the host code of the GPU backends for
 * pbf_gpu_params, the one argument block every kernel takes by value.
 *
 *   PBF_KERNEL                 a kernel entry point: __kernel void / extern "C" __global__ void
 *   PBF_DEVICE_FN              a helper of the kernels only (device code: it may use the macros
 *                              below, which PBF_FN functions, also compiled for the host, may not)
 *   PBF_GLOBAL                 device memory (from sph/kernel.h): __global / nothing
 *   PBF_GID, PBF_LID           global and local index along dimension 0
 *   PBF_GROUP, PBF_LOCAL_SIZE  work-group (block) index and size
 *   PBF_LOCAL_ARRAY(t, a, n)   a work-group shared array, at kernel scope: __local / __shared__
 *   PBF_BARRIER                work-group barrier on shared memory
 *   PBF_ATOMIC_ADD_U32(p, v)   atomic add on an unsigned int in device memory, returns the old value
 *   PBF_ATOMIC_MIN_I32(p, v)   atomic min on an int in device memory
 *   PBF_LOWEST_BIT(m)          index of the lowest set bit of an unsigned int m != 0
 *
 * Floating point: the kernels must not contract a * b + c into a fused multiply-add (the host code
 * is built with -ffp-contract=off, and the CPU backend is the reference the GPU results are
 * compared with). OpenCL: the FP_CONTRACT pragma below, plus -cl-fp32-correctly-rounded-divide-sqrt
 * where the device has it. CUDA: compile with nvcc --fmad=false -prec-div=true -prec-sqrt=true.
 *
 * PBF_CELL_FP64 (set by the host where the device has double precision): the grid cell of a
 * particle is computed in double, exactly as src/grid.c does, so the GPU sort equals the CPU's.
 */
#ifndef PBF_GPU_PRELUDE_H
#define PBF_GPU_PRELUDE_H

/* before any code, the shared headers' included: OpenCL C contracts by default */
#if defined(__OPENCL_VERSION__)
#pragma OPENCL FP_CONTRACT OFF
#endif

/* kernel.h (PBF_FN, PBF_GLOBAL, pbf_sph_consts), walls.h and the SPH solvers' formulas */
#include "../../solvers/sph/sph_formulas.h"
/* every folder's kernel list and argument members (<folder>_kernels.h), gathered at configure
 * time into the build's generated/ folder (cmake/solvers.cmake) */
#include "pbf_solver_kernels.h"

#if defined(__OPENCL_VERSION__)
#if defined(PBF_CELL_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define PBF_KERNEL __kernel void
#define PBF_DEVICE_FN static inline
#define PBF_GID ((int)get_global_id(0))
#define PBF_LID ((int)get_local_id(0))
#define PBF_GROUP ((int)get_group_id(0))
#define PBF_LOCAL_SIZE ((int)get_local_size(0))
#define PBF_LOCAL_ARRAY(type, name, n) __local type name[n]
#define PBF_BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define PBF_ATOMIC_ADD_U32(p, v) atomic_add((volatile __global unsigned int *)(p), (v))
#define PBF_ATOMIC_MIN_I32(p, v) atomic_min((volatile __global int *)(p), (v))
#define PBF_INT_MAX INT_MAX
#define PBF_LOWEST_BIT(m) (31u - clz((m) & (0u - (m)))) /* index of the lowest set bit, m != 0 */
#elif defined(__CUDACC__)
#define PBF_KERNEL extern "C" __global__ void
#define PBF_DEVICE_FN static __device__ inline
#define PBF_GID ((int)(blockIdx.x * blockDim.x + threadIdx.x))
#define PBF_LID ((int)threadIdx.x)
#define PBF_GROUP ((int)blockIdx.x)
#define PBF_LOCAL_SIZE ((int)blockDim.x)
#define PBF_LOCAL_ARRAY(type, name, n) __shared__ type name[n]
#define PBF_BARRIER __syncthreads()
#define PBF_ATOMIC_ADD_U32(p, v) atomicAdd((unsigned int *)(p), (v))
#define PBF_ATOMIC_MIN_I32(p, v) atomicMin((int *)(p), (v))
#define PBF_INT_MAX 2147483647
#define PBF_LOWEST_BIT(m) ((unsigned int)(__ffs((int)(m)) - 1))
#endif

/* Work-group sizes the host launches with (it may lower them with -D on small devices). The
 * scan and the statistics need theirs at compile time for their shared arrays. */
#ifndef PBF_SCAN_WG
#define PBF_SCAN_WG 256 /* power of two; a scan block is 2 * PBF_SCAN_WG elements */
#endif
#ifndef PBF_STATS_WG
#define PBF_STATS_WG 256 /* power of two */
#endif
#define PBF_STATS_PER_ITEM 16 /* a statistics chunk: PBF_STATS_WG * 16 particles */
#define PBF_STATS_VALUES 5    /* per chunk: sum err, max err, max speed^2, non-finite, escaped */

/* Device-side types that follow PBF_CELL_FP64: the grid cell arithmetic (as src/grid.c, in
 * double) and the statistics partials (the host reads them as double or float accordingly). */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)
#if defined(PBF_CELL_FP64) || defined(__CUDACC__)
typedef double pbf_gpu_real;
#else
typedef float pbf_gpu_real; /* no double on the device: see pbf_gpu_axis_cell */
#endif
#endif

/* The first particle at which a step produced a non-finite value (the guard's report). */
typedef struct pbf_gpu_bad {
    int slot;        /* launch of the step (the host knows its stage), -1: none */
    int index;       /* particle, in the memory order after the step */
    unsigned int id;
    float x, y, z;   /* its position when the stage ran (start of step; x* for the last stage) */
} pbf_gpu_bad;

/* Everything the kernels read besides the buffers, by value, identical on the host and every
 * device: 4-byte members only (the backends check sizeof on the device when they open). The
 * members below are those the shared kernels (pbf_kernels.cl, src/solvers/common/, sph/) or
 * several methods read; a method's own are its member of `m`. */
typedef struct pbf_gpu_params {
    pbf_sph_consts k;
    pbf_walls_consts wc;
    int n;          /* particles */
    int dim[3];     /* grid cells per axis; cell = (z * dim[1] + y) * dim[0] + x */
    float origin[3], cell_size; /* the grid's, in float (for skipping cells only) */
    float reach2;   /* (h + margin)^2: a cell farther than this from x*_i0 holds no neighbour */
    float gdt[3];   /* gravity * dt */
    float dt, inv_dt;
    float vmax;     /* CFL speed limit */
    float inv_rho0; /* 1 / rho_0 */
    float chebyshev; /* this iteration's Chebyshev weight (pbf_chebyshev_omega): of PBF's lambda,
                        of a solve's k_i (the methods' Chebyshev-accelerated Jacobi) */
    float lambda_warm; /* lambda_warm_start: PBF's warm start of lambda (pbf_warm_lambda), read
                          by the curl too; 0: none */
    float vorticity, xsph;
    float factor_eps; /* the SPH methods' factors and diagonals: denominators below this give 0 */
    float warm;      /* the warm start's fraction of a method that has one (pbf_warm_start), 0: off */
    int iteration;  /* the iteration of a solve (pbf_step_ctx.iteration) */
    int clamp_at;   /* index in `bad` of the step's count of speed-limit cuts */
    /* what one method's kernels alone read: its member, P.m.<folder>, defined in its folder
     * (src/solvers/<folder>/<folder>_kernels.h: pbf_<folder>_gpu_params) and filled by its
     * gpu_params (pbf_solver.gpu_params); `none` keeps the union whole where no folder has one */
    union {
        int none;
        PBF_SOLVER_GPU_PARAMS
    } m;
} pbf_gpu_params;

#endif
