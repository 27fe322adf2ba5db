/*
 * The GPU step's infrastructure, compiled once for both hosts (opencl.c, cuda.cu) through their
 * tables of functions (gpu_steps.h): the grid's sort and neighbour lists, the first stage of a
 * substep, the statistics, the solves' measures, the guard's capture, one stage of the step
 * (pbf_gpu_stage: the stages' launches are the methods', src/solvers/), refresh, the rows of a
 * distributed run and the end of a step.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "simd.h" /* PBF_LANES: the lists' slack */
#include "backends/gpu/gpu_steps.h"

/* In-place exclusive scan of count uints (level: which block-sum buffer to use). */
static void pbf_gpu_scan(pbf_gpu_dev *g, int level, pbf_gpu_mem data, unsigned int count) {
    const size_t block = 2 * g->scan_wg;
    const unsigned int blocks = (unsigned int)((count + block - 1) / block);
    if (level >= g->scan_levels) {
        pbf_gpu_fail(g);
        return;
    }
    pbf_gpu_mem sums = g->scan_sums[level];
    PBF_GPU_LAUNCH(g, PBF_GK_SCAN_BLOCKS, (size_t)blocks * g->scan_wg, g->scan_wg,
                   PBF_GPU_A(data), PBF_GPU_A(count), PBF_GPU_A(sums));
    if (blocks > 1) {
        pbf_gpu_scan(g, level + 1, sums, blocks);
        PBF_GPU_LAUNCH(g, PBF_GK_SCAN_ADD, count, g->wg, PBF_GPU_A(data), PBF_GPU_A(count),
                       PBF_GPU_A(sums));
    }
}

/* The neighbour lists of the sorted particles at x* (the positions the step's neighbour sets
 * are defined on): count, scan, one read of the total (to size the index buffer), fill. */
static void pbf_gpu_build_lists(pbf_world *w, pbf_gpu_dev *g) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, NULL);
    const unsigned int n = (unsigned int)w->count;
    PBF_GPU_LAUNCH(g, PBF_GK_LIST_COUNT, (size_t)n, g->wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)),
                   PBF_GPU_A(PBF_GPU_FB(CELL)), PBF_GPU_A(g->cell_start), PBF_GPU_A(g->nbr_off));
    pbf_gpu_scan(g, 0, g->nbr_off, n + 1);
    unsigned int total = 0;
    pbf_gpu_read(g, g->nbr_off, (size_t)n * sizeof(unsigned int), sizeof total, &total, 1);
    if (!pbf_gpu_failed(g) && (size_t)total > g->nbr_idx_cap) {
        /* grow by a quarter beyond the need, so that a slowly denser liquid reallocates rarely */
        const size_t cap = (size_t)total + (size_t)total / 4 + PBF_LANES;
        if (g->nbr_idx) pbf_gpu_free(g, g->nbr_idx);
        g->nbr_idx = pbf_gpu_alloc(g, cap * sizeof(unsigned int));
        g->nbr_idx_cap = g->nbr_idx ? cap : 0;
    }
    PBF_GPU_LAUNCH(g, PBF_GK_LIST_FILL, (size_t)n, g->wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)),
                   PBF_GPU_A(PBF_GPU_FB(CELL)), PBF_GPU_A(g->cell_start), PBF_GPU_A(g->nbr_off),
                   PBF_GPU_A(g->nbr_idx));
}

/* A distributed run's grid stage, after the sort (internal.h, ghost_mask): the sorted cells to
 * the host (the hooks find the ghosts from them), and the mask the hook returns to the device,
 * where the velocity and vorticity stages keep the ghosts' speed-limit cuts out of the count. */
