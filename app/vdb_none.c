/* The vdb mesh format in a pbf built without OpenVDB (see vdb_writer.h): refused. */
#include "vdb_writer.h"

#include "util.h"

int pbfapp_vdb_supported(void) { return 0; }

const char *pbfapp_vdb_unsupported_message(void) {
    return "this build of pbf has no OpenVDB support (install libopenvdb-dev, e.g. `bash "
           "scripts/setup-debian.sh --with-openvdb`, and configure again: cmake says \"pbf "
           "OpenVDB: ON\")";
}

pbf_status pbfapp_write_mesh_vdb(const char *path, const pbf_mesh *m, double voxel_size,
                                 int threads, pbf_error *err) {
    (void)m;
    (void)voxel_size;
    (void)threads;
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s", path,
                       pbfapp_vdb_unsupported_message());
}
