/*
 * The hook after each stage (domain_internal.h): the migration after predict (gravity), the
 * halo lists after the grid stage, and which rows each stage's halo update sends to the ghosts.
 */
#include "domain_internal.h"

static void stage_hook(pbf_world *w, pbf_stage_id stage, pbf_mpi_domain *d);

void pbf_dom_after_stage(pbf_world *w, pbf_stage_id stage, void *user) {
    pbf_mpi_domain *d = user;
    const double t0 = MPI_Wtime();
    stage_hook(w, stage, d);
    d->hook_seconds += MPI_Wtime() - t0;
}

static void stage_hook(pbf_world *w, pbf_stage_id stage, pbf_mpi_domain *d) {
    if (d->failed) { /* the same on every process (agree_failed): no more exchanges */
        if (stage == PBF_STAGE_VORTICITY_XSPH) pbf_dom_end_step_drop(d); /* local */
        return;
    }
    /* What the ghosts' neighbours read next, where the stage computed it from neighbour sums
     * (a ghost's own sums are empty): per-particle stages give a ghost its owner's values. */
    static const int lambda[] = {PBF_F_LAMBDA}, q[] = {PBF_F_QX, PBF_F_QY, PBF_F_QZ},
                     v[] = {PBF_F_VX, PBF_F_VY, PBF_F_VZ}, curl[] = {PBF_F_DENSITY, PBF_F_LAMBDA};
    switch (stage) {
    case PBF_STAGE_PREDICT: /* PBF */
    case PBF_STAGE_GRAVITY: /* the SPH solvers */
        memset(d->measured, 0, sizeof d->measured);
        /* GPU: x, x*, v (PBF: after predict; SPH: x* = x), id and the keys, in their own roles */
        pbf_dom_migrate(d);
        break;
    case PBF_STAGE_GRID:
        d->key_is_cell = 1; /* `cell` is now the cell of this sort */
        /* GPU: the grid stage brought the sorted cells to the host for ghost_mask (a process
         * without particles has none to read) */
        {
            static const int cell[] = {PBF_F_CELL};
            /* the cells (4 B) and the mask (1 B) per particle, by the grid stage or here */
            if (d->gpu) d->device_bytes += (d->ghosts_in ? 5.0 : 4.0) * w->count;
            const int bad = d->gpu && !d->ghosts_in &&
                            w->backend->read_rows(w, cell, 1, NULL) != PBF_OK;
            if (d->gpu && pbf_dom_agree_failed(d, bad)) break; /* on every process: collective */
        }
        pbf_dom_halo_lists(d);
        break;
    case PBF_STAGE_LAMBDA:          /* PBF: delta p reads lambda_j */
    case PBF_STAGE_WCSPH_PRESSURE:  /* the pressure acceleration reads k_j (lambda) */
    case PBF_STAGE_DIVERGENCE:      /* DFSPH */
    case PBF_STAGE_DENSITY_ADV:     /* DFSPH */
    case PBF_STAGE_PCISPH_PRESSURE: /* the increment of k */
    case PBF_STAGE_IISPH_PRESSURE:  /* the increment of k */
        if (d->gpu) d->device_bytes += 4.0 * w->count; /* the measured row (gpu_steps.h) */
        pbf_dom_global_solve_error(d, stage);
        pbf_dom_halo_update(d, lambda, 1);
        break;
    case PBF_STAGE_DFSPH_WARM_V: /* the warm starts' k_j, which the pressure acceleration reads */
    case PBF_STAGE_DFSPH_WARM: pbf_dom_halo_update(d, lambda, 1); break;
    case PBF_STAGE_IISPH_DIAGONAL:
        if (pbf_warm_start(&w->def) > 0.0f) pbf_dom_halo_update(d, lambda, 1);
        break;
    case PBF_STAGE_PRESSURE_ACCEL: /* the next measure reads v_j */
        pbf_dom_halo_update(d, v, 3);
        break;
    case PBF_STAGE_COLLIDE: /* lambda, velocity read x*_j */
        pbf_dom_halo_update(d, q, 3);
        break;
    case PBF_STAGE_VELOCITY: /* XSPH: rho_j; eta: |omega_j| */
        if (pbf_lambda_carried(w) && w->def.vorticity > 0.0f) {
            /* PBF's warm start keeps lambda: the CPU's post pass takes |omega_j| from omega_j,
             * which the curl pass left in x (cpu.c, stage_vorticity_xsph); a GPU's from lambda
             * (gpu_steps.h) */
            static const int curl_warm[] = {PBF_F_DENSITY, PBF_F_LAMBDA, PBF_F_PX, PBF_F_PY,
                                            PBF_F_PZ};
            pbf_dom_halo_update(d, curl_warm, 5);
        } else {
            pbf_dom_halo_update(d, curl, 2);
        }
        break;
    case PBF_STAGE_VORTICITY_XSPH:
        pbf_dom_end_step_drop(d);
        d->steps += 1;
        break;
    default: break;
    }
}
