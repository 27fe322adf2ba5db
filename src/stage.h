/*
 * The vocabulary of a step, below the backends and the methods: the values every stage reads
 * (the step context), and a stage's row in a method's table (its name, its solve, its warm
 * start, its CPU function and GPU launches). A stage is known by its row: its name is the row's
 * (the guard and the timings report it), nothing outside a method's folder lists them.
 */
#ifndef PBF_STAGE_H
#define PBF_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <pbf/pbf.h>

/* A method's table has at most this many rows (the guard reports the row of a non-finite value;
 * test_methods checks every table). */
#define PBF_MAX_STAGES 32

/* Per-step values every stage may read. */
typedef struct pbf_step_ctx {
    float dt;
    float vmax; /* CFL speed limit cfl * h / dt */
    /* 1 for a stage that measures a solve stopped at a tolerance: w->solve_error must hold its
     * error when run_stage returns. 0: a backend that keeps the state on a device may deliver the
     * error of the step's last measurement later, in finish_step (w->solve), and skip the read. */
    int need_error;
    int iteration; /* index of the iteration of an iterative solve's stages (0 first), else 0 */
} pbf_step_ctx;

/* The particle (memory order after the step) at which a stage first produced a non-finite value. */
typedef struct pbf_bad_particle {
    int index; /* INT_MAX: none */
    uint32_t id;
    pbf_vec3 position;
} pbf_bad_particle;

/* A stage on the CPU: returns the lowest index of a particle for which it produced a non-finite
 * value, or INT_MAX (a min-reduction, so deterministic). */
typedef int (*pbf_cpu_stage_fn)(pbf_world *w, const pbf_step_ctx *ctx);
struct pbf_gpu_dev;
/* A stage's launches on a GPU (either host: backends/gpu/gpu_steps.h). */
typedef void (*pbf_gpu_stage_fn)(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *ctx);

/* The iterative solves a stage may belong to (pbf_stage_desc.loop) or measure (.measures). */
enum { PBF_SOLVE_NONE = 0, PBF_SOLVE_DENSITY = 1, PBF_SOLVE_DIVERGENCE = 2 };

/* One stage of a method's step (core.c runs the table). */
typedef struct pbf_stage_desc {
    const char *name; /* what the guard's report calls it ("lambda", "pressure_accel") */
    size_t timing;    /* offset of its double in pbf_timings, its share of the breakdown */
    int loop;        /* PBF_SOLVE_*: repeated as part of that solve's iterations */
    int measures;    /* PBF_SOLVE_*: sets the world's solve error, that solve's error */
    int warm;        /* 1: a warm start's stage, run only when the method's warm start is on */
    /* What it does on each kind of device: the CPU backend's function, and the GPU backends'
     * launches (compiled once, over the hosts' table: backends/gpu/gpu_steps.h). NULL for the
     * backends' own stages (grid, stats), which each backend runs itself. */
    pbf_cpu_stage_fn cpu;
    pbf_gpu_stage_fn gpu;
    int gpu_guarded; /* launches of `gpu` that take a slot of the non-finite guard */
    unsigned flags;  /* PBF_STAGE_* below */
    /* The rows (PBF_ROWS of the registry's ids) it computes from neighbour sums that a later
     * stage reads from neighbours: a distributed run sends them to the ghosts after it (a
     * ghost's own sums are empty). halo_of, when set, says it for the world instead (rows that
     * depend on the parameters). */
    unsigned halo;
    unsigned (*halo_of)(const pbf_world *w);
} pbf_stage_desc;

/* A set of registry rows (fields.h ids, fewer than 32) as a stage's halo. */
#define PBF_ROW(f) (1u << (f))

/* A stage's slot in the timings' breakdown (pbf_world_timings): the offset of its double. */
#define PBF_TIMING(f) offsetof(pbf_timings, f)

/* The stage reads the CPU's caches of the substep's positions (the SPH solvers' wall terms and
 * pair list, src/solvers/sph/sph_cpu.h) that an earlier stage built, and moves no particle: the
 * CPU backend keeps them for it; every other stage drops them before it runs. */
#define PBF_STAGE_REUSES_CACHE 1u
/* The backends' own stages, which every table holds: the grid (counting sort by the cell of x*,
 * reordering every SORTED field; the particles move in memory) and the statistics, the table's
 * last row (each backend's reduction, also run alone by pbf_update_stats). */
#define PBF_STAGE_SORTS 2u
#define PBF_STAGE_STATS 4u

#endif
