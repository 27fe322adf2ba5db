/*
 * Domain decomposition over MPI (include/pbf/mpi.h): slabs of grid cells, ghost particles,
 * migration, rebalancing, global statistics. Built into libpbf_mpi only where MPI is found; it
 * plugs into the stage runner through the world's hooks (internal.h) and moves the particle
 * arrays the field registry (fields.h) declares.
 *
 * Why the answer is the same on any number of processes (bit for bit, on the CPU):
 *  - A neighbour sum depends on which neighbours a particle has and on their order (the SIMD
 *    lanes are filled in neighbour-list order). The list of particle i is the particles within h
 *    in its 27 cells, in memory order; memory order is the cell order of the step's counting
 *    sort, and within a cell the order before the sort (the sort is stable).
 *  - Each process keeps its particles in the global order restricted to them. Between steps a
 *    particle's `cell` holds its key: the cell of the last sort. Every process owns whole cells,
 *    so keys of particles held by different processes differ, and each process's particles are
 *    in ascending key order: the global order is the merge by key. After predict every
 *    particle is sent (with its key) to its new owner and, as a ghost, to the processes whose
 *    slab touches its cell layer; each process merges what it receives from every source by
 *    key, and the stable sort by the new cell then gives exactly the global order restricted to
 *    its owned and ghost particles. A ghost layer holds every particle of its cells, so an owned
 *    particle sees the same neighbours in the same order as in a single-process run.
 *  - Ghosts are computed on like any particle, and their values that neighbours read (lambda;
 *    x* after each collision pass; density and |omega|) are overwritten by their owner's before
 *    being read; their velocities v = (x* - x) / dt are recomputed locally from exact x and x*.
 *    After the last pass they are dropped, so the statistics and the guard see owned particles
 *    only.
 *  - After pbf_mpi_domain_create the key is the particle's index in the (identical) world every
 *    process started from: the same merge order, whatever the state came from.
 * Statistics are summed over processes by MPI_Allreduce (maxima and counts exact; the mean
 * density error may differ from the single-process run in its last bits).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pbf/mpi.h"
#include "pbf/params.h"

enum { TAG_HALO = 1701 };
#define STATE_WORDS 8 /* x y z vx vy vz density id: pbf_snapshot's arrays */

struct pbf_mpi_domain {
    MPI_Comm comm;
    int rank, size;
    pbf_world *w;
    pbf_world_hooks hooks;
    int axis, layers;  /* slab axis, grid cells along it */
    double imbalance;
    int *lo;           /* size + 1: process r owns the layers [lo[r], lo[r + 1]) */
    int *owner;        /* per layer: the process that owns it */
    int *hist;         /* per layer: particle counts (rebalancing) */
    /* the words of a migrating particle: every SORTED row of the registry; key_word is `cell` */
    int fields[PBF_FIELD_COUNT], nfields, key_word;
    /* migration */
    int *scount, *sdispl, *rcount, *rdispl, *cursor, *wcount, *wdispl, *wrcount, *wrdispl;
    int *layer;        /* per particle: layer of its predicted cell */
    size_t layer_cap;
    uint32_t *sbuf, *rbuf;
    size_t scap, rcap; /* words */
    /* halo lists, built after the sort: local indices, grouped by process, in memory order */
    int *hs_n, *hs_off, *hr_n, *hr_off;
    int *hs_idx, *hr_idx;
    size_t hs_cap, hr_cap;
    MPI_Request *req;
    /* gathered state (root) */
    uint32_t *garr[STATE_WORDS];
    size_t gcap;
    /* state */
    int failed;        /* an allocation failed: exchanges stop on every process */
    int count_min, count_max;
    int64_t rebalances, steps;
    double migrated_bytes, halo_bytes, ghosts, messages;
};

pbf_mpi_options pbf_mpi_default_options(void) {
    pbf_mpi_options o;
    o.axis = -1;
    o.imbalance = 0.1;
    return o;
}

/* Grows *p to hold n elements of `size` bytes (at least); 0 on failure (then *p is unchanged). */
static int grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap && *p) return 1;
    size_t c = n + n / 4 + 64;
    void *q = realloc(*p, c * size);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static inline int layer_of_cell(const pbf_grid *g, int axis, uint32_t c) {
    const uint32_t dx = (uint32_t)g->dim[0], dy = (uint32_t)g->dim[1];
    if (axis == 0) return (int)(c % dx);
    if (axis == 1) return (int)((c / dx) % dy);
    return (int)(c / (dx * dy));
}

