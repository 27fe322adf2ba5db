/* Frame writers (VTP, PLY, CSV) with atomic replace, and the stats.jsonl log. */
#define _POSIX_C_SOURCE 200809L

#include "io/output.h"
#include "io/particle_fields.h"
#include "io/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* One frame of the series index: its number and its simulated time as stats.jsonl writes it. */
typedef struct index_entry {
    int frame;
    char time[40];
    int pieces; /* 1: the frame is frame_NNNNN.pvtp over pieces (a run under MPI) */
} index_entry;

struct pbfapp_output {
    char *dir;
    pbfapp_format format;
    FILE *stats;
    char *stats_path;
    uint32_t *order;
    size_t order_cap;
    char last[4096];
    char index_path[4200]; /* "" for formats without an index */
    index_entry *index;
    size_t index_count, index_cap;
    char extra[256]; /* members appended to every stats.jsonl line (pbfapp_output_stats_extra) */
};


/* ---- little-endian byte sink -------------------------------------------------------------- */

typedef struct sink {
    FILE *f;
    size_t used;
    int failed; /* 0, or the errno of the write that failed */
    unsigned char buf[1 << 16];
} sink;

static void sink_flush(sink *s) {
    if (s->used && !s->failed) {
        errno = 0;
        if (fwrite(s->buf, 1, s->used, s->f) != s->used) s->failed = errno ? errno : EIO;
    }
    s->used = 0;
}

static void sink_u32(sink *s, uint32_t v) {
    if (s->used + 4 > sizeof s->buf) sink_flush(s);
    unsigned char *b = s->buf + s->used;
    b[0] = (unsigned char)(v & 0xffu);
    b[1] = (unsigned char)((v >> 8) & 0xffu);
    b[2] = (unsigned char)((v >> 16) & 0xffu);
    b[3] = (unsigned char)((v >> 24) & 0xffu);
    s->used += 4;
}

static void sink_u64(sink *s, uint64_t v) {
    sink_u32(s, (uint32_t)(v & 0xffffffffu));
    sink_u32(s, (uint32_t)(v >> 32));
}

/* Big-endian words and bytes, for Houdini's .bgeo. */
static void sink_bytes(sink *s, const void *data, size_t n) {
    const unsigned char *b = data;
    while (n > 0) {
        if (s->used == sizeof s->buf) sink_flush(s);
        size_t k = sizeof s->buf - s->used;
        if (k > n) k = n;
        memcpy(s->buf + s->used, b, k);
        s->used += k;
        b += k;
        n -= k;
    }
}

static void sink_be32(sink *s, uint32_t v) {
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)((v >> 16) & 0xffu),
                          (unsigned char)((v >> 8) & 0xffu), (unsigned char)(v & 0xffu)};
    sink_bytes(s, b, 4);
}

static void sink_be16(sink *s, uint16_t v) {
    unsigned char b[2] = {(unsigned char)(v >> 8), (unsigned char)(v & 0xffu)};
    sink_bytes(s, b, 2);
}

/* ---- atomic files ------------------------------------------------------------------------- */

typedef struct atomic_file {
    FILE *f;
    char tmp[4200];
    const char *path;
} atomic_file;

