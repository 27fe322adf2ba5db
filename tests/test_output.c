/*
 * The frame writers and stats.jsonl of the `pbf` command (app/io/output.c), without the solver:
 * particles in a scrambled memory order are written as PLY, CSV, VTP, Houdini .geo and .bgeo, read
 * back, and must come out in id order with every value exact; the output directory checks; the
 * atomic replace; a run's claim on its directory (the files of an earlier run go, no other file
 * does); the series indexes (frames.pvd, frames.EXT.series) as frames come and after a resume.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frame_read.h"
#include "output.h"
#include "particle_fields.h"

enum { N = 37 };

/* Particles stored in a scrambled order: memory slot i holds the particle with id perm[i]. */
typedef struct fake {
    float x[N], y[N], z[N], vx[N], vy[N], vz[N], density[N];
    uint32_t id[N];
    pbf_particles p;
} fake;

static float value_of(uint32_t id, int field) {
    return (float)id * 0.125f + (float)field * 10.0f + 1.0f / 3.0f;
}

static void make_fake(fake *f) {
    for (int i = 0; i < N; ++i) {
        uint32_t id = (uint32_t)((i * 11 + 5) % N); /* 11 is coprime with 37: a permutation */
        f->id[i] = id;
        f->x[i] = value_of(id, 0);
        f->y[i] = value_of(id, 1);
        f->z[i] = value_of(id, 2);
        f->vx[i] = value_of(id, 3);
        f->vy[i] = -value_of(id, 4);
        f->vz[i] = value_of(id, 5);
        f->density[i] = 1000.0f + value_of(id, 6);
    }
    f->p.count = N;
    f->p.x = f->x;
    f->p.y = f->y;
    f->p.z = f->z;
    f->p.vx = f->vx;
    f->p.vy = f->vy;
    f->p.vz = f->vz;
    f->p.density = f->density;
    f->p.id = f->id;
}

