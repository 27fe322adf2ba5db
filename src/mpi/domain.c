/*
 * The domain over MPI processes (include/pbf/mpi.h; the design: domain_internal.h): options,
 * its lifetime (create, destroy), what the processes combine (statistics, solve errors, the
 * gathered state, the diagnosis) and its info.
 */
#include "domain_internal.h"

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
int pbf_dom_grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap && *p) return 1;
    size_t c = n + n / 4 + 64;
    void *q = realloc(*p, c * size);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

/* 1 on every process if any process passes fail != 0. */
int pbf_dom_agree_failed(pbf_mpi_domain *d, int fail) {
    MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_MAX, d->comm);
    if (fail) d->failed = 1;
    return fail;
}

/* A GPU backend (d->gpu): the device's rows `rows` (by role: the buffer that holds each now) to
 * this process's host arrays (to_device = 0), or back. 1 on success; collective, agreed like an
 * allocation (a failure on any process stops the exchanges on every one). Nothing to do on the
 * CPU backend, whose arrays are the host's. */
int pbf_dom_dev_rows(pbf_mpi_domain *d, const int *rows, int nrows, int to_device) {
    if (!d->gpu) return 1;
    const pbf_backend_ops *be = d->w->backend;
    const pbf_status s = to_device ? be->write_rows(d->w, rows, nrows, NULL)
                                   : be->read_rows(d->w, rows, nrows, NULL);
    d->device_bytes += 4.0 * nrows * d->w->count;
    return !pbf_dom_agree_failed(d, s != PBF_OK);
}

/* The error of the solve the stage just measured (percent), over every process's owned
 * particles: the backend summed this process's owned particles (w->solve_sum, solve_count; the
 * ghosts left out). The same float terms as the single-process sum, added in another order:
 * equal to it within double rounding. Every process then stops an iterative solve after the same
 * iteration. PBF with a fixed iteration count: no stop reads the error and only the last
 * iteration's is kept (the statistics'), so only the last one is made global. */
void pbf_dom_global_solve_error(pbf_mpi_domain *d, const pbf_stage_desc *stage) {
    pbf_world *w = d->w;
    /* the solve the stage measures, and its bounds (the method's) */
    const int loop = stage->loop;
    const pbf_solver *m = pbf_world_solver(w);
    if (loop > 0 && loop < 3 && m->bounds) {
        const pbf_solve_bounds b = m->bounds(&w->def, loop);
        if (!(b.tol > 0.0f) && ++d->measured[loop] < b.max) return;
    }
    double v[2] = {w->solve_sum, w->solve_count};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, d->comm);
    w->solve_error = v[1] > 0.0 ? 100.0 * v[0] / v[1] : 0.0;
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

/* The domain's settings and arrays (d->w, gpu, the options); 0 when out of memory. */
static int domain_alloc(pbf_mpi_domain *d, pbf_world *w, MPI_Comm comm, int rank, int size,
                        int gpu, const pbf_mpi_options *opt) {
    const pbf_mpi_options o = *opt;
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
         pbf_dom_grow((void **)&d->pcell, &d->pcell_cap, (size_t)w->count + 1, sizeof *d->pcell);
    if (ok && w->capacity < 1) ok = pbf_world_reserve(w, 64, NULL) == PBF_OK;
    return ok;
}

/* The error of a failed creation: bad[] as agreed by every process (see pbf_dom_create). */
static void creation_error(pbf_error *err, const int bad[4], const pbf_mpi_options *o,
                           int key_is_cell, const pbf_world *w, int cmin, int cmax) {
    if (bad[3] && o->decomposition != PBF_MPI_SLABS && o->decomposition != PBF_MPI_BISECTION)
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "pbf_mpi_domain_create: decomposition %d is neither slabs nor bisection",
                      (int)o->decomposition);
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
}

/* The rows a particle carries: when it migrates (fields), when the domain is made from parts
 * (cfields). */
static void list_rows(pbf_mpi_domain *d) {
    const pbf_world *w = d->w;
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
}

/* Each process's part to the owners of its particles. 0 when out of memory (agreed). */
static int distribute_parts(pbf_mpi_domain *d, const uint32_t *key, int key_is_cell) {
    pbf_world *w = d->w;
    const int n = w->count;
    /* the owner of each particle: the cell of its key (every particle of a cell then
     * reaches the same process, from one source, in order), or of its position (keys that
     * are places in the memory order are unique); the decomposition over every process */
    for (int i = 0; i < n; ++i) {
        d->pcell[i] =
            key_is_cell ? key[i] : pbf_grid_cell_of(&w->grid, w->px[i], w->py[i], w->pz[i]);
        w->cell[i] = key[i];
    }
    d->key_is_cell = key_is_cell;
    if (pbf_dom_agree_failed(d, !pbf_dom_decompose(d, d->pcell, n, 1)) ||
        (pbf_dom_exchange(d, 0, d->cfields, d->ncfields, d->key_cword, 0), d->failed))
        return 0;
    d->migrated_bytes = d->messages = 0.0; /* the run's traffic only */
    return 1;
}