static pbf_status atomic_open(atomic_file *a, const char *path, pbf_error *err) {
    a->path = path;
    a->f = NULL;
    int n = snprintf(a->tmp, sizeof a->tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof a->tmp)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: path too long", path);
    a->f = fopen(a->tmp, "wb");
    if (!a->f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", a->tmp, strerror(errno));
    return PBF_OK;
}

static void atomic_abort(atomic_file *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
}

/* Flush, fsync, close, rename over the final name and fsync the directory. */
static pbf_status atomic_commit(atomic_file *a, pbf_error *err) {
    FILE *f = a->f;
    a->f = NULL;
    return pbfapp_commit_file(f, a->tmp, a->path, err);
}

/* ---- particle order ----------------------------------------------------------------------- */

typedef struct id_index {
    uint32_t id, index;
} id_index;

static int cmp_id_index(const void *a, const void *b) {
    const id_index *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

pbf_status pbfapp_id_order(const pbf_particles *p, uint32_t *order, pbf_error *err) {
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    int direct = 1;
    for (size_t k = 0; k < n; ++k) order[k] = UINT32_MAX;
    for (size_t i = 0; i < n && direct; ++i) {
        uint32_t id = p->id[i];
        if (id >= n || order[id] != UINT32_MAX)
            direct = 0;
        else
            order[id] = (uint32_t)i;
    }
    if (direct) return PBF_OK;
    id_index *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory sorting %zu particles", n);
    for (size_t i = 0; i < n; ++i) {
        tmp[i].id = p->id[i];
        tmp[i].index = (uint32_t)i;
    }
    qsort(tmp, n, sizeof *tmp, cmp_id_index);
    for (size_t k = 0; k < n; ++k) order[k] = tmp[k].index;
    free(tmp);
    return PBF_OK;
}

/* ---- writers ------------------------------------------------------------------------------ */

static sink *sink_new(FILE *f) {
    sink *s = malloc(sizeof *s);
    if (s) {
        s->f = f;
        s->used = 0;
        s->failed = 0;
    }
    return s;
}

/* Element i of a column (4 bytes, float or uint32) as its bits. */
static uint32_t word_at(const void *column, size_t i) {
    uint32_t u;
    memcpy(&u, (const unsigned char *)column + (size_t)PBFAPP_FIELD_ELEMENT_BYTES * i, sizeof u);
    return u;
}

/* The columns of the public field table (pbf_particle_fields) with their arrays in a view. */
typedef struct columns {
    size_t n;
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    const void *data[PBFAPP_MAX_COLUMNS];
} columns;

static pbf_status get_columns(const pbf_particles *p, const char *path, columns *c,
                              pbf_error *err) {
    c->n = pbfapp_columns(c->col, PBFAPP_MAX_COLUMNS);
    if (c->n > PBFAPP_MAX_COLUMNS)
        return pbfapp_fail(err, PBF_ERR_LIMIT,
                           "%s: %zu particle columns, more than the %d a writer holds", path, c->n,
                           PBFAPP_MAX_COLUMNS);
    for (size_t j = 0; j < c->n; ++j) {
        c->data[j] = pbfapp_column_data(p, &c->col[j]);
        if (!c->data[j] && p->count > 0)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: the particles have no %s array",
                               path, c->col[j].info->name);
    }
    return PBF_OK;
}

/* Flushes and frees the sink; on a failed write removes PATH.tmp and names it. */
static pbf_status sink_finish(sink *s, atomic_file *a, const char *path, pbf_error *err) {
    sink_flush(s);
    int failed = s->failed;
    free(s);
    if (failed) {
        int e = failed; /* the errno of the failed write */
        atomic_abort(a);
        return pbfapp_fail(err, PBF_ERR_IO, "%s.tmp: write failed: %s%s", path, strerror(e),
                           pbfapp_space_hint(e));
    }
    return PBF_OK;
}

/* The active scalars and vectors of a VTK file: the first one-component and three-component float
 * arrays other than the position (the .vtp and .pvtp writers name the same). */
static void active_attributes(const pbf_field_info *fi, size_t nf, int pos, const char **scalars,
                              const char **vectors) {
    *scalars = *vectors = NULL;
    for (size_t k = 0; k < nf; ++k) {
        if ((int)k == pos || fi[k].type != PBF_FIELD_FLOAT32) continue;
        if (!*scalars && fi[k].components == 1) *scalars = fi[k].name;
        if (!*vectors && fi[k].components == 3) *vectors = fi[k].name;
    }
}

/* VTK XML PolyData, raw appended data: every field of the table but position is a PointData
 * array (table order), position is the Points, then one vertex per particle. Each appended
 * block is a UInt64 byte count followed by the bytes, in the order the header names them. */
pbf_status pbfapp_write_vtp(const char *path, const pbf_particles *p, const uint32_t *order,
                            double time, pbf_error *err) {
    columns cs;
    pbf_status st = get_columns(p, path, &cs, err);
    if (st != PBF_OK) return st;
    size_t nf = 0;
    const pbf_field_info *fi = pbf_particle_fields(&nf);
    const int pos = pbfapp_field_index("position");
    if (pos < 0 || fi[pos].components != 3)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: no 3-component position field",
                           path);
    atomic_file a;
    st = atomic_open(&a, path, err);
    if (st != PBF_OK) return st;
    uint64_t n = p->count > 0 ? (uint64_t)p->count : 0;
    FILE *f = a.f;
    const char *scalars, *vectors;
    active_attributes(fi, nf, pos, &scalars, &vectors);
    fprintf(f,
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" "
            "header_type=\"UInt64\">\n"
            "  <PolyData>\n"
            "    <FieldData>\n"
            "      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" "
            "format=\"ascii\">%.17g</DataArray>\n"
            "    </FieldData>\n"
            "    <Piece NumberOfPoints=\"%llu\" NumberOfVerts=\"%llu\" NumberOfLines=\"0\" "
            "NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n"
            "      <PointData%s%s%s%s%s%s>\n",
            time, (unsigned long long)n, (unsigned long long)n, scalars ? " Scalars=\"" : "",
            scalars ? scalars : "", scalars ? "\"" : "", vectors ? " Vectors=\"" : "",
            vectors ? vectors : "", vectors ? "\"" : "");
    uint64_t offset = 0;
    for (size_t k = 0; k < nf; ++k) {
        if ((int)k == pos) continue;
        char comps[40] = "";
        if (fi[k].components > 1)
            snprintf(comps, sizeof comps, " NumberOfComponents=\"%d\"", fi[k].components);
        fprintf(f,
                "        <DataArray type=\"%s\" Name=\"%s\"%s format=\"appended\" "
                "offset=\"%llu\"/>\n",
                fi[k].type == PBF_FIELD_UINT32 ? "UInt32" : "Float32", fi[k].name, comps,
                (unsigned long long)offset);
        offset += 8 + 4 * (uint64_t)fi[k].components * n;
    }
    uint64_t off_points = offset;
    uint64_t off_conn = off_points + 8 + 12 * n;
    uint64_t off_offsets = off_conn + 8 + 4 * n;
    fprintf(f,
            "      </PointData>\n"
            "      <Points>\n"
            "        <DataArray type=\"Float32\" Name=\"Points\" NumberOfComponents=\"3\" "
            "format=\"appended\" offset=\"%llu\"/>\n"
            "      </Points>\n"
            "      <Verts>\n"
            "        <DataArray type=\"Int32\" Name=\"connectivity\" format=\"appended\" "
            "offset=\"%llu\"/>\n"
            "        <DataArray type=\"Int32\" Name=\"offsets\" format=\"appended\" "
            "offset=\"%llu\"/>\n"
            "      </Verts>\n"
            "    </Piece>\n"
            "  </PolyData>\n"
            "  <AppendedData encoding=\"raw\">\n"
            "   _",
            (unsigned long long)off_points, (unsigned long long)off_conn,
            (unsigned long long)off_offsets);
    sink *s = sink_new(f);
    if (!s) {
        atomic_abort(&a);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    /* the PointData blocks in table order, then the Points: field `pos` last */
    for (size_t pass = 0; pass <= nf; ++pass) {
        size_t k = pass < nf ? pass : (size_t)pos;
        if (pass < nf && (int)k == pos) continue;
        size_t first = 0;
        while (first < cs.n && cs.col[first].field != k) ++first;
        int nc = fi[k].components;
        sink_u64(s, 4 * (uint64_t)nc * n);
        for (uint64_t r = 0; r < n; ++r) {
            uint32_t i = order[r];
            for (int c = 0; c < nc; ++c) sink_u32(s, word_at(cs.data[first + (size_t)c], i));
        }
    }
    sink_u64(s, 4 * n);
    for (uint64_t k = 0; k < n; ++k) sink_u32(s, (uint32_t)k);
    sink_u64(s, 4 * n);
    for (uint64_t k = 0; k < n; ++k) sink_u32(s, (uint32_t)(k + 1));
    st = sink_finish(s, &a, path, err);
    if (st != PBF_OK) return st;
    fputs("\n  </AppendedData>\n</VTKFile>\n", f);
    return atomic_commit(&a, err);
}

/* Binary little-endian PLY: one vertex per particle, one property per column of the table. */
pbf_status pbfapp_write_ply(const char *path, const pbf_particles *p, const uint32_t *order,
                            double time, pbf_error *err) {
    columns cs;
    pbf_status st = get_columns(p, path, &cs, err);
    if (st != PBF_OK) return st;
    atomic_file a;
    st = atomic_open(&a, path, err);
    if (st != PBF_OK) return st;
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    fprintf(a.f,
            "ply\n"
            "format binary_little_endian 1.0\n"
            "comment pbf %s time %.17g\n"
            "element vertex %zu\n",
            PBF_VERSION_STRING, time, n);
    for (size_t j = 0; j < cs.n; ++j) {
        char name[80];
        pbfapp_column_name(&cs.col[j], name, sizeof name);
        fprintf(a.f, "property %s %s\n",
                cs.col[j].info->type == PBF_FIELD_UINT32 ? "uint" : "float", name);
    }
    fputs("end_header\n", a.f);
    sink *s = sink_new(a.f);
    if (!s) {
        atomic_abort(&a);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (size_t k = 0; k < n; ++k) {
        uint32_t i = order[k];
        for (size_t j = 0; j < cs.n; ++j) sink_u32(s, word_at(cs.data[j], i));
    }
    st = sink_finish(s, &a, path, err);
    if (st != PBF_OK) return st;
    return atomic_commit(&a, err);
}

/* CSV: a header line of column names (x,y,z,vx,vy,vz,density,id), one particle per line in id
 * order; the id column lets a reader follow a particle across frames. */
pbf_status pbfapp_write_csv(const char *path, const pbf_particles *p, const uint32_t *order,
                            pbf_error *err) {
    columns cs;
    pbf_status st = get_columns(p, path, &cs, err);
    if (st != PBF_OK) return st;
    atomic_file a;
    st = atomic_open(&a, path, err);
    if (st != PBF_OK) return st;
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    for (size_t j = 0; j < cs.n; ++j) {
        char name[80];
        pbfapp_column_name(&cs.col[j], name, sizeof name);
        fprintf(a.f, "%s%s", j ? "," : "", name);
    }
    fputc('\n', a.f);
    char line[40 * PBFAPP_MAX_COLUMNS + 2];
    for (size_t k = 0; k < n; ++k) {
        uint32_t i = order[k];
        size_t at = 0;
        for (size_t j = 0; j < cs.n; ++j) {
            uint32_t u = word_at(cs.data[j], i);
            const char *sep = j ? "," : "";
            int w;
            if (cs.col[j].info->type == PBF_FIELD_UINT32) {
                w = snprintf(line + at, sizeof line - at, "%s%u", sep, (unsigned)u);
            } else {
                float v;
                memcpy(&v, &u, sizeof v);
                w = snprintf(line + at, sizeof line - at, "%s%.9g", sep, (double)v);
            }
            if (w > 0) at += (size_t)w;
        }
        line[at++] = '\n';
        fwrite(line, 1, at, a.f);
    }
    return atomic_commit(&a, err);
}

/* ---- Houdini classic geometry (.geo text, .bgeo binary) --------------------------------------- */

/* The Houdini name, type and type code of a field's point attribute: position is the point
 * itself (P); velocity is the vector attribute v; other float fields keep their name as float
 * attributes, uint32 fields (id) are int attributes. Codes are those of the binary format
 * (0 float, 1 int, 5 vector). */
static void houdini_attribute(const pbf_field_info *f, const char **name, const char **type,
                              int *code) {
    *name = strcmp(f->name, "velocity") == 0 ? "v" : f->name;
    if (f->type == PBF_FIELD_UINT32) {
        *type = "int";
        *code = 1;
    } else if (f->components == 3 && strcmp(f->name, "velocity") == 0) {
        *type = "vector";
        *code = 5;
    } else {
        *type = "float";
        *code = 0;
    }
}

/* The columns of field k in a column table (first index), or cs->n. */
static size_t first_column(const columns *cs, size_t field) {
    size_t j = 0;
    while (j < cs->n && cs->col[j].field != field) ++j;
    return j;
}

/* Houdini's classic ASCII geometry ("PGEOMETRY V5", the .geo of Houdini 11 and older, which
 * every later Houdini still reads): a header of counts, the point attribute dictionary (NAME SIZE
 * TYPE DEFAULTS), then one line per point "x y z 1 (attribute values)", no primitives, and the
 * empty extra section. */
pbf_status pbfapp_write_geo(const char *path, const pbf_particles *p, const uint32_t *order,
                            pbf_error *err) {
    columns cs;
    pbf_status st = get_columns(p, path, &cs, err);
    if (st != PBF_OK) return st;
    size_t nf = 0;
    const pbf_field_info *fi = pbf_particle_fields(&nf);
    const int pos = pbfapp_field_index("position");
    if (pos < 0 || fi[pos].components != 3)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: no 3-component position field",
                           path);
    atomic_file a;
    st = atomic_open(&a, path, err);
    if (st != PBF_OK) return st;
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    fprintf(a.f,
            "PGEOMETRY V5\n"
            "NPoints %zu NPrims 0\n"
            "NPointGroups 0 NPrimGroups 0\n"
            "NPointAttrib %zu NVertexAttrib 0 NPrimAttrib 0 NAttrib 0\n",
            n, nf - 1);
    if (nf > 1) fputs("PointAttrib\n", a.f);
    for (size_t k = 0; k < nf; ++k) {
        if ((int)k == pos) continue;
        const char *name, *type;
        int code;
        houdini_attribute(&fi[k], &name, &type, &code);
        fprintf(a.f, "%s %d %s", name, fi[k].components, type);
        for (int c = 0; c < fi[k].components; ++c) fputs(" 0", a.f);
        fputc('\n', a.f);
    }
    const size_t p0 = first_column(&cs, (size_t)pos);
    char line[40 * PBFAPP_MAX_COLUMNS + 16];
    for (size_t r = 0; r < n; ++r) {
        uint32_t i = order[r];
        size_t at = 0;
        for (int c = 0; c < 3; ++c) {
            uint32_t u = word_at(cs.data[p0 + (size_t)c], i);
            float v;
            memcpy(&v, &u, sizeof v);
            int w = snprintf(line + at, sizeof line - at, "%.9g ", (double)v);
            if (w > 0) at += (size_t)w;
        }
        at += (size_t)snprintf(line + at, sizeof line - at, "1");
        if (nf > 1) line[at++] = ' ', line[at++] = '(';
        int first = 1;
        for (size_t j = 0; j < cs.n; ++j) {
            if (cs.col[j].field == (size_t)pos) continue;
            uint32_t u = word_at(cs.data[j], i);
            int w;
            if (cs.col[j].info->type == PBF_FIELD_UINT32) {
                w = snprintf(line + at, sizeof line - at, "%s%u", first ? "" : " ", (unsigned)u);
            } else {
                float v;
                memcpy(&v, &u, sizeof v);
                w = snprintf(line + at, sizeof line - at, "%s%.9g", first ? "" : " ", (double)v);
            }
            if (w > 0) at += (size_t)w;
            first = 0;
        }
        if (nf > 1) line[at++] = ')';
        line[at++] = '\n';
        fwrite(line, 1, at, a.f);
    }
    fputs("beginExtra\nendExtra\n", a.f);
    return atomic_commit(&a, err);
}

/* Houdini's classic binary geometry (.bgeo before Houdini 12; read by every Houdini since, and by
 * Partio): big-endian throughout. "Bgeo", 'V', int32 version 5, the eight int32 counts of the
 * text header, the point attribute dictionary (uint16 name length, name, uint16 size, int32 type
 * code, size int32 defaults), then per point x y z w (float32, w = 1) and its attribute values
 * (32 bits each), no primitives, no detail attributes, and the end bytes 0x00 0xff. */
pbf_status pbfapp_write_bgeo(const char *path, const pbf_particles *p, const uint32_t *order,
                             pbf_error *err) {
    columns cs;
    pbf_status st = get_columns(p, path, &cs, err);
    if (st != PBF_OK) return st;
    size_t nf = 0;
    const pbf_field_info *fi = pbf_particle_fields(&nf);
    const int pos = pbfapp_field_index("position");
    if (pos < 0 || fi[pos].components != 3)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: no 3-component position field",
                           path);
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    if (n > (size_t)INT32_MAX)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "%s: %zu points, more than .bgeo holds", path, n);
    atomic_file a;
    st = atomic_open(&a, path, err);
    if (st != PBF_OK) return st;
    sink *s = sink_new(a.f);
    if (!s) {
        atomic_abort(&a);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    sink_bytes(s, "BgeoV", 5);
    const uint32_t counts[9] = {5, (uint32_t)n, 0, 0, 0, (uint32_t)(nf - 1), 0, 0, 0};
    for (int k = 0; k < 9; ++k) sink_be32(s, counts[k]);
    for (size_t k = 0; k < nf; ++k) {
        if ((int)k == pos) continue;
        const char *name, *type;
        int code;
        houdini_attribute(&fi[k], &name, &type, &code);
        sink_be16(s, (uint16_t)strlen(name));
        sink_bytes(s, name, strlen(name));
        sink_be16(s, (uint16_t)fi[k].components);
        sink_be32(s, (uint32_t)code);
        for (int c = 0; c < fi[k].components; ++c) sink_be32(s, 0);
    }
    const size_t p0 = first_column(&cs, (size_t)pos);
    const float one = 1.0f;
    uint32_t one_bits;
    memcpy(&one_bits, &one, sizeof one_bits);
    for (size_t r = 0; r < n; ++r) {
        uint32_t i = order[r];
        for (int c = 0; c < 3; ++c) sink_be32(s, word_at(cs.data[p0 + (size_t)c], i));
        sink_be32(s, one_bits);
        for (size_t j = 0; j < cs.n; ++j)
            if (cs.col[j].field != (size_t)pos) sink_be32(s, word_at(cs.data[j], i));
    }
    const unsigned char end[2] = {0x00, 0xff};
    sink_bytes(s, end, 2);
    st = sink_finish(s, &a, path, err);
    if (st != PBF_OK) return st;
    return atomic_commit(&a, err);
}

