/* Neighbour search: the grid's 9 contiguous ranges give exactly the brute-force neighbours, and
 * pbf_world_neighbour_pairs counts them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"
#include "pbf/pbf.h"
#include "test.h"

static uint32_t rng_state = 12345u;
static float frand(void) { /* xorshift32 in [0, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) / 16777216.0f;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Builds the grid over (x, y, z) and compares every particle's neighbour set with brute force.
 * Returns the number of mismatching particles (0 = exact); pairs counts the neighbour pairs. */
static int check_set(const pbf_world_def *def, float h, int n, const float *x, const float *y,
                     const float *z, long *pairs) {
    pbf_grid g;
    pbf_error err;
    if (pbf_grid_init(&g, def, h * 1.0001f, &err) != PBF_OK) { /* as pbf_world_create */
        printf("grid init: %s\n", err.message);
        return -1;
    }
    uint32_t *key = malloc((size_t)n * 4), *perm = malloc((size_t)n * 4), *skey = malloc((size_t)n * 4);
    float *sx = malloc((size_t)n * 4), *sy = malloc((size_t)n * 4), *sz = malloc((size_t)n * 4);
    uint32_t *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *rank = malloc((size_t)n * 4);
    pbf_grid_build(&g, n, x, y, z, key, rank, perm, 2); /* parallel: must still be stable */
    free(rank);
    int bad = 0;
    *pairs = 0;
    for (int k = 0; k < n; ++k) {
        skey[k] = key[perm[k]];
        sx[k] = x[perm[k]];
        sy[k] = y[perm[k]];
        sz[k] = z[perm[k]];
        /* sorted by cell, cell ranges consistent, stable within a cell */
        if (k > 0 && skey[k] < skey[k - 1]) bad++;
        if (k > 0 && skey[k] == skey[k - 1] && perm[k] < perm[k - 1]) bad++;
        if (!(g.cell_start[skey[k]] <= (uint32_t)k && (uint32_t)k < g.cell_start[skey[k] + 1])) bad++;
    }
    const float h2 = h * h;
    for (int i = 0; i < n; ++i) {
        int na = 0, nb = 0;
        uint32_t begin[9], end[9];
        int nr = pbf_grid_neighbour_ranges(&g, skey[i], begin, end);
        for (int r = 0; r < nr; ++r)
            for (uint32_t j = begin[r]; j < end[r]; ++j) {
                float dx = sx[i] - sx[j], dy = sy[i] - sy[j], dz = sz[i] - sz[j];
                if (dx * dx + dy * dy + dz * dz < h2) a[na++] = j;
            }
        for (int j = 0; j < n; ++j) {
            float dx = sx[i] - sx[j], dy = sy[i] - sy[j], dz = sz[i] - sz[j];
            if (dx * dx + dy * dy + dz * dz < h2) b[nb++] = (uint32_t)j;
        }
        qsort(a, (size_t)na, 4, cmp_u32);
        int same = na == nb;
        for (int t = 0; same && t < na; ++t) same = a[t] == b[t];
        if (!same) bad++;
        *pairs += nb;
    }
    free(key); free(perm); free(skey); free(sx); free(sy); free(sz); free(a); free(b);
    pbf_grid_free(&g);
    return bad;
}

static pbf_world_def domain_def(float lx, float ly, float lz) {
    pbf_world_def def = pbf_default_world_def();
    def.domain_min = (pbf_vec3){-0.5f, 0.0f, 1.0f};
    def.domain_max = (pbf_vec3){-0.5f + lx, ly, 1.0f + lz};
    return def;
}

#define N_MAX 4000
static float X[N_MAX], Y[N_MAX], Z[N_MAX];

static void test_random(void) {
    pbf_world_def def = domain_def(0.5f, 0.37f, 0.29f); /* not a multiple of h */
    const float h = 0.04f;
    for (int i = 0; i < 3000; ++i) {
        X[i] = -0.5f + 0.5f * frand();
        Y[i] = 0.37f * frand();
        Z[i] = 1.0f + 0.29f * frand();
    }
    long pairs;
    ENSURE_EQ_INT(check_set(&def, h, 3000, X, Y, Z, &pairs), 0);
    ENSURE(pairs > 3000); /* the set really has neighbours */
}

