/*
 * What the SPH family's stage tables share (wcsph, pcisph, iisph, dfsph): gravity and the grid
 * first, their own pressure stages in the middle, then the shared advection, collisions,
 * velocity, vorticity/XSPH and statistics. gravity keeps x* = x so that the grid and the
 * densities are those of the current positions; the pressure stages change the velocity;
 * advect + collide move the particles by dt v with the shared collisions and friction.
 *
 * The CFL rule of the incompressible ones (pcisph, iisph, dfsph): a particle moves at most cfl
 * particle diameters per substep.
 */
#ifndef PBF_SOLVERS_SPH_STAGES_H
#define PBF_SOLVERS_SPH_STAGES_H

#include "solvers/common/common.h"
#include "solvers/solver.h"

/* clang-format off */
#define PBF_SPH_HEAD PBF_ROW_GRAVITY, PBF_ROW_GRID
#define PBF_SPH_TAIL                                                                               \
    PBF_ROW_ADVECT, PBF_ROW_COLLIDE(0), PBF_ROW_VELOCITY, PBF_ROW_VORTICITY_XSPH, PBF_ROW_STATS
/* A method's pressure acceleration (the shared one, sph_cpu.c and sph_gpu.c, with its flags),
 * in its solve `loop` or as a warm start's (warm); it reuses the caches of the positions, and
 * the next measure reads v_j. */
#define PBF_SPH_ACCEL(loop, warm, cpu, gpu)                                                        \
    {"pressure_accel", PBF_TIMING(delta_p), loop, 0, warm, cpu, gpu, 1,                   \
     PBF_STAGE_REUSES_CACHE, PBF_ROW(PBF_F_VX) | PBF_ROW(PBF_F_VY) | PBF_ROW(PBF_F_VZ), NULL}
/* The halo of a stage that computes the pressure or its increment k_i into lambda, which the
 * pressure acceleration reads from neighbours */
#define PBF_SPH_K PBF_ROW(PBF_F_LAMBDA), NULL
/* clang-format on */

/* The longest substep at speed v for a CFL number cfl: cfl * 2r / v; 0 (the step as given) when
 * cfl or v is 0. */
static inline double pbf_sph_cfl_dt(const pbf_world_def *d, float cfl, double v) {
    return cfl > 0.0f && v > 0.0 ? cfl * 2.0 * d->particle_radius / v : 0.0;
}

#endif
