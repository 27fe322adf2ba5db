/*
 * The GPU launches of the stages several methods share (common.cl): PBF's predict, collide,
 * velocity (with the curl) and vorticity_xsph, which the SPH family's steps also run after their
 * pressure stages, and the SPH family's gravity and advect. Compiled once for both GPU hosts
 * (src/backends/gpu/gpu_steps.h).
 */
#include <stddef.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "backends/gpu/gpu_steps.h"
#include "solvers/common/common.h"

/* PBF's warm start carries lambda to the next step, but the curl pass puts |omega| there for the
 * post pass (and a distributed run's halo sends it to the ghosts from there): with vorticity
 * confinement lambda waits in a buffer of its own (wnorm) from the velocity stage to the end of
 * the post pass (the GPU's other buffers are all in use there; the CPU instead takes |omega| from
 * omega, see cpu.c). Without it the curl leaves lambda alone. Returns that buffer, or 0. */
static pbf_gpu_mem carried_lambda(pbf_world *w, pbf_gpu_dev *g) {
    pbf_gpu_mem wn = (pbf_gpu_mem)0;
    if (pbf_lambda_carried(w) && w->def.vorticity > 0.0f) {
        const size_t need = (size_t)w->count * sizeof(float);
        if (need > g->wnorm_cap) {
            const size_t cap = (need + need / 4 + 256) / 16 * 16;
            if (g->wnorm) pbf_gpu_free(g, g->wnorm);
            g->wnorm = pbf_gpu_alloc(g, cap);
            g->wnorm_cap = g->wnorm ? cap : 0;
        }
        if (g->wnorm && need > 0)
            wn = g->wnorm;
        else if (need > 0)
            pbf_gpu_fail(g);
    }
    return wn;
}

/* a distributed run's ghosts (their speed-limit cuts are their owners'), or none */
static pbf_gpu_mem ghosts(const pbf_gpu_dev *g) {
    return g->ghost_on ? g->ghost : (pbf_gpu_mem)0;
}

void pbf_gpu_predict(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    pbf_gpu_substep_start(g);
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_PREDICT, n, wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)), PBF_GPU_A(g->boxes),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
}

void pbf_gpu_collide(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_COLLIDE, n, wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)), PBF_GPU_A(PBF_GPU_FB(SX)),
                   PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(g->boxes),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
}

void pbf_gpu_velocity(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_mem wn = carried_lambda(w, g);
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    /* the neighbour sets' positions: PBF's grid leaves x*_0 in the velocity buffers */
    const pbf_gpu_mem q0v[3] = {PBF_GPU_FB(VX), PBF_GPU_FB(VY), PBF_GPU_FB(VZ)};
    const pbf_gpu_mem ghost = ghosts(g);
    if (wn) pbf_gpu_copy(g, wn, PBF_GPU_FB(LAMBDA), n * sizeof(float));
    /* Buffers from here to the end of the step (v holds q0, see the grid and advect):
     *   velocity  v = (x* - x) / dt          -> s   (the CPU: -> v)
     *   curl      omega                      -> x   (the CPU: -> s), |omega| -> lambda
     *   post      new velocity, in place     -> x   (it reads only its own omega)
     * then x <- x*, v <- x, and x*, s take the free buffers (old q0 and old velocity). */
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_VELOCITY, n, wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(PBF_GPU_FB(SX)),
                   PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)), PBF_GPU_A(ghost),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
    /* the first non-finite particle so far, at its start-of-step position, before the
     * position buffer takes omega */
    pbf_gpu_capture(g, 0, slot + 1);
    /* the curl's own slot (also stage "velocity"): non-finite omega from finite velocities
     * cannot happen, so this slot is never the step's first in practice; if it were, the
     * position reported would be x* (captured after the post pass) */
    const int curl = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_CURL, n, wg, PBF_GPU_NB(q0v), PBF_GPU_A(PBF_GPU_FB(SX)),
                   PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)),
                   PBF_GPU_A(PBF_GPU_FB(LAMBDA)), PBF_GPU_A(g->bad), PBF_GPU_A(curl));
}

void pbf_gpu_vorticity_xsph(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_mem wn = carried_lambda(w, g);
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    const pbf_gpu_mem nb_cell = pbf_gpu_nb_cell(g), nb_start = pbf_gpu_nb_start(g);
    const pbf_gpu_mem ghost = ghosts(g);
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_VORTICITY_XSPH, n, wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)), PBF_GPU_A(nb_cell),
                   PBF_GPU_A(nb_start), PBF_GPU_A(PBF_GPU_FB(VX)), PBF_GPU_A(PBF_GPU_FB(VY)),
                   PBF_GPU_A(PBF_GPU_FB(VZ)), PBF_GPU_A(PBF_GPU_FB(SX)), PBF_GPU_A(PBF_GPU_FB(SY)),
                   PBF_GPU_A(PBF_GPU_FB(SZ)), PBF_GPU_A(PBF_GPU_FB(PX)), PBF_GPU_A(PBF_GPU_FB(PY)),
                   PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(PBF_GPU_FB(LAMBDA)),
                   PBF_GPU_A(PBF_GPU_FB(DENSITY)), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(ghost),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
    if (wn) pbf_gpu_copy(g, PBF_GPU_FB(LAMBDA), wn, n * sizeof(float)); /* lambda back */
    for (int a = 0; a < 3; ++a) {
        pbf_gpu_mem x = g->field[PBF_F_PX + a], q = g->field[PBF_F_QX + a],
                    q0 = g->field[PBF_F_VX + a], v = g->field[PBF_F_SX + a];
        g->field[PBF_F_PX + a] = q;  /* x <- x* */
        g->field[PBF_F_VX + a] = x;  /* v <- the new velocity */
        g->field[PBF_F_QX + a] = q0; /* free */
        g->field[PBF_F_SX + a] = v;  /* free */
    }
    /* the curl's and the post pass's particle, at x* (the CPU reports x* for this stage) */
    pbf_gpu_capture(g, slot - 1, slot + 1);
}

/* the SPH solvers' first stage (buffers during their pressure stages: density, s, lambda as
 * cpu.c) */
void pbf_gpu_gravity(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    pbf_gpu_substep_start(g);
    const int slot = pbf_gpu_next_slot(&g->step);
    PBF_GPU_LAUNCH(g, PBF_GK_GRAVITY, n, wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)), PBF_GPU_A(PBF_GPU_FB(QX)),
                   PBF_GPU_A(PBF_GPU_FB(QY)), PBF_GPU_A(PBF_GPU_FB(QZ)), PBF_GPU_A(g->boxes),
                   PBF_GPU_A(g->bad), PBF_GPU_A(slot));
}

void pbf_gpu_advect(pbf_world *w, pbf_gpu_dev *g, const pbf_step_ctx *c) {
    const pbf_gpu_params P = pbf_gpu_params_of(w, g, c);
    const size_t n = (size_t)w->count, wg = g->wg;
    PBF_GPU_LAUNCH(g, PBF_GK_ADVECT, n, wg, PBF_GPU_A(P), PBF_GPU_A(PBF_GPU_FB(PX)),
                   PBF_GPU_A(PBF_GPU_FB(PY)), PBF_GPU_A(PBF_GPU_FB(PZ)), PBF_GPU_A(PBF_GPU_FB(VX)),
                   PBF_GPU_A(PBF_GPU_FB(VY)), PBF_GPU_A(PBF_GPU_FB(VZ)), PBF_GPU_A(PBF_GPU_FB(SX)),
                   PBF_GPU_A(PBF_GPU_FB(SY)), PBF_GPU_A(PBF_GPU_FB(SZ)));
}
