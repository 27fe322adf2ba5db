/*
 * The ghosts (domain_internal.h): their mask after the grid stage's sort, the halo lists, the
 * halo updates that give them their owners' values, and their removal at the end of a step.
 */
#include "domain_internal.h"

/* ---- halos, after the sort ----------------------------------------------------------------- */

/* ghost[i] for the particles in the order of the grid stage's sort (their cell is w->cell[i]);
 * 0 when out of memory. */
static int mark_ghosts(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count;
    if (!pbf_dom_grow((void **)&d->ghost, &d->ghost_cap, (size_t)n + 1, sizeof *d->ghost)) return 0;
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
const unsigned char *pbf_dom_ghost_mask(pbf_world *w, void *user) {
    pbf_mpi_domain *d = user;
    (void)w;
    const double t0 = MPI_Wtime();
    d->ghosts_in = 0;
    const int ok = mark_ghosts(d);
    d->hook_seconds += MPI_Wtime() - t0;
    return ok ? d->ghost : NULL;
}

void pbf_dom_halo_lists(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count, P = d->size;
    d->halo_at = 0;
    memset(d->hs_n, 0, (size_t)P * sizeof *d->hs_n);
    memset(d->hr_n, 0, (size_t)P * sizeof *d->hr_n);
    /* per chunk of particles (one per thread) and neighbour: the entries sent and received */
    const int K = d->nnbr,
              C = w->nthreads < 1 + n / 256 ? (w->nthreads > 1 ? w->nthreads : 1) : 1 + n / 256;
    int fail = !d->ghosts_in && !mark_ghosts(d);
    fail = fail || !pbf_dom_grow((void **)&d->hcnt, &d->hcnt_cap, (size_t)C * 2 * (size_t)K + 1,
                                 sizeof *d->hcnt);
    if (pbf_dom_agree_failed(d, fail)) return;
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
    fail = !pbf_dom_grow((void **)&d->hs_idx, &d->hs_cap, ns, sizeof *d->hs_idx) ||
           !pbf_dom_grow((void **)&d->hr_idx, &d->hr_cap, nr, sizeof *d->hr_idx) ||
           !pbf_dom_grow((void **)&d->sbuf, &d->scap, 3 * ns, sizeof *d->sbuf) ||
           !pbf_dom_grow((void **)&d->rbuf, &d->rcap, 3 * nr, sizeof *d->rbuf);
    if (pbf_dom_agree_failed(d, fail)) return;
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
        d->halo_at = !pbf_dom_agree_failed(d, bad);
    }
}

/* Copies rows `f` of the owners' particles over their ghosts on the other processes. The sender
 * lists its particles in memory order, the receiver its ghosts from that sender in memory order:
 * both are the global order, so the k-th word received is the k-th ghost's. */
void pbf_dom_halo_update(pbf_mpi_domain *d, const int *f, int nf) {
    pbf_world *w = d->w;
    const pbf_backend_ops *be = w->backend;
    int nreq = 0;
    /* GPU: the device packs the senders' rows straight into sbuf (in hs_idx order, as the host
     * would below) and unpacks rbuf into the ghosts; otherwise whole rows through the host */
    const int at = d->gpu && d->halo_at;
    if (at) {
        const int bad = be->read_rows_at(w, 0, f, nf, d->sbuf, NULL) != PBF_OK;
        d->device_bytes += 4.0 * nf * d->hs_total;
        if (pbf_dom_agree_failed(d, bad)) return;
    } else if (!pbf_dom_dev_rows(d, f, nf, 0)) {
        return;
    } else {
        /* every sender's entries at once: hs_idx and sbuf list them neighbour after neighbour
         * (hs_off); in parallel, each entry its own words */
        const int ns = d->hs_total;
        const int *idx = d->hs_idx;
        uint32_t *b = d->sbuf;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) if (ns > 4096)
        for (int k = 0; k < ns; ++k)
            for (int j = 0; j < nf; ++j)
                b[(size_t)k * nf + j] = ((const uint32_t *)w->field[f[j]])[idx[k]];
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
        pbf_dom_agree_failed(d, bad);
        return;
    }
    /* every ghost at once (hr_idx and rbuf alike, neighbour after neighbour) */
    const int nr = d->hr_total;
    const int *idx = d->hr_idx;
    const uint32_t *b = d->rbuf;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) if (nr > 4096)
    for (int k = 0; k < nr; ++k)
        for (int j = 0; j < nf; ++j) ((uint32_t *)w->field[f[j]])[idx[k]] = b[(size_t)k * nf + j];
    pbf_dom_dev_rows(d, f, nf, 1);
}

/* 1 if particle i is a ghost (after the grid stage): the speed-limit cuts are counted by owners. */
int pbf_dom_is_ghost(const pbf_world *w, int i, void *user) {
    const pbf_mpi_domain *d = user;
    (void)w;
    return d->ghosts_in && d->ghost[i];
}

/* The ghosts mask while this process holds ghosts, else NULL. */
const unsigned char *pbf_dom_ghosts_now(const pbf_world *w, void *user) {
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

/* The rows live on a GPU backend at the end of a step's last stage (roles as gpu_steps.h leaves
 * them), from the field registry's declarations: the state (PBF_FIELD_STATE: the next step's
 * first stage reads x and v and writes x*), the rows declared live (PBF_FIELD_LIVE: the cell
 * keys, which the next step's migration reads), and the rows the method carries to the next
 * step (pbf_step_rows: its warm starts' rows, its carried row). */
static int live_rows(const pbf_world *w, int *rows) {
    int n = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (pbf_fields[f].flags & (PBF_FIELD_STATE | PBF_FIELD_LIVE)) rows[n++] = f;
    int carried[PBF_FIELD_COUNT];
    const int nc = pbf_step_rows(w, carried);
    for (int k = 0; k < nc; ++k) {
        int seen = 0;
        for (int j = 0; j < n; ++j) seen |= rows[j] == carried[k];
        if (!seen) rows[n++] = carried[k];
    }
    return n;
}

/* The end of a step: the ghosts dropped, on the host; on a GPU backend through a round trip of
 * the live rows (local: also after a failure, when no process exchanges any more). */
void pbf_dom_end_step_drop(pbf_mpi_domain *d) {
    const pbf_backend_ops *be = d->w->backend;
    if (d->ghosts_in && d->nghosts == 0) { /* nothing to drop, nothing to move */
        d->ghosts_in = 0;
        return;
    }
    int rows[PBF_FIELD_COUNT];
    const int nrows = live_rows(d->w, rows);
    if (d->gpu && d->ghosts_in && be->merge_rows) {
        /* on the device: the owned particles' indices go there (d->part is free until the next
         * migration), the rows are compacted in place */
        pbf_world *w = d->w;
        const int n = w->count;
        int k = 0;
        if (pbf_dom_grow((void **)&d->part, &d->part_cap, (size_t)n + 1, sizeof *d->part)) {
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
