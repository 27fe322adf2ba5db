/*
 * pbf — Position Based Fluids (Macklin & Müller, SIGGRAPH 2013) in C11.
 *
 * The public API. A newcomer reads it top to bottom in a few minutes:
 *
 *     pbf_world_def def = pbf_default_world_def();
 *     def.particle_radius = 0.01f;                      // change only what you care about
 *     pbf_world *w = NULL;
 *     pbf_error err;
 *     if (pbf_world_create(&def, &w, &err) != PBF_OK) { puts(err.message); return 1; }
 *     pbf_fluid_block blk = { .min = {0, 0, 0}, .max = {0.4f, 0.6f, 0.4f} };
 *     pbf_world_add_fluid_block(w, &blk, &err);
 *     for (int s = 0; s < 240; ++s) pbf_world_step(w, 1.0f / 240.0f, &err);
 *     pbf_particles p = pbf_world_particles(w);          // read-only SoA view
 *     pbf_world_destroy(w);
 *
 * Design (the reasoning is in ARCHITECTURE.md, the formulas in src/solver.c):
 *  - All state lives in a pbf_world; there is no global mutable state. Every object made by a
 *    *_create is released by the matching *_destroy.
 *  - Every fallible call returns a pbf_status and, when `err` is not NULL, fills err->message with a
 *    sentence that names the field and the value at fault. The library never exits or aborts.
 *  - Particle data is structure-of-arrays of float, reordered by grid cell every step, so the
 *    order of particles changes; pbf_particles.id gives each particle's stable identity.
 *  - Results are bit-identical for any thread count (OpenMP, `threads` below).
 *
 * Units are SI: metres, seconds, kilograms. The container is the axis-aligned box
 * [domain_min, domain_max]; no particle ever leaves it.
 */
#ifndef PBF_PBF_H
#define PBF_PBF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PBF_VERSION_MAJOR 0
#define PBF_VERSION_MINOR 1
#define PBF_VERSION_PATCH 0
#define PBF_VERSION_STRING "0.1.0"

typedef enum pbf_status {
    PBF_OK = 0,
    PBF_ERR_INVALID_ARGUMENT = 1, /* a value out of range, NaN, NULL where a pointer is needed */
    PBF_ERR_OUT_OF_MEMORY = 2,    /* an allocation failed */
    PBF_ERR_LIMIT = 3,            /* a size limit: too many particles, too many grid cells */
    PBF_ERR_IO = 4                /* used by tools built on the library (writers, scene files) */
} pbf_status;

/* Human-readable status name, e.g. "invalid argument". Never NULL. */
const char *pbf_status_string(pbf_status status);

typedef struct pbf_error {
    pbf_status status;
    char message[512];
} pbf_error;

typedef struct pbf_vec3 {
    float x, y, z;
} pbf_vec3;

/* The density constraint C_i = rho_i / rho_0 - 1 (paper eq. 1). "unilateral" solves only
 * C_i > 0 (compression only, as NVIDIA FleX does), so free-surface particles are never pulled
 * together; "bilateral" solves C_i = 0 as written in the paper and relies on s_corr. */
typedef enum pbf_constraint_mode {
    PBF_CONSTRAINT_UNILATERAL = 0,
    PBF_CONSTRAINT_BILATERAL = 1
} pbf_constraint_mode;

/* The pressure solver: the method that keeps the fluid incompressible. Every solver shares the
 * grid, the walls and their density contribution, collisions and friction, XSPH and vorticity
 * confinement; each has its own parameters (its own table in pbf/params.h, listed by
 * pbf_solvers()). The values are stable; only the solvers pbf_solvers() lists are built in.
 * Methods added after these five have no name here: their kind is their index in pbf_solvers()
 * (e.g. "sesph", state-equation SPH, Müller et al. 2003), set by the `solver` key's name
 * (pbf_param_set_choice) or from pbf_solvers(). */