static void set_owner(pbf_mpi_domain *d) {
    for (int r = 0; r < d->size; ++r)
        for (int a = d->lo[r]; a < d->lo[r + 1]; ++a) d->owner[a] = r;
}

/* Slab bounds that split the particle counts per layer evenly (each cut at the layer boundary
 * closest to its share), or slabs of equal width when hist is NULL. */
static void bounds(pbf_mpi_domain *d, const int *hist, int *lo) {
    const int L = d->layers, P = d->size;
    lo[0] = 0;
    lo[P] = L;
    if (!hist) {
        for (int r = 1; r < P; ++r) lo[r] = (int)((int64_t)r * L / P);
        return;
    }
    int64_t total = 0, cum = 0;
    for (int a = 0; a < L; ++a) total += hist[a];
    int a = 0;
    for (int r = 1; r < P; ++r) {
        double target = (double)total * r / P;
        while (a < L && (double)(cum + hist[a]) <= target) cum += hist[a++];
        if (a < L && (double)(cum + hist[a]) - target < target - (double)cum) cum += hist[a++];
        lo[r] = a;
    }
}

/* ---- migration and ghosts, after predict ------------------------------------------------- */

/* The processes, other than the owner o of layer a, whose slab touches layer a: at most two. */
static inline int ghost_targets(const pbf_mpi_domain *d, int a, int t[2]) {
    const int o = d->owner[a];
    int n = 0;
    if (a + 1 < d->layers && d->owner[a + 1] != o) t[n++] = d->owner[a + 1];
    if (a > 0 && d->owner[a - 1] != o) t[n++] = d->owner[a - 1];
    return n;
}

/* 1 on every process if any process passes fail != 0. */
static int agree_failed(pbf_mpi_domain *d, int fail) {
    MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_MAX, d->comm);
    if (fail) d->failed = 1;
    return fail;
}

static void maybe_rebalance(pbf_mpi_domain *d, int n) {
    if (d->imbalance <= 0.0 || d->size < 2) return;
    /* counts of the end of the last step, the same on every process (reduce_stats) */
    double mean = (double)d->w->stats.particles / d->size;
    if (!((double)d->count_max > (1.0 + d->imbalance) * mean)) return;
    memset(d->hist, 0, (size_t)d->layers * sizeof *d->hist);
    for (int i = 0; i < n; ++i) d->hist[d->layer[i]] += 1;
    MPI_Allreduce(MPI_IN_PLACE, d->hist, d->layers, MPI_INT, MPI_SUM, d->comm);
    int *lo = d->cursor; /* size + 1 ints of scratch */
    bounds(d, d->hist, lo);
    if (memcmp(lo, d->lo, (size_t)(d->size + 1) * sizeof *lo) == 0) return;
    memcpy(d->lo, lo, (size_t)(d->size + 1) * sizeof *lo);
    set_owner(d);
    d->rebalances += 1;
}

static inline void pack(const pbf_mpi_domain *d, uint32_t *rec, int i) {
    const pbf_world *w = d->w;
    for (int f = 0; f < d->nfields; ++f) rec[f] = ((const uint32_t *)w->field[d->fields[f]])[i];
}

