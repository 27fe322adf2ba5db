#define _POSIX_C_SOURCE 200809L

#include "io/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

pbf_status pbfapp_fail(pbf_error *err, pbf_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

int pbfapp_option_value(int argc, char **argv, int *i, const char *name, const char **value) {
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

const char *pbfapp_space_hint(int e) {
    return e == ENOSPC || e == EFBIG
#ifdef EDQUOT
                   || e == EDQUOT
#endif
               ? " (disk full or file size limit)"
               : "";
}

int pbfapp_sync_parent_dir(const char *path) {
    char dir[4200];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) return 0;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return errno;
    int e = 0;
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != EBADF) e = errno;
    close(fd);
    return e;
}

pbf_status pbfapp_commit_file(FILE *f, const char *tmp, const char *path, pbf_error *err) {
    int e = 0;
    if (ferror(f) || fflush(f) != 0) e = errno ? errno : EIO;
    if (!e && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS) e = errno;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    if (e) {
        unlink(tmp);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: write failed: %s%s", tmp, strerror(e),
                           pbfapp_space_hint(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot rename %s to it: %s", path, tmp,
                           strerror(e));
    }
    if ((e = pbfapp_sync_parent_dir(path)) != 0)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot sync its directory: %s", path,
                           strerror(e));
    return PBF_OK;
}
