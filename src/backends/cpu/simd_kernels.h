/*
 * The CPU backend's kernel helpers on SIMD lanes (src/simd.h): the kernel formulas of
 * src/sph/kernel_formulas.h on 8 lanes (v_poly6, v_spiky, v_kw, v_kgrad) and, with AVX-512, on
 * 16 (PBF_PAIRS: pbf_vf16, vf16_*, v16_*). Header-only and static inline: every neighbour loop of
 * the CPU stages (src/solvers/) inlines them.
 */
#ifndef PBF_CPU_SIMD_KERNELS_H
#define PBF_CPU_SIMD_KERNELS_H

#include <stdint.h>
#include <string.h>

#include "simd.h"
#include "sph/kernel.h"

/* The kernel formulas of src/sph/kernel_formulas.h on SIMD lanes: pbf_poly6_v, pbf_spiky_v,
 * pbf_scorr_shape_v (bit-identical per lane to the scalar instances the GPU kernels use). */
#define PBF_REAL pbf_vf
#define PBF_REAL_SQRT(x) vf_sqrt(x)
#define PBF_REAL_MAX(a, b) vf_max((a), vf_set1(0.0f) + (b))
#define PBF_KFN(name) name##_v
#include "sph/kernel_formulas.h"
#undef PBF_REAL
#undef PBF_REAL_SQRT
#undef PBF_REAL_MAX
#undef PBF_KFN

/* Two particles at once (AVX-512): lanes 0-7 hold a chunk of particle i's neighbours, lanes
 * 8-15 the same chunk of particle i + 1's, each lane computing exactly what the 8-lane code
 * computes for it, and each half summed into its own particle's 8 lane sums in the same order
 * (a lane past a particle's list adds +0, which leaves a sum unchanged: a sum that starts at
 * +0 is never -0). Bit-identical to the 8-lane passes, with half the loop trips and twice the
 * independent work in flight. */
