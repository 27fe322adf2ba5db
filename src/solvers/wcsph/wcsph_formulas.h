/*
 * Weakly compressible SPH (Becker & Teschner 2007): the per-particle formulas, on plain data,
 * compiled unchanged as C, OpenCL C and CUDA. The state equation and its viscosity are shared
 * with the other state-equation method (src/solvers/sph/sph_formulas.h: pbf_state_k,
 * pbf_state_viscosity); WCSPH's is Tait's, clamped at 0.
 */
#ifndef PBF_SOLVERS_WCSPH_FORMULAS_H
#define PBF_SOLVERS_WCSPH_FORMULAS_H

#include "../sph/sph_formulas.h"

/* Tait's equation p = B ((rho / rho_0)^gamma - 1), clamped at 0 (no tension at the free
 * surface), as k = dt^2 rho_0 p / rho^2. */
PBF_FN float pbf_wcsph_k(float rel, float stiffness, float exponent, float rho0, float dt) {
    return pbf_state_k(rel, stiffness, exponent, 0.0f, rho0, dt);
}

#endif