static void migrate(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count, P = d->size, W = d->nfields;
    int fail = !grow((void **)&d->layer, &d->layer_cap, (size_t)n, sizeof *d->layer);
    if (agree_failed(d, fail)) return;
    for (int i = 0; i < n; ++i)
        d->layer[i] = layer_of_cell(&w->grid, d->axis, pbf_grid_cell_of(&w->grid, w->qx[i], w->qy[i], w->qz[i]));
    maybe_rebalance(d, n);
    memset(d->scount, 0, (size_t)P * sizeof *d->scount);
    for (int i = 0; i < n; ++i) {
        int t[2], nt = ghost_targets(d, d->layer[i], t);
        d->scount[d->owner[d->layer[i]]] += 1;
        for (int k = 0; k < nt; ++k) d->scount[t[k]] += 1;
    }
    size_t stotal = 0;
    for (int r = 0; r < P; ++r) {
        d->sdispl[r] = (int)stotal;
        stotal += (size_t)d->scount[r];
    }
    MPI_Alltoall(d->scount, 1, MPI_INT, d->rcount, 1, MPI_INT, d->comm);
    size_t rtotal = 0;
    for (int r = 0; r < P; ++r) {
        d->rdispl[r] = (int)rtotal;
        rtotal += (size_t)d->rcount[r];
    }
    fail = stotal * (size_t)W > INT_MAX || rtotal * (size_t)W > INT_MAX;
    fail = fail || !grow((void **)&d->sbuf, &d->scap, stotal * (size_t)W, sizeof *d->sbuf) ||
           !grow((void **)&d->rbuf, &d->rcap, rtotal * (size_t)W, sizeof *d->rbuf);
    if (!fail && (int)rtotal + 1 > w->capacity) {
        int64_t want = (int64_t)rtotal + (int64_t)rtotal / 4 + 64;
        fail = want > INT_MAX || pbf_world_reserve(w, (int)want, NULL) != PBF_OK;
    }
    if (agree_failed(d, fail)) return;
    /* pack in memory order: every destination receives its particles in ascending key order */
    memcpy(d->cursor, d->sdispl, (size_t)P * sizeof *d->cursor);
    for (int i = 0; i < n; ++i) {
        int t[2], nt = ghost_targets(d, d->layer[i], t);
        int o = d->owner[d->layer[i]];
        pack(d, d->sbuf + (size_t)d->cursor[o]++ * W, i);
        for (int k = 0; k < nt; ++k) pack(d, d->sbuf + (size_t)d->cursor[t[k]]++ * W, i);
    }
    for (int r = 0; r < P; ++r) {
        d->wcount[r] = d->scount[r] * W;
        d->wdispl[r] = d->sdispl[r] * W;
        d->wrcount[r] = d->rcount[r] * W;
        d->wrdispl[r] = d->rdispl[r] * W;
    }
    MPI_Alltoallv(d->sbuf, d->wcount, d->wdispl, MPI_UINT32_T, d->rbuf, d->wrcount, d->wrdispl,
                  MPI_UINT32_T, d->comm);
    d->migrated_bytes += 4.0 * (double)W * (double)(stotal - (size_t)d->scount[d->rank]);
    for (int r = 0; r < P; ++r) d->messages += r != d->rank && d->scount[r] > 0;
    /* merge the sources by key (keys of different sources differ; each source is ascending) */
    int *head = d->cursor, *src = d->scount; /* reused: the counts are no longer needed */
    int nsrc = 0;
    for (int r = 0; r < P; ++r) {
        if (d->rcount[r] > 0) src[nsrc++] = r;
        head[r] = 0;
    }
    for (int k = 0; k < (int)rtotal; ++k) {
        int best = -1;
        uint32_t best_key = 0;
        for (int s = 0; s < nsrc; ++s) {
            int r = src[s];
            if (head[r] >= d->rcount[r]) continue;
            uint32_t key = d->rbuf[((size_t)d->rdispl[r] + (size_t)head[r]) * W + d->key_word];
            if (best < 0 || key < best_key) {
                best = r;
                best_key = key;
            }
        }
        const uint32_t *rec = d->rbuf + ((size_t)d->rdispl[best] + (size_t)head[best]++) * W;
        for (int f = 0; f < W; ++f) ((uint32_t *)w->field[d->fields[f]])[k] = rec[f];
    }
    w->count = (int)rtotal;
}

/* ---- halos, after the sort ----------------------------------------------------------------- */

