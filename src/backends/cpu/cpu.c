/*
 * The CPU backend: the stages of the step (core.c) on the host arrays, with OpenMP threads and
 * SIMD neighbour loops (src/simd.h), on the kernel math of src/sph/.
 *
 * Dynamic schedules are monotonic: LLVM's libomp runs the default (nonmonotonic) one by work
 * stealing, which aborts on an internal assertion now and then under load (llvm-project issues
 * 54422, 86995); monotonic is its plain shared counter, and what libgomp does anyway.
 *
 * Every pass is a gather over neighbours computed per particle in a fixed order (the cell order),
 * with no atomics and no reductions across threads, so results are bit-identical for any number
 * of threads. Sums of statistics use fixed chunks (see stage_stats).
 *
 * Symbols follow the paper: h kernel radius, rho_0 rest density, m particle mass, V = m / rho_0,
 * W poly6 kernel, grad W spiky gradient.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "backends/cpu/sweep.h"
#include "simd.h"
#include "sph/sph_solvers.h"

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

/* ---- neighbour lists ---------------------------------------------------------------------
 * Built once per step right after the sort, from the positions the grid was built on (Algorithm
 * 1, line 6), in one scan of the 9 ranges. A neighbour is stored as a 12-bit code, range index
 * << 8 | offset inside the range, decoded against the particle's own ranges; two codes share 3
 * bytes, so a list costs 1.5 bytes per neighbour whatever the particle count (a list of odd
 * length ends with one unused code). Particles are listed in blocks of LIST_BLOCK, each block's
 * lists one run of codes; a particle's list starts at its block's start plus a 16-bit offset
 * (even; bit 0 flags the unused code), so the lists' index costs 2 bytes per particle:
 * a thread lists a block into its own buffer, then takes the block's room in the shared array
 * (an atomic cursor) and copies it there. Where a block lands depends on the threads' timing;
 * what a particle's list holds, and so every result, does not. When the array is too small the
 * scan is made again after growing it to the exact total (the first step, or a denser step).
 * A range longer than 255 particles or a block of more than 65,534 codes (absurd compression), or
 * a failed allocation, switches the
 * step to scanning the ranges directly: slower, same neighbours, never a dropped one. */
#define CODE_OFFSET_BITS 8
#define LIST_BLOCK 256

/* The CPU backend's state: the neighbour lists of the step. */
typedef struct cpu_lists {
    uint8_t *nbr;   /* codes c of particle i's neighbours, c in [list_start(i), list_end(i));
                     * codes 2m and 2m + 1 in bytes 3m .. 3m + 2 */
    uint16_t *start; /* particle i's list: offset in its block's codes | 1 if it ends unused */
    size_t start_cap;
    uint32_t *block_start; /* each block's first code in nbr */
    size_t cap;     /* codes room in nbr, padding excluded (even) */
    int ok;         /* 0: this step scans the grid ranges instead */
    uint32_t *block_end; /* end of each block's lists in nbr */
    size_t block_cap;
    float *pack;    /* x*, y*, z*, lambda of every particle, 16 bytes each (see pack_xyzl) */
    size_t pack_cap;
    int collided;     /* delta p has applied itself and the collisions (see stage_delta_p) */
    int collide_bad;  /* its first particle with a non-finite x* + delta p */
    float *sph_v;     /* the SPH passes' packed velocities (v_x, v_y, v_z, 0), 16 bytes each */
    float *sph_wall;  /* the wall at each particle: (grad_x, grad_y, grad_z, density) */
    size_t sph_cap;
    int wall_at;      /* where sph_wall was taken: WALL_NONE, WALL_AT_X or WALL_AT_PREDICTED */
    float *pair;      /* DFSPH's per-pair cache: per chunk of a list, (s, dx, dy, dz) x lanes */
    size_t pair_cap;  /* floats in pair */
    uint32_t *pair_off; /* particle i's first chunk in pair */
    size_t pair_off_cap;
    int pair_ok;      /* pair holds the pairs of the current lists and positions */
    int omega_norm;   /* the curl pass stored no |omega|: the post pass takes it from omega */
    int rate_ok;      /* DFSPH: sz holds D_i of the current velocities (see stage_dfsph_source) */
    int xv_packed;    /* DFSPH: pack holds x* and sph_v the velocities (see sph_pack_k) */
    float warm_dt[2]; /* DFSPH's warm start: the substep whose sums warm, warm_v hold (density,
                         divergence; see stage_dfsph_source) */
} cpu_lists;
enum { WALL_NONE, WALL_AT_X, WALL_AT_PREDICTED };
#define LISTS(w) ((cpu_lists *)(w)->dev)
#define CODE_MAX_RANGE ((1u << CODE_OFFSET_BITS) - 1u)
#define LIST_PADDING 32 /* bytes after the last code: a chunk's 16-byte load stays inside */
#define CODE_BYTES(codes) ((size_t)(codes) / 2 * 3) /* of an even number of codes */

/* End of particle i's list: the next particle's start inside a block, the block's end at its
 * last particle. */
static inline uint32_t list_end(const pbf_world *w, int i) {
    const cpu_lists *L = LISTS(w);
    const unsigned b = (unsigned)i / LIST_BLOCK;
    return ((unsigned)(i + 1) % LIST_BLOCK) ? L->block_start[b] + (L->start[i + 1] & ~1u)
                                            : L->block_end[b];
}

/* The 9 cell ranges around a particle's cell, kept while consecutive particles share the cell
 * (particles are sorted by cell, about 8 to a cell): a pass computes them once per cell instead
 * of once per particle. One per thread, declared inside the parallel region (NB_RANGES_INIT). */
typedef struct nb_ranges {
    uint32_t cell;
    int count;
    uint32_t begin[9], end[9]; /* all 9 begins are read by decode_chunk: initialised */
    const float *prefetch; /* a packed copy (16 bytes per particle) to prefetch from, or NULL */
} nb_ranges;
#define NB_RANGES_INIT {UINT32_MAX, 0, {0}, {0}, NULL}

static inline PBF_SIMD_INLINE const nb_ranges *ranges_of(const pbf_world *w, int i, nb_ranges *c) {
    const uint32_t cell = w->cell[i];
    if (cell != c->cell) {
        c->count = pbf_grid_neighbour_ranges(&w->grid, cell, c->begin, c->end);
        c->cell = cell;
        /* the next cell's ranges are these shifted by one cell along x: its new particles
         * follow each range's end (2 cache lines: 8 particles, about a cell's) */
        if (c->prefetch)
            for (int r = 0; r < c->count; ++r) {
                const float *q = c->prefetch + 4 * (size_t)c->end[r];
                __builtin_prefetch(q);
                __builtin_prefetch(q + 16);
            }
    }
    return c;
}

#if defined(__AVX2__) && PBF_LANES == 8 && !defined(__AVX512VL__)
/* compress_lut[m]: byte k = the lane of the k-th set bit of m (then 0s), for the list scan's
 * branchless compaction by a lane permute (AVX-512 has it as one instruction). */
typedef struct compress_row { uint8_t lane[8]; } compress_row;
static const compress_row compress_lut[256] = {
    {{0,0,0,0,0,0,0,0}}, {{0,0,0,0,0,0,0,0}}, {{1,0,0,0,0,0,0,0}}, {{0,1,0,0,0,0,0,0}},
    {{2,0,0,0,0,0,0,0}}, {{0,2,0,0,0,0,0,0}}, {{1,2,0,0,0,0,0,0}}, {{0,1,2,0,0,0,0,0}},
    {{3,0,0,0,0,0,0,0}}, {{0,3,0,0,0,0,0,0}}, {{1,3,0,0,0,0,0,0}}, {{0,1,3,0,0,0,0,0}},
    {{2,3,0,0,0,0,0,0}}, {{0,2,3,0,0,0,0,0}}, {{1,2,3,0,0,0,0,0}}, {{0,1,2,3,0,0,0,0}},
    {{4,0,0,0,0,0,0,0}}, {{0,4,0,0,0,0,0,0}}, {{1,4,0,0,0,0,0,0}}, {{0,1,4,0,0,0,0,0}},
    {{2,4,0,0,0,0,0,0}}, {{0,2,4,0,0,0,0,0}}, {{1,2,4,0,0,0,0,0}}, {{0,1,2,4,0,0,0,0}},
    {{3,4,0,0,0,0,0,0}}, {{0,3,4,0,0,0,0,0}}, {{1,3,4,0,0,0,0,0}}, {{0,1,3,4,0,0,0,0}},
    {{2,3,4,0,0,0,0,0}}, {{0,2,3,4,0,0,0,0}}, {{1,2,3,4,0,0,0,0}}, {{0,1,2,3,4,0,0,0}},
    {{5,0,0,0,0,0,0,0}}, {{0,5,0,0,0,0,0,0}}, {{1,5,0,0,0,0,0,0}}, {{0,1,5,0,0,0,0,0}},
    {{2,5,0,0,0,0,0,0}}, {{0,2,5,0,0,0,0,0}}, {{1,2,5,0,0,0,0,0}}, {{0,1,2,5,0,0,0,0}},
    {{3,5,0,0,0,0,0,0}}, {{0,3,5,0,0,0,0,0}}, {{1,3,5,0,0,0,0,0}}, {{0,1,3,5,0,0,0,0}},
    {{2,3,5,0,0,0,0,0}}, {{0,2,3,5,0,0,0,0}}, {{1,2,3,5,0,0,0,0}}, {{0,1,2,3,5,0,0,0}},
    {{4,5,0,0,0,0,0,0}}, {{0,4,5,0,0,0,0,0}}, {{1,4,5,0,0,0,0,0}}, {{0,1,4,5,0,0,0,0}},
    {{2,4,5,0,0,0,0,0}}, {{0,2,4,5,0,0,0,0}}, {{1,2,4,5,0,0,0,0}}, {{0,1,2,4,5,0,0,0}},
    {{3,4,5,0,0,0,0,0}}, {{0,3,4,5,0,0,0,0}}, {{1,3,4,5,0,0,0,0}}, {{0,1,3,4,5,0,0,0}},
    {{2,3,4,5,0,0,0,0}}, {{0,2,3,4,5,0,0,0}}, {{1,2,3,4,5,0,0,0}}, {{0,1,2,3,4,5,0,0}},
    {{6,0,0,0,0,0,0,0}}, {{0,6,0,0,0,0,0,0}}, {{1,6,0,0,0,0,0,0}}, {{0,1,6,0,0,0,0,0}},
    {{2,6,0,0,0,0,0,0}}, {{0,2,6,0,0,0,0,0}}, {{1,2,6,0,0,0,0,0}}, {{0,1,2,6,0,0,0,0}},
    {{3,6,0,0,0,0,0,0}}, {{0,3,6,0,0,0,0,0}}, {{1,3,6,0,0,0,0,0}}, {{0,1,3,6,0,0,0,0}},
    {{2,3,6,0,0,0,0,0}}, {{0,2,3,6,0,0,0,0}}, {{1,2,3,6,0,0,0,0}}, {{0,1,2,3,6,0,0,0}},
    {{4,6,0,0,0,0,0,0}}, {{0,4,6,0,0,0,0,0}}, {{1,4,6,0,0,0,0,0}}, {{0,1,4,6,0,0,0,0}},
    {{2,4,6,0,0,0,0,0}}, {{0,2,4,6,0,0,0,0}}, {{1,2,4,6,0,0,0,0}}, {{0,1,2,4,6,0,0,0}},
    {{3,4,6,0,0,0,0,0}}, {{0,3,4,6,0,0,0,0}}, {{1,3,4,6,0,0,0,0}}, {{0,1,3,4,6,0,0,0}},
    {{2,3,4,6,0,0,0,0}}, {{0,2,3,4,6,0,0,0}}, {{1,2,3,4,6,0,0,0}}, {{0,1,2,3,4,6,0,0}},
    {{5,6,0,0,0,0,0,0}}, {{0,5,6,0,0,0,0,0}}, {{1,5,6,0,0,0,0,0}}, {{0,1,5,6,0,0,0,0}},
    {{2,5,6,0,0,0,0,0}}, {{0,2,5,6,0,0,0,0}}, {{1,2,5,6,0,0,0,0}}, {{0,1,2,5,6,0,0,0}},
    {{3,5,6,0,0,0,0,0}}, {{0,3,5,6,0,0,0,0}}, {{1,3,5,6,0,0,0,0}}, {{0,1,3,5,6,0,0,0}},
    {{2,3,5,6,0,0,0,0}}, {{0,2,3,5,6,0,0,0}}, {{1,2,3,5,6,0,0,0}}, {{0,1,2,3,5,6,0,0}},
    {{4,5,6,0,0,0,0,0}}, {{0,4,5,6,0,0,0,0}}, {{1,4,5,6,0,0,0,0}}, {{0,1,4,5,6,0,0,0}},
    {{2,4,5,6,0,0,0,0}}, {{0,2,4,5,6,0,0,0}}, {{1,2,4,5,6,0,0,0}}, {{0,1,2,4,5,6,0,0}},
    {{3,4,5,6,0,0,0,0}}, {{0,3,4,5,6,0,0,0}}, {{1,3,4,5,6,0,0,0}}, {{0,1,3,4,5,6,0,0}},
    {{2,3,4,5,6,0,0,0}}, {{0,2,3,4,5,6,0,0}}, {{1,2,3,4,5,6,0,0}}, {{0,1,2,3,4,5,6,0}},
    {{7,0,0,0,0,0,0,0}}, {{0,7,0,0,0,0,0,0}}, {{1,7,0,0,0,0,0,0}}, {{0,1,7,0,0,0,0,0}},
    {{2,7,0,0,0,0,0,0}}, {{0,2,7,0,0,0,0,0}}, {{1,2,7,0,0,0,0,0}}, {{0,1,2,7,0,0,0,0}},
    {{3,7,0,0,0,0,0,0}}, {{0,3,7,0,0,0,0,0}}, {{1,3,7,0,0,0,0,0}}, {{0,1,3,7,0,0,0,0}},
    {{2,3,7,0,0,0,0,0}}, {{0,2,3,7,0,0,0,0}}, {{1,2,3,7,0,0,0,0}}, {{0,1,2,3,7,0,0,0}},
    {{4,7,0,0,0,0,0,0}}, {{0,4,7,0,0,0,0,0}}, {{1,4,7,0,0,0,0,0}}, {{0,1,4,7,0,0,0,0}},
    {{2,4,7,0,0,0,0,0}}, {{0,2,4,7,0,0,0,0}}, {{1,2,4,7,0,0,0,0}}, {{0,1,2,4,7,0,0,0}},
    {{3,4,7,0,0,0,0,0}}, {{0,3,4,7,0,0,0,0}}, {{1,3,4,7,0,0,0,0}}, {{0,1,3,4,7,0,0,0}},
    {{2,3,4,7,0,0,0,0}}, {{0,2,3,4,7,0,0,0}}, {{1,2,3,4,7,0,0,0}}, {{0,1,2,3,4,7,0,0}},
    {{5,7,0,0,0,0,0,0}}, {{0,5,7,0,0,0,0,0}}, {{1,5,7,0,0,0,0,0}}, {{0,1,5,7,0,0,0,0}},
    {{2,5,7,0,0,0,0,0}}, {{0,2,5,7,0,0,0,0}}, {{1,2,5,7,0,0,0,0}}, {{0,1,2,5,7,0,0,0}},
    {{3,5,7,0,0,0,0,0}}, {{0,3,5,7,0,0,0,0}}, {{1,3,5,7,0,0,0,0}}, {{0,1,3,5,7,0,0,0}},
    {{2,3,5,7,0,0,0,0}}, {{0,2,3,5,7,0,0,0}}, {{1,2,3,5,7,0,0,0}}, {{0,1,2,3,5,7,0,0}},
    {{4,5,7,0,0,0,0,0}}, {{0,4,5,7,0,0,0,0}}, {{1,4,5,7,0,0,0,0}}, {{0,1,4,5,7,0,0,0}},
    {{2,4,5,7,0,0,0,0}}, {{0,2,4,5,7,0,0,0}}, {{1,2,4,5,7,0,0,0}}, {{0,1,2,4,5,7,0,0}},
    {{3,4,5,7,0,0,0,0}}, {{0,3,4,5,7,0,0,0}}, {{1,3,4,5,7,0,0,0}}, {{0,1,3,4,5,7,0,0}},
    {{2,3,4,5,7,0,0,0}}, {{0,2,3,4,5,7,0,0}}, {{1,2,3,4,5,7,0,0}}, {{0,1,2,3,4,5,7,0}},
    {{6,7,0,0,0,0,0,0}}, {{0,6,7,0,0,0,0,0}}, {{1,6,7,0,0,0,0,0}}, {{0,1,6,7,0,0,0,0}},
    {{2,6,7,0,0,0,0,0}}, {{0,2,6,7,0,0,0,0}}, {{1,2,6,7,0,0,0,0}}, {{0,1,2,6,7,0,0,0}},
    {{3,6,7,0,0,0,0,0}}, {{0,3,6,7,0,0,0,0}}, {{1,3,6,7,0,0,0,0}}, {{0,1,3,6,7,0,0,0}},
    {{2,3,6,7,0,0,0,0}}, {{0,2,3,6,7,0,0,0}}, {{1,2,3,6,7,0,0,0}}, {{0,1,2,3,6,7,0,0}},
    {{4,6,7,0,0,0,0,0}}, {{0,4,6,7,0,0,0,0}}, {{1,4,6,7,0,0,0,0}}, {{0,1,4,6,7,0,0,0}},
    {{2,4,6,7,0,0,0,0}}, {{0,2,4,6,7,0,0,0}}, {{1,2,4,6,7,0,0,0}}, {{0,1,2,4,6,7,0,0}},
    {{3,4,6,7,0,0,0,0}}, {{0,3,4,6,7,0,0,0}}, {{1,3,4,6,7,0,0,0}}, {{0,1,3,4,6,7,0,0}},
    {{2,3,4,6,7,0,0,0}}, {{0,2,3,4,6,7,0,0}}, {{1,2,3,4,6,7,0,0}}, {{0,1,2,3,4,6,7,0}},
    {{5,6,7,0,0,0,0,0}}, {{0,5,6,7,0,0,0,0}}, {{1,5,6,7,0,0,0,0}}, {{0,1,5,6,7,0,0,0}},
    {{2,5,6,7,0,0,0,0}}, {{0,2,5,6,7,0,0,0}}, {{1,2,5,6,7,0,0,0}}, {{0,1,2,5,6,7,0,0}},
    {{3,5,6,7,0,0,0,0}}, {{0,3,5,6,7,0,0,0}}, {{1,3,5,6,7,0,0,0}}, {{0,1,3,5,6,7,0,0}},
    {{2,3,5,6,7,0,0,0}}, {{0,2,3,5,6,7,0,0}}, {{1,2,3,5,6,7,0,0}}, {{0,1,2,3,5,6,7,0}},
    {{4,5,6,7,0,0,0,0}}, {{0,4,5,6,7,0,0,0}}, {{1,4,5,6,7,0,0,0}}, {{0,1,4,5,6,7,0,0}},
    {{2,4,5,6,7,0,0,0}}, {{0,2,4,5,6,7,0,0}}, {{1,2,4,5,6,7,0,0}}, {{0,1,2,4,5,6,7,0}},
    {{3,4,5,6,7,0,0,0}}, {{0,3,4,5,6,7,0,0}}, {{1,3,4,5,6,7,0,0}}, {{0,1,3,4,5,6,7,0}},
    {{2,3,4,5,6,7,0,0}}, {{0,2,3,4,5,6,7,0}}, {{1,2,3,4,5,6,7,0}}, {{0,1,2,3,4,5,6,7}},
};
#endif

