/*
 * Surface reconstruction (pbf/surface.h): particles -> sparse block grid -> field -> marching
 * cubes -> optional Taubin smoothing.
 *
 * Data flow of pbf_surface_reconstruct:
 *   bin        block coordinates of every particle (blocks of BS^3 grid points); the occupied
 *              blocks go into a hash (key = packed block coordinates), sorted by key; particles
 *              are counting-sorted by block (stable: input order inside a block)
 *   anisotropy (option) per particle, from the neighbours within 2R: smoothed position and the
 *              kernel's ellipsoid (Yu & Turk 2010); then the particles are binned again at their
 *              smoothed positions
 *   dilate     every block within K blocks of an occupied one (K: the kernel's reach plus one
 *              cell) is added: outside them the field is exactly 0
 *   field      per block (one thread each), particle by particle in the fixed order of the 27..
 *              neighbour blocks, rows of BS points along x at once (vectorised)
 *   march      per block: the (BS+3)^3 values around it (neighbours' faces copied in), which
 *              blocks hold surface; then count the cut edges each block owns (edges leaving its
 *              points in +x, +y, +z) and its triangles, prefix sums over blocks in key order,
 *              and write vertices (normals from central differences) and triangles
 *   smooth     (option) Taubin lambda|mu steps over the vertex 1-rings (CSR built in triangle
 *              order), Jacobi style: each vertex reads the previous positions
 * Every floating-point sum runs in an order fixed by the input and the block keys, never by
 * threads: the mesh is bit-identical for any thread count.
 */
#include "pbf/surface.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "surface_internal.h"

#define BS 8                    /* grid points per block edge */
#define BS3 (BS * BS * BS)
#define PS (BS + 3)             /* padded block: points -1 .. BS+1 */
#define PS3 (PS * PS * PS)
#define KEY_BITS 21
#define KEY_OFFSET (1 << (KEY_BITS - 1))
#define COORD_LIMIT (KEY_OFFSET - 8)
#define NO_VERTEX 0xFFFFu
#define PAR_MIN 200000 /* cheap per-item loops run on one thread below this many items */

#define ANISO_LAMBDA 0.5f  /* position smoothing weight over R (the paper's 0.9 over 2R shrank a block by 28 %) */
#define ANISO_KR 4.0f       /* largest eigenvalue ratio */
#define ANISO_MIN_NEIGH 25  /* fewer neighbours: isotropic kernel */
#define TAUBIN_LAMBDA 0.5f
#define TAUBIN_MU -0.53f

/* One row of BS = 8 grid points (GCC/Clang vector extension; lowered to two SSE halves or
 * scalars where AVX is missing, each lane computing exactly the scalar formula). */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* row[0..7] += coef (1 - q2)^3 where q2 < 1 (a macro: vectors never cross a call, so the
 * code is the same with and without AVX) */
#define V8_ADD_POLY6(row, q2expr)                                                                  \
    do {                                                                                           \
        v8f r_, t_ = 1.0f - (q2expr);                                                              \
        memcpy(&r_, (row), sizeof r_);                                                             \
        t_ = (v8f)((v8i)t_ & (t_ > 0.0f));                                                         \
        r_ += coef * (t_ * t_ * t_);                                                               \
        memcpy((row), &r_, sizeof r_);                                                             \
    } while (0)

#define F(field) offsetof(pbf_surface_params, field)
/* clang-format off */
static const pbf_param_info surface_params[] = {
    {"particle_radius", PBF_PARAM_FLOAT, "m", 0.01, {0}, 0, 10, 1, NULL, F(particle_radius),
     "particle radius r of the simulation (particles 2r apart at rest)"},
    {"smoothing_length", PBF_PARAM_FLOAT, "r", 2.0, {0}, 0.5, 20, 0, NULL, F(smoothing_length),
     "kernel support R = 2 x smoothing_length x r (2: R = 4r, the solver's default h)"},
    {"iso_level", PBF_PARAM_FLOAT, "1", 0.5, {0}, 0, 2, 1, NULL, F(iso_level),
     "surface where the density relative to rest density equals this"},
    {"cube_size", PBF_PARAM_FLOAT, "r", 1.0, {0}, 0.1, 20, 0, NULL, F(cube_size),
     "marching-cubes cell edge in particle radii"},
    {"anisotropic", PBF_PARAM_INT, "1", 0, {0}, 0, 1, 0, NULL, F(anisotropic),
     "1: anisotropic kernels with position smoothing (Yu & Turk 2010)"},
    {"smoothing_iterations", PBF_PARAM_INT, "1", 0, {0}, 0, 1000, 0, NULL, F(smoothing_iterations),
     "Taubin lambda|mu mesh smoothing steps (volume-keeping); 0 = none"},
    {"threads", PBF_PARAM_INT, "1", 0, {0}, 0, 1024, 0, NULL, F(threads),
     "OpenMP threads; 0 = the OpenMP default (the mesh does not depend on it)"},
};
/* clang-format on */
#undef F

const pbf_param_info *pbf_surface_param_table(size_t *count) {
    if (count) *count = sizeof surface_params / sizeof surface_params[0];
    return surface_params;
}

pbf_surface_params pbf_surface_default_params(void) {
    pbf_surface_params p;
    memset(&p, 0, sizeof p);
    size_t n;
    const pbf_param_info *t = pbf_surface_param_table(&n);
    for (size_t i = 0; i < n; ++i) pbf_param_set_default(&t[i], &p);
    return p;
}

pbf_status pbf_surface_params_validate(const pbf_surface_params *p, pbf_error *err) {
    if (!p) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "surface_params: NULL pointer");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    size_t n;
    const pbf_param_info *t = pbf_surface_param_table(&n);
    char where[96];
    for (size_t i = 0; i < n; ++i) {
        snprintf(where, sizeof where, "surface_params.%s", t[i].name);
        pbf_status s = pbf_param_check_number(&t[i], pbf_param_get_number(&t[i], p, 0), where, err);
        if (s != PBF_OK) return s;
    }
    /* the kernel must reach at most a few blocks: R / cell <= 4 BS - 1 */
    double ratio = 2.0 * (double)p->smoothing_length / (double)p->cube_size;
    if (ratio > 4.0 * BS - 1.0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "surface_params.cube_size = %g: too small for smoothing_length = %g (the "
                      "kernel support would span %.0f cells; at most %d)",
                      (double)p->cube_size, (double)p->smoothing_length, ratio, 4 * BS - 1);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

/* ---- growable buffers ----------------------------------------------------------------------- */

typedef struct buf {
    void *p;
    size_t bytes;
} buf;

static int reserve(buf *b, size_t count, size_t elem) {
    size_t need = count * elem;
    if (count && need / count != elem) return 0;
    if (need <= b->bytes) return 1;
    size_t cap = b->bytes ? b->bytes : 4096;
    while (cap < need) cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    void *q = realloc(b->p, cap);
    if (!q) return 0;
    b->p = q;
    b->bytes = cap;
    return 1;
}

/* ---- the surface object ------------------------------------------------------------------------ */

enum {
    B_KEY, B_PBLOCK, B_ORDER, B_SX, B_SY, B_SZ, B_EXT, B_MAT, B_TX, B_TY, B_TZ, B_TEXT, B_TMAT,
    B_HKEY, B_HVAL, B_BKEY, B_BSTART, B_FIELD, B_SURF, B_SLIST, B_PAD, B_ETAB, B_VBASE, B_TBASE,
    B_POS, B_NRM, B_TRI, B_ADJS, B_ADJ, B_TMP, B_PBOX, B_MINMAX, B_CASE, B_COUNT
};

