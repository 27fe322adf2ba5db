/*
 * The CUDA backend: the stages of the step (src/core.c) as the kernels of
 * backends/gpu/pbf_kernels.cl, compiled by nvcc from that same source (included below), on device
 * buffers that stay on the device between steps.
 *
 * The step's launch sequence (which kernels each stage runs, in which order, with which
 * arguments, and the buffers' roles) is gpu/gpu_steps.c and the methods'
 * src/solvers/<method>/<method>_gpu.c (gpu/gpu_steps.h), plain C compiled once and shared with
 * the OpenCL backend (backends/opencl/opencl.c): this file is its CUDA side (host_ops), the
 * buffers and cudaLaunchKernel (the same (size, pointer) argument lists the OpenCL runtime
 * checks for the same kernels), plus devices, memory and transfers. One stream; host traffic
 * only in upload/download, boxes_changed, the read of a solve's error per iteration where a
 * tolerance stops it, and the end-of-step read of the statistics, the first non-finite particle
 * and the solves' last errors.
 * No neighbour lists (a GPU: the kernels search the cells).
 *
 * Build: cmake/cuda.cmake (--fmad=false, IEEE division and square root, PBF_LANES of the CPU
 * backend). The grid cells and the statistics partials are in double (pbf_gpu_real).
 */
#include <cuda_runtime.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the kernels: the one kernel source of the GPU backends */
#include "backends/gpu/gpu_prelude.h"
#include "backends/gpu/pbf_kernels.cl"

extern "C" {
#include "internal.h"
}
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h" /* the step's launch sequence, shared with opencl.c */

extern "C" {
pbf_status pbf_cuda_open(pbf_world *w, const char *spec, pbf_error *err);
int pbf_cuda_list(pbf_device_info *out, int max, char *note, size_t note_size);
extern const pbf_backend_ops pbf_backend_cuda;
}

#define PARTICLE_WG 128 /* block of the per-particle kernels, as opencl.c */
#define SCAN_WG PBF_SCAN_WG
#define STATS_WG PBF_STATS_WG

/* the kernels, in the order of gpu_steps.h's ids */
#define KERNEL_FN(id, fn) (const void *)fn,
static const void *const kernels[PBF_GK_COUNT] = {PBF_GPU_KERNELS(KERNEL_FN)};
#undef KERNEL_FN

typedef struct cuda_state {
    pbf_gpu_dev g; /* the buffers and bookkeeping of the shared sequence (gpu_steps.h): first */
    int device;
    cudaStream_t stream;
    char label[192]; /* "cuda:N (name)", for messages */
    cudaError_t error; /* first CUDA error of a step (the step has no error path) */
    int capacity;
} cuda_state;

#define DEV(w) ((cuda_state *)(w)->dev)

static void keep(cuda_state *d, cudaError_t e) {
    if (e != cudaSuccess && d->error == cudaSuccess) d->error = e;
}

/* after a launch: the first launch error is kept */
#define CHECK_LAUNCH(d) keep((d), cudaGetLastError())

static unsigned int blocks_for(size_t items, size_t block) {
    return (unsigned int)((items + block - 1) / block);
}

/* ---- devices -------------------------------------------------------------------------------- */

static void version_string(int v, char *out, size_t size) {
    snprintf(out, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

int pbf_cuda_list(pbf_device_info *out, int max, char *note, size_t note_size) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        char text[256];
        snprintf(text, sizeof text, "cuda: no usable CUDA device (cudaGetDeviceCount: %s: %s)",
                 cudaGetErrorName(e), cudaGetErrorString(e));
        pbf_backend_note(note, note_size, text);
        (void)cudaGetLastError();
        return 0;
    }
    if (count == 0) {
        pbf_backend_note(note, note_size, "cuda: the CUDA driver reports no device");
        return 0;
    }
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    char dv[16], rv[16];
    version_string(drv, dv, sizeof dv);
    version_string(rt, rv, sizeof rv);
    for (int k = 0; k < count; ++k) {
        if (!out || k >= max) continue;
        pbf_device_info *info = &out[k];
        memset(info, 0, sizeof *info);
        snprintf(info->id, sizeof info->id, "cuda:%d", k);
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, k) == cudaSuccess) {
            snprintf(info->name, sizeof info->name, "%.*s", (int)sizeof info->name - 1, prop.name);
            info->memory = prop.totalGlobalMem;
            info->compute_units = prop.multiProcessorCount;
        } else {
            (void)cudaGetLastError();
            snprintf(info->name, sizeof info->name, "CUDA device %d", k);
        }
        snprintf(info->driver, sizeof info->driver, "CUDA driver %s, runtime %s", dv, rv);
    }
    return count;
}

