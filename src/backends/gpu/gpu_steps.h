/*
 * The step on a GPU, written once for both hosts (opencl.c, cuda.cu) and compiled once, as plain
 * C (gpu_steps.c and the methods' src/solvers/<method>/<method>_gpu.c): which kernels of
 * pbf_kernels.cl each stage launches, in which order, with which arguments, and which buffers
 * then change roles; the grid's sort and neighbour lists, the solves' measures, the statistics,
 * the guard's capture, refresh and the end of a step. This header also compiles as C++ (cuda.cu
 * includes it); include it after internal.h, gpu_prelude.h and gpu_host.h.
 *
 * A buffer is an opaque handle (pbf_gpu_mem: a cl_mem, or a device pointer). A host's state has
 * the pbf_gpu_dev below as its first member, whose `host` points to the host's table of these
 * functions (pbf_gpu_host_ops), which the step code calls through the wrappers below:
 *
 *   void pbf_gpu_launch(pbf_gpu_dev *g, int kernel, size_t items, size_t local, int nargs,
 *                       const pbf_gpu_arg *args)   kernel (PBF_GK_*) over `items` work-items in
 *                                                  groups of `local`; nothing after an error or
 *                                                  for 0 items
 *   void pbf_gpu_copy(g, dst, src, bytes)          device to device
 *   void pbf_gpu_read(g, src, offset, bytes, out, wait)   device to host; wait: at once
 *   void pbf_gpu_write(g, dst, bytes, src)         host to device (src lives on)
 *   void pbf_gpu_wait(g)                           for everything enqueued
 *   pbf_gpu_mem pbf_gpu_alloc(g, bytes), void pbf_gpu_free(g, m)
 *   void pbf_gpu_fail(g)                           marks the device failed (an impossible scan)
 *   int pbf_gpu_failed(g)                          a device call of the step has failed
 *
 * An argument is a (size, pointer) pair: clSetKernelArg's form, and cudaLaunchKernel's array of
 * pointers. Both hosts thus pass the same list, whose sizes the OpenCL runtime checks against
 * the kernel's parameters (the same C types in both).
 *
 * The stages' launches live with their methods: the shared stages in
 * src/solvers/common/common_gpu.c, the SPH family's in src/solvers/sph/sph_gpu.c, each method's
 * own in src/solvers/<method>/<method>_gpu.c (declared in the methods' headers); gpu_steps.c
 * keeps the grid, the statistics, the solves' measures, the guard, refresh, the rows of a
 * distributed run and the end of a step, and pbf_gpu_stage, which calls a stage's function.
 */
#ifndef PBF_GPU_STEPS_H
#define PBF_GPU_STEPS_H

#include <stddef.h>

/* The kernels, one list: X(id, function), id naming PBF_GK_<id>. Here those of pbf_kernels.cl
 * itself (the grid, scan and sort, neighbour lists, rows of a distributed run, density, solves'
 * measures, guard, statistics, layout); then PBF_SOLVER_KERNELS, every folder's of src/solvers/
 * (common/, sph/, then the methods alphabetically), each folder's list PBF_KERNELS_<folder> in its
 * <folder>_kernels.h, gathered at configure time (cmake/solvers.cmake: the build's
 * generated/pbf_solver_kernels.h, included by gpu_prelude.h). A new method's kernels thus need no
 * line here. */
#define PBF_GPU_KERNELS(X)                                                                         \
    X(CELLS, pbf_k_cells)                                                                          \
    X(SCAN_BLOCKS, pbf_k_scan_blocks)                                                              \
    X(SCAN_ADD, pbf_k_scan_add)                                                                    \
    X(SCATTER, pbf_k_scatter)                                                                      \
    X(SORT_CELLS, pbf_k_sort_cells)                                                                \
    X(GATHER, pbf_k_gather)                                                                        \
    X(FILL, pbf_k_fill)                                                                            \
    X(DENSITY, pbf_k_density)                                                                      \
    X(CAPTURE_BAD, pbf_k_capture_bad)                                                              \
    X(STATS, pbf_k_stats)                                                                          \
    X(LAYOUT, pbf_k_layout)                                                                        \
    X(LIST_COUNT, pbf_k_list_count)                                                                \
    X(LIST_FILL, pbf_k_list_fill)                                                                  \
    X(EXCESS, pbf_k_excess)                                                                        \
    X(EXCESS_TOTAL, pbf_k_excess_total)                                                            \
    X(PACK_ROWS, pbf_k_pack_rows)                                                                  \
    X(UNPACK_ROWS, pbf_k_unpack_rows)                                                              \
    X(MERGE_ROWS, pbf_k_merge_rows)                                                                \
    PBF_SOLVER_KERNELS(X)

