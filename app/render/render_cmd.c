/* Rendering of runs: options, PNG frames, the ffmpeg pipe and `pbf render` (see render_cmd.h). */
#define _POSIX_C_SOURCE 200809L

#include "render/render_cmd.h"
#include "io/util.h"

#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/frame_files.h"
#include "io/frame_read.h"
#include "render/mesh.h"
#include "io/output.h"
#include "run/jobs.h"
#include "run/progress.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2


static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- options ------------------------------------------------------------------------------ */

void pbfapp_render_options_default(pbfapp_render_options *o) {
    memset(o, 0, sizeof *o);
    o->color = PBF_COLOR_WATER;
    o->width = 1280;
    o->height = 720;
}


static int usage(int *rc, const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int usage(int *rc, const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("pbf: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see `pbf %s --help`)\n", cmd);
    *rc = EXIT_USAGE;
    return 1;
}

/* The containers --video writes (H.264, yuv420p): ffmpeg picks one by the file name's end. */
static const char *const video_containers[] = {".mp4", ".m4v", ".mov", ".mkv"};

static int video_container_ok(const char *path) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash + 2) || dot == path) return 0;
    for (size_t k = 0; k < sizeof video_containers / sizeof video_containers[0]; ++k) {
        const char *c = video_containers[k];
        size_t i = 0;
        while (c[i] && dot[i] && (dot[i] | 0x20) == c[i]) ++i; /* case-insensitive: .MP4 */
        if (!c[i] && !dot[i]) return 1;
    }
    return 0;
}

static int parse_size(const char *s, int *w, int *h) {
    char *end = NULL;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X') || errno) return 0;
    const char *s2 = end + 1;
    long b = strtol(s2, &end, 10);
    if (end == s2 || *end != '\0' || errno) return 0;
    if (a < PBFAPP_IMAGE_MIN_SIZE || b < PBFAPP_IMAGE_MIN_SIZE || a > PBFAPP_IMAGE_MAX_SIZE ||
        b > PBFAPP_IMAGE_MAX_SIZE)
        return 0;
    *w = (int)a;
    *h = (int)b;
    return 1;
}

int pbfapp_render_parse_option(int argc, char **argv, int *i, pbfapp_render_options *o,
                               int with_render, const char *cmd, int *rc) {
    const char *arg = argv[*i];
    const char *value = NULL;
    int m;
    if (with_render && strcmp(arg, "--render") == 0) {
        o->png = 1;
        return 1;
    }
    if (strcmp(arg, "--surface") == 0) {
        o->surface = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--surface-set", &value)) != 0) {
        if (m < 0 || !strchr(value, '=') || value[0] == '=')
            return usage(rc, cmd,
                         "--surface-set needs KEY=VALUE, a surface parameter of `pbf mesh "
                         "--help`, e.g. --surface-set iso_level=0.6");
        if (o->nsurface_sets >= (int)(sizeof o->surface_sets / sizeof o->surface_sets[0]))
            return usage(rc, cmd, "--surface-set: at most %d settings",
                         (int)(sizeof o->surface_sets / sizeof o->surface_sets[0]));
        o->surface_sets[o->nsurface_sets++] = value;
        o->surface = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--color", &value)) != 0) {
        if (m < 0) return usage(rc, cmd, "--color needs a value (water, density or speed)");
        int f = pbf_color_field_from_name(value);
        if (f < 0)
            return usage(rc, cmd, "--color: unknown field \"%s\"; choose water, density or speed",
                         value);
        o->color = (pbf_color_field)f;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--size", &value)) != 0) {
        if (m < 0) return usage(rc, cmd, "--size needs a value (WxH, e.g. 1280x720)");
        if (!parse_size(value, &o->width, &o->height))
            return usage(rc, cmd,
                         "--size: \"%s\" is not WxH with width and height in [%d, %d], e.g. "
                         "1280x720",
                         value, PBFAPP_IMAGE_MIN_SIZE, PBFAPP_IMAGE_MAX_SIZE);
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--range", &value)) != 0) {
        if (m < 0) return usage(rc, cmd, "--range needs a value (auto or MIN:MAX, e.g. 0:2)");
        if (strcmp(value, "auto") == 0) {
            if (with_render)
                return usage(rc, cmd,
                             "--range auto needs the whole series of frames: render it "
                             "afterwards with `pbf render DIR --range auto`, or give --range "
                             "MIN:MAX here");
            o->range_mode = PBFAPP_RANGE_AUTO;
            return 1;
        }
        if (!pbf_color_parse_range(value, o->range))
            return usage(rc, cmd,
                         "--range: \"%s\" is not auto or MIN:MAX with MIN < MAX (in kg/m^3 for "
                         "--color density, m/s for speed and water), e.g. --range 0:2",
                         value);
        o->range_mode = PBFAPP_RANGE_GIVEN;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--camera-pos", &value)) != 0) {
        if (m < 0) return usage(rc, cmd, "--camera-pos needs a value (X,Y,Z in m, e.g. 2,1.5,3)");
        if (!pbf_camera_parse_vec3(value, o->camera.position))
            return usage(rc, cmd,
                         "--camera-pos: \"%s\" is not X,Y,Z (three numbers in m, each within "
                         "+-1e6, separated by commas), e.g. 2,1.5,3",
                         value);
        o->camera.has_position = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--camera-target", &value)) != 0) {
        if (m < 0)
            return usage(rc, cmd, "--camera-target needs a value (X,Y,Z in m, e.g. 0.8,0.2,0.3)");
        if (!pbf_camera_parse_vec3(value, o->camera.target))
            return usage(rc, cmd,
                         "--camera-target: \"%s\" is not X,Y,Z (three numbers in m, each within "
                         "+-1e6, separated by commas), e.g. 0.8,0.2,0.3",
                         value);
        o->camera.has_target = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--fov", &value)) != 0) {
        if (m < 0) return usage(rc, cmd, "--fov needs a value (degrees, e.g. 40)");
        if (!pbf_camera_parse_fov(value, &o->camera.fov_deg))
            return usage(rc, cmd,
                         "--fov: \"%s\" is not a vertical field of view in (1, 170) degrees",
                         value);
        o->camera.has_fov = 1;
        return 1;
    }
    if ((m = pbfapp_option_value(argc, argv, i, "--video", &value)) != 0) {
        if (m < 0) return usage(rc, cmd, "--video needs a value (FILE.mp4)");
        if (!value[0]) return usage(rc, cmd, "--video: the file name is empty");
        size_t n = strlen(value);
        if (value[n - 1] == '/') return usage(rc, cmd, "--video: \"%s\" is a directory", value);
        if (!video_container_ok(value)) {
            const char *slash = strrchr(value, '/'), *dot = strrchr(value, '.');
            int has_ext = dot && (!slash || dot > slash + 1) && dot != value && dot[1];
            return usage(rc, cmd,
                         "--video %s: %s%s%s; the video is H.264, in a container that ffmpeg "
                         "picks by the name's end: " PBFAPP_VIDEO_CONTAINERS,
                         value, has_ext ? "the container " : "no container",
                         has_ext ? dot : " (the name has no extension)",
                         has_ext ? " is not supported" : "");
        }
        o->video = value;
        return 1;
    }
    return 0;
}

