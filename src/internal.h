/*
 * Internal state of a pbf_world.
 *
 * Data layout (the reasoning, also in ARCHITECTURE.md):
 *  - Structure of arrays of float, one array per row of the field registry (fields.h). The hot
 *    loops read positions of a particle's neighbours; SoA keeps those loads dense (coalesced on a
 *    GPU) and lets the compiler vectorise per-particle loops.
 *  - Particles are reordered every step by grid cell (linear cell order, x fastest), so the
 *    particles of a cell are contiguous and the three cells of a row (x-1, x, x+1) form ONE
 *    contiguous index range: a neighbour query is 9 contiguous ranges.
 *  - The CPU backend builds neighbour lists once per step (1.5 bytes per neighbour); the GPU
 *    backends loop over the 9 ranges and store nothing per neighbour.
 *
 * Memory per particle (capacity): the registry's rows of 4 bytes that the solver keeps (PBF: 13
 * of the 18, 52 B; the SPH solvers add the scratch triple and IISPH/DFSPH their warm rows), plus
 * on the CPU the packed neighbour copy (16 B) and the neighbour lists (1.5 bytes per neighbour,
 * about 30 at rest: ~45 B), plus 4 bytes per grid cell. ARCHITECTURE.md itemises it.
 */
#ifndef PBF_INTERNAL_H
#define PBF_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "backends/backend.h"
#include "error.h"
#include "fields.h"
#include "pbf/pbf.h"
#include "sph/kernel.h"
#include "solvers/solver.h"
#include "sph/walls.h"

#define PBF_ARRAY_PADDING 8 /* elements after the last particle of every array (PBF_LANES) */
#define PBF_MAX_CELLS (1u << 30)  /* 4 GiB of cell starts at most */

/* Zeroed memory for the large per-particle arrays (big_alloc.c), 64-byte aligned, freed with
 * pbf_big_free. From PBF_BIG_MIN bytes on Linux: a 2 MiB-aligned anonymous mapping whose whole
 * 2 MiB pages within the first `hot` bytes (those expected to be touched) are advised as
 * transparent huge pages (madvise MADV_HUGEPAGE; the system may ignore it); elsewhere, or
 * smaller: aligned_alloc. */
#define PBF_BIG_MIN ((size_t)2 << 20)
void *pbf_big_calloc(size_t bytes, size_t hot);
void pbf_big_free(void *p);

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
    pbf_vec3 dir; /* normalised motion direction */
} pbf_box_state;

struct pbf_world {
    pbf_world_def def;
    float lo[3], hi[3]; /* the container, as arrays */
    /* derived constants */
    pbf_sph_consts k;   /* kernel constants, as every backend's kernels take them */
    pbf_walls_consts wc; /* wall constants, likewise */
    float spacing, spiky_grad;
    float lattice_grad2; /* sum_k |grad_k C|^2 at rest, 1/m^2 */
    void *method_state;  /* the method's derived constants (pbf_solver.create_state), or NULL */

    int count, capacity;
    int nthreads;
    /* the particle arrays, one per row of the field registry (fields.h), by name or by row */
    union {
        struct {
            float *px, *py, *pz;  /* positions x_i */
            float *qx, *qy, *qz;  /* predicted positions x_i* */
            float *vx, *vy, *vz;  /* velocities */
            float *sx, *sy, *sz;  /* scratch: delta p, then vorticity omega */
            float *density, *lambda;
            uint32_t *id, *cell;
            float *warm, *warm_v; /* IISPH, DFSPH: the warm start's rows (fields.h) */
        };
        void *field[PBF_FIELD_COUNT];
    };

    pbf_grid grid;
    pbf_wall_tables walls;
    pbf_box_state boxes[PBF_MAX_BOXES];
    pbf_wall_box wall_boxes[PBF_MAX_BOXES]; /* current extents, as the backends read them */
    int nboxes;

    const pbf_backend_ops *backend;
    void *dev;       /* the backend's own state */
    int host_stale;  /* the device holds a newer state than the host arrays */
    int host_rows;   /* every row has a host array, not only those the backend keeps there (a
                        distributed run on a GPU backend: pbf_world_host_rows) */

    double time;
    int64_t steps;
    double solve_error;   /* set by the stage that measures an iterative solve (percent) */
    /* that measure's sum of per-particle errors (fractions) and the particles summed: a
     * distributed run's ghosts are left out, and its hooks combine both over the processes */
    double solve_sum, solve_count;
    struct {              /* the pressure solve of the last step, for pbf_stats */
        int substeps, iterations, divergence_iterations;
        double error, divergence_error;
        int64_t speed_clamps; /* velocities the speed limit cut (every stage, every substep) */
    } solve;
    pbf_stats stats;
    pbf_bad_particle bad; /* the particle behind stats.bad_stage */
    pbf_timings timings;
    int stage_timing; /* pbf_world_set_stage_timing */
    /* a distributed run's hooks (src/mpi/): halos, migration, global statistics; NULL alone */
    const struct pbf_world_hooks *hooks;
};

