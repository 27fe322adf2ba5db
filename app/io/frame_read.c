/* Frame file readers for `pbf render` (see frame_read.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/frame_read.h"
#include "io/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


void pbfapp_frame_data_free(pbfapp_frame_data *f) {
    if (!f) return;
    free(f->x);
    free(f->y);
    free(f->z);
    free(f->vx);
    free(f->vy);
    free(f->vz);
    free(f->density);
    free(f->id);
    memset(f, 0, sizeof *f);
}

pbf_particles pbfapp_frame_particles(const pbfapp_frame_data *f) {
    pbf_particles p;
    p.count = f->count;
    p.x = f->x;
    p.y = f->y;
    p.z = f->z;
    p.vx = f->vx;
    p.vy = f->vy;
    p.vz = f->vz;
    p.density = f->density;
    p.id = f->id;
    return p;
}

static pbf_status alloc_arrays(pbfapp_frame_data *f, size_t n, const char *path, pbf_error *err) {
    size_t m = n ? n : 1;
    f->x = malloc(m * 4);
    f->y = malloc(m * 4);
    f->z = malloc(m * 4);
    f->vx = malloc(m * 4);
    f->vy = malloc(m * 4);
    f->vz = malloc(m * 4);
    f->density = malloc(m * 4);
    f->id = malloc(m * 4);
    if (!f->x || !f->y || !f->z || !f->vx || !f->vy || !f->vz || !f->density || !f->id)
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu particles", path, n);
    f->count = (int)n;
    return PBF_OK;
}

/* The whole file in memory, NUL-terminated. */
static pbf_status slurp(const char *path, char **out, size_t *size, pbf_error *err) {
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(fp);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(fp);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (bad || got != n) {
        free(buf);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: read failed", path);
    }
    buf[n] = '\0';
    *out = buf;
    *size = n;
    return PBF_OK;
}

static uint32_t le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const unsigned char *b) {
    return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32;
}

static float lef(const unsigned char *b) {
    uint32_t u = le32(b);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The value of attribute `attr` in the XML element that contains `Name="name"`. */
static int vtp_attr(const char *header, const char *name, const char *attr, unsigned long long *v) {
    char key[96];
    snprintf(key, sizeof key, "Name=\"%s\"", name);
    const char *at = strstr(header, key);
    if (!at) return 0;
    const char *end = strchr(at, '>');
    char a[64];
    snprintf(a, sizeof a, "%s=\"", attr);
    /* The attribute may sit before or after Name= inside the same element. */
    const char *start = at;
    while (start > header && *start != '<') --start;
    const char *p = strstr(start, a);
    if (!p || (end && p > end)) return 0;
    char *stop = NULL;
    *v = strtoull(p + strlen(a), &stop, 10);
    return stop && *stop == '"';
}

static pbf_status read_vtp(const char *path, const char *buf, size_t size, pbfapp_frame_data *f,
                           pbf_error *err) {
    const char *marker = strstr(buf, "<AppendedData encoding=\"raw\">");
    const char *points_at = strstr(buf, "NumberOfPoints=\"");
    if (!marker || !points_at || points_at > marker)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: not a VTK PolyData file with raw appended data as `pbf run` writes", path);
    const char *us = strchr(marker, '_');
    if (!us) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: no appended data", path);
    size_t base = (size_t)(us + 1 - buf);
    size_t hlen = (size_t)(marker - buf);
    char *header = malloc(hlen + 1);
    if (!header) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    memcpy(header, buf, hlen);
    header[hlen] = '\0';
    unsigned long long n = strtoull(points_at + strlen("NumberOfPoints=\""), NULL, 10);
    unsigned long long off[4];
    static const char *const names[4] = {"Points", "velocity", "density", "id"};
    static const int comps[4] = {3, 3, 1, 1};
    int ok = strstr(header, "header_type=\"UInt64\"") != NULL &&
             strstr(header, "byte_order=\"LittleEndian\"") != NULL && n <= 0x7fffffffULL;
    for (int k = 0; ok && k < 4; ++k) ok = vtp_attr(header, names[k], "offset", &off[k]);
    const char *tv = strstr(header, "Name=\"TimeValue\"");
    double time = 0;
    int has_time = 0;
    if (tv && (tv = strchr(tv, '>')) != NULL) {
        char *stop = NULL;
        time = strtod(tv + 1, &stop);
        has_time = stop != tv + 1 && isfinite(time);
    }
    free(header);
    if (!ok)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: not a .vtp file as `pbf run` writes (UInt64 headers, little endian, "
                    "arrays Points, velocity, density, id)",
                    path);
    for (int k = 0; k < 4; ++k) {
        uint64_t want = (uint64_t)n * 4u * (uint64_t)comps[k];
        const uint64_t at = (uint64_t)base + off[k] + 8; /* the array's first value */
        if (at > size || at + want > size) {
            const uint64_t held = at > size ? 0 : (size - at) / (4u * (uint64_t)comps[k]);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "%s: truncated: NumberOfPoints %llu in its header, but array %s "
                               "holds the values of %llu points only",
                               path, n, names[k], (unsigned long long)held);
        }
        if (le64((const unsigned char *)buf + base + off[k]) != want)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "%s: array %s: its size is not NumberOfPoints %llu x %d values",
                               path, names[k], n, comps[k]);
    }
    pbf_status st = alloc_arrays(f, (size_t)n, path, err);
    if (st != PBF_OK) return st;
    const unsigned char *pts = (const unsigned char *)buf + base + off[0] + 8;
    const unsigned char *vel = (const unsigned char *)buf + base + off[1] + 8;
    const unsigned char *den = (const unsigned char *)buf + base + off[2] + 8;
    const unsigned char *ids = (const unsigned char *)buf + base + off[3] + 8;
    for (size_t i = 0; i < (size_t)n; ++i) {
        f->x[i] = lef(pts + 12 * i);
        f->y[i] = lef(pts + 12 * i + 4);
        f->z[i] = lef(pts + 12 * i + 8);
        f->vx[i] = lef(vel + 12 * i);
        f->vy[i] = lef(vel + 12 * i + 4);
        f->vz[i] = lef(vel + 12 * i + 8);
        f->density[i] = lef(den + 4 * i);
        f->id[i] = le32(ids + 4 * i);
    }
    f->time = time;
    f->has_time = has_time;
    return PBF_OK;
}

