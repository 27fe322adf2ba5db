/* The particle-field registry (see fields.h) and the public field table built on it. */
#include "fields.h"

#include "pbf/pbf.h"

#define S PBF_FIELD_SORTED
#define T PBF_FIELD_STATE
#define SPH PBF_FIELD_SPH

/* clang-format off */
const pbf_field_desc pbf_fields[PBF_FIELD_COUNT] = {
    [PBF_F_PX] = {"x", 0, S | T, 0, 0, "position x_i"},
    [PBF_F_PY] = {"y", 0, S | T, 0, 1, "position x_i"},
    [PBF_F_PZ] = {"z", 0, S | T, 0, 2, "position x_i"},
    [PBF_F_QX] = {"qx", 0, S, -1, 0, "predicted position x_i*"},
    [PBF_F_QY] = {"qy", 0, S, -1, 1, "predicted position x_i*"},
    [PBF_F_QZ] = {"qz", 0, S, -1, 2, "predicted position x_i*"},
    [PBF_F_VX] = {"vx", 0, S | T, 1, 0, "velocity v_i"},
    [PBF_F_VY] = {"vy", 0, S | T, 1, 1, "velocity v_i"},
    [PBF_F_VZ] = {"vz", 0, S | T, 1, 2, "velocity v_i"},
    [PBF_F_SX] = {"sx", 0, SPH, -1, 0, "scratch of the pressure stages (GPU PBF: delta p, omega)"},
    [PBF_F_SY] = {"sy", 0, SPH, -1, 1, "scratch of the pressure stages (GPU PBF: delta p, omega)"},
    [PBF_F_SZ] = {"sz", 0, SPH, -1, 2, "scratch of the pressure stages (GPU PBF: delta p, omega)"},
    [PBF_F_DENSITY] = {"density", 0, T, 2, 0, "density rho_i (recomputed after the sort)"},
    [PBF_F_LAMBDA] = {"lambda", 0, S, -1, 0, "lambda_i, carried to the next step (PBF's warm start)"},
    [PBF_F_ID] = {"id", 1, S | T, 3, 0, "stable identity"},
    [PBF_F_CELL] = {"cell", 1, S | PBF_FIELD_LIVE, -1, 0, "grid cell of x_i*"},
    [PBF_F_WARM] = {"warm", 0, S | PBF_FIELD_WARM, -1, 0,
                    "IISPH: p_i / rho_0, DFSPH: kappa_i of the previous substep (warm start; "
                    "the CPU keeps its sum of k_i and that substep's dt)"},
    [PBF_F_WARM_V] = {"warm_v", 0, S | PBF_FIELD_WARM_V, -1, 0,
                      "DFSPH: kappa^v_i of the previous substep's divergence solve (warm "
                      "start; the CPU keeps its sum of k_i and that substep's dt); IISPH: p_i / "
                      "rho_0 of the substep before the previous (pbf_iisph_warm_p)"},
};
/* clang-format on */

size_t pbf_fields_bytes(unsigned none, unsigned need) {
    size_t bytes = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if ((pbf_fields[f].flags & none) == 0 && (need == 0 || (pbf_fields[f].flags & need)))
            bytes += 4;
    return bytes;
}

/* The public table: the fields a snapshot, a checkpoint and a writer carry, in the order of
 * their members in pbf_particles and pbf_snapshot. */
static const pbf_field_info public_fields[] = {
    {"position", PBF_FIELD_FLOAT32, 3, "m", "particle position"},
    {"velocity", PBF_FIELD_FLOAT32, 3, "m/s", "particle velocity"},
    {"density", PBF_FIELD_FLOAT32, 1, "kg/m^3", "SPH density at the position (eq. 2, walls included)"},
    {"id", PBF_FIELD_UINT32, 1, "1", "stable particle identity (order of creation)"},
};

const pbf_field_info *pbf_particle_fields(size_t *count) {
    if (count) *count = sizeof public_fields / sizeof public_fields[0];
    return public_fields;
}

const void *pbf_particles_component(const pbf_particles *p, size_t field, int component) {
    if (!p || component < 0) return NULL;
    const void *members[] = {p->x, p->y, p->z, p->vx, p->vy, p->vz, p->density, p->id};
    const int first[] = {0, 3, 6, 7};
    if (field >= sizeof first / sizeof first[0] || component >= public_fields[field].components)
        return NULL;
    return members[first[field] + component];
}