/* The same world on every process: each keeps its own particles. 0 when out of memory (agreed). */
static int keep_own(pbf_mpi_domain *d) {
    pbf_world *w = d->w;
    const int n = w->count;
    /* the decomposition, from every particle's cell (each process holds all of them now, so
     * each computes the same one without communicating) */
    for (int i = 0; i < n; ++i)
        d->pcell[i] = pbf_grid_cell_of(&w->grid, w->px[i], w->py[i], w->pz[i]);
    if (pbf_dom_agree_failed(d, !pbf_dom_decompose(d, d->pcell, n, 0))) return 0;
    /* keep this process's particles; the key is the index in the common world */
    int k = 0;
    for (int i = 0; i < n; ++i) {
        if (owner_of_cell(d, d->pcell[i]) != d->rank) continue;
        for (int f = 0; f < PBF_FIELD_COUNT; ++f)
            if (w->field[f]) ((uint32_t *)w->field[f])[k] = ((uint32_t *)w->field[f])[i];
        w->cell[k] = (uint32_t)i;
        ++k;
    }
    w->count = k;
    return 1;
}

static void install_hooks(pbf_mpi_domain *d) {
    d->hooks.after_stage = pbf_dom_after_stage;
    d->hooks.reduce_stats = reduce_stats;
    d->hooks.is_ghost = pbf_dom_is_ghost;
    d->hooks.ghosts = pbf_dom_ghosts_now;
    d->hooks.ghost_mask = pbf_dom_ghost_mask;
    d->hooks.user = d;
    d->w->hooks = &d->hooks;
}

/* The domain over the world `w` of every process: the same world on every process (parts = 0),
 * or each process's part of the state with its keys (parts = 1; see pbf_mpi_domain_create_parts). */
pbf_status pbf_dom_create(pbf_world *w, MPI_Comm comm, const pbf_mpi_options *options,
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
        const int ok = domain_alloc(d, w, comm, rank, size, gpu, &o);
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
        creation_error(err, bad, &o, key_is_cell, w, cmin, cmax);
        pbf_mpi_domain_destroy(d);
        return bad[2] ? PBF_ERR_OUT_OF_MEMORY : PBF_ERR_INVALID_ARGUMENT;
    }
    list_rows(d);
    if (!(parts ? distribute_parts(d, key, key_is_cell) : keep_own(d))) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "pbf_mpi_domain_create: out of memory on a process");
        pbf_mpi_domain_destroy(d);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    /* GPU: this process's part (every SORTED and STATE row, the keys in `cell`) to the device */
    const int up = d->gpu && w->backend->write_rows(w, d->cfields, d->ncfields, NULL) != PBF_OK;
    if (pbf_dom_agree_failed(d, up)) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "pbf_mpi_domain_create: device = \"%s\": copying the particles to the "
                      "device failed on a process",
                      w->def.device);
        pbf_mpi_domain_destroy(d);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    install_hooks(d);
    pbf_update_stats(w); /* collective: the global statistics and the counts per process */
    *out = d;
    return PBF_OK;
}

pbf_status pbf_mpi_domain_create(pbf_world *w, MPI_Comm comm, const pbf_mpi_options *options,
                                 pbf_mpi_domain **out, pbf_error *err) {
    return pbf_dom_create(w, comm, options, 0, NULL, 0, out, err);
}

pbf_status pbf_mpi_domain_create_parts(pbf_world *w, MPI_Comm comm,
                                       const pbf_mpi_options *options, const uint32_t *key,
                                       int key_is_cell, pbf_mpi_domain **out, pbf_error *err) {
    return pbf_dom_create(w, comm, options, 1, key, key_is_cell, out, err);
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
    int fail = nrows != STATE_WORDS ||
               !pbf_dom_grow((void **)&d->sbuf, &d->scap, (size_t)n * W, sizeof *d->sbuf);
    MPI_Gather(&n, 1, MPI_INT, d->rcount, 1, MPI_INT, root, d->comm);
    size_t total = 0;
    if (d->rank == root)
        for (int r = 0; r < P; ++r) {
            d->rdispl[r] = (int)total;
            total += (size_t)d->rcount[r];
        }
    if (d->rank == root) {
        fail = fail || total * (size_t)W > INT_MAX ||
               !pbf_dom_grow((void **)&d->rbuf, &d->rcap, total * (size_t)W, sizeof *d->rbuf);
        for (int j = 0; j < STATE_WORDS && !fail; ++j) {
            size_t cap = d->gcap;
            void *p = d->garr[j];
            if (!pbf_dom_grow(&p, &cap, total + 1, sizeof(uint32_t))) fail = 1;
            d->garr[j] = p;
            if (j == STATE_WORDS - 1 && !fail) d->gcap = cap;
        }
    }
    if (pbf_dom_agree_failed(d, fail)) {
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
    int nst = 0; /* every process runs the same method: its table's row */
    const pbf_stage_desc *st = pbf_stage_table(d->w->def.solver, &nst);
    for (int s = 0; s < nst && iv[1] < 0; ++s)
        if (g.stage && strcmp(g.stage, st[s].name) == 0) iv[1] = s;
    double dv[4] = {g.position.x, g.position.y, g.position.z, g.value};
    MPI_Bcast(iv, 4, MPI_LONG_LONG, first, d->comm);
    MPI_Bcast(dv, 4, MPI_DOUBLE, first, d->comm);
    memset(&g, 0, sizeof g);
    g.ok = 0;
    g.check = iv[0] >= 0 ? checks[iv[0]] : NULL;
    g.stage = iv[1] >= 0 && iv[1] < nst ? st[iv[1]].name : NULL;
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
