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
 * Buffers: one per row of the field registry (src/fields.h) except the CPU's neighbour-list
 * offsets, indexed by role like the host slots of pbf_world.field[]: the sort's gather and the end
 * of the step swap handles, never data, as the CPU backend swaps pointers. The sort borrows
 * buffers as the CPU's does (permutation in lambda, ranks and gather scratch in density and s),
 * and the velocity buffers, idle between predict and the velocity stage, hold the positions the
 * neighbour sets are defined on (grid()): the device holds 16 arrays per particle, as
 * pbf_world_memory counts, plus the grid's cell starts and small fixed buffers.
 *
 * Every solver of the family runs here: PBF's stages, and the pressure stages of WCSPH, DFSPH,
 * PCISPH and IISPH (gravity, wcsph_pressure, dfsph_factor, divergence, density_adv, pcisph_init,
 * pcisph_pressure, iisph_diagonal, iisph_pressure, pressure_accel, advect) with
 * the shared collide, velocity and vorticity_xsph stages; the stage runner (core.c) sequences them,
 * with the CFL substeps from the statistics' maximum speed.
 *
 * Host traffic per step: the boxes (boxes_changed, once per substep, only when there are boxes),
 * on CPU devices the size of the neighbour lists (one value per grid build), and at the end one
 * read of the statistics partials, of the first non-finite particle and of the solves' last
 * errors (finish_step). A solve that stops at a tolerance (DFSPH's, PCISPH's, IISPH's, PBF's pbf_tolerance) reads
 * its error, one value reduced on the device, once per iteration (gpu_host.h). Otherwise the host
 * only enqueues (core.c's timing laps wait with clFinish after each stage). The host arrays (the
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

extern const char *const pbf_opencl_kernel_lines[];
extern const size_t pbf_opencl_kernel_line_count;
extern const pbf_backend_ops pbf_backend_opencl;

/* clGetPlatformIDs of an ICD loader without any platform (cl_khr_icd's CL_PLATFORM_NOT_FOUND_KHR) */
#define PLATFORM_NOT_FOUND (-1001)

enum {
    K_CELLS,
    K_SCAN_BLOCKS,
    K_SCAN_ADD,
    K_SCATTER,
    K_SORT_CELLS,
    K_GATHER,
    K_PREDICT,
    K_DENSITY,
    K_LAMBDA,
    K_DELTA_P,
    K_COLLIDE,
    K_VELOCITY,
    K_CURL,
    K_VORTICITY_XSPH,
    K_CAPTURE_BAD,
    K_STATS,
    K_LAYOUT,
    K_LIST_COUNT,
    K_LIST_FILL,
    K_GRAVITY,
    K_WCSPH_PRESSURE,
    K_DFSPH_FACTOR,
    K_DFSPH_SOURCE,
    K_PRESSURE_ACCEL,
    K_ADVECT,
    K_EXCESS,
    K_EXCESS_TOTAL,
    K_PCISPH_INIT,
    K_PCISPH_PRESSURE,
    K_IISPH_DIAGONAL,
    K_IISPH_PRESSURE,
    K_COUNT
};
static const char *const kernel_names[K_COUNT] = {
    "pbf_k_cells",      "pbf_k_scan_blocks",    "pbf_k_scan_add",    "pbf_k_scatter",
    "pbf_k_sort_cells", "pbf_k_gather",         "pbf_k_predict",     "pbf_k_density",
    "pbf_k_lambda",     "pbf_k_delta_p",        "pbf_k_collide",     "pbf_k_velocity",
    "pbf_k_curl",       "pbf_k_vorticity_xsph", "pbf_k_capture_bad", "pbf_k_stats",
    "pbf_k_layout",     "pbf_k_list_count",     "pbf_k_list_fill",   "pbf_k_gravity",
    "pbf_k_wcsph_pressure", "pbf_k_dfsph_factor", "pbf_k_dfsph_source", "pbf_k_pressure_accel",
    "pbf_k_advect",     "pbf_k_excess",         "pbf_k_excess_total", "pbf_k_pcisph_init",
    "pbf_k_pcisph_pressure", "pbf_k_iisph_diagonal", "pbf_k_iisph_pressure",
};

#define MAX_SCAN_LEVELS 8
#define PARTICLE_WG 128 /* work-group of the per-particle kernels (lowered on small devices) */

typedef struct ocl_state {
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel[K_COUNT];
    char label[192]; /* "opencl:P.D (name)", for messages */
    int fp64;        /* grid cells in double (PBF_CELL_FP64) */
    size_t wg, scan_wg, stats_wg;
    cl_ulong global_mem, max_alloc;
    cl_int error; /* first OpenCL error of a step (the step has no error path) */

    cl_mem field[PBF_FIELD_COUNT]; /* by role; NULL for the CPU-only rows */
    int capacity;

    cl_mem cell_start;                 /* ncells + 1: the histogram, then the cell starts */
    cl_mem scan_sums[MAX_SCAN_LEVELS]; /* block sums of each level of the scan */
    int scan_levels;
    size_t scan_count; /* the longest array the block-sum buffers can scan */

    /* neighbour lists (PBF_LISTS in pbf_kernels.cl; CPU devices): offsets (capacity + 1) and
     * indices, rebuilt with the grid */
    int lists;
    cl_mem nbr_off, nbr_idx;
    size_t nbr_idx_cap; /* entries */
    cl_mem F, G, boxes;

    /* non-finite guard: one int slot per launch of a substep (atomic_min of a particle index),
     * plus the predict slot followed through the sort, plus the step's count of speed-limit cuts
     * (clamp_at = nslots + 1), plus the captured particle; the slots' stages and the measured
     * solves on the host (gpu_host.h) */
    cl_mem bad, bad_info;
    int map_slot;
    pbf_gpu_step step;

    /* the solves' errors (percent): density, divergence, in pbf_gpu_real (gpu_host.h) */
    cl_mem solve_out;

    cl_mem partial; /* statistics partials, PBF_STATS_VALUES per chunk */
    size_t chunks_cap;
    void *host_partial;
    int stats_ready; /* host_partial holds the partials of the current state */
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
    if (spec[0] == '\0') {
        static const cl_device_type order[2] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
        for (int t = 0; t < 2; ++t)
            for (cl_uint p = 0; p < np; ++p) {
                cl_device_id dev[MAX_DEVICES];
                cl_uint nd = devices(plat[p], CL_DEVICE_TYPE_ALL, dev, MAX_DEVICES);
                for (cl_uint k = 0; k < nd; ++k) {
                    cl_device_type type = 0;
                    clGetDeviceInfo(dev[k], CL_DEVICE_TYPE, sizeof type, &type, NULL);
                    if (!(type & order[t])) continue;
                    *out = dev[k];
                    *pi = p;
                    *di = k;
                    return PBF_OK;
                }
            }
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"opencl\": the OpenCL platforms have no device");
        return PBF_ERR_INVALID_ARGUMENT;
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

typedef struct karg {
    size_t size;
    const void *value;
} karg;
#define A(x) ((karg){sizeof(x), &(x)})

static size_t round_up(size_t n, size_t m) {
    return (n + m - 1) / m * m;
}

/* LAUNCH(d, kernel, items, local, A(arg0), A(arg1), ...): the argument count follows the list */
#define LAUNCH(d, k, items, local, ...)                                                            \
    launch((d), (k), (items), (local), (int)(sizeof((karg[]){__VA_ARGS__}) / sizeof(karg)),        \
           (karg[]){__VA_ARGS__})

/* Sets the arguments of kernel k and runs it on `items` work-items in groups of `local`; the
 * first error is kept in d->error (and the rest of the step is skipped). */
static void launch(ocl_state *d, int k, size_t items, size_t local, int nargs, const karg *args) {
    if (d->error != CL_SUCCESS || items == 0) return;
    cl_int e = CL_SUCCESS;
    for (int a = 0; a < nargs && e == CL_SUCCESS; ++a)
        e = clSetKernelArg(d->kernel[k], (cl_uint)a, args[a].size, args[a].value);
    size_t global = round_up(items, local);
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, d->kernel[k], 1, NULL, &global, &local, 0, NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
}

static pbf_gpu_params params(const pbf_world *w, const pbf_step_ctx *c) {
    pbf_gpu_params P = pbf_gpu_make_params(w, c);
    P.clamp_at = DEV(w)->step.nslots + 1;
    return P;
}

#define FB(f) (d->field[PBF_F_##f])
/* The neighbour kernels' arguments `cell` and `start`: the cell keys and starts, or with lists
 * the list offsets and indices (pbf_kernels.cl, PBF_LISTS). */
#define NB_ARGS(d)                                                                                 \
    cl_mem nb_cell = (d)->lists ? (d)->nbr_off : (d)->field[PBF_F_CELL];                           \
    cl_mem nb_start = (d)->lists ? (d)->nbr_idx : (d)->cell_start

/* In-place exclusive scan of count uints (level: which block-sum buffer to use). */
static void scan(ocl_state *d, int level, cl_mem data, cl_uint count) {
    const size_t block = 2 * d->scan_wg;
    const cl_uint blocks = (cl_uint)((count + block - 1) / block);
    if (level >= d->scan_levels) {
        d->error = CL_INVALID_BUFFER_SIZE;
        return;
    }
    cl_mem sums = d->scan_sums[level];
    LAUNCH(d, K_SCAN_BLOCKS, (size_t)blocks * d->scan_wg, d->scan_wg, A(data), A(count), A(sums));
    if (blocks > 1) {
        scan(d, level + 1, sums, blocks);
        LAUNCH(d, K_SCAN_ADD, count, d->wg, A(data), A(count), A(sums));
    }
}

static cl_mem new_buffer(ocl_state *d, size_t bytes, const void *init);

/* The neighbour lists of the sorted particles at x* (the positions the step's neighbour sets
 * are defined on): count, scan, one read of the total (to size the index buffer), fill. */
static void build_lists(pbf_world *w) {
    ocl_state *d = DEV(w);
    const pbf_gpu_params P = params(w, NULL);
    const cl_uint n = (cl_uint)w->count;
    LAUNCH(d, K_LIST_COUNT, (size_t)n, d->wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(FB(CELL)),
           A(d->cell_start), A(d->nbr_off));
    scan(d, 0, d->nbr_off, n + 1);
    cl_uint total = 0;
    if (d->error == CL_SUCCESS) {
        cl_int e = clEnqueueReadBuffer(d->queue, d->nbr_off, CL_TRUE, (size_t)n * sizeof(cl_uint),
                                       sizeof total, &total, 0, NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    if (d->error == CL_SUCCESS && (size_t)total > d->nbr_idx_cap) {
        /* grow by a quarter beyond the need, so that a slowly denser liquid reallocates rarely */
        const size_t cap = (size_t)total + (size_t)total / 4 + PBF_LANES;
        if (d->nbr_idx) clReleaseMemObject(d->nbr_idx);
        d->nbr_idx = new_buffer(d, cap * sizeof(cl_uint), NULL);
        d->nbr_idx_cap = d->nbr_idx ? cap : 0;
    }
    LAUNCH(d, K_LIST_FILL, (size_t)n, d->wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(FB(CELL)),
           A(d->cell_start), A(d->nbr_off), A(d->nbr_idx));
}

/* Stage "grid": sort by the cell of x* and gather every SORTED field (map: follow the predict
 * slot into the sorted order, or -1).
 *
 * In a step (in_step) the velocity is not gathered: predict has used it and the velocity stage
 * computes it anew, so its buffers hold x* as sorted here instead, q0 = x*_0: the positions the
 * step's neighbour sets are defined on (Algorithm 1, line 6; the CPU backend builds its neighbour
 * lists from them), which every neighbour kernel tests before the current positions. No memory
 * beyond the registry's arrays: see ocl_run_stage for where the velocity goes instead. */
static void grid(pbf_world *w, int map, int in_step) {
    ocl_state *d = DEV(w);
    const pbf_gpu_params P = params(w, NULL);
    const cl_uint ncells = w->grid.ncells, n1 = ncells + 1;
    const cl_uint zero = 0;
    if (d->error == CL_SUCCESS) {
        cl_int e = clEnqueueFillBuffer(d->queue, d->cell_start, &zero, sizeof zero, 0,
                                       (size_t)n1 * sizeof(cl_uint), 0, NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    cl_mem rank = FB(SX), perm = FB(LAMBDA);
    if (d->fp64) {
        cl_double o[3] = {w->grid.origin[0], w->grid.origin[1], w->grid.origin[2]};
        cl_double inv = w->grid.inv_cell;
        LAUNCH(d, K_CELLS, (size_t)w->count, d->wg, A(P), A(o[0]), A(o[1]), A(o[2]), A(inv),
               A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(FB(CELL)), A(rank), A(d->cell_start));
    } else {
        cl_float o[3] = {(float)w->grid.origin[0], (float)w->grid.origin[1],
                         (float)w->grid.origin[2]};
        cl_float inv = (float)w->grid.inv_cell;
        LAUNCH(d, K_CELLS, (size_t)w->count, d->wg, A(P), A(o[0]), A(o[1]), A(o[2]), A(inv),
               A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(FB(CELL)), A(rank), A(d->cell_start));
    }
    scan(d, 0, d->cell_start, n1);
    LAUNCH(d, K_SCATTER, (size_t)w->count, d->wg, A(P), A(FB(CELL)), A(rank), A(d->cell_start),
           A(perm));
    LAUNCH(d, K_SORT_CELLS, ncells, d->wg, A(ncells), A(d->cell_start), A(perm));

    /* gather the sorted fields, four at a time, into the free buffers (density and s: both are
     * written before they are read again); each gathered field's old buffer joins the pool */
    cl_mem pool[4] = {FB(DENSITY), FB(SX), FB(SY), FB(SZ)};
    int sorted[PBF_FIELD_COUNT], ns = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if ((pbf_fields[f].flags & PBF_FIELD_SORTED) &&
            !(in_step && (f == PBF_F_VX || f == PBF_F_VY || f == PBF_F_VZ)))
            sorted[ns++] = f;
    const cl_int n = w->count;
    for (int s = 0; s < ns; s += 4) {
        const cl_int nf = ns - s < 4 ? ns - s : 4;
        cl_mem src[4], dst[4];
        for (int a = 0; a < 4; ++a) {
            src[a] = a < nf ? d->field[sorted[s + a]] : perm; /* unused: never written */
            dst[a] = a < nf ? pool[a] : perm;
        }
        const cl_int m = s == 0 ? map : -1;
        LAUNCH(d, K_GATHER, (size_t)n, d->wg, A(n), A(perm), A(nf), A(src[0]), A(dst[0]), A(src[1]),
               A(dst[1]), A(src[2]), A(dst[2]), A(src[3]), A(dst[3]), A(d->bad), A(m));
        for (int a = 0; a < nf; ++a) {
            pool[a] = src[a];
            d->field[sorted[s + a]] = dst[a];
        }
    }
    FB(DENSITY) = pool[0];
    FB(SX) = pool[1];
    FB(SY) = pool[2];
    FB(SZ) = pool[3];
    for (int a = 0; a < 3 && in_step && d->error == CL_SUCCESS; ++a) { /* q0 */
        cl_int e = clEnqueueCopyBuffer(d->queue, d->field[PBF_F_QX + a], d->field[PBF_F_VX + a], 0,
                                       0, (size_t)n * sizeof(float), 0, NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    if (d->lists) build_lists(w);
}

/* The launch slot of a stage in this substep (its non-finite particle goes there). */
static cl_int next_slot(ocl_state *d, pbf_stage_id stage) {
    return (cl_int)pbf_gpu_next_slot(&d->step, stage);
}

/* The first stage of a substep (predict, gravity): its slots are cleared; at the start of a step
 * also the captured particle and the count of speed-limit cuts. The earlier substeps' slots were
 * captured at their end (velocity and vorticity_xsph stages). */
static void begin_substep(ocl_state *d) {
    const cl_int none = INT_MAX, zero = 0;
    const pbf_gpu_bad nobody = {-1, INT_MAX, 0u, 0.0f, 0.0f, 0.0f};
    const int first = pbf_gpu_begin_substep(&d->step);
    if (d->error != CL_SUCCESS) return;
    cl_int e = clEnqueueFillBuffer(d->queue, d->bad, &none, sizeof none, 0,
                                   (size_t)(d->step.nslots + 1) * sizeof(cl_int), 0, NULL, NULL);
    if (e == CL_SUCCESS && first) /* the speed-limit cuts of the step */
        e = clEnqueueFillBuffer(d->queue, d->bad, &zero, sizeof zero,
                                (size_t)(d->step.nslots + 1) * sizeof(cl_int), sizeof zero, 0,
                                NULL, NULL);
    if (e == CL_SUCCESS && first) {
        e = clEnqueueWriteBuffer(d->queue, d->bad_info, CL_FALSE, 0, sizeof nobody, &nobody, 0,
                                 NULL, NULL);
        /* the write reads `nobody` before it completes: wait (the queue is empty here anyway) */
        if (e == CL_SUCCESS) e = clFinish(d->queue);
    }
    if (e != CL_SUCCESS) d->error = e;
}

static void enqueue_stats(pbf_world *w) {
    ocl_state *d = DEV(w);
    const pbf_gpu_params P = params(w, NULL);
    const size_t chunk = d->stats_wg * PBF_STATS_PER_ITEM;
    const size_t chunks = ((size_t)w->count + chunk - 1) / chunk;
    LAUNCH(d, K_STATS, chunks * d->stats_wg, d->stats_wg, A(P), A(FB(PX)), A(FB(PY)), A(FB(PZ)),
           A(FB(VX)), A(FB(VY)), A(FB(VZ)), A(FB(DENSITY)), A(d->partial));
    if (d->error == CL_SUCCESS) {
        size_t bytes = chunks * PBF_STATS_VALUES * (d->fp64 ? sizeof(double) : sizeof(float));
        cl_int e = clEnqueueReadBuffer(d->queue, d->partial, CL_FALSE, 0, bytes, d->host_partial, 0,
                                       NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
}

/* The statistics from the partials (chunk order, in double), as the CPU's stage_stats. */
_Static_assert(PBF_STATS_VALUES == PBF_STATS_PARTIALS, "the kernels' statistics partials");

static void reduce_stats(pbf_world *w) {
    ocl_state *d = DEV(w);
    const int n = w->count;
    if (n > 0 && d->error != CL_SUCCESS) { /* the device failed: the state is lost */
        pbf_stats_finish(w, NULL, 1);
        return;
    }
    const size_t chunk = d->stats_wg * PBF_STATS_PER_ITEM;
    const size_t chunks = ((size_t)n + chunk - 1) / chunk;
    double acc[PBF_STATS_PARTIALS] = {0};
    for (size_t c = 0; c < chunks; ++c) {
        double v[PBF_STATS_VALUES];
        for (int k = 0; k < PBF_STATS_VALUES; ++k) {
            size_t at = c * PBF_STATS_VALUES + (size_t)k;
            v[k] = d->fp64 ? ((const double *)d->host_partial)[at]
                           : (double)((const float *)d->host_partial)[at];
        }
        pbf_stats_accumulate(acc, v);
    }
    pbf_stats_finish(w, acc, 0);
}

/* After a stage that measures a solve: the mean of max(a_i scale + offset, 0) in percent
 * (cpu.c mean_excess) into the solve's device slot, and into w->solve_error at once when the
 * stage runner needs it (one read of one value). */
static void measure(pbf_world *w, pbf_stage_id stage, cl_mem a, float scale, float offset,
                    int now) {
    ocl_state *d = DEV(w);
    const cl_int slot = pbf_gpu_measure_slot(stage);
    if (slot < 0) return;
    const cl_int n = w->count;
    const size_t chunk = d->stats_wg * PBF_STATS_PER_ITEM;
    const cl_int chunks = (cl_int)(((size_t)n + chunk - 1) / chunk);
    LAUNCH(d, K_EXCESS, (size_t)chunks * d->stats_wg, d->stats_wg, A(n), A(a), A(scale), A(offset),
           A(d->partial));
    LAUNCH(d, K_EXCESS_TOTAL, 1, 1, A(n), A(chunks), A(d->partial), A(d->solve_out), A(slot));
    d->step.measured[slot] = 1;
    if (!now || d->error != CL_SUCCESS) return;
    union {
        double d;
        float f;
    } v = {0.0};
    const size_t size = d->fp64 ? sizeof(double) : sizeof(float);
    cl_int e = clEnqueueReadBuffer(d->queue, d->solve_out, CL_TRUE, (size_t)slot * size, size, &v,
                                   0, NULL, NULL);
    if (e != CL_SUCCESS) d->error = e;
    w->solve_error = d->error != CL_SUCCESS ? INFINITY : d->fp64 ? v.d : (double)v.f;
}

/* The neighbour kernels' leading arguments: P, x*, the neighbour sets (cell keys and starts, or
 * list offsets and indices) and their positions q0, the wall tables and boxes. */
#define NB(q0) A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(nb_cell), A(nb_start), A(q0[0]), \
               A(q0[1]), A(q0[2]), A(d->F), A(d->G), A(d->boxes)

static int ocl_run_stage(pbf_world *w, pbf_stage_id stage, const pbf_step_ctx *c) {
    ocl_state *d = DEV(w);
    if (stage == PBF_STAGE_STATS) {
        if (w->count > 0 && !d->stats_ready) {
            enqueue_stats(w);
            if (d->error == CL_SUCCESS) {
                cl_int e = clFinish(d->queue);
                if (e != CL_SUCCESS) d->error = e;
            }
        }
        reduce_stats(w);
        d->stats_ready = 0;
        return INT_MAX;
    }
    if (w->count == 0) return INT_MAX;
    const pbf_gpu_params P = params(w, c);
    const size_t n = (size_t)w->count, wg = d->wg;
    NB_ARGS(d);
    /* the neighbour sets' positions: PBF's grid leaves x*_0 in the velocity buffers; in the SPH
     * solvers' pressure stages x* = x is still where the grid was built */
    const cl_mem q0v[3] = {FB(VX), FB(VY), FB(VZ)}, q0q[3] = {FB(QX), FB(QY), FB(QZ)};
    const int sph = w->def.solver != PBF_SOLVER_PBF;
    const float one = 1.0f, zero = 0.0f, inv_rho0 = P.inv_rho0, minus_one = -1.0f;
    d->stats_ready = 0;
    w->host_stale = 1;
    switch (stage) {
    case PBF_STAGE_PREDICT: {
        begin_substep(d);
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_PREDICT, n, wg, A(P), A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(VX)), A(FB(VY)),
               A(FB(VZ)), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_GRID: grid(w, d->map_slot, !sph); break; /* SPH: the velocity is sorted */
    case PBF_STAGE_LAMBDA: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_LAMBDA, n, wg, NB(q0v), A(FB(DENSITY)), A(FB(LAMBDA)), A(d->bad), A(slot));
        measure(w, stage, FB(DENSITY), inv_rho0, minus_one, c->need_error);
        break;
    }
    case PBF_STAGE_DELTA_P: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_DELTA_P, n, wg, NB(q0v), A(FB(LAMBDA)), A(FB(SX)), A(FB(SY)), A(FB(SZ)),
               A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_COLLIDE: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_COLLIDE, n, wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(FB(SX)), A(FB(SY)),
               A(FB(SZ)), A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(d->boxes), A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_VELOCITY: {
        /* Buffers from here to the end of the step (v holds q0, see grid() and advect):
         *   velocity  v = (x* - x) / dt          -> s   (the CPU: -> v)
         *   curl      omega                      -> x   (the CPU: -> s), |omega| -> lambda
         *   post      new velocity, in place     -> x   (it reads only its own omega)
         * then x <- x*, v <- x, and x*, s take the free buffers (old q0 and old velocity). */
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_VELOCITY, n, wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(FB(PX)), A(FB(PY)),
               A(FB(PZ)), A(FB(SX)), A(FB(SY)), A(FB(SZ)), A(d->bad), A(slot));
        /* the first non-finite particle so far, at its start-of-step position, before the
         * position buffer takes omega */
        cl_int from = 0, to = slot + 1, base = d->step.base;
        LAUNCH(d, K_CAPTURE_BAD, 1, 1, A(d->bad), A(from), A(to), A(d->map_slot), A(base),
               A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(ID)), A(d->bad_info));
        /* the curl's own slot (also stage "velocity"): non-finite omega from finite velocities
         * cannot happen, so this slot is never the step's first in practice; if it were, the
         * position reported would be x* (captured after the post pass) */
        cl_int curl = next_slot(d, stage);
        LAUNCH(d, K_CURL, n, wg, NB(q0v), A(FB(SX)), A(FB(SY)), A(FB(SZ)), A(FB(DENSITY)),
               A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(LAMBDA)), A(d->bad), A(curl));
        break;
    }
    case PBF_STAGE_VORTICITY_XSPH: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_VORTICITY_XSPH, n, wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(nb_cell),
               A(nb_start), A(FB(VX)), A(FB(VY)), A(FB(VZ)), A(FB(SX)), A(FB(SY)), A(FB(SZ)),
               A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(LAMBDA)), A(FB(DENSITY)), A(FB(PX)), A(FB(PY)),
               A(FB(PZ)), A(d->bad), A(slot));
        for (int a = 0; a < 3; ++a) {
            cl_mem x = d->field[PBF_F_PX + a], q = d->field[PBF_F_QX + a],
                   q0 = d->field[PBF_F_VX + a], v = d->field[PBF_F_SX + a];
            d->field[PBF_F_PX + a] = q;  /* x <- x* */
            d->field[PBF_F_VX + a] = x;  /* v <- the new velocity */
            d->field[PBF_F_QX + a] = q0; /* free */
            d->field[PBF_F_SX + a] = v;  /* free */
        }
        /* the curl's and the post pass's particle, at x* (the CPU reports x* for this stage) */
        cl_int from = slot - 1, to = slot + 1, base = d->step.base;
        LAUNCH(d, K_CAPTURE_BAD, 1, 1, A(d->bad), A(from), A(to), A(d->map_slot), A(base),
               A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(ID)), A(d->bad_info));
        break;
    }
    /* the SPH solvers' pressure stages (pbf_kernels.cl; buffers: density, s, lambda as cpu.c) */
    case PBF_STAGE_GRAVITY: {
        begin_substep(d);
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_GRAVITY, n, wg, A(P), A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(VX)), A(FB(VY)),
               A(FB(VZ)), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_WCSPH_PRESSURE: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_WCSPH_PRESSURE, n, wg, NB(q0q), A(FB(VX)), A(FB(VY)), A(FB(VZ)),
               A(FB(DENSITY)), A(FB(LAMBDA)), A(FB(SX)), A(FB(SY)), A(FB(SZ)), A(d->bad), A(slot));
        measure(w, stage, FB(DENSITY), inv_rho0, minus_one, c->need_error);
        break;
    }
    case PBF_STAGE_DFSPH_FACTOR: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_DFSPH_FACTOR, n, wg, NB(q0q), A(FB(DENSITY)), A(FB(SX)), A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_DIVERGENCE:
    case PBF_STAGE_DENSITY_ADV: {
        cl_int slot = next_slot(d, stage), divergence = stage == PBF_STAGE_DIVERGENCE;
        LAUNCH(d, K_DFSPH_SOURCE, n, wg, NB(q0q), A(FB(VX)), A(FB(VY)), A(FB(VZ)),
               A(FB(DENSITY)), A(FB(SX)), A(FB(SY)), A(FB(LAMBDA)), A(divergence), A(d->bad),
               A(slot));
        measure(w, stage, FB(SY), one, zero, c->need_error);
        break;
    }
    case PBF_STAGE_PRESSURE_ACCEL: {
        /* PCISPH: gradients at x + dt v, the new velocities into s, then s and v swap roles */
        cl_int slot = next_slot(d, stage), viscous = w->def.solver == PBF_SOLVER_WCSPH,
               predicted = w->def.solver == PBF_SOLVER_PCISPH;
        const cl_mem o[3] = {predicted ? FB(SX) : FB(VX), predicted ? FB(SY) : FB(VY),
                             predicted ? FB(SZ) : FB(VZ)};
        LAUNCH(d, K_PRESSURE_ACCEL, n, wg, NB(q0q), A(FB(LAMBDA)), A(FB(SX)), A(FB(SY)),
               A(FB(SZ)), A(viscous), A(predicted), A(FB(VX)), A(FB(VY)), A(FB(VZ)), A(o[0]),
               A(o[1]), A(o[2]), A(d->bad), A(slot));
        for (int a = 0; a < 3 && predicted; ++a) {
            cl_mem v = d->field[PBF_F_VX + a];
            d->field[PBF_F_VX + a] = d->field[PBF_F_SX + a];
            d->field[PBF_F_SX + a] = v;
        }
        break;
    }
    case PBF_STAGE_ADVECT:
        LAUNCH(d, K_ADVECT, n, wg, A(P), A(FB(PX)), A(FB(PY)), A(FB(PZ)), A(FB(VX)), A(FB(VY)),
               A(FB(VZ)), A(FB(SX)), A(FB(SY)), A(FB(SZ)));
        break;
    /* PCISPH: accumulated k in density, the error in s.x; IISPH: a_ii in s.x, accumulated k in
     * s.y, the error in s.z; both: the increment in lambda (pbf_kernels.cl) */
    case PBF_STAGE_PCISPH_INIT: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_PCISPH_INIT, n, wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(d->boxes),
               A(FB(VX)), A(FB(VY)), A(FB(VZ)), A(FB(DENSITY)), A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_PCISPH_PRESSURE: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_PCISPH_PRESSURE, n, wg, NB(q0q), A(FB(VX)), A(FB(VY)), A(FB(VZ)),
               A(FB(DENSITY)), A(FB(SX)), A(FB(LAMBDA)), A(d->bad), A(slot));
        measure(w, stage, FB(SX), one, zero, c->need_error);
        break;
    }
    case PBF_STAGE_IISPH_DIAGONAL: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_IISPH_DIAGONAL, n, wg, NB(q0q), A(FB(DENSITY)), A(FB(SX)), A(FB(SY)),
               A(d->bad), A(slot));
        break;
    }
    case PBF_STAGE_IISPH_PRESSURE: {
        cl_int slot = next_slot(d, stage);
        LAUNCH(d, K_IISPH_PRESSURE, n, wg, NB(q0q), A(FB(VX)), A(FB(VY)), A(FB(VZ)),
               A(FB(DENSITY)), A(FB(SX)), A(FB(SY)), A(FB(SZ)), A(FB(LAMBDA)), A(d->bad),
               A(slot));
        measure(w, stage, FB(SZ), one, zero, c->need_error);
        break;
    }
    case PBF_STAGE_STATS:
    case PBF_STAGE_COUNT: break;
    }
    return INT_MAX;
}
#undef NB

