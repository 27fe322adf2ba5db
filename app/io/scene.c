/*
 * Scene loader: JSON -> pbfapp_scene, with every check done before a world is built.
 *
 * Order of checks (the first problem found is reported):
 *   1. the file: exists, regular, readable, not empty, at most 16 MiB;
 *   2. the JSON: syntax (with line and column), a top-level object, no duplicate keys;
 *   3. each key: known (else the closest known key is suggested), of the right type, in range
 *      (the parameter tables), geometry objects with their required keys;
 *   4. the overrides (--set KEY=VALUE, --frames, ...), checked like scene keys;
 *   5. the geometry: domain, boxes with min < max inside the domain, no overlaps, moving walls
 *      staying inside the domain for the whole run, fluid present, particle count and memory;
 *   6. pbf_world_def_validate.
 */
#define _POSIX_C_SOURCE 200809L

#include "io/scene.h"
#include "io/scene_tables.h"
#include "io/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The run table and the geometry tables: app/io/scene_tables.c. */

/* ---- small helpers ------------------------------------------------------------------------ */


static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Builds "FILE: keypath" into buf. */
static const char *where_of(char *buf, size_t size, const char *path, const char *keypath) {
    snprintf(buf, size, "%s: %s", path, keypath);
    return buf;
}

/* A short description of a JSON value for messages: `string "abc"`, `2.5`, `an object`. */
static void describe_json(const cJSON *v, char *buf, size_t size) {
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring ? v->valuestring : "";
        size_t n = strlen(s);
        snprintf(buf, size, "string \"%.40s%s\"", s, n > 40 ? "..." : "");
    } else if (cJSON_IsNumber(v)) {
        snprintf(buf, size, "number %.9g", v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNull(v)) {
        snprintf(buf, size, "null");
    } else if (cJSON_IsArray(v)) {
        snprintf(buf, size, "an array of %d element%s", cJSON_GetArraySize(v),
                 cJSON_GetArraySize(v) == 1 ? "" : "s");
    } else if (cJSON_IsObject(v)) {
        snprintf(buf, size, "an object");
    } else {
        snprintf(buf, size, "an invalid value");
    }
}

static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return (size_t)-1;
    size_t prev[64], cur[64];
    for (size_t j = 0; j <= lb; ++j) prev[j] = j;
    for (size_t i = 1; i <= la; ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; ++j) {
            char ca = a[i - 1], cb = b[j - 1];
            if (ca >= 'A' && ca <= 'Z') ca = (char)(ca - 'A' + 'a');
            if (cb >= 'A' && cb <= 'Z') cb = (char)(cb - 'A' + 'a');
            size_t best = prev[j - 1] + (ca == cb ? 0 : 1);
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            cur[j] = best;
        }
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

const char *pbfapp_closest_name(const char *key, const char *const *names, size_t count) {
    size_t len = strlen(key);
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < count; ++i) {
        size_t d = edit_distance(key, names[i]);
        if (d <= limit && d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    /* Else a known name containing the key ("iterations" -> "solver_iterations"). */
    for (size_t i = 0; !best && len >= 4 && i < count; ++i)
        if (strstr(names[i], key)) best = names[i];
    return best;
}

void pbfapp_option_hint(char *buf, size_t size, const char *arg, const char *const *names,
                        size_t count) {
    char name[64];
    const char *a = arg;
    while (*a == '-') ++a;
    size_t n = strcspn(a, "=");
    const char *best = NULL;
    if (arg[0] == '-' && n > 1 && n < sizeof name) {
        memcpy(name, a, n);
        name[n] = '\0';
        best = pbfapp_closest_name(name, names, count);
    }
    if (best)
        snprintf(buf, size, " (did you mean \"--%s\"?)", best);
    else if (size > 0)
        buf[0] = '\0';
}

/* " (did you mean \"x\"?)" or "". */
static void suggestion(char *buf, size_t size, const char *key, const char *const *names,
                       size_t count) {
    const char *s = pbfapp_closest_name(key, names, count);
    if (s)
        snprintf(buf, size, " (did you mean \"%s\"?)", s);
    else
        buf[0] = '\0';
}

/* Known keys of a context, for suggestions. */
typedef struct keyset {
    const char *names[96];
    size_t count;
} keyset;

static void keyset_add(keyset *k, const char *name) {
    if (k->count < sizeof k->names / sizeof k->names[0]) k->names[k->count++] = name;
}

static void keyset_add_table(keyset *k, const pbf_param_info *t, size_t n) {
    for (size_t i = 0; i < n; ++i) keyset_add(k, t[i].name);
}

static void keyset_add_world(keyset *k) {
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES];
    size_t counts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
    for (int t = 0; t < nt; ++t) keyset_add_table(k, tables[t], counts[t]);
}

/* `parent` is the key path of the object holding `key` ("" at the top level). */
static pbf_status unknown_key(pbf_error *err, const char *path, const char *parent, const char *key,
                              const keyset *known) {
    char hint[128];
    suggestion(hint, sizeof hint, key, known->names, known->count);
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    if (!hint[0]) {
        /* No close match: list the keys valid here when there are few of them. */
        if (known->count <= 12) {
            used += (size_t)snprintf(list, sizeof list, "; valid keys here: ");
            for (size_t i = 0; i < known->count && used < sizeof list; ++i)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         known->names[i]);
        } else {
            snprintf(list, sizeof list, "; see `pbf --help` for the parameters");
        }
    }
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s%s%.200s: unknown key%s%s", path, parent,
                parent[0] ? "." : "", key, hint, list);
}

/* Rejects an object with two members of the same name. */
static pbf_status check_duplicates(const cJSON *obj, const char *path, const char *keypath,
                                   pbf_error *err) {
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = obj->child; b != a; b = b->next)
            if (a->string && b->string && strcmp(a->string, b->string) == 0)
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: %s%s%s: duplicate key (\"%s\" appears more than once)", path,
                            keypath, keypath[0] ? "." : "", a->string, a->string);
    return PBF_OK;
}

