/*
 * The backend interface: where the particle arrays live and who runs the stages of a step.
 *
 * A backend is a table of function pointers (no plug-in loader, no #ifdef in the solver):
 * allocate (reserve), upload / download between the host arrays of the field registry and the
 * device, run one stage of the method's table (stage.h), synchronise. The stage runner (core.c) calls them in the order of
 * its stage table, times every stage and reports the first stage that produced a non-finite
 * value. The CPU backend (backends/cpu/) runs the stages on the host arrays themselves with
 * OpenMP; the GPU backends (backends/opencl/, backends/cuda/) keep the particles on the device
 * between steps and compile one kernel source (backends/gpu/pbf_kernels.cl) with the kernel math
 * of src/sph/.
 */
#ifndef PBF_BACKEND_H
#define PBF_BACKEND_H

#include "pbf/pbf.h"
#include "stage.h"

typedef struct pbf_backend_ops {
    const char *name; /* "cpu", "opencl", "cuda" */
    /* Field rows the world keeps on the host: those with one of the flags host_keep, or all when
     * it is 0. The CPU backend keeps everything; a GPU backend keeps only the STATE fields there
     * (its copy of the device state). A backend that runs a step sets w->host_stale, and
     * pbf_sync_host brings the host copy up to date through download. */
    unsigned host_keep;
    /* Device-side allocation for `capacity` particles (the host arrays are the runner's). */
    pbf_status (*reserve)(pbf_world *w, int capacity, pbf_error *err);
    /* The host STATE fields (count particles) and the boxes to the device. */
    pbf_status (*upload)(pbf_world *w, pbf_error *err);
    /* The device STATE fields to the host arrays. */
    pbf_status (*download)(pbf_world *w, pbf_error *err);
    /* Copies the boxes' current position to the device (once per step, before its stages). */
    void (*boxes_changed)(pbf_world *w);
    /* Runs one stage. Returns the lowest index of a particle for which the stage produced a
     * non-finite value, or INT_MAX; a backend that cannot tell without a round trip returns
     * INT_MAX and reports in finish_step instead. */
    int (*run_stage)(pbf_world *w, const pbf_stage_desc *stage, const pbf_step_ctx *ctx);
    /* Sorts the particles and computes their density at the current positions (no motion);
     * after adding particles or restoring a snapshot. */
    void (*refresh)(pbf_world *w);
    /* Waits for the device (timings). */
    void (*sync)(pbf_world *w);
    /* End of a step: for backends whose run_stage returns INT_MAX, the row of the method's table
     * (its index) of the first stage that produced a non-finite value, and that particle in
     * *bad, or -1 for none; also the errors of the step's last measurements of its solves into
     * w->solve (those not read at once, see pbf_step_ctx.need_error). NULL for the CPU backend. */
    int (*finish_step)(pbf_world *w, pbf_bad_particle *bad);
    /* Releases the device side. */
    void (*release)(pbf_world *w);
    /* Device rows to the host arrays (read_rows) or back (write_rows): for each field id in
     * rows[0..nrows), the buffer that now holds that role (a GPU step moves roles between
     * buffers: see gpu_steps.h), particles [0, count); both wait for the device. A distributed
     * run (src/mpi/) moves exactly the rows each of its hooks reads and writes through these.
     * NULL for the CPU backend, whose arrays are the host's. */
    pbf_status (*read_rows)(pbf_world *w, const int *rows, int nrows, pbf_error *err);
    pbf_status (*write_rows)(pbf_world *w, const int *rows, int nrows, pbf_error *err);
    /* A distributed run's halo updates: set_rows_index puts a list of particle indices on the
     * device, once per step after the grid (slot 0: the particles whose rows are sent, slot 1:
     * the ghosts that receive); read_rows_at packs rows `rows` (by role) of that
     * slot's particles word-interleaved to the host (out[k nrows + j] = row j of particle
     * idx[k]), write_rows_at unpacks `in` into them: only the halo's entries cross the bus. Both
     * wait for the device. NULL for the CPU backend. */
    pbf_status (*set_rows_index)(pbf_world *w, int slot, const int *idx, int n, pbf_error *err);
    pbf_status (*read_rows_at)(pbf_world *w, int slot, const int *rows, int nrows, uint32_t *out,
                               pbf_error *err);
    pbf_status (*write_rows_at)(pbf_world *w, int slot, const int *rows, int nrows,
                                const uint32_t *in, pbf_error *err);
    /* The migration and the ghosts' removal on the device. gather_rows: rows `rows` (by role)
     * of particles idx[0..n) to the host, out[k nrows + j] = row j of particle idx[k].
     * merge_rows: particle k of those rows becomes particle src[k] where src[k] >= 0, else
     * record -src[k] - 1 of `in` (nrows words each, nin records: particles received), for
     * k < n, in place (the caller reserved room for n and sets the count). Only the indices and
     * the listed records cross the bus; both wait. NULL for the CPU backend. */
    pbf_status (*gather_rows)(pbf_world *w, const int *rows, int nrows, const int *idx, int n,
                              uint32_t *out, pbf_error *err);
    pbf_status (*merge_rows)(pbf_world *w, const int *rows, int nrows, const int *src, int n,
                             const uint32_t *in, int nin, pbf_error *err);
    /* Bytes its neighbour lists (and their companions: the CPU backend's packed neighbour copy)
     * hold now (NULL: it keeps none). */
    size_t (*list_bytes)(const pbf_world *w);
} pbf_backend_ops;

extern const pbf_backend_ops pbf_backend_cpu;

/* backends/cpu/cpu.c */
pbf_status pbf_cpu_open(pbf_world *w, pbf_error *err);

/* Appends a line to a device-list note (pbf_list_devices). */
void pbf_backend_note(char *note, size_t size, const char *text);

/* The devices "opencl" or "cuda" (kind) may stand for, as device strings ("opencl:P.D",
 * "cuda:N"), in the order the default device is chosen from (OpenCL: its GPUs if it has any,
 * else every device): up to max into ids; returns how many there are (0: none, or the backend
 * is not built in). A distributed run gives each process on a node one of them. */
int pbf_backend_default_devices(const char *kind, char (*ids)[PBF_DEVICE_NAME_MAX], int max);

/* Opens the backend a device string names ("cpu", "opencl[:P.D]", "cuda[:N]"): sets w->backend
 * and its state, or fails naming the device. Backends not built in say so. */
pbf_status pbf_backend_open(pbf_world *w, const char *device, pbf_error *err);

#endif