static void ocl_finish_step(pbf_world *w, pbf_bad_particle bad[PBF_STAGE_COUNT]) {
    ocl_state *d = DEV(w);
    for (int s = 0; s < PBF_STAGE_COUNT; ++s) {
        bad[s].index = INT_MAX;
        bad[s].id = 0;
        bad[s].position = (pbf_vec3){0.0f, 0.0f, 0.0f};
    }
    pbf_gpu_end_step(&d->step);
    /* one round trip: the statistics partials, the first non-finite particle, the count of
     * speed-limit cuts and the solves' last errors */
    pbf_gpu_bad info = {-1, INT_MAX, 0u, 0.0f, 0.0f, 0.0f};
    cl_int clamps = 0;
    union {
        double d[2];
        float f[2];
    } err = {{0.0, 0.0}};
    enqueue_stats(w);
    if (d->error == CL_SUCCESS) {
        cl_int e = clEnqueueReadBuffer(d->queue, d->bad_info, CL_FALSE, 0, sizeof info, &info, 0,
                                       NULL, NULL);
        if (e == CL_SUCCESS && (d->step.measured[0] || d->step.measured[1]))
            e = clEnqueueReadBuffer(d->queue, d->solve_out, CL_FALSE, 0,
                                    2 * (d->fp64 ? sizeof(double) : sizeof(float)), &err, 0, NULL,
                                    NULL);
        if (e == CL_SUCCESS)
            e = clEnqueueReadBuffer(d->queue, d->bad, CL_FALSE,
                                    (size_t)(d->step.nslots + 1) * sizeof(cl_int), sizeof clamps,
                                    &clamps, 0, NULL, NULL);
        if (e == CL_SUCCESS) e = clFinish(d->queue);
        if (e != CL_SUCCESS) d->error = e;
    }
    if (d->error != CL_SUCCESS) {
        bad[PBF_STAGE_PREDICT].index = 0; /* reported as non-finite from the first stage */
        d->stats_ready = 0;
        return;
    }
    d->stats_ready = 1;
    if (d->step.measured[0]) w->solve.error = d->fp64 ? err.d[0] : (double)err.f[0];
    if (d->step.measured[1]) w->solve.divergence_error = d->fp64 ? err.d[1] : (double)err.f[1];
    w->solve.speed_clamps = (uint32_t)clamps; /* the kernels add unsigned ones */
    const pbf_stage_id st = pbf_gpu_logged_stage(&d->step, info.slot);
    if (info.slot >= 0 && st < PBF_STAGE_COUNT) {
        pbf_bad_particle *b = &bad[st];
        b->index = info.index;
        b->id = info.id;
        b->position = (pbf_vec3){info.x, info.y, info.z};
    }
}