/* Joins a key path: "fluid[1]" + "max" -> "fluid[1].max"; "" + "max" -> "max". */
static void join_key(char *buf, size_t size, const char *parent, const char *key) {
    if (parent[0])
        snprintf(buf, size, "%s.%s", parent, key);
    else
        snprintf(buf, size, "%s", key);
}


/* A key of the world definition: the shared table, then the solver's (pbf_world_param_tables). */
static const pbf_param_info *find_world_param(const char *key) {
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES];
    size_t counts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
    for (int t = 0; t < nt; ++t) {
        const pbf_param_info *p = pbf_param_find(tables[t], counts[t], key);
        if (p) return p;
    }
    return NULL;
}


/* Sets one parameter of a table from a JSON value, checking type and range. */
static pbf_status set_param_json(const pbf_param_info *p, void *base, const cJSON *item,
                                 const char *path, const char *keypath, pbf_error *err) {
    char where[384], got[96];
    describe_json(item, got, sizeof got);
    switch (p->type) {
    case PBF_PARAM_FLOAT:
    case PBF_PARAM_INT:
        if (!cJSON_IsNumber(item))
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: expected %s, got %s", path, keypath,
                        p->type == PBF_PARAM_INT ? "an integer" : "a number", got);
        return pbf_param_set_number(p, base, 0, item->valuedouble,
                                    where_of(where, sizeof where, path, keypath), err);
    case PBF_PARAM_VEC3: {
        if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: %s: expected an array of 3 numbers [x, y, z], got %s", path, keypath,
                        got);
        int c = 0;
        for (const cJSON *e = item->child; e; e = e->next, ++c) {
            char sub[320];
            snprintf(sub, sizeof sub, "%s[%d]", keypath, c);
            if (!cJSON_IsNumber(e)) {
                describe_json(e, got, sizeof got);
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: expected a number, got %s",
                            path, sub, got);
            }
            pbf_status st = pbf_param_set_number(p, base, c, e->valuedouble,
                                                 where_of(where, sizeof where, path, sub), err);
            if (st != PBF_OK) return st;
        }
        return PBF_OK;
    }
    case PBF_PARAM_ENUM: {
        if (!cJSON_IsString(item) || !item->valuestring) {
            char choices[256];
            size_t used = 0;
            choices[0] = '\0';
            for (int i = 0; p->choices && p->choices[i] && used < sizeof choices; ++i)
                used += (size_t)snprintf(choices + used, sizeof choices - used, "%s\"%s\"",
                                         i ? ", " : "", p->choices[i]);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: expected one of %s, got %s", path,
                        keypath, choices, got);
        }
        return pbf_param_set_choice(p, base, item->valuestring,
                                    where_of(where, sizeof where, path, keypath), err);
    }
    case PBF_PARAM_STRING:
        if (!cJSON_IsString(item) || !item->valuestring)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: expected a string, got %s",
                               path, keypath, got);
        return pbf_param_set_string(p, base, item->valuestring,
                                    where_of(where, sizeof where, path, keypath), err);
    }
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: unsupported parameter type", path, keypath);
}

static int table_index(const pbf_param_info *t, size_t n, const char *name) {
    for (size_t i = 0; i < n; ++i)
        if (strcmp(t[i].name, name) == 0) return (int)i;
    return -1;
}

/* Parses an object against a small table; `required` is a bit mask of table entries. */
static pbf_status parse_table_object(const cJSON *obj, const pbf_param_info *t, size_t n,
                                     void *base, unsigned allowed, unsigned required,
                                     const char *path, const char *keypath, unsigned *seen_out,
                                     const char *extra_key, pbf_error *err) {
    char got[96], sub[320];
    if (!cJSON_IsObject(obj)) {
        describe_json(obj, got, sizeof got);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: expected an object, got %s", path,
                    keypath, got);
    }
    pbf_status st = check_duplicates(obj, path, keypath, err);
    if (st != PBF_OK) return st;
    unsigned seen = 0;
    for (const cJSON *item = obj->child; item; item = item->next) {
        const char *key = item->string ? item->string : "";
        if (extra_key && strcmp(key, extra_key) == 0) continue;
        int i = table_index(t, n, key);
        join_key(sub, sizeof sub, keypath, key);
        if (i < 0 || !(allowed & (1u << i))) {
            keyset known = {{0}, 0};
            for (size_t k = 0; k < n; ++k)
                if (allowed & (1u << k)) keyset_add(&known, t[k].name);
            if (extra_key) keyset_add(&known, extra_key);
            if (i >= 0) {
                char list[256];
                size_t used = 0;
                list[0] = '\0';
                for (size_t k = 0; k < known.count && used < sizeof list; ++k)
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "",
                                             known.names[k]);
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: %s: key \"%s\" does not apply here (valid keys here: %s)", path,
                            sub, key, list);
            }
            return unknown_key(err, path, keypath, key, &known);
        }
        st = set_param_json(&t[i], base, item, path, sub, err);
        if (st != PBF_OK) return st;
        seen |= 1u << i;
    }
    for (size_t i = 0; i < n; ++i)
        if ((required & (1u << i)) && !(seen & (1u << i)))
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: missing key \"%s\" (%s%s%s)", path,
                        keypath, t[i].name, t[i].description,
                        *pbf_param_shown_unit(&t[i]) ? ", " : "", pbf_param_shown_unit(&t[i]));
    if (seen_out) *seen_out = seen;
    return PBF_OK;
}

/* ---- geometry ----------------------------------------------------------------------------- */

static float vget(pbf_vec3 v, int axis) {
    return axis == 0 ? v.x : axis == 1 ? v.y : v.z;
}
static const char axis_name[3] = {'x', 'y', 'z'};