struct pbf_surface {
    pbf_surface_params p;
    pbf_mc_table mc;
    float r, R, c, iso, coef; /* coef = V A: phi = coef sum (1 - d^2/R^2)^3 */
    int threads;
    buf b[B_COUNT];
    size_t hcap;      /* hash slots (power of 2) */
    size_t hcount;
    int nblocks;      /* blocks in the sorted list */
    int nsurf;
    pbf_surface_info info;
};

#define BUF(s, id, type) ((type *)(s)->b[id].p)

static double now_ms(void) { return 1000.0 * omp_get_wtime(); }

pbf_status pbf_surface_create(const pbf_surface_params *params, pbf_surface **out,
                              pbf_error *err) {
    if (!out) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_surface_create: out is NULL");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    pbf_status st = pbf_surface_params_validate(params, err);
    if (st != PBF_OK) return st;
    pbf_surface *s = calloc(1, sizeof *s);
    if (!s) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "pbf_surface_create: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    s->p = *params;
    if (pbf_mc_table_build(&s->mc) != 0) {
        free(s);
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_surface_create: case table inconsistent");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    s->r = params->particle_radius;
    s->R = 2.0f * params->smoothing_length * s->r;
    s->c = params->cube_size * s->r;
    s->iso = params->iso_level;
    /* V A: a cubic lattice at spacing 2r sums to phi = 1 */
    double d = 2.0 * (double)s->r, R = (double)s->R, sum = 0.0;
    int K = (int)ceil(R / d);
    for (int i = -K; i <= K; ++i)
        for (int j = -K; j <= K; ++j)
            for (int k = -K; k <= K; ++k) {
                double q = (double)(i * i + j * j + k * k) * d * d / (R * R);
                if (q < 1.0) sum += (1.0 - q) * (1.0 - q) * (1.0 - q);
            }
    s->coef = (float)(1.0 / sum);
    s->threads = params->threads > 0 ? params->threads : omp_get_max_threads();
    if (s->threads < 1) s->threads = 1;
    *out = s;
    return PBF_OK;
}

void pbf_surface_destroy(pbf_surface *s) {
    if (!s) return;
    for (int i = 0; i < B_COUNT; ++i) free(s->b[i].p);
    free(s);
}

pbf_surface_info pbf_surface_last_info(const pbf_surface *s) {
    pbf_surface_info z;
    memset(&z, 0, sizeof z);
    return s ? s->info : z;
}

/* ---- block keys and the hash ----------------------------------------------------------------- */

static uint64_t pack_key(int bx, int by, int bz) {
    return (uint64_t)(uint32_t)(bx + KEY_OFFSET) | (uint64_t)(uint32_t)(by + KEY_OFFSET) << KEY_BITS |
           (uint64_t)(uint32_t)(bz + KEY_OFFSET) << (2 * KEY_BITS);
}

static void unpack_key(uint64_t k, int *bx, int *by, int *bz) {
    const uint64_t m = (1u << KEY_BITS) - 1;
    *bx = (int)(k & m) - KEY_OFFSET;
    *by = (int)((k >> KEY_BITS) & m) - KEY_OFFSET;
    *bz = (int)((k >> (2 * KEY_BITS)) & m) - KEY_OFFSET;
}

#define EMPTY_KEY UINT64_MAX

static size_t hash_slot(uint64_t k, size_t mask) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static int hash_reset(pbf_surface *s, size_t expect) {
    size_t cap = 1024;
    while (cap < 2 * expect + 16) cap *= 2;
    if (!reserve(&s->b[B_HKEY], cap, sizeof(uint64_t)) || !reserve(&s->b[B_HVAL], cap, sizeof(int32_t)))
        return 0;
    s->hcap = cap;
    s->hcount = 0;
    uint64_t *hk = BUF(s, B_HKEY, uint64_t);
    for (size_t i = 0; i < cap; ++i) hk[i] = EMPTY_KEY;
    return 1;
}

/* Index of key, or -1. */
static int32_t hash_find(const pbf_surface *s, uint64_t key) {
    const uint64_t *hk = BUF(s, B_HKEY, uint64_t);
    const int32_t *hv = BUF(s, B_HVAL, int32_t);
    size_t mask = s->hcap - 1;
    for (size_t i = hash_slot(key, mask);; i = (i + 1) & mask) {
        if (hk[i] == key) return hv[i];
        if (hk[i] == EMPTY_KEY) return -1;
    }
}

static int hash_insert(pbf_surface *s, uint64_t key, int32_t value);

static int hash_grow(pbf_surface *s) {
    size_t old = s->hcap;
    uint64_t *ok = malloc(old * sizeof *ok);
    int32_t *ov = malloc(old * sizeof *ov);
    if (!ok || !ov) {
        free(ok);
        free(ov);
        return 0;
    }
    memcpy(ok, s->b[B_HKEY].p, old * sizeof *ok);
    memcpy(ov, s->b[B_HVAL].p, old * sizeof *ov);
    size_t n = s->hcount;
    int ok_ = hash_reset(s, 2 * n);
    for (size_t i = 0; ok_ && i < old; ++i)
        if (ok[i] != EMPTY_KEY) ok_ = hash_insert(s, ok[i], ov[i]) >= 0;
    free(ok);
    free(ov);
    return ok_;
}

/* Inserts key -> value if absent. Returns 1 inserted, 0 present, -1 out of memory. */
static int hash_insert(pbf_surface *s, uint64_t key, int32_t value) {
    if (2 * (s->hcount + 1) > s->hcap && !hash_grow(s)) return -1;
    uint64_t *hk = BUF(s, B_HKEY, uint64_t);
    int32_t *hv = BUF(s, B_HVAL, int32_t);
    size_t mask = s->hcap - 1;
    for (size_t i = hash_slot(key, mask);; i = (i + 1) & mask) {
        if (hk[i] == key) return 0;
        if (hk[i] == EMPTY_KEY) {
            hk[i] = key;
            hv[i] = value;
            s->hcount++;
            return 1;
        }
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts the keys in the hash into B_BKEY and sets each slot's value to its sorted index. */
static int hash_sort(pbf_surface *s) {
    size_t n = s->hcount;
    if (!reserve(&s->b[B_BKEY], n + 1, sizeof(uint64_t))) return 0;
    uint64_t *bk = BUF(s, B_BKEY, uint64_t);
    const uint64_t *hk = BUF(s, B_HKEY, uint64_t);
    size_t m = 0;
    for (size_t i = 0; i < s->hcap; ++i)
        if (hk[i] != EMPTY_KEY) bk[m++] = hk[i];
    qsort(bk, n, sizeof *bk, cmp_u64);
    int32_t *hv = BUF(s, B_HVAL, int32_t);
    size_t mask = s->hcap - 1;
    for (size_t b = 0; b < n; ++b)
        for (size_t i = hash_slot(bk[b], mask);; i = (i + 1) & mask)
            if (hk[i] == bk[b]) {
                hv[i] = (int32_t)b;
                break;
            }
    s->nblocks = (int)n;
    return 1;
}

/* ---- binning ----------------------------------------------------------------------------------- */

static pbf_status oom(pbf_error *err, const char *what) {
    pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "surface reconstruction: out of memory (%s)", what);
    return PBF_ERR_OUT_OF_MEMORY;
}

/* Bins the n particles (px, py, pz; per-particle extra data ext (3 floats) and mat (6 floats)
 * when given) into occupied blocks: fills the hash and B_BKEY (sorted), B_BSTART (nblocks + 1),
 * and the block-sorted copies B_SX/SY/SZ (+ B_EXT, B_MAT) and B_ORDER (input index). */
static pbf_status bin_particles(pbf_surface *s, const float *px, const float *py, const float *pz,
                                const float *ext, const float *mat, int n, pbf_error *err) {
    if (!reserve(&s->b[B_KEY], (size_t)n, sizeof(uint64_t)) ||
        !reserve(&s->b[B_PBLOCK], (size_t)n, sizeof(int32_t)))
        return oom(err, "particle keys");
    uint64_t *key = BUF(s, B_KEY, uint64_t);
    const float inv = 1.0f / (BS * s->c);
    int bad = -1;
#pragma omp parallel for num_threads(s->threads) schedule(static) reduction(max : bad) if (n > PAR_MIN)
    for (int i = 0; i < n; ++i) {
        float fx = floorf(px[i] * inv), fy = floorf(py[i] * inv), fz = floorf(pz[i] * inv);
        if (!(fabsf(fx) < COORD_LIMIT && fabsf(fy) < COORD_LIMIT && fabsf(fz) < COORD_LIMIT)) {
            bad = bad > i ? bad : i;
            key[i] = 0;
            continue;
        }
        key[i] = pack_key((int)fx, (int)fy, (int)fz);
    }
    if (bad >= 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "surface reconstruction: particle %d at (%g, %g, %g) is not finite or too far "
                      "from the origin (more than %g m)",
                      bad, (double)px[bad], (double)py[bad], (double)pz[bad],
                      (double)COORD_LIMIT * BS * (double)s->c);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (!hash_reset(s, (size_t)(n / 16 + 64))) return oom(err, "block hash");
    uint64_t last = EMPTY_KEY;
    for (int i = 0; i < n; ++i) {
        if (key[i] == last) continue;
        last = key[i];
        if (hash_insert(s, key[i], 0) < 0) return oom(err, "block hash");
    }
    if (!hash_sort(s)) return oom(err, "block list");
    int nb = s->nblocks;
    if (!reserve(&s->b[B_BSTART], (size_t)nb + 1, sizeof(int32_t))) return oom(err, "block list");
    int32_t *start = BUF(s, B_BSTART, int32_t), *pblock = BUF(s, B_PBLOCK, int32_t);
#pragma omp parallel for num_threads(s->threads) schedule(static) if (n > PAR_MIN)
    for (int i = 0; i < n; ++i) pblock[i] = hash_find(s, key[i]);
    memset(start, 0, ((size_t)nb + 1) * sizeof *start);
    for (int i = 0; i < n; ++i) start[pblock[i] + 1]++;
    for (int b = 0; b < nb; ++b) start[b + 1] += start[b];
    /* fill (stable): B_KEY is reused as the write cursor per block */
    if (!reserve(&s->b[B_ORDER], (size_t)n, sizeof(int32_t)) ||
        !reserve(&s->b[B_TX], (size_t)n, sizeof(float)) ||
        !reserve(&s->b[B_TY], (size_t)n, sizeof(float)) ||
        !reserve(&s->b[B_TZ], (size_t)n, sizeof(float)) ||
        (ext && !reserve(&s->b[B_TEXT], 3 * (size_t)n, sizeof(float))) ||
        (mat && !reserve(&s->b[B_TMAT], 6 * (size_t)n, sizeof(float))))
        return oom(err, "sorted particles");
    int32_t *order = BUF(s, B_ORDER, int32_t);
    int32_t *cursor = (int32_t *)key; /* n int32 fit in n uint64 */
    memcpy(cursor, start, (size_t)nb * sizeof *cursor);
    for (int i = 0; i < n; ++i) order[cursor[pblock[i]]++] = i;
    float *tx = BUF(s, B_TX, float), *ty = BUF(s, B_TY, float), *tz = BUF(s, B_TZ, float);
    float *te = BUF(s, B_TEXT, float), *tm = BUF(s, B_TMAT, float);
#pragma omp parallel for num_threads(s->threads) schedule(static) if (n > PAR_MIN)
    for (int k = 0; k < n; ++k) {
        int i = order[k];
        tx[k] = px[i];
        ty[k] = py[i];
        tz[k] = pz[i];
        if (ext)
            for (int c = 0; c < 3; ++c) te[3 * k + c] = ext[3 * i + c];
        if (mat)
            for (int c = 0; c < 6; ++c) tm[6 * k + c] = mat[6 * i + c];
    }
    /* the sorted copies become the working arrays */
    buf t;
    t = s->b[B_SX]; s->b[B_SX] = s->b[B_TX]; s->b[B_TX] = t;
    t = s->b[B_SY]; s->b[B_SY] = s->b[B_TY]; s->b[B_TY] = t;
    t = s->b[B_SZ]; s->b[B_SZ] = s->b[B_TZ]; s->b[B_TZ] = t;
    if (ext) { t = s->b[B_EXT]; s->b[B_EXT] = s->b[B_TEXT]; s->b[B_TEXT] = t; }
    if (mat) { t = s->b[B_MAT]; s->b[B_MAT] = s->b[B_TMAT]; s->b[B_TMAT] = t; }
    return PBF_OK;
}

/* Adds every block within K of an occupied one; particles keep their order (the new sorted list
 * is a superset of the old), B_BSTART is rebuilt for it. */
static pbf_status dilate(pbf_surface *s, int K, pbf_error *err) {
    int nold = s->nblocks;
    uint64_t *old = malloc(((size_t)nold + 1) * sizeof *old);
    int32_t *ostart = malloc(((size_t)nold + 1) * sizeof *ostart);
    if (!old || !ostart) {
        free(old);
        free(ostart);
        return oom(err, "block list");
    }
    memcpy(old, s->b[B_BKEY].p, (size_t)nold * sizeof *old);
    memcpy(ostart, s->b[B_BSTART].p, ((size_t)nold + 1) * sizeof *ostart);
    pbf_status st = PBF_OK;
    for (int b = 0; b < nold && st == PBF_OK; ++b) {
        int bx, by, bz;
        unpack_key(old[b], &bx, &by, &bz);
        for (int dz = -K; dz <= K && st == PBF_OK; ++dz)
            for (int dy = -K; dy <= K && st == PBF_OK; ++dy)
                for (int dx = -K; dx <= K; ++dx)
                    if (hash_insert(s, pack_key(bx + dx, by + dy, bz + dz), 0) < 0) {
                        st = oom(err, "block hash");
                        break;
                    }
    }
    if (st == PBF_OK && !hash_sort(s)) st = oom(err, "block list");
    if (st == PBF_OK && !reserve(&s->b[B_BSTART], (size_t)s->nblocks + 1, sizeof(int32_t)))
        st = oom(err, "block list");
    if (st == PBF_OK) {
        const uint64_t *bk = BUF(s, B_BKEY, uint64_t);
        int32_t *start = BUF(s, B_BSTART, int32_t);
        int j = 0;
        for (int b = 0; b < s->nblocks; ++b) {
            start[b] = ostart[j];
            if (j < nold && old[j] == bk[b]) ++j;
        }
        start[s->nblocks] = ostart[nold];
    }
    free(old);
    free(ostart);
    return st;
}

/* ---- anisotropy (Yu & Turk 2010) --------------------------------------------------------------- */

/* Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations: a = V diag(w) V^T. */
static void eigen_sym3(double a_in[3][3], double w[3], double v[3][3]) {
    double a[3][3];
    memcpy(a, a_in, sizeof a);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) v[i][j] = i == j;
    for (int sweep = 0; sweep < 12; ++sweep) {
        double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        double diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
        if (off <= 1e-30 * diag || off == 0.0) break;
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (a[p][q] == 0.0) continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), sn = t * c;
                for (int k = 0; k < 3; ++k) { /* a = J^T a J */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - sn * akq;
                    a[k][q] = sn * akp + c * akq;
                }
                for (int k = 0; k < 3; ++k) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - sn * aqk;
                    a[q][k] = sn * apk + c * aqk;
                }
                for (int k = 0; k < 3; ++k) {
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - sn * vkq;
                    v[k][q] = sn * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < 3; ++i) w[i] = a[i][i];
}