#define PBF_GPU_KERNEL_ID(id, fn) PBF_GK_##id,
enum { PBF_GPU_KERNELS(PBF_GPU_KERNEL_ID) PBF_GK_COUNT };
#undef PBF_GPU_KERNEL_ID

#define PBF_GPU_MAX_SCAN_LEVELS 8

typedef void *pbf_gpu_mem; /* a device buffer: a cl_mem, or a CUDA device pointer */

struct pbf_gpu_host_ops;

/* What the step's sequence uses of a host's state (its first member). */
typedef struct pbf_gpu_dev {
    pbf_gpu_mem field[PBF_FIELD_COUNT]; /* by role; NULL for the CPU-only rows */
    pbf_gpu_mem cell_start;             /* ncells + 1: the histogram, then the cell starts */
    pbf_gpu_mem scan_sums[PBF_GPU_MAX_SCAN_LEVELS]; /* block sums of each level of the scan */
    int scan_levels;
    /* neighbour lists (PBF_LISTS in pbf_kernels.cl; CPU devices): offsets (capacity + 1) and
     * indices, rebuilt with the grid */
    int lists;
    pbf_gpu_mem nbr_off, nbr_idx;
    size_t nbr_idx_cap; /* entries */
    pbf_gpu_mem F, G, boxes;
    /* non-finite guard: one int slot per launch of a substep (atomic_min of a particle index),
     * plus the predict slot followed through the sort (map_slot = nslots), plus the step's count
     * of speed-limit cuts (nslots + 1); the captured particle; the slots' stages and the
     * measured solves on the host (gpu_host.h) */
    pbf_gpu_mem bad, bad_info;
    int map_slot;
    pbf_gpu_step step;
    pbf_gpu_bad nobody; /* the captured particle's reset value */
    pbf_gpu_mem solve_out; /* the solves' errors (percent): density, divergence, pbf_gpu_real */
    pbf_gpu_mem partial;   /* statistics partials, PBF_STATS_VALUES per chunk, pbf_gpu_real */
    size_t chunks_cap;
    void *host_partial;
    int stats_ready; /* host_partial holds the partials of the current state */
    int fp64;        /* pbf_gpu_real is double (the grid cells too) */
    /* a distributed run (w->hooks, src/mpi/): one byte per particle, nonzero for a ghost, from
     * the grid stage's hook (ghost_mask) to the end of the step; ghost_on while it is valid */
    pbf_gpu_mem ghost;
    size_t ghost_cap;
    int ghost_on;
    /* its halo: the particles whose rows are sent (slot 0) and the ghosts that receive (slot 1),
     * set once per step after the grid (pbf_gpu_set_index), and the packed rows in transit */
    pbf_gpu_mem halo_idx[3], halo_buf; /* slot 2: gather_rows' and merge_rows' indices */
    size_t halo_idx_cap[3], halo_buf_cap; /* bytes */
    int halo_n[3];
    pbf_gpu_mem merge_in; /* merge_rows: the particles received */
    size_t merge_in_cap;
    /* PBF's carried lambda from the velocity stage to the end of the post pass, with vorticity
     * confinement, while |omega| takes its buffer (pbf_gpu_stage): one float per particle */
    pbf_gpu_mem wnorm;
    size_t wnorm_cap;
    size_t wg, scan_wg, stats_wg; /* per-particle kernels, the scan's, the statistics' */
    const struct pbf_gpu_host_ops *host; /* the host's functions (see the top) */
} pbf_gpu_dev;