/* ---- the host's side of gpu_steps.h ---------------------------------------------------------- */

static void cu_sync(pbf_world *w) {
    cuda_state *d = DEV(w);
    if (d->error == cudaSuccess) keep(d, cudaStreamSynchronize(d->stream));
}

static void *new_buffer(cuda_state *d, size_t bytes, const void *init);

/* cudaLaunchKernel takes the arguments as an array of pointers to their values: the (size,
 * pointer) list of gpu_steps.h, whose sizes the OpenCL runtime checks for the same kernels. */
static void cu_launch(pbf_gpu_dev *g, int k, size_t items, size_t local, int nargs,
                      const pbf_gpu_arg *args) {
    cuda_state *d = (cuda_state *)g;
    if (d->error != cudaSuccess || items == 0) return;
    void *values[32];
    if (nargs > (int)(sizeof values / sizeof values[0])) {
        keep(d, cudaErrorInvalidValue);
        return;
    }
    for (int a = 0; a < nargs; ++a) values[a] = const_cast<void *>(args[a].value);
    keep(d, cudaLaunchKernel(kernels[k], dim3(blocks_for(items, local)), dim3((unsigned)local),
                             values, 0, d->stream));
    CHECK_LAUNCH(d);
}

static void cu_copy(pbf_gpu_dev *g, void *dst, void *src, size_t bytes) {
    cuda_state *d = (cuda_state *)g;
    if (d->error != cudaSuccess) return;
    keep(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d->stream));
}

static void cu_read(pbf_gpu_dev *g, void *src, size_t offset, size_t bytes, void *out,
                    int wait) {
    cuda_state *d = (cuda_state *)g;
    if (d->error != cudaSuccess) return;
    keep(d, cudaMemcpyAsync(out, (const char *)src + offset, bytes, cudaMemcpyDeviceToHost,
                            d->stream));
    if (wait && d->error == cudaSuccess) keep(d, cudaStreamSynchronize(d->stream));
}

static void cu_write(pbf_gpu_dev *g, void *dst, size_t bytes, const void *src) {
    cuda_state *d = (cuda_state *)g;
    if (d->error != cudaSuccess) return;
    keep(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, d->stream));
}

static void cu_wait(pbf_gpu_dev *g) {
    cuda_state *d = (cuda_state *)g;
    if (d->error == cudaSuccess) keep(d, cudaStreamSynchronize(d->stream));
}

static void *cu_alloc(pbf_gpu_dev *g, size_t bytes) {
    return new_buffer((cuda_state *)g, bytes, NULL);
}

static void cu_free(pbf_gpu_dev *g, void *m) {
    (void)g;
    cudaFree(m);
}

static void cu_fail(pbf_gpu_dev *g) {
    keep((cuda_state *)g, cudaErrorInvalidValue);
}

static int cu_failed(const pbf_gpu_dev *g) {
    return ((const cuda_state *)g)->error != cudaSuccess;
}

static const pbf_gpu_host_ops host_ops = {cu_launch, cu_copy, cu_read, cu_write, cu_wait,
                                          cu_alloc,  cu_free, cu_fail, cu_failed};

static int cu_run_stage(pbf_world *w, const pbf_stage_desc *stage, const pbf_step_ctx *c) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_run_stage(w, &DEV(w)->g, stage, c);
}

static int cu_finish_step(pbf_world *w, pbf_bad_particle *bad) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_finish_step(w, &DEV(w)->g, bad);
}

static void cu_refresh(pbf_world *w) {
    cudaSetDevice(DEV(w)->device);
    pbf_gpu_refresh(w, &DEV(w)->g);
}

static void cu_boxes_changed(pbf_world *w) {
    cuda_state *d = DEV(w);
    if (w->nboxes == 0 || d->error != cudaSuccess) return;
    cudaSetDevice(d->device);
    /* synchronous: the host array changes before the next step */
    keep(d, cudaMemcpy(d->g.boxes, w->wall_boxes, (size_t)w->nboxes * sizeof(pbf_wall_box),
                       cudaMemcpyHostToDevice));
}