/* Full path of an executable on PATH, or 0. */
static int find_on_path(const char *name, char *out, size_t size) {
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int n = len ? snprintf(out, size, "%.*s/%s", (int)len, p, name)
                    : snprintf(out, size, "./%s", name);
        struct stat sb;
        if (n > 0 && (size_t)n < size && stat(out, &sb) == 0 && S_ISREG(sb.st_mode) &&
            access(out, X_OK) == 0)
            return 1;
        if (!colon) break;
        p = colon + 1;
    }
    return 0;
}

pbf_status pbfapp_render_check(const pbfapp_render_options *o, pbf_error *err) {
    if (o->camera.has_position && o->camera.has_target &&
        memcmp(o->camera.position, o->camera.target, sizeof o->camera.position) == 0)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "--camera-pos and --camera-target are the same point (%g, %g, %g): "
                           "the camera needs a direction to look in",
                           (double)o->camera.position[0], (double)o->camera.position[1],
                           (double)o->camera.position[2]);
    if (!o->video) return PBF_OK;
    if (o->width % 2 || o->height % 2)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "--video: the size %dx%d must have an even width and height (H.264 with "
                    "yuv420p); use e.g. --size %dx%d",
                    o->width, o->height, o->width + o->width % 2, o->height + o->height % 2);
    char path[4096];
    if (!find_on_path("ffmpeg", path, sizeof path))
        return pbfapp_fail(err, PBF_ERR_IO,
                    "--video %s: ffmpeg was not found on PATH; install it (Debian: apt-get install "
                    "ffmpeg) or write PNG frames with --render",
                    o->video);
    return PBF_OK;
}

void pbfapp_render_print_options(FILE *f, int with_render) {
    if (with_render)
        fprintf(f,
                "  --render            also write frame_00000.png ... (images of the particles)\n"
                "                      beside the data frames\n");
    fprintf(f, "  --video FILE        encode the frames as an H.264 video FILE (e.g. out/run.mp4)\n"
               "                      with ffmpeg, at the scene's fps; no PNG needed on disk;\n"
               "                      containers: " PBFAPP_VIDEO_CONTAINERS "\n"
               "  --color F           colour of the particles: water (default; deep blue, lighter\n"
               "                      when fast), density ([0.9, 1.1] x rest_density, viridis) or\n"
               "                      speed ([0, sqrt(2 g H)] m/s, H = domain height, turbo)\n"
               "  --range MIN:MAX     the values of the --color quantity at the two ends of the\n"
               "                      ramp (kg/m^3 for density, m/s for speed and water) instead\n"
               "                      of the default ranges above\n");
    if (!with_render)
        fprintf(f, "  --range auto        a range that follows the data: the 1st to 99th percentile\n"
                   "                      of the quantity over the frames (up to 16 of them, evenly\n"
                   "                      spaced), the same for every frame so colours do not flicker\n");
    fprintf(f, "  --surface           draw the liquid's surface as water instead of the particles:\n"
               "                      its mesh lit by a sun, reflecting a sky by Schlick's\n"
               "                      Fresnel term, tinted by the thickness of water the light\n"
               "                      crosses, %dx%d samples per pixel (--color and --range\n"
               "                      do not apply).\n",
            PBFAPP_SURFACE_SUPERSAMPLE, PBFAPP_SURFACE_SUPERSAMPLE);
    if (with_render)
        fprintf(f, "                      With --render or --video: each frame's mesh is\n"
                   "                      reconstructed from the particles.\n");
    else
        fprintf(f, "                      The meshes are DIR/mesh_NNNNN.ply or .obj (`pbf mesh`,\n"
                   "                      `pbf run --mesh`); frames without one are reconstructed\n"
                   "                      from the particles.\n");
    fprintf(f, "  --surface-set KEY=VALUE\n"
               "                      a surface parameter of `pbf mesh --help` for meshes\n"
               "                      reconstructed here (implies --surface)\n");
    fprintf(f, "  --camera-pos X,Y,Z  the camera's position, m (default: the scene's \"camera\",\n"
               "                      else a view of the container from the front-right, above)\n"
               "  --camera-target X,Y,Z\n"
               "                      the point the camera looks at, m (the image centre)\n"
               "  --fov DEG           the camera's vertical field of view, degrees, in (1, 170)\n"
               "  --size WxH          image size in pixels (default 1280x720)\n");
}