/* ---- the output directory ----------------------------------------------------------------- */

/* An output directory that cannot be made or used is refused as a usage error (the exit
 * status 2: nothing was done), except where the disk or the system failed. */
static pbf_status dir_errno_status(int e) {
    return e == ENOSPC || e == EIO || e == ENOMEM
#ifdef EDQUOT
                   || e == EDQUOT
#endif
               ? PBF_ERR_IO
               : PBF_ERR_INVALID_ARGUMENT;
}

/* mkdir -p. */
static pbf_status make_dirs(const char *dir, pbf_error *err) {
    size_t len = strlen(dir);
    char *buf = malloc(len + 1);
    if (!buf) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
    memcpy(buf, dir, len + 1);
    for (size_t i = 1; i <= len; ++i) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char saved = buf[i];
        buf[i] = '\0';
        struct stat sb;
        if (stat(buf, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode)) {
                pbf_status st =
                    saved == '\0'
                        ? pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                                      "%s: cannot use it as the output directory: it exists and is "
                                      "not a directory",
                                      dir)
                        : pbfapp_fail(
                              err, PBF_ERR_INVALID_ARGUMENT,
                              "%s: cannot create the output directory: %s exists and is not "
                              "a directory",
                              dir, buf);
                free(buf);
                return st;
            }
        } else if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            pbf_status st = pbfapp_fail(err, dir_errno_status(e),
                                        "%s: cannot create the output directory%s%s: %s", dir,
                                        saved ? " at " : "", saved ? buf : "", strerror(e));
            free(buf);
            return st;
        }
        buf[i] = saved;
    }
    free(buf);
    return PBF_OK;
}

