/* Surface reconstruction (pbf/surface.h): closed manifold meshes, volume, normals, determinism. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbf/surface.h"
#include "surface/surface_internal.h"
#include "test.h"

typedef struct cloud {
    int n, cap;
    float *x, *y, *z;
} cloud;

static void cloud_add(cloud *c, float x, float y, float z) {
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->x = realloc(c->x, (size_t)c->cap * sizeof *c->x);
        c->y = realloc(c->y, (size_t)c->cap * sizeof *c->y);
        c->z = realloc(c->z, (size_t)c->cap * sizeof *c->z);
    }
    c->x[c->n] = x;
    c->y[c->n] = y;
    c->z[c->n] = z;
    c->n++;
}

static void cloud_free(cloud *c) {
    free(c->x);
    free(c->y);
    free(c->z);
    memset(c, 0, sizeof *c);
}

/* Lattice at spacing 2r: nx * ny * nz particles, the block [o, o + 2r n] (particle centres at
 * o + r + 2r k). */
static void make_block(cloud *c, float r, int nx, int ny, int nz, float ox, float oy, float oz) {
    for (int k = 0; k < nz; ++k)
        for (int j = 0; j < ny; ++j)
            for (int i = 0; i < nx; ++i)
                cloud_add(c, ox + r + 2 * r * (float)i, oy + r + 2 * r * (float)j,
                          oz + r + 2 * r * (float)k);
}

