/*
 * The OpenCL backend: the stages of the step (src/core.c) as the kernels of
 * backends/gpu/pbf_kernels.cl, on buffers that stay on the device between steps.
 *
 * The kernel source and the headers it includes (src/sph/, gpu_prelude.h) are embedded into the
 * library at build time (embed_kernels.cmake -> pbf_opencl_kernel_lines) and compiled when a world
 * opens the device, with the CPU backend's SIMD lane count (src/simd.h) and IEEE single precision
 * options: the kernels then reproduce the CPU backend's results bit for bit (pbf_kernels.cl). A
 * build failure fails pbf_world_create with the device's name and the start of the build log.
 *
 * The step's launch sequence (which kernels each stage runs, in which order, with which
 * arguments; the buffers' roles: one per row of the field registry except the CPU's
 * neighbour-list offsets, indexed by role, handles swapped, never data; the sort, the lists, the
 * guard, the solves' errors, the statistics) is gpu/gpu_steps.c and the methods'
 * src/solvers/<method>/<method>_gpu.c (gpu/gpu_steps.h), compiled once and shared with the CUDA
 * backend: this file is its OpenCL side (the table of launch, transfers, buffers: host_ops), plus
 * devices, the kernel build and memory. Every method whose descriptor has GPU launches runs (each
 * row's `gpu`: its own stages and the shared ones of src/solvers/common/ and sph/); the stage
 * runner (core.c) sequences them, with the CFL substeps from the
 * statistics' maximum speed. The device holds 16 arrays per particle, as pbf_world_memory counts,
 * plus the grid's cell starts, on CPU devices the neighbour lists, and small fixed buffers.
 *
 * Host traffic per step: the boxes (boxes_changed, once per substep, only when there are boxes),
 * on CPU devices the size of the neighbour lists (one value per grid build), and at the end one
 * read of the statistics partials, of the first non-finite particle and of the solves' last
 * errors (finish_step). A solve that stops at a tolerance (its method's bounds) reads its error,
 * one value reduced on the device, once per iteration (gpu_host.h). Otherwise the host only
 * enqueues (core.c's timing laps wait with clFinish after each stage). The host arrays (the
 * world's) are a copy of the device's STATE fields, refreshed on demand (download via
 * pbf_sync_host: views, snapshots, diagnoses).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "simd.h" /* PBF_LANES: the kernels sum over neighbours in the CPU backend's lanes */
#include "backends/gpu/gpu_steps.h" /* the step's launch sequence, shared with cuda.cu */

extern const char *const pbf_opencl_kernel_lines[];
extern const size_t pbf_opencl_kernel_line_count;
extern const pbf_backend_ops pbf_backend_opencl;

/* clGetPlatformIDs of an ICD loader without any platform (cl_khr_icd's CL_PLATFORM_NOT_FOUND_KHR) */
#define PLATFORM_NOT_FOUND (-1001)

#define KERNEL_NAME(id, fn) #fn,
static const char *const kernel_names[PBF_GK_COUNT] = {PBF_GPU_KERNELS(KERNEL_NAME)};
#undef KERNEL_NAME

#define PARTICLE_WG 128 /* work-group of the per-particle kernels (lowered on small devices) */

typedef struct ocl_state {
    pbf_gpu_dev g; /* the buffers and bookkeeping of the shared sequence (gpu_steps.h): first */
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel[PBF_GK_COUNT];
    char label[192]; /* "opencl:P.D (name)", for messages */
    cl_ulong global_mem, max_alloc;
    cl_int error; /* first OpenCL error of a step (the step has no error path) */
    int capacity;
    size_t scan_count; /* the longest array the block-sum buffers can scan */
} ocl_state;

#define DEV(w) ((ocl_state *)(w)->dev)

static const char *cl_error_name(cl_int e) {
    switch (e) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case PLATFORM_NOT_FOUND: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "OpenCL error";
    }
}

/* ---- devices -------------------------------------------------------------------------------- */

/* Platforms and their devices; *np platforms (at most max_p), counts in nd[]. */
static cl_int platforms(cl_platform_id *p, cl_uint max_p, cl_uint *np) {
    *np = 0;
    cl_int e = clGetPlatformIDs(max_p, p, np);
    if (e == PLATFORM_NOT_FOUND) {
        *np = 0;
        return CL_SUCCESS;
    }
    if (*np > max_p) *np = max_p;
    return e;
}

static cl_uint devices(cl_platform_id p, cl_device_type type, cl_device_id *d, cl_uint max_d) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, type, max_d, d, &n) != CL_SUCCESS) return 0;
    return n < max_d ? n : max_d;
}