static int boxes_overlap(pbf_vec3 amin, pbf_vec3 amax, pbf_vec3 bmin, pbf_vec3 bmax) {
    for (int a = 0; a < 3; ++a)
        if (!(vget(amin, a) < vget(bmax, a) && vget(bmin, a) < vget(amax, a))) return 0;
    return 1;
}

static void fmt_vec(char *buf, size_t size, pbf_vec3 v) {
    snprintf(buf, size, "[%g, %g, %g]", (double)v.x, (double)v.y, (double)v.z);
}

static pbf_status check_box_shape(const char *path, const char *keypath, pbf_vec3 min, pbf_vec3 max,
                                  const pbf_world_def *def, pbf_error *err) {
    char a[96], b[96];
    for (int ax = 0; ax < 3; ++ax)
        if (!(vget(min, ax) < vget(max, ax))) {
            fmt_vec(a, sizeof a, min);
            fmt_vec(b, sizeof b, max);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: %s: min must be less than max on every axis, but on %c min %g >= "
                        "max %g (min %s, max %s)",
                        path, keypath, axis_name[ax], (double)vget(min, ax), (double)vget(max, ax),
                        a, b);
        }
    for (int ax = 0; ax < 3; ++ax) {
        if (vget(min, ax) < vget(def->domain_min, ax) ||
            vget(max, ax) > vget(def->domain_max, ax)) {
            fmt_vec(a, sizeof a, min);
            fmt_vec(b, sizeof b, max);
            char dmin[96], dmax[96];
            fmt_vec(dmin, sizeof dmin, def->domain_min);
            fmt_vec(dmax, sizeof dmax, def->domain_max);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: %s: the box min %s, max %s lies outside the domain (domain_min %s, "
                        "domain_max %s) on axis %c",
                        path, keypath, a, b, dmin, dmax, axis_name[ax]);
        }
    }
    return PBF_OK;
}

static void box_keypath(const pbfapp_scene *s, int i, char *buf, size_t size) {
    if (i < s->obstacle_count)
        snprintf(buf, size, "obstacles[%d]", i);
    else
        snprintf(buf, size, "moving_walls[%d]", i - s->obstacle_count);
}

/* A moving wall must stay inside the domain over the whole run [0, frames / fps]. */
static pbf_status check_motion(const pbfapp_scene *s, int i, pbf_error *err) {
    const pbf_box *b = &s->boxes[i];
    const pbf_motion *m = &b->motion;
    char kp[64];
    box_keypath(s, i, kp, sizeof kp);
    if (m->type == PBF_MOTION_NONE) return PBF_OK;
    double len =
        sqrt((double)m->direction.x * m->direction.x + (double)m->direction.y * m->direction.y +
             (double)m->direction.z * m->direction.z);
    if (!(len > 1e-12)) {
        char d[96];
        fmt_vec(d, sizeof d, m->direction);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: %s.motion.direction: must not be zero, got %s", s->path, kp, d);
    }
    if (m->stop >= 0 && m->stop < m->start)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: %s.motion.stop: %g is before start %g (use a negative stop for never)",
                    s->path, kp, (double)m->stop, (double)m->start);
    double t_end = (double)s->run.frames / (double)s->run.fps;
    /* Extent of the offset along the unit direction: [lo, hi] in metres. */
    double lo = 0, hi = 0;
    if (m->type == PBF_MOTION_OSCILLATE) {
        lo = -(double)m->amplitude;
        hi = (double)m->amplitude;
    } else {
        double t1 = m->stop >= 0 && (double)m->stop < t_end ? (double)m->stop : t_end;
        double dist = (double)m->speed * (t1 > (double)m->start ? t1 - (double)m->start : 0.0);
        lo = dist < 0 ? dist : 0;
        hi = dist > 0 ? dist : 0;
    }
    for (int ax = 0; ax < 3; ++ax) {
        double d = vget(m->direction, ax) / len;
        double o1 = d * lo, o2 = d * hi;
        double omin = o1 < o2 ? o1 : o2, omax = o1 < o2 ? o2 : o1;
        double reach_min = vget(b->min, ax) + omin, reach_max = vget(b->max, ax) + omax;
        double dmin = vget(s->def.domain_min, ax), dmax = vget(s->def.domain_max, ax);
        const float tol = 1e-5f;
        if (reach_min < dmin - tol * (dmax - dmin) || reach_max > dmax + tol * (dmax - dmin)) {
            int low = reach_min < dmin - tol * (dmax - dmin);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: %s.motion: the wall leaves the domain during the run (0 to %g s): "
                        "its %s.%c reaches %g, beyond domain_%s.%c = %g",
                        s->path, kp, t_end, low ? "min" : "max", axis_name[ax],
                        low ? reach_min : reach_max, low ? "min" : "max", axis_name[ax],
                        low ? dmin : dmax);
        }
    }
    return PBF_OK;
}

static double physical_memory_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return 0;
    return (double)pages * (double)page;
}

/* The values as stored (32-bit floats) must still be in range: 1e-50 passes the check of the
 * double read from the file but is stored as 0 (fps 0 would make dt infinite). Then the step:
 * pbf_world_step accepts dt <= 1 s. */
