/*
 * The CUDA backend: the stages of the step (src/core.c) as the kernels of
 * backends/gpu/pbf_kernels.cl, compiled by nvcc from that same source (included below), on device
 * buffers that stay on the device between steps.
 *
 * It mirrors the OpenCL backend (backends/opencl/opencl.c) launch for launch: the same buffers
 * (one per row of the field registry except the CPU's neighbour-list offsets, indexed by role;
 * the sort's gather and the end of the step swap pointers, never data), the same grid, block and
 * argument lists, the same deterministic sort, non-finite guard and statistics partials, every
 * solver's stages (PBF, WCSPH, DFSPH, PCISPH, IISPH), and the host bookkeeping they share
 * (gpu/gpu_host.h: the kernels' parameters, guard slots per substep, the solves' errors). One
 * stream; host traffic only
 * in upload/download, boxes_changed, the read of a solve's error per iteration where a tolerance
 * stops it, and the end-of-step read of the statistics, the first non-finite particle and the
 * solves' last errors.
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

extern "C" {
pbf_status pbf_cuda_open(pbf_world *w, const char *spec, pbf_error *err);
int pbf_cuda_list(pbf_device_info *out, int max, char *note, size_t note_size);
extern const pbf_backend_ops pbf_backend_cuda;
}

#define MAX_SCAN_LEVELS 8
#define PARTICLE_WG 128 /* block of the per-particle kernels, as opencl.c */
#define SCAN_WG PBF_SCAN_WG
#define STATS_WG PBF_STATS_WG

typedef struct cuda_state {
    int device;
    cudaStream_t stream;
    char label[192]; /* "cuda:N (name)", for messages */
    cudaError_t error; /* first CUDA error of a step (the step has no error path) */

    void *field[PBF_FIELD_COUNT]; /* by role; NULL for the CPU-only rows */
    int capacity;

    unsigned int *cell_start;                 /* ncells + 1 */
    unsigned int *scan_sums[MAX_SCAN_LEVELS]; /* block sums of each level of the scan */
    int scan_levels;
    float *F, *G;
    pbf_wall_box *boxes;

    int *bad; /* step.nslots + 2: the guard's slots, the predict slot, the speed-limit cuts */
    pbf_gpu_bad *bad_info;
    int map_slot;
    pbf_gpu_step step;    /* the slots' stages and the measured solves (gpu_host.h) */
    int *host_none;       /* step.nslots + 1 INT_MAX and a 0, the source of the guard's reset */
    pbf_gpu_bad nobody;   /* likewise */
    double *solve_out;    /* the solves' errors (percent): density, divergence */

    double *partial; /* statistics partials, PBF_STATS_VALUES per chunk */
    size_t chunks_cap;
    double *host_partial;
    int stats_ready;
} cuda_state;

#define DEV(w) ((cuda_state *)(w)->dev)
#define FF(f) ((float *)d->field[PBF_F_##f])
#define FU(f) ((unsigned int *)d->field[PBF_F_##f])

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

/* ---- launching ------------------------------------------------------------------------------ */

static pbf_gpu_params params(const pbf_world *w, const pbf_step_ctx *c) {
    pbf_gpu_params P = pbf_gpu_make_params(w, c);
    P.clamp_at = DEV(w)->step.nslots + 1;
    return P;
}

/* In-place exclusive scan of count uints (level: which block-sum buffer to use). */
static void scan(cuda_state *d, int level, unsigned int *data, unsigned int count) {
    const size_t block = 2 * SCAN_WG;
    const unsigned int blocks = (unsigned int)((count + block - 1) / block);
    if (d->error != cudaSuccess || count == 0) return;
    if (level >= d->scan_levels) {
        keep(d, cudaErrorInvalidValue);
        return;
    }
    unsigned int *sums = d->scan_sums[level];
    pbf_k_scan_blocks<<<blocks, SCAN_WG, 0, d->stream>>>(data, count, sums);
    CHECK_LAUNCH(d);
    if (blocks > 1) {
        scan(d, level + 1, sums, blocks);
        if (d->error != cudaSuccess) return;
        pbf_k_scan_add<<<blocks_for(count, PARTICLE_WG), PARTICLE_WG, 0, d->stream>>>(data, count,
                                                                                      sums);
        CHECK_LAUNCH(d);
    }
}

