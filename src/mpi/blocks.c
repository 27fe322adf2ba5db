/*
 * A world built in parts (pbf_mpi_domain_create_blocks; domain_internal.h): each process builds
 * the particles of a slab of grid cells, and the domain is made from those parts.
 */
#include "domain_internal.h"

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

/* The blocks checked (the same answer on every process: the same world definition and blocks),
 * first[i] the first id of block i, first[nblocks] the particles in all. */
static pbf_status check_blocks(const pbf_world *w, const pbf_fluid_block *blocks, int nblocks,
                               int64_t *first, pbf_error *err) {
    pbf_status st = PBF_OK;
    if (w->count != 0) {
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
    return st;
}

/* This process's cell planes [c0, c1) along `axis` (see pbf_mpi_domain_create_blocks). */
static pbf_status part_planes(const pbf_world *w, const pbf_fluid_block *blocks, int nblocks,
                              int axis, int64_t total, int rank, int size, int *c0, int *c1) {
    const int planes = w->grid.dim[axis];
    int64_t *per_plane = calloc((size_t)planes + 1, sizeof *per_plane);
    if (!per_plane) return PBF_ERR_OUT_OF_MEMORY;
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
    *c0 = *c1 = -1;
    for (int c = 0; c <= planes; ++c) {
        if (*c0 < 0 && acc >= want0) *c0 = c;
        if (*c1 < 0 && acc >= want1) *c1 = c;
        if (c < planes) acc += per_plane[c];
    }
    if (rank == size - 1) *c1 = planes;
    free(per_plane);
    return PBF_OK;
}

/* The part: the particles of tmp (sorted by cell) in cells [c0, c1) along axis, in that order,
 * into rows (x y z vx vy vz density id), each one's cell its key; returns how many (at most
 * own). */
static int64_t copy_part(const pbf_world *tmp, int axis, int c0, int c1, int64_t own,
                         float *rows[8], uint32_t *key) {
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
    return k;
}

/* This process's part built in a CPU world of its own (its planes and the two beside them),
 * into rows[8] and *key (allocated here, own + 1 each); *own its particles, *built those of
 * that world. */
static pbf_status build_part(const pbf_world *w, const pbf_fluid_block *blocks, int nblocks,
                             const int64_t *first, int axis, int c0, int c1, float *rows[8],
                             uint32_t **key_out, int64_t *own_out, int64_t *built_out,
                             pbf_error *err) {
    pbf_status st = PBF_OK;
    pbf_world *tmp = NULL;
    int64_t own = 0, with = 0;
    for (int i = 0; i < nblocks; ++i) {
        own += append_planes(NULL, w, &blocks[i], axis, c0, c1, 0);
        with += c1 > c0 ? append_planes(NULL, w, &blocks[i], axis, c0 - 1, c1 + 1, 0) : 0;
    }
    *own_out = own;
    for (int j = 0; j < 8; ++j) {
        rows[j] = malloc(((size_t)own + 1) * sizeof(float));
        if (!rows[j]) st = PBF_ERR_OUT_OF_MEMORY;
    }
    uint32_t *key = malloc(((size_t)own + 1) * sizeof *key);
    *key_out = key;
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
        *built_out = with;
        if (st != PBF_OK) pbf_set_error(err, st, "%s", e.message);
    }
    if (st == PBF_OK && tmp) {
        for (int i = 0; i < nblocks; ++i)
            append_planes(tmp, w, &blocks[i], axis, c0 - 1, c1 + 1, (uint32_t)first[i]);
        pbf_refresh(tmp); /* sorted by cell; the densities */
        const int64_t k = copy_part(tmp, axis, c0, c1, own, rows, key);
        if (k != own) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "pbf_mpi_domain_create_blocks: %lld particles in cells [%d, %d) "
                          "along %c, %lld expected",
                          (long long)k, c0, c1, "xyz"[axis], (long long)own);
            st = PBF_ERR_INVALID_ARGUMENT;
        }
    }
    pbf_world_destroy(tmp);
    return st;
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
    if (st == PBF_OK) st = check_blocks(w, blocks, nblocks, first, err);
    const int64_t total = first ? first[nblocks] : 0;
    /* This process's part: the particles of a slab of grid cells along the grid's longest axis
     * (cells [c0, c1), chosen from the particles per cell plane so that the parts hold about as
     * many), and in a CPU world of its own that slab with the planes c0 - 1 and c1 beside it:
     * every particle of the 27 cells around each of the part's, in the order (cells, and the
     * blocks' lattice order within a cell) of the whole world, so the part's densities are the
     * whole world's bit for bit. */
    int axis = 0;
    for (int a = 1; a < 3; ++a)
        if (w->grid.dim[a] > w->grid.dim[axis]) axis = a;
    int c0 = 0, c1 = 0;
    if (st == PBF_OK) st = part_planes(w, blocks, nblocks, axis, total, rank, size, &c0, &c1);
    int64_t own = 0, built = 0;
    float *rows[8] = {0};
    uint32_t *key = NULL;
    if (st == PBF_OK)
        st = build_part(w, blocks, nblocks, first, axis, c0, c1, rows, &key, &own, &built, err);
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
    st = pbf_dom_create(w, comm, options, 1, key, 1, out, err);
    if (st == PBF_OK) (*out)->built = (int)built;
    free(key);
    return st;
}
