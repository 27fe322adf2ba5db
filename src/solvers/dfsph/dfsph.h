/*
 * DFSPH (Bender and Koschier 2015): the divergence and density solves with their warm starts.
 */
#ifndef PBF_SOLVERS_DFSPH_H
#define PBF_SOLVERS_DFSPH_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/dfsph/dfsph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_dfsph_factor_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_divergence_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_density_adv_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_warm_v_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_warm_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_dfsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

#endif /* PBF_SOLVERS_DFSPH_H */