void pbfapp_render_print_help(FILE *f) {
    fprintf(f, "usage: pbf render DIR [options]\n"
               "\n"
               "Renders the frames that `pbf run --out DIR` wrote (frame_NNNNN.vtp, .ply, .csv, .geo\n"
               "or .bgeo; .pvtp: a run under MPI with mpi_output = pieces) into frame_NNNNN.png\n"
               "beside them, or into a video with --video. The\n"
               "container, obstacles, moving walls and camera come from DIR/scene.json, which\n"
               "`pbf run` writes (the scene as it ran); the camera is the scene's \"camera\" object\n"
               "or a default view of the container from the front-right, above; --camera-pos,\n"
               "--camera-target and --fov replace its parts.\n"
               "\n"
               "options:\n");
    pbfapp_render_print_options(f, 0);
    fprintf(f, "  --out DIR2          write the PNG files to DIR2 instead of DIR\n"
               "  --png               with --video, also write the PNG files\n"
               "  --scene FILE        the scene to take the container and camera from (default\n"
               "                      DIR/scene.json)\n"
               "  --frames A:B        only frames A to B (inclusive; either may be left out)\n"
               "  -q, --quiet         no progress bar and no summary, only errors\n"
               "  -h, --help          this help\n"
               "\n"
               "On a terminal a progress bar with the time left is drawn on stderr (not with -q,\n"
               "nor when stderr is not a terminal).\n"
               "Images are deterministic: the same frame gives the same PNG bytes, from `pbf run\n"
               "--render` or from `pbf render`.\n"
               "exit status: 0 success, 2 usage or scene error, a frame file it refuses\n"
               "(truncated, malformed) or an output directory it cannot use, 1 runtime error\n"
               "(I/O, ffmpeg)\n");
}

/* ---- the renderer ------------------------------------------------------------------------- */

struct pbfapp_renderer {
    pbfapp_render_options opt;
    pbfapp_render_input in;
    char *png_dir;
    char *title;
    pbfapp_image img;
    uint32_t *order;
    size_t order_cap;
    pbfapp_render_box *boxes; /* for pbfapp_renderer_world_frame */
    int box_cap;
    int frames;
    double render_s, write_s;
    /* --surface */
    const pbf_mesh *next_mesh;  /* pbfapp_renderer_set_mesh */
    pbf_surface *surface;       /* reconstruction when no mesh is given */
    float *sx, *sy, *sz;        /* positions in id order for it */
    size_t s_cap;
    double surface_s;           /* time spent reconstructing */
    int meshes_given, meshes_made;
    /* video */
    pid_t pid;
    FILE *pipe;
    char *video_tmp;
    struct sigaction old_pipe;
    int pipe_handler_set;
    int video_failed;
};

void pbfapp_world_render_boxes(const pbf_world *w, pbfapp_render_box *boxes) {
    int n = pbf_world_box_count(w);
    for (int b = 0; b < n; ++b) {
        pbf_vec3 lo, hi;
        pbf_world_box_bounds(w, b, &lo, &hi);
        boxes[b].min[0] = lo.x;
        boxes[b].min[1] = lo.y;
        boxes[b].min[2] = lo.z;
        boxes[b].max[0] = hi.x;
        boxes[b].max[1] = hi.y;
        boxes[b].max[2] = hi.z;
    }
}

/* mkdir -p of the directory part of `file`; refused as pbfapp_output_dir_make refuses. */
static pbf_status make_parent_dirs(const char *file, pbf_error *err) {
    char *buf = dup_string(file);
    if (!buf) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory");
    char *slash = strrchr(buf, '/');
    pbf_status st = PBF_OK;
    if (slash && slash != buf) {
        *slash = '\0';
        pbf_error e;
        memset(&e, 0, sizeof e);
        st = pbfapp_output_dir_make(buf, &e);
        if (st != PBF_OK) pbfapp_fail(err, st, "--video %s: %s", file, e.message);
    }
    free(buf);
    return st;
}

/* "dir/name.ext" -> "dir/name.tmp.ext" (ffmpeg picks the container from the extension). */
static char *video_tmp_name(const char *path) {
    size_t n = strlen(path);
    char *out = malloc(n + 8);
    if (!out) return NULL;
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) {
        snprintf(out, n + 8, "%s.tmp", path);
    } else {
        size_t stem = (size_t)(dot - path);
        snprintf(out, n + 8, "%.*s.tmp%s", (int)stem, path, dot);
    }
    return out;
}