static void ocl_refresh(pbf_world *w) {
    ocl_state *d = DEV(w);
    if (w->count == 0) return;
    const size_t bytes = (size_t)w->count * sizeof(float);
    for (int a = 0; a < 3 && d->error == CL_SUCCESS; ++a) {
        cl_int e = clEnqueueCopyBuffer(d->queue, d->field[PBF_F_PX + a], d->field[PBF_F_QX + a], 0,
                                       0, bytes, 0, NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
    grid(w, -1, 0);
    const pbf_gpu_params P = params(w, NULL);
    NB_ARGS(d); /* after grid(): it may have grown the list buffer */
    LAUNCH(d, K_DENSITY, (size_t)w->count, d->wg, A(P), A(FB(QX)), A(FB(QY)), A(FB(QZ)),
           A(nb_cell), A(nb_start), A(FB(QX)), A(FB(QY)), A(FB(QZ)), A(d->F), A(d->G),
           A(d->boxes), A(FB(DENSITY)));
    if (d->error == CL_SUCCESS) {
        cl_int e = clFinish(d->queue);
        if (e != CL_SUCCESS) d->error = e;
    }
    d->stats_ready = 0;
    w->host_stale = 1;
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
    cl_int e = clEnqueueWriteBuffer(d->queue, d->boxes, CL_TRUE, 0,
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
    d->stats_ready = 0;
    for (int f = 0; f < PBF_FIELD_COUNT && bytes && d->error == CL_SUCCESS; ++f) {
        if (!(pbf_fields[f].flags & PBF_FIELD_STATE)) continue;
        cl_int e = clEnqueueWriteBuffer(d->queue, d->field[f], CL_FALSE, 0, bytes, w->field[f], 0,
                                        NULL, NULL);
        if (e != CL_SUCCESS) d->error = e;
    }
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
        cl_int e = clEnqueueReadBuffer(d->queue, d->field[f], CL_FALSE, 0, bytes, w->field[f], 0,
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
        c = (c + 2 * d->scan_wg - 1) / (2 * d->scan_wg);
        levels++;
    } while (c > 1);
    if (levels > MAX_SCAN_LEVELS) return 0;
    c = count;
    for (int l = 0; l < levels && d->error == CL_SUCCESS; ++l) {
        c = (c + 2 * d->scan_wg - 1) / (2 * d->scan_wg);
        if (d->scan_sums[l]) clReleaseMemObject(d->scan_sums[l]);
        d->scan_sums[l] = new_buffer(d, c * sizeof(cl_uint), NULL);
    }
    if (d->error != CL_SUCCESS) return 0;
    d->scan_levels = levels;
    d->scan_count = count;
    return 1;
}

/* Bytes of the device buffers that do not depend on the capacity. */
static size_t fixed_bytes(const pbf_world *w) {
    const ocl_state *d = DEV(w);
    size_t bytes = ((size_t)w->grid.ncells + 1) * sizeof(cl_uint);
    size_t count = (size_t)w->grid.ncells + 1;
    while (count > 1) {
        count = (count + 2 * d->scan_wg - 1) / (2 * d->scan_wg);
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
    const size_t arrays = (size_t)pbf_fields_bytes(PBF_FIELD_CPU, 0) / 4;
    const size_t chunk = d->stats_wg * PBF_STATS_PER_ITEM;
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
        if (pbf_fields[f].flags & PBF_FIELD_CPU) continue;
        cl_mem grown = new_buffer(d, per_array, NULL);
        if (!grown) break;
        if (d->field[f] && keep) {
            cl_int e = clEnqueueCopyBuffer(d->queue, d->field[f], grown, 0, 0, keep, 0, NULL, NULL);
            if (e == CL_SUCCESS) e = clFinish(d->queue);
            if (e != CL_SUCCESS) {
                clReleaseMemObject(grown);
                d->error = e;
                break;
            }
        }
        if (d->field[f]) clReleaseMemObject(d->field[f]);
        d->field[f] = grown;
    }
    if (d->lists && d->error == CL_SUCCESS) { /* list offsets: capacity + 1, and their scan */
        cl_mem off = new_buffer(d, ((size_t)capacity + 1) * sizeof(cl_uint), NULL);
        if (off) {
            if (d->nbr_off) clReleaseMemObject(d->nbr_off);
            d->nbr_off = off;
            if (!scan_buffers(d, (size_t)capacity + 1) && d->error == CL_SUCCESS)
                d->error = CL_INVALID_BUFFER_SIZE;
        }
    }
    void *host = NULL;
    if (d->error == CL_SUCCESS) {
        cl_mem partial = new_buffer(d, partial_bytes, NULL);
        host = partial ? malloc(partial_bytes) : NULL;
        if (partial && host) {
            if (d->partial) clReleaseMemObject(d->partial);
            free(d->host_partial);
            d->partial = partial;
            d->host_partial = host;
            d->chunks_cap = chunks;
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
        if (d->field[f]) clReleaseMemObject(d->field[f]);
    cl_mem others[] = {d->cell_start, d->F,       d->G,       d->boxes,  d->bad,
                       d->bad_info,   d->partial, d->nbr_off, d->nbr_idx, d->solve_out};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i)
        if (others[i]) clReleaseMemObject(others[i]);
    for (int l = 0; l < MAX_SCAN_LEVELS; ++l)
        if (d->scan_sums[l]) clReleaseMemObject(d->scan_sums[l]);
    for (int k = 0; k < K_COUNT; ++k)
        if (d->kernel[k]) clReleaseKernel(d->kernel[k]);
    if (d->program) clReleaseProgram(d->program);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->ctx) clReleaseContext(d->ctx);
    free(d->step.log);
    free(d->host_partial);
    free(d);
    w->dev = NULL;
}

static size_t ocl_list_bytes(const pbf_world *w) {
    const ocl_state *d = DEV(w);
    return d->lists ? ((size_t)d->capacity + 1 + d->nbr_idx_cap) * sizeof(cl_uint) : 0;
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
    d->lists = cpu;
    snprintf(
        options, sizeof options,
        "-cl-std=CL1.2 -DPBF_LANES=%d -DPBF_TEST_BLOCK=%uu -DPBF_LANES_ALL=%d "
        "-DPBF_LISTS=%d -DPBF_SCAN_WG=%zu -DPBF_STATS_WG=%zu%s%s",
        PBF_LANES, cpu ? 8u : 1u, cpu, cpu, d->scan_wg, d->stats_wg, d->fp64 ? " -DPBF_CELL_FP64=1" : "",
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
    for (int k = 0; k < K_COUNT; ++k) {
        d->kernel[k] = clCreateKernel(d->program, kernel_names[k], &e);
        if (e != CL_SUCCESS) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: kernel %s: %s", d->label,
                          kernel_names[k], cl_error_name(e));
            return PBF_ERR_INVALID_ARGUMENT;
        }
    }
    /* work-groups the device can run for the kernels with shared arrays */
    size_t kmax = 0;
    clGetKernelWorkGroupInfo(d->kernel[K_SCAN_BLOCKS], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                             &kmax, NULL);
    size_t smax = 0, emax = 0; /* the statistics and the solves' errors: PBF_STATS_WG */
    clGetKernelWorkGroupInfo(d->kernel[K_STATS], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof smax, &smax,
                             NULL);
    clGetKernelWorkGroupInfo(d->kernel[K_EXCESS], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof emax,
                             &emax, NULL);
    if (emax < smax) smax = emax;
    if (kmax < d->scan_wg || smax < d->stats_wg) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: the scan and statistics kernels need work-groups of %zu and %zu, the "
                      "device runs them with at most %zu and %zu",
                      d->label, d->scan_wg, d->stats_wg, kmax, smax);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

/* The structs passed by value and in buffers have the host's layout on the device. */
static pbf_status check_layout(ocl_state *d, pbf_error *err) {
    cl_uint sizes[3] = {0, 0, 0};
    cl_mem out = new_buffer(d, sizeof sizes, NULL);
    LAUNCH(d, K_LAYOUT, 1, 1, A(out));
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
    d->cell_start = new_buffer(d, cells * sizeof(cl_uint), NULL);
    const int scan_ok = scan_buffers(d, cells);
    const size_t n3 = (size_t)w->walls.n * (size_t)w->walls.n * (size_t)w->walls.n;
    d->F = new_buffer(d, n3 * sizeof(float), w->walls.F);
    d->G = new_buffer(d, n3 * sizeof(float), w->walls.G);
    d->boxes = new_buffer(d, PBF_MAX_BOXES * sizeof(pbf_wall_box), NULL);
    /* the launches of a substep: predict or gravity, the solve's iterations, velocity and curl,
     * post; then the predict slot followed through the sort and the speed-limit cuts */
    d->step.nslots = pbf_gpu_slots_per_substep(&w->def);
    d->map_slot = d->step.nslots;
    d->bad = new_buffer(d, (size_t)(d->step.nslots + 2) * sizeof(cl_int), NULL);
    d->solve_out = new_buffer(d, 2 * sizeof(double), NULL);
    d->bad_info = new_buffer(d, sizeof(pbf_gpu_bad), NULL);
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
    char name[128];
    device_string(dev, CL_DEVICE_NAME, name, sizeof name);
    snprintf(d->label, sizeof d->label, "opencl:%u.%u (%s)", pi, di, name);

    cl_device_fp_config dbl = 0;
    clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL);
    d->fp64 = dbl != 0;
    size_t max_wg = 1;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    max_wg = pow2_floor(max_wg ? max_wg : 1);
    d->wg = max_wg < PARTICLE_WG ? max_wg : PARTICLE_WG;
    d->scan_wg = max_wg < 256 ? max_wg : 256;
    d->stats_wg = d->scan_wg;

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
    .list_bytes = ocl_list_bytes,
};