/* Per sorted particle: smoothed position (into B_TX/TY/TZ), the matrix M (6 floats xx yy zz xy
 * xz yz, into B_TMAT) with q^2 = |M d|^2 = d^T M^2 d... stored as the symmetric Q = M^T M so that
 * q^2 = d^T Q d, and the half-widths of the support's bounding box (B_TEXT). Returns the largest
 * half-width. Input: the binned raw positions (B_SX..). */
static pbf_status anisotropy(pbf_surface *s, int n, float *max_ext, pbf_error *err) {
    if (!reserve(&s->b[B_TX], (size_t)n, sizeof(float)) ||
        !reserve(&s->b[B_TY], (size_t)n, sizeof(float)) ||
        !reserve(&s->b[B_TZ], (size_t)n, sizeof(float)) ||
        !reserve(&s->b[B_TEXT], 3 * (size_t)n, sizeof(float)) ||
        !reserve(&s->b[B_TMAT], 6 * (size_t)n, sizeof(float)))
        return oom(err, "anisotropy");
    const float *sx = BUF(s, B_SX, float), *sy = BUF(s, B_SY, float), *sz = BUF(s, B_SZ, float);
    float *ox = BUF(s, B_TX, float), *oy = BUF(s, B_TY, float), *oz = BUF(s, B_TZ, float);
    float *oe = BUF(s, B_TEXT, float), *om = BUF(s, B_TMAT, float);
    const int32_t *start = BUF(s, B_BSTART, int32_t);
    const uint64_t *bk = BUF(s, B_BKEY, uint64_t);
    const float Ra = 2.0f * s->R, Ra2 = Ra * Ra, R = s->R, R2 = R * R;
    const int K = (int)ceilf(Ra / (BS * s->c));
    float mx = R;
    if (K > 2) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "surface_params.cube_size = %g: too small for anisotropic kernels with "
                      "smoothing_length = %g (at most %g)", (double)s->p.cube_size,
                      (double)s->p.smoothing_length, (double)(s->p.smoothing_length * BS / 2.0f));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    const float side = BS * s->c;
