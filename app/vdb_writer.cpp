/* OpenVDB level sets of surface meshes (see vdb_writer.h). The only C++ of pbf; built when
 * cmake/openvdb.cmake finds OpenVDB. */
#include "vdb_writer.h"

#include <openvdb/io/Stream.h>
#include <openvdb/openvdb.h>
#include <openvdb/tools/MeshToVolume.h>
#include <tbb/global_control.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "util.h"
}

extern "C" int pbfapp_vdb_supported(void) { return 1; }

extern "C" const char *pbfapp_vdb_unsupported_message(void) { return ""; }

/* OpenVDB writes a random UUID into every file (the 36 characters after the 21-byte header:
 * magic, file version, library version, offsets flag), so two writes of one grid differ. pbf's
 * files are a function of the input: the UUID is replaced by one made from the rest of the file
 * (two 64-bit FNV-1a hashes, version 5 and variant bits set like a name-based UUID), so the same
 * frame gives the same bytes for any thread count and on any run. A header laid out otherwise
 * keeps its random UUID. */
static void content_uuid(std::string &bytes) {
    const size_t at = 21, len = 36;
    if (bytes.size() < at + len) return;
    for (size_t i = 0; i < len; ++i) {
        const char c = bytes[at + i];
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !std::isxdigit((unsigned char)c)) return;
    }
    uint64_t h[2] = {1469598103934665603ull, 1099511628211ull * 7919ull};
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (i >= at && i < at + len) continue;
        for (int k = 0; k < 2; ++k) {
            h[k] ^= (unsigned char)bytes[i] + (uint64_t)k;
            h[k] *= 1099511628211ull;
        }
    }
    unsigned char u[16];
    for (int b = 0; b < 16; ++b) u[b] = (unsigned char)(h[b / 8] >> (8 * (b % 8)));
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x50);
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    char text[40];
    std::snprintf(text, sizeof text,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    bytes.replace(at, len, text, len);
}

/* The file's bytes, built in memory (io::Stream: the same layout io::File reads), or an
 * exception's message. */
static pbf_status level_set_bytes(const pbf_mesh *m, double voxel_size, int threads,
                                  std::string &bytes, std::string &why) {
    try {
        openvdb::initialize();
        std::unique_ptr<tbb::global_control> limit; /* meshToLevelSet's threads, for this call */
        if (threads > 0)
            limit.reset(new tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                                (size_t)threads));
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
        content_uuid(bytes);
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
                                            double voxel_size, int threads, pbf_error *err) {
    if (!(voxel_size > 0))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: voxel size %g is not positive",
                           path, voxel_size);
    std::string bytes, why;
    pbf_status st = level_set_bytes(m, voxel_size, threads, bytes, why);
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
