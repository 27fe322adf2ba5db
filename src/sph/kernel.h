/*
 * SPH kernel math on plain data, compiled unchanged as C (the CPU backend), OpenCL C and CUDA
 * (the GPU backends). One formula, one place: every stage of every backend calls these.
 *
 *   PBF_FN       qualifier of a function callable on the host and on a device (NVIDIA Warp's
 *                CUDA_CALLABLE): static inline in C and OpenCL C, __host__ __device__ in CUDA.
 *   PBF_GLOBAL   address space of device memory: __global in OpenCL C, nothing elsewhere.
 *
 * Kernels of Müller et al. 2003 as used by Macklin & Müller 2013:
 *   W_poly6(r)      = 315 / (64 pi h^9) (h^2 - r^2)^3          (density, eq. 2)
 *   grad W_spiky(r) = -45 / (pi h^6) (h - r)^2 r / |r|          (gradients, eq. 8)
 * and, for the SPH solvers, the cubic spline of Monaghan 1992 (support h, q = |r| / h), whose
 * gradient is the gradient of the kernel that measures the density, so that their symmetric
 * pressure force conserves energy (poly6's density with spiky's gradient does not: the
 * solvers then feed energy into the fluid):
 *   W(q)      = 8 / (pi h^3) (6 q^3 - 6 q^2 + 1) for q <= 1/2,  16 / (pi h^3) (1 - q)^3 for q <= 1
 *   grad W(r) = dW/dq / h  r / |r|
 * The formulas themselves are in kernel_formulas.h, written once over a "real" type so that the
 * CPU backend can instantiate them on SIMD lanes as well (see src/backends/cpu/cpu.c).
 */
#ifndef PBF_SPH_KERNEL_H
#define PBF_SPH_KERNEL_H

#if defined(__OPENCL_VERSION__)
#define PBF_FN static inline
#define PBF_GLOBAL __global
#define PBF_SQRTF(x) sqrt(x)
#elif defined(__CUDACC__)
#define PBF_FN static inline __host__ __device__
#define PBF_GLOBAL
#define PBF_SQRTF(x) sqrtf(x)
#else
#include <math.h>
#include <stdint.h>
#define PBF_FN static inline
#define PBF_GLOBAL
#define PBF_SQRTF(x) sqrtf(x)
#endif

/* The constants every neighbour stage needs (derived once per world, see world.c). Plain floats
 * only, so the struct has the same layout on the host, in OpenCL C and in CUDA and can be passed
 * to a device kernel by value. */
typedef struct pbf_sph_consts {
    float h, h2;          /* kernel radius and its square, m, m^2 */
    float poly6;          /* 315 / (64 pi h^9) */
    float spiky;          /* -45 / (pi h^6): grad W_spiky = spiky (h - r)^2 / r * r_vec */
    float r_min;          /* 1e-6 h: distance floor of the spiky gradient */
    float mass, volume;   /* particle mass m and volume V = m / rho_0 */
    float rest_density;   /* rho_0 */
    /* the SPH solvers' kernel (pbf_kernel_w, pbf_kernel_grad): 1 = the cubic spline, 0 =
     * poly6 / spiky as above (PBF's, and the SPH solvers' with sph_kernel = poly6_spiky) */
    float cubic;
    float inv_h;          /* 1 / h */
    float cubic_w;        /* 8 / (pi h^3) */
    float cubic_g;        /* 48 / (pi h^4) */
} pbf_sph_consts;

/* Scalar instances: pbf_poly6(k, r2), pbf_spiky(k, r2) and the rest. */
#define PBF_REAL float
#define PBF_REAL_SQRT(x) PBF_SQRTF(x)
#define PBF_REAL_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PBF_KFN(name) name
#include "kernel_formulas.h"
#undef PBF_REAL
#undef PBF_REAL_SQRT
#undef PBF_REAL_MAX
#undef PBF_KFN

/* The world's kernel for the stages every solver shares and the SPH solvers' own: the cubic
 * spline where k->cubic is set (the SPH solvers, sph_kernel = cubic), poly6 / spiky otherwise.
 * PBF's own stages (lambda, delta p) call pbf_poly6 / pbf_spiky directly. */