#pragma omp parallel for num_threads(s->threads) schedule(monotonic : dynamic, 1) reduction(max : mx)
    for (int b = 0; b < s->nblocks; ++b) {
        int bx, by, bz;
        unpack_key(bk[b], &bx, &by, &bz);
        int nbs[125], nn = 0;
        for (int dz = -K; dz <= K; ++dz)
            for (int dy = -K; dy <= K; ++dy)
                for (int dx = -K; dx <= K; ++dx) {
                    int nb = hash_find(s, pack_key(bx + dx, by + dy, bz + dz));
                    if (nb >= 0) nbs[nn++] = nb;
                }
        for (int i = start[b]; i < start[b + 1]; ++i) {
            double sw = 0, m[3] = {0, 0, 0}, cv[6] = {0, 0, 0, 0, 0, 0};
            double ssw = 0, sm[3] = {0, 0, 0}; /* position smoothing within R */
            int cnt = 0;
            for (int q = 0; q < nn; ++q) {
                        const int nb = nbs[q];
                        int cx, cy, cz;
                        unpack_key(bk[nb], &cx, &cy, &cz);
                        /* distance from the particle to the neighbour block's box */
                        float gx = fmaxf(fmaxf((float)cx * side - sx[i], sx[i] - (float)(cx + 1) * side), 0.0f);
                        float gy = fmaxf(fmaxf((float)cy * side - sy[i], sy[i] - (float)(cy + 1) * side), 0.0f);
                        float gz = fmaxf(fmaxf((float)cz * side - sz[i], sz[i] - (float)(cz + 1) * side), 0.0f);
                        if (gx * gx + gy * gy + gz * gz >= Ra2) continue;
                        for (int j = start[nb]; j < start[nb + 1]; ++j) {
                            float ddx = sx[j] - sx[i], ddy = sy[j] - sy[i], ddz = sz[j] - sz[i];
                            float d2 = ddx * ddx + ddy * ddy + ddz * ddz;
                            if (d2 >= Ra2) continue;
                            float q = sqrtf(d2) / Ra;
                            double w = 1.0 - (double)(q * q * q);
                            sw += w;
                            m[0] += w * ddx;
                            m[1] += w * ddy;
                            m[2] += w * ddz;
                            cv[0] += w * ddx * ddx;
                            cv[1] += w * ddy * ddy;
                            cv[2] += w * ddz * ddz;
                            cv[3] += w * ddx * ddy;
                            cv[4] += w * ddx * ddz;
                            cv[5] += w * ddy * ddz;
                            ++cnt;
                            if (d2 < R2) {
                                float qs = sqrtf(d2) / R;
                                double ws = 1.0 - (double)(qs * qs * qs);
                                ssw += ws;
                                sm[0] += ws * ddx;
                                sm[1] += ws * ddy;
                                sm[2] += ws * ddz;
                            }
                        }
                    }
            /* sw > 0: the particle itself counts (w = 1) */
            for (int c = 0; c < 3; ++c) m[c] /= sw;
            ox[i] = sx[i] + ANISO_LAMBDA * (float)(sm[0] / ssw);
            oy[i] = sy[i] + ANISO_LAMBDA * (float)(sm[1] / ssw);
            oz[i] = sz[i] + ANISO_LAMBDA * (float)(sm[2] / ssw);
            double sc[3] = {1, 1, 1}, V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
            if (cnt >= ANISO_MIN_NEIGH) {
                double C[3][3];
                C[0][0] = cv[0] / sw - m[0] * m[0];
                C[1][1] = cv[1] / sw - m[1] * m[1];
                C[2][2] = cv[2] / sw - m[2] * m[2];
                C[0][1] = C[1][0] = cv[3] / sw - m[0] * m[1];
                C[0][2] = C[2][0] = cv[4] / sw - m[0] * m[2];
                C[1][2] = C[2][1] = cv[5] / sw - m[1] * m[2];
                double w[3];
                eigen_sym3(C, w, V);
                double wmax = fmax(w[0], fmax(w[1], w[2]));
                if (wmax > 0) {
                    for (int c = 0; c < 3; ++c) sc[c] = fmax(w[c], wmax / ANISO_KR);
                    double g = cbrt(sc[0] * sc[1] * sc[2]);
                    for (int c = 0; c < 3; ++c) sc[c] /= g;
                } else {
                    sc[0] = sc[1] = sc[2] = 1;
                }
            }
            /* Q = V diag(1 / (R s_k)^2) V^T; half-width along axis a = R sqrt(sum_k (V_ak s_k)^2) */
            double Q[3][3];
            for (int a = 0; a < 3; ++a)
                for (int bb = 0; bb < 3; ++bb) {
                    double q = 0;
                    for (int k = 0; k < 3; ++k) q += V[a][k] * V[bb][k] / (sc[k] * sc[k]);
                    Q[a][bb] = q / ((double)R * (double)R);
                }
            om[6 * i + 0] = (float)Q[0][0];
            om[6 * i + 1] = (float)Q[1][1];
            om[6 * i + 2] = (float)Q[2][2];
            om[6 * i + 3] = (float)Q[0][1];
            om[6 * i + 4] = (float)Q[0][2];
            om[6 * i + 5] = (float)Q[1][2];
            for (int a = 0; a < 3; ++a) {
                double e2 = 0;
                for (int k = 0; k < 3; ++k) e2 += V[a][k] * V[a][k] * sc[k] * sc[k];
                float e = (float)((double)R * sqrt(e2)) * 1.0001f;
                oe[3 * i + a] = e;
                if (e > mx) mx = e;
            }
        }
    }
    *max_ext = mx;
    return PBF_OK;
}

