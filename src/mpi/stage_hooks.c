/*
 * The hook after each stage (domain_internal.h), from the method's stage table and the rows'
 * declarations: the migration after the first stage of a substep (predict, gravity), the halo
 * lists after the grid stage, the solve's error made global after a measuring stage, the halo
 * update of the rows each stage declares (pbf_stage_desc.halo), and the ghosts dropped after
 * the last stage before the statistics.
 */
#include "domain_internal.h"

static void stage_hook(pbf_world *w, const pbf_stage_desc *stage, pbf_mpi_domain *d);

void pbf_dom_after_stage(pbf_world *w, const pbf_stage_desc *stage, void *user) {
    pbf_mpi_domain *d = user;
    const double t0 = MPI_Wtime();
    stage_hook(w, stage, d);
    d->hook_seconds += MPI_Wtime() - t0;
}

/* The grid stage's part: its sorted cells (on a GPU, read here unless ghost_mask read them),
 * then the halo lists of the new order. */
static void after_grid(pbf_world *w, pbf_mpi_domain *d) {
    d->key_is_cell = 1; /* `cell` is now the cell of this sort */
    static const int cell[] = {PBF_F_CELL};
    /* the cells (4 B) and the mask (1 B) per particle, by the grid stage or here */
    if (d->gpu) d->device_bytes += (d->ghosts_in ? 5.0 : 4.0) * w->count;
    const int bad = d->gpu && !d->ghosts_in && w->backend->read_rows(w, cell, 1, NULL) != PBF_OK;
    if (d->gpu && pbf_dom_agree_failed(d, bad)) return; /* on every process: collective */
    pbf_dom_halo_lists(d);
}

static void stage_hook(pbf_world *w, const pbf_stage_desc *stage, pbf_mpi_domain *d) {
    int nst = 0;
    const pbf_stage_desc *table = pbf_stage_table(w->def.solver, &nst);
    /* the last stage before the statistics ends the step's exchanges */
    const int last = nst >= 2 && stage == &table[nst - 2];
    if (d->failed) { /* the same on every process (agree_failed): no more exchanges */
        if (last) pbf_dom_end_step_drop(d); /* local */
        return;
    }
    if (stage == &table[0]) { /* predict (PBF), gravity (the SPH solvers) */
        memset(d->measured, 0, sizeof d->measured);
        /* GPU: x, x*, v (PBF: after predict; SPH: x* = x), id and the keys, in their own roles */
        pbf_dom_migrate(d);
        return;
    }
    if (stage->flags & PBF_STAGE_SORTS) {
        after_grid(w, d);
        return;
    }
    if (stage->measures) {
        if (d->gpu) d->device_bytes += 4.0 * w->count; /* the measured row (gpu_steps.c) */
        pbf_dom_global_solve_error(d, stage);
    }
    /* What the ghosts' neighbours read next, where the stage computed it from neighbour sums
     * (a ghost's own sums are empty): per-particle stages give a ghost its owner's values. */
    const unsigned halo = stage->halo_of ? stage->halo_of(w) : stage->halo;
    if (halo) {
        int rows[32], n = 0;
        for (int f = 0; f < PBF_FIELD_COUNT; ++f)
            if (halo & PBF_ROW(f)) rows[n++] = f;
        pbf_dom_halo_update(d, rows, n);
    }
    if (last) {
        pbf_dom_end_step_drop(d);
        d->steps += 1;
    }
}