/* Particles exactly on cell faces, edges and corners of the grid. */
static void test_cell_faces(void) {
    pbf_world_def def = domain_def(0.4f, 0.4f, 0.4f);
    const float h = 0.05f;
    int n = 0;
    for (int i = 0; i <= 8; ++i)
        for (int j = 0; j <= 8; ++j)
            for (int k = 0; k <= 8 && n < N_MAX; k += 2, ++n) {
                X[n] = -0.5f + (float)i * h;
                Y[n] = (float)j * h;
                Z[n] = 1.0f + (float)k * h + ((i + j) % 3 == 0 ? 0.5f * h : 0.0f);
            }
    long pairs;
    ENSURE_EQ_INT(check_set(&def, h, n, X, Y, Z, &pairs), 0);
    ENSURE(pairs > n);
}

/* Every particle in one cell. */
static void test_one_cell(void) {
    pbf_world_def def = domain_def(0.4f, 0.4f, 0.4f);
    const float h = 0.05f;
    for (int i = 0; i < 500; ++i) {
        X[i] = -0.5f + 0.1f + 0.05f * frand() * 0.999f;
        Y[i] = 0.1f + 0.05f * frand() * 0.999f;
        Z[i] = 1.1f + 0.05f * frand() * 0.999f;
    }
    long pairs;
    ENSURE_EQ_INT(check_set(&def, h, 500, X, Y, Z, &pairs), 0);
}

/* Far apart: nobody has a neighbour but itself. */
static void test_far_apart(void) {
    pbf_world_def def = domain_def(2.0f, 2.0f, 2.0f);
    const float h = 0.05f;
    int n = 0;
    for (int i = 0; i < 10; ++i)
        for (int j = 0; j < 10; ++j, ++n) {
            X[n] = -0.5f + 0.15f * (float)i + 0.01f;
            Y[n] = 0.15f * (float)j + 0.01f;
            Z[n] = 1.0f + 0.1f * (float)((i * 7 + j) % 19);
        }
    long pairs;
    ENSURE_EQ_INT(check_set(&def, h, n, X, Y, Z, &pairs), 0);
    ENSURE_EQ_INT(pairs, n);
}

/* At and beyond the domain edges (predicted positions may leave the box before collisions). */
static void test_domain_edges(void) {
    pbf_world_def def = domain_def(0.3f, 0.3f, 0.3f);
    const float h = 0.07f; /* 0.3 / 0.07 is not whole: the last cell overhangs */
    const float lo[3] = {-0.5f, 0.0f, 1.0f}, hi[3] = {-0.2f, 0.3f, 1.3f};
    int n = 0;
    for (int i = 0; i < 2000; ++i, ++n) {
        float v[3];
        for (int a = 0; a < 3; ++a) {
            float r = frand();
            if (r < 0.2f) v[a] = lo[a];
            else if (r < 0.4f) v[a] = hi[a];
            else if (r < 0.5f) v[a] = lo[a] - 0.1f * frand();
            else if (r < 0.6f) v[a] = hi[a] + 0.1f * frand();
            else v[a] = lo[a] + (hi[a] - lo[a]) * frand();
        }
        X[n] = v[0];
        Y[n] = v[1];
        Z[n] = v[2];
    }
    long pairs;
    ENSURE_EQ_INT(check_set(&def, h, n, X, Y, Z, &pairs), 0);
}

/* NaN and infinite coordinates must not crash the grid (they go to a border cell). */
static void test_non_finite(void) {
    pbf_world_def def = domain_def(0.3f, 0.3f, 0.3f);
    pbf_grid g;
    ENSURE(pbf_grid_init(&g, &def, 0.05f, NULL) == PBF_OK);
    float x[3] = {NAN, INFINITY, -INFINITY}, y[3] = {0.1f, NAN, 0.1f}, z[3] = {1.1f, 1.1f, NAN};
    uint32_t key[3], perm[3], rank[3];
    pbf_grid_build(&g, 3, x, y, z, key, rank, perm, 1);
    for (int i = 0; i < 3; ++i) ENSURE(key[i] < g.ncells);
    ENSURE_EQ_INT(g.cell_start[g.ncells], 3);
    pbf_grid_free(&g);
}