static pbf_status device_failed(const pbf_world *w, const char *what, pbf_error *err) {
    cuda_state *d = DEV(w);
    pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "%s: %s failed (%s: %s)", d->label, what,
                  cudaGetErrorName(d->error), cudaGetErrorString(d->error));
    return PBF_ERR_OUT_OF_MEMORY;
}

static pbf_status cu_upload(pbf_world *w, pbf_error *err) {
    cuda_state *d = DEV(w);
    cudaSetDevice(d->device);
    const size_t bytes = (size_t)w->count * 4;
    d->g.stats_ready = 0;
    for (int f = 0; f < PBF_FIELD_COUNT && bytes && d->error == cudaSuccess; ++f) {
        if (!(pbf_fields[f].flags & PBF_FIELD_STATE)) continue;
        keep(d, cudaMemcpyAsync(d->g.field[f], w->field[f], bytes, cudaMemcpyHostToDevice,
                                d->stream));
    }
    pbf_gpu_zero_warm(w, &d->g);
    cu_sync(w);
    cu_boxes_changed(w);
    if (d->error != cudaSuccess) return device_failed(w, "upload", err);
    w->host_stale = 0;
    return PBF_OK;
}

static pbf_status cu_download(pbf_world *w, pbf_error *err) {
    cuda_state *d = DEV(w);
    cudaSetDevice(d->device);
    const size_t bytes = (size_t)w->count * 4;
    for (int f = 0; f < PBF_FIELD_COUNT && bytes && d->error == cudaSuccess; ++f) {
        if (!(pbf_fields[f].flags & PBF_FIELD_STATE)) continue;
        keep(d, cudaMemcpyAsync(w->field[f], d->g.field[f], bytes, cudaMemcpyDeviceToHost,
                                d->stream));
    }
    cu_sync(w);
    if (d->error != cudaSuccess) return device_failed(w, "download", err);
    return PBF_OK;
}

static pbf_status cu_read_rows(pbf_world *w, const int *rows, int nrows, pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_rows(w, &DEV(w)->g, rows, nrows, 0) ? PBF_OK
                                                       : device_failed(w, "reading rows", err);
}

static pbf_status cu_write_rows(pbf_world *w, const int *rows, int nrows, pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_rows(w, &DEV(w)->g, rows, nrows, 1) ? PBF_OK
                                                       : device_failed(w, "writing rows", err);
}

static pbf_status cu_gather_rows(pbf_world *w, const int *rows, int nrows, const int *idx,
                                 int n, uint32_t *out, pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_gather(&DEV(w)->g, rows, nrows, idx, n, out)
               ? PBF_OK
               : device_failed(w, "gathering rows", err);
}

static pbf_status cu_merge_rows(pbf_world *w, const int *rows, int nrows, const int *src, int n,
                                const uint32_t *in, int nin, pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_merge(&DEV(w)->g, rows, nrows, src, n, in, nin)
               ? PBF_OK
               : device_failed(w, "merging rows", err);
}

static pbf_status cu_set_rows_index(pbf_world *w, int slot, const int *idx, int n,
                                    pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_set_index(&DEV(w)->g, slot, idx, n) ? PBF_OK
                                                        : device_failed(w, "halo indices", err);
}

static pbf_status cu_read_rows_at(pbf_world *w, int slot, const int *rows, int nrows,
                                  uint32_t *out, pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_rows_at(w, &DEV(w)->g, slot, rows, nrows, out, 0)
               ? PBF_OK
               : device_failed(w, "reading halo rows", err);
}

static pbf_status cu_write_rows_at(pbf_world *w, int slot, const int *rows, int nrows,
                                   const uint32_t *in, pbf_error *err) {
    cudaSetDevice(DEV(w)->device);
    return pbf_gpu_rows_at(w, &DEV(w)->g, slot, rows, nrows, (void *)(uintptr_t)in, 1)
               ? PBF_OK
               : device_failed(w, "writing halo rows", err);
}

/* Zero-filled device buffer (NULL with d->error set on failure), optionally copied from init. */
static void *new_buffer(cuda_state *d, size_t bytes, const void *init) {
    void *m = NULL;
    cudaError_t e = cudaMalloc(&m, bytes ? bytes : 4);
    if (e == cudaSuccess)
        e = init ? cudaMemcpy(m, init, bytes, cudaMemcpyHostToDevice)
                 : cudaMemset(m, 0, bytes ? bytes : 4);
    if (e != cudaSuccess) {
        if (m) cudaFree(m);
        keep(d, e);
        (void)cudaGetLastError();
        return NULL;
    }
    return m;
}

