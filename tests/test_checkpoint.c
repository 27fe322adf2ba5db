/*
 * Checkpoints of the `pbf` command (app/io/checkpoint.c): encode/decode round trip of a real world,
 * every kind of damage detected (each byte flipped, every truncation), a restored world that
 * continues bit-identically, the scene hash (stable through scene.json, sensitive to what changes
 * the simulation, blind to what does not), choosing the newest valid checkpoint, pruning, and
 * stats.jsonl truncation for a resume; checkpoints in pieces (an index and one piece per MPI
 * process): read back whole in the memory order from pieces merged by key, a damaged, stale or
 * missing piece refused (the previous checkpoint used), orphan pieces pruned.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "particle_fields.h"
#include "scene.h"

static const char scene_text[] =
    "{\"domain_min\": [0, 0, 0], \"domain_max\": [0.4, 0.4, 0.24], \"particle_radius\": 0.02,"
    " \"frames\": 5, \"substeps\": 2, \"threads\": 1,"
    " \"fluid\": [{\"min\": [0, 0, 0], \"max\": [0.2, 0.28, 0.24]}],"
    " \"obstacles\": [{\"min\": [0.3, 0, 0.08], \"max\": [0.36, 0.06, 0.16]}],"
    " \"moving_walls\": [{\"min\": [0.3, 0.3, 0.05], \"max\": [0.34, 0.34, 0.09],"
    "   \"motion\": {\"type\": \"oscillate\", \"direction\": [0, 0, 1], \"amplitude\": 0.01,"
    "   \"period\": 0.5}}]}";

static int load(pbfapp_scene *s, const pbfapp_override *o, size_t n) {
    pbf_error err;
    pbf_status st =
        pbfapp_scene_parse("test.json", scene_text, sizeof scene_text - 1, o, n, s, &err);
    if (st != PBF_OK) printf("  scene: %s\n", err.message);
    return st == PBF_OK;
}

static void make_tmpdir(char *buf, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/pbf_test_checkpoint.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(buf)) buf[0] = '\0';
}

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  could not remove %s\n", dir);
}

static uint64_t state_hash(const pbf_world *w) {
    pbf_snapshot s = pbf_world_snapshot(w);
    size_t n = (size_t)s.count * 4;
    uint64_t h = PBFAPP_FNV_OFFSET;
    const void *arr[8] = {s.x, s.y, s.z, s.vx, s.vy, s.vz, s.density, s.id};
    for (int k = 0; k < 8; ++k) h = pbfapp_fnv1a64(h, arr[k], n);
    h = pbfapp_fnv1a64(h, &s.time, sizeof s.time);
    return pbfapp_fnv1a64(h, &s.steps, sizeof s.steps);
}

static void test_round_trip_and_continue(void) {
    pbfapp_scene sc;
    ENSURE(load(&sc, NULL, 0));
    pbf_world *a = NULL, *b = NULL;
    pbf_error err;
    ENSURE(pbfapp_scene_create_world(&sc, &a, &err) == PBF_OK);
    for (int i = 0; i < 6; ++i) ENSURE(pbf_world_step(a, 1.0f / 120.0f, &err) == PBF_OK);
    pbf_snapshot s = pbf_world_snapshot(a);
    unsigned char *buf = NULL;
    size_t len = 0;
    uint64_t hash = pbfapp_scene_hash(&sc);
    ENSURE(pbfapp_checkpoint_encode(&s, 3, hash, &buf, &len, &err) == PBF_OK);
    /* the default PBF run carries its multipliers (lambda_warm_start): version 3 */
    ENSURE(s.lambda != NULL);
    ENSURE(len == pbfapp_checkpoint_lambda_size(s.count));
    pbfapp_checkpoint c;
    ENSURE(pbfapp_checkpoint_decode(buf, len, "mem", &c, &err) == PBF_OK);
    ENSURE_EQ_INT(c.count, s.count);
    ENSURE(c.frame == 3 && c.scene_hash == hash && c.steps == 6 && c.time == s.time);
    const void *before[] = {s.x, s.y, s.z, s.vx, s.vy, s.vz, s.density, s.id};
    const void *after[] = {c.snapshot.x,  c.snapshot.y,  c.snapshot.z,       c.snapshot.vx,
                           c.snapshot.vy, c.snapshot.vz, c.snapshot.density, c.snapshot.id};
    for (int k = 0; k < 8; ++k) ENSURE(memcmp(after[k], before[k], (size_t)s.count * 4) == 0);
    /* the version 1 layout: after the 64-byte header x[n], y, z, vx, vy, vz, density, id[n],
     * then the checksum */
    for (int k = 0; k < 8; ++k)
        ENSURE(memcmp(buf + 64 + (size_t)k * 4 * (size_t)s.count, before[k], (size_t)s.count * 4) ==
               0);
    /* version 3: then lambda[n] */
    ENSURE(buf[8] == PBFAPP_CHECKPOINT_LAMBDA_VERSION);
    ENSURE(memcmp(buf + 64 + 32 * (size_t)s.count, s.lambda, (size_t)s.count * 4) == 0);
    ENSURE(c.snapshot.lambda && memcmp(c.snapshot.lambda, s.lambda, (size_t)s.count * 4) == 0);
    ENSURE(len == 64 + 36 * (size_t)s.count + 8);
    /* a second world restored from the checkpoint continues bit-identically */
    ENSURE(pbfapp_scene_create_world(&sc, &b, &err) == PBF_OK);
    ENSURE(pbf_world_restore(b, &c.snapshot, &err) == PBF_OK);
    pbfapp_checkpoint_free(&c);
    free(buf);
    ENSURE(state_hash(a) == state_hash(b));
    for (int i = 0; i < 10; ++i) {
        ENSURE(pbf_world_step(a, 1.0f / 120.0f, &err) == PBF_OK);
        ENSURE(pbf_world_step(b, 1.0f / 120.0f, &err) == PBF_OK);
    }
    ENSURE(state_hash(a) == state_hash(b));
    pbf_world_destroy(a);
    pbf_world_destroy(b);
    pbfapp_scene_free(&sc);
}

