/*
 * The methods' descriptors (src/solvers/<name>/<name>.c) hold what the stage runner, the
 * backends, the field registry and the parameter tables rely on: a method that breaks one of
 * these rules fails here rather than in a simulation.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "pbf/params.h"
#include "test.h"

/* The registry lists every public kind once, in kind order, under the name its info gives, and
 * the public tables (pbf_solvers, pbf_solver_params) are the descriptors'. */
static void test_registry_matches_public_tables(void) {
    int n = 0;
    const pbf_solver *const *all = pbf_solver_all(&n);
    size_t ns = 0;
    const pbf_solver_info *info = pbf_solvers(&ns);
    ENSURE_EQ_INT(n, (int)ns);
    ENSURE(n >= 5);
    for (int i = 0; i < n; ++i) {
        ENSURE_EQ_INT((int)all[i]->info.kind, i); /* the `solver` key stores the index */
        ENSURE(strcmp(all[i]->info.name, info[i].name) == 0);
        ENSURE(strcmp(all[i]->info.name, pbf_solver_choice_names[i]) == 0);
        ENSURE(pbf_solver_of(all[i]->info.kind) == all[i]);
        size_t np = 0;
        ENSURE(pbf_solver_params(all[i]->info.kind, &np) == all[i]->params);
        ENSURE_EQ_INT((int)np, (int)all[i]->nparams);
        /* the `solver` key's description names every method */
        ENSURE(strstr(pbf_solver_key_description, all[i]->info.name) != NULL);
    }
    ENSURE(pbf_solver_choice_names[n] == NULL);
}

/* Every key of every table has a place of its own in pbf_world_def: no two keys share bytes (all
 * methods' keys are valid in any scene, so two methods' values live side by side), and a later
 * method's keys lie in its own slice of method_params (PBF_METHOD_PARAM). */
static void test_parameters_have_their_own_bytes(void) {
    unsigned char owner[sizeof(pbf_world_def)];
    memset(owner, 0, sizeof owner);
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES];
    size_t counts[PBF_MAX_PARAM_TABLES];
    const int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
    ENSURE(nt <= PBF_MAX_PARAM_TABLES);
    ENSURE(nt - 1 <= PBF_FIRST_SLICED_METHOD + PBF_METHOD_SLICES);
    const size_t block = offsetof(pbf_world_def, method_params);
    for (int t = 0; t < nt; ++t)
        for (size_t k = 0; k < counts[t]; ++k) {
            const pbf_param_info *p = &tables[t][k];
            size_t size = 4;
            if (p->type == PBF_PARAM_VEC3) size = 12;
            if (p->type == PBF_PARAM_STRING) size = PBF_DEVICE_NAME_MAX; /* (the one string) */
            ENSURE(p->offset + size <= sizeof(pbf_world_def));
            for (size_t b = p->offset; b < p->offset + size; ++b) {
                if (owner[b]) printf("  %s shares bytes with another key\n", p->name);
                ENSURE_EQ_INT(owner[b], 0);
                owner[b] = 1;
            }
            const int kind = t - 1; /* table 0 is the world's */
            if (kind >= PBF_FIRST_SLICED_METHOD) {
                const size_t lo = PBF_METHOD_PARAM(kind, 0);
                ENSURE(p->offset >= lo && p->offset + size <= lo + PBF_METHOD_SLOTS * 4);
            } else {
                ENSURE(p->offset + size <= block); /* the five have blocks of their own */
            }
        }
}

/* Every stage table: the runner's shape (a first stage that moves or accelerates, the grid, the
 * statistics last), a CPU function for every row, GPU launches for every row of a method the GPU
 * backends run (the grid's and the statistics' are the backends' own), each solve's block
 * contiguous and started by the stage that measures it, and warm stages outside the blocks. */