static void make_tmpdir(char *buf, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/pbf_test_output.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(buf)) buf[0] = '\0';
}

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0;
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static uint32_t le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static float lef(const unsigned char *b) {
    uint32_t u = le32(b);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void test_id_order_permutation(void) {
    fake f;
    make_fake(&f);
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    for (uint32_t k = 0; k < N; ++k) ENSURE_EQ_INT(f.id[order[k]], k);
}

static void test_id_order_sparse_ids(void) {
    fake f;
    make_fake(&f);
    for (int i = 0; i < N; ++i) f.id[i] = f.id[i] * 7 + 100; /* not 0..N-1: sorted instead */
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    for (uint32_t k = 0; k < N; ++k) ENSURE_EQ_INT(f.id[order[k]], k * 7 + 100);
}

static void test_ply_round_trip(void) {
    char dir[256], path[300];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    fake f;
    make_fake(&f);
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    snprintf(path, sizeof path, "%s/frame_00003.ply", dir);
    pbf_error err;
    ENSURE(pbfapp_write_ply(path, &f.p, order, 0.05, &err) == PBF_OK);
    size_t size = 0;
    unsigned char *buf = read_file(path, &size);
    ENSURE(buf);
    const char *end = strstr((const char *)buf, "end_header\n");
    int ok = end != NULL &&
             strncmp((const char *)buf, "ply\nformat binary_little_endian 1.0\n", 36) == 0 &&
             strstr((const char *)buf, "element vertex 37\n") != NULL &&
             strstr((const char *)buf,
                    "property float x\nproperty float y\nproperty float z\nproperty float vx\n"
                    "property float vy\nproperty float vz\nproperty float density\n"
                    "property uint id\nend_header\n") != NULL;
    size_t header = end ? (size_t)(end - (const char *)buf) + 11 : 0;
    int sized = size == header + (size_t)N * 32;
    int values = ok && sized;
    for (uint32_t k = 0; values && k < N; ++k) {
        const unsigned char *r = buf + header + (size_t)k * 32;
        values = lef(r) == value_of(k, 0) && lef(r + 4) == value_of(k, 1) &&
                 lef(r + 8) == value_of(k, 2) && lef(r + 12) == value_of(k, 3) &&
                 lef(r + 16) == -value_of(k, 4) && lef(r + 20) == value_of(k, 5) &&
                 lef(r + 24) == 1000.0f + value_of(k, 6) && le32(r + 28) == k;
    }
    free(buf);
    snprintf(path, sizeof path, "%s/frame_00003.ply.tmp", dir);
    int tmp_left = exists(path);
    remove_tree(dir);
    ENSURE(ok);
    ENSURE(sized);
    ENSURE(values);
    ENSURE(!tmp_left);
}

static void test_csv_round_trip(void) {
    char dir[256], path[300];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    fake f;
    make_fake(&f);
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    snprintf(path, sizeof path, "%s/frame_00000.csv", dir);
    ENSURE(pbfapp_write_csv(path, &f.p, order, NULL) == PBF_OK);
    FILE *in = fopen(path, "r");
    ENSURE(in);
    char line[512];
    int header_ok =
        fgets(line, sizeof line, in) && strcmp(line, "x,y,z,vx,vy,vz,density,id\n") == 0;
    int rows = 0, values = 1;
    while (fgets(line, sizeof line, in)) {
        float v[7];
        unsigned id = 0;
        if (sscanf(line, "%g,%g,%g,%g,%g,%g,%g,%u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &id) != 8) {
            values = 0;
            break;
        }
        uint32_t k = (uint32_t)rows;
        values = values && v[0] == value_of(k, 0) && v[1] == value_of(k, 1) &&
                 v[2] == value_of(k, 2) && v[3] == value_of(k, 3) && v[4] == -value_of(k, 4) &&
                 v[5] == value_of(k, 5) && v[6] == 1000.0f + value_of(k, 6) && id == k;
        ++rows;
    }
    fclose(in);
    /* `pbf render` reads it back, ids included, and still reads the header without ids */
    pbfapp_frame_data fd;
    memset(&fd, 0, sizeof fd);
    int read_ok = pbfapp_read_frame(path, &fd, NULL) == PBF_OK && fd.count == N;
    for (int k = 0; read_ok && k < N; ++k)
        read_ok = fd.id[k] == (uint32_t)k && fd.x[k] == value_of((uint32_t)k, 0) &&
                  fd.density[k] == 1000.0f + value_of((uint32_t)k, 6);
    FILE *old = fopen(path, "w");
    if (old) {
        fputs("x,y,z,vx,vy,vz,density\n1,2,3,4,5,6,7\n8,9,10,11,12,13,14\n", old);
        fclose(old);
    }
    int old_ok = pbfapp_read_frame(path, &fd, NULL) == PBF_OK && fd.count == 2 && fd.id[1] == 1 &&
                 fd.x[1] == 8.0f && fd.density[1] == 14.0f;
    pbfapp_frame_data_free(&fd);
    remove_tree(dir);
    ENSURE(read_ok);
    ENSURE(old_ok);
    ENSURE(header_ok);
    ENSURE(values);
    ENSURE_EQ_INT(rows, N);
}

/* Finds `offset="..."` of the DataArray named `name` in a VTP header. */
static long vtp_offset(const char *text, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "Name=\"%s\"", name);
    const char *at = strstr(text, key);
    if (!at) return -1;
    const char *off = strstr(at, "offset=\"");
    if (!off) return -1;
    return strtol(off + 8, NULL, 10);
}

static void test_vtp_layout(void) {
    char dir[256], path[300];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    fake f;
    make_fake(&f);
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    snprintf(path, sizeof path, "%s/frame_00000.vtp", dir);
    ENSURE(pbfapp_write_vtp(path, &f.p, order, 0.25, NULL) == PBF_OK);
    size_t size = 0;
    unsigned char *buf = read_file(path, &size);
    remove_tree(dir);
    ENSURE(buf);
    const char *text = (const char *)buf;
    const char *mark = strstr(text, "<AppendedData encoding=\"raw\">");
    const char *underscore = mark ? strchr(mark, '_') : NULL;
    long o_vel = vtp_offset(text, "velocity"), o_den = vtp_offset(text, "density");
    long o_id = vtp_offset(text, "id"), o_pts = vtp_offset(text, "Points");
    long o_con = vtp_offset(text, "connectivity"), o_off = vtp_offset(text, "offsets");
    int header_ok = strstr(text, "NumberOfPoints=\"37\"") && strstr(text, "NumberOfVerts=\"37\"") &&
                    strstr(text, "header_type=\"UInt64\"") && strstr(text, "TimeValue") &&
                    underscore != NULL;
    int layout_ok = 0, values_ok = 0;
    if (header_ok) {
        const unsigned char *data = (const unsigned char *)underscore + 1;
        size_t data_len = size - (size_t)(data - buf);
        layout_ok = o_vel == 0 && o_den == 8 + 12 * N && o_id == o_den + 8 + 4 * N &&
                    o_pts == o_id + 8 + 4 * N && o_con == o_pts + 8 + 12 * N &&
                    o_off == o_con + 8 + 4 * N && data_len > (size_t)o_off + 8 + 4 * N &&
                    le32(data + o_pts) == 12 * N && le32(data + o_pts + 4) == 0;
        values_ok = layout_ok;
        for (uint32_t k = 0; values_ok && k < N; ++k) {
            const unsigned char *pt = data + o_pts + 8 + 12 * k;
            const unsigned char *v = data + o_vel + 8 + 12 * k;
            values_ok = lef(pt) == value_of(k, 0) && lef(pt + 4) == value_of(k, 1) &&
                        lef(pt + 8) == value_of(k, 2) && lef(v + 4) == -value_of(k, 4) &&
                        lef(data + o_den + 8 + 4 * k) == 1000.0f + value_of(k, 6) &&
                        le32(data + o_id + 8 + 4 * k) == k && le32(data + o_con + 8 + 4 * k) == k &&
                        le32(data + o_off + 8 + 4 * k) == k + 1;
        }
    }
    free(buf);
    ENSURE(header_ok);
    ENSURE(layout_ok);
    ENSURE(values_ok);
}

static void test_output_dir_and_stats(void) {
    char dir[256], sub[320], path[400];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    snprintf(sub, sizeof sub, "%s/a/b/", dir);
    pbfapp_output *o = NULL;
    pbf_error err;
    int opened = pbfapp_output_open(sub, PBFAPP_FORMAT_PLY, &o, &err) == PBF_OK;
    int written = 0, stats_ok = 0;
    if (opened) {
        fake f;
        make_fake(&f);
        pbf_stats s;
        memset(&s, 0, sizeof s);
        s.time = 0.5;
        s.particles = N;
        s.density_error_avg = 0.25;
        s.density_error_max = 1.5;
        s.max_speed = 2.0;
        s.substeps = 3;
        s.iterations = 12;
        s.solver_error = 0.125;
        s.divergence_iterations = 5;
        s.divergence_error = 0.0625;
        s.speed_clamps = 4096; /* the frame's cuts by the speed limit */
        written = pbfapp_output_frame(o, 7, s.time, &f.p, &err) == PBF_OK &&
                  pbfapp_output_stats(o, 7, &s, 12.5, &err) == PBF_OK;
        written = pbfapp_output_close(o, &err) == PBF_OK && written;
        snprintf(path, sizeof path, "%s/a/b/frame_00007.ply", dir);
        written = written && exists(path);
        snprintf(path, sizeof path, "%s/a/b/stats.jsonl", dir);
        size_t size = 0;
        char *text = (char *)read_file(path, &size);
        stats_ok = text && strcmp(text, "{\"frame\":7,\"time\":0.5,\"particles\":37,"
                                        "\"density_error_avg\":0.25,\"density_error_max\":1.5,"
                                        "\"max_speed\":2,\"nonfinite\":0,\"escaped\":0,"
                                        "\"speed_clamps\":4096,\"ms\":12.500,\"substeps\":3,\"iterations\":12,"
                                        "\"solver_error\":0.125,\"divergence_iterations\":5,"
                                        "\"divergence_error\":0.0625}\n") == 0;
        if (!stats_ok && text) printf("stats.jsonl: %s", text);
        free(text);
    }
    /* A regular file where the directory should be, and below it: refused as a usage error
     * (PBF_ERR_INVALID_ARGUMENT, exit status 2), naming the path. */
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *blocker = fopen(path, "w");
    if (blocker) fclose(blocker);
    pbfapp_output *bad = NULL;
    pbf_error e1, e2;
    int refused_file =
        pbfapp_output_open(path, PBFAPP_FORMAT_VTP, &bad, &e1) == PBF_ERR_INVALID_ARGUMENT &&
        bad == NULL && strstr(e1.message, path) != NULL;
    snprintf(sub, sizeof sub, "%s/file/below", dir);
    int refused_below =
        pbfapp_output_open(sub, PBFAPP_FORMAT_VTP, &bad, &e2) == PBF_ERR_INVALID_ARGUMENT &&
        bad == NULL && strstr(e2.message, sub) != NULL;
    remove_tree(dir);
    ENSURE(opened);
    ENSURE(written);
    ENSURE(stats_ok);
    ENSURE(refused_file);
    ENSURE(refused_below);
}

static void test_write_into_missing_dir_fails(void) {
    fake f;
    make_fake(&f);
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    pbf_error err;
    const char *path = "/nonexistent-pbf-dir/frame_00000.vtp";
    ENSURE(pbfapp_write_vtp(path, &f.p, order, 0.0, &err) == PBF_ERR_IO);
    ENSURE(strstr(err.message, "/nonexistent-pbf-dir/frame_00000.vtp") != NULL);
}

/* The writers walk the library's public field table: its columns are, in order, the members of
 * pbf_particles (and the PLY/CSV column names of the formats), and the snapshot helpers map every
 * column to the member of pbf_snapshot that the view holds it in. */
static void test_field_columns(void) {
    static const char *const names[] = {"x", "y", "z", "vx", "vy", "vz", "density", "id"};
    pbfapp_column col[PBFAPP_MAX_COLUMNS];
    size_t n = pbfapp_columns(col, PBFAPP_MAX_COLUMNS);
    ENSURE_EQ_INT((int)n, 8);
    ENSURE_EQ_INT((int)pbfapp_particle_bytes(), 32);
    fake f;
    make_fake(&f);
    const void *members[] = {f.x, f.y, f.z, f.vx, f.vy, f.vz, f.density, f.id};
    float arrays[8][1];
    pbf_snapshot snap;
    memset(&snap, 0, sizeof snap);
    snap.count = 1;
    for (size_t j = 0; j < n && j < 8; ++j) {
        char name[80];
        pbfapp_column_name(&col[j], name, sizeof name);
        ENSURE(strcmp(name, names[j]) == 0);
        ENSURE(pbfapp_column_data(&f.p, &col[j]) == members[j]);
        ENSURE(pbfapp_snapshot_set_column(&snap, &col[j], arrays[j]));
    }
    pbf_particles view = pbfapp_snapshot_particles(&snap);
    ENSURE_EQ_INT(view.count, 1);
    for (size_t j = 0; j < n && j < 8; ++j)
        ENSURE(pbfapp_column_data(&view, &col[j]) == (const void *)arrays[j]);
    ENSURE_EQ_INT(pbfapp_field_index("position"), 0);
    ENSURE_EQ_INT(pbfapp_field_index("id"), 3);
    ENSURE_EQ_INT(pbfapp_field_index("no such field"), -1);
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

/* Houdini's classic text (.geo) and binary (.bgeo) geometry: the exact header and attribute
 * dictionary, the points in id order with every value exact (the binary checked byte by byte at
 * its documented offsets, big endian), and `pbf render`'s reader gets the same back. */
static void test_houdini_geo_bgeo(void) {
    char dir[256], geo[300], bgeo[300];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    fake f;
    make_fake(&f);
    uint32_t order[N];
    ENSURE(pbfapp_id_order(&f.p, order, NULL) == PBF_OK);
    snprintf(geo, sizeof geo, "%s/frame_00000.geo", dir);
    snprintf(bgeo, sizeof bgeo, "%s/frame_00000.bgeo", dir);
    ENSURE(pbfapp_write_geo(geo, &f.p, order, NULL) == PBF_OK);
    ENSURE(pbfapp_write_bgeo(bgeo, &f.p, order, NULL) == PBF_OK);

    size_t size = 0;
    char *text = (char *)read_file(geo, &size);
    ENSURE(text);
    const char *head = "PGEOMETRY V5\nNPoints 37 NPrims 0\nNPointGroups 0 NPrimGroups 0\n"
                       "NPointAttrib 3 NVertexAttrib 0 NPrimAttrib 0 NAttrib 0\nPointAttrib\n"
                       "v 3 vector 0 0 0\ndensity 1 float 0\nid 1 int 0\n";
    int head_ok = strncmp(text, head, strlen(head)) == 0;
    int points_ok = head_ok;
    const char *p = text + strlen(head);
    for (uint32_t k = 0; points_ok && k < N; ++k) {
        float v[8];
        unsigned id = 0;
        int used = 0;
        points_ok = sscanf(p, "%g %g %g %g (%g %g %g %g %u)\n%n", &v[0], &v[1], &v[2], &v[3],
                           &v[4], &v[5], &v[6], &v[7], &id, &used) == 9 &&
                    v[0] == value_of(k, 0) && v[1] == value_of(k, 1) && v[2] == value_of(k, 2) &&
                    v[3] == 1.0f && v[4] == value_of(k, 3) && v[5] == -value_of(k, 4) &&
                    v[6] == value_of(k, 5) && v[7] == 1000.0f + value_of(k, 6) && id == k;
        p += used;
    }
    int tail_ok = points_ok && strcmp(p, "beginExtra\nendExtra\n") == 0;
    free(text);

    unsigned char *b = read_file(bgeo, &size);
    ENSURE(b);
    /* 41 header bytes, the dictionary v (21), density (19), id (14), 36 bytes a point, 0x00 0xff */
    int bhead_ok = size == 41 + 54 + 36 * N + 2 && memcmp(b, "BgeoV", 5) == 0 &&
                   be32(b + 5) == 5 && be32(b + 9) == N && be32(b + 13) == 0 &&
                   be32(b + 25) == 3 && be32(b + 37) == 0;
    static const unsigned char dict[] = {
        0, 1, 'v', 0, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 7, 'd', 'e', 'n', 's', 'i', 't', 'y', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 2, 'i', 'd', 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    int bdict_ok = bhead_ok && memcmp(b + 41, dict, sizeof dict) == 0;
    int bpoints_ok = bdict_ok;
    for (uint32_t k = 0; bpoints_ok && k < N; ++k) {
        const unsigned char *q = b + 41 + 54 + 36 * k;
        bpoints_ok = bef(q) == value_of(k, 0) && bef(q + 4) == value_of(k, 1) &&
                     bef(q + 8) == value_of(k, 2) && bef(q + 12) == 1.0f &&
                     bef(q + 16) == value_of(k, 3) && bef(q + 20) == -value_of(k, 4) &&
                     bef(q + 24) == value_of(k, 5) && bef(q + 28) == 1000.0f + value_of(k, 6) &&
                     be32(q + 32) == k;
    }
    int bend_ok = bpoints_ok && b[size - 2] == 0x00 && b[size - 1] == 0xff;
    free(b);

    int read_ok = 1;
    const char *const paths[2] = {geo, bgeo};
    for (int w = 0; w < 2; ++w) {
        pbfapp_frame_data fd;
        memset(&fd, 0, sizeof fd);
        read_ok = read_ok && pbfapp_read_frame(paths[w], &fd, NULL) == PBF_OK && fd.count == N;
        for (int k = 0; read_ok && k < N; ++k)
            read_ok = fd.id[k] == (uint32_t)k && fd.z[k] == value_of((uint32_t)k, 2) &&
                      fd.vy[k] == -value_of((uint32_t)k, 4) &&
                      fd.density[k] == 1000.0f + value_of((uint32_t)k, 6);
        pbfapp_frame_data_free(&fd);
    }
    /* damaged files are refused with the file named: a truncated .bgeo, a .geo claiming more
     * points than it holds */
    int refused = 1;
    b = read_file(bgeo, &size);
    FILE *out = fopen(bgeo, "wb");
    if (b && out) fwrite(b, 1, size - 10, out);
    if (out) fclose(out);
    free(b);
    text = (char *)read_file(geo, &size);
    out = fopen(geo, "w");
    if (text && out) fprintf(out, "PGEOMETRY V5\nNPoints 99999%s", text + strlen("PGEOMETRY V5\nNPoints 37"));
    if (out) fclose(out);
    free(text);
    for (int w = 0; w < 2; ++w) {
        pbfapp_frame_data fd;
        memset(&fd, 0, sizeof fd);
        pbf_error e;
        memset(&e, 0, sizeof e);
        refused = refused && pbfapp_read_frame(paths[w], &fd, &e) == PBF_ERR_INVALID_ARGUMENT &&
                  strstr(e.message, paths[w]) != NULL && fd.count == 0;
        if (!refused) printf("%s: %s\n", paths[w], e.message);
    }
    remove_tree(dir);
    ENSURE(refused);
    ENSURE(head_ok);
    ENSURE(points_ok);
    ENSURE(tail_ok);
    ENSURE(bhead_ok);
    ENSURE(bdict_ok);
    ENSURE(bpoints_ok);
    ENSURE(bend_ok);
    ENSURE(read_ok);
}

static void touch(const char *dir, const char *name, const char *text) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int has(const char *dir, const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return exists(path);
}

static char *slurp_in(const char *dir, const char *name) {
    char path[600];
    size_t size = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return (char *)read_file(path, &size);
}

/* A fresh run into a directory holding a longer earlier run: its frames (every format), images
 * and indexes go, and nothing else; then frames.pvd lists the new frames with their times. */
static void test_claim_fresh_run(void) {
    char dir[256], sub[300];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    static const char *const theirs[] = {"frame_00000.vtp", "frame_00001.vtp", "frame_00002.vtp",
                                         "frame_00003.vtp", "frame_00012.ply", "frame_00003.png",
                                         "frame_00004.csv.tmp", "frame_00005.bgeo",
                                         "frame_00006.geo", "frames.pvd", "frames.ply.series"};
    static const char *const others[] = {"notes.txt", "frame_1.vtp", "my_frame_00001.vtp",
                                         "frame_00002.vtp.bak", "frame_00002.txt", "frames.json",
                                         "run.mp4"};
    for (size_t k = 0; k < sizeof theirs / sizeof theirs[0]; ++k) touch(dir, theirs[k], "old");
    for (size_t k = 0; k < sizeof others / sizeof others[0]; ++k) touch(dir, others[k], "keep");
    touch(dir, "stats.jsonl", "{\"frame\":0,\"time\":0}\n"); /* an earlier run's directory */
    snprintf(sub, sizeof sub, "%s/frame_00007.vtp", dir);    /* a directory is never removed */
    ENSURE(mkdir(sub, 0777) == 0);

    pbfapp_output *o = NULL;
    pbf_error err;
    ENSURE(pbfapp_output_open(dir, PBFAPP_FORMAT_VTP, &o, &err) == PBF_OK);
    int removed = -1;
    int claimed = pbfapp_output_claim(o, -1, &removed, &err) == PBF_OK;
    int gone = 1, kept = 1;
    for (size_t k = 0; k < sizeof theirs / sizeof theirs[0]; ++k) gone = gone && !has(dir, theirs[k]);
    for (size_t k = 0; k < sizeof others / sizeof others[0]; ++k) kept = kept && has(dir, others[k]);
    kept = kept && has(dir, "frame_00007.vtp");
    fake f;
    make_fake(&f);
    int written = 1;
    for (int fr = 0; fr < 3; ++fr)
        written = written && pbfapp_output_frame(o, fr, fr * 0.025, &f.p, &err) == PBF_OK;
    written = pbfapp_output_close(o, &err) == PBF_OK && written;
    char *pvd = slurp_in(dir, "frames.pvd");
    int pvd_ok =
        pvd && strcmp(pvd, "<?xml version=\"1.0\"?>\n"
                           "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
                           "  <Collection>\n"
                           "    <DataSet timestep=\"0\" group=\"\" part=\"0\" file=\"frame_00000.vtp\"/>\n"
                           "    <DataSet timestep=\"0.025\" group=\"\" part=\"0\" file=\"frame_00001.vtp\"/>\n"
                           "    <DataSet timestep=\"0.05\" group=\"\" part=\"0\" file=\"frame_00002.vtp\"/>\n"
                           "  </Collection>\n"
                           "</VTKFile>\n") == 0;
    if (!pvd_ok && pvd) printf("frames.pvd:\n%s", pvd);
    free(pvd);
    int no_tmp = !has(dir, "frames.pvd.tmp") && !has(dir, "frame_00003.vtp");
    remove_tree(dir);
    ENSURE(claimed);
    ENSURE_EQ_INT(removed, (int)(sizeof theirs / sizeof theirs[0]));
    ENSURE(gone);
    ENSURE(kept);
    ENSURE(written);
    ENSURE(pvd_ok);
    ENSURE(no_tmp);
}

/* Frame files in a directory no run wrote (no scene.json, no stats.jsonl) are not ours to delete:
 * a fresh run refuses it, naming the directory and a file, and touches nothing. */
static void test_claim_refuses_foreign_frames(void) {
    char dir[256];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    touch(dir, "frame_00001.png", "a photo");
    pbfapp_output *o = NULL;
    pbf_error err;
    memset(&err, 0, sizeof err);
    int refused =
        pbfapp_output_open(dir, PBFAPP_FORMAT_PLY, &o, &err) == PBF_ERR_INVALID_ARGUMENT &&
        o == NULL;
    int named = strstr(err.message, dir) && strstr(err.message, "frame_00001.png");
    char *kept = slurp_in(dir, "frame_00001.png");
    int intact = kept && strcmp(kept, "a photo") == 0 && !has(dir, "stats.jsonl");
    free(kept);
    remove_tree(dir);
    ENSURE(refused);
    ENSURE(named);
    ENSURE(intact);
}

/* A resumed run keeps the frames up to its checkpoint, deletes the later ones (and their images),
 * rebuilds its index from stats.jsonl and goes on appending to it. */
static void test_claim_resume(void) {
    char dir[256];
    make_tmpdir(dir, sizeof dir);
    ENSURE(dir[0]);
    char name[64];
    for (int fr = 0; fr <= 5; ++fr) {
        snprintf(name, sizeof name, "frame_%05d.ply", fr);
        touch(dir, name, "frame");
        snprintf(name, sizeof name, "frame_%05d.png", fr);
        touch(dir, name, "image");
    }
    touch(dir, "frames.pvd", "an index of an earlier vtp run");
    touch(dir, "frames.ply.series", "stale");
    touch(dir, "stats.jsonl", "{\"frame\":0,\"time\":0,\"particles\":37}\n"
                              "{\"frame\":1,\"time\":0.0166666675,\"particles\":37}\n"
                              "{\"frame\":2,\"time\":0.0333333351,\"particles\":37}\n");
    pbfapp_output *o = NULL;
    pbf_error err;
    ENSURE(pbfapp_output_open_append(dir, PBFAPP_FORMAT_PLY, &o, &err) == PBF_OK);
    int removed = -1;
    int claimed = pbfapp_output_claim(o, 2, &removed, &err) == PBF_OK;
    int kept = 1, gone = 1;
    for (int fr = 0; fr <= 5; ++fr) {
        snprintf(name, sizeof name, "frame_%05d.ply", fr);
        int there = has(dir, name);
        snprintf(name, sizeof name, "frame_%05d.png", fr);
        there = there && has(dir, name);
        if (fr <= 2) kept = kept && there;
        else gone = gone && !has(dir, name);
    }
    gone = gone && !has(dir, "frames.pvd");
    char *series = slurp_in(dir, "frames.ply.series");
    const char *three = "{\n  \"file-series-version\" : \"1.0\",\n  \"files\" : [\n"
                        "    { \"name\" : \"frame_00000.ply\", \"time\" : 0 },\n"
                        "    { \"name\" : \"frame_00001.ply\", \"time\" : 0.0166666675 },\n"
                        "    { \"name\" : \"frame_00002.ply\", \"time\" : 0.0333333351 }\n"
                        "  ]\n}\n";
    int rebuilt = series && strcmp(series, three) == 0;
    if (!rebuilt && series) printf("frames.ply.series:\n%s", series);
    free(series);
    fake f;
    make_fake(&f);
    int written = pbfapp_output_frame(o, 3, 0.05000000074505806, &f.p, &err) == PBF_OK;
    written = pbfapp_output_close(o, &err) == PBF_OK && written;
    series = slurp_in(dir, "frames.ply.series");
    int appended = series && strstr(series, "    { \"name\" : \"frame_00002.ply\", \"time\" : "
                                            "0.0333333351 },\n    { \"name\" : \"frame_00003.ply\", "
                                            "\"time\" : 0.0500000007 }\n  ]\n}\n") != NULL;
    if (!appended && series) printf("frames.ply.series:\n%s", series);
    free(series);
    remove_tree(dir);
    ENSURE(claimed);
    ENSURE_EQ_INT(removed, 3 * 2 + 1); /* frames 3..5 and their images, the other format's index */
    ENSURE(kept);
    ENSURE(gone);
    ENSURE(rebuilt);
    ENSURE(written);
    ENSURE(appended);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_id_order_permutation);
    RUN_SUBTEST(test_id_order_sparse_ids);
    RUN_SUBTEST(test_ply_round_trip);
    RUN_SUBTEST(test_csv_round_trip);
    RUN_SUBTEST(test_vtp_layout);
    RUN_SUBTEST(test_output_dir_and_stats);
    RUN_SUBTEST(test_write_into_missing_dir_fails);
    RUN_SUBTEST(test_field_columns);
    RUN_SUBTEST(test_houdini_geo_bgeo);
    RUN_SUBTEST(test_claim_fresh_run);
    RUN_SUBTEST(test_claim_refuses_foreign_frames);
    RUN_SUBTEST(test_claim_resume);
    return test_end();
}
