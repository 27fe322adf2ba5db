/* Checkpoints (format in checkpoint.h), the effective scene as JSON, atomic files. */
#define _POSIX_C_SOURCE 200809L

#include "io/checkpoint.h"
#include "io/checkpoint_format.h"
#include "io/particle_fields.h"
#include "io/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "pbf/params.h"

static const unsigned char magic[8] = PBFAPP_CHECKPOINT_MAGIC;


uint64_t pbfapp_fnv1a64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ---- the scene hash ----------------------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    return pbfapp_fnv1a64(h, p, n);
}
static uint64_t hash_f32(uint64_t h, float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return hash_bytes(h, &u, sizeof u);
}
static uint64_t hash_i32(uint64_t h, int32_t v) {
    return hash_bytes(h, &v, sizeof v);
}
static uint64_t hash_vec(uint64_t h, pbf_vec3 v) {
    return hash_f32(hash_f32(hash_f32(h, v.x), v.y), v.z);
}
static uint64_t hash_str(uint64_t h, const char *s) {
    return hash_bytes(h, s, strlen(s) + 1);
}

/* One parameter of a table: its name, then its value's bits. */
static uint64_t hash_param(uint64_t h, const pbf_param_info *p, const void *base) {
    h = hash_str(h, p->name);
    const char *field = (const char *)base + p->offset;
    switch (p->type) {
    case PBF_PARAM_FLOAT: {
        float v;
        memcpy(&v, field, sizeof v);
        return hash_f32(h, v);
    }
    case PBF_PARAM_INT:
    case PBF_PARAM_ENUM: {
        int v;
        memcpy(&v, field, sizeof v);
        return hash_i32(h, (int32_t)v);
    }
    case PBF_PARAM_VEC3: {
        pbf_vec3 v;
        memcpy(&v, field, sizeof v);
        return hash_vec(h, v);
    }
    case PBF_PARAM_STRING: return hash_str(h, field);
    }
    return h;
}

/* Run parameters that shape the simulated state or the frame files. */
static int run_param_hashed(const char *name) {
    return strcmp(name, "fps") == 0 || strcmp(name, "substeps") == 0 || strcmp(name, "format") == 0;
}

uint64_t pbfapp_scene_hash(const pbfapp_scene *s) {
    uint64_t h = hash_str(PBFAPP_FNV_OFFSET, "pbf scene v1");
    size_t rn = 0;
    const pbf_param_info *wtables[PBF_MAX_PARAM_TABLES];
    size_t wcounts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(wtables, wcounts, PBF_MAX_PARAM_TABLES);
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    /* threads and device do not change the state a checkpoint holds (a checkpoint of one device
     * resumes on another) */
    for (int t = 0; t < nt; ++t)
        for (size_t i = 0; i < wcounts[t]; ++i)
            if (strcmp(wtables[t][i].name, "threads") != 0 &&
                strcmp(wtables[t][i].name, "device") != 0)
                h = hash_param(h, &wtables[t][i], &s->def);
    for (size_t i = 0; i < rn; ++i)
        if (run_param_hashed(rt[i].name)) h = hash_param(h, &rt[i], &s->run);
    h = hash_str(h, "fluid");
    h = hash_i32(h, s->block_count);
    for (int i = 0; i < s->block_count; ++i) {
        h = hash_vec(h, s->blocks[i].min);
        h = hash_vec(h, s->blocks[i].max);
        h = hash_vec(h, s->blocks[i].velocity);
    }
    h = hash_str(h, "boxes");
    h = hash_i32(h, s->box_count);
    h = hash_i32(h, s->obstacle_count);
    for (int i = 0; i < s->box_count; ++i) {
        const pbf_box *b = &s->boxes[i];
        h = hash_vec(h, b->min);
        h = hash_vec(h, b->max);
        h = hash_i32(h, (int32_t)b->motion.type);
        h = hash_vec(h, b->motion.direction);
        h = hash_f32(h, b->motion.amplitude);
        h = hash_f32(h, b->motion.period);
        h = hash_f32(h, b->motion.phase);
        h = hash_f32(h, b->motion.speed);
        h = hash_f32(h, b->motion.start);
        h = hash_f32(h, b->motion.stop);
    }
    return h;
}

/* The shortest of %.6g .. %.9g that reads back as the same float. */
static void float_text(char *buf, size_t size, double value) {
    for (int digits = 6; digits <= 9; ++digits) {
        snprintf(buf, size, "%.*g", digits, value);
        if (strtof(buf, NULL) == (float)value) break;
    }
}

