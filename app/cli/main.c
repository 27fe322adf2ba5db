/*
 * pbf — the command-line simulator.
 *
 *   pbf [options]             = pbf run <scenes/dam_break.json> --out out [options]
 *   pbf run SCENE [options]   simulate a scene file and write one file per frame
 *   pbf render DIR [options]  render the frames of a run as PNG images or a video
 *   pbf mesh DIR [options]    surface meshes of the frames of a run (app/render/mesh.c)
 *   pbf view SCENE [options]  simulate live in a window (app/viewer/, built with GLFW + epoxy)
 *   pbf bench [options]       time the solver on standard cases (app/bench/bench.c)
 *   pbf devices               the compute devices of this machine (pbf_list_devices)
 *   pbf validate [options]    fidelity report docs/validation.md (app/validate.c); --solver:
 *                             the per-method report docs/validation_solvers.md
 *   pbf --help | --version
 *
 * Exit status: 0 success, 1 runtime error (I/O, disk full), 2 usage, scene or checkpoint error,
 * 3 unstable simulation (instability guard), 130 / 143 stopped by SIGINT / SIGTERM (after a
 * final checkpoint).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "io/util.h"
#include "io/checkpoint.h"
#include "run/guard.h"
#include "render/mesh.h"
#include "cli/mpi_run.h"
#include "io/output.h"
#include "pbf/params.h"
#include "pbf/pbf.h"
#include "run/progress.h"
#include "run/run_driver.h"
#include "render/render_cmd.h"
#include "io/scene.h"
#include "validate.h"
#ifdef PBF_HAVE_VIEWER
#include "viewer/viewer.h"
#endif

#ifndef PBF_SCENES_DIR
#define PBF_SCENES_DIR "scenes"
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_UNSTABLE 3

static const char *const default_scene_local = "scenes/dam_break.json";
static const char *const default_scene_installed = PBF_SCENES_DIR "/dam_break.json";

/* ./scenes/dam_break.json, else the scenes installed beside the program by `cmake --install`
 * (BINDIR/../share/pbf/scenes, found through /proc/self/exe), else the source tree's. */
static const char *default_scene(void) {
    struct stat sb;
    if (stat(default_scene_local, &sb) == 0 && S_ISREG(sb.st_mode)) return default_scene_local;
    static char beside[4096];
    ssize_t n = readlink("/proc/self/exe", beside, sizeof beside - 64);
    if (n > 0) {
        beside[n] = '\0';
        char *slash = strrchr(beside, '/'); /* the path is resolved: BINDIR/.. by removal */
        if (slash) *slash = '\0';
        slash = strrchr(beside, '/');
        if (slash) {
            strcpy(slash, "/share/pbf/scenes/dam_break.json");
            if (stat(beside, &sb) == 0 && S_ISREG(sb.st_mode)) return beside;
        }
    }
    return default_scene_installed;
}

static void print_table(FILE *f, const pbf_param_info *t, size_t n) {
    char line[1024];
    for (size_t i = 0; i < n; ++i) {
        pbf_param_format_help(&t[i], line, sizeof line);
        fprintf(f, "  %s\n", line);
    }
}

