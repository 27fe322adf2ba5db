/*
 * Domain decomposition over MPI (include/pbf/mpi.h): boxes of grid cells (recursive coordinate
 * bisection, or slabs), ghost particles, migration, rebalancing, global statistics. Built into
 * libpbf_mpi only where MPI is found; it plugs into the stage runner through the world's hooks
 * (internal.h) and moves the particle arrays the field registry (fields.h) declares.
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
 *    box holds one of the 26 cells around its cell; each process merges what it receives from
 *    every source by key, and the stable sort by the new cell then gives exactly the global
 *    order restricted to its owned and ghost particles. A ghost cell holds every particle of
 *    that cell, so an owned particle sees the same neighbours in the same order as in a
 *    single-process run.
 *  - Ghosts pass through the stages with empty neighbour lists (ghost_mask; on a GPU backend
 *    with the neighbours they have here, a sum that nothing reads), and their values that
 *    neighbours read (lambda; x* after each collision pass; density and |omega|) are
 *    overwritten by their owner's before being read; their velocities v = (x* - x) / dt are
 *    recomputed locally from exact x and x*.
 *    After the last pass they are dropped, so the statistics and the guard see owned particles
 *    only.
 *  - On a GPU backend (OpenCL, CUDA) the same hooks run on host copies: each moves exactly the
 *    registry rows it reads and writes between the device and the host (read_rows, write_rows:
 *    by role, so whichever buffer holds x*, v or lambda at that stage), and the grid stage
 *    brings the sorted cells to the host for ghost_mask. Per step: x* and the keys after predict
 *    (gravity), the particles that travel (gather_rows) and the merge's sources (merge_rows),
 *    the cells after the grid; a halo update moves only the halo's entries:
 *    the device packs the senders' rows into the send buffer and unpacks the received ones into
 *    the ghosts (set_rows_index, read_rows_at, write_rows_at: the index lists go to the device
 *    once per step); the ghosts are dropped on the device (merge_rows: the owned particles'
 *    indices go there). The kernels compute each particle from
 *    its neighbours in memory order, as the CPU's lists do, so frames are byte-identical to the
 *    single-process run on that device; the solves' errors are summed on the host over owned
 *    particles (in another order than the device's reduction: equal within double rounding).
 *  - After pbf_mpi_domain_create the key is the particle's index in the (identical) world every
 *    process started from: the same merge order, whatever the state came from.
 * Statistics are summed over processes by MPI_Allreduce (maxima and counts exact; the mean
 * density error may differ from the single-process run in its last bits).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pbf/mpi.h"
#include "pbf/params.h"

enum { TAG_HALO = 1701 };
#define STATE_WORDS 8  /* x y z vx vy vz density id: pbf_snapshot's arrays */
#define MAX_TARGETS 26 /* the 26 cells around a cell lie in at most 26 boxes besides its own */
#define TREE_STACK 128 /* a tree of P leaves is at most ceil(log2 P) + 1 deep */

/* A node of the decomposition tree. An inner node splits its cells at `cut` along `axis`: cells
 * with coordinate < cut go to child[0] (the processes [r0, r0 + (r1 - r0) / 2)), the others to
 * child[1]; a leaf (child[0] < 0) is the box of process r0. Boxes are [lo, hi) in grid cells;
 * a box may be empty (a process with no cell: more processes than cells along an axis). */
typedef struct node {
    int lo[3], hi[3];
    int r0, r1;
    int axis, cut;
    int child[2];
} node;

struct pbf_mpi_domain {
    MPI_Comm comm;
    int rank, size;
    pbf_world *w;
    pbf_world_hooks hooks;
    pbf_mpi_decomposition kind;
    int axis;          /* slabs: their axis */
    int dim[3];        /* grid cells per axis */
    double imbalance;
    node *tree;        /* 2 size - 1 nodes, the root first */
    int nnodes;
    int *leaf;         /* per process: its leaf */
    int *boxes;        /* per process: lo[3], hi[3] of the last decomposition (rebalancing) */
    int *nbr, nnbr;    /* the processes whose boxes lie within one cell of this one's */
    int *nslot;        /* per process: its place in nbr, or -1 */
    int *hcnt;         /* halo_lists: per chunk of particles, per neighbour, counts then cursors */
    size_t hcnt_cap;
    int *lo, *hist;    /* slabs: bounds (process r: layers [lo[r], lo[r + 1])), counts per layer */
    /* bisection's scratch: per particle its node, per node its slot among the active nodes */
    int *part, *slot, *active, *next;
    size_t part_cap;
    int *bbox;         /* 6 per active node */
    int64_t *bhist;
    size_t bhist_cap;
    /* the words of a migrating particle: every SORTED row of the registry; key_word is `cell` */
    int fields[PBF_FIELD_COUNT], nfields, key_word;
    /* what a particle carries when the domain is made from parts of the state: every SORTED row
     * and every STATE row (the density too); key_cword is `cell` among them */
    int cfields[PBF_FIELD_COUNT], ncfields, key_cword;
    int lambdas;       /* lambda stages in this step so far */
    int nghosts;       /* ghosts of this step (halo_lists) */
    int hs_total, hr_total; /* entries of hs_idx and hr_idx (halo_lists) */
    int halo_at;       /* GPU: the device holds this step's halo lists (set_rows_index) */
    /* GPU migration (exchange with dev): the particles packed, in the send buffer's order; the
     * particles that stay; per particle after the merge, its source (exchange) */
    int *sidx, *stay, *msrc;
    size_t sidx_cap, stay_cap, msrc_cap;
    int key_is_cell;   /* 0: `cell` holds the place in the world every process started from (no
                          step yet); 1: the cell of the last sort */
    /* migration */
    int *scount, *sdispl, *rcount, *rdispl, *cursor, *wcount, *wdispl, *wrcount, *wrdispl;
    uint32_t *pcell;   /* per particle: the cell of its predicted position */
    size_t pcell_cap;
    uint32_t *sbuf, *rbuf;
    size_t scap, rcap; /* words */
    /* halo lists, built after the sort: local indices, grouped by process, in memory order */
    int *hs_n, *hs_off, *hr_n, *hr_off;
    int *hs_idx, *hr_idx;
    size_t hs_cap, hr_cap;
    unsigned char *ghost; /* per particle, 1 for a ghost: from the grid stage's sort to the
                             ghosts' removal */
    size_t ghost_cap;
    int ghosts_in;        /* 1 while ghost[] is valid */
    MPI_Request *req;
    /* gathered state (root) */
    uint32_t *garr[STATE_WORDS];
    size_t gcap;
    /* state */
    int failed;        /* an allocation failed: exchanges stop on every process */
    int gpu;           /* the world's backend keeps the particles on a device: every hook moves
                          the rows it reads and writes through the host (read_rows, write_rows) */
    int count_min, count_max;
    int64_t rebalances, steps;
    double migrated_bytes, halo_bytes, ghosts, messages, device_bytes;
    double hook_seconds; /* wall time in the hooks that run the decomposition */
    int built;           /* pbf_mpi_domain_create_blocks: particles this process built (its part
                            and the cell planes beside it), else 0 */
};

pbf_mpi_options pbf_mpi_default_options(void) {
    pbf_mpi_options o;
    o.decomposition = PBF_MPI_BISECTION;
    o.axis = -1;
    o.imbalance = 0.1;
    return o;
}

void pbf_mpi_device(MPI_Comm comm, const char *device, char *out, size_t size) {
    const char *dev = device ? device : "";
    snprintf(out, size, "%s", dev);
    const int opencl = strcmp(dev, "opencl") == 0, cuda = strcmp(dev, "cuda") == 0;
    MPI_Comm node;
    int local = 0;
    /* collective whatever the device, so that every process calls the same functions */
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (!opencl && !cuda) return;
    enum { MAX_IDS = 64 };
    char ids[MAX_IDS][PBF_DEVICE_NAME_MAX];
    int n = pbf_backend_default_devices(dev, ids, MAX_IDS);
    if (n > MAX_IDS) n = MAX_IDS;
    if (n > 0) snprintf(out, size, "%s", ids[local % n]);
}

const char *pbf_mpi_decomposition_name(pbf_mpi_decomposition kind) {
    return kind == PBF_MPI_SLABS ? "slabs" : kind == PBF_MPI_BISECTION ? "bisection" : "?";
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

/* The coordinates of cell c of a grid of dim cells per axis. */
static inline void cell_coords(const int dim[3], uint32_t c, int x[3]) {
    const uint32_t dx = (uint32_t)dim[0], dy = (uint32_t)dim[1];
    x[0] = (int)(c % dx);
    x[1] = (int)((c / dx) % dy);
    x[2] = (int)(c / (dx * dy));
}

static inline void cell_xyz(const pbf_mpi_domain *d, uint32_t c, int x[3]) {
    cell_coords(d->dim, c, x);
}

/* The process that owns the cell at x. */
static inline int owner_of(const pbf_mpi_domain *d, const int x[3]) {
    const node *t = d->tree;
    int k = 0;
    while (t[k].child[0] >= 0) k = t[k].child[x[t[k].axis] >= t[k].cut];
    return t[k].r0;
}

static inline int owner_of_cell(const pbf_mpi_domain *d, uint32_t c) {
    int x[3];
    cell_xyz(d, c, x);
    return owner_of(d, x);
}

static inline int box_empty(const node *b) {
    return b->lo[0] >= b->hi[0] || b->lo[1] >= b->hi[1] || b->lo[2] >= b->hi[2];
}

/* 1 if the 26 cells around the cell at x (clipped to the grid) all lie in the box of its owner
 * o: most particles, whose cell is no process's ghost. */
static inline int interior(const pbf_mpi_domain *d, const int x[3], int o) {
    const node *own = &d->tree[d->leaf[o]];
    for (int a = 0; a < 3; ++a) {
        if (x[a] > 0 && x[a] - 1 < own->lo[a]) return 0;
        if (x[a] + 1 < d->dim[a] && x[a] + 1 >= own->hi[a]) return 0;
    }
    return 1;
}

/* The processes, other than the owner o of the cell at x, whose boxes hold one of the 26 cells
 * around it: they need the cell's particles as ghosts. Boxes are disjoint and each holds a whole
 * number of the 27 cells, so there are at most 26. */
static int border_targets(const pbf_mpi_domain *d, const int x[3], int o, int t[MAX_TARGETS]) {
    int q0[3], q1[3]; /* the 27 cells, clipped to the grid: [q0, q1] */
    for (int a = 0; a < 3; ++a) {
        q0[a] = x[a] > 0 ? x[a] - 1 : 0;
        q1[a] = x[a] + 1 < d->dim[a] ? x[a] + 1 : x[a];
    }
    int stack[TREE_STACK], sp = 0, n = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        const node *nd = &d->tree[stack[--sp]];
        if (nd->child[0] < 0) {
            if (nd->r0 != o && !box_empty(nd) && n < MAX_TARGETS) t[n++] = nd->r0;
            continue;
        }
        const int a = nd->axis;
        if (q1[a] >= nd->cut && sp < TREE_STACK) stack[sp++] = nd->child[1];
        if (q0[a] < nd->cut && sp < TREE_STACK) stack[sp++] = nd->child[0];
    }
    return n;
}

