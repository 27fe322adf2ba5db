/*
 * An OpenVDB file of `pbf mesh --format vdb` read back with OpenVDB's own API and compared with
 * the PLY mesh of the same frame (read here with a few lines, not pbf's reader).
 *
 *   vdb_check FILE.vdb MESH.ply VOXEL [PARTICLE_VOLUME TOLERANCE]
 *
 * Checks: the file holds one grid, a FloatGrid named "surface" of class level set, with a
 * uniform voxel size VOXEL (m) and active voxels; the volume inside the zero crossing, sum over voxels of clamp(1/2 - phi / VOXEL, 0, 1)
 * VOXEL^3 (each voxel counted by how much of it is inside, from its distance), is within 2 % of
 * the mesh's own volume (divergence theorem) and, when given, within TOLERANCE (a fraction) of
 * PARTICLE_VOLUME; the plain count of voxels with phi < 0 times VOXEL^3 is printed beside it;
 * the bounds of the zero crossing (interpolated on the voxel edges along each axis) equal the
 * mesh's within one voxel, and the active voxels reach out the narrow band's 3 voxels around
 * the mesh's bounds (within one voxel). Prints the numbers; exits 1 on a failed check.
 */
#include <openvdb/openvdb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char *what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) ++failures;
}

struct Mesh {
    std::vector<float> p; /* x y z per vertex */
    std::vector<uint32_t> t;
    double volume = 0;
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
};

