/* The world parameter table and the generic parameter helpers (see pbf/params.h). */
#include "pbf/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const constraint_names[] = {"unilateral", "bilateral", NULL};
static const char *const solver_names[] = {"pbf", NULL};
static const char *const device_default[] = {"cpu", NULL};

#define F(field) offsetof(pbf_world_def, field)

/* clang-format off */
static const pbf_param_info world_params[] = {
    {"domain_min", PBF_PARAM_VEC3, "m", 0, {0, 0, 0}, -1e4, 1e4, 0, NULL, F(domain_min),
     "lower corner of the container box"},
    {"domain_max", PBF_PARAM_VEC3, "m", 0, {1, 1, 1}, -1e4, 1e4, 0, NULL, F(domain_max),
     "upper corner of the container box"},
    {"gravity", PBF_PARAM_VEC3, "m/s^2", 0, {0, -9.81, 0}, -1e3, 1e3, 0, NULL, F(gravity),
     "gravitational acceleration (y is up in the shipped scenes)"},
    {"particle_radius", PBF_PARAM_FLOAT, "m", 0.01, {0}, 0, 10, 1, NULL, F(particle_radius),
     "particle radius r; particles sit 2r apart at rest density"},
    {"rest_density", PBF_PARAM_FLOAT, "kg/m^3", 1000, {0}, 0, 1e5, 1, NULL, F(rest_density),
     "rest density rho_0 of the fluid"},
    {"kernel_ratio", PBF_PARAM_FLOAT, "1", 2.0, {0}, 1.2, 4.0, 0, NULL, F(kernel_ratio),
     "kernel radius h as a multiple of the particle spacing 2r"},
    {"xsph_viscosity", PBF_PARAM_FLOAT, "1", 0.01, {0}, 0, 1, 0, NULL, F(xsph_viscosity),
     "XSPH viscosity c (eq. 17)"},
    {"vorticity", PBF_PARAM_FLOAT, "m/s", 0.01, {0}, 0, 100, 0, NULL, F(vorticity),
     "vorticity confinement epsilon (eq. 16); 0 disables it"},
    {"cfl", PBF_PARAM_FLOAT, "1", 0.5, {0}, 0, 10, 1, NULL, F(cfl),
     "speed limit: a particle moves at most cfl * h per step (FleX maxSpeed)"},
    {"friction_static", PBF_PARAM_FLOAT, "1", 0.0, {0}, 0, 10, 0, NULL, F(friction_static),
     "static friction coefficient at walls and obstacles"},
    {"friction_dynamic", PBF_PARAM_FLOAT, "1", 0.0, {0}, 0, 10, 0, NULL, F(friction_dynamic),
     "dynamic friction coefficient at walls and obstacles"},
    {"max_particles", PBF_PARAM_INT, "1", 0, {0}, 0, 2147483647.0, 0, NULL, F(max_particles),
     "particle capacity reserved at creation; 0 grows as blocks are added"},
    {"threads", PBF_PARAM_INT, "1", 0, {0}, 0, 1024, 0, NULL, F(threads),
     "worker threads; 0 uses the OpenMP default (results do not depend on it)"},
    {"device", PBF_PARAM_STRING, "-", 0, {0}, 0, PBF_DEVICE_NAME_MAX, 0, device_default, F(device),
     "where the step runs: cpu, opencl, opencl:PLATFORM.DEVICE, cuda or cuda:N (pbf devices)"},
    {"solver", PBF_PARAM_ENUM, "-", 0, {0}, 0, 0, 0, solver_names, F(solver),
     "pressure solver: pbf = Position Based Fluids (Macklin & Mueller 2013)"},
};

