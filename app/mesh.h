/*
 * Surface meshes of a run's frames (pbf/surface.h): `pbf mesh DIR` and `pbf run --mesh`.
 *
 *   mesh_00000.ply  binary little-endian PLY: vertex (float x y z nx ny nz), face (uchar count,
 *                   uint indices), triangles counter-clockwise seen from outside
 *   mesh_00000.obj  Wavefront OBJ: v, vn, f a//a b//b c//c
 *   mesh_00000.vdb  OpenVDB narrow-band level set of the mesh (app/vdb_writer.h; only in a build
 *                   with OpenVDB, refused with a message otherwise)
 * Written like every frame file: NAME.tmp, fsync, rename, fsync of the directory.
 */
#ifndef PBFAPP_MESH_H
#define PBFAPP_MESH_H

#include <stdint.h>
#include <stdio.h>

#include "pbf/pbf.h"
#include "pbf/surface.h"
#include "scene.h"

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

/* A mesh read back from a file (pbfapp_read_mesh): arrays owned by it. */
typedef struct pbfapp_mesh_data {
    int vertex_count, triangle_count;
    float *positions, *normals; /* 3 per vertex; normals unit length */
    uint32_t *triangles;        /* 3 per triangle */
} pbfapp_mesh_data;

/* Reads a surface mesh: binary little-endian PLY (vertex x y z [nx ny nz] of any scalar type,
 * face vertex_indices lists; other elements without lists are skipped) or Wavefront OBJ (v, vn,
 * f with v, v/t, v//n or v/t/n corners, negative indices allowed). Polygons become triangle
 * fans; without normals in the file, area-weighted vertex normals of the faces. Frees *m first
 * (zero it before the first call). Errors name the file (and the line of an OBJ). */
pbf_status pbfapp_read_mesh(const char *path, pbfapp_mesh_data *m, pbf_error *err);
void pbfapp_mesh_data_free(pbfapp_mesh_data *m);
pbf_mesh pbfapp_mesh_data_view(const pbfapp_mesh_data *m);

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