static inline int ghost_targets(const pbf_mpi_domain *d, const int x[3], int o, int t[MAX_TARGETS]) {
    return interior(d, x, o) ? 0 : border_targets(d, x, o, t);
}

/* 1 on every process if any process passes fail != 0. */
static int agree_failed(pbf_mpi_domain *d, int fail) {
    MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_MAX, d->comm);
    if (fail) d->failed = 1;
    return fail;
}

/* A GPU backend (d->gpu): the device's rows `rows` (by role: the buffer that holds each now) to
 * this process's host arrays (to_device = 0), or back. 1 on success; collective, agreed like an
 * allocation (a failure on any process stops the exchanges on every one). Nothing to do on the
 * CPU backend, whose arrays are the host's. */
static int dev_rows(pbf_mpi_domain *d, const int *rows, int nrows, int to_device) {
    if (!d->gpu) return 1;
    const pbf_backend_ops *be = d->w->backend;
    const pbf_status s = to_device ? be->write_rows(d->w, rows, nrows, NULL)
                                   : be->read_rows(d->w, rows, nrows, NULL);
    d->device_bytes += 4.0 * nrows * d->w->count;
    return !agree_failed(d, s != PBF_OK);
}

/* ---- the decomposition ------------------------------------------------------------------- */

static int new_node(pbf_mpi_domain *d, const int lo[3], const int hi[3], int r0, int r1) {
    const int k = d->nnodes++;
    node *nd = &d->tree[k];
    for (int a = 0; a < 3; ++a) {
        nd->lo[a] = lo[a];
        nd->hi[a] = hi[a];
    }
    nd->r0 = r0;
    nd->r1 = r1;
    nd->axis = 0;
    nd->cut = 0;
    nd->child[0] = nd->child[1] = -1;
    if (r1 - r0 == 1) d->leaf[r0] = k;
    return k;
}

/* Splits node k at `cut` along `axis`: the first half of its processes below the cut. */
static void split(pbf_mpi_domain *d, int k, int axis, int cut) {
    int lo[3], hi[3];
    node nd = d->tree[k];
    const int m = nd.r0 + (nd.r1 - nd.r0) / 2;
    d->tree[k].axis = axis;
    d->tree[k].cut = cut;
    for (int a = 0; a < 3; ++a) {
        lo[a] = nd.lo[a];
        hi[a] = nd.hi[a];
    }
    hi[axis] = cut;
    const int c0 = new_node(d, lo, hi, nd.r0, m);
    hi[axis] = nd.hi[axis];
    lo[axis] = cut;
    const int c1 = new_node(d, lo, hi, m, nd.r1);
    d->tree[k].child[0] = c0;
    d->tree[k].child[1] = c1;
}

static void root_node(pbf_mpi_domain *d) {
    static const int zero[3] = {0, 0, 0};
    d->nnodes = 0;
    new_node(d, zero, d->dim, 0, d->size);
}

/* Slabs: the tree of the bounds lo[] (process r: layers [lo[r], lo[r + 1]) along d->axis). */
static void slab_tree(pbf_mpi_domain *d, int k) {
    const node *nd = &d->tree[k];
    if (nd->r1 - nd->r0 < 2) return;
    split(d, k, d->axis, d->lo[nd->r0 + (nd->r1 - nd->r0) / 2]);
    slab_tree(d, d->tree[k].child[0]);
    slab_tree(d, d->tree[k].child[1]);
}

/* Slab bounds that split the particle counts per layer evenly (each cut at the layer boundary
 * closest to its share), or slabs of equal width when hist is NULL. */
