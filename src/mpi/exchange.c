/*
 * Migration (domain_internal.h): after predict every particle goes to the owner of its cell and,
 * as a ghost, to the processes whose boxes touch that cell; each process merges what it
 * receives by key.
 */
#include "domain_internal.h"

static inline void pack(const pbf_world *w, const int *fld, int nf, uint32_t *rec, int i) {
    for (int f = 0; f < nf; ++f) rec[f] = ((const uint32_t *)w->field[fld[f]])[i];
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

/* One exchange: its arguments and the counts its steps share. */
typedef struct xchg {
    pbf_mpi_domain *d;
    pbf_world *w;
    const int *fld;
    int ghosts, W, key_word, dev;
    int n, P, me;
    int nleave;    /* particles this process neither owns nor keeps as ghosts */
    int nstay;     /* particles that stay on this process */
    size_t stotal; /* particles sent (to other processes) */
    size_t rtotal; /* particles received */
    size_t total;  /* this process's particles after the exchange */
} xchg;

/* Where each particle goes (part[i]) and the counts per destination (scount). */
static void exchange_destinations(xchg *x) {
    pbf_mpi_domain *d = x->d;
    const int n = x->n, P = x->P, me = x->me, ghosts = x->ghosts;
    /* part[i]: the owner times 4, plus 2 when this process keeps the particle (it owns it or
     * needs it as a ghost), plus 1 when a process other than the owner needs it as a ghost */
    memset(d->scount, 0, (size_t)P * sizeof *d->scount);
    /* in parallel: each thread its own cache (integer counts: the same for any thread count) */
    int *scount = d->scount, *part = d->part, nleave = 0;
    const uint32_t *pcell = d->pcell;
#pragma omp parallel num_threads(x->w->nthreads)
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
    x->nleave = nleave;
}

/* The counts sent and received (MPI_Alltoall), their displacements, and room for them: the
 * buffers, the world's rows, the lists. 1 when out of memory (not yet agreed). */
static int exchange_sizes(xchg *x) {
    pbf_mpi_domain *d = x->d;
    pbf_world *w = x->w;
    const int n = x->n, P = x->P, W = x->W, me = x->me;
    x->nstay = d->scount[me];
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
    const size_t total =
        rtotal + (size_t)x->nstay; /* this process's particles after the exchange */
    x->stotal = stotal;
    x->rtotal = rtotal;
    x->total = total;
    int fail = stotal * (size_t)W > INT_MAX || rtotal * (size_t)W > INT_MAX || total > INT_MAX - 64;
    fail = fail ||
           !pbf_dom_grow((void **)&d->sbuf, &d->scap, stotal * (size_t)W, sizeof *d->sbuf) ||
           !pbf_dom_grow((void **)&d->rbuf, &d->rcap, rtotal * (size_t)W, sizeof *d->rbuf);
    if (!fail && (int)total > w->capacity) { /* (capacity: rows of that many particles) */
        int64_t want = (int64_t)total + (int64_t)total / 4 + 64;
        fail = want > INT_MAX || pbf_world_reserve(w, (int)want, NULL) != PBF_OK;
    }
    fail = fail || !pbf_dom_grow((void **)&d->sidx, &d->sidx_cap, stotal + 1, sizeof *d->sidx) ||
           (x->dev &&
            (!pbf_dom_grow((void **)&d->stay, &d->stay_cap, (size_t)n + 1, sizeof *d->stay) ||
             !pbf_dom_grow((void **)&d->msrc, &d->msrc_cap, total + 1, sizeof *d->msrc)));
    return fail;
}

/* The particles sent, packed into the send buffer. 0 when the device's gather failed (agreed). */
static int exchange_pack(xchg *x) {
    pbf_mpi_domain *d = x->d;
    pbf_world *w = x->w;
    const int n = x->n, P = x->P, W = x->W, me = x->me, ghosts = x->ghosts;
    const size_t stotal = x->stotal;
    const int *part = d->part, *fld = x->fld;
    const uint32_t *pcell = d->pcell;
    cell_cache cc;
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
    if (!x->dev) {
        const int *sidx = d->sidx;
        uint32_t *sbuf = d->sbuf;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) if (stotal > 4096)
        for (size_t q = 0; q < stotal; ++q) pack(w, fld, W, sbuf + q * W, sidx[q]);
    }
    if (x->dev) {
        const int bad = stotal > 0 && w->backend->gather_rows(w, fld, W, d->sidx, (int)stotal,
                                                              d->sbuf, NULL) != PBF_OK;
        d->device_bytes += 4.0 * (double)stotal * (W + 1);
        if (pbf_dom_agree_failed(d, bad)) return 0;
    }
    return 1;
}