/* The checkpoint carries every column of the library's public field table (app/io/particle_fields.h):
 * a field added there changes the layout, and the format version must be raised with it. */
static void test_layout_version(void) {
    if (pbfapp_particle_bytes() != 32 || PBFAPP_CHECKPOINT_VERSION != 1u)
        printf("  the particle fields take %zu bytes per particle; checkpoint version %u means "
               "32: raise PBFAPP_CHECKPOINT_VERSION with the field table and update this test\n",
               pbfapp_particle_bytes(), PBFAPP_CHECKPOINT_VERSION);
    ENSURE(PBFAPP_CHECKPOINT_VERSION == 1u && pbfapp_particle_bytes() == 32);
    ENSURE(pbfapp_checkpoint_size(10) == 64u + 320u + 8u);
    ENSURE(PBFAPP_CHECKPOINT_LAMBDA_VERSION == 3u && pbfapp_checkpoint_lambda_size(10) == 64u + 360u + 8u);
}

static void test_damage_detected(void) {
    pbfapp_scene sc;
    ENSURE(load(&sc, NULL, 0));
    pbf_world *w = NULL;
    pbf_error err;
    ENSURE(pbfapp_scene_create_world(&sc, &w, &err) == PBF_OK);
    pbf_snapshot s = pbf_world_snapshot(w);
    unsigned char *buf = NULL;
    size_t len = 0;
    ENSURE(pbfapp_checkpoint_encode(&s, 0, 1, &buf, &len, &err) == PBF_OK);
    pbfapp_checkpoint c;
    int missed = 0;
    /* every single-byte change, every truncation: refused */
    for (size_t i = 0; i < len; ++i) {
        buf[i] ^= 0x10;
        if (pbfapp_checkpoint_decode(buf, len, "mem", &c, &err) == PBF_OK) {
            ++missed;
            pbfapp_checkpoint_free(&c);
        }
        buf[i] ^= 0x10;
    }
    ENSURE_EQ_INT(missed, 0);
    for (size_t n = 0; n < len; n += (n < 200 ? 1 : 97))
        if (pbfapp_checkpoint_decode(buf, n, "mem", &c, &err) == PBF_OK) ++missed;
    ENSURE_EQ_INT(missed, 0);
    ENSURE(pbfapp_checkpoint_decode(buf, len, "mem", &c, &err) == PBF_OK);
    pbfapp_checkpoint_free(&c);
    /* a future version is named as such (version 2 is the index of a checkpoint in pieces, 3
     * a checkpoint with PBF's multipliers) */
    buf[8] = 4;
    ENSURE(pbfapp_checkpoint_decode(buf, len, "mem", &c, &err) != PBF_OK);
    ENSURE(strstr(err.message, "format version 4 is newer") != NULL);
    free(buf);
    pbf_world_destroy(w);
    pbfapp_scene_free(&sc);
}