static void slab_bounds(const pbf_mpi_domain *d, const int *hist, int *lo) {
    const int L = d->dim[d->axis], P = d->size;
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

/* Recursive coordinate bisection of the grid's cells on the particle counts of the cells pc[0..n)
 * (summed over the processes when `global`; at creation every process holds every particle):
 * a box of several processes is split across the longest axis of its particles' bounding box at
 * the cell boundary whose count below is closest to the share of its first half of processes
 * (the weighted median: any number of processes), each part recursively. Level by level, with
 * two reductions per level (bounding boxes, counts along the chosen axes), ceil(log2 P) levels.
 * by_count = 0: boxes split in proportion to their length (no particle counts). 0 when out of
 * memory (agreed). */
static int bisect(pbf_mpi_domain *d, const uint32_t *pc, int n, int global, int by_count) {
    const int P = d->size;
    root_node(d);
    if (P < 2) return 1;
    int fail = !grow((void **)&d->part, &d->part_cap, (size_t)n + 1, sizeof *d->part);
    if (global ? agree_failed(d, fail) : fail) return 0;
    for (int i = 0; i < n; ++i) d->part[i] = 0;
    for (int k = 0; k < 2 * P; ++k) d->slot[k] = -1;
    int nact = 1;
    d->active[0] = 0;
    while (nact > 0) {
        for (int s = 0; s < nact; ++s) d->slot[d->active[s]] = s;
        /* bounding boxes of the active nodes' particles: max of hi and of -lo */
        int *bb = d->bbox;
        for (int k = 0; k < 6 * nact; ++k) bb[k] = -INT_MAX;
        for (int i = 0; i < n; ++i) {
            const int s = d->slot[d->part[i]];
            if (s < 0) continue;
            int x[3];
            cell_xyz(d, pc[i], x);
            for (int a = 0; a < 3; ++a) {
                if (x[a] > bb[6 * s + a]) bb[6 * s + a] = x[a];
                if (-x[a] > bb[6 * s + 3 + a]) bb[6 * s + 3 + a] = -x[a];
            }
        }
        if (global) MPI_Allreduce(MPI_IN_PLACE, bb, 6 * nact, MPI_INT, MPI_MAX, d->comm);
        /* the axis of each: the particles' longest extent among the axes the box can be cut
         * across (two cells or more), else the box's */
        size_t total = 0;
        int *off = d->next; /* histogram offsets, one per active node */
        for (int s = 0; s < nact; ++s) {
            node *nd = &d->tree[d->active[s]];
            int best = -1, best_len = -1, has = bb[6 * s] > -INT_MAX;
            for (int a = 0; a < 3; ++a) {
                const int box = nd->hi[a] - nd->lo[a];
                const int len = has ? bb[6 * s + a] + bb[6 * s + 3 + a] + 1 : box;
                if (box >= 2 && len > best_len) {
                    best = a;
                    best_len = len;
                }
            }
            if (best < 0) /* a box of one cell: its processes beyond the first get nothing */
                best = 0;
            nd->axis = best;
            off[s] = (int)total;
            total += (size_t)(nd->hi[best] - nd->lo[best]);
        }
        if (by_count) {
            fail = total > INT_MAX || !grow((void **)&d->bhist, &d->bhist_cap, total + 1, sizeof *d->bhist);
            if (global ? agree_failed(d, fail) : fail) return 0;
            memset(d->bhist, 0, total * sizeof *d->bhist);
            for (int i = 0; i < n; ++i) {
                const int s = d->slot[d->part[i]];
                if (s < 0) continue;
                const node *nd = &d->tree[d->active[s]];
                int x[3];
                cell_xyz(d, pc[i], x);
                d->bhist[off[s] + x[nd->axis] - nd->lo[nd->axis]] += 1;
            }
            if (global && total > 0)
                MPI_Allreduce(MPI_IN_PLACE, d->bhist, (int)total, MPI_INT64_T, MPI_SUM, d->comm);
        }
        /* the cuts, then the next level's active nodes */
        int nnext = 0;
        for (int s = 0; s < nact; ++s) {
            const int k = d->active[s];
            const node nd = d->tree[k];
            const int a = nd.axis, L = nd.hi[a] - nd.lo[a];
            const int nl = (nd.r1 - nd.r0) / 2;
            int cut; /* in [0, L], relative to lo */
            int64_t sum = 0;
            if (by_count)
                for (int j = 0; j < L; ++j) sum += d->bhist[off[s] + j];
            if (L < 2) {
                cut = L;
            } else if (sum > 0) {
                const double target = (double)sum * nl / (nd.r1 - nd.r0);
                int64_t cum = d->bhist[off[s]];
                cut = 1;
                double best = fabs((double)cum - target);
                for (int j = 2; j < L; ++j) {
                    cum += d->bhist[off[s] + j - 1];
                    const double e = fabs((double)cum - target);
                    if (e < best) {
                        best = e;
                        cut = j;
                    }
                }
            } else {
                cut = (int)((int64_t)L * nl / (nd.r1 - nd.r0));
                if (cut < 1) cut = 1;
                if (cut > L - 1) cut = L - 1;
            }
            split(d, k, a, nd.lo[a] + cut);
            for (int c = 0; c < 2; ++c) {
                const node *ch = &d->tree[d->tree[k].child[c]];
                if (ch->r1 - ch->r0 > 1) d->next[P + nnext++] = d->tree[k].child[c];
            }
        }
        /* each particle of a split node into its child */
        for (int i = 0; i < n; ++i) {
            const int k = d->part[i];
            if (d->slot[k] < 0) continue;
            int x[3];
            cell_xyz(d, pc[i], x);
            d->part[i] = d->tree[k].child[x[d->tree[k].axis] >= d->tree[k].cut];
        }
        for (int s = 0; s < nact; ++s) d->slot[d->active[s]] = -1;
        memcpy(d->active, d->next + P, (size_t)nnext * sizeof *d->active);
        nact = nnext;
    }
    return 1;
}

/* The neighbours (processes whose boxes lie within one cell of this one's: those that send or
 * receive its ghosts) and the copy of the boxes. */
static void finish_decomposition(pbf_mpi_domain *d) {
    const node *me = &d->tree[d->leaf[d->rank]];
    d->nnbr = 0;
    for (int r = 0; r < d->size; ++r) {
        const node *b = &d->tree[d->leaf[r]];
        for (int a = 0; a < 3; ++a) {
            d->boxes[6 * r + a] = b->lo[a];
            d->boxes[6 * r + 3 + a] = b->hi[a];
        }
        if (r == d->rank || box_empty(b) || box_empty(me)) continue;
        int near = 1;
        for (int a = 0; a < 3; ++a) near = near && b->lo[a] <= me->hi[a] && me->lo[a] <= b->hi[a];
        if (near) d->nbr[d->nnbr++] = r;
    }
    for (int r = 0; r < d->size; ++r) d->nslot[r] = -1;
    for (int q = 0; q < d->nnbr; ++q) d->nslot[d->nbr[q]] = q;
}

/* The decomposition of the cells pc[0..n) (see bisect for `global`). 0 when out of memory. */
static int decompose(pbf_mpi_domain *d, const uint32_t *pc, int n, int global) {
    if (d->kind == PBF_MPI_SLABS) {
        if (d->imbalance > 0.0) {
            memset(d->hist, 0, (size_t)d->dim[d->axis] * sizeof *d->hist);
            for (int i = 0; i < n; ++i) {
                int x[3];
                cell_xyz(d, pc[i], x);
                d->hist[x[d->axis]] += 1;
            }
            if (global)
                MPI_Allreduce(MPI_IN_PLACE, d->hist, d->dim[d->axis], MPI_INT, MPI_SUM, d->comm);
            slab_bounds(d, d->hist, d->lo);
        } else {
            slab_bounds(d, NULL, d->lo);
        }
        root_node(d);
        slab_tree(d, 0);
    } else if (!bisect(d, pc, n, global, d->imbalance > 0.0)) {
        return 0;
    }
    finish_decomposition(d);
    return 1;
}

/* At the start of a step (after predict, pcell holds the particles' cells), when the largest
 * process holds more than (1 + imbalance) times the mean: the decomposition again, on the
 * counts over every process. */
static void maybe_rebalance(pbf_mpi_domain *d, int n) {
    if (d->imbalance <= 0.0 || d->size < 2) return;
    /* counts of the end of the last step, the same on every process (reduce_stats) */
    double mean = (double)d->w->stats.particles / d->size;
    if (!((double)d->count_max > (1.0 + d->imbalance) * mean)) return;
    const size_t nb = (size_t)6 * (size_t)d->size;
    int *old = malloc(nb * sizeof *old);
    if (agree_failed(d, !old)) return;
    memcpy(old, d->boxes, nb * sizeof *old);
    if (decompose(d, d->pcell, n, 1) && memcmp(old, d->boxes, nb * sizeof *old) != 0)
        d->rebalances += 1;
    free(old);
}

static inline void pack(const pbf_world *w, const int *fld, int nf, uint32_t *rec, int i) {
    for (int f = 0; f < nf; ++f) rec[f] = ((const uint32_t *)w->field[fld[f]])[i];
}

/* The owner of a cell and the other processes that need its particles as ghosts, kept for the
 * last cell asked: consecutive particles mostly share their cell (memory order is the order of
 * a sort by cell), and the cell's coordinates cost three integer divisions. */
typedef struct cell_cache {
    uint32_t cell;
    int valid, owner, nt;
    int t[MAX_TARGETS];
} cell_cache;

/* The owner of cell c and, with `ghosts`, the processes other than the owner that need it. */
static inline const cell_cache *cell_info(const pbf_mpi_domain *d, cell_cache *cc, uint32_t c,
                                          int ghosts) {
    if (cc->valid && cc->cell == c) return cc;
    int x[3];
    cell_xyz(d, c, x);
    cc->cell = c;
    cc->valid = 1;
    cc->owner = owner_of(d, x);
    cc->nt = ghosts ? ghost_targets(d, x, cc->owner, cc->t) : 0;
    return cc;
}

/* A run of the merge: len particles to [k, k + len) of every row, from the records received
 * at rec (rec >= 0: the record's index in rbuf) or from the row itself at `from` (forward: the
 * particles that stayed, moved down). */
typedef struct merge_run {
    size_t k;
    int rec, from, len;
} merge_run;
#define MERGE_RUNS 1024

/* The runs applied row by row, the rows in parallel (each row's runs in order). */
static void apply_runs(pbf_world *w, const int *fld, int W, const uint32_t *rbuf,
                       const merge_run *run, int nrun) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(w->nthreads)
    for (int f = 0; f < W; ++f) {
        uint32_t *a = w->field[fld[f]];
        for (int q = 0; q < nrun; ++q) {
            const merge_run *u = &run[q];
            if (u->rec < 0) {
                memmove(a + u->k, a + u->from, (size_t)u->len * sizeof *a);
            } else {
                const uint32_t *rec = rbuf + (size_t)u->rec * W + f;
                uint32_t *dst = a + u->k;
                for (int j = 0; j < u->len; ++j) dst[j] = rec[(size_t)j * W];
            }
        }
    }
}

/* Sends every particle to the owner of its cell pcell[i] and, with `ghosts`, to the processes
 * that need it as a ghost; each process then holds what it received merged by key (rows `fld`,
 * nf of them, the key the row key_word). Collective. The particles that stay on this process
 * are not packed: they are compacted in place, moved to the end of the arrays, and merged from
 * there with what the other processes sent (a process that neither sends nor receives moves
 * nothing).
 * With `dev` (a GPU backend; the host holds the keys, read by the caller) the rows stay on the
 * device: the particles sent are gathered there (gather_rows) into the send buffer, and the
 * merge is a list of sources, one per particle after it (a particle that stays, or a record
 * received), applied there (merge_rows): only the particles that travel and the lists cross the
 * bus, and the device's rows end as the host's would. */
