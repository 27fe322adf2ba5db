/*
 * `pbf view SCENE`: the live viewer (see viewer.h).
 *
 * The loop: poll input, advance the simulation, draw, swap. Interactive runs are paced to real
 * time: each displayed frame runs the solver steps (dt = 1 / (fps * substeps)) that the elapsed
 * wall time calls for, but stops after a time budget so the window stays responsive; when the
 * solver is slower than real time the simulation simply runs slower (decoupled from the display).
 * With --frames N every displayed frame after the first is exactly one scene frame (`substeps`
 * steps), so a screenshot after N frames always shows simulated time N / fps.
 */
#define _POSIX_C_SOURCE 200809L

#include "viewer.h"
#include "io/util.h"

#include <epoxy/gl.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/camera.h"
#include "io/checkpoint.h"
#include "render/colormap.h"
#include "gl_renderer.h"
#include "run/progress.h"
#include "run/run_driver.h"
#include "render/render.h"
#include "io/scene.h"

#if defined(__SANITIZE_ADDRESS__)
#define PBFVIEW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PBFVIEW_ASAN 1
#endif
#endif
#if PBFVIEW_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#define STEP_BUDGET_S 0.033 /* interactive: solver time per displayed frame before drawing */
#define FLOOR_DIVISIONS 10  /* floor grid lines per side */

typedef struct view_options {
    const char *scene;
    pbfapp_override *overrides;
    size_t override_count;
    char **owned; /* strings owned by the options (keys and labels), `cap` slots */
    size_t owned_count, cap;
    int width, height;
    int field;
    int fluid;
    const char *screenshot;
    const char *checkpoint;     /* --checkpoint FILE: the state to start from */
    long frames;                /* -1: run until the window is closed */
    pbf_camera_override camera; /* --camera-pos, --camera-target, --fov */
    const char *camera_pos_arg; /* as given */
    int has_range;              /* --range MIN:MAX */
    float range[2];
} view_options;

typedef struct viewer {
    const view_options *opt;
    pbfapp_scene scene;
    pbf_world *world;
    GLFWwindow *window;
    pbfview_renderer *renderer;
    pbf_camera camera, home;
    float dt;
    float diag; /* container diagonal, m */
    int paused, show_boxes, fluid, fluid_failed;
    pbf_color_field field;
    int step_requests;  /* single steps asked for while paused */
    double sim_backlog; /* simulated seconds owed to real time */
    uint64_t version;   /* bumped whenever the particles change */
    int failed;         /* the simulation stopped with an error */
    pbf_stats stats;
    /* mouse */
    int orbiting, flying;
    double mouse_x, mouse_y;
    /* measurements (see measure()) */
    int64_t steps_total;
    double step_seconds_total;
    int64_t window_steps;
    double window_step_seconds, window_start;
    int window_frames;
    int window_full;                     /* a whole window (>= 1 s) has been measured */
    double fps_shown, ms_per_step_shown; /* < 0: nothing measured yet */
    pbfapp_run_driver driver;            /* --frames N: the scene frames (frame_driver_init) */
    /* line geometry, rebuilt every frame */
    float *lines;
    size_t lines_cap;
} viewer;

/* ---- command line ------------------------------------------------------------------------- */

void pbfview_print_help(FILE *f, const char *default_scene) {
    fprintf(f,
            "usage: pbf view [SCENE] [options]\n"
            "\n"
            "Opens a window and simulates the scene file SCENE (JSON; default\n"
            "%s) live, drawn with OpenGL 3.3: particles as shaded spheres or\n"
            "as a screen-space fluid surface. The scene's `frames` and `format` are ignored: it\n"
            "runs until the window is closed (or for --frames N).\n"
            "\n"
            "options:\n"
            "  --size WxH          window size in pixels (default 1280x720)\n"
            "  --color F           colour field: water, density or speed (default water)\n"
            "  --range MIN:MAX     the --color quantity at the ends of the ramp (kg/m^3 for\n"
            "                      density, m/s for speed and water; default: [0.9, 1.1] x\n"
            "                      rest_density, or [0, sqrt(2 g H)] m/s, H = domain height);\n"
            "                      the fields the C key cycles to keep their defaults\n"
            "  --camera-pos X,Y,Z  the camera's start position, m (default: the scene's\n"
            "                      \"camera\", else a view of the container from the front-right)\n"
            "  --camera-target X,Y,Z\n"
            "                      the point it looks at and orbits around, m\n"
            "  --fov DEG           vertical field of view, degrees, in (1, 170)\n"
            "  --fluid             start in screen-space fluid mode\n"
            "  --threads N         OpenMP threads, 0 = default (same as --set threads=N)\n"
            "  --device D          where the solver runs: cpu, opencl, opencl:PLATFORM.DEVICE,\n"
            "                      cuda or cuda:N (same as --set device=D; `pbf devices`)\n"
            "  --set KEY=VALUE     override a scene parameter (see `pbf run --help`)\n"
            "  --frames N          draw the initial state and N frames of `substeps` steps each,\n"
            "                      then exit (prints the frame rate; for measurements)\n"
            "  --checkpoint FILE   start from a checkpoint of this scene written by `pbf run\n"
            "                      --checkpoint-every` (R still resets to the scene's start)\n"
            "  --screenshot FILE   with --frames N: after frame N write the window to FILE (PNG)\n"
            "                      and exit; without --frames, N = 0 (the initial state)\n"
            "  -h, --help          this help\n"
            "\n",
            default_scene);
    fprintf(f,
            "controls:\n"
            "  left drag           orbit around the target\n"
            "  scroll              zoom\n"
            "  right drag          look around (fly); W A S D move, Q E down / up (Shift: faster)\n"
            "  Space               pause / resume\n"
            "  N or .              one solver step while paused\n"
            "  R                   reset: rebuild the world from the scene\n"
            "  V                   reset the camera\n"
            "  C                   cycle the colour field (water, density, speed)\n"
            "  B                   show / hide the container and boxes\n"
            "  F                   toggle the screen-space fluid surface\n"
            "  H                   print these controls\n"
            "  Esc                 quit\n"
            "\n"
            "exit status: 0 success, 2 usage or scene error, 1 runtime error (no display,\n"
            "OpenGL 3.3 unavailable, screenshot not written, simulation failed)\n");
}