static void pbf_gpu_ghosts(pbf_world *w, pbf_gpu_dev *g) {
    const size_t n = (size_t)w->count;
    g->ghost_on = 0;
    if (n == 0 || !w->field[PBF_F_CELL]) return;
    pbf_gpu_read(g, PBF_GPU_FB(CELL), 0, n * sizeof(unsigned int), w->field[PBF_F_CELL], 1);
    if (pbf_gpu_failed(g)) return;
    const unsigned char *mask = w->hooks->ghost_mask(w, w->hooks->user);
    if (!mask) return;
    if (n > g->ghost_cap) {
        const size_t cap = (n + n / 4 + 64) / 16 * 16; /* buffers are zero-filled by words */
        if (g->ghost) pbf_gpu_free(g, g->ghost);
        g->ghost = pbf_gpu_alloc(g, cap);
        g->ghost_cap = g->ghost ? cap : 0;
        if (!g->ghost) return;
    }
    pbf_gpu_write(g, g->ghost, n, mask);
    pbf_gpu_wait(g); /* the hook's mask changes at the next step */
    g->ghost_on = !pbf_gpu_failed(g);
}

/* Stage "grid": sort by the cell of x* and gather every SORTED field (map: follow the predict
 * slot into the sorted order, or -1). The sort borrows buffers as the CPU's does (permutation in
 * lambda, ranks in s.x, gather scratch in density and s).
 *
 * In a step (in_step) the velocity is not gathered: predict has used it and the velocity stage
 * computes it anew, so its buffers hold x* as sorted here instead, q0 = x*_0: the positions the
 * step's neighbour sets are defined on (Algorithm 1, line 6; the CPU backend builds its neighbour
 * lists from them), which every neighbour kernel tests before the current positions. No memory
 * beyond the registry's arrays. */