static size_t fixed_bytes(const pbf_world *w, int nslots) {
    size_t bytes = ((size_t)w->grid.ncells + 1) * sizeof(unsigned int);
    size_t count = (size_t)w->grid.ncells + 1;
    while (count > 1) {
        count = (count + 2 * SCAN_WG - 1) / (2 * SCAN_WG);
        bytes += count * sizeof(unsigned int);
    }
    const size_t n3 = (size_t)w->walls.n * (size_t)w->walls.n * (size_t)w->walls.n;
    bytes += 2 * n3 * sizeof(float) + PBF_MAX_BOXES * sizeof(pbf_wall_box);
    bytes += (size_t)(nslots + 2) * sizeof(int) + sizeof(pbf_gpu_bad) + 2 * sizeof(double);
    return bytes;
}

static pbf_status cu_reserve(pbf_world *w, int capacity, pbf_error *err) {
    cuda_state *d = DEV(w);
    if (capacity <= d->capacity) return PBF_OK;
    cudaSetDevice(d->device);
    const size_t elems = (size_t)capacity + PBF_ARRAY_PADDING;
    const size_t per_array = elems * 4;
    const size_t arrays = pbf_fields_solver_bytes(PBF_FIELD_CPU, &w->def) / 4;
    const size_t chunks = pbf_gpu_stats_chunks(&d->g, capacity);
    const size_t partial_bytes = (chunks ? chunks : 1) * PBF_STATS_VALUES * sizeof(double);
    const double total = (double)per_array * (double)arrays +
                         (double)fixed_bytes(w, d->g.step.nslots) + (double)partial_bytes;
    /* what this world holds now counts as available (it is replaced, one array at a time) */
    const size_t held_per_array =
        d->capacity > 0 ? ((size_t)d->capacity + PBF_ARRAY_PADDING) * 4 : 0;
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: cudaMemGetInfo failed (%s: %s)",
                      d->label, cudaGetErrorName(e), cudaGetErrorString(e));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    const double need = (double)(per_array - held_per_array) * (double)arrays +
                        (double)partial_bytes + (double)per_array;
    if (total > (double)total_b || need > (double)free_b) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: %d particles need %.1f MiB of device memory (%zu arrays of %zu bytes "
                      "per particle, plus %.1f MiB of grid and tables); the device has %.1f MiB "
                      "free of %.1f MiB (cudaMemGetInfo)",
                      d->label, capacity, total / 1048576.0, arrays, (size_t)4,
                      (double)fixed_bytes(w, d->g.step.nslots) / 1048576.0,
                      (double)free_b / 1048576.0,
                      (double)total_b / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    cu_sync(w);
    const size_t keep_bytes = (size_t)w->count * 4;
    for (int f = 0; f < PBF_FIELD_COUNT && d->error == cudaSuccess; ++f) {
        if ((pbf_fields[f].flags & PBF_FIELD_CPU) || !pbf_field_in_solver(f, &w->def))
            continue;
        void *grown = new_buffer(d, per_array, NULL);
        if (!grown) break;
        if (d->g.field[f] && keep_bytes) {
            cudaError_t c = cudaMemcpy(grown, d->g.field[f], keep_bytes, cudaMemcpyDeviceToDevice);
            if (c != cudaSuccess) {
                cudaFree(grown);
                keep(d, c);
                break;
            }
        }
        if (d->g.field[f]) cudaFree(d->g.field[f]);
        d->g.field[f] = grown;
    }
    double *host = NULL;
    if (d->error == cudaSuccess) {
        double *partial = (double *)new_buffer(d, partial_bytes, NULL);
        host = partial ? (double *)malloc(partial_bytes) : NULL;
        if (partial && host) {
            if (d->g.partial) cudaFree(d->g.partial);
            free(d->g.host_partial);
            d->g.partial = partial;
            d->g.host_partial = host;
            d->g.chunks_cap = chunks;
        } else if (partial) {
            cudaFree(partial);
        }
    }
    if (d->error != cudaSuccess || !host) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "%s: cannot allocate %d particles (%.1f MiB of device memory): %s", d->label,
                      capacity, total / 1048576.0,
                      d->error != cudaSuccess ? cudaGetErrorString(d->error)
                                              : "host out of memory");
        d->error = cudaSuccess; /* the world keeps its previous capacity and state */
        (void)cudaGetLastError();
        return PBF_ERR_OUT_OF_MEMORY;
    }
    d->capacity = capacity;
    return PBF_OK;
}

