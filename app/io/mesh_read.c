/* Reading surface meshes back: binary PLY and Wavefront OBJ (see mesh_read.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/mesh_read.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/util.h"

void pbfapp_mesh_data_free(pbfapp_mesh_data *m) {
    if (!m) return;
    free(m->positions);
    free(m->normals);
    free(m->triangles);
    memset(m, 0, sizeof *m);
}

pbf_mesh pbfapp_mesh_data_view(const pbfapp_mesh_data *m) {
    pbf_mesh v;
    v.vertex_count = m->vertex_count;
    v.triangle_count = m->triangle_count;
    v.positions = m->positions;
    v.normals = m->normals;
    v.triangles = m->triangles;
    return v;
}

/* Area-weighted vertex normals from the triangles (counter-clockwise from outside). */
static void compute_normals(pbfapp_mesh_data *m) {
    memset(m->normals, 0, (size_t)m->vertex_count * 3 * sizeof *m->normals);
    for (int t = 0; t < m->triangle_count; ++t) {
        const uint32_t *q = m->triangles + 3 * (size_t)t;
        const float *a = m->positions + 3 * (size_t)q[0], *b = m->positions + 3 * (size_t)q[1],
                    *c = m->positions + 3 * (size_t)q[2];
        float e1[3], e2[3];
        for (int k = 0; k < 3; ++k) {
            e1[k] = b[k] - a[k];
            e2[k] = c[k] - a[k];
        }
        float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                      e1[0] * e2[1] - e1[1] * e2[0]};
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 3; ++k) m->normals[3 * (size_t)q[j] + k] += n[k];
    }
    for (int v = 0; v < m->vertex_count; ++v) {
        float *n = m->normals + 3 * (size_t)v;
        float l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (l > 0)
            for (int k = 0; k < 3; ++k) n[k] /= l;
        else
            n[1] = 1;
    }
}

/* Checks indices and positions, normalises the normals. */
static pbf_status finish(const char *path, pbfapp_mesh_data *m, int have_normals,
                         pbf_error *err) {
    for (int v = 0; v < m->vertex_count; ++v)
        for (int k = 0; k < 3; ++k)
            if (!isfinite(m->positions[3 * (size_t)v + k]))
                return pbfapp_fail(err, PBF_ERR_IO, "%s: vertex %d has a non-finite coordinate",
                                   path, v);
    for (int t = 0; t < m->triangle_count; ++t)
        for (int k = 0; k < 3; ++k)
            if (m->triangles[3 * (size_t)t + k] >= (uint32_t)m->vertex_count)
                return pbfapp_fail(err, PBF_ERR_IO,
                                   "%s: face %d refers to vertex %u of %d", path, t,
                                   m->triangles[3 * (size_t)t + k], m->vertex_count);
    if (!have_normals) {
        compute_normals(m);
        return PBF_OK;
    }
    for (int v = 0; v < m->vertex_count; ++v) {
        float *n = m->normals + 3 * (size_t)v;
        float l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (l > 0 && isfinite(l))
            for (int k = 0; k < 3; ++k) n[k] /= l;
        else
            n[0] = 0, n[1] = 1, n[2] = 0;
    }
    return PBF_OK;
}

/* ---- PLY ---------------------------------------------------------------------------------- */

typedef enum ptype { P_NONE, P_I8, P_U8, P_I16, P_U16, P_I32, P_U32, P_F32, P_F64 } ptype;

