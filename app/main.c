/*
 * pbf — the command-line simulator.
 *
 *   pbf                       = pbf run <scenes/dam_break.json> --out out
 *   pbf run SCENE [options]   simulate a scene file and write one file per frame
 *   pbf --help | --version
 *
 * Exit status: 0 success, 2 usage or scene error, 1 runtime error (I/O, simulation).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "output.h"
#include "pbf/params.h"
#include "pbf/pbf.h"
#include "progress.h"
#include "scene.h"

#ifndef PBF_SCENES_DIR
#define PBF_SCENES_DIR "scenes"
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static const char *const default_scene_local = "scenes/dam_break.json";
static const char *const default_scene_installed = PBF_SCENES_DIR "/dam_break.json";

static const char *default_scene(void) {
    struct stat sb;
    if (stat(default_scene_local, &sb) == 0 && S_ISREG(sb.st_mode)) return default_scene_local;
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
    size_t wn = 0, rn = 0;
    const pbf_param_info *wt = pbf_world_params(&wn);
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    fprintf(f,
            "usage: pbf run [SCENE] [options]\n"
            "\n"
            "Simulates the scene file SCENE (JSON; default %s) and writes one file per frame,\n"
            "frame_00000 (the initial state) to frame_N, plus stats.jsonl, into the output\n"
            "directory. Each frame is `substeps` solver steps of dt = 1 / (fps * substeps).\n"
            "\n"
            "options:\n"
            "  --out DIR           output directory, created if missing (default: out)\n"
            "  --frames N          number of frames after frame 0 (same as --set frames=N)\n"
            "  --threads N         OpenMP threads, 0 = default (same as --set threads=N)\n"
            "  --format F          vtp, ply or csv (same as --set format=F)\n"
            "  --set KEY=VALUE     override any parameter below; vectors as x,y,z, choices by\n"
            "                      name; may be repeated, applied after the scene file\n"
            "  -q, --quiet         no progress and no summary, only errors\n"
            "  -h, --help          this help\n"
            "\n"
            "world parameters (scene-file keys; name, unit, default, range, description):\n",
            default_scene());
    print_table(f, wt, wn);
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
            "  name, description   optional strings\n"
            "\n"
            "exit status: 0 success, 2 usage or scene error, 1 runtime error (I/O, simulation)\n");
}

static void print_help(FILE *f) {
    fprintf(f,
            "pbf %s — Position Based Fluids simulator (Macklin & Mueller 2013)\n"
            "\n"
            "usage: pbf                    same as: pbf run %s --out out\n"
            "       pbf run [SCENE] [options]\n"
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

/* Status of a scene or world problem -> exit code. */
static int exit_for(pbf_status st) {
    return st == PBF_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE;
}

typedef struct run_options {
    const char *scene;
    const char *out;
    int quiet;
    pbfapp_override *overrides;
    size_t override_count;
    char **labels; /* owned label strings, one per override */
    char **keys;   /* owned key strings of --set, by override index */
    size_t cap;
} run_options;

