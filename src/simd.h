/*
 * Float vectors for the neighbour loops, with GCC/Clang vector extensions: 8 lanes when the
 * target has AVX (one register), 4 lanes otherwise (one SSE/NEON register, or scalar code on
 * targets without SIMD: the compiler's lowering is the scalar fallback).
 *
 * Lane sums are combined in one fixed tree order, so a build gives bit-identical results for
 * any thread count. Builds with different lane counts sum in a different order and may differ
 * in the last bits (with -ffp-contract=off no fused multiply-add is ever introduced).
 */
#ifndef PBF_SIMD_H
#define PBF_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif

#define PBF_SIMD_INLINE __attribute__((always_inline))

#if defined(__AVX__)
#define PBF_LANES 8
typedef float pbf_vf __attribute__((vector_size(32)));
typedef int32_t pbf_vi __attribute__((vector_size(32)));
static const pbf_vi pbf_iota = {0, 1, 2, 3, 4, 5, 6, 7};
#else
#define PBF_LANES 4
typedef float pbf_vf __attribute__((vector_size(16)));
typedef int32_t pbf_vi __attribute__((vector_size(16)));
static const pbf_vi pbf_iota = {0, 1, 2, 3};
#endif

/* x - zero broadcasts a scalar to every lane */
static inline PBF_SIMD_INLINE pbf_vf vf_set1(float x) { return x - (pbf_vf){0}; }
static inline PBF_SIMD_INLINE pbf_vi vi_set1(int32_t x) { return x - (pbf_vi){0}; }

/* Unaligned load of PBF_LANES floats (the arrays are padded, PBF_ARRAY_PADDING). */
static inline PBF_SIMD_INLINE pbf_vf vf_load(const float *p) {
    pbf_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Lanes whose mask is all ones keep their value, others become +0.0 (also NaN lanes). */
static inline PBF_SIMD_INLINE pbf_vf vf_and(pbf_vf a, pbf_vi mask) { return (pbf_vf)((pbf_vi)a & mask); }

static inline PBF_SIMD_INLINE pbf_vf vf_max(pbf_vf a, pbf_vf b) {
    pbf_vi m = a > b;
    return (pbf_vf)(((pbf_vi)a & m) | ((pbf_vi)b & ~m));
}

/* Square root per lane: correctly rounded in every branch, so all give identical results. */
static inline PBF_SIMD_INLINE pbf_vf vf_sqrt(pbf_vf a) {
#if defined(__AVX__)
    return (pbf_vf)_mm256_sqrt_ps((__m256)a);
#elif defined(__SSE2__)
    return (pbf_vf)_mm_sqrt_ps((__m128)a);
#else
    pbf_vf r;
    for (int l = 0; l < PBF_LANES; ++l) r[l] = sqrtf(a[l]);
    return r;
#endif
}

/* Mask of the lanes l with l < remaining. */
static inline PBF_SIMD_INLINE pbf_vi vi_first(int32_t remaining) { return pbf_iota < vi_set1(remaining); }

/* out[l] = base[idx[l]]; every index must be inside the (padded) array. Scalar loads: hardware
 * gathers measured slower here (CPUs with the GDS microcode mitigation). */
static inline PBF_SIMD_INLINE pbf_vf vf_gather_idx(const float *base, const uint32_t *idx) {
#if PBF_LANES == 8
    return (pbf_vf){base[idx[0]], base[idx[1]], base[idx[2]], base[idx[3]],
                    base[idx[4]], base[idx[5]], base[idx[6]], base[idx[7]]};
#else
    return (pbf_vf){base[idx[0]], base[idx[1]], base[idx[2]], base[idx[3]]};
#endif
}

/* Bit l set where lane l of an all-ones / all-zeros mask is set. */
static inline PBF_SIMD_INLINE unsigned vi_bits(pbf_vi m) {
#if defined(__AVX__)
    return (unsigned)_mm256_movemask_ps((__m256)m);
#elif defined(__SSE2__)
    return (unsigned)_mm_movemask_ps((__m128)m);
#else
    unsigned b = 0;
    for (int l = 0; l < PBF_LANES; ++l) b |= (m[l] ? 1u : 0u) << l;
    return b;
#endif
}

static inline PBF_SIMD_INLINE float vf_hsum(pbf_vf a) {
#if PBF_LANES == 8 && defined(__AVX__)
    /* the same tree by shuffles (a + b and b + a are the same float): lane 0 of s2 holds
     * (a0 + a1) + (a2 + a3), lane 4 (a4 + a5) + (a6 + a7) */
    __m256 v = (__m256)a;
    __m256 s1 = _mm256_add_ps(v, _mm256_permute_ps(v, 0xB1));
    __m256 s2 = _mm256_add_ps(s1, _mm256_permute_ps(s1, 0x4E));
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(s2), _mm256_extractf128_ps(s2, 1)));
#elif PBF_LANES == 8
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
#else
    return (a[0] + a[1]) + (a[2] + a[3]);
#endif
}


/* Denormal floats (magnitudes below 1.2e-38) flushed to zero, inputs and results (x86 MXCSR's
 * FTZ and DAZ, AArch64 FPCR's FZ), for the calling thread until pbf_denormals_restore. The
 * neighbour passes produce them where a pair is at the kernel's edge: (W(r) / W(dq))^4 of
 * s_corr (Macklin & Mueller 2013, eq. 13) reaches 1e-40 as r nears h, and x86 cores take a
 * microcode assist of about a hundred cycles per denormal result. Values that small are below
 * every sum's rounding, so results do not change; the passes save and restore the state on
 * each thread, so the caller's floating-point environment is never altered. */
static inline unsigned pbf_denormals_off(void) {
#if defined(__SSE2__) || defined(__AVX__)
    const unsigned old = _mm_getcsr();
    _mm_setcsr(old | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return old;
#elif defined(__aarch64__)
    uint64_t old;
    __asm__ volatile("mrs %0, fpcr" : "=r"(old));
    __asm__ volatile("msr fpcr, %0" : : "r"(old | (1ull << 24)));
    return (unsigned)old;
#else
    return 0u;
#endif
}
static inline void pbf_denormals_restore(unsigned old) {
#if defined(__SSE2__) || defined(__AVX__)
    _mm_setcsr(old);
#elif defined(__aarch64__)
    uint64_t v = old;
    __asm__ volatile("msr fpcr, %0" : : "r"(v));
#else
    (void)old;
#endif
}

#endif