static void print_run_help(FILE *f) {
    size_t wn = 0, pn = 0, rn = 0;
    const pbf_param_info *wt = pbf_world_params(&wn);
    const pbf_param_info *pt = pbf_solver_params(PBF_SOLVER_PBF, &pn);
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    fprintf(f,
            "usage: pbf run [SCENE] [options]\n"
            "\n"
            "Simulates the scene file SCENE (JSON; default %s) and writes one file per frame,\n"
            "frame_00000 (the initial state) to frame_N, plus stats.jsonl, into the output\n"
            "directory. Each frame is `substeps` solver steps of dt = 1 / (fps * substeps).\n"
            "Beside vtp frames it keeps frames.pvd, beside ply and csv frames frames.ply.series /\n"
            "frames.csv.series: the ParaView index of the frames with their simulated times,\n"
            "rewritten after each frame (File > Open of it loads the run with its times).\n"
            "A run owns its output directory: before its first frame it deletes the frames\n"
            "(frame_NNNNN.vtp/.ply/.csv/.geo/.bgeo), images (frame_NNNNN.png), meshes\n"
            "(mesh_NNNNN.ply/.obj/.vdb) and indexes of an earlier run there, and no other file; a\n"
            "run refused for a bad scene or option deletes nothing.\n"
            "\n"
            "options:\n"
            "  --out DIR           output directory, created if missing (default: out)\n"
            "  --frames N          number of frames after frame 0 (same as --set frames=N)\n"
            "  --threads N         OpenMP threads, 0 = default (same as --set threads=N)\n"
            "  --device D          where the solver runs: cpu, opencl, opencl:PLATFORM.DEVICE,\n"
            "                      cuda or cuda:N (same as --set device=D; `pbf devices` lists\n"
            "                      this machine's); a device that is not there is an error\n"
            "  --format F          vtp (VTK PolyData: ParaView), ply (binary PLY: Blender,\n"
            "                      point-cloud tools), csv (text), geo or bgeo (Houdini classic\n"
            "                      geometry, text or binary); same as --set format=F\n"
            "  --set KEY=VALUE     override any parameter below; vectors as x,y,z, choices by\n"
            "                      name; may be repeated, applied after the scene file\n"
            "  --checkpoint-every N  write DIR/checkpoint_NNNNN.pbfck every N frames (the last 2\n"
            "                      are kept; same as --set checkpoint_every=N)\n"
            "  --resume DIR        continue the run whose output is DIR from its newest valid\n"
            "                      checkpoint (none yet: start it over from frame 0), with the\n"
            "                      scene DIR/scene.json written at its start (no SCENE, no --out;\n"
            "                      --set may change only parameters that do not change the\n"
            "                      simulation: frames, threads, device, guard_density_error,\n"
            "                      checkpoint_every, adaptive; a checkpoint written on one device\n"
            "                      resumes on any other)\n"
            "  --adaptive          retry an unstable frame from its start with 2x, 4x, 8x\n"
            "                      substeps (same as --set adaptive=1)\n"
            "  -q, --quiet         no progress and no summary, only errors\n"
            "  -h, --help          this help\n",
            default_scene());
    pbfapp_render_print_options(f, 1);
    pbfapp_mesh_print_run_options(f);
    fprintf(f, "\nworld parameters, shared by every solver (scene-file keys; name, unit (none: "
               "dimensionless), default, range, description):\n");
    print_table(f, wt, wn);
    size_t nsv = 0;
    const pbf_solver_info *sv = pbf_solvers(&nsv);
    for (size_t k = 0; k < nsv; ++k) { /* each pressure solver's own table */
        pt = pbf_solver_params(sv[k].kind, &pn);
        fprintf(f, "\n%s parameters (solver = %s):\n", sv[k].title, sv[k].name);
        print_table(f, pt, pn);
    }
    fprintf(f, "\nrun parameters (scene-file keys):\n");
    print_table(f, rt, rn);
    fprintf(f,
            "\n"
            "geometry (scene-file keys):\n"
            "  fluid         [{\"min\": [x,y,z], \"max\": [x,y,z], \"velocity\": [x,y,z]}, ...]\n"
            "                boxes filled with particles at the rest spacing (required)\n"
            "  obstacles     [{\"min\": [..], \"max\": [..]}, ...]   static solid boxes\n"
            "  moving_walls  [{\"min\": [..], \"max\": [..], \"motion\": {...}}, ...]\n"
            "                motion: {\"type\": \"oscillate\", \"direction\": [1,0,0], "
            "\"amplitude\": m,\n"
            "                         \"period\": s, \"phase\": rad, \"start\": s, \"stop\": s}\n"
            "                     or {\"type\": \"linear\", \"direction\": [..], \"speed\": m/s,\n"
            "                         \"start\": s, \"stop\": s}   (stop < 0: never stops)\n"
            "  camera        {\"position\": [x,y,z], \"target\": [x,y,z], \"up\": [0,1,0], \"fov\": 45}\n"
            "                optional view of --render/--video/`pbf render` (fov in degrees,\n"
            "                in (1, 170)); default: the container from the front-right, above\n"
            "  name, description   optional strings\n"
            "\n"
            "Every run writes DIR/scene.json (the scene with the overrides applied); a fresh run\n"
            "refuses a DIR holding the checkpoints of an unfinished run. After every\n"
            "solver step the instability guard checks for non-finite values, particles outside the\n"
            "domain and a density error above guard_density_error; on failure the run stops with a\n"
            "diagnostic (exit 3). SIGINT/SIGTERM finish the current frame, write a checkpoint and\n"
            "exit 130/143; `pbf run --resume DIR` continues bit-identically.\n"
            "\n"
            "Under MPI (`mpirun -np N pbf run SCENE`, a pbf built with MPI) the domain is split\n"
            "into boxes among the N processes by recursive coordinate bisection on particle\n"
            "counts (see mpi_decomposition, rank_imbalance); each process runs its own device:\n"
            "cpu threads, or with device opencl or cuda one GPU per process (its local rank\n"
            "modulo the node's GPUs); process 0 writes the same files as a single-process run,\n"
            "--mesh meshes included (mpi_output = pieces: every process writes its piece of each\n"
            "frame, process 0 a .pvtp index), stats.jsonl adds ranks, rank_particles_min and\n"
            "rank_particles_max, and --resume takes any N; --render, --video and --adaptive are\n"
            "refused.\n"
            "\n"
            "exit status: 0 success; 1 runtime error (I/O, disk full: the message names the file);\n"
            "  2 usage, scene or checkpoint error; 3 unstable simulation; 130 stopped by SIGINT;\n"
            "  143 stopped by SIGTERM\n");
}