static void pbf_gpu_grid(pbf_world *w, pbf_gpu_dev *g, int map, int in_step) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, NULL);
    const unsigned int ncells = w->grid.ncells, n1 = ncells + 1;
    pbf_gpu_fill(g, g->cell_start, 0, (int)n1, 0);
    /* the permutation's buffer: PBF's step sorts x* and leaves v, dead, to q0 (vx lends it);
     * a refresh that must move lambda (PBF's warm start) sorts x and copies it into x* after
     * (qx lends it); otherwise lambda, recomputed before it is read */
    const int carried = pbf_lambda_carried(w), refresh = !in_step && map < 0 && carried;
    const pbf_gpu_mem perm = in_step ? PBF_GPU_FB(VX) : refresh ? PBF_GPU_FB(QX) : PBF_GPU_FB(LAMBDA);
    const pbf_gpu_mem cx = refresh ? PBF_GPU_FB(PX) : PBF_GPU_FB(QX),
                      cy = refresh ? PBF_GPU_FB(PY) : PBF_GPU_FB(QY),
                      cz = refresh ? PBF_GPU_FB(PZ) : PBF_GPU_FB(QZ);
    pbf_gpu_mem rank = PBF_GPU_FB(SX);
    const size_t n = (size_t)w->count;
    if (g->fp64) {
        const double o[3] = {w->grid.origin[0], w->grid.origin[1], w->grid.origin[2]};
        const double inv = w->grid.inv_cell;
        PBF_GPU_LAUNCH(g, PBF_GK_CELLS, n, g->wg, PBF_GPU_A(P), PBF_GPU_A(o[0]), PBF_GPU_A(o[1]),
                       PBF_GPU_A(o[2]), PBF_GPU_A(inv), PBF_GPU_A(cx), PBF_GPU_A(cy),
                       PBF_GPU_A(cz), PBF_GPU_A(PBF_GPU_FB(CELL)), PBF_GPU_A(rank),
                       PBF_GPU_A(g->cell_start));
    } else {
        const float o[3] = {(float)w->grid.origin[0], (float)w->grid.origin[1],
                            (float)w->grid.origin[2]};
        const float inv = (float)w->grid.inv_cell;
        PBF_GPU_LAUNCH(g, PBF_GK_CELLS, n, g->wg, PBF_GPU_A(P), PBF_GPU_A(o[0]), PBF_GPU_A(o[1]),
                       PBF_GPU_A(o[2]), PBF_GPU_A(inv), PBF_GPU_A(cx), PBF_GPU_A(cy),
                       PBF_GPU_A(cz), PBF_GPU_A(PBF_GPU_FB(CELL)), PBF_GPU_A(rank),
                       PBF_GPU_A(g->cell_start));
    }
    pbf_gpu_scan(g, 0, g->cell_start, n1);
    PBF_GPU_LAUNCH(g, PBF_GK_SCATTER, n, g->wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(CELL)),
                   PBF_GPU_A(rank), PBF_GPU_A(g->cell_start), PBF_GPU_A(perm));
    PBF_GPU_LAUNCH(g, PBF_GK_SORT_CELLS, ncells, g->wg, PBF_GPU_A(ncells),
                   PBF_GPU_A(g->cell_start), PBF_GPU_A(perm));

    /* gather the sorted fields, four at a time, into the free buffers (density and s: both are
     * written before they are read again); each gathered field's old buffer joins the pool */
    pbf_gpu_mem pool[4] = {PBF_GPU_FB(DENSITY), PBF_GPU_FB(SX), PBF_GPU_FB(SY), PBF_GPU_FB(SZ)};
    int sorted[PBF_FIELD_COUNT], ns = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if ((pbf_fields[f].flags & PBF_FIELD_SORTED) && g->field[f] &&
            !(in_step && (f == PBF_F_VX || f == PBF_F_VY || f == PBF_F_VZ)) &&
            !(refresh && (f == PBF_F_QX || f == PBF_F_QY || f == PBF_F_QZ)) &&
            !(f == PBF_F_LAMBDA && !carried))
            sorted[ns++] = f;
    const int count = w->count;
    for (int s = 0; s < ns; s += 4) {
        const int nf = ns - s < 4 ? ns - s : 4;
        pbf_gpu_mem src[4], dst[4];
        for (int a = 0; a < 4; ++a) {
            src[a] = a < nf ? g->field[sorted[s + a]] : perm; /* unused: never written */
            dst[a] = a < nf ? pool[a] : perm;
        }
        const int m = s == 0 ? map : -1;
        PBF_GPU_LAUNCH(g, PBF_GK_GATHER, n, g->wg, PBF_GPU_A(count), PBF_GPU_A(perm),
                       PBF_GPU_A(nf), PBF_GPU_A(src[0]), PBF_GPU_A(dst[0]), PBF_GPU_A(src[1]),
                       PBF_GPU_A(dst[1]), PBF_GPU_A(src[2]), PBF_GPU_A(dst[2]), PBF_GPU_A(src[3]),
                       PBF_GPU_A(dst[3]), PBF_GPU_A(g->bad), PBF_GPU_A(m));
        for (int a = 0; a < nf; ++a) {
            pool[a] = src[a];
            g->field[sorted[s + a]] = dst[a];
        }
    }
    PBF_GPU_FB(DENSITY) = pool[0];
    PBF_GPU_FB(SX) = pool[1];
    PBF_GPU_FB(SY) = pool[2];
    PBF_GPU_FB(SZ) = pool[3];
    for (int a = 0; a < 3 && in_step; ++a) /* q0 */
        pbf_gpu_copy(g, g->field[PBF_F_VX + a], g->field[PBF_F_QX + a], n * sizeof(float));
    for (int a = 0; a < 3 && refresh; ++a) /* x* = x */
        pbf_gpu_copy(g, g->field[PBF_F_QX + a], g->field[PBF_F_PX + a], n * sizeof(float));
    if (g->lists) pbf_gpu_build_lists(w, g);
}

/* The first stage of a substep (predict, gravity): its slots are cleared; at the start of a step
 * also the captured particle and the count of speed-limit cuts. The earlier substeps' slots were
 * captured at their end (velocity and vorticity_xsph stages). */
void pbf_gpu_substep_start(pbf_gpu_dev *g) {
    const int first = pbf_gpu_begin_substep(&g->step);
    g->ghost_on = 0; /* no ghosts before the grid */
    pbf_gpu_fill(g, g->bad, 0, g->step.nslots + 1, INT_MAX);
    if (!first) return;
    pbf_gpu_fill(g, g->bad, g->step.nslots + 1, 1, 0); /* the speed-limit cuts of the step */
    pbf_gpu_write(g, g->bad_info, sizeof g->nobody, &g->nobody);
}

