/*
 * IISPH (Ihmsen et al. 2014): the relaxed Jacobi solve of the pressure Poisson equation.
 */
#ifndef PBF_SOLVERS_IISPH_H
#define PBF_SOLVERS_IISPH_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/iisph/iisph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_iisph_diagonal_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_iisph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_iisph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

#endif /* PBF_SOLVERS_IISPH_H */