static void json_number(char *buf, size_t size, double v, const char *fmt);

/* ---- the files of a run: frames, images, series indexes ------------------------------------ */

/* frame_NNNNN.EXT with 5 or more digits and EXT a frame format or png (the images of --render and
 * `pbf render`), or the NAME.tmp of an interrupted write: its frame number, else -1. */
static long owned_frame_number(const char *name) {
    static const char *const frame_exts[] = {"vtp", "ply", "csv", "geo", "bgeo", "png", "pvtp", NULL};
    static const char *const piece_exts[] = {"vtp", NULL}; /* frame_NNNNN_RRRRR.vtp: MPI pieces */
    static const char *const mesh_exts[] = {"ply", "obj", "vdb", NULL}; /* pbf run --mesh, pbf mesh */
    const char *const *exts;
    const char *q;
    if (strncmp(name, "frame_", 6) == 0) {
        exts = frame_exts;
        q = name + 6;
    } else if (strncmp(name, "mesh_", 5) == 0) {
        exts = mesh_exts;
        q = name + 5;
    } else {
        return -1;
    }
    long v = 0;
    int digits = 0;
    while (*q >= '0' && *q <= '9') {
        if (digits < 9) v = v * 10 + (*q - '0');
        ++q;
        ++digits;
    }
    if (digits < 5 || digits > 9) return -1;
    if (*q == '_' && exts == frame_exts) { /* a piece: _ and the process number */
        int pd = 0;
        for (++q; *q >= '0' && *q <= '9'; ++q) ++pd;
        if (pd < 5 || pd > 9) return -1;
        exts = piece_exts;
    }
    if (*q != '.') return -1;
    ++q;
    for (size_t k = 0; exts[k]; ++k) {
        size_t len = strlen(exts[k]);
        if (strncmp(q, exts[k], len) == 0 && (q[len] == '\0' || strcmp(q + len, ".tmp") == 0))
            return v;
    }
    return -1;
}