static void exchange(pbf_mpi_domain *d, int ghosts, const int *fld, int nf, int key_word,
                     int dev) {
    pbf_world *w = d->w;
    const int n = w->count, P = d->size, W = nf, me = d->rank;
    int fail = !grow((void **)&d->part, &d->part_cap, (size_t)n + 1, sizeof *d->part);
    if (d->failed || agree_failed(d, fail)) return;
    /* part[i]: the owner times 4, plus 2 when this process keeps the particle (it owns it or
     * needs it as a ghost), plus 1 when a process other than the owner needs it as a ghost */
    memset(d->scount, 0, (size_t)P * sizeof *d->scount);
    /* in parallel: each thread its own cache (integer counts: the same for any thread count) */
    int *scount = d->scount, *part = d->part, nleave = 0;
    const uint32_t *pcell = d->pcell;
#pragma omp parallel num_threads(w->nthreads)
    {
        cell_cache tc;
        tc.valid = 0;
#pragma omp for schedule(static) reduction(+ : scount[:P], nleave)
        for (int i = 0; i < n; ++i) {
            const cell_cache *ci = cell_info(d, &tc, pcell[i], ghosts);
            int keep = ci->owner == me;
            scount[ci->owner] += 1;
            for (int k = 0; k < ci->nt; ++k) {
                scount[ci->t[k]] += 1;
                keep |= ci->t[k] == me;
            }
            part[i] = 4 * ci->owner + 2 * keep + (ci->nt > 0);
            nleave += !keep;
        }
    }
    cell_cache cc;
    const int nstay = d->scount[me];
    d->scount[me] = 0; /* not sent: kept in place */
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
    const size_t total = rtotal + (size_t)nstay; /* this process's particles after the exchange */
    fail = stotal * (size_t)W > INT_MAX || rtotal * (size_t)W > INT_MAX || total > INT_MAX - 64;
    fail = fail || !grow((void **)&d->sbuf, &d->scap, stotal * (size_t)W, sizeof *d->sbuf) ||
           !grow((void **)&d->rbuf, &d->rcap, rtotal * (size_t)W, sizeof *d->rbuf);
    if (!fail && (int)total > w->capacity) { /* (capacity: rows of that many particles) */
        int64_t want = (int64_t)total + (int64_t)total / 4 + 64;
        fail = want > INT_MAX || pbf_world_reserve(w, (int)want, NULL) != PBF_OK;
    }
    fail = fail || !grow((void **)&d->sidx, &d->sidx_cap, stotal + 1, sizeof *d->sidx) ||
           (dev && (!grow((void **)&d->stay, &d->stay_cap, (size_t)n + 1, sizeof *d->stay) ||
                            !grow((void **)&d->msrc, &d->msrc_cap, total + 1, sizeof *d->msrc)));
    if (agree_failed(d, fail)) return;
    /* the particles sent, in memory order: every destination receives its particles in ascending
     * key order; their indices (sidx), then packed in parallel (dev: gathered on the device) */
    memcpy(d->cursor, d->sdispl, (size_t)P * sizeof *d->cursor);
    cc.valid = 0;
    for (int i = 0; i < n && stotal > 0; ++i) { /* (nothing to send: no pass) */
        const int o = part[i] >> 2;
        if (o != me) d->sidx[d->cursor[o]++] = i;
        if (part[i] & 1) {
            const cell_cache *ci = cell_info(d, &cc, pcell[i], ghosts);
            for (int k = 0; k < ci->nt; ++k)
                if (ci->t[k] != me) d->sidx[d->cursor[ci->t[k]]++] = i;
        }
    }
    if (!dev) {
        const int *sidx = d->sidx;
        uint32_t *sbuf = d->sbuf;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) if (stotal > 4096)
        for (size_t q = 0; q < stotal; ++q) pack(w, fld, W, sbuf + q * W, sidx[q]);
    }
    if (dev) {
        const int bad = stotal > 0 && w->backend->gather_rows(w, fld, W, d->sidx, (int)stotal,
                                                              d->sbuf, NULL) != PBF_OK;
        d->device_bytes += 4.0 * (double)stotal * (W + 1);
        if (agree_failed(d, bad)) return;
    }
    for (int r = 0; r < P; ++r) {
        d->wcount[r] = d->scount[r] * W;
        d->wdispl[r] = d->sdispl[r] * W;
        d->wrcount[r] = d->rcount[r] * W;
        d->wrdispl[r] = d->rdispl[r] * W;
    }
    if (P > 1)
        MPI_Alltoallv(d->sbuf, d->wcount, d->wdispl, MPI_UINT32_T, d->rbuf, d->wrcount,
                      d->wrdispl, MPI_UINT32_T, d->comm);
    d->migrated_bytes += 4.0 * (double)W * (double)stotal;
    for (int r = 0; r < P; ++r) d->messages += r != me && d->scount[r] > 0;
    /* the particles that stay: compacted (in order), then moved to [rtotal, total) (dev: listed) */
    if (dev) {
        int k = 0;
        for (int i = 0; i < n; ++i)
            if (d->part[i] & 2) d->stay[k++] = i;
    } else if (nleave > 0 || rtotal > 0) {
        /* row by row, the rows in parallel (each row's moves in order: in place) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(w->nthreads)
        for (int f = 0; f < W; ++f) {
            uint32_t *a = w->field[fld[f]];
            if (nleave > 0) {
                int k = 0;
                for (int i = 0; i < n; ++i)
                    if (part[i] & 2) a[k++] = a[i];
            }
            if (rtotal > 0 && nstay > 0) memmove(a + rtotal, a, (size_t)nstay * sizeof *a);
        }
    }
    /* merge the sources by key (keys of different sources differ; each source is ascending):
     * runs from the source with the smallest head key, up to the next source's head key; the
     * source `me` is the particles that stayed, at [rtotal, total) */
    int *head = d->cursor, *src = d->scount; /* reused: the counts are no longer needed */
    int nsrc = 0;
    for (int r = 0; r < P; ++r) {
        if (d->rcount[r] > 0 || (r == me && nstay > 0)) src[nsrc++] = r;
        head[r] = 0;
    }
    const uint32_t *key_row = (const uint32_t *)w->field[fld[key_word]];
    const uint32_t *stay_key = key_row + rtotal;
#define COUNT_OF(r) ((r) == me ? nstay : d->rcount[r])
#define KEY_AT(r, j)                                                                               \
    ((r) == me ? (dev ? key_row[d->stay[j]] : stay_key[j])                                        \
               : d->rbuf[((size_t)d->rdispl[r] + (size_t)(j)) * W + key_word])
    merge_run run[MERGE_RUNS];
    int nrun = 0;
    for (size_t k = 0; k < total && !(nsrc == 1 && src[0] == me);) {
        int best = -1, second = -1;
        for (int q = 0; q < nsrc; ++q) {
            const int r = src[q];
            if (head[r] >= COUNT_OF(r)) continue;
            const uint32_t key = KEY_AT(r, head[r]);
            if (best < 0 || key < KEY_AT(best, head[best])) {
                second = best;
                best = r;
            } else if (second < 0 || key < KEY_AT(second, head[second])) {
                second = r;
            }
        }
        int end = COUNT_OF(best);
        if (second >= 0) {
            const uint32_t lim = KEY_AT(second, head[second]);
            end = head[best] + 1;
            while (end < COUNT_OF(best) && KEY_AT(best, end) < lim) ++end;
        }
        const int len = end - head[best];
        if (dev) { /* sources: a particle that stays (its index), or a record received */
            for (int j = 0; j < len; ++j)
                d->msrc[k + (size_t)j] = best == me ? d->stay[head[best] + j]
                                                    : -(d->rdispl[best] + head[best] + j) - 1;
        } else {
            run[nrun++] = (merge_run){k, best == me ? -1 : d->rdispl[best] + head[best],
                                      best == me ? (int)rtotal + head[best] : 0, len};
        }
        k += (size_t)len;
        head[best] = end;
        /* the runs so far, applied (the keys still to read lie beyond their destinations) */
        if (nrun == MERGE_RUNS || (k >= total && nrun > 0)) {
            apply_runs(w, fld, W, d->rbuf, run, nrun);
            nrun = 0;
        }
    }
#undef KEY_AT
#undef COUNT_OF
    if (dev) {
        int bad = 0;
        if (total > 0 && (nleave > 0 || rtotal > 0)) { /* else the device's order stands */
            if (nsrc == 1 && src[0] == me) /* only stayers: the merge loop did not run */
                memcpy(d->msrc, d->stay, (size_t)nstay * sizeof *d->msrc);
            bad = w->backend->merge_rows(w, fld, W, d->msrc, (int)total, d->rbuf, (int)rtotal,
                                         NULL) != PBF_OK;
            d->device_bytes += 4.0 * ((double)total + (double)rtotal * W);
        }
        if (agree_failed(d, bad)) return; /* collective: every process */
    }
    w->count = (int)total;
}

/* After predict: every particle to the owner of the cell of its predicted position (the boxes
 * moved first when the load is out of balance), and the ghosts. On a GPU backend that has
 * gather_rows and merge_rows only x* and the keys come to the host and the rows stay on the
 * device (exchange's dev); else every SORTED row makes the round trip. */
static void migrate(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const pbf_backend_ops *be = w->backend;
    const int dev = d->gpu && be->gather_rows && be->merge_rows;
    if (dev) {
        const int rows[4] = {PBF_F_QX, PBF_F_QY, PBF_F_QZ, d->fields[d->key_word]};
        if (!dev_rows(d, rows, 4, 0)) return;
    } else if (!dev_rows(d, d->fields, d->nfields, 0))
        return;
    const int n = w->count;
    int fail = !grow((void **)&d->pcell, &d->pcell_cap, (size_t)n, sizeof *d->pcell);
    if (agree_failed(d, fail)) return;
    uint32_t *pc = d->pcell;
    const float *qx = w->qx, *qy = w->qy, *qz = w->qz;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) pc[i] = pbf_grid_cell_of(&w->grid, qx[i], qy[i], qz[i]);
    maybe_rebalance(d, n);
    exchange(d, 1, d->fields, d->nfields, d->key_word, dev);
    if (!dev && !d->failed) dev_rows(d, d->fields, d->nfields, 1);
}

/* ---- halos, after the sort ----------------------------------------------------------------- */

/* ghost[i] for the particles in the order of the grid stage's sort (their cell is w->cell[i]);
 * 0 when out of memory. */
static int mark_ghosts(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count;
    if (!grow((void **)&d->ghost, &d->ghost_cap, (size_t)n + 1, sizeof *d->ghost)) return 0;
    unsigned char *ghost = d->ghost;
    const uint32_t *cell = w->cell;
    if (d->nnbr == 0) { /* a ghost comes from a neighbour (its cell touches this box): none */
        memset(ghost, 0, (size_t)n);
        d->ghosts_in = 1;
        d->nghosts = -1;
        return 1;
    }
#pragma omp parallel num_threads(w->nthreads)
    {
        cell_cache cc;
        cc.valid = 0;
#pragma omp for schedule(static)
        for (int i = 0; i < n; ++i) ghost[i] = cell_info(d, &cc, cell[i], 0)->owner != d->rank;
    }
    d->ghosts_in = 1;
    d->nghosts = -1; /* counted by halo_lists */
    return 1;
}

/* The hook of the grid stage: the ghosts, which get empty neighbour lists. */
static const unsigned char *ghost_mask(pbf_world *w, void *user) {
    pbf_mpi_domain *d = user;
    (void)w;
    const double t0 = MPI_Wtime();
    d->ghosts_in = 0;
    const int ok = mark_ghosts(d);
    d->hook_seconds += MPI_Wtime() - t0;
    return ok ? d->ghost : NULL;
}