/* Stage "grid" (opencl.c grid()): sort by the cell of x*, gather every SORTED field; in a step
 * the velocity buffers take q0 = x*_0 instead of being gathered. */
static void grid(pbf_world *w, int map, int in_step) {
    cuda_state *d = DEV(w);
    if (d->error != cudaSuccess) return;
    const pbf_gpu_params P = params(w, NULL);
    const unsigned int ncells = w->grid.ncells, n1 = ncells + 1;
    const size_t n = (size_t)w->count;
    const unsigned int pb = blocks_for(n, PARTICLE_WG);
    keep(d, cudaMemsetAsync(d->cell_start, 0, (size_t)n1 * sizeof(unsigned int), d->stream));
    unsigned int *rank = FU(SX), *perm = FU(LAMBDA);
    if (d->error != cudaSuccess) return;
    pbf_k_cells<<<pb, PARTICLE_WG, 0, d->stream>>>(
        P, (pbf_gpu_real)w->grid.origin[0], (pbf_gpu_real)w->grid.origin[1],
        (pbf_gpu_real)w->grid.origin[2], (pbf_gpu_real)w->grid.inv_cell, FF(QX), FF(QY), FF(QZ),
        FU(CELL), rank, d->cell_start);
    CHECK_LAUNCH(d);
    scan(d, 0, d->cell_start, n1);
    if (d->error != cudaSuccess) return;
    pbf_k_scatter<<<pb, PARTICLE_WG, 0, d->stream>>>(P, FU(CELL), rank, d->cell_start, perm);
    CHECK_LAUNCH(d);
    pbf_k_sort_cells<<<blocks_for(ncells, PARTICLE_WG), PARTICLE_WG, 0, d->stream>>>(
        ncells, d->cell_start, perm);
    CHECK_LAUNCH(d);

    void *pool[4] = {d->field[PBF_F_DENSITY], d->field[PBF_F_SX], d->field[PBF_F_SY],
                     d->field[PBF_F_SZ]};
    int sorted[PBF_FIELD_COUNT], ns = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if ((pbf_fields[f].flags & PBF_FIELD_SORTED) &&
            !(in_step && (f == PBF_F_VX || f == PBF_F_VY || f == PBF_F_VZ)))
            sorted[ns++] = f;
    for (int s = 0; s < ns && d->error == cudaSuccess; s += 4) {
        const int nf = ns - s < 4 ? ns - s : 4;
        unsigned int *src[4], *dst[4];
        for (int a = 0; a < 4; ++a) {
            src[a] = a < nf ? (unsigned int *)d->field[sorted[s + a]] : perm; /* unused */
            dst[a] = a < nf ? (unsigned int *)pool[a] : perm;
        }
        const int m = s == 0 ? map : -1;
        pbf_k_gather<<<pb, PARTICLE_WG, 0, d->stream>>>((int)n, perm, nf, src[0], dst[0], src[1],
                                                        dst[1], src[2], dst[2], src[3], dst[3],
                                                        d->bad, m);
        CHECK_LAUNCH(d);
        for (int a = 0; a < nf; ++a) {
            pool[a] = src[a];
            d->field[sorted[s + a]] = dst[a];
        }
    }
    d->field[PBF_F_DENSITY] = pool[0];
    d->field[PBF_F_SX] = pool[1];
    d->field[PBF_F_SY] = pool[2];
    d->field[PBF_F_SZ] = pool[3];
    for (int a = 0; a < 3 && in_step && d->error == cudaSuccess; ++a) /* q0 */
        keep(d, cudaMemcpyAsync(d->field[PBF_F_VX + a], d->field[PBF_F_QX + a], n * sizeof(float),
                                cudaMemcpyDeviceToDevice, d->stream));
}