/* One parameter's value as --set writes it: a number, "x,y,z", a choice, a string. */
static void param_text(char *buf, size_t size, const pbf_param_info *p, const void *base) {
    switch (p->type) {
    case PBF_PARAM_FLOAT:
    case PBF_PARAM_INT: float_text(buf, size, pbf_param_get_number(p, base, 0)); return;
    case PBF_PARAM_VEC3: {
        char c[3][32];
        for (int k = 0; k < 3; ++k) float_text(c[k], sizeof c[k], pbf_param_get_number(p, base, k));
        snprintf(buf, size, "%s,%s,%s", c[0], c[1], c[2]);
        return;
    }
    case PBF_PARAM_ENUM: {
        int k = (int)pbf_param_get_number(p, base, 0);
        snprintf(buf, size, "%s", p->choices ? p->choices[k] : "?");
        return;
    }
    case PBF_PARAM_STRING: snprintf(buf, size, "\"%s\"", pbf_param_get_string(p, base)); return;
    }
    buf[0] = '\0';
}

/* Appends "KEY = A, now B" of one hashed parameter that differs between `was` and `now`. */
static int param_diff(char *buf, size_t size, size_t *used, const pbf_param_info *p,
                      const void *was, const void *now) {
    if (hash_param(PBFAPP_FNV_OFFSET, p, was) == hash_param(PBFAPP_FNV_OFFSET, p, now)) return 0;
    char a[96], b[96];
    param_text(a, sizeof a, p, was);
    param_text(b, sizeof b, p, now);
    if (*used < size)
        *used += (size_t)snprintf(buf + *used, size - *used, "%s%s (%s in the checkpoints, %s now)",
                                  *used ? ", " : "", p->name, a, b);
    return 1;
}

int pbfapp_scene_hash_diff(const pbfapp_scene *was, const pbfapp_scene *now, char *buf,
                           size_t size) {
    size_t used = 0;
    int n = 0;
    if (size) buf[0] = '\0';
    const pbf_param_info *wtables[PBF_MAX_PARAM_TABLES];
    size_t wcounts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(wtables, wcounts, PBF_MAX_PARAM_TABLES);
    for (int t = 0; t < nt; ++t)
        for (size_t i = 0; i < wcounts[t]; ++i)
            if (strcmp(wtables[t][i].name, "threads") != 0 &&
                strcmp(wtables[t][i].name, "device") != 0)
                n += param_diff(buf, size, &used, &wtables[t][i], &was->def, &now->def);
    size_t rn = 0;
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    for (size_t i = 0; i < rn; ++i)
        if (run_param_hashed(rt[i].name))
            n += param_diff(buf, size, &used, &rt[i], &was->run, &now->run);
    return n;
}

void pbfapp_resume_free_keys(char *buf, size_t size) {
    size_t used = 0;
    if (size) buf[0] = '\0';
    size_t rn = 0;
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    const char *names[64];
    size_t n = 0;
    names[n++] = "threads";
    names[n++] = "device";
    for (size_t i = 0; i < rn && n < 64; ++i)
        if (!run_param_hashed(rt[i].name)) names[n++] = rt[i].name;
    for (size_t i = 0; i < n && used < size; ++i)
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                 i == 0       ? ""
                                 : i + 1 == n ? " and "
                                              : ", ",
                                 names[i]);
}

/* ---- atomic files ------------------------------------------------------------------------- */

pbf_status pbfapp_write_file_atomic(const char *path, const void *data, size_t length,
                                    pbf_error *err) {
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return pbfapp_fail(err, PBF_ERR_IO, "%.200s...: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    errno = 0;
    if (length && fwrite(data, 1, length, f) != length) {
        int e = errno ? errno : EIO;
        fclose(f);
        unlink(tmp);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: write failed: %s%s", tmp, strerror(e),
                           pbfapp_space_hint(e));
    }
    return pbfapp_commit_file(f, tmp, path, err);
}

/* ---- encoding ----------------------------------------------------------------------------- */

uint64_t pbfapp_checkpoint_size(int64_t count) {
    return PBFAPP_CHECKPOINT_HEADER_BYTES +
           (uint64_t)pbfapp_particle_bytes() * (uint64_t)(count > 0 ? count : 0) + 8u;
}

uint64_t pbfapp_checkpoint_lambda_size(int64_t count) {
    return pbfapp_checkpoint_size(count) + 4u * (uint64_t)(count > 0 ? count : 0);
}