static void print_help(FILE *f) {
    fprintf(f,
            "pbf %s — Position Based Fluids simulator (Macklin & Mueller 2013)\n"
            "\n"
            "usage: pbf [options]          same as: pbf run %s --out out [options]\n"
            "       pbf run [SCENE] [options]\n"
            "       pbf render DIR [options]   images or a video of a run (`pbf render --help`)\n"
            "       pbf mesh DIR [options]     surface meshes (PLY/OBJ/VDB) of a run (`pbf mesh --help`)\n"
            "       pbf view [SCENE] [options] live viewer in a window (`pbf view --help`)\n"
            "       pbf bench [options]        time the solver (`pbf bench --help`)\n"
            "       pbf devices                the CPU, OpenCL and CUDA devices of this machine\n"
            "                                  that --device takes (`pbf devices --help`)\n"
            "       pbf validate [--out DIR] [--fast]  fidelity report: physics and experiment\n"
            "                                      (`pbf validate --help`)\n"
            "       pbf validate --solver NAME|all     the same per pressure solver: pbf, wcsph,\n"
            "                                      pcisph, iisph, dfsph, sesph, ...\n"
            "                                      (docs/validation_solvers.md)\n"
            "       pbf --help | --version\n"
            "\n",
            PBF_VERSION_STRING, default_scene());
    print_run_help(f);
}

