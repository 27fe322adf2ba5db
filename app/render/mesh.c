/* Surface meshes of a run's frames: writers, `pbf run --mesh` and `pbf mesh DIR` (see mesh.h). */
#define _POSIX_C_SOURCE 200809L

#include "render/mesh.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/frame_files.h"
#include "io/frame_read.h"
#include "io/output.h"
#include "run/progress.h"
#include "io/util.h"
#include "io/vdb_writer.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

void pbfapp_mesh_options_default(pbfapp_mesh_options *o) {
    memset(o, 0, sizeof *o);
    o->format = PBFAPP_MESH_PLY;
}

/* 1: *f set; 0: not a format name; -1: vdb in a build without OpenVDB. */
static int parse_format(const char *v, pbfapp_mesh_format *f) {
    if (strcmp(v, "ply") == 0) *f = PBFAPP_MESH_PLY;
    else if (strcmp(v, "obj") == 0) *f = PBFAPP_MESH_OBJ;
    else if (strcmp(v, "vdb") == 0 && !pbfapp_vdb_supported()) return -1;
    else if (strcmp(v, "vdb") == 0) *f = PBFAPP_MESH_VDB;
    else return 0;
    return 1;
}

/* The usage error of a bad format value (opt: "--format" or "--mesh-format"). */
static void format_error(const char *prog, const char *opt, const char *value, int parsed) {
    if (parsed < 0)
        fprintf(stderr, "%s: %s vdb: %s\n", prog, opt, pbfapp_vdb_unsupported_message());
    else
        fprintf(stderr, "%s: %s: expected ply, obj or vdb, got \"%s\"\n", prog, opt, value);
}

static const char *format_ext(pbfapp_mesh_format f) {
    return f == PBFAPP_MESH_OBJ ? "obj" : f == PBFAPP_MESH_VDB ? "vdb" : "ply";
}

static int add_set(pbfapp_mesh_options *o, const char *value, const char *opt, int *rc) {
    if (!strchr(value, '=') || value[0] == '=') {
        fprintf(stderr, "pbf: %s %s: expected KEY=VALUE, e.g. %s iso_level=0.6\n", opt, value, opt);
        *rc = EXIT_USAGE;
    } else if (o->nsets >= (int)(sizeof o->sets / sizeof o->sets[0])) {
        fprintf(stderr, "pbf: %s: at most %d settings\n", opt,
                (int)(sizeof o->sets / sizeof o->sets[0]));
        *rc = EXIT_USAGE;
    } else {
        o->sets[o->nsets++] = value;
    }
    return 1;
}

int pbfapp_mesh_parse_run_option(int argc, char **argv, int *i, pbfapp_mesh_options *o, int *rc) {
    const char *arg = argv[*i], *value = NULL;
    int m;
    if (strcmp(arg, "--mesh") == 0) {
        o->enabled = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--mesh-format", &value)) != 0) {
        int parsed = m < 0 ? 0 : parse_format(value, &o->format);
        if (parsed != 1) {
            format_error("pbf", "--mesh-format", m < 0 ? "" : value, parsed);
            *rc = EXIT_USAGE;
        }
        o->enabled = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--mesh-set", &value)) != 0) {
        o->enabled = 1;
        if (m < 0) {
            fprintf(stderr, "pbf: --mesh-set needs KEY=VALUE\n");
            *rc = EXIT_USAGE;
            return 1;
        }
        return add_set(o, value, "--mesh-set", rc);
    }
    return 0;
}

static void print_surface_table(FILE *f) {
    size_t n;
    const pbf_param_info *t = pbf_surface_param_table(&n);
    char line[1024];
    for (size_t i = 0; i < n; ++i) {
        pbf_param_format_help(&t[i], line, sizeof line);
        fprintf(f, "  %s\n", line);
    }
}

void pbfapp_mesh_print_run_options(FILE *f) {
    fprintf(f,
            "  --mesh              also write mesh_00000.ply ... : the liquid's surface per frame\n"
            "                      (see `pbf mesh --help`)\n"
            "  --mesh-format F     ply (binary, with normals), obj or vdb (OpenVDB level set;\n"
            "                      builds with OpenVDB only) (implies --mesh)\n"
            "  --mesh-set KEY=VALUE  a surface parameter of `pbf mesh --help` (implies --mesh)\n");
}