static pbf_status video_start(pbfapp_renderer *r, float fps, pbf_error *err) {
    const char *path = r->opt.video;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "--video %s: is a directory", path);
    pbf_status st = make_parent_dirs(path, err);
    if (st != PBF_OK) return st;
    char ffmpeg[4096];
    if (!find_on_path("ffmpeg", ffmpeg, sizeof ffmpeg))
        return pbfapp_fail(err, PBF_ERR_IO, "--video %s: ffmpeg was not found on PATH", path);
    r->video_tmp = video_tmp_name(path);
    if (!r->video_tmp) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory");
    char size[64], rate[64];
    snprintf(size, sizeof size, "%dx%d", r->opt.width, r->opt.height);
    snprintf(rate, sizeof rate, "%.9g", (double)fps);
    char *argv[] = {ffmpeg,     "-hide_banner", "-loglevel",  "error",      "-y",      "-f",
                    "rawvideo", "-pix_fmt",     "rgb24",      "-s",         size,      "-r",
                    rate,       "-i",           "-",          "-c:v",       "libx264", "-pix_fmt",
                    "yuv420p",  "-movflags",    "+faststart", r->video_tmp, NULL};
    int fds[2];
    if (pipe(fds) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "--video %s: cannot create a pipe: %s", path, strerror(errno));
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    /* Its own process group: Ctrl-C stops pbf (which finishes the frame and closes the video
     * properly), not ffmpeg in the middle of it; and it ends with pbf, even a killed one. */
    int e = 0;
    r->pid = pbfapp_job_exec(ffmpeg, argv, fds[0], &e);
    close(fds[0]);
    if (r->pid < 0) {
        close(fds[1]);
        r->pid = 0;
        return pbfapp_fail(err, PBF_ERR_IO, "--video %s: cannot start %s: %s", path, ffmpeg, strerror(e));
    }
    r->pipe = fdopen(fds[1], "wb");
    if (!r->pipe) {
        close(fds[1]);
        return pbfapp_fail(err, PBF_ERR_IO, "--video %s: fdopen failed: %s", path, strerror(errno));
    }
    /* A dead ffmpeg must give a write error, not kill pbf with SIGPIPE. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGPIPE, &ign, &r->old_pipe) == 0) r->pipe_handler_set = 1;
    return PBF_OK;
}

/* Closes the pipe and waits for ffmpeg; renames the video on success. */
static pbf_status video_finish(pbfapp_renderer *r, pbf_error *err) {
    pbf_status st = PBF_OK;
    if (r->pipe) {
        if (fclose(r->pipe) != 0) r->video_failed = 1;
        r->pipe = NULL;
    }
    if (r->pid > 0) {
        int status = 0;
        pid_t w = pbfapp_job_wait(r->pid, &status);
        r->pid = 0;
        if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            char how[64];
            if (w >= 0 && WIFEXITED(status))
                snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
            else if (w >= 0 && WIFSIGNALED(status))
                snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
            else
                snprintf(how, sizeof how, "unknown status");
            st = pbfapp_fail(err, PBF_ERR_IO, "--video %s: ffmpeg failed (%s); its messages are above",
                      r->opt.video, how);
        } else if (r->video_failed) {
            st = pbfapp_fail(err, PBF_ERR_IO, "--video %s: writing frames to ffmpeg failed", r->opt.video);
        }
    }
    if (r->video_tmp) {
        if (st == PBF_OK && rename(r->video_tmp, r->opt.video) != 0)
            st = pbfapp_fail(err, PBF_ERR_IO, "--video %s: cannot rename %s to it: %s", r->opt.video,
                      r->video_tmp, strerror(errno));
        if (st != PBF_OK) unlink(r->video_tmp);
        free(r->video_tmp);
        r->video_tmp = NULL;
    }
    if (r->pipe_handler_set) {
        sigaction(SIGPIPE, &r->old_pipe, NULL);
        r->pipe_handler_set = 0;
    }
    return st;
}