/* The statistics partials of the current state, read into host_partial (not waited for). */
static void pbf_gpu_enqueue_stats(pbf_world *w, pbf_gpu_dev *g) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, NULL);
    const size_t chunks = pbf_gpu_stats_chunks(g, w->count);
    PBF_GPU_LAUNCH(g, PBF_GK_STATS, chunks * g->stats_wg, g->stats_wg, PBF_GPU_A(P),
                   PBF_GPU_A(PBF_GPU_FB(PX)), PBF_GPU_A(PBF_GPU_FB(PY)),
                   PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(g->partial));
    if (chunks)
        pbf_gpu_read(g, g->partial, 0, chunks * PBF_STATS_VALUES * pbf_gpu_real_size(g),
                     g->host_partial, 0);
}

/* The statistics from the partials (chunk order, in double), as the CPU's stage_stats. */
static void pbf_gpu_reduce_stats(pbf_world *w, pbf_gpu_dev *g) {
    const int n = w->count;
    if (n > 0 && pbf_gpu_failed(g)) { /* the device failed: the state is lost */
        pbf_stats_finish(w, NULL, 1);
        return;
    }
    const size_t chunks = pbf_gpu_stats_chunks(g, n);
    double acc[PBF_STATS_PARTIALS] = {0};
    for (size_t c = 0; c < chunks; ++c) {
        double v[PBF_STATS_VALUES];
        for (int k = 0; k < PBF_STATS_VALUES; ++k) {
            const size_t at = c * PBF_STATS_VALUES + (size_t)k;
            v[k] = g->fp64 ? ((const double *)g->host_partial)[at]
                           : (double)((const float *)g->host_partial)[at];
        }
        pbf_stats_accumulate(acc, v);
    }
    pbf_stats_finish(w, acc, 0);
}

/* The solve the current stage (g->step.row) measures: the slot of its error in the device's two
 * values (0 the density solve, 1 the divergence solve), or -1. */
static int measure_slot(const pbf_world *w, const pbf_gpu_dev *g) {
    int nst = 0;
    const pbf_stage_desc *st = pbf_stage_table(w->def.solver, &nst);
    const int r = g->step.row;
    if (r < 0 || r >= nst || !st[r].measures) return -1;
    return st[r].measures == PBF_SOLVE_DIVERGENCE ? 1 : 0;
}

/* After a stage that measures a solve (the current one): the mean of max(a_i scale + offset, 0)
 * in percent (cpu.c mean_excess) into the solve's device slot, and into w->solve_error at once
 * when the stage runner needs it (one read of one value). */
void pbf_gpu_measure(pbf_world *w, pbf_gpu_dev *g, pbf_gpu_mem a, float scale, float offset,
                     int now) {
    const int slot = measure_slot(w, g);
    if (slot < 0) return;
    const int n = w->count;
    const int chunks = (int)pbf_gpu_stats_chunks(g, n);
    PBF_GPU_LAUNCH(g, PBF_GK_EXCESS, (size_t)chunks * g->stats_wg, g->stats_wg, PBF_GPU_A(n),
                   PBF_GPU_A(a), PBF_GPU_A(scale), PBF_GPU_A(offset), PBF_GPU_A(g->partial));
    PBF_GPU_LAUNCH(g, PBF_GK_EXCESS_TOTAL, 1, 1, PBF_GPU_A(n), PBF_GPU_A(chunks),
                   PBF_GPU_A(g->partial), PBF_GPU_A(g->solve_out), PBF_GPU_A(slot));
    g->step.measured[slot] = 1;
    const pbf_world_hooks *hk = w->hooks;
    if (hk && hk->is_ghost) {
        /* distributed: this process's owned particles only, summed on the host (cpu.c's
         * mean_excess); the hooks add the processes' sums */
        int f = -1;
        for (int r = 0; r < PBF_FIELD_COUNT; ++r)
            if (g->field[r] == a) f = r;
        float *h = f >= 0 ? (float *)w->field[f] : NULL;
        if (h && n > 0) pbf_gpu_read(g, a, 0, (size_t)n * sizeof(float), h, 1);
        const unsigned char *ghost = hk->ghosts ? hk->ghosts(w, hk->user) : NULL;
        double sum = 0.0, count = 0.0;
        for (int i = 0; h && i < n && !pbf_gpu_failed(g); ++i) {
            if (ghost && ghost[i]) continue;
            const float e = h[i] * scale + offset;
            if (e > 0.0f) sum += e;
            count += 1.0;
        }
        w->solve_sum = pbf_gpu_failed(g) ? INFINITY : sum;
        w->solve_count = count;
    }
    if (!now) return;
    union {
        double d;
        float f;
    } v;
    v.d = 0.0;
    const size_t size = pbf_gpu_real_size(g);
    pbf_gpu_read(g, g->solve_out, (size_t)slot * size, size, &v, 1);
    w->solve_error = pbf_gpu_failed(g) ? INFINITY : g->fp64 ? v.d : (double)v.f;
}

