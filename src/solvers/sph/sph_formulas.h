/*
 * What the SPH pressure solvers' per-particle formulas share, on plain data, compiled unchanged as
 * C, OpenCL C and CUDA (see src/sph/kernel.h); each method's own are in its folder
 * (src/solvers/<name>/<name>_formulas.h). The neighbour sums they finish are the ones every solver shares:
 *
 *   rho_i / rho_0 = sum_j V W_ij + wall_i                          (density, walls included)
 *   g_i           = sum_j V grad W_ij + grad wall_i               (gradient of rho_i / rho_0)
 *   s_i           = sum_j |V grad W_ij|^2
 *   D_i           = sum_j V (v_i - v_j) . grad W_ij + v_i . grad wall_i   (D rho_i/Dt / rho_0)
 *
 * with V = m / rho_0 and the walls the continuum boundary of walls.h (Akinci et al. 2012 in the
 * continuum limit: solid at rest density that does not move). Every pressure solver ends in the
 * same symmetric pressure acceleration (momentum conserving, Akinci et al. 2012 for the wall):
 *
 *   a_i = -(sum_j V (kappa_i + kappa_j) grad W_ij + kappa_i grad wall_i),  kappa = rho_0 p / rho^2
 *
 * stored as k = dt^2 kappa (m^2), so that the velocity change over a step is
 * -(sum_j V (k_i + k_j) grad W_ij + k_i grad wall_i) / dt, the same form as PBF's delta p
 * (Macklin & Müller 2013, eq. 12) divided by dt.
 */
#ifndef PBF_SOLVERS_SPH_FORMULAS_H
#define PBF_SOLVERS_SPH_FORMULAS_H

#include "../../sph/kernel.h"
#include "../../sph/walls.h"

#if defined(__OPENCL_VERSION__)
#define PBF_POWF(x, y) pow((x), (y))
#else
#define PBF_POWF(x, y) powf((x), (y))
#endif

/* The collisions and friction of walls.h on a velocity: the motion dt v from x (the position the
 * solve works at) is pushed out of the boxes and into the container, and v becomes what is left
 * of it. Inside the SPH solvers' iterations, as PBF projects its collisions in every iteration:
 * a wall stops the fluid in the solve itself, not after it. */
PBF_FN void pbf_sph_collide_velocity(const pbf_walls_consts *c, const PBF_GLOBAL pbf_wall_box *boxes,
                                     const float x[3], float dt, float *vx, float *vy, float *vz) {
    float q[3] = {x[0] + dt * *vx, x[1] + dt * *vy, x[2] + dt * *vz};
    if (!pbf_collide_inside(c, q)) pbf_collide(c, boxes, q, x);
    const float inv_dt = 1.0f / dt;
    *vx = (q[0] - x[0]) * inv_dt;
    *vy = (q[1] - x[1]) * inv_dt;
    *vz = (q[2] - x[2]) * inv_dt;
}

#endif