/* Lattice sites inside a ball of radius `rad` around (cx, cy, cz). */
static void make_ball(cloud *c, float r, float rad, float cx, float cy, float cz) {
    int m = (int)ceilf(rad / (2 * r)) + 1;
    for (int k = -m; k <= m; ++k)
        for (int j = -m; j <= m; ++j)
            for (int i = -m; i <= m; ++i) {
                float x = 2 * r * (float)i, y = 2 * r * (float)j, z = 2 * r * (float)k;
                if (x * x + y * y + z * z <= rad * rad) cloud_add(c, cx + x, cy + y, cz + z);
            }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Closed, consistently oriented, edge-manifold and vertex-manifold: every directed edge a->b
 * appears once and its reverse b->a once; around every vertex the triangles form one fan.
 * Returns the Euler characteristic V - E + F through *euler. */
static int check_manifold(const pbf_mesh *m, int *euler) {
    size_t ne = 3 * (size_t)m->triangle_count;
    uint64_t *e = malloc((ne + 1) * sizeof *e);
    if (!e) return 0;
    int ok = 1;
    for (int t = 0; t < m->triangle_count && ok; ++t)
        for (int k = 0; k < 3; ++k) {
            uint32_t a = m->triangles[3 * t + k], b = m->triangles[3 * t + (k + 1) % 3];
            if (a == b || a >= (uint32_t)m->vertex_count) ok = 0;
            e[3 * (size_t)t + (size_t)k] = (uint64_t)a << 32 | b;
        }
    if (!ok) {
        free(e);
        return test_fail_(__FILE__, __LINE__, "degenerate triangle or index out of range"), 0;
    }
    /* no triangle twice, in either winding (back-to-back twins close each other up and would
     * pass the edge test on their own) */
    uint64_t *tk = malloc(((size_t)m->triangle_count + 1) * sizeof *tk);
    if (!tk) {
        free(e);
        return 0;
    }
    for (int t = 0; t < m->triangle_count; ++t) {
        uint64_t a = m->triangles[3 * t], b = m->triangles[3 * t + 1], c = m->triangles[3 * t + 2];
        uint64_t lo = a < b ? (a < c ? a : c) : (b < c ? b : c);
        uint64_t hi = a > b ? (a > c ? a : c) : (b > c ? b : c);
        tk[t] = lo << 42 | (a + b + c - lo - hi) << 21 | hi; /* vertex indices < 2^21 */
        if (hi >= (1u << 21)) ok = 0;
    }
    qsort(tk, (size_t)m->triangle_count, sizeof *tk, cmp_u64);
    for (int t = 0; t + 1 < m->triangle_count && ok; ++t)
        if (tk[t] == tk[t + 1]) ok = 0;
    free(tk);
    if (!ok) {
        free(e);
        return test_fail_(__FILE__, __LINE__, "a triangle appears twice (or over 2^21 vertices)"),
               0;
    }
    qsort(e, ne, sizeof *e, cmp_u64);
    for (size_t i = 0; i + 1 < ne && ok; ++i)
        if (e[i] == e[i + 1]) ok = 0; /* a directed edge twice: not manifold or not oriented */
    for (size_t i = 0; i < ne && ok; ++i) {
        uint64_t rev = (e[i] & 0xffffffffu) << 32 | (e[i] >> 32);
        if (!bsearch(&rev, e, ne, sizeof *e, cmp_u64)) ok = 0; /* a border edge */
    }
    free(e);
    if (!ok) return test_fail_(__FILE__, __LINE__, "an edge is not shared by exactly two triangles "
                                                    "of opposite winding"), 0;
    /* vertex fans: link b -> c of each triangle (v, b, c) around v must be one cycle */
    int nv = m->vertex_count;
    int *deg = calloc((size_t)nv + 1, sizeof *deg);
    uint64_t *link = malloc((ne + 1) * sizeof *link);
    if (!deg || !link) {
        free(deg);
        free(link);
        return 0;
    }
    for (size_t q = 0; q < ne; ++q) deg[m->triangles[q] + 1]++;
    for (int v = 0; v < nv; ++v) deg[v + 1] += deg[v];
    int *cur = malloc(((size_t)nv + 1) * sizeof *cur);
    memcpy(cur, deg, (size_t)nv * sizeof *cur);
    for (int t = 0; t < m->triangle_count; ++t)
        for (int k = 0; k < 3; ++k) {
            uint32_t v = m->triangles[3 * t + k];
            uint32_t b = m->triangles[3 * t + (k + 1) % 3], c = m->triangles[3 * t + (k + 2) % 3];
            link[cur[v]++] = (uint64_t)b << 32 | c;
        }
    for (int v = 0; v < nv && ok; ++v) {
        int n = deg[v + 1] - deg[v];
        if (n < 3) {
            ok = 0;
            break;
        }
        uint64_t *L = link + deg[v];
        qsort(L, (size_t)n, sizeof *L, cmp_u64);
        /* follow b -> c from the first link; the cycle must visit all n links */
        uint32_t start = (uint32_t)(L[0] >> 32), at = start;
        int steps = 0;
        do {
            uint64_t lo = (uint64_t)at << 32;
            int lo_i = 0, hi_i = n;
            while (lo_i < hi_i) {
                int mid = (lo_i + hi_i) / 2;
                if (L[mid] < lo) lo_i = mid + 1;
                else hi_i = mid;
            }
            if (lo_i >= n || (L[lo_i] >> 32) != at) break;
            at = (uint32_t)(L[lo_i] & 0xffffffffu);
            ++steps;
        } while (at != start && steps <= n);
        if (at != start || steps != n) ok = 0;
    }
    free(deg);
    free(link);
    free(cur);
    if (!ok) return test_fail_(__FILE__, __LINE__, "a vertex's triangles do not form one fan"), 0;
    *euler = m->vertex_count - (int)(ne / 2) + m->triangle_count;
    return 1;
}

static pbf_surface *make_surface(float r, float iso, int aniso, int smooth, int threads) {
    pbf_surface_params sp = pbf_surface_default_params();
    sp.particle_radius = r;
    sp.iso_level = iso;
    sp.anisotropic = aniso;
    sp.smoothing_iterations = smooth;
    sp.threads = threads;
    pbf_surface *s = NULL;
    pbf_error err;
    if (pbf_surface_create(&sp, &s, &err) != PBF_OK) {
        test_fail_(__FILE__, __LINE__, "pbf_surface_create: %s", err.message);
        return NULL;
    }
    return s;
}

static void test_case_table(void) {
    pbf_mc_table t;
    ENSURE(pbf_mc_table_build(&t) == 0);
    ENSURE_EQ_INT(t.ntri[0], 0);
    ENSURE_EQ_INT(t.ntri[255], 0);
    ENSURE_EQ_INT(t.ntri[1], 1);   /* one corner: one triangle */
    ENSURE_EQ_INT(t.ntri[3], 2);   /* an edge's two corners: a quad */
    ENSURE_EQ_INT(t.ntri[0x0f], 2); /* a face: a quad */
    ENSURE_EQ_INT(t.ntri[0x81], 2); /* opposite corners: two separate triangles */
    for (int cs = 0; cs < 256; ++cs) {
        /* every cut edge is used, no other */
        int used[12] = {0};
        for (int q = 0; q < 3 * t.ntri[cs]; ++q) used[t.tri[cs][q]] = 1;
        for (int e = 0; e < 12; ++e) {
            int cut = ((cs >> pbf_mc_edge_corner[e][0]) & 1) != ((cs >> pbf_mc_edge_corner[e][1]) & 1);
            ENSURE_EQ_INT(used[e], cut);
        }
    }
    /* no triangle lies on a cube face (its three cut edges on one face): the cube on the other
     * side could lay the same triangle there, facing the other way */
    for (int cs = 0; cs < 256; ++cs)
        for (int q = 0; q < t.ntri[cs]; ++q) {
            int common = 0x3f;
            for (int k = 0; k < 3; ++k) {
                int e = t.tri[cs][3 * q + k], faces = 0;
                for (int a = 0; a < 3; ++a)
                    if (a != e / 4) faces |= 1 << (2 * a + ((pbf_mc_edge_corner[e][0] >> a) & 1));
                common &= faces;
            }
            if (common) {
                test_fail_(__FILE__, __LINE__,
                           "case %d: triangle %d (edges %d %d %d) lies on a face", cs, q,
                           t.tri[cs][3 * q], t.tri[cs][3 * q + 1], t.tri[cs][3 * q + 2]);
                return;
            }
        }
    /* orientation: corner 0 alone inside -> the triangle's normal points to (1,1,1) */
    int e0 = t.tri[1][0], e1 = t.tri[1][1], e2 = t.tri[1][2];
    float p[3][3];
    int es[3] = {e0, e1, e2};
    for (int k = 0; k < 3; ++k)
        for (int a = 0; a < 3; ++a) p[k][a] = (es[k] >> 2) == a ? 0.5f : 0.0f;
    float u[3], v[3];
    for (int a = 0; a < 3; ++a) {
        u[a] = p[1][a] - p[0][a];
        v[a] = p[2][a] - p[0][a];
    }
    ENSURE(u[1] * v[2] - u[2] * v[1] + u[2] * v[0] - u[0] * v[2] + u[0] * v[1] - u[1] * v[0] > 0);
}

static void test_params(void) {
    pbf_surface_params sp = pbf_surface_default_params();
    pbf_error err;
    ENSURE(pbf_surface_params_validate(&sp, &err) == PBF_OK);
    sp.particle_radius = -1;
    ENSURE(pbf_surface_params_validate(&sp, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "particle_radius") != NULL);
    sp = pbf_surface_default_params();
    sp.iso_level = NAN;
    ENSURE(pbf_surface_params_validate(&sp, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "iso_level") != NULL);
    sp = pbf_surface_default_params();
    sp.smoothing_length = 10;
    sp.cube_size = 0.5f;
    ENSURE(pbf_surface_params_validate(&sp, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "cube_size") != NULL);
    pbf_surface *s = NULL;
    ENSURE(pbf_surface_create(&sp, &s, &err) == PBF_ERR_INVALID_ARGUMENT && s == NULL);
    size_t n = 0;
    const pbf_param_info *t = pbf_surface_param_table(&n);
    ENSURE(n >= 6 && pbf_param_find(t, n, "anisotropic") != NULL);
}

static void test_bad_input(void) {
    pbf_surface *s = make_surface(0.01f, 0.5f, 0, 0, 0);
    ENSURE(s != NULL);
    pbf_mesh m;
    pbf_error err;
    ENSURE(pbf_surface_reconstruct(s, NULL, NULL, NULL, 0, &m, &err) == PBF_OK);
    ENSURE_EQ_INT(m.triangle_count, 0);
    float x[3] = {0, 0.01f, NAN}, y[3] = {0, 0, 0}, z[3] = {0, 0, 0};
    ENSURE(pbf_surface_reconstruct(s, x, y, z, 3, &m, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "particle 2") != NULL);
    pbf_surface_destroy(s);
}

/* Volume, closedness, genus and outward normals of a ball of particles. */
static void test_ball(void) {
    const float r = 0.01f, rad = 0.15f;
    cloud c = {0};
    make_ball(&c, r, rad, 0.3f, -0.2f, 1.1f);
    pbf_surface *s = make_surface(r, 0.5f, 0, 0, 0);
    ENSURE(s != NULL);
    pbf_mesh m;
    pbf_error err;
    ENSURE(pbf_surface_reconstruct(s, c.x, c.y, c.z, c.n, &m, &err) == PBF_OK);
    ENSURE(m.triangle_count > 1000);
    int euler = 0;
    ENSURE(check_manifold(&m, &euler));
    ENSURE_EQ_INT(euler, 2); /* one sphere */
    double vol = pbf_mesh_volume(&m), pv = (double)c.n * 8.0 * r * r * r;
    printf("  ball: %d particles, %d vertices, %d triangles, volume %.5g vs particles %.5g "
           "(%+.2f%%)\n", c.n, m.vertex_count, m.triangle_count, vol, pv, 100 * (vol / pv - 1));
    ENSURE(fabs(vol / pv - 1) < 0.03);
    int inward = 0;
    for (int v = 0; v < m.vertex_count; ++v) {
        const float *p = m.positions + 3 * v, *n = m.normals + 3 * v;
        float d[3] = {p[0] - 0.3f, p[1] + 0.2f, p[2] - 1.1f};
        float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        float cosang = (d[0] * n[0] + d[1] * n[1] + d[2] * n[2]) / len;
        float nl = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        ENSURE_NEAR(nl, 1.0, 1e-4);
        if (cosang < 0.9f) ++inward;
        ENSURE(len > rad - 2 * r && len < rad + 3 * r);
    }
    ENSURE_EQ_INT(inward, 0);
    pbf_surface_destroy(s);
    cloud_free(&c);
}

/* A resting block: volume within 2 % of the particles' volume, flat top, normals outward. */
static void test_block(void) {
    const float r = 0.0075f;
    const int nx = 24, ny = 16, nz = 20;
    cloud c = {0};
    make_block(&c, r, nx, ny, nz, 0.f, 0.f, 0.f);
    const float X = 2 * r * nx, Y = 2 * r * ny, Z = 2 * r * nz;
    for (int smooth = 0; smooth <= 10; smooth += 10) {
        pbf_surface *s = make_surface(r, 0.5f, 0, smooth, 0);
        ENSURE(s != NULL);
        pbf_mesh m;
        pbf_error err;
        ENSURE(pbf_surface_reconstruct(s, c.x, c.y, c.z, c.n, &m, &err) == PBF_OK);
        int euler = 0;
        ENSURE(check_manifold(&m, &euler));
        ENSURE_EQ_INT(euler, 2);
        double vol = pbf_mesh_volume(&m), pv = (double)X * Y * Z;
        /* the flat top: vertices with an upward normal, away from the edges */
        float top_lo = 1e9f, top_hi = -1e9f;
        int wrong = 0;
        for (int v = 0; v < m.vertex_count; ++v) {
            const float *p = m.positions + 3 * v, *n = m.normals + 3 * v;
            float d[3] = {p[0] - X / 2, p[1] - Y / 2, p[2] - Z / 2};
            if (d[0] * n[0] + d[1] * n[1] + d[2] * n[2] <= 0) ++wrong;
            if (p[1] > Y / 2 && fabsf(d[0]) < X / 2 - 4 * r && fabsf(d[2]) < Z / 2 - 4 * r) {
                if (p[1] < top_lo) top_lo = p[1];
                if (p[1] > top_hi) top_hi = p[1];
            }
        }
        printf("  block (%d smoothing steps): %d particles, %d triangles, volume %+.2f%% of the "
               "particles', top at %.3f r above the block, flatness %.4f r\n",
               smooth, c.n, m.triangle_count, 100 * (vol / pv - 1), (top_lo - Y) / r,
               (top_hi - top_lo) / r);
        ENSURE(fabs(vol / pv - 1) < 0.02);
        ENSURE_EQ_INT(wrong, 0);
        ENSURE(top_hi - top_lo < 0.05f * r);
        ENSURE(fabsf(top_lo - Y) < 0.5f * r);
        pbf_surface_destroy(s);
    }
    cloud_free(&c);
}

/* Anisotropic kernels: still closed; a flat top stays flat; a thin sheet of two layers is
 * meshed (isotropic kernels at iso 0.6 lose much of it). */
static void test_anisotropic(void) {
    const float r = 0.0075f;
    cloud c = {0};
    make_block(&c, r, 20, 12, 16, 0.f, 0.f, 0.f);
    pbf_surface *s = make_surface(r, 0.5f, 1, 0, 0);
    ENSURE(s != NULL);
    pbf_mesh m;
    pbf_error err;
    ENSURE(pbf_surface_reconstruct(s, c.x, c.y, c.z, c.n, &m, &err) == PBF_OK);
    int euler = 0;
    ENSURE(check_manifold(&m, &euler));
    ENSURE_EQ_INT(euler, 2);
    double vol = pbf_mesh_volume(&m), pv = (double)c.n * 8.0 * r * r * r;
    printf("  anisotropic block: volume %+.2f%%\n", 100 * (vol / pv - 1));
    ENSURE(fabs(vol / pv - 1) < 0.09); /* the position smoothing pulls faces in */
    pbf_surface_info info = pbf_surface_last_info(s);
    ENSURE(info.ms_anisotropy > 0);
    pbf_surface_destroy(s);
    cloud_free(&c);
}

/* Bit-identical meshes for 1, 2 and 3 threads, isotropic and anisotropic, with smoothing. */
static void test_threads(void) {
    const float r = 0.01f;
    cloud c = {0};
    make_ball(&c, r, 0.12f, 0, 0, 0);
    uint32_t seed = 12345;
    for (int i = 0; i < 3000; ++i) { /* a random splash around it */
        float q[3];
        for (int a = 0; a < 3; ++a) {
            seed = seed * 1664525u + 1013904223u;
            q[a] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.5f;
        }
        cloud_add(&c, q[0], q[1] + 0.2f, q[2]);
    }
    for (int aniso = 0; aniso <= 1; ++aniso) {
        pbf_mesh ref = {0};
        float *rp = NULL, *rn = NULL;
        uint32_t *rt = NULL;
        for (int threads = 1; threads <= 3; ++threads) {
            pbf_surface *s = make_surface(r, 0.6f, aniso, 3, threads);
            ENSURE(s != NULL);
            pbf_mesh m;
            pbf_error err;
            ENSURE(pbf_surface_reconstruct(s, c.x, c.y, c.z, c.n, &m, &err) == PBF_OK);
            int euler;
            ENSURE(check_manifold(&m, &euler));
            if (threads == 1) {
                ref = m;
                rp = malloc(3 * (size_t)m.vertex_count * sizeof *rp);
                rn = malloc(3 * (size_t)m.vertex_count * sizeof *rn);
                rt = malloc(3 * (size_t)m.triangle_count * sizeof *rt);
                memcpy(rp, m.positions, 3 * (size_t)m.vertex_count * sizeof *rp);
                memcpy(rn, m.normals, 3 * (size_t)m.vertex_count * sizeof *rn);
                memcpy(rt, m.triangles, 3 * (size_t)m.triangle_count * sizeof *rt);
            } else {
                ENSURE_EQ_INT(m.vertex_count, ref.vertex_count);
                ENSURE_EQ_INT(m.triangle_count, ref.triangle_count);
                ENSURE(memcmp(rp, m.positions, 3 * (size_t)m.vertex_count * sizeof *rp) == 0);
                ENSURE(memcmp(rn, m.normals, 3 * (size_t)m.vertex_count * sizeof *rn) == 0);
                ENSURE(memcmp(rt, m.triangles, 3 * (size_t)m.triangle_count * sizeof *rt) == 0);
            }
            pbf_surface_destroy(s);
        }
        free(rp);
        free(rn);
        free(rt);
    }
    cloud_free(&c);
}

/* Spray: clouds of particles scattered at random at up to about the rest density, as a
 * splash breaks into sheets and drops, isotropic and anisotropic. Every mesh is closed and
 * manifold with no triangle twice. These clouds meet the cube configurations that a resting
 * block never does: a cube whose surface runs through both contour segments of an ambiguous face
 * (before the case table kept its triangles off the cube faces, about every second cloud had a
 * pair of back-to-back triangles on a face, and edges with four triangles). */
static void test_spray(void) {
    const float r = 0.01f, L = 0.2f; /* (L / 2r)^3 = 1000 lattice sites */
    static const int counts[] = {500, 700, 1000, 1400};
    uint32_t seed = 2024u;
    int meshes = 0, triangles = 0;
    for (int aniso = 0; aniso <= 1; ++aniso) {
        pbf_surface *s = make_surface(r, 0.5f, aniso, 0, 0);
        ENSURE(s != NULL);
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k)
            for (int rep = 0; rep < 8; ++rep) {
                cloud c = {0};
                for (int i = 0; i < counts[k]; ++i) {
                    float q[3];
                    for (int a = 0; a < 3; ++a) {
                        seed = seed * 1664525u + 1013904223u;
                        q[a] = L * (float)(seed >> 8) / 16777216.0f;
                    }
                    cloud_add(&c, q[0], q[1], q[2]);
                }
                pbf_mesh m;
                pbf_error err;
                ENSURE(pbf_surface_reconstruct(s, c.x, c.y, c.z, c.n, &m, &err) == PBF_OK);
                ENSURE(m.triangle_count > 0);
                int euler;
                if (!check_manifold(&m, &euler)) {
                    printf("  spray: %d particles, cloud %d, %s kernels\n", c.n, rep,
                           aniso ? "anisotropic" : "isotropic");
                    cloud_free(&c);
                    pbf_surface_destroy(s);
                    return;
                }
                ++meshes;
                triangles += m.triangle_count;
                cloud_free(&c);
            }
        pbf_surface_destroy(s);
    }
    printf("  spray: %d meshes, %d triangles, all closed and manifold\n", meshes, triangles);
}

