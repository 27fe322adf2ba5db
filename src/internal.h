/*
 * Internal state of a pbf_world and the stages of one step.
 *
 * Data layout (the reasoning, also in ARCHITECTURE.md):
 *  - Structure of arrays of float. The hot loops read positions of a particle's neighbours;
 *    SoA keeps those loads dense and lets the compiler vectorise per-particle loops.
 *  - Particles are reordered every step by grid cell (linear cell order, x fastest), so the
 *    particles of a cell are contiguous and the three cells of a row (x-1, x, x+1) form ONE
 *    contiguous index range: a neighbour query is 9 contiguous ranges, no neighbour list is
 *    stored, so nothing can overflow and memory per particle stays small.
 *  - Four vec3 arrays rotate roles during a step (position, predicted position, velocity,
 *    scratch), so the post-pass needs no extra storage (see solver.c).
 *
 * Memory per particle (capacity): 4 vec3 arrays (48 B) + density, lambda (8 B) + id, cell key,
 * neighbour-list start (12 B) = 68 bytes, plus the neighbour lists (2 bytes per neighbour, about
 * 35 neighbours at rest: ~70 B) and 4 bytes per grid cell.
 */
#ifndef PBF_INTERNAL_H
#define PBF_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "pbf/pbf.h"

#define PBF_MAX_BOXES 64
#define PBF_ARRAY_PADDING 8 /* elements after the last particle of every array (PBF_LANES) */
#define PBF_MAX_CELLS (1u << 27)  /* 512 MiB of cell starts at most */

typedef struct pbf_grid {
    double origin[3];
    double inv_cell; /* 1 / cell size; the cell is h * (1 + 1e-4), see grid.c */
    int dim[3];
    uint32_t ncells;
    uint32_t *cell_start; /* ncells + 1 entries: particles of cell c are [start[c], start[c+1]) */
} pbf_grid;

/* Tabulated boundary integrals of the kernel (see boundary.c). */
typedef struct pbf_wall_tables {
    int n;          /* nodes per axis over [-h, h] */
    float h;
    float inv_step; /* (n - 1) / (2h) */
    float *F;       /* n^3: F(a,b,c) = integral of W_poly6 over {y: y.x > a, y.y > b, y.z > c} */
    float *G;       /* n^3: G(a,b,c) = integral of W_spiky over the plane y.x = a, y.y > b, y.z > c */
} pbf_wall_tables;

typedef struct pbf_box_state {
    pbf_box def;
    pbf_vec3 dir;        /* normalised motion direction */
    float lo[3], hi[3];  /* current extent */
    float prev_lo[3];    /* lower corner at the start of the current step (for friction) */
} pbf_box_state;

struct pbf_world {
    pbf_world_def def;
    float lo[3], hi[3]; /* the container, as arrays */
    /* derived constants */
    float spacing, h, h2, mass, volume; /* volume = mass / rest_density */
    float poly6, spiky_grad;            /* kernel normalisation constants */
    float lattice_grad2;                /* sum_k |grad_k C|^2 at rest, 1/m^2 */
    float eps_abs;                      /* relaxation in 1/m^2 */
    float scorr_inv_wdq;                /* 1 / W(dq) */
    float r_min;                        /* 1e-6 h: distance floor of the spiky gradient */
    float wall_scale;                   /* pbf_wall_calibration */

    int count, capacity;
    int nthreads;
    /* particle arrays; see the layout notes above */
    float *px, *py, *pz;  /* positions x_i */
    float *qx, *qy, *qz;  /* predicted positions x_i* */
    float *vx, *vy, *vz;  /* velocities */
    float *sx, *sy, *sz;  /* scratch: delta p, then vorticity omega */
    float *density, *lambda;
    uint32_t *id, *cell; /* the sort borrows lambda and density for its permutation/scratch */
    /* neighbour lists, rebuilt every step from the grid (solver.c): particle i's neighbours are
     * nbr[nbr_start[i] .. nbr_start[i + 1]), each coded as range << 12 | offset in the range */
    uint32_t *nbr_start;
    uint16_t *nbr;
    size_t nbr_cap;  /* entries allocated in nbr, padding excluded */
    int lists_ok;    /* 0: this step scans the grid ranges instead (a range over 4095, or no memory) */

    pbf_grid grid;
    pbf_wall_tables walls;
    pbf_box_state boxes[PBF_MAX_BOXES];
    int nboxes;

    double time;
    int64_t steps;
    pbf_stats stats;
    /* the particle behind stats.bad_stage: memory index after the step, id, start-of-step
     * position */
    int bad_index;
    uint32_t bad_id;
    pbf_vec3 bad_position;
    pbf_timings timings;
};