typedef enum pbf_solver_kind {
    PBF_SOLVER_PBF = 0,    /* Position Based Fluids (Macklin & Müller 2013) */
    PBF_SOLVER_WCSPH = 1,  /* weakly compressible SPH (Becker & Teschner 2007) */
    PBF_SOLVER_DFSPH = 2,  /* divergence-free SPH (Bender & Koschier 2015, 2017) */
    PBF_SOLVER_PCISPH = 3, /* predictive-corrective incompressible SPH (Solenthaler & Pajarola
                              2009) */
    PBF_SOLVER_IISPH = 4   /* implicit incompressible SPH (Ihmsen et al. 2014) */
} pbf_solver_kind;

/* The smoothing kernel of the SPH solvers (WCSPH, PCISPH, IISPH, DFSPH). Their pressure force
 * is the symmetric SPH gradient of the pressure, and it conserves energy only when its gradient
 * is the gradient of the kernel that measures the density:
 *   PBF_SPH_KERNEL_CUBIC        the cubic spline (Monaghan 1992) for both, as SPlisHSPlasH;
 *   PBF_SPH_KERNEL_POLY6_SPIKY  W_poly6 for the density and grad W_spiky for the forces (Müller
 *                               et al. 2003, PBF's pair): the forces are not the density's
 *                               gradient, so the solvers feed energy into the fluid (a column
 *                               at rest never settles).
 * Position Based Fluids always uses poly6 / spiky, as Macklin & Müller 2013. */
typedef enum pbf_sph_kernel {
    PBF_SPH_KERNEL_CUBIC = 0,
    PBF_SPH_KERNEL_POLY6_SPIKY = 1
} pbf_sph_kernel;

/* Parameters of Position Based Fluids (Macklin & Müller 2013) alone. */
typedef struct pbf_pbf_params {
    int solver_iterations;      /* Jacobi iterations per step (when tolerance = 0) */
    float relaxation;           /* epsilon of eq. 11, relative to sum |grad C|^2 of a rest lattice */
    float over_relaxation;      /* omega scaling each Jacobi correction delta p (1 = the paper) */
    float chebyshev_rho;        /* Chebyshev acceleration of the iterations (Wang 2015): the
                                   estimated spectral radius rho of the Jacobi iteration; 0 = plain
                                   Jacobi (the paper) */
    float lambda_warm_start;    /* beta: each iteration's lambda_i adds beta times the previous
                                   iteration's, the first the previous step's last (heavy-ball
                                   momentum carried across steps); 0 = the paper. It acts
                                   only when every step runs at least 3 iterations
                                   (solver_iterations, or min_iterations with a tolerance):
                                   with fewer its momentum makes a resting column boil */
    float lambda_carry;         /* with the warm start (beta > 0): the first iteration adds
                                   lambda_carry times the previous step's last lambda_i, where
                                   the later ones add beta times the previous iteration's
                                   (lambda_carry = beta: every iteration alike) */
    pbf_constraint_mode constraint;
    float scorr_k;              /* tensile correction s_corr = -k (W(r)/W(dq))^n (eq. 13), for
                                   pairs closer than the rest spacing s (the part of s_corr above
                                   its value at s): keeps particles from clumping */
    int scorr_n;
    float scorr_dq;             /* |dq| as a fraction of h */
    float scorr_support;        /* s_corr up to its value at the rest spacing (an artificial
                                   pressure) pushes a surface particle of the rest lattice up by
                                   scorr_support times its weight per step: 1 holds the surface
                                   layer at the rest spacing, never lifts it; 0 = none */
    float scorr_wall;           /* the walls' share of that artificial pressure: the solid, ghost
                                   fluid at rest density in the wall density, pushes a particle
                                   off it as scorr_wall ghost neighbours at the rest spacing would
                                   (pbf_scorr_wall_term); 0 = the walls take no part in s_corr */
    float tolerance;            /* average density error to stop at, percent; 0: always
                                   solver_iterations iterations */
    int min_iterations, max_iterations; /* bounds of the iterations when tolerance > 0 */
    float cfl;                  /* substeps in which the fastest particle moves at most cfl
                                   particle diameters (2r) (the CFL condition); 0: off (the
                                   default) */
    float gravity_cfl;          /* substeps of at most gravity_cfl * sqrt(h / |g|) (the force
                                   condition, Monaghan 1992); 0: off. Both 0: the step as given
                                   (Macklin & Mueller 2013's fixed steps) */
} pbf_pbf_params;