/* The records to their destinations (MPI_Alltoallv), counted in the traffic. */
static void exchange_send(xchg *x) {
    pbf_mpi_domain *d = x->d;
    const int P = x->P, W = x->W, me = x->me;
    for (int r = 0; r < P; ++r) {
        d->wcount[r] = d->scount[r] * W;
        d->wdispl[r] = d->sdispl[r] * W;
        d->wrcount[r] = d->rcount[r] * W;
        d->wrdispl[r] = d->rdispl[r] * W;
    }
    if (P > 1)
        MPI_Alltoallv(d->sbuf, d->wcount, d->wdispl, MPI_UINT32_T, d->rbuf, d->wrcount,
                      d->wrdispl, MPI_UINT32_T, d->comm);
    d->migrated_bytes += 4.0 * (double)W * (double)x->stotal;
    for (int r = 0; r < P; ++r) d->messages += r != me && d->scount[r] > 0;
}

static void exchange_stayers(xchg *x) {
    pbf_mpi_domain *d = x->d;
    pbf_world *w = x->w;
    const int n = x->n, W = x->W, nleave = x->nleave, nstay = x->nstay;
    const size_t rtotal = x->rtotal;
    const int *part = d->part, *fld = x->fld;
    /* the particles that stay: compacted (in order), then moved to [rtotal, total) (dev: listed) */
    if (x->dev) {
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
}

/* The merge of the sources by key. Returns 1 when the only source is this process's stayers
 * (the merge loop did not run). */
static int exchange_merge(xchg *x) {
    pbf_mpi_domain *d = x->d;
    pbf_world *w = x->w;
    const int P = x->P, W = x->W, me = x->me, key_word = x->key_word, dev = x->dev;
    const int nstay = x->nstay;
    const size_t rtotal = x->rtotal, total = x->total;
    const int *fld = x->fld;
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
    return nsrc == 1 && src[0] == me;
}

/* dev: the merge's sources (msrc) applied on the device (merge_rows). 0 on failure (agreed). */
static int exchange_merge_device(xchg *x, int only_stayers) {
    pbf_mpi_domain *d = x->d;
    pbf_world *w = x->w;
    const size_t rtotal = x->rtotal, total = x->total;
    int bad = 0;
    if (total > 0 && (x->nleave > 0 || rtotal > 0)) { /* else the device's order stands */
        if (only_stayers) /* only stayers: the merge loop did not run */
            memcpy(d->msrc, d->stay, (size_t)x->nstay * sizeof *d->msrc);
        bad = w->backend->merge_rows(w, x->fld, x->W, d->msrc, (int)total, d->rbuf, (int)rtotal,
                                     NULL) != PBF_OK;
        d->device_bytes += 4.0 * ((double)total + (double)rtotal * x->W);
    }
    return !pbf_dom_agree_failed(d, bad); /* collective: every process */
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
void pbf_dom_exchange(pbf_mpi_domain *d, int ghosts, const int *fld, int nf, int key_word,
                      int dev) {
    pbf_world *w = d->w;
    xchg x;
    memset(&x, 0, sizeof x);
    x.d = d;
    x.w = w;
    x.fld = fld;
    x.ghosts = ghosts;
    x.W = nf;
    x.key_word = key_word;
    x.dev = dev;
    x.n = w->count;
    x.P = d->size;
    x.me = d->rank;
    int fail = !pbf_dom_grow((void **)&d->part, &d->part_cap, (size_t)x.n + 1, sizeof *d->part);
    if (d->failed || pbf_dom_agree_failed(d, fail)) return;
    exchange_destinations(&x);
    if (pbf_dom_agree_failed(d, exchange_sizes(&x))) return;
    if (!exchange_pack(&x)) return;
    exchange_send(&x);
    exchange_stayers(&x);
    const int only_stayers = exchange_merge(&x);
    if (dev && !exchange_merge_device(&x, only_stayers)) return;
    w->count = (int)x.total;
}

/* After predict: every particle to the owner of the cell of its predicted position (the boxes
 * moved first when the load is out of balance), and the ghosts. On a GPU backend that has
 * gather_rows and merge_rows only x* and the keys come to the host and the rows stay on the
 * device (exchange's dev); else every SORTED row makes the round trip. */
void pbf_dom_migrate(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const pbf_backend_ops *be = w->backend;
    const int dev = d->gpu && be->gather_rows && be->merge_rows;
    if (dev) {
        const int rows[4] = {PBF_F_QX, PBF_F_QY, PBF_F_QZ, d->fields[d->key_word]};
        if (!pbf_dom_dev_rows(d, rows, 4, 0)) return;
    } else if (!pbf_dom_dev_rows(d, d->fields, d->nfields, 0))
        return;
    const int n = w->count;
    int fail = !pbf_dom_grow((void **)&d->pcell, &d->pcell_cap, (size_t)n, sizeof *d->pcell);
    if (pbf_dom_agree_failed(d, fail)) return;
    uint32_t *pc = d->pcell;
    const float *qx = w->qx, *qy = w->qy, *qz = w->qz;
#pragma omp parallel for schedule(static) num_threads(w->nthreads)
    for (int i = 0; i < n; ++i) pc[i] = pbf_grid_cell_of(&w->grid, qx[i], qy[i], qz[i]);
    pbf_dom_maybe_rebalance(d, n);
    pbf_dom_exchange(d, 1, d->fields, d->nfields, d->key_word, dev);
    if (!dev && !d->failed) pbf_dom_dev_rows(d, d->fields, d->nfields, 1);
}
