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

/* x^e for the state equations: an integer exponent (Tait's default gamma = 7, the linear
 * equation's 1, any whole gamma) by binary powering, whose products round the same way in C,
 * OpenCL C and CUDA, so every device gets the CPU's bits (the libraries' pow differ in the last
 * bit); other exponents by pow. */
PBF_FN float pbf_tait_pow(float x, float e) {
    if (!(e >= 1.0f && e <= 64.0f) || (float)(int)e != e) return PBF_POWF(x, e);
    float r = 1.0f, b = x;
    for (int k = (int)e;;) {
        if (k & 1) r *= b;
        k >>= 1;
        if (k == 0) break;
        b *= b;
    }
    return r;
}

/* The pressure of a state equation p = B ((rho / rho_0)^gamma - 1) (Tait's with gamma = 7,
 * Becker & Teschner 2007; the linear one with gamma = 1, Müller et al. 2003), as
 * k = dt^2 rho_0 p / rho^2 = dt^2 p / (rho_0 rel^2) with rel = rho / rho_0. Below rest density
 * the pressure is negative (tension) and is scaled by `tension`: 0 clamps it at 0, as WCSPH does
 * (no tension at the free surface), 1 keeps it as the state equation gives it. */
PBF_FN float pbf_state_k(float rel, float stiffness, float exponent, float tension, float rho0,
                         float dt) {
    if (!(rel > 1.0f) && !(tension > 0.0f)) return 0.0f;
    float p = stiffness * (pbf_tait_pow(rel, exponent) - 1.0f);
    if (!(rel > 1.0f)) p *= tension;
    return dt * dt * p / (rho0 * rel * rel);
}

/* The artificial viscosity of the state-equation methods (Monaghan 1992, as Becker & Teschner
 * 2007 use it):
 *   a_i = -sum_j m Pi_ij grad W_ij,  Pi_ij = -nu min(v_ij . x_ij, 0) / (|x_ij|^2 + 0.01 h^2),
 *   nu = 2 alpha h c_s / (rho_i + rho_j),
 * with rho_i + rho_j = 2 rho_0 (weakly compressible), so that m nu = V alpha h c_s: this returns
 * alpha h c_s (m^2/s), the sound speed c_s = sqrt(B gamma / rho_0). */
PBF_FN float pbf_state_viscosity(float alpha, float stiffness, float exponent, float h,
                                 float rho0) {
    return alpha * h * PBF_SQRTF(stiffness * exponent / rho0);
}

#endif