static int usage_error(const char *fmt, const char *a, const char *b) {
    fputs("pbf: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputs(" (see `pbf run --help`)\n", stderr);
    return EXIT_USAGE;
}

/* The long options of `pbf run` (and of `pbf` without a command), without their "--". */
static const char *const run_option_names[] = {
    "out",      "frames", "threads", "device", "format", "set",   "checkpoint-every", "resume",
    "adaptive", "quiet",  "help",    "render", "video",  "color", "size",             "version"};

/* `pbf: run: unknown option "--frmes" (did you mean "--frames"?); see `pbf run --help``: the
 * closest long option by edit distance, as for scene keys. */
static int unknown_option(const char *arg) {
    char hint[96];
    pbfapp_option_hint(hint, sizeof hint, arg, run_option_names,
                       sizeof run_option_names / sizeof run_option_names[0]);
    fprintf(stderr, "pbf: run: unknown option \"%s\"%s; see `pbf run --help`\n", arg, hint);
    return EXIT_USAGE;
}

/* Status of a scene or world problem -> exit code. */
static int exit_for(pbf_status st) {
    return st == PBF_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE;
}

typedef struct run_options {
    const char *scene;
    const char *out;
    const char *resume; /* --resume DIR */
    int out_given;
    int quiet;
    pbfapp_override *overrides;
    size_t override_count;
    char **labels; /* owned label strings, one per override */
    char **keys;   /* owned key strings of --set, by override index */
    size_t cap;
    pbfapp_render_options render; /* --render, --video, --color, --size */
    pbfapp_mesh_options mesh;     /* --mesh, --mesh-format, --mesh-set */
} run_options;


static int add_override(run_options *o, const char *key, const char *value, const char *label) {
    size_t n = strlen(label) + 1;
    char *copy = malloc(n);
    if (!copy) return 0;
    memcpy(copy, label, n);
    o->labels[o->override_count] = copy;
    o->overrides[o->override_count].key = key;
    o->overrides[o->override_count].value = value;
    o->overrides[o->override_count].label = copy;
    ++o->override_count;
    return 1;
}

static void free_options(run_options *o) {
    for (size_t i = 0; i < o->cap; ++i) {
        if (o->labels) free(o->labels[i]);
        if (o->keys) free(o->keys[i]);
    }
    free(o->labels);
    free(o->overrides);
    free(o->keys);
}

static int simulate(const run_options *opt);

static int run_command(int argc, char **argv) {
    run_options opt;
    memset(&opt, 0, sizeof opt);
    opt.out = "out";
    pbfapp_render_options_default(&opt.render);
    pbfapp_mesh_options_default(&opt.mesh);
    size_t cap = (size_t)argc + 1;
    opt.cap = cap;
    opt.overrides = calloc(cap, sizeof *opt.overrides);
    opt.labels = calloc(cap, sizeof *opt.labels);
    opt.keys = calloc(cap, sizeof *opt.keys);
    if (!opt.overrides || !opt.labels || !opt.keys) {
        free_options(&opt);
        fputs("pbf: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    int rc = -1;
    int only_positional = 0;
    for (int i = 0; i < argc && rc < 0; ++i) {
        const char *arg = argv[i];
        const char *value = NULL;
        int m;
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            if (opt.scene)
                rc = usage_error("run: more than one scene given (\"%s\" and \"%s\")", opt.scene,
                                 arg);
            opt.scene = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_positional = 1;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            print_run_help(stdout);
            rc = 0;
        } else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
            printf("pbf %s\n", PBF_VERSION_STRING);
            rc = 0;
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            opt.quiet = 1;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--out", &value)) != 0) {
            if (m < 0) {
                rc = usage_error("%s needs a value (%s)", "--out", "DIR");
            } else if (!value[0]) {
                rc = usage_error("%s: the output directory name is empty%s", "--out", "");
            } else {
                opt.out = value;
                opt.out_given = 1;
            }
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--resume", &value)) != 0) {
            if (m < 0)
                rc = usage_error("%s needs a value (%s)", "--resume", "DIR");
            else if (!value[0])
                rc = usage_error("%s: the directory name is empty%s", "--resume", "");
            else
                opt.resume = value;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--checkpoint-every", &value)) != 0) {
            if (m < 0)
                rc = usage_error("%s needs a value (%s)", "--checkpoint-every", "N");
            else if (!add_override(&opt, "checkpoint_every", value, "--checkpoint-every"))
                rc = EXIT_RUNTIME;
        } else if (strcmp(arg, "--adaptive") == 0) {
            if (!add_override(&opt, "adaptive", "1", "--adaptive")) rc = EXIT_RUNTIME;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--frames", &value)) != 0 ||
                   (m = pbfapp_option_value(argc, argv, &i, "--threads", &value)) != 0 ||
                   (m = pbfapp_option_value(argc, argv, &i, "--format", &value)) != 0 ||
                   (m = pbfapp_option_value(argc, argv, &i, "--device", &value)) != 0) {
            const char *key = arg[2] == 'f' && arg[3] == 'r' ? "frames"
                              : arg[2] == 't'                ? "threads"
                              : arg[2] == 'd'                ? "device"
                                                             : "format";
            char label[32];
            snprintf(label, sizeof label, "--%s", key);
            if (m < 0)
                rc = usage_error("%s needs a value%s", label, "");
            else if (!add_override(&opt, key, value, label))
                rc = EXIT_RUNTIME;
        } else if (pbfapp_mesh_parse_run_option(argc, argv, &i, &opt.mesh, &rc)) {
            /* --mesh, --mesh-format, --mesh-set (rc = 2 on a bad value) */
        } else if (pbfapp_render_parse_option(argc, argv, &i, &opt.render, 1, "run", &rc)) {
            /* --render, --video, --color, --size (rc = 2 on a bad value) */
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--set", &value)) != 0) {
            if (m < 0) {
                rc = usage_error("%s needs a value (KEY=VALUE)%s", "--set", "");
                break;
            }
            const char *eq = strchr(value, '=');
            if (!eq || eq == value) {
                rc = usage_error("--set %s: expected KEY=VALUE, e.g. --set particle_radius=0.01%s",
                                 value, "");
                break;
            }
            size_t klen = (size_t)(eq - value);
            char *key = malloc(klen + 1);
            if (!key) {
                rc = EXIT_RUNTIME;
                break;
            }
            memcpy(key, value, klen);
            key[klen] = '\0';
            opt.keys[opt.override_count] = key;
            char label[300];
            snprintf(label, sizeof label, "--set %.280s", key);
            if (!add_override(&opt, key, eq + 1, label)) rc = EXIT_RUNTIME;
        } else {
            rc = unknown_option(arg);
        }
    }
    if (rc < 0 && opt.resume && opt.scene)
        rc = usage_error("--resume %s takes the scene from %s/scene.json: give no SCENE",
                         opt.resume, opt.resume);
    else if (rc < 0 && opt.resume && opt.out_given)
        rc = usage_error("--resume %s writes into %s: give no --out", opt.resume, opt.resume);
    if (rc < 0) {
        if (opt.resume) opt.out = opt.resume;
        if (!opt.scene) opt.scene = default_scene();
        if (pbfapp_mpi_launched()) { /* mpirun -np N pbf run: app/cli/mpi_run.c */
            pbfapp_mpi_run_options mo = {opt.scene,
                                         opt.out,
                                         opt.resume,
                                         opt.quiet,
                                         opt.render.png || opt.render.video,
                                         opt.overrides,
                                         opt.override_count,
                                         &opt.mesh};
            rc = pbfapp_mpi_run(&mo);
        } else {
            rc = simulate(&opt);
        }
    }
    free_options(&opt);
    return rc;
}

/* Checkpoint of the frame just written (stats.jsonl synced first, so that it holds every frame the
 * checkpoint counts as written). */
static pbf_status save_checkpoint(pbfapp_output *out, const char *dir, const pbf_world *world,
                                  int64_t frame, uint64_t hash, int64_t *last, char *path,
                                  size_t path_size, pbf_error *err) {
    pbf_status st = pbfapp_output_sync(out, err);
    if (st == PBF_OK)
        st = pbfapp_checkpoint_save(dir, world, frame, hash, *last, path, path_size, err);
    if (st == PBF_OK) *last = frame;
    return st;
}

/* A single-process run from its scene to its summary: what it opened, for its frame sinks. */
typedef struct run_state {
    const run_options *opt;
    pbfapp_scene scene;
    pbf_world *world;
    pbfapp_output *out;
    pbfapp_renderer *renderer;
    pbfapp_mesher *mesher;
    uint64_t scene_hash;
    int start_frame;          /* the last frame already on disk (resume) */
    int resumed;              /* 1: continued from a checkpoint (--resume found one) */
    int64_t last_checkpoint;  /* frame of the newest checkpoint on disk */
    char checkpoint_path[4400];
} run_state;

/* Closes what a refused run opened; returns rc. */
static int abandon_run(run_state *s, int rc) {
    pbfapp_mesher_close(s->mesher);
    pbfapp_renderer_close(s->renderer, NULL);
    pbfapp_output_close(s->out, NULL);
    pbf_world_destroy(s->world);
    pbfapp_scene_free(&s->scene);
    return rc;
}

/* The scene (of --resume DIR: the copy the run wrote at its start) and its world; -1 or the exit
 * status. */
static int load_run(run_state *s, pbf_error *err) {
    const run_options *opt = s->opt;
    char scene_copy[4200];
    const char *scene_file = opt->scene;
    if (opt->resume) {
        struct stat sb;
        if (stat(opt->resume, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "pbf: --resume %s: %s\n", opt->resume,
                    stat(opt->resume, &sb) != 0 ? "no such directory"
                                                : "not a directory (give the --out of a run)");
            return EXIT_USAGE;
        }
        snprintf(scene_copy, sizeof scene_copy, "%s/scene.json", opt->resume);
        scene_file = scene_copy;
    }
    pbf_status st =
        pbfapp_scene_load(scene_file, opt->overrides, opt->override_count, &s->scene, err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s%s%s\n", opt->resume ? "--resume: " : "", err->message,
                opt->resume && st == PBF_ERR_IO ? " (is it the output directory of `pbf run`?)"
                                                : "");
        return exit_for(st);
    }
    /* --video: an even size and ffmpeg on PATH, before any work. */
    st = pbfapp_render_check(&opt->render, err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err->message);
        pbfapp_scene_free(&s->scene);
        return st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
    }
    st = pbfapp_scene_create_world(&s->scene, &s->world, err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err->message);
        pbfapp_scene_free(&s->scene);
        return exit_for(st);
    }
    s->scene_hash = pbfapp_scene_hash(&s->scene);
    return -1;
}