pbf_status pbfapp_renderer_open(const pbfapp_render_options *o, const pbfapp_scene *scene,
                                const char *png_dir, pbfapp_renderer **out, pbf_error *err) {
    *out = NULL;
    pbfapp_renderer *r = calloc(1, sizeof *r);
    if (!r) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory");
    r->opt = *o;
    r->png_dir = dup_string(png_dir ? png_dir : ".");
    r->title = dup_string(scene->name ? scene->name : "");
    if (!r->png_dir || !r->title) {
        pbfapp_renderer_close(r, NULL);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t len = strlen(r->png_dir);
    while (len > 1 && r->png_dir[len - 1] == '/') r->png_dir[--len] = '\0';
    pbf_status st = pbfapp_image_init(&r->img, o->width, o->height, err);
    if (st != PBF_OK) {
        pbfapp_renderer_close(r, NULL);
        return st;
    }
    pbfapp_render_input *in = &r->in;
    const pbf_world_def *def = &scene->def;
    in->radius = def->particle_radius;
    in->domain_min[0] = def->domain_min.x;
    in->domain_min[1] = def->domain_min.y;
    in->domain_min[2] = def->domain_min.z;
    in->domain_max[0] = def->domain_max.x;
    in->domain_max[1] = def->domain_max.y;
    in->domain_max[2] = def->domain_max.z;
    in->color = o->color;
    in->rest_density = def->rest_density;
    if (o->range_mode == PBFAPP_RANGE_GIVEN) {
        in->range[0] = o->range[0];
        in->range[1] = o->range[1];
    } else {
        pbf_color_default_range(o->color, def->rest_density, pbfapp_render_vmax(def), in->range);
    }
    in->title = r->title;
    if (o->surface) {
        pbfapp_mesh_options mo;
        pbfapp_mesh_options_default(&mo);
        mo.nsets = o->nsurface_sets;
        for (int k = 0; k < o->nsurface_sets; ++k) mo.sets[k] = o->surface_sets[k];
        pbf_surface_params sp;
        pbf_error e2;
        st = pbfapp_mesh_params(scene, &mo, &sp, &e2);
        if (st == PBF_OK) st = pbf_surface_create(&sp, &r->surface, &e2);
        if (st != PBF_OK) {
            pbfapp_renderer_close(r, NULL);
            return pbfapp_fail(err, st, "--surface-set: %s", e2.message);
        }
    }
    in->camera = scene->has_camera ? scene->camera
                                   : pbf_camera_default(in->domain_min, in->domain_max,
                                                        (float)o->width / (float)o->height);
    pbf_camera_apply(&in->camera, &o->camera);
    char why[300];
    if (!pbf_camera_check(&in->camera, why, sizeof why)) {
        pbfapp_renderer_close(r, NULL);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s", why);
    }
    if (o->png) { /* the images' directory: made, or refused (before ffmpeg starts) */
        st = pbfapp_output_dir_make(r->png_dir, err);
        if (st != PBF_OK) {
            pbfapp_renderer_close(r, NULL);
            return st;
        }
    }
    if (o->video) {
        st = video_start(r, scene->run.fps, err);
        if (st != PBF_OK) {
            pbf_error ignored;
            video_finish(r, &ignored);
            pbfapp_renderer_close(r, NULL);
            return st;
        }
    }
    *out = r;
    return PBF_OK;
}

void pbfapp_renderer_set_mesh(pbfapp_renderer *r, const pbf_mesh *mesh) {
    r->next_mesh = mesh;
}

/* The surface of the frame's particles, taken in id order (so the same frame gives the same
 * mesh from a run's memory and from its frame file). */
static pbf_status reconstruct(pbfapp_renderer *r, const pbf_particles *p, pbf_mesh *mesh,
                              pbf_error *err) {
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    if (n > r->s_cap) {
        free(r->sx);
        free(r->sy);
        free(r->sz);
        r->sx = malloc(n * sizeof *r->sx);
        r->sy = malloc(n * sizeof *r->sy);
        r->sz = malloc(n * sizeof *r->sz);
        r->s_cap = r->sx && r->sy && r->sz ? n : 0;
        if (!r->s_cap)
            return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory for the surface");
    }
    for (size_t k = 0; k < n; ++k) {
        uint32_t i = r->order[k];
        r->sx[k] = p->x[i];
        r->sy[k] = p->y[i];
        r->sz[k] = p->z[i];
    }
    double t0 = pbfapp_now();
    pbf_status st = pbf_surface_reconstruct(r->surface, r->sx, r->sy, r->sz, (int)n, mesh, err);
    r->surface_s += pbfapp_now() - t0;
    ++r->meshes_made;
    return st;
}

pbf_status pbfapp_renderer_frame(pbfapp_renderer *r, int frame, double time, const pbf_particles *p,
                                 const pbfapp_render_box *boxes, int box_count, pbf_error *err) {
    size_t n = p->count > 0 ? (size_t)p->count : 0;
    if (n > r->order_cap) {
        uint32_t *grown = realloc(r->order, n * sizeof *grown);
        if (!grown) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory ordering particles");
        r->order = grown;
        r->order_cap = n;
    }
    pbf_status st = n ? pbfapp_id_order(p, r->order, err) : PBF_OK;
    if (st != PBF_OK) return st;
    pbf_mesh mesh;
    r->in.mesh = NULL;
    if (r->opt.surface) {
        if (r->next_mesh) {
            mesh = *r->next_mesh;
            ++r->meshes_given;
        } else {
            st = reconstruct(r, p, &mesh, err);
            if (st != PBF_OK) return st;
        }
        r->next_mesh = NULL;
        r->in.mesh = &mesh;
    }
    double t0 = pbfapp_now();
    pbfapp_render_input *in = &r->in;
    in->count = (int)n;
    in->x = p->x;
    in->y = p->y;
    in->z = p->z;
    in->vx = p->vx;
    in->vy = p->vy;
    in->vz = p->vz;
    in->density = p->density;
    in->order = r->order;
    in->boxes = boxes;
    in->box_count = box_count;
    in->time = time;
    st = pbfapp_render(in, &r->img, err);
    in->mesh = NULL;
    if (st != PBF_OK) return st;
    double t1 = pbfapp_now();
    if (r->opt.png) {
        char path[4200];
        snprintf(path, sizeof path, "%s/frame_%05d.png", r->png_dir, frame);
        st = pbfapp_write_png(path, &r->img, err);
        if (st != PBF_OK) return st;
    }
    if (r->pipe) {
        size_t bytes = (size_t)r->img.width * (size_t)r->img.height * 3;
        if (fwrite(r->img.rgb, 1, bytes, r->pipe) != bytes || fflush(r->pipe) != 0) {
            int e = errno;
            r->video_failed = 1;
            pbf_error ffmpeg_err;
            memset(&ffmpeg_err, 0, sizeof ffmpeg_err);
            pbf_status fst = video_finish(r, &ffmpeg_err);
            if (fst != PBF_OK) return pbfapp_fail(err, PBF_ERR_IO, "%s", ffmpeg_err.message);
            return pbfapp_fail(err, PBF_ERR_IO, "--video %s: writing to ffmpeg failed: %s", r->opt.video,
                        strerror(e));
        }
    }
    double t2 = pbfapp_now();
    r->render_s += t1 - t0;
    r->write_s += t2 - t1;
    ++r->frames;
    return PBF_OK;
}

pbf_status pbfapp_renderer_world_frame(pbfapp_renderer *r, const pbf_world *world, int frame,
                                       double time, pbf_error *err) {
    int nb = pbf_world_box_count(world);
    if (nb > r->box_cap) {
        pbfapp_render_box *g = realloc(r->boxes, (size_t)nb * sizeof *g);
        if (!g) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory");
        r->boxes = g;
        r->box_cap = nb;
    }
    if (nb > 0) pbfapp_world_render_boxes(world, r->boxes);
    pbf_particles p = pbf_world_particles(world);
    return pbfapp_renderer_frame(r, frame, time, &p, r->boxes, nb, err);
}

pbf_status pbfapp_renderer_close(pbfapp_renderer *r, pbf_error *err) {
    if (!r) return PBF_OK;
    pbf_status st = video_finish(r, err);
    if (st == PBF_OK && !r->opt.quiet && r->frames > 0) {
        char surf[160] = "";
        if (r->opt.surface && r->meshes_made > 0)
            snprintf(surf, sizeof surf, "; %d surface%s reconstructed (%.1f ms each)",
                     r->meshes_made, r->meshes_made == 1 ? "" : "s",
                     1000.0 * r->surface_s / r->meshes_made);
        printf("pbf: rendered %d frame%s at %dx%d (%s): %.1f ms/frame drawing, %.1f ms/frame "
               "writing%s%s%s%s%s%s\n",
               r->frames, r->frames == 1 ? "" : "s", r->img.width, r->img.height,
               r->opt.surface ? "surface" : pbf_color_field_name(r->opt.color),
               1000.0 * r->render_s / r->frames,
               1000.0 * r->write_s / r->frames, r->opt.png ? "; PNG files in " : "",
               r->opt.png ? r->png_dir : "", r->opt.png ? "/" : "", r->opt.video ? "; video " : "",
               r->opt.video ? r->opt.video : "", surf);
        fflush(stdout);
    }
    pbf_surface_destroy(r->surface);
    free(r->sx);
    free(r->sy);
    free(r->sz);
    pbfapp_image_free(&r->img);
    free(r->order);
    free(r->boxes);
    free(r->png_dir);
    free(r->title);
    free(r);
    return st;
}

/* ---- pbf render DIR ----------------------------------------------------------------------- */

/* --range auto: the percentiles of the colour quantity over up to AUTO_FRAMES frames evenly
 * spaced over the series (first and last included), at most AUTO_VALUES values from each. */
#define AUTO_FRAMES 16
#define AUTO_VALUES 65536

static pbf_status auto_range(const char *dir, const pbfapp_frame_file *frames, int nframes,
                             pbf_color_field color, float range[2], int *used, pbf_error *err) {
    int m = nframes < AUTO_FRAMES ? nframes : AUTO_FRAMES;
    float *values = malloc((size_t)m * AUTO_VALUES * sizeof *values);
    if (!values) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "--range auto: out of memory");
    size_t n = 0;
    pbfapp_frame_data data;
    memset(&data, 0, sizeof data);
    char path[4200];
    pbf_status st = PBF_OK;
    for (int k = 0; k < m && st == PBF_OK; ++k) {
        int f = m > 1 ? (int)(((long long)k * (nframes - 1) + (m - 1) / 2) / (m - 1)) : 0;
        snprintf(path, sizeof path, "%s/%s", dir, frames[f].name);
        st = pbfapp_read_frame(path, &data, err);
        if (st != PBF_OK) break;
        int count = data.count;
        int stride = count > AUTO_VALUES ? (count + AUTO_VALUES - 1) / AUTO_VALUES : 1;
        for (int i = 0; i < count; i += stride) {
            float speed = 0;
            if (data.vx && data.vy && data.vz)
                speed = sqrtf(data.vx[i] * data.vx[i] + data.vy[i] * data.vy[i] +
                              data.vz[i] * data.vz[i]);
            float rho = data.density ? data.density[i] : NAN;
            values[n++] = pbf_color_quantity(color, rho, speed);
        }
    }
    pbfapp_frame_data_free(&data);
    if (st == PBF_OK && !pbf_color_auto_range(values, n, range))
        st = pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                         "--range auto: the frames of %s/ hold no finite %s value; give --range "
                         "MIN:MAX",
                         dir, color == PBF_COLOR_DENSITY ? "density" : "speed");
    free(values);
    *used = m;
    return st;
}

