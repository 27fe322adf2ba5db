/*
 * Checkpoints of the `pbf` command (app/checkpoint.c): encode/decode round trip of a real world,
 * every kind of damage detected (each byte flipped, every truncation), a restored world that
 * continues bit-identically, the scene hash (stable through scene.json, sensitive to what changes
 * the simulation, blind to what does not), choosing the newest valid checkpoint, pruning, and
 * stats.jsonl truncation for a resume.
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
    ENSURE(len == pbfapp_checkpoint_size(s.count));
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
    ENSURE(len == 64 + 32 * (size_t)s.count + 8);
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

/* The checkpoint carries every column of the library's public field table (app/particle_fields.h):
 * a field added there changes the layout, and the format version must be raised with it. */
static void test_layout_version(void) {
    if (pbfapp_particle_bytes() != 32 || PBFAPP_CHECKPOINT_VERSION != 1u)
        printf("  the particle fields take %zu bytes per particle; checkpoint version %u means "
               "32: raise PBFAPP_CHECKPOINT_VERSION with the field table and update this test\n",
               pbfapp_particle_bytes(), PBFAPP_CHECKPOINT_VERSION);
    ENSURE(PBFAPP_CHECKPOINT_VERSION == 1u && pbfapp_particle_bytes() == 32);
    ENSURE(pbfapp_checkpoint_size(10) == 64u + 320u + 8u);
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
    /* a future version is named as such */
    buf[8] = 2;
    ENSURE(pbfapp_checkpoint_decode(buf, len, "mem", &c, &err) != PBF_OK);
    ENSURE(strstr(err.message, "format version 2 is newer") != NULL);
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

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_round_trip_and_continue);
    RUN_SUBTEST(test_layout_version);
    RUN_SUBTEST(test_damage_detected);
    RUN_SUBTEST(test_scene_hash);
    RUN_SUBTEST(test_directory);
    return test_end();
}