static pbf_status read_ply(const char *path, const char *buf, size_t size, pbfapp_frame_data *f,
                           pbf_error *err) {
    static const char *const expect = "property float x\nproperty float y\nproperty float z\n"
                                      "property float vx\nproperty float vy\nproperty float vz\n"
                                      "property float density\nproperty uint id\nend_header\n";
    const char *end = strstr(buf, "end_header\n");
    const char *vert = strstr(buf, "element vertex ");
    const char *props = strstr(buf, "property float x\n");
    if (strncmp(buf, "ply\nformat binary_little_endian 1.0\n", 36) != 0 || !end || !vert ||
        !props || vert > end || strncmp(props, expect, strlen(expect)) != 0)
        return pbfapp_fail(
            err, PBF_ERR_INVALID_ARGUMENT,
            "%s: not a binary little-endian PLY with x y z vx vy vz density id as `pbf run` "
            "writes",
            path);
    unsigned long long n = strtoull(vert + strlen("element vertex "), NULL, 10);
    size_t data = (size_t)(end - buf) + strlen("end_header\n");
    if (n > 0x7fffffffULL || data + (size_t)n * 32 > size)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: truncated: element vertex %llu in its header, but the file holds "
                           "%llu vertices only (%llu vertices need %llu bytes, it has %zu)",
                           path, n, (unsigned long long)(size > data ? (size - data) / 32 : 0), n,
                           (unsigned long long)(data + n * 32), size);
    const char *tc = strstr(buf, " time ");
    double time = 0;
    int has_time = 0;
    if (tc && tc < end) {
        char *stop = NULL;
        time = strtod(tc + 6, &stop);
        has_time = stop != tc + 6 && isfinite(time);
    }
    pbf_status st = alloc_arrays(f, (size_t)n, path, err);
    if (st != PBF_OK) return st;
    const unsigned char *d = (const unsigned char *)buf + data;
    for (size_t i = 0; i < (size_t)n; ++i, d += 32) {
        f->x[i] = lef(d);
        f->y[i] = lef(d + 4);
        f->z[i] = lef(d + 8);
        f->vx[i] = lef(d + 12);
        f->vy[i] = lef(d + 16);
        f->vz[i] = lef(d + 20);
        f->density[i] = lef(d + 24);
        f->id[i] = le32(d + 28);
    }
    f->time = time;
    f->has_time = has_time;
    return PBF_OK;
}

/* The particles of the frame of `path` (DIR/frame_NNNNN.EXT) as DIR/stats.jsonl of its run gives
 * them: 1 with *frame and *particles set, 0 when there is no such file, name or line. */