/* grid.c */
pbf_status pbf_grid_init(pbf_grid *g, const pbf_world_def *def, float cell_size, pbf_error *err);
void pbf_grid_free(pbf_grid *g);
uint32_t pbf_grid_cell_of(const pbf_grid *g, float x, float y, float z);
/* Counting sort of particles by the cell of (x, y, z): fills key[i] and perm so that
 * perm[k] is the old index of the particle that goes to position k; cell_start as prefix sums.
 * Stable: particles of one cell keep their previous relative order. */
void pbf_grid_build(pbf_grid *g, int n, const float *x, const float *y, const float *z,
                    uint32_t *key, uint32_t *perm, int nthreads);

/* The 9 contiguous index ranges holding every particle of the 27 cells around `cell`. */
static inline int pbf_grid_neighbour_ranges(const pbf_grid *g, uint32_t cell, uint32_t begin[9],
                                   uint32_t end[9]) {
    const int dx = g->dim[0], dy = g->dim[1], dz = g->dim[2];
    const int cx = (int)(cell % (uint32_t)dx);
    const int cy = (int)((cell / (uint32_t)dx) % (uint32_t)dy);
    const int cz = (int)(cell / ((uint32_t)dx * (uint32_t)dy));
    const int x0 = cx > 0 ? cx - 1 : cx, x1 = cx < dx - 1 ? cx + 1 : cx;
    int k = 0;
    for (int z = cz - 1; z <= cz + 1; ++z) {
        if (z < 0 || z >= dz) continue;
        for (int y = cy - 1; y <= cy + 1; ++y) {
            if (y < 0 || y >= dy) continue;
            uint32_t row = ((uint32_t)z * (uint32_t)dy + (uint32_t)y) * (uint32_t)dx;
            begin[k] = g->cell_start[row + (uint32_t)x0];
            end[k] = g->cell_start[row + (uint32_t)x1 + 1];
            ++k;
        }
    }
    return k;
}

/* boundary.c */
pbf_status pbf_wall_tables_init(pbf_wall_tables *t, float h, int nodes, pbf_error *err);
void pbf_wall_tables_free(pbf_wall_tables *t);
/* Integral of W_poly6 over the box [lo, hi] relative to point p (value in [0, 1]) and the
 * gradient of that integral with respect to p, computed with the spiky kernel. */
float pbf_box_integral(const pbf_wall_tables *t, const float lo[3], const float hi[3],
                       const float p[3], float grad[3]);
/* Wall density (relative, rho_wall / rho0) at p from the container and all boxes, with its
 * gradient. */
float pbf_wall_density(const pbf_world *w, const float p[3], float grad[3]);
void pbf_boxes_update(pbf_world *w, double t);
/* Scale of the wall density that puts a lattice layer at a flat wall at rest density. */
float pbf_wall_calibration(const pbf_world *w);
/* Collision response for one particle: pushes it out of boxes and into the container,
 * applies friction using its start-of-step position (ox, oy, oz). */
void pbf_collide(const pbf_world *w, float *x, float *y, float *z, float ox, float oy, float oz);

/* solver.c */
void pbf_solver_step(pbf_world *w, float dt);
void pbf_solver_compute_stats(pbf_world *w);
/* Sorts the particles and computes their density at the current positions (no motion). */
void pbf_solver_refresh(pbf_world *w);
/* The stages of pbf_solver_step, in order (exposed for tests). Each returns the lowest index of
 * a particle for which it produced a non-finite value, or INT_MAX (a min-reduction, so
 * deterministic). */
int pbf_stage_predict(pbf_world *w, float dt, float vmax);
void pbf_stage_grid(pbf_world *w);
int pbf_stage_lambda(pbf_world *w);
int pbf_stage_delta_p(pbf_world *w);
int pbf_stage_apply(pbf_world *w);
int pbf_stage_velocity_curl(pbf_world *w, float dt, float vmax);
int pbf_stage_post(pbf_world *w, float dt, float vmax);

/* world.c */
void pbf_set_error(pbf_error *err, pbf_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline void pbf_v3(pbf_vec3 v, float out[3]) {
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
}

/* Kernels (Müller et al. 2003), for r2 = |r|^2 < h^2 (checked by the caller). */
static inline float pbf_poly6(const pbf_world *w, float r2) {
    float d = w->h2 - r2;
    return w->poly6 * d * d * d;
}
/* grad W_spiky(r) = pbf_spiky_factor(w, |r|^2) * r. Finite at r = 0 (distance floor r_min),
 * where it multiplies a zero vector, so callers need no special case for j = i. */
static inline float pbf_spiky_factor(const pbf_world *w, float r2) {
    float r = sqrtf(r2);
    float d = w->h - r;
    r = r > w->r_min ? r : w->r_min;
    return -w->spiky_grad * d * d / r;
}

#endif
