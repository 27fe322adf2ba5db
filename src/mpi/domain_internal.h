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
 *
 * The files (this header holds what they share):
 *   domain.c         options, the domain's lifetime (create, destroy), the statistics and solve
 *                    errors summed over processes, gather, pieces, diagnosis, info
 *   decomposition.c  the boxes: recursive coordinate bisection, slabs, rebalancing
 *   exchange.c       migration: every particle to its owner, and the ghost copies, after predict
 *   halo.c           the ghosts: their mask after the sort, the halo lists, halo updates, their
 *                    removal at the end of a step
 *   stage_hooks.c    the hook after each stage: which rows each stage's halo update sends
 *   blocks.c         a world built in parts (pbf_mpi_domain_create_blocks)
 */
#ifndef PBF_MPI_DOMAIN_INTERNAL_H
#define PBF_MPI_DOMAIN_INTERNAL_H

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
    int measured[3];   /* measuring stages of each solve (PBF_SOLVE_*) in this substep so far */
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

/* ---- cells, boxes, owners ------------------------------------------------------------------ */

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
static inline int border_targets(const pbf_mpi_domain *d, const int x[3], int o,
                                 int t[MAX_TARGETS]) {
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

static inline int ghost_targets(const pbf_mpi_domain *d, const int x[3], int o,
                                int t[MAX_TARGETS]) {
    return interior(d, x, o) ? 0 : border_targets(d, x, o, t);
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

/* ---- shared between the files ------------------------------------------------------------- */

/* domain.c */
int pbf_dom_grow(void **p, size_t *cap, size_t n, size_t size);
int pbf_dom_agree_failed(pbf_mpi_domain *d, int fail);
int pbf_dom_dev_rows(pbf_mpi_domain *d, const int *rows, int nrows, int to_device);
void pbf_dom_global_solve_error(pbf_mpi_domain *d, const pbf_stage_desc *stage);
pbf_status pbf_dom_create(pbf_world *w, MPI_Comm comm, const pbf_mpi_options *options, int parts,
                          const uint32_t *key, int key_is_cell, pbf_mpi_domain **out,
                          pbf_error *err);

/* decomposition.c */
int pbf_dom_decompose(pbf_mpi_domain *d, const uint32_t *pc, int n, int global);
void pbf_dom_maybe_rebalance(pbf_mpi_domain *d, int n);

/* exchange.c */
void pbf_dom_exchange(pbf_mpi_domain *d, int ghosts, const int *fld, int nf, int key_word,
                      int dev);
void pbf_dom_migrate(pbf_mpi_domain *d);

/* halo.c */
const unsigned char *pbf_dom_ghost_mask(pbf_world *w, void *user);
void pbf_dom_halo_lists(pbf_mpi_domain *d);
void pbf_dom_halo_update(pbf_mpi_domain *d, const int *f, int nf);
int pbf_dom_is_ghost(const pbf_world *w, int i, void *user);
const unsigned char *pbf_dom_ghosts_now(const pbf_world *w, void *user);
void pbf_dom_end_step_drop(pbf_mpi_domain *d);

/* stage_hooks.c */
void pbf_dom_after_stage(pbf_world *w, const pbf_stage_desc *stage, void *user);

#endif