static pbf_status check_stored_values(const pbfapp_scene *s, pbf_error *err) {
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES + 1];
    size_t counts[PBF_MAX_PARAM_TABLES + 1];
    const void *bases[PBF_MAX_PARAM_TABLES + 1];
    int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
    for (int t = 0; t < nt; ++t) bases[t] = &s->def;
    tables[nt] = pbfapp_run_params(&counts[nt]);
    bases[nt++] = &s->run;
    char where[400];
    for (int t = 0; t < nt; ++t)
        for (size_t i = 0; i < counts[t]; ++i) {
            const pbf_param_info *p = &tables[t][i];
            if (p->type != PBF_PARAM_FLOAT && p->type != PBF_PARAM_VEC3) continue;
            for (int c = 0; c < (p->type == PBF_PARAM_VEC3 ? 3 : 1); ++c) {
                /* the bounds as floats too: 0.99 is stored as 0.99000001 */
                double v = pbf_param_get_number(p, bases[t], c);
                double lo = (double)(float)p->min, hi = (double)(float)p->max;
                if (isfinite(v) && v >= lo && v <= hi && !(p->min_exclusive && v <= lo)) continue;
                snprintf(where, sizeof where, "%s%s", p->name,
                         p->type == PBF_PARAM_VEC3 ? (c == 0 ? "[0]" : c == 1 ? "[1]" : "[2]") : "");
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: %s: the value is stored as the 32-bit float %g, out of range "
                            "%s%g, %g]",
                            s->path, where, v, p->min_exclusive ? "(" : "[", p->min, p->max);
            }
        }
    double dt = 1.0 / ((double)s->run.fps * (double)s->run.substeps);
    if (!(dt <= 1.0))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: fps, substeps: the step dt = 1 / (fps * substeps) = %g s is longer than "
                    "the 1 s the solver accepts; raise fps (%g) or substeps (%d)",
                    s->path, dt, (double)s->run.fps, s->run.substeps);
    return PBF_OK;
}

static pbf_status check_geometry(pbfapp_scene *s, pbf_error *err) {
    const pbf_world_def *def = &s->def;
    const char *path = s->path;
    char kp[64], kq[64], a[96], b[96];
    for (int ax = 0; ax < 3; ++ax)
        if (!(vget(def->domain_min, ax) < vget(def->domain_max, ax))) {
            fmt_vec(a, sizeof a, def->domain_min);
            fmt_vec(b, sizeof b, def->domain_max);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: domain_min, domain_max: min must be less than max on every axis, "
                        "but on %c domain_min %g >= domain_max %g (domain_min %s, domain_max %s)",
                        path, axis_name[ax], (double)vget(def->domain_min, ax),
                        (double)vget(def->domain_max, ax), a, b);
        }
    if (s->block_count == 0)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: fluid: the scene has no fluid; add at least one block, e.g. "
                    "\"fluid\": [{\"min\": [0, 0, 0], \"max\": [0.5, 0.5, 0.5]}]",
                    path);
    for (int i = 0; i < s->box_count; ++i) {
        box_keypath(s, i, kp, sizeof kp);
        pbf_status st = check_box_shape(path, kp, s->boxes[i].min, s->boxes[i].max, def, err);
        if (st != PBF_OK) return st;
    }
    for (int i = 0; i < s->block_count; ++i) {
        snprintf(kp, sizeof kp, "fluid[%d]", i);
        pbf_status st = check_box_shape(path, kp, s->blocks[i].min, s->blocks[i].max, def, err);
        if (st != PBF_OK) return st;
    }
    for (int i = 0; i < s->box_count; ++i)
        for (int j = 0; j < i; ++j)
            if (boxes_overlap(s->boxes[i].min, s->boxes[i].max, s->boxes[j].min, s->boxes[j].max)) {
                box_keypath(s, i, kp, sizeof kp);
                box_keypath(s, j, kq, sizeof kq);
                fmt_vec(a, sizeof a, s->boxes[i].min);
                fmt_vec(b, sizeof b, s->boxes[i].max);
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: %s: the box min %s, max %s overlaps %s; boxes may not overlap",
                            path, kp, a, b, kq);
            }
    for (int i = 0; i < s->block_count; ++i) {
        snprintf(kp, sizeof kp, "fluid[%d]", i);
        fmt_vec(a, sizeof a, s->blocks[i].min);
        fmt_vec(b, sizeof b, s->blocks[i].max);
        for (int j = 0; j < i; ++j)
            if (boxes_overlap(s->blocks[i].min, s->blocks[i].max, s->blocks[j].min,
                              s->blocks[j].max))
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: %s: the block min %s, max %s overlaps fluid[%d]", path, kp, a, b,
                            j);
        for (int j = 0; j < s->box_count; ++j)
            if (boxes_overlap(s->blocks[i].min, s->blocks[i].max, s->boxes[j].min,
                              s->boxes[j].max)) {
                box_keypath(s, j, kq, sizeof kq);
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                            "%s: %s: the block min %s, max %s overlaps %s", path, kp, a, b, kq);
            }
    }
    for (int i = 0; i < s->box_count; ++i) {
        pbf_status st = check_motion(s, i, err);
        if (st != PBF_OK) return st;
    }
    /* Particle counts and memory. */
    int64_t total = 0;
    for (int i = 0; i < s->block_count; ++i) {
        /* A lattice far beyond any limit (particle_radius 1e-30) is refused before it is counted
         * in integers (which would overflow). */
        for (int ax = 0; ax < 3; ++ax) {
            double along = ((double)vget(s->blocks[i].max, ax) - (double)vget(s->blocks[i].min, ax)) /
                           (2.0 * (double)def->particle_radius);
            if (!(along < 1e9))
                return pbfapp_fail(err, PBF_ERR_LIMIT,
                            "%s: fluid[%d]: the block holds about %.3g particles along %c "
                            "(particle_radius %g m), far more than the limit of %d particles",
                            path, i, along, axis_name[ax], (double)def->particle_radius, INT32_MAX);
        }
        int64_t n = pbf_fluid_block_count(def, &s->blocks[i]);
        if (n <= 0) {
            fmt_vec(a, sizeof a, s->blocks[i].min);
            fmt_vec(b, sizeof b, s->blocks[i].max);
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: fluid[%d]: the block min %s, max %s holds no particles: it is "
                        "thinner than one particle spacing (2 * particle_radius = %g m) on some "
                        "axis",
                        path, i, a, b, 2.0 * (double)def->particle_radius);
        }
        total = n > INT64_MAX - total ? INT64_MAX : total + n;
    }
    s->particles = total;
    if (total > INT32_MAX)
        return pbfapp_fail(err, PBF_ERR_LIMIT,
                    "%s: fluid: the scene holds %lld particles (particle_radius %g m), more than "
                    "the limit of %d",
                    path, (long long)total, (double)def->particle_radius, INT32_MAX);
    if (def->max_particles > 0 && total > def->max_particles)
        return pbfapp_fail(err, PBF_ERR_LIMIT,
                    "%s: max_particles: %d is less than the %lld particles of the fluid blocks",
                    path, def->max_particles, (long long)total);
    double capacity = (double)(def->max_particles > total ? def->max_particles : total);
    double need = capacity * (double)pbf_bytes_per_particle();
    double have = physical_memory_bytes();
    if (have > 0 && need > have)
        return pbfapp_fail(err, PBF_ERR_LIMIT,
                    "%s: fluid: the scene holds %.0f particles (particle_radius %g m), which "
                    "need about %.1f GiB (%zu bytes each), more than this machine's %.1f GiB of "
                    "memory",
                    path, capacity, (double)def->particle_radius, need / 1073741824.0,
                    pbf_bytes_per_particle(), have / 1073741824.0);
    return PBF_OK;
}