pbf_status pbfapp_checkpoint_encode(const pbf_snapshot *s, int64_t frame, uint64_t scene_hash,
                                    unsigned char **out, size_t *length, pbf_error *err) {
    *out = NULL;
    *length = 0;
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    const void *data[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    if (ncol > PBFAPP_MAX_COLUMNS)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "checkpoint: %zu particle columns, more than %d",
                           ncol, PBFAPP_MAX_COLUMNS);
    pbf_particles view = pbfapp_snapshot_particles(s);
    int complete = s->count >= 0;
    for (size_t j = 0; j < ncol; ++j) {
        data[j] = pbfapp_column_data(&view, &col[j]);
        if (s->count > 0 && !data[j]) complete = 0;
    }
    if (!complete)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "checkpoint: invalid snapshot");
    const int with_lambda = s->lambda != NULL && s->count > 0;
    uint64_t total = with_lambda ? pbfapp_checkpoint_lambda_size(s->count)
                                 : pbfapp_checkpoint_size(s->count);
    if (total > SIZE_MAX)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "checkpoint: %d particles are too many", s->count);
    unsigned char *buf = malloc((size_t)total);
    if (!buf)
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "checkpoint: out of memory for %llu bytes",
                    (unsigned long long)total);
    size_t at = 0;
    uint32_t version = with_lambda ? PBFAPP_CHECKPOINT_LAMBDA_VERSION : PBFAPP_CHECKPOINT_VERSION,
             marker = ENDIAN_MARKER, header = PBFAPP_CHECKPOINT_HEADER_BYTES;
    int32_t count = s->count;
    uint64_t reserved = 0;
    put(buf, &at, magic, sizeof magic);
    put(buf, &at, &version, 4);
    put(buf, &at, &marker, 4);
    put(buf, &at, &header, 4);
    put(buf, &at, &count, 4);
    put(buf, &at, &frame, 8);
    put(buf, &at, &s->time, 8);
    put(buf, &at, &s->steps, 8);
    put(buf, &at, &scene_hash, 8);
    put(buf, &at, &reserved, 8);
    /* the columns of the field table, each as one array: x, y, z, vx, vy, vz, density, id */
    size_t bytes = (size_t)s->count * PBFAPP_FIELD_ELEMENT_BYTES;
    for (size_t j = 0; j < ncol; ++j) put(buf, &at, data[j], bytes);
    if (with_lambda) put(buf, &at, s->lambda, (size_t)s->count * sizeof(float));
    uint64_t sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, buf, at);
    put(buf, &at, &sum, 8);
    *out = buf;
    *length = at;
    return PBF_OK;
}