static void halo_lists(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count, P = d->size, me = d->rank;
    memset(d->hs_n, 0, (size_t)P * sizeof *d->hs_n);
    memset(d->hr_n, 0, (size_t)P * sizeof *d->hr_n);
    for (int i = 0; i < n; ++i) {
        int a = layer_of_cell(&w->grid, d->axis, w->cell[i]), o = d->owner[a];
        if (o != me) {
            d->hr_n[o] += 1;
            continue;
        }
        int t[2], nt = ghost_targets(d, a, t);
        for (int k = 0; k < nt; ++k) d->hs_n[t[k]] += 1;
    }
    size_t ns = 0, nr = 0;
    for (int r = 0; r < P; ++r) {
        d->hs_off[r] = (int)ns;
        d->hr_off[r] = (int)nr;
        ns += (size_t)d->hs_n[r];
        nr += (size_t)d->hr_n[r];
    }
    /* buffers for up to 3 words per particle (the widest halo update) */
    int fail = !grow((void **)&d->hs_idx, &d->hs_cap, ns, sizeof *d->hs_idx) ||
               !grow((void **)&d->hr_idx, &d->hr_cap, nr, sizeof *d->hr_idx) ||
               !grow((void **)&d->sbuf, &d->scap, 3 * ns, sizeof *d->sbuf) ||
               !grow((void **)&d->rbuf, &d->rcap, 3 * nr, sizeof *d->rbuf);
    if (agree_failed(d, fail)) return;
    int *cs = d->cursor, *cr = d->wcount; /* scratch cursors */
    memcpy(cs, d->hs_off, (size_t)P * sizeof *cs);
    memcpy(cr, d->hr_off, (size_t)P * sizeof *cr);
    for (int i = 0; i < n; ++i) {
        int a = layer_of_cell(&w->grid, d->axis, w->cell[i]), o = d->owner[a];
        if (o != me) {
            d->hr_idx[cr[o]++] = i;
            continue;
        }
        int t[2], nt = ghost_targets(d, a, t);
        for (int k = 0; k < nt; ++k) d->hs_idx[cs[t[k]]++] = i;
    }
    d->ghosts += (double)nr;
}

/* Copies rows `f` of the owners' particles over their ghosts on the other processes. The sender
 * lists its particles in memory order, the receiver its ghosts from that sender in memory order:
 * both are the global order, so the k-th word received is the k-th ghost's. */
static void halo_update(pbf_mpi_domain *d, const int *f, int nf) {
    pbf_world *w = d->w;
    const int P = d->size;
    int nreq = 0;
    for (int r = 0; r < P; ++r)
        if (d->hr_n[r] > 0)
            MPI_Irecv(d->rbuf + (size_t)d->hr_off[r] * nf, d->hr_n[r] * nf, MPI_UINT32_T, r,
                      TAG_HALO, d->comm, &d->req[nreq++]);
    for (int r = 0; r < P; ++r) {
        if (d->hs_n[r] == 0) continue;
        uint32_t *b = d->sbuf + (size_t)d->hs_off[r] * nf;
        const int *idx = d->hs_idx + d->hs_off[r];
        for (int k = 0; k < d->hs_n[r]; ++k)
            for (int j = 0; j < nf; ++j) b[k * nf + j] = ((const uint32_t *)w->field[f[j]])[idx[k]];
        MPI_Isend(b, d->hs_n[r] * nf, MPI_UINT32_T, r, TAG_HALO, d->comm, &d->req[nreq++]);
        d->halo_bytes += 4.0 * nf * d->hs_n[r];
        d->messages += 1;
    }
    MPI_Waitall(nreq, d->req, MPI_STATUSES_IGNORE);
    for (int r = 0; r < P; ++r) {
        const uint32_t *b = d->rbuf + (size_t)d->hr_off[r] * nf;
        const int *idx = d->hr_idx + d->hr_off[r];
        for (int k = 0; k < d->hr_n[r]; ++k)
            for (int j = 0; j < nf; ++j) ((uint32_t *)w->field[f[j]])[idx[k]] = b[k * nf + j];
    }
}

/* 1 if particle i is a ghost (after the grid stage): the speed-limit cuts are counted by owners. */
static int is_ghost(const pbf_world *w, int i, void *user) {
    const pbf_mpi_domain *d = user;
    return d->owner[layer_of_cell(&w->grid, d->axis, w->cell[i])] != d->rank;
}

/* Drops the ghosts: keeps the owned particles in memory order. */
static void drop_ghosts(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count;
    int k = 0;
    for (int i = 0; i < n; ++i) {
        if (d->owner[layer_of_cell(&w->grid, d->axis, w->cell[i])] != d->rank) continue;
        if (k != i)
            for (int f = 0; f < PBF_FIELD_COUNT; ++f)
                if (w->field[f]) ((uint32_t *)w->field[f])[k] = ((uint32_t *)w->field[f])[i];
        ++k;
    }
    w->count = k;
}