/* pbf's binary little-endian PLY: vertex with 6 floats (x y z nx ny nz), face uchar + 3 uint. */
bool read_ply(const char *path, Mesh &m) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::string line;
    long nv = -1, nf = -1, props = 0;
    bool in_vertex = false;
    while (std::getline(f, line)) {
        if (line == "end_header") break;
        std::istringstream s(line);
        std::string a, b;
        s >> a >> b;
        if (a == "format" && b != "binary_little_endian") return false;
        if (a == "element") {
            in_vertex = b == "vertex";
            s >> (in_vertex ? nv : nf);
        } else if (a == "property" && in_vertex) {
            ++props;
        }
    }
    if (nv < 0 || nf < 0 || props != 6) return false;
    m.p.resize((size_t)nv * 3);
    m.t.resize((size_t)nf * 3);
    for (long v = 0; v < nv; ++v) {
        float q[6];
        if (!f.read(reinterpret_cast<char *>(q), sizeof q)) return false;
        for (int c = 0; c < 3; ++c) {
            m.p[3 * (size_t)v + c] = q[c];
            m.lo[c] = std::min(m.lo[c], (double)q[c]);
            m.hi[c] = std::max(m.hi[c], (double)q[c]);
        }
    }
    for (long t = 0; t < nf; ++t) {
        unsigned char rec[13];
        if (!f.read(reinterpret_cast<char *>(rec), sizeof rec) || rec[0] != 3) return false;
        for (int c = 0; c < 3; ++c) {
            uint32_t i;
            std::memcpy(&i, rec + 1 + 4 * c, 4);
            if (i >= (uint32_t)nv) return false;
            m.t[3 * (size_t)t + c] = i;
        }
        const float *a = &m.p[3 * (size_t)m.t[3 * (size_t)t]];
        const float *b = &m.p[3 * (size_t)m.t[3 * (size_t)t + 1]];
        const float *c = &m.p[3 * (size_t)m.t[3 * (size_t)t + 2]];
        m.volume += ((double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
                     (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
                     (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0])) /
                    6.0;
    }
    return true;
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) {
        std::fprintf(stderr, "usage: vdb_check FILE.vdb MESH.ply VOXEL [PARTICLE_VOLUME TOLERANCE]\n");
        return 2;
    }
    const char *vdb_path = argv[1], *ply_path = argv[2];
    const double voxel = std::atof(argv[3]);
    const double pvol = argc == 6 ? std::atof(argv[4]) : 0, tol = argc == 6 ? std::atof(argv[5]) : 0;
    Mesh mesh;
    if (!read_ply(ply_path, mesh)) {
        std::fprintf(stderr, "vdb_check: %s: cannot read the PLY mesh\n", ply_path);
        return 1;
    }
    char msg[512];
    try {
        openvdb::initialize();
        openvdb::io::File file(vdb_path);
        file.open();
        openvdb::GridPtrVecPtr grids = file.getGrids();
        file.close();
        std::snprintf(msg, sizeof msg, "%s: one grid (%zu)", vdb_path, grids->size());
        check(grids->size() == 1, msg);
        if (grids->size() != 1) return 1;
        openvdb::GridBase::Ptr base = (*grids)[0];
        std::snprintf(msg, sizeof msg, "grid named \"surface\" (\"%s\")", base->getName().c_str());
        check(base->getName() == "surface", msg);
        std::snprintf(msg, sizeof msg, "class level set (%s)",
                      openvdb::GridBase::gridClassToString(base->getGridClass()).c_str());
        check(base->getGridClass() == openvdb::GRID_LEVEL_SET, msg);
        openvdb::FloatGrid::Ptr grid = openvdb::gridPtrCast<openvdb::FloatGrid>(base);
        std::snprintf(msg, sizeof msg, "a FloatGrid (%s)", base->type().c_str());
        check(grid != nullptr, msg);
        if (!grid) return 1;
        const openvdb::Vec3d vs = grid->voxelSize();
        std::snprintf(msg, sizeof msg, "voxel size %g m (%g %g %g), uniform", voxel, vs[0], vs[1],
                      vs[2]);
        check(grid->hasUniformVoxels() && std::fabs(vs[0] - voxel) <= 1e-6 * voxel, msg);
        const openvdb::Index64 active = grid->activeVoxelCount();
        std::snprintf(msg, sizeof msg, "active voxels: %llu > 0", (unsigned long long)active);
        check(active > 0, msg);
        const double dx = vs[0], v3 = dx * dx * dx;

        /* volume: every value, active or not, voxel or tile (inside tiles hold -background) */
        double smooth = 0, count = 0;
        for (openvdb::FloatGrid::ValueAllCIter it = grid->cbeginValueAll(); it; ++it) {
            const double phi = *it, n = (double)it.getVoxelCount();
            if (phi < 0) count += n;
            smooth += n * std::min(1.0, std::max(0.0, 0.5 - phi / dx));
        }
        smooth *= v3;
        count *= v3;
        std::printf("     volume: level set %.6g m^3 (voxels with phi < 0: %.6g), mesh %.6g%s",
                    smooth, count, mesh.volume, pvol > 0 ? "" : "\n");
        if (pvol > 0)
            std::printf(", particles %.6g: level set %+.2f %%, mesh %+.2f %%\n", pvol,
                        100 * (smooth / pvol - 1), 100 * (mesh.volume / pvol - 1));
        std::snprintf(msg, sizeof msg, "level-set volume within 2 %% of the mesh's (%+.2f %%)",
                      100 * (smooth / mesh.volume - 1));
        check(mesh.volume > 0 && std::fabs(smooth / mesh.volume - 1) <= 0.02, msg);
        if (pvol > 0) {
            std::snprintf(msg, sizeof msg,
                          "level-set volume within %.0f %% of the particles' (%+.2f %%)", 100 * tol,
                          100 * (smooth / pvol - 1));
            check(std::fabs(smooth / pvol - 1) <= tol, msg);
        }

        /* bounds of the zero crossing: along each axis, between an inside and an outside voxel
         * of the leaf nodes, linear interpolation of phi */
        openvdb::FloatGrid::ConstAccessor acc = grid->getConstAccessor();
        double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
        openvdb::CoordBBox abox;
        for (openvdb::FloatGrid::ValueOnCIter it = grid->cbeginValueOn(); it; ++it) {
            const openvdb::Coord ijk = it.getCoord();
            abox.expand(ijk);
            const double a = *it;
            for (int axis = 0; axis < 3; ++axis) {
                openvdb::Coord nb = ijk;
                nb[axis] += 1;
                const double b = acc.getValue(nb);
                if ((a < 0) == (b < 0)) continue;
                const openvdb::Vec3d wa = grid->indexToWorld(ijk);
                const double x = wa[axis] + dx * a / (a - b);
                lo[axis] = std::min(lo[axis], x);
                hi[axis] = std::max(hi[axis], x);
            }
        }
        for (int axis = 0; axis < 3; ++axis) {
            std::snprintf(msg, sizeof msg,
                          "axis %c: zero crossing %.5f..%.5f m, mesh %.5f..%.5f m (within a voxel)",
                          "xyz"[axis], lo[axis], hi[axis], mesh.lo[axis], mesh.hi[axis]);
            check(std::fabs(lo[axis] - mesh.lo[axis]) <= dx &&
                      std::fabs(hi[axis] - mesh.hi[axis]) <= dx,
                  msg);
            const double alo = abox.min()[axis] * dx, ahi = abox.max()[axis] * dx;
            const double band = openvdb::LEVEL_SET_HALF_WIDTH * dx;
            std::snprintf(msg, sizeof msg,
                          "axis %c: active voxels %.5f..%.5f m = mesh bounds -+ %g voxels "
                          "(%.2f, %.2f voxels)",
                          "xyz"[axis], alo, ahi, openvdb::LEVEL_SET_HALF_WIDTH,
                          (mesh.lo[axis] - alo) / dx, (ahi - mesh.hi[axis]) / dx);
            check(std::fabs(mesh.lo[axis] - band - alo) <= dx &&
                      std::fabs(ahi - mesh.hi[axis] - band) <= dx,
                  msg);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "vdb_check: %s: %s\n", vdb_path, e.what());
        return 1;
    }
    return failures ? 1 : 0;
}