static int stats_particles(const char *path, long long *frame, long long *particles) {
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char *end = NULL;
    if (strncmp(name, "frame_", 6) != 0 || name[6] < '0' || name[6] > '9') return 0;
    const long long k = strtoll(name + 6, &end, 10);
    if (!end || *end != '.') return 0;
    char stats[4200];
    snprintf(stats, sizeof stats, "%.*sstats.jsonl", slash ? (int)(slash - path) + 1 : 0, path);
    FILE *f = fopen(stats, "rb");
    if (!f) return 0;
    char line[4096], key[64];
    snprintf(key, sizeof key, "\"frame\":%lld,", k); /* after the line's opening brace */
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "\"particles\":");
        if (line[0] && strncmp(line + 1, key, strlen(key)) == 0 && at) {
            *particles = strtoll(at + 12, &end, 10);
            found = end != at + 12;
        }
    }
    fclose(f);
    *frame = k;
    return found;
}

/* .csv: the header x,y,z,vx,vy,vz,density,id (ids in the last column), or that of earlier pbf
 * versions without the id column (ids are then the row numbers). */
static pbf_status read_csv(const char *path, char *buf, pbfapp_frame_data *f, pbf_error *err) {
    const char *head_id = "x,y,z,vx,vy,vz,density,id\n";
    const char *head_old = "x,y,z,vx,vy,vz,density\n";
    int has_id = strncmp(buf, head_id, strlen(head_id)) == 0;
    if (!has_id && strncmp(buf, head_old, strlen(head_old)) != 0)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: the first line is not the header x,y,z,vx,vy,vz,density,id", path);
    char *p = buf + strlen(has_id ? head_id : head_old);
    size_t n = 0;
    char *last = p; /* the start of the last line */
    for (char *c = p; *c; ++c)
        if (*c == '\n') {
            ++n;
            last = c + 1;
        }
    if (n > 0x7fffffffu) return pbfapp_fail(err, PBF_ERR_LIMIT, "%s: too many lines", path);
    /* no count in the file: its end (every row ends with a line break) and its run's stats.jsonl,
     * which gives the frame's particles */
    long long want = -1, frame = -1;
    const int known = stats_particles(path, &frame, &want);
    if (*last != '\0' || (known && want != (long long)n)) {
        char of[120] = "";
        if (known)
            snprintf(of, sizeof of, " of the %lld particles stats.jsonl gives for frame %lld", want,
                     frame);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: %zu complete rows%s%s", path,
                           *last ? "truncated" : "rows missing", n, of,
                           *last ? " (the last row ends without a line break)" : "");
    }
    pbf_status st = alloc_arrays(f, n, path, err);
    if (st != PBF_OK) return st;
    const int ncol = has_id ? 8 : 7;
    for (size_t i = 0; i < n; ++i) {
        float *dst[7] = {f->x + i,  f->y + i,  f->z + i,      f->vx + i,
                         f->vy + i, f->vz + i, f->density + i};
        for (int k = 0; k < ncol; ++k) {
            char *stop = NULL;
            errno = 0;
            if (k < 7) {
                *dst[k] = strtof(p, &stop);
            } else {
                unsigned long v = strtoul(p, &stop, 10);
                if (v > 0xffffffffUL || *p == '-') stop = p;
                f->id[i] = (uint32_t)v;
            }
            char want = k + 1 < ncol ? ',' : '\n';
            if (stop == p || *stop != want)
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: line %zu: expected %d numbers separated by commas", path, i + 2,
                            ncol);
            p = stop + 1;
        }
        if (!has_id) f->id[i] = (uint32_t)i;
    }
    f->time = 0;
    f->has_time = 0;
    return PBF_OK;
}

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static float bef(const unsigned char *b) {
    uint32_t u = be32(b);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static const char *const geo_layout = "point attributes v (3 vector), density (1 float), id (1 int)";

/* .geo (Houdini classic ASCII) as `pbf run` writes it: the header, the point attributes v,
 * density, id in this order, one point per line "x y z w (vx vy vz density id)". */
static pbf_status read_geo(const char *path, char *buf, pbfapp_frame_data *f, pbf_error *err) {
    static const char *const magic = "PGEOMETRY V5\nNPoints ";
    static const char *const rest = " NPrims 0\nNPointGroups 0 NPrimGroups 0\n"
                                    "NPointAttrib 3 NVertexAttrib 0 NPrimAttrib 0 NAttrib 0\n"
                                    "PointAttrib\nv 3 vector 0 0 0\ndensity 1 float 0\nid 1 int 0\n";
    char *p = NULL;
    unsigned long long n = 0;
    if (strncmp(buf, magic, strlen(magic)) == 0) n = strtoull(buf + strlen(magic), &p, 10);
    if (!p || p == buf + strlen(magic) || strncmp(p, rest, strlen(rest)) != 0)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: not a Houdini PGEOMETRY V5 file of points only with the %s as "
                           "`pbf run` writes",
                           path, geo_layout);
    p += strlen(rest);
    size_t held = 0; /* point lines: one "(" each */
    for (const char *c = p; *c; ++c) held += *c == '(';
    if (n > 0x7fffffffULL || n > held)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: truncated: NPoints %llu in its header, but the file holds %zu "
                           "points only",
                           path, n, held);
    pbf_status st = alloc_arrays(f, (size_t)n, path, err);
    if (st != PBF_OK) return st;
    for (size_t i = 0; i < (size_t)n; ++i) {
        float v[8];
        char *stop = NULL;
        for (int k = 0; k < 4; ++k) {
            v[k] = strtof(p, &stop);
            if (stop == p) goto bad;
            p = stop;
        }
        while (*p == ' ') ++p;
        if (*p++ != '(') goto bad;
        for (int k = 4; k < 8; ++k) {
            v[k] = strtof(p, &stop);
            if (stop == p) goto bad;
            p = stop;
        }
        unsigned long id = strtoul(p, &stop, 10);
        if (stop == p || id > 0xffffffffUL) goto bad;
        p = stop;
        if (*p++ != ')' || *p++ != '\n') goto bad;
        f->x[i] = v[0];
        f->y[i] = v[1];
        f->z[i] = v[2];
        f->vx[i] = v[4];
        f->vy[i] = v[5];
        f->vz[i] = v[6];
        f->density[i] = v[7];
        f->id[i] = (uint32_t)id;
        continue;
    bad:
        if (!strchr(p - (*p == '\0'), '\n')) /* the file ends inside this point */
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "%s: truncated: NPoints %llu in its header, but the file ends "
                               "inside point %zu (after %zu complete points)",
                               path, n, i, i);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: point %zu: expected \"x y z w (vx vy vz density id)\"", path, i);
    }
    f->time = 0;
    f->has_time = 0;
    return PBF_OK;
}

