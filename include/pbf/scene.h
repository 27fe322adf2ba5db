/*
 * Scene files: the JSON documents the `pbf` command runs (README "Scene files"; `pbf --help`
 * lists every key), read by the same loader, with the same checks and messages. A scene holds a
 * world definition, the run parameters (frames, fps, substeps) and the geometry (fluid blocks,
 * obstacles, moving walls); pbf_scene_create_world builds the world it describes.
 *
 *     pbf_scene *scene = NULL;
 *     pbf_error err;
 *     const char *set[] = {"particle_radius=0.02"};          // optional KEY=VALUE overrides
 *     if (pbf_scene_load("scenes/quick.json", set, 1, &scene, &err) != PBF_OK) {
 *         puts(err.message); return 1;                       // names the file, key and value
 *     }
 *     pbf_world *w = NULL;
 *     pbf_scene_create_world(scene, &w, &err);
 *     pbf_scene_info info = pbf_scene_get_info(scene);      // dt = 1 / (fps * substeps)
 *     pbf_scene_destroy(scene);                              // the world does not need it
 *
 * Part of the installed library (libpbf, `pkg-config pbf`, CMake `pbf::pbf`); it reads JSON with
 * cJSON. The solver itself (pbf/pbf.h) reads no files.
 */
#ifndef PBF_SCENE_H
#define PBF_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbf_scene pbf_scene;

/* What a scene describes besides its world definition. The strings belong to the scene. */
typedef struct pbf_scene_info {
    const char *source;      /* the file, or the `source` name given to pbf_scene_parse */
    const char *name;        /* the scene's "name", else the file name without folder and .json */
    const char *description; /* "" when the scene has none */
    int frames;              /* frames of a `pbf run` after the initial state */
    float fps;               /* frames per simulated second */
    int substeps;            /* pbf_world_step calls per frame, each of dt = 1 / (fps * substeps) */
    int64_t particles;       /* particles of its fluid blocks */
    int blocks;              /* fluid blocks */
    int boxes;               /* obstacles and moving walls */
} pbf_scene_info;

/* Reads and checks a scene file, then applies `overrides` ("KEY=VALUE" strings, as `pbf run
 * --set`; vectors as "x,y,z"; may be NULL when override_count is 0) and checks the result. On
 * failure *out is NULL and err names the file (or the override), the key and the value. Status:
 * PBF_ERR_IO for a file that cannot be read, PBF_ERR_INVALID_ARGUMENT for content,
 * PBF_ERR_LIMIT for sizes. */
pbf_status pbf_scene_load(const char *path, const char *const *overrides, size_t override_count,
                          pbf_scene **out, pbf_error *err);

/* The same from JSON text in memory (`length` bytes, no NUL needed); `source` names the text in
 * messages and is the default name (e.g. "my_scene.json", "<dict>"). */
pbf_status pbf_scene_parse(const char *text, size_t length, const char *source,
                           const char *const *overrides, size_t override_count, pbf_scene **out,
                           pbf_error *err);

void pbf_scene_destroy(pbf_scene *scene); /* NULL is allowed */

pbf_scene_info pbf_scene_get_info(const pbf_scene *scene);

/* The world definition of the scene (overrides applied). */
pbf_world_def pbf_scene_world_def(const pbf_scene *scene);

/* Creates the world and adds every obstacle, moving wall and fluid block of the scene. */
pbf_status pbf_scene_create_world(const pbf_scene *scene, pbf_world **out_world, pbf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PBF_SCENE_H */