static void halo_lists(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count, P = d->size;
    d->halo_at = 0;
    memset(d->hs_n, 0, (size_t)P * sizeof *d->hs_n);
    memset(d->hr_n, 0, (size_t)P * sizeof *d->hr_n);
    /* per chunk of particles (one per thread) and neighbour: the entries sent and received */
    const int K = d->nnbr, C = w->nthreads < 1 + n / 256 ? (w->nthreads > 1 ? w->nthreads : 1) : 1 + n / 256;
    int fail = !d->ghosts_in && !mark_ghosts(d);
    fail = fail || !grow((void **)&d->hcnt, &d->hcnt_cap, (size_t)C * 2 * (size_t)K + 1, sizeof *d->hcnt);
    if (agree_failed(d, fail)) return;
    /* (a cell's particles are all owned or all ghosts: the cache holds either kind; every
     * process that sends or receives a ghost is a neighbour: its box touches the cell) */
    const unsigned char *ghost = d->ghost;
    const uint32_t *cell = w->cell;
    const int *nslot = d->nslot;
    int *hcnt = d->hcnt;
#pragma omp parallel for schedule(static, 1) num_threads(C)
    for (int c = 0; c < C; ++c) {
        int *cs = hcnt + (size_t)c * 2 * K, *cr = cs + K;
        for (int q = 0; q < 2 * K; ++q) cs[q] = 0;
        cell_cache tc;
        tc.valid = 0;
        const int i1 = (int)((int64_t)n * (c + 1) / C);
        for (int i = (int)((int64_t)n * c / C); i < i1 && K > 0; ++i) {
            const cell_cache *ci = cell_info(d, &tc, cell[i], !ghost[i]);
            if (ghost[i]) {
                cr[nslot[ci->owner]] += 1;
                continue;
            }
            for (int k = 0; k < ci->nt; ++k) cs[nslot[ci->t[k]]] += 1;
        }
    }
    for (int q = 0; q < K; ++q)
        for (int c = 0; c < C; ++c) {
            d->hs_n[d->nbr[q]] += hcnt[(size_t)c * 2 * K + q];
            d->hr_n[d->nbr[q]] += hcnt[(size_t)c * 2 * K + K + q];
        }
    size_t ns = 0, nr = 0;
    for (int r = 0; r < P; ++r) {
        d->hs_off[r] = (int)ns;
        d->hr_off[r] = (int)nr;
        ns += (size_t)d->hs_n[r];
        nr += (size_t)d->hr_n[r];
    }
    /* buffers for up to 3 words per particle (the widest halo update) */
    fail = !grow((void **)&d->hs_idx, &d->hs_cap, ns, sizeof *d->hs_idx) ||
           !grow((void **)&d->hr_idx, &d->hr_cap, nr, sizeof *d->hr_idx) ||
           !grow((void **)&d->sbuf, &d->scap, 3 * ns, sizeof *d->sbuf) ||
           !grow((void **)&d->rbuf, &d->rcap, 3 * nr, sizeof *d->rbuf);
    if (agree_failed(d, fail)) return;
    d->ghosts += (double)nr;
    d->nghosts = (int)nr;
    d->hs_total = (int)ns;
    d->hr_total = (int)nr;
    if (ns > 0 || nr > 0) { /* else no neighbour, or none near */
        /* each chunk's cursors: its neighbour's offset plus the chunks before it */
        for (int q = 0; q < K; ++q) {
            int as = d->hs_off[d->nbr[q]], ar = d->hr_off[d->nbr[q]];
            for (int c = 0; c < C; ++c) {
                int *cs = hcnt + (size_t)c * 2 * K, *cr = cs + K;
                const int ms = cs[q], mr = cr[q];
                cs[q] = as;
                cr[q] = ar;
                as += ms;
                ar += mr;
            }
        }
        int *hs_idx = d->hs_idx, *hr_idx = d->hr_idx;
#pragma omp parallel for schedule(static, 1) num_threads(C)
        for (int c = 0; c < C; ++c) {
            int *cs = hcnt + (size_t)c * 2 * K, *cr = cs + K;
            cell_cache tc;
            tc.valid = 0;
            const int i1 = (int)((int64_t)n * (c + 1) / C);
            for (int i = (int)((int64_t)n * c / C); i < i1; ++i) {
                const cell_cache *ci = cell_info(d, &tc, cell[i], !ghost[i]);
                if (ghost[i]) {
                    hr_idx[cr[nslot[ci->owner]]++] = i;
                    continue;
                }
                for (int k = 0; k < ci->nt; ++k) hs_idx[cs[nslot[ci->t[k]]]++] = i;
            }
        }
    }
    /* GPU: the two lists to the device, which then packs and unpacks the halo's entries only */
    d->halo_at = 0;
    if (d->gpu && d->w->backend->set_rows_index) {
        const pbf_backend_ops *be = d->w->backend;
        const int bad = be->set_rows_index(w, 0, d->hs_idx, (int)ns, NULL) != PBF_OK ||
                        be->set_rows_index(w, 1, d->hr_idx, (int)nr, NULL) != PBF_OK;
        d->device_bytes += 4.0 * (double)(ns + nr);
        d->halo_at = !agree_failed(d, bad);
    }
}

/* Copies rows `f` of the owners' particles over their ghosts on the other processes. The sender
 * lists its particles in memory order, the receiver its ghosts from that sender in memory order:
 * both are the global order, so the k-th word received is the k-th ghost's. */
static void halo_update(pbf_mpi_domain *d, const int *f, int nf) {
    pbf_world *w = d->w;
    const pbf_backend_ops *be = w->backend;
    int nreq = 0;
    /* GPU: the device packs the senders' rows straight into sbuf (in hs_idx order, as the host
     * would below) and unpacks rbuf into the ghosts; otherwise whole rows through the host */
    const int at = d->gpu && d->halo_at;
    if (at) {
        const int bad = be->read_rows_at(w, 0, f, nf, d->sbuf, NULL) != PBF_OK;
        d->device_bytes += 4.0 * nf * d->hs_total;
        if (agree_failed(d, bad)) return;
    } else if (!dev_rows(d, f, nf, 0)) {
        return;
    } else {
        /* every sender's entries at once: hs_idx and sbuf list them neighbour after neighbour
         * (hs_off); in parallel, each entry its own words */
        const int ns = d->hs_total;
        const int *idx = d->hs_idx;
        uint32_t *b = d->sbuf;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) if (ns > 4096)
        for (int k = 0; k < ns; ++k)
            for (int j = 0; j < nf; ++j) b[(size_t)k * nf + j] = ((const uint32_t *)w->field[f[j]])[idx[k]];
    }
    for (int k = 0; k < d->nnbr; ++k) {
        const int r = d->nbr[k];
        if (d->hr_n[r] > 0)
            MPI_Irecv(d->rbuf + (size_t)d->hr_off[r] * nf, d->hr_n[r] * nf, MPI_UINT32_T, r,
                      TAG_HALO, d->comm, &d->req[nreq++]);
    }
    for (int q = 0; q < d->nnbr; ++q) {
        const int r = d->nbr[q];
        if (d->hs_n[r] == 0) continue;
        uint32_t *b = d->sbuf + (size_t)d->hs_off[r] * nf;
        MPI_Isend(b, d->hs_n[r] * nf, MPI_UINT32_T, r, TAG_HALO, d->comm, &d->req[nreq++]);
        d->halo_bytes += 4.0 * nf * d->hs_n[r];
        d->messages += 1;
    }
    MPI_Waitall(nreq, d->req, MPI_STATUSES_IGNORE);
    if (at) {
        const int bad = be->write_rows_at(w, 1, f, nf, d->rbuf, NULL) != PBF_OK;
        d->device_bytes += 4.0 * nf * d->hr_total;
        agree_failed(d, bad);
        return;
    }
    /* every ghost at once (hr_idx and rbuf alike, neighbour after neighbour) */
    const int nr = d->hr_total;
    const int *idx = d->hr_idx;
    const uint32_t *b = d->rbuf;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) if (nr > 4096)
    for (int k = 0; k < nr; ++k)
        for (int j = 0; j < nf; ++j) ((uint32_t *)w->field[f[j]])[idx[k]] = b[(size_t)k * nf + j];
    dev_rows(d, f, nf, 1);
}

/* 1 if particle i is a ghost (after the grid stage): the speed-limit cuts are counted by owners. */
static int is_ghost(const pbf_world *w, int i, void *user) {
    const pbf_mpi_domain *d = user;
    (void)w;
    return d->ghosts_in && d->ghost[i];
}

/* The ghosts mask while this process holds ghosts, else NULL. */
static const unsigned char *ghosts_now(const pbf_world *w, void *user) {
    const pbf_mpi_domain *d = user;
    (void)w;
    return d->ghosts_in && d->nghosts != 0 ? d->ghost : NULL;
}

/* Drops the ghosts: keeps the owned particles in memory order. */
static void drop_ghosts(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count;
    if (d->ghosts_in && d->nghosts == 0) { /* nothing to drop */
        d->ghosts_in = 0;
        return;
    }
    if (!d->ghosts_in) { /* after a failed exchange: ownership from the cells */
        cell_cache cc;
        cc.valid = 0;
        int k = 0;
        for (int i = 0; i < n; ++i) {
            if (cell_info(d, &cc, w->cell[i], 0)->owner != d->rank) continue;
            if (k != i)
                for (int f = 0; f < PBF_FIELD_COUNT; ++f)
                    if (w->field[f]) ((uint32_t *)w->field[f])[k] = ((uint32_t *)w->field[f])[i];
            ++k;
        }
        w->count = k;
        return;
    }
    /* the runs of owned particles, moved down row by row, the rows in parallel */
    const unsigned char *ghost = d->ghost;
    int k = 0;
    for (int i = 0; i < n; ++i) k += !ghost[i];
#pragma omp parallel for schedule(dynamic, 1) num_threads(w->nthreads)
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        uint32_t *a = w->field[f];
        if (!a) continue;
        int to = 0;
        for (int i = 0; i < n;) {
            while (i < n && ghost[i]) ++i;
            int e = i;
            while (e < n && !ghost[e]) ++e;
            if (to != i) memmove(a + to, a + i, (size_t)(e - i) * sizeof *a);
            to += e - i;
            i = e;
        }
    }
    w->count = k;
    d->ghosts_in = 0;
}

/* The error of the solve the stage just measured (percent), over every process's owned
 * particles: the backend summed this process's owned particles (w->solve_sum, solve_count; the
 * ghosts left out). The same float terms as the single-process sum, added in another order:
 * equal to it within double rounding. Every process then stops an iterative solve after the same
 * iteration. PBF with a fixed iteration count: no stop reads the error and only the last
 * iteration's is kept (the statistics'), so only the last one is made global. */
static void global_solve_error(pbf_mpi_domain *d, pbf_stage_id stage) {
    pbf_world *w = d->w;
    if (stage == PBF_STAGE_LAMBDA && !(w->def.pbf.tolerance > 0.0f) &&
        ++d->lambdas < w->def.pbf.solver_iterations)
        return;
    double v[2] = {w->solve_sum, w->solve_count};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, d->comm);
    w->solve_error = v[1] > 0.0 ? 100.0 * v[0] / v[1] : 0.0;
}

/* The rows live on a GPU backend at the end of a step's last stage (roles as gpu_steps.h leaves
 * them): the state and the cell keys, which the next step's migration reads; its first stage
 * (predict, gravity) reads x and v and writes x*; plus the warm starts' rows and PBF's carried
 * lambda (end_step_drop). */