/* --range auto: the range of the frames' colour quantity, said unless quiet. */
static pbf_status apply_auto_range(const char *dir, const pbfapp_frame_file *frames, int nframes,
                                   pbfapp_render_options *opt, pbf_error *err) {
    int used = 0;
    pbf_status st = auto_range(dir, frames, nframes, opt->color, opt->range, &used, err);
    if (st != PBF_OK) return st;
    opt->range_mode = PBFAPP_RANGE_GIVEN;
    if (!opt->quiet) {
        printf("pbf: --range auto: %s from %.6g to %.6g %s (the %g%% and %g%% percentiles "
               "over %d of the %d frames)\n",
               opt->color == PBF_COLOR_DENSITY ? "density" : "speed", (double)opt->range[0],
               (double)opt->range[1], opt->color == PBF_COLOR_DENSITY ? "kg/m^3" : "m/s",
               PBF_COLOR_AUTO_LO, PBF_COLOR_AUTO_HI, used, nframes);
        fflush(stdout);
    }
    return PBF_OK;
}

/* --surface: the run's mesh of frame `number` (DIR/mesh_NNNNN.ply, else .obj), when there is
 * one, handed to the renderer as *mesh (which the renderer keeps until the frame is drawn;
 * *meshes_read counts them). */
static pbf_status frame_mesh(pbfapp_renderer *r, const char *dir, int number,
                             pbfapp_mesh_data *mesh_data, pbf_mesh *mesh, int *meshes_read,
                             pbf_error *err) {
    char path[4200];
    struct stat mb;
    snprintf(path, sizeof path, "%s/mesh_%05d.ply", dir, number);
    if (stat(path, &mb) != 0) snprintf(path, sizeof path, "%s/mesh_%05d.obj", dir, number);
    if (stat(path, &mb) != 0) return PBF_OK;
    pbf_status st = pbfapp_read_mesh(path, mesh_data, err);
    if (st != PBF_OK) return st;
    *mesh = pbfapp_mesh_data_view(mesh_data);
    pbfapp_renderer_set_mesh(r, mesh);
    ++*meshes_read;
    return PBF_OK;
}

