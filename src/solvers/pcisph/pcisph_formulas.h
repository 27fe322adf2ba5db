/*
 * Predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009): the per-particle formulas, on plain data, compiled unchanged as C, OpenCL C and CUDA
 * (the shared sums and conventions: src/solvers/sph/sph_formulas.h).
 */
#ifndef PBF_SOLVERS_PCISPH_FORMULAS_H
#define PBF_SOLVERS_PCISPH_FORMULAS_H

#include "../sph/sph_formulas.h"

/* PCISPH (Solenthaler & Pajarola 2009): the pressure of particle i grows by delta times its
 * density error at the predicted positions, p_i += delta (rho*_i - rho_0), with delta = 1 /
 * (beta (|sum_j grad W_ij|^2 + sum_j |grad W_ij|^2)) and beta = 2 dt^2 m^2 / rho_0^2 (eq. 8),
 * computed once for a prototype particle with a full neighbourhood: the particles of the rest
 * lattice within h, where the first sum vanishes. As k = dt^2 p / rho_0 (rho_0 in the pressure
 * force, as in the paper) and with V = m / rho_0 this is k_i += delta_k (rho*_i / rho_0 - 1),
 * delta_k = 1 / (2 sum_j |V grad W_ij|^2): dt cancels. `lattice_grad2` is that sum (1/m^2).
 * Each correction's pressure force is the symmetric acceleration above with its gradients taken
 * at the predicted positions x + dt v where the density was measured (taken at the start of the
 * step instead, the corrections feed energy into a fluid at rest). */
PBF_FN float pbf_pcisph_delta(float lattice_grad2) { return 0.5f / lattice_grad2; }

/* PCISPH's corrected pressure, clamped at 0: no tension at the free surface, where the
 * predicted density is below rest density for lack of neighbours. `err` = rho*_i / rho_0 - 1. */
PBF_FN float pbf_pcisph_k(float k, float err, float delta) {
    float kn = k + delta * err;
    return kn > 0.0f ? kn : 0.0f;
}

#endif