/* Position Based Fluids' own parameters (Macklin & Mueller 2013). */
static const pbf_param_info pbf_params[] = {
    {"solver_iterations", PBF_PARAM_INT, "1", 4, {0}, 1, 1000, 0, NULL, F(pbf.solver_iterations),
     "Jacobi iterations of the density constraint per step"},
    {"relaxation", PBF_PARAM_FLOAT, "1", 0.01, {0}, 0, 100, 0, NULL, F(pbf.relaxation),
     "constraint force mixing epsilon (eq. 11), relative to sum|grad C|^2 of a rest particle"},
    {"over_relaxation", PBF_PARAM_FLOAT, "1", 1.0, {0}, 0, 1.9, 1, NULL, F(pbf.over_relaxation),
     "omega scaling each Jacobi correction (successive over-relaxation); 1 = the paper, ~1.3 converges faster"},
    {"constraint", PBF_PARAM_ENUM, "-", 0, {0}, 0, 0, 0, constraint_names, F(pbf.constraint),
     "unilateral: only compression is corrected; bilateral: C_i = 0 as in the paper "
     "(needs relaxation ~1, the paper's large epsilon, to stay stable)"},
    {"scorr_k", PBF_PARAM_FLOAT, "1", 0.1, {0}, 0, 10, 0, NULL, F(pbf.scorr_k),
     "tensile correction strength k (eq. 13), relative to a rest particle's lambda scale"},
    {"scorr_n", PBF_PARAM_INT, "1", 4, {0}, 1, 16, 0, NULL, F(pbf.scorr_n),
     "tensile correction exponent n (eq. 13)"},
    {"scorr_dq", PBF_PARAM_FLOAT, "1", 0.2, {0}, 0, 0.99, 0, NULL, F(pbf.scorr_dq),
     "tensile correction distance |dq| as a fraction of h (eq. 13)"},
};
/* clang-format on */

#undef F

const pbf_param_info *pbf_world_params(size_t *count) {
    if (count) *count = sizeof world_params / sizeof world_params[0];
    return world_params;
}

const pbf_param_info *pbf_solver_params(pbf_solver_kind solver, size_t *count) {
    if (solver == PBF_SOLVER_PBF) {
        if (count) *count = sizeof pbf_params / sizeof pbf_params[0];
        return pbf_params;
    }
    if (count) *count = 0;
    return NULL;
}

int pbf_world_param_tables(const pbf_param_info **tables, size_t *counts, int max) {
    const pbf_param_info *t[2];
    size_t c[2];
    t[0] = pbf_world_params(&c[0]);
    t[1] = pbf_solver_params(PBF_SOLVER_PBF, &c[1]);
    for (int i = 0; i < 2 && i < max; ++i) {
        if (tables) tables[i] = t[i];
        if (counts) counts[i] = c[i];
    }
    return 2;
}

pbf_status pbf_param_set_string(const pbf_param_info *p, void *base, const char *value,
                                const char *where, pbf_error *err) {
    if (!where) where = p ? p->name : "parameter";
    if (!p || p->type != PBF_PARAM_STRING) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: expected a number, got \"%.64s\"", where,
                      value ? value : "(null)");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    size_t cap = (size_t)p->max, len = value ? strlen(value) : 0;
    if (!value || len == 0 || len >= cap) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "%s: \"%.64s\" must be a non-empty string of at most %zu characters", where,
                      value ? value : "(null)", cap - 1);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    memcpy((char *)base + p->offset, value, len + 1);
    return PBF_OK;
}

const char *pbf_param_get_string(const pbf_param_info *p, const void *base) {
    if (!p || p->type != PBF_PARAM_STRING) return "";
    return (const char *)base + p->offset;
}

const pbf_param_info *pbf_param_find(const pbf_param_info *table, size_t count, const char *name) {
    if (!table || !name) return NULL;
    for (size_t i = 0; i < count; ++i)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

static void format_range(const pbf_param_info *p, char *buf, size_t size) {
    if (p->type == PBF_PARAM_STRING) {
        snprintf(buf, size, "string");
        return;
    }
    if (p->type == PBF_PARAM_ENUM) {
        size_t used = 0;
        buf[0] = '\0';
        for (const char *const *c = p->choices; c && *c; ++c) {
            int k = snprintf(buf + used, size - used, "%s%s", used ? "|" : "", *c);
            if (k < 0 || (size_t)k >= size - used) break;
            used += (size_t)k;
        }
        return;
    }
    snprintf(buf, size, "%c%.9g, %.9g]", p->min_exclusive ? '(' : '[', p->min, p->max);
}

const char *pbf_param_shown_unit(const pbf_param_info *p) {
    const char *u = p->unit ? p->unit : "";
    if (strcmp(u, "1") == 0 || strcmp(u, "-") == 0 || strcmp(u, "0/1") == 0) return "";
    return u;
}

pbf_status pbf_param_check_number(const pbf_param_info *p, double value, const char *where,
                                  pbf_error *err) {
    char range[128];
    if (!where) where = p ? p->name : "parameter";
    if (!p) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: no such parameter", where);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (p->type == PBF_PARAM_ENUM) {
        format_range(p, range, sizeof range);
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: expected one of %s, got a number (%.9g)",
                      where, range, value);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (p->type == PBF_PARAM_STRING) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: expected a string, got a number (%.9g)",
                      where, value);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (!isfinite(value)) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: value %g is not a finite number", where,
                      value);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (p->type == PBF_PARAM_INT && value != floor(value)) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: value %.9g is not a whole number", where,
                      value);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    /* float fields are checked against the float nearest each bound, so that a bound such as
     * 0.99 (stored as 0.99000001f) accepts the value it names */
    double lo = p->min, hi = p->max;
    if (p->type == PBF_PARAM_FLOAT || p->type == PBF_PARAM_VEC3) {
        lo = (double)(float)lo;
        hi = (double)(float)hi;
    }
    if (value < lo || value > hi || (p->min_exclusive && value <= lo)) {
        format_range(p, range, sizeof range);
        const char *unit = pbf_param_shown_unit(p);
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: value %.9g is out of range %s%s%s%s",
                      where, value, range, unit[0] ? " (" : "", unit, unit[0] ? ")" : "");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    return PBF_OK;
}

