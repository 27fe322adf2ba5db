/*
 * Implicit incompressible SPH (Ihmsen et al. 2014): the per-particle formulas, on plain data, compiled unchanged as C, OpenCL C and CUDA
 * (the shared sums and conventions: src/solvers/sph/sph_formulas.h).
 */
#ifndef PBF_SOLVERS_IISPH_FORMULAS_H
#define PBF_SOLVERS_IISPH_FORMULAS_H

#include "../sph/sph_formulas.h"

/* IISPH (Ihmsen et al. 2014). The pressure displacement over a step is d_ii p_i + sum_j d_ij p_j
 * with d_ii = -dt^2 sum_j m / rho_i^2 grad W_ij and d_ij = -dt^2 m / rho_j^2 grad W_ij, and the
 * diagonal of the pressure Poisson equation is a_ii = sum_j m (d_ii - d_ji) . grad W_ij, d_ji =
 * dt^2 m / rho_i^2 grad W_ij. In k = dt^2 rho_0 p / rho^2 that displacement is the symmetric
 * pressure acceleration above times dt, -(sum_j V (k_i + k_j) grad W_ij + k_i grad wall_i), with
 * the wall mirroring the particle's pressure and at rest (d_ii gains the wall gradient, d_bi = 0),
 * and the diagonal becomes a_ii = -(|g_i|^2 + s_i): the change of rho_i / rho_0 per unit of
 * k_i (1/m^2), DFSPH's factor inverted. */
PBF_FN float pbf_iisph_diagonal(float g2, float s) { return -(g2 + s); }

/* IISPH's relaxed Jacobi update, p_i^{l+1} = (1 - omega) p_i^l + omega (rho_0 - rho_adv_i -
 * sum_{j != i} a_ij p_j^l) / a_ii, in the form p_i^l + omega (rho_0 - rho_i^l) / a_ii: rho_i^l =
 * rho_adv_i + sum_j a_ij p_j^l is the density predicted from the velocities the pressures p^l give
 * (v_adv plus the accumulated pressure accelerations, rho_i + dt D_i), so that sum_j d_ij p_j
 * lives in those velocities and is never stored. In units of k, with `rel` = rho_i^l / rho_0:
 * k_i + omega (1 - rel) / a_ii, clamped at 0 (no tension); 0 where a_ii vanishes (a particle
 * alone: |a_ii| <= eps). The scaling k_i = dt^2 rho_0 p_i / rho_i^2 is per particle, so the
 * Jacobi iterates are the paper's, scaled. */
PBF_FN float pbf_iisph_k(float k, float rel, float aii, float omega, float eps) {
    if (!(aii < -eps)) return 0.0f;
    float kn = k + omega * (1.0f - rel) / aii;
    return kn > 0.0f ? kn : 0.0f;
}

/* Warm starts (IISPH: Ihmsen et al. 2014, p_i^0 = 0.5 p_i(t - dt); DFSPH: Bender & Koschier
 * 2017 and SPlisHSPlasH's TimeStepDFSPH, half the previous sums of the stiffness parameters). The
 * value kept per particle between substeps is the physical one, independent of the substep's dt:
 * IISPH keeps p_i / rho_0 = k_i rel_i^2 / dt^2 (rel = rho / rho_0; the solve's k is per particle
 * dt^2 rho_0 p / rho^2), DFSPH kappa_i = k_i / dt^2 with k_i the sum of the iterations' k. A solve
 * starts from `frac` times it, in the units of k at the new density and dt. */
PBF_FN float pbf_iisph_warm_k(float frac, float p_rho0, float rel, float dt) {
    /* (rel = 0: a particle with no neighbour sums, an MPI ghost on the CPU, whose k the halo
     * exchange replaces: 0, not 0 / 0) */
    return rel > 0.0f ? frac * p_rho0 * (dt * dt) / (rel * rel) : 0.0f;
}
PBF_FN float pbf_iisph_warm_keep(float k, float rel, float dt) {
    return k * (rel * rel) / (dt * dt);
}
/* IISPH's start takes the smaller of the last two substeps' p_i / rho_0 (`last`, `before`): a
 * pressure that held for two substeps, not the correction of a transient. A substep that needed
 * many iterations (an impact, or the error that substeps stopped at their minimum iterations
 * left to grow) ends with the pressure that undid that error; half of it applied again in the
 * next substep, where the error is gone, pushes the fluid apart, and the iterations, stopping at
 * the tolerance of the average compression, do not take it back (measured: the dam break at 36
 * particles across gained 0.023 % of E(0) in one frame, from one substep after a solve of 44
 * iterations; with the smaller of the two that substep gains 0.0004 %, and no frame of the run
 * more than 0.0075 %). In a steady flow both are the same. */
PBF_FN float pbf_iisph_warm_p(float last, float before) { return before < last ? before : last; }

#endif