/* ---- the field --------------------------------------------------------------------------------- */

static void field_block(const pbf_surface *s, int b, int K, int aniso, float *val) {
    const uint64_t *bk = BUF(s, B_BKEY, uint64_t);
    const int32_t *start = BUF(s, B_BSTART, int32_t);
    const float *sx = BUF(s, B_SX, float), *sy = BUF(s, B_SY, float), *sz = BUF(s, B_SZ, float);
    const float *mat = BUF(s, B_MAT, float);
    const int32_t *pbox = BUF(s, B_PBOX, int32_t);
    const float c = s->c, R = s->R, R2 = R * R, invR2 = 1.0f / R2, coef = s->coef;
    int bx, by, bz;
    unpack_key(bk[b], &bx, &by, &bz);
    const int gx = bx * BS, gy = by * BS, gz = bz * BS;
    float xs[BS], ys[BS], zs[BS];
    for (int i = 0; i < BS; ++i) {
        xs[i] = (float)(gx + i) * c;
        ys[i] = (float)(gy + i) * c;
        zs[i] = (float)(gz + i) * c;
    }
    v8f xv;
    memcpy(&xv, xs, sizeof xv);
    (void)c;
    memset(val, 0, BS3 * sizeof *val);
    for (int dz = -K; dz <= K; ++dz)
        for (int dy = -K; dy <= K; ++dy)
            for (int dx = -K; dx <= K; ++dx) {
                int nb = hash_find(s, pack_key(bx + dx, by + dy, bz + dz));
                if (nb < 0) continue;
                for (int p = start[nb]; p < start[nb + 1]; ++p) {
                    const int32_t *bx6 = pbox + 6 * p;
                    int r0[3], r1[3];
                    r0[0] = bx6[0] - gx, r0[1] = bx6[1] - gy, r0[2] = bx6[2] - gz;
                    r1[0] = bx6[3] - gx, r1[1] = bx6[4] - gy, r1[2] = bx6[5] - gz;
                    if (r1[0] < 0 || r1[1] < 0 || r1[2] < 0 || r0[0] >= BS || r0[1] >= BS ||
                        r0[2] >= BS)
                        continue;
                    for (int a = 0; a < 3; ++a) {
                        r0[a] = r0[a] < 0 ? 0 : r0[a];
                        r1[a] = r1[a] > BS - 1 ? BS - 1 : r1[a];
                    }
                    const float P[3] = {sx[p], sy[p], sz[p]};
                    const v8f dx = xv - P[0];
                    if (!aniso) {
                        const v8f dx2 = dx * dx;
                        for (int k = r0[2]; k <= r1[2]; ++k) {
                            float qz = zs[k] - P[2];
                            for (int j = r0[1]; j <= r1[1]; ++j) {
                                float qy = ys[j] - P[1];
                                float dyz = qy * qy + qz * qz;
                                if (dyz >= R2) continue;
                                float *row = val + (k * BS + j) * BS;
                                V8_ADD_POLY6(row, (dx2 + dyz) * invR2);
                            }
                        }
                    } else {
                        const float *Q = mat + 6 * p;
                        for (int k = r0[2]; k <= r1[2]; ++k) {
                            float qz = zs[k] - P[2];
                            for (int j = r0[1]; j <= r1[1]; ++j) {
                                float qy = ys[j] - P[1];
                                /* q^2 = Qxx x^2 + 2 (Qxy y + Qxz z) x + (Qyy y^2 + Qzz z^2 + 2 Qyz y z) */
                                float lin = 2.0f * (Q[3] * qy + Q[4] * qz);
                                float cst = Q[1] * qy * qy + Q[2] * qz * qz + 2.0f * Q[5] * qy * qz;
                                float *row = val + (k * BS + j) * BS;
                                V8_ADD_POLY6(row, (Q[0] * dx + lin) * dx + cst);
                            }
                        }
                    }
                }
            }
}

/* ---- marching cubes ------------------------------------------------------------------------- */

/* The values at local points -1 .. BS+1 around block b (neighbours' values, 0 where no block). */
static void padded_block(const pbf_surface *s, int b, float *pad) {
    const uint64_t *bk = BUF(s, B_BKEY, uint64_t);
    const float *field = BUF(s, B_FIELD, float);
    int bx, by, bz;
    unpack_key(bk[b], &bx, &by, &bz);
    const float *nbv[27];
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                int nb = (dx | dy | dz) == 0 ? b : hash_find(s, pack_key(bx + dx, by + dy, bz + dz));
                nbv[(dz + 1) * 9 + (dy + 1) * 3 + dx + 1] = nb >= 0 ? field + (size_t)nb * BS3 : NULL;
            }
    for (int k = -1; k <= BS + 1; ++k) {
        int oz = k < 0 ? -1 : k >= BS ? 1 : 0, lz = k - oz * BS;
        for (int j = -1; j <= BS + 1; ++j) {
            int oy = j < 0 ? -1 : j >= BS ? 1 : 0, ly = j - oy * BS;
            float *dst = pad + ((k + 1) * PS + (j + 1)) * PS;
            for (int i = -1; i <= BS + 1; ++i) {
                int ox = i < 0 ? -1 : i >= BS ? 1 : 0, lx = i - ox * BS;
                const float *src = nbv[(oz + 1) * 9 + (oy + 1) * 3 + ox + 1];
                dst[i + 1] = src ? src[(lz * BS + ly) * BS + lx] : 0.0f;
            }
        }
    }
}

#define PAD(i, j, k) (((k) + 1) * PS * PS + ((j) + 1) * PS + (i) + 1)

static int block_has_surface(const float *pad, float iso) {
    int in = 0, out = 0;
    for (int k = 0; k <= BS; ++k)
        for (int j = 0; j <= BS; ++j)
            for (int i = 0; i <= BS; ++i) {
                if (pad[PAD(i, j, k)] > iso)
                    in = 1;
                else
                    out = 1;
            }
    return in && out;
}

static inline int cell_case(const float *pad, int i, int j, int k, float iso) {
    int cs = 0;
    for (int v = 0; v < 8; ++v)
        cs |= (pad[PAD(i + (v & 1), j + ((v >> 1) & 1), k + ((v >> 2) & 1))] > iso) << v;
    return cs;
}