static void device_string(cl_device_id d, cl_device_info what, char *out, size_t size) {
    out[0] = '\0';
    size_t full = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &full) != CL_SUCCESS || full == 0) return;
    char *all = malloc(full + 1);
    if (!all) return;
    if (clGetDeviceInfo(d, what, full, all, NULL) == CL_SUCCESS) {
        all[full] = '\0';
        snprintf(out, size, "%s", all); /* truncated to the caller's buffer */
    }
    free(all);
    size_t n = strlen(out); /* some drivers pad names with spaces */
    while (n > 0 && out[n - 1] == ' ') out[--n] = '\0';
}

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

int pbf_opencl_list(pbf_device_info *out, int max, char *note, size_t note_size) {
    cl_platform_id plat[MAX_PLATFORMS];
    cl_uint np = 0;
    if (platforms(plat, MAX_PLATFORMS, &np) != CL_SUCCESS || np == 0) {
        pbf_backend_note(note, note_size,
                         "opencl: no OpenCL platform found (install an ICD: a GPU driver's, or "
                         "pocl-opencl-icd for the CPU)");
        return 0;
    }
    int n = 0;
    for (cl_uint p = 0; p < np; ++p) {
        cl_device_id dev[MAX_DEVICES];
        cl_uint nd = devices(plat[p], CL_DEVICE_TYPE_ALL, dev, MAX_DEVICES);
        for (cl_uint k = 0; k < nd; ++k, ++n) {
            if (!out || n >= max) continue;
            pbf_device_info *info = &out[n];
            memset(info, 0, sizeof *info);
            snprintf(info->id, sizeof info->id, "opencl:%u.%u", p, k);
            device_string(dev[k], CL_DEVICE_NAME, info->name, sizeof info->name);
            /* "OpenCL 3.0, Portable Computing Language, driver 3.1" */
            char version[64], driver[40], pname[48] = "";
            device_string(dev[k], CL_DEVICE_VERSION, version, sizeof version);
            device_string(dev[k], CL_DRIVER_VERSION, driver, sizeof driver);
            if (clGetPlatformInfo(plat[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL) !=
                CL_SUCCESS)
                pname[0] = '\0';
            pname[sizeof pname - 1] = '\0';
            char *cut = strchr(version, ' '); /* keep "OpenCL X.Y" */
            if (cut) cut = strchr(cut + 1, ' ');
            if (cut) *cut = '\0';
            snprintf(info->driver, sizeof info->driver, "%.16s, %.40s, driver %.24s", version,
                     pname, driver);
            cl_ulong mem = 0;
            cl_uint cu = 0;
            clGetDeviceInfo(dev[k], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            clGetDeviceInfo(dev[k], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            info->memory = (size_t)mem;
            info->compute_units = (int)cu;
        }
    }
    if (n == 0) pbf_backend_note(note, note_size, "opencl: the OpenCL platforms have no device");
    return n;
}

int pbf_opencl_default_ids(char (*ids)[PBF_DEVICE_NAME_MAX], int max) {
    cl_platform_id plat[MAX_PLATFORMS];
    cl_uint np = 0;
    if (platforms(plat, MAX_PLATFORMS, &np) != CL_SUCCESS) return 0;
    int n = 0;
    for (int t = 0; t < 2 && n == 0; ++t) /* GPUs, else every device (pick_device's order) */
        for (cl_uint p = 0; p < np; ++p) {
            cl_device_id dev[MAX_DEVICES];
            cl_uint nd = devices(plat[p], CL_DEVICE_TYPE_ALL, dev, MAX_DEVICES);
            for (cl_uint k = 0; k < nd; ++k) {
                cl_device_type type = 0;
                clGetDeviceInfo(dev[k], CL_DEVICE_TYPE, sizeof type, &type, NULL);
                if (t == 0 && !(type & CL_DEVICE_TYPE_GPU)) continue;
                if (n < max) snprintf(ids[n], PBF_DEVICE_NAME_MAX, "opencl:%u.%u", p, k);
                ++n;
            }
        }
    return n;
}

/* The device a spec names: "" the first GPU of any platform, else the first device of any type;
 * "P.D" device D of platform P. Fills *out and the indices, or err. */
static pbf_status pick_device(const char *spec, cl_device_id *out, unsigned *pi, unsigned *di,
                              pbf_error *err) {
    cl_platform_id plat[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int e = platforms(plat, MAX_PLATFORMS, &np);
    if (e != CL_SUCCESS || np == 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"opencl%s%s\": no OpenCL platform found (%s); install "
                      "an OpenCL driver (an ICD: a GPU driver's, or pocl-opencl-icd for the CPU)",
                      spec[0] ? ":" : "", spec,
                      e == CL_SUCCESS ? "none installed" : cl_error_name(e));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    char first[1][PBF_DEVICE_NAME_MAX];
    if (spec[0] == '\0') { /* the first of the default order, as pbf_opencl_default_ids lists it */
        if (pbf_opencl_default_ids(first, 1) == 0) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "device = \"opencl\": the OpenCL platforms have no device");
            return PBF_ERR_INVALID_ARGUMENT;
        }
        spec = first[0] + strlen("opencl:");
    }
    char *end = NULL;
    unsigned long p = strtoul(spec, &end, 10), k = 0;
    int ok = end != spec && *end == '.';
    if (ok) {
        const char *ds = end + 1;
        k = strtoul(ds, &end, 10);
        ok = end != ds && *end == '\0' && spec[0] >= '0' && spec[0] <= '9' && ds[0] >= '0' &&
             ds[0] <= '9';
    }
    if (!ok) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"opencl:%s\": expected opencl:PLATFORM.DEVICE with two "
                      "numbers, e.g. opencl:0.0 (`pbf devices` lists them)",
                      spec);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    cl_device_id dev[MAX_DEVICES];
    cl_uint nd = p < np ? devices(plat[p], CL_DEVICE_TYPE_ALL, dev, MAX_DEVICES) : 0;
    if (p >= np || k >= nd) {
        char have[256] = "";
        size_t used = 0;
        int total = 0;
        for (cl_uint q = 0; q < np; ++q) {
            cl_device_id dd[MAX_DEVICES];
            cl_uint m = devices(plat[q], CL_DEVICE_TYPE_ALL, dd, MAX_DEVICES);
            for (cl_uint j = 0; j < m; ++j, ++total) {
                char name[64];
                device_string(dd[j], CL_DEVICE_NAME, name, sizeof name);
                if (used + 1 < sizeof have)
                    used += (size_t)snprintf(have + used, sizeof have - used, "%sopencl:%u.%u (%s)",
                                             total ? ", " : "", q, j, name);
                if (used >= sizeof have) used = sizeof have - 1;
            }
        }
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"opencl:%s\": no such OpenCL device (platform %lu, "
                      "device %lu); this machine has %d: %s",
                      spec, p, k, total, total ? have : "none");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *out = dev[k];
    *pi = (unsigned)p;
    *di = (unsigned)k;
    return PBF_OK;
}

/* ---- launching ------------------------------------------------------------------------------ */

static size_t round_up(size_t n, size_t m) {
    return (n + m - 1) / m * m;
}

static cl_mem new_buffer(ocl_state *d, size_t bytes, const void *init);

/* The host's side of gpu_steps.h (host_ops below). The first error is kept in d->error, and the
 * rest of the step is skipped. */
static void ocl_launch(pbf_gpu_dev *g, int k, size_t items, size_t local, int nargs,
                       const pbf_gpu_arg *args) {
    ocl_state *d = (ocl_state *)g;
    if (d->error != CL_SUCCESS || items == 0) return;
    cl_int e = CL_SUCCESS;
    for (int a = 0; a < nargs && e == CL_SUCCESS; ++a)
        e = clSetKernelArg(d->kernel[k], (cl_uint)a, args[a].size, args[a].value);
    size_t global = round_up(items, local);
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, d->kernel[k], 1, NULL, &global, &local, 0, NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
}

static void ocl_copy(pbf_gpu_dev *g, pbf_gpu_mem dst, pbf_gpu_mem src, size_t bytes) {
    ocl_state *d = (ocl_state *)g;
    if (d->error != CL_SUCCESS) return;
    cl_int e = clEnqueueCopyBuffer(d->queue, src, dst, 0, 0, bytes, 0, NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
}

static void ocl_read(pbf_gpu_dev *g, pbf_gpu_mem src, size_t offset, size_t bytes, void *out,
                     int wait) {
    ocl_state *d = (ocl_state *)g;
    if (d->error != CL_SUCCESS) return;
    cl_int e = clEnqueueReadBuffer(d->queue, src, wait ? CL_TRUE : CL_FALSE, offset, bytes, out, 0,
                                   NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
}

static void ocl_write(pbf_gpu_dev *g, pbf_gpu_mem dst, size_t bytes, const void *src) {
    ocl_state *d = (ocl_state *)g;
    if (d->error != CL_SUCCESS) return;
    cl_int e = clEnqueueWriteBuffer(d->queue, dst, CL_FALSE, 0, bytes, src, 0, NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
}

static void ocl_wait(pbf_gpu_dev *g) {
    ocl_state *d = (ocl_state *)g;
    if (d->error != CL_SUCCESS) return;
    cl_int e = clFinish(d->queue);
    if (e != CL_SUCCESS) d->error = e;
}

static pbf_gpu_mem ocl_alloc(pbf_gpu_dev *g, size_t bytes) {
    return new_buffer((ocl_state *)g, bytes, NULL);
}

static void ocl_free(pbf_gpu_dev *g, pbf_gpu_mem m) {
    (void)g;
    clReleaseMemObject(m);
}

static void ocl_fail(pbf_gpu_dev *g) {
    ocl_state *d = (ocl_state *)g;
    if (d->error == CL_SUCCESS) d->error = CL_INVALID_BUFFER_SIZE;
}

static int ocl_failed(const pbf_gpu_dev *g) {
    return ((const ocl_state *)g)->error != CL_SUCCESS;
}

static const pbf_gpu_host_ops host_ops = {ocl_launch, ocl_copy,  ocl_read, ocl_write, ocl_wait,
                                          ocl_alloc,  ocl_free,  ocl_fail, ocl_failed};

static pbf_status device_failed(const pbf_world *w, const char *what, pbf_error *err);

static int ocl_run_stage(pbf_world *w, const pbf_stage_desc *stage, const pbf_step_ctx *c) {
    return pbf_gpu_run_stage(w, &DEV(w)->g, stage, c);
}

static int ocl_finish_step(pbf_world *w, pbf_bad_particle *bad) {
    return pbf_gpu_finish_step(w, &DEV(w)->g, bad);
}

static pbf_status ocl_read_rows(pbf_world *w, const int *rows, int nrows, pbf_error *err) {
    return pbf_gpu_rows(w, &DEV(w)->g, rows, nrows, 0) ? PBF_OK
                                                       : device_failed(w, "reading rows", err);
}

static pbf_status ocl_write_rows(pbf_world *w, const int *rows, int nrows, pbf_error *err) {
    return pbf_gpu_rows(w, &DEV(w)->g, rows, nrows, 1) ? PBF_OK
                                                       : device_failed(w, "writing rows", err);
}

static pbf_status ocl_gather_rows(pbf_world *w, const int *rows, int nrows, const int *idx,
                                 int n, uint32_t *out, pbf_error *err) {
    return pbf_gpu_gather(&DEV(w)->g, rows, nrows, idx, n, out)
               ? PBF_OK
               : device_failed(w, "gathering rows", err);
}

static pbf_status ocl_merge_rows(pbf_world *w, const int *rows, int nrows, const int *src, int n,
                                const uint32_t *in, int nin, pbf_error *err) {
    return pbf_gpu_merge(&DEV(w)->g, rows, nrows, src, n, in, nin)
               ? PBF_OK
               : device_failed(w, "merging rows", err);
}

static pbf_status ocl_set_rows_index(pbf_world *w, int slot, const int *idx, int n,
                                     pbf_error *err) {
    return pbf_gpu_set_index(&DEV(w)->g, slot, idx, n) ? PBF_OK
                                                        : device_failed(w, "halo indices", err);
}

static pbf_status ocl_read_rows_at(pbf_world *w, int slot, const int *rows, int nrows,
                                   uint32_t *out, pbf_error *err) {
    return pbf_gpu_rows_at(w, &DEV(w)->g, slot, rows, nrows, out, 0)
               ? PBF_OK
               : device_failed(w, "reading halo rows", err);
}

static pbf_status ocl_write_rows_at(pbf_world *w, int slot, const int *rows, int nrows,
                                    const uint32_t *in, pbf_error *err) {
    return pbf_gpu_rows_at(w, &DEV(w)->g, slot, rows, nrows, (void *)(uintptr_t)in, 1)
               ? PBF_OK
               : device_failed(w, "writing halo rows", err);
}

static void ocl_refresh(pbf_world *w) {
    pbf_gpu_refresh(w, &DEV(w)->g);
}

static void ocl_sync(pbf_world *w) {
    ocl_state *d = DEV(w);
    if (d->error == CL_SUCCESS) {
        cl_int e = clFinish(d->queue);
        if (e != CL_SUCCESS) d->error = e;
    }
}

static void ocl_boxes_changed(pbf_world *w) {
    ocl_state *d = DEV(w);
    if (w->nboxes == 0 || d->error != CL_SUCCESS) return;
    cl_int e = clEnqueueWriteBuffer(d->queue, d->g.boxes, CL_TRUE, 0,
                                    (size_t)w->nboxes * sizeof(pbf_wall_box), w->wall_boxes, 0,
                                    NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
}

static pbf_status device_failed(const pbf_world *w, const char *what, pbf_error *err) {
    ocl_state *d = DEV(w);
    pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "%s: %s failed (%s, %d)", d->label, what,
                  cl_error_name(d->error), (int)d->error);
    return PBF_ERR_OUT_OF_MEMORY;
}

static pbf_status ocl_upload(pbf_world *w, pbf_error *err) {
    ocl_state *d = DEV(w);
    const size_t bytes = (size_t)w->count * 4;
    d->g.stats_ready = 0;
    for (int f = 0; f < PBF_FIELD_COUNT && bytes && d->error == CL_SUCCESS; ++f) {
        if (!(pbf_fields[f].flags & PBF_FIELD_STATE)) continue;
        cl_int e = clEnqueueWriteBuffer(d->queue, d->g.field[f], CL_FALSE, 0, bytes, w->field[f], 0,
                                        NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    pbf_gpu_zero_warm(w, &d->g);
    ocl_boxes_changed(w);
    ocl_sync(w);
    if (d->error != CL_SUCCESS) return device_failed(w, "upload", err);
    w->host_stale = 0;
    return PBF_OK;
}

static pbf_status ocl_download(pbf_world *w, pbf_error *err) {
    ocl_state *d = DEV(w);
    const size_t bytes = (size_t)w->count * 4;
    for (int f = 0; f < PBF_FIELD_COUNT && bytes && d->error == CL_SUCCESS; ++f) {
        if (!(pbf_fields[f].flags & PBF_FIELD_STATE)) continue;
        cl_int e = clEnqueueReadBuffer(d->queue, d->g.field[f], CL_FALSE, 0, bytes, w->field[f], 0,
                                       NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    ocl_sync(w);
    if (d->error != CL_SUCCESS) return device_failed(w, "download", err);
    return PBF_OK;
}

/* Device buffer of `bytes`, zero-filled (so that the allocation happens now, where a failure can
 * still be reported); NULL on failure with d->error set. */
static cl_mem new_buffer(ocl_state *d, size_t bytes, const void *init) {
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)init, &e);
    if (e == CL_SUCCESS && !init) {
        const cl_uint zero = 0;
        e = clEnqueueFillBuffer(d->queue, m, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
    }
    if (e != CL_SUCCESS) {
        if (m) clReleaseMemObject(m);
        d->error = e;
        return NULL;
    }
    return m;
}

/* Block-sum buffers for scans of up to `count` entries (every level, down to one block). */
static int scan_buffers(ocl_state *d, size_t count) {
    if (count <= d->scan_count) return 1;
    int levels = 0;
    size_t c = count;
    do {
        c = (c + 2 * d->g.scan_wg - 1) / (2 * d->g.scan_wg);
        levels++;
    } while (c > 1);
    if (levels > PBF_GPU_MAX_SCAN_LEVELS) return 0;
    c = count;
    for (int l = 0; l < levels && d->error == CL_SUCCESS; ++l) {
        c = (c + 2 * d->g.scan_wg - 1) / (2 * d->g.scan_wg);
        if (d->g.scan_sums[l]) clReleaseMemObject(d->g.scan_sums[l]);
        d->g.scan_sums[l] = new_buffer(d, c * sizeof(cl_uint), NULL);
    }
    if (d->error != CL_SUCCESS) return 0;
    d->g.scan_levels = levels;
    d->scan_count = count;
    return 1;
}

/* Bytes of the device buffers that do not depend on the capacity. */
static size_t fixed_bytes(const pbf_world *w) {
    const ocl_state *d = DEV(w);
    size_t bytes = ((size_t)w->grid.ncells + 1) * sizeof(cl_uint);
    size_t count = (size_t)w->grid.ncells + 1;
    while (count > 1) {
        count = (count + 2 * d->g.scan_wg - 1) / (2 * d->g.scan_wg);
        bytes += count * sizeof(cl_uint);
    }
    const size_t n3 = (size_t)w->walls.n * (size_t)w->walls.n * (size_t)w->walls.n;
    bytes += 2 * n3 * sizeof(float) + PBF_MAX_BOXES * sizeof(pbf_wall_box);
    bytes += (size_t)(pbf_gpu_slots_per_substep(&w->def) + 2) * sizeof(cl_int) +
             sizeof(pbf_gpu_bad) + 2 * sizeof(double);
    return bytes;
}

static pbf_status ocl_reserve(pbf_world *w, int capacity, pbf_error *err) {
    ocl_state *d = DEV(w);
    if (capacity <= d->capacity) return PBF_OK;
    const size_t elems = (size_t)capacity + PBF_ARRAY_PADDING;
    const size_t per_array = elems * 4;
    const size_t arrays = pbf_fields_solver_bytes(PBF_FIELD_CPU, &w->def) / 4;
    const size_t chunk = d->g.stats_wg * PBF_STATS_PER_ITEM;
    const size_t chunks = ((size_t)capacity + chunk - 1) / chunk;
    const size_t partial_bytes = chunks * PBF_STATS_VALUES * sizeof(double);
    const double total =
        (double)per_array * (double)arrays + (double)fixed_bytes(w) + (double)partial_bytes;
    if ((double)per_array > (double)d->max_alloc) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: %d particles need %.1f MiB per particle array, more than the device's "
                      "largest buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE = %.1f MiB)",
                      d->label, capacity, (double)per_array / 1048576.0,
                      (double)d->max_alloc / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    if (total > (double)d->global_mem) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: %d particles need %.1f MiB of device memory (%zu arrays of %zu bytes "
                      "per particle, plus %.1f MiB of grid and tables), more than the device's "
                      "%.1f MiB (CL_DEVICE_GLOBAL_MEM_SIZE)",
                      d->label, capacity, total / 1048576.0, arrays, (size_t)4,
                      (double)fixed_bytes(w) / 1048576.0, (double)d->global_mem / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    /* grow one array at a time (old and new coexist for one array only) */
    const size_t keep = (size_t)w->count * 4;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        if ((pbf_fields[f].flags & PBF_FIELD_CPU) || !pbf_field_in_solver(f, &w->def))
            continue;
        cl_mem grown = new_buffer(d, per_array, NULL);
        if (!grown) break;
        if (d->g.field[f] && keep) {
            cl_int e = clEnqueueCopyBuffer(d->queue, d->g.field[f], grown, 0, 0, keep, 0, NULL, NULL);
            if (e == CL_SUCCESS) e = clFinish(d->queue);
            if (e != CL_SUCCESS) {
                clReleaseMemObject(grown);
                d->error = e;
                break;
            }
        }
        if (d->g.field[f]) clReleaseMemObject(d->g.field[f]);
        d->g.field[f] = grown;
    }
    if (d->g.lists && d->error == CL_SUCCESS) { /* list offsets: capacity + 1, and their scan */
        cl_mem off = new_buffer(d, ((size_t)capacity + 1) * sizeof(cl_uint), NULL);
        if (off) {
            if (d->g.nbr_off) clReleaseMemObject(d->g.nbr_off);
            d->g.nbr_off = off;
            if (!scan_buffers(d, (size_t)capacity + 1) && d->error == CL_SUCCESS)
                d->error = CL_INVALID_BUFFER_SIZE;
        }
    }
    void *host = NULL;
    if (d->error == CL_SUCCESS) {
        cl_mem partial = new_buffer(d, partial_bytes, NULL);
        host = partial ? malloc(partial_bytes) : NULL;
        if (partial && host) {
            if (d->g.partial) clReleaseMemObject(d->g.partial);
            free(d->g.host_partial);
            d->g.partial = partial;
            d->g.host_partial = host;
            d->g.chunks_cap = chunks;
        } else if (partial) {
            clReleaseMemObject(partial);
        }
    }
    if (d->error == CL_SUCCESS) ocl_sync(w);
    if (d->error != CL_SUCCESS || !host) {
        pbf_status s = PBF_ERR_OUT_OF_MEMORY;
        pbf_set_error(err, s, "%s: cannot allocate %d particles (%.1f MiB of device memory): %s",
                      d->label, capacity, total / 1048576.0,
                      d->error != CL_SUCCESS ? cl_error_name(d->error) : "host out of memory");
        d->error = CL_SUCCESS; /* the world keeps its previous capacity and state */
        return s;
    }
    d->capacity = capacity;
    return PBF_OK;
}

static void ocl_release(pbf_world *w) {
    ocl_state *d = DEV(w);
    if (!d) return;
    if (d->queue) clFinish(d->queue);
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (d->g.field[f]) clReleaseMemObject(d->g.field[f]);
    cl_mem others[] = {d->g.cell_start, d->g.F,       d->g.G,       d->g.boxes,  d->g.bad,
                       d->g.bad_info,   d->g.partial, d->g.nbr_off, d->g.nbr_idx, d->g.solve_out,
                       d->g.ghost,      d->g.halo_idx[0], d->g.halo_idx[1], d->g.halo_idx[2],
                       d->g.halo_buf,   d->g.merge_in,    d->g.wnorm};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i)
        if (others[i]) clReleaseMemObject(others[i]);
    for (int l = 0; l < PBF_GPU_MAX_SCAN_LEVELS; ++l)
        if (d->g.scan_sums[l]) clReleaseMemObject(d->g.scan_sums[l]);
    for (int k = 0; k < PBF_GK_COUNT; ++k)
        if (d->kernel[k]) clReleaseKernel(d->kernel[k]);
    if (d->program) clReleaseProgram(d->program);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->ctx) clReleaseContext(d->ctx);
    free(d->g.step.log);
    free(d->g.host_partial);
    free(d);
    w->dev = NULL;
}

static size_t ocl_list_bytes(const pbf_world *w) {
    const ocl_state *d = DEV(w);
    return d->g.lists ? ((size_t)d->capacity + 1 + d->g.nbr_idx_cap) * sizeof(cl_uint) : 0;
}

/* ---- opening -------------------------------------------------------------------------------- */

static size_t pow2_floor(size_t v) {
    size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

/* Compiles the embedded kernel source for the device; on failure fills err with the start of
 * the build log. */
static pbf_status build(ocl_state *d, cl_device_id dev, pbf_error *err) {
    cl_int e = CL_SUCCESS;
    d->program = clCreateProgramWithSource(d->ctx, (cl_uint)pbf_opencl_kernel_line_count,
                                           (const char **)pbf_opencl_kernel_lines, NULL, &e);
    if (e != CL_SUCCESS) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: cannot create the kernel program (%s)",
                      d->label, cl_error_name(e));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    cl_device_fp_config single = 0;
    clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single, &single, NULL);
    char options[320];
    cl_device_type type = 0;
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    const int cpu = (type & CL_DEVICE_TYPE_CPU) != 0; /* vector lanes, lists: pbf_kernels.cl */
    d->g.lists = cpu;
    snprintf(
        options, sizeof options,
        "-cl-std=CL1.2 -DPBF_LANES=%d -DPBF_TEST_BLOCK=%uu -DPBF_LANES_ALL=1 "
        "-DPBF_LISTS=%d -DPBF_SCAN_WG=%zu -DPBF_STATS_WG=%zu%s%s",
        PBF_LANES, cpu ? 8u : 1u, cpu, d->g.scan_wg, d->g.stats_wg, d->g.fp64 ? " -DPBF_CELL_FP64=1" : "",
        (single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? " -cl-fp32-correctly-rounded-divide-sqrt"
                                                       : "");
    e = clBuildProgram(d->program, 1, &dev, options, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[400] = "";
        size_t len = 0;
        clGetProgramBuildInfo(d->program, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &len);
        log[sizeof log - 1] = '\0';
        if (len == 0 || len > sizeof log) { /* too long for the buffer: take its start */
            size_t full = 0;
            clGetProgramBuildInfo(d->program, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &full);
            char *all = full ? malloc(full + 1) : NULL;
            if (all && clGetProgramBuildInfo(d->program, dev, CL_PROGRAM_BUILD_LOG, full, all,
                                             NULL) == CL_SUCCESS) {
                all[full] = '\0';
                snprintf(log, sizeof log, "%s", all);
            }
            free(all);
        }
        for (char *c = log; *c; ++c)
            if (*c == '\n') *c = ' ';
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: kernel build failed (%s): %s", d->label,
                      cl_error_name(e), log[0] ? log : "(empty build log)");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    for (int k = 0; k < PBF_GK_COUNT; ++k) {
        d->kernel[k] = clCreateKernel(d->program, kernel_names[k], &e);
        if (e != CL_SUCCESS) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: kernel %s: %s", d->label,
                          kernel_names[k], cl_error_name(e));
            return PBF_ERR_INVALID_ARGUMENT;
        }
    }
    /* work-groups the device can run for the kernels with shared arrays */
    size_t kmax = 0;
    clGetKernelWorkGroupInfo(d->kernel[PBF_GK_SCAN_BLOCKS], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                             &kmax, NULL);
    size_t smax = 0, emax = 0; /* the statistics and the solves' errors: PBF_STATS_WG */
    clGetKernelWorkGroupInfo(d->kernel[PBF_GK_STATS], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof smax, &smax,
                             NULL);
    clGetKernelWorkGroupInfo(d->kernel[PBF_GK_EXCESS], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof emax,
                             &emax, NULL);
    if (emax < smax) smax = emax;
    if (kmax < d->g.scan_wg || smax < d->g.stats_wg) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: the scan and statistics kernels need work-groups of %zu and %zu, the "
                      "device runs them with at most %zu and %zu",
                      d->label, d->g.scan_wg, d->g.stats_wg, kmax, smax);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

/* The structs passed by value and in buffers have the host's layout on the device. */
static pbf_status check_layout(ocl_state *d, pbf_error *err) {
    cl_uint sizes[3] = {0, 0, 0};
    cl_mem out = new_buffer(d, sizeof sizes, NULL);
    PBF_GPU_LAUNCH(&d->g, PBF_GK_LAYOUT, 1, 1, PBF_GPU_A(out));
    if (d->error == CL_SUCCESS) {
        cl_int e =
            clEnqueueReadBuffer(d->queue, out, CL_TRUE, 0, sizeof sizes, sizes, 0, NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    if (out) clReleaseMemObject(out);
    if (d->error != CL_SUCCESS) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: the device cannot run a kernel (%s)",
                      d->label, cl_error_name(d->error));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    const cl_uint want[3] = {sizeof(pbf_gpu_params), sizeof(pbf_wall_box), sizeof(pbf_gpu_bad)};
    if (memcmp(sizes, want, sizeof want) != 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: the device lays out the kernel structs differently from the host "
                      "(sizes %u/%u/%u, host %u/%u/%u)",
                      d->label, sizes[0], sizes[1], sizes[2], want[0], want[1], want[2]);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

/* Grid, tables, boxes and guard buffers (fixed for the world's life). */
static pbf_status fixed_buffers(pbf_world *w, pbf_error *err) {
    ocl_state *d = DEV(w);
    const size_t cells = (size_t)w->grid.ncells + 1;
    if ((double)cells * 4.0 > (double)d->max_alloc) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: the grid's %zu cells need %.1f MiB, more than the device's largest "
                      "buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE = %.1f MiB)",
                      d->label, cells, (double)cells * 4.0 / 1048576.0,
                      (double)d->max_alloc / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    if ((double)fixed_bytes(w) > (double)d->global_mem) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: the grid and tables need %.1f MiB, more than the device's %.1f MiB",
                      d->label, (double)fixed_bytes(w) / 1048576.0,
                      (double)d->global_mem / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    d->g.cell_start = new_buffer(d, cells * sizeof(cl_uint), NULL);
    const int scan_ok = scan_buffers(d, cells);
    const size_t n3 = (size_t)w->walls.n * (size_t)w->walls.n * (size_t)w->walls.n;
    d->g.F = new_buffer(d, n3 * sizeof(float), w->walls.F);
    d->g.G = new_buffer(d, n3 * sizeof(float), w->walls.G);
    d->g.boxes = new_buffer(d, PBF_MAX_BOXES * sizeof(pbf_wall_box), NULL);
    /* the launches of a substep: predict or gravity, the solve's iterations, velocity and curl,
     * post; then the predict slot followed through the sort and the speed-limit cuts */
    d->g.step.nslots = pbf_gpu_slots_per_substep(&w->def);
    d->g.map_slot = d->g.step.nslots;
    const pbf_gpu_bad nobody = {-1, INT_MAX, 0u, 0.0f, 0.0f, 0.0f};
    d->g.nobody = nobody;
    d->g.bad = new_buffer(d, (size_t)(d->g.step.nslots + 2) * sizeof(cl_int), NULL);
    d->g.solve_out = new_buffer(d, 2 * sizeof(double), NULL);
    d->g.bad_info = new_buffer(d, sizeof(pbf_gpu_bad), NULL);
    if (d->error == CL_SUCCESS) ocl_sync(w);
    if (!scan_ok || d->error != CL_SUCCESS) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "%s: cannot allocate the grid (%u cells) and tables: %s", d->label,
                      w->grid.ncells, cl_error_name(d->error));
        return PBF_ERR_OUT_OF_MEMORY;
    }
    return PBF_OK;
}

pbf_status pbf_opencl_open(pbf_world *w, const char *spec, pbf_error *err) {
    cl_device_id dev = NULL;
    unsigned pi = 0, di = 0;
    pbf_status s = pick_device(spec ? spec : "", &dev, &pi, &di, err);
    if (s != PBF_OK) return s;
    ocl_state *d = calloc(1, sizeof *d);
    if (!d) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "opencl backend: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    w->dev = d;
    d->g.host = &host_ops;
    char name[128];
    device_string(dev, CL_DEVICE_NAME, name, sizeof name);
    snprintf(d->label, sizeof d->label, "opencl:%u.%u (%s)", pi, di, name);

    cl_device_fp_config dbl = 0;
    clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL);
    d->g.fp64 = dbl != 0;
    size_t max_wg = 1;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    max_wg = pow2_floor(max_wg ? max_wg : 1);
    d->g.wg = max_wg < PARTICLE_WG ? max_wg : PARTICLE_WG;
    d->g.scan_wg = max_wg < 256 ? max_wg : 256;
    d->g.stats_wg = d->g.scan_wg;

    cl_int e = CL_SUCCESS;
    d->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    if (e == CL_SUCCESS) d->queue = clCreateCommandQueue(d->ctx, dev, 0, &e);
    if (e != CL_SUCCESS) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: cannot open the device (%s)", d->label,
                      cl_error_name(e));
        ocl_release(w);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    s = build(d, dev, err);
    if (s == PBF_OK) s = check_layout(d, err);
    if (s == PBF_OK) s = fixed_buffers(w, err);
    if (s != PBF_OK) {
        ocl_release(w);
        return s;
    }
    w->backend = &pbf_backend_opencl;
    return PBF_OK;
}

const pbf_backend_ops pbf_backend_opencl = {
    .name = "opencl",
    .host_keep = PBF_FIELD_STATE, /* the host holds a copy of the state only */
    .reserve = ocl_reserve,
    .upload = ocl_upload,
    .download = ocl_download,
    .boxes_changed = ocl_boxes_changed,
    .run_stage = ocl_run_stage,
    .refresh = ocl_refresh,
    .sync = ocl_sync,
    .finish_step = ocl_finish_step,
    .release = ocl_release,
    .read_rows = ocl_read_rows,
    .write_rows = ocl_write_rows,
    .set_rows_index = ocl_set_rows_index,
    .read_rows_at = ocl_read_rows_at,
    .write_rows_at = ocl_write_rows_at,
    .gather_rows = ocl_gather_rows,
    .merge_rows = ocl_merge_rows,
    .list_bytes = ocl_list_bytes,
};
