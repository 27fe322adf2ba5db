/* The world parameter table and the generic parameter helpers (see pbf/params.h). */
#include "pbf/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "solvers/solver.h"

static const char *const sph_kernel_names[] = {"cubic", "poly6_spiky", NULL};
static const char *const bed_walls_names[] = {"bed", "all", NULL};
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
    {"cfl", PBF_PARAM_FLOAT, "1", 2.0, {0}, 0, 10, 1, NULL, F(cfl),
     "speed limit, a safety net: a particle moves at most cfl * h per step (FleX maxSpeed); "
     "stats.jsonl's speed_clamps counts its cuts"},
    {"friction_static", PBF_PARAM_FLOAT, "1", 0.0, {0}, 0, 10, 0, NULL, F(friction_static),
     "static friction coefficient at walls and obstacles"},
    {"friction_dynamic", PBF_PARAM_FLOAT, "1", 0.0, {0}, 0, 10, 0, NULL, F(friction_dynamic),
     "dynamic friction coefficient at walls and obstacles"},
    {"bed_friction", PBF_PARAM_FLOAT, "1", 0.0, {0}, 0, 1, 0, NULL, F(bed_friction),
     "bed shear stress coefficient C_f of the quadratic friction law tau = rho C_f |u_t| u_t "
     "(Chezy's law of open-channel hydraulics, Chow 1959; the bed friction of shallow-water "
     "codes): an external force on the particles within one spacing of a wall, per wall area "
     "whatever the resolution, on their velocity along the wall; zero at rest, so it holds no "
     "liquid on a wall; ~0.003-0.01 for a smooth bed; 0 = free-slip walls"},
    {"bed_friction_walls", PBF_PARAM_ENUM, "-", 0, {0}, 0, 0, 0, bed_walls_names,
     F(bed_friction_walls),
     "the walls bed_friction acts on: bed = the faces gravity presses the liquid onto (the "
     "floor, the tops of boxes), all = every face of the container and the boxes"},
    {"max_particles", PBF_PARAM_INT, "1", 0, {0}, 0, 2147483647.0, 0, NULL, F(max_particles),
     "particle capacity reserved at creation; 0 grows as blocks are added"},
    {"threads", PBF_PARAM_INT, "1", 0, {0}, 0, 1024, 0, NULL, F(threads),
     "worker threads; 0 uses the OpenMP default (results do not depend on it)"},
    {"device", PBF_PARAM_STRING, "-", 0, {0}, 0, PBF_DEVICE_NAME_MAX, 0, device_default, F(device),
     "where the step runs: cpu, opencl, opencl:PLATFORM.DEVICE, cuda or cuda:N (pbf devices)"},
    {"solver", PBF_PARAM_ENUM, "-", 0, {0}, 0, 0, 0, pbf_solver_choice_names, F(solver),
     pbf_solver_key_description},
    {"sph_kernel", PBF_PARAM_ENUM, "-", 0, {0}, 0, 0, 0, sph_kernel_names, F(sph_kernel),
     "kernel of the SPH family's methods (every solver but pbf): cubic = the cubic spline "
     "(Monaghan 1992) for the density and its gradient, as SPlisHSPlasH; poly6_spiky = poly6 "
     "density with the spiky gradient (Mueller et al. 2003), whose pressure forces are not the "
     "density's gradient and feed energy into the fluid; pbf always uses poly6 / spiky "
     "(Macklin & Mueller 2013)"},
};





/* clang-format on */


#undef F

const pbf_param_info *pbf_world_params(size_t *count) {
    if (count) *count = sizeof world_params / sizeof world_params[0];
    return world_params;
}

int pbf_world_param_tables(const pbf_param_info **tables, size_t *counts, int max) {
    size_t ns = 0;
    const pbf_solver_info *sv = pbf_solvers(&ns);
    int n = 0;
    for (int i = -1; i < (int)ns; ++i, ++n) {
        size_t c = 0;
        const pbf_param_info *t = i < 0 ? pbf_world_params(&c) : pbf_solver_params(sv[i].kind, &c);
        if (n < max) {
            if (tables) tables[n] = t;
            if (counts) counts[n] = c;
        }
    }
    return n;
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
    /* float fields are checked against the float nearest each bound, the value as typed or as
     * the float it will be stored as, so that a bound such as 0.99 (stored as 0.99000001f) or
     * 0.9 (0.89999998f) accepts the value it names; a value whose float leaves the range (1e-50
     * becomes 0) is refused where the float is stored, with that message */
    double lo = p->min, hi = p->max, v = value;
    if (p->type == PBF_PARAM_FLOAT || p->type == PBF_PARAM_VEC3) {
        lo = (double)(float)lo;
        hi = (double)(float)hi;
        const double f = (double)(float)value;
        if (f >= lo && f <= hi && !(p->min_exclusive && f <= lo)) v = f;
    }
    if (v < lo || v > hi || (p->min_exclusive && v <= lo)) {
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
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES];
    size_t counts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
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
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES];
    size_t counts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
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
    /* each method's own checks (every key is valid in any scene, so every method's) */
    int nm = 0;
    const pbf_solver *const *methods = pbf_solver_all(&nm);
    for (int m = 0; m < nm; ++m) {
        pbf_status s = methods[m]->check ? methods[m]->check(def, err) : PBF_OK;
        if (s != PBF_OK) return s;
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

pbf_status pbf_check_iteration_bounds(int min, int max, const char *min_name,
                                      const char *max_name, pbf_error *err) {
    if (min <= max) return PBF_OK;
    pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "world_def.%s = %d: must not exceed %s = %d",
                  min_name, min, max_name, max);
    return PBF_ERR_INVALID_ARGUMENT;
}