static int next_slot(cuda_state *d, pbf_stage_id stage) {
    return pbf_gpu_next_slot(&d->step, stage);
}

/* The first stage of a substep (predict, gravity), as opencl.c begin_substep. */
static void begin_substep(cuda_state *d) {
    const int first = pbf_gpu_begin_substep(&d->step);
    if (d->error != cudaSuccess) return;
    /* every substep: the guard's slots; the first of a step also the speed-limit cuts */
    keep(d, cudaMemcpyAsync(d->bad, d->host_none,
                            (size_t)(d->step.nslots + (first ? 2 : 1)) * sizeof(int),
                            cudaMemcpyHostToDevice, d->stream));
    if (first)
        keep(d, cudaMemcpyAsync(d->bad_info, &d->nobody, sizeof d->nobody,
                                cudaMemcpyHostToDevice, d->stream));
}

static size_t stats_chunks(int count) {
    const size_t chunk = (size_t)STATS_WG * PBF_STATS_PER_ITEM;
    return ((size_t)count + chunk - 1) / chunk;
}

static void enqueue_stats(pbf_world *w) {
    cuda_state *d = DEV(w);
    if (d->error != cudaSuccess) return;
    const pbf_gpu_params P = params(w, NULL);
    const size_t chunks = stats_chunks(w->count);
    if (chunks == 0) return;
    pbf_k_stats<<<(unsigned int)chunks, STATS_WG, 0, d->stream>>>(
        P, FF(PX), FF(PY), FF(PZ), FF(VX), FF(VY), FF(VZ), FF(DENSITY), d->partial);
    CHECK_LAUNCH(d);
    if (d->error == cudaSuccess)
        keep(d, cudaMemcpyAsync(d->host_partial, d->partial,
                                chunks * PBF_STATS_VALUES * sizeof(double), cudaMemcpyDeviceToHost,
                                d->stream));
}

/* The statistics from the partials (chunk order, in double), as opencl.c reduce_stats. */
static_assert(PBF_STATS_VALUES == PBF_STATS_PARTIALS, "the kernels' statistics partials");

static void reduce_stats(pbf_world *w) {
    cuda_state *d = DEV(w);
    const int n = w->count;
    if (n > 0 && d->error != cudaSuccess) { /* the device failed: the state is lost */
        pbf_stats_finish(w, NULL, 1);
        return;
    }
    const size_t chunks = stats_chunks(n);
    double acc[PBF_STATS_PARTIALS] = {0};
    for (size_t c = 0; c < chunks; ++c)
        pbf_stats_accumulate(acc, d->host_partial + c * PBF_STATS_VALUES);
    pbf_stats_finish(w, acc, 0);
}

static void cu_sync(pbf_world *w) {
    cuda_state *d = DEV(w);
    if (d->error == cudaSuccess) keep(d, cudaStreamSynchronize(d->stream));
}

/* After a stage that measures a solve, as opencl.c measure(). */
static void measure(pbf_world *w, pbf_stage_id stage, const float *a, float scale, float offset,
                    int now) {
    cuda_state *d = DEV(w);
    const int slot = pbf_gpu_measure_slot(stage);
    if (slot < 0 || d->error != cudaSuccess) return;
    const int n = w->count, chunks = (int)stats_chunks(n);
    pbf_k_excess<<<(unsigned int)chunks, STATS_WG, 0, d->stream>>>(n, a, scale, offset,
                                                                    d->partial);
    CHECK_LAUNCH(d);
    pbf_k_excess_total<<<1, 1, 0, d->stream>>>(n, chunks, d->partial, d->solve_out, slot);
    CHECK_LAUNCH(d);
    d->step.measured[slot] = 1;
    if (!now || d->error != cudaSuccess) return;
    double v = 0.0;
    keep(d, cudaMemcpyAsync(&v, d->solve_out + slot, sizeof v, cudaMemcpyDeviceToHost,
                            d->stream));
    cu_sync(w);
    w->solve_error = d->error != cudaSuccess ? INFINITY : v;
}