/* The series indexes pbf writes (frames.pvd, frames.EXT.series) and their NAME.tmp. */
static int owned_index(const char *name) {
    static const char *const names[] = {"frames.pvd", "frames.vtp.series", "frames.ply.series",
                                        "frames.csv.series"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
        size_t len = strlen(names[k]);
        if (strncmp(name, names[k], len) == 0 &&
            (name[len] == '\0' || strcmp(name + len, ".tmp") == 0))
            return 1;
    }
    return 0;
}

/* A fresh run refuses a directory holding frame files or indexes that no run wrote there (it has
 * neither scene.json nor stats.jsonl, which every run writes before its first frame): they are
 * someone else's, and the run would delete them. */
static pbf_status check_foreign_frames(const char *dir, pbf_error *err) {
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/scene.json", dir);
    if (stat(path, &sb) == 0) return PBF_OK;
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    if (stat(path, &sb) == 0) return PBF_OK;
    DIR *d = opendir(dir);
    if (!d) return PBF_OK; /* not there yet, or the open below reports it */
    char found[300] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL && !found[0]) {
        if (owned_frame_number(e->d_name) < 0 && !owned_index(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            snprintf(found, sizeof found, "%s", e->d_name);
    }
    closedir(d);
    if (!found[0]) return PBF_OK;
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                       "%s holds %s but no scene.json or stats.jsonl, so no `pbf run` wrote it; a "
                       "run replaces the frame files of its output directory: give another --out, "
                       "or move those files away",
                       dir, found);
}

