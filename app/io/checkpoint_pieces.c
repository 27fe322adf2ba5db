/* Checkpoints in pieces: one file per MPI process and an index (see checkpoint.h). */
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

/* ---- checkpoints in pieces ------------------------------------------------------------------ */

static const unsigned char piece_magic[8] = {'P', 'B', 'F', 'C', 'K', 'P', 'C', '\0'};
#define PIECE_HEADER_BYTES 64u

uint64_t pbfapp_checkpoint_index_size(int pieces) {
    return PBFAPP_CHECKPOINT_HEADER_BYTES + 16u * (uint64_t)(pieces > 0 ? pieces : 0) + 8u;
}

static uint64_t piece_size(int64_t count) {
    return PIECE_HEADER_BYTES + ((uint64_t)pbfapp_particle_bytes() + 4u) * (uint64_t)count + 8u;
}

void pbfapp_checkpoint_piece_path(char *buf, size_t size, const char *dir, int64_t frame,
                                  int piece) {
    snprintf(buf, size, "%s/checkpoint_%05lld_%05d.pbfpc", dir, (long long)frame, piece);
}

/* The directory part of a path ("." when it has none). */
static void dir_of(const char *path, char *buf, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, size, ".");
    else if (slash == path) snprintf(buf, size, "/");
    else snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

pbf_status pbfapp_checkpoint_piece_write(const char *dir, const pbf_snapshot *s,
                                         const uint32_t *key, int key_kind, int64_t frame,
                                         uint64_t scene_hash, int piece, int pieces,
                                         uint64_t *checksum, pbf_error *err) {
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    if (ncol > PBFAPP_MAX_COLUMNS)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "checkpoint: %zu particle columns, more than %d",
                           ncol, PBFAPP_MAX_COLUMNS);
    pbf_particles view = pbfapp_snapshot_particles(s);
    const void *data[PBFAPP_MAX_COLUMNS];
    int complete = s->count >= 0 && (s->count == 0 || key);
    for (size_t j = 0; j < ncol; ++j) {
        data[j] = pbfapp_column_data(&view, &col[j]);
        if (s->count > 0 && !data[j]) complete = 0;
    }
    if (!complete) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "checkpoint piece: invalid snapshot");
    const int with_lambda = s->lambda != NULL && s->count > 0; /* piece version 2 */
    uint64_t total = piece_size(s->count) + (with_lambda ? 4u * (uint64_t)s->count : 0u);
    if (total > SIZE_MAX)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "checkpoint piece: %d particles are too many", s->count);
    unsigned char *buf = malloc((size_t)total);
    if (!buf)
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "checkpoint piece: out of memory for %llu bytes",
                           (unsigned long long)total);
    size_t at = 0;
    uint32_t version = with_lambda ? PBFAPP_CHECKPOINT_PIECE_LAMBDA_VERSION
                                   : PBFAPP_CHECKPOINT_PIECE_VERSION,
             marker = ENDIAN_MARKER, header = PIECE_HEADER_BYTES, reserved = 0;
    int32_t count = s->count, j32 = piece, p32 = pieces, kind = key_kind;
    put(buf, &at, piece_magic, sizeof piece_magic);
    put(buf, &at, &version, 4);
    put(buf, &at, &marker, 4);
    put(buf, &at, &header, 4);
    put(buf, &at, &count, 4);
    put(buf, &at, &frame, 8);
    put(buf, &at, &j32, 4);
    put(buf, &at, &p32, 4);
    put(buf, &at, &s->steps, 8);
    put(buf, &at, &scene_hash, 8);
    put(buf, &at, &kind, 4);
    put(buf, &at, &reserved, 4);
    size_t bytes = (size_t)s->count * PBFAPP_FIELD_ELEMENT_BYTES;
    for (size_t c = 0; c < ncol; ++c) put(buf, &at, data[c], bytes);
    put(buf, &at, key, bytes);
    if (with_lambda) put(buf, &at, s->lambda, (size_t)s->count * sizeof(float));
    uint64_t sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, buf, at);
    put(buf, &at, &sum, 8);
    char path[4400];
    pbfapp_checkpoint_piece_path(path, sizeof path, dir, frame, piece);
    pbf_status st = pbfapp_write_file_atomic(path, buf, at, err);
    free(buf);
    if (st == PBF_OK && checksum) *checksum = sum;
    return st;
}