/* The density solve's error (the average density error, percent, that the lambda stage measures)
 * over every process's owned particles: the stage measured this process's owned particles and
 * ghosts. The same float terms as the single-process sum, added in another order: equal to it
 * within double rounding. */
static void global_solve_error(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const float inv_rho0 = 1.0f / w->k.rest_density;
    double v[2] = {0.0, 0.0};
    for (int i = 0; i < w->count; ++i) {
        if (d->owner[layer_of_cell(&w->grid, d->axis, w->cell[i])] != d->rank) continue;
        const float e = w->density[i] * inv_rho0 - 1.0f;
        if (e > 0.0f) v[0] += e;
        v[1] += 1.0;
    }
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, d->comm);
    w->solve_error = v[1] > 0.0 ? 100.0 * v[0] / v[1] : 0.0;
}

static void after_stage(pbf_world *w, pbf_stage_id stage, void *user) {
    pbf_mpi_domain *d = user;
    (void)w;
    if (d->failed) { /* the same on every process (agree_failed): no more exchanges */
        if (stage == PBF_STAGE_VORTICITY_XSPH) drop_ghosts(d); /* local */
        return;
    }
    static const int lambda[] = {PBF_F_LAMBDA}, q[] = {PBF_F_QX, PBF_F_QY, PBF_F_QZ},
                     curl[] = {PBF_F_DENSITY, PBF_F_LAMBDA};
    switch (stage) {
    case PBF_STAGE_PREDICT: migrate(d); break;
    case PBF_STAGE_GRID: halo_lists(d); break;
    case PBF_STAGE_LAMBDA: /* delta p reads lambda_j */
        global_solve_error(d);
        halo_update(d, lambda, 1);
        break;
    case PBF_STAGE_COLLIDE: halo_update(d, q, 3); break;        /* lambda, velocity read x*_j */
    case PBF_STAGE_VELOCITY: halo_update(d, curl, 2); break;    /* XSPH: rho_j; eta: |omega_j| */
    case PBF_STAGE_VORTICITY_XSPH:
        drop_ghosts(d);
        d->steps += 1;
        break;
    default: break;
    }
}

static void reduce_stats(pbf_world *w, double acc[PBF_STATS_PARTIALS], double *count,
                         double *clamps, void *user) {
    pbf_mpi_domain *d = user;
    (void)w;
    double sum[5] = {acc[0], acc[3], acc[4], *count, *clamps};
    double max[4] = {acc[1], acc[2], *count, -*count};
    MPI_Allreduce(MPI_IN_PLACE, sum, 5, MPI_DOUBLE, MPI_SUM, d->comm);
    MPI_Allreduce(MPI_IN_PLACE, max, 4, MPI_DOUBLE, MPI_MAX, d->comm);
    acc[0] = sum[0];
    acc[3] = sum[1];
    acc[4] = sum[2];
    *count = sum[3];
    *clamps = sum[4];
    acc[1] = max[0];
    acc[2] = max[1];
    d->count_max = (int)max[2];
    d->count_min = (int)-max[3];
}

/* ---- lifetime --------------------------------------------------------------------------- */

void pbf_mpi_domain_destroy(pbf_mpi_domain *d) {
    if (!d) return;
    if (d->w && d->w->hooks == &d->hooks) d->w->hooks = NULL;
    int **ints[] = {&d->lo, &d->owner, &d->hist, &d->scount, &d->sdispl, &d->rcount, &d->rdispl,
                    &d->cursor, &d->wcount, &d->wdispl, &d->wrcount, &d->wrdispl, &d->layer,
                    &d->hs_n, &d->hs_off, &d->hr_n, &d->hr_off, &d->hs_idx, &d->hr_idx};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i) free(*ints[i]);
    free(d->sbuf);
    free(d->rbuf);
    free(d->req);
    for (int j = 0; j < STATE_WORDS; ++j) free(d->garr[j]);
    free(d);
}

static const char *solver_name(pbf_solver_kind kind) {
    size_t n = 0;
    const pbf_solver_info *info = pbf_solvers(&n);
    for (size_t i = 0; i < n; ++i)
        if (info[i].kind == kind) return info[i].name;
    return "?";
}

