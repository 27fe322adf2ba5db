/*
 * Uniform grid with cell size >= h, built by counting sort with prefix sums (Hoetzlein 2014,
 * "Fast Fixed-Radius Nearest Neighbors: Interactive Million-Particle Fluids"): no hashing, so
 * no collisions, and no per-cell capacity, so nothing overflows.
 * Cells are numbered linearly with x fastest: the cells (x-1..x+1, y, z) are consecutive, so a
 * neighbour query visits 9 contiguous particle ranges (see solver.c).
 */
#include <math.h>
#include <omp.h>
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
    const size_t bytes = ((size_t)g->ncells + 1) * sizeof *g->cell_start;
    g->cell_start = pbf_big_calloc(bytes, bytes);
    if (!g->cell_start) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "grid: cannot allocate %u cells", g->ncells);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    return PBF_OK;
}

void pbf_grid_free(pbf_grid *g) {
    pbf_big_free(g->cell_start);
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
                    uint32_t *key, uint32_t *rank, uint32_t *perm, int nthreads) {
    uint32_t *start = g->cell_start;
    const long long nc = (long long)g->ncells;
    /* Counting sort in parallel, with the order of a sequential stable one (particles of a cell
     * by their old index), so that it never depends on the thread count: the histogram by atomic
     * increments (a count does not depend on their order; each particle keeps its rank among
     * its cell's, in the order the threads came), a blocked prefix sum, the scatter to
     * start + rank, then each cell's slice sorted by old index (as the GPU backends do). */
#pragma omp parallel num_threads(nthreads)
    {
#pragma omp for schedule(static)
        for (long long c = 0; c <= nc; ++c) start[c] = 0;
#pragma omp for schedule(static)
        for (int i = 0; i < n; ++i) {
            const uint32_t k = pbf_grid_cell_of(g, x[i], y[i], z[i]);
            uint32_t r;
            key[i] = k;
#pragma omp atomic capture
            r = start[k + 1]++;
            rank[i] = r;
        }
    }
    /* start[c + 1] = count of c, into exclusive starts: each thread sums its block of cells,
     * then scans it from the sum of the blocks before */
    enum { MAX_SCAN_BLOCKS = 256 };
    uint32_t block_sum[MAX_SCAN_BLOCKS + 1];
    const int nb = nthreads < 1 ? 1 : nthreads > MAX_SCAN_BLOCKS ? MAX_SCAN_BLOCKS : nthreads;
#pragma omp parallel num_threads(nb)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const long long c0 = 1 + nc * t / T, c1 = 1 + nc * (t + 1) / T;
        uint32_t sum = 0;
        for (long long c = c0; c < c1; ++c) sum += start[c];
        block_sum[t] = sum;
#pragma omp barrier
        uint32_t run = 0;
        for (int b = 0; b < t; ++b) run += block_sum[b];
        for (long long c = c0; c < c1; ++c) {
            run += start[c];
            start[c] = run;
        }
    }
#pragma omp parallel num_threads(nthreads)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < n; ++i) perm[start[key[i]] + rank[i]] = (uint32_t)i;
#pragma omp for schedule(static)
        for (long long c = 0; c < nc; ++c) { /* insertion sort: a cell holds a few particles */
            const uint32_t b = start[c], e = start[c + 1];
            for (uint32_t k = b + 1; k < e; ++k) {
                const uint32_t v = perm[k];
                uint32_t m = k;
                for (; m > b && perm[m - 1] > v; --m) perm[m] = perm[m - 1];
                perm[m] = v;
            }
        }
    }
}