/* Weakly compressible SPH (Becker & Teschner 2007): Tait equation of state
 * p = B ((rho / rho_0)^gamma - 1), symplectic Euler, the step split into substeps of at most
 * cfl * h / (c_s + v_max) with the sound speed c_s = sqrt(B gamma / rho_0). */
typedef struct pbf_wcsph_params {
    float stiffness;            /* B, Pa */
    float exponent;             /* gamma */
    float cfl;                  /* CFL number of the substep */
    float viscosity;            /* artificial viscosity alpha (Monaghan 1992) */
} pbf_wcsph_params;

/* Divergence-free SPH (Bender & Koschier 2017): a divergence solve (Algorithm 2) and a density
 * solve (Algorithm 3) per substep, the step split into CFL-limited substeps. */
typedef struct pbf_dfsph_params {
    float tolerance;            /* average density error of the density solve, percent */
    float divergence_tolerance; /* average density change per substep from the divergence, % */
    int min_iterations, max_iterations;                       /* density solve */
    int divergence_min_iterations, divergence_max_iterations; /* divergence solve */
    float cfl;                  /* substeps of at most cfl * 2r / v_max; 0: the step as given */
    float warm_start;           /* both solves start from this fraction of the previous
                                   substep's stiffness sums (SPlisHSPlasH: 0.5); 0: off */
    float divergence_min_density; /* the divergence solve leaves out particles whose
                                     rho_i / rho_0 (fluid and walls) is below this; 0: none */
    float chebyshev_rho;        /* Chebyshev acceleration of both solves' Jacobi iterations
                                   (Wang 2015) on k_i: the estimated spectral radius; 0: plain
                                   Jacobi, the paper */
    float divergence_warm_start; /* the divergence solve's first iteration applies at least
                                    this fraction of the previous substep's kappa^v_i, within its
                                    own pass (no start pass); it then replaces warm_start for that
                                    solve; 0: off */
} pbf_dfsph_params;

/* Predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009): per substep, predict
 * the positions, their density error, correct the pressure by a constant factor delta computed
 * once for a particle with a full neighbourhood (eq. 8), until the average error is small. */
typedef struct pbf_pcisph_params {
    float tolerance;            /* average predicted density error to stop at, percent */
    int min_iterations, max_iterations;
    float cfl;                  /* substeps of at most cfl * 2r / v_max; 0: the step as given */
} pbf_pcisph_params;

/* Implicit incompressible SPH (Ihmsen et al. 2014): relaxed Jacobi iterations on the pressure
 * Poisson equation with the diagonal a_ii, per substep. */
typedef struct pbf_iisph_params {
    float tolerance;            /* average predicted density error to stop at, percent */
    int min_iterations, max_iterations;
    float omega;                /* relaxation of the Jacobi update (the paper: 0.5) */
    float cfl;                  /* substeps of at most cfl * 2r / v_max; 0: the step as given */
    float warm_start;           /* the solve starts from p_i^0 = this times the previous
                                   substep's pressure (the paper: 0.5); 0: from p = 0 */
} pbf_iisph_params;

#define PBF_DEVICE_NAME_MAX 32

/* Room in pbf_world_def for the parameters of methods built in after the five above, which have
 * no block of their own: each such method has a slice of PBF_METHOD_SLOTS values (float or int,
 * as its table says), the slice of kind k being method_params[k - PBF_FIRST_SLICED_METHOD].
 * Their keys, units, defaults and ranges are in their tables (pbf_solver_params); set them by
 * key (pbf_param_find, pbf_param_set_number) as scene files and --set do. */
