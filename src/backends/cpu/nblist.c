/*
 * The CPU backend's neighbour lists (see the codec in nblist.h): the scan of the grid ranges into
 * codes, block by block, and the packed copies' room.
 */
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/nblist.h"
#include "backends/cpu/sweep.h"

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

void pbf_cpu_build_lists(pbf_world *w, const unsigned char *skip) {
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

/* The packed neighbour copy (see nblist.h): room for count particles. */
int pbf_cpu_pack_reserve(pbf_world *w) {
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
void pbf_cpu_pack_xyzl(pbf_world *w, int with_lambda) {
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

int pbf_cpu_sph_reserve(pbf_world *w) {
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
