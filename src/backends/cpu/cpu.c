/*
 * The CPU backend: the stages of the step (core.c) on the host arrays, with OpenMP threads and
 * SIMD neighbour loops (src/simd.h), on the kernel math of src/sph/. This file holds the backend
 * itself (its ops table, the grid stage, the refresh, the statistics and the stage dispatch);
 * the neighbour lists and packed copies are in nblist.h / nblist.c, the SIMD kernel helpers in
 * simd_kernels.h, and the stages in src/solvers/: common/common_cpu.c (the stages several methods
 * share), sph/sph_cpu.c (what the SPH family shares) and each method's <method>_cpu.c.
 *
 * Dynamic schedules are monotonic: LLVM's libomp runs the default (nonmonotonic) one by work
 * stealing, which aborts on an internal assertion now and then under load (llvm-project issues
 * 54422, 86995); monotonic is its plain shared counter, and what libgomp does anyway.
 *
 * Every pass is a gather over neighbours computed per particle in a fixed order (the cell order),
 * with no atomics and no reductions across threads, so results are bit-identical for any number
 * of threads. Sums of statistics use fixed chunks (see stage_stats).
 *
 * Symbols follow the paper: h kernel radius, rho_0 rest density, m particle mass, V = m / rho_0,
 * W poly6 kernel, grad W spiky gradient.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/nblist.h"
#include "internal.h"
#include "solvers/common/common.h"

/* Gathers arr[perm[k]] into *scratch and swaps the buffers: the old array becomes the scratch. */
static void permute(pbf_world *w, const uint32_t *perm, void **scratch, void **arr) {
    const uint32_t *src = *arr;
    uint32_t *dst = *scratch; /* 4-byte elements: floats are moved as their bit patterns */
    const int n = w->count;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int k = 0; k < n; ++k) dst[k] = src[perm[k]];
    *scratch = *arr;
    *arr = dst;
}


/* The cell sort of the positions x (refresh: in_step 0) or x* (a step), and the permutation of
 * every SORTED row. No memory is set aside for sorting: the permutation and the reorder scratch
 * borrow two arrays dead at the time. In a PBF step the velocity is dead (PBF recomputes it from
 * the positions after its solve, eq. 14 onwards) and is not moved: it lends vx and vy. Between
 * steps (refresh) x* is dead (x is copied into it after the sort, before the lists are built
 * from it): it lends qx and qy.
 * The SPH solvers move their velocity, and recompute density and lambda before they read them:
 * those two lend themselves. */
static void stage_grid(pbf_world *w, int in_step) {
    const int pbf_step = in_step && !pbf_world_solver(w)->sph;
    int lend[2] = {PBF_F_LAMBDA, PBF_F_DENSITY}, skip[3] = {PBF_F_LAMBDA, -1, -1};
    const float *X = w->qx, *Y = w->qy, *Z = w->qz;
    if (pbf_step) {
        lend[0] = PBF_F_VX, lend[1] = PBF_F_VY;
        skip[0] = PBF_F_VX, skip[1] = PBF_F_VY, skip[2] = PBF_F_VZ;
    } else if (!in_step) {
        X = w->px, Y = w->py, Z = w->pz;
        lend[0] = PBF_F_QX, lend[1] = PBF_F_QY;
        skip[0] = PBF_F_QX, skip[1] = PBF_F_QY, skip[2] = PBF_F_QZ;
    }
    uint32_t *perm = (uint32_t *)w->field[lend[0]];
    void *scratch = w->field[lend[1]];
    pbf_grid_build(&w->grid, w->count, X, Y, Z, w->cell, (uint32_t *)scratch, perm, w->nthreads);
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) { /* every field the registry marks as sorted */
        if (f == skip[0] || f == skip[1] || f == skip[2]) continue;
        /* PBF without the warm start recomputes lambda before reading it */
        if (f == PBF_F_LAMBDA && !pbf_lambda_carried(w)) continue;
        if ((pbf_fields[f].flags & PBF_FIELD_SORTED) && w->field[f]) /* (a row the solver keeps) */
            permute(w, perm, &scratch, &w->field[f]);
    }
    w->field[lend[1]] = scratch; /* the buffer left over; perm stays in lend[0] */
    if (!in_step) { /* a refresh: x* = x, the positions the lists are built from */
        memcpy(w->qx, w->px, (size_t)w->count * sizeof(float));
        memcpy(w->qy, w->py, (size_t)w->count * sizeof(float));
        memcpy(w->qz, w->pz, (size_t)w->count * sizeof(float));
    }
    const pbf_world_hooks *hk = w->hooks;
    pbf_cpu_build_lists(w, in_step && hk && hk->ghost_mask ? hk->ghost_mask(w, hk->user) : NULL);
}