static int usage(const char *fmt, const char *a) {
    fputs("pbf view: ", stderr);
    fprintf(stderr, fmt, a);
    fputs(" (see `pbf view --help`)\n", stderr);
    return EXIT_USAGE;
}

static char *own(view_options *o, const char *s, size_t len) {
    char *c = malloc(len + 1);
    if (!c) return NULL;
    memcpy(c, s, len);
    c[len] = '\0';
    o->owned[o->owned_count++] = c;
    return c;
}

static int add_override(view_options *o, const char *key, size_t key_len, const char *value,
                        const char *label) {
    char *k = own(o, key, key_len);
    char *l = k ? own(o, label, strlen(label)) : NULL;
    if (!l) {
        fputs("pbf view: out of memory\n", stderr);
        return 0;
    }
    o->overrides[o->override_count].key = k;
    o->overrides[o->override_count].value = value;
    o->overrides[o->override_count].label = l;
    ++o->override_count;
    return 1;
}

static void free_options(view_options *o) {
    for (size_t i = 0; i < o->owned_count; ++i) free(o->owned[i]);
    free(o->owned);
    free(o->overrides);
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!s[0] || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* Returns -1 to go on, else an exit status. */
static int parse_options(int argc, char **argv, view_options *o, const char *default_scene) {
    o->cap = 2 * (size_t)argc + 2;
    o->overrides = calloc((size_t)argc + 1, sizeof *o->overrides);
    o->owned = calloc(o->cap, sizeof *o->owned);
    if (!o->overrides || !o->owned) {
        fputs("pbf view: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    o->width = 1280;
    o->height = 720;
    o->field = PBF_COLOR_WATER;
    o->frames = -1;
    int only_positional = 0;
    for (int i = 0; i < argc; ++i) {
        const char *arg = argv[i], *value = NULL;
        int m;
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            if (o->scene) return usage("more than one scene given (\"%s\")", arg);
            o->scene = arg;
        } else if (strcmp(arg, "--") == 0) {
            only_positional = 1;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            pbfview_print_help(stdout, default_scene);
            return 0;
        } else if (strcmp(arg, "--fluid") == 0) {
            o->fluid = 1;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--size", &value)) != 0) {
            int w = 0, h = 0;
            char extra;
            if (m < 0) return usage("%s needs a value (WxH, e.g. 1280x720)", "--size");
            if (sscanf(value, "%dx%d%c", &w, &h, &extra) != 2 || w < 64 || h < 64 || w > 8192 ||
                h > 8192)
                return usage("--size %s: expected WxH with each side in [64, 8192], e.g. 1280x720",
                             value);
            o->width = w;
            o->height = h;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--color", &value)) != 0) {
            if (m < 0) return usage("%s needs a value (water, density or speed)", "--color");
            int f = pbf_color_field_from_name(value);
            if (f < 0)
                return usage("--color %s: unknown colour field; use water, density or speed",
                             value);
            o->field = f;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--range", &value)) != 0) {
            if (m < 0) return usage("%s needs a value (MIN:MAX, e.g. 0:2)", "--range");
            if (strcmp(value, "auto") == 0)
                return usage("--range %s: the viewer needs MIN:MAX (auto is for `pbf render`, "
                             "over a whole series)",
                             value);
            if (!pbf_color_parse_range(value, o->range))
                return usage("--range %s: expected MIN:MAX with MIN < MAX (kg/m^3 for density, "
                             "m/s for speed and water), e.g. 0:2",
                             value);
            o->has_range = 1;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--camera-pos", &value)) != 0) {
            if (m < 0) return usage("%s needs a value (X,Y,Z in m, e.g. 2,1.5,3)", "--camera-pos");
            if (!pbf_camera_parse_vec3(value, o->camera.position))
                return usage("--camera-pos %s: expected X,Y,Z (three numbers in m, each within "
                             "+-1e6, separated by commas), e.g. 2,1.5,3",
                             value);
            o->camera.has_position = 1;
            o->camera_pos_arg = value;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--camera-target", &value)) != 0) {
            if (m < 0)
                return usage("%s needs a value (X,Y,Z in m, e.g. 0.8,0.2,0.3)", "--camera-target");
            if (!pbf_camera_parse_vec3(value, o->camera.target))
                return usage("--camera-target %s: expected X,Y,Z (three numbers in m, each within "
                             "+-1e6, separated by commas), e.g. 0.8,0.2,0.3",
                             value);
            o->camera.has_target = 1;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--fov", &value)) != 0) {
            if (m < 0) return usage("%s needs a value (degrees, e.g. 40)", "--fov");
            if (!pbf_camera_parse_fov(value, &o->camera.fov_deg))
                return usage("--fov %s: expected a vertical field of view in (1, 170) degrees",
                             value);
            o->camera.has_fov = 1;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--screenshot", &value)) != 0) {
            if (m < 0 || !value[0]) return usage("%s needs a file name (FILE.png)", "--screenshot");
            o->screenshot = value;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--checkpoint", &value)) != 0) {
            if (m < 0 || !value[0])
                return usage("%s needs a file name (DIR/checkpoint_NNNNN.pbfck)", "--checkpoint");
            o->checkpoint = value;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--frames", &value)) != 0) {
            if (m < 0) return usage("%s needs a value", "--frames");
            if (!parse_long(value, 0, 100000000L, &o->frames))
                return usage("--frames %s: expected a whole number >= 0", value);
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--threads", &value)) != 0) {
            if (m < 0) return usage("%s needs a value", "--threads");
            if (!add_override(o, "threads", 7, value, "--threads")) return EXIT_RUNTIME;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--device", &value)) != 0) {
            if (m < 0) return usage("%s needs a value (cpu, opencl[:P.D] or cuda[:N])", "--device");
            if (!add_override(o, "device", 6, value, "--device")) return EXIT_RUNTIME;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--set", &value)) != 0) {
            if (m < 0) return usage("%s needs a value (KEY=VALUE)", "--set");
            const char *eq = strchr(value, '=');
            if (!eq || eq == value)
                return usage("--set %s: expected KEY=VALUE, e.g. --set particle_radius=0.01",
                             value);
            char label[300];
            snprintf(label, sizeof label, "--set %.*s", (int)(eq - value < 280 ? eq - value : 280),
                     value);
            if (!add_override(o, value, (size_t)(eq - value), eq + 1, label)) return EXIT_RUNTIME;
        } else {
            return usage("unknown option \"%s\"", arg);
        }
    }
    if (!o->scene) o->scene = default_scene;
    if (o->screenshot && o->frames < 0) o->frames = 0;
    if (o->camera.has_position && o->camera.has_target &&
        memcmp(o->camera.position, o->camera.target, sizeof o->camera.position) == 0)
        return usage("--camera-pos and --camera-target are the same point (%s): the camera needs "
                     "a direction to look in",
                     o->camera_pos_arg);
    return -1;
}

/* The solver's OpenMP threads busy-wait between parallel regions by default (libgomp reads
 * OMP_WAIT_POLICY once, when it is loaded). In the viewer they share the cores with the
 * rasteriser (a software one runs on the CPU) and the X server, and spinning threads then slow
 * every solver step down by up to 10x on a busy machine. Unless the user chose a policy, the
 * viewer re-executes itself once with OMP_WAIT_POLICY=PASSIVE; if that fails it just goes on. */
static void prefer_passive_openmp(void) {
    if (getenv("OMP_WAIT_POLICY")) return;
    if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1 || cap > (1u << 20)) break;
        char *nb = realloc(buf, 2 * cap);
        if (!nb) {
            free(buf);
            buf = NULL;
        } else {
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf || len == 0 || len >= cap - 1) {
        free(buf);
        return;
    }
    buf[len] = '\0';
    size_t n = 0;
    for (size_t i = 0; i < len; ++i) n += buf[i] == '\0';
    char **args = calloc(n + 2, sizeof *args);
    if (args) {
        size_t k = 0;
        for (size_t i = 0; i < len && k <= n; i += strlen(buf + i) + 1) args[k++] = buf + i;
        args[k] = NULL;
        fflush(NULL);
        execv("/proc/self/exe", args); /* returns only on failure */
    }
    free(args);
    free(buf);
}

/* ---- simulation --------------------------------------------------------------------------- */

static void refresh_stats(viewer *v) {
    v->stats = pbf_world_stats(v->world);
    ++v->version;
}

/* One solver step, its wall time (*seconds) counted in the measurements. */
static pbf_status timed_step(viewer *v, double *seconds, pbf_error *err) {
    double t0 = pbfapp_now();
    pbf_status st = pbf_world_step(v->world, v->dt, err);
    double s = pbfapp_now() - t0;
    *seconds = s;
    if (st != PBF_OK) return st;
    ++v->steps_total;
    v->step_seconds_total += s;
    ++v->window_steps;
    v->window_step_seconds += s;
    return PBF_OK;
}

static void step_failed(viewer *v, const pbf_error *err) {
    fprintf(stderr, "pbf view: simulation step failed: %s\n", err->message);
    v->failed = 1;
    v->paused = 1;
}

/* One solver step; on failure the viewer pauses (interactive) and `failed` is set. */
static int sim_step(viewer *v) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    double s;
    if (timed_step(v, &s, &err) == PBF_OK) return 1;
    step_failed(v, &err);
    return 0;
}