/* ---- decoding ----------------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

pbf_status pbfapp_checkpoint_check_header(const unsigned char *p, size_t avail, uint64_t total,
                                          const char *name, int32_t *count_out,
                                          uint32_t *version_out, pbf_error *err) {
    const pbf_status bad = PBF_ERR_INVALID_ARGUMENT;
    if (total == 0) return pbfapp_fail(err, bad, "%s: empty (0 bytes)", name);
    if (avail < sizeof magic && memcmp(p, magic, avail) == 0)
        return pbfapp_fail(err, bad, "%s: truncated: %llu bytes, shorter than the %u-byte header", name,
                    (unsigned long long)total, PBFAPP_CHECKPOINT_HEADER_BYTES);
    if (avail < sizeof magic || memcmp(p, magic, sizeof magic) != 0)
        return pbfapp_fail(err, bad, "%s: not a pbf checkpoint (no PBFCKPT magic at the start)", name);
    if (avail < PBFAPP_CHECKPOINT_HEADER_BYTES)
        return pbfapp_fail(err, bad, "%s: truncated: %llu bytes, shorter than the %u-byte header", name,
                    (unsigned long long)total, PBFAPP_CHECKPOINT_HEADER_BYTES);
    uint32_t version, marker, header;
    int32_t count;
    get(p, 8, &version, 4);
    get(p, 12, &marker, 4);
    get(p, 16, &header, 4);
    get(p, 20, &count, 4);
    if (marker == ENDIAN_SWAPPED)
        return pbfapp_fail(err, bad,
                    "%s: written on a machine of the other byte order (marker %08x); checkpoints "
                    "are not portable across byte orders",
                    name, (unsigned)marker);
    if (marker != ENDIAN_MARKER && (version > 0xffffu || version == 0))
        return pbfapp_fail(err, bad, "%s: damaged header (version %u, byte-order marker %08x)", name,
                    (unsigned)version, (unsigned)marker);
    if (version > PBFAPP_CHECKPOINT_LAMBDA_VERSION)
        return pbfapp_fail(err, bad,
                    "%s: format version %u is newer than this pbf's version %u; use a newer pbf",
                    name, (unsigned)version, PBFAPP_CHECKPOINT_LAMBDA_VERSION);
    if (version != PBFAPP_CHECKPOINT_VERSION && version != PBFAPP_CHECKPOINT_INDEX_VERSION &&
        version != PBFAPP_CHECKPOINT_LAMBDA_VERSION)
        return pbfapp_fail(err, bad,
                           "%s: unknown format version %u (this pbf reads versions %u, %u and %u)",
                           name, (unsigned)version, PBFAPP_CHECKPOINT_VERSION,
                           PBFAPP_CHECKPOINT_INDEX_VERSION, PBFAPP_CHECKPOINT_LAMBDA_VERSION);
    if (marker != ENDIAN_MARKER)
        return pbfapp_fail(err, bad, "%s: damaged header (byte-order marker %08x, expected %08x)", name,
                    (unsigned)marker, ENDIAN_MARKER);
    if (header != PBFAPP_CHECKPOINT_HEADER_BYTES)
        return pbfapp_fail(err, bad, "%s: damaged header (header size %u, expected %u)", name,
                    (unsigned)header, PBFAPP_CHECKPOINT_HEADER_BYTES);
    if (count < 0)
        return pbfapp_fail(err, bad, "%s: damaged header (particle count %d)", name, (int)count);
    uint64_t expect = version == PBFAPP_CHECKPOINT_LAMBDA_VERSION
                          ? pbfapp_checkpoint_lambda_size(count)
                          : pbfapp_checkpoint_size(count);
    if (version == PBFAPP_CHECKPOINT_INDEX_VERSION) { /* an index of pieces */
        int32_t pieces;
        get(p, 56, &pieces, 4);
        if (pieces < 1 || pieces > PBFAPP_CHECKPOINT_MAX_PIECES)
            return pbfapp_fail(err, bad, "%s: damaged header (%d pieces)", name, (int)pieces);
        expect = pbfapp_checkpoint_index_size(pieces);
        if (total != expect)
            return pbfapp_fail(err, bad,
                               "%s: %s: %llu bytes, but the index of %d pieces has %llu bytes",
                               name, total < expect ? "truncated" : "too long",
                               (unsigned long long)total, (int)pieces, (unsigned long long)expect);
        *count_out = count;
        *version_out = version;
        return PBF_OK;
    }
    if (total != expect)
        return pbfapp_fail(err, bad, "%s: %s: %llu bytes, but a checkpoint of %d particles has %llu bytes",
                    name, total < expect ? "truncated" : "too long", (unsigned long long)total,
                    (int)count, (unsigned long long)expect);
    *count_out = count;
    *version_out = version;
    return PBF_OK;
}