static int cu_run_stage(pbf_world *w, pbf_stage_id stage, const pbf_step_ctx *c) {
    cuda_state *d = DEV(w);
    cudaSetDevice(d->device);
    if (stage == PBF_STAGE_STATS) {
        if (w->count > 0 && !d->stats_ready) {
            enqueue_stats(w);
            cu_sync(w);
        }
        reduce_stats(w);
        d->stats_ready = 0;
        return INT_MAX;
    }
    if (w->count == 0) return INT_MAX;
    const pbf_gpu_params P = params(w, c);
    const unsigned int pb = blocks_for((size_t)w->count, PARTICLE_WG), wg = PARTICLE_WG;
    cudaStream_t st = d->stream;
    d->stats_ready = 0;
    w->host_stale = 1;
    if (stage == PBF_STAGE_PREDICT || stage == PBF_STAGE_GRAVITY) begin_substep(d);
    if (d->error != cudaSuccess) return INT_MAX;
    /* the neighbour sets' positions (opencl.c): x*_0 in the velocity buffers after PBF's grid,
     * x* itself in the SPH solvers' pressure stages */
    const int sph = w->def.solver != PBF_SOLVER_PBF;
    switch (stage) {
    case PBF_STAGE_PREDICT: {
        int slot = next_slot(d, stage);
        pbf_k_predict<<<pb, wg, 0, st>>>(P, FF(PX), FF(PY), FF(PZ), FF(VX), FF(VY), FF(VZ), FF(QX),
                                         FF(QY), FF(QZ), d->bad, slot);
        break;
    }
    case PBF_STAGE_GRID: grid(w, d->map_slot, !sph); break; /* SPH: the velocity is sorted */
    case PBF_STAGE_LAMBDA: {
        int slot = next_slot(d, stage);
        pbf_k_lambda<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(VX),
                                        FF(VY), FF(VZ), d->F, d->G, d->boxes, FF(DENSITY),
                                        FF(LAMBDA), d->bad, slot);
        CHECK_LAUNCH(d);
        measure(w, stage, FF(DENSITY), P.inv_rho0, -1.0f, c->need_error);
        break;
    }
    case PBF_STAGE_DELTA_P: {
        int slot = next_slot(d, stage);
        pbf_k_delta_p<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start,
                                         FF(VX), FF(VY), FF(VZ), d->F, d->G, d->boxes, FF(LAMBDA),
                                         FF(SX), FF(SY), FF(SZ), d->bad, slot);
        break;
    }
    case PBF_STAGE_COLLIDE: {
        int slot = next_slot(d, stage);
        pbf_k_collide<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FF(SX), FF(SY), FF(SZ), FF(PX),
                                         FF(PY), FF(PZ), d->boxes, d->bad, slot);
        break;
    }
    case PBF_STAGE_VELOCITY: {
        /* buffers as opencl.c: velocity -> s, omega -> x, |omega| -> lambda */
        int slot = next_slot(d, stage);
        pbf_k_velocity<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FF(PX), FF(PY), FF(PZ),
                                          FF(SX), FF(SY), FF(SZ), d->bad, slot);
        CHECK_LAUNCH(d);
        pbf_k_capture_bad<<<1, 1, 0, st>>>(d->bad, 0, slot + 1, d->map_slot, d->step.base, FF(PX),
                                           FF(PY), FF(PZ), FU(ID), d->bad_info);
        CHECK_LAUNCH(d);
        int curl = next_slot(d, stage);
        pbf_k_curl<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(VX),
                                      FF(VY), FF(VZ), d->F, d->G, d->boxes, FF(SX), FF(SY), FF(SZ),
                                      FF(DENSITY), FF(PX), FF(PY), FF(PZ), FF(LAMBDA), d->bad,
                                      curl);
        break;
    }
    case PBF_STAGE_VORTICITY_XSPH: {
        int slot = next_slot(d, stage);
        pbf_k_vorticity_xsph<<<pb, wg, 0, st>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(VX), FF(VY), FF(VZ), FF(SX),
            FF(SY), FF(SZ), FF(PX), FF(PY), FF(PZ), FF(LAMBDA), FF(DENSITY), FF(PX), FF(PY), FF(PZ),
            d->bad, slot);
        CHECK_LAUNCH(d);
        for (int a = 0; a < 3; ++a) {
            void *x = d->field[PBF_F_PX + a], *q = d->field[PBF_F_QX + a],
                 *q0 = d->field[PBF_F_VX + a], *v = d->field[PBF_F_SX + a];
            d->field[PBF_F_PX + a] = q;  /* x <- x* */
            d->field[PBF_F_VX + a] = x;  /* v <- the new velocity */
            d->field[PBF_F_QX + a] = q0; /* free */
            d->field[PBF_F_SX + a] = v;  /* free */
        }
        pbf_k_capture_bad<<<1, 1, 0, st>>>(d->bad, slot - 1, slot + 1, d->map_slot, d->step.base,
                                           FF(PX), FF(PY), FF(PZ), FU(ID), d->bad_info);
        break;
    }
    /* the SPH solvers' pressure stages (pbf_kernels.cl; buffers as opencl.c) */
    case PBF_STAGE_GRAVITY: {
        int slot = next_slot(d, stage);
        pbf_k_gravity<<<pb, wg, 0, st>>>(P, FF(PX), FF(PY), FF(PZ), FF(VX), FF(VY), FF(VZ), FF(QX),
                                         FF(QY), FF(QZ), d->bad, slot);
        break;
    }
    case PBF_STAGE_WCSPH_PRESSURE: {
        int slot = next_slot(d, stage);
        pbf_k_wcsph_pressure<<<pb, wg, 0, st>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
            d->boxes, FF(VX), FF(VY), FF(VZ), FF(DENSITY), FF(LAMBDA), FF(SX), FF(SY), FF(SZ),
            d->bad, slot);
        CHECK_LAUNCH(d);
        measure(w, stage, FF(DENSITY), P.inv_rho0, -1.0f, c->need_error);
        break;
    }
    case PBF_STAGE_DFSPH_FACTOR: {
        int slot = next_slot(d, stage);
        pbf_k_dfsph_factor<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start,
                                              FF(QX), FF(QY), FF(QZ), d->F, d->G, d->boxes,
                                              FF(DENSITY), FF(SX), d->bad, slot);
        break;
    }
    case PBF_STAGE_DIVERGENCE:
    case PBF_STAGE_DENSITY_ADV: {
        int slot = next_slot(d, stage), divergence = stage == PBF_STAGE_DIVERGENCE;
        pbf_k_dfsph_source<<<pb, wg, 0, st>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
            d->boxes, FF(VX), FF(VY), FF(VZ), FF(DENSITY), FF(SX), FF(SY), FF(LAMBDA), divergence,
            d->bad, slot);
        CHECK_LAUNCH(d);
        measure(w, stage, FF(SY), 1.0f, 0.0f, c->need_error);
        break;
    }
    case PBF_STAGE_PRESSURE_ACCEL: {
        /* PCISPH: gradients at x + dt v, the new velocities into s, then s and v swap roles */
        int slot = next_slot(d, stage), viscous = w->def.solver == PBF_SOLVER_WCSPH,
            predicted = w->def.solver == PBF_SOLVER_PCISPH;
        float *o[3] = {predicted ? FF(SX) : FF(VX), predicted ? FF(SY) : FF(VY),
                       predicted ? FF(SZ) : FF(VZ)};
        pbf_k_pressure_accel<<<pb, wg, 0, st>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
            d->boxes, FF(LAMBDA), FF(SX), FF(SY), FF(SZ), viscous, predicted, FF(VX), FF(VY),
            FF(VZ), o[0], o[1], o[2], d->bad, slot);
        for (int a = 0; a < 3 && predicted; ++a) {
            void *v = d->field[PBF_F_VX + a];
            d->field[PBF_F_VX + a] = d->field[PBF_F_SX + a];
            d->field[PBF_F_SX + a] = v;
        }
        break;
    }
    case PBF_STAGE_ADVECT:
        pbf_k_advect<<<pb, wg, 0, st>>>(P, FF(PX), FF(PY), FF(PZ), FF(VX), FF(VY), FF(VZ), FF(SX),
                                        FF(SY), FF(SZ));
        break;
    /* PCISPH, IISPH: buffers as opencl.c */
    case PBF_STAGE_PCISPH_INIT: {
        int slot = next_slot(d, stage);
        pbf_k_pcisph_init<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), d->boxes, FF(VX), FF(VY),
                                             FF(VZ), FF(DENSITY), d->bad, slot);
        break;
    }
    case PBF_STAGE_PCISPH_PRESSURE: {
        int slot = next_slot(d, stage);
        pbf_k_pcisph_pressure<<<pb, wg, 0, st>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
            d->boxes, FF(VX), FF(VY), FF(VZ), FF(DENSITY), FF(SX), FF(LAMBDA), d->bad, slot);
        CHECK_LAUNCH(d);
        measure(w, stage, FF(SX), 1.0f, 0.0f, c->need_error);
        break;
    }
    case PBF_STAGE_IISPH_DIAGONAL: {
        int slot = next_slot(d, stage);
        pbf_k_iisph_diagonal<<<pb, wg, 0, st>>>(P, FF(QX), FF(QY), FF(QZ), FU(CELL),
                                                d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
                                                d->boxes, FF(DENSITY), FF(SX), FF(SY), d->bad,
                                                slot);
        break;
    }
    case PBF_STAGE_IISPH_PRESSURE: {
        int slot = next_slot(d, stage);
        pbf_k_iisph_pressure<<<pb, wg, 0, st>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
            d->boxes, FF(VX), FF(VY), FF(VZ), FF(DENSITY), FF(SX), FF(SY), FF(SZ), FF(LAMBDA),
            d->bad, slot);
        CHECK_LAUNCH(d);
        measure(w, stage, FF(SZ), 1.0f, 0.0f, c->need_error);
        break;
    }
    case PBF_STAGE_STATS:
    case PBF_STAGE_COUNT: break;
    }
    CHECK_LAUNCH(d);
    return INT_MAX;
}