/* One scan of the candidates of the particles [i0, i1) into *buf (grown as needed): sets
 * start[i] to the offset of i's list inside the buffer and returns the block's length, or
 * SIZE_MAX (a range too long for the codes, or out of memory). */
static size_t list_block(pbf_world *w, int i0, int i1, const unsigned char *skip,
                         nb_ranges *cache, uint16_t **buf, size_t *cap) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf h2v = vf_set1(w->k.h2);
    size_t len = 0;
    for (int i = i0; i < i1; ++i) {
        const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
        const nb_ranges *R = ranges_of(w, i, cache);
        const size_t start = len; /* even */
        if (skip && skip[i]) { /* a ghost of a distributed run: an empty list */
            LISTS(w)->start[i] = (uint16_t)start;
            continue;
        }
        for (int r = 0; r < R->count; ++r) {
            const uint32_t b = R->begin[r], e = R->end[r];
            if (e - b > CODE_MAX_RANGE) return SIZE_MAX;
            if (len + (e - b) + PBF_LANES > *cap) { /* room for every candidate of the range */
                size_t grown_cap = 2 * (len + (e - b) + PBF_LANES) + 1024;
                uint16_t *grown = realloc(*buf, grown_cap * sizeof *grown);
                if (!grown) return SIZE_MAX;
                *buf = grown;
                *cap = grown_cap;
            }
            uint16_t *out = *buf;
            for (uint32_t j = b; j < e; j += PBF_LANES) {
                pbf_vf dx = xi - vf_load(QX + j), dy = yi - vf_load(QY + j),
                       dz = zi - vf_load(QZ + j);
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                unsigned bits = vi_bits(vi_first((int32_t)(e - j)) & (r2 < h2v));
                const uint32_t base = ((uint32_t)r << CODE_OFFSET_BITS) | (j - b);
#if defined(__AVX2__) && PBF_LANES == 8
                /* branchless: the chunk's codes, those in range moved to the front in lane
                 * order (the candidate order), stored as 8 and counted (room: PBF_LANES kept) */
                const __m256i codes = _mm256_add_epi32(_mm256_set1_epi32((int)base),
                                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#if defined(__AVX512VL__)
                const __m256i front = _mm256_maskz_compress_epi32((__mmask8)bits, codes);
#else
                const __m128i order = _mm_loadl_epi64((const __m128i *)&compress_lut[bits]);
                const __m256i front =
                    _mm256_permutevar8x32_epi32(codes, _mm256_cvtepu8_epi32(order));
#endif
                _mm_storeu_si128((__m128i *)(out + len),
                                 _mm_packus_epi32(_mm256_castsi256_si128(front),
                                                  _mm256_extracti128_si256(front, 1)));
                len += (size_t)__builtin_popcount(bits);
#else
                for (; bits; bits &= bits - 1u) /* lowest lane first: candidate order */
                    out[len++] = (uint16_t)(base + (uint32_t)__builtin_ctz(bits));
#endif
            }
        }
        const uint32_t odd = (uint32_t)(len - start) & 1u;
        if (odd) (*buf)[len++] = 0; /* the unused code (room: PBF_LANES were kept) */
        if (len > UINT16_MAX - 1) return SIZE_MAX;
        LISTS(w)->start[i] = (uint16_t)((uint32_t)start | odd);
    }
    return len;
}

/* Two 12-bit codes to 3 bytes each: out[0..3 * len / 2) from codes[0..len), len even. */
static void pack_codes(uint8_t *restrict out, const uint16_t *restrict codes, size_t len) {
    for (size_t k = 0; k < len; k += 2) {
        const uint32_t a = codes[k], b = codes[k + 1];
        out[0] = (uint8_t)a;
        out[1] = (uint8_t)((a >> 8) | (b << 4));
        out[2] = (uint8_t)(b >> 4);
        out += 3;
    }
}

/* skip: particles given an empty list (the ghosts of a distributed run), or NULL. */
static void build_lists(pbf_world *w, const unsigned char *skip) {
    cpu_lists *L = LISTS(w);
    const int n = w->count;
    const int nblocks = (n + LIST_BLOCK - 1) / LIST_BLOCK;
    L->ok = 0;
    if ((size_t)nblocks + 1 > L->block_cap) {
        uint32_t *grown = realloc(L->block_end, ((size_t)nblocks + 1) * sizeof *grown);
        if (!grown) return;
        L->block_end = grown;
        grown = realloc(L->block_start, ((size_t)nblocks + 1) * sizeof *grown);
        if (!grown) return;
        L->block_start = grown;
        L->block_cap = (size_t)nblocks + 1;
    }
    if ((size_t)n + 1 > L->start_cap) {
        free(L->start);
        L->start_cap = 0;
        L->start = malloc(((size_t)w->capacity + 1) * sizeof *L->start);
        if (!L->start) return;
        L->start_cap = (size_t)w->capacity + 1;
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        size_t cursor = 0;
        int failed = 0, unusable = 0;
#pragma omp parallel num_threads(w->nthreads) reduction(| : failed, unusable)
        {
            const unsigned fp_mode = pbf_denormals_off();
            nb_ranges cache = NB_RANGES_INIT;
            uint16_t *buf = NULL;
            size_t buf_cap = 0;
            /* blocks chunked as the passes' particles (sweep_make), for the same reason */
            const sweep sweep_b = sweep_make_min(nblocks, omp_get_num_threads(), 1);
#pragma omp for schedule(monotonic : dynamic, 1)
            SWEEP_FOR(sweep_b, b) {
                const int i0 = b * LIST_BLOCK, i1 = i0 + LIST_BLOCK < n ? i0 + LIST_BLOCK : n;
                const size_t len = unusable ? SIZE_MAX : list_block(w, i0, i1, skip, &cache, &buf, &buf_cap);
                if (len == SIZE_MAX) {
                    unusable = 1;
                    continue;
                }
                size_t at;
#pragma omp atomic capture
                {
                    at = cursor;
                    cursor += len;
                }
                if (at + len > L->cap || at + len > UINT32_MAX / 2) {
                    failed = 1; /* the cursor still counts it: the total is exact */
                    continue;
                }
                pack_codes(L->nbr + CODE_BYTES(at), buf, len);
                L->block_start[b] = (uint32_t)at;
                L->block_end[b] = (uint32_t)(at + len);
                if (i1 == n) L->start[n] = (uint16_t)len; /* list_end of a short last block */
            }
            free(buf);
            pbf_denormals_restore(fp_mode);
        }
        if (unusable) return;
        if (!failed) {
            L->ok = 1;
            return;
        }
        if (cursor > UINT32_MAX / 2) return;
        /* small headroom: lists are a large share of memory */
        size_t cap = (cursor + cursor / 16 + 1) & ~(size_t)1;
        pbf_big_free(L->nbr); /* nothing in it is kept: the scan is made again */
        L->nbr = pbf_big_calloc(CODE_BYTES(cap) + LIST_PADDING, CODE_BYTES(cursor));
        L->cap = 0;
        if (!L->nbr) return;
        memset(L->nbr + CODE_BYTES(cap), 0, LIST_PADDING);
        L->cap = cap;
    }
}

/* Indices of a chunk of listed neighbours into j[] (a plain array: scalar stores read back by
 * scalar loads, no vector round trip through memory); lanes past the list decode to begin[0],
 * which is inside the padded arrays and masked out by `valid`. */
static inline PBF_SIMD_INLINE void decode_chunk(const uint8_t *codes, const uint32_t *begin,
                                                uint32_t n_valid, uint32_t *j) {
#if defined(__AVX2__) && PBF_LANES == 8
    /* 8 codes at once from 12 bytes (the list array is padded, so the 16-byte load stays inside
     * it): a byte shuffle puts code l's two bytes in lane l, odd lanes shift right by 4; the range
     * index picks its begin from the first 8 by a lane permute, the 9th by a blend */
    const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)codes));
    const __m256i spread = _mm256_setr_epi8(0, 1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1, 4, 5, -1, -1,
                                            6, 7, -1, -1, 7, 8, -1, -1, 9, 10, -1, -1, 10, 11, -1, -1);
    __m256i c = _mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, spread),
                                  _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    c = _mm256_and_si256(c, _mm256_set1_epi32(0xFFF));
    c = _mm256_and_si256(c, (__m256i)vi_first((int32_t)(n_valid < 8u ? n_valid : 8u)));
    __m256i r = _mm256_srli_epi32(c, CODE_OFFSET_BITS);
    __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)begin), r);
    b = _mm256_blendv_epi8(b, _mm256_set1_epi32((int)begin[8]),
                           _mm256_cmpeq_epi32(r, _mm256_set1_epi32(8)));
    __m256i jj = _mm256_add_epi32(b, _mm256_and_si256(c, _mm256_set1_epi32(CODE_MAX_RANGE)));
    _mm256_storeu_si256((__m256i *)j, jj);
#else
    for (uint32_t l = 0; l < PBF_LANES; ++l) {
        const uint8_t *b = codes + 3 * (l / 2);
        uint32_t c = (l % 2) ? ((uint32_t)b[1] >> 4) | ((uint32_t)b[2] << 4)
                             : (uint32_t)b[0] | (((uint32_t)b[1] & 15u) << 8);
        if (l >= n_valid) c = 0;
        j[l] = begin[c >> CODE_OFFSET_BITS] + (c & CODE_MAX_RANGE);
    }
#endif
}

/* Runs BODY for every chunk of neighbours of particle i, with `valid` the lanes in use;
 * LOAD(array) gathers array[jv[lane]]. From the lists when built, else by scanning the ranges
 * (then `valid` also admits non-neighbours: BODY tests r2 < h2 anyway). FOR_NEIGHBOURS_R takes
 * the thread's nb_ranges cache; FOR_NEIGHBOURS computes the ranges for this particle alone. */
#define LOAD(arr) vf_gather_idx((arr), jv)
#define FOR_NEIGHBOURS_R(w, i, cache, ...)                                                         \
    do {                                                                                           \
        const nb_ranges *nb_ = ranges_of((w), (i), (cache));                                       \
        uint32_t jv[PBF_LANES];                                                                    \
        if (LISTS(w)->ok) {                                                                        \
            const uint32_t nb_f_ = LISTS(w)->start[i];                                             \
            const uint32_t nb_s_ = LISTS(w)->block_start[(unsigned)(i) / LIST_BLOCK] + (nb_f_ & ~1u); \
            const uint32_t nb_n_ = list_end((w), (i)) - nb_s_ - (nb_f_ & 1u);                      \
            const uint8_t *nb_c_ = LISTS(w)->nbr + CODE_BYTES(nb_s_);                              \
            for (uint32_t nb_k_ = 0; nb_k_ < nb_n_; nb_k_ += PBF_LANES) {                          \
                const pbf_vi valid = vi_first((int32_t)(nb_n_ - nb_k_));                           \
                decode_chunk(nb_c_ + CODE_BYTES(nb_k_), nb_->begin, nb_n_ - nb_k_, jv);            \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        } else {                                                                                   \
            for (int nb_r_ = 0; nb_r_ < nb_->count; ++nb_r_)                                       \
                for (uint32_t nb_j_ = nb_->begin[nb_r_]; nb_j_ < nb_->end[nb_r_];                  \
                     nb_j_ += PBF_LANES) {                                                         \
                    const pbf_vi valid = vi_first((int32_t)(nb_->end[nb_r_] - nb_j_));             \
                    for (uint32_t l_ = 0; l_ < PBF_LANES; ++l_) jv[l_] = nb_j_ + l_;               \
                    __VA_ARGS__                                                                    \
                }                                                                                  \
        }                                                                                          \
    } while (0)
#define FOR_NEIGHBOURS(w, i, ...)                                                               \
    do {                                                                                           \
        nb_ranges nb_one_ = NB_RANGES_INIT;                                                        \
        FOR_NEIGHBOURS_R(w, i, &nb_one_, __VA_ARGS__);                                             \
    } while (0)

/* Length of particle i's list (the lists must be built: LISTS(w)->ok). */
static inline uint32_t list_length(const pbf_world *w, int i) {
    const uint32_t f = LISTS(w)->start[i];
    const uint32_t s = LISTS(w)->block_start[(unsigned)i / LIST_BLOCK] + (f & ~1u);
    return list_end(w, i) - s - (f & 1u);
}

/* FOR_NEIGHBOURS_R over the lists with DFSPH's per-pair cache (see pair_reserve): BODY also sees
 * the chunk's cached gradient factor `ps` (+0 outside the particle's neighbours), in the lists'
 * chunks and lanes, so that every sum adds the same terms in the same order as the uncached
 * pass. */
#define FOR_PAIRS(w, i, cache, ...)                                                                \
    do {                                                                                           \
        const nb_ranges *nb_ = ranges_of((w), (i), (cache));                                       \
        uint32_t jv[PBF_LANES];                                                                    \
        const uint32_t nb_f_ = LISTS(w)->start[i];                                                 \
        const uint32_t nb_s_ = LISTS(w)->block_start[(unsigned)(i) / LIST_BLOCK] + (nb_f_ & ~1u);  \
        const uint32_t nb_n_ = list_end((w), (i)) - nb_s_ - (nb_f_ & 1u);                          \
        const uint8_t *nb_c_ = LISTS(w)->nbr + CODE_BYTES(nb_s_);                                  \
        const float *pc_ = LISTS(w)->pair + (size_t)LISTS(w)->pair_off[i] * PBF_LANES;             \
        for (uint32_t nb_k_ = 0; nb_k_ < nb_n_; nb_k_ += PBF_LANES, pc_ += PBF_LANES) {            \
            decode_chunk(nb_c_ + CODE_BYTES(nb_k_), nb_->begin, nb_n_ - nb_k_, jv);                \
            const pbf_vf ps = vf_load(pc_);                                                        \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } while (0)

/* ---- packed neighbour loads ----------------------------------------------------------------
 * The solve's two neighbour passes read x*_j (and lambda_j) of scattered neighbours: from four
 * separate arrays that is four cache lines and 32 scalar loads per 8 neighbours. A packed copy,
 * (x*, y*, z*, lambda) in 16 bytes per particle, makes a neighbour one aligned 16-byte load and
 * one cache line; a 4 x 8 transpose turns 8 of them into lanes. The values are the arrays'
 * own, so the arithmetic and its results are unchanged. */
static int pack_reserve(pbf_world *w) {
    cpu_lists *L = LISTS(w);
    size_t need = (size_t)w->count + PBF_ARRAY_PADDING;
    if (need <= L->pack_cap) return 1;
    pbf_big_free(L->pack);
    L->pack = NULL;
    L->pack_cap = 0;
    const size_t bytes = need * 4 * sizeof(float);
    void *p = pbf_big_calloc(bytes, bytes);
    if (!p) return 0;
    L->pack = p;
    L->pack_cap = need;
    return 1;
}

/* pack[i] = (x*_i, y*_i, z*_i, lambda_i) (with_lambda) or (x*_i, y*_i, z*_i, unchanged). */
static void pack_xyzl(pbf_world *w, int with_lambda) {
    float *restrict P = LISTS(w)->pack;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz,
                          *restrict LA = w->lambda;
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) {
        P[4 * i + 0] = QX[i];
        P[4 * i + 1] = QY[i];
        P[4 * i + 2] = QZ[i];
        if (with_lambda) P[4 * i + 3] = LA[i];
    }
}

/* Lanes l of x, y, z, (w) from pack[jv[l]]. */
static inline PBF_SIMD_INLINE void load_packed(const float *P, const uint32_t *jv, pbf_vf *x,
                                               pbf_vf *y, pbf_vf *z, pbf_vf *l) {
#if PBF_LANES == 8
    __m256 t0 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(P + 4 * (size_t)jv[0])),
                                     _mm_load_ps(P + 4 * (size_t)jv[4]), 1);
    __m256 t1 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(P + 4 * (size_t)jv[1])),
                                     _mm_load_ps(P + 4 * (size_t)jv[5]), 1);
    __m256 t2 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(P + 4 * (size_t)jv[2])),
                                     _mm_load_ps(P + 4 * (size_t)jv[6]), 1);
    __m256 t3 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(P + 4 * (size_t)jv[3])),
                                     _mm_load_ps(P + 4 * (size_t)jv[7]), 1);
    __m256 u0 = _mm256_unpacklo_ps(t0, t1), u1 = _mm256_unpacklo_ps(t2, t3);
    __m256 u2 = _mm256_unpackhi_ps(t0, t1), u3 = _mm256_unpackhi_ps(t2, t3);
    *x = (pbf_vf)_mm256_shuffle_ps(u0, u1, 0x44);
    *y = (pbf_vf)_mm256_shuffle_ps(u0, u1, 0xEE);
    *z = (pbf_vf)_mm256_shuffle_ps(u2, u3, 0x44);
    if (l) *l = (pbf_vf)_mm256_shuffle_ps(u2, u3, 0xEE);