static const int live_rows[] = {PBF_F_PX, PBF_F_PY, PBF_F_PZ, PBF_F_VX, PBF_F_VY,
                                PBF_F_VZ, PBF_F_DENSITY, PBF_F_ID, PBF_F_CELL};
#define NLIVE ((int)(sizeof live_rows / sizeof live_rows[0]))

/* The end of a step: the ghosts dropped, on the host; on a GPU backend through a round trip of
 * the live rows (local: also after a failure, when no process exchanges any more). */
static void end_step_drop(pbf_mpi_domain *d) {
    const pbf_backend_ops *be = d->w->backend;
    if (d->ghosts_in && d->nghosts == 0) { /* nothing to drop, nothing to move */
        d->ghosts_in = 0;
        return;
    }
    /* the live rows, the warm starts' rows where the solver keeps them (IISPH, DFSPH: read next
     * step) and PBF's lambda when its warm start carries it to the next step */
    int rows[NLIVE + 3], nrows = NLIVE;
    memcpy(rows, live_rows, sizeof live_rows);
    if (pbf_field_in_solver(PBF_F_WARM, &d->w->def)) rows[nrows++] = PBF_F_WARM;
    if (pbf_field_in_solver(PBF_F_WARM_V, &d->w->def)) rows[nrows++] = PBF_F_WARM_V;
    if (pbf_lambda_carried(d->w)) rows[nrows++] = PBF_F_LAMBDA;
    if (d->gpu && d->ghosts_in && be->merge_rows) {
        /* on the device: the owned particles' indices go there (d->part is free until the next
         * migration), the rows are compacted in place */
        pbf_world *w = d->w;
        const int n = w->count;
        int k = 0;
        if (grow((void **)&d->part, &d->part_cap, (size_t)n + 1, sizeof *d->part)) {
            /* the host's keys (read by the grid stage) are compacted alike: a checkpoint
             * written between steps reads them (the state rows it downloads) */
            uint32_t *key = w->field[PBF_F_CELL];
            for (int i = 0; i < n; ++i)
                if (!d->ghost[i]) {
                    key[k] = key[i];
                    d->part[k++] = i;
                }
            if (be->merge_rows(w, rows, nrows, d->part, k, NULL, 0, NULL) != PBF_OK)
                d->failed = 1;
            d->device_bytes += 4.0 * k;
            w->count = k;
            d->ghosts_in = 0;
            return;
        }
    }
    if (d->gpu && be->read_rows(d->w, rows, nrows, NULL) != PBF_OK) d->failed = 1;
    if (d->gpu) d->device_bytes += 4.0 * nrows * d->w->count;
    drop_ghosts(d);
    if (d->gpu && be->write_rows(d->w, rows, nrows, NULL) != PBF_OK) d->failed = 1;
    if (d->gpu) d->device_bytes += 4.0 * nrows * d->w->count;
}

static void stage_hook(pbf_world *w, pbf_stage_id stage, pbf_mpi_domain *d);

static void after_stage(pbf_world *w, pbf_stage_id stage, void *user) {
    pbf_mpi_domain *d = user;
    const double t0 = MPI_Wtime();
    stage_hook(w, stage, d);
    d->hook_seconds += MPI_Wtime() - t0;
}

static void stage_hook(pbf_world *w, pbf_stage_id stage, pbf_mpi_domain *d) {
    if (d->failed) { /* the same on every process (agree_failed): no more exchanges */
        if (stage == PBF_STAGE_VORTICITY_XSPH) end_step_drop(d); /* local */
        return;
    }
    /* What the ghosts' neighbours read next, where the stage computed it from neighbour sums
     * (a ghost's own sums are empty): per-particle stages give a ghost its owner's values. */
    static const int lambda[] = {PBF_F_LAMBDA}, q[] = {PBF_F_QX, PBF_F_QY, PBF_F_QZ},
                     v[] = {PBF_F_VX, PBF_F_VY, PBF_F_VZ}, curl[] = {PBF_F_DENSITY, PBF_F_LAMBDA};
    switch (stage) {
    case PBF_STAGE_PREDICT: /* PBF */
    case PBF_STAGE_GRAVITY: /* the SPH solvers */
        d->lambdas = 0;
        /* GPU: x, x*, v (PBF: after predict; SPH: x* = x), id and the keys, in their own roles */
        migrate(d);
        break;
    case PBF_STAGE_GRID:
        d->key_is_cell = 1; /* `cell` is now the cell of this sort */
        /* GPU: the grid stage brought the sorted cells to the host for ghost_mask (a process
         * without particles has none to read) */
        {
            static const int cell[] = {PBF_F_CELL};
            /* the cells (4 B) and the mask (1 B) per particle, by the grid stage or here */
            if (d->gpu) d->device_bytes += (d->ghosts_in ? 5.0 : 4.0) * w->count;
            const int bad = d->gpu && !d->ghosts_in &&
                            w->backend->read_rows(w, cell, 1, NULL) != PBF_OK;
            if (d->gpu && agree_failed(d, bad)) break; /* on every process: collective */
        }
        halo_lists(d);
        break;
    case PBF_STAGE_LAMBDA:          /* PBF: delta p reads lambda_j */
    case PBF_STAGE_WCSPH_PRESSURE:  /* the pressure acceleration reads k_j (lambda) */
    case PBF_STAGE_DIVERGENCE:      /* DFSPH */
    case PBF_STAGE_DENSITY_ADV:     /* DFSPH */
    case PBF_STAGE_PCISPH_PRESSURE: /* the increment of k */
    case PBF_STAGE_IISPH_PRESSURE:  /* the increment of k */
        if (d->gpu) d->device_bytes += 4.0 * w->count; /* the measured row (gpu_steps.h) */
        global_solve_error(d, stage);
        halo_update(d, lambda, 1);
        break;
    case PBF_STAGE_DFSPH_WARM_V: /* the warm starts' k_j, which the pressure acceleration reads */
    case PBF_STAGE_DFSPH_WARM: halo_update(d, lambda, 1); break;
    case PBF_STAGE_IISPH_DIAGONAL:
        if (pbf_warm_start(&w->def) > 0.0f) halo_update(d, lambda, 1);
        break;
    case PBF_STAGE_PRESSURE_ACCEL: halo_update(d, v, 3); break; /* the next measure reads v_j */
    case PBF_STAGE_COLLIDE: halo_update(d, q, 3); break;        /* lambda, velocity read x*_j */
    case PBF_STAGE_VELOCITY: /* XSPH: rho_j; eta: |omega_j| */
        if (pbf_lambda_carried(w) && w->def.vorticity > 0.0f) {
            /* PBF's warm start keeps lambda: the CPU's post pass takes |omega_j| from omega_j,
             * which the curl pass left in x (cpu.c, stage_vorticity_xsph); a GPU's from lambda
             * (gpu_steps.h) */
            static const int curl_warm[] = {PBF_F_DENSITY, PBF_F_LAMBDA, PBF_F_PX, PBF_F_PY,
                                            PBF_F_PZ};
            halo_update(d, curl_warm, 5);
        } else {
            halo_update(d, curl, 2);
        }
        break;
    case PBF_STAGE_VORTICITY_XSPH:
        end_step_drop(d);
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
    int **ints[] = {&d->lo, &d->hist, &d->leaf, &d->boxes, &d->nbr, &d->part, &d->slot,
                    &d->active, &d->next, &d->bbox, &d->scount, &d->sdispl, &d->rcount,
                    &d->rdispl, &d->cursor, &d->wcount, &d->wdispl, &d->wrcount, &d->wrdispl,
                    &d->hs_n, &d->hs_off, &d->hr_n, &d->hr_off, &d->hs_idx, &d->hr_idx,
                    &d->sidx, &d->stay, &d->msrc, &d->nslot, &d->hcnt};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i) free(*ints[i]);
    free(d->tree);
    free(d->bhist);
    free(d->pcell);
    free(d->ghost);
    free(d->sbuf);
    free(d->rbuf);
    free(d->req);
    for (int j = 0; j < STATE_WORDS; ++j) free(d->garr[j]);
    free(d);
}

/* The domain over the world `w` of every process: the same world on every process (parts = 0),
 * or each process's part of the state with its keys (parts = 1; see pbf_mpi_domain_create_parts). */
