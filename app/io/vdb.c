/* The vdb mesh format's app side (see vdb_writer.h): the OpenVDB module loaded on demand with
 * dlopen, its bytes written like every other file. Without OpenVDB (PBF_HAVE_OPENVDB unset) the
 * format is refused. */
#define _POSIX_C_SOURCE 200809L

#include "io/vdb_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef PBF_HAVE_OPENVDB
#include <dlfcn.h>
#endif

#include "io/util.h"

int pbfapp_vdb_supported(void) {
#ifdef PBF_HAVE_OPENVDB
    return 1;
#else
    return 0;
#endif
}

const char *pbfapp_vdb_unsupported_message(void) {
    return "this build of pbf has no OpenVDB support (install libopenvdb-dev, e.g. `bash "
           "scripts/setup-debian.sh --with-openvdb`, and configure again: cmake says \"pbf "
           "OpenVDB: ON\")";
}

#ifdef PBF_HAVE_OPENVDB
/* Tries one path; on failure appends "PATH: why" to the list of attempts. */
static int try_load(pbfapp_vdb *v, const char *path, char *tried, size_t size) {
    if (!path || !path[0]) return 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const char *why = h ? NULL : dlerror();
    if (h) {
        void *sym = dlsym(h, PBF_VDB_ENTRY);
        if (sym) {
            /* dlsym returns an object pointer; POSIX guarantees it converts to the function */
            memcpy(&v->level_set, &sym, sizeof sym);
            v->handle = h;
            return 1;
        }
        why = "no entry point " PBF_VDB_ENTRY " (a module of another pbf version?)";
        dlclose(h);
    }
    size_t used = strlen(tried);
    snprintf(tried + used, size - used, "%s%s: %s", used ? "; " : "", path, why ? why : "?");
    return 0;
}
#endif

pbf_status pbfapp_vdb_open(pbfapp_vdb *v, pbf_error *err) {
    memset(v, 0, sizeof *v);
#ifdef PBF_HAVE_OPENVDB
    /* beside the program (the build tree), then where `cmake --install` puts it relative to the
     * program (BINDIR/../LIBDIR/pbf, any prefix), then the build tree's (test programs) */
    char tried[4096] = "", beside[4200] = "", installed[4400] = "", exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(beside, sizeof beside, "%s/pbf_vdb.so", exe);
            snprintf(installed, sizeof installed, "%s/%s", exe, PBF_VDB_MODULE_INSTALLED);
        }
    }
    const char *env = getenv("PBF_VDB_MODULE");
    if (env && env[0]) { /* named explicitly: only that one */
        if (try_load(v, env, tried, sizeof tried)) return PBF_OK;
    } else if (try_load(v, beside, tried, sizeof tried) ||
               try_load(v, installed, tried, sizeof tried) ||
               try_load(v, PBF_VDB_MODULE_BUILD, tried, sizeof tried)) {
        return PBF_OK;
    }
    return pbfapp_fail(err, PBF_ERR_IO, "cannot load the OpenVDB writer module pbf_vdb.so (%s)",
                       tried);
#else
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s", pbfapp_vdb_unsupported_message());
#endif
}

void pbfapp_vdb_close(pbfapp_vdb *v) {
#ifdef PBF_HAVE_OPENVDB
    if (v && v->handle) dlclose(v->handle);
#endif
    if (v) memset(v, 0, sizeof *v);
}

pbf_status pbfapp_write_mesh_vdb(const pbfapp_vdb *v, const char *path, const pbf_mesh *m,
                                 double voxel_size, int threads, pbf_error *err) {
    if (!v || !v->level_set)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s", path,
                           pbfapp_vdb_supported() ? "the OpenVDB writer module is not loaded"
                                                  : pbfapp_vdb_unsupported_message());
    if (!(voxel_size > 0))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: voxel size %g is not positive",
                           path, voxel_size);
    unsigned char *bytes = NULL;
    size_t size = 0;
    char why[512] = "";
    int rc = v->level_set(m->positions, m->vertex_count, m->triangles, m->triangle_count,
                          voxel_size, threads, &bytes, &size, why, sizeof why);
    if (rc != 0)
        return pbfapp_fail(err, rc == 2 ? PBF_ERR_OUT_OF_MEMORY : PBF_ERR_IO,
                           "%s: OpenVDB level set: %s", path, why);
    char tmp[4200];
    int k = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = k < 0 || (size_t)k >= sizeof tmp ? NULL : fopen(tmp, "wb");
    if (!f) {
        free(bytes);
        if (k < 0 || (size_t)k >= sizeof tmp)
            return pbfapp_fail(err, PBF_ERR_IO, "%s: path too long", path);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    }
    fwrite(bytes, 1, size, f);
    free(bytes);
    return pbfapp_commit_file(f, tmp, path, err);
}