#elif PBF_LANES == 4 && defined(__SSE2__)
    __m128 t0 = _mm_load_ps(P + 4 * (size_t)jv[0]), t1 = _mm_load_ps(P + 4 * (size_t)jv[1]),
           t2 = _mm_load_ps(P + 4 * (size_t)jv[2]), t3 = _mm_load_ps(P + 4 * (size_t)jv[3]);
    _MM_TRANSPOSE4_PS(t0, t1, t2, t3);
    *x = (pbf_vf)t0;
    *y = (pbf_vf)t1;
    *z = (pbf_vf)t2;
    if (l) *l = (pbf_vf)t3;
#else
    for (int k = 0; k < PBF_LANES; ++k) {
        const float *q = P + 4 * (size_t)jv[k];
        (*x)[k] = q[0];
        (*y)[k] = q[1];
        (*z)[k] = q[2];
        if (l) (*l)[k] = q[3];
    }
#endif
}

/* x, y, z and a fourth value of the neighbours jv[]: from the packed copy P when there is one,
 * else gathered from the arrays (W may be NULL when w is). */
static inline PBF_SIMD_INLINE void load_neighbours(const float *P, const uint32_t *jv,
                                                   const float *X, const float *Y, const float *Z,
                                                   const float *W, pbf_vf *x, pbf_vf *y, pbf_vf *z,
                                                   pbf_vf *w) {
    if (P) {
        load_packed(P, jv, x, y, z, w);
        return;
    }
    *x = vf_gather_idx(X, jv);
    *y = vf_gather_idx(Y, jv);
    *z = vf_gather_idx(Z, jv);
    if (w) *w = vf_gather_idx(W, jv);
}

#if PBF_PAIRS
/* Lanes l of x, y, z, w from pack[jv[l]], 16 lanes: the 4 x 8 transpose of load_packed on
 * 512-bit registers (lanes 0-7 from jv[0..7], 8-15 from jv[8..15]). */
static inline PBF_SIMD_INLINE void load_packed16(const float *P, const uint32_t *jv, pbf_vf16 *x,
                                                 pbf_vf16 *y, pbf_vf16 *z, pbf_vf16 *l) {
#define PK_(a) _mm_load_ps(P + 4 * (size_t)jv[a])
#define PK16_(a, b, c, d)                                                                          \
    _mm512_insertf32x4(                                                                            \
        _mm512_insertf32x4(_mm512_insertf32x4(_mm512_castps128_ps512(PK_(a)), PK_(b), 1), PK_(c), \
                           2),                                                                     \
        PK_(d), 3)
    const __m512 t0 = PK16_(0, 4, 8, 12), t1 = PK16_(1, 5, 9, 13), t2 = PK16_(2, 6, 10, 14),
                 t3 = PK16_(3, 7, 11, 15);
#undef PK16_
#undef PK_
    const __m512 u0 = _mm512_unpacklo_ps(t0, t1), u1 = _mm512_unpacklo_ps(t2, t3);
    const __m512 u2 = _mm512_unpackhi_ps(t0, t1), u3 = _mm512_unpackhi_ps(t2, t3);
    *x = (pbf_vf16)_mm512_shuffle_ps(u0, u1, 0x44);
    *y = (pbf_vf16)_mm512_shuffle_ps(u0, u1, 0xEE);
    *z = (pbf_vf16)_mm512_shuffle_ps(u2, u3, 0x44);
    if (l) *l = (pbf_vf16)_mm512_shuffle_ps(u2, u3, 0xEE);
}

/* Particle i's list: its codes and its length. */
static inline PBF_SIMD_INLINE const uint8_t *list_of(const pbf_world *w, int i, uint32_t *len) {
    const cpu_lists *L = LISTS(w);
    const uint32_t f = L->start[i];
    const uint32_t s = L->block_start[(unsigned)i / LIST_BLOCK] + (f & ~1u);
    *len = list_end(w, i) - s - (f & 1u);
    return L->nbr + CODE_BYTES(s);
}

/* The two particles' cell ranges (cached in ca and cb) and lists, for the pair loops below:
 * ra_, rb_, lca_ / na_, lcb_ / nb2_ and the longer length nmax_. */
#define PAIR_LISTS_(w, i, ca, cb)                                                                  \
    const nb_ranges *ra_ = ranges_of((w), (i), (ca));                                              \
    const nb_ranges *rb_ = (w)->cell[(i) + 1] == ra_->cell ? ra_ : ranges_of((w), (i) + 1, (cb));  \
    uint32_t na_, nb2_;                                                                            \
    const uint8_t *lca_ = list_of((w), (i), &na_), *lcb_ = list_of((w), (i) + 1, &nb2_);           \
    const uint32_t nmax_ = na_ > nb2_ ? na_ : nb2_

/* After a pair: when i + 1 had ranges of its own (in cb), the next pair starts in its cell or
 * later, so they move to ca. */
static inline PBF_SIMD_INLINE void pair_next_ranges(nb_ranges *ca, nb_ranges *cb,
                                                    const nb_ranges *ra, const nb_ranges *rb) {
    if (rb != ra) {
        const nb_ranges t = *ca;
        *ca = *cb;
        *cb = t;
    }
}

/* Runs BODY for every chunk k of the lists of particles i (lanes 0-7) and i + 1 (lanes 8-15)
 * (the lists must be built), with `valid` the lanes in use, jv[16] the neighbours and vxi,
 * vyi, vzi the two particles' x* (each in its half). A particle whose list has ended decodes
 * chunk 0 with no lane valid (its own list start: inside the padded array). */
#define FOR_NEIGHBOURS_PAIR(w, i, ca, cb, QX, QY, QZ, ...)                                         \
    do {                                                                                           \
        PAIR_LISTS_(w, i, ca, cb);                                                                 \
        const pbf_vf16 qxi = vf16_join(vf_set1((QX)[i]), vf_set1((QX)[(i) + 1]));                  \
        const pbf_vf16 qyi = vf16_join(vf_set1((QY)[i]), vf_set1((QY)[(i) + 1]));                  \
        const pbf_vf16 qzi = vf16_join(vf_set1((QZ)[i]), vf_set1((QZ)[(i) + 1]));                  \
        uint32_t jv[16];                                                                           \
        for (uint32_t k_ = 0; k_ < nmax_; k_ += 8) {                                               \
            const uint32_t la_ = k_ < na_ ? na_ - k_ : 0;                                          \
            const uint32_t lb_ = k_ < nb2_ ? nb2_ - k_ : 0;                                        \
            const pbf_vi16 valid = (pbf_vi16)_mm512_inserti32x8(                                   \
                _mm512_castsi256_si512((__m256i)vi_first((int32_t)la_)),                           \
                (__m256i)vi_first((int32_t)lb_), 1);                                               \
            decode_chunk(lca_ + (la_ ? CODE_BYTES(k_) : 0), ra_->begin, la_, jv);                  \
            decode_chunk(lcb_ + (lb_ ? CODE_BYTES(k_) : 0), rb_->begin, lb_, jv + 8);              \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        pair_next_ranges((ca), (cb), ra_, rb_);                                                    \
    } while (0)

/* FOR_NEIGHBOURS_PAIR with DFSPH's per-pair cache (FOR_PAIRS on two particles): BODY sees the
 * chunk's cached gradient factors `ps` of particle i (lanes 0-7) and i + 1 (lanes 8-15), +0 in
 * the lanes of a particle whose list has ended (its chunk 0 decodes with no lane valid), so that
 * every sum adds the same terms in the same order as FOR_PAIRS, then only exact zeros. */
#define FOR_PAIRS_PAIR(w, i, ca, cb, ...)                                                          \
    do {                                                                                           \
        PAIR_LISTS_(w, i, ca, cb);                                                                 \
        const float *pca_ = LISTS(w)->pair + (size_t)LISTS(w)->pair_off[i] * PBF_LANES;            \
        const float *pcb_ = LISTS(w)->pair + (size_t)LISTS(w)->pair_off[(i) + 1] * PBF_LANES;      \
        for (int q_ = 0; q_ < 6; ++q_) /* the next pairs' factors, a few particles ahead */       \
            __builtin_prefetch((const char *)pcb_ + 640 + 64 * q_);                                \
        uint32_t jv[16];                                                                           \
        for (uint32_t k_ = 0; k_ < nmax_; k_ += 8) {                                               \
            const uint32_t la_ = k_ < na_ ? na_ - k_ : 0;                                          \
            const uint32_t lb_ = k_ < nb2_ ? nb2_ - k_ : 0;                                        \
            decode_chunk(lca_ + (la_ ? CODE_BYTES(k_) : 0), ra_->begin, la_, jv);                  \
            decode_chunk(lcb_ + (lb_ ? CODE_BYTES(k_) : 0), rb_->begin, lb_, jv + 8);              \
            const pbf_vf16 ps = vf16_join(la_ ? vf_load(pca_ + k_) : vf_set1(0.0f),                \
                                          lb_ ? vf_load(pcb_ + k_) : vf_set1(0.0f));               \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        pair_next_ranges((ca), (cb), ra_, rb_);                                                    \
    } while (0)
#endif

static double mean_excess(pbf_world *w, const float *a, float scale, float offset);
static int sph_reserve(pbf_world *w);

static void swapf(float **a, float **b) {
    float *t = *a;
    *a = *b;
    *b = t;
}


/* Gathers arr[perm[k]] into *scratch and swaps the buffers: the old array becomes the scratch. */
static void permute(pbf_world *w, const uint32_t *perm, void **scratch, void **arr) {
    const uint32_t *src = *arr;
    uint32_t *dst = *scratch; /* 4-byte elements: floats are moved as their bit patterns */
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int k = 0; k < n; ++k) dst[k] = src[perm[k]];
    *scratch = *arr;
    *arr = dst;
}

/* A cut of particle i's velocity by the speed limit, counted unless i is a ghost of a
 * distributed run (its owner counts it; predict runs before the ghosts exist). */
static inline int64_t counted_clamp(const pbf_world *w, int i) {
    const pbf_world_hooks *hk = w->hooks;
    return !hk || !hk->is_ghost || !hk->is_ghost(w, i, hk->user);
}

/* The bed shear stress on particle i at x over the step (pbf_bed_drag): an external force, applied
 * with gravity (Algorithm 1, line 2). */
static inline void bed_drag(const pbf_world *w, int i, float dt, float *vx, float *vy, float *vz) {
    const float p[3] = {w->px[i], w->py[i], w->pz[i]};
    float v[3] = {*vx, *vy, *vz};
    pbf_bed_drag(&w->wc, w->wall_boxes, p, dt, v);
    *vx = v[0];
    *vy = v[1];
    *vz = v[2];
}

/* v += dt g (and the bed shear stress), |v| <= vmax (each cut counted); then x* = x + dt v
 * (advance: PBF's prediction, Algorithm 1 lines 2-3) or x* = x (the SPH solvers, which find
 * neighbours and densities at x). */
static int stage_external(pbf_world *w, float dt, float vmax, int advance) {
    const int drag = w->wc.drag_on;
    const int n = w->count;
    const float gx = w->def.gravity.x * dt, gy = w->def.gravity.y * dt, gz = w->def.gravity.z * dt;
    int bad = INT_MAX;
    int64_t clamps = 0;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad) \
    reduction(+ : clamps)
    for (int i = 0; i < n; ++i) {
        float vx = w->vx[i] + gx, vy = w->vy[i] + gy, vz = w->vz[i] + gz;
        if (drag) bed_drag(w, i, dt, &vx, &vy, &vz);
        clamps += pbf_limit_speed(&vx, &vy, &vz, vmax);
        w->vx[i] = vx;
        w->vy[i] = vy;
        w->vz[i] = vz;
        if (advance) {
            w->qx[i] = w->px[i] + dt * vx;
            w->qy[i] = w->py[i] + dt * vy;
            w->qz[i] = w->pz[i] + dt * vz;
            if (!isfinite(w->qx[i] + w->qy[i] + w->qz[i]) && i < bad) bad = i;
        } else {
            w->qx[i] = w->px[i];
            w->qy[i] = w->py[i];
            w->qz[i] = w->pz[i];
            if (!isfinite(vx + vy + vz) && i < bad) bad = i;
        }
    }
    w->solve.speed_clamps += clamps;
    return bad;
}

static int stage_predict(pbf_world *w, float dt, float vmax) {
    return stage_external(w, dt, vmax, 1);
}

/* The cell sort of the positions x (refresh: in_step 0) or x* (a step), and the permutation of
 * every SORTED row. No memory is set aside for sorting: the permutation and the reorder scratch
 * borrow two arrays dead at the time. In a PBF step the velocity is dead (PBF recomputes it from
 * the positions after its solve, eq. 14 onwards) and is not moved: it lends vx and vy. Between
 * steps (refresh) x* is dead (x is copied into it after the sort, before the lists are built
 * from it): it lends qx and qy.
 * The SPH solvers move their velocity, and recompute density and lambda before they read them:
 * those two lend themselves. */
static void stage_grid(pbf_world *w, int in_step) {
    const int pbf_step = in_step && w->def.solver == PBF_SOLVER_PBF;
    int lend[2] = {PBF_F_LAMBDA, PBF_F_DENSITY}, skip[3] = {PBF_F_LAMBDA, -1, -1};
    const float *X = w->qx, *Y = w->qy, *Z = w->qz;
    if (pbf_step) {
        lend[0] = PBF_F_VX, lend[1] = PBF_F_VY;
        skip[0] = PBF_F_VX, skip[1] = PBF_F_VY, skip[2] = PBF_F_VZ;
    } else if (!in_step) {
        X = w->px, Y = w->py, Z = w->pz;
        lend[0] = PBF_F_QX, lend[1] = PBF_F_QY;
        skip[0] = PBF_F_QX, skip[1] = PBF_F_QY, skip[2] = PBF_F_QZ;
    }
    uint32_t *perm = (uint32_t *)w->field[lend[0]];
    void *scratch = w->field[lend[1]];
    pbf_grid_build(&w->grid, w->count, X, Y, Z, w->cell, (uint32_t *)scratch, perm, w->nthreads);
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) { /* every field the registry marks as sorted */
        if (f == skip[0] || f == skip[1] || f == skip[2]) continue;
        /* PBF without the warm start recomputes lambda before reading it */
        if (f == PBF_F_LAMBDA && !pbf_lambda_carried(w)) continue;
        if ((pbf_fields[f].flags & PBF_FIELD_SORTED) && w->field[f]) /* (a row the solver keeps) */
            permute(w, perm, &scratch, &w->field[f]);
    }
    w->field[lend[1]] = scratch; /* the buffer left over; perm stays in lend[0] */
    if (!in_step) { /* a refresh: x* = x, the positions the lists are built from */
        memcpy(w->qx, w->px, (size_t)w->count * sizeof(float));
        memcpy(w->qy, w->py, (size_t)w->count * sizeof(float));
        memcpy(w->qz, w->pz, (size_t)w->count * sizeof(float));
    }
    const pbf_world_hooks *hk = w->hooks;
    build_lists(w, in_step && hk && hk->ghost_mask ? hk->ghost_mask(w, hk->user) : NULL);
}

/* Density (eq. 2) at the predicted positions, including the wall. */
static inline float density_at(const pbf_world *w, int i, float wall, nb_ranges *cache) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const int cubic = k->cubic != 0.0f;
    pbf_vf rho = vf_set1(0.0f);
    FOR_NEIGHBOURS_R(w, i, cache, 
        pbf_vf dx = xi - LOAD(QX), dy = yi - LOAD(QY), dz = zi - LOAD(QZ);
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        rho += v_kw(k, r2, valid & (r2 < h2v), cubic);
    );
    return w->k.mass * vf_hsum(rho) + w->k.rest_density * wall;
}

/* The neighbour sums of particle i at x* that PBF's lambda (eq. 11) and DFSPH's factor share:
 * sum_j W_ij, sum_j V grad W_ij (= -grad_{p_j} C_i, eq. 8) and sum_j |V grad W_ij|^2, with the
 * cubic spline where `cubic` (see v_kw), poly6 / spiky otherwise. */
static inline PBF_SIMD_INLINE void density_grad_sums(pbf_world *w, int i, float *rho_sum,
                                                     float g[3], float *s2_sum,
                                                     const float *restrict P, nb_ranges *cache,
                                                     const int cubic) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(k->volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    pbf_vf rho = vf_set1(0.0f), gx = rho, gy = rho, gz = rho, s2 = rho;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        rho += v_kw(k, r2, in, cubic);
        pbf_vf f = vol * v_kgrad(k, r2, in, cubic);
        /* masked products: a padding lane's dx may be NaN, and 0 * NaN is NaN */
        pbf_vf ax = vf_and(f * dx, in), ay = vf_and(f * dy, in), az = vf_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
    );
    *rho_sum = vf_hsum(rho);
    g[0] = vf_hsum(gx);
    g[1] = vf_hsum(gy);
    g[2] = vf_hsum(gz);
    *s2_sum = vf_hsum(s2);
}

#if PBF_PAIRS
/* density_grad_sums of particles i and i + 1 (index 0 and 1 of each result) from the packed
 * copy and the lists, bit-identical to it. */