/* --resume: the world from the newest valid checkpoint, stats.jsonl cut to it, the output opened
 * for appending (none yet: a fresh run); a fresh run: the output opened (an unfinished run's
 * directory refused). */
static int open_output(run_state *s, pbf_error *err) {
    const run_options *opt = s->opt;
    const pbfapp_run *run = &s->scene.run;
    pbf_status st;
    if (opt->resume) { /* from a checkpoint, from frame 0 (none yet), or nothing to do */
        char msg[5000];
        const int plan = pbfapp_resume_plan(opt->out, run->frames, msg, sizeof msg, err);
        if (plan < 0) fprintf(stderr, "pbf: --resume: %s\n", err->message);
        if (plan < 0) return abandon_run(s, EXIT_RUNTIME);
        if (plan == PBFAPP_RESUME_COMPLETE && !opt->quiet) printf("pbf: %s\n", msg);
        if (plan == PBFAPP_RESUME_COMPLETE) return abandon_run(s, 0);
        if (plan == PBFAPP_RESUME_START_OVER) fprintf(stderr, "pbf: %s\n", msg);
        if (plan == PBFAPP_RESUME_CHECKPOINT &&
            pbfapp_resume_locked(opt->out, &s->scene, msg, sizeof msg) > 0) {
            fprintf(stderr, "pbf: %s\n", msg);
            return abandon_run(s, EXIT_USAGE);
        }
        s->resumed = plan == PBFAPP_RESUME_CHECKPOINT;
    }
    if (s->resumed) {
        pbfapp_checkpoint ck;
        st = pbfapp_checkpoint_find(opt->out, s->scene_hash, s->scene.particles, stderr, &ck,
                                    s->checkpoint_path, sizeof s->checkpoint_path, err);
        if (st == PBF_OK) {
            st = pbf_world_restore(s->world, &ck.snapshot, err);
            s->start_frame = (int)ck.frame;
            pbfapp_checkpoint_free(&ck);
        }
        if (st != PBF_OK) {
            fprintf(stderr, "pbf: --resume: %s\n", err->message);
            return abandon_run(s, st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME);
        }
        s->last_checkpoint = s->start_frame;
        pbfapp_checkpoint_prune(opt->out, 0); /* leftovers of interrupted writes */
        st = pbfapp_stats_truncate(opt->out, s->start_frame, err);
        if (st == PBF_ERR_INVALID_ARGUMENT) {
            fprintf(stderr, "pbf: warning: %s\n", err->message);
            st = PBF_OK;
        }
        if (st == PBF_OK) st = pbfapp_output_open_append(opt->out, run->format, &s->out, err);
    } else {
        /* an unfinished run in the same directory is not overwritten; a finished one's
         * checkpoints are deleted (they must not be resumed into this run) */
        int64_t newest = -1;
        int old_frames = 0;
        if (pbfapp_unfinished_run(opt->out, &newest, &old_frames)) {
            fprintf(stderr,
                    "pbf: %s holds an unfinished run (checkpoint of frame %lld of %d): resume it "
                    "with `pbf run --resume %s`, or delete %s/checkpoint_*.pbfck to start over\n",
                    opt->out, (long long)newest, old_frames, opt->out, opt->out);
            return abandon_run(s, EXIT_USAGE);
        }
        st = pbfapp_output_open(opt->out, run->format, &s->out, err);
        if (st == PBF_OK) pbfapp_checkpoint_prune(opt->out, INT64_MAX);
    }
    /* DIR/scene.json: the scene as it runs, read by --resume (and by `pbf render`). */
    char scene_out[4200];
    snprintf(scene_out, sizeof scene_out, "%s/scene.json", opt->out);
    if (st == PBF_OK) st = pbfapp_scene_write(&s->scene, scene_out, err);
    if (st != PBF_OK) { /* an output directory refused: a usage error, like the scene's */
        fprintf(stderr, "pbf: %s\n", err->message);
        return abandon_run(s, st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME);
    }
    return -1;
}