/* Count pass: edge table (owned cut edges numbered in point-then-axis order), vertex and triangle
 * counts of surface block sb. */
static void count_block(const pbf_surface *s, const float *pad, uint16_t *et, uint8_t *cases,
                        int32_t *nv, int32_t *nt) {
    const float iso = s->iso;
    int v = 0, t = 0;
    for (int k = 0; k < BS; ++k)
        for (int j = 0; j < BS; ++j)
            for (int i = 0; i < BS; ++i) {
                int p = (k * BS + j) * BS + i;
                int in0 = pad[PAD(i, j, k)] > iso;
                int in1[3] = {pad[PAD(i + 1, j, k)] > iso, pad[PAD(i, j + 1, k)] > iso,
                              pad[PAD(i, j, k + 1)] > iso};
                for (int a = 0; a < 3; ++a) et[a * BS3 + p] = in0 != in1[a] ? (uint16_t)v++ : NO_VERTEX;
                int cs = cell_case(pad, i, j, k, iso);
                cases[p] = (uint8_t)cs;
                t += s->mc.ntri[cs];
            }
    *nv = v;
    *nt = t;
}

/* Write pass for surface block sb (block index b). Returns 0, or -1 on an inconsistency. */
static int emit_block(const pbf_surface *s, int b, int sb, float *pos, float *nrm, uint32_t *tri) {
    const uint64_t *bk = BUF(s, B_BKEY, uint64_t);
    const int32_t *surf = BUF(s, B_SURF, int32_t);
    const int32_t *vbase = BUF(s, B_VBASE, int32_t), *tbase = BUF(s, B_TBASE, int32_t);
    const uint16_t *etab = BUF(s, B_ETAB, uint16_t);
    const float *pad = BUF(s, B_PAD, float) + (size_t)sb * PS3;
    const float iso = s->iso, c = s->c;
    int bx, by, bz;
    unpack_key(bk[b], &bx, &by, &bz);
    /* the 8 blocks that own the cell edges of this block: this one, +x, +y, ... */
    int owner[8];
    for (int o = 0; o < 8; ++o) {
        int dx = o & 1, dy = (o >> 1) & 1, dz = (o >> 2) & 1;
        int nb = o == 0 ? b : hash_find(s, pack_key(bx + dx, by + dy, bz + dz));
        owner[o] = nb >= 0 ? surf[nb] : -1;
    }
    const uint16_t *et = etab + (size_t)sb * 3 * BS3;
    const uint8_t *cases = BUF(s, B_CASE, uint8_t) + (size_t)sb * BS3;
    int32_t v = vbase[sb];
    for (int k = 0; k < BS; ++k)
        for (int j = 0; j < BS; ++j)
            for (int i = 0; i < BS; ++i) {
                int p = (k * BS + j) * BS + i;
                for (int a = 0; a < 3; ++a) {
                    if (et[a * BS3 + p] == NO_VERTEX) continue;
                    int i1 = i + (a == 0), j1 = j + (a == 1), k1 = k + (a == 2);
                    float v0 = pad[PAD(i, j, k)], v1 = pad[PAD(i1, j1, k1)];
                    float t = (iso - v0) / (v1 - v0);
                    float x0[3] = {(float)(bx * BS + i) * c, (float)(by * BS + j) * c,
                                   (float)(bz * BS + k) * c};
                    x0[a] = (float)((a == 0 ? bx : a == 1 ? by : bz) * BS + (a == 0 ? i : a == 1 ? j : k)) * c +
                            t * c;
                    float g0[3] = {pad[PAD(i + 1, j, k)] - pad[PAD(i - 1, j, k)],
                                   pad[PAD(i, j + 1, k)] - pad[PAD(i, j - 1, k)],
                                   pad[PAD(i, j, k + 1)] - pad[PAD(i, j, k - 1)]};
                    float g1[3] = {pad[PAD(i1 + 1, j1, k1)] - pad[PAD(i1 - 1, j1, k1)],
                                   pad[PAD(i1, j1 + 1, k1)] - pad[PAD(i1, j1 - 1, k1)],
                                   pad[PAD(i1, j1, k1 + 1)] - pad[PAD(i1, j1, k1 - 1)]};
                    float n[3], len = 0;
                    for (int q = 0; q < 3; ++q) {
                        n[q] = -(g0[q] + t * (g1[q] - g0[q]));
                        len += n[q] * n[q];
                    }
                    if (len > 0) {
                        len = 1.0f / sqrtf(len);
                        for (int q = 0; q < 3; ++q) n[q] *= len;
                    } else { /* flat: the cut edge's direction, out of the inside end */
                        n[0] = n[1] = n[2] = 0;
                        n[a] = v0 > iso ? 1.0f : -1.0f;
                    }
                    for (int q = 0; q < 3; ++q) {
                        pos[3 * (size_t)v + q] = x0[q];
                        nrm[3 * (size_t)v + q] = n[q];
                    }
                    ++v;
                }
            }
    int32_t t = tbase[sb];
    for (int k = 0; k < BS; ++k)
        for (int j = 0; j < BS; ++j)
            for (int i = 0; i < BS; ++i) {
                int cs = cases[(k * BS + j) * BS + i];
                int ntri = s->mc.ntri[cs];
                for (int q = 0; q < 3 * ntri; ++q) {
                    int e = s->mc.tri[cs][q];
                    int a = e >> 2, c0 = pbf_mc_edge_corner[e][0];
                    int pi = i + (c0 & 1), pj = j + ((c0 >> 1) & 1), pk = k + ((c0 >> 2) & 1);
                    int o = (pi >= BS) | (pj >= BS) << 1 | (pk >= BS) << 2;
                    int ob = owner[o];
                    if (ob < 0) return -1;
                    if (pi >= BS) pi -= BS;
                    if (pj >= BS) pj -= BS;
                    if (pk >= BS) pk -= BS;
                    uint16_t lv = etab[(size_t)ob * 3 * BS3 + (size_t)a * BS3 + (size_t)((pk * BS + pj) * BS + pi)];
                    if (lv == NO_VERTEX) return -1;
                    tri[3 * (size_t)t + (size_t)q] = (uint32_t)(vbase[ob] + lv);
                }
                t += ntri;
            }
    return 0;
}

/* ---- smoothing (Taubin 1995) ----------------------------------------------------------------- */