pbf_status pbfapp_mesh_params(const pbfapp_scene *scene, const pbfapp_mesh_options *o,
                              pbf_surface_params *out, pbf_error *err) {
    pbf_surface_params p = pbf_surface_default_params();
    if (scene) {
        p.particle_radius = scene->def.particle_radius;
        p.smoothing_length = scene->def.kernel_ratio;
        p.threads = scene->def.threads;
    }
    size_t n;
    const pbf_param_info *t = pbf_surface_param_table(&n);
    for (int k = 0; k < o->nsets; ++k) {
        const char *eq = strchr(o->sets[k], '=');
        char key[64], where[128];
        size_t kl = (size_t)(eq - o->sets[k]);
        if (kl >= sizeof key) kl = sizeof key - 1;
        memcpy(key, o->sets[k], kl);
        key[kl] = '\0';
        const pbf_param_info *pi = pbf_param_find(t, n, key);
        if (!pi) {
            char names[512];
            size_t used = 0;
            names[0] = '\0';
            for (size_t i = 0; i < n; ++i) {
                int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", t[i].name);
                if (w > 0 && (size_t)w < sizeof names - used) used += (size_t)w;
            }
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "surface parameter \"%s\": no such parameter (one of %s)", key, names);
        }
        char *end = NULL;
        double v = strtod(eq + 1, &end);
        snprintf(where, sizeof where, "surface parameter \"%s\"", key);
        if (!eq[1] || !end || *end)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: \"%s\" is not a number", where,
                               eq + 1);
        pbf_status st = pbf_param_set_number(pi, &p, 0, v, where, err);
        if (st != PBF_OK) return st;
    }
    pbf_status st = pbf_surface_params_validate(&p, err);
    if (st != PBF_OK) return st;
    *out = p;
    return PBF_OK;
}

/* ---- writers ------------------------------------------------------------------------------------ */

typedef struct sink {
    FILE *f;
    char tmp[4200];
} sink;

static pbf_status sink_open(sink *s, const char *path, pbf_error *err) {
    int n = snprintf(s->tmp, sizeof s->tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof s->tmp)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: path too long", path);
    s->f = fopen(s->tmp, "wb");
    if (!s->f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", s->tmp, strerror(errno));
    return PBF_OK;
}

static void put_u32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
}

static void put_f32(unsigned char *b, float f) {
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(b, v);
}

pbf_status pbfapp_write_mesh_ply(const char *path, const pbf_mesh *m, pbf_error *err) {
    sink s;
    pbf_status st = sink_open(&s, path, err);
    if (st != PBF_OK) return st;
    fprintf(s.f,
            "ply\nformat binary_little_endian 1.0\ncomment pbf surface mesh (pbf/surface.h)\n"
            "element vertex %d\nproperty float x\nproperty float y\nproperty float z\n"
            "property float nx\nproperty float ny\nproperty float nz\n"
            "element face %d\nproperty list uchar uint vertex_indices\nend_header\n",
            m->vertex_count, m->triangle_count);
    unsigned char buf[4096];
    size_t used = 0;
    for (int v = 0; v < m->vertex_count; ++v) {
        if (used + 24 > sizeof buf) {
            fwrite(buf, 1, used, s.f);
            used = 0;
        }
        for (int c = 0; c < 3; ++c) put_f32(buf + used + 4 * c, m->positions[3 * (size_t)v + c]);
        for (int c = 0; c < 3; ++c) put_f32(buf + used + 12 + 4 * c, m->normals[3 * (size_t)v + c]);
        used += 24;
    }
    for (int t = 0; t < m->triangle_count; ++t) {
        if (used + 13 > sizeof buf) {
            fwrite(buf, 1, used, s.f);
            used = 0;
        }
        buf[used] = 3;
        for (int c = 0; c < 3; ++c) put_u32(buf + used + 1 + 4 * c, m->triangles[3 * (size_t)t + c]);
        used += 13;
    }
    if (used) fwrite(buf, 1, used, s.f);
    return pbfapp_commit_file(s.f, s.tmp, path, err);
}