static ptype ply_type(const char *s) {
    static const struct {
        const char *name;
        ptype t;
    } names[] = {{"char", P_I8},    {"int8", P_I8},     {"uchar", P_U8},   {"uint8", P_U8},
                 {"short", P_I16},  {"int16", P_I16},   {"ushort", P_U16}, {"uint16", P_U16},
                 {"int", P_I32},    {"int32", P_I32},   {"uint", P_U32},   {"uint32", P_U32},
                 {"float", P_F32},  {"float32", P_F32}, {"double", P_F64}, {"float64", P_F64}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (strcmp(s, names[i].name) == 0) return names[i].t;
    return P_NONE;
}

static size_t ptype_size(ptype t) {
    switch (t) {
    case P_I8:
    case P_U8: return 1;
    case P_I16:
    case P_U16: return 2;
    case P_I32:
    case P_U32:
    case P_F32: return 4;
    case P_F64: return 8;
    default: return 0;
    }
}

static double get_le(const unsigned char *b, ptype t) {
    uint64_t u = 0;
    size_t n = ptype_size(t);
    for (size_t i = 0; i < n; ++i) u |= (uint64_t)b[i] << (8 * i);
    switch (t) {
    case P_I8: return (double)(int8_t)u;
    case P_U8: return (double)(uint8_t)u;
    case P_I16: return (double)(int16_t)u;
    case P_U16: return (double)(uint16_t)u;
    case P_I32: return (double)(int32_t)u;
    case P_U32: return (double)(uint32_t)u;
    case P_F32: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        return (double)f;
    }
    case P_F64: {
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    default: return 0;
    }
}

#define MAX_PROPS 32

typedef struct ply_element {
    char name[32];
    long count;
    int nprops;
    char prop[MAX_PROPS][32];
    ptype type[MAX_PROPS];
    ptype list_count[MAX_PROPS]; /* P_NONE: a scalar property */
} ply_element;

/* The PLY header: its elements (at most 8) with their properties. */
static pbf_status read_ply_header(const char *path, FILE *f, ply_element el[8], int *nel_out,
                                  pbf_error *err) {
    char line[512];
    int nel = 0, binary = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "ply", 3) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: not a PLY file (no \"ply\" line)", path);
    for (;;) {
        if (!fgets(line, sizeof line, f))
            return pbfapp_fail(err, PBF_ERR_IO, "%s: the PLY header has no end_header", path);
        char w1[64] = "", w2[64] = "", w3[64] = "", w4[64] = "", w5[64] = "";
        int nw = sscanf(line, "%63s %63s %63s %63s %63s", w1, w2, w3, w4, w5);
        if (nw <= 0) continue;
        if (strcmp(w1, "end_header") == 0) break;
        if (strcmp(w1, "format") == 0) {
            if (strcmp(w2, "binary_little_endian") != 0)
                return pbfapp_fail(err, PBF_ERR_IO,
                                   "%s: PLY format \"%s\" is not supported (binary_little_endian "
                                   "only, as `pbf mesh` writes)",
                                   path, w2);
            binary = 1;
        } else if (strcmp(w1, "element") == 0) {
            if (nel == 8) return pbfapp_fail(err, PBF_ERR_IO, "%s: too many PLY elements", path);
            ply_element *e = &el[nel++];
            memset(e, 0, sizeof *e);
            snprintf(e->name, sizeof e->name, "%s", w2);
            char *end = NULL;
            e->count = strtol(w3, &end, 10);
            if (nw < 3 || *end || e->count < 0 || e->count > 200000000L)
                return pbfapp_fail(err, PBF_ERR_IO, "%s: bad PLY element line: %s", path, line);
        } else if (strcmp(w1, "property") == 0) {
            if (nel == 0 || el[nel - 1].nprops == MAX_PROPS)
                return pbfapp_fail(err, PBF_ERR_IO, "%s: bad PLY property line: %s", path, line);
            ply_element *e = &el[nel - 1];
            int p = e->nprops++;
            if (strcmp(w2, "list") == 0) {
                e->list_count[p] = ply_type(w3);
                e->type[p] = ply_type(w4);
                snprintf(e->prop[p], sizeof e->prop[p], "%s", w5);
                if (e->list_count[p] == P_NONE || e->list_count[p] == P_F32 ||
                    e->list_count[p] == P_F64 || e->type[p] == P_NONE)
                    return pbfapp_fail(err, PBF_ERR_IO, "%s: bad PLY list property: %s", path,
                                       line);
            } else {
                e->list_count[p] = P_NONE;
                e->type[p] = ply_type(w2);
                snprintf(e->prop[p], sizeof e->prop[p], "%s", w3);
                if (e->type[p] == P_NONE)
                    return pbfapp_fail(err, PBF_ERR_IO, "%s: unknown PLY type in: %s", path, line);
            }
        }
    }
    if (!binary) return pbfapp_fail(err, PBF_ERR_IO, "%s: the PLY header has no format line", path);
    *nel_out = nel;
    return PBF_OK;
}

