/*
 * The parameter table: every tunable of a pbf_world_def declared once, with its scene-file key,
 * unit, default, range and description. The same table drives the scene-file keys, the
 * validation (pbf_world_def_validate), `--set KEY=VALUE` and `pbf --help`. Tools add their own
 * tables of the same shape (the `pbf` command has one for frames, fps, substeps, output format).
 */
#ifndef PBF_PARAMS_H
#define PBF_PARAMS_H

#include <stddef.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pbf_param_type {
    PBF_PARAM_FLOAT = 0, /* float field */
    PBF_PARAM_INT = 1,   /* int field */
    PBF_PARAM_VEC3 = 2,  /* pbf_vec3 field; in scene files an array of 3 numbers */
    PBF_PARAM_ENUM = 3,  /* int-sized enum field; in scene files one of the names in `choices` */
    PBF_PARAM_STRING = 4 /* char[max] field, a NUL-terminated string; default choices[0] */
} pbf_param_type;

typedef struct pbf_param_info {
    const char *name;          /* scene-file key and --set name */
    pbf_param_type type;
    const char *unit;          /* "m", "kg/m^3", "1" for dimensionless, "-" for no number */
    double def;                /* default (for VEC3: see def3; for ENUM: index into choices) */
    double def3[3];            /* VEC3 default */
    double min, max;           /* inclusive range of each component (ENUM: unused) */
    int min_exclusive;         /* 1 if the value must be strictly greater than min */
    const char *const *choices; /* ENUM names, NULL-terminated */
    size_t offset;             /* offset of the field in the structure the table describes */
    const char *description;
} pbf_param_info;

/* The world table: what every solver shares (fields of pbf_world_def). */
const pbf_param_info *pbf_world_params(size_t *count);

/* The pressure solvers built in, in the order of the `solver` key's choices: the name a scene
 * gives (`"solver": "dfsph"`) and a title naming the method and its paper. */
typedef struct pbf_solver_info {
    pbf_solver_kind kind;
    const char *name;
    const char *title;
} pbf_solver_info;
const pbf_solver_info *pbf_solvers(size_t *count);

/* At most this many tables describe a pbf_world_def (pbf_world_param_tables): the world's and
 * one per method, with room for the methods of PBF_METHOD_SLICES. */
#define PBF_MAX_PARAM_TABLES 32

/* A solver's own table (offsets are still into pbf_world_def, e.g. of def.pbf.scorr_k), NULL for
 * an unknown kind. */
const pbf_param_info *pbf_solver_params(pbf_solver_kind solver, size_t *count);

/* Every table that describes a pbf_world_def, in order: the world's, then each solver's (every
 * solver's keys are valid in any scene; the `solver` key says which one runs). Returns the number
 * of tables (at most `max` are stored; PBF_MAX_PARAM_TABLES is always enough). Tools that go over all keys (scene files,
 * --set, --help, checkpoints) iterate these. */
int pbf_world_param_tables(const pbf_param_info **tables, size_t *counts, int max);

/* Sets a STRING field, checking its length against the field's size. */
pbf_status pbf_param_set_string(const pbf_param_info *p, void *base, const char *value,
                                const char *where, pbf_error *err);
/* Reads a STRING field ("" for other types). */
const char *pbf_param_get_string(const pbf_param_info *p, const void *base);

/* Finds a parameter by name in a table, NULL if absent. */
const pbf_param_info *pbf_param_find(const pbf_param_info *table, size_t count, const char *name);

/* Checks a number (or one VEC3 component) against the parameter's type and range. `where`
 * prefixes the message ("dam_break.json: particle_radius", or "particle_radius").
 * Integers must be whole numbers; non-finite values are always rejected. */
pbf_status pbf_param_check_number(const pbf_param_info *p, double value, const char *where,
                                  pbf_error *err);

/* Sets a FLOAT, INT or one VEC3 component (component 0..2, ignored otherwise) of the structure at
 * `base`, after pbf_param_check_number. */
pbf_status pbf_param_set_number(const pbf_param_info *p, void *base, int component, double value,
                                const char *where, pbf_error *err);

/* Sets an ENUM field from its name. */
pbf_status pbf_param_set_choice(const pbf_param_info *p, void *base, const char *choice,
                                const char *where, pbf_error *err);

/* Reads a FLOAT/INT/ENUM field (or VEC3 component) as a double. */
double pbf_param_get_number(const pbf_param_info *p, const void *base, int component);

/* Writes the parameter's default into the structure at base. */
void pbf_param_set_default(const pbf_param_info *p, void *base);

/* The unit as messages and help texts show it: p->unit, but "" for a dimensionless number
 * ("1"), a string or choice ("-") and a 0/1 switch ("0/1", which its range already says). */
const char *pbf_param_shown_unit(const pbf_param_info *p);

/* Formats "name  unit  default  range  description" for help texts into buf (the unit as
 * pbf_param_shown_unit gives it). */
void pbf_param_format_help(const pbf_param_info *p, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* PBF_PARAMS_H */
