/* The public scene API (include/pbf/scene.h) over the `pbf` command's scene loader (scene.c). */
#include "pbf/scene.h"

#include <stdlib.h>
#include <string.h>

#include "io/scene.h"
#include "io/util.h"

struct pbf_scene {
    pbfapp_scene s;
};

/* Splits "KEY=VALUE" strings into loader overrides labelled "override KEY". One allocation
 * holds the array and the strings; *out is NULL when there are none. */
static pbf_status split_overrides(const char *const *in, size_t n, pbfapp_override **out,
                                  pbf_error *err) {
    *out = NULL;
    if (n == 0) return PBF_OK;
    if (!in) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "overrides: NULL with a count of %zu", n);
    size_t bytes = n * sizeof(pbfapp_override);
    for (size_t i = 0; i < n; ++i) {
        if (!in[i]) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "override %zu: NULL", i);
        const char *eq = strchr(in[i], '=');
        if (!eq || eq == in[i])
            return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                               "override \"%s\": expected KEY=VALUE, e.g. particle_radius=0.02",
                               in[i]);
        /* key, "override " + key, each with its NUL */
        bytes += 2 * (size_t)(eq - in[i]) + sizeof "override " + 1;
    }
    pbfapp_override *o = malloc(bytes);
    if (!o) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "overrides: out of memory");
    char *p = (char *)(o + n);
    for (size_t i = 0; i < n; ++i) {
        const char *eq = strchr(in[i], '=');
        size_t k = (size_t)(eq - in[i]);
        o[i].key = p;
        memcpy(p, in[i], k);
        p[k] = '\0';
        p += k + 1;
        o[i].label = p;
        memcpy(p, "override ", sizeof "override " - 1);
        memcpy(p + sizeof "override " - 1, in[i], k);
        p[sizeof "override " - 1 + k] = '\0';
        p += sizeof "override " + k;
        o[i].value = eq + 1;
    }
    *out = o;
    return PBF_OK;
}

static pbf_status finish(pbf_status st, pbfapp_scene *s, pbf_scene **out, pbf_error *err) {
    if (st != PBF_OK) return st;
    pbf_scene *scene = malloc(sizeof *scene);
    if (!scene) {
        pbfapp_scene_free(s);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "scene: out of memory");
    }
    scene->s = *s;
    *out = scene;
    return PBF_OK;
}

pbf_status pbf_scene_load(const char *path, const char *const *overrides, size_t override_count,
                          pbf_scene **out, pbf_error *err) {
    if (!out) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "pbf_scene_load: out is NULL");
    *out = NULL;
    if (!path) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "pbf_scene_load: path is NULL");
    pbfapp_override *o = NULL;
    pbf_status st = split_overrides(overrides, override_count, &o, err);
    if (st != PBF_OK) return st;
    pbfapp_scene s;
    st = pbfapp_scene_load(path, o, override_count, &s, err);
    free(o);
    return finish(st, &s, out, err);
}

pbf_status pbf_scene_parse(const char *text, size_t length, const char *source,
                           const char *const *overrides, size_t override_count, pbf_scene **out,
                           pbf_error *err) {
    if (!out) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "pbf_scene_parse: out is NULL");
    *out = NULL;
    if (!source || !*source) source = "<scene>";
    if (!text) return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: the text is NULL", source);
    if (length > PBFAPP_SCENE_MAX_BYTES)
        return pbfapp_fail(err, PBF_ERR_LIMIT,
                           "%s: the text is %zu bytes, more than the %u MiB limit for scenes",
                           source, length, PBFAPP_SCENE_MAX_BYTES >> 20);
    pbfapp_override *o = NULL;
    pbf_status st = split_overrides(overrides, override_count, &o, err);
    if (st != PBF_OK) return st;
    pbfapp_scene s;
    st = pbfapp_scene_parse(source, text, length, o, override_count, &s, err);
    free(o);
    return finish(st, &s, out, err);
}

void pbf_scene_destroy(pbf_scene *scene) {
    if (!scene) return;
    pbfapp_scene_free(&scene->s);
    free(scene);
}

pbf_scene_info pbf_scene_get_info(const pbf_scene *scene) {
    pbf_scene_info info;
    memset(&info, 0, sizeof info);
    if (!scene) return info;
    const pbfapp_scene *s = &scene->s;
    info.source = s->path;
    info.name = s->name;
    info.description = s->description ? s->description : "";
    info.frames = s->run.frames;
    info.fps = s->run.fps;
    info.substeps = s->run.substeps;
    info.particles = s->particles;
    info.blocks = s->block_count;
    info.boxes = s->box_count;
    return info;
}

pbf_world_def pbf_scene_world_def(const pbf_scene *scene) {
    return scene ? scene->s.def : pbf_default_world_def();
}

pbf_status pbf_scene_create_world(const pbf_scene *scene, pbf_world **out_world, pbf_error *err) {
    if (!out_world)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "pbf_scene_create_world: out_world is NULL");
    *out_world = NULL;
    if (!scene)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "pbf_scene_create_world: scene is NULL");
    return pbfapp_scene_create_world(&scene->s, out_world, err);
}
