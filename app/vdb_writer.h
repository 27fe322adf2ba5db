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
 * C++ (app/vdb_writer.cpp, OpenVDB) only where CMake found OpenVDB (cmake/openvdb.cmake);
 * otherwise app/vdb_none.c, whose writer refuses with a message. The library (src/) stays C.
 */
#ifndef PBFAPP_VDB_WRITER_H
#define PBFAPP_VDB_WRITER_H

#include "pbf/pbf.h"
#include "pbf/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build writes OpenVDB files, 0 when it was built without OpenVDB. */
int pbfapp_vdb_supported(void);

/* "this build of pbf has no OpenVDB support (...)": the refusal of the vdb format. */
const char *pbfapp_vdb_unsupported_message(void);

/* Writes the level set of the closed mesh m, voxel_size metres per voxel, to path (atomically),
 * on `threads` TBB threads (0: all; the values do not depend on it). Errors name the file;
 * without OpenVDB: PBF_ERR_INVALID_ARGUMENT with the message above. */
pbf_status pbfapp_write_mesh_vdb(const char *path, const pbf_mesh *m, double voxel_size,
                                 int threads, pbf_error *err);

#ifdef __cplusplus
}
#endif

#endif