/* The capture of the first non-finite particle of the slots [from, to) of this substep. */
void pbf_gpu_capture(pbf_gpu_dev *g, int from, int to) {
    const int base = g->step.base;
    PBF_GPU_LAUNCH(g, PBF_GK_CAPTURE_BAD, 1, 1, PBF_GPU_A(g->bad), PBF_GPU_A(from), PBF_GPU_A(to),
                   PBF_GPU_A(g->map_slot), PBF_GPU_A(base), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)),
                   PBF_GPU_A(PBF_GPU_FB(ID)), PBF_GPU_A(g->bad_info));
}

/* Stage "grid" (pbf_gpu_grid): with a distributed run's ghosts. */
void pbf_gpu_grid_stage(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    (void)c;
    const int sph = pbf_world_solver(w)->sph;
    pbf_gpu_grid(w, g, g->map_slot, !sph); /* SPH: v is sorted */
    if (w->hooks && w->hooks->ghost_mask) pbf_gpu_ghosts(w, g);
}

/* One stage of the step (core.c) other than stats: its kernels, their arguments, the buffers'
 * new roles (the stage's function, its method's or a shared one). */
/* The backend's run_stage (after the host has made its device current). */
int pbf_gpu_run_stage(pbf_world *w, pbf_gpu_dev *g, const pbf_stage_desc *st,
                      const pbf_step_ctx *c) {
    const pbf_stage_desc *table = pbf_stage_table(w->def.solver, NULL);
    if (st->flags & PBF_STAGE_STATS) {
        if (w->count > 0 && !g->stats_ready) {
            pbf_gpu_enqueue_stats(w, g);
            pbf_gpu_wait(g);
        }
        pbf_gpu_reduce_stats(w, g);
        g->stats_ready = 0;
        return INT_MAX;
    }
    if (w->hooks && st->measures) w->solve_sum = w->solve_count = 0.0;
    if (w->count > 0) {
        g->stats_ready = 0;
        w->host_stale = 1;
        g->step.row = (int)(st - table); /* the guard's slots and the measure follow it */
        if (st->gpu) st->gpu(w, g, c); /* the stage's launches (its method's, src/solvers/) */
    } else if (w->hooks && st == table) {
        pbf_gpu_substep_start(g); /* a process without particles now may receive some */
    }
    return INT_MAX;
}

/* The backend's read_rows / write_rows (backend.h): the buffers that hold the roles `rows` now,
 * particles [0, count), to or from the host arrays; 0 if the device failed. */
int pbf_gpu_rows(pbf_world *w, pbf_gpu_dev *g, const int *rows, int nrows,
                 int to_device) {
    const size_t bytes = (size_t)w->count * 4;
    for (int k = 0; k < nrows && bytes > 0; ++k) {
        const int f = rows[k];
        if (f < 0 || f >= PBF_FIELD_COUNT || !g->field[f] || !w->field[f]) {
            pbf_gpu_fail(g);
            break;
        }
        if (to_device)
            pbf_gpu_write(g, g->field[f], bytes, w->field[f]);
        else
            pbf_gpu_read(g, g->field[f], 0, bytes, w->field[f], 0);
    }
    pbf_gpu_wait(g);
    if (to_device) g->stats_ready = 0;
    return !pbf_gpu_failed(g);
}