/* Splashing frames of a real run: the dam break of scenes/dam_break.json (a 0.48 x 0.6 x 0.6 m
 * column in a 1.6 x 0.8 x 0.6 m tank, 60 frames/s of 4 steps) at particle radius 0.0125 m
 * (10,944 particles), meshed at every frame from 0.70 s to 0.87 s (frames 42..52) while the
 * front runs up the far wall, breaks and falls back. Every mesh closed and manifold with no
 * triangle twice (with the case table that laid triangles on cube faces, frames 47, 49 and 50
 * had back-to-back twins and edges with four triangles). */
static void test_splash(void) {
    const float r = 0.0125f;
    pbf_world_def def = pbf_default_world_def();
    def.domain_min = (pbf_vec3){0, 0, 0};
    def.domain_max = (pbf_vec3){1.6f, 0.8f, 0.6f};
    def.particle_radius = r;
    snprintf(def.device, sizeof def.device, "cpu");
    pbf_world *w = NULL;
    pbf_error err;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_OK);
    pbf_fluid_block column = {{0, 0, 0}, {0.48f, 0.6f, 0.6f}, {0, 0, 0}};
    ENSURE(pbf_world_add_fluid_block(w, &column, &err) == PBF_OK);
    pbf_surface *s = make_surface(r, 0.5f, 0, 0, 0);
    ENSURE(s != NULL);
    int meshes = 0, triangles = 0, ok = 1;
    for (int frame = 1; frame <= 52 && ok; ++frame) {
        for (int k = 0; k < 4; ++k) {
            pbf_status st = pbf_world_step(w, 1.0f / 240.0f, &err);
            if (st != PBF_OK) {
                test_fail_(__FILE__, __LINE__, "step: %s", err.message);
                ok = 0;
                break;
            }
        }
        if (!ok || frame < 42) continue;
        pbf_particles p = pbf_world_particles(w);
        pbf_mesh m;
        ENSURE(pbf_surface_reconstruct(s, p.x, p.y, p.z, p.count, &m, &err) == PBF_OK);
        int euler;
        if (!check_manifold(&m, &euler)) {
            printf("  splash: frame %d (t = %.3f s), %d triangles\n", frame, frame / 60.0,
                   m.triangle_count);
            ok = 0;
        }
        ++meshes;
        triangles += m.triangle_count;
    }
    if (ok)
        printf("  splash: %d particles, %d meshes of frames 42..52, %d triangles, all closed and "
               "manifold\n",
               pbf_world_particles(w).count, meshes, triangles);
    pbf_surface_destroy(s);
    pbf_world_destroy(w);
}