/* Rewrites the series index atomically from o->index. */
static pbf_status write_index(pbfapp_output *o, pbf_error *err) {
    if (!o->index_path[0]) return PBF_OK;
    atomic_file a;
    pbf_status st = atomic_open(&a, o->index_path, err);
    if (st != PBF_OK) return st;
    const char *ext = pbfapp_format_extension(o->format);
    if (o->format == PBFAPP_FORMAT_VTP) {
        fputs("<?xml version=\"1.0\"?>\n"
              "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
              "  <Collection>\n",
              a.f);
        for (size_t k = 0; k < o->index_count; ++k)
            fprintf(a.f, "    <DataSet timestep=\"%s\" group=\"\" part=\"0\" file=\"frame_%05d.%s\"/>\n",
                    o->index[k].time, o->index[k].frame, o->index[k].pieces ? "pvtp" : ext);
        fputs("  </Collection>\n</VTKFile>\n", a.f);
    } else {
        fputs("{\n  \"file-series-version\" : \"1.0\",\n  \"files\" : [\n", a.f);
        for (size_t k = 0; k < o->index_count; ++k)
            fprintf(a.f, "    { \"name\" : \"frame_%05d.%s\", \"time\" : %s }%s\n",
                    o->index[k].frame, ext, o->index[k].time,
                    k + 1 < o->index_count ? "," : "");
        fputs("  ]\n}\n", a.f);
    }
    return atomic_commit(&a, err);
}

/* Appends frame `frame` at time `time` (text as in stats.jsonl), first dropping the entries of
 * frames >= it. */
static pbf_status index_add(pbfapp_output *o, int frame, const char *time, int pieces,
                            pbf_error *err) {
    while (o->index_count > 0 && o->index[o->index_count - 1].frame >= frame) --o->index_count;
    if (o->index_count == o->index_cap) {
        size_t cap = o->index_cap ? 2 * o->index_cap : 256;
        index_entry *g = realloc(o->index, cap * sizeof *g);
        if (!g) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", o->index_path);
        o->index = g;
        o->index_cap = cap;
    }
    index_entry *e = &o->index[o->index_count++];
    e->frame = frame;
    e->pieces = pieces;
    snprintf(e->time, sizeof e->time, "%s", time);
    return PBF_OK;
}

/* The entries of frames 0..keep_last from stats.jsonl (a resumed run, after the truncation). */
static pbf_status index_from_stats(pbfapp_output *o, int keep_last, pbf_error *err) {
    FILE *f = fopen(o->stats_path, "r");
    if (!f) return PBF_OK; /* no stats: an index of the frames still to come */
    char line[1024];
    pbf_status st = PBF_OK;
    while (st == PBF_OK && fgets(line, sizeof line, f)) {
        const char *fr = strstr(line, "\"frame\":");
        const char *tm = strstr(line, "\"time\":");
        if (!fr || !tm) continue;
        char *stop = NULL;
        long frame = strtol(fr + 8, &stop, 10);
        if (stop == fr + 8 || frame < 0 || frame > keep_last) continue;
        tm += 7;
        size_t len = strcspn(tm, ",}");
        if (len == 0 || len >= sizeof o->index[0].time || strncmp(tm, "null", 4) == 0) continue;
        char time[40];
        memcpy(time, tm, len);
        time[len] = '\0';
        /* a frame of pieces when its .pvtp is there and no .vtp (the run's mode may differ) */
        char path[4300];
        struct stat sb;
        snprintf(path, sizeof path, "%s/frame_%05ld.vtp", o->dir, frame);
        int pieces = 0;
        if (o->format == PBFAPP_FORMAT_VTP && stat(path, &sb) != 0) {
            snprintf(path, sizeof path, "%s/frame_%05ld.pvtp", o->dir, frame);
            pieces = stat(path, &sb) == 0;
        }
        st = index_add(o, (int)frame, time, pieces, err);
    }
    fclose(f);
    return st;
}

pbf_status pbfapp_output_claim(pbfapp_output *o, int keep_last, int *removed, pbf_error *err) {
    if (removed) *removed = 0;
    DIR *d = opendir(o->dir);
    if (!d) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open the directory: %s", o->dir, strerror(errno));
    const char *own_index = strrchr(o->index_path, '/');
    own_index = own_index ? own_index + 1 : "";
    char path[4400];
    pbf_status st = PBF_OK;
    struct dirent *e;
    while (st == PBF_OK && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        long frame = owned_frame_number(name);
        int drop = frame >= 0 ? frame > keep_last
                              : owned_index(name) && (keep_last < 0 || strcmp(name, own_index) != 0);
        if (!drop) continue;
        snprintf(path, sizeof path, "%s/%s", o->dir, name);
        struct stat sb;
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (unlink(path) != 0)
            st = pbfapp_fail(err, PBF_ERR_IO,
                             "%s: cannot remove this file of an earlier run (the new frames would "
                             "mix with it): %s",
                             path, strerror(errno));
        else if (removed)
            ++*removed;
    }
    closedir(d);
    if (st != PBF_OK) return st;
    o->index_count = 0;
    if (keep_last < 0 || !o->index_path[0]) return PBF_OK;
    st = index_from_stats(o, keep_last, err);
    if (st == PBF_OK) st = write_index(o, err);
    return st;
}

pbf_status pbfapp_output_dir_make(const char *dir, pbf_error *err) {
    if (!dir || !*dir)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "the output directory name is empty");
    if (strlen(dir) > 4000)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%.60s...: path too long", dir);
    pbf_status st = make_dirs(dir, err);
    if (st != PBF_OK) return st;
    if (access(dir, W_OK | X_OK) != 0) {
        int e = errno;
        return pbfapp_fail(err, dir_errno_status(e), "%s: the output directory is not writable: %s",
                           dir, strerror(e));
    }
    return PBF_OK;
}