pbf_status pbfapp_checkpoint_decode(const void *data, size_t length, const char *name,
                                    pbfapp_checkpoint *out, pbf_error *err) {
    memset(out, 0, sizeof *out);
    const unsigned char *p = data;
    const pbf_status bad = PBF_ERR_INVALID_ARGUMENT;
    int32_t count = 0;
    uint32_t version = 0;
    pbf_status hst =
        pbfapp_checkpoint_check_header(p, length, (uint64_t)length, name, &count, &version, err);
    if (hst != PBF_OK) return hst;
    if (version == PBFAPP_CHECKPOINT_INDEX_VERSION)
        return pbfapp_fail(err, bad,
                           "%s: the index of a checkpoint in pieces (format version %u): read it "
                           "from its directory (pbfapp_checkpoint_read)",
                           name, (unsigned)version);
    uint64_t stored, sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, p, length - 8);
    get(p, length - 8, &stored, 8);
    if (stored != sum)
        return pbfapp_fail(err, bad,
                    "%s: checksum mismatch (stored %016llx, computed %016llx): the file is damaged",
                    name, (unsigned long long)stored, (unsigned long long)sum);
    int64_t frame, steps;
    double time;
    uint64_t scene_hash;
    get(p, 24, &frame, 8);
    get(p, 32, &time, 8);
    get(p, 40, &steps, 8);
    get(p, 48, &scene_hash, 8);
    if (frame < 0 || frame > INT_MAX || steps < 0 || !isfinite(time) || time < 0)
        return pbfapp_fail(err, bad, "%s: invalid header values (frame %lld, time %g, steps %lld)", name,
                    (long long)frame, time, (long long)steps);
    unsigned char *copy = malloc(length);
    if (!copy) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    memcpy(copy, p, length);
    size_t bytes = (size_t)count * PBFAPP_FIELD_ELEMENT_BYTES;
    const unsigned char *a = copy + PBFAPP_CHECKPOINT_HEADER_BYTES;
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    if (ncol > PBFAPP_MAX_COLUMNS) {
        free(copy);
        return pbfapp_fail(err, PBF_ERR_LIMIT, "%s: %zu particle columns, more than %d", name, ncol,
                           PBFAPP_MAX_COLUMNS);
    }
    pbf_snapshot snap;
    memset(&snap, 0, sizeof snap);
    const uint32_t *id = NULL;
    for (size_t j = 0; j < ncol; ++j) {
        const void *arr = a + j * bytes;
        const pbf_field_info *fi = col[j].info;
        if (!pbfapp_snapshot_set_column(&snap, &col[j], arr)) {
            free(copy);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "%s: field %s has no place in a snapshot", name, fi->name);
        }
        if (strcmp(fi->name, "id") == 0) id = arr;
        /* float fields must be finite, except the density, which a restore recomputes */
        if (fi->type != PBF_FIELD_FLOAT32 || strcmp(fi->name, "density") == 0) continue;
        for (int32_t i = 0; i < count; ++i) {
            float v;
            memcpy(&v, (const unsigned char *)arr + (size_t)i * PBFAPP_FIELD_ELEMENT_BYTES,
                   sizeof v);
            if (!isfinite(v)) {
                free(copy);
                return pbfapp_fail(err, bad, "%s: particle %d has a non-finite %s", name, (int)i,
                                   fi->name);
            }
        }
    }
    if (version == PBFAPP_CHECKPOINT_LAMBDA_VERSION && count > 0) { /* PBF's multipliers */
        const unsigned char *arr = a + ncol * bytes;
        for (int32_t i = 0; i < count; ++i) {
            float v;
            memcpy(&v, arr + (size_t)i * sizeof v, sizeof v);
            if (!isfinite(v)) {
                free(copy);
                return pbfapp_fail(err, bad, "%s: particle %d has a non-finite lambda", name,
                                   (int)i);
            }
        }
        snap.lambda = (const float *)(const void *)arr;
    }
    /* ids must be unique */
    if (count > 0 && id) {
        uint32_t *ids = malloc(bytes);
        if (!ids) {
            free(copy);
            return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        }
        memcpy(ids, id, bytes);
        qsort(ids, (size_t)count, sizeof *ids, cmp_u32);
        for (int32_t i = 1; i < count; ++i)
            if (ids[i] == ids[i - 1]) {
                uint32_t dup = ids[i];
                free(ids);
                free(copy);
                return pbfapp_fail(err, bad, "%s: particle id %u appears more than once", name,
                            (unsigned)dup);
            }
        free(ids);
    }
    out->version = version;
    out->count = count;
    out->frame = frame;
    out->time = time;
    out->steps = steps;
    out->scene_hash = scene_hash;
    out->checksum = stored;
    out->data = copy;
    if (count > 0) out->snapshot = snap;
    out->snapshot.time = time;
    out->snapshot.steps = steps;
    out->snapshot.count = count;
    return PBF_OK;
}

void pbfapp_checkpoint_free(pbfapp_checkpoint *c) {
    if (!c) return;
    free(c->data);
    memset(c, 0, sizeof *c);
}

pbf_status pbfapp_checkpoint_read(const char *path, pbfapp_checkpoint *out, pbf_error *err) {
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: is not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* The header first: the size it implies must be the file's before the rest is read. */
    unsigned char head[PBFAPP_CHECKPOINT_HEADER_BYTES];
    size_t got = fread(head, 1, sizeof head, f);
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    int32_t count = 0;
    uint32_t version = 0;
    pbf_status hst = pbfapp_checkpoint_check_header(head, got, (uint64_t)sb.st_size, path, &count,
                                                    &version, err);
    if (hst != PBF_OK) {
        fclose(f);
        return hst;
    }
    if (version == PBFAPP_CHECKPOINT_INDEX_VERSION) { /* the pieces, merged */
        fclose(f);
        return pbfapp_checkpoint_read_pieces(path, out, err);
    }
    uint64_t expect = version == PBFAPP_CHECKPOINT_LAMBDA_VERSION
                          ? pbfapp_checkpoint_lambda_size(count)
                          : pbfapp_checkpoint_size(count);
    unsigned char *buf = malloc((size_t)expect);
    if (!buf) {
        fclose(f);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory for %llu bytes", path,
                    (unsigned long long)expect);
    }
    memcpy(buf, head, sizeof head);
    size_t rest = (size_t)expect - sizeof head;
    size_t n = fread(buf + sizeof head, 1, rest, f);
    int e = ferror(f) ? errno : 0;
    fclose(f);
    if (e) {
        free(buf);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    pbf_status st = pbfapp_checkpoint_decode(buf, sizeof head + n, path, out, err);
    free(buf);
    return st;
}