/* grid.c */
pbf_status pbf_grid_init(pbf_grid *g, const pbf_world_def *def, float cell_size, pbf_error *err);
void pbf_grid_free(pbf_grid *g);
uint32_t pbf_grid_cell_of(const pbf_grid *g, float x, float y, float z);
/* Counting sort of particles by the cell of (x, y, z): fills key[i] and perm so that
 * perm[k] is the old index of the particle that goes to position k; cell_start as prefix sums.
 * Stable: particles of one cell keep their previous relative order, for any thread count.
 * rank: n entries of scratch. */
void pbf_grid_build(pbf_grid *g, int n, const float *x, const float *y, const float *z,
                    uint32_t *key, uint32_t *rank, uint32_t *perm, int nthreads);

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

/* boundary.c: tables, calibration and motion, on the host */
pbf_status pbf_wall_tables_init(pbf_wall_tables *t, float h, int nodes, int cubic, pbf_error *err);
/* The SPH solvers' cubic spline in double precision for the host's tables and constants: its
 * value W(r) and its slope dW/dr (negative) for support h (see kernel_formulas.h). */
double pbf_cubic_value_d(double h, double r);
double pbf_cubic_slope_d(double h, double r);
void pbf_wall_tables_free(pbf_wall_tables *t);
/* Moves every box to its position at time t; prev_lo keeps the position before. */
void pbf_boxes_update(pbf_world *w, double t);
/* Scales of the wall density that put the lattice site at a flat wall (face), in an edge of the
 * container and in its corner at rest density (pbf_container_density). */
void pbf_wall_calibration(const pbf_world *w, float *face, float *edge, float *corner);

/* Wall density of the world at p (the tables and boxes of the host), for host-side callers. */
static inline float pbf_world_wall_density(const pbf_world *w, const float p[3], float grad[3]) {
    return pbf_wall_density(&w->wc, w->walls.F, w->walls.G, w->wall_boxes, p, grad);
}

/* core.c: the stage runner, over the method's descriptor (solvers/solver.h) */
/* The world's method. */
static inline const pbf_solver *pbf_world_solver(const pbf_world *w) {
    return pbf_solver_of(w->def.solver);
}
/* The fraction of the previous substep's solution the method's solves start from (its
 * warm_start); 0 when it has none or it is off. */
float pbf_warm_start(const pbf_world_def *def);
/* A warm start within a solve's first iteration instead of by the warm stages (the method's
 * first_warm): its fraction; 0 when none or off. */
float pbf_first_warm(const pbf_world_def *def);
/* The step of a method as a table of stages, ending with the statistics (PBF_STAGE_STATS). */
const pbf_stage_desc *pbf_stage_table(pbf_solver_kind solver, int *count);
void pbf_run_step(pbf_world *w, float dt);
/* Sorts the particles and computes their density (after adding or restoring particles). */
void pbf_refresh(pbf_world *w);
/* Statistics of the current state into w->stats. */
void pbf_update_stats(pbf_world *w);
/* Statistics from per-chunk partials, combined in chunk order by every backend: acc (zeroed by
 * the caller) and each chunk's v hold the sum and the maximum of the density error, the maximum
 * squared speed, the non-finite and the escaped counts. pbf_stats_finish writes w->stats from
 * acc (NULL: none available, zeros), or marks every particle non-finite when the device lost the
 * state (lost != 0). */
#define PBF_STATS_PARTIALS 5
void pbf_stats_accumulate(double acc[PBF_STATS_PARTIALS], const double v[PBF_STATS_PARTIALS]);
void pbf_stats_finish(pbf_world *w, const double acc[PBF_STATS_PARTIALS], int lost);
/* Hooks of a distributed run (src/mpi/domain.c sets them; a world alone has none). With hooks
 * the stage runner runs every stage even on a process that holds no particle (the hooks are
 * collective), calls after_stage after each stage of the step (halo exchanges, migration, the
 * removal of ghost particles), and pbf_stats_finish hands the statistics partials and the local
 * particle count to reduce_stats, which combines them over every process. Ghost particles are
 * copies of other processes' particles appended by after_stage: the stages compute on them like
 * on any particle, the hooks overwrite what their neighbours read and remove them before the
 * statistics, so they are read but never integrated. */
