/*
 * Position Based Fluids (Macklin and Mueller 2013): the constraint solve of lambda and delta p.
 */
#ifndef PBF_SOLVERS_PBF_H
#define PBF_SOLVERS_PBF_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/pbf/pbf_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_pbf_lambda_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_pbf_delta_p_cpu(pbf_world *w, const pbf_step_ctx *ctx);

#endif /* PBF_SOLVERS_PBF_H */