void pbfapp_checkpoint_path(char *buf, size_t size, const char *dir, int64_t frame) {
    snprintf(buf, size, "%s/checkpoint_%05lld.pbfck", dir, (long long)frame);
}

/* ---- the checkpoints of a directory ------------------------------------------------------- */

/* Frame of "checkpoint_NNNNN.pbfck" (digits only, at most 10), or -1. */
static int64_t checkpoint_frame_of(const char *name) {
    static const char prefix[] = "checkpoint_", suffix[] = ".pbfck";
    size_t lp = sizeof prefix - 1, ls = sizeof suffix - 1, n = strlen(name);
    if (n <= lp + ls || strncmp(name, prefix, lp) != 0 || strcmp(name + n - ls, suffix) != 0)
        return -1;
    size_t digits = n - lp - ls;
    if (digits > 10) return -1;
    int64_t v = 0;
    for (size_t i = lp; i < lp + digits; ++i) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Frame of a piece "checkpoint_NNNNN_RRRRR.pbfpc" (digits only, at most 10 each), or -1. */
static int64_t piece_frame_of(const char *name) {
    static const char prefix[] = "checkpoint_", suffix[] = ".pbfpc";
    size_t lp = sizeof prefix - 1, ls = sizeof suffix - 1, n = strlen(name);
    if (n <= lp + ls || strncmp(name, prefix, lp) != 0 || !ends_with(name, suffix)) return -1;
    int64_t v = 0;
    size_t i = lp, digits = 0, rdigits = 0;
    for (; i < n - ls && name[i] >= '0' && name[i] <= '9' && digits < 10; ++i, ++digits)
        v = v * 10 + (name[i] - '0');
    if (digits == 0 || i >= n - ls || name[i] != '_') return -1;
    for (++i; i < n - ls; ++i, ++rdigits)
        if (name[i] < '0' || name[i] > '9' || rdigits >= 10) return -1;
    return rdigits > 0 ? v : -1;
}

/* 1 if dir holds the index of the checkpoint of `frame`. */
static int has_index(const char *dir, int64_t frame) {
    char path[4400];
    pbfapp_checkpoint_path(path, sizeof path, dir, frame);
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int pbfapp_checkpoint_prune(const char *dir, int64_t before) {
    int removed = 0;
    char path[4400];
    /* two passes: the indexes (and leftovers) first, then the pieces, so that an index never
     * outlives one of its pieces */
    for (int pass = 0; pass < 2; ++pass) {
        DIR *d = opendir(dir);
        if (!d) return removed;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            const char *name = e->d_name;
            int go;
            if (pass == 0) {
                int64_t f = checkpoint_frame_of(name);
                int leftover =
                    ends_with(name, ".tmp") &&
                    (strncmp(name, "checkpoint_", 11) == 0 || strncmp(name, "frame_", 6) == 0 ||
                     strcmp(name, "stats.jsonl.tmp") == 0 || strcmp(name, "scene.json.tmp") == 0);
                go = (f >= 0 && f < before) || leftover;
            } else {
                int64_t f = piece_frame_of(name);
                go = f >= 0 && (f < before || !has_index(dir, f));
            }
            if (go) {
                snprintf(path, sizeof path, "%s/%s", dir, name);
                struct stat sb;
                if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(path) == 0) ++removed;
            }
        }
        closedir(d);
    }
    return removed;
}

pbf_status pbfapp_checkpoint_save(const char *dir, const pbf_world *world, int64_t frame,
                                  uint64_t scene_hash, int64_t keep_from, char *written_path,
                                  size_t path_size, pbf_error *err) {
    pbf_snapshot s = pbf_world_snapshot(world);
    unsigned char *buf = NULL;
    size_t len = 0;
    pbf_status st = pbfapp_checkpoint_encode(&s, frame, scene_hash, &buf, &len, err);
    if (st != PBF_OK) return st;
    char path[4400];
    pbfapp_checkpoint_path(path, sizeof path, dir, frame);
    st = pbfapp_write_file_atomic(path, buf, len, err);
    free(buf);
    if (st != PBF_OK) return st;
    if (written_path && path_size) snprintf(written_path, path_size, "%s", path);
    if (keep_from >= 0 && keep_from < frame) pbfapp_checkpoint_prune(dir, keep_from);
    return PBF_OK;
}