static void test_scene_hash(void) {
    pbfapp_scene a, b;
    ENSURE(load(&a, NULL, 0));
    uint64_t h = pbfapp_scene_hash(&a);
    /* unchanged by what does not change the simulation */
    static const char *const same[][2] = {{"frames", "9"},
                                          {"threads", "3"},
                                          {"device", "opencl:1.2"},
                                          {"device", "cuda"},
                                          {"guard_density_error", "5"},
                                          {"checkpoint_every", "2"},
                                          {"adaptive", "1"}};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; ++i) {
        pbfapp_override o = {same[i][0], same[i][1], NULL};
        ENSURE(load(&b, &o, 1));
        if (pbfapp_scene_hash(&b) != h) printf("  %s changed the hash\n", same[i][0]);
        ENSURE(pbfapp_scene_hash(&b) == h);
        pbfapp_scene_free(&b);
    }
    /* changed by every parameter that does */
    static const char *const differ[][2] = {{"relaxation", "0.02"},
                                            {"gravity", "0,-9.8,0"},
                                            {"solver_iterations", "5"},
                                            {"fps", "61"},
                                            {"substeps", "3"},
                                            {"format", "ply"},
                                            {"constraint", "bilateral"},
                                            {"particle_radius", "0.0199"},
                                            {"domain_max", "0.4,0.4,0.25"},
                                            {"max_particles", "9999"}};
    for (size_t i = 0; i < sizeof differ / sizeof differ[0]; ++i) {
        pbfapp_override o = {differ[i][0], differ[i][1], NULL};
        ENSURE(load(&b, &o, 1));
        if (pbfapp_scene_hash(&b) == h) printf("  %s did not change the hash\n", differ[i][0]);
        ENSURE(pbfapp_scene_hash(&b) != h);
        pbfapp_scene_free(&b);
    }
    /* geometry */
    ENSURE(load(&b, NULL, 0));
    b.blocks[0].velocity.x = 1e-7f;
    ENSURE(pbfapp_scene_hash(&b) != h);
    b.blocks[0].velocity.x = 0;
    b.boxes[1].motion.phase = 0.5f;
    ENSURE(pbfapp_scene_hash(&b) != h);
    pbfapp_scene_free(&b);
    /* the same through scene.json (pbfapp_scene_write, then loaded back) */
    char dir[256], path[300];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    snprintf(path, sizeof path, "%s/scene.json", dir);
    pbf_error err;
    pbfapp_override o = {"relaxation", "0.0123456789", NULL};
    ENSURE(load(&b, &o, 1));
    uint64_t hb = pbfapp_scene_hash(&b);
    ENSURE(pbfapp_scene_write(&b, path, &err) == PBF_OK);
    pbfapp_scene_free(&b);
    ENSURE(pbfapp_scene_load(path, NULL, 0, &b, &err) == PBF_OK);
    ENSURE(pbfapp_scene_hash(&b) == hb);
    pbfapp_scene_free(&b);
    remove_tree(dir);
    pbfapp_scene_free(&a);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path) {
    static char buf[4096];
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_directory(void) {
    char dir[256], path[400];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    pbfapp_scene sc;
    ENSURE(load(&sc, NULL, 0));
    pbf_world *w = NULL;
    pbf_error err;
    ENSURE(pbfapp_scene_create_world(&sc, &w, &err) == PBF_OK);
    uint64_t hash = pbfapp_scene_hash(&sc);
    int64_t last = -1;
    for (int f = 0; f <= 4; ++f) {
        ENSURE(pbf_world_step(w, 1.0f / 120.0f, &err) == PBF_OK);
        ENSURE(pbfapp_checkpoint_save(dir, w, f, hash, last, path, sizeof path, &err) == PBF_OK);
        last = f;
    }
    /* only the last two are kept */
    struct stat sb;
    pbfapp_checkpoint_path(path, sizeof path, dir, 2);
    ENSURE(stat(path, &sb) != 0);
    pbfapp_checkpoint_path(path, sizeof path, dir, 3);
    ENSURE(stat(path, &sb) == 0);
    /* the newest damaged: the previous one is found */
    pbfapp_checkpoint_path(path, sizeof path, dir, 4);
    ENSURE(truncate(path, 100) == 0);
    pbfapp_checkpoint c;
    char found[400];
    FILE *log = tmpfile();
    ENSURE(pbfapp_checkpoint_find(dir, hash, sc.particles, log, &c, found, sizeof found, &err) ==
           PBF_OK);
    ENSURE(c.frame == 3);
    pbfapp_checkpoint_free(&c);
    /* another scene: refused */
    ENSURE(pbfapp_checkpoint_find(dir, hash + 1, sc.particles, log, &c, found, sizeof found,
                                  &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "another scene") != NULL);
    if (log) fclose(log);
    /* leftovers of interrupted writes are pruned, other files are not */
    snprintf(path, sizeof path, "%s/checkpoint_00007.pbfck.tmp", dir);
    write_text(path, "x");
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    write_text(path, "x");
    ENSURE_EQ_INT(pbfapp_checkpoint_prune(dir, 0), 1);
    ENSURE(stat(path, &sb) == 0);
    ENSURE_EQ_INT(pbfapp_checkpoint_prune(dir, INT64_MAX), 2);

    /* stats.jsonl: lines of frames 0..2 kept, a half-written line and later frames dropped */
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    write_text(path, "{\"frame\":0,\"a\":1}\n{\"frame\":1,\"a\":1}\n{\"frame\":2,\"a\":1}\n"
                     "{\"frame\":3,\"a\":1}\n{\"frame\":4,\"a");
    ENSURE(pbfapp_stats_truncate(dir, 2, &err) == PBF_OK);
    const char *t = read_text(path);
    ENSURE(t &&
           strcmp(t, "{\"frame\":0,\"a\":1}\n{\"frame\":1,\"a\":1}\n{\"frame\":2,\"a\":1}\n") == 0);
    ENSURE(pbfapp_stats_truncate(dir, 5, &err) == PBF_ERR_INVALID_ARGUMENT);
    pbf_world_destroy(w);
    pbfapp_scene_free(&sc);
    remove_tree(dir);
}

/* Piece j of `pieces` of the snapshot s: the particles i with group(i) % pieces == j, where
 * group(i) = i / per (the key: kind "cell" when per > 1, several particles share it). */
static void write_piece(const char *dir, const pbf_snapshot *s, int per, int64_t frame,
                        uint64_t hash, int j, int pieces, int *count, uint64_t *sum) {
    int n = 0;
    float *col[7];
    const float *src[7] = {s->x, s->y, s->z, s->vx, s->vy, s->vz, s->density};
    for (int k = 0; k < 7; ++k) col[k] = malloc((size_t)s->count * sizeof(float) + 4);
    uint32_t *id = malloc((size_t)s->count * 4 + 4), *key = malloc((size_t)s->count * 4 + 4);
    for (int i = 0; i < s->count; ++i) {
        if ((i / per) % pieces != j) continue;
        for (int k = 0; k < 7; ++k) col[k][n] = src[k][i];
        id[n] = s->id[i];
        key[n] = (uint32_t)(i / per);
        ++n;
    }
    pbf_snapshot p = *s;
    p.count = n;
    p.x = col[0], p.y = col[1], p.z = col[2], p.vx = col[3], p.vy = col[4], p.vz = col[5];
    p.density = col[6];
    p.id = id;
    pbf_error err;
    ENSURE(pbfapp_checkpoint_piece_write(dir, &p, key, per > 1 ? PBFAPP_KEY_CELL : PBFAPP_KEY_ORDER,
                                         frame, hash, j, pieces, sum, &err) == PBF_OK);
    for (int k = 0; k < 7; ++k) free(col[k]);
    free(id);
    free(key);
    *count = n;
}

static void write_pieces(const char *dir, const pbf_snapshot *s, int per, int64_t frame,
                         uint64_t hash, int pieces) {
    pbfapp_checkpoint_index ix;
    memset(&ix, 0, sizeof ix);
    ix.piece_count = calloc((size_t)pieces, sizeof *ix.piece_count);
    ix.piece_sum = calloc((size_t)pieces, sizeof *ix.piece_sum);
    for (int j = 0; j < pieces; ++j) {
        write_piece(dir, s, per, frame, hash, j, pieces, &ix.piece_count[j], &ix.piece_sum[j]);
        ix.count += ix.piece_count[j];
    }
    ix.frame = frame;
    ix.time = s->time;
    ix.steps = s->steps;
    ix.scene_hash = hash;
    ix.pieces = pieces;
    ix.key_kind = per > 1 ? PBFAPP_KEY_CELL : PBFAPP_KEY_ORDER;
    pbf_error err;
    ENSURE(pbfapp_checkpoint_index_write(dir, &ix, &err) == PBF_OK);
    pbfapp_checkpoint_index_free(&ix);
}

static int same_state(const pbf_snapshot *a, const pbf_snapshot *b) {
    if (a->count != b->count || a->time != b->time || a->steps != b->steps) return 0;
    const void *x[] = {a->x, a->y, a->z, a->vx, a->vy, a->vz, a->density, a->id};
    const void *y[] = {b->x, b->y, b->z, b->vx, b->vy, b->vz, b->density, b->id};
    for (int k = 0; k < 8; ++k)
        if (memcmp(x[k], y[k], (size_t)a->count * 4) != 0) return 0;
    return 1;
}

static void test_pieces(void) {
    pbfapp_scene sc;
    ENSURE(load(&sc, NULL, 0));
    pbf_world *w = NULL;
    pbf_error err;
    ENSURE(pbfapp_scene_create_world(&sc, &w, &err) == PBF_OK);
    for (int i = 0; i < 4; ++i) ENSURE(pbf_world_step(w, 1.0f / 120.0f, &err) == PBF_OK);
    const uint64_t hash = pbfapp_scene_hash(&sc);
    char dir[256], path[400], found[400];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    ENSURE(pbfapp_checkpoint_save(dir, w, 2, hash, -1, path, sizeof path, &err) == PBF_OK);
    pbf_snapshot s = pbf_world_snapshot(w);
    pbfapp_checkpoint c;
    /* keys that are places (kind order) and keys shared by 7 consecutive particles (kind cell),
     * in 1, 3 and 5 pieces: read back whole, in the memory order */
    const int per[] = {1, 7, 7}, np[] = {3, 5, 1};
    for (int t = 0; t < 3; ++t) {
        write_pieces(dir, &s, per[t], 3, hash, np[t]);
        pbfapp_checkpoint_path(path, sizeof path, dir, 3);
        ENSURE(pbfapp_checkpoint_read(path, &c, &err) == PBF_OK);
        ENSURE(c.version == PBFAPP_CHECKPOINT_INDEX_VERSION && c.frame == 3 && c.count == s.count);
        ENSURE(same_state(&c.snapshot, &s));
        pbfapp_checkpoint_free(&c);
        pbfapp_checkpoint_prune(dir, 2); /* leaves frames 2 and 3 */
    }
    /* the newest valid: frame 3 in pieces */
    ENSURE(pbfapp_checkpoint_find(dir, hash, sc.particles, NULL, &c, found, sizeof found, &err) ==
           PBF_OK);
    ENSURE(c.frame == 3 && same_state(&c.snapshot, &s));
    pbfapp_checkpoint_free(&c);
    /* the index read alone: counts and checksums; a version 1 file is told apart */
    pbfapp_checkpoint_index ix;
    int single = -1;
    ENSURE(pbfapp_checkpoint_index_read(path, &ix, &single, &err) == PBF_OK);
    ENSURE(single == 0 && ix.pieces == 1 && ix.count == s.count && ix.key_kind == PBFAPP_KEY_CELL);
    pbfapp_checkpoint_index_free(&ix);
    pbfapp_checkpoint_path(found, sizeof found, dir, 2);
    ENSURE(pbfapp_checkpoint_index_read(found, &ix, &single, &err) == PBF_OK && single == 1);
    /* 3 pieces again; then each damage in turn: the previous checkpoint (frame 2) is used */
    write_pieces(dir, &s, 7, 3, hash, 3);
    char piece[400], keep[420];
    pbfapp_checkpoint_piece_path(piece, sizeof piece, dir, 3, 1);
    snprintf(keep, sizeof keep, "%s.keep", piece);
    ENSURE(link(piece, keep) == 0 && unlink(piece) == 0);
    const char *why[] = {"cannot open", "checksum mismatch", "leftover of another run",
                         "truncated"};
    for (int d = 0; d < 4; ++d) {
        char cmd[1400];
        if (d == 1) /* a flipped byte */
            snprintf(cmd, sizeof cmd, "cp '%s' '%s' && printf 'Z' | dd of='%s' bs=1 seek=200 "
                     "conv=notrunc 2>/dev/null", keep, piece, piece);
        else if (d == 2) /* a complete piece of another checkpoint of the same frame */
            snprintf(cmd, sizeof cmd, "true");
        else if (d == 3)
            snprintf(cmd, sizeof cmd, "cp '%s' '%s' && truncate -s 300 '%s'", keep, piece, piece);
        else
            snprintf(cmd, sizeof cmd, "true");
        if (d == 2) { /* the pieces of frame 3 of another state, under the same index */
            pbf_snapshot other = s;
            other.x = s.y; /* other positions, the same header */
            int cnt = 0;
            uint64_t sum = 0;
            write_piece(dir, &other, 7, 3, hash, 1, 3, &cnt, &sum);
        }
        ENSURE(system(cmd) == 0);
        ENSURE(pbfapp_checkpoint_read(path, &c, &err) != PBF_OK);
        if (!strstr(err.message, why[d])) printf("  damage %d: %s\n", d, err.message);
        ENSURE(strstr(err.message, why[d]) != NULL);
        ENSURE(pbfapp_checkpoint_find(dir, hash, sc.particles, NULL, &c, found, sizeof found,
                                      &err) == PBF_OK);
        ENSURE(c.frame == 2);
        pbfapp_checkpoint_free(&c);
        unlink(piece);
    }
    ENSURE(rename(keep, piece) == 0);
    ENSURE(pbfapp_checkpoint_read(path, &c, &err) == PBF_OK && same_state(&c.snapshot, &s));
    pbfapp_checkpoint_free(&c);
    /* pieces without an index (a write cut short) are pruned; the checkpoint's are not */
    int cnt = 0;
    uint64_t sum = 0;
    write_piece(dir, &s, 7, 5, hash, 0, 2, &cnt, &sum);
    ENSURE_EQ_INT(pbfapp_checkpoint_prune(dir, 0), 1);
    struct stat sb;
    ENSURE(stat(piece, &sb) == 0);
    /* the checkpoints before `before`: frame 2's file, frame 3's index, its three pieces and the
     * two extra pieces left by the 5-piece checkpoint of frame 3 written above */
    ENSURE_EQ_INT(pbfapp_checkpoint_prune(dir, 4), 7);
    ENSURE(stat(piece, &sb) != 0);
    pbf_world_destroy(w);
    pbfapp_scene_free(&sc);
    remove_tree(dir);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_round_trip_and_continue);
    RUN_SUBTEST(test_layout_version);
    RUN_SUBTEST(test_damage_detected);
    RUN_SUBTEST(test_scene_hash);
    RUN_SUBTEST(test_directory);
    RUN_SUBTEST(test_pieces);
    return test_end();
}