pbf_status pbf_mpi_domain_create(pbf_world *w, MPI_Comm comm, const pbf_mpi_options *options,
                                 pbf_mpi_domain **out, pbf_error *err) {
    if (!w || !out) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_mpi_domain_create: NULL argument");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    pbf_mpi_options o = options ? *options : pbf_mpi_default_options();
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* every check on every process, agreed, so that all fail or none */
    /* the halos are those of PBF's stages with a fixed iteration count (a tolerance would stop
     * each process after its own number of iterations) */
    int bad[4] = {w->backend != &pbf_backend_cpu, w->hooks != NULL, 0,
                  w->def.solver != PBF_SOLVER_PBF || w->def.pbf.tolerance > 0.0f};
    int cmin = w->count, cmax = w->count;
    MPI_Allreduce(MPI_IN_PLACE, &cmin, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &cmax, 1, MPI_INT, MPI_MAX, comm);
    pbf_mpi_domain *d = calloc(1, sizeof *d);
    if (d) {
        d->w = w;
        d->comm = comm;
        d->rank = rank;
        d->size = size;
        d->imbalance = o.imbalance;
        d->axis = o.axis;
        if (d->axis < 0 || d->axis > 2) { /* the container's longest axis */
            d->axis = 0;
            for (int a = 1; a < 3; ++a)
                if (w->hi[a] - w->lo[a] > w->hi[d->axis] - w->lo[d->axis]) d->axis = a;
        }
        d->layers = w->grid.dim[d->axis];
        const size_t P = (size_t)size, L = (size_t)d->layers;
        d->lo = calloc(P + 1, sizeof(int));
        d->owner = calloc(L, sizeof(int));
        d->hist = calloc(L, sizeof(int));
        int **per_rank[] = {&d->scount, &d->sdispl, &d->rcount, &d->rdispl, &d->cursor,
                            &d->wcount, &d->wdispl, &d->wrcount, &d->wrdispl, &d->hs_n,
                            &d->hs_off, &d->hr_n, &d->hr_off};
        int ok = d->lo && d->owner && d->hist;
        for (size_t i = 0; i < sizeof per_rank / sizeof per_rank[0]; ++i) {
            *per_rank[i] = calloc(P + 1, sizeof(int));
            ok = ok && *per_rank[i];
        }
        d->req = calloc(2 * P, sizeof *d->req);
        ok = ok && d->req && grow((void **)&d->layer, &d->layer_cap, (size_t)w->count + 1, sizeof(int));
        if (ok && w->capacity < 1) ok = pbf_world_reserve(w, 64, NULL) == PBF_OK;
        bad[2] = !ok;
    } else {
        bad[2] = 1;
    }
    MPI_Allreduce(MPI_IN_PLACE, bad, 4, MPI_INT, MPI_MAX, comm);
    if (bad[0] || bad[1] || bad[2] || bad[3] || cmin != cmax) {
        if (bad[3])
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "solver = \"%s\", pbf_tolerance = %g: a run over MPI processes needs "
                          "solver = \"pbf\" with a fixed iteration count (pbf_tolerance = 0)",
                          solver_name(w->def.solver), (double)w->def.pbf.tolerance);
        else if (bad[0])
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "device = \"%s\": a run over MPI processes needs the cpu device",
                          w->def.device);
        else if (bad[1])
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "pbf_mpi_domain_create: the world is already split among processes");
        else if (bad[2])
            pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                          "pbf_mpi_domain_create: out of memory on a process");
        else
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "pbf_mpi_domain_create: the processes hold different worlds (%d to %d "
                          "particles); each must build the same one",
                          cmin, cmax);
        pbf_mpi_domain_destroy(d);
        return bad[2] ? PBF_ERR_OUT_OF_MEMORY : PBF_ERR_INVALID_ARGUMENT;
    }
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (pbf_fields[f].flags & PBF_FIELD_SORTED) {
            if (f == PBF_F_CELL) d->key_word = d->nfields;
            d->fields[d->nfields++] = f;
        }
    /* the slabs, from every particle's cell (each process holds all of them now) */
    const int n = w->count;
    for (int i = 0; i < n; ++i)
        d->layer[i] = layer_of_cell(&w->grid, d->axis, pbf_grid_cell_of(&w->grid, w->px[i], w->py[i], w->pz[i]));
    if (d->imbalance > 0.0) {
        for (int i = 0; i < n; ++i) d->hist[d->layer[i]] += 1;
        bounds(d, d->hist, d->lo);
    } else {
        bounds(d, NULL, d->lo);
    }
    set_owner(d);
    /* keep this process's particles; the key is the index in the common world */
    int k = 0;
    for (int i = 0; i < n; ++i) {
        if (d->owner[d->layer[i]] != rank) continue;
        for (int f = 0; f < PBF_FIELD_COUNT; ++f)
            if (w->field[f]) ((uint32_t *)w->field[f])[k] = ((uint32_t *)w->field[f])[i];
        w->cell[k] = (uint32_t)i;
        ++k;
    }
    w->count = k;
    d->hooks.after_stage = after_stage;
    d->hooks.reduce_stats = reduce_stats;
    d->hooks.is_ghost = is_ghost;
    d->hooks.user = d;
    w->hooks = &d->hooks;
    pbf_update_stats(w); /* collective: the global statistics and the counts per process */
    *out = d;
    return PBF_OK;
}