/* The consumers of frames beside the data frames, then the directory claimed; -1 or the exit
 * status. */
static int open_consumers(run_state *s, pbf_error *err) {
    const run_options *opt = s->opt;
    /* --render / --video: frame_NNNNN.png beside the data frames, the video through ffmpeg. */
    pbf_status st;
    if (opt->render.png || opt->render.video) {
        pbfapp_render_options ro = opt->render;
        ro.quiet = opt->quiet;
        st = pbfapp_renderer_open(&ro, &s->scene, opt->out, &s->renderer, err);
        if (st != PBF_OK) {
            fprintf(stderr, "pbf: %s\n", err->message);
            return abandon_run(s, EXIT_RUNTIME);
        }
    }

    /* --mesh: mesh_NNNNN.ply|obj beside the data frames (app/render/mesh.c) */
    if (opt->mesh.enabled) {
        st = pbfapp_mesher_open(&s->scene, &opt->mesh, opt->out, &s->mesher, err);
        if (st != PBF_OK) {
            fprintf(stderr, "pbf: --mesh: %s\n", err->message);
            return abandon_run(s, st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME);
        }
    }
    /* The directory is this run's: the frames, images and indexes of an earlier run go (after a
     * checkpoint: those of later frames), now that nothing can refuse the run any more. */
    int removed = 0;
    st = pbfapp_output_claim(s->out, s->resumed ? s->start_frame : -1, &removed, err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err->message);
        return abandon_run(s, EXIT_RUNTIME);
    }
    if (removed > 0 && !opt->quiet)
        printf("pbf: removed %d frame, image, mesh and index file%s of an earlier run from %s/\n",
               removed, removed == 1 ? "" : "s", opt->out);
    return -1;
}

/* The frame sink of the run: the data frame, its stats line, its image, its mesh and, when due,
 * its checkpoint. */
static int run_frame(void *ctx, pbfapp_run_driver *d, const pbfapp_run_frame *f) {
    run_state *s = ctx;
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_particles particles = pbf_world_particles(s->world);
    pbf_status st = pbfapp_output_frame(s->out, f->frame, f->stats.time, &particles, &err);
    if (st == PBF_OK) st = pbfapp_output_stats(s->out, f->frame, &f->stats, f->ms, &err);
    if (st == PBF_OK && s->renderer)
        st = pbfapp_renderer_world_frame(s->renderer, s->world, f->frame, f->stats.time, &err);
    if (st == PBF_OK && s->mesher)
        st = pbfapp_mesher_frame(s->mesher, f->frame, particles.x, particles.y, particles.z,
                                 particles.count, &err);
    if (st == PBF_OK && f->checkpoint)
        st = save_checkpoint(s->out, s->opt->out, s->world, f->frame, s->scene_hash,
                             &s->last_checkpoint, s->checkpoint_path, sizeof s->checkpoint_path,
                             &err);
    if (st == PBF_OK) return 0;
    if (f->report) {
        pbfapp_progress_finish(d->progress);
        fprintf(stderr, "pbf: frame %d: %s\n", f->frame, err.message);
    } else {
        fprintf(stderr, "pbf: %s\n", err.message);
    }
    return EXIT_RUNTIME;
}