static void cu_finish_step(pbf_world *w, pbf_bad_particle bad[PBF_STAGE_COUNT]) {
    cuda_state *d = DEV(w);
    cudaSetDevice(d->device);
    for (int s = 0; s < PBF_STAGE_COUNT; ++s) {
        bad[s].index = INT_MAX;
        bad[s].id = 0;
        bad[s].position.x = bad[s].position.y = bad[s].position.z = 0.0f;
    }
    pbf_gpu_end_step(&d->step);
    /* one round trip: the statistics partials, the first non-finite particle and the solves'
     * last errors */
    pbf_gpu_bad info = {-1, INT_MAX, 0u, 0.0f, 0.0f, 0.0f};
    double err[2] = {0.0, 0.0};
    unsigned int clamps = 0u;
    enqueue_stats(w);
    if (d->error == cudaSuccess)
        keep(d, cudaMemcpyAsync(&info, d->bad_info, sizeof info, cudaMemcpyDeviceToHost,
                                d->stream));
    if (d->error == cudaSuccess && (d->step.measured[0] || d->step.measured[1]))
        keep(d, cudaMemcpyAsync(err, d->solve_out, sizeof err, cudaMemcpyDeviceToHost,
                                d->stream));
    if (d->error == cudaSuccess) /* the step's speed-limit cuts */
        keep(d, cudaMemcpyAsync(&clamps, d->bad + d->step.nslots + 1, sizeof clamps,
                                cudaMemcpyDeviceToHost, d->stream));
    cu_sync(w);
    w->host_stale = 1;
    if (d->error != cudaSuccess) {
        bad[PBF_STAGE_PREDICT].index = 0; /* reported as non-finite from the first stage */
        d->stats_ready = 0;
        return;
    }
    d->stats_ready = 1;
    if (d->step.measured[0]) w->solve.error = err[0];
    if (d->step.measured[1]) w->solve.divergence_error = err[1];
    w->solve.speed_clamps = clamps;
    const pbf_stage_id stage = pbf_gpu_logged_stage(&d->step, info.slot);
    if (info.slot >= 0 && stage < PBF_STAGE_COUNT) {
        pbf_bad_particle *b = &bad[stage];
        b->index = info.index;
        b->id = info.id;
        b->position.x = info.x;
        b->position.y = info.y;
        b->position.z = info.z;
    }
}