/* ---- gather, diagnosis, info ------------------------------------------------------------- */

pbf_status pbf_mpi_gather(pbf_mpi_domain *d, int root, pbf_snapshot *out, pbf_error *err) {
    memset(out, 0, sizeof *out);
    pbf_world *w = d->w;
    const int n = w->count, P = d->size, W = STATE_WORDS + 1;
    /* the STATE rows in pbf_snapshot's member order: x y z vx vy vz density id */
    int rows[STATE_WORDS], nrows = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (pbf_fields[f].flags & PBF_FIELD_STATE) rows[nrows++] = f;
    int fail = nrows != STATE_WORDS || !grow((void **)&d->sbuf, &d->scap, (size_t)n * W, sizeof *d->sbuf);
    MPI_Gather(&n, 1, MPI_INT, d->rcount, 1, MPI_INT, root, d->comm);
    size_t total = 0;
    if (d->rank == root)
        for (int r = 0; r < P; ++r) {
            d->rdispl[r] = (int)total;
            total += (size_t)d->rcount[r];
        }
    if (d->rank == root) {
        fail = fail || total * (size_t)W > INT_MAX ||
               !grow((void **)&d->rbuf, &d->rcap, total * (size_t)W, sizeof *d->rbuf);
        for (int j = 0; j < STATE_WORDS && !fail; ++j) {
            size_t cap = d->gcap;
            void *p = d->garr[j];
            if (!grow(&p, &cap, total + 1, sizeof(uint32_t))) fail = 1;
            d->garr[j] = p;
            if (j == STATE_WORDS - 1 && !fail) d->gcap = cap;
        }
    }
    if (agree_failed(d, fail)) {
        d->failed = 0; /* only this gather failed: the run itself is intact */
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "gathering %zu particles on process %d: out of memory", total, root);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n; ++i) {
        uint32_t *rec = d->sbuf + (size_t)i * W;
        for (int j = 0; j < STATE_WORDS; ++j) rec[j] = ((const uint32_t *)w->field[rows[j]])[i];
        rec[STATE_WORDS] = w->cell[i];
    }
    for (int r = 0; r < P && d->rank == root; ++r) {
        d->wrcount[r] = d->rcount[r] * W;
        d->wrdispl[r] = d->rdispl[r] * W;
    }
    MPI_Gatherv(d->sbuf, n * W, MPI_UINT32_T, d->rbuf, d->wrcount, d->wrdispl, MPI_UINT32_T, root,
                d->comm);
    out->time = w->time;
    out->steps = w->steps;
    if (d->rank != root) return PBF_OK;
    int *head = d->cursor;
    for (int r = 0; r < P; ++r) head[r] = 0;
    for (size_t k = 0; k < total; ++k) {
        int best = -1;
        uint32_t best_key = 0;
        for (int r = 0; r < P; ++r) {
            if (head[r] >= d->rcount[r]) continue;
            uint32_t key = d->rbuf[((size_t)d->rdispl[r] + (size_t)head[r]) * W + STATE_WORDS];
            if (best < 0 || key < best_key) {
                best = r;
                best_key = key;
            }
        }
        const uint32_t *rec = d->rbuf + ((size_t)d->rdispl[best] + (size_t)head[best]++) * W;
        for (int j = 0; j < STATE_WORDS; ++j) d->garr[j][k] = rec[j];
    }
    out->count = (int)total;
    const float **fl[] = {&out->x, &out->y, &out->z, &out->vx, &out->vy, &out->vz, &out->density};
    for (int j = 0; j < STATE_WORDS - 1; ++j) *fl[j] = (const float *)d->garr[j];
    out->id = d->garr[STATE_WORDS - 1];
    return PBF_OK;
}

