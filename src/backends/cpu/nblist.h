/*
 * The CPU backend's neighbour lists and packed neighbour copy: its state (cpu_lists, the
 * backend's w->dev), the lists' codec, the per-cell ranges cache, the neighbour loops
 * (FOR_NEIGHBOURS_R, FOR_PAIRS and, with AVX-512, their two-particle forms) and the packed loads.
 * The loops and loads are static inline (macros and PBF_SIMD_INLINE functions) so that every
 * stage's neighbour loop inlines them; nblist.c builds the lists and the packed copies.
 */
#ifndef PBF_CPU_NBLIST_H
#define PBF_CPU_NBLIST_H

#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/simd_kernels.h"
#include "internal.h"

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
    float *pack;    /* x*, y*, z*, lambda of every particle, 16 bytes each (pbf_cpu_pack_xyzl) */
    size_t pack_cap;
    int collided;     /* delta p has applied itself and the collisions (see pbf_pbf_delta_p_cpu) */
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
    int rate_ok;      /* DFSPH: sz holds D_i of the current velocities (see dfsph_source) */
    int xv_packed;    /* DFSPH: pack holds x* and sph_v the velocities (see pbf_cpu_sph_pack_k) */
    float warm_dt[2]; /* DFSPH's warm start: the substep whose sums warm, warm_v hold (density,
                         divergence; see dfsph_source) */
    int rate_prev;    /* rate_ok and xv_packed as the stage before left them: pbf_cpu_stage */
    int xv_prev;      /* moves them here and clears them before each stage */
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

/* FOR_NEIGHBOURS_R over the lists with DFSPH's per-pair cache (see pbf_cpu_pair_reserve): BODY also sees
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
int pbf_cpu_pack_reserve(pbf_world *w);
/* pack[i] = (x*_i, y*_i, z*_i, lambda_i) (with_lambda) or (x*_i, y*_i, z*_i, unchanged). */
void pbf_cpu_pack_xyzl(pbf_world *w, int with_lambda);
/* Room for the SPH passes' packed velocities (sph_v) and wall cache (sph_wall), see
 * src/solvers/sph/sph_cpu.h: 0 where there is none. */
int pbf_cpu_sph_reserve(pbf_world *w);
/* The step's neighbour lists from x* (the grid built on it); skip: particles given an empty list
 * (the ghosts of a distributed run), or NULL. Sets LISTS(w)->ok, 0 when the passes must scan the
 * grid ranges instead. */
void pbf_cpu_build_lists(pbf_world *w, const unsigned char *skip);

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

#endif /* PBF_CPU_NBLIST_H */