static pbf_status output_open(const char *dir, pbfapp_format format, const char *stats_mode,
                              pbfapp_output **out, pbf_error *err) {
    *out = NULL;
    pbf_status st = pbfapp_output_dir_make(dir, err);
    if (st != PBF_OK) return st;
    if (stats_mode[0] == 'w' && (st = check_foreign_frames(dir, err)) != PBF_OK) return st;
    pbfapp_output *o = calloc(1, sizeof *o);
    if (!o) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
    o->format = format;
    size_t len = strlen(dir);
    o->dir = malloc(len + 1);
    o->stats_path = malloc(len + 16);
    if (!o->dir || !o->stats_path) {
        pbfapp_output_close(o, NULL);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
    }
    memcpy(o->dir, dir, len + 1);
    while (len > 1 && o->dir[len - 1] == '/') o->dir[--len] = '\0';
    snprintf(o->stats_path, len + 16, "%s/stats.jsonl", o->dir);
    if (format == PBFAPP_FORMAT_VTP)
        snprintf(o->index_path, sizeof o->index_path, "%s/frames.pvd", o->dir);
    else if (format == PBFAPP_FORMAT_PLY || format == PBFAPP_FORMAT_CSV)
        snprintf(o->index_path, sizeof o->index_path, "%s/frames.%s.series", o->dir,
                 pbfapp_format_extension(format));
    o->stats = fopen(o->stats_path, stats_mode);
    if (!o->stats) {
        int e = errno;
        st = pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", o->stats_path, strerror(e));
        pbfapp_output_close(o, NULL);
        return st;
    }
    *out = o;
    return PBF_OK;
}

pbf_status pbfapp_output_frame(pbfapp_output *o, int frame, double time, const pbf_particles *p,
                               pbf_error *err) {
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    if (n > o->order_cap) {
        uint32_t *grown = realloc(o->order, n * sizeof *grown);
        if (!grown)
            return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory ordering %zu particles", n);
        o->order = grown;
        o->order_cap = n;
    }
    pbf_status st = pbfapp_id_order(p, o->order, err);
    if (st != PBF_OK) return st;
    snprintf(o->last, sizeof o->last, "%s/frame_%05d.%s", o->dir, frame,
             pbfapp_format_extension(o->format));
    switch (o->format) {
    case PBFAPP_FORMAT_VTP: st = pbfapp_write_vtp(o->last, p, o->order, time, err); break;
    case PBFAPP_FORMAT_PLY: st = pbfapp_write_ply(o->last, p, o->order, time, err); break;
    case PBFAPP_FORMAT_CSV: st = pbfapp_write_csv(o->last, p, o->order, err); break;
    case PBFAPP_FORMAT_GEO: st = pbfapp_write_geo(o->last, p, o->order, err); break;
    case PBFAPP_FORMAT_BGEO: st = pbfapp_write_bgeo(o->last, p, o->order, err); break;
    default:
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "unknown output format %d",
                           (int)o->format);
    }
    if (st != PBF_OK || !o->index_path[0]) return st;
    /* the index lists the frame once its file is complete, with its time as in stats.jsonl */
    char t[40];
    json_number(t, sizeof t, time, "%.9g");
    st = index_add(o, frame, t, 0, err);
    return st == PBF_OK ? write_index(o, err) : st;
}

pbf_status pbfapp_write_piece(const char *dir, int frame, int piece, double time,
                              const pbf_particles *p, pbf_error *err) {
    char path[4300];
    snprintf(path, sizeof path, "%s/frame_%05d_%05d.vtp", dir, frame, piece);
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory ordering %zu particles",
                           path, n);
    pbf_status st = pbfapp_id_order(p, order, err);
    if (st == PBF_OK) st = pbfapp_write_vtp(path, p, order, time, err);
    free(order);
    return st;
}

pbf_status pbfapp_output_pieces(pbfapp_output *o, int frame, double time, int pieces,
                                pbf_error *err) {
    if (o->format != PBFAPP_FORMAT_VTP)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "mpi_output = \"pieces\" needs format = \"vtp\" (format is \"%s\")",
                           pbfapp_format_extension(o->format));
    snprintf(o->last, sizeof o->last, "%s/frame_%05d.pvtp", o->dir, frame);
    size_t nf = 0;
    const pbf_field_info *fi = pbf_particle_fields(&nf);
    const int pos = pbfapp_field_index("position");
    atomic_file a;
    pbf_status st = atomic_open(&a, o->last, err);
    if (st != PBF_OK) return st;
    FILE *f = a.f;
    /* the same arrays, names and active attributes as each piece (pbfapp_write_vtp) */
    const char *scalars, *vectors;
    active_attributes(fi, nf, pos, &scalars, &vectors);
    fprintf(f,
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"PPolyData\" version=\"1.0\" byte_order=\"LittleEndian\" "
            "header_type=\"UInt64\">\n"
            "  <PPolyData GhostLevel=\"0\">\n"
            "    <PPointData%s%s%s%s%s%s>\n",
            scalars ? " Scalars=\"" : "", scalars ? scalars : "", scalars ? "\"" : "",
            vectors ? " Vectors=\"" : "", vectors ? vectors : "", vectors ? "\"" : "");
    for (size_t k = 0; k < nf; ++k) {
        if ((int)k == pos) continue;
        char comps[40] = "";
        if (fi[k].components > 1)
            snprintf(comps, sizeof comps, " NumberOfComponents=\"%d\"", fi[k].components);
        fprintf(f, "      <PDataArray type=\"%s\" Name=\"%s\"%s/>\n",
                fi[k].type == PBF_FIELD_UINT32 ? "UInt32" : "Float32", fi[k].name, comps);
    }
    fputs("    </PPointData>\n"
          "    <PPoints>\n"
          "      <PDataArray type=\"Float32\" Name=\"Points\" NumberOfComponents=\"3\"/>\n"
          "    </PPoints>\n",
          f);
    for (int r = 0; r < pieces; ++r)
        fprintf(f, "    <Piece Source=\"frame_%05d_%05d.vtp\"/>\n", frame, r);
    fputs("  </PPolyData>\n</VTKFile>\n", f);
    if (ferror(f)) {
        atomic_abort(&a);
        return pbfapp_fail(err, PBF_ERR_IO, "%s.tmp: write failed", o->last);
    }
    st = atomic_commit(&a, err);
    if (st != PBF_OK) return st;
    char t[40];
    json_number(t, sizeof t, time, "%.9g");
    st = index_add(o, frame, t, 1, err);
    return st == PBF_OK ? write_index(o, err) : st;
}

