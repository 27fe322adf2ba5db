/*
 * WCSPH (Becker and Teschner 2007): the Tait pressure with artificial viscosity.
 */
#ifndef PBF_SOLVERS_WCSPH_H
#define PBF_SOLVERS_WCSPH_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/wcsph/wcsph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_wcsph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_wcsph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

#endif /* PBF_SOLVERS_WCSPH_H */