pbf_diagnosis pbf_mpi_diagnose(pbf_mpi_domain *d, double density_limit, int *rank) {
    static const char *const checks[] = {"non-finite", "escaped", "density", "out of memory"};
    pbf_diagnosis g = pbf_world_diagnose(d->w, density_limit);
    if (d->failed) {
        memset(&g, 0, sizeof g);
        g.check = checks[3];
        g.index = -1;
    }
    /* the check that failed first in pbf_world_diagnose's order (non-finite, escaped, density;
     * then a failed allocation), then its worst particle: the lowest process for non-finite
     * values, else the largest value, as pbf_world_diagnose picks within one process */
    int ncheck = (int)(sizeof checks / sizeof checks[0]), nst = 0;
    int code = ncheck;
    for (int c = 0; c < ncheck && !g.ok; ++c)
        if (g.check && strcmp(g.check, checks[c]) == 0) code = c;
    if (!g.ok && code == ncheck) code = 0;
    int best = g.ok ? ncheck : code;
    MPI_Allreduce(MPI_IN_PLACE, &best, 1, MPI_INT, MPI_MIN, d->comm);
    if (rank) *rank = -1;
    if (best >= ncheck) return g;
    struct {
        double value;
        int rank;
    } pick = {-HUGE_VAL, d->rank};
    if (!g.ok && code == best) pick.value = best == 1 || best == 2 ? g.value : -(double)d->rank;
    MPI_Allreduce(MPI_IN_PLACE, &pick, 1, MPI_DOUBLE_INT, MPI_MAXLOC, d->comm);
    const int first = pick.rank;
    if (rank) *rank = first;
    /* that process's diagnosis, on every process */
    const pbf_stage_desc *st = pbf_stage_table(PBF_SOLVER_PBF, &nst);
    long long iv[4] = {-1, -1, g.index, (long long)g.id};
    for (int c = 0; c < ncheck; ++c)
        if (g.check && strcmp(g.check, checks[c]) == 0) iv[0] = c;
    for (int s = 0; s < nst; ++s)
        if (g.stage && strcmp(g.stage, pbf_stage_name(st[s].id)) == 0) iv[1] = s;
    double dv[4] = {g.position.x, g.position.y, g.position.z, g.value};
    MPI_Bcast(iv, 4, MPI_LONG_LONG, first, d->comm);
    MPI_Bcast(dv, 4, MPI_DOUBLE, first, d->comm);
    memset(&g, 0, sizeof g);
    g.ok = 0;
    g.check = iv[0] >= 0 ? checks[iv[0]] : NULL;
    g.stage = iv[1] >= 0 ? pbf_stage_name(st[iv[1]].id) : NULL;
    g.index = (int)iv[2];
    g.id = (uint32_t)iv[3];
    g.position = (pbf_vec3){(float)dv[0], (float)dv[1], (float)dv[2]};
    g.value = dv[3];
    return g;
}

pbf_mpi_info pbf_mpi_domain_info(const pbf_mpi_domain *d) {
    pbf_mpi_info i;
    memset(&i, 0, sizeof i);
    if (!d) return i;
    i.ranks = d->size;
    i.rank = d->rank;
    i.axis = d->axis;
    i.rank_particles_min = d->count_min;
    i.rank_particles_max = d->count_max;
    i.slab_lo = d->lo[d->rank];
    i.slab_hi = d->lo[d->rank + 1];
    i.rebalances = d->rebalances;
    i.migrated_bytes = d->migrated_bytes;
    i.halo_bytes = d->halo_bytes;
    i.ghosts = d->ghosts;
    i.messages = d->messages;
    i.steps = d->steps;
    return i;
}
