/*
 * State-equation SPH (Müller et al. 2003; "SESPH" in Koschier et al. 2019): the method's
 * descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_SESPH_H
#define PBF_SOLVER_SESPH_H

#include "solvers/solver.h"

/* Its kind: the registry's sixth row (the `solver` key stores the index), the first method
 * whose parameters live in a slice of pbf_world_def.method_params. */
#define PBF_SESPH_KIND 5

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_sesph                                                                      \
    { (pbf_solver_kind) PBF_SESPH_KIND, "sesph", "state-equation SPH (Müller et al. 2003)" }
#define PBF_SOLVER_KEY_sesph "sesph = state-equation SPH (Müller et al. 2003)"

extern const pbf_solver pbf_solver_sesph;

/* Its parameters: the slots of its slice (PBF_METHOD_PARAM, pbf_method_slice). */
enum { SESPH_STIFFNESS, SESPH_TENSION, SESPH_CFL, SESPH_VISCOSITY };
typedef struct pbf_sesph_params {
    float stiffness; /* k of p = k (rho / rho_0 - 1), Pa */
    float tension;   /* the share of the negative pressure kept below rest density */
    float cfl;       /* CFL number of the substep */
    float viscosity; /* artificial viscosity alpha */
} pbf_sesph_params;
static inline pbf_sesph_params pbf_sesph_params_of(const pbf_world_def *d) {
    const pbf_method_slot *s = pbf_method_slice(d, PBF_SESPH_KIND);
    pbf_sesph_params p = {s[SESPH_STIFFNESS].f, s[SESPH_TENSION].f, s[SESPH_CFL].f,
                          s[SESPH_VISCOSITY].f};
    return p;
}

/* ---- CPU stages (sesph_cpu.c) ----
 * Each returns the lowest index of a particle for which it produced a non-finite value, or
 * INT_MAX (a min-reduction, so deterministic). */
int pbf_sesph_pressure_cpu(pbf_world *w, const pbf_step_ctx *ctx);
int pbf_sesph_accel_cpu(pbf_world *w, const pbf_step_ctx *ctx);

/* ---- GPU stages (sesph_gpu.c, kernels in sesph.cl) ---- */
struct pbf_gpu_dev;
struct pbf_gpu_params;
/* stage "sesph_pressure": density, the linear pressure, viscosity; measured */
void pbf_sesph_pressure_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* stage "pressure_accel": the shared pressure acceleration with the viscosity */
void pbf_sesph_accel_gpu(pbf_world *w, struct pbf_gpu_dev *g, const pbf_step_ctx *c);
/* The GPU kernels' parameters of the method (pbf_solver.gpu_params). */
void pbf_sesph_fill_gpu_params(const pbf_world *w, struct pbf_gpu_params *P, float dt);

#endif