#define PBF_FIRST_SLICED_METHOD 5
#define PBF_METHOD_SLICES 8
#define PBF_METHOD_SLOTS 32
typedef union pbf_method_slot {
    float f;
    int i;
} pbf_method_slot;

/* The walls the bed shear stress (bed_friction) acts on. */
typedef enum pbf_bed_walls {
    PBF_BED_WALLS_BED = 0, /* the faces gravity presses the liquid onto (n . g < 0): the floor and
                              the tops of boxes under the usual gravity */
    PBF_BED_WALLS_ALL = 1  /* every face of the container and of the boxes */
} pbf_bed_walls;

/* Everything that defines a world: what every solver shares, then the solver's own parameters.
 * Make it with pbf_default_world_def() and change fields. Ranges, units and descriptions are in
 * the parameter tables (pbf/params.h), which also name the scene-file keys. */
typedef struct pbf_world_def {
    pbf_vec3 domain_min;        /* container box, m */
    pbf_vec3 domain_max;        /* m */
    pbf_vec3 gravity;           /* m/s^2 */
    float particle_radius;      /* m; particle spacing at rest is 2 * radius */
    float rest_density;         /* kg/m^3 */
    float kernel_ratio;         /* kernel radius h = kernel_ratio * spacing */
    float xsph_viscosity;       /* XSPH c (eq. 17) */
    float vorticity;            /* vorticity confinement epsilon (eq. 16), m/s */
    float cfl;                  /* speed limit: |v| <= cfl * h / dt (FleX's maxSpeed), a safety net
                                   that the shipped scenes never reach (default 2); every cut is
                                   counted in pbf_stats.speed_clamps */
    float friction_static;      /* wall friction coefficients (PBD friction, Macklin et al. 2014) */
    float friction_dynamic;
    float bed_friction;         /* bed shear stress coefficient C_f: tau = rho C_f |u_t| u_t on the
                                   particles within one spacing of a wall (pbf_bed_drag) */
    pbf_bed_walls bed_friction_walls; /* the walls it acts on */
    int max_particles;          /* capacity reserved by pbf_world_create; 0 = grow as needed */
    int threads;                /* OpenMP threads of the CPU backend; 0 = the OpenMP default */
    /* where the step runs: "cpu", "opencl", "opencl:PLATFORM.DEVICE", "cuda", "cuda:N"
     * (pbf_list_devices tells what this machine has) */
    char device[PBF_DEVICE_NAME_MAX];
    pbf_solver_kind solver;
    pbf_sph_kernel sph_kernel;  /* the SPH solvers' kernel (PBF always uses poly6 / spiky) */
    pbf_pbf_params pbf;         /* solver = PBF_SOLVER_PBF */
    pbf_wcsph_params wcsph;     /* solver = PBF_SOLVER_WCSPH */
    pbf_dfsph_params dfsph;     /* solver = PBF_SOLVER_DFSPH */
    pbf_pcisph_params pcisph;   /* solver = PBF_SOLVER_PCISPH */
    pbf_iisph_params iisph;     /* solver = PBF_SOLVER_IISPH */
    /* the later methods' parameters (see PBF_METHOD_SLOTS) */
    pbf_method_slot method_params[PBF_METHOD_SLICES][PBF_METHOD_SLOTS];
} pbf_world_def;

pbf_world_def pbf_default_world_def(void);

/* Checks every field of a definition; returns PBF_OK or fills err naming the field and value. */
pbf_status pbf_world_def_validate(const pbf_world_def *def, pbf_error *err);

typedef struct pbf_world pbf_world;

pbf_status pbf_world_create(const pbf_world_def *def, pbf_world **out_world, pbf_error *err);
void pbf_world_destroy(pbf_world *world); /* NULL is allowed */

/* A box of fluid filled with a cubic lattice at the rest spacing (2 * particle_radius), the first
 * layer half a spacing inside `min`. The block must lie inside the container. */