typedef struct pbf_gpu_arg {
    size_t size;
    const void *value;
} pbf_gpu_arg;
#define PBF_GPU_A(x) {sizeof(x), &(x)}

/* The host's side (see the top): opencl.c's and cuda.cu's tables. */
typedef struct pbf_gpu_host_ops {
    void (*launch)(pbf_gpu_dev *g, int kernel, size_t items, size_t local, int nargs,
                   const pbf_gpu_arg *args);
    void (*copy)(pbf_gpu_dev *g, pbf_gpu_mem dst, pbf_gpu_mem src, size_t bytes);
    void (*read)(pbf_gpu_dev *g, pbf_gpu_mem src, size_t offset, size_t bytes, void *out,
                 int wait);
    void (*write)(pbf_gpu_dev *g, pbf_gpu_mem dst, size_t bytes, const void *src);
    void (*wait)(pbf_gpu_dev *g);
    pbf_gpu_mem (*alloc)(pbf_gpu_dev *g, size_t bytes);
    void (*free)(pbf_gpu_dev *g, pbf_gpu_mem m);
    void (*fail)(pbf_gpu_dev *g);
    int (*failed)(const pbf_gpu_dev *g);
} pbf_gpu_host_ops;

static inline void pbf_gpu_launch(pbf_gpu_dev *g, int kernel, size_t items, size_t local,
                                  int nargs, const pbf_gpu_arg *args) {
    g->host->launch(g, kernel, items, local, nargs, args);
}
static inline void pbf_gpu_copy(pbf_gpu_dev *g, pbf_gpu_mem dst, pbf_gpu_mem src, size_t bytes) {
    g->host->copy(g, dst, src, bytes);
}
static inline void pbf_gpu_read(pbf_gpu_dev *g, pbf_gpu_mem src, size_t offset, size_t bytes,
                                void *out, int wait) {
    g->host->read(g, src, offset, bytes, out, wait);
}
static inline void pbf_gpu_write(pbf_gpu_dev *g, pbf_gpu_mem dst, size_t bytes, const void *src) {
    g->host->write(g, dst, bytes, src);
}
static inline void pbf_gpu_wait(pbf_gpu_dev *g) {
    g->host->wait(g);
}
static inline pbf_gpu_mem pbf_gpu_alloc(pbf_gpu_dev *g, size_t bytes) {
    return g->host->alloc(g, bytes);
}
static inline void pbf_gpu_free(pbf_gpu_dev *g, pbf_gpu_mem m) {
    g->host->free(g, m);
}
static inline void pbf_gpu_fail(pbf_gpu_dev *g) {
    g->host->fail(g);
}
static inline int pbf_gpu_failed(const pbf_gpu_dev *g) {
    return g->host->failed(g);
}

/* PBF_GPU_LAUNCH(g, kernel, items, local, PBF_GPU_A(arg0), ...) */
#define PBF_GPU_LAUNCH(g, k, items, local, ...)                                                    \
    do {                                                                                           \
        const pbf_gpu_arg args_[] = {__VA_ARGS__};                                                 \
        pbf_gpu_launch((g), (k), (items), (local), (int)(sizeof args_ / sizeof args_[0]), args_);  \
    } while (0)

static inline pbf_gpu_params pbf_gpu_params_of(const pbf_world *w, const pbf_gpu_dev *g,
                                               const pbf_step_ctx *c) {
    pbf_gpu_params P = pbf_gpu_make_params(w, c);
    P.clamp_at = g->step.nslots + 1;
    return P;
}

static inline size_t pbf_gpu_real_size(const pbf_gpu_dev *g) {
    return g->fp64 ? sizeof(double) : sizeof(float);
}

static inline size_t pbf_gpu_stats_chunks(const pbf_gpu_dev *g, int count) {
    const size_t chunk = g->stats_wg * PBF_STATS_PER_ITEM;
    return ((size_t)count + chunk - 1) / chunk;
}