static pbf_status create_domain(pbf_world *w, MPI_Comm comm, const pbf_mpi_options *options,
                                int parts, const uint32_t *key, int key_is_cell,
                                pbf_mpi_domain **out, pbf_error *err) {
    if (!w || !out || (parts && !key && w->count > 0)) {
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
    const int gpu = w->backend != &pbf_backend_cpu;
    int kinds[2] = {gpu, -gpu}; /* every process on a GPU backend, or none (the hooks' exchanges
                                   with the device are collective on GPU backends only) */
    MPI_Allreduce(MPI_IN_PLACE, kinds, 2, MPI_INT, MPI_MAX, comm);
    int bad[4] = {(gpu && (!w->backend->read_rows || !w->backend->write_rows)) ||
                      kinds[0] != -kinds[1],
                  w->hooks != NULL, 0,
                  o.decomposition != PBF_MPI_SLABS && o.decomposition != PBF_MPI_BISECTION};
    int cmin = w->count, cmax = w->count;
    MPI_Allreduce(MPI_IN_PLACE, &cmin, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &cmax, 1, MPI_INT, MPI_MAX, comm);
    if (parts) cmin = cmax; /* each process holds its own part */
    pbf_mpi_domain *d = calloc(1, sizeof *d);
    /* a GPU backend: the state on the host, and a host array for every row the hooks move */
    if (d && gpu && !bad[0]) {
        pbf_sync_host(w);
        if (w->host_stale || pbf_world_host_rows(w, NULL) != PBF_OK) bad[2] = 1;
    }
    if (d) {
        d->w = w;
        d->gpu = gpu;
        d->comm = comm;
        d->rank = rank;
        d->size = size;
        d->imbalance = o.imbalance;
        d->kind = o.decomposition;
        d->axis = o.axis;
        if (d->axis < 0 || d->axis > 2) { /* the container's longest axis */
            d->axis = 0;
            for (int a = 1; a < 3; ++a)
                if (w->hi[a] - w->lo[a] > w->hi[d->axis] - w->lo[d->axis]) d->axis = a;
        }
        for (int a = 0; a < 3; ++a) d->dim[a] = w->grid.dim[a];
        const size_t P = (size_t)size, L = (size_t)d->dim[d->axis];
        d->lo = calloc(P + 1, sizeof(int));
        d->hist = calloc(L, sizeof(int));
        d->tree = calloc(2 * P, sizeof *d->tree);
        d->boxes = calloc(6 * P, sizeof(int));
        d->bbox = calloc(6 * P, sizeof(int));
        int **per_rank[] = {&d->scount, &d->sdispl, &d->rcount, &d->rdispl, &d->cursor,
                            &d->wcount, &d->wdispl, &d->wrcount, &d->wrdispl, &d->hs_n,
                            &d->hs_off, &d->hr_n, &d->hr_off, &d->leaf, &d->nbr, &d->active,
                            &d->nslot};
        int **two_per_rank[] = {&d->slot, &d->next};
        int ok = d->lo && d->hist && d->tree && d->boxes && d->bbox;
        for (size_t i = 0; i < sizeof per_rank / sizeof per_rank[0]; ++i) {
            *per_rank[i] = calloc(P + 1, sizeof(int));
            ok = ok && *per_rank[i];
        }
        for (size_t i = 0; i < sizeof two_per_rank / sizeof two_per_rank[0]; ++i) {
            *two_per_rank[i] = calloc(2 * P + 1, sizeof(int));
            ok = ok && *two_per_rank[i];
        }
        d->req = calloc(2 * P, sizeof *d->req);
        ok = ok && d->req &&
             grow((void **)&d->pcell, &d->pcell_cap, (size_t)w->count + 1, sizeof *d->pcell);
        if (ok && w->capacity < 1) ok = pbf_world_reserve(w, 64, NULL) == PBF_OK;
        bad[2] = bad[2] || !ok;
        /* parts: keys that are cells must be cells of the grid, in ascending order */
        const uint32_t ncells = (uint32_t)d->dim[0] * (uint32_t)d->dim[1] * (uint32_t)d->dim[2];
        for (int i = 0; parts && i < w->count && !bad[3]; ++i)
            bad[3] = (key_is_cell && key[i] >= ncells) || (i > 0 && key[i] < key[i - 1]);
    } else {
        bad[2] = 1;
    }
    MPI_Allreduce(MPI_IN_PLACE, bad, 4, MPI_INT, MPI_MAX, comm);
    if (bad[0] || bad[1] || bad[2] || bad[3] || cmin != cmax) {
        if (bad[3] && o.decomposition != PBF_MPI_SLABS && o.decomposition != PBF_MPI_BISECTION)
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "pbf_mpi_domain_create: decomposition %d is neither slabs nor bisection",
                          (int)o.decomposition);
        else if (bad[3])
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "pbf_mpi_domain_create_parts: keys out of order%s on a process",
                          key_is_cell ? " or outside the grid" : "");
        else if (bad[0])
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "device = \"%s\": a run over MPI processes needs a backend that "
                          "moves rows between the device and the host, the same kind (cpu or "
                          "GPU) on every process",
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
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        if (!pbf_field_in_solver(f, &w->def)) continue; /* no array of it */
        if (pbf_fields[f].flags & PBF_FIELD_SORTED) {
            if (f == PBF_F_CELL) d->key_word = d->nfields;
            d->fields[d->nfields++] = f;
        }
        if (pbf_fields[f].flags & (PBF_FIELD_SORTED | PBF_FIELD_STATE)) {
            if (f == PBF_F_CELL) d->key_cword = d->ncfields;
            d->cfields[d->ncfields++] = f;
        }
    }
    const int n = w->count;
    if (parts) {
        /* the owner of each particle: the cell of its key (every particle of a cell then
         * reaches the same process, from one source, in order), or of its position (keys that
         * are places in the memory order are unique); the decomposition over every process */
        for (int i = 0; i < n; ++i) {
            d->pcell[i] = key_is_cell ? key[i] : pbf_grid_cell_of(&w->grid, w->px[i], w->py[i], w->pz[i]);
            w->cell[i] = key[i];
        }
        d->key_is_cell = key_is_cell;
        if (agree_failed(d, !decompose(d, d->pcell, n, 1)) ||
            (exchange(d, 0, d->cfields, d->ncfields, d->key_cword, 0), d->failed)) {
            pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "pbf_mpi_domain_create: out of memory on a process");
            pbf_mpi_domain_destroy(d);
            return PBF_ERR_OUT_OF_MEMORY;
        }
        d->migrated_bytes = d->messages = 0.0; /* the run's traffic only */
    } else {
        /* the decomposition, from every particle's cell (each process holds all of them now, so
         * each computes the same one without communicating) */
        for (int i = 0; i < n; ++i) d->pcell[i] = pbf_grid_cell_of(&w->grid, w->px[i], w->py[i], w->pz[i]);
        if (agree_failed(d, !decompose(d, d->pcell, n, 0))) {
            pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "pbf_mpi_domain_create: out of memory on a process");
            pbf_mpi_domain_destroy(d);
            return PBF_ERR_OUT_OF_MEMORY;
        }
        /* keep this process's particles; the key is the index in the common world */
        int k = 0;
        for (int i = 0; i < n; ++i) {
            if (owner_of_cell(d, d->pcell[i]) != rank) continue;
            for (int f = 0; f < PBF_FIELD_COUNT; ++f)
                if (w->field[f]) ((uint32_t *)w->field[f])[k] = ((uint32_t *)w->field[f])[i];
            w->cell[k] = (uint32_t)i;
            ++k;
        }
        w->count = k;
    }
    /* GPU: this process's part (every SORTED and STATE row, the keys in `cell`) to the device */
    const int up = d->gpu && w->backend->write_rows(w, d->cfields, d->ncfields, NULL) != PBF_OK;
    if (agree_failed(d, up)) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "pbf_mpi_domain_create: device = \"%s\": copying the particles to the "
                      "device failed on a process",
                      w->def.device);
        pbf_mpi_domain_destroy(d);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    d->hooks.after_stage = after_stage;
    d->hooks.reduce_stats = reduce_stats;
    d->hooks.is_ghost = is_ghost;
    d->hooks.ghosts = ghosts_now;
    d->hooks.ghost_mask = ghost_mask;
    d->hooks.user = d;
    w->hooks = &d->hooks;
    pbf_update_stats(w); /* collective: the global statistics and the counts per process */
    *out = d;
    return PBF_OK;
}

pbf_status pbf_mpi_domain_create(pbf_world *w, MPI_Comm comm, const pbf_mpi_options *options,
                                 pbf_mpi_domain **out, pbf_error *err) {
    return create_domain(w, comm, options, 0, NULL, 0, out, err);
}

pbf_status pbf_mpi_domain_create_parts(pbf_world *w, MPI_Comm comm,
                                       const pbf_mpi_options *options, const uint32_t *key,
                                       int key_is_cell, pbf_mpi_domain **out, pbf_error *err) {
    return create_domain(w, comm, options, 1, key, key_is_cell, out, err);
}

/* ---- gather, pieces, diagnosis, info ------------------------------------------------------- */

pbf_mpi_piece pbf_mpi_domain_piece(const pbf_mpi_domain *d) {
    pbf_mpi_piece p;
    memset(&p, 0, sizeof p);
    p.state = pbf_world_snapshot(d->w);
    p.key = d->w->cell;
    p.key_is_cell = d->key_is_cell;
    return p;
}

pbf_status pbf_mpi_gather(pbf_mpi_domain *d, int root, pbf_snapshot *out, pbf_error *err) {
    memset(out, 0, sizeof *out);
    pbf_world *w = d->w;
    pbf_sync_host(w); /* a GPU backend's state (its keys are on the host already) */
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
    int ncheck = (int)(sizeof checks / sizeof checks[0]);
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
    long long iv[4] = {-1, -1, g.index, (long long)g.id};
    for (int c = 0; c < ncheck; ++c)
        if (g.check && strcmp(g.check, checks[c]) == 0) iv[0] = c;
    for (int s = 0; s < PBF_STAGE_COUNT; ++s) /* every method's stages */
        if (g.stage && strcmp(g.stage, pbf_stage_name((pbf_stage_id)s)) == 0) iv[1] = s;
    double dv[4] = {g.position.x, g.position.y, g.position.z, g.value};
    MPI_Bcast(iv, 4, MPI_LONG_LONG, first, d->comm);
    MPI_Bcast(dv, 4, MPI_DOUBLE, first, d->comm);
    memset(&g, 0, sizeof g);
    g.ok = 0;
    g.check = iv[0] >= 0 ? checks[iv[0]] : NULL;
    g.stage = iv[1] >= 0 ? pbf_stage_name((pbf_stage_id)iv[1]) : NULL;
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
    i.decomposition = d->kind;
    i.axis = d->kind == PBF_MPI_SLABS ? d->axis : -1;
    i.rank_particles_min = d->count_min;
    i.rank_particles_max = d->count_max;
    for (int a = 0; a < 3; ++a) {
        i.box_lo[a] = d->boxes[6 * d->rank + a];
        i.box_hi[a] = d->boxes[6 * d->rank + 3 + a];
    }
    i.neighbours = d->nnbr;
    i.rebalances = d->rebalances;
    i.migrated_bytes = d->migrated_bytes;
    i.halo_bytes = d->halo_bytes;
    i.ghosts = d->ghosts;
    i.messages = d->messages;
    i.steps = d->steps;
    i.device_bytes = d->device_bytes;
    i.hook_seconds = d->hook_seconds;
    i.capacity = d->w ? d->w->capacity : 0;
    i.built_particles = d->built;
    return i;
}

/* ---- a world built in parts ------------------------------------------------------------- */

/* The grid cell coordinate along `axis` of lattice layer `i` of block b (pbf_grid_cell_of on a
 * site of that layer: the same float arithmetic as the grid stage). */