/* The command line of `pbf render`. */
typedef struct render_args {
    const char *dir, *out_dir, *scene_path, *range;
    int also_png;
} render_args;

/* Parses it into *a and *opt; -1 to go on, else the exit status. */
static int parse_render_args(int argc, char **argv, pbfapp_render_options *opt, render_args *a) {
    memset(a, 0, sizeof *a);
    int rc = -1;
    for (int i = 0; i < argc && rc < 0; ++i) {
        const char *arg = argv[i];
        const char *value = NULL;
        int m;
        if (arg[0] != '-' || arg[1] == '\0') {
            if (a->dir) {
                usage(&rc, "render", "render: more than one directory given (\"%s\" and \"%s\")",
                      a->dir, arg);
                break;
            }
            a->dir = arg;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            pbfapp_render_print_help(stdout);
            return 0;
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            opt->quiet = 1;
        } else if (strcmp(arg, "--png") == 0) {
            a->also_png = 1;
        } else if (pbfapp_render_parse_option(argc, argv, &i, opt, 0, "render", &rc)) {
            /* done (rc set on error) */
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--out", &value)) != 0) {
            if (m < 0 || !value[0]) usage(&rc, "render", "--out needs a directory");
            a->out_dir = value;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--scene", &value)) != 0) {
            if (m < 0 || !value[0]) usage(&rc, "render", "--scene needs a file");
            a->scene_path = value;
        } else if ((m = pbfapp_option_value(argc, argv, &i, "--frames", &value)) != 0) {
            int first, last;
            if (m < 0 || !pbfapp_frame_range_parse(value, &first, &last))
                usage(&rc, "render", "--frames %s: expected A:B, A: or :B with 0 <= A <= B",
                      m < 0 ? "" : value);
            a->range = value;
        } else {
            usage(&rc, "render", "render: unknown option \"%s\"", arg);
        }
    }
    return rc;
}

/* Every frame of the run through the renderer, with the boxes at each frame's time and, with
 * --surface, the run's mesh of the frame where there is one; 0 or an exit status. */
static int render_frames(pbfapp_renderer *r, const pbfapp_render_options *o,
                         const pbfapp_scene *sc, pbf_world *world, pbfapp_render_box *boxes,
                         const pbfapp_frame_file *frames, int nframes, const char *dir) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_status st = PBF_OK;
    int rc = 0;
    pbfapp_frame_data data;
    memset(&data, 0, sizeof data);
    pbfapp_mesh_data mesh_data;
    memset(&mesh_data, 0, sizeof mesh_data);
    int meshes_read = 0;
    char path[4200];
    pbfapp_progress bar;
    pbfapp_progress_start(&bar, stderr, "render", nframes, o->quiet, -1);
    for (int k = 0; k < nframes && rc == 0; ++k) {
        snprintf(path, sizeof path, "%s/%s", dir, frames[k].name);
        st = pbfapp_read_frame(path, &data, &err);
        if (st != PBF_OK) { /* a refused frame file is bad input (2), as in `pbf mesh` */
            pbfapp_progress_clear(&bar);
            fprintf(stderr, "pbf: %s\n", err.message);
            rc = st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
            break;
        }
        double time = data.has_time ? data.time : (double)frames[k].number / sc->run.fps;
        float zero = 0;
        uint32_t zid = 0;
        pbf_snapshot snap = {time, 0, 0, &zero, &zero, &zero, &zero, &zero, &zero, &zero, &zid, NULL};
        if (pbf_world_restore(world, &snap, &err) == PBF_OK)
            pbfapp_world_render_boxes(world, boxes);
        pbf_particles p = pbfapp_frame_particles(&data);
        pbf_mesh mesh;
        if (o->surface) { /* the run's mesh of this frame, if there is one */
            st = frame_mesh(r, dir, frames[k].number, &mesh_data, &mesh, &meshes_read, &err);
            if (st != PBF_OK) {
                pbfapp_progress_clear(&bar);
                fprintf(stderr, "pbf: %s\n", err.message);
                rc = EXIT_RUNTIME;
                break;
            }
        }
        st = pbfapp_renderer_frame(r, frames[k].number, time, &p, boxes, sc->box_count, &err);
        if (st != PBF_OK) {
            pbfapp_progress_clear(&bar);
            fprintf(stderr, "pbf: frame %d: %s\n", frames[k].number, err.message);
            rc = EXIT_RUNTIME;
        } else {
            char what[64];
            snprintf(what, sizeof what, "frame %d/%d", k + 1, nframes);
            pbfapp_progress_work(&bar, k + 1, what);
        }
    }
    pbfapp_progress_finish(&bar);
    pbfapp_frame_data_free(&data);
    pbfapp_mesh_data_free(&mesh_data);
    if (rc == 0 && o->surface && !o->quiet && meshes_read > 0) {
        printf("pbf: --surface: %d mesh%s read from %s/mesh_NNNNN files\n", meshes_read,
               meshes_read == 1 ? "" : "es", dir);
        fflush(stdout);
    }
    return rc;
}