/* After steps: stats, and a stop if the state became non-finite. */
static void after_steps(viewer *v) {
    refresh_stats(v);
    if (v->stats.nonfinite > 0 && !v->failed) {
        fprintf(stderr,
                "pbf view: t = %.4f s: the simulation blew up: %d particles have a non-finite "
                "position or velocity; paused (R resets; try more substeps or solver_iterations)\n",
                v->stats.time, v->stats.nonfinite);
        v->failed = 1;
        v->paused = 1;
    }
}

/* --frames N: every displayed frame after the first is one scene frame (`substeps` steps),
 * stepped by the program's frame loop (app/run/run_driver.h) one frame at a time, without its
 * guard or progress line: the viewer's own stop on a non-finite state (after_steps) is its frame
 * sink. */
static pbf_status frame_step(void *ctx, pbfapp_run_driver *d, int frame, pbfapp_frame_report *rep,
                             double *speed_dt, pbf_error *err) {
    (void)d;
    (void)frame;
    viewer *v = ctx;
    memset(rep, 0, sizeof *rep);
    rep->diag.ok = 1;
    rep->substeps = v->scene.run.substeps;
    rep->factor = 1;
    *speed_dt = v->dt;
    for (int s = 0; s < v->scene.run.substeps; ++s) {
        double seconds;
        pbf_status st = timed_step(v, &seconds, err);
        if (st != PBF_OK) return st;
        ++rep->steps;
        rep->step_seconds += seconds;
    }
    return PBF_OK;
}

