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

#include "solvers/solver.h"

/* clang-format off */
#define PBF_SPH_HEAD                                                                               \
    {PBF_STAGE_GRAVITY, PBF_TIMING(predict), 0, 0, 0}, {PBF_STAGE_GRID, PBF_TIMING(grid), 0, 0, 0}
#define PBF_SPH_TAIL                                                                               \
    {PBF_STAGE_ADVECT, PBF_TIMING(collide), 0, 0, 0},                                              \
        {PBF_STAGE_COLLIDE, PBF_TIMING(collide), 0, 0, 0},                                         \
        {PBF_STAGE_VELOCITY, PBF_TIMING(velocity), 0, 0, 0},                                       \
        {PBF_STAGE_VORTICITY_XSPH, PBF_TIMING(velocity), 0, 0, 0},                                 \
        {PBF_STAGE_STATS, PBF_TIMING(stats), 0, 0, 0}
/* clang-format on */

/* The longest substep at speed v for a CFL number cfl: cfl * 2r / v; 0 (the step as given) when
 * cfl or v is 0. */
static inline double pbf_sph_cfl_dt(const pbf_world_def *d, float cfl, double v) {
    return cfl > 0.0f && v > 0.0 ? cfl * 2.0 * d->particle_radius / v : 0.0;
}

#endif
