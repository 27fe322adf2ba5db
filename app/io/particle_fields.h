/*
 * The public particle fields (pbf_particle_fields: position, velocity, density, id) as the
 * writers (output.c), the checkpoints (checkpoint.c) and the guard's copy of a frame's start
 * state (guard.c) walk them. Each of those iterates the table, so a field added to the library's
 * table is carried by all of them.
 *
 * A "column" is one component of one field: one array of 4-byte elements. The columns of the
 * table, in order, are x, y, z, vx, vy, vz, density, id today.
 */
#ifndef PBFAPP_PARTICLE_FIELDS_H
#define PBFAPP_PARTICLE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every element of every field is 4 bytes (float32 or uint32). */
#define PBFAPP_FIELD_ELEMENT_BYTES 4u
/* Columns the app can hold (a generous bound on the sum of the table's components). */
#define PBFAPP_MAX_COLUMNS 32

typedef struct pbfapp_column {
    size_t field;               /* index in pbf_particle_fields() */
    int component;              /* 0 .. components - 1 */
    const pbf_field_info *info; /* the field's row */
} pbfapp_column;

/* The columns of the table in order (field by field, component by component), at most `max`;
 * returns how many there are. */
size_t pbfapp_columns(pbfapp_column *out, size_t max);

/* Bytes of one particle over every column (32 today). */
size_t pbfapp_particle_bytes(void);

/* The array of a column in a view (NULL if the view has none). */
const void *pbfapp_column_data(const pbf_particles *p, const pbfapp_column *c);

/* The short name of a column in the PLY and CSV headers: a scalar field's name; the components
 * of "position" are x, y, z (the PLY convention), of "velocity" vx, vy, vz, and of any other
 * vector field NAME_x, NAME_y, NAME_z. */
void pbfapp_column_name(const pbfapp_column *c, char *buf, size_t size);

/* The field of the table called `name` (its index), or -1. */
int pbfapp_field_index(const char *name);

/* A snapshot's arrays as a view (count and the same arrays). */
pbf_particles pbfapp_snapshot_particles(const pbf_snapshot *s);

/* Points the snapshot's array of column `c` at `data`. Returns 0 if the snapshot has no such
 * member (a table that grew without pbf_snapshot). */
int pbfapp_snapshot_set_column(pbf_snapshot *s, const pbfapp_column *c, const void *data);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_PARTICLE_FIELDS_H */