pbf_status pbfapp_checkpoint_index_write(const char *dir, const pbfapp_checkpoint_index *ix,
                                         pbf_error *err) {
    uint64_t total = pbfapp_checkpoint_index_size(ix->pieces);
    if (ix->pieces < 1 || ix->pieces > PBFAPP_CHECKPOINT_MAX_PIECES || total > SIZE_MAX)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "checkpoint index: %d pieces", ix->pieces);
    unsigned char *buf = malloc((size_t)total);
    if (!buf) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "checkpoint index: out of memory");
    size_t at = 0;
    uint32_t version = PBFAPP_CHECKPOINT_INDEX_VERSION, marker = ENDIAN_MARKER,
             header = PBFAPP_CHECKPOINT_HEADER_BYTES, zero = 0;
    int32_t count = ix->count, pieces = ix->pieces, kind = ix->key_kind;
    put(buf, &at, magic, sizeof magic);
    put(buf, &at, &version, 4);
    put(buf, &at, &marker, 4);
    put(buf, &at, &header, 4);
    put(buf, &at, &count, 4);
    put(buf, &at, &ix->frame, 8);
    put(buf, &at, &ix->time, 8);
    put(buf, &at, &ix->steps, 8);
    put(buf, &at, &ix->scene_hash, 8);
    put(buf, &at, &pieces, 4);
    put(buf, &at, &kind, 4);
    for (int j = 0; j < ix->pieces; ++j) {
        int32_t c = ix->piece_count[j];
        put(buf, &at, &c, 4);
        put(buf, &at, &zero, 4);
        put(buf, &at, &ix->piece_sum[j], 8);
    }
    uint64_t sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, buf, at);
    put(buf, &at, &sum, 8);
    char path[4400];
    pbfapp_checkpoint_path(path, sizeof path, dir, ix->frame);
    pbf_status st = pbfapp_write_file_atomic(path, buf, at, err);
    free(buf);
    return st;
}

void pbfapp_checkpoint_index_free(pbfapp_checkpoint_index *ix) {
    if (!ix) return;
    free(ix->piece_count);
    free(ix->piece_sum);
    memset(ix, 0, sizeof *ix);
}

/* The whole of a regular file into a malloc'ed buffer (at most `limit` bytes: larger is refused
 * with its size in *size). */