static int frame_done(void *ctx, pbfapp_run_driver *d, const pbfapp_run_frame *f) {
    (void)d;
    (void)f;
    after_steps(ctx);
    return 0;
}

static void frame_step_failed(void *ctx, int frame, const pbf_error *err) {
    (void)frame;
    step_failed(ctx, err);
    after_steps(ctx);
}

static void frame_driver_init(viewer *v) {
    pbfapp_run_driver *d = &v->driver;
    memset(d, 0, sizeof *d);
    d->fps = (double)v->scene.run.fps;
    d->substeps = v->scene.run.substeps;
    d->frames = v->opt->frames < INT_MAX ? (int)v->opt->frames : INT_MAX;
    d->sinks.ctx = v;
    d->sinks.step = frame_step;
    d->sinks.frame = frame_done;
    d->sinks.step_failed = frame_step_failed;
}

static void simulate(viewer *v, double wall_dt, long fixed_frame) {
    if (v->failed) return;
    if (fixed_frame > 0) {
        v->driver.world = v->world; /* R replaces the world */
        pbfapp_run_one_frame(&v->driver, fixed_frame < INT_MAX ? (int)fixed_frame : INT_MAX);
        return;
    }
    if (v->paused) {
        if (v->step_requests > 0) {
            for (; v->step_requests > 0 && !v->failed; --v->step_requests) sim_step(v);
            after_steps(v);
        }
        return;
    }
    v->step_requests = 0;
    v->sim_backlog += wall_dt < 0.25 ? wall_dt : 0.25;
    double t0 = pbfapp_now();
    int stepped = 0;
    while (v->sim_backlog >= v->dt && !v->failed) {
        sim_step(v);
        stepped = 1;
        v->sim_backlog -= v->dt;
        if (pbfapp_now() - t0 > STEP_BUDGET_S) break;
    }
    /* slower than real time: drop the backlog instead of trying to catch up */
    if (v->sim_backlog > 2.0 * (double)v->dt * v->scene.run.substeps) v->sim_backlog = 0;
    if (stepped) after_steps(v);
}

static int reset_world(viewer *v) {
    pbf_world *w = NULL;
    pbf_error err;
    memset(&err, 0, sizeof err);
    if (pbfapp_scene_create_world(&v->scene, &w, &err) != PBF_OK) {
        fprintf(stderr, "pbf view: reset failed: %s\n", err.message);
        return 0;
    }
    pbf_world_destroy(v->world);
    v->world = w;
    v->failed = 0;
    v->sim_backlog = 0;
    refresh_stats(v);
    return 1;
}

/* ---- camera ------------------------------------------------------------------------------- */

