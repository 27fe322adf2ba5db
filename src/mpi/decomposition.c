/*
 * The decomposition of the grid's cells into one box per process (domain_internal.h): recursive
 * coordinate bisection or slabs, the tree of cuts, the neighbours, rebalancing.
 */
#include "domain_internal.h"

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
    int fail = !pbf_dom_grow((void **)&d->part, &d->part_cap, (size_t)n + 1, sizeof *d->part);
    if (global ? pbf_dom_agree_failed(d, fail) : fail) return 0;
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
            fail = total > INT_MAX ||
                   !pbf_dom_grow((void **)&d->bhist, &d->bhist_cap, total + 1, sizeof *d->bhist);
            if (global ? pbf_dom_agree_failed(d, fail) : fail) return 0;
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
int pbf_dom_decompose(pbf_mpi_domain *d, const uint32_t *pc, int n, int global) {
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
void pbf_dom_maybe_rebalance(pbf_mpi_domain *d, int n) {
    if (d->imbalance <= 0.0 || d->size < 2) return;
    /* counts of the end of the last step, the same on every process (reduce_stats) */
    double mean = (double)d->w->stats.particles / d->size;
    if (!((double)d->count_max > (1.0 + d->imbalance) * mean)) return;
    const size_t nb = (size_t)6 * (size_t)d->size;
    int *old = malloc(nb * sizeof *old);
    if (pbf_dom_agree_failed(d, !old)) return;
    memcpy(old, d->boxes, nb * sizeof *old);
    if (pbf_dom_decompose(d, d->pcell, n, 1) && memcmp(old, d->boxes, nb * sizeof *old) != 0)
        d->rebalances += 1;
    free(old);
}