pbf_status pbfapp_write_mesh_obj(const char *path, const pbf_mesh *m, pbf_error *err) {
    sink s;
    pbf_status st = sink_open(&s, path, err);
    if (st != PBF_OK) return st;
    fprintf(s.f, "# pbf surface mesh (pbf/surface.h): %d vertices, %d triangles\n", m->vertex_count,
            m->triangle_count);
    for (int v = 0; v < m->vertex_count; ++v) {
        const float *p = m->positions + 3 * (size_t)v;
        fprintf(s.f, "v %.9g %.9g %.9g\n", (double)p[0], (double)p[1], (double)p[2]);
    }
    for (int v = 0; v < m->vertex_count; ++v) {
        const float *n = m->normals + 3 * (size_t)v;
        fprintf(s.f, "vn %.6g %.6g %.6g\n", (double)n[0], (double)n[1], (double)n[2]);
    }
    for (int t = 0; t < m->triangle_count; ++t) {
        const uint32_t *q = m->triangles + 3 * (size_t)t;
        fprintf(s.f, "f %u//%u %u//%u %u//%u\n", q[0] + 1, q[0] + 1, q[1] + 1, q[1] + 1, q[2] + 1,
                q[2] + 1);
    }
    return pbfapp_commit_file(s.f, s.tmp, path, err);
}

/* ---- mesher ------------------------------------------------------------------------------------ */

struct pbfapp_mesher {
    pbf_surface *surface;
    pbfapp_mesh_format format;
    double cell; /* the reconstruction's grid spacing, m: the level set's voxel size */
    int threads;
    pbfapp_vdb vdb; /* the OpenVDB module, loaded for the vdb format only */
    char dir[4096];
    double last_ms;
    int last_triangles;
    pbf_surface_info info;
};

pbf_status pbfapp_mesher_open(const pbfapp_scene *scene, const pbfapp_mesh_options *o,
                              const char *dir, pbfapp_mesher **out, pbf_error *err) {
    *out = NULL;
    pbf_surface_params p;
    pbf_status st = pbfapp_mesh_params(scene, o, &p, err);
    if (st != PBF_OK) return st;
    pbfapp_mesher *m = calloc(1, sizeof *m);
    if (!m) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory");
    st = pbf_surface_create(&p, &m->surface, err);
    if (st == PBF_OK && o->format == PBFAPP_MESH_VDB) {
        st = pbfapp_vdb_open(&m->vdb, err);
        if (st != PBF_OK) pbf_surface_destroy(m->surface);
    }
    if (st != PBF_OK) {
        free(m);
        return st;
    }
    m->format = o->format;
    m->cell = (double)p.cube_size * (double)p.particle_radius;
    m->threads = p.threads;
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    *out = m;
    return PBF_OK;
}

pbf_status pbfapp_mesher_frame(pbfapp_mesher *m, int frame, const float *x, const float *y,
                               const float *z, int count, pbf_error *err) {
    pbf_mesh mesh;
    double t0 = pbfapp_now();
    pbf_status st = pbf_surface_reconstruct(m->surface, x, y, z, count, &mesh, err);
    if (st != PBF_OK) return st;
    m->last_ms = 1000.0 * (pbfapp_now() - t0);
    m->last_triangles = mesh.triangle_count;
    m->info = pbf_surface_last_info(m->surface);
    char path[4400];
    snprintf(path, sizeof path, "%s/mesh_%05d.%s", m->dir, frame, format_ext(m->format));
    if (m->format == PBFAPP_MESH_VDB)
        return pbfapp_write_mesh_vdb(&m->vdb, path, &mesh, m->cell, m->threads, err);
    return m->format == PBFAPP_MESH_OBJ ? pbfapp_write_mesh_obj(path, &mesh, err)
                                        : pbfapp_write_mesh_ply(path, &mesh, err);
}

void pbfapp_mesher_last(const pbfapp_mesher *m, double *ms, int *triangles) {
    if (ms) *ms = m ? m->last_ms : 0;
    if (triangles) *triangles = m ? m->last_triangles : 0;
}

void pbfapp_mesher_close(pbfapp_mesher *m) {
    if (!m) return;
    pbfapp_vdb_close(&m->vdb);
    pbf_surface_destroy(m->surface);
    free(m);
}

/* ---- pbf mesh DIR ------------------------------------------------------------------------------ */