static pbf_status smooth_mesh(pbf_surface *s, int nv, int nt, pbf_error *err) {
    if (!reserve(&s->b[B_ADJS], (size_t)nv + 1, sizeof(int32_t)) ||
        !reserve(&s->b[B_ADJ], 6 * (size_t)nt, sizeof(int32_t)) ||
        !reserve(&s->b[B_TMP], 3 * (size_t)nv, sizeof(float)))
        return oom(err, "smoothing");
    int32_t *as = BUF(s, B_ADJS, int32_t), *adj = BUF(s, B_ADJ, int32_t);
    const uint32_t *tri = BUF(s, B_TRI, uint32_t);
    /* on a closed manifold each neighbour b of v is the end of exactly one directed edge v->b */
    memset(as, 0, ((size_t)nv + 1) * sizeof *as);
    for (size_t q = 0; q < 3 * (size_t)nt; ++q) as[tri[q] + 1] += 1;
    for (int v = 0; v < nv; ++v) as[v + 1] += as[v];
    int32_t *cur = BUF(s, B_PBLOCK, int32_t); /* reused as cursor: n >= ... reserve below */
    if (!reserve(&s->b[B_PBLOCK], (size_t)nv, sizeof(int32_t))) return oom(err, "smoothing");
    cur = BUF(s, B_PBLOCK, int32_t);
    memcpy(cur, as, (size_t)nv * sizeof *cur);
    for (int t = 0; t < nt; ++t)
        for (int e = 0; e < 3; ++e) {
            uint32_t a = tri[3 * t + e], b1 = tri[3 * t + (e + 1) % 3];
            adj[cur[a]++] = (int32_t)b1;
        }
    float *pos = BUF(s, B_POS, float), *tmp = BUF(s, B_TMP, float);
    const int iters = 2 * s->p.smoothing_iterations;
#pragma omp parallel num_threads(s->threads) if (nv > PAR_MIN)
    for (int it = 0; it < iters; ++it) {
        const float f = (it & 1) ? TAUBIN_MU : TAUBIN_LAMBDA;
        const float *src = (it & 1) ? tmp : pos;
        float *dst = (it & 1) ? pos : tmp;
#pragma omp for schedule(static)
        for (int v = 0; v < nv; ++v) {
            float m[3] = {0, 0, 0};
            int d = as[v + 1] - as[v];
            for (int q = as[v]; q < as[v + 1]; ++q)
                for (int c = 0; c < 3; ++c) m[c] += src[3 * (size_t)adj[q] + c];
            for (int c = 0; c < 3; ++c) {
                float x = src[3 * (size_t)v + c];
                dst[3 * (size_t)v + c] = d > 0 ? x + f * (m[c] / (float)d - x) : x;
            }
        }
    }
    return PBF_OK;
}

/* ---- the pipeline ------------------------------------------------------------------------------ */

/* Bins the particles (anisotropic: twice, the second time at the smoothed positions); *ext: the
 * kernels' largest reach, *ta: when the binning at the final positions began (ms). */
static pbf_status bin_all(pbf_surface *s, const float *x, const float *y, const float *z,
                          int count, int aniso, double t0, float *ext, double *ta,
                          pbf_error *err) {
    pbf_status st;
    if (aniso) {
        st = bin_particles(s, x, y, z, NULL, NULL, count, err);
        if (st == PBF_OK) st = anisotropy(s, count, ext, err);
        if (st != PBF_OK) return st;
        /* bin again at the smoothed positions, carrying the kernels along; B_TX.. hold them and
         * are the input here, so copy them aside first */
        float *cx = malloc((size_t)count * 13 * sizeof *cx);
        if (!cx) return oom(err, "anisotropy");
        memcpy(cx, s->b[B_TX].p, (size_t)count * sizeof *cx);
        memcpy(cx + count, s->b[B_TY].p, (size_t)count * sizeof *cx);
        memcpy(cx + 2 * (size_t)count, s->b[B_TZ].p, (size_t)count * sizeof *cx);
        memcpy(cx + 3 * (size_t)count, s->b[B_TEXT].p, 3 * (size_t)count * sizeof *cx);
        memcpy(cx + 6 * (size_t)count, s->b[B_TMAT].p, 6 * (size_t)count * sizeof *cx);
        *ta = now_ms();
        s->info.ms_anisotropy = *ta - t0;
        st = bin_particles(s, cx, cx + count, cx + 2 * (size_t)count, cx + 3 * (size_t)count,
                           cx + 6 * (size_t)count, count, err);
        free(cx);
    } else {
        st = bin_particles(s, x, y, z, NULL, NULL, count, err);
    }
    return st;
}

/* The field of every block (K: the kernel's reach in blocks), and each block's smallest and
 * largest value (B_MINMAX). */
static pbf_status compute_field(pbf_surface *s, int count, int K, int aniso, pbf_error *err) {
    const int nb = s->nblocks;
    if (!reserve(&s->b[B_FIELD], (size_t)nb * BS3, sizeof(float)) ||
        !reserve(&s->b[B_SURF], (size_t)nb + 1, sizeof(int32_t)))
        return oom(err, "field");
    if (!reserve(&s->b[B_PBOX], 6 * (size_t)count, sizeof(int32_t)) ||
        !reserve(&s->b[B_MINMAX], 2 * (size_t)nb, sizeof(float)))
        return oom(err, "field");
    {
        /* each particle's box of grid points within its kernel's reach */
        const float *sx = BUF(s, B_SX, float), *sy = BUF(s, B_SY, float), *sz = BUF(s, B_SZ, float);
        const float *pe = BUF(s, B_EXT, float);
        int32_t *box = BUF(s, B_PBOX, int32_t);
        const float invc = 1.0f / s->c, R = s->R;
#pragma omp parallel for num_threads(s->threads) schedule(static) if (count > PAR_MIN)
        for (int i = 0; i < count; ++i) {
            const float P[3] = {sx[i], sy[i], sz[i]};
            for (int a = 0; a < 3; ++a) {
                float e = aniso ? pe[3 * i + a] : R;
                box[6 * i + a] = (int32_t)ceilf((P[a] - e) * invc);
                box[6 * i + 3 + a] = (int32_t)floorf((P[a] + e) * invc);
            }
        }
    }
    float *field = BUF(s, B_FIELD, float), *minmax = BUF(s, B_MINMAX, float);
#pragma omp parallel for num_threads(s->threads) schedule(monotonic : dynamic, 1)
    for (int b = 0; b < nb; ++b) {
        float *val = field + (size_t)b * BS3;
        field_block(s, b, K, aniso, val);
        float lo = val[0], hi = val[0];
        for (int q = 1; q < BS3; ++q) {
            lo = val[q] < lo ? val[q] : lo;
            hi = val[q] > hi ? val[q] : hi;
        }
        minmax[2 * b] = lo;
        minmax[2 * b + 1] = hi;
    }
    return PBF_OK;
}

/* Which blocks hold surface: B_SURF, per block its place among them or -1; their list B_SLIST
 * (s->nsurf of them), and room for marching them. */
static pbf_status find_surface_blocks(pbf_surface *s, pbf_error *err) {
    const int nb = s->nblocks;
    const float *minmax = BUF(s, B_MINMAX, float);
    /* which blocks hold surface */
    int32_t *surf = BUF(s, B_SURF, int32_t);
    int failed = 0;
#pragma omp parallel num_threads(s->threads)
    {
        float *pad = malloc(PS3 * sizeof *pad);
        if (!pad) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(monotonic : dynamic, 4)
        for (int b = 0; b < nb; ++b) {
            if (!pad) continue;
            /* the cells of b reach into the +x, +y, +z neighbours: a surface needs a value
             * <= iso and one > iso among those 8 blocks (a missing block counts as 0) */
            int bx, by, bz;
            unpack_key(BUF(s, B_BKEY, uint64_t)[b], &bx, &by, &bz);
            float lo = minmax[2 * b], hi = minmax[2 * b + 1];
            for (int o = 1; o < 8; ++o) {
                int nbk = hash_find(s, pack_key(bx + (o & 1), by + ((o >> 1) & 1), bz + ((o >> 2) & 1)));
                float nlo = nbk >= 0 ? minmax[2 * nbk] : 0.0f, nhi = nbk >= 0 ? minmax[2 * nbk + 1] : 0.0f;
                lo = nlo < lo ? nlo : lo;
                hi = nhi > hi ? nhi : hi;
            }
            if (!(lo <= s->iso && hi > s->iso)) {
                surf[b] = 0;
                continue;
            }
            padded_block(s, b, pad);
            surf[b] = block_has_surface(pad, s->iso);
        }
        free(pad);
    }
    if (failed) return oom(err, "marching cubes");
    int ns = 0;
    for (int b = 0; b < nb; ++b) surf[b] = surf[b] ? ns++ : -1;
    s->nsurf = ns;
    s->info.surface_blocks = ns;
    if (!reserve(&s->b[B_SLIST], (size_t)ns + 1, sizeof(int32_t)) ||
        !reserve(&s->b[B_PAD], (size_t)ns * PS3 + 1, sizeof(float)) ||
        !reserve(&s->b[B_ETAB], (size_t)ns * 3 * BS3 + 1, sizeof(uint16_t)) ||
        !reserve(&s->b[B_VBASE], (size_t)ns + 1, sizeof(int32_t)) ||
        !reserve(&s->b[B_TBASE], (size_t)ns + 1, sizeof(int32_t)) ||
        !reserve(&s->b[B_CASE], (size_t)ns * BS3 + 1, sizeof(uint8_t)))
        return oom(err, "marching cubes");
    int32_t *slist = BUF(s, B_SLIST, int32_t);
    for (int b = 0; b < nb; ++b)
        if (surf[b] >= 0) slist[surf[b]] = b;
    return PBF_OK;
}