/* a[from .. from + n) = value, ints */
static inline void pbf_gpu_fill(pbf_gpu_dev *g, pbf_gpu_mem a, int from, int n, int value) {
    PBF_GPU_LAUNCH(g, PBF_GK_FILL, (size_t)n, g->wg, PBF_GPU_A(a), PBF_GPU_A(from), PBF_GPU_A(n),
                   PBF_GPU_A(value));
}

/* A new state on the device (the hosts' upload): the warm-start rows of the solver start at 0,
 * as world.c sets the host's. */
static inline void pbf_gpu_zero_warm(const pbf_world *w, pbf_gpu_dev *g) {
    for (int f = 0; f < PBF_FIELD_COUNT && w->count > 0; ++f)
        if ((pbf_fields[f].flags & (PBF_FIELD_WARM | PBF_FIELD_WARM_V)) && g->field[f])
            pbf_gpu_fill(g, g->field[f], 0, w->count, 0);
}

/* The buffer of a role (the caller's `g`). */
#define PBF_GPU_FB(f) (g->field[PBF_F_##f])

/* The neighbour kernels' leading arguments: P, x*, the neighbour sets (cell keys and starts, or
 * list offsets and indices, pbf_kernels.cl PBF_LISTS) and their positions q0, the wall tables
 * and boxes (the caller's locals g, P, nb_cell and nb_start). */
#define PBF_GPU_NB(q0)                                                                             \
    PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(QX)), PBF_GPU_A(PBF_GPU_FB(QY)),                          \
        PBF_GPU_A(PBF_GPU_FB(QZ)), PBF_GPU_A(nb_cell), PBF_GPU_A(nb_start), PBF_GPU_A(q0[0]),      \
        PBF_GPU_A(q0[1]), PBF_GPU_A(q0[2]), PBF_GPU_A(g->F), PBF_GPU_A(g->G), PBF_GPU_A(g->boxes)

/* The neighbour kernels' arguments `cell` and `start`: the cell keys and starts, or with lists
 * the list offsets and indices (after the grid: it may have grown the lists). */
static inline pbf_gpu_mem pbf_gpu_nb_cell(const pbf_gpu_dev *g) {
    return g->lists ? g->nbr_off : g->field[PBF_F_CELL];
}
static inline pbf_gpu_mem pbf_gpu_nb_start(const pbf_gpu_dev *g) {
    return g->lists ? g->nbr_idx : g->cell_start;
}

#ifdef __cplusplus
extern "C" {
#endif

/* gpu_steps.c: the stages' shared parts (the first stage of a substep, a solve's measure, the
 * guard's capture), the grid stage, one stage of the step, and the backend's operations the
 * hosts forward to (backend.h: run_stage, read_rows / write_rows, set_rows_index, read_rows_at /
 * write_rows_at, gather_rows, merge_rows, finish_step, refresh) */
void pbf_gpu_substep_start(pbf_gpu_dev *g);
void pbf_gpu_measure(pbf_world *w, pbf_gpu_dev *g, pbf_gpu_mem a, float scale, float offset,
                     int now);
void pbf_gpu_capture(pbf_gpu_dev *g, int from, int to);
void pbf_gpu_grid_stage(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c);
int pbf_gpu_run_stage(pbf_world *w, pbf_gpu_dev *g, const pbf_stage_desc *st,
                      const pbf_step_ctx *c);
int pbf_gpu_rows(pbf_world *w, pbf_gpu_dev *g, const int *rows, int nrows, int to_device);
int pbf_gpu_set_index(pbf_gpu_dev *g, int slot, const int *idx, int n);
int pbf_gpu_rows_at(pbf_world *w, pbf_gpu_dev *g, int slot, const int *rows, int nrows, void *buf,
                    int to_device);
int pbf_gpu_gather(pbf_gpu_dev *g, const int *rows, int nrows, const int *idx, int n, void *out);
int pbf_gpu_merge(pbf_gpu_dev *g, const int *rows, int nrows, const int *src, int n,
                  const void *in, int nin);
int pbf_gpu_finish_step(pbf_world *w, pbf_gpu_dev *g, pbf_bad_particle *bad);
void pbf_gpu_refresh(pbf_world *w, pbf_gpu_dev *g);

#ifdef __cplusplus
}
#endif

#endif