typedef struct pbf_fluid_block {
    pbf_vec3 min, max;  /* m */
    pbf_vec3 velocity;  /* initial velocity, m/s */
} pbf_fluid_block;

/* Number of particles a block would add (0 if it is too thin to hold one layer). */
int64_t pbf_fluid_block_count(const pbf_world_def *def, const pbf_fluid_block *block);

pbf_status pbf_world_add_fluid_block(pbf_world *world, const pbf_fluid_block *block, pbf_error *err);

/* Prescribed motion of a moving wall: its offset from the rest position at time t. */
typedef enum pbf_motion_type {
    PBF_MOTION_NONE = 0,      /* static obstacle */
    PBF_MOTION_OSCILLATE = 1, /* offset = direction * amplitude * sin(2 pi (t - start) / period + phase) */
    PBF_MOTION_LINEAR = 2     /* offset = direction * speed * (clamp(t, start, stop) - start) */
} pbf_motion_type;

typedef struct pbf_motion {
    pbf_motion_type type;
    pbf_vec3 direction;  /* normalised by the library */
    float amplitude;     /* m (oscillate) */
    float period;        /* s (oscillate) */
    float phase;         /* rad (oscillate) */
    float speed;         /* m/s (linear) */
    float start, stop;   /* s: the wall moves only for start <= t <= stop; stop < 0 = forever */
} pbf_motion;

/* A solid box: a static obstacle (motion.type = PBF_MOTION_NONE) or a moving wall. Fluid feels
 * it through its density contribution (no under-density, no clumping) and collisions with
 * friction. Boxes may not overlap one another. */
typedef struct pbf_box {
    pbf_vec3 min, max;   /* rest position, m */
    pbf_motion motion;
} pbf_box;

pbf_status pbf_world_add_box(pbf_world *world, const pbf_box *box, pbf_error *err);
int pbf_world_box_count(const pbf_world *world);
/* The box's current extent (after its motion at the world's current time). */
pbf_status pbf_world_box_bounds(const pbf_world *world, int index, pbf_vec3 *min, pbf_vec3 *max);

/* Advance by dt seconds: one step of Algorithm 1. Fails only on invalid dt. */
pbf_status pbf_world_step(pbf_world *world, float dt, pbf_error *err);

/* Read-only view of the particles, in the current (cell-sorted) memory order. Valid until the
 * next call that changes the world. */
typedef struct pbf_particles {
    int count;
    const float *x, *y, *z;     /* positions, m */
    const float *vx, *vy, *vz;  /* velocities, m/s */
    const float *density;       /* kg/m^3, at the positions above (end of the last step) */
    const uint32_t *id;         /* stable particle identity: order of creation */
} pbf_particles;

pbf_particles pbf_world_particles(const pbf_world *world);

/* The particle fields that views, snapshots, checkpoints and writers carry, declared once: name,
 * element type, components, unit. Their order is the order of the members of pbf_particles
 * (and of pbf_snapshot): position (x, y, z), velocity (vx, vy, vz), density, id. */
typedef enum pbf_field_type { PBF_FIELD_FLOAT32 = 0, PBF_FIELD_UINT32 = 1 } pbf_field_type;

typedef struct pbf_field_info {
    const char *name;       /* "position", "velocity", "density", "id" */
    pbf_field_type type;
    int components;         /* 3 for vectors, else 1 */
    const char *unit;
    const char *description;
} pbf_field_info;

const pbf_field_info *pbf_particle_fields(size_t *count);
/* The array of one component of public field `field` in a view (NULL if out of range). */
const void *pbf_particles_component(const pbf_particles *particles, size_t field, int component);