/* Marching cubes over the surface blocks: their cut edges and triangles counted, the prefix
 * sums in key order, then the vertices and triangles written (B_POS, B_NRM, B_TRI). */
static pbf_status march_blocks(pbf_surface *s, int64_t *nv_out, int64_t *nt_out,
                               pbf_error *err) {
    const int ns = s->nsurf;
    const int32_t *slist = BUF(s, B_SLIST, int32_t);
    float *pads = BUF(s, B_PAD, float);
    uint16_t *etab = BUF(s, B_ETAB, uint16_t);
    int32_t *vbase = BUF(s, B_VBASE, int32_t), *tbase = BUF(s, B_TBASE, int32_t);
#pragma omp parallel for num_threads(s->threads) schedule(monotonic : dynamic, 2)
    for (int q = 0; q < ns; ++q) {
        float *pad = pads + (size_t)q * PS3;
        padded_block(s, slist[q], pad);
        count_block(s, pad, etab + (size_t)q * 3 * BS3, BUF(s, B_CASE, uint8_t) + (size_t)q * BS3,
                    &vbase[q + 1], &tbase[q + 1]);
    }
    int64_t nv = 0, nt = 0;
    vbase[0] = tbase[0] = 0;
    for (int q = 0; q < ns; ++q) {
        int64_t cv = vbase[q + 1], ct = tbase[q + 1];
        vbase[q] = (int32_t)nv;
        tbase[q] = (int32_t)nt;
        nv += cv;
        nt += ct;
        if (nv > INT32_MAX / 4 || nt > INT32_MAX / 4) {
            pbf_set_error(err, PBF_ERR_LIMIT,
                          "surface reconstruction: more than %d vertices or triangles; use a "
                          "larger cube_size", INT32_MAX / 4);
            return PBF_ERR_LIMIT;
        }
    }
    vbase[ns] = (int32_t)nv;
    tbase[ns] = (int32_t)nt;
    if (!reserve(&s->b[B_POS], 3 * (size_t)nv + 1, sizeof(float)) ||
        !reserve(&s->b[B_NRM], 3 * (size_t)nv + 1, sizeof(float)) ||
        !reserve(&s->b[B_TRI], 3 * (size_t)nt + 1, sizeof(uint32_t)))
        return oom(err, "mesh");
    float *pos = BUF(s, B_POS, float), *nrm = BUF(s, B_NRM, float);
    uint32_t *tri = BUF(s, B_TRI, uint32_t);
    int bad = 0;
#pragma omp parallel for num_threads(s->threads) schedule(monotonic : dynamic, 2) reduction(| : bad)
    for (int q = 0; q < ns; ++q) bad |= emit_block(s, slist[q], q, pos, nrm, tri) != 0;
    if (bad) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "surface reconstruction: a cut cell edge has no vertex (internal error)");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *nv_out = nv;
    *nt_out = nt;
    return PBF_OK;
}

pbf_status pbf_surface_reconstruct(pbf_surface *s, const float *x, const float *y, const float *z,
                                   int count, pbf_mesh *mesh, pbf_error *err) {
    if (!s || !mesh || count < 0 || (count > 0 && (!x || !y || !z))) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "pbf_surface_reconstruct: %s", !s ? "surface is NULL" : !mesh ? "mesh is NULL"
                      : count < 0 ? "negative particle count" : "a position array is NULL");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    memset(mesh, 0, sizeof *mesh);
    memset(&s->info, 0, sizeof s->info);
    s->info.particles = count;
    if (count == 0) return PBF_OK;
    const double t0 = now_ms();
    pbf_status st;
    int aniso = s->p.anisotropic != 0;
    float ext = s->R;
    double ta = t0;
    st = bin_all(s, x, y, z, count, aniso, t0, &ext, &ta, err);
    if (st != PBF_OK) return st;
    const int K = (int)ceilf((ext + s->c) / (BS * s->c));
    st = dilate(s, K, err);
    if (st != PBF_OK) return st;
    const int nb = s->nblocks;
    const double t1 = now_ms();
    s->info.ms_grid = t1 - ta;
    s->info.blocks = nb;

    st = compute_field(s, count, K, aniso, err);
    if (st != PBF_OK) return st;
    const double t2 = now_ms();
    s->info.ms_field = t2 - t1;

    st = find_surface_blocks(s, err);
    if (st != PBF_OK) return st;
    int64_t nv = 0, nt = 0;
    st = march_blocks(s, &nv, &nt, err);
    if (st != PBF_OK) return st;
    float *pos = BUF(s, B_POS, float), *nrm = BUF(s, B_NRM, float);
    uint32_t *tri = BUF(s, B_TRI, uint32_t);
    const double t3 = now_ms();
    s->info.ms_march = t3 - t2;
    if (s->p.smoothing_iterations > 0 && nt > 0) {
        st = smooth_mesh(s, (int)nv, (int)nt, err);
        if (st != PBF_OK) return st;
    }
    const double t4 = now_ms();
    s->info.ms_smooth = t4 - t3;
    s->info.ms_total = t4 - t0;
    size_t bytes = sizeof *s;
    for (int i = 0; i < B_COUNT; ++i) bytes += s->b[i].bytes;
    s->info.bytes = bytes;
    s->info.vertices = (int)nv;
    s->info.triangles = (int)nt;
    mesh->vertex_count = (int)nv;
    mesh->triangle_count = (int)nt;
    mesh->positions = pos;
    mesh->normals = nrm;
    mesh->triangles = tri;
    return PBF_OK;
}

double pbf_mesh_volume(const pbf_mesh *m) {
    if (!m || !m->positions || !m->triangles) return 0.0;
    double v = 0.0;
    for (int t = 0; t < m->triangle_count; ++t) {
        const float *a = m->positions + 3 * (size_t)m->triangles[3 * t];
        const float *b = m->positions + 3 * (size_t)m->triangles[3 * t + 1];
        const float *c = m->positions + 3 * (size_t)m->triangles[3 * t + 2];
        v += (double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) +
             (double)a[1] * ((double)b[2] * c[0] - (double)b[0] * c[2]) +
             (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0]);
    }
    return v / 6.0;
}
