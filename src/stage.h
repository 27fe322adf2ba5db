/*
 * The vocabulary of a step, below the backends and the methods: the stages' names (ids), the
 * values every stage reads (the step context), and a stage's row in a method's table (its
 * solve, its warm start, its CPU function and GPU launches).
 */
#ifndef PBF_STAGE_H
#define PBF_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <pbf/pbf.h>

typedef enum pbf_stage_id {
    PBF_STAGE_PREDICT,        /* v += dt g, |v| <= vmax, x* = x + dt v */
    PBF_STAGE_GRID,           /* counting sort by the cell of x*, reorder every SORTED field */
    PBF_STAGE_LAMBDA,         /* density (eq. 2) with the wall, C (eq. 1), lambda (eq. 11) */
    PBF_STAGE_DELTA_P,        /* delta p with s_corr (eq. 12-14) and the wall term */
    PBF_STAGE_COLLIDE,        /* x* += delta p, collisions and friction */
    PBF_STAGE_VELOCITY,       /* v = (x* - x) / dt, vorticity omega (eq. 15), density at x* */
    PBF_STAGE_VORTICITY_XSPH, /* vorticity confinement (eq. 16), XSPH (eq. 17), x = x* */
    /* the SPH solvers' stages (their per-pair formulas: src/solvers/sph/sph_formulas.h and each
     * method's <name>_formulas.h) */
    PBF_STAGE_GRAVITY,         /* v += dt g, |v| <= vmax, x* = x (the neighbours are those of x) */
    PBF_STAGE_WCSPH_PRESSURE,  /* density, Tait pressure, k_i = dt^2 rho_0 p_i / rho_i^2 */
    PBF_STAGE_DFSPH_FACTOR,    /* density, DFSPH factor 1 / (|sum V grad W|^2 + sum |V grad W|^2) */
    PBF_STAGE_DIVERGENCE,      /* k_i = factor_i max(dt Drho_i/Dt / rho_0, 0) (measures) */
    PBF_STAGE_DENSITY_ADV,     /* k_i = factor_i max(rho_i / rho_0 + dt Drho_i/Dt / rho_0 - 1, 0) */
    PBF_STAGE_DFSPH_WARM_V,    /* DFSPH warm start of the divergence solve: k_i from kappa^v_i */
    PBF_STAGE_DFSPH_WARM,      /* DFSPH warm start of the density solve: k_i from kappa_i */
    PBF_STAGE_PCISPH_INIT,     /* PCISPH: pressure k_i = 0 */
    PBF_STAGE_PCISPH_PRESSURE, /* density at x + dt v, k_i += delta (rho*_i / rho_0 - 1), >= 0 */
    PBF_STAGE_IISPH_DIAGONAL,  /* IISPH: density, a_ii = -(|sum V grad W|^2 + sum |V grad W|^2) */
    PBF_STAGE_IISPH_PRESSURE,  /* rho_i + dt Drho_i/Dt, k_i += omega (rho_0 - rho_i^l) / a_ii */
    PBF_STAGE_PRESSURE_ACCEL,  /* v_i -= (sum_j V (k_i + k_j) grad W_ij + k_i grad wall) / dt */
    PBF_STAGE_ADVECT,          /* delta x = dt v, applied with collisions by PBF_STAGE_COLLIDE */
    PBF_STAGE_STATS,           /* statistics of the state into pbf_world.stats */
    PBF_STAGE_COUNT
} pbf_stage_id;

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
    pbf_stage_id id; /* its name, its slot of the guard and of the timings' breakdown */
    size_t timing;   /* offset of its double in pbf_timings */
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

#endif