/* Statistics of the current state (after the last step, or of the initial state). */
typedef struct pbf_stats {
    double time;               /* simulated time, s */
    int64_t steps;             /* steps taken */
    int particles;
    double density_error_avg;  /* mean over particles of max(rho/rho0 - 1, 0), percent */
    double density_error_max;  /* maximum of the same, percent */
    double max_speed;          /* m/s */
    int nonfinite;             /* particles with a non-finite position or velocity */
    int escaped;               /* particles outside the container */
    const char *bad_stage;     /* first stage of the last step that produced a non-finite value
                                  ("predict", "lambda", "delta_p", "collide", "velocity",
                                  "vorticity_xsph", or a stage of another solver), or NULL */
    /* The pressure solve of the last step (all its substeps): */
    int substeps;              /* substeps the step was split into (its CFL rule), else 1 */
    int iterations;            /* iterations of the density solve, summed over the substeps */
    double solver_error;       /* average density error the density solve reached in its last
                                  substep (its own measure, percent; WCSPH: the density error
                                  before the pressure force) */
    int divergence_iterations; /* DFSPH: iterations of the divergence solve, summed */
    double divergence_error;   /* DFSPH: average density change per substep from the velocity
                                  divergence that the divergence solve reached, percent */
    int64_t speed_clamps;      /* velocities the speed limit |v| <= cfl * h / dt cut in the last
                                  step (all its substeps; a particle counts once per velocity
                                  update that hit the limit: prediction, velocity from the
                                  positions, after XSPH and vorticity). 0 when the limit never
                                  changed the motion; raise cfl (or take smaller steps) if not */
} pbf_stats;

pbf_stats pbf_world_stats(const pbf_world *world);

/* Health check of the current state, for instability guards. `density_limit` is the maximum
 * density error in percent above which the state counts as unstable (<= 0: not checked).
 * Checks, in order: non-finite position or velocity, particle outside the container, density
 * error. On failure `check` names it and `index`/`id`/`position`/`value` describe the worst
 * particle (the first non-finite one; the one farthest outside; the densest). */
typedef struct pbf_diagnosis {
    int ok;               /* 1 if every check passed */
    const char *check;    /* "non-finite", "escaped", "density", or NULL */
    const char *stage;    /* pbf_stats.bad_stage for non-finite values, else NULL */
    int index;            /* memory index of the worst particle, -1 if none */
    uint32_t id;          /* its stable id */
    pbf_vec3 position;
    double value;         /* distance outside (m) or density error (%) */
} pbf_diagnosis;

pbf_diagnosis pbf_world_diagnose(const pbf_world *world, double density_limit);

/* The complete dynamic state of a world, for checkpoints. Take it with pbf_world_snapshot (the
 * pointers alias the world's arrays, valid until the next change) and give it back to a world
 * created from the same definition and boxes with pbf_world_restore: the run then continues
 * bit-identically, because the memory order of the particles is part of the state. */
typedef struct pbf_snapshot {
    double time;
    int64_t steps;
    int count;
    const float *x, *y, *z, *vx, *vy, *vz, *density;
    const uint32_t *id;
    /* The per-particle row the solver carries to the next step: PBF's multipliers lambda_i of
     * the last step with its warm start (lambda_warm_start != 0), IISPH's pressure of the last
     * substep with its warm start (iisph_warm_start != 0), else NULL; restored as 0 when NULL
     * (the run then differs from an uninterrupted one in the bits; so does DFSPH's with
     * dfsph_warm_start, whose two rows are not kept) */
    const float *lambda;
} pbf_snapshot;

pbf_snapshot pbf_world_snapshot(const pbf_world *world);
/* Replaces every particle of the world by the snapshot's (copied; count may differ from the
 * world's). Fails on NULL arrays, negative counts or non-finite time. */
pbf_status pbf_world_restore(pbf_world *world, const pbf_snapshot *snapshot, pbf_error *err);

/* Wall-clock seconds spent in each stage of the step, summed since creation or the last reset
 * (for benchmarks and profiling; measuring does not change results). */