pbf_status pbf_param_set_number(const pbf_param_info *p, void *base, int component, double value,
                                const char *where, pbf_error *err) {
    pbf_status s = pbf_param_check_number(p, value, where, err);
    if (s != PBF_OK) return s;
    char *field = (char *)base + p->offset;
    switch (p->type) {
    case PBF_PARAM_FLOAT: *(float *)field = (float)value; break;
    case PBF_PARAM_INT: *(int *)field = (int)value; break;
    case PBF_PARAM_VEC3:
        if (component < 0 || component > 2) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: component %d is not 0, 1 or 2",
                          where ? where : p->name, component);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        ((float *)field)[component] = (float)value;
        break;
    case PBF_PARAM_ENUM:
    case PBF_PARAM_STRING: break; /* rejected by the check */
    }
    return PBF_OK;
}

pbf_status pbf_param_set_choice(const pbf_param_info *p, void *base, const char *choice,
                                const char *where, pbf_error *err) {
    char range[128];
    if (!where) where = p ? p->name : "parameter";
    if (!p || p->type != PBF_PARAM_ENUM) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: expected a number, got \"%.64s\"", where,
                      choice ? choice : "(null)");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; choice && p->choices[i]; ++i) {
        if (strcmp(p->choices[i], choice) == 0) {
            *(int *)((char *)base + p->offset) = i;
            return PBF_OK;
        }
    }
    format_range(p, range, sizeof range);
    pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "%s: \"%.64s\" is not one of %s", where,
                  choice ? choice : "(null)", range);
    return PBF_ERR_INVALID_ARGUMENT;
}

double pbf_param_get_number(const pbf_param_info *p, const void *base, int component) {
    const char *field = (const char *)base + p->offset;
    switch (p->type) {
    case PBF_PARAM_FLOAT: return *(const float *)field;
    case PBF_PARAM_INT:
    case PBF_PARAM_ENUM: return *(const int *)field;
    case PBF_PARAM_VEC3:
        return (component >= 0 && component < 3) ? ((const float *)field)[component] : NAN;
    case PBF_PARAM_STRING: return NAN;
    }
    return NAN;
}

void pbf_param_set_default(const pbf_param_info *p, void *base) {
    char *field = (char *)base + p->offset;
    switch (p->type) {
    case PBF_PARAM_FLOAT: *(float *)field = (float)p->def; break;
    case PBF_PARAM_INT:
    case PBF_PARAM_ENUM: *(int *)field = (int)p->def; break;
    case PBF_PARAM_VEC3:
        for (int c = 0; c < 3; ++c) ((float *)field)[c] = (float)p->def3[c];
        break;
    case PBF_PARAM_STRING:
        snprintf(field, (size_t)p->max, "%s", p->choices ? p->choices[0] : "");
        break;
    }
}

void pbf_param_format_help(const pbf_param_info *p, char *buf, size_t size) {
    char def[96], range[128];
    switch (p->type) {
    case PBF_PARAM_VEC3:
        snprintf(def, sizeof def, "%g,%g,%g", p->def3[0], p->def3[1], p->def3[2]);
        break;
    case PBF_PARAM_ENUM: snprintf(def, sizeof def, "%s", p->choices[(int)p->def]); break;
    case PBF_PARAM_STRING: snprintf(def, sizeof def, "%s", p->choices ? p->choices[0] : ""); break;
    default: snprintf(def, sizeof def, "%.9g", p->def); break;
    }
    format_range(p, range, sizeof range);
    snprintf(buf, size, "%-18s %-7s default %-12s range %-24s %s", p->name, pbf_param_shown_unit(p),
             def, range, p->description);
}