static inline PBF_SIMD_INLINE void density_grad_sums_pair(pbf_world *w, int i, float rho_sum[2],
                                                          float g[2][3], float s2_sum[2],
                                                          const float *restrict P,
                                                          nb_ranges *ca, nb_ranges *cb) {
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2);
    const pbf_vf16 vol = vf16_set1(k->volume);
    pbf_vf16 rho = vf16_set1(0.0f), gx = rho, gy = rho, gz = rho, s2 = rho;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj;
        load_packed16(P, jv, &xj, &yj, &zj, NULL);
        pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi16 in = valid & (r2 < h2v);
        rho += v16_poly6(k, r2, in);
        pbf_vf16 f = vol * v16_spiky(k, r2, in);
        pbf_vf16 ax = vf16_and(f * dx, in), ay = vf16_and(f * dy, in), az = vf16_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
    );
    rho_sum[0] = vf_hsum(vf16_lo(rho));
    rho_sum[1] = vf_hsum(vf16_hi(rho));
    g[0][0] = vf_hsum(vf16_lo(gx));
    g[1][0] = vf_hsum(vf16_hi(gx));
    g[0][1] = vf_hsum(vf16_lo(gy));
    g[1][1] = vf_hsum(vf16_hi(gy));
    g[0][2] = vf_hsum(vf16_lo(gz));
    g[1][2] = vf_hsum(vf16_hi(gz));
    s2_sum[0] = vf_hsum(vf16_lo(s2));
    s2_sum[1] = vf_hsum(vf16_hi(s2));
}
#endif

/* cheb: the Chebyshev weight of this iteration (pbf_chebyshev_omega; 1 = plain Jacobi);
 * iteration: its number in the step (the first, 0, adds lambda_carry times the carried lambda). */
static int stage_lambda(pbf_world *w, float cheb, int iteration) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density;
    const int unilateral = w->def.pbf.constraint == PBF_CONSTRAINT_UNILATERAL;
    const int warm = pbf_lambda_carried(w);
    const float beta = pbf_warm_lambda_factor(w->def.pbf.lambda_warm_start,
                                              w->def.pbf.lambda_carry, iteration);
    int bad = INT_MAX;
    const float *P = pack_reserve(w) ? (pack_xyzl(w, 0), LISTS(w)->pack) : NULL;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        cache.prefetch = P;
#if PBF_PAIRS
        nb_ranges cache_b = NB_RANGES_INIT;
        cache_b.prefetch = P;
        const int pairs = P && LISTS(w)->ok;
        float pr[2] = {0}, pg[2][3] = {{0}}, ps2[2] = {0};
#endif
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3], rho, g[3], s2;
            float wall = pbf_world_wall_density(w, p, gw);
            /* the wall's gradient at x* for delta p, which follows at the same x*: into v,
             * dead from the prediction to the velocity stage (delta p reads its own, then
             * writes x* + delta p over it) */
            w->vx[i] = gw[0];
            w->vy[i] = gw[1];
            w->vz[i] = gw[2];
#if PBF_PAIRS
            /* the sweep's chunks start even: i even takes i and i + 1 */
            if (pairs && (i & 1) == 0 && i + 1 < n) {
                density_grad_sums_pair(w, i, pr, pg, ps2, P, &cache, &cache_b);
                rho = pr[0], g[0] = pg[0][0], g[1] = pg[0][1], g[2] = pg[0][2], s2 = ps2[0];
            } else if (pairs && (i & 1)) {
                rho = pr[1], g[0] = pg[1][0], g[1] = pg[1][1], g[2] = pg[1][2], s2 = ps2[1];
            } else
#endif
            density_grad_sums(w, i, &rho, g, &s2, P, &cache, 0);
            float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
            float r = w->k.mass * rho + w->k.rest_density * wall;
            w->density[i] = r;
            float c = r * inv_rho0 - 1.0f; /* eq. 1 */
            if (unilateral && c < 0.0f) c = 0.0f;
            float sum2 = s2 + gix * gix + giy * giy + giz * giz;
            float lambda = -c / (sum2 + w->eps_abs); /* eq. 11 */
            /* lambda still holds the previous iteration's (each particle reads its own) */
            lambda = pbf_chebyshev_lambda(lambda, w->lambda[i], cheb);
            /* the warm start: lambda holds the previous iteration's, or the previous step's last */
            if (warm) lambda = pbf_warm_lambda(lambda, w->lambda[i], beta);
            w->lambda[i] = lambda;
            if (!isfinite(w->lambda[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    /* the error of the iteration (compression only, as the statistics count it) */
    w->solve_error = 100.0 * mean_excess(w, w->density, inv_rho0, -1.0f);
    return bad;
}

static int stage_delta_p(pbf_world *w, float dt) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict LAMBDA = w->lambda;
    const int n = w->count;
    /* s_corr on lambda's scale: against clumping, and the artificial pressure (pbf_scorr_split) */
    const float ks = -w->def.pbf.scorr_k / w->lattice_grad2, ksg = pbf_scorr_support_ks(w, dt);
    const float s_rest = w->scorr_s_rest, sw = pbf_scorr_wall_term(w, dt);
    const pbf_vf inv_wdq = vf_set1(w->scorr_inv_wdq);
    const int sn = w->def.pbf.scorr_n;
    const float om = w->def.pbf.over_relaxation;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(w->k.volume);
    int bad = INT_MAX;
    const float *P = pack_reserve(w) ? (pack_xyzl(w, 1), LISTS(w)->pack) : NULL;
    int bad_c = INT_MAX;
    const float *restrict PX = w->px, *restrict PY = w->py, *restrict PZ = w->pz;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad, bad_c)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        cache.prefetch = P;
#if PBF_PAIRS
        nb_ranges cache_b = NB_RANGES_INIT;
        cache_b.prefetch = P;
        const int pairs = P && LISTS(w)->ok && sn == 4;
        float pa[2][3] = {{0}};
        const pbf_vf16 h2w = vf16_set1(k->h2), volw = vf16_set1(w->k.volume);
        const pbf_vf16 inv_wdq16 = vf16_set1(w->scorr_inv_wdq);
#endif
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
            const float li = LAMBDA[i];
            const pbf_vf vli = vf_set1(li);
            /* the wall's gradient at x*, as lambda left it in v (pbf_world_wall_density) */
            const float p[3] = {QX[i], QY[i], QZ[i]}, gw[3] = {w->vx[i], w->vy[i], w->vz[i]};
            pbf_vf ax = vf_set1(0.0f), ay = ax, az = ax;
            float hx, hy, hz; /* the neighbour sums */
#if PBF_PAIRS
            /* i even takes i and i + 1 (the sweep's chunks start even), as in stage_lambda */
            if (pairs && (i & 1) == 0 && i + 1 < n) {
                const pbf_vf16 vl = vf16_join(vli, vf_set1(LAMBDA[i + 1]));
                pbf_vf16 bx = vf16_set1(0.0f), by = bx, bz = bx;
                FOR_NEIGHBOURS_PAIR(w, i, &cache, &cache_b, QX, QY, QZ,
                    pbf_vf16 xj, yj, zj, lj;
                    load_packed16(P, jv, &xj, &yj, &zj, &lj);
                    pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
                    pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
                    pbf_vi16 in = valid & (r2 < h2w);
                    pbf_vf16 ratio = v16_poly6(k, r2, in) * inv_wdq16, s16;
                    s16 = ratio * ratio;
                    s16 = s16 * s16;
                    pbf_vf16 scorr = pbf_scorr_split_v16(s16, s_rest, ks, ksg); /* eq. 13 */
                    pbf_vf16 f = (vl + lj + scorr) * volw * v16_spiky(k, r2, in);
                    bx += vf16_and(f * dx, in);
                    by += vf16_and(f * dy, in);
                    bz += vf16_and(f * dz, in);
                );
                hx = vf_hsum(vf16_lo(bx)), hy = vf_hsum(vf16_lo(by)), hz = vf_hsum(vf16_lo(bz));
                pa[1][0] = vf_hsum(vf16_hi(bx));
                pa[1][1] = vf_hsum(vf16_hi(by));
                pa[1][2] = vf_hsum(vf16_hi(bz));
            } else if (pairs && (i & 1)) { /* the pair's second: its sums are ready */
                hx = pa[1][0], hy = pa[1][1], hz = pa[1][2];
            } else
#endif
            {
            FOR_NEIGHBOURS_R(w, i, &cache, 
                pbf_vf xj, yj, zj, lj;
                load_neighbours(P, jv, QX, QY, QZ, LAMBDA, &xj, &yj, &zj, &lj);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                pbf_vf ratio = v_poly6(k, r2, in) * inv_wdq, s;
                if (sn == 4) { /* the default n: two squarings, no loop in the hot path */
                    s = ratio * ratio;
                    s = s * s;
                } else {
                    s = ratio;
                    for (int e = 1; e < sn; ++e) s *= ratio;
                }
                pbf_vf scorr = pbf_scorr_split_v(s, s_rest, ks, ksg); /* eq. 13 */
                /* lambda_j of a masked lane may be anything: the products are masked */
                pbf_vf f = (vli + lj + scorr) * vol * v_spiky(k, r2, in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            hx = vf_hsum(ax), hy = vf_hsum(ay), hz = vf_hsum(az);
            }
            /* over-relaxation of the Jacobi step (successive over-relaxation): omega = 1 is the
             * paper; the wall's term with its share of s_corr (pbf_scorr_wall_term) */
            const float lw = li + sw;
            float dpx = om * (lw * gw[0] + hx), dpy = om * (lw * gw[1] + hy),
                  dpz = om * (lw * gw[2] + hz);
            if (!isfinite(dpx + dpy + dpz) && i < bad) bad = i;
            /* the collision stage's work, done here: x* + delta p (eq. 14) pushed out of the walls,
             * into v, dead from the prediction to the velocity stage; the collision stage then
             * swaps v and x* (delta p's neighbours read x*, so it cannot be written in place) */
            float q[3] = {p[0] + dpx, p[1] + dpy, p[2] + dpz}, o[3] = {PX[i], PY[i], PZ[i]};
            /* before the clamp hides it */
            if (!isfinite(q[0] + q[1] + q[2]) && i < bad_c) bad_c = i;
            if (!pbf_collide_inside(&w->wc, q)) pbf_collide(&w->wc, w->wall_boxes, q, o);
            w->vx[i] = q[0];
            w->vy[i] = q[1];
            w->vz[i] = q[2];
        }
        pbf_denormals_restore(fp_mode);
    }
    LISTS(w)->collided = 1;
    LISTS(w)->collide_bad = bad_c;
    return bad;
}

static int stage_collide(pbf_world *w) {
    if (LISTS(w)->collided) { /* PBF: delta p has collided x* + delta p into v */
        LISTS(w)->collided = 0;
        swapf(&w->qx, &w->vx);
        swapf(&w->qy, &w->vy);
        swapf(&w->qz, &w->vz);
        return LISTS(w)->collide_bad;
    }
    const int n = w->count;
    int bad = INT_MAX;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad)
    for (int i = 0; i < n; ++i) {
        float x = w->qx[i] + w->sx[i], y = w->qy[i] + w->sy[i], z = w->qz[i] + w->sz[i];
        if (!isfinite(x + y + z) && i < bad) bad = i; /* before the collision clamp hides it */
        float q[3] = {x, y, z}, o[3] = {w->px[i], w->py[i], w->pz[i]};
        if (!pbf_collide_inside(&w->wc, q)) pbf_collide(&w->wc, w->wall_boxes, q, o);
        w->qx[i] = q[0];
        w->qy[i] = q[1];
        w->qz[i] = q[2];
    }
    return bad;
}

/* The curl pass for particle i (vort: with vorticity confinement): the density at x*
 * (eq. 2, walls included) and omega_i = sum_j V grad_i W_ij x (v_j - v_i) (eq. 15), written into
 * x (dead since the velocity pass: the next pass reads each particle's own only, then writes the
 * new velocity over it) with |omega_i| into lambda. Without vorticity confinement omega is
 * never read: the density alone. P: the packed (x*, y*, z*, v_x), or NULL. */
#if PBF_PAIRS
static inline PBF_SIMD_INLINE pbf_vf16 vf16_gather_idx(const float *base, const uint32_t *idx) {
    return (pbf_vf16){base[idx[0]],  base[idx[1]],  base[idx[2]],  base[idx[3]],
                      base[idx[4]],  base[idx[5]],  base[idx[6]],  base[idx[7]],
                      base[idx[8]],  base[idx[9]],  base[idx[10]], base[idx[11]],
                      base[idx[12]], base[idx[13]], base[idx[14]], base[idx[15]]};
}

/* curl_particle's neighbour sums for particles i and i + 1 (lists built, P the packed copy):
 * sums[p] = {density sum, omega_x, omega_y, omega_z} of particle i + p, bit-identical. */
static inline PBF_SIMD_INLINE void curl_pair(pbf_world *w, int i, const float *P, nb_ranges *ca,
                                             nb_ranges *cb, const int vort, const int cubic,
                                             float sums[2][4]) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2), vol = vf16_set1(k->volume);
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    pbf_vf16 rho = vf16_set1(0.0f), ox = rho, oy = rho, oz = rho;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj, vxj;
        load_packed16(P, jv, &xj, &yj, &zj, vort ? &vxj : NULL);
        pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi16 in = valid & (r2 < h2v);
        rho += v16_kw(k, r2, in, cubic);
        if (vort) {
            pbf_vf16 f = vol * v16_kgrad(k, r2, in, cubic);
            pbf_vf16 gx = vf16_and(f * dx, in), gy = vf16_and(f * dy, in),
                     gz = vf16_and(f * dz, in);
            pbf_vf16 ux = vf16_and(vxj - vxi, in), uy = vf16_and(vf16_gather_idx(VY, jv) - vyi, in),
                     uz = vf16_and(vf16_gather_idx(VZ, jv) - vzi, in);
            ox += gy * uz - gz * uy;
            oy += gz * ux - gx * uz;
            oz += gx * uy - gy * ux;
        }
    );
    sums[0][0] = vf_hsum(vf16_lo(rho));
    sums[1][0] = vf_hsum(vf16_hi(rho));
    if (vort) {
        sums[0][1] = vf_hsum(vf16_lo(ox)), sums[1][1] = vf_hsum(vf16_hi(ox));
        sums[0][2] = vf_hsum(vf16_lo(oy)), sums[1][2] = vf_hsum(vf16_hi(oy));
        sums[0][3] = vf_hsum(vf16_lo(oz)), sums[1][3] = vf_hsum(vf16_hi(oz));
    }
}
#endif

/* pre: the neighbour sums from curl_pair, or NULL (computed here); keep: lambda is carried to
 * the next step (pbf_lambda_carried), |omega| is not stored. */
static inline PBF_SIMD_INLINE void curl_particle(pbf_world *w, int i, const float *P,
                                                 nb_ranges *cache, const int vort,
                                                 const int cubic, int *bad, const float *pre,
                                                 const int keep) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(k->volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
    float wall = pbf_world_wall_density(w, p, gw);
    float hr, wx, wy, wz; /* the neighbour sums */
    if (pre) {
        hr = pre[0], wx = pre[1], wy = pre[2], wz = pre[3];
    } else {
    pbf_vf rho = vf_set1(0.0f), ox = rho, oy = rho, oz = rho;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, vxj;
        load_neighbours(P, jv, QX, QY, QZ, vort ? VX : NULL, &xj, &yj, &zj, vort ? &vxj : NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        rho += v_kw(k, r2, in, cubic);
        if (vort) {
            /* omega_i = sum_j V grad_i W_ij x (v_j - v_i)  (eq. 15) */
            pbf_vf f = vol * v_kgrad(k, r2, in, cubic);
            pbf_vf gx = vf_and(f * dx, in), gy = vf_and(f * dy, in), gz = vf_and(f * dz, in);
            pbf_vf ux = vf_and(vxj - vxi, in), uy = vf_and(LOAD(VY) - vyi, in),
                   uz = vf_and(LOAD(VZ) - vzi, in);
            ox += gy * uz - gz * uy;
            oy += gz * ux - gx * uz;
            oz += gx * uy - gy * ux;
        }
    );
    hr = vf_hsum(rho);
    wx = vort ? vf_hsum(ox) : 0.0f, wy = vort ? vf_hsum(oy) : 0.0f, wz = vort ? vf_hsum(oz) : 0.0f;
    }
    const float r = w->k.mass * hr + w->k.rest_density * wall;
    w->density[i] = r;
    if (vort) {
        w->px[i] = wx;
        w->py[i] = wy;
        w->pz[i] = wz;
        const float norm = sqrtf(wx * wx + wy * wy + wz * wz);
        /* |omega|, for the post pass; with lambda carried to the next step the post pass takes
         * it from omega itself (omega_norm) */
        if (!keep) w->lambda[i] = norm;
        if (!isfinite(norm) && i < *bad) *bad = i;
    } else if (!isfinite(r) && i < *bad) {
        *bad = i;
    }
}

/* The curl pass's worksharing loop, called inside the stage's parallel region with constant
 * flags (one instance each); pairs: particles i, i + 1 at once (AVX-512, PBF's kernel). */
static inline PBF_SIMD_INLINE void curl_loop(pbf_world *w, int n, const float *PK, const int vort,
                                             const int cubic, const int pairs, int *bad2,
                                             const int keep) {
    nb_ranges cache = NB_RANGES_INIT;
    cache.prefetch = PK;
#if PBF_PAIRS
    nb_ranges cache_b = NB_RANGES_INIT;
    cache_b.prefetch = PK;
    float sums[2][4] = {{0}};
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i) {
        if (pairs && (i & 1) == 0 && i + 1 < n) { /* chunks start even */
            curl_pair(w, i, PK, &cache, &cache_b, vort, cubic, sums);
            curl_particle(w, i, PK, &cache, vort, cubic, bad2, sums[0], keep);
        } else {
            curl_particle(w, i, PK, &cache, vort, cubic, bad2, pairs && (i & 1) ? sums[1] : NULL,
                          keep);
        }
    }
#else
    (void)pairs;
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i) curl_particle(w, i, PK, &cache, vort, cubic, bad2, NULL, keep);
#endif
}