static float len3(const float a[3]) {
    return sqrtf(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

static void home_camera(viewer *v, float aspect) {
    if (v->scene.has_camera) {
        v->home = v->scene.camera;
    } else {
        const pbf_world_def *d = &v->scene.def;
        float lo[3] = {d->domain_min.x, d->domain_min.y, d->domain_min.z};
        float hi[3] = {d->domain_max.x, d->domain_max.y, d->domain_max.z};
        v->home = pbf_camera_default(lo, hi, aspect);
    }
    pbf_camera_apply(&v->home, &v->opt->camera);
    v->camera = v->home;
}

/* Spherical angles of a vector about the y axis (y is up). */
static void to_angles(const float d[3], float *yaw, float *pitch, float *r) {
    *r = len3(d);
    if (*r <= 0) *r = 1e-6f;
    *yaw = atan2f(d[0], d[2]);
    float s = d[1] / *r;
    *pitch = asinf(s < -1 ? -1 : s > 1 ? 1 : s);
}

static void from_angles(float yaw, float pitch, float r, float d[3]) {
    const float lim = 1.55f;
    if (pitch > lim) pitch = lim;
    if (pitch < -lim) pitch = -lim;
    d[0] = r * cosf(pitch) * sinf(yaw);
    d[1] = r * sinf(pitch);
    d[2] = r * cosf(pitch) * cosf(yaw);
}

static void orbit(viewer *v, double dx, double dy) {
    pbf_camera *c = &v->camera;
    float off[3] = {c->position[0] - c->target[0], c->position[1] - c->target[1],
                    c->position[2] - c->target[2]};
    float yaw, pitch, r;
    to_angles(off, &yaw, &pitch, &r);
    from_angles(yaw - 0.006f * (float)dx, pitch + 0.006f * (float)dy, r, off);
    for (int a = 0; a < 3; ++a) c->position[a] = c->target[a] + off[a];
}

static void look(viewer *v, double dx, double dy) {
    pbf_camera *c = &v->camera;
    float dir[3] = {c->target[0] - c->position[0], c->target[1] - c->position[1],
                    c->target[2] - c->position[2]};
    float yaw, pitch, r;
    to_angles(dir, &yaw, &pitch, &r);
    from_angles(yaw - 0.003f * (float)dx, pitch - 0.003f * (float)dy, r, dir);
    for (int a = 0; a < 3; ++a) c->target[a] = c->position[a] + dir[a];
}

static void zoom(viewer *v, double amount) {
    pbf_camera *c = &v->camera;
    float off[3] = {c->position[0] - c->target[0], c->position[1] - c->target[1],
                    c->position[2] - c->target[2]};
    float r = len3(off);
    float nr = r * powf(0.88f, (float)amount);
    float lo = 0.02f * v->diag, hi = 20.0f * v->diag;
    if (nr < lo) nr = lo;
    if (nr > hi) nr = hi;
    for (int a = 0; a < 3; ++a) c->position[a] = c->target[a] + off[a] * (r > 0 ? nr / r : 1);
}

static void fly(viewer *v, double wall_dt) {
    GLFWwindow *w = v->window;
    float f[3] = {0, 0, 0}, move[3] = {0, 0, 0};
    pbf_camera *c = &v->camera;
    for (int a = 0; a < 3; ++a) f[a] = c->target[a] - c->position[a];
    float fl = len3(f);
    if (fl <= 0) return;
    for (int a = 0; a < 3; ++a) f[a] /= fl;
    float right[3] = {-f[2], 0, f[0]}; /* f x (0,1,0) */
    float rl = len3(right);
    if (rl > 0)
        for (int a = 0; a < 3; ++a) right[a] /= rl;
    const struct {
        int key;
        const float *axis;
        float sign;
    } keys[] = {{GLFW_KEY_W, f, 1},      {GLFW_KEY_S, f, -1},   {GLFW_KEY_D, right, 1},
                {GLFW_KEY_A, right, -1}, {GLFW_KEY_E, NULL, 1}, {GLFW_KEY_Q, NULL, -1}};
    int any = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k) {
        if (glfwGetKey(w, keys[k].key) != GLFW_PRESS) continue;
        any = 1;
        if (keys[k].axis)
            for (int a = 0; a < 3; ++a) move[a] += keys[k].sign * keys[k].axis[a];
        else
            move[1] += keys[k].sign;
    }
    if (!any) return;
    float speed = 0.5f * v->diag;
    if (glfwGetKey(w, GLFW_KEY_LEFT_SHIFT) == GLFW_PRESS ||
        glfwGetKey(w, GLFW_KEY_RIGHT_SHIFT) == GLFW_PRESS)
        speed *= 3;
    float dist = speed * (float)(wall_dt < 0.1 ? wall_dt : 0.1);
    for (int a = 0; a < 3; ++a) {
        c->position[a] += move[a] * dist;
        c->target[a] += move[a] * dist;
    }
}

/* ---- input -------------------------------------------------------------------------------- */

static void print_controls(void) {
    printf("pbf view controls:\n"
           "  left drag: orbit   scroll: zoom   right drag: look   W A S D Q E: fly (Shift: fast)\n"
           "  Space: pause/resume   N or .: one step while paused   R: reset   V: reset camera\n"
           "  C: colour field   B: container and boxes   F: fluid surface   H: help   Esc: quit\n");
    fflush(stdout);
}

static void on_key(GLFWwindow *w, int key, int scancode, int action, int mods) {
    (void)scancode;
    (void)mods;
    viewer *v = glfwGetWindowUserPointer(w);
    if (action == GLFW_REPEAT && (key == GLFW_KEY_N || key == GLFW_KEY_PERIOD)) {
        if (v->paused) ++v->step_requests;
        return;
    }
    if (action != GLFW_PRESS) return;
    switch (key) {
    case GLFW_KEY_ESCAPE: glfwSetWindowShouldClose(w, GLFW_TRUE); break;
    case GLFW_KEY_SPACE:
        v->paused = !v->paused;
        v->sim_backlog = 0;
        break;
    case GLFW_KEY_N:
    case GLFW_KEY_PERIOD:
        if (v->paused) ++v->step_requests;
        break;
    case GLFW_KEY_R: reset_world(v); break;
    case GLFW_KEY_V: v->camera = v->home; break;
    case GLFW_KEY_C: v->field = (pbf_color_field)(((int)v->field + 1) % 3); break;
    case GLFW_KEY_B: v->show_boxes = !v->show_boxes; break;
    case GLFW_KEY_F:
        v->fluid = !v->fluid;
        v->fluid_failed = 0;
        break;
    case GLFW_KEY_H: print_controls(); break;
    default: break;
    }
}

static void on_mouse_button(GLFWwindow *w, int button, int action, int mods) {
    (void)mods;
    viewer *v = glfwGetWindowUserPointer(w);
    glfwGetCursorPos(w, &v->mouse_x, &v->mouse_y);
    if (button == GLFW_MOUSE_BUTTON_LEFT) v->orbiting = action == GLFW_PRESS;
    if (button == GLFW_MOUSE_BUTTON_RIGHT) v->flying = action == GLFW_PRESS;
}

static void on_cursor(GLFWwindow *w, double x, double y) {
    viewer *v = glfwGetWindowUserPointer(w);
    double dx = x - v->mouse_x, dy = y - v->mouse_y;
    v->mouse_x = x;
    v->mouse_y = y;
    if (v->orbiting)
        orbit(v, dx, dy);
    else if (v->flying)
        look(v, dx, dy);
}

static void on_scroll(GLFWwindow *w, double xoff, double yoff) {
    (void)xoff;
    viewer *v = glfwGetWindowUserPointer(w);
    zoom(v, yoff);
}

/* ---- drawing ------------------------------------------------------------------------------ */

static int push_segment(viewer *v, size_t *n, const float a[3], const float b[3]) {
    if ((*n + 2) * 3 > v->lines_cap) {
        size_t cap = v->lines_cap ? 2 * v->lines_cap : 1024;
        float *nl = realloc(v->lines, cap * sizeof(float));
        if (!nl) return 0;
        v->lines = nl;
        v->lines_cap = cap;
    }
    memcpy(v->lines + 3 * *n, a, 3 * sizeof(float));
    memcpy(v->lines + 3 * (*n + 1), b, 3 * sizeof(float));
    *n += 2;
    return 1;
}

static void push_box(viewer *v, size_t *n, const float lo[3], const float hi[3]) {
    for (int e = 0; e < 12; ++e) {
        int axis = e / 4, k = e % 4; /* 4 edges along each axis */
        int o1 = (axis + 1) % 3, o2 = (axis + 2) % 3;
        float a[3], b[3];
        a[axis] = lo[axis];
        b[axis] = hi[axis];
        a[o1] = b[o1] = (k & 1) ? hi[o1] : lo[o1];
        a[o2] = b[o2] = (k & 2) ? hi[o2] : lo[o2];
        push_segment(v, n, a, b);
    }
}

/* Container edges and floor grid, then every box at its current position. */
static void build_lines(viewer *v, int *vertices, int *container_vertices) {
    size_t n = 0;
    const pbf_world_def *d = &v->scene.def;
    float lo[3] = {d->domain_min.x, d->domain_min.y, d->domain_min.z};
    float hi[3] = {d->domain_max.x, d->domain_max.y, d->domain_max.z};
    push_box(v, &n, lo, hi);
    for (int i = 1; i < FLOOR_DIVISIONS; ++i) {
        float s = (float)i / FLOOR_DIVISIONS;
        float x = lo[0] + s * (hi[0] - lo[0]), z = lo[2] + s * (hi[2] - lo[2]);
        float a[3] = {x, lo[1], lo[2]}, b[3] = {x, lo[1], hi[2]};
        float c[3] = {lo[0], lo[1], z}, e[3] = {hi[0], lo[1], z};
        push_segment(v, &n, a, b);
        push_segment(v, &n, c, e);
    }
    *container_vertices = (int)n;
    int boxes = pbf_world_box_count(v->world);
    for (int i = 0; i < boxes; ++i) {
        pbf_vec3 bmin, bmax;
        if (pbf_world_box_bounds(v->world, i, &bmin, &bmax) != PBF_OK) continue;
        float blo[3] = {bmin.x, bmin.y, bmin.z}, bhi[3] = {bmax.x, bmax.y, bmax.z};
        push_box(v, &n, blo, bhi);
    }
    *vertices = (int)n;
}

/* The overlay's frame rate and solver time per step, measured over a window of wall time that
 * starts with the first frame: updated every frame until the window spans a second (so a short
 * run, or a screenshot after frame N, shows the rate measured over the frames drawn so far),
 * then once a second over the last second. `now` is the time the current frame began; the
 * frames counted are those drawn before it. Nothing measured yet: negative (shown as "-"). */
static void measure(viewer *v, double now) {
    double span = now - v->window_start;
    if (!(span > 0)) return;
    int whole = span >= 1.0;
    if (!v->window_full || whole) {
        if (v->window_frames > 0) v->fps_shown = v->window_frames / span;
        if (v->window_steps > 0)
            v->ms_per_step_shown = 1000.0 * v->window_step_seconds / (double)v->window_steps;
    }
    if (whole) {
        v->window_full = 1;
        v->window_frames = 0;
        v->window_steps = 0;
        v->window_step_seconds = 0;
        v->window_start = now;
    }
}

static void overlay_text(const viewer *v, char *buf, size_t size) {
    /* Only characters of app/render/font5x9.h: letters, digits and signs (see there) */
    char fps[32], ms[32];
    if (v->fps_shown >= 0)
        snprintf(fps, sizeof fps, "%.1f", v->fps_shown);
    else
        snprintf(fps, sizeof fps, "-");
    if (v->ms_per_step_shown >= 0)
        snprintf(ms, sizeof ms, "%.2f", v->ms_per_step_shown);
    else
        snprintf(ms, sizeof ms, "-");
    snprintf(buf, size,
             "%s: %d particles\n"
             "%s fps   %s ms/step   t = %.3f s\n"
             "density error avg %.2f%% max %.2f%%\n"
             "%s%s%s%s\n"
             "H: help",
             v->scene.name, v->stats.particles, fps, ms, v->stats.time, v->stats.density_error_avg,
             v->stats.density_error_max, v->fluid ? "fluid surface" : "spheres, colour: ",
             v->fluid ? "" : pbf_color_field_name(v->field), v->paused ? "   PAUSED" : "",
             v->failed ? "   STOPPED (R: reset)" : "");
}

/* Reads the back buffer (rows bottom to top) into an image (rows top to bottom) and writes it as
 * PNG with the headless renderer's writer. */
static int screenshot(GLFWwindow *w, const char *path) {
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(w, &fw, &fh);
    pbfapp_image img;
    pbf_error err;
    memset(&img, 0, sizeof img);
    memset(&err, 0, sizeof err);
    if (pbfapp_image_init(&img, fw, fh, &err) != PBF_OK) {
        fprintf(stderr, "pbf view: screenshot: %s\n", err.message);
        return 0;
    }
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    for (int y = 0; y < fh; ++y)
        glReadPixels(0, fh - 1 - y, fw, 1, GL_RGB, GL_UNSIGNED_BYTE, img.rgb + (size_t)y * fw * 3);
    int ok = 1;
    if (glGetError() != GL_NO_ERROR) {
        fprintf(stderr, "pbf view: screenshot: glReadPixels failed\n");
        ok = 0;
    } else if (pbfapp_write_png(path, &img, &err) != PBF_OK) {
        fprintf(stderr, "pbf view: %s\n", err.message);
        ok = 0;
    }
    pbfapp_image_free(&img);
    return ok;
}

/* ---- main --------------------------------------------------------------------------------- */

static char glfw_message[512];

static void on_glfw_error(int code, const char *description) {
    snprintf(glfw_message, sizeof glfw_message, "%s (GLFW error 0x%x)", description, code);
}

/* Opens the window and the OpenGL 3.3 core context; prints why not and returns NULL. */
static GLFWwindow *open_window(const view_options *o, const char *title) {
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit()) {
        fprintf(stderr,
                "pbf view: cannot open a window: %s; is there a display? (DISPLAY is %s; "
                "without a screen run it under xvfb-run)\n",
                glfw_message[0] ? glfw_message : "GLFW could not start",
                getenv("DISPLAY") ? getenv("DISPLAY") : "not set");
        return NULL;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_DEPTH_BITS, 24);
    glfwWindowHint(GLFW_SAMPLES, 0);
    glfw_message[0] = '\0';
    GLFWwindow *w = glfwCreateWindow(o->width, o->height, title, NULL, NULL);
    if (!w) {
        fprintf(stderr,
                "pbf view: cannot create a %dx%d window with an OpenGL 3.3 core context: %s\n",
                o->width, o->height, glfw_message[0] ? glfw_message : "unknown reason");
        glfwTerminate();
        return NULL;
    }
    glfwMakeContextCurrent(w);
    int version = epoxy_gl_version();
    if (version < 33 || epoxy_is_desktop_gl() == 0) {
        fprintf(stderr, "pbf view: OpenGL 3.3 is not available (the context is %s %d.%d)\n",
                epoxy_is_desktop_gl() ? "OpenGL" : "OpenGL ES", version / 10, version % 10);
        glfwDestroyWindow(w);
        glfwTerminate();
        return NULL;
    }
    return w;
}