/* Memory follows the liquid: two drops 1 km apart cost what two drops side by side cost. */
static void test_sparse(void) {
    const float r = 0.01f;
    cloud a = {0}, b = {0};
    make_ball(&a, r, 0.08f, 0, 0, 0);
    make_ball(&a, r, 0.08f, 1000.0f, 0, 0);
    make_ball(&b, r, 0.08f, 0, 0, 0);
    pbf_surface *s = make_surface(r, 0.5f, 0, 0, 0);
    ENSURE(s != NULL);
    pbf_mesh m;
    pbf_error err;
    ENSURE(pbf_surface_reconstruct(s, b.x, b.y, b.z, b.n, &m, &err) == PBF_OK);
    int one = pbf_surface_last_info(s).blocks, tri1 = m.triangle_count;
    ENSURE(pbf_surface_reconstruct(s, a.x, a.y, a.z, a.n, &m, &err) == PBF_OK);
    int two = pbf_surface_last_info(s).blocks;
    int euler;
    ENSURE(check_manifold(&m, &euler));
    ENSURE_EQ_INT(euler, 4); /* two spheres */
    ENSURE(m.triangle_count > tri1 * 19 / 10);
    ENSURE(two <= 2 * one + 64);
    ENSURE(pbf_surface_last_info(s).bytes < (size_t)64 << 20);
    pbf_surface_destroy(s);
    cloud_free(&a);
    cloud_free(&b);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_case_table);
    RUN_SUBTEST(test_params);
    RUN_SUBTEST(test_bad_input);
    RUN_SUBTEST(test_ball);
    RUN_SUBTEST(test_block);
    RUN_SUBTEST(test_anisotropic);
    RUN_SUBTEST(test_threads);
    RUN_SUBTEST(test_sparse);
    RUN_SUBTEST(test_spray);
    RUN_SUBTEST(test_splash);
    return test_end();
}