static int stage_velocity(pbf_world *w, float dt, float vmax) {
    const int n = w->count;
    const float inv_dt = 1.0f / dt;
    int bad = INT_MAX;
    /* the packed copy for the curl pass: (x*, y*, z*, v_x) */
    float *restrict PK = pack_reserve(w) ? LISTS(w)->pack : NULL;
    int64_t clamps = 0;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad) \
    reduction(+ : clamps)
    for (int i = 0; i < n; ++i) {
        float vx = (w->qx[i] - w->px[i]) * inv_dt, vy = (w->qy[i] - w->py[i]) * inv_dt,
              vz = (w->qz[i] - w->pz[i]) * inv_dt;
        if (pbf_limit_speed(&vx, &vy, &vz, vmax)) clamps += counted_clamp(w, i);
        w->vx[i] = vx;
        w->vy[i] = vy;
        w->vz[i] = vz;
        if (PK) {
            PK[4 * i + 0] = w->qx[i];
            PK[4 * i + 1] = w->qy[i];
            PK[4 * i + 2] = w->qz[i];
            PK[4 * i + 3] = vx;
        }
        if (!isfinite(vx + vy + vz) && i < bad) bad = i;
    }
    w->solve.speed_clamps += clamps;
    int bad2 = INT_MAX;
    const int vort = w->def.vorticity > 0.0f, cubic = w->k.cubic != 0.0f;
#if PBF_PAIRS
    const int pairs = PK && LISTS(w)->ok;
#else
    const int pairs = 0;
#endif
    /* with lambda carried to the next step (and the packed copy, which the post pass then needs)
     * |omega| is not stored: see stage_vorticity_xsph */
    const int keep = vort && PK && pbf_lambda_carried(w);
    LISTS(w)->omega_norm = keep;
    /* four instances of the pass: with vorticity confinement off (epsilon 0) omega is never
     * read, and the pass is the density alone (no velocity gathers, no curl); the kernel is a
     * constant in each (PBF's poly6 / spiky, or the SPH solvers' cubic spline) */
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad2)
    {
        const unsigned fp_mode = pbf_denormals_off();
        if (vort && cubic)
            curl_loop(w, n, PK, 1, 1, pairs, &bad2, 0);
        else if (vort)
            curl_loop(w, n, PK, 1, 0, pairs, &bad2, keep);
        else if (cubic)
            curl_loop(w, n, PK, 0, 1, pairs, &bad2, 0);
        else
            curl_loop(w, n, PK, 0, 0, pairs, &bad2, 0);
        pbf_denormals_restore(fp_mode);
    }
    return bad < bad2 ? bad : bad2;
}

/* |omega_i|: stored by the curl pass in lambda, or (onorm: lambda carried to the next step)
 * from omega_i itself, computed as the curl pass computes it (the same bits). */
static inline float omega_norm_at(const pbf_world *w, int i, const int onorm) {
    if (!onorm) return w->lambda[i];
    const float x = w->px[i], y = w->py[i], z = w->pz[i];
    return sqrtf(x * x + y * y + z * z);
}

/* XSPH (eq. 17) and, with vort, vorticity confinement (eq. 16) for particle i; the new
 * velocity into x (omega_i's place), or with onorm into x* (the neighbours read omega_j, x*_j is
 * in the packed copy: see stage_vorticity_xsph). P: the packed (x*, y*, z*, m / rho), or NULL. */
#if PBF_PAIRS
/* xsph_particle's neighbour sums for particles i and i + 1 (lists built, P the packed copy):
 * sums[p] = {XSPH x, y, z, eta x, y, z} of particle i + p, bit-identical. */
static inline PBF_SIMD_INLINE void xsph_pair(pbf_world *w, int i, const float *P, const float *PV,
                                             nb_ranges *ca, nb_ranges *cb, const int vort,
                                             const int cubic, float sums[2][6], const int onorm) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict OMEGA = w->lambda;
    const float *restrict WX = w->px, *restrict WY = w->py, *restrict WZ = w->pz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2);
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    const pbf_vf16 wi = vort ? vf16_join(vf_set1(omega_norm_at(w, i, onorm)),
                                         vf_set1(omega_norm_at(w, i + 1, onorm)))
                             : vf16_set1(0.0f);
    pbf_vf16 ex = vf16_set1(0.0f), ey = ex, ez = ex, sx = ex, sy = ex, sz = ex;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj, mj;
        load_packed16(P, jv, &xj, &yj, &zj, &mj);
        pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi16 in = valid & (r2 < h2v);
        pbf_vf16 vj = vf16_and(mj, in);
        pbf_vf16 wk = vj * v16_kw(k, r2, in, cubic);
        pbf_vf16 vxj, vyj, vzj;
        if (PV) {
            load_packed16(PV, jv, &vxj, &vyj, &vzj, NULL);
        } else {
            vxj = vf16_gather_idx(VX, jv);
            vyj = vf16_gather_idx(VY, jv);
            vzj = vf16_gather_idx(VZ, jv);
        }
        sx += vf16_and(wk * (vxj - vxi), in);
        sy += vf16_and(wk * (vyj - vyi), in);
        sz += vf16_and(wk * (vzj - vzi), in);
        if (vort) {
            pbf_vf16 wj;
            if (onorm) {
                const pbf_vf16 ox = vf16_gather_idx(WX, jv), oy = vf16_gather_idx(WY, jv),
                               oz = vf16_gather_idx(WZ, jv);
                wj = (pbf_vf16)_mm512_sqrt_ps((__m512)(ox * ox + oy * oy + oz * oz));
            } else {
                wj = vf16_gather_idx(OMEGA, jv);
            }
            pbf_vf16 f = vf16_and(vj * (wj - wi), in) * v16_kgrad(k, r2, in, cubic);
            ex += vf16_and(f * dx, in);
            ey += vf16_and(f * dy, in);
            ez += vf16_and(f * dz, in);
        }
    );
    sums[0][0] = vf_hsum(vf16_lo(sx)), sums[1][0] = vf_hsum(vf16_hi(sx));
    sums[0][1] = vf_hsum(vf16_lo(sy)), sums[1][1] = vf_hsum(vf16_hi(sy));
    sums[0][2] = vf_hsum(vf16_lo(sz)), sums[1][2] = vf_hsum(vf16_hi(sz));
    if (vort) {
        sums[0][3] = vf_hsum(vf16_lo(ex)), sums[1][3] = vf_hsum(vf16_hi(ex));
        sums[0][4] = vf_hsum(vf16_lo(ey)), sums[1][4] = vf_hsum(vf16_hi(ey));
        sums[0][5] = vf_hsum(vf16_lo(ez)), sums[1][5] = vf_hsum(vf16_hi(ez));
    }
}
#endif

/* pre: the neighbour sums from xsph_pair, or NULL (computed here). PV: the packed velocities
 * (v_x, v_y, v_z, 0), or NULL (gathered from the arrays): the same values either way. */
static inline PBF_SIMD_INLINE void xsph_particle(pbf_world *w, int i, const float *P,
                                                 const float *PV, nb_ranges *cache, const int vort,
                                                 const int cubic, float dt, float vmax, int *bad,
                                                 int64_t *clamps, const float *pre,
                                                 const int onorm) {
    const float eps = w->def.vorticity, c = w->def.xsph_viscosity;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict OMEGA = w->lambda; /* |omega| from the curl pass */
    const float *restrict RHO = w->density;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf mass = vf_set1(w->k.mass);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const float vxs = VX[i], vys = VY[i], vzs = VZ[i];
    const pbf_vf vxi = vf_set1(vxs), vyi = vf_set1(vys), vzi = vf_set1(vzs);
    const float *restrict WX = w->px, *restrict WY = w->py, *restrict WZ = w->pz;
    const pbf_vf wi = vf_set1(vort ? omega_norm_at(w, i, onorm) : 0.0f);
    float hs[6] = {0}; /* the neighbour sums: XSPH, then eta */
    if (pre) {
        for (int a = 0; a < 6; ++a) hs[a] = pre[a];
    } else {
    pbf_vf ex = vf_set1(0.0f), ey = ex, ez = ex, sx = ex, sy = ex, sz = ex;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, mj;
        load_neighbours(P, jv, QX, QY, QZ, RHO, &xj, &yj, &zj, &mj);
        if (!P) mj = mass / mj; /* packed: m / rho_j, divided per particle */
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        pbf_vf vj = vf_and(mj, in);
        /* XSPH: sum_j (m / rho_j) (v_j - v_i) W_ij  (eq. 17); the j = i term is 0 */
        pbf_vf wk = vj * v_kw(k, r2, in, cubic);
        pbf_vf vxj, vyj, vzj;
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        sx += vf_and(wk * (vxj - vxi), in);
        sy += vf_and(wk * (vyj - vyi), in);
        sz += vf_and(wk * (vzj - vzi), in);
        if (vort) {
            /* eta = grad |omega| = sum_j V_j (|omega_j| - |omega_i|) grad_i W_ij  (eq. 16) */
            pbf_vf wj;
            if (onorm) {
                const pbf_vf ox = LOAD(WX), oy = LOAD(WY), oz = LOAD(WZ);
                wj = vf_sqrt(ox * ox + oy * oy + oz * oz);
            } else {
                wj = LOAD(OMEGA);
            }
            pbf_vf f = vf_and(vj * (wj - wi), in) * v_kgrad(k, r2, in, cubic);
            ex += vf_and(f * dx, in);
            ey += vf_and(f * dy, in);
            ez += vf_and(f * dz, in);
        }
    );
    hs[0] = vf_hsum(sx), hs[1] = vf_hsum(sy), hs[2] = vf_hsum(sz);
    if (vort) hs[3] = vf_hsum(ex), hs[4] = vf_hsum(ey), hs[5] = vf_hsum(ez);
    }
    float vx = vxs + c * hs[0], vy = vys + c * hs[1], vz = vzs + c * hs[2];
    if (vort) {
        const float oxi = w->px[i], oyi = w->py[i], ozi = w->pz[i]; /* omega_i */
        float hx = hs[3], hy = hs[4], hz = hs[5];
        float el = sqrtf(hx * hx + hy * hy + hz * hz);
        if (eps > 0.0f && el > 1e-20f) {
            float nx = hx / el, ny = hy / el, nz = hz / el;
            /* f = eps (N x omega), applied as an acceleration over dt */
            vx += dt * eps * (ny * ozi - nz * oyi);
            vy += dt * eps * (nz * oxi - nx * ozi);
            vz += dt * eps * (nx * oyi - ny * oxi);
        }
    }
    if (pbf_limit_speed(&vx, &vy, &vz, vmax)) *clamps += counted_clamp(w, i);
    float *restrict OX = onorm ? w->qx : w->px, *restrict OY = onorm ? w->qy : w->py,
                    *restrict OZ = onorm ? w->qz : w->pz;
    OX[i] = vx;
    OY[i] = vy;
    OZ[i] = vz;
    if (!isfinite(vx + vy + vz) && i < *bad) *bad = i;
}

/* The XSPH pass's worksharing loop, as curl_loop. */
static inline PBF_SIMD_INLINE void xsph_loop(pbf_world *w, int n, const float *PK,
                                             const float *PV, const int vort,
                                             const int cubic, const int pairs, float dt,
                                             float vmax, int *bad, int64_t *clamps,
                                             const int onorm) {
    nb_ranges cache = NB_RANGES_INIT;
    cache.prefetch = PK;
#if PBF_PAIRS
    nb_ranges cache_b = NB_RANGES_INIT;
    cache_b.prefetch = PK;
    float sums[2][6] = {{0}};
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i) {
        if (pairs && (i & 1) == 0 && i + 1 < n) { /* chunks start even */
            xsph_pair(w, i, PK, PV, &cache, &cache_b, vort, cubic, sums, onorm);
            xsph_particle(w, i, PK, PV, &cache, vort, cubic, dt, vmax, bad, clamps, sums[0],
                          onorm);
        } else {
            xsph_particle(w, i, PK, PV, &cache, vort, cubic, dt, vmax, bad, clamps,
                          pairs && (i & 1) ? sums[1] : NULL, onorm);
        }
    }
#else
    (void)pairs;
    const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
    SWEEP_FOR(sweep_i, i)
        xsph_particle(w, i, PK, PV, &cache, vort, cubic, dt, vmax, bad, clamps, NULL, onorm);
#endif
}

/* Vorticity confinement and XSPH; writes the new velocity into the (now free) x arrays. */
static int stage_vorticity_xsph(pbf_world *w, float dt, float vmax) {
    const int n = w->count;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict RHO = w->density;
    int bad = INT_MAX;
    /* the packed copy for this pass: (x*, y*, z*, m / rho); the SPH solvers', which have the
     * room (sph_v, free at this point), also the velocities (v_x, v_y, v_z, 0): a neighbour's
     * velocity is then one 16-byte load, not three scattered ones (PBF gathers them) */
    float *restrict PK = pack_reserve(w) ? LISTS(w)->pack : NULL;
    float *restrict PV =
        PK && w->def.solver != PBF_SOLVER_PBF && sph_reserve(w) ? LISTS(w)->sph_v : NULL;
    if (PK) {
        const float m = w->k.mass;
        const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
        for (int i = 0; i < n; ++i) {
            PK[4 * i + 0] = QX[i];
            PK[4 * i + 1] = QY[i];
            PK[4 * i + 2] = QZ[i];
            PK[4 * i + 3] = m / RHO[i];
            if (PV) {
                PV[4 * i + 0] = VX[i];
                PV[4 * i + 1] = VY[i];
                PV[4 * i + 2] = VZ[i];
            }
        }
    }
    int64_t clamps = 0;
    const int vort = w->def.vorticity > 0.0f, cubic = w->k.cubic != 0.0f;
#if PBF_PAIRS
    const int pairs = PK && LISTS(w)->ok;
#else
    const int pairs = 0;
#endif
    /* lambda carried to the next step: |omega| from omega, the new velocity into x* (x*_j is
     * read from the packed copy, which the curl pass had too when it set omega_norm) */
    const int onorm = vort && LISTS(w)->omega_norm && PK;
    LISTS(w)->omega_norm = 0;
    /* four instances: without vorticity confinement (epsilon 0) no |omega_j| is gathered; the
     * kernel is a constant in each, as in the curl pass */
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad) reduction(+ : clamps)
    {
        const unsigned fp_mode = pbf_denormals_off();
        if (vort && cubic)
            xsph_loop(w, n, PK, PV, 1, 1, pairs, dt, vmax, &bad, &clamps, 0);
        else if (vort)
            xsph_loop(w, n, PK, PV, 1, 0, pairs, dt, vmax, &bad, &clamps, onorm);
        else if (cubic)
            xsph_loop(w, n, PK, PV, 0, 1, pairs, dt, vmax, &bad, &clamps, 0);
        else
            xsph_loop(w, n, PK, PV, 0, 0, pairs, dt, vmax, &bad, &clamps, 0);
        pbf_denormals_restore(fp_mode);
    }
    w->solve.speed_clamps += clamps;
    if (onorm) {
        /* the new velocity is in x*, omega in x: x* back into x from the packed copy (the
         * pass read its own x* before writing over it, the neighbours' from the copy) */
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
        for (int i = 0; i < n; ++i) {
            w->px[i] = PK[4 * i + 0];
            w->py[i] = PK[4 * i + 1];
            w->pz[i] = PK[4 * i + 2];
        }
    } else {
        /* the curl pass stored |omega| in lambda over the carried multipliers (no packed copy
         * there): the next step's solve starts from lambda = 0, as the paper's */
        if (vort && pbf_lambda_carried(w)) memset(w->lambda, 0, (size_t)n * sizeof(float));
        /* rotate roles: x <- x*, v <- new velocity, x* and the old velocity become free */
        swapf(&w->px, &w->qx);
        swapf(&w->py, &w->qy);
        swapf(&w->pz, &w->qz);
    }
    /* now q* holds the new velocity and p holds x*; move the velocity into v */
    swapf(&w->qx, &w->vx);
    swapf(&w->qy, &w->vy);
    swapf(&w->qz, &w->vz);
    return bad;
}

/* ---- the SPH solvers' stages (formulas: src/sph/sph_solvers.h) ----------------------------
 * Arrays during their pressure stages: density rho_i, sx the DFSPH factor, lambda the k_i of the
 * pressure acceleration, sy the per-particle error of the last measuring stage. */

/* Mean of max(a_i * scale + offset, 0) over the particles, summed in index order (the order is
 * the cell order, which depends only on the state): deterministic for any thread count. */
#define EXCESS_CHUNKS 1024

/* Mean of max(a_i scale + offset, 0): sums of fixed chunks of particles (at most EXCESS_CHUNKS,
 * at least 4096 particles each) in parallel, added in chunk order, so that the result does not
 * depend on the thread count. The sum and the count go to w->solve_sum and w->solve_count; the
 * ghosts of a distributed run are left out (their values are not their owners'), and its hooks
 * combine the processes' sums. */
static double mean_excess(pbf_world *w, const float *a, float scale, float offset) {
    const int n = w->count;
    w->solve_sum = 0.0;
    w->solve_count = 0.0;
    if (n <= 0) return 0.0;
    int size = (n + EXCESS_CHUNKS - 1) / EXCESS_CHUNKS;
    if (size < 4096) size = 4096;
    const int chunks = (n + size - 1) / size;
    const pbf_world_hooks *hk = w->hooks;
    const unsigned char *ghost = hk && hk->ghosts ? hk->ghosts(w, hk->user) : NULL;
    double part[EXCESS_CHUNKS];
    int counted[EXCESS_CHUNKS];
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int c = 0; c < chunks; ++c) {
        const int i0 = c * size, i1 = n - i0 > size ? i0 + size : n;
        double sum = 0.0;
        int m = 0;
        for (int i = i0; i < i1; ++i) {
            if (ghost && ghost[i]) continue;
            const float e = a[i] * scale + offset;
            /* e where it is positive, else +0 (by a mask: no branch to mispredict on the sign of
             * each); + 0.0 leaves the sum's bits as they are, so the sum is the positive terms' */
            uint32_t bits;
            memcpy(&bits, &e, sizeof bits);
            bits &= 0u - (uint32_t)(e > 0.0f);
            float ep;
            memcpy(&ep, &bits, sizeof ep);
            sum += (double)ep;
            ++m;
        }
        part[c] = sum;
        counted[c] = m;
    }
    double total = 0.0, count = 0.0;
    for (int c = 0; c < chunks; ++c) {
        total += part[c];
        count += counted[c];
    }
    w->solve_sum = total;
    w->solve_count = count;
    return count > 0.0 ? total / count : 0.0;
}