#if defined(__AVX512F__) && defined(__AVX512DQ__) && PBF_LANES == 8
#define PBF_PAIRS 1
typedef float pbf_vf16 __attribute__((vector_size(64)));
typedef int32_t pbf_vi16 __attribute__((vector_size(64)));
static inline PBF_SIMD_INLINE pbf_vf16 vf16_set1(float x) { return x - (pbf_vf16){0}; }
static inline PBF_SIMD_INLINE pbf_vf16 vf16_and(pbf_vf16 a, pbf_vi16 m) {
    return (pbf_vf16)((pbf_vi16)a & m);
}
static inline PBF_SIMD_INLINE pbf_vf16 vf16_max(pbf_vf16 a, pbf_vf16 b) {
    pbf_vi16 m = a > b;
    return (pbf_vf16)(((pbf_vi16)a & m) | ((pbf_vi16)b & ~m));
}
static inline PBF_SIMD_INLINE pbf_vf16 vf16_sqrt(pbf_vf16 a) {
    return (pbf_vf16)_mm512_sqrt_ps((__m512)a);
}
static inline PBF_SIMD_INLINE pbf_vf16 vf16_join(pbf_vf lo, pbf_vf hi) {
    return (pbf_vf16)_mm512_insertf32x8(_mm512_castps256_ps512((__m256)lo), (__m256)hi, 1);
}
static inline PBF_SIMD_INLINE pbf_vf vf16_lo(pbf_vf16 a) {
    return (pbf_vf)_mm512_castps512_ps256((__m512)a);
}
static inline PBF_SIMD_INLINE pbf_vf vf16_hi(pbf_vf16 a) {
    return (pbf_vf)_mm512_extractf32x8_ps((__m512)a, 1);
}
#define PBF_REAL pbf_vf16
#define PBF_REAL_SQRT(x) vf16_sqrt(x)
#define PBF_REAL_MAX(a, b) vf16_max((a), vf16_set1(0.0f) + (b))
#define PBF_KFN(name) name##_v16
#include "sph/kernel_formulas.h"
#undef PBF_REAL
#undef PBF_REAL_SQRT
#undef PBF_REAL_MAX
#undef PBF_KFN
static inline PBF_SIMD_INLINE pbf_vf16 v16_poly6(const pbf_sph_consts *k, pbf_vf16 r2,
                                                 pbf_vi16 in) {
    return vf16_and(pbf_poly6_v16(k, r2), in);
}
static inline PBF_SIMD_INLINE pbf_vf16 v16_spiky(const pbf_sph_consts *k, pbf_vf16 r2,
                                                 pbf_vi16 in) {
    return vf16_and(pbf_spiky_v16(k, r2), in);
}
/* The world's kernel on 16 lanes, as v_kw and v_kgrad below (cubic: a constant per instance). */
static inline PBF_SIMD_INLINE pbf_vf16 v16_kw(const pbf_sph_consts *k, pbf_vf16 r2, pbf_vi16 in,
                                              const int cubic) {
    return vf16_and(cubic ? pbf_cubic_v16(k, r2) : pbf_poly6_v16(k, r2), in);
}
static inline PBF_SIMD_INLINE pbf_vf16 v16_kgrad(const pbf_sph_consts *k, pbf_vf16 r2,
                                                 pbf_vi16 in, const int cubic) {
    return vf16_and(cubic ? pbf_cubic_grad_v16(k, r2) : pbf_spiky_v16(k, r2), in);
}
/* x of the 16 particles idx[0..15], as vf_gather_idx on 16 lanes. */
static inline PBF_SIMD_INLINE pbf_vf16 vf16_gather_idx(const float *base, const uint32_t *idx) {
    return (pbf_vf16){base[idx[0]],  base[idx[1]],  base[idx[2]],  base[idx[3]],
                      base[idx[4]],  base[idx[5]],  base[idx[6]],  base[idx[7]],
                      base[idx[8]],  base[idx[9]],  base[idx[10]], base[idx[11]],
                      base[idx[12]], base[idx[13]], base[idx[14]], base[idx[15]]};
}
#else
#define PBF_PAIRS 0
#endif

/* W_poly6 and grad W_spiky factor on 8 lanes, zero outside `in` = valid & (r2 < h2). */
static inline PBF_SIMD_INLINE pbf_vf v_poly6(const pbf_sph_consts *k, pbf_vf r2, pbf_vi in) {
    return vf_and(pbf_poly6_v(k, r2), in);
}
static inline PBF_SIMD_INLINE pbf_vf v_spiky(const pbf_sph_consts *k, pbf_vf r2, pbf_vi in) {
    return vf_and(pbf_spiky_v(k, r2), in);
}
/* The world's kernel (pbf_kernel_w, pbf_kernel_grad of kernel.h): the cubic spline where `cubic`
 * (the SPH solvers with sph_kernel = cubic), poly6 / spiky otherwise. A pass that PBF runs passes
 * a constant, so that PBF's instance has no test per neighbour. */
static inline PBF_SIMD_INLINE pbf_vf v_kw(const pbf_sph_consts *k, pbf_vf r2, pbf_vi in,
                                          const int cubic) {
    return vf_and(cubic ? pbf_cubic_v(k, r2) : pbf_poly6_v(k, r2), in);
}
static inline PBF_SIMD_INLINE pbf_vf v_kgrad(const pbf_sph_consts *k, pbf_vf r2, pbf_vi in,
                                             const int cubic) {
    return vf_and(cubic ? pbf_cubic_grad_v(k, r2) : pbf_spiky_v(k, r2), in);
}

/* Stores the lanes of v to p[0 .. PBF_LANES - 1] (unaligned). */
static inline PBF_SIMD_INLINE void vf_store(float *p, pbf_vf v) { memcpy(p, &v, sizeof v); }

#endif /* PBF_CPU_SIMD_KERNELS_H */
