/*
 * Images and videos of a run: the options --render, --color, --size, --video shared by
 * `pbf run` and `pbf render`, the per-frame renderer (PNG files and/or an ffmpeg pipe) and the
 * `pbf render DIR` command, which renders frames already written by `pbf run`.
 *
 * `pbf render DIR` needs the container and the obstacles: `pbf run` writes the scene as it ran
 * (overrides applied) to DIR/scene.json (pbfapp_scene_write); `--scene FILE` names another.
 * Moving walls are placed at each frame's time with the library's own motion (a world holding
 * only the boxes, restored to that time).
 */
#ifndef PBFAPP_RENDER_CMD_H
#define PBFAPP_RENDER_CMD_H

#include <stdio.h>

#include "render/colormap.h"
#include "pbf/pbf.h"
#include "render/render.h"
#include "io/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PBFAPP_RANGE_DEFAULT = 0, /* pbf_color_default_range */
    PBFAPP_RANGE_GIVEN = 1,   /* --range MIN:MAX (or auto, once computed) */
    PBFAPP_RANGE_AUTO = 2     /* --range auto: pbf render computes it over the series */
};

/* The file name ends --video accepts (checked by pbfapp_render_parse_option). */
#define PBFAPP_VIDEO_CONTAINERS ".mp4, .m4v, .mov or .mkv"

typedef struct pbfapp_render_options {
    int png;               /* write frame_NNNNN.png */
    const char *video;     /* FILE.mp4 to encode with ffmpeg, or NULL */
    pbf_color_field color; /* --color, default water */
    int width, height;     /* --size, default 1280x720 */
    int range_mode;        /* PBFAPP_RANGE_* (--range) */
    float range[2];        /* with PBFAPP_RANGE_GIVEN */
    pbf_camera_override camera; /* --camera-pos, --camera-target, --fov */
    int quiet;
    int surface;                /* --surface: the liquid's surface mesh as water */
    int nsurface_sets;          /* --surface-set KEY=VALUE: surface parameters for meshes */
    const char *surface_sets[32]; /* reconstructed on the fly (pbf mesh --set) */
} pbfapp_render_options;

void pbfapp_render_options_default(pbfapp_render_options *o);

/* Parses --color F, --size WxH, --video FILE, --range R, --camera-pos X,Y,Z,
 * --camera-target X,Y,Z, --fov DEG, --surface or --surface-set KEY=VALUE at argv[*i] (also --render when `with_render`, i.e. for
 * `pbf run`, where --range auto is refused: it needs the whole series).
 * Returns 1 and advances *i when it was one of them (with *rc = 2 after printing a usage error
 * when its value is bad), 0 when it is not one of them. `cmd` names the command in messages. */
int pbfapp_render_parse_option(int argc, char **argv, int *i, pbfapp_render_options *o,
                               int with_render, const char *cmd, int *rc);

/* Checks what can be checked before any work: an even --size for --video (yuv420p) and that
 * ffmpeg is on PATH. PBF_ERR_INVALID_ARGUMENT for a usage problem, PBF_ERR_IO for ffmpeg. */
pbf_status pbfapp_render_check(const pbfapp_render_options *o, pbf_error *err);

/* Help lines of the options, for `pbf run --help`. */
void pbfapp_render_print_options(FILE *f, int with_render);
void pbfapp_render_print_help(FILE *f);

typedef struct pbfapp_renderer pbfapp_renderer;

/* Starts rendering the frames of `scene` (its camera, or pbf_camera_default of its domain, with
 * the camera options applied; PBF_ERR_INVALID_ARGUMENT if they make no usable camera):
 * PNGs go to png_dir (created if missing; refused as pbfapp_output_dir_make refuses, before
 * ffmpeg starts), the video to o->video (written as NAME.tmp.EXT and renamed when ffmpeg
 * succeeds; its directory is created). */
pbf_status pbfapp_renderer_open(const pbfapp_render_options *o, const pbfapp_scene *scene,
                                const char *png_dir, pbfapp_renderer **out, pbf_error *err);

/* Surface mode: the mesh to draw for the next pbfapp_renderer_frame (e.g. read from the run's
 * mesh_NNNNN.ply); it must stay valid until then. Without one the renderer reconstructs the
 * surface from the frame's particles (in id order, with the scene's surface parameters and
 * --surface-set). */
void pbfapp_renderer_set_mesh(pbfapp_renderer *r, const pbf_mesh *mesh);

/* Renders one frame (particles drawn in id order, so the same frame gives the same image from
 * `pbf run --render` and from `pbf render`). `boxes` are the obstacles and walls at `time`. */
pbf_status pbfapp_renderer_frame(pbfapp_renderer *r, int frame, double time, const pbf_particles *p,
                                 const pbfapp_render_box *boxes, int box_count, pbf_error *err);

/* The same for the current state of a simulated world (its particles and boxes). */
pbf_status pbfapp_renderer_world_frame(pbfapp_renderer *r, const pbf_world *world, int frame,
                                       double time, pbf_error *err);

/* Ends the video (closes the pipe, waits for ffmpeg; an error if it failed) and frees. A run
 * stopped early (instability, SIGINT) still gets a playable video of the frames rendered so far.
 * Prints a summary unless quiet. NULL is allowed. */
pbf_status pbfapp_renderer_close(pbfapp_renderer *r, pbf_error *err);

/* Boxes of a world at its current time, into boxes[0 .. pbf_world_box_count - 1]. */
void pbfapp_world_render_boxes(const pbf_world *w, pbfapp_render_box *boxes);

/* `pbf render DIR [options]`: returns the exit status (0, 1 runtime, 2 usage). */
int pbfapp_render_command(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_RENDER_CMD_H */
