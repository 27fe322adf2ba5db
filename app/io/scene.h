/*
 * Scene files: JSON documents that define a world (flat keys of the world parameter table, see
 * pbf/params.h), the run (frames, fps, substeps, output format: the run table below) and the
 * geometry (fluid blocks, static obstacles, moving walls). The loader checks everything before a
 * world is built, and every message names the file, the key path and the value at fault.
 */
#ifndef PBFAPP_SCENE_H
#define PBFAPP_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "io/camera.h"
#include "pbf/params.h"
#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest scene file accepted, bytes. */
#define PBFAPP_SCENE_MAX_BYTES (16u * 1024u * 1024u)

typedef enum pbfapp_format {
    PBFAPP_FORMAT_VTP = 0,
    PBFAPP_FORMAT_PLY = 1,
    PBFAPP_FORMAT_CSV = 2,
    PBFAPP_FORMAT_GEO = 3, /* Houdini classic ASCII geometry (PGEOMETRY V5) */
    PBFAPP_FORMAT_BGEO = 4 /* Houdini classic binary geometry (Bgeo V5) */
} pbfapp_format;

/* File extension of a format, without the dot ("vtp"). */
const char *pbfapp_format_extension(pbfapp_format format);

/* Run parameters: the second parameter table (keys frames, fps, substeps, format,
 * guard_density_error, checkpoint_every, adaptive, rank_imbalance, mpi_decomposition,
 * mpi_output). */
typedef struct pbfapp_run {
    int frames;           /* frames written after frame 0 (the initial state) */
    float fps;            /* frames per simulated second */
    int substeps;         /* pbf_world_step calls per frame, each of dt = 1 / (fps * substeps) */
    pbfapp_format format; /* frame file format */
    float guard_density_error; /* %: stop (exit 3) when a step leaves a density error above it;
                                  0 = no density check (non-finite values and escaped particles
                                  always stop the run) */
    int checkpoint_every;      /* write a checkpoint every N frames (0 = only when stopped by a
                                  signal); --checkpoint-every N */
    int adaptive;              /* 1: retry an unstable frame with 2x..8x substeps; --adaptive */
    float rank_imbalance;      /* under mpirun: rebalance the boxes above this excess over the
                                  mean particle count per process; 0 = equal boxes */
    int mpi_decomposition;     /* under mpirun: 0 recursive coordinate bisection, 1 slabs (the
                                  order of pbf_mpi_decomposition) */
    int mpi_output;            /* under mpirun: PBFAPP_MPI_GATHER or PBFAPP_MPI_PIECES */
} pbfapp_run;

enum { PBFAPP_MPI_GATHER = 0, PBFAPP_MPI_PIECES = 1 };

const pbf_param_info *pbfapp_run_params(size_t *count);
pbfapp_run pbfapp_default_run(void);

/* One `--set KEY=VALUE` (or an option such as `--frames N` that maps to a parameter). `label` is
 * how messages name its origin, e.g. "--set particle_radius" or "--frames". */
typedef struct pbfapp_override {
    const char *key;
    const char *value;
    const char *label;
} pbfapp_override;

typedef struct pbfapp_scene {
    char *path;        /* the file as given */
    char *name;        /* "name" of the file, or the file name without directory and extension */
    char *description; /* "" when absent */
    pbf_world_def def;
    pbfapp_run run;
    pbf_fluid_block *blocks;
    int block_count;
    pbf_box *boxes; /* obstacles first, then moving walls */
    int box_count;
    int obstacle_count; /* boxes[0 .. obstacle_count-1] came from "obstacles" */
    int64_t particles;  /* sum of pbf_fluid_block_count over the blocks */
    int has_camera;     /* 1 if the file has a "camera" object: {"position": [x,y,z], "target":
                           [x,y,z], "up": [x,y,z] (default [0,1,0]), "fov": degrees (default 45,
                           in (1, 170))}; else renderers use pbf_camera_default */
    pbf_camera camera;  /* valid when has_camera */
} pbfapp_scene;

/* Reads and checks a scene file, then applies the overrides (each checked like a scene key) and
 * checks the geometry and the world definition. On failure `scene` is left empty (safe to free)
 * and err names the file or override, the key and the value. Status: PBF_ERR_IO for a file that
 * cannot be read, PBF_ERR_INVALID_ARGUMENT for content, PBF_ERR_LIMIT for sizes. */
pbf_status pbfapp_scene_load(const char *path, const pbfapp_override *overrides,
                             size_t override_count, pbfapp_scene *scene, pbf_error *err);

/* Same, from text in memory; `path` only names the source in messages. */
pbf_status pbfapp_scene_parse(const char *path, const char *text, size_t length,
                              const pbfapp_override *overrides, size_t override_count,
                              pbfapp_scene *scene, pbf_error *err);

void pbfapp_scene_free(pbfapp_scene *scene);

/* Writes the scene as loaded (overrides applied) as a scene file that pbfapp_scene_load reads
 * back to the same definition, run, geometry and camera (floats written exactly). `pbf run`
 * writes it as OUT/scene.json for `pbf render`. PATH.tmp, fsync, rename to PATH. */
pbf_status pbfapp_scene_write(const pbfapp_scene *scene, const char *path, pbf_error *err);

/* Builds the world: creates it from scene->def and adds every block and box. */
pbf_status pbfapp_scene_create_world(const pbfapp_scene *scene, pbf_world **out_world,
                                     pbf_error *err);
/* The same without the fluid blocks (a run over MPI builds them in parts, or restores a
 * checkpoint). */
pbf_status pbfapp_scene_create_world_empty(const pbfapp_scene *scene, pbf_world **out_world,
                                           pbf_error *err);

/* Applies one KEY=VALUE to a world definition or run (either table). VEC3 values are "x,y,z",
 * ENUM values a name. Messages are prefixed with `label`. */
pbf_status pbfapp_apply_override(pbf_world_def *def, pbfapp_run *run, const char *key,
                                 const char *value, const char *label, pbf_error *err);

/* The known key closest to `key` among `names` (edit distance), or NULL if none is close. */
const char *pbfapp_closest_name(const char *key, const char *const *names, size_t count);

/* For an unknown command-line option `arg` ("--frmes", "--fram=3", "-frames"):
 * " (did you mean \"--frames\"?)" with the closest of the long options `names` (given without
 * their "--"), compared without dashes and "=VALUE"; "" when none is close. */
void pbfapp_option_hint(char *buf, size_t size, const char *arg, const char *const *names,
                        size_t count);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_SCENE_H */
