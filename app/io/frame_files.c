/* The frame files of a run's directory (see frame_files.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/frame_files.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/util.h"

static int cmp_frame_file(const void *a, const void *b) {
    const pbfapp_frame_file *x = a, *y = b;
    return (x->number > y->number) - (x->number < y->number);
}

int pbfapp_frame_file_number(const char *name, const char *ext) {
    if (strncmp(name, "frame_", 6) != 0) return -1;
    const char *p = name + 6;
    long v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 9) {
        v = v * 10 + (*p - '0');
        ++p;
        ++digits;
    }
    if (digits < 5 || *p != '.' || strcmp(p + 1, ext) != 0) return -1;
    return (int)v;
}

pbf_status pbfapp_frame_files_list(const char *dir, const char *ext, pbfapp_frame_file **out,
                                   int *count, pbf_error *err) {
    *out = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open the directory: %s", dir,
                           strerror(errno));
    pbfapp_frame_file *list = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int num = pbfapp_frame_file_number(e->d_name, ext);
        if (num < 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            pbfapp_frame_file *g = realloc(list, (size_t)cap * sizeof *g);
            if (!g) break;
            list = g;
        }
        size_t len = strlen(e->d_name) + 1;
        list[n].number = num;
        list[n].name = malloc(len);
        if (!list[n].name) break;
        memcpy(list[n].name, e->d_name, len);
        ++n;
    }
    closedir(d);
    if (n > 1) qsort(list, (size_t)n, sizeof *list, cmp_frame_file);
    *out = list;
    *count = n;
    return PBF_OK;
}

pbf_status pbfapp_frame_files_find(const char *dir, const char *ext, const char *const *exts,
                                   int n_exts, pbfapp_frame_file **out, int *count,
                                   const char **ext_out, pbf_error *err) {
    pbf_status st = pbfapp_frame_files_list(dir, ext, out, count, err);
    for (int k = 0; st == PBF_OK && *count == 0 && k < n_exts; ++k) {
        pbfapp_frame_files_free(*out, *count);
        ext = exts[k];
        st = pbfapp_frame_files_list(dir, ext, out, count, err);
    }
    *ext_out = ext;
    return st;
}

void pbfapp_frame_files_free(pbfapp_frame_file *list, int n) {
    for (int i = 0; i < n; ++i) free(list[i].name);
    free(list);
}

int pbfapp_frame_range_parse(const char *range, int *first, int *last) {
    const char *colon = range ? strchr(range, ':') : NULL;
    if (!colon) return 0;
    long a = 0, b = 2147483647L;
    char *end = NULL;
    if (colon != range) {
        if (range[0] < '0' || range[0] > '9') return 0;
        errno = 0;
        a = strtol(range, &end, 10);
        if (end != colon || errno || a > 2147483647L) return 0;
    }
    if (colon[1]) {
        if (colon[1] < '0' || colon[1] > '9') return 0;
        errno = 0;
        b = strtol(colon + 1, &end, 10);
        if (*end != '\0' || errno || b > 2147483647L || b < a) return 0;
    }
    *first = (int)a;
    *last = (int)b;
    return 1;
}

int pbfapp_frame_files_keep(pbfapp_frame_file *list, int n, int first, int last) {
    int kept = 0;
    for (int k = 0; k < n; ++k) {
        if (list[k].number >= first && list[k].number <= last)
            list[kept++] = list[k];
        else
            free(list[k].name);
    }
    return kept;
}