/* ---- overrides ---------------------------------------------------------------------------- */

static int parse_double(const char *text, double *out) {
    if (!text || !*text) return 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text) return 0;
    while (*end == ' ' || *end == '\t') ++end;
    if (*end != '\0') return 0;
    *out = v;
    return 1;
}

pbf_status pbfapp_apply_override(pbf_world_def *def, pbfapp_run *run, const char *key,
                                 const char *value, const char *label, pbf_error *err) {
    size_t rn = 0;
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    const pbf_param_info *p = find_world_param(key);
    void *base = def;
    if (!p) {
        p = pbf_param_find(rt, rn, key);
        base = run;
    }
    if (!p) {
        keyset known = {{0}, 0};
        keyset_add_world(&known);
        keyset_add_table(&known, rt, rn);
        char hint[128];
        suggestion(hint, sizeof hint, key, known.names, known.count);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: unknown parameter \"%s\"%s; `pbf run --help` lists the parameters", label,
                    key, hint);
    }
    double v = 0;
    switch (p->type) {
    case PBF_PARAM_FLOAT:
    case PBF_PARAM_INT:
        if (!parse_double(value, &v))
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: \"%s\" is not a number", label, value);
        return pbf_param_set_number(p, base, 0, v, label, err);
    case PBF_PARAM_VEC3: {
        char buf[256];
        if (strlen(value) >= sizeof buf)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: value is too long", label);
        memcpy(buf, value, strlen(value) + 1);
        double c[3];
        int n = 0;
        char *start = buf;
        int ok = 1;
        for (;;) {
            char *comma = strchr(start, ',');
            if (comma) *comma = '\0';
            if (n >= 3 || !parse_double(start, &c[n])) {
                ok = 0;
                break;
            }
            ++n;
            if (!comma) break;
            start = comma + 1;
        }
        if (!ok || n != 3)
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                        "%s: \"%s\" is not a vector of three numbers x,y,z", label, value);
        /* Check all components first so a failure leaves the vector untouched. */
        char where[320];
        for (int i = 0; i < 3; ++i) {
            snprintf(where, sizeof where, "%s[%d]", label, i);
            pbf_status st = pbf_param_check_number(p, c[i], where, err);
            if (st != PBF_OK) return st;
        }
        for (int i = 0; i < 3; ++i) {
            snprintf(where, sizeof where, "%s[%d]", label, i);
            pbf_status st = pbf_param_set_number(p, base, i, c[i], where, err);
            if (st != PBF_OK) return st;
        }
        return PBF_OK;
    }
    case PBF_PARAM_ENUM: return pbf_param_set_choice(p, base, value, label, err);
    case PBF_PARAM_STRING: return pbf_param_set_string(p, base, value, label, err);
    }
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: unsupported parameter type", label);
}

/* ---- the scene ---------------------------------------------------------------------------- */

void pbfapp_scene_free(pbfapp_scene *scene) {
    if (!scene) return;
    free(scene->path);
    free(scene->name);
    free(scene->description);
    free(scene->blocks);
    free(scene->boxes);
    memset(scene, 0, sizeof *scene);
}

static char *default_name(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *name = dup_string(base);
    if (!name) return NULL;
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    return name;
}

/* Line and column (1-based) of a byte offset. */
static void line_column(const char *text, size_t offset, int *line, int *column) {
    int l = 1, c = 1;
    for (size_t i = 0; i < offset && text[i]; ++i) {
        if (text[i] == '\n') {
            ++l;
            c = 1;
        } else {
            ++c;
        }
    }
    *line = l;
    *column = c;
}

