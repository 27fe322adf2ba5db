/*
 * The SPH pressure solvers' per-particle formulas on plain data, compiled unchanged as C, OpenCL C
 * and CUDA (see kernel.h). The neighbour sums they finish are the ones every solver shares:
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
#ifndef PBF_SPH_SOLVERS_H
#define PBF_SPH_SOLVERS_H

#include "kernel.h"
#include "walls.h"

#if defined(__OPENCL_VERSION__)
#define PBF_POWF(x, y) pow((x), (y))
#else
#define PBF_POWF(x, y) powf((x), (y))
#endif

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