static int run_viewer(viewer *v) {
    const view_options *o = v->opt;
    const int fixed = o->frames >= 0;
    if (fixed) frame_driver_init(v);
    char title[300];
    snprintf(title, sizeof title, "pbf view: %.200s", v->scene.name);
    v->window = open_window(o, title);
    if (!v->window) return EXIT_RUNTIME;
    glfwSetWindowUserPointer(v->window, v);
    glfwSetKeyCallback(v->window, on_key);
    glfwSetMouseButtonCallback(v->window, on_mouse_button);
    glfwSetCursorPosCallback(v->window, on_cursor);
    glfwSetScrollCallback(v->window, on_scroll);
    glfwSwapInterval(fixed ? 0 : 1);

    char msg[1200];
    if (pbfview_renderer_create(&v->renderer, msg, sizeof msg) != 0) {
        fprintf(stderr, "pbf view: %s\n", msg);
        return EXIT_RUNTIME;
    }
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(v->window, &fw, &fh);
    home_camera(v, fh > 0 ? (float)fw / (float)fh : 16.0f / 9.0f);

    const pbf_world_def *d = &v->scene.def;
    const pbf_vec3 lo = d->domain_min, hi = d->domain_max;
    float ext[3] = {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z};
    v->diag = len3(ext);
    const float light[3] = {0.35f, 1.0f, 0.55f};
    const float vmax = pbfapp_render_vmax(d);

    printf("pbf view: %s: %s%s%d particles on %s, %d substeps of %.4g ms per frame at %g fps; "
           "press H for the controls\n",
           v->scene.path, v->scene.name, v->scene.name[0] ? ": " : "", v->stats.particles,
           v->scene.def.device[0] ? v->scene.def.device : "cpu", v->scene.run.substeps,
           1000.0 * (double)v->dt, (double)v->scene.run.fps);
    fflush(stdout);

    int rc = 0;
    long frame = 0;
    const double start = pbfapp_now();
    double prev = start;
    v->window_start = start;
    char text[512];
    while (!glfwWindowShouldClose(v->window)) {
        double now = pbfapp_now();
        double wall_dt = now - prev;
        prev = now;
        if (fixed) {
            if (frame > 0) simulate(v, wall_dt, frame);
            if (v->failed) {
                rc = EXIT_RUNTIME;
                break;
            }
        } else {
            simulate(v, wall_dt, 0);
            fly(v, wall_dt);
        }
        if (frame > 0) ++v->window_frames; /* the frame before this one was drawn */
        measure(v, now);

        glfwGetFramebufferSize(v->window, &fw, &fh);
        pbfview_frame f;
        memset(&f, 0, sizeof f);
        f.width = fw;
        f.height = fh;
        float aspect = fh > 0 ? (float)fw / (float)fh : 1.0f;
        float eye_to_target = 0;
        for (int a = 0; a < 3; ++a) {
            float c = 0.5f * ((&lo.x)[a] + (&hi.x)[a]) - v->camera.position[a];
            eye_to_target += c * c;
        }
        float znear = 0.002f * v->diag;
        float zfar = 2.0f * (sqrtf(eye_to_target) + v->diag);
        pbf_camera_matrices(&v->camera, aspect, znear, zfar, f.view, f.proj);
        pbf_particles particles = pbf_world_particles(v->world);
        f.particles = &particles;
        f.particles_version = v->version;
        f.radius = d->particle_radius;
        if (o->has_range && (int)v->field == o->field)
            memcpy(f.range, o->range, sizeof f.range);
        else
            pbf_color_default_range(v->field, d->rest_density, vmax, f.range);
        f.field = v->field;
        f.fluid = v->fluid && !v->fluid_failed;
        int nv = 0, nc = 0;
        if (v->show_boxes) build_lines(v, &nv, &nc);
        f.lines = v->lines;
        f.line_vertices = nv;
        f.container_vertices = nc;
        f.light_dir = light;
        overlay_text(v, text, sizeof text);
        f.overlay = text;
        if (pbfview_renderer_draw(v->renderer, &f, msg, sizeof msg) != 0) {
            fprintf(stderr, "pbf view: %s\n", msg);
            v->fluid_failed = 1;
        }

        if (fixed && frame >= o->frames) {
            if (o->screenshot) {
                if (screenshot(v->window, o->screenshot))
                    printf("pbf view: wrote %s (%dx%d, t = %.4f s)\n", o->screenshot, fw, fh,
                           v->stats.time);
                else
                    rc = EXIT_RUNTIME;
            }
            ++frame;
            break;
        }
        glfwSwapBuffers(v->window);
        /* Wait for the GPU (with a software rasteriser: its threads) before the solver's OpenMP
         * threads start, so the two never compete for the cores. */
        glFinish();
        glfwPollEvents();
        ++frame;
    }
    double elapsed = pbfapp_now() - start;
    double sim_s = v->step_seconds_total;
    printf("pbf view: %ld frames drawn in %.2f s: %.1f fps (%dx%d, %s, %d particles); "
           "%.2f ms/frame outside the solver; solver %.3f ms/step over %lld steps\n",
           frame, elapsed, elapsed > 0 ? (double)frame / elapsed : 0.0, fw, fh,
           v->fluid && !v->fluid_failed ? "fluid surface" : "spheres", v->stats.particles,
           frame > 0 ? 1000.0 * (elapsed - sim_s) / (double)frame : 0.0,
           v->steps_total > 0 ? 1000.0 * sim_s / (double)v->steps_total : 0.0,
           (long long)v->steps_total);
    return rc;
}