/* Grows a buffer to at least `bytes` (contents not kept); 0 if the device failed. */
static int pbf_gpu_reserve(pbf_gpu_dev *g, pbf_gpu_mem *m, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return 1;
    const size_t want = (bytes + bytes / 4 + 256) / 16 * 16;
    if (*m) pbf_gpu_free(g, *m);
    *m = pbf_gpu_alloc(g, want);
    *cap = *m ? want : 0;
    if (!*m) pbf_gpu_fail(g);
    return *m != 0;
}

/* The backend's set_rows_index (backend.h): a list of particle indices to the device, kept in
 * slot 0 or 1 for the step's read_rows_at / write_rows_at (slot 2: gather_rows' and
 * merge_rows' own); 0 if the device failed. */
int pbf_gpu_set_index(pbf_gpu_dev *g, int slot, const int *idx, int n) {
    if (slot < 0 || slot > 2 || n < 0) {
        pbf_gpu_fail(g);
        return 0;
    }
    g->halo_n[slot] = 0;
    if (n == 0) return !pbf_gpu_failed(g);
    if (!pbf_gpu_reserve(g, &g->halo_idx[slot], &g->halo_idx_cap[slot], (size_t)n * sizeof(int)))
        return 0;
    pbf_gpu_write(g, g->halo_idx[slot], (size_t)n * sizeof(int), idx);
    pbf_gpu_wait(g); /* idx is the caller's */
    g->halo_n[slot] = n;
    return !pbf_gpu_failed(g);
}

/* The buffers that hold rows rows[s .. s + nf) now (by role; an unused one aliases the first);
 * 0 for a row the device does not keep. */
static int pbf_gpu_row_group(pbf_gpu_dev *g, const int *rows, int s, int nf,
                             pbf_gpu_mem r[3]) {
    for (int k = 0; k < 3; ++k) {
        const int f = rows[s + (k < nf ? k : 0)];
        if (f < 0 || f >= PBF_FIELD_COUNT || !g->field[f]) {
            pbf_gpu_fail(g);
            return 0;
        }
        r[k] = g->field[f];
    }
    return 1;
}

/* Rows `rows` of the particles in index slot `slot` packed into the halo's buffer, nrows words
 * per particle (pbf_k_pack_rows, three rows at a time); 0 if the device failed. */
static int pbf_gpu_pack(pbf_gpu_dev *g, int slot, const int *rows, int nrows) {
    const int n = g->halo_n[slot];
    if (!pbf_gpu_reserve(g, &g->halo_buf, &g->halo_buf_cap,
                         (size_t)n * (size_t)nrows * sizeof(unsigned int)))
        return 0;
    for (int s = 0; s < nrows; s += 3) {
        const int nf = nrows - s < 3 ? nrows - s : 3;
        pbf_gpu_mem r[3];
        if (!pbf_gpu_row_group(g, rows, s, nf, r)) return 0;
        PBF_GPU_LAUNCH(g, PBF_GK_PACK_ROWS, (size_t)n, g->wg, PBF_GPU_A(n), PBF_GPU_A(nf),
                       PBF_GPU_A(nrows), PBF_GPU_A(s), PBF_GPU_A(g->halo_idx[slot]),
                       PBF_GPU_A(r[0]), PBF_GPU_A(r[1]), PBF_GPU_A(r[2]), PBF_GPU_A(g->halo_buf));
    }
    return !pbf_gpu_failed(g);
}

/* The backend's read_rows_at / write_rows_at (backend.h): rows `rows` (by role, as
 * pbf_gpu_rows) of the slot's particles, packed word-interleaved, to the host (to_device = 0:
 * buf[k nrows + j] = row j of particle idx[k]) or from it into those particles, three rows a
 * launch. Only 4 nrows bytes per listed particle cross the bus. 0 if the device failed. */