/* .bgeo (Houdini classic binary, big endian) as `pbf run` writes it. */
static pbf_status read_bgeo(const char *path, const char *buf, size_t size, pbfapp_frame_data *f,
                            pbf_error *err) {
    static const unsigned char dict[] = {
        0, 1, 'v', 0, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* v 3 vector 0 0 0 */
        0, 7, 'd', 'e', 'n', 's', 'i', 't', 'y', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, /* density */
        0, 2, 'i', 'd', 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};                          /* id */
    const unsigned char *b = (const unsigned char *)buf;
    const size_t head = 5 + 9 * 4;
    int counts_ok = size >= head;
    for (int k = 0; counts_ok && k < 8; ++k) /* NPoints, then 0 0 0 3 0 0 0 */
        counts_ok = k == 0 || be32(b + 9 + 4 * k) == (k == 4 ? 3u : 0u);
    if (size < head + sizeof dict || memcmp(b, "BgeoV", 5) != 0 || be32(b + 5) != 5 ||
        !counts_ok || memcmp(b + head, dict, sizeof dict) != 0)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: not a Houdini Bgeo V5 file with no primitives and the %s as "
                           "`pbf run` writes",
                           path, geo_layout);
    uint32_t n = be32(b + 9);
    const size_t data = head + sizeof dict;
    if (n > 0x7fffffffu || data + (size_t)n * 36 + 2 > size)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: truncated: NPoints %u in its header, but the file holds %zu "
                           "points only (%u points need %zu bytes, it has %zu)",
                           path, (unsigned)n, size > data ? (size - data) / 36 : 0, (unsigned)n,
                           data + (size_t)n * 36 + 2, size);
    pbf_status st = alloc_arrays(f, n, path, err);
    if (st != PBF_OK) return st;
    const unsigned char *d = b + data;
    for (size_t i = 0; i < n; ++i, d += 36) {
        f->x[i] = bef(d);
        f->y[i] = bef(d + 4);
        f->z[i] = bef(d + 8);
        f->vx[i] = bef(d + 16);
        f->vy[i] = bef(d + 20);
        f->vz[i] = bef(d + 24);
        f->density[i] = bef(d + 28);
        f->id[i] = be32(d + 32);
    }
    f->time = 0;
    f->has_time = 0;
    return PBF_OK;
}