static void test_stage_tables(void) {
    int n = 0;
    const pbf_solver *const *all = pbf_solver_all(&n);
    for (int m = 0; m < n; ++m) {
        const pbf_solver *s = all[m];
        const pbf_stage_desc *st = s->stages;
        const int ns = s->nstages;
        ENSURE(ns >= 4 && ns <= PBF_MAX_STAGES);
        ENSURE(strcmp(st[0].name, s->sph ? "gravity" : "predict") == 0);
        ENSURE(strcmp(st[1].name, "grid") == 0 && (st[1].flags & PBF_STAGE_SORTS));
        ENSURE(strcmp(st[ns - 1].name, "stats") == 0 && (st[ns - 1].flags & PBF_STAGE_STATS));
        ENSURE(s->bounds != NULL);
        int seen[3] = {0, 0, 0};
        for (int k = 0; k < ns; ++k) {
            ENSURE(st[k].cpu != NULL);
            if (s->gpu && !(st[k].flags & PBF_STAGE_STATS)) ENSURE(st[k].gpu != NULL);
            ENSURE(st[k].name != NULL && st[k].name[0] != '\0');
            /* only the first row sorts, only the last is the statistics */
            if (k != 1) ENSURE(!(st[k].flags & PBF_STAGE_SORTS));
            if (k != ns - 1) ENSURE(!(st[k].flags & PBF_STAGE_STATS));
            ENSURE(st[k].loop >= 0 && st[k].loop <= PBF_SOLVE_DIVERGENCE);
            if (st[k].warm) ENSURE_EQ_INT(st[k].loop, 0);
            if (st[k].measures && st[k].loop) ENSURE_EQ_INT(st[k].measures, st[k].loop);
            const int loop = st[k].loop;
            if (loop && (k == 0 || st[k - 1].loop != loop)) {
                ENSURE_EQ_INT(seen[loop], 0);        /* one block per solve */
                ENSURE_EQ_INT(st[k].measures, loop); /* its first stage measures it */
                seen[loop] = 1;
            }
        }
        /* the default definition's bounds: at least one iteration at most, min <= max */
        pbf_world_def def = pbf_default_world_def();
        def.solver = s->info.kind;
        for (int loop = 1; loop <= PBF_SOLVE_DIVERGENCE; ++loop) {
            if (!seen[loop]) continue;
            const pbf_solve_bounds b = s->bounds(&def, loop);
            ENSURE(b.max >= 1);
            ENSURE(b.min <= b.max);
        }
    }
}

/* A world of every method steps on the CPU through its rows: the solve it reports ran within
 * its bounds, and nothing leaves the container or turns non-finite. */
static void test_every_method_steps(void) {
    int n = 0;
    const pbf_solver *const *all = pbf_solver_all(&n);
    for (int m = 0; m < n; ++m) {
        pbf_world_def def = pbf_default_world_def();
        def.solver = all[m]->info.kind;
        def.domain_max = (pbf_vec3){0.3f, 0.3f, 0.3f};
        def.particle_radius = 0.02f;
        pbf_world *w = NULL;
        ENSURE(pbf_world_create(&def, &w, NULL) == PBF_OK);
        pbf_fluid_block b = {{0.0f, 0.0f, 0.0f}, {0.16f, 0.16f, 0.16f}, {0, 0, 0}};
        ENSURE(pbf_world_add_fluid_block(w, &b, NULL) == PBF_OK);
        for (int k = 0; k < 3; ++k) ENSURE(pbf_world_step(w, 1.0f / 240.0f, NULL) == PBF_OK);
        const pbf_stats s = pbf_world_stats(w);
        ENSURE_EQ_INT(s.nonfinite, 0);
        ENSURE_EQ_INT(s.escaped, 0);
        ENSURE(s.substeps >= 1);
        ENSURE(s.density_error_max < 50.0); /* a block at rest stays near rest density */
        const pbf_solve_bounds bd = all[m]->bounds(&def, PBF_SOLVE_DENSITY);
        ENSURE(s.iterations <= bd.max * s.substeps);
        pbf_world_destroy(w);
    }
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_registry_matches_public_tables);
    RUN_SUBTEST(test_parameters_have_their_own_bytes);
    RUN_SUBTEST(test_stage_tables);
    RUN_SUBTEST(test_every_method_steps);
    return test_end();
}
