/* The OpenVDB module pbf_vdb.so (see vdb_writer.h): a mesh to the bytes of a .vdb file holding
 * its level set. The only C++ of pbf; built when cmake/openvdb.cmake finds OpenVDB, loaded by
 * app/io/vdb.c with dlopen. */
#define PBF_VDB_MODULE_ONLY
#include "io/vdb_writer.h"

#include <openvdb/io/Stream.h>
#include <openvdb/openvdb.h>
#include <openvdb/tools/MeshToVolume.h>
#include <tbb/global_control.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

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

/* The level set of the mesh, serialised in memory (io::Stream: the layout io::File reads). */
static int level_set_bytes(const float *positions, int vertex_count, const uint32_t *tri,
                           int triangle_count, double voxel_size, int threads, std::string &bytes,
                           std::string &why) {
    try {
        openvdb::initialize();
        std::unique_ptr<tbb::global_control> limit; /* meshToLevelSet's threads, for this call */
        if (threads > 0)
            limit.reset(new tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                                (size_t)threads));
        std::vector<openvdb::Vec3s> points((size_t)vertex_count);
        std::vector<openvdb::Vec3I> triangles((size_t)triangle_count);
        for (size_t v = 0; v < points.size(); ++v)
            points[v] = openvdb::Vec3s(positions[3 * v], positions[3 * v + 1], positions[3 * v + 2]);
        for (size_t t = 0; t < triangles.size(); ++t)
            triangles[t] = openvdb::Vec3I(tri[3 * t], tri[3 * t + 1], tri[3 * t + 2]);
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
            return 1;
        }
        bytes = os.str();
        content_uuid(bytes);
        return 0;
    } catch (const std::bad_alloc &) {
        why = "out of memory";
        return 2;
    } catch (const std::exception &e) {
        why = e.what();
    } catch (...) {
        why = "unknown exception";
    }
    return 1;
}

extern "C" __attribute__((visibility("default"))) int
pbf_vdb_level_set_v1(const float *positions, int vertex_count, const uint32_t *triangles,
                     int triangle_count, double voxel_size, int threads, unsigned char **bytes,
                     size_t *size, char *why, size_t why_size) {
    /* the entry point has the type the loader expects */
    static_assert(std::is_same<decltype(&pbf_vdb_level_set_v1), pbf_vdb_level_set_fn>::value,
                  "pbf_vdb_level_set_v1 must match pbf_vdb_level_set_fn");
    *bytes = nullptr;
    *size = 0;
    std::string data, message;
    int rc = level_set_bytes(positions, vertex_count, triangles, triangle_count, voxel_size,
                             threads, data, message);
    if (rc == 0) {
        *bytes = static_cast<unsigned char *>(std::malloc(data.size() ? data.size() : 1));
        if (!*bytes) {
            rc = 2;
            message = "out of memory";
        } else {
            std::memcpy(*bytes, data.data(), data.size());
            *size = data.size();
        }
    }
    if (rc != 0 && why_size > 0) std::snprintf(why, why_size, "%s", message.c_str());
    return rc;
}