/* Appends the particles of g to f (f may be empty: zeroed). */
static pbf_status append_frame(pbfapp_frame_data *f, const pbfapp_frame_data *g, const char *path,
                               pbf_error *err) {
    size_t n = (size_t)f->count + (size_t)g->count;
    if (n > 0x7fffffffu)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "%s: more than 2^31 particles in all", path);
    float **fa[] = {&f->x, &f->y, &f->z, &f->vx, &f->vy, &f->vz, &f->density};
    float *const ga[] = {g->x, g->y, g->z, g->vx, g->vy, g->vz, g->density};
    for (size_t k = 0; k < sizeof fa / sizeof fa[0]; ++k) {
        float *p = realloc(*fa[k], (n ? n : 1) * sizeof *p);
        if (!p) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        if (g->count) memcpy(p + f->count, ga[k], (size_t)g->count * sizeof *p);
        *fa[k] = p;
    }
    uint32_t *id = realloc(f->id, (n ? n : 1) * sizeof *id);
    if (!id) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (g->count) memcpy(id + f->count, g->id, (size_t)g->count * sizeof *id);
    f->id = id;
    f->count = (int)n;
    return PBF_OK;
}

/* A .pvtp index as `pbf run` writes it under MPI (mpi_output = pieces): the pieces it names
 * (<Piece Source="..."/>, relative to its folder), read as .vtp and concatenated; the time is the
 * first piece's. */
static pbf_status read_pvtp(const char *path, const char *buf, pbfapp_frame_data *f,
                            pbf_error *err) {
    memset(f, 0, sizeof *f);
    const char *slash = strrchr(path, '/');
    const int dir_len = slash ? (int)(slash - path) + 1 : 0;
    const char *q = buf;
    int pieces = 0;
    pbf_status st = PBF_OK;
    while (st == PBF_OK && (q = strstr(q, "<Piece Source=\"")) != NULL) {
        q += 15;
        const char *end = strchr(q, '"');
        if (!end || end - q > 1000 || end == q || memchr(q, '/', (size_t)(end - q)))
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "%s: a <Piece Source> that is not a file name beside it", path);
        char piece[4200];
        snprintf(piece, sizeof piece, "%.*s%.*s", dir_len, path, (int)(end - q), q);
        char *pbuf = NULL;
        size_t psize = 0;
        pbfapp_frame_data g;
        memset(&g, 0, sizeof g);
        st = slurp(piece, &pbuf, &psize, err);
        if (st == PBF_OK) st = read_vtp(piece, pbuf, psize, &g, err);
        free(pbuf);
        if (st == PBF_OK) st = append_frame(f, &g, path, err);
        if (st == PBF_OK && pieces == 0) {
            f->time = g.time;
            f->has_time = g.has_time;
        }
        pbfapp_frame_data_free(&g);
        q = end;
        ++pieces;
    }
    if (st == PBF_OK && pieces == 0)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: names no <Piece Source=...>", path);
    if (st != PBF_OK) return st;
    const char *tail = strstr(buf, "</PPolyData>");
    long long want = -1, frame = -1;
    const int known = stats_particles(path, &frame, &want);
    if (!tail || (known && want != f->count)) {
        char of[120] = "";
        if (known)
            snprintf(of, sizeof of, " of the %lld particles stats.jsonl gives for frame %lld", want,
                     frame);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: %d particles in %d pieces%s",
                           path, tail ? "particles missing" : "truncated (no </PPolyData>)",
                           f->count, pieces, of);
    }
    return PBF_OK;
}

pbf_status pbfapp_read_frame(const char *path, pbfapp_frame_data *f, pbf_error *err) {
    pbfapp_frame_data_free(f);
    const char *dot = strrchr(path, '.');
    if (!dot || (strcmp(dot, ".vtp") && strcmp(dot, ".ply") && strcmp(dot, ".csv") &&
                 strcmp(dot, ".geo") && strcmp(dot, ".bgeo") && strcmp(dot, ".pvtp")))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: unknown frame format (vtp, pvtp, ply, csv, geo, bgeo)", path);
    char *buf = NULL;
    size_t size = 0;
    pbf_status st = slurp(path, &buf, &size, err);
    if (st != PBF_OK) return st;
    if (strcmp(dot, ".pvtp") == 0)
        st = read_pvtp(path, buf, f, err);
    else if (strcmp(dot, ".vtp") == 0)
        st = read_vtp(path, buf, size, f, err);
    else if (strcmp(dot, ".ply") == 0)
        st = read_ply(path, buf, size, f, err);
    else if (strcmp(dot, ".geo") == 0)
        st = read_geo(path, buf, f, err);
    else if (strcmp(dot, ".bgeo") == 0)
        st = read_bgeo(path, buf, size, f, err);
    else
        st = read_csv(path, buf, f, err);
    free(buf);
    if (st != PBF_OK) pbfapp_frame_data_free(f);
    return st;
}