/* v += dt g, |v| <= vmax; x* = x: the SPH solvers find neighbours and densities at x. */
static int stage_gravity(pbf_world *w, float dt, float vmax) {
    return stage_external(w, dt, vmax, 0);
}

/* ---- the SPH passes' packed copies and wall cache ------------------------------------------
 * The SPH passes read x_j, v_j and k_j of scattered neighbours: packed as (x, y, z, k) in the
 * pack array and (v_x, v_y, v_z, 0) in sph_v, a neighbour is two 16-byte loads and two cache
 * lines instead of up to seven of each (see load_packed). Each pass packs what it reads at its
 * start, from the arrays as they are then (a distributed run's halo updates included), so the
 * values, and every result, are the arrays' own.
 * The wall's density and gradient at a point depend on the point alone: the first pass at a
 * point (the step's first SPH pass at x, PCISPH's prediction at x + dt v) keeps them in
 * sph_wall, and the passes that follow at the same point read them back instead of recomputing
 * the same floats. pbf_cpu_stage drops the cache before any other stage (see sph_wall_keeps). */
static int sph_reserve(pbf_world *w) {
    cpu_lists *L = LISTS(w);
    size_t need = (size_t)w->count + PBF_ARRAY_PADDING;
    if (need <= L->sph_cap) return 1;
    free(L->sph_v);
    free(L->sph_wall);
    L->sph_v = L->sph_wall = NULL;
    L->sph_cap = 0;
    L->wall_at = WALL_NONE;
    size_t bytes = (need * 4 * sizeof(float) + 63) / 64 * 64;
    L->sph_v = aligned_alloc(64, bytes);
    L->sph_wall = aligned_alloc(64, bytes);
    if (!L->sph_v || !L->sph_wall) {
        free(L->sph_v);
        free(L->sph_wall);
        L->sph_v = L->sph_wall = NULL;
        return 0;
    }
    memset(L->sph_v, 0, bytes);
    memset(L->sph_wall, 0, bytes);
    L->sph_cap = need;
    return 1;
}

/* The packed copies of an SPH pass: *P = (x, y, z, K) (K NULL: x, y, z only; P NULL: none) and,
 * with_v, *PV = (v_x, v_y, v_z, 0); NULL where there is no room (the pass gathers from the
 * arrays). */
static void sph_pack(pbf_world *w, const float *K, int with_v, const float **P, const float **PV) {
    float *restrict A = P && pack_reserve(w) ? LISTS(w)->pack : NULL;
    float *restrict B = with_v && sph_reserve(w) ? LISTS(w)->sph_v : NULL;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) {
        if (A) {
            A[4 * i + 0] = QX[i];
            A[4 * i + 1] = QY[i];
            A[4 * i + 2] = QZ[i];
            if (K) A[4 * i + 3] = K[i];
        }
        if (B) {
            B[4 * i + 0] = VX[i];
            B[4 * i + 1] = VY[i];
            B[4 * i + 2] = VZ[i];
        }
    }
    if (P) *P = A;
    if (PV) *PV = B;
}

/* DFSPH's solves move no particle, so the x* of pack stay; sph_v holds the velocities where the
 * pressure acceleration wrote its new ones there too (xv_packed: set by the stages that packed
 * or wrote both, kept by the measures, which change neither, dropped by every other stage and in a
 * distributed run, whose hooks change ghosts between stages): the measures then pack nothing
 * and the pressure acceleration packs only k. */
static void sph_pack_k(pbf_world *w, const float *K) {
    float *restrict A = LISTS(w)->pack;
    const float *restrict KK = K;
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) A[4 * i + 3] = KK[i];
}

/* The wall cache a pass at `at` writes (NULL: none; the pass then computes only). */
static float *sph_wall_begin(pbf_world *w) {
    LISTS(w)->wall_at = WALL_NONE;
    return sph_reserve(w) ? LISTS(w)->sph_wall : NULL;
}
static inline void sph_wall_put(float *WC, int i, float wall, const float gw[3]) {
    if (!WC) return;
    WC[4 * (size_t)i + 0] = gw[0];
    WC[4 * (size_t)i + 1] = gw[1];
    WC[4 * (size_t)i + 2] = gw[2];
    WC[4 * (size_t)i + 3] = wall;
}
/* The wall at particle i's point p (taken `at`): from the cache when it holds that point. */
static inline float sph_wall_get(const pbf_world *w, int i, int at, const float p[3],
                                 float gw[3]) {
    const cpu_lists *L = LISTS(w);
    if (L->wall_at != at) return pbf_world_wall_density(w, p, gw);
    const float *c = L->sph_wall + 4 * (size_t)i;
    gw[0] = c[0];
    gw[1] = c[1];
    gw[2] = c[2];
    return c[3];
}
/* Stages that read the wall cache and leave x (and, but for PCISPH's pressure_accel, which drops
 * it itself, the point of the cache) unchanged; every other stage drops it before it runs. */
static int sph_wall_keeps(pbf_stage_id s) {
    return s == PBF_STAGE_DIVERGENCE || s == PBF_STAGE_DENSITY_ADV ||
           s == PBF_STAGE_DFSPH_WARM_V || s == PBF_STAGE_DFSPH_WARM ||
           s == PBF_STAGE_IISPH_PRESSURE || s == PBF_STAGE_PRESSURE_ACCEL;
}

/* WCSPH: density (walls included), the Tait pressure as k_i, and the velocity change of the
 * artificial viscosity over dt into sx, sy, sz (added by the pressure stage). */
static int stage_wcsph_pressure(pbf_world *w, float dt) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density, B = w->def.wcsph.stiffness,
                gamma = w->def.wcsph.exponent, rho0 = w->k.rest_density;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf nu = vf_set1(dt * w->k.volume * pbf_wcsph_viscosity(w->def.wcsph.viscosity, B, gamma, k->h, rho0));
    const pbf_vf eps_h2 = vf_set1(0.01f * k->h2), zero = vf_set1(0.0f);
    int bad = INT_MAX;
    const float *P, *PV;
    sph_pack(w, NULL, 1, &P, &PV);
    float *WC = sph_wall_begin(w);
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
            const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            pbf_vf rho = vf_set1(0.0f), ax = rho, ay = rho, az = rho;
            FOR_NEIGHBOURS_R(w, i, &cache,
                pbf_vf xj, yj, zj, vxj, vyj, vzj;
                load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
                load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                rho += v_kw(k, r2, in, k->cubic != 0.0f);
                /* Pi_ij = -nu min(v_ij . x_ij, 0) / (|x_ij|^2 + 0.01 h^2); a_i = -sum m Pi_ij grad W */
                pbf_vf vr = vf_and((vxi - vxj) * dx + (vyi - vyj) * dy + (vzi - vzj) * dz, in);
                pbf_vf f = vf_and(nu * (zero - vf_max(zero - vr, zero)) / (r2 + eps_h2) * v_kgrad(k, r2, in, k->cubic != 0.0f), in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            float r = w->k.mass * vf_hsum(rho) + w->k.rest_density * wall;
            w->density[i] = r;
            w->lambda[i] = pbf_wcsph_k(r * inv_rho0, B, gamma, rho0, dt);
            w->sx[i] = vf_hsum(ax);
            w->sy[i] = vf_hsum(ay);
            w->sz[i] = vf_hsum(az);
            if (!isfinite(w->lambda[i] + w->sx[i] + w->sy[i] + w->sz[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    w->solve_error = 100.0 * mean_excess(w, w->density, inv_rho0, -1.0f);
    return bad;
}

/* ---- DFSPH's per-pair cache ------------------------------------------------------------------
 * The positions stay where the grid was built from the factor stage to the end of the density
 * solve (the SPH solvers move the particles only in advect), so every pair's gradient factor s =
 * |grad W(r)| / |r| of the SPH kernel (v_kgrad) is the same in all of the step's DFSPH passes: 2 per
 * iteration of each solve. The factor pass stores it, per chunk of PBF_LANES list entries (4
 * bytes per entry, +0 outside the neighbours), and the divergence, density and pressure
 * acceleration passes read it back instead of recomputing the kernel (a square root and a
 * division per pair) and its range test: a pair is inside the kernel where s != 0 (a pair at
 * r = h within rounding, s = 0, adds a zero either way). The products are the uncached passes'
 * own, the same operands in the same order, so results do not change (DFSPH's frames are
 * byte-identical with and without the cache, and equal to the GPU kernels'). Without room, or
 * beyond PAIR_MAX_BYTES, the passes compute as before. Measured (59,319 particles, 1 thread,
 * shared machine): about 10 % less CPU time per step for 160 bytes per particle; caching the
 * offsets x_i - x_j too (16 bytes per pair, no gather of x_j) was slower: the 38 MB it streams
 * per pass do not stay in the last-level cache. */
#define PAIR_MAX_BYTES ((size_t)1 << 31)

/* The cache's offsets for the current lists and room for it: 0 where there is none. */
static int pair_reserve(pbf_world *w) {
    cpu_lists *L = LISTS(w);
    L->pair_ok = 0;
    if (!L->ok) return 0;
    const int n = w->count;
    if ((size_t)n + 1 > L->pair_off_cap) {
        free(L->pair_off);
        L->pair_off_cap = 0;
        L->pair_off = malloc(((size_t)n + 1) * sizeof *L->pair_off);
        if (!L->pair_off) return 0;
        L->pair_off_cap = (size_t)n + 1;
    }
    size_t chunks = 0;
    for (int i = 0; i < n; ++i) {
        L->pair_off[i] = (uint32_t)chunks;
        chunks += (list_length(w, i) + PBF_LANES - 1) / PBF_LANES;
        if (chunks > UINT32_MAX) return 0;
    }
    const size_t need = chunks * PBF_LANES; /* floats */
    if (need * sizeof(float) > PAIR_MAX_BYTES) return 0;
    if (need > L->pair_cap) {
        free(L->pair);
        const size_t cap = need + need / 8;
        L->pair = aligned_alloc(64, (cap * sizeof(float) + 63) / 64 * 64);
        L->pair_cap = L->pair ? cap : 0;
        if (!L->pair) return 0;
    }
    return 1;
}

static inline PBF_SIMD_INLINE void vf_store(float *p, pbf_vf v) { memcpy(p, &v, sizeof v); }

/* density_grad_sums that also stores the pairs of particle i into pc (the lists are built). */
static inline PBF_SIMD_INLINE void density_grad_sums_pairs(pbf_world *w, int i, float *rho_sum,
                                                           float g[3], float *s2_sum,
                                                           const float *restrict P,
                                                           nb_ranges *cache, float *pc) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(k->volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const int cubic = k->cubic != 0.0f; /* the SPH solvers' kernel (v_kw) */
    pbf_vf rho = vf_set1(0.0f), gx = rho, gy = rho, gz = rho, s2 = rho;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        rho += v_kw(k, r2, in, cubic);
        pbf_vf sp = v_kgrad(k, r2, in, cubic);
        pbf_vf f = vol * sp;
        pbf_vf ax = vf_and(f * dx, in), ay = vf_and(f * dy, in), az = vf_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
        vf_store(pc, sp);
        pc += PBF_LANES;
    );
    *rho_sum = vf_hsum(rho);
    g[0] = vf_hsum(gx);
    g[1] = vf_hsum(gy);
    g[2] = vf_hsum(gz);
    *s2_sum = vf_hsum(s2);
}

/* The divergence solve's first D_i (density_rate_pairs, bit-identical: the same terms in the same
 * lanes and order) from the pairs the factor pass has just cached for particle i (pc, its first
 * chunk); the wall term is the caller's. */
static inline PBF_SIMD_INLINE float rate_from_pairs(pbf_world *w, int i, const float *P,
                                                    const float *PV, const nb_ranges *nb,
                                                    const float *pc) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf vol = vf_set1(w->k.volume), zero = vf_set1(0.0f);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const uint32_t f_ = LISTS(w)->start[i];
    const uint32_t s_ = LISTS(w)->block_start[(unsigned)i / LIST_BLOCK] + (f_ & ~1u);
    const uint32_t n_ = list_end(w, i) - s_ - (f_ & 1u);
    const uint8_t *c_ = LISTS(w)->nbr + CODE_BYTES(s_);
    uint32_t jv[PBF_LANES];
    pbf_vf dsum = zero;
    for (uint32_t k_ = 0; k_ < n_; k_ += PBF_LANES, pc += PBF_LANES) {
        decode_chunk(c_ + CODE_BYTES(k_), nb->begin, n_ - k_, jv);
        const pbf_vf ps = vf_load(pc);
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        const pbf_vf pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        const pbf_vi in = ps != zero;
        pbf_vf f = vol * ps;
        pbf_vf ux = vf_and(vxi - vxj, in), uy = vf_and(vyi - vyj, in), uz = vf_and(vzi - vzj, in);
        dsum += vf_and(f * pdx, in) * ux + vf_and(f * pdy, in) * uy + vf_and(f * pdz, in) * uz;
    }
    return vf_hsum(dsum);
}

#if PBF_PAIRS
/* density_grad_sums_pairs of particles i and i + 1 at once (lanes 0-7: i, 8-15: i + 1; the lists
 * built, P the packed positions), bit-identical to it, each particle's gradient factors into its
 * own pair cache (pca, pcb: its first chunk); with PV (the packed velocities) also the neighbour
 * sums of rate_from_pairs from the factors just computed (d[0], d[1]; the wall terms are the
 * caller's), in the same lanes and order, so one gather of x_j serves both. out[p] = {rho, g_x,
 * g_y, g_z, s} of particle i + p. */
static inline PBF_SIMD_INLINE void factor_pair2(pbf_world *w, int i, const float *P,
                                                const float *PV, nb_ranges *ca, nb_ranges *cb,
                                                float *pca, float *pcb, float out[2][5],
                                                float d[2]) {
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2), vol = vf16_set1(k->volume), zero = vf16_set1(0.0f);
    const int cubic = k->cubic != 0.0f;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    pbf_vf16 rho = zero, gx = zero, gy = zero, gz = zero, s2 = zero, dsum = zero;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj;
        load_packed16(P, jv, &xj, &yj, &zj, NULL);
        const pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        const pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        const pbf_vi16 in = valid & (r2 < h2v);
        rho += v16_kw(k, r2, in, cubic);
        const pbf_vf16 sp = v16_kgrad(k, r2, in, cubic);
        const pbf_vf16 f = vol * sp;
        const pbf_vf16 ax = vf16_and(f * dx, in), ay = vf16_and(f * dy, in),
                       az = vf16_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
        if (la_) vf_store(pca + k_, vf16_lo(sp));
        if (lb_) vf_store(pcb + k_, vf16_hi(sp));
        if (PV) { /* rate_from_pairs' terms: its `in` is the cached factor's (sp is +0 in the
                   * lanes of a list that has ended, as FOR_PAIRS_PAIR's ps) */
            pbf_vf16 vxj, vyj, vzj;
            load_packed16(PV, jv, &vxj, &vyj, &vzj, NULL);
            const pbf_vi16 inp = sp != zero;
            const pbf_vf16 ux = vf16_and(vxi - vxj, inp), uy = vf16_and(vyi - vyj, inp),
                           uz = vf16_and(vzi - vzj, inp);
            dsum += vf16_and(f * dx, inp) * ux + vf16_and(f * dy, inp) * uy +
                    vf16_and(f * dz, inp) * uz;
        }
    );
    out[0][0] = vf_hsum(vf16_lo(rho)), out[1][0] = vf_hsum(vf16_hi(rho));
    out[0][1] = vf_hsum(vf16_lo(gx)), out[1][1] = vf_hsum(vf16_hi(gx));
    out[0][2] = vf_hsum(vf16_lo(gy)), out[1][2] = vf_hsum(vf16_hi(gy));
    out[0][3] = vf_hsum(vf16_lo(gz)), out[1][3] = vf_hsum(vf16_hi(gz));
    out[0][4] = vf_hsum(vf16_lo(s2)), out[1][4] = vf_hsum(vf16_hi(s2));
    d[0] = vf_hsum(vf16_lo(dsum)), d[1] = vf_hsum(vf16_hi(dsum));
}
#endif

/* The neighbour sums of DFSPH's factor and IISPH's diagonal at particle i (density_grad_sums:
 * rho, g, s), with the pair cache PC when there is one (its gradient factors stored), two
 * particles at a time where the lists allow (i even computes i and i + 1 into o2, d2; i odd takes
 * them); with PV also D_i of the current velocities into SZ[i] (the wall term from gw). The
 * caller's sweep starts its chunks at even indices. */
static inline PBF_SIMD_INLINE void grad_sums_cached(pbf_world *w, int i, int n, const float *P,
                                                   const float *PV, float *PC, nb_ranges *cache,
                                                   nb_ranges *cache_b, float *rho, float g[3],
                                                   float *s2, float o2[2][5], float d2[2],
                                                   float *SZ, const float gw[3]) {
    const uint32_t *PO = LISTS(w)->pair_off;
#if PBF_PAIRS
    /* the sweep's chunks start even: i even takes i and i + 1 */
    if (PC && P && LISTS(w)->ok && ((i & 1) == 0 ? i + 1 < n : 1)) {
        if ((i & 1) == 0)
            factor_pair2(w, i, P, PV, cache, cache_b, PC + (size_t)PO[i] * PBF_LANES,
                         PC + (size_t)PO[i + 1] * PBF_LANES, o2, d2);
        const int h = i & 1;
        *rho = o2[h][0], g[0] = o2[h][1], g[1] = o2[h][2], g[2] = o2[h][3], *s2 = o2[h][4];
        if (PV) SZ[i] = d2[h] + w->vx[i] * gw[0] + w->vy[i] * gw[1] + w->vz[i] * gw[2];
        return;
    }
#else
    (void)n, (void)cache_b, (void)o2, (void)d2;
#endif
    if (PC) {
        density_grad_sums_pairs(w, i, rho, g, s2, P, cache, PC + (size_t)PO[i] * PBF_LANES);
        if (PV) /* as density_rate_pairs adds the wall term */
            SZ[i] = rate_from_pairs(w, i, P, PV, cache, PC + (size_t)PO[i] * PBF_LANES) +
                    w->vx[i] * gw[0] + w->vy[i] * gw[1] + w->vz[i] * gw[2];
    } else
        density_grad_sums(w, i, rho, g, s2, P, cache, w->k.cubic != 0.0f);
}