PBF_FN float pbf_kernel_w(const pbf_sph_consts *k, float r2) {
    return k->cubic != 0.0f ? pbf_cubic(k, r2) : pbf_poly6(k, r2);
}
PBF_FN float pbf_kernel_grad(const pbf_sph_consts *k, float r2) {
    return k->cubic != 0.0f ? pbf_cubic_grad(k, r2) : pbf_spiky(k, r2);
}

/* Chebyshev semi-iterative acceleration of the Jacobi iterations (Wang 2015, "A Chebyshev
 * semi-iterative approach for accelerating projective and position-based dynamics", eq. 10-12),
 * applied to the multipliers: iteration k (0 first) takes
 *     lambda_i <- omega_k lambda_i(Jacobi) + (omega_k - 1) lambda_i(previous iteration)
 * with omega_0 = 1, omega_1 = 2 / (2 - rho^2), omega_k = 4 / (4 - rho^2 omega_(k-1)), rho the
 * estimated spectral radius of the Jacobi iteration; rho = 0 gives omega = 1 (plain Jacobi). Since
 * delta p is linear in the multipliers, this is Wang's x <- omega (x_Jacobi - x_prev) + x_prev
 * on the constraint part of delta p, without storing the previous positions. At omega = 1 the
 * update is the Jacobi one itself, whatever `previous` holds (the first iteration's, where it is
 * another solve's, or any iteration with rho = 0). */
PBF_FN float pbf_chebyshev_omega(float rho, int k) {
    float omega = 1.0f;
    for (int m = 1; m <= k; ++m)
        omega = m == 1 ? 2.0f / (2.0f - rho * rho) : 4.0f / (4.0f - rho * rho * omega);
    return omega;
}
PBF_FN float pbf_chebyshev_lambda(float lambda, float previous, float omega) {
    return omega != 1.0f ? omega * lambda + (omega - 1.0f) * previous : lambda;
}

/* Warm start of the multipliers (lambda_warm_start = beta): heavy-ball momentum on the Jacobi
 * iterations (Polyak 1964), carried from step to step as XPBD carries its multipliers
 * (Macklin, Mueller & Chentanez 2016): iteration k takes
 *     lambda_i^k = lambda_i(eq. 11 at the current x*) + beta lambda_i^(k-1)
 * with lambda_i^(k-1) the previous iteration's, and at the first iteration the last one of the
 * previous step (0 for a new particle). Since delta p is linear in the multipliers, each
 * correction adds beta times the previous one: at rest the multipliers reach 1 / (1 - beta)
 * times what the plain iterations give, and the compression that the fixed iteration count
 * leaves falls by the factor (1 - beta). beta = 0 is the paper (callers skip the call then, so
 * that the bits are the paper's whatever the array held). */
PBF_FN float pbf_warm_lambda(float lambda, float previous, float beta) {
    return lambda + beta * previous;
}

/* The factor of pbf_warm_lambda in iteration `iteration` of a step: beta (lambda_warm_start),
 * and in the first (0), whose `previous` is the previous step's last lambda, carry
 * (lambda_carry) instead. Carried at beta itself, the steady state has the same lambda in every
 * iteration, but a settled column keeps an odd-even oscillation from step to step at mid-depth
 * (n = 36 and 72 particles across the validation's column: 1,069 of 10,368 particles above
 * 0.5 % of sqrt(g H), the fastest 1.4 %, after 2.5 s); a carry of 0.6 damps it (none above
 * 0.5 %, the odd-even part 0.2 % at most) and lowers the compression; more than 0.6 makes the
 * dam break's start gain energy. */
PBF_FN float pbf_warm_lambda_factor(float beta, float carry, int iteration) {
    return iteration == 0 ? carry : beta;
}

/* Speed limit |v| <= vmax (the CFL limit of the step, FleX's maxSpeed). Returns 1 when it cut
 * the velocity, 0 otherwise: every backend counts the cuts (pbf_stats.speed_clamps), so that a
 * limit that changes the motion never does so silently. */
PBF_FN int pbf_limit_speed(float *vx, float *vy, float *vz, float vmax) {
    float s2 = *vx * *vx + *vy * *vy + *vz * *vz;
    if (s2 > vmax * vmax) {
        float k = vmax / PBF_SQRTF(s2);
        *vx *= k;
        *vy *= k;
        *vz *= k;
        return 1;
    }
    return 0;
}

#endif