static void print_help(FILE *f) {
    fprintf(f,
            "usage: pbf mesh DIR [options]\n"
            "\n"
            "Turns the frames that `pbf run --out DIR` wrote (frame_NNNNN.vtp, .pvtp, .ply, .csv,\n"
            ".geo or .bgeo) into surface meshes of the liquid, mesh_NNNNN.ply (or .obj) beside\n"
            "them: a closed, manifold triangle mesh (every edge shared by exactly two triangles)\n"
            "with outward vertex normals, ready for Blender, Houdini or ParaView\n"
            "(or, --format vdb, its signed-distance level set mesh_NNNNN.vdb).\n"
            "Method: the density field phi = V sum W(x - x_j) (poly6-shaped kernel, phi = 1 in\n"
            "liquid at rest) on a sparse grid of 8^3-point blocks near the particles, marching\n"
            "cubes with a table that cuts every face consistently and lays no triangle on a\n"
            "cube face, normals from -grad phi;\n"
            "optionally anisotropic kernels (Yu & Turk 2010) and Taubin smoothing. Particle\n"
            "radius, kernel support (smoothing_length = the scene's kernel_ratio, so R = h) and\n"
            "threads come from DIR/scene.json.\n"
            "\n"
            "options:\n"
            "  --format F          ply (binary little-endian, with normals; default), obj, or vdb:\n"
            "                      an OpenVDB narrow-band level set of the mesh (FloatGrid\n"
            "                      \"surface\", voxel = the cube size; for Houdini, Blender's\n"
            "                      volume objects, VDB tools), in builds with OpenVDB only\n"
            "  --out DIR2          write the meshes into DIR2 (created if missing) instead of DIR\n"
            "  --scene FILE        the scene file (default DIR/scene.json)\n"
            "  --set KEY=VALUE     a surface parameter below; may be repeated\n"
            "  --frames A:B        only frames A to B (inclusive; either may be left out)\n"
            "  --timings           a line per frame on stdout: the reconstruction's stages in ms,\n"
            "                      blocks, memory\n"
            "  -q, --quiet         no progress, no summary\n"
            "  -h, --help          this help\n"
            "\n"
            "surface parameters (name, unit, default, range, description; lengths in particle\n"
            "radii r):\n");
    print_surface_table(f);
    fprintf(f,
            "\n"
            "The same meshes during a run: `pbf run SCENE --mesh [--mesh-format obj|vdb]\n"
            "[--mesh-set KEY=VALUE]`. This build: vdb %s.\n"
            "exit status: 0 success; 1 runtime error (I/O: the message names the file); 2 usage\n"
            "  error, bad parameter, unreadable scene, a frame file it refuses (truncated,\n"
            "  malformed) or an output directory it cannot use\n",
            pbfapp_vdb_supported() ? "available (OpenVDB)" : "not available (no OpenVDB)");
}

/* Progress: a bar redrawn with '\r' on a terminal, else a line at most every second. */
static void progress(int tty, int k, int n, int frame, int particles, double ms, int tris,
                     double start) {
    double el = pbfapp_now() - start;
    char eta[32], els[32];
    pbfapp_format_duration(eta, sizeof eta, k > 0 ? el / k * (n - k) : -1);
    pbfapp_format_duration(els, sizeof els, el);
    if (tty) {
        char bar[21];
        int filled = n > 0 ? 20 * k / n : 20;
        for (int i = 0; i < 20; ++i) bar[i] = i < filled ? '#' : '.';
        bar[20] = '\0';
        fprintf(stderr, "\r[%s] mesh %d/%d frame %d %dp %.0fms %d triangles %s %s\033[K", bar, k,
                n, frame, particles, ms, tris, k >= n ? "took" : "ETA", k >= n ? els : eta);
        if (k >= n) fputc('\n', stderr);
    } else {
        fprintf(stderr,
                "pbf: mesh %d/%d  frame %d  %d particles  %.1f ms  %d triangles  elapsed %s  ETA %s\n",
                k, n, frame, particles, ms, tris, els, k >= n ? "0.0 s" : eta);
    }
    fflush(stderr);
}

/* --timings: the line of a frame on stdout. */
static void print_timings(const pbfapp_mesher *mesher, int frame, int tris) {
    const pbf_surface_info *in = &mesher->info;
    printf("timings: frame %d particles %d total_ms %.3f anisotropy_ms %.3f grid_ms %.3f "
           "field_ms %.3f march_ms %.3f smooth_ms %.3f blocks %d surface_blocks %d "
           "vertices %d triangles %d bytes %zu\n",
           frame, in->particles, in->ms_total, in->ms_anisotropy, in->ms_grid, in->ms_field,
           in->ms_march, in->ms_smooth, in->blocks, in->surface_blocks, in->vertices, tris,
           in->bytes);
    fflush(stdout);
}

/* The command line of `pbf mesh`. */
typedef struct mesh_args {
    const char *dir, *out_dir, *scene_path, *range;
    int timings;
} mesh_args;