/* DFSPH: density (walls included) and the factor of eq. 11 into sx; the step's pair cache; and,
 * as the stage that follows measures the divergence of the same velocities (the divergence
 * solve's first measure, or its warm start's; not distributed, whose hooks exchange between
 * stages), that measure's D_i into sz (rate_ok), read there instead of a pass of its own. */
static int stage_dfsph_factor(pbf_world *w) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float eps = 1e-6f * w->lattice_grad2;
    int bad = INT_MAX;
    float *WC = sph_wall_begin(w);
    float *PC = pair_reserve(w) ? LISTS(w)->pair : NULL;
    const int rate = PC && !w->hooks && w->sz;
    const float *P = NULL, *PV = NULL;
    sph_pack(w, NULL, rate, &P, &PV);
    const int store = rate && P && PV;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT, cache_b = NB_RANGES_INIT;
        float o2[2][5] = {{0}}, d2[2] = {0};
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3], rho, g[3], s2;
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            grad_sums_cached(w, i, n, P, store ? PV : NULL, PC, &cache, &cache_b, &rho, g, &s2,
                             o2, d2, store ? w->sz : NULL, gw);
            float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
            w->density[i] = w->k.mass * rho + w->k.rest_density * wall;
            w->sx[i] = pbf_dfsph_factor(gix * gix + giy * giy + giz * giz, s2, eps);
            if (!isfinite(w->density[i] + w->sx[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    if (PC) LISTS(w)->pair_ok = 1;
    LISTS(w)->rate_ok = store;
    LISTS(w)->xv_packed = store; /* (store: both packed, not distributed) */
    return bad;
}

/* D_i = sum_j V (v_i - v_j) . grad W_ij + v_i . grad wall_i, the rate of change of rho_i / rho_0
 * from the current velocities (the wall is at rest), with gw the wall gradient at x_i. */
static inline PBF_SIMD_INLINE float density_rate(pbf_world *w, int i, const float gw[3],
                                                const float *P, const float *PV,
                                                nb_ranges *cache) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(w->k.volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    pbf_vf dsum = vf_set1(0.0f);
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        pbf_vf f = vol * v_kgrad(k, r2, in, k->cubic != 0.0f);
        pbf_vf ux = vf_and(vxi - vxj, in), uy = vf_and(vyi - vyj, in), uz = vf_and(vzi - vzj, in);
        dsum += vf_and(f * dx, in) * ux + vf_and(f * dy, in) * uy + vf_and(f * dz, in) * uz;
    );
    return vf_hsum(dsum) + VX[i] * gw[0] + VY[i] * gw[1] + VZ[i] * gw[2];
}

/* density_rate with the gradient factors from the pair cache. */
static inline PBF_SIMD_INLINE float density_rate_pairs(pbf_world *w, int i, const float gw[3],
                                                      const float *P, const float *PV,
                                                      nb_ranges *cache) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_vf vol = vf_set1(w->k.volume);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    pbf_vf dsum = vf_set1(0.0f);
    FOR_PAIRS(w, i, cache,
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        const pbf_vf pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        const pbf_vi in = ps != vf_set1(0.0f);
        pbf_vf f = vol * ps;
        pbf_vf ux = vf_and(vxi - vxj, in), uy = vf_and(vyi - vyj, in), uz = vf_and(vzi - vzj, in);
        dsum += vf_and(f * pdx, in) * ux + vf_and(f * pdy, in) * uy + vf_and(f * pdz, in) * uz;
    );
    return vf_hsum(dsum) + VX[i] * gw[0] + VY[i] * gw[1] + VZ[i] * gw[2];
}

#if PBF_PAIRS
/* The neighbour sums of density_rate_pairs of particles i and i + 1 (out[0], out[1]; without the
 * wall term, which each particle adds), bit-identical to it. */
static inline PBF_SIMD_INLINE void density_rate_pairs2(pbf_world *w, int i, const float *P,
                                                      const float *PV, nb_ranges *ca,
                                                      nb_ranges *cb, float out[2]) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf16 vol = vf16_set1(w->k.volume), zero = vf16_set1(0.0f);
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    const pbf_vf16 xi = vf16_join(vf_set1(QX[i]), vf_set1(QX[i + 1]));
    const pbf_vf16 yi = vf16_join(vf_set1(QY[i]), vf_set1(QY[i + 1]));
    const pbf_vf16 zi = vf16_join(vf_set1(QZ[i]), vf_set1(QZ[i + 1]));
    pbf_vf16 dsum = zero;
    FOR_PAIRS_PAIR(w, i, ca, cb,
        pbf_vf16 xj, yj, zj, vxj, vyj, vzj;
        load_packed16(P, jv, &xj, &yj, &zj, NULL);
        const pbf_vf16 pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        load_packed16(PV, jv, &vxj, &vyj, &vzj, NULL);
        const pbf_vi16 in = ps != zero;
        pbf_vf16 f = vol * ps;
        pbf_vf16 ux = vf16_and(vxi - vxj, in), uy = vf16_and(vyi - vyj, in),
                 uz = vf16_and(vzi - vzj, in);
        dsum += vf16_and(f * pdx, in) * ux + vf16_and(f * pdy, in) * uy + vf16_and(f * pdz, in) * uz;
    );
    out[0] = vf_hsum(vf16_lo(dsum));
    out[1] = vf_hsum(vf16_hi(dsum));
}

/* The neighbour sums of pressure_accel (from the pair cache) of particles i and i + 1 (a[0],
 * a[1]), bit-identical to it. */
static inline PBF_SIMD_INLINE void accel_pairs2(pbf_world *w, int i, const float *P,
                                               nb_ranges *ca, nb_ranges *cb, float a[2][3]) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict K = w->lambda;
    const pbf_vf16 vol = vf16_set1(w->k.volume), zero = vf16_set1(0.0f);
    const pbf_vf16 xi = vf16_join(vf_set1(QX[i]), vf_set1(QX[i + 1]));
    const pbf_vf16 yi = vf16_join(vf_set1(QY[i]), vf_set1(QY[i + 1]));
    const pbf_vf16 zi = vf16_join(vf_set1(QZ[i]), vf_set1(QZ[i + 1]));
    const pbf_vf16 vki = vf16_join(vf_set1(K[i]), vf_set1(K[i + 1]));
    pbf_vf16 ax = zero, ay = zero, az = zero;
    FOR_PAIRS_PAIR(w, i, ca, cb,
        pbf_vf16 xj, yj, zj, kj;
        load_packed16(P, jv, &xj, &yj, &zj, &kj);
        const pbf_vf16 pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        const pbf_vi16 in = ps != zero;
        pbf_vf16 f = vf16_and((vki + kj) * vol * ps, in);
        ax += vf16_and(f * pdx, in);
        ay += vf16_and(f * pdy, in);
        az += vf16_and(f * pdz, in);
    );
    a[0][0] = vf_hsum(vf16_lo(ax));
    a[1][0] = vf_hsum(vf16_hi(ax));
    a[0][1] = vf_hsum(vf16_lo(ay));
    a[1][1] = vf_hsum(vf16_hi(ay));
    a[0][2] = vf_hsum(vf16_lo(az));
    a[1][2] = vf_hsum(vf16_hi(az));
}
#endif

/* D_i of the current velocities for the measures of DFSPH and IISPH (the wall term from gw):
 * from the pair cache when `pairs`, two particles at a time where P and PV are packed (i even
 * computes i and i + 1, i odd takes d2[1]; the caller's sweep starts its chunks at even
 * indices). */
static inline PBF_SIMD_INLINE float rate_cached(pbf_world *w, int i, int n, int pairs,
                                               const float *P, const float *PV, nb_ranges *cache,
                                               nb_ranges *cache_b, float d2[2],
                                               const float gw[3]) {
#if PBF_PAIRS
    if (pairs && P && PV && ((i & 1) == 0 ? i + 1 < n : 1)) {
        if ((i & 1) == 0) density_rate_pairs2(w, i, P, PV, cache, cache_b, d2);
        return d2[i & 1] + w->vx[i] * gw[0] + w->vy[i] * gw[1] + w->vz[i] * gw[2];
    }
#else
    (void)n, (void)cache_b, (void)d2;
#endif
    return pairs ? density_rate_pairs(w, i, gw, P, PV, cache) : density_rate(w, i, gw, P, PV, cache);
}

/* DFSPH: the source term of the divergence (divergence != 0) or density solve from the current
 * velocities, k_i = factor_i * source_i, and the average source as the solve's error.
 * With the warm start (dfsph_warm_start > 0): `start` computes the solve's first k_i from the
 * previous substep's kappa_i (warm_v: divergence, warm: density) where the source is positive
 * (pbf_dfsph_warm_k; the pressure acceleration that follows applies it) and measures nothing;
 * the measuring stage sums the k_i the solve applied (the start's, then each iteration's: lambda
 * holds the last one applied) in the warm row itself, 0 where the neighbourhood is not full
 * (pbf_dfsph_warm_keep with dt = 1), and the next substep's start takes kappa_i = sum / dt^2 with
 * the dt of that substep (warm_dt): the same operations as keeping kappa_i, so the same bits as
 * the GPU kernels, which keep the sum apart (ksum); sz stays free for D_i, so that the starts,
 * like the cold solves' first measures, read D_i from the stage before instead of a pass.
 * With dfsph_divergence_warm_start the divergence solve has no start: its first iteration takes
 * the warm k_i from kappa^v_i itself (pbf_dfsph_warm_first), its sum starting at 0. */
static int stage_dfsph_source(pbf_world *w, float dt, int divergence, int start, int iteration,
                              int rate_ok, int xv) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density;
    /* the divergence solve's warm start within its first iteration (pbf_dfsph_warm_first) */
    const float first_warm = divergence ? pbf_dfsph_first_warm(&w->def) : 0.0f;
    const int first = first_warm > 0.0f;
    const float frac = first ? first_warm : w->def.dfsph.warm_start;
    const float min_rel = w->def.dfsph.divergence_min_density;
    float *restrict WK = divergence ? w->warm_v : w->warm;
    const int keep = frac > 0.0f && WK;
    const float full = 2.0f / w->lattice_grad2;
    const float omega = pbf_chebyshev_omega(w->def.dfsph.chebyshev_rho,
                                            pbf_dfsph_cheb_iteration(iteration, first));
    int bad = INT_MAX;
    const int pairs = LISTS(w)->pair_ok;
    /* D_i of these velocities is in sz already (the factor pass's for the divergence solve's
     * first measure or its start, the divergence solve's last measure's for the density solve's
     * first or its start: no stage between changes the velocities; a pressure acceleration
     * between two stages drops rate_ok) */
    const int reuse = rate_ok;
    /* keep D_i for the density solve's first measure or start (see stage_dfsph_factor) */
    const int store = divergence && !start && !w->hooks && w->sz;
    const float dtp = LISTS(w)->warm_dt[divergence != 0];
    float *restrict SZ = w->sz;
    const float *P = NULL, *PV = NULL;
    if (reuse) {
    } else if (xv) {
        P = LISTS(w)->pack;
        PV = LISTS(w)->sph_v;
    } else {
        sph_pack(w, NULL, 1, &P, &PV);
    }
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT, cache_b = NB_RANGES_INIT;
        float d2[2] = {0};
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            sph_wall_get(w, i, WALL_AT_X, p, gw);
            const float d =
                reuse ? SZ[i] : rate_cached(w, i, n, pairs, P, PV, &cache, &cache_b, d2, gw);
            if (store) SZ[i] = d;
            float c = pbf_dfsph_source(w->density[i] * inv_rho0, d, dt, divergence, min_rel);
            if (start) {
                const float kappa = dtp > 0.0f ? WK[i] / (dtp * dtp) : 0.0f;
                w->lambda[i] = keep ? pbf_dfsph_warm_k(frac, kappa, c, w->sx[i], full, dt) : 0.0f;
            } else {
                float kw = 0.0f; /* the warm k of the first iteration (first) */
                const int warm_first = keep && first && iteration == 0;
                if (warm_first) {
                    const float kappa = dtp > 0.0f ? WK[i] / (dtp * dtp) : 0.0f;
                    kw = pbf_dfsph_warm_k(frac, kappa, c, w->sx[i], full, dt);
                    WK[i] = 0.0f; /* no k applied yet in this substep */
                } else if (keep) {
                    const float sum = iteration == 0 ? w->lambda[i] : WK[i] + w->lambda[i];
                    WK[i] = pbf_dfsph_warm_keep(sum, w->sx[i], full, 1.0f);
                }
                w->sy[i] = c;
                const float k = pbf_dfsph_k(c, w->sx[i], w->lambda[i], omega, divergence);
                w->lambda[i] = warm_first ? pbf_dfsph_warm_first(k, kw) : k;
            }
            if (!isfinite(w->lambda[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (!start) w->solve_error = 100.0 * mean_excess(w, w->sy, 1.0f, 0.0f);
    if (!start && keep) LISTS(w)->warm_dt[divergence != 0] = dt;
    LISTS(w)->rate_ok = store;
    LISTS(w)->xv_packed = !w->hooks && (xv || (P && PV));
    return bad;
}

/* The symmetric pressure acceleration of every SPH solver over dt, from k = dt^2 rho_0 p / rho^2:
 * v_i -= (sum_j V (k_i + k_j) grad W_ij + k_i grad wall_i) / dt, then the collisions and
 * friction on the motion dt v (as PBF's collide stage does inside its iterations), so that the
 * next measure of the solve sees the motion the walls allow. With `predicted` (PCISPH) the
 * gradients are taken at the predicted positions x + dt v (the velocities before this pass) and
 * the new velocities go to sx, sy, sz, which then swap roles with vx, vy, vz. */
static inline PBF_SIMD_INLINE int pressure_accel(pbf_world *w, float dt, int predicted, int xv) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    /* no restrict: without `predicted` the new velocities overwrite the ones read */
    const float *VX = w->vx, *VY = w->vy, *VZ = w->vz;
    const float *restrict K = w->lambda;
    float *OX = predicted ? w->sx : w->vx, *OY = predicted ? w->sy : w->vy,
          *OZ = predicted ? w->sz : w->vz;
    const int n = w->count;
    const float inv_dt = 1.0f / dt;
    const int viscous = w->def.solver == PBF_SOLVER_WCSPH;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2), dtv = vf_set1(dt);
    const pbf_vf vol = vf_set1(w->k.volume);
    int bad = INT_MAX;
    const int pairs = !predicted && LISTS(w)->pair_ok; /* DFSPH: gradient factors cached */
    const float *P = NULL, *PV = NULL;
    float *restrict PVW = NULL; /* DFSPH: the new velocities into sph_v too (see sph_pack_k) */
    if (pairs && xv) {
        P = LISTS(w)->pack;
        sph_pack_k(w, K);
        PVW = LISTS(w)->sph_v;
    } else {
        sph_pack(w, K, predicted, &P, &PV);
        if (pairs && P && !w->hooks && sph_reserve(w)) PVW = LISTS(w)->sph_v;
    }
    const int wall_at = predicted ? WALL_AT_PREDICTED : WALL_AT_X;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
#if PBF_PAIRS
        nb_ranges cache_b = NB_RANGES_INIT;
        const int two = pairs && P;
        float a2[2][3] = {{0}};
#endif
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            float g[3] = {p[0], p[1], p[2]}; /* where the gradients are taken */
            if (predicted) {
                g[0] += dt * VX[i];
                g[1] += dt * VY[i];
                g[2] += dt * VZ[i];
            }
            const pbf_vf xi = vf_set1(g[0]), yi = vf_set1(g[1]), zi = vf_set1(g[2]);
            const float ki = K[i];
            const pbf_vf vki = vf_set1(ki);
            sph_wall_get(w, i, wall_at, g, gw);
            pbf_vf ax = vf_set1(0.0f), ay = ax, az = ax;
            float sx, sy, sz;
#if PBF_PAIRS
            /* the sweep's chunks start even: i even takes i and i + 1 (whose sums
             * read no velocity, which this pass writes) */
            if (two && (i & 1) == 0 && i + 1 < n) {
                accel_pairs2(w, i, P, &cache, &cache_b, a2);
                sx = a2[0][0], sy = a2[0][1], sz = a2[0][2];
            } else if (two && (i & 1)) {
                sx = a2[1][0], sy = a2[1][1], sz = a2[1][2];
            } else
#endif
            {
            if (pairs) {
                FOR_PAIRS(w, i, &cache,
                    pbf_vf xj, yj, zj, kj;
                    load_neighbours(P, jv, QX, QY, QZ, K, &xj, &yj, &zj, &kj);
                    const pbf_vf pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
                    const pbf_vi in = ps != vf_set1(0.0f);
                    pbf_vf f = vf_and((vki + kj) * vol * ps, in);
                    ax += vf_and(f * pdx, in);
                    ay += vf_and(f * pdy, in);
                    az += vf_and(f * pdz, in);
                );
            } else FOR_NEIGHBOURS_R(w, i, &cache,
                pbf_vf xj, yj, zj, kj;
                load_neighbours(P, jv, QX, QY, QZ, K, &xj, &yj, &zj, &kj);
                pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
                if (predicted) {
                    pbf_vf vxj, vyj, vzj;
                    load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
                    dx -= dtv * vxj;
                    dy -= dtv * vyj;
                    dz -= dtv * vzj;
                }
                pbf_vf r2 = dx * dx + dy * dy + dz * dz;
                pbf_vi in = valid & (r2 < h2v);
                pbf_vf f = vf_and((vki + kj) * vol * v_kgrad(k, r2, in, k->cubic != 0.0f), in);
                ax += vf_and(f * dx, in);
                ay += vf_and(f * dy, in);
                az += vf_and(f * dz, in);
            );
            sx = vf_hsum(ax), sy = vf_hsum(ay), sz = vf_hsum(az);
            }
            float vx = VX[i] - (sx + ki * gw[0]) * inv_dt;
            float vy = VY[i] - (sy + ki * gw[1]) * inv_dt;
            float vz = VZ[i] - (sz + ki * gw[2]) * inv_dt;
            if (viscous) { /* WCSPH's artificial viscosity, from its pressure stage */
                vx += w->sx[i];
                vy += w->sy[i];
                vz += w->sz[i];
            }
            pbf_sph_collide_velocity(&w->wc, w->wall_boxes, p, dt, &vx, &vy, &vz);
            OX[i] = vx;
            OY[i] = vy;
            OZ[i] = vz;
            if (PVW) {
                PVW[4 * (size_t)i + 0] = vx;
                PVW[4 * (size_t)i + 1] = vy;
                PVW[4 * (size_t)i + 2] = vz;
            }
            if (!isfinite(vx + vy + vz) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    LISTS(w)->xv_packed = PVW != NULL;
    if (predicted) {
        LISTS(w)->wall_at = WALL_NONE; /* the velocities, and so the predicted points, changed */
        swapf(&w->vx, &w->sx);
        swapf(&w->vy, &w->sy);
        swapf(&w->vz, &w->sz);
    }
    return bad;
}

static int stage_pressure_accel(pbf_world *w, float dt, int xv) {
    return w->def.solver == PBF_SOLVER_PCISPH ? pressure_accel(w, dt, 1, 0)
                                              : pressure_accel(w, dt, 0, xv);
}

/* delta x = dt v into the scratch arrays: the collide stage applies it with the collisions. */
static int stage_advect(pbf_world *w, float dt) {
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) {
        w->sx[i] = dt * w->vx[i];
        w->sy[i] = dt * w->vy[i];
        w->sz[i] = dt * w->vz[i];
    }
    return INT_MAX;
}