int pbfapp_render_command(int argc, char **argv) {
    pbfapp_render_options opt;
    pbfapp_render_options_default(&opt);
    render_args a;
    int rc = parse_render_args(argc, argv, &opt, &a);
    const char *dir = a.dir, *out_dir = a.out_dir, *scene_path = a.scene_path;
    const int also_png = a.also_png;
    if (rc >= 0) return rc;
    if (!dir) {
        usage(&rc, "render", "render: which directory? e.g. `pbf render out`");
        return rc;
    }
    opt.png = !opt.video || also_png;
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_status st = pbfapp_render_check(&opt, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        return st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "pbf: %s: %s\n", dir,
                stat(dir, &sb) != 0 ? strerror(errno) : "is not a directory");
        return EXIT_USAGE;
    }
    char default_scene[4200];
    if (!scene_path) {
        snprintf(default_scene, sizeof default_scene, "%s/scene.json", dir);
        scene_path = default_scene;
        if (stat(scene_path, &sb) != 0) {
            fprintf(stderr,
                    "pbf: %s: not found; `pbf run` writes it beside the frames (the container "
                    "and camera come from it); name the scene with --scene FILE\n",
                    scene_path);
            return EXIT_USAGE;
        }
    }
    pbfapp_scene scene;
    st = pbfapp_scene_load(scene_path, NULL, 0, &scene, &err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        return st == PBF_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE;
    }
    /* Frame files: the scene's format first, else whichever exists. */
    pbfapp_frame_file *frames = NULL;
    int nframes = 0;
    const char *ext = pbfapp_format_extension(scene.run.format);
    static const char *const exts[] = {"vtp", "pvtp", "ply", "csv", "geo", "bgeo"};
    st = pbfapp_frame_files_find(dir, ext, exts, (int)(sizeof exts / sizeof exts[0]), &frames,
                                 &nframes, &ext, &err);
    if (st == PBF_OK && a.range) {
        int first = 0, last = 0;
        pbfapp_frame_range_parse(a.range, &first, &last);
        nframes = pbfapp_frame_files_keep(frames, nframes, first, last);
    }
    if (st != PBF_OK || nframes == 0) {
        if (st != PBF_OK)
            fprintf(stderr, "pbf: %s\n", err.message);
        else
            fprintf(stderr,
                    "pbf: %s: no frame files%s (frame_NNNNN.vtp, .pvtp, .ply, .csv, .geo or "
                    ".bgeo)\n",
                    dir, a.range ? " in --frames" : "");
        pbfapp_frame_files_free(frames, nframes);
        pbfapp_scene_free(&scene);
        return st != PBF_OK ? EXIT_RUNTIME : EXIT_USAGE;
    }
    /* A world holding only the boxes, to place moving walls at each frame's time: on the CPU,
     * whatever device the run was made on (it may not be on this machine). */
    pbf_world *world = NULL;
    pbf_world_def def = scene.def;
    def.max_particles = 0;
    snprintf(def.device, sizeof def.device, "cpu");
    st = pbf_world_create(&def, &world, &err);
    for (int b = 0; st == PBF_OK && b < scene.box_count; ++b)
        st = pbf_world_add_box(world, &scene.boxes[b], &err);
    pbfapp_render_box *boxes = calloc((size_t)scene.box_count + 1, sizeof *boxes);
    if (st != PBF_OK || !boxes) {
        fprintf(stderr, "pbf: %s: %s\n", scene_path, boxes ? err.message : "out of memory");
        pbf_world_destroy(world);
        free(boxes);
        pbfapp_frame_files_free(frames, nframes);
        pbfapp_scene_free(&scene);
        return EXIT_RUNTIME;
    }
    if (opt.range_mode == PBFAPP_RANGE_AUTO) {
        st = apply_auto_range(dir, frames, nframes, &opt, &err);
        if (st != PBF_OK) {
            fprintf(stderr, "pbf: %s\n", err.message);
            pbf_world_destroy(world);
            free(boxes);
            pbfapp_frame_files_free(frames, nframes);
            pbfapp_scene_free(&scene);
            return st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
        }
    }
    pbfapp_renderer *r = NULL;
    st = pbfapp_renderer_open(&opt, &scene, out_dir ? out_dir : dir, &r, &err);
    rc = 0;
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: %s\n", err.message);
        rc = st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
    }
    if (rc == 0 && !opt.quiet) {
        printf("pbf: rendering %d frame%s of %s/ (%s, %s)%s%s\n", nframes, nframes == 1 ? "" : "s",
               dir, ext, scene.name, opt.video ? " to " : "", opt.video ? opt.video : "");
        fflush(stdout);
    }
    if (rc == 0) rc = render_frames(r, &opt, &scene, world, boxes, frames, nframes, dir);
    if (r) {
        pbf_status cst = pbfapp_renderer_close(r, &err);
        if (cst != PBF_OK && rc == 0) {
            fprintf(stderr, "pbf: %s\n", err.message);
            rc = EXIT_RUNTIME;
        }
    }
    pbf_world_destroy(world);
    free(boxes);
    pbfapp_frame_files_free(frames, nframes);
    pbfapp_scene_free(&scene);
    return rc;
}