/* Parses it into *a and *o; -1 to go on, else the exit status. */
static int parse_mesh_args(int argc, char **argv, pbfapp_mesh_options *o, mesh_args *a) {
    memset(a, 0, sizeof *a);
    int rc = -1;
    for (int i = 0; i < argc && rc < 0; ++i) {
        const char *arg = argv[i], *value = NULL;
        int m;
        if (arg[0] != '-' || arg[1] == '\0') {
            if (a->dir) {
                fprintf(stderr, "pbf mesh: more than one directory given (\"%s\" and \"%s\")\n",
                        a->dir, arg);
                rc = EXIT_USAGE;
            }
            a->dir = arg;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            print_help(stdout);
            return 0;
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(arg, "--timings") == 0) {
            a->timings = 1;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--format", &value)) != 0) {
            int parsed = m < 0 ? 0 : parse_format(value, &o->format);
            if (parsed != 1) {
                format_error("pbf mesh", "--format", m < 0 ? "" : value, parsed);
                rc = EXIT_USAGE;
            }
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--set", &value)) != 0) {
            if (m < 0) {
                fprintf(stderr, "pbf mesh: --set needs KEY=VALUE\n");
                rc = EXIT_USAGE;
            } else {
                add_set(o, value, "--set", &rc);
            }
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--out", &value)) != 0 ||
                   (m = pbfapp_option_value(argc, argv, &i, "--scene", &value)) != 0 ||
                   (m = pbfapp_option_value(argc, argv, &i, "--frames", &value)) != 0) {
            if (m < 0 || !value[0]) {
                fprintf(stderr, "pbf mesh: %s needs a value\n", arg);
                rc = EXIT_USAGE;
            } else if (arg[2] == 'o') {
                a->out_dir = value;
            } else if (arg[3] == 'c') {
                a->scene_path = value;
            } else {
                a->range = value;
            }
        } else {
            fprintf(stderr, "pbf mesh: unknown option \"%s\" (see `pbf mesh --help`)\n", arg);
            rc = EXIT_USAGE;
        }
    }
    return rc;
}