static void run_unstable(void *ctx, pbfapp_run_driver *d, int frame, const pbfapp_frame_report *r,
                         const char *what) {
    run_state *s = ctx;
    (void)frame;
    (void)r;
    fprintf(stderr, "pbf: %s%s\n", what,
            d->guard->adaptive ? " (even with 8x substeps, --adaptive)" : "");
    if (s->last_checkpoint >= 0)
        fprintf(stderr,
                "pbf: last good checkpoint: %s (frame %lld); after a fix resume with "
                "`pbf run --resume %s` (--adaptive, or --set guard_density_error=...)\n",
                s->checkpoint_path, (long long)s->last_checkpoint, s->opt->out);
    else
        fprintf(stderr,
                "pbf: no checkpoint to resume from (--checkpoint-every N writes them); "
                "try %smore substeps or solver_iterations\n",
                d->guard->adaptive ? "" : "--adaptive, ");
}

/* SIGINT / SIGTERM: the frame in progress was finished; checkpoint it and stop. */
static int run_stopped(void *ctx, pbfapp_run_driver *d, int sig) {
    run_state *s = ctx;
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_status st = PBF_OK;
    if (s->last_checkpoint != d->frames_done)
        st = save_checkpoint(s->out, s->opt->out, s->world, d->frames_done, s->scene_hash,
                             &s->last_checkpoint, s->checkpoint_path, sizeof s->checkpoint_path,
                             &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: stopped by %s after frame %d, but the checkpoint failed: %s\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", d->frames_done, err.message);
        return EXIT_RUNTIME;
    }
    fprintf(stderr,
            "pbf: stopped by %s after frame %d of %d; checkpoint %s; resume with: pbf run "
            "--resume %s\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", d->frames_done, d->frames, s->checkpoint_path,
            s->opt->out);
    return 128 + sig;
}

/* The header line of the run (and of a resumed one). */
static void print_run_header(const run_state *s) {
    const run_options *opt = s->opt;
    const pbfapp_run *run = &s->scene.run;
    const float dt = (float)(1.0 / ((double)run->fps * (double)run->substeps));
    pbf_stats stats = pbf_world_stats(s->world);
    if (s->resumed)
        printf("pbf: resuming %s from %s: frame %d of %d, t = %.4f s\n", opt->out,
               s->checkpoint_path, s->start_frame, run->frames, stats.time);
    printf("pbf: %s: %s%s%d particles on %s, %d frames at %g fps (%g s), %d substeps of "
           "%.4g ms, writing %s files to %s/\n",
           s->scene.path, s->scene.name, s->scene.name[0] ? ": " : "", stats.particles,
           s->scene.def.device[0] ? s->scene.def.device : "cpu", run->frames, (double)run->fps,
           (double)run->frames / (double)run->fps, run->substeps, 1000.0 * (double)dt,
           pbfapp_format_extension(run->format), opt->out);
    fflush(stdout);
}

static int simulate(const run_options *opt) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    run_state s;
    memset(&s, 0, sizeof s);
    s.opt = opt;
    s.last_checkpoint = -1;
    int rc = load_run(&s, &err);
    if (rc < 0) rc = open_output(&s, &err);
    if (rc < 0) rc = open_consumers(&s, &err);
    if (rc >= 0) return rc;
    const pbfapp_run *run = &s.scene.run;
    if (!opt->quiet) print_run_header(&s);

    pbfapp_stop_install();
    pbfapp_guard guard;
    pbfapp_guard_init(&guard, run->guard_density_error, run->adaptive);
    pbfapp_progress progress;
    pbfapp_progress_init(&progress, stderr, run->frames, opt->quiet, -1);
    double t_start = pbfapp_now();
    if (s.resumed && s.start_frame >= run->frames && !opt->quiet)
        printf("pbf: the run is complete (frame %d of %d); raise --frames to continue it\n",
               s.start_frame, run->frames);
    pbfapp_run_driver d;
    pbfapp_run_driver_init(&d, s.world, run, s.start_frame, s.resumed, &guard, &progress);
    d.sinks.ctx = &s;
    d.sinks.frame = run_frame;
    d.sinks.unstable = run_unstable;
    d.sinks.stopped = run_stopped;
    rc = pbfapp_run_frames(&d);
    pbfapp_guard_free(&guard);
    pbfapp_mesher_close(s.mesher);
    pbf_status cst = pbfapp_output_close(s.out, &err);
    if (cst != PBF_OK && rc == 0) {
        fprintf(stderr, "pbf: %s\n", err.message);
        rc = EXIT_RUNTIME;
    }
    cst = pbfapp_renderer_close(s.renderer, &err);
    if (cst != PBF_OK && rc == 0) {
        fprintf(stderr, "pbf: %s\n", err.message);
        rc = EXIT_RUNTIME;
    }
    double wall = pbfapp_now() - t_start;
    if (rc == 0 && !opt->quiet) {
        char wall_s[32];
        pbfapp_format_duration(wall_s, sizeof wall_s, wall);
        printf("pbf: done: %d frames, %d particles, %.3f s simulated in %s wall; "
               "mean %.3f ms/step over %lld steps; final density error avg %.3f%% max %.3f%%; "
               "output in %s/\n",
               d.frames_done, d.stats.particles, d.stats.time, wall_s,
               d.steps > 0 ? 1000.0 * d.step_seconds / (double)d.steps : 0.0,
               (long long)d.steps, d.stats.density_error_avg, d.stats.density_error_max,
               opt->out);
    }
    pbf_world_destroy(s.world);
    pbfapp_scene_free(&s.scene);
    return rc;
}