/* A domain needing too many cells is refused with a message, not allocated. */
static void test_cell_limit(void) {
    pbf_world_def def = domain_def(5000.0f, 5000.0f, 5000.0f);
    pbf_grid g;
    pbf_error err;
    ENSURE(pbf_grid_init(&g, &def, 0.01f, &err) == PBF_ERR_LIMIT);
    ENSURE(strstr(err.message, "grid cells") != NULL);
}

/* Brute-force pairs (i, j), i included, with r2 < h2 in float as the list scan computes it. */
static long brute_pairs(const pbf_snapshot *s, float h2) {
    long pairs = 0;
    for (int i = 0; i < s->count; ++i)
        for (int j = 0; j < s->count; ++j) {
            const float dx = s->x[i] - s->x[j], dy = s->y[i] - s->y[j], dz = s->z[i] - s->z[j];
            const float r2 = dx * dx + dy * dy + dz * dz;
            pairs += r2 < h2;
        }
    return pairs;
}

/* pbf_world_neighbour_pairs counts the pairs within h at the current positions exactly (a
 * lattice block, then the same particles scattered, some outside the box), for any thread
 * count; 0 for an empty world, -1 for NULL. */
static void test_world_neighbour_pairs(void) {
    ENSURE(pbf_world_neighbour_pairs(NULL) == -1);
    long counts[2] = {0, 0};
    for (int t = 0; t < 2; ++t) {
        pbf_world_def def = pbf_default_world_def();
        def.domain_min = (pbf_vec3){0.0f, 0.0f, 0.0f};
        def.domain_max = (pbf_vec3){0.6f, 0.5f, 0.4f};
        def.particle_radius = 0.02f;
        def.threads = t ? 3 : 1;
        pbf_world *w = NULL;
        pbf_error err;
        ENSURE(pbf_world_create(&def, &w, &err) == PBF_OK);
        ENSURE(pbf_world_neighbour_pairs(w) == 0);
        const pbf_fluid_block blk = {{0.05f, 0.05f, 0.05f}, {0.55f, 0.45f, 0.35f}, {0, 0, 0}};
        ENSURE(pbf_world_add_fluid_block(w, &blk, &err) == PBF_OK);
        pbf_snapshot snap = pbf_world_snapshot(w);
        ENSURE(snap.count > 500);
        const long lattice = brute_pairs(&snap, w->k.h2);
        ENSURE(lattice > 15L * snap.count); /* h = 2 spacings: up to 27 neighbours each */
        ENSURE(pbf_world_neighbour_pairs(w) == lattice);
        /* scattered over the box and a little beyond it, from a copy of the state */
        const int n = snap.count;
        float *x = malloc((size_t)n * 3 * sizeof *x);
        ENSURE(x != NULL);
        rng_state = 777u;
        for (int i = 0; i < n; ++i) {
            x[i] = -0.05f + 0.7f * frand();
            x[n + i] = -0.05f + 0.6f * frand();
            x[2 * n + i] = -0.05f + 0.5f * frand();
        }
        pbf_snapshot moved = snap;
        moved.x = x;
        moved.y = x + n;
        moved.z = x + 2 * n;
        ENSURE(pbf_world_restore(w, &moved, &err) == PBF_OK);
        snap = pbf_world_snapshot(w);
        counts[t] = brute_pairs(&snap, w->k.h2);
        ENSURE(counts[t] > n);
        ENSURE(pbf_world_neighbour_pairs(w) == counts[t]);
        free(x);
        pbf_world_destroy(w);
    }
    ENSURE(counts[0] == counts[1]);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_random);
    RUN_SUBTEST(test_cell_faces);
    RUN_SUBTEST(test_one_cell);
    RUN_SUBTEST(test_far_apart);
    RUN_SUBTEST(test_domain_edges);
    RUN_SUBTEST(test_non_finite);
    RUN_SUBTEST(test_cell_limit);
    RUN_SUBTEST(test_world_neighbour_pairs);
    return test_end();
}