static pbf_status parse_array(const cJSON *arr, const char *key, const char *path, int *count,
                              pbf_error *err) {
    char got[96];
    if (!cJSON_IsArray(arr)) {
        describe_json(arr, got, sizeof got);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: %s: expected an array of objects [{\"min\": [..], \"max\": [..]}, ...], "
                    "got %s",
                    path, key, got);
    }
    int n = cJSON_GetArraySize(arr);
    if (n > 100000)
        return pbfapp_fail(err, PBF_ERR_LIMIT, "%s: %s: %d entries, more than the limit of 100000", path,
                    key, n);
    *count = n;
    return PBF_OK;
}

/* "camera": the table's keys, then fov < 170, position != target, up not along the view. */
static pbf_status parse_camera(pbfapp_scene *s, const cJSON *obj, pbf_error *err) {
    pbf_camera *c = &s->camera;
    for (size_t k = 0; k < pbfapp_camera_param_count; ++k)
        pbf_param_set_default(&pbfapp_camera_params[k], c);
    pbf_status st = parse_table_object(obj, pbfapp_camera_params, pbfapp_camera_param_count, c,
                                       0xfu, CAMERA_REQUIRED, s->path, "camera", NULL, NULL, err);
    if (st != PBF_OK) return st;
    if (!(c->fov_deg < 170.0f))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: camera.fov: %g is out of range (1, 170) degrees", s->path,
                    (double)c->fov_deg);
    double f[3], len2 = 0, up2 = 0, dot = 0;
    for (int a = 0; a < 3; ++a) {
        f[a] = (double)c->target[a] - (double)c->position[a];
        len2 += f[a] * f[a];
        up2 += (double)c->up[a] * c->up[a];
        dot += f[a] * c->up[a];
    }
    if (!(len2 > 1e-18))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: camera.target: must differ from camera.position, both are [%g, %g, %g]",
                    s->path, (double)c->position[0], (double)c->position[1],
                    (double)c->position[2]);
    if (!(up2 > 1e-18))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: camera.up: must not be zero", s->path);
    if (dot * dot > 0.9999 * len2 * up2)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: camera.up: [%g, %g, %g] is parallel to the view direction (target - "
                    "position); choose an up direction across the view (e.g. [0, 0, -1] when "
                    "looking straight down)",
                    s->path, (double)c->up[0], (double)c->up[1], (double)c->up[2]);
    s->has_camera = 1;
    return PBF_OK;
}

/* The "motion" object of moving wall `kp` (whose box is b): the type first, which decides the keys
 * that apply. */
static pbf_status parse_motion(const char *path, const cJSON *e, const char *kp, pbf_box *b,
                               pbf_error *err) {
    pbf_status st;
    const cJSON *motion = cJSON_GetObjectItemCaseSensitive(e, "motion");
    char mkp[96];
    snprintf(mkp, sizeof mkp, "%s.motion", kp);
    if (!motion)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: %s: missing key \"motion\" (e.g. {\"type\": \"oscillate\", "
                    "\"direction\": [1, 0, 0], \"amplitude\": 0.1, \"period\": 2})",
                    path, kp);
    /* Defaults, then the type (which decides the keys that apply), then the rest. */
    for (size_t k = 0; k < pbfapp_motion_param_count; ++k)
        pbf_param_set_default(&pbfapp_motion_params[k], &b->motion);
    const cJSON *type =
        cJSON_IsObject(motion) ? cJSON_GetObjectItemCaseSensitive(motion, "type") : NULL;
    unsigned allowed =
        M_TYPE | M_DIRECTION | M_AMPLITUDE | M_PERIOD | M_PHASE | M_SPEED | M_START | M_STOP;
    unsigned required = M_TYPE;
    if (type) {
        char tkp[128];
        snprintf(tkp, sizeof tkp, "%s.type", mkp);
        st = set_param_json(&pbfapp_motion_params[0], &b->motion, type, path, tkp, err);
        if (st != PBF_OK) return st;
        int t = (int)b->motion.type;
        if (t >= 0 && t < 3) {
            allowed = pbfapp_motion_allowed[t];
            required = pbfapp_motion_required[t];
        }
    }
    return parse_table_object(motion, pbfapp_motion_params, pbfapp_motion_param_count,
                              &b->motion, allowed, required, path, mkp, NULL, NULL, err);
}

