/*
 * What the host sides of the GPU backends (opencl.c, cuda.cu) share, so that both run the same
 * sequence: the kernels' argument block from the world, the launch slots of the non-finite guard
 * over the substeps of a step, and the bookkeeping of the iterative solves' errors. Plain C that
 * also compiles as C++ (nvcc compiles cuda.cu as C++); included after internal.h and
 * gpu_prelude.h.
 *
 * The guard: every launch of a stage that can produce a non-finite value gets a slot of the
 * device's `bad` buffer (atomic_min of a particle index). Slots are numbered per substep (slot 0
 * is its first stage, predict or gravity, whose index the grid's gather follows into the map
 * slot); the capture kernel, launched at the end of each substep, records the first particle
 * with base + slot, and the host keeps the stage of every launch of the step (log) to name it.
 *
 * The solves' errors: a stage that measures a solve (its row's `measures`: a density or a
 * divergence solve) is followed by a reduction of its per-particle errors on the device into the
 * solve's slot of a two-value buffer (density, divergence). The host reads that value at once
 * only when the stage runner stops the solve at a tolerance (pbf_step_ctx.need_error: one small
 * read per iteration), else together with the statistics at the end of the step.
 */
#ifndef PBF_GPU_HOST_H
#define PBF_GPU_HOST_H

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Everything the kernels read besides the buffers (c: the substep's dt and speed limit, or NULL
 * outside a step). The float expressions are the CPU backend's. */
static inline pbf_gpu_params pbf_gpu_make_params(const pbf_world *w, const pbf_step_ctx *c) {
    pbf_gpu_params P;
    memset(&P, 0, sizeof P);
    P.k = w->k;
    P.wc = w->wc;
    P.n = w->count;
    /* cell skipping in the neighbour loops (pbf_kernels.cl, PBF_SEARCH_NEIGHBOURS): the faces of
     * a cell in float are within a few ulps of the largest grid coordinate of the double ones the
     * cells were assigned with; 8 such ulps plus 1e-5 h (the rounding of the distance tests)
     * keep every cell that may hold a particle within h */
    const double cell = 1.0 / w->grid.inv_cell;
    double extent = 0.0;
    for (int a = 0; a < 3; ++a) {
        P.dim[a] = w->grid.dim[a];
        P.origin[a] = (float)w->grid.origin[a];
        const double far = w->grid.origin[a] + w->grid.dim[a] * cell;
        extent = fmax(extent, fmax(fabs(w->grid.origin[a]), fabs(far)));
    }
    P.cell_size = (float)cell;
    const double reach = (double)w->k.h * (1.0 + 1e-5) + extent * 0x1p-20;
    P.reach2 = (float)(reach * reach * (1.0 + 0x1p-20));
    const float dt = c ? c->dt : 0.0f;
    P.gdt[0] = w->def.gravity.x * dt;
    P.gdt[1] = w->def.gravity.y * dt;
    P.gdt[2] = w->def.gravity.z * dt;
    P.dt = dt;
    P.inv_dt = dt > 0.0f ? 1.0f / dt : 0.0f;
    P.vmax = c ? c->vmax : 0.0f;
    P.inv_rho0 = 1.0f / w->k.rest_density;
    /* this iteration's Chebyshev weight (the method's spectral radius, 0: plain Jacobi) */
    const pbf_solver *method = pbf_world_solver(w);
    const float rho = method->chebyshev_rho ? method->chebyshev_rho(&w->def) : 0.0f;
    P.chebyshev = pbf_chebyshev_omega(rho, c ? c->iteration : 0);
    P.vorticity = w->def.vorticity;
    P.xsph = w->def.xsph_viscosity;
    P.warm = pbf_warm_start(&w->def);
    P.iteration = c ? c->iteration : 0;
    /* the method's own parameters and constants (its gpu_params, src/solvers/<m>/<m>_gpu.c) */
    if (method->gpu_params) method->gpu_params(w, &P, dt);
    return P;
}

/* Launches with a guard slot in one substep, at most: the method's stage table (each row's
 * guarded launches) and its solves' bounds (a solve runs its measuring stage at most max + 1
 * times and its other stages max times; a warm start's stages count as if they ran). */
static inline int pbf_gpu_slots_per_substep(const pbf_world_def *d) {
    int nst = 0, n = 0;
    const pbf_solver *m = pbf_solver_of(d->solver);
    const pbf_stage_desc *st = pbf_stage_table(d->solver, &nst);
    for (int s = 0; s < nst; ++s) {
        int times = 1;
        if (st[s].loop && m && m->bounds) {
            const int max = m->bounds(d, st[s].loop).max;
            times = st[s].measures == st[s].loop ? max + 1 : max;
        }
        n += times * st[s].gpu_guarded;
    }
    return n > 0 ? n : 1;
}

/* A step's guard slots and measured solves, on the host. */
typedef struct pbf_gpu_step {
    int nslots;         /* slots per substep; the device buffer has one more, the map slot */
    int seq;            /* next slot of this substep */
    int base;           /* launches of the step's earlier substeps */
    int in_step;        /* between the first stage of a step and finish_step */
    int row;            /* the row of the method's table (its index) whose launches run now */
    int *log;           /* the row of launch base + slot of this step */
    size_t cap;         /* entries of log */
    int measured[2];    /* the step measured the density (0), the divergence (1) solve */
} pbf_gpu_step;

/* Start of a substep (its first stage: predict or gravity). Returns 1 at the start of a step
 * (the caller also resets the captured particle), 0 for a later substep; the caller clears the
 * device slots either way. */
static inline int pbf_gpu_begin_substep(pbf_gpu_step *s) {
    const int first = !s->in_step;
    if (first) {
        s->base = 0;
        s->measured[0] = s->measured[1] = 0;
    } else {
        s->base += s->seq;
    }
    s->seq = 0;
    s->in_step = 1;
    return first;
}

/* The slot of the next launch of the current stage (s->row) in this substep (the last slot again
 * if a substep ever had more launches than counted). */
static inline int pbf_gpu_next_slot(pbf_gpu_step *s) {
    const int slot = s->seq < s->nslots ? s->seq++ : s->nslots - 1;
    const size_t at = (size_t)s->base + (size_t)slot;
    if (at >= s->cap) {
        size_t cap = s->cap ? 2 * s->cap : (size_t)s->nslots + 1;
        while (cap <= at) cap *= 2;
        int *grown = (int *)realloc(s->log, cap * sizeof *grown);
        if (grown) {
            for (size_t k = s->cap; k < cap; ++k) grown[k] = -1;
            s->log = grown;
            s->cap = cap;
        }
    }
    if (at < s->cap) s->log[at] = s->row;
    return slot;
}

/* The row of a captured launch (base + slot), -1 if unknown. */
static inline int pbf_gpu_logged_row(const pbf_gpu_step *s, int launch) {
    return launch >= 0 && (size_t)launch < s->cap ? s->log[launch] : -1;
}

/* End of a step (finish_step). */
static inline void pbf_gpu_end_step(pbf_gpu_step *s) {
    s->in_step = 0;
}

#endif
