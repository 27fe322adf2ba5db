/*
 * Divergence-free SPH (Bender & Koschier 2015, 2017): the per-particle formulas, on plain data, compiled unchanged as C, OpenCL C and CUDA
 * (the shared sums and conventions: src/solvers/sph/sph_formulas.h).
 */
#ifndef PBF_SOLVERS_DFSPH_FORMULAS_H
#define PBF_SOLVERS_DFSPH_FORMULAS_H

#include "../sph/sph_formulas.h"

/* DFSPH factor (Bender & Koschier 2017, eq. 11, in units of V): 1 / (|g_i|^2 + s_i), or 0 where
 * a particle has no neighbours to push against. */
PBF_FN float pbf_dfsph_factor(float g2, float s, float eps) {
    float d = g2 + s;
    return d > eps ? 1.0f / d : 0.0f;
}

/* The source term of DFSPH's two solves, as a relative density error over the step:
 * density solve (Algorithm 3): rho*_i / rho_0 - 1 = rho_i / rho_0 + dt D_i - 1;
 * divergence solve (Algorithm 2): dt D_i; both only where they compress (>= 0).
 * The divergence solve leaves out a particle with too few neighbours, as SPlisHSPlasH's
 * TimeStepDFSPH does ("in case of particle deficiency do not perform a divergence solve": its
 * source and residual are 0 where fewer than 20 neighbours are within the kernel support, in
 * 3D): here where its density number rel = rho_i / rho_0, fluid and walls (the wall term stands
 * for the wall's particles, which SPlisHSPlasH counts where the walls are particles), is below
 * `min_rel` (dfsph_divergence_min_density; 0: never). A particle of a splash or of the free
 * surface has a large factor (few gradients to push against), so a large k_i for the
 * divergence its neighbourhood cannot resolve; the density solve still holds its density. */
PBF_FN float pbf_dfsph_source(float rel, float d, float dt, int divergence, float min_rel) {
    float c = divergence ? (rel < min_rel ? 0.0f : dt * d) : rel + dt * d - 1.0f;
    return c > 0.0f ? c : 0.0f;
}


/* DFSPH: the start applies only where the particle compresses (source > 0), as SPlisHSPlasH's
 * warm start does: elsewhere the solve, whose k_i are >= 0, could not undo it; and only in a
 * full neighbourhood, where the factor is at most `full` (twice the rest lattice's, 1 /
 * lattice_grad2), as only there is kappa kept: a particle with few neighbours (a splash, the
 * free surface) has a large factor, so a large k_i for a small source, which the next substep
 * would apply again, half of it, where it no longer compresses (measured: a dam break of 2,592
 * particles gained 37 % of its energy in one frame; SPlisHSPlasH caps kappa instead, at a value
 * in the units of its scene). */
PBF_FN float pbf_dfsph_warm_k(float frac, float kappa, float source, float factor, float full,
                              float dt) {
    return source > 0.0f && factor <= full ? frac * kappa * (dt * dt) : 0.0f;
}
PBF_FN float pbf_dfsph_warm_keep(float ksum, float factor, float full, float dt) {
    return factor <= full ? ksum / (dt * dt) : 0.0f;
}

/* The stiffness k_i an iteration of either DFSPH solve applies: the Jacobi update factor_i *
 * source_i (Bender & Koschier 2017, Algorithms 2 and 3), with Chebyshev's semi-iterative
 * acceleration (Wang 2015, eq. 10-12; dfsph_chebyshev_rho) when the iteration's weight omega
 * (pbf_chebyshev_omega) is not 1: k_i <- omega k_i(Jacobi) + (omega - 1) k_i(previous
 * iteration), PBF's update of lambda (pbf_chebyshev_lambda) on k_i. The velocity change is linear
 * in the k applied, so this is Wang's acceleration of the accumulated stiffness sum_k k_i.
 * The divergence solve (`divergence`) extrapolates only where the particle compresses: where its
 * source is 0 it applies nothing. The source counts compression only, so the solve is one of
 * inequalities, and the extrapolation (omega - 1) k_i(previous) of a particle that already
 * expands pushes its neighbours apart further: with the step as given (no CFL substeps) the dam
 * break's splashes then gained energy without bound (+358 % of E(0) in 1 s at 1/240 s, n = 18;
 * now none). The density solve keeps it: there the extrapolation is what the n = 18 dam break's
 * energy check needs (without it the energy rose by 0.0175 % of E(0) between two frames). */
PBF_FN float pbf_dfsph_k(float source, float factor, float previous, float omega,
                         int divergence) {
    return divergence && !(source > 0.0f)
               ? 0.0f
               : pbf_chebyshev_lambda(source * factor, previous, omega);
}

/* DFSPH's divergence warm start within the solve's first iteration (dfsph_divergence_warm_start):
 * that iteration applies the larger of its Jacobi k_i and the warm k_i (pbf_dfsph_warm_k of the
 * previous substep's kappa^v_i: 0 where the particle does not compress or its neighbourhood is
 * not full), so the start costs no pressure pass of its own, and where this substep needs less
 * than the warm pressure the iterations after it find the overshoot as expansion, which they
 * leave alone (the source counts compression only). The Chebyshev weights restart after it
 * (pbf_dfsph_cheb_iteration): their extrapolation from a warm k_i, which is not a Jacobi
 * update, would add half of it again. Measured on a falling block at dt = 5 ms (59,319
 * particles): 0.5 takes the iterations per step from 3.3 + 3.0 to 2.0 + 3.0. */
PBF_FN float pbf_dfsph_warm_first(float k, float kw) { return k > kw ? k : kw; }
/* The iteration whose Chebyshev weight an iteration of either solve takes: its own, or with the
 * warm start within the first iteration (warm_first), one less, so that the second iteration is
 * plain Jacobi and the sequence starts over from it. */
PBF_FN int pbf_dfsph_cheb_iteration(int iteration, int warm_first) {
    return warm_first && iteration > 0 ? iteration - 1 : iteration;
}

#endif
