/* pbfapp_scene_write: a loaded scene (overrides applied) back to a scene file (see scene.h). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/scene.h"
#include "io/util.h"


static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; ++c) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

/* The shortest of %.6g .. %.9g that reads back as the same float (%.9g always does). */
static const char *num(char *buf, size_t size, double value) {
    float v = (float)value;
    for (int digits = 6; digits <= 9; ++digits) {
        snprintf(buf, size, "%.*g", digits, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    return buf;
}

static void vec(FILE *f, const float v[3]) {
    char a[32], b[32], c[32];
    fprintf(f, "[%s, %s, %s]", num(a, sizeof a, v[0]), num(b, sizeof b, v[1]),
            num(c, sizeof c, v[2]));
}

static void vec3(FILE *f, pbf_vec3 v) {
    float a[3] = {v.x, v.y, v.z};
    vec(f, a);
}

static void write_table(FILE *f, const pbf_param_info *t, size_t n, const void *base) {
    for (size_t i = 0; i < n; ++i) {
        const pbf_param_info *p = &t[i];
        fprintf(f, "  \"%s\": ", p->name);
        switch (p->type) {
        case PBF_PARAM_FLOAT: {
            char b[32];
            fputs(num(b, sizeof b, pbf_param_get_number(p, base, 0)), f);
            break;
        }
        case PBF_PARAM_INT: fprintf(f, "%.0f", pbf_param_get_number(p, base, 0)); break;
        case PBF_PARAM_VEC3: {
            float v[3];
            for (int c = 0; c < 3; ++c) v[c] = (float)pbf_param_get_number(p, base, c);
            vec(f, v);
            break;
        }
        case PBF_PARAM_ENUM: {
            int k = (int)pbf_param_get_number(p, base, 0);
            json_string(f, p->choices ? p->choices[k] : "");
            break;
        }
        case PBF_PARAM_STRING: json_string(f, pbf_param_get_string(p, base)); break;
        }
        fputs(",\n", f);
    }
}

/* `wall`: a moving wall, which always has a "motion" (also of type "none"). */
static void write_box(FILE *f, const pbf_box *b, int wall) {
    fputs("{\"min\": ", f);
    vec3(f, b->min);
    fputs(", \"max\": ", f);
    vec3(f, b->max);
    const pbf_motion *m = &b->motion;
    if (m->type == PBF_MOTION_OSCILLATE) {
        fputs(", \"motion\": {\"type\": \"oscillate\", \"direction\": ", f);
        vec3(f, m->direction);
        char a[32], p[32], ph[32], st[32], sp[32];
        fprintf(f,
                ", \"amplitude\": %s, \"period\": %s, \"phase\": %s, \"start\": %s, \"stop\": %s}",
                num(a, sizeof a, m->amplitude), num(p, sizeof p, m->period),
                num(ph, sizeof ph, m->phase), num(st, sizeof st, m->start),
                num(sp, sizeof sp, m->stop));
    } else if (m->type == PBF_MOTION_LINEAR) {
        fputs(", \"motion\": {\"type\": \"linear\", \"direction\": ", f);
        vec3(f, m->direction);
        char v[32], st[32], sp[32];
        fprintf(f, ", \"speed\": %s, \"start\": %s, \"stop\": %s}", num(v, sizeof v, m->speed),
                num(st, sizeof st, m->start), num(sp, sizeof sp, m->stop));
    } else if (wall) {
        fputs(", \"motion\": {\"type\": \"none\"}", f);
    }
    fputc('}', f);
}

pbf_status pbfapp_scene_write(const pbfapp_scene *s, const char *path, pbf_error *err) {
    char tmp[4200];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (len < 0 || (size_t)len >= sizeof tmp)
        return pbfapp_fail(err, PBF_ERR_IO, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    size_t rn = 0;
    const pbf_param_info *wtables[PBF_MAX_PARAM_TABLES];
    size_t wcounts[PBF_MAX_PARAM_TABLES];
    int nt = pbf_world_param_tables(wtables, wcounts, PBF_MAX_PARAM_TABLES);
    const pbf_param_info *rt = pbfapp_run_params(&rn);
    fputs("{\n  \"name\": ", f);
    json_string(f, s->name);
    fputs(",\n  \"description\": ", f);
    json_string(f, s->description);
    fputs(",\n", f);
    for (int t = 0; t < nt; ++t) write_table(f, wtables[t], wcounts[t], &s->def);
    write_table(f, rt, rn, &s->run);
    if (s->has_camera) {
        fputs("  \"camera\": {\"position\": ", f);
        vec(f, s->camera.position);
        fputs(", \"target\": ", f);
        vec(f, s->camera.target);
        fputs(", \"up\": ", f);
        vec(f, s->camera.up);
        char b[32];
        fprintf(f, ", \"fov\": %s},\n", num(b, sizeof b, s->camera.fov_deg));
    }
    int walls = s->box_count - s->obstacle_count;
    if (s->obstacle_count > 0) {
        fputs("  \"obstacles\": [\n", f);
        for (int i = 0; i < s->obstacle_count; ++i) {
            fputs("    ", f);
            write_box(f, &s->boxes[i], 0);
            fputs(i + 1 < s->obstacle_count ? ",\n" : "\n", f);
        }
        fputs("  ],\n", f);
    }
    if (walls > 0) {
        fputs("  \"moving_walls\": [\n", f);
        for (int i = 0; i < walls; ++i) {
            fputs("    ", f);
            write_box(f, &s->boxes[s->obstacle_count + i], 1);
            fputs(i + 1 < walls ? ",\n" : "\n", f);
        }
        fputs("  ],\n", f);
    }
    fputs("  \"fluid\": [\n", f);
    for (int i = 0; i < s->block_count; ++i) {
        const pbf_fluid_block *b = &s->blocks[i];
        fputs("    {\"min\": ", f);
        vec3(f, b->min);
        fputs(", \"max\": ", f);
        vec3(f, b->max);
        fputs(", \"velocity\": ", f);
        vec3(f, b->velocity);
        fputs(i + 1 < s->block_count ? "},\n" : "}\n", f);
    }
    fputs("  ]\n}\n", f);
    return pbfapp_commit_file(f, tmp, path, err);
}