/* The triangles of the PLY face element E (its polygons as fans; `list` is the vertex_indices
 * property). */
static pbf_status read_ply_faces(const char *path, FILE *f, const ply_element *E, int list,
                                 pbfapp_mesh_data *m, pbf_error *err) {
    size_t cap = (size_t)E->count + 16, nt = 0;
    m->triangles = malloc(cap * 3 * sizeof *m->triangles);
    if (!m->triangles)
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (long t = 0; t < E->count; ++t) {
        uint32_t poly[64];
        int npoly = 0;
        for (int p = 0; p < E->nprops; ++p) {
            unsigned char b[8];
            if (E->list_count[p] == P_NONE) {
                if (fread(b, 1, ptype_size(E->type[p]), f) != ptype_size(E->type[p]))
                    return pbfapp_fail(err, PBF_ERR_IO, "%s: ends inside face %ld", path,
                                       t);
                continue;
            }
            if (fread(b, 1, ptype_size(E->list_count[p]), f) !=
                ptype_size(E->list_count[p]))
                return pbfapp_fail(err, PBF_ERR_IO, "%s: ends inside face %ld", path, t);
            double cnt = get_le(b, E->list_count[p]);
            if (cnt < 0 || cnt > 64)
                return pbfapp_fail(err, PBF_ERR_IO, "%s: face %ld has %g vertices", path,
                                   t, cnt);
            for (int k = 0; k < (int)cnt; ++k) {
                if (fread(b, 1, ptype_size(E->type[p]), f) != ptype_size(E->type[p]))
                    return pbfapp_fail(err, PBF_ERR_IO, "%s: ends inside face %ld", path,
                                       t);
                double idx = get_le(b, E->type[p]);
                if (p == list) {
                    if (idx < 0 || idx >= 4294967295.0)
                        return pbfapp_fail(err, PBF_ERR_IO,
                                           "%s: face %ld has vertex index %g", path, t,
                                           idx);
                    poly[npoly++] = (uint32_t)idx;
                }
            }
        }
        for (int k = 2; k < npoly; ++k) { /* a fan */
            if (nt == cap) {
                cap *= 2;
                uint32_t *g = realloc(m->triangles, cap * 3 * sizeof *g);
                if (!g)
                    return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                       path);
                m->triangles = g;
            }
            m->triangles[3 * nt] = poly[0];
            m->triangles[3 * nt + 1] = poly[k - 1];
            m->triangles[3 * nt + 2] = poly[k];
            ++nt;
        }
    }
    if (nt > (size_t)INT32_MAX)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: too many triangles", path);
    m->triangle_count = (int)nt;
    return PBF_OK;
}