/* A JSON number, or null when not finite. */
static void json_number(char *buf, size_t size, double v, const char *fmt) {
    if (isfinite(v))
        snprintf(buf, size, fmt, v);
    else
        snprintf(buf, size, "null");
}

pbf_status pbfapp_output_stats(pbfapp_output *o, int frame, const pbf_stats *s, double ms,
                               pbf_error *err) {
    char t[40], avg[40], mx[40], speed[40], wall[40], serr[40], derr[40];
    json_number(t, sizeof t, s->time, "%.9g");
    json_number(serr, sizeof serr, s->solver_error, "%.6g");
    json_number(derr, sizeof derr, s->divergence_error, "%.6g");
    json_number(avg, sizeof avg, s->density_error_avg, "%.6g");
    json_number(mx, sizeof mx, s->density_error_max, "%.6g");
    json_number(speed, sizeof speed, s->max_speed, "%.6g");
    json_number(wall, sizeof wall, ms, "%.3f");
    char line[768];
    int n = snprintf(line, sizeof line,
                     "{\"frame\":%d,\"time\":%s,\"particles\":%d,\"density_error_avg\":%s,"
                     "\"density_error_max\":%s,\"max_speed\":%s,\"nonfinite\":%d,\"escaped\":%d,"
                     "\"speed_clamps\":%lld,\"ms\":%s,\"substeps\":%d,\"iterations\":%d,"
                     "\"solver_error\":%s,\"divergence_iterations\":%d,\"divergence_error\":%s%s}\n",
                     frame, t, s->particles, avg, mx, speed, s->nonfinite, s->escaped,
                     (long long)s->speed_clamps, wall, s->substeps, s->iterations, serr,
                     s->divergence_iterations, derr, o->extra);
    if (n < 0 || (size_t)n >= sizeof line) n = (int)strlen(line);
    /* One line or nothing: a failed write (disk full) is cut back to the last complete line. */
    long before = ftell(o->stats);
    errno = 0;
    int e = 0;
    if (fwrite(line, 1, (size_t)n, o->stats) != (size_t)n || fflush(o->stats) != 0 ||
        ferror(o->stats))
        e = errno ? errno : EIO;
    if (e) {
        clearerr(o->stats);
        if (before >= 0 && ftruncate(fileno(o->stats), (off_t)before) == 0)
            fseek(o->stats, before, SEEK_SET);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: write failed: %s%s", o->stats_path, strerror(e),
                    pbfapp_space_hint(e));
    }
    return PBF_OK;
}

void pbfapp_output_stats_extra(pbfapp_output *o, const char *members) {
    if (o) snprintf(o->extra, sizeof o->extra, "%s", members ? members : "");
}

pbf_status pbfapp_output_open(const char *dir, pbfapp_format format, pbfapp_output **out,
                              pbf_error *err) {
    return output_open(dir, format, "w", out, err);
}

pbf_status pbfapp_output_open_append(const char *dir, pbfapp_format format, pbfapp_output **out,
                                     pbf_error *err) {
    return output_open(dir, format, "a", out, err);
}

pbf_status pbfapp_output_sync(pbfapp_output *o, pbf_error *err) {
    if (!o || !o->stats) return PBF_OK;
    if (fflush(o->stats) != 0 || ferror(o->stats))
        return pbfapp_fail(err, PBF_ERR_IO, "%s: write failed: %s", o->stats_path,
                    strerror(errno ? errno : EIO));
    if (fsync(fileno(o->stats)) != 0 && errno != EINVAL && errno != EROFS)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: fsync failed: %s", o->stats_path, strerror(errno));
    return PBF_OK;
}

const char *pbfapp_output_last_path(const pbfapp_output *o) {
    return o ? o->last : "";
}

pbf_status pbfapp_output_close(pbfapp_output *o, pbf_error *err) {
    if (!o) return PBF_OK;
    pbf_status st = PBF_OK;
    if (o->stats) {
        int bad = ferror(o->stats);
        if (fclose(o->stats) != 0 || bad)
            st = pbfapp_fail(err, PBF_ERR_IO, "%s: write failed: %s", o->stats_path,
                      strerror(errno ? errno : EIO));
    }
    free(o->dir);
    free(o->stats_path);
    free(o->order);
    free(o->index);
    free(o);
    return st;
}
