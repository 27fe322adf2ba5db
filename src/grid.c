/*
 * Uniform grid with cell size >= h, built by counting sort with prefix sums (Hoetzlein 2014,
 * "Fast Fixed-Radius Nearest Neighbors: Interactive Million-Particle Fluids"): no hashing, so
 * no collisions, and no per-cell capacity, so nothing overflows.
 * Cells are numbered linearly with x fastest: the cells (x-1..x+1, y, z) are consecutive, so a
 * neighbour query visits 9 contiguous particle ranges (see solver.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

pbf_status pbf_grid_init(pbf_grid *g, const pbf_world_def *def, float cell_size, pbf_error *err) {
    memset(g, 0, sizeof *g);
    float lo[3], hi[3];
    pbf_v3(def->domain_min, lo);
    pbf_v3(def->domain_max, hi);
    double total = 1.0;
    for (int a = 0; a < 3; ++a) {
        double cells = floor(((double)hi[a] - (double)lo[a]) / (double)cell_size) + 1.0;
        if (cells < 1) cells = 1;
        total *= cells;
        if (total > (double)PBF_MAX_CELLS) {
            pbf_set_error(err, PBF_ERR_LIMIT,
                          "domain_min, domain_max: a container of %g x %g x %g m with "
                          "kernel radius h = %g m needs more than %u grid cells; use a smaller "
                          "container or larger particles",
                          hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], cell_size, PBF_MAX_CELLS);
            return PBF_ERR_LIMIT;
        }
        g->dim[a] = (int)cells;
        g->origin[a] = lo[a];
    }
    g->inv_cell = 1.0 / (double)cell_size;
    g->ncells = (uint32_t)total;
    g->cell_start = calloc((size_t)g->ncells + 1, sizeof *g->cell_start);
    if (!g->cell_start) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "grid: cannot allocate %u cells", g->ncells);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    return PBF_OK;
}

void pbf_grid_free(pbf_grid *g) {
    free(g->cell_start);
    g->cell_start = NULL;
}

/* Cell coordinate along one axis, clamped to the grid. Computed in double so that two particles
 * closer than h (tested in float) are never two cells apart (the cell is 1e-4 larger than h,
 * far above double rounding). Particles outside the grid (possible for predicted positions
 * before collision handling) go to the border cell: any point within h of them is then in that
 * cell or its neighbour, so queries stay exact. NaN goes to cell 0. */
static inline int axis_cell(float v, double origin, double inv, int dim) {
    double f = ((double)v - origin) * inv;
    if (!(f >= 0.0)) return 0;
    if (f >= (double)dim) return dim - 1;
    return (int)f;
}

uint32_t pbf_grid_cell_of(const pbf_grid *g, float x, float y, float z) {
    int cx = axis_cell(x, g->origin[0], g->inv_cell, g->dim[0]);
    int cy = axis_cell(y, g->origin[1], g->inv_cell, g->dim[1]);
    int cz = axis_cell(z, g->origin[2], g->inv_cell, g->dim[2]);
    return ((uint32_t)cz * (uint32_t)g->dim[1] + (uint32_t)cy) * (uint32_t)g->dim[0] + (uint32_t)cx;
}

void pbf_grid_build(pbf_grid *g, int n, const float *x, const float *y, const float *z,
                    uint32_t *key, uint32_t *perm, int nthreads) {
    uint32_t *start = g->cell_start;
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int i = 0; i < n; ++i) key[i] = pbf_grid_cell_of(g, x[i], y[i], z[i]);

    /* Counting sort: histogram, exclusive prefix sum, stable scatter. Sequential and O(n +
     * cells); it is a small share of a step and keeps the order independent of threads. */
    memset(start, 0, ((size_t)g->ncells + 1) * sizeof *start);
    for (int i = 0; i < n; ++i) start[key[i] + 1]++;
    for (uint32_t c = 0; c < g->ncells; ++c) start[c + 1] += start[c];
    /* scatter with start[] as running cursors, then shift the cursors back into starts */
    for (int i = 0; i < n; ++i) perm[start[key[i]]++] = (uint32_t)i;
    for (uint32_t c = g->ncells; c > 0; --c) start[c] = start[c - 1];
    start[0] = 0;
}