static void cu_release(pbf_world *w) {
    cuda_state *d = DEV(w);
    if (!d) return;
    cudaSetDevice(d->device);
    if (d->stream) cudaStreamSynchronize(d->stream);
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (d->g.field[f]) cudaFree(d->g.field[f]);
    void *others[] = {d->g.cell_start, d->g.F,        d->g.G,       d->g.boxes,
                      d->g.bad,        d->g.bad_info, d->g.partial, d->g.solve_out,
                      d->g.ghost,      d->g.halo_idx[0], d->g.halo_idx[1], d->g.halo_idx[2],
                      d->g.halo_buf,   d->g.merge_in,    d->g.wnorm};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i)
        if (others[i]) cudaFree(others[i]);
    for (int l = 0; l < PBF_GPU_MAX_SCAN_LEVELS; ++l)
        if (d->g.scan_sums[l]) cudaFree(d->g.scan_sums[l]);
    if (d->stream) cudaStreamDestroy(d->stream);
    (void)cudaGetLastError();
    free(d->g.step.log);
    free(d->g.host_partial);
    free(d);
    w->dev = NULL;
}

/* ---- opening -------------------------------------------------------------------------------- */

/* The structs passed by value and in buffers have the host's layout on the device. */
static pbf_status check_layout(cuda_state *d, pbf_error *err) {
    unsigned int sizes[3] = {0, 0, 0};
    unsigned int *out = (unsigned int *)new_buffer(d, sizeof sizes, NULL);
    if (out) {
        PBF_GPU_LAUNCH(&d->g, PBF_GK_LAYOUT, 1, 1, PBF_GPU_A(out));
        if (d->error == cudaSuccess)
            keep(d, cudaMemcpyAsync(sizes, out, sizeof sizes, cudaMemcpyDeviceToHost, d->stream));
        keep(d, cudaStreamSynchronize(d->stream));
        cudaFree(out);
    }
    if (d->error != cudaSuccess) {
        /* e.g. cudaErrorNoKernelImageForDevice: built for other architectures */
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: the device cannot run a kernel (%s: %s; this build's architectures: "
                      "CMAKE_CUDA_ARCHITECTURES)",
                      d->label, cudaGetErrorName(d->error), cudaGetErrorString(d->error));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    const unsigned int want[3] = {(unsigned int)sizeof(pbf_gpu_params),
                                  (unsigned int)sizeof(pbf_wall_box),
                                  (unsigned int)sizeof(pbf_gpu_bad)};
    if (memcmp(sizes, want, sizeof want) != 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: the device lays out the kernel structs differently from the host "
                      "(sizes %u/%u/%u, host %u/%u/%u)",
                      d->label, sizes[0], sizes[1], sizes[2], want[0], want[1], want[2]);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

static pbf_status fixed_buffers(pbf_world *w, pbf_error *err) {
    cuda_state *d = DEV(w);
    d->g.step.nslots = pbf_gpu_slots_per_substep(&w->def);
    d->g.map_slot = d->g.step.nslots;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess &&
        (double)fixed_bytes(w, d->g.step.nslots) > (double)free_b) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: the grid (%u cells) and tables need %.1f MiB, the device has %.1f MiB "
                      "free of %.1f MiB (cudaMemGetInfo)",
                      d->label, w->grid.ncells, (double)fixed_bytes(w, d->g.step.nslots) / 1048576.0,
                      (double)free_b / 1048576.0, (double)total_b / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    const size_t cells = (size_t)w->grid.ncells + 1;
    d->g.cell_start = (unsigned int *)new_buffer(d, cells * sizeof(unsigned int), NULL);
    size_t count = cells;
    d->g.scan_levels = 0;
    do {
        count = (count + 2 * SCAN_WG - 1) / (2 * SCAN_WG);
        if (d->g.scan_levels < PBF_GPU_MAX_SCAN_LEVELS)
            d->g.scan_sums[d->g.scan_levels] =
                (unsigned int *)new_buffer(d, count * sizeof(unsigned int), NULL);
        d->g.scan_levels++;
    } while (count > 1);
    const size_t n3 = (size_t)w->walls.n * (size_t)w->walls.n * (size_t)w->walls.n;
    d->g.F = (float *)new_buffer(d, n3 * sizeof(float), w->walls.F);
    d->g.G = (float *)new_buffer(d, n3 * sizeof(float), w->walls.G);
    d->g.boxes = (pbf_wall_box *)new_buffer(d, PBF_MAX_BOXES * sizeof(pbf_wall_box), NULL);
    d->g.nobody.slot = -1;
    d->g.nobody.index = INT_MAX;
    d->g.bad = (int *)new_buffer(d, (size_t)(d->g.step.nslots + 2) * sizeof(int), NULL);
    d->g.solve_out = (double *)new_buffer(d, 2 * sizeof(double), NULL);
    d->g.bad_info = (pbf_gpu_bad *)new_buffer(d, sizeof(pbf_gpu_bad), NULL);
    if (d->g.scan_levels > PBF_GPU_MAX_SCAN_LEVELS ||
        d->error != cudaSuccess) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "%s: cannot allocate the grid (%u cells) and tables: %s", d->label,
                      w->grid.ncells,
                      d->error != cudaSuccess ? cudaGetErrorString(d->error) : "out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    return PBF_OK;
}

pbf_status pbf_cuda_open(pbf_world *w, const char *spec, pbf_error *err) {
    if (!spec) spec = "";
    int index = 0;
    if (spec[0]) {
        char *end = NULL;
        long v = strtol(spec, &end, 10);
        if (spec[0] < '0' || spec[0] > '9' || *end != '\0' || v > INT_MAX) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "device = \"cuda:%s\": expected cuda:N with a device number, "
                          "e.g. cuda:0 (`pbf devices` lists them)",
                          spec);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        index = (int)v;
    }
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"cuda%s%s\": no CUDA device %d available (%s: %s)",
                      spec[0] ? ":" : "", spec, index,
                      e != cudaSuccess ? cudaGetErrorName(e) : "cudaGetDeviceCount",
                      e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports 0 devices");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (index >= count) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"cuda:%s\": no such CUDA device (this machine has %d: "
                      "cuda:0 to cuda:%d)",
                      spec, count, count - 1);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    e = cudaGetDeviceProperties(&prop, index);
    if (e == cudaSuccess) e = cudaSetDevice(index);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "device = \"cuda%s%s\": cannot "
                      "open CUDA device %d (%s: %s)", spec[0] ? ":" : "", spec, index,
                      cudaGetErrorName(e), cudaGetErrorString(e));
        return PBF_ERR_INVALID_ARGUMENT;
    }
    cuda_state *d = (cuda_state *)calloc(1, sizeof *d);
    if (!d) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "cuda backend: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    w->dev = d;
    d->g.host = &host_ops;
    d->device = index;
    d->error = cudaSuccess;
    d->g.fp64 = 1; /* pbf_gpu_real is double in CUDA */
    d->g.wg = PARTICLE_WG;
    d->g.scan_wg = SCAN_WG;
    d->g.stats_wg = STATS_WG;
    d->g.lists = 0; /* a GPU: the neighbour kernels search the cells (pbf_kernels.cl) */
    snprintf(d->label, sizeof d->label, "cuda:%d (%.160s)", index, prop.name);
    if (prop.maxThreadsPerBlock < SCAN_WG || prop.maxThreadsPerBlock < STATS_WG) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: the scan and statistics kernels need blocks of %d and %d threads, the "
                      "device runs at most %d",
                      d->label, SCAN_WG, STATS_WG, prop.maxThreadsPerBlock);
        cu_release(w);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: cannot open the device (%s: %s)",
                      d->label, cudaGetErrorName(e), cudaGetErrorString(e));
        d->stream = NULL;
        cu_release(w);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    pbf_status s = check_layout(d, err);
    if (s == PBF_OK) s = fixed_buffers(w, err);
    if (s != PBF_OK) {
        cu_release(w);
        return s;
    }
    w->backend = &pbf_backend_cuda;
    return PBF_OK;
}

/* in the order of pbf_backend_ops' members (backend.h) */
extern "C" const pbf_backend_ops pbf_backend_cuda = {
    "cuda",
    PBF_FIELD_STATE, /* host_keep: the host holds a copy of the state only */
    cu_reserve,
    cu_upload,
    cu_download,
    cu_boxes_changed,
    cu_run_stage,
    cu_refresh,
    cu_sync,
    cu_finish_step,
    cu_release,
    cu_read_rows,
    cu_write_rows,
    cu_set_rows_index,
    cu_read_rows_at,
    cu_write_rows_at,
    cu_gather_rows,
    cu_merge_rows,
};
