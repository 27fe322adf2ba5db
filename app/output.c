/* Frame writers (VTP, PLY, CSV) with atomic replace, and the stats.jsonl log. */
#define _POSIX_C_SOURCE 200809L

#include "output.h"
#include "particle_fields.h"
#include "util.h"

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

struct pbfapp_output {
    char *dir;
    pbfapp_format format;
    FILE *stats;
    char *stats_path;
    uint32_t *order;
    size_t order_cap;
    char last[4096];
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
    /* the active scalars and vectors: the first one-component and three-component float arrays */
    const char *scalars = NULL, *vectors = NULL;
    for (size_t k = 0; k < nf; ++k) {
        if ((int)k == pos || fi[k].type != PBF_FIELD_FLOAT32) continue;
        if (!scalars && fi[k].components == 1) scalars = fi[k].name;
        if (!vectors && fi[k].components == 3) vectors = fi[k].name;
    }
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

/* CSV: a header line of column names, one particle per line. The id column is left out: the
 * rows are in id order. */
pbf_status pbfapp_write_csv(const char *path, const pbf_particles *p, const uint32_t *order,
                            pbf_error *err) {
    columns cs;
    pbf_status st = get_columns(p, path, &cs, err);
    if (st != PBF_OK) return st;
    size_t used = 0;
    for (size_t j = 0; j < cs.n; ++j)
        if (strcmp(cs.col[j].info->name, "id") != 0) {
            cs.col[used] = cs.col[j];
            cs.data[used] = cs.data[j];
            ++used;
        }
    cs.n = used;
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

/* ---- the output directory ----------------------------------------------------------------- */

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
                        ? pbfapp_fail(err, PBF_ERR_IO,
                               "%s: cannot use it as the output directory: it exists and is "
                               "not a directory",
                               dir)
                        : pbfapp_fail(err, PBF_ERR_IO,
                               "%s: cannot create the output directory: %s exists and is not "
                               "a directory",
                               dir, buf);
                free(buf);
                return st;
            }
        } else if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            pbf_status st = pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create the output directory%s%s: %s",
                                 dir, saved ? " at " : "", saved ? buf : "", strerror(e));
            free(buf);
            return st;
        }
        buf[i] = saved;
    }
    free(buf);
    return PBF_OK;
}

static pbf_status output_open(const char *dir, pbfapp_format format, const char *stats_mode,
                              pbfapp_output **out, pbf_error *err) {
    *out = NULL;
    if (!dir || !*dir) return pbfapp_fail(err, PBF_ERR_IO, "the output directory name is empty");
    if (strlen(dir) > 4000) return pbfapp_fail(err, PBF_ERR_IO, "%.60s...: path too long", dir);
    pbf_status st = make_dirs(dir, err);
    if (st != PBF_OK) return st;
    if (access(dir, W_OK | X_OK) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: the output directory is not writable: %s", dir,
                    strerror(errno));
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
    case PBFAPP_FORMAT_VTP: return pbfapp_write_vtp(o->last, p, o->order, time, err);
    case PBFAPP_FORMAT_PLY: return pbfapp_write_ply(o->last, p, o->order, time, err);
    case PBFAPP_FORMAT_CSV: return pbfapp_write_csv(o->last, p, o->order, err);
    }
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "unknown output format %d", (int)o->format);
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
    char line[512];
    int n = snprintf(line, sizeof line,
                     "{\"frame\":%d,\"time\":%s,\"particles\":%d,\"density_error_avg\":%s,"
                     "\"density_error_max\":%s,\"max_speed\":%s,\"nonfinite\":%d,\"escaped\":%d,"
                     "\"ms\":%s,\"substeps\":%d,\"iterations\":%d,\"solver_error\":%s,"
                     "\"divergence_iterations\":%d,\"divergence_error\":%s}\n",
                     frame, t, s->particles, avg, mx, speed, s->nonfinite, s->escaped, wall,
                     s->substeps, s->iterations, serr, s->divergence_iterations, derr);
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
    free(o);
    return st;
}
