/*
 * Reading surface meshes back (app/io/mesh_read.c): binary PLY and Wavefront OBJ, the files that
 * `pbf mesh` and `pbf run --mesh` write (app/render/mesh.h).
 */
#ifndef PBFAPP_MESH_READ_H
#define PBFAPP_MESH_READ_H

#include <stdint.h>

#include "pbf/pbf.h"
#include "pbf/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_MESH_READ_H */
