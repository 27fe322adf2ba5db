/*
 * Surface meshes of a run's frames (pbf/surface.h): `pbf mesh DIR` and `pbf run --mesh`.
 *
 *   mesh_00000.ply  binary little-endian PLY: vertex (float x y z nx ny nz), face (uchar count,
 *                   uint indices), triangles counter-clockwise seen from outside
 *   mesh_00000.obj  Wavefront OBJ: v, vn, f a//a b//b c//c
 *   mesh_00000.vdb  OpenVDB narrow-band level set of the mesh (app/io/vdb_writer.h; only in a build
 *                   with OpenVDB, refused with a message otherwise)
 * Written like every frame file: NAME.tmp, fsync, rename, fsync of the directory.
 */
#ifndef PBFAPP_MESH_H
#define PBFAPP_MESH_H

#include <stdint.h>
#include <stdio.h>

#include "pbf/pbf.h"
#include "pbf/surface.h"
#include "io/mesh_read.h"
#include "io/scene.h"

typedef enum pbfapp_mesh_format {
    PBFAPP_MESH_PLY = 0,
    PBFAPP_MESH_OBJ = 1,
    PBFAPP_MESH_VDB = 2
} pbfapp_mesh_format;

typedef struct pbfapp_mesh_options {
    int enabled;                  /* pbf run: --mesh given */
    pbfapp_mesh_format format;
    int quiet;
    /* --mesh-set KEY=VALUE / --surface-set (pbf mesh: --set), applied over the defaults that
     * come from the scene (particle_radius, smoothing_length = kernel_ratio, threads) */
    int nsets;
    const char *sets[32];
} pbfapp_mesh_options;

void pbfapp_mesh_options_default(pbfapp_mesh_options *o);

/* Parses one of pbf run's mesh options at argv[*i] (--mesh, --mesh-format F, --mesh-set K=V).
 * Returns 1 if it was one (advancing *i past a value; *rc = 2 after printing a usage error), 0
 * otherwise. */
int pbfapp_mesh_parse_run_option(int argc, char **argv, int *i, pbfapp_mesh_options *o, int *rc);

/* The help lines of those options. */
void pbfapp_mesh_print_run_options(FILE *f);

/* Surface parameters for a scene: the scene's particle radius, its kernel radius as the support
 * (smoothing_length = kernel_ratio), its thread count, then the KEY=VALUE overrides. */
pbf_status pbfapp_mesh_params(const pbfapp_scene *scene, const pbfapp_mesh_options *o,
                              pbf_surface_params *out, pbf_error *err);

pbf_status pbfapp_write_mesh_ply(const char *path, const pbf_mesh *m, pbf_error *err);
pbf_status pbfapp_write_mesh_obj(const char *path, const pbf_mesh *m, pbf_error *err);

/* A mesher writes DIR/mesh_NNNNN.EXT for frames. */
typedef struct pbfapp_mesher pbfapp_mesher;
pbf_status pbfapp_mesher_open(const pbfapp_scene *scene, const pbfapp_mesh_options *o,
                              const char *dir, pbfapp_mesher **out, pbf_error *err);
pbf_status pbfapp_mesher_frame(pbfapp_mesher *m, int frame, const float *x, const float *y,
                               const float *z, int count, pbf_error *err);
/* Milliseconds of reconstruction and triangles of the last frame. */
void pbfapp_mesher_last(const pbfapp_mesher *m, double *ms, int *triangles);
void pbfapp_mesher_close(pbfapp_mesher *m);

/* `pbf mesh DIR [options]`. */
int pbfapp_mesh_command(int argc, char **argv);

#endif
