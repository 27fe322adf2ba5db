/*
 * PCISPH (Solenthaler and Pajarola 2009): the pressure corrected at the predicted positions.
 */
#ifndef PBF_SOLVERS_PCISPH_H
#define PBF_SOLVERS_PCISPH_H

#include "backends/backend.h"

/* ---- CPU stages (src/solvers/pcisph/pcisph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_pcisph_init_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_pcisph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_pcisph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

#endif /* PBF_SOLVERS_PCISPH_H */