static pbf_status parse_document(pbfapp_scene *s, const cJSON *root,
                                 const pbfapp_override *overrides, size_t override_count,
                                 pbf_error *err) {
    const char *path = s->path;
    char got[96], kp[64];
    size_t rn = 0;
    const pbf_param_info *rt = pbfapp_run_params(&rn);

    if (!cJSON_IsObject(root)) {
        describe_json(root, got, sizeof got);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: the top level must be an object {\"domain_min\": ..., \"fluid\": [...]}, "
                    "got %s",
                    path, got);
    }
    pbf_status st = check_duplicates(root, path, "", err);
    if (st != PBF_OK) return st;

    const cJSON *fluid = NULL, *obstacles = NULL, *walls = NULL, *camera = NULL;
    for (const cJSON *item = root->child; item; item = item->next) {
        const char *key = item->string ? item->string : "";
        const pbf_param_info *p;
        if (strcmp(key, "name") == 0 || strcmp(key, "description") == 0) {
            if (!cJSON_IsString(item) || !item->valuestring) {
                describe_json(item, got, sizeof got);
                return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: %s: expected a string, got %s",
                            path, key, got);
            }
            char *copy = dup_string(item->valuestring);
            if (!copy) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            char **dst = key[0] == 'n' ? &s->name : &s->description;
            free(*dst);
            *dst = copy;
        } else if ((p = find_world_param(key)) != NULL) {
            st = set_param_json(p, &s->def, item, path, key, err);
            if (st != PBF_OK) return st;
        } else if ((p = pbf_param_find(rt, rn, key)) != NULL) {
            st = set_param_json(p, &s->run, item, path, key, err);
            if (st != PBF_OK) return st;
        } else if (strcmp(key, "fluid") == 0) {
            fluid = item;
        } else if (strcmp(key, "obstacles") == 0) {
            obstacles = item;
        } else if (strcmp(key, "moving_walls") == 0) {
            walls = item;
        } else if (strcmp(key, "camera") == 0) {
            camera = item;
        } else {
            keyset known = {{0}, 0};
            keyset_add(&known, "name");
            keyset_add(&known, "description");
            keyset_add(&known, "fluid");
            keyset_add(&known, "obstacles");
            keyset_add(&known, "moving_walls");
            keyset_add(&known, "camera");
            keyset_add_world(&known);
            keyset_add_table(&known, rt, rn);
            return unknown_key(err, path, "", key, &known);
        }
    }

    /* Geometry arrays. */
    int nb = 0, no = 0, nw = 0;
    if (fluid && (st = parse_array(fluid, "fluid", path, &nb, err)) != PBF_OK) return st;
    if (obstacles && (st = parse_array(obstacles, "obstacles", path, &no, err)) != PBF_OK)
        return st;
    if (walls && (st = parse_array(walls, "moving_walls", path, &nw, err)) != PBF_OK) return st;
    if (nb > 0) {
        s->blocks = calloc((size_t)nb, sizeof *s->blocks);
        if (!s->blocks) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    if (no + nw > 0) {
        s->boxes = calloc((size_t)(no + nw), sizeof *s->boxes);
        if (!s->boxes) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    int i = 0;
    for (const cJSON *e = fluid ? fluid->child : NULL; e; e = e->next, ++i) {
        snprintf(kp, sizeof kp, "fluid[%d]", i);
        st = parse_table_object(e, pbfapp_block_params, pbfapp_block_param_count, &s->blocks[i],
                                0x7u, BLOCK_REQUIRED, path, kp, NULL, NULL, err);
        if (st != PBF_OK) return st;
    }
    s->block_count = nb;
    i = 0;
    for (const cJSON *e = obstacles ? obstacles->child : NULL; e; e = e->next, ++i) {
        snprintf(kp, sizeof kp, "obstacles[%d]", i);
        pbf_box *b = &s->boxes[i];
        st = parse_table_object(e, pbfapp_box_params, pbfapp_box_param_count, b, 0x3u, 0x3u, path,
                                kp, NULL, NULL, err);
        if (st != PBF_OK) return st;
        b->motion.type = PBF_MOTION_NONE;
        b->motion.stop = -1;
    }
    s->obstacle_count = no;
    i = 0;
    for (const cJSON *e = walls ? walls->child : NULL; e; e = e->next, ++i) {
        snprintf(kp, sizeof kp, "moving_walls[%d]", i);
        pbf_box *b = &s->boxes[no + i];
        st = parse_table_object(e, pbfapp_box_params, pbfapp_box_param_count, b, 0x3u, 0x3u, path,
                                kp, NULL, "motion", err);
        if (st != PBF_OK) return st;
        st = parse_motion(path, e, kp, b, err);
        if (st != PBF_OK) return st;
    }
    s->box_count = no + nw;

    if (camera) {
        st = parse_camera(s, camera, err);
        if (st != PBF_OK) return st;
    }

    /* Overrides: each checked like a scene key, named by its label. */
    for (size_t k = 0; k < override_count; ++k) {
        const pbfapp_override *o = &overrides[k];
        char label[320];
        if (o->label)
            snprintf(label, sizeof label, "%s", o->label);
        else
            snprintf(label, sizeof label, "--set %s", o->key);
        st = pbfapp_apply_override(&s->def, &s->run, o->key, o->value ? o->value : "", label, err);
        if (st != PBF_OK) return st;
    }

    st = check_stored_values(s, err);
    if (st != PBF_OK) return st;
    st = check_geometry(s, err);
    if (st != PBF_OK) return st;

    pbf_error e;
    memset(&e, 0, sizeof e);
    st = pbf_world_def_validate(&s->def, &e);
    if (st != PBF_OK) return pbfapp_fail(err, st, "%s: %s", path, e.message);
    return PBF_OK;
}

pbf_status pbfapp_scene_parse(const char *path, const char *text, size_t length,
                              const pbfapp_override *overrides, size_t override_count,
                              pbfapp_scene *scene, pbf_error *err) {
    memset(scene, 0, sizeof *scene);
    if (err) {
        err->status = PBF_OK;
        err->message[0] = '\0';
    }
    scene->path = dup_string(path);
    scene->description = dup_string("");
    if (!scene->path || !scene->description) {
        pbfapp_scene_free(scene);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    scene->def = pbf_default_world_def();
    scene->run = pbfapp_default_run();

    size_t start = 0;
    if (length >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        start = 3; /* UTF-8 byte order mark */
    size_t nul = start;
    while (nul < length && text[nul] != '\0') ++nul;
    if (nul < length) {
        int line, col;
        line_column(text, nul, &line, &col);
        pbfapp_scene_free(scene);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s:%d:%d: invalid JSON: a NUL byte at offset %zu (is this a text file?)", path,
                    line, col, nul);
    }
    int blank = 1;
    for (size_t i = start; i < length && blank; ++i)
        if (!(text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) blank = 0;
    if (blank) {
        pbfapp_scene_free(scene);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: the file is empty (%zu bytes of white space); a scene is a JSON object",
                    path, length);
    }

    /* cJSON needs the terminating NUL inside the length to reject trailing garbage. */
    char *buf = malloc(length - start + 1);
    if (!buf) {
        pbfapp_scene_free(scene);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    memcpy(buf, text + start, length - start);
    buf[length - start] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, length - start + 1, &end, 1);
    if (!root) {
        size_t off = end && end >= buf && end <= buf + (length - start) ? (size_t)(end - buf)
                                                                        : length - start;
        int line, col;
        line_column(buf, off, &line, &col);
        /* Context: the text of the error's line around the position, without indentation. */
        size_t line_start = off;
        while (line_start > 0 && buf[line_start - 1] != '\n') --line_start;
        size_t from = off > line_start + 20 ? off - 20 : line_start;
        while (from < off && (buf[from] == ' ' || buf[from] == '\t')) ++from;
        char near[48];
        size_t k = 0;
        for (size_t j = from;
             j < length - start && k + 1 < sizeof near && buf[j] != '\n' && buf[j] != '\r'; ++j) {
            unsigned char c = (unsigned char)buf[j];
            near[k++] = (c >= 32 && c < 127) ? (char)c : '?';
        }
        near[k] = '\0';
        if (off >= length - start)
            pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                 "%s:%d:%d: invalid JSON: unexpected end of file (line %d, column %d)", path,
                 line + 0, col, line, col);
        else
            pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                 "%s:%d:%d: invalid JSON at line %d, column %d, near: %s", path, line, col, line,
                 col, near);
        free(buf);
        pbfapp_scene_free(scene);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    free(buf);
    pbf_status st = parse_document(scene, root, overrides, override_count, err);
    cJSON_Delete(root);
    if (st == PBF_OK && !scene->name) {
        scene->name = default_name(path);
        if (!scene->name) st = pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    if (st != PBF_OK) pbfapp_scene_free(scene);
    return st;
}

/* The scenes that come with pbf: BINDIR/../share/pbf/scenes beside the running program (an
 * installed pbf, found through /proc/self/exe), else the source tree's scenes/ (a build tree);
 * 0 if neither is there. */
static int bundled_scenes_dir(char *out, size_t size) {
    struct stat sb;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/'); /* BINDIR/pbf -> BINDIR -> its parent */
        if (slash) *slash = '\0';
        slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int m = snprintf(out, size, "%s/share/pbf/scenes", exe);
            if (m > 0 && (size_t)m < size && stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) return 1;
        }
    }
#ifdef PBF_SCENES_DIR
    int m = snprintf(out, size, "%s", PBF_SCENES_DIR);
    if (m > 0 && (size_t)m < size && stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) return 1;
#endif
    return 0;
}