int pbfapp_mesh_command(int argc, char **argv) {
    pbfapp_mesh_options o;
    pbfapp_mesh_options_default(&o);
    mesh_args a;
    int rc = parse_mesh_args(argc, argv, &o, &a);
    const char *dir = a.dir, *out_dir = a.out_dir, *scene_path = a.scene_path, *range = a.range;
    const int timings = a.timings;
    if (rc >= 0) return rc;
    if (!dir) {
        fprintf(stderr, "pbf mesh: which directory? e.g. `pbf mesh out` (see `pbf mesh --help`)\n");
        return EXIT_USAGE;
    }
    int first = 0, last = 2147483647;
    if (range && !pbfapp_frame_range_parse(range, &first, &last)) {
        fprintf(stderr, "pbf mesh: --frames %s: expected A:B, A: or :B with 0 <= A <= B\n", range);
        return EXIT_USAGE;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "pbf mesh: %s: %s\n", dir,
                stat(dir, &sb) != 0 ? strerror(errno) : "is not a directory");
        return EXIT_USAGE;
    }
    char scene_buf[4200];
    if (!scene_path) {
        snprintf(scene_buf, sizeof scene_buf, "%s/scene.json", dir);
        scene_path = scene_buf;
    }
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbfapp_scene scene;
    memset(&scene, 0, sizeof scene);
    int have_scene = 0;
    if (stat(scene_path, &sb) == 0) {
        pbf_status st = pbfapp_scene_load(scene_path, NULL, 0, &scene, &err);
        if (st != PBF_OK) {
            fprintf(stderr, "pbf mesh: %s\n", err.message);
            return st == PBF_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE;
        }
        have_scene = 1;
    } else {
        int radius_set = 0;
        for (int k = 0; k < o.nsets; ++k)
            if (strncmp(o.sets[k], "particle_radius=", 16) == 0) radius_set = 1;
        if (!radius_set) {
            fprintf(stderr,
                    "pbf mesh: %s: not found; `pbf run` writes it beside the frames (the particle "
                    "radius comes from it); name it with --scene FILE or give --set "
                    "particle_radius=R\n",
                    scene_path);
            return EXIT_USAGE;
        }
    }
    pbfapp_frame_file *frames = NULL;
    int nframes = 0;
    static const char *const exts[] = {"vtp", "pvtp", "ply", "csv", "geo", "bgeo"};
    const char *ext = have_scene ? pbfapp_format_extension(scene.run.format) : "vtp";
    pbf_error lerr;
    memset(&lerr, 0, sizeof lerr);
    pbf_status lst = pbfapp_frame_files_find(dir, ext, exts, (int)(sizeof exts / sizeof exts[0]),
                                             &frames, &nframes, &ext, &lerr);
    if (lst != PBF_OK) {
        fprintf(stderr, "pbf mesh: %s\n", lerr.message);
        if (have_scene) pbfapp_scene_free(&scene);
        return EXIT_RUNTIME;
    }
    nframes = pbfapp_frame_files_keep(frames, nframes, first, last);
    if (nframes == 0) {
        fprintf(stderr,
                "pbf mesh: %s: no frame files%s (frame_NNNNN.vtp, .pvtp, .ply, .csv, .geo or "
                ".bgeo)\n",
                dir, range ? " in --frames" : "");
        free(frames);
        if (have_scene) pbfapp_scene_free(&scene);
        return EXIT_USAGE;
    }
    const char *target = out_dir ? out_dir : dir;
    /* the meshes' directory: made, or refused before any work */
    pbf_status st = pbfapp_output_dir_make(target, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf mesh: %s%s\n", out_dir ? "--out " : "", err.message);
        pbfapp_frame_files_free(frames, nframes);
        if (have_scene) pbfapp_scene_free(&scene);
        return st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
    }
    pbfapp_mesher *mesher = NULL;
    st = pbfapp_mesher_open(have_scene ? &scene : NULL, &o, target, &mesher, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf mesh: %s\n", err.message);
        pbfapp_frame_files_free(frames, nframes);
        if (have_scene) pbfapp_scene_free(&scene);
        return st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
    }
    if (!o.quiet) {
        pbf_surface_params p;
        pbfapp_mesh_params(have_scene ? &scene : NULL, &o, &p, NULL);
        printf("pbf: meshing %d frame%s of %s/ (%s) into %s/mesh_NNNNN.%s: r = %g m, support R = "
               "%g m, cube %g m, iso %g%s%s\n",
               nframes, nframes == 1 ? "" : "s", dir, ext, target, format_ext(o.format),
               (double)p.particle_radius, 2.0 * p.smoothing_length * p.particle_radius,
               (double)(p.cube_size * p.particle_radius), (double)p.iso_level,
               p.anisotropic ? ", anisotropic" : "", p.smoothing_iterations ? ", smoothed" : "");
        fflush(stdout);
    }
    int tty = isatty(fileno(stderr));
    double start = pbfapp_now(), last_line = start, total_ms = 0;
    long long total_tris = 0;
    pbfapp_frame_data data;
    memset(&data, 0, sizeof data);
    char path[4400];
    rc = 0;
    for (int k = 0; k < nframes && rc == 0; ++k) {
        snprintf(path, sizeof path, "%s/%s", dir, frames[k].name);
        st = pbfapp_read_frame(path, &data, &err);
        if (st == PBF_OK)
            st = pbfapp_mesher_frame(mesher, frames[k].number, data.x, data.y, data.z, data.count,
                                     &err);
        if (st != PBF_OK) {
            if (tty && !o.quiet) fputc('\n', stderr);
            fprintf(stderr, "pbf mesh: frame %d: %s\n", frames[k].number, err.message);
            rc = st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
            break;
        }
        double ms;
        int tris;
        pbfapp_mesher_last(mesher, &ms, &tris);
        total_ms += ms;
        total_tris += tris;
        if (timings) print_timings(mesher, frames[k].number, tris);
        double now = pbfapp_now();
        if (!o.quiet && (tty || k + 1 == nframes || now - last_line >= 1.0)) {
            progress(tty, k + 1, nframes, frames[k].number, data.count, ms, tris, start);
            last_line = now;
        }
    }
    pbfapp_frame_data_free(&data);
    if (rc == 0 && !o.quiet)
        printf("pbf: done: %d meshes, %lld triangles, reconstruction %.1f ms per frame on average; "
               "output in %s/\n",
               nframes, total_tris, total_ms / nframes, target);
    pbfapp_mesher_close(mesher);
    pbfapp_frame_files_free(frames, nframes);
    if (have_scene) pbfapp_scene_free(&scene);
    return rc;
}
