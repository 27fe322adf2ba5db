/*
 * The particle-field registry: every per-particle array of a world, declared once.
 *
 * One row per array says its name, its element type, what it is, and which machinery carries it:
 *   SORTED  permuted with the particles by the cell sort of every step (grid stage)
 *   STATE   part of the state: snapshots, restore, checkpoints and the host copy of a device run
 *   CPU     kept by the CPU backend only (its neighbour-list offsets); GPU backends loop over
 *           the grid's cell ranges and keep no per-particle neighbour data
 * Allocation, growth, the reorder after the sort, the bytes-per-particle figure, the public field
 * table (pbf_particle_fields: what snapshots, checkpoints and writers carry) and the device buffers
 * of the GPU backends all read this one table.
 *
 * Four vec3 arrays rotate roles during a step (position, predicted position, velocity, scratch),
 * so the post-pass needs no extra storage: a role is a slot of pbf_world.field[], and the step
 * swaps slots, never data.
 */
#ifndef PBF_FIELDS_H
#define PBF_FIELDS_H

#include <stddef.h>
#include <stdint.h>

struct pbf_world_def;

typedef enum pbf_field_id {
    PBF_F_PX, PBF_F_PY, PBF_F_PZ, /* positions x_i */
    PBF_F_QX, PBF_F_QY, PBF_F_QZ, /* predicted positions x_i* */
    PBF_F_VX, PBF_F_VY, PBF_F_VZ, /* velocities v_i */
    PBF_F_SX, PBF_F_SY, PBF_F_SZ, /* scratch of the pressure stages */
    PBF_F_DENSITY,                /* rho_i */
    PBF_F_LAMBDA,                 /* lambda_i (PBF: carried to the next step, lambda_warm_start) */
    PBF_F_ID,                     /* stable identity: order of creation */
    PBF_F_CELL,                   /* grid cell of x_i* */
    PBF_F_WARM,                   /* IISPH, DFSPH: the previous substep's pressure (warm start) */
    PBF_F_WARM_V,                 /* DFSPH: the previous substep's divergence stiffness;
                                     IISPH: the pressure of the substep before the previous */
    PBF_FIELD_COUNT
} pbf_field_id;

#define PBF_FIELD_SORTED 1u
#define PBF_FIELD_STATE 2u
#define PBF_FIELD_CPU 4u
/* used by the SPH solvers' stages only: the CPU backend keeps no host array of it for PBF, whose
 * stages put their intermediate results in arrays that are dead at the time (see cpu.c) */
#define PBF_FIELD_SPH 8u
/* the warm start of IISPH and DFSPH (WARM), of DFSPH's divergence solve (WARM_V) and IISPH's
 * pressure one substep older (WARM_V, pbf_iisph_warm_p): the value
 * a solve found in the previous substep, per particle. No array, on the host or a device, for a
 * solver that does not read it (pbf_field_in_solver), so PBF's memory does not change. A new
 * state (pbf_world_add_fluid_block, pbf_world_restore) starts them at 0. */
#define PBF_FIELD_WARM 16u
#define PBF_FIELD_WARM_V 32u
/* live at the end of a step besides the state: read by the next step before any stage writes it
 * (the cell keys, which a distributed run's migration reads; src/mpi/halo.c) */
#define PBF_FIELD_LIVE 64u

typedef struct pbf_field_desc {
    const char *name;
    int is_uint;        /* element type: 0 float, 1 uint32_t (both 4 bytes) */
    unsigned flags;
    int public_field;   /* index in pbf_particle_fields(), -1 if internal */
    int component;      /* component of that public field */
    const char *what;
} pbf_field_desc;

extern const pbf_field_desc pbf_fields[PBF_FIELD_COUNT];

/* Bytes per particle of the arrays whose flags include none of `none` and, unless `need` is 0,
 * one of `need` ((0, 0): every array; a GPU backend's device arrays: (PBF_FIELD_CPU, 0); its host
 * copy: (0, PBF_FIELD_STATE)). */
size_t pbf_fields_bytes(unsigned none, unsigned need);

#endif