pbf_world_def pbf_default_world_def(void) {
    pbf_world_def def;
    memset(&def, 0, sizeof def);
    const pbf_param_info *tables[4];
    size_t counts[4];
    int nt = pbf_world_param_tables(tables, counts, 4);
    for (int t = 0; t < nt; ++t)
        for (size_t i = 0; i < counts[t]; ++i) pbf_param_set_default(&tables[t][i], &def);
    return def;
}

/* cpu | opencl | opencl:P.D | cuda | cuda:N (whether that device exists is for the backend) */
static int device_name_ok(const char *d) {
    if (strcmp(d, "cpu") == 0) return 1;
    const char *rest = NULL;
    int dotted = 0;
    if (strncmp(d, "opencl", 6) == 0) {
        rest = d + 6;
        dotted = 1;
    } else if (strncmp(d, "cuda", 4) == 0) {
        rest = d + 4;
    } else {
        return 0;
    }
    if (*rest == '\0') return 1;
    if (*rest++ != ':') return 0;
    int digits = 0, dots = 0;
    for (; *rest; ++rest) {
        if (*rest >= '0' && *rest <= '9') {
            ++digits;
        } else if (*rest == '.' && dotted && digits > 0 && dots == 0) {
            ++dots;
            digits = 0;
        } else {
            return 0;
        }
    }
    return digits > 0 && (dots == 1 || !dotted);
}

pbf_status pbf_world_def_validate(const pbf_world_def *def, pbf_error *err) {
    char where[96];
    if (!def) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "world_def: NULL pointer");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    const pbf_param_info *tables[4];
    size_t counts[4];
    int nt = pbf_world_param_tables(tables, counts, 4);
    for (int ti = 0; ti < nt; ++ti)
    for (size_t i = 0; i < counts[ti]; ++i) {
        const pbf_param_info *p = &tables[ti][i];
        if (p->type == PBF_PARAM_STRING) {
            const char *v = pbf_param_get_string(p, def);
            if (memchr(v, '\0', (size_t)p->max) == NULL || v[0] == '\0') {
                pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                              "%s: must be a non-empty NUL-terminated string of at most "
                              "%d characters",
                              p->name, (int)p->max - 1);
                return PBF_ERR_INVALID_ARGUMENT;
            }
            if (strcmp(p->name, "device") == 0 && !device_name_ok(v)) {
                pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                              "device = \"%s\": unknown device; use cpu, opencl, "
                              "opencl:PLATFORM.DEVICE, cuda or cuda:N",
                              v);
                return PBF_ERR_INVALID_ARGUMENT;
            }
            continue;
        }
        if (p->type == PBF_PARAM_ENUM) {
            int v = (int)pbf_param_get_number(p, def, 0), count = 0;
            while (p->choices[count]) ++count;
            if (v < 0 || v >= count) {
                pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                              "%s: value %d is not a valid choice (0..%d)", p->name, v,
                              count - 1);
                return PBF_ERR_INVALID_ARGUMENT;
            }
            continue;
        }
        int comps = p->type == PBF_PARAM_VEC3 ? 3 : 1;
        for (int c = 0; c < comps; ++c) {
            if (comps == 3)
                snprintf(where, sizeof where, "%s[%d]", p->name, c);
            else
                snprintf(where, sizeof where, "%s", p->name);
            pbf_status s = pbf_param_check_number(p, pbf_param_get_number(p, def, c), where, err);
            if (s != PBF_OK) return s;
        }
    }
    float lo[3], hi[3];
    pbf_v3(def->domain_min, lo);
    pbf_v3(def->domain_max, hi);
    float h = 2.0f * def->particle_radius * def->kernel_ratio;
    for (int a = 0; a < 3; ++a) {
        if (!(hi[a] - lo[a] >= 2.0f * h)) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "domain_max[%d] = %g: the container must be at least two kernel radii "
                          "(2h = %g m) larger than domain_min[%d] = %g",
                          a, hi[a], 2.0f * h, a, lo[a]);
            return PBF_ERR_INVALID_ARGUMENT;
        }
    }
    return PBF_OK;
}
