/*
 * The stages several methods share: the prediction and the SPH solvers' gravity, the grid, the
 * collisions, the velocity update with the curl, vorticity confinement and XSPH, the advection
 * and the statistics.
 */
#ifndef PBF_SOLVERS_COMMON_H
#define PBF_SOLVERS_COMMON_H

#include "fields.h"
#include "stage.h"

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

/* ---- GPU stages ------------------------------------------------------------------------------
 * The launches of the stages' kernels (common.cl) on a GPU device, either host (OpenCL, CUDA):
 * common_gpu.c, compiled once against the hosts' table of functions
 * (src/backends/gpu/gpu_steps.h). */
struct pbf_gpu_dev;
/* stage "predict": v += dt g (and the bed shear stress), |v| <= vmax, x* = x + dt v */
void pbf_gpu_predict(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "collide": x* += delta p, collisions and friction */
void pbf_gpu_collide(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "velocity": v = (x* - x) / dt, the curl omega and the density at x* */
void pbf_gpu_velocity(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "vorticity_xsph": vorticity confinement, XSPH, x = x* */
void pbf_gpu_vorticity_xsph(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "gravity": v += dt g (and the bed shear stress), |v| <= vmax, x* = x */
void pbf_gpu_gravity(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "advect": delta x = dt v, applied with the collisions */
void pbf_gpu_advect(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

/* The rows of the velocity stage that the post pass reads from neighbours: rho_j and |omega_j|,
 * which is in lambda, or, when PBF's warm start keeps lambda and vorticity confinement is on,
 * computed from omega_j, which the curl pass left in x (the CPU's post pass; a GPU's reads it
 * from lambda's buffer): then x too (common.c). */
unsigned pbf_velocity_halo(const pbf_world *w);

/* The grid stage on a GPU: the backends' own sort (src/backends/gpu/gpu_steps.c). */
void pbf_gpu_grid_stage(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);

/* ---- the shared stages' rows, for the methods' tables ----------------------------------------
 * (name, timing slot, the CPU function, the GPU launches and how many of them the non-finite
 * guard watches). COLLIDE runs inside PBF's iterations (loop) and after the SPH solvers'
 * advection (0). */
/* clang-format off */
#define PBF_ROW_PREDICT                                                                            \
    {"predict", PBF_TIMING(predict), 0, 0, 0, pbf_cpu_predict, pbf_gpu_predict, 1, 0, 0, NULL}
#define PBF_ROW_GRAVITY                                                                            \
    {"gravity", PBF_TIMING(predict), 0, 0, 0, pbf_cpu_gravity, pbf_gpu_gravity, 1, 0, 0, NULL}
#define PBF_ROW_GRID                                                                               \
    {"grid", PBF_TIMING(grid), 0, 0, 0, pbf_cpu_grid, pbf_gpu_grid_stage, 0, PBF_STAGE_SORTS, 0, NULL}
#define PBF_ROW_COLLIDE(loop)                                                                      \
    {"collide", PBF_TIMING(collide), loop, 0, 0, pbf_cpu_collide, pbf_gpu_collide, 1, 0, \
     PBF_ROW(PBF_F_QX) | PBF_ROW(PBF_F_QY) | PBF_ROW(PBF_F_QZ), NULL}
#define PBF_ROW_ADVECT                                                                             \
    {"advect", PBF_TIMING(collide), 0, 0, 0, pbf_cpu_advect, pbf_gpu_advect, 0, 0, 0, NULL}
/* velocity: the velocity update and the curl, two guarded launches on a GPU; its halo: the
 * density (XSPH reads rho_j) and |omega_j| (pbf_velocity_halo) */
#define PBF_ROW_VELOCITY                                                                           \
    {"velocity", PBF_TIMING(velocity), 0, 0, 0, pbf_cpu_velocity, pbf_gpu_velocity, 2, 0, \
     0, pbf_velocity_halo}
#define PBF_ROW_VORTICITY_XSPH                                                                     \
    {"vorticity_xsph", PBF_TIMING(velocity), 0, 0, 0, pbf_cpu_vorticity_xsph,            \
     pbf_gpu_vorticity_xsph, 1, 0, 0, NULL}
/* statistics: each backend's own reduction (a GPU backend's run_stage reduces on the device) */
#define PBF_ROW_STATS {"stats", PBF_TIMING(stats), 0, 0, 0, pbf_cpu_stats, NULL, 0, PBF_STAGE_STATS, 0, NULL}
/* clang-format on */

#endif /* PBF_SOLVERS_COMMON_H */
