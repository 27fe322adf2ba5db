/*
 * OpenVDB level sets of surface meshes: `pbf mesh --format vdb`, `pbf run --mesh-format vdb`.
 *
 *   mesh_00000.vdb  one openvdb::FloatGrid named "surface", class level set: the narrow-band
 *                   signed distance (m, negative inside the liquid, +-3 voxels around the
 *                   surface) of the frame's reconstructed mesh (openvdb::tools::meshToLevelSet),
 *                   voxel size = the reconstruction's cell (cube_size * particle_radius), index
 *                   (i, j, k) at (i, j, k) * voxel size, where the marching-cubes grid points are.
 * Written like every frame file: NAME.tmp, fsync, rename, fsync of the directory.
 *
 * Two parts, so that OpenVDB (and the libraries it loads: TBB, Blosc, Boost, log4cplus, whose
 * start-up spawns a thread) is loaded only by a command that writes a .vdb file:
 *  - the module pbf_vdb.so (app/io/vdb_writer.cpp, the only C++ of pbf), built where CMake finds
 *    OpenVDB (cmake/openvdb.cmake): one C entry point that turns a mesh into the file's bytes;
 *  - app/io/vdb.c (C, in the app library): finds and dlopen()s the module, writes the bytes
 *    atomically. In a build without OpenVDB the format is refused with a message.
 * The library (src/) stays C and knows nothing of either.
 */
#ifndef PBFAPP_VDB_WRITER_H
#define PBFAPP_VDB_WRITER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the module's entry point (looked up by this name with dlsym) ---------------------------- */
#define PBF_VDB_ENTRY "pbf_vdb_level_set_v1"

/* The file's bytes for the mesh (vertex_count positions x y z, triangle_count vertex-index
 * triples), voxel_size metres per voxel, on `threads` TBB threads (0: all; the bytes do not
 * depend on it). Returns 0 with *bytes (malloc'ed, the caller frees) and *size; 1 on an error
 * or 2 out of memory, with a message in why. */
typedef int (*pbf_vdb_level_set_fn)(const float *positions, int vertex_count,
                                    const uint32_t *triangles, int triangle_count,
                                    double voxel_size, int threads, unsigned char **bytes,
                                    size_t *size, char *why, size_t why_size);

/* ---- the app's side (app/io/vdb.c) ----------------------------------------------------------- */
#ifndef PBF_VDB_MODULE_ONLY
#include "pbf/pbf.h"
#include "pbf/surface.h"

/* 1 when this build has the OpenVDB writer, 0 when it was built without OpenVDB. */
int pbfapp_vdb_supported(void);

/* "this build of pbf has no OpenVDB support (...)": the refusal of the vdb format. */
const char *pbfapp_vdb_unsupported_message(void);

/* The loaded module. Its path: $PBF_VDB_MODULE, else pbf_vdb.so beside the running program,
 * else the installed one (PROGRAM_DIR/../LIBDIR/pbf/pbf_vdb.so), else the build tree's. */
typedef struct pbfapp_vdb {
    void *handle;
    pbf_vdb_level_set_fn level_set;
} pbfapp_vdb;

/* Loads the module; the error says which files were tried and why (or that the build has no
 * OpenVDB support: PBF_ERR_INVALID_ARGUMENT). */
pbf_status pbfapp_vdb_open(pbfapp_vdb *v, pbf_error *err);
void pbfapp_vdb_close(pbfapp_vdb *v);

/* Writes the level set of the closed mesh m to path (atomically). Errors name the file. */
pbf_status pbfapp_write_mesh_vdb(const pbfapp_vdb *v, const char *path, const pbf_mesh *m,
                                 double voxel_size, int threads, pbf_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