/* `pbf devices`: the compute devices of this machine (pbf_list_devices). */
static void print_devices_help(FILE *f) {
    fprintf(f,
            "usage: pbf devices\n"
            "\n"
            "Lists the compute devices this pbf can run a simulation on: the CPU, then the OpenCL\n"
            "and CUDA devices of the backends built in, with the id that --device (or the\n"
            "scene key \"device\") takes, the name, the memory (host memory for the CPU), the\n"
            "compute units (cores, OpenCL compute units, CUDA multiprocessors) and the driver.\n"
            "Notes name the backends that are not built in or found no device.\n"
            "exit status: 0 success, 2 usage error\n");
}

static void format_bytes(char *buf, size_t size, size_t bytes) {
    double b = (double)bytes;
    if (bytes == 0)
        snprintf(buf, size, "-");
    else if (b >= 1024.0 * 1024.0 * 1024.0)
        snprintf(buf, size, "%.1f GiB", b / (1024.0 * 1024.0 * 1024.0));
    else
        snprintf(buf, size, "%.0f MiB", b / (1024.0 * 1024.0));
}

static int devices_command(int argc, char **argv) {
    for (int i = 0; i < argc; ++i) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            print_devices_help(stdout);
            return 0;
        }
        fprintf(stderr, "pbf devices: unknown argument \"%s\" (see `pbf devices --help`)\n",
                argv[i]);
        return EXIT_USAGE;
    }
    char note[2048];
    int n = pbf_list_devices(NULL, 0, NULL, 0);
    pbf_device_info *dev = calloc((size_t)(n > 0 ? n : 1), sizeof *dev);
    if (!dev) {
        fputs("pbf devices: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    int got = pbf_list_devices(dev, n, note, sizeof note);
    if (got < n) n = got;
    size_t idw = 2, namew = 4;
    for (int i = 0; i < n; ++i) {
        size_t a = strlen(dev[i].id), b = strlen(dev[i].name);
        if (a > idw) idw = a;
        if (b > namew) namew = b;
    }
    printf("%-*s  %-*s  %10s  %5s  %s\n", (int)idw, "id", (int)namew, "name", "memory", "units",
           "driver");
    for (int i = 0; i < n; ++i) {
        char mem[32];
        format_bytes(mem, sizeof mem, dev[i].memory);
        printf("%-*s  %-*s  %10s  %5d  %s\n", (int)idw, dev[i].id, (int)namew, dev[i].name, mem,
               dev[i].compute_units, dev[i].driver[0] ? dev[i].driver : "-");
    }
    for (const char *line = note; *line;) {
        size_t len = strcspn(line, "\n");
        printf("note: %.*s\n", (int)len, line);
        line += len;
        if (*line == '\n') ++line;
    }
    free(dev);
    return fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
}

/* `pbf view`: the live viewer of app/viewer/, when it was built. */
static int view_command(int argc, char **argv) {
#ifdef PBF_HAVE_VIEWER
    return pbfview_main(argc, argv, default_scene());
#else
    (void)argc;
    (void)argv;
    fputs("pbf view: this pbf was built without the viewer: GLFW >= 3.3 and libepoxy were not "
          "found (install libglfw3-dev and libepoxy-dev, then rebuild)\n",
          stderr);
    return EXIT_RUNTIME;
#endif
}

int main(int argc, char **argv) {
    if (argc <= 1) {
        char *args[] = {(char *)"--out", (char *)"out"};
        return run_command(2, args);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        print_help(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("pbf %s\n", PBF_VERSION_STRING);
        return 0;
    }
    if (strcmp(cmd, "run") == 0) return run_command(argc - 2, argv + 2);
    if (strcmp(cmd, "render") == 0) return pbfapp_render_command(argc - 2, argv + 2);
    if (strcmp(cmd, "mesh") == 0) return pbfapp_mesh_command(argc - 2, argv + 2);
    if (strcmp(cmd, "view") == 0) return view_command(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0) return pbfapp_bench_command(argc - 2, argv + 2);
    if (strcmp(cmd, "devices") == 0) return devices_command(argc - 2, argv + 2);
    if (strcmp(cmd, "validate") == 0) return pbfapp_validate_command(argc - 2, argv + 2);
    size_t n = strlen(cmd);
    if (n > 5 && strcmp(cmd + n - 5, ".json") == 0)
        return usage_error("unknown command \"%s\"; did you mean `pbf run %s`?", cmd, cmd);
    /* options without a command apply to the default run: `pbf --frames 1` is
     * `pbf run <scenes/dam_break.json> --out out --frames 1` */
    if (cmd[0] == '-') return run_command(argc - 1, argv + 1);
    return usage_error("unknown command \"%s\"%s", cmd, "");
}