static void cu_refresh(pbf_world *w) {
    cuda_state *d = DEV(w);
    cudaSetDevice(d->device);
    if (w->count == 0) return;
    const size_t bytes = (size_t)w->count * sizeof(float);
    for (int a = 0; a < 3 && d->error == cudaSuccess; ++a)
        keep(d, cudaMemcpyAsync(d->field[PBF_F_QX + a], d->field[PBF_F_PX + a], bytes,
                                cudaMemcpyDeviceToDevice, d->stream));
    grid(w, -1, 0);
    const pbf_gpu_params P = params(w, NULL);
    if (d->error == cudaSuccess) {
        pbf_k_density<<<blocks_for((size_t)w->count, PARTICLE_WG), PARTICLE_WG, 0, d->stream>>>(
            P, FF(QX), FF(QY), FF(QZ), FU(CELL), d->cell_start, FF(QX), FF(QY), FF(QZ), d->F, d->G,
            d->boxes, FF(DENSITY));
        CHECK_LAUNCH(d);
    }
    cu_sync(w);
    d->stats_ready = 0;
    w->host_stale = 1;
}

static void cu_boxes_changed(pbf_world *w) {
    cuda_state *d = DEV(w);
    if (w->nboxes == 0 || d->error != cudaSuccess) return;
    cudaSetDevice(d->device);
    /* synchronous: the host array changes before the next step */
    keep(d, cudaMemcpy(d->boxes, w->wall_boxes, (size_t)w->nboxes * sizeof(pbf_wall_box),
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
    d->stats_ready = 0;
    for (int f = 0; f < PBF_FIELD_COUNT && bytes && d->error == cudaSuccess; ++f) {
        if (!(pbf_fields[f].flags & PBF_FIELD_STATE)) continue;
        keep(d, cudaMemcpyAsync(d->field[f], w->field[f], bytes, cudaMemcpyHostToDevice,
                                d->stream));
    }
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
        keep(d, cudaMemcpyAsync(w->field[f], d->field[f], bytes, cudaMemcpyDeviceToHost,
                                d->stream));
    }
    cu_sync(w);
    if (d->error != cudaSuccess) return device_failed(w, "download", err);
    return PBF_OK;
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
    const size_t arrays = (size_t)pbf_fields_bytes(PBF_FIELD_CPU, 0) / 4;
    const size_t chunks = stats_chunks(capacity);
    const size_t partial_bytes = (chunks ? chunks : 1) * PBF_STATS_VALUES * sizeof(double);
    const double total = (double)per_array * (double)arrays +
                         (double)fixed_bytes(w, d->step.nslots) + (double)partial_bytes;
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
                      (double)fixed_bytes(w, d->step.nslots) / 1048576.0,
                      (double)free_b / 1048576.0,
                      (double)total_b / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    cu_sync(w);
    const size_t keep_bytes = (size_t)w->count * 4;
    for (int f = 0; f < PBF_FIELD_COUNT && d->error == cudaSuccess; ++f) {
        if (pbf_fields[f].flags & PBF_FIELD_CPU) continue;
        void *grown = new_buffer(d, per_array, NULL);
        if (!grown) break;
        if (d->field[f] && keep_bytes) {
            cudaError_t c = cudaMemcpy(grown, d->field[f], keep_bytes, cudaMemcpyDeviceToDevice);
            if (c != cudaSuccess) {
                cudaFree(grown);
                keep(d, c);
                break;
            }
        }
        if (d->field[f]) cudaFree(d->field[f]);
        d->field[f] = grown;
    }
    double *host = NULL;
    if (d->error == cudaSuccess) {
        double *partial = (double *)new_buffer(d, partial_bytes, NULL);
        host = partial ? (double *)malloc(partial_bytes) : NULL;
        if (partial && host) {
            if (d->partial) cudaFree(d->partial);
            free(d->host_partial);
            d->partial = partial;
            d->host_partial = host;
            d->chunks_cap = chunks;
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
        if (d->field[f]) cudaFree(d->field[f]);
    void *others[] = {d->cell_start, d->F,        d->G,       d->boxes,
                      d->bad,        d->bad_info, d->partial, d->solve_out};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i)
        if (others[i]) cudaFree(others[i]);
    for (int l = 0; l < MAX_SCAN_LEVELS; ++l)
        if (d->scan_sums[l]) cudaFree(d->scan_sums[l]);
    if (d->stream) cudaStreamDestroy(d->stream);
    (void)cudaGetLastError();
    free(d->step.log);
    free(d->host_none);
    free(d->host_partial);
    free(d);
    w->dev = NULL;
}

/* ---- opening -------------------------------------------------------------------------------- */

/* The structs passed by value and in buffers have the host's layout on the device. */
static pbf_status check_layout(cuda_state *d, pbf_error *err) {
    unsigned int sizes[3] = {0, 0, 0};
    unsigned int *out = (unsigned int *)new_buffer(d, sizeof sizes, NULL);
    if (out) {
        pbf_k_layout<<<1, 1, 0, d->stream>>>(out);
        CHECK_LAUNCH(d);
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
    d->step.nslots = pbf_gpu_slots_per_substep(&w->def);
    d->map_slot = d->step.nslots;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess &&
        (double)fixed_bytes(w, d->step.nslots) > (double)free_b) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "%s: the grid (%u cells) and tables need %.1f MiB, the device has %.1f MiB "
                      "free of %.1f MiB (cudaMemGetInfo)",
                      d->label, w->grid.ncells, (double)fixed_bytes(w, d->step.nslots) / 1048576.0,
                      (double)free_b / 1048576.0, (double)total_b / 1048576.0);
        return PBF_ERR_LIMIT;
    }
    const size_t cells = (size_t)w->grid.ncells + 1;
    d->cell_start = (unsigned int *)new_buffer(d, cells * sizeof(unsigned int), NULL);
    size_t count = cells;
    d->scan_levels = 0;
    do {
        count = (count + 2 * SCAN_WG - 1) / (2 * SCAN_WG);
        if (d->scan_levels < MAX_SCAN_LEVELS)
            d->scan_sums[d->scan_levels] =
                (unsigned int *)new_buffer(d, count * sizeof(unsigned int), NULL);
        d->scan_levels++;
    } while (count > 1);
    const size_t n3 = (size_t)w->walls.n * (size_t)w->walls.n * (size_t)w->walls.n;
    d->F = (float *)new_buffer(d, n3 * sizeof(float), w->walls.F);
    d->G = (float *)new_buffer(d, n3 * sizeof(float), w->walls.G);
    d->boxes = (pbf_wall_box *)new_buffer(d, PBF_MAX_BOXES * sizeof(pbf_wall_box), NULL);
    d->host_none = (int *)malloc((size_t)(d->step.nslots + 2) * sizeof(int));
    if (d->host_none) {
        for (int s = 0; s <= d->step.nslots; ++s) d->host_none[s] = INT_MAX;
        d->host_none[d->step.nslots + 1] = 0; /* the speed-limit cuts */
    }
    d->nobody.slot = -1;
    d->nobody.index = INT_MAX;
    d->bad = (int *)new_buffer(d, (size_t)(d->step.nslots + 2) * sizeof(int), NULL);
    d->solve_out = (double *)new_buffer(d, 2 * sizeof(double), NULL);
    d->bad_info = (pbf_gpu_bad *)new_buffer(d, sizeof(pbf_gpu_bad), NULL);
    if (d->scan_levels > MAX_SCAN_LEVELS || !d->host_none ||
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
    d->device = index;
    d->error = cudaSuccess;
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
};