/* A relative scene path that is not there: where pbf's own scenes are (the scene of that name
 * among them, if there is one). */
static pbf_status scene_not_found(const char *path, int e, pbf_error *err) {
    char dir[4096], own[4400];
    struct stat sb;
    if (e != ENOENT || path[0] == '/' || !bundled_scenes_dir(dir, sizeof dir))
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open the scene file: %s", path,
                           strerror(e));
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(own, sizeof own, "%s/%s", dir, base);
    if (stat(own, &sb) == 0 && S_ISREG(sb.st_mode))
        return pbfapp_fail(
            err, PBF_ERR_IO,
            "%s: cannot open the scene file: %s (relative to the current directory); "
            "pbf's own scenes are in %s: %s is the one of that name",
            path, strerror(e), dir, own);
    return pbfapp_fail(err, PBF_ERR_IO,
                       "%s: cannot open the scene file: %s (relative to the current directory); "
                       "pbf's own scenes are in %s",
                       path, strerror(e), dir);
}

pbf_status pbfapp_scene_load(const char *path, const pbfapp_override *overrides,
                             size_t override_count, pbfapp_scene *scene, pbf_error *err) {
    memset(scene, 0, sizeof *scene);
    struct stat sb;
    if (stat(path, &sb) != 0) return scene_not_found(path, errno, err);
    if (S_ISDIR(sb.st_mode))
        return pbfapp_fail(err, PBF_ERR_IO, "%s: is a directory, not a scene file", path);
    if (!S_ISREG(sb.st_mode))
        return pbfapp_fail(err, PBF_ERR_IO, "%s: is not a regular file (a scene is a JSON file)", path);
    if ((unsigned long long)sb.st_size > PBFAPP_SCENE_MAX_BYTES)
        return pbfapp_fail(err, PBF_ERR_LIMIT,
                    "%s: the file is %lld bytes, more than the %u MiB limit for scene files", path,
                    (long long)sb.st_size, PBFAPP_SCENE_MAX_BYTES >> 20);
    FILE *f = fopen(path, "rb");
    if (!f)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot open the scene file: %s", path, strerror(errno));
    size_t cap = (size_t)sb.st_size + 1;
    char *text = malloc(cap + 1);
    if (!text) {
        fclose(f);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    size_t n = fread(text, 1, cap, f);
    int read_error = ferror(f);
    int saved = errno;
    fclose(f);
    if (read_error) {
        free(text);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot read the scene file: %s", path, strerror(saved));
    }
    if (n > (size_t)sb.st_size) {
        free(text);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: the file changed while it was read", path);
    }
    if (n == 0) {
        free(text);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "%s: the file is empty (0 bytes); a scene is a JSON object", path);
    }
    text[n] = '\0';
    pbf_status st = pbfapp_scene_parse(path, text, n, overrides, override_count, scene, err);
    free(text);
    return st;
}

static pbf_status create_world(const pbfapp_scene *scene, int with_blocks, pbf_world **out_world,
                               pbf_error *err) {
    *out_world = NULL;
    pbf_world *w = NULL;
    pbf_error e;
    memset(&e, 0, sizeof e);
    pbf_status st = pbf_world_create(&scene->def, &w, &e);
    if (st != PBF_OK)
        return pbfapp_fail(err, st, "%s: cannot create the world: %s", scene->path, e.message);
    for (int i = 0; i < scene->box_count; ++i) {
        st = pbf_world_add_box(w, &scene->boxes[i], &e);
        if (st != PBF_OK) {
            char kp[64];
            box_keypath(scene, i, kp, sizeof kp);
            pbf_world_destroy(w);
            return pbfapp_fail(err, st, "%s: %s: %s", scene->path, kp, e.message);
        }
    }
    for (int i = 0; with_blocks && i < scene->block_count; ++i) {
        st = pbf_world_add_fluid_block(w, &scene->blocks[i], &e);
        if (st != PBF_OK) {
            pbf_world_destroy(w);
            return pbfapp_fail(err, st, "%s: fluid[%d]: %s", scene->path, i, e.message);
        }
    }
    *out_world = w;
    return PBF_OK;
}

pbf_status pbfapp_scene_create_world(const pbfapp_scene *scene, pbf_world **out_world,
                                     pbf_error *err) {
    return create_world(scene, 1, out_world, err);
}

pbf_status pbfapp_scene_create_world_empty(const pbfapp_scene *scene, pbf_world **out_world,
                                           pbf_error *err) {
    return create_world(scene, 0, out_world, err);
}