static int cmp_desc_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : x < y;
}

pbf_status pbfapp_checkpoint_frames(const char *dir, int64_t **frames_out, size_t *count,
                                    pbf_error *err) {
    *frames_out = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open the directory: %s", dir, strerror(errno));
    int64_t *frames = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t f = checkpoint_frame_of(e->d_name);
        if (f < 0) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *g = realloc(frames, nc * sizeof *g);
            if (!g) {
                free(frames);
                closedir(d);
                return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
            }
            frames = g;
            cap = nc;
        }
        frames[n++] = f;
    }
    closedir(d);
    if (n > 0) qsort(frames, n, sizeof *frames, cmp_desc_i64);
    *frames_out = frames;
    *count = n;
    return PBF_OK;
}

pbf_status pbfapp_checkpoint_find(const char *dir, uint64_t scene_hash, int64_t particles,
                                  FILE *log, pbfapp_checkpoint *out, char *found_path,
                                  size_t path_size, pbf_error *err) {
    memset(out, 0, sizeof *out);
    int64_t *frames = NULL;
    size_t n = 0;
    pbf_status lst = pbfapp_checkpoint_frames(dir, &frames, &n, err);
    if (lst != PBF_OK) return lst;
    if (n == 0) {
        free(frames);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: no checkpoint to resume from (no checkpoint_*.pbfck files; a run writes "
                    "them with --checkpoint-every N, and when stopped by SIGINT/SIGTERM)",
                    dir);
    }
    char reasons[480];
    size_t used = 0;
    reasons[0] = '\0';
    pbf_status result = PBF_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; ++i) {
        char path[4400];
        pbfapp_checkpoint_path(path, sizeof path, dir, frames[i]);
        pbf_error e1;
        memset(&e1, 0, sizeof e1);
        pbfapp_checkpoint c;
        pbf_status st = pbfapp_checkpoint_read(path, &c, &e1);
        if (st == PBF_OK && c.frame != frames[i]) {
            pbfapp_fail(&e1, PBF_ERR_INVALID_ARGUMENT, "%s: holds frame %lld, not the frame of its name",
                 path, (long long)c.frame);
            pbfapp_checkpoint_free(&c);
            st = PBF_ERR_INVALID_ARGUMENT;
        }
        if (st == PBF_OK && c.scene_hash != scene_hash) {
            pbfapp_fail(
                &e1, PBF_ERR_INVALID_ARGUMENT,
                "%s: written for another scene (its scene hash %016llx, this run's %016llx)", path,
                (unsigned long long)c.scene_hash, (unsigned long long)scene_hash);
            pbfapp_checkpoint_free(&c);
            st = PBF_ERR_INVALID_ARGUMENT;
        }
        if (st == PBF_OK && particles >= 0 && c.count != particles) {
            pbfapp_fail(&e1, PBF_ERR_INVALID_ARGUMENT,
                 "%s: holds %d particles, the scene has %lld; refused", path, c.count,
                 (long long)particles);
            pbfapp_checkpoint_free(&c);
            st = PBF_ERR_INVALID_ARGUMENT;
        }
        if (st == PBF_OK) {
            *out = c;
            if (found_path && path_size) snprintf(found_path, path_size, "%s", path);
            if (i > 0 && log) {
                fprintf(log, "pbf: using %s (frame %lld), the newest valid checkpoint\n", path,
                        (long long)c.frame);
                fflush(log);
            }
            result = PBF_OK;
            break;
        }
        if (st == PBF_ERR_OUT_OF_MEMORY) result = st;
        if (log) {
            fprintf(log, "pbf: %s%s\n", e1.message,
                    i + 1 < n ? "; trying the previous checkpoint" : "");
            fflush(log);
        }
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *why = e1.message;
        size_t pl = strlen(path);
        if (strncmp(why, path, pl) == 0 && why[pl] == ':') why += pl + 2;
        if (used < sizeof reasons)
            used += (size_t)snprintf(reasons + used, sizeof reasons - used, "%s%s: %.160s",
                                     used ? "; " : "", base, why);
    }
    free(frames);
    if (result == PBF_OK) return PBF_OK;
    return pbfapp_fail(err, result, "%s: no valid checkpoint to resume from (%s)", dir, reasons);
}

int pbfapp_unfinished_run(const char *dir, int64_t *newest, int *frames) {
    *newest = -1;
    *frames = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t f = checkpoint_frame_of(e->d_name);
        if (f > *newest) *newest = f;
    }
    closedir(d);
    if (*newest < 0) return 0;
    char path[4400];
    snprintf(path, sizeof path, "%s/scene.json", dir);
    pbfapp_scene s;
    pbf_error err;
    if (pbfapp_scene_load(path, NULL, 0, &s, &err) != PBF_OK) return 0;
    *frames = s.run.frames;
    pbfapp_scene_free(&s);
    return *newest < *frames;
}