/* ---- PCISPH and IISPH: the pressure k accumulates over the iterations (PCISPH: in density,
 * IISPH: in sy), lambda holds the increment that pressure_accel applies (the acceleration is
 * linear in k); IISPH keeps a_ii in sx and the error in sz. */

/* PCISPH: p = 0 and F^p = 0 before the loop, and the velocities that the walls allow (the
 * collisions on dt v, as pressure_accel applies them after every correction), so that the first
 * prediction x + dt v already lies inside the container and outside the boxes. */
static int stage_pcisph_init(pbf_world *w, float dt) {
    const int n = w->count;
    int bad = INT_MAX;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(min : bad)
    for (int i = 0; i < n; ++i) {
        float p[3] = {w->qx[i], w->qy[i], w->qz[i]};
        pbf_sph_collide_velocity(&w->wc, w->wall_boxes, p, dt, &w->vx[i], &w->vy[i], &w->vz[i]);
        w->density[i] = 0.0f;
        if (!isfinite(w->vx[i] + w->vy[i] + w->vz[i]) && i < bad) bad = i;
    }
    return bad;
}

/* sum_j W(x*_i - x*_j) over the step's neighbours at the predicted positions x* = x + dt v. */
static inline PBF_SIMD_INLINE float predicted_kernel_sum(pbf_world *w, int i, float dt,
                                                        const float *P, const float *PV,
                                                        nb_ranges *cache) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2), dtv = vf_set1(dt);
    const pbf_vf xi = vf_set1(QX[i] + dt * VX[i]), yi = vf_set1(QY[i] + dt * VY[i]),
                 zi = vf_set1(QZ[i] + dt * VZ[i]);
    pbf_vf rho = vf_set1(0.0f);
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        pbf_vf dx = xi - xj - dtv * vxj, dy = yi - yj - dtv * vyj, dz = zi - zj - dtv * vzj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        rho += v_kw(k, r2, valid & (r2 < h2v), k->cubic != 0.0f);
    );
    return vf_hsum(rho);
}

/* PCISPH: the density error at the predicted positions x* = x + dt v (walls included) into sz
 * (dead: pressure_accel's scratch), its average (compression) as the error of the loop, and the
 * pressure corrected by delta times the error (eq. 8), >= 0, with the increment in lambda. */
static int stage_pcisph_pressure(pbf_world *w, float dt) {
    const int n = w->count;
    const float delta = pbf_pcisph_delta(w->lattice_grad2);
    int bad = INT_MAX;
    const float *P, *PV;
    sph_pack(w, NULL, 1, &P, &PV);
    float *WC = sph_wall_begin(w);
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {w->qx[i] + dt * w->vx[i], w->qy[i] + dt * w->vy[i],
                          w->qz[i] + dt * w->vz[i]},
                  gw[3];
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            float rel = w->k.volume * predicted_kernel_sum(w, i, dt, P, PV, &cache) + wall;
            const float err = rel - 1.0f, kn = pbf_pcisph_k(w->density[i], err, delta);
            w->sz[i] = err;
            w->lambda[i] = kn - w->density[i];
            w->density[i] = kn;
            if (!isfinite(err) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_PREDICTED;
    w->solve_error = 100.0 * mean_excess(w, w->sz, 1.0f, 0.0f);
    return bad;
}

/* IISPH: density (walls included), the diagonal a_ii into sx, the pressure zeroed; with the warm
 * start (iisph_warm_start > 0) the pressure starts from that fraction of the smaller of the last
 * two substeps' (pbf_iisph_warm_p, pbf_iisph_warm_k; warm_v takes the last one's), in sy and in
 * lambda, which the pressure acceleration that follows applies. */
static int stage_iisph_diagonal(pbf_world *w, float dt) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float frac = w->def.iisph.warm_start, inv_rho0 = 1.0f / w->k.rest_density;
    const int warm = frac > 0.0f && w->warm && w->warm_v;
    int bad = INT_MAX;
    const float *P = pack_reserve(w) ? (pack_xyzl(w, 0), LISTS(w)->pack) : NULL;
    float *WC = sph_wall_begin(w);
    float *PC = pair_reserve(w) ? LISTS(w)->pair : NULL;
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT, cache_b = NB_RANGES_INIT;
        float o2[2][5] = {{0}}, d2[2] = {0};
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3], rho, g[3], s2;
            float wall = pbf_world_wall_density(w, p, gw);
            sph_wall_put(WC, i, wall, gw);
            grad_sums_cached(w, i, n, P, NULL, PC, &cache, &cache_b, &rho, g, &s2, o2, d2, NULL,
                             gw);
            float gix = gw[0] + g[0], giy = gw[1] + g[1], giz = gw[2] + g[2];
            w->density[i] = w->k.mass * rho + w->k.rest_density * wall;
            w->sx[i] = pbf_iisph_diagonal(gix * gix + giy * giy + giz * giz, s2);
            if (warm) {
                const float pw = pbf_iisph_warm_p(w->warm[i], w->warm_v[i]);
                w->warm_v[i] = w->warm[i];
                const float k0 = pbf_iisph_warm_k(frac, pw, w->density[i] * inv_rho0, dt);
                w->sy[i] = k0;
                w->lambda[i] = k0;
            } else {
                w->sy[i] = 0.0f;
            }
            if (!isfinite(w->density[i] + w->sx[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    if (WC) LISTS(w)->wall_at = WALL_AT_X;
    if (PC) LISTS(w)->pair_ok = 1;
    return bad;
}

/* IISPH: the density rho_i^l predicted from the velocities the current pressure gives, its error
 * into sz, and the relaxed Jacobi update of the pressure; the average error (compression). */
static int stage_iisph_pressure(pbf_world *w, float dt, int xv) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const int n = w->count;
    const float inv_rho0 = 1.0f / w->k.rest_density, omega = w->def.iisph.omega;
    const float eps = 1e-6f * w->lattice_grad2;
    float *restrict WK = w->def.iisph.warm_start > 0.0f ? w->warm : NULL;
    int bad = INT_MAX;
    const int pairs = LISTS(w)->pair_ok;
    const float *P = NULL, *PV = NULL;
    if (xv) {
        P = LISTS(w)->pack;
        PV = LISTS(w)->sph_v;
    } else {
        sph_pack(w, NULL, 1, &P, &PV);
    }
#pragma omp parallel num_threads(w->nthreads) reduction(min : bad)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT, cache_b = NB_RANGES_INIT;
        float d2[2] = {0};
        const sweep sweep_i = sweep_make(n, omp_get_num_threads());
#pragma omp for schedule(monotonic : dynamic, 1)
        SWEEP_FOR(sweep_i, i) {
            float p[3] = {QX[i], QY[i], QZ[i]}, gw[3];
            sph_wall_get(w, i, WALL_AT_X, p, gw);
            const float d = rate_cached(w, i, n, pairs, P, PV, &cache, &cache_b, d2, gw);
            float rel = w->density[i] * inv_rho0 + dt * d;
            float kn = pbf_iisph_k(w->sy[i], rel, w->sx[i], omega, eps);
            if (WK) WK[i] = pbf_iisph_warm_keep(kn, w->density[i] * inv_rho0, dt);
            w->sz[i] = rel - 1.0f;
            w->lambda[i] = kn - w->sy[i];
            w->sy[i] = kn;
            if (!isfinite(w->lambda[i]) && i < bad) bad = i;
        }
        pbf_denormals_restore(fp_mode);
    }
    w->solve_error = 100.0 * mean_excess(w, w->sz, 1.0f, 0.0f);
    LISTS(w)->xv_packed = !w->hooks && P && PV;
    return bad;
}

static void cpu_refresh(pbf_world *w) {
    if (w->count == 0) return;
    stage_grid(w, 0); /* between steps: the velocity is live; x* lends the sort its scratch */
    const int n = w->count;
#pragma omp parallel num_threads(w->nthreads)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
#pragma omp for schedule(static)
        for (int i = 0; i < n; ++i) {
            float p[3] = {w->qx[i], w->qy[i], w->qz[i]}, gw[3];
            w->density[i] = density_at(w, i, pbf_world_wall_density(w, p, gw), &cache);
        }
        pbf_denormals_restore(fp_mode);
    }
}

#define STATS_CHUNK 4096

static void stage_stats(pbf_world *w) {
    const int n = w->count;
    const int chunks = (n + STATS_CHUNK - 1) / STATS_CHUNK;
    if (n == 0) {
        pbf_stats_finish(w, NULL, 0);
        return;
    }
    /* per chunk: sum err, max err, max speed^2, nonfinite, escaped */
    double *part = malloc((size_t)chunks * PBF_STATS_PARTIALS * sizeof *part);
    if (!part) { /* statistics are best effort; the simulation itself is unaffected */
        pbf_stats_finish(w, NULL, 0);
        return;
    }
    const float inv_rho0 = 1.0f / w->k.rest_density;
    const float *lo = w->lo, *hi = w->hi;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int c = 0; c < chunks; ++c) {
        int i0 = c * STATS_CHUNK, i1 = i0 + STATS_CHUNK < n ? i0 + STATS_CHUNK : n;
        double sum = 0.0, emax = 0.0, v2max = 0.0, bad = 0.0, out = 0.0;
        for (int i = i0; i < i1; ++i) {
            float e = w->density[i] * inv_rho0 - 1.0f;
            if (e > 0.0f) {
                sum += e;
                if (e > emax) emax = e;
            }
            float v2 = w->vx[i] * w->vx[i] + w->vy[i] * w->vy[i] + w->vz[i] * w->vz[i];
            int finite = isfinite(w->px[i]) && isfinite(w->py[i]) && isfinite(w->pz[i]) &&
                         isfinite(v2);
            if (!finite) bad += 1.0;
            else if (v2 > v2max) v2max = v2;
            if (!(w->px[i] >= lo[0] && w->px[i] <= hi[0] && w->py[i] >= lo[1] &&
                  w->py[i] <= hi[1] && w->pz[i] >= lo[2] && w->pz[i] <= hi[2]))
                out += 1.0;
        }
        double *pc = part + (size_t)c * PBF_STATS_PARTIALS;
        pc[0] = sum;
        pc[1] = emax;
        pc[2] = v2max;
        pc[3] = bad;
        pc[4] = out;
    }
    double acc[PBF_STATS_PARTIALS] = {0};
    for (int c = 0; c < chunks; ++c) pbf_stats_accumulate(acc, part + (size_t)c * PBF_STATS_PARTIALS);
    free(part);
    pbf_stats_finish(w, acc, 0);
}

int pbf_cpu_stage(pbf_world *w, pbf_stage_id stage, const pbf_step_ctx *c) {
    if (!sph_wall_keeps(stage)) LISTS(w)->wall_at = WALL_NONE;
    /* sz holds D_i only up to the next stage: DFSPH's measures read it, every stage drops it */
    const int rate_ok = LISTS(w)->rate_ok, xv = LISTS(w)->xv_packed;
    LISTS(w)->rate_ok = 0;
    LISTS(w)->xv_packed = 0;
    if (stage != PBF_STAGE_DIVERGENCE && stage != PBF_STAGE_DENSITY_ADV &&
        stage != PBF_STAGE_DFSPH_WARM_V && stage != PBF_STAGE_DFSPH_WARM &&
        stage != PBF_STAGE_PRESSURE_ACCEL && stage != PBF_STAGE_IISPH_PRESSURE)
        LISTS(w)->pair_ok = 0; /* only these keep the positions of the pair cache */
    switch (stage) {
    case PBF_STAGE_PREDICT: return stage_predict(w, c->dt, c->vmax);
    case PBF_STAGE_GRID: stage_grid(w, 1); return INT_MAX;
    case PBF_STAGE_LAMBDA:
        return stage_lambda(w, pbf_chebyshev_omega(w->def.pbf.chebyshev_rho, c->iteration),
                            c->iteration);
    case PBF_STAGE_DELTA_P: return stage_delta_p(w, c->dt);
    case PBF_STAGE_COLLIDE: return stage_collide(w);
    case PBF_STAGE_VELOCITY: return stage_velocity(w, c->dt, c->vmax);
    case PBF_STAGE_VORTICITY_XSPH: return stage_vorticity_xsph(w, c->dt, c->vmax);
    case PBF_STAGE_GRAVITY: return stage_gravity(w, c->dt, c->vmax);
    case PBF_STAGE_WCSPH_PRESSURE: return stage_wcsph_pressure(w, c->dt);
    case PBF_STAGE_DFSPH_FACTOR: return stage_dfsph_factor(w);
    case PBF_STAGE_DIVERGENCE:
        return stage_dfsph_source(w, c->dt, 1, 0, c->iteration, rate_ok, xv);
    case PBF_STAGE_DENSITY_ADV:
        return stage_dfsph_source(w, c->dt, 0, 0, c->iteration, rate_ok, xv);
    case PBF_STAGE_DFSPH_WARM_V: return stage_dfsph_source(w, c->dt, 1, 1, 0, rate_ok, xv);
    case PBF_STAGE_DFSPH_WARM: return stage_dfsph_source(w, c->dt, 0, 1, 0, rate_ok, xv);
    case PBF_STAGE_PCISPH_INIT: return stage_pcisph_init(w, c->dt);
    case PBF_STAGE_PCISPH_PRESSURE: return stage_pcisph_pressure(w, c->dt);
    case PBF_STAGE_IISPH_DIAGONAL: return stage_iisph_diagonal(w, c->dt);
    case PBF_STAGE_IISPH_PRESSURE: return stage_iisph_pressure(w, c->dt, xv);
    case PBF_STAGE_PRESSURE_ACCEL: return stage_pressure_accel(w, c->dt, xv);
    case PBF_STAGE_ADVECT: return stage_advect(w, c->dt);
    case PBF_STAGE_STATS: stage_stats(w); return INT_MAX;
    case PBF_STAGE_COUNT: break;
    }
    return INT_MAX;
}

/* Host memory is the CPU's device memory: nothing to allocate, copy or wait for. */
static pbf_status cpu_nothing(pbf_world *w, pbf_error *err) {
    (void)w;
    (void)err;
    return PBF_OK;
}
static pbf_status cpu_reserve(pbf_world *w, int capacity, pbf_error *err) {
    (void)capacity;
    return cpu_nothing(w, err);
}
static void cpu_no_op(pbf_world *w) { (void)w; }
static void cpu_release(pbf_world *w) {
    if (w->dev) {
        pbf_big_free(LISTS(w)->nbr);
        free(LISTS(w)->block_end);
        free(LISTS(w)->block_start);
        free(LISTS(w)->start);
        pbf_big_free(LISTS(w)->pack);
        free(LISTS(w)->sph_v);
        free(LISTS(w)->sph_wall);
        free(LISTS(w)->pair);
        free(LISTS(w)->pair_off);
    }
    free(w->dev);
    w->dev = NULL;
}

pbf_status pbf_cpu_open(pbf_world *w, pbf_error *err) {
    w->dev = calloc(1, sizeof(cpu_lists));
    if (!w->dev) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "cpu backend: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    w->backend = &pbf_backend_cpu;
    return PBF_OK;
}

/* The neighbour lists, their block ends and the packed neighbour copy. */
static size_t cpu_list_bytes(const pbf_world *w) {
    if (!w->dev) return 0;
    const cpu_lists *L = LISTS(w);
    return CODE_BYTES(L->cap) + LIST_PADDING + L->block_cap * 2 * sizeof(uint32_t) +
           L->start_cap * sizeof(uint16_t) +
           L->pack_cap * 4 * sizeof(float) + L->sph_cap * 2 * 4 * sizeof(float) +
           L->pair_cap * sizeof(float) + L->pair_off_cap * sizeof(uint32_t);
}

const pbf_backend_ops pbf_backend_cpu = {
    .name = "cpu",
    .host_keep = 0,
    .reserve = cpu_reserve,
    .upload = cpu_nothing,
    .download = cpu_nothing,
    .boxes_changed = cpu_no_op,
    .run_stage = pbf_cpu_stage,
    .refresh = cpu_refresh,
    .sync = cpu_no_op,
    .finish_step = NULL,
    .release = cpu_release,
    .list_bytes = cpu_list_bytes,
};