static pbf_status slurp(const char *path, uint64_t limit, unsigned char **out, size_t *size,
                        pbf_error *err) {
    *out = NULL;
    *size = 0;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: is not a regular file", path);
    if ((uint64_t)sb.st_size > limit) {
        *size = (size_t)sb.st_size;
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: too long: %llu bytes, expected %llu",
                           path, (unsigned long long)sb.st_size, (unsigned long long)limit);
    }
    FILE *f = fopen(path, "rb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t n = (size_t)sb.st_size;
    unsigned char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    size_t got = fread(buf, 1, n, f);
    int e = ferror(f) ? errno : 0;
    fclose(f);
    if (e) {
        free(buf);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    *out = buf;
    *size = got;
    return PBF_OK;
}

pbf_status pbfapp_checkpoint_index_read(const char *path, pbfapp_checkpoint_index *out,
                                        int *is_single, pbf_error *err) {
    memset(out, 0, sizeof *out);
    if (is_single) *is_single = 0;
    const pbf_status bad = PBF_ERR_INVALID_ARGUMENT;
    unsigned char head[PBFAPP_CHECKPOINT_HEADER_BYTES];
    struct stat sb;
    if (stat(path, &sb) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    FILE *f = fopen(path, "rb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    int32_t count = 0;
    uint32_t version = 0;
    pbf_status st = pbfapp_checkpoint_check_header(head, got, (uint64_t)sb.st_size, path, &count,
                                                   &version, err);
    if (st != PBF_OK) return st;
    if (version != PBFAPP_CHECKPOINT_INDEX_VERSION) {
        if (is_single) *is_single = 1;
        return PBF_OK;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    int32_t pieces;
    get(head, 56, &pieces, 4);
    uint64_t expect = pbfapp_checkpoint_index_size(pieces);
    st = slurp(path, expect, &buf, &len, err);
    if (st != PBF_OK) return st;
    if (len != expect) {
        free(buf);
        return pbfapp_fail(err, bad, "%s: changed while read (%zu bytes, expected %llu)", path, len,
                           (unsigned long long)expect);
    }
    uint64_t stored, sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, buf, len - 8);
    get(buf, len - 8, &stored, 8);
    if (stored != sum) {
        free(buf);
        return pbfapp_fail(err, bad,
                           "%s: checksum mismatch (stored %016llx, computed %016llx): the file is "
                           "damaged",
                           path, (unsigned long long)stored, (unsigned long long)sum);
    }
    int32_t kind;
    get(buf, 24, &out->frame, 8);
    get(buf, 32, &out->time, 8);
    get(buf, 40, &out->steps, 8);
    get(buf, 48, &out->scene_hash, 8);
    get(buf, 60, &kind, 4);
    out->count = count;
    out->pieces = pieces;
    out->key_kind = kind;
    const char *why = NULL;
    if (out->frame < 0 || out->frame > INT_MAX || out->steps < 0 || !isfinite(out->time) ||
        out->time < 0)
        why = "invalid header values";
    else if (kind != PBFAPP_KEY_ORDER && kind != PBFAPP_KEY_CELL)
        why = "unknown key kind";
    out->piece_count = malloc((size_t)pieces * sizeof *out->piece_count);
    out->piece_sum = malloc((size_t)pieces * sizeof *out->piece_sum);
    if (!why && (!out->piece_count || !out->piece_sum)) {
        free(buf);
        pbfapp_checkpoint_index_free(out);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    int64_t total = 0;
    for (int j = 0; j < pieces && !why; ++j) {
        int32_t c;
        get(buf, PBFAPP_CHECKPOINT_HEADER_BYTES + 16u * (size_t)j, &c, 4);
        get(buf, PBFAPP_CHECKPOINT_HEADER_BYTES + 16u * (size_t)j + 8, &out->piece_sum[j], 8);
        out->piece_count[j] = c;
        if (c < 0) why = "a negative piece count";
        total += c;
    }
    if (!why && total != count) why = "the pieces' counts do not add up to the particle count";
    free(buf);
    if (why) {
        pbfapp_checkpoint_index_free(out);
        return pbfapp_fail(err, bad, "%s: damaged index (%s)", path, why);
    }
    return PBF_OK;
}

void pbfapp_keyed_free(pbfapp_keyed *k) {
    if (!k) return;
    free(k->data);
    memset(k, 0, sizeof *k);
}

/* Points out's snapshot columns and key into `arrays` (ncol + 1 arrays of count elements, then
 * PBF's multipliers when with_lambda). */
static void keyed_point(pbfapp_keyed *out, unsigned char *arrays, int count, int with_lambda) {
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    size_t bytes = (size_t)count * PBFAPP_FIELD_ELEMENT_BYTES;
    out->snapshot.count = count;
    if (count > 0)
        for (size_t j = 0; j < ncol; ++j)
            pbfapp_snapshot_set_column(&out->snapshot, &col[j], arrays + j * bytes);
    out->key = (const uint32_t *)(const void *)(arrays + ncol * bytes);
    out->snapshot.lambda =
        with_lambda && count > 0 ? (const float *)(const void *)(arrays + (ncol + 1) * bytes) : NULL;
}

pbf_status pbfapp_checkpoint_piece_read(const char *index_path,
                                        const pbfapp_checkpoint_index *ix, int piece,
                                        pbfapp_keyed *out, pbf_error *err) {
    memset(out, 0, sizeof *out);
    const pbf_status bad = PBF_ERR_INVALID_ARGUMENT;
    char dir[4200], path[4400];
    dir_of(index_path, dir, sizeof dir);
    pbfapp_checkpoint_piece_path(path, sizeof path, dir, ix->frame, piece);
    const int m = ix->piece_count[piece];
    /* version 1, or 2 with PBF's multipliers after the keys */
    uint64_t expect = piece_size(m), expect2 = expect + 4u * (uint64_t)(m > 0 ? m : 0);
    if (expect2 > SIZE_MAX) return pbfapp_fail(err, PBF_ERR_LIMIT, "%s: too large", path);
    unsigned char *buf = NULL;
    size_t len = 0;
    pbf_status st = slurp(path, expect2, &buf, &len, err);
    if (st != PBF_OK) return st;
    uint32_t head_version = 0;
    if (len >= 12) get(buf, 8, &head_version, 4);
    if (head_version == PBFAPP_CHECKPOINT_PIECE_LAMBDA_VERSION && m > 0) expect = expect2;
    if (len != expect) {
        free(buf);
        return pbfapp_fail(err, bad, "%s: %s: %zu bytes, but the index's piece of %d particles has "
                                     "%llu bytes",
                           path, len < expect ? "truncated" : "too long", len, m,
                           (unsigned long long)expect);
    }
    uint32_t version, marker, header;
    int32_t count, j32, p32, kind;
    int64_t frame, steps;
    uint64_t hash, stored, sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, buf, len - 8);
    get(buf, len - 8, &stored, 8);
    get(buf, 8, &version, 4);
    get(buf, 12, &marker, 4);
    get(buf, 16, &header, 4);
    get(buf, 20, &count, 4);
    get(buf, 24, &frame, 8);
    get(buf, 32, &j32, 4);
    get(buf, 36, &p32, 4);
    get(buf, 40, &steps, 8);
    get(buf, 48, &hash, 8);
    get(buf, 56, &kind, 4);
    const char *why = NULL;
    if (memcmp(buf, piece_magic, sizeof piece_magic) != 0) why = "not a pbf checkpoint piece";
    else if (version != PBFAPP_CHECKPOINT_PIECE_VERSION &&
             version != PBFAPP_CHECKPOINT_PIECE_LAMBDA_VERSION)
        why = "unknown piece format version";
    else if (marker != ENDIAN_MARKER) why = "written on a machine of the other byte order";
    else if (header != PIECE_HEADER_BYTES) why = "damaged header";
    else if (stored != sum) why = "checksum mismatch: the file is damaged";
    else if (stored != ix->piece_sum[piece])
        why = "not the piece its index names (another checksum): a leftover of another run";
    else if (count != m || frame != ix->frame || j32 != piece || p32 != ix->pieces ||
             steps != ix->steps || hash != ix->scene_hash || kind != ix->key_kind)
        why = "its header does not match its index";
    if (why) {
        free(buf);
        return pbfapp_fail(err, bad, "%s: %s", path, why);
    }
    /* the arrays: move them to the front of the buffer */
    size_t arrays = len - 8 - PIECE_HEADER_BYTES;
    memmove(buf, buf + PIECE_HEADER_BYTES, arrays);
    out->data = buf;
    keyed_point(out, buf, m, version == PBFAPP_CHECKPOINT_PIECE_LAMBDA_VERSION);
    out->snapshot.time = ix->time;
    out->snapshot.steps = ix->steps;
    /* keys ascending; float fields finite (the density aside, which a restore recomputes) */
    for (int i = 1; i < m; ++i)
        if (out->key[i] < out->key[i - 1]) {
            pbfapp_keyed_free(out);
            return pbfapp_fail(err, bad, "%s: keys out of order at particle %d", path, i);
        }
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    for (size_t j = 0; j < ncol; ++j) {
        const pbf_field_info *fi = col[j].info;
        if (fi->type != PBF_FIELD_FLOAT32 || strcmp(fi->name, "density") == 0) continue;
        const unsigned char *a = buf + j * (size_t)m * PBFAPP_FIELD_ELEMENT_BYTES;
        for (int i = 0; i < m; ++i) {
            float v;
            memcpy(&v, a + (size_t)i * PBFAPP_FIELD_ELEMENT_BYTES, sizeof v);
            if (!isfinite(v)) {
                pbfapp_keyed_free(out);
                return pbfapp_fail(err, bad, "%s: particle %d has a non-finite %s", path, i,
                                   fi->name);
            }
        }
    }
    for (int i = 0; i < m && out->snapshot.lambda; ++i)
        if (!isfinite(out->snapshot.lambda[i])) {
            pbfapp_keyed_free(out);
            return pbfapp_fail(err, bad, "%s: particle %d has a non-finite lambda", path, i);
        }
    return PBF_OK;
}

pbf_status pbfapp_keyed_merge(const pbfapp_keyed *in, int n, pbfapp_keyed *out, pbf_error *err) {
    memset(out, 0, sizeof *out);
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t ncol = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    int64_t total = 0;
    for (int s = 0; s < n; ++s) total += in[s].snapshot.count;
    if (total > INT_MAX)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "checkpoint: %lld particles are too many",
                           (long long)total);
    size_t bytes = (size_t)total * PBFAPP_FIELD_ELEMENT_BYTES;
    int with_lambda = 0; /* PBF's multipliers: in every part that has particles, or in none */
    for (int s = 0; s < n; ++s) with_lambda |= in[s].snapshot.lambda != NULL;
    unsigned char *arrays = malloc((ncol + 1 + (size_t)with_lambda) * bytes + 1);
    int *head = calloc((size_t)n + 1, sizeof *head);
    if (!arrays || !head) {
        free(arrays);
        free(head);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "checkpoint: out of memory merging %lld particles",
                           (long long)total);
    }
    out->data = arrays;
    keyed_point(out, arrays, (int)total, with_lambda);
    out->snapshot.time = n > 0 ? in[0].snapshot.time : 0.0;
    out->snapshot.steps = n > 0 ? in[0].snapshot.steps : 0;
    pbf_particles dst = pbfapp_snapshot_particles(&out->snapshot);
    uint32_t *key = (uint32_t *)(void *)(arrays + ncol * bytes);
    /* runs: from the source with the smallest head key, every particle whose key is below the
     * other sources' smallest head key (keys of different sources differ) */
    int64_t k = 0;
    while (k < total) {
        int best = -1, second = -1;
        for (int s = 0; s < n; ++s) {
            if (head[s] >= in[s].snapshot.count) continue;
            uint32_t v = in[s].key[head[s]];
            if (best < 0 || v < in[best].key[head[best]]) {
                second = best;
                best = s;
            } else if (second < 0 || v < in[second].key[head[second]]) {
                second = s;
            }
        }
        const pbfapp_keyed *b = &in[best];
        int end = head[best] + 1;
        if (second < 0) end = b->snapshot.count;
        else {
            uint32_t lim = in[second].key[head[second]];
            while (end < b->snapshot.count && b->key[end] < lim) ++end;
        }
        size_t len = (size_t)(end - head[best]);
        pbf_particles src = pbfapp_snapshot_particles(&b->snapshot);
        for (size_t j = 0; j < ncol; ++j)
            memcpy((unsigned char *)(uintptr_t)pbfapp_column_data(&dst, &col[j]) +
                       (size_t)k * PBFAPP_FIELD_ELEMENT_BYTES,
                   (const unsigned char *)pbfapp_column_data(&src, &col[j]) +
                       (size_t)head[best] * PBFAPP_FIELD_ELEMENT_BYTES,
                   len * PBFAPP_FIELD_ELEMENT_BYTES);
        memcpy(key + k, b->key + head[best], len * sizeof *key);
        if (with_lambda) {
            float *lam = (float *)(uintptr_t)out->snapshot.lambda + k;
            if (b->snapshot.lambda)
                memcpy(lam, b->snapshot.lambda + head[best], len * sizeof *lam);
            else
                memset(lam, 0, len * sizeof *lam);
        }
        k += (int64_t)len;
        head[best] = end;
    }
    free(head);
    return PBF_OK;
}

pbf_status pbfapp_checkpoint_read_pieces(const char *index_path, pbfapp_checkpoint *out,
                                         pbf_error *err) {
    memset(out, 0, sizeof *out);
    pbfapp_checkpoint_index ix;
    pbf_status st = pbfapp_checkpoint_index_read(index_path, &ix, NULL, err);
    if (st != PBF_OK) return st;
    pbfapp_keyed *pc = calloc((size_t)ix.pieces, sizeof *pc);
    if (!pc) {
        pbfapp_checkpoint_index_free(&ix);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", index_path);
    }
    for (int j = 0; j < ix.pieces && st == PBF_OK; ++j)
        st = pbfapp_checkpoint_piece_read(index_path, &ix, j, &pc[j], err);
    pbfapp_keyed all;
    memset(&all, 0, sizeof all);
    if (st == PBF_OK) st = pbfapp_keyed_merge(pc, ix.pieces, &all, err);
    for (int j = 0; j < ix.pieces; ++j) pbfapp_keyed_free(&pc[j]);
    free(pc);
    /* as a version 1 file, checked by the decoder (unique ids) */
    unsigned char *buf = NULL;
    size_t len = 0;
    if (st == PBF_OK) st = pbfapp_checkpoint_encode(&all.snapshot, ix.frame, ix.scene_hash, &buf, &len, err);
    pbfapp_keyed_free(&all);
    if (st == PBF_OK) st = pbfapp_checkpoint_decode(buf, len, index_path, out, err);
    free(buf);
    if (st == PBF_OK) out->version = PBFAPP_CHECKPOINT_INDEX_VERSION;
    pbfapp_checkpoint_index_free(&ix);
    return st;
}