static int layer_cell(const pbf_world *w, const pbf_fluid_block *b, int axis, int64_t i) {
    const float d = w->spacing;
    float p[3] = {b->min.x + 0.5f * d, b->min.y + 0.5f * d, b->min.z + 0.5f * d};
    const float mn[3] = {b->min.x, b->min.y, b->min.z};
    p[axis] = mn[axis] + ((float)i + 0.5f) * d;
    int x[3];
    cell_coords(w->grid.dim, pbf_grid_cell_of(&w->grid, p[0], p[1], p[2]), x);
    return x[axis];
}

/* The block's sites whose cell along `axis` lies in [c0, c1), appended in the block's lattice
 * order (rows of consecutive sites), ids from `id0` (the block's first particle's id); or only
 * counted (w NULL). The layers of a cell range are consecutive: the cell grows with the layer. */
static int64_t append_planes(pbf_world *w, const pbf_world *ref, const pbf_fluid_block *b,
                             int axis, int c0, int c1, uint32_t id0) {
    int64_t ax[3];
    pbf_fluid_block_axes(ref, b, ax);
    int64_t lo = 0, hi = ax[axis]; /* the layers [lo, hi) along axis in [c0, c1) */
    while (lo < ax[axis] && layer_cell(ref, b, axis, lo) < c0) ++lo;
    hi = lo;
    while (hi < ax[axis] && layer_cell(ref, b, axis, hi) < c1) ++hi;
    if (hi <= lo) return 0;
    int64_t r0[3] = {0, 0, 0}, r1[3] = {ax[0], ax[1], ax[2]};
    r0[axis] = lo;
    r1[axis] = hi;
    const int64_t count = (r1[0] - r0[0]) * (r1[1] - r0[1]) * (r1[2] - r0[2]);
    if (!w) return count;
    for (int64_t iz = r0[2]; iz < r1[2]; ++iz)
        for (int64_t iy = r0[1]; iy < r1[1]; ++iy) {
            const int64_t first = (iz * ax[1] + iy) * ax[0] + r0[0];
            pbf_world_append_lattice(w, b, first, r1[0] - r0[0], id0 + (uint32_t)first);
        }
    return count;
}

pbf_status pbf_mpi_domain_create_blocks(pbf_world *w, MPI_Comm comm,
                                        const pbf_mpi_options *options,
                                        const pbf_fluid_block *blocks, int nblocks,
                                        pbf_mpi_domain **out, pbf_error *err) {
    if (!w || !out || nblocks < 0 || (nblocks > 0 && !blocks)) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_mpi_domain_create_blocks: NULL argument");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* the same checks on every process (the same world definition and blocks): the same answer */
    pbf_status st = PBF_OK;
    int64_t *first = calloc((size_t)nblocks + 1, sizeof *first); /* each block's first id */
    if (!first) st = PBF_ERR_OUT_OF_MEMORY;
    if (st == PBF_OK && w->count != 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "pbf_mpi_domain_create_blocks: the world already holds %d particles",
                      w->count);
        st = PBF_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; st == PBF_OK && i < nblocks; ++i) {
        int64_t n = 0;
        pbf_error e;
        memset(&e, 0, sizeof e);
        st = pbf_fluid_block_check(w, &blocks[i], &n, &e);
        if (st != PBF_OK) {
            pbf_set_error(err, st, "fluid[%d]: %s", i, e.message);
        } else if (n > (int64_t)INT32_MAX - first[i]) {
            pbf_set_error(err, PBF_ERR_LIMIT,
                          "fluid[%d]: %lld particles in all would exceed the limit of %d "
                          "particles",
                          i, (long long)(first[i] + n), INT32_MAX);
            st = PBF_ERR_LIMIT;
        }
        first[i + 1] = first[i] + n;
    }
    const int64_t total = first[nblocks];
    if (st == PBF_OK && w->def.max_particles > 0 && total > w->def.max_particles) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "fluid block: %lld particles in all exceed max_particles = %d",
                      (long long)total, w->def.max_particles);
        st = PBF_ERR_LIMIT;
    }
    /* This process's part: the particles of a slab of grid cells along the grid's longest axis
     * (cells [c0, c1), chosen from the particles per cell plane so that the parts hold about as
     * many), and in a CPU world of its own that slab with the planes c0 - 1 and c1 beside it:
     * every particle of the 27 cells around each of the part's, in the order (cells, and the
     * blocks' lattice order within a cell) of the whole world, so the part's densities are the
     * whole world's bit for bit. */
    int axis = 0;
    for (int a = 1; a < 3; ++a)
        if (w->grid.dim[a] > w->grid.dim[axis]) axis = a;
    const int planes = w->grid.dim[axis];
    int64_t *per_plane = st == PBF_OK ? calloc((size_t)planes + 1, sizeof *per_plane) : NULL;
    if (st == PBF_OK && !per_plane) st = PBF_ERR_OUT_OF_MEMORY;
    int c0 = 0, c1 = 0;
    if (st == PBF_OK) {
        for (int i = 0; i < nblocks; ++i) {
            int64_t ax[3];
            pbf_fluid_block_axes(w, &blocks[i], ax);
            const int64_t across = ax[(axis + 1) % 3] * ax[(axis + 2) % 3];
            for (int64_t l = 0; l < ax[axis]; ++l)
                per_plane[layer_cell(w, &blocks[i], axis, l)] += across;
        }
        /* process r: planes [c0, c1), c0 the first plane before which total * r / size
         * particles lie, c1 the same for r + 1: the parts cover every plane once */
        const int64_t want0 = total * rank / size, want1 = total * (rank + 1) / size;
        int64_t acc = 0;
        c0 = c1 = -1;
        for (int c = 0; c <= planes; ++c) {
            if (c0 < 0 && acc >= want0) c0 = c;
            if (c1 < 0 && acc >= want1) c1 = c;
            if (c < planes) acc += per_plane[c];
        }
        if (rank == size - 1) c1 = planes;
    }
    free(per_plane);
    pbf_world *tmp = NULL;
    int64_t own = 0, built = 0;
    float *rows[8] = {0};
    uint32_t *key = NULL;
    if (st == PBF_OK) {
        int64_t with = 0;
        for (int i = 0; i < nblocks; ++i) {
            own += append_planes(NULL, w, &blocks[i], axis, c0, c1, 0);
            with += c1 > c0 ? append_planes(NULL, w, &blocks[i], axis, c0 - 1, c1 + 1, 0) : 0;
        }
        for (int j = 0; j < 8; ++j) {
            rows[j] = malloc(((size_t)own + 1) * sizeof(float));
            if (!rows[j]) st = PBF_ERR_OUT_OF_MEMORY;
        }
        key = malloc(((size_t)own + 1) * sizeof *key);
        if (!key) st = PBF_ERR_OUT_OF_MEMORY;
        pbf_world_def def = w->def;
        snprintf(def.device, sizeof def.device, "cpu");
        def.max_particles = 0;
        pbf_error e;
        memset(&e, 0, sizeof e);
        if (st == PBF_OK && with > 0) {
            st = pbf_world_create(&def, &tmp, &e);
            for (int b = 0; st == PBF_OK && b < w->nboxes; ++b)
                st = pbf_world_add_box(tmp, &w->boxes[b].def, &e);
            if (st == PBF_OK) st = pbf_world_reserve(tmp, (int)with, &e);
            built = with;
            if (st != PBF_OK) pbf_set_error(err, st, "%s", e.message);
        }
        if (st == PBF_OK && tmp) {
            for (int i = 0; i < nblocks; ++i)
                append_planes(tmp, w, &blocks[i], axis, c0 - 1, c1 + 1, (uint32_t)first[i]);
            pbf_refresh(tmp); /* sorted by cell; the densities */
            /* the part: its particles in the sorted order, each one's cell its key */
            int64_t k = 0;
            for (int i = 0; i < tmp->count; ++i) {
                const uint32_t c = pbf_grid_cell_of(&tmp->grid, tmp->px[i], tmp->py[i], tmp->pz[i]);
                int x[3];
                cell_coords(tmp->grid.dim, c, x);
                if (x[axis] < c0 || x[axis] >= c1 || k >= own) continue;
                const float *src[7] = {tmp->px, tmp->py, tmp->pz, tmp->vx, tmp->vy, tmp->vz,
                                       tmp->density};
                for (int j = 0; j < 7; ++j) rows[j][k] = src[j][i];
                ((uint32_t *)rows[7])[k] = tmp->id[i];
                key[k++] = c;
            }
            if (k != own) {
                pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                              "pbf_mpi_domain_create_blocks: %lld particles in cells [%d, %d) "
                              "along %c, %lld expected",
                              (long long)k, c0, c1, "xyz"[axis], (long long)own);
                st = PBF_ERR_INVALID_ARGUMENT;
            }
        }
        pbf_world_destroy(tmp);
    }
    if (st == PBF_OK) {
        pbf_snapshot s;
        memset(&s, 0, sizeof s);
        s.count = (int)own;
        const float **dst[] = {&s.x, &s.y, &s.z, &s.vx, &s.vy, &s.vz, &s.density};
        for (int j = 0; j < 7; ++j) *dst[j] = rows[j];
        s.id = (const uint32_t *)rows[7];
        st = pbf_world_restore(w, &s, err);
    }
    if (st == PBF_ERR_OUT_OF_MEMORY)
        pbf_set_error(err, st, "pbf_mpi_domain_create_blocks: out of memory on a process");
    for (int j = 0; j < 8; ++j) free(rows[j]);
    free(first);
    /* agreed: every process goes on to the collective creation, or none */
    int bad = st != PBF_OK;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    if (bad) {
        free(key);
        if (st == PBF_OK) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "pbf_mpi_domain_create_blocks: building the world failed on another "
                          "process");
            st = PBF_ERR_INVALID_ARGUMENT;
        }
        return st;
    }
    st = create_domain(w, comm, options, 1, key, 1, out, err);
    if (st == PBF_OK) (*out)->built = (int)built;
    free(key);
    return st;
}