int pbfview_main(int argc, char **argv, const char *default_scene) {
    view_options opt;
    memset(&opt, 0, sizeof opt);
    int rc = parse_options(argc, argv, &opt, default_scene);
    if (rc >= 0) {
        free_options(&opt);
        return rc;
    }
    prefer_passive_openmp();
    viewer v;
    memset(&v, 0, sizeof v);
    v.opt = &opt;
    v.field = (pbf_color_field)opt.field;
    v.fluid = opt.fluid;
    v.show_boxes = 1;
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_status st = pbfapp_scene_load(opt.scene, opt.overrides, opt.override_count, &v.scene, &err);
    if (st == PBF_OK) st = pbfapp_scene_create_world(&v.scene, &v.world, &err);
    if (st == PBF_OK && opt.checkpoint) {
        /* the same checks as `pbf run --resume`: a damaged file or another scene's particle
         * count is refused with the file's name */
        pbfapp_checkpoint ck;
        st = pbfapp_checkpoint_read(opt.checkpoint, &ck, &err);
        if (st == PBF_OK) {
            st = pbf_world_restore(v.world, &ck.snapshot, &err);
            pbfapp_checkpoint_free(&ck);
        }
        if (st != PBF_OK) {
            char why[sizeof err.message];
            memcpy(why, err.message, sizeof why);
            snprintf(err.message, sizeof err.message, "--checkpoint %.200s: %.280s", opt.checkpoint,
                     why);
            if (st != PBF_ERR_OUT_OF_MEMORY) st = PBF_ERR_INVALID_ARGUMENT;
        }
    }
    if (st != PBF_OK) {
        fprintf(stderr, "pbf view: %s\n", err.message);
        pbf_world_destroy(v.world); /* NULL unless the checkpoint was refused */
        pbfapp_scene_free(&v.scene);
        free_options(&opt);
        return st == PBF_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE;
    }
    v.dt = (float)(1.0 / ((double)v.scene.run.fps * (double)v.scene.run.substeps));
    v.fps_shown = -1;
    v.ms_per_step_shown = -1;
    refresh_stats(&v);
    /* The camera options against the scene's camera (or the default one), before any window. */
    {
        const pbf_world_def *d = &v.scene.def;
        float lo[3] = {d->domain_min.x, d->domain_min.y, d->domain_min.z};
        float hi[3] = {d->domain_max.x, d->domain_max.y, d->domain_max.z};
        pbf_camera c = v.scene.has_camera
                           ? v.scene.camera
                           : pbf_camera_default(lo, hi, (float)opt.width / (float)opt.height);
        pbf_camera_apply(&c, &opt.camera);
        char why[300];
        if (!pbf_camera_check(&c, why, sizeof why)) {
            fprintf(stderr, "pbf view: %s (see `pbf view --help`)\n", why);
            pbf_world_destroy(v.world);
            pbfapp_scene_free(&v.scene);
            free_options(&opt);
            return EXIT_USAGE;
        }
    }

    rc = run_viewer(&v);

    if (v.window) pbfview_renderer_destroy(v.renderer);
    free(v.lines);
    pbf_world_destroy(v.world);
    pbfapp_scene_free(&v.scene);
    free_options(&opt);
    GLFWwindow *window = v.window;
    memset(&v, 0, sizeof v); /* no stale pointers left to hide a leak */
    memset(&opt, 0, sizeof opt);
#if PBFVIEW_ASAN
    /* Check for leaks now, while the OpenGL driver is loaded: glfwTerminate unloads it, and what
     * it keeps until then would be reported from an unknown module that no suppression can name.
     * Leaks of our own code are all freed above; later checks are no-ops. */
    __lsan_do_leak_check();
#endif
    if (window) {
        glfwDestroyWindow(window);
        glfwTerminate();
    }
    return rc;
}