typedef struct pbf_world_hooks {
    void (*after_stage)(pbf_world *w, const pbf_stage_desc *stage, void *user);
    /* acc, the local particle count and the local speed-limit cuts, summed in place */
    void (*reduce_stats)(pbf_world *w, double acc[PBF_STATS_PARTIALS], double *count,
                         double *clamps, void *user);
    /* 1 if particle i (memory order, after the grid stage) is a ghost: its speed-limit cuts are
     * counted by its owner, not here */
    int (*is_ghost)(const pbf_world *w, int i, void *user);
    /* The same for every particle at once: per particle (memory order) nonzero for a ghost, or
     * NULL when this process holds none now (the passes over every particle read the mask
     * instead of calling is_ghost per particle) */
    const unsigned char *(*ghosts)(const pbf_world *w, void *user);
    /* Called by the grid stage of a step after its sort, before the neighbour lists: a mask in
     * the new memory order, nonzero for a ghost (or NULL). Nothing reads a ghost's own
     * neighbour sums (the halo updates overwrite them before they are read), so the CPU backend
     * gives ghosts empty neighbour lists: the neighbour passes skip them. */
    const unsigned char *(*ghost_mask)(pbf_world *w, void *user);
    void *user;
} pbf_world_hooks;

/* world.c: checks a fluid block against the world's container (the message names the block's
 * field and value) and gives its particle count. */
pbf_status pbf_fluid_block_check(const pbf_world *w, const pbf_fluid_block *b, int64_t *count,
                                 pbf_error *err);
/* world.c: the block's lattice sites along x, y and z (pbf_fluid_block_count is their product). */
void pbf_fluid_block_axes(const pbf_world *w, const pbf_fluid_block *b, int64_t n[3]);
/* world.c: appends the block's lattice sites first .. first + count - 1 (x fastest, then y, then
 * z: the order of pbf_world_add_fluid_block) to the host rows, ids first_id, first_id + 1, ...;
 * the capacity must hold them; nothing is uploaded or refreshed. */
void pbf_world_append_lattice(pbf_world *w, const pbf_fluid_block *b, int64_t first,
                              int64_t count, uint32_t first_id);
/* world.c: grows every particle array to `capacity` (the world is unchanged on failure). */
pbf_status pbf_world_reserve(pbf_world *w, int capacity, pbf_error *err);
/* world.c: from now on the world keeps a host array of every row of the registry (PBF: but the
 * SPH solvers' scratch), also on a GPU backend, which keeps only the state there otherwise: a
 * distributed run's hooks move rows between the device and these arrays (read_rows,
 * write_rows). Their contents are not the device's until read. */
pbf_status pbf_world_host_rows(pbf_world *w, pbf_error *err);

/* world.c: PBF's warm start (lambda_warm_start, pbf_warm_lambda; from PBF_WARM_MIN_ITERATIONS
 * iterations per step, solvers/pbf/pbf.h) carries each particle's multiplier to the next step: lambda is then part
 * of the state. pbf_carried_row: the row a solver carries to the next step beyond the state,
 * which snapshots and checkpoints keep
 * (pbf_snapshot.lambda): PBF's lambda with its warm start, IISPH's last pressure (PBF_F_WARM) with
 * its warm start; -1: none (DFSPH's two warm rows are not kept). pbf_world_lambda gives that row
 * on the host (NULL when none); pbf_set_lambda sets it for the first `count` particles from
 * `src`, or to 0 when src is NULL (on a GPU backend through its host row, which every backend
 * keeps then, and write_rows), and IISPH's pressure one substep older (PBF_F_WARM_V, not
 * carried) likewise. */
int pbf_lambda_carried(const pbf_world *w);
int pbf_carried_row(const pbf_world *w);
/* The rows a world carries from one step to the next beyond its state (PBF_FIELD_STATE): its
 * method's warm rows (pbf_field_in_solver) and its carried row, in registry order, into rows
 * (room for PBF_FIELD_COUNT); returns their count. */
int pbf_step_rows(const pbf_world *w, int *rows);
const float *pbf_world_lambda(const pbf_world *w);
pbf_status pbf_set_lambda(pbf_world *w, int count, const float *src, pbf_error *err);

/* Brings the host arrays up to date with the device (no-op on the CPU). */
void pbf_sync_host(const pbf_world *w);

/* backends/cpu/cpu.c: a stage of the world's method by its name (its row's), exposed for tests.
 * Returns the lowest index of a particle for which it produced a non-finite value, or INT_MAX
 * (a min-reduction, so deterministic); INT_MAX also for a name the method's table lacks. */
int pbf_cpu_stage(pbf_world *w, const char *stage, const pbf_step_ctx *ctx);
/* The same for a row of the method's table (the CPU backend's run_stage). */
int pbf_cpu_row(pbf_world *w, const pbf_stage_desc *st, const pbf_step_ctx *ctx);


static inline void pbf_v3(pbf_vec3 v, float out[3]) {
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
}

#endif
