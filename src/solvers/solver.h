/*
 * A method, as one row of data and function pointers: the pbf_solver descriptor.
 *
 * Everything the rest of the library needs to know about a particle method comes from its
 * descriptor, which lives in the method's own folder (src/solvers/<name>/<name>.c) beside its
 * CPU stages, its kernel source and its launches:
 *
 *   info         the scene's name for it and a title naming the method and its paper
 *   params       its own parameter table (scene keys, --set, --help, validation)
 *   stages       its step as a table of stages, the iterative solves marked by `loop`
 *   bounds       the iterations of each solve: at least, at most, the tolerance
 *   substep_dt   its CFL rule: the longest substep for the fastest particle's speed
 *   warm_start   the fraction of the previous substep's solution a solve starts from
 *   fields       which of the registry's optional rows it needs (the SPH scratch, the warm rows)
 *   carried_row  the row it carries to the next step beyond the state (snapshots keep it)
 *   check        consistency of its parameters beyond their ranges
 *
 * The registry (registry.c) lists the descriptors in the order of the public pbf_solver_kind
 * values; nothing outside a method's folder names a method. The stage runner (core.c), the field
 * registry (fields.c), the parameter tables (params.c) and the backends ask the registry.
 */
#ifndef PBF_SOLVER_H
#define PBF_SOLVER_H

#include <stddef.h>

#include "stage.h" /* (the public headers in <>: solvers/pbf/ is a method) */
#include <pbf/params.h>
#include <pbf/pbf.h>

/* The iterations of a solve: at least min, at most max, stop at tol (percent); tol <= 0: exactly
 * max iterations. */
typedef struct pbf_solve_bounds {
    int min, max;
    float tol;
} pbf_solve_bounds;

struct pbf_gpu_params;

typedef struct pbf_solver {
    pbf_solver_info info;
    const pbf_param_info *params;
    size_t nparams;
    const pbf_stage_desc *stages; /* ends with the statistics (PBF_ROW_STATS) */
    int nstages;
    /* 1: the SPH family's shape (gravity keeps x* = x, the scratch triple of the pressure stages,
     * the sph_kernel choice); 0: PBF's (predict moves x*, poly6 / spiky) */
    int sph;
    /* 1: every stage has GPU kernels and launches (the GPU backends run it); 0: CPU only */
    int gpu;
    /* The iterations of the solve `loop` (PBF_SOLVE_DENSITY or PBF_SOLVE_DIVERGENCE). */
    pbf_solve_bounds (*bounds)(const pbf_world_def *d, int loop);
    /* The longest substep (s) for the largest speed v (m/s) the step may reach, from the
     * method's CFL condition; 0: the step as given. NULL: no substeps. */
    double (*substep_dt)(const pbf_world_def *d, float h, double v);
    /* The fraction of the previous substep's solution its solves start from (0: off); NULL:
     * none. */
    float (*warm_start)(const pbf_world_def *d);
    /* A warm start applied within a solve's first iteration instead of by the warm stages
     * (DFSPH's divergence solve): its fraction, 0 when off; NULL: none. */
    float (*first_warm)(const pbf_world_def *d);
    /* Does it need the registry's optional row f (PBF_FIELD_WARM, PBF_FIELD_WARM_V rows)? NULL:
     * none of them. */
    int (*field_used)(int f, const pbf_world_def *d);
    /* The row it carries to the next step beyond the state, or -1 (NULL: none). */
    int (*carried_row)(const pbf_world_def *d);
    /* The spectral radius its Chebyshev-accelerated iterations assume (Wang 2015), 0: plain
     * Jacobi; NULL: none. The GPU kernels' weights (backends/gpu/gpu_host.h). */
    float (*chebyshev_rho)(const pbf_world_def *d);
    /* Its derived constants for a new world whose kernel constants are set (w->k, the lattice's
     * mass and sum |grad C|^2) into *state: allocated, kept as w->method_state and freed with
     * free(); or the reason they cannot be (the message names the parameter). NULL: none. */
    pbf_status (*create_state)(const pbf_world *w, void **state, pbf_error *err);
    /* Its part of the GPU kernels' argument block (backends/gpu/gpu_prelude.h) for a substep of
     * dt (its parameters and derived constants): its own member P->m.<name> (declared in its
     * folder's <name>_kernels.h) and any shared member it sets. NULL: none. */
    void (*gpu_params)(const pbf_world *w, struct pbf_gpu_params *P, float dt);
    /* Checks its parameters beyond each one's range (every method's runs for every scene:
     * every key is valid in any scene); NULL: nothing to check. */
    pbf_status (*check)(const pbf_world_def *d, pbf_error *err);
} pbf_solver;

/* The registry (registry.c): the descriptor of a kind (NULL if none), all of them in the order
 * of their kinds. */
const pbf_solver *pbf_solver_of(pbf_solver_kind kind);
const pbf_solver *const *pbf_solver_all(int *count);
/* Does a world of `def` keep an array of field f, on the host or a device, at all? Every row
 * but the optional ones (PBF_FIELD_WARM, PBF_FIELD_WARM_V), which only the methods that ask for
 * them keep (field_used). The SPH rows have no host array for PBF on the CPU besides (world.c). */
int pbf_field_in_solver(int f, const pbf_world_def *def);
/* pbf_fields_bytes(none, 0) of the rows a world of `def` keeps (a GPU backend's device arrays). */
size_t pbf_fields_solver_bytes(unsigned none, const pbf_world_def *def);

/* The `solver` key's choices, in the order of the kinds, NULL-terminated. */
extern const char *const pbf_solver_choice_names[];
/* The `solver` key's description: each method's name and paper. */
extern const char pbf_solver_key_description[];

/* params.c: a method's minimum of iterations must not exceed its maximum (the message names
 * both keys and values). */
pbf_status pbf_check_iteration_bounds(int min, int max, const char *min_name, const char *max_name,
                                      pbf_error *err);

/* A later method's parameters (kind >= PBF_FIRST_SLICED_METHOD, pbf/pbf.h): the offset of slot
 * `slot` of its slice in pbf_world_def, for its table's rows; and its slice in a definition. */
#define PBF_METHOD_PARAM(kind, slot)                                                               \
    offsetof(pbf_world_def, method_params[(kind) - PBF_FIRST_SLICED_METHOD][slot])
static inline const pbf_method_slot *pbf_method_slice(const pbf_world_def *d, int kind) {
    return d->method_params[kind - PBF_FIRST_SLICED_METHOD];
}

/* The number of entries of an array (a method's tables). */
#define PBF_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#endif