/* Matches "--name VALUE" or "--name=VALUE"; advances *i past the value. 1 = matched,
 * -1 = matched but the value is missing, 0 = not this option. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value) {
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

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
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            opt.quiet = 1;
        } else if ((m = option_value(argc, argv, &i, "--out", &value)) != 0) {
            if (m < 0) {
                rc = usage_error("%s needs a value (%s)", "--out", "DIR");
            } else if (!value[0]) {
                rc = usage_error("%s: the output directory name is empty%s", "--out", "");
            } else {
                opt.out = value;
            }
        } else if ((m = option_value(argc, argv, &i, "--frames", &value)) != 0 ||
                   (m = option_value(argc, argv, &i, "--threads", &value)) != 0 ||
                   (m = option_value(argc, argv, &i, "--format", &value)) != 0) {
            const char *key = arg[2] == 'f' && arg[3] == 'r' ? "frames"
                              : arg[2] == 't'                ? "threads"
                                                             : "format";
            char label[32];
            snprintf(label, sizeof label, "--%s", key);
            if (m < 0)
                rc = usage_error("%s needs a value%s", label, "");
            else if (!add_override(&opt, key, value, label))
                rc = EXIT_RUNTIME;
        } else if ((m = option_value(argc, argv, &i, "--set", &value)) != 0) {
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
            rc = usage_error("run: unknown option \"%s\"%s", arg, "");
        }
    }
    if (rc < 0) {
        if (!opt.scene) opt.scene = default_scene();
        rc = simulate(&opt);
    }
    free_options(&opt);
    return rc;
}

static int simulate(const run_options *opt) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbfapp_scene scene;
    pbf_status st =
        pbfapp_scene_load(opt->scene, opt->overrides, opt->override_count, &scene, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        return exit_for(st);
    }
    pbf_world *world = NULL;
    st = pbfapp_scene_create_world(&scene, &world, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        pbfapp_scene_free(&scene);
        return exit_for(st);
    }
    pbfapp_output *out = NULL;
    st = pbfapp_output_open(opt->out, scene.run.format, &out, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        pbf_world_destroy(world);
        pbfapp_scene_free(&scene);
        return EXIT_RUNTIME;
    }

    const pbfapp_run *run = &scene.run;
    const float dt = (float)(1.0 / ((double)run->fps * (double)run->substeps));
    pbf_stats stats = pbf_world_stats(world);
    if (!opt->quiet) {
        printf("pbf: %s: %s%s%d particles, %d frames at %g fps (%g s), %d substeps of %.4g ms, "
               "writing %s files to %s/\n",
               scene.path, scene.name, scene.name[0] ? ": " : "", stats.particles, run->frames,
               (double)run->fps, (double)run->frames / (double)run->fps, run->substeps,
               1000.0 * (double)dt, pbfapp_format_extension(run->format), opt->out);
        fflush(stdout);
    }

    int rc = 0;
    pbfapp_progress progress;
    pbfapp_progress_init(&progress, stderr, run->frames, opt->quiet, -1);
    double t_start = pbfapp_now();
    double step_seconds = 0;
    int64_t steps = 0;
    int frames_done = 0;
    int warned_escaped = 0;
    pbf_particles particles = pbf_world_particles(world);
    st = pbfapp_output_frame(out, 0, stats.time, &particles, &err);
    if (st == PBF_OK) st = pbfapp_output_stats(out, 0, &stats, 0.0, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        rc = EXIT_RUNTIME;
    }
    for (int frame = 1; frame <= run->frames && rc == 0; ++frame) {
        double t0 = pbfapp_now();
        for (int s = 0; s < run->substeps; ++s) {
            st = pbf_world_step(world, dt, &err);
            if (st != PBF_OK) break;
            ++steps;
        }
        double t1 = pbfapp_now();
        if (st != PBF_OK) {
            pbfapp_progress_finish(&progress);
            fprintf(stderr, "pbf: frame %d: simulation step failed: %s\n", frame, err.message);
            rc = EXIT_RUNTIME;
            break;
        }
        step_seconds += t1 - t0;
        double ms = 1000.0 * (t1 - t0);
        stats = pbf_world_stats(world);
        particles = pbf_world_particles(world);
        st = pbfapp_output_frame(out, frame, stats.time, &particles, &err);
        if (st == PBF_OK) st = pbfapp_output_stats(out, frame, &stats, ms, &err);
        if (st != PBF_OK) {
            pbfapp_progress_finish(&progress);
            fprintf(stderr, "pbf: frame %d: %s\n", frame, err.message);
            rc = EXIT_RUNTIME;
            break;
        }
        frames_done = frame;
        pbfapp_progress_update(&progress, frame, &stats, ms / run->substeps);
        if (stats.nonfinite > 0) {
            pbfapp_progress_finish(&progress);
            fprintf(stderr,
                    "pbf: frame %d (t = %.4f s): the simulation blew up: %d particles have a "
                    "non-finite position or velocity (written to %s); try more substeps or "
                    "solver_iterations\n",
                    frame, stats.time, stats.nonfinite, pbfapp_output_last_path(out));
            rc = EXIT_RUNTIME;
            break;
        }
        if (stats.escaped > 0 && !warned_escaped) {
            pbfapp_progress_finish(&progress);
            fprintf(stderr,
                    "pbf: warning: frame %d (t = %.4f s): %d particles are outside the "
                    "domain\n",
                    frame, stats.time, stats.escaped);
            warned_escaped = 1;
        }
    }
    pbfapp_progress_finish(&progress);
    pbf_status cst = pbfapp_output_close(out, &err);
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
               frames_done, stats.particles, stats.time, wall_s,
               steps > 0 ? 1000.0 * step_seconds / (double)steps : 0.0, (long long)steps,
               stats.density_error_avg, stats.density_error_max, opt->out);
    }
    pbf_world_destroy(world);
    pbfapp_scene_free(&scene);
    return rc;
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
    size_t n = strlen(cmd);
    if (n > 5 && strcmp(cmd + n - 5, ".json") == 0)
        return usage_error("unknown command \"%s\"; did you mean `pbf run %s`?", cmd, cmd);
    if (cmd[0] == '-') return usage_error("unknown option \"%s\"%s", cmd, "");
    return usage_error("unknown command \"%s\"%s", cmd, "");
}