static pbf_status read_ply(const char *path, FILE *f, pbfapp_mesh_data *m, pbf_error *err) {
    ply_element el[8];
    int nel = 0;
    pbf_status hst = read_ply_header(path, f, el, &nel, err);
    if (hst != PBF_OK) return hst;
    int have_normals = 0;
    for (int e = 0; e < nel; ++e) {
        ply_element *E = &el[e];
        int is_vertex = strcmp(E->name, "vertex") == 0, is_face = strcmp(E->name, "face") == 0;
        int col[6] = {-1, -1, -1, -1, -1, -1}, list = -1;
        static const char *const names[6] = {"x", "y", "z", "nx", "ny", "nz"};
        size_t fixed = 0;
        int has_list = 0;
        for (int p = 0; p < E->nprops; ++p) {
            if (E->list_count[p] != P_NONE) {
                has_list = 1;
                if (strcmp(E->prop[p], "vertex_indices") == 0 ||
                    strcmp(E->prop[p], "vertex_index") == 0)
                    list = p;
            } else {
                fixed += ptype_size(E->type[p]);
            }
            for (int k = 0; k < 6; ++k)
                if (is_vertex && strcmp(E->prop[p], names[k]) == 0) col[k] = p;
        }
        if (is_vertex) {
            if (col[0] < 0 || col[1] < 0 || col[2] < 0 || has_list)
                return pbfapp_fail(err, PBF_ERR_IO,
                                   "%s: the PLY vertex element needs properties x, y, z", path);
            have_normals = col[3] >= 0 && col[4] >= 0 && col[5] >= 0;
            m->vertex_count = (int)E->count;
            m->positions = malloc((size_t)E->count * 3 * sizeof *m->positions + 1);
            m->normals = malloc((size_t)E->count * 3 * sizeof *m->normals + 1);
            unsigned char *rec = malloc(fixed + 1);
            if (!m->positions || !m->normals || !rec) {
                free(rec);
                return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            size_t off[MAX_PROPS], o = 0;
            for (int p = 0; p < E->nprops; ++p) {
                off[p] = o;
                o += ptype_size(E->type[p]);
            }
            for (long v = 0; v < E->count; ++v) {
                if (fread(rec, 1, fixed, f) != fixed) {
                    free(rec);
                    return pbfapp_fail(err, PBF_ERR_IO, "%s: ends inside vertex %ld of %ld", path,
                                       v, E->count);
                }
                for (int k = 0; k < 6; ++k) {
                    if (col[k] < 0) continue;
                    float val = (float)get_le(rec + off[col[k]], E->type[col[k]]);
                    (k < 3 ? m->positions : m->normals)[3 * (size_t)v + (size_t)(k % 3)] = val;
                }
            }
            free(rec);
        } else if (is_face) {
            if (list < 0)
                return pbfapp_fail(err, PBF_ERR_IO,
                                   "%s: the PLY face element has no vertex_indices list", path);
            pbf_status fst = read_ply_faces(path, f, E, list, m, err);
            if (fst != PBF_OK) return fst;
        } else {
            if (has_list)
                return pbfapp_fail(err, PBF_ERR_IO,
                                   "%s: PLY element \"%s\" with a list property is not supported",
                                   path, E->name);
            if (fseek(f, (long)(fixed * (size_t)E->count), SEEK_CUR) != 0)
                return pbfapp_fail(err, PBF_ERR_IO, "%s: %s", path, strerror(errno));
        }
    }
    if (!m->positions && !m->triangles)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: the PLY file has no vertex element", path);
    return finish(path, m, have_normals, err);
}

/* ---- OBJ ---------------------------------------------------------------------------------- */

typedef struct fbuf {
    float *a;
    size_t n, cap;
} fbuf;

static int fbuf_push3(fbuf *b, const float v[3]) {
    if (b->n + 3 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 3 * 4096;
        float *g = realloc(b->a, cap * sizeof *g);
        if (!g) return 0;
        b->a = g;
        b->cap = cap;
    }
    memcpy(b->a + b->n, v, 3 * sizeof *v);
    b->n += 3;
    return 1;
}

/* OBJ index (1-based, or negative: relative to the end) -> 0-based, or -1. */
static long obj_index(long i, size_t count) {
    if (i > 0 && (size_t)i <= count) return i - 1;
    if (i < 0 && (size_t)(-i) <= count) return (long)count + i;
    return -1;
}

static pbf_status read_obj(const char *path, FILE *f, pbfapp_mesh_data *m, pbf_error *err) {
    fbuf pos = {0}, nrm = {0};
    uint32_t *tris = NULL, *corner_normal = NULL; /* per triangle corner: normal index + 1 */
    size_t nt = 0, cap = 0;
    char line[4096];
    long lineno = 0;
    pbf_status st = PBF_OK;
    int have_vn = 1;
    while (st == PBF_OK && fgets(line, sizeof line, f)) {
        ++lineno;
        if (line[0] == 'v' && (line[1] == ' ' || line[1] == '\t')) {
            float v[3];
            if (sscanf(line + 2, "%f %f %f", &v[0], &v[1], &v[2]) != 3 || !fbuf_push3(&pos, v))
                st = pbfapp_fail(err, PBF_ERR_IO, "%s:%ld: bad vertex line", path, lineno);
        } else if (line[0] == 'v' && line[1] == 'n' && (line[2] == ' ' || line[2] == '\t')) {
            float v[3];
            if (sscanf(line + 3, "%f %f %f", &v[0], &v[1], &v[2]) != 3 || !fbuf_push3(&nrm, v))
                st = pbfapp_fail(err, PBF_ERR_IO, "%s:%ld: bad normal line", path, lineno);
        } else if (line[0] == 'f' && (line[1] == ' ' || line[1] == '\t')) {
            long vi[64], ni[64];
            int n = 0;
            char *p = line + 2;
            while (st == PBF_OK && n < 64) {
                while (*p == ' ' || *p == '\t') ++p;
                if (!*p || *p == '\n' || *p == '\r') break;
                char *end = NULL;
                long a = strtol(p, &end, 10), c = 0;
                if (end == p) {
                    st = pbfapp_fail(err, PBF_ERR_IO, "%s:%ld: bad face line", path, lineno);
                    break;
                }
                p = end;
                if (*p == '/') {
                    ++p;
                    if (*p != '/') { /* a texture coordinate */
                        (void)strtol(p, &end, 10);
                        p = end;
                    }
                    if (*p == '/') {
                        ++p;
                        c = strtol(p, &end, 10);
                        p = end;
                    }
                }
                while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') ++p;
                vi[n] = obj_index(a, pos.n / 3);
                ni[n] = c ? obj_index(c, nrm.n / 3) : -1;
                if (vi[n] < 0)
                    st = pbfapp_fail(err, PBF_ERR_IO, "%s:%ld: face vertex %ld does not exist",
                                     path, lineno, a);
                if (ni[n] < 0) have_vn = 0;
                ++n;
            }
            for (int k = 2; st == PBF_OK && k < n; ++k) {
                if (nt == cap) {
                    cap = cap ? 2 * cap : 8192;
                    uint32_t *g = realloc(tris, cap * 3 * sizeof *g);
                    uint32_t *h = g ? realloc(corner_normal, cap * 3 * sizeof *h) : NULL;
                    if (g) tris = g;
                    if (h) corner_normal = h;
                    if (!g || !h) {
                        st = pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
                        break;
                    }
                }
                const int c3[3] = {0, k - 1, k};
                for (int j = 0; j < 3; ++j) {
                    tris[3 * nt + (size_t)j] = (uint32_t)vi[c3[j]];
                    corner_normal[3 * nt + (size_t)j] = (uint32_t)(ni[c3[j]] + 1);
                }
                ++nt;
            }
        }
    }
    if (st == PBF_OK && ferror(f)) st = pbfapp_fail(err, PBF_ERR_IO, "%s: read error", path);
    if (st == PBF_OK && (pos.n / 3 > (size_t)INT32_MAX || nt > (size_t)INT32_MAX))
        st = pbfapp_fail(err, PBF_ERR_IO, "%s: too large", path);
    if (st == PBF_OK) {
        m->vertex_count = (int)(pos.n / 3);
        m->triangle_count = (int)nt;
        m->positions = pos.a ? pos.a : malloc(4);
        pos.a = NULL;
        m->triangles = tris ? tris : malloc(4);
        tris = NULL;
        m->normals = malloc((size_t)m->vertex_count * 3 * sizeof *m->normals + 1);
        if (!m->positions || !m->triangles || !m->normals)
            st = pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    if (st == PBF_OK && have_vn && nt > 0) {
        /* each vertex takes the normal of its first corner */
        for (size_t i = 0; i < (size_t)m->vertex_count * 3; ++i) m->normals[i] = 0;
        for (size_t c = 0; c < 3 * nt; ++c) {
            float *n = m->normals + 3 * (size_t)m->triangles[c];
            if (n[0] == 0 && n[1] == 0 && n[2] == 0)
                memcpy(n, nrm.a + 3 * (size_t)(corner_normal[c] - 1), 3 * sizeof *n);
        }
    }
    free(pos.a);
    free(nrm.a);
    free(tris);
    free(corner_normal);
    if (st != PBF_OK) return st;
    return finish(path, m, have_vn && nt > 0, err);
}

pbf_status pbfapp_read_mesh(const char *path, pbfapp_mesh_data *m, pbf_error *err) {
    pbfapp_mesh_data_free(m);
    const char *dot = strrchr(path, '.');
    int obj = dot && strcmp(dot, ".obj") == 0;
    if (!dot || (!obj && strcmp(dot, ".ply") != 0))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: not a .ply or .obj file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    pbf_status st = obj ? read_obj(path, f, m, err) : read_ply(path, f, m, err);
    fclose(f);
    if (st != PBF_OK) pbfapp_mesh_data_free(m);
    return st;
}
