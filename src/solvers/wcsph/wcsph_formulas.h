/*
 * Weakly compressible SPH (Becker & Teschner 2007): the per-particle formulas, on plain data, compiled unchanged as C, OpenCL C and CUDA
 * (the shared sums and conventions: src/solvers/sph/sph_formulas.h).
 */
#ifndef PBF_SOLVERS_WCSPH_FORMULAS_H
#define PBF_SOLVERS_WCSPH_FORMULAS_H

#include "../sph/sph_formulas.h"

/* x^e for the Tait equation: an integer exponent (the default gamma = 7 and any whole gamma) by
 * binary powering, whose products round the same way in C, OpenCL C and CUDA, so every device
 * gets the CPU's bits (the libraries' pow differ in the last bit); other exponents by pow. */
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

/* WCSPH (Becker & Teschner 2007): Tait equation p = B ((rho / rho_0)^gamma - 1), clamped at 0
 * (no tension at the free surface), as k = dt^2 rho_0 p / rho^2 = dt^2 p / (rho_0 rel^2) with
 * rel = rho / rho_0. */
PBF_FN float pbf_wcsph_k(float rel, float stiffness, float exponent, float rho0, float dt) {
    if (!(rel > 1.0f)) return 0.0f;
    float p = stiffness * (pbf_tait_pow(rel, exponent) - 1.0f);
    return dt * dt * p / (rho0 * rel * rel);
}

/* WCSPH's artificial viscosity (Monaghan 1992, as Becker & Teschner 2007 use it):
 *   a_i = -sum_j m Pi_ij grad W_ij,  Pi_ij = -nu min(v_ij . x_ij, 0) / (|x_ij|^2 + 0.01 h^2),
 *   nu = 2 alpha h c_s / (rho_i + rho_j),
 * with rho_i + rho_j = 2 rho_0 (weakly compressible), so that m nu = V alpha h c_s: this returns
 * alpha h c_s (m^2/s), the sound speed c_s = sqrt(B gamma / rho_0). */
PBF_FN float pbf_wcsph_viscosity(float alpha, float stiffness, float exponent, float h, float rho0) {
    return alpha * h * PBF_SQRTF(stiffness * exponent / rho0);
}

#endif