typedef struct pbf_timings {
    double predict;   /* apply gravity, predict positions */
    double grid;      /* counting sort and reorder of all particle arrays */
    double lambda;    /* density and lambda passes (all iterations); the SPH solvers' density,
                         factor, equation-of-state and predicted-density passes */
    double delta_p;   /* position-correction passes (all iterations); the SPH solvers' pressure
                         accelerations */
    double collide;   /* applying corrections, collisions and friction (all iterations) */
    double velocity;  /* velocity update, vorticity, XSPH */
    double stats;     /* statistics reduction */
    double total;     /* the whole of pbf_world_step */
    int64_t steps;
} pbf_timings;

pbf_timings pbf_world_timings(const pbf_world *world);
void pbf_world_reset_timings(pbf_world *world);
/* Per-stage timings (on = 1) wait for the device at the end of every stage. On the CPU that costs
 * nothing and they are on from creation; on a GPU each wait is a round trip that the step does not
 * otherwise make, so they start off there, and only `total` and `steps` are measured until a
 * caller (a profiler, `pbf bench`) turns them on. Results do not depend on it. */
int pbf_world_set_stage_timing(pbf_world *world, int on); /* returns the previous setting */

/* Derived quantities of a definition, for tools and tests. */
typedef struct pbf_derived {
    float spacing;        /* 2 * particle_radius, m */
    float h;              /* kernel radius, m */
    float mass;           /* particle mass making a rest lattice sit at rest density, kg */
    float lattice_grad2;  /* sum_k |grad_k C_i|^2 of a rest-lattice particle, 1/m^2 */
    float max_speed;      /* the CFL limit for a step of dt is cfl * h / dt; this is cfl * h, m */
} pbf_derived;

pbf_derived pbf_world_derived(const pbf_world *world);

/* Bytes of memory a CPU world holds per particle of capacity (excluding the grid, which is
 * per cell), with neighbour lists at a typical 40 neighbours. */
size_t pbf_bytes_per_particle(void);

/* Memory of a world on its device: bytes per particle of capacity (every array and, on the CPU,
 * the neighbour lists as now sized) and the grid's bytes. */
typedef struct pbf_memory {
    const char *device;        /* backend name: "cpu", "opencl", "cuda" */
    double bytes_per_particle; /* arrays (and CPU neighbour lists) per particle of capacity */
    size_t grid_bytes;         /* cell starts */
    size_t total_bytes;        /* everything the world holds on its device */
} pbf_memory;

pbf_memory pbf_world_memory(const pbf_world *world);

/* Neighbour pairs (i, j), i itself included, with |x_i - x_j| < h at the particles' current
 * positions: divided by the particle count, the neighbours per particle that the neighbour
 * passes of a step starting now loop over (the CPU backend lists them at the predicted
 * positions, a small move away). For performance models (`pbf bench`). Counted on each call over
 * a grid of its own (the work of one neighbour search, 20 bytes per particle of temporary
 * memory; a GPU world's state is downloaded first). 0 for an empty world; -1 for NULL or when
 * the memory cannot be allocated. */
int64_t pbf_world_neighbour_pairs(const pbf_world *world);

/* ---- devices ------------------------------------------------------------------------------ */

/* One compute device of this machine, as `pbf devices` lists it. */
typedef struct pbf_device_info {
    char id[PBF_DEVICE_NAME_MAX]; /* what world_def.device takes: "cpu", "opencl:0.0", "cuda:0" */
    char name[128];
    char driver[96];              /* driver or runtime version */
    size_t memory;                /* bytes of device memory (host memory for the CPU) */
    int compute_units;            /* cores, OpenCL compute units or CUDA multiprocessors */
} pbf_device_info;

/* Fills up to `max` entries and returns how many devices there are (the CPU first, then the
 * OpenCL and CUDA devices this build can reach). `note` (may be NULL) receives a sentence per
 * backend that is not built in or found no device. */
int pbf_list_devices(pbf_device_info *out, int max, char *note, size_t note_size);

#ifdef __cplusplus
}
#endif

#endif /* PBF_PBF_H */