int pbf_gpu_rows_at(pbf_world *w, pbf_gpu_dev *g, int slot, const int *rows,
                    int nrows, void *buf, int to_device) {
    (void)w;
    if (slot < 0 || slot > 1 || nrows < 1) {
        pbf_gpu_fail(g);
        return 0;
    }
    const int n = g->halo_n[slot];
    if (n == 0) return !pbf_gpu_failed(g);
    const size_t bytes = (size_t)n * (size_t)nrows * sizeof(unsigned int);
    if (!to_device) {
        if (!pbf_gpu_pack(g, slot, rows, nrows)) return 0;
        pbf_gpu_read(g, g->halo_buf, 0, bytes, buf, 1);
        return !pbf_gpu_failed(g);
    }
    if (!pbf_gpu_reserve(g, &g->halo_buf, &g->halo_buf_cap, bytes)) return 0;
    const int direct = 0;
    pbf_gpu_write(g, g->halo_buf, bytes, buf);
    for (int s = 0; s < nrows; s += 3) {
        const int nf = nrows - s < 3 ? nrows - s : 3;
        pbf_gpu_mem r[3];
        if (!pbf_gpu_row_group(g, rows, s, nf, r)) return 0;
        PBF_GPU_LAUNCH(g, PBF_GK_UNPACK_ROWS, (size_t)n, g->wg, PBF_GPU_A(n), PBF_GPU_A(nf),
                       PBF_GPU_A(nrows), PBF_GPU_A(s), PBF_GPU_A(direct),
                       PBF_GPU_A(g->halo_idx[slot]), PBF_GPU_A(g->halo_buf), PBF_GPU_A(r[0]),
                       PBF_GPU_A(r[1]), PBF_GPU_A(r[2]));
    }
    pbf_gpu_wait(g);
    g->stats_ready = 0;
    return !pbf_gpu_failed(g);
}

/* The backend's gather_rows (backend.h): rows `rows` of particles idx[0..n) to the host,
 * out[k nrows + j] = row j of particle idx[k]; 0 if the device failed. */
int pbf_gpu_gather(pbf_gpu_dev *g, const int *rows, int nrows, const int *idx,
                   int n, void *out) {
    if (!pbf_gpu_set_index(g, 2, idx, n)) return 0;
    if (n == 0) return 1;
    if (!pbf_gpu_pack(g, 2, rows, nrows)) return 0;
    pbf_gpu_read(g, g->halo_buf, 0, (size_t)n * (size_t)nrows * sizeof(unsigned int), out, 1);
    return !pbf_gpu_failed(g);
}

/* The backend's merge_rows (backend.h): particle k of rows `rows` becomes particle src[k] where
 * src[k] >= 0, else record -src[k] - 1 of `in` (nrows words each, nin records), for k < n, in
 * place: per three rows, pbf_k_merge_rows into the halo's buffer, then pbf_k_unpack_rows back.
 * Only src and `in` cross the bus. The device holds room for n particles (the caller reserved
 * it). 0 if the device failed. */
int pbf_gpu_merge(pbf_gpu_dev *g, const int *rows, int nrows, const int *src, int n,
                  const void *in, int nin) {
    if (!pbf_gpu_set_index(g, 2, src, n)) return 0;
    if (n == 0) return 1;
    const size_t in_bytes = (size_t)nin * (size_t)nrows * sizeof(unsigned int);
    if (!pbf_gpu_reserve(g, &g->halo_buf, &g->halo_buf_cap, (size_t)n * 3 * sizeof(unsigned int)) ||
        !pbf_gpu_reserve(g, &g->merge_in, &g->merge_in_cap, in_bytes > 0 ? in_bytes : 4))
        return 0;
    if (in_bytes > 0) pbf_gpu_write(g, g->merge_in, in_bytes, in);
    const int direct = 1, zero = 0;
    for (int s = 0; s < nrows; s += 3) {
        const int nf = nrows - s < 3 ? nrows - s : 3;
        pbf_gpu_mem r[3];
        if (!pbf_gpu_row_group(g, rows, s, nf, r)) return 0;
        PBF_GPU_LAUNCH(g, PBF_GK_MERGE_ROWS, (size_t)n, g->wg, PBF_GPU_A(n), PBF_GPU_A(nf),
                       PBF_GPU_A(nrows), PBF_GPU_A(s), PBF_GPU_A(g->halo_idx[2]),
                       PBF_GPU_A(g->merge_in), PBF_GPU_A(r[0]), PBF_GPU_A(r[1]), PBF_GPU_A(r[2]),
                       PBF_GPU_A(g->halo_buf));
        PBF_GPU_LAUNCH(g, PBF_GK_UNPACK_ROWS, (size_t)n, g->wg, PBF_GPU_A(n), PBF_GPU_A(nf),
                       PBF_GPU_A(nf), PBF_GPU_A(zero), PBF_GPU_A(direct),
                       PBF_GPU_A(g->halo_idx[2]), PBF_GPU_A(g->halo_buf), PBF_GPU_A(r[0]),
                       PBF_GPU_A(r[1]), PBF_GPU_A(r[2]));
    }
    pbf_gpu_wait(g); /* `in` is the caller's */
    g->stats_ready = 0;
    return !pbf_gpu_failed(g);
}