int pbf_cpu_grid(pbf_world *w, const pbf_step_ctx *ctx) {
    (void)ctx;
    stage_grid(w, 1);
    return INT_MAX;
}

/* Density (eq. 2) at the predicted positions, including the wall. */
static inline float density_at(const pbf_world *w, int i, float wall, nb_ranges *cache) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const int cubic = k->cubic != 0.0f;
    pbf_vf rho = vf_set1(0.0f);
    FOR_NEIGHBOURS_R(w, i, cache, 
        pbf_vf dx = xi - LOAD(QX), dy = yi - LOAD(QY), dz = zi - LOAD(QZ);
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        rho += v_kw(k, r2, valid & (r2 < h2v), cubic);
    );
    return w->k.mass * vf_hsum(rho) + w->k.rest_density * wall;
}

static void cpu_refresh(pbf_world *w) {
    if (w->count == 0) return;
    stage_grid(w, 0); /* between steps: the velocity is live; x* lends the sort its scratch */
    const int n = w->count;
#pragma omp parallel num_threads(w->nthreads)
    {
        const unsigned fp_mode = pbf_denormals_off();
        nb_ranges cache = NB_RANGES_INIT;
#pragma omp for schedule(static)
        for (int i = 0; i < n; ++i) {
            float p[3] = {w->qx[i], w->qy[i], w->qz[i]}, gw[3];
            w->density[i] = density_at(w, i, pbf_world_wall_density(w, p, gw), &cache);
        }
        pbf_denormals_restore(fp_mode);
    }
}

#define STATS_CHUNK 4096

static void stage_stats(pbf_world *w) {
    const int n = w->count;
    const int chunks = (n + STATS_CHUNK - 1) / STATS_CHUNK;
    if (n == 0) {
        pbf_stats_finish(w, NULL, 0);
        return;
    }
    /* per chunk: sum err, max err, max speed^2, nonfinite, escaped */
    double *part = malloc((size_t)chunks * PBF_STATS_PARTIALS * sizeof *part);
    if (!part) { /* statistics are best effort; the simulation itself is unaffected */
        pbf_stats_finish(w, NULL, 0);
        return;
    }
    const float inv_rho0 = 1.0f / w->k.rest_density;
    const float *lo = w->lo, *hi = w->hi;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int c = 0; c < chunks; ++c) {
        int i0 = c * STATS_CHUNK, i1 = i0 + STATS_CHUNK < n ? i0 + STATS_CHUNK : n;
        double sum = 0.0, emax = 0.0, v2max = 0.0, bad = 0.0, out = 0.0;
        for (int i = i0; i < i1; ++i) {
            float e = w->density[i] * inv_rho0 - 1.0f;
            if (e > 0.0f) {
                sum += e;
                if (e > emax) emax = e;
            }
            float v2 = w->vx[i] * w->vx[i] + w->vy[i] * w->vy[i] + w->vz[i] * w->vz[i];
            int finite = isfinite(w->px[i]) && isfinite(w->py[i]) && isfinite(w->pz[i]) &&
                         isfinite(v2);
            if (!finite) bad += 1.0;
            else if (v2 > v2max) v2max = v2;
            if (!(w->px[i] >= lo[0] && w->px[i] <= hi[0] && w->py[i] >= lo[1] &&
                  w->py[i] <= hi[1] && w->pz[i] >= lo[2] && w->pz[i] <= hi[2]))
                out += 1.0;
        }
        double *pc = part + (size_t)c * PBF_STATS_PARTIALS;
        pc[0] = sum;
        pc[1] = emax;
        pc[2] = v2max;
        pc[3] = bad;
        pc[4] = out;
    }
    double acc[PBF_STATS_PARTIALS] = {0};
    for (int c = 0; c < chunks; ++c) pbf_stats_accumulate(acc, part + (size_t)c * PBF_STATS_PARTIALS);
    free(part);
    pbf_stats_finish(w, acc, 0);
}

