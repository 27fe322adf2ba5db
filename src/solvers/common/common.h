/*
 * The stages several methods share: the prediction and the SPH solvers' gravity, the grid, the
 * collisions, the velocity update with the curl, vorticity confinement and XSPH, the advection
 * and the statistics.
 */
#ifndef PBF_SOLVERS_COMMON_H
#define PBF_SOLVERS_COMMON_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/common/common_cpu.c; grid and stats: src/backends/cpu/cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_cpu_predict(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_grid(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_collide(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_velocity(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_vorticity_xsph(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_gravity(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_advect(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_cpu_stats(pbf_world *w, const pbf_step_ctx *ctx);

#endif /* PBF_SOLVERS_COMMON_H */