/* The backend's finish_step: one round trip for the statistics partials, the first non-finite
 * particle, the count of speed-limit cuts and the solves' last errors. */
int pbf_gpu_finish_step(pbf_world *w, pbf_gpu_dev *g, pbf_bad_particle *bad) {
    bad->index = INT_MAX;
    bad->id = 0;
    bad->position.x = bad->position.y = bad->position.z = 0.0f;
    pbf_gpu_end_step(&g->step);
    pbf_gpu_bad info = {-1, INT_MAX, 0u, 0.0f, 0.0f, 0.0f};
    unsigned int clamps = 0u;
    union {
        double d[2];
        float f[2];
    } err;
    err.d[0] = err.d[1] = 0.0;
    pbf_gpu_enqueue_stats(w, g);
    pbf_gpu_read(g, g->bad_info, 0, sizeof info, &info, 0);
    if (g->step.measured[0] || g->step.measured[1])
        pbf_gpu_read(g, g->solve_out, 0, 2 * pbf_gpu_real_size(g), &err, 0);
    pbf_gpu_read(g, g->bad, (size_t)(g->step.nslots + 1) * sizeof(int), sizeof clamps, &clamps,
                 0);
    pbf_gpu_wait(g);
    w->host_stale = 1;
    if (pbf_gpu_failed(g)) {
        bad->index = 0; /* reported as non-finite from the first stage */
        g->stats_ready = 0;
        return 0;
    }
    g->stats_ready = 1;
    /* (a distributed run's hooks made them global as they were measured) */
    if (g->step.measured[0] && !w->hooks) w->solve.error = g->fp64 ? err.d[0] : (double)err.f[0];
    if (g->step.measured[1] && !w->hooks)
        w->solve.divergence_error = g->fp64 ? err.d[1] : (double)err.f[1];
    w->solve.speed_clamps = clamps; /* the kernels add unsigned ones */
    const int row = info.slot >= 0 ? pbf_gpu_logged_row(&g->step, info.slot) : -1;
    if (row < 0) return -1;
    bad->index = info.index;
    bad->id = info.id;
    bad->position.x = info.x;
    bad->position.y = info.y;
    bad->position.z = info.z;
    return row;
}

/* The backend's refresh: the grid at x (x* = x) and the density there, after adding particles or
 * restoring. */
void pbf_gpu_refresh(pbf_world *w, pbf_gpu_dev *g) {
    if (w->count == 0) return;
    const size_t bytes = (size_t)w->count * sizeof(float);
    for (int a = 0; a < 3; ++a)
        pbf_gpu_copy(g, g->field[PBF_F_QX + a], g->field[PBF_F_PX + a], bytes);
    pbf_gpu_grid(w, g, -1, 0);
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, NULL);
    pbf_gpu_mem nb_cell = g->lists ? g->nbr_off : PBF_GPU_FB(CELL); /* after the grid: it may */
    pbf_gpu_mem nb_start = g->lists ? g->nbr_idx : g->cell_start;  /* have grown the lists */
    const pbf_gpu_mem q0q[3] = {PBF_GPU_FB(QX), PBF_GPU_FB(QY), PBF_GPU_FB(QZ)};
    PBF_GPU_LAUNCH(g, PBF_GK_DENSITY, (size_t)w->count, g->wg, PBF_GPU_NB(q0q),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)));
    pbf_gpu_wait(g);
    g->stats_ready = 0;
    w->host_stale = 1;
}