int pbf_cpu_stats(pbf_world *w, const pbf_step_ctx *ctx) {
    (void)ctx;
    stage_stats(w);
    return INT_MAX;
}

/* A stage of the world's method: the CPU caches the stages share first (a stage that declares
 * PBF_STAGE_REUSES_CACHE reads the wall cache and the pair cache an earlier stage built and
 * leaves x, and so them, unchanged; every other stage drops them before it runs), then its CPU
 * function. */
int pbf_cpu_row(pbf_world *w, const pbf_stage_desc *st, const pbf_step_ctx *c) {
    cpu_lists *L = LISTS(w);
    const int reuses = (st->flags & PBF_STAGE_REUSES_CACHE) != 0;
    if (!reuses) L->wall_at = WALL_NONE;
    /* sz holds D_i only up to the next stage: a measuring stage may read what the stage before
     * left (rate_prev), every stage drops it; likewise the packed x* and velocities (xv_prev) */
    L->rate_prev = L->rate_ok;
    L->xv_prev = L->xv_packed;
    L->rate_ok = 0;
    L->xv_packed = 0;
    if (!reuses) L->pair_ok = 0; /* only these keep the positions of the pair cache */
    return st->cpu ? st->cpu(w, c) : INT_MAX;
}

int pbf_cpu_stage(pbf_world *w, const char *stage, const pbf_step_ctx *c) {
    int nst = 0;
    const pbf_stage_desc *st = pbf_stage_table(w->def.solver, &nst);
    for (int s = 0; s < nst; ++s)
        if (strcmp(st[s].name, stage) == 0) return pbf_cpu_row(w, &st[s], c);
    return INT_MAX;
}

/* Host memory is the CPU's device memory: nothing to allocate, copy or wait for. */
static pbf_status cpu_nothing(pbf_world *w, pbf_error *err) {
    (void)w;
    (void)err;
    return PBF_OK;
}
static pbf_status cpu_reserve(pbf_world *w, int capacity, pbf_error *err) {
    (void)capacity;
    return cpu_nothing(w, err);
}
static void cpu_no_op(pbf_world *w) { (void)w; }
static void cpu_release(pbf_world *w) {
    if (w->dev) {
        pbf_big_free(LISTS(w)->nbr);
        free(LISTS(w)->block_end);
        free(LISTS(w)->block_start);
        free(LISTS(w)->start);
        pbf_big_free(LISTS(w)->pack);
        free(LISTS(w)->sph_v);
        free(LISTS(w)->sph_wall);
        free(LISTS(w)->pair);
        free(LISTS(w)->pair_off);
    }
    free(w->dev);
    w->dev = NULL;
}

pbf_status pbf_cpu_open(pbf_world *w, pbf_error *err) {
    w->dev = calloc(1, sizeof(cpu_lists));
    if (!w->dev) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "cpu backend: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    w->backend = &pbf_backend_cpu;
    return PBF_OK;
}

/* The neighbour lists, their block ends and the packed neighbour copy. */
static size_t cpu_list_bytes(const pbf_world *w) {
    if (!w->dev) return 0;
    const cpu_lists *L = LISTS(w);
    return CODE_BYTES(L->cap) + LIST_PADDING + L->block_cap * 2 * sizeof(uint32_t) +
           L->start_cap * sizeof(uint16_t) +
           L->pack_cap * 4 * sizeof(float) + L->sph_cap * 2 * 4 * sizeof(float) +
           L->pair_cap * sizeof(float) + L->pair_off_cap * sizeof(uint32_t);
}

const pbf_backend_ops pbf_backend_cpu = {
    .name = "cpu",
    .host_keep = 0,
    .reserve = cpu_reserve,
    .upload = cpu_nothing,
    .download = cpu_nothing,
    .boxes_changed = cpu_no_op,
    .run_stage = pbf_cpu_row,
    .refresh = cpu_refresh,
    .sync = cpu_no_op,
    .finish_step = NULL,
    .release = cpu_release,
    .list_bytes = cpu_list_bytes,
};
