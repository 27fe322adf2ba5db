/* OpenVDB level sets of surface meshes (see vdb_writer.h). The only C++ of pbf; built when
 * cmake/openvdb.cmake finds OpenVDB. */
#include "vdb_writer.h"

#include <openvdb/io/Stream.h>
#include <openvdb/openvdb.h>
#include <openvdb/tools/MeshToVolume.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "util.h"
}

extern "C" int pbfapp_vdb_supported(void) { return 1; }

extern "C" const char *pbfapp_vdb_unsupported_message(void) { return ""; }

/* The file's bytes, built in memory (io::Stream: the same layout io::File reads), or an
 * exception's message. */
static pbf_status level_set_bytes(const pbf_mesh *m, double voxel_size, std::string &bytes,
                                  std::string &why) {
    try {
        openvdb::initialize();
        std::vector<openvdb::Vec3s> points((size_t)m->vertex_count);
        std::vector<openvdb::Vec3I> triangles((size_t)m->triangle_count);
        for (size_t v = 0; v < points.size(); ++v)
            points[v] = openvdb::Vec3s(m->positions[3 * v], m->positions[3 * v + 1],
                                       m->positions[3 * v + 2]);
        for (size_t t = 0; t < triangles.size(); ++t)
            triangles[t] = openvdb::Vec3I(m->triangles[3 * t], m->triangles[3 * t + 1],
                                          m->triangles[3 * t + 2]);
        openvdb::math::Transform::Ptr xform =
            openvdb::math::Transform::createLinearTransform(voxel_size);
        openvdb::FloatGrid::Ptr grid = openvdb::tools::meshToLevelSet<openvdb::FloatGrid>(
            *xform, points, triangles, float(openvdb::LEVEL_SET_HALF_WIDTH));
        grid->setName("surface");
        grid->setGridClass(openvdb::GRID_LEVEL_SET);
        grid->setCreator("pbf (surface reconstruction, pbf/surface.h)");
        std::ostringstream os(std::ios_base::out | std::ios_base::binary);
        openvdb::io::Stream(os).write(openvdb::GridCPtrVec{grid});
        if (!os) {
            why = "OpenVDB could not serialise the grid";
            return PBF_ERR_IO;
        }
        bytes = os.str();
        return PBF_OK;
    } catch (const std::bad_alloc &) {
        why = "out of memory";
        return PBF_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        why = e.what();
    } catch (...) {
        why = "unknown exception";
    }
    return PBF_ERR_IO;
}

extern "C" pbf_status pbfapp_write_mesh_vdb(const char *path, const pbf_mesh *m,
                                            double voxel_size, pbf_error *err) {
    if (!(voxel_size > 0))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: voxel size %g is not positive",
                           path, voxel_size);
    std::string bytes, why;
    pbf_status st = level_set_bytes(m, voxel_size, bytes, why);
    if (st != PBF_OK)
        return pbfapp_fail(err, st, "%s: OpenVDB level set: %s", path, why.c_str());
    char tmp[4200];
    int n = std::snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: path too long", path);
    FILE *f = std::fopen(tmp, "wb");
    if (!f)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", tmp, std::strerror(errno));
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    return pbfapp_commit_file(f, tmp, path, err);
}
