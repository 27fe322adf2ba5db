/*
 * The registry of methods: one line per method in PBF_METHODS, in the order of the public
 * pbf_solver_kind values (the `solver` key stores that index). Adding a method is its folder,
 * its #include below and its name in the list.
 */
#include "solvers/solver.h"

#include "fields.h"

#include "solvers/dfsph/dfsph.h"
#include "solvers/iisph/iisph.h"
#include "solvers/pbf/pbf.h"
#include "solvers/pcisph/pcisph.h"
#include "solvers/sesph/sesph.h"
#include "solvers/wcsph/wcsph.h"

/* X(name) for each method, in kind order; the first is written apart for the key's text. */
#define PBF_METHODS(FIRST, X) FIRST(pbf) X(wcsph) X(dfsph) X(pcisph) X(iisph) X(sesph)

#define DESC(m) &pbf_solver_##m,
static const pbf_solver *const methods[] = {PBF_METHODS(DESC, DESC)};
#undef DESC

#define INFO(m) PBF_SOLVER_INFO_##m,
static const pbf_solver_info infos[] = {PBF_METHODS(INFO, INFO)};
#undef INFO

#define NAME(m) #m,
const char *const pbf_solver_choice_names[] = {PBF_METHODS(NAME, NAME) NULL};
#undef NAME

/* The `solver` key's description: every method's part, then a pointer to their tables. */
#define KEY_FIRST(m) PBF_SOLVER_KEY_##m
#define KEY(m) ", " PBF_SOLVER_KEY_##m
const char pbf_solver_key_description[] =
    "pressure solver: " PBF_METHODS(KEY_FIRST, KEY) "; each has its own parameters below";
#undef KEY_FIRST
#undef KEY

const pbf_solver *pbf_solver_of(pbf_solver_kind kind) {
    const int n = (int)PBF_COUNT_OF(methods);
    for (int i = 0; i < n; ++i)
        if (methods[i]->info.kind == kind) return methods[i];
    return NULL;
}

const pbf_solver *const *pbf_solver_all(int *count) {
    if (count) *count = (int)PBF_COUNT_OF(methods);
    return methods;
}

const pbf_solver_info *pbf_solvers(size_t *count) {
    if (count) *count = PBF_COUNT_OF(infos);
    return infos;
}

const pbf_param_info *pbf_solver_params(pbf_solver_kind solver, size_t *count) {
    const pbf_solver *s = pbf_solver_of(solver);
    if (count) *count = s ? s->nparams : 0;
    return s ? s->params : NULL;
}

int pbf_field_in_solver(int f, const pbf_world_def *def) {
    const unsigned fl = pbf_fields[f].flags;
    if (!(fl & (PBF_FIELD_WARM | PBF_FIELD_WARM_V))) return 1;
    /* the optional rows: those the method asks for */
    const pbf_solver *m = pbf_solver_of(def->solver);
    return m && m->field_used && m->field_used(f, def);
}

size_t pbf_fields_solver_bytes(unsigned none, const pbf_world_def *def) {
    size_t bytes = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if ((pbf_fields[f].flags & none) == 0 && pbf_field_in_solver(f, def)) bytes += 4;
    return bytes;
}