/* ---- stats.jsonl -------------------------------------------------------------------------- */

/* The "frame" of a stats line, or -1. */
static long long line_frame(const char *line, size_t len) {
    static const char key[] = "{\"frame\":";
    size_t k = sizeof key - 1;
    if (len <= k || strncmp(line, key, k) != 0) return -1;
    long long v = 0;
    size_t i = k, digits = 0;
    while (i < len && line[i] >= '0' && line[i] <= '9' && digits < 12) {
        v = v * 10 + (line[i] - '0');
        ++i;
        ++digits;
    }
    if (digits == 0 || i >= len || line[i] != ',') return -1;
    return v;
}

pbf_status pbfapp_stats_truncate(const char *dir, int64_t frame, pbf_error *err) {
    char path[4400];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        struct stat sb;
        if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
            fclose(f);
            return pbfapp_fail(err, PBF_ERR_IO, "%s: is not a regular file", path);
        }
        size_t size = (size_t)sb.st_size;
        text = malloc(size + 1);
        if (!text) {
            fclose(f);
            return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        }
        len = fread(text, 1, size, f);
        int bad = ferror(f);
        int e = errno;
        fclose(f);
        if (bad) {
            free(text);
            return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot read: %s", path, strerror(e));
        }
    } else if (errno != ENOENT) {
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    /* Keep complete lines 0, 1, 2, ... in order up to `frame`. */
    size_t keep = 0;
    long long next = 0;
    for (size_t at = 0; at < len && next <= frame;) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl) break;
        size_t ll = (size_t)(nl - (text + at));
        if (line_frame(text + at, ll) != next) break;
        ++next;
        at += ll + 1;
        keep = at;
    }
    pbf_status st = pbfapp_write_file_atomic(path, text ? text : "", keep, err);
    free(text);
    if (st != PBF_OK) return st;
    if (next != frame + 1)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: has the lines of frames 0 to %lld only, the checkpoint is of frame %lld",
                    path, next - 1, (long long)frame);
    return PBF_OK;
}

/* The number of complete lines of frames 0, 1, ... at the start of DIR/stats.jsonl (0 when it
 * is absent or unreadable). */
static long long stats_frames(const char *dir) {
    char path[4400];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    long long next = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n' || line_frame(line, len - 1) != next) break;
        ++next;
    }
    fclose(f);
    return next;
}

int pbfapp_resume_plan(const char *dir, int frames, char *msg, size_t size, pbf_error *err) {
    int64_t *list = NULL;
    size_t n = 0;
    pbf_status st = pbfapp_checkpoint_frames(dir, &list, &n, err);
    free(list);
    if (st != PBF_OK) return -1;
    if (n > 0) return PBFAPP_RESUME_CHECKPOINT;
    const long long done = stats_frames(dir) - 1; /* the last frame written */
    if (done >= frames) {
        snprintf(msg, size,
                 "the run is complete (frame %lld of %d) and has no checkpoint to continue from "
                 "(a larger --frames starts it over from frame 0)",
                 done, frames);
        return PBFAPP_RESUME_COMPLETE;
    }
    snprintf(msg, size,
             "--resume %s: no checkpoint yet (the run stopped before its first): starting over "
             "from frame 0",
             dir);
    return PBFAPP_RESUME_START_OVER;
}

int pbfapp_resume_locked(const char *dir, const pbfapp_scene *now, char *msg, size_t size) {
    char path[4200];
    snprintf(path, sizeof path, "%s/scene.json", dir);
    pbfapp_scene was;
    pbf_error err;
    if (pbfapp_scene_load(path, NULL, 0, &was, &err) != PBF_OK) return 0;
    char keys[1200], free_keys[400];
    const int n = pbfapp_scene_hash_diff(&was, now, keys, sizeof keys);
    pbfapp_scene_free(&was);
    if (n == 0) return 0;
    pbfapp_resume_free_keys(free_keys, sizeof free_keys);
    snprintf(msg, size,
             "--resume %s: %s may not change on resume: the checkpoints hold a state simulated "
             "with the run's value%s; a resume may change only %s (to change %s, start a new "
             "run: pbf run %s --out NEWDIR --set ...)",
             dir, keys, n > 1 ? "s" : "", free_keys, n > 1 ? "them" : "it", path);
    return n;
}
