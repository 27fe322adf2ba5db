/*
 * The public scene API (include/pbf/scene.h) through the shared library libpbf, as a program
 * that only has the installed headers sees it: scenes from files and from JSON text, overrides,
 * errors that name the source, key and value, the world built from a scene.
 */
#include "test.h"

#include "pbf/pbf.h"
#include "pbf/scene.h"

#ifndef PBF_SCENES_DIR
#define PBF_SCENES_DIR "scenes"
#endif

static const char column_json[] =
    "{\"domain_min\": [0, 0, 0], \"domain_max\": [0.5, 0.5, 0.5], \"particle_radius\": 0.025,\n"
    " \"fps\": 50, \"substeps\": 3, \"frames\": 7,\n"
    " \"fluid\": [{\"min\": [0, 0, 0], \"max\": [0.2, 0.3, 0.2]}],\n"
    " \"obstacles\": [{\"min\": [0.3, 0, 0.1], \"max\": [0.4, 0.1, 0.2]}]}";

static void test_parse_text(void) {
    pbf_scene *scene = NULL;
    pbf_error err;
    pbf_status st = pbf_scene_parse(column_json, sizeof column_json - 1, "column.json", NULL, 0,
                                    &scene, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK && scene != NULL);
    pbf_scene_info info = pbf_scene_get_info(scene);
    ENSURE(strcmp(info.source, "column.json") == 0);
    ENSURE(strcmp(info.name, "column") == 0); /* no "name": the source without .json */
    ENSURE(strcmp(info.description, "") == 0);
    ENSURE_EQ_INT(info.frames, 7);
    ENSURE_NEAR(info.fps, 50.0, 0.0);
    ENSURE_EQ_INT(info.substeps, 3);
    /* 0.2 / 0.05 = 4 by 0.3 / 0.05 = 6 by 4 lattice points */
    ENSURE_EQ_INT(info.particles, 4 * 6 * 4);
    ENSURE_EQ_INT(info.blocks, 1);
    ENSURE_EQ_INT(info.boxes, 1);
    pbf_world_def def = pbf_scene_world_def(scene);
    ENSURE_NEAR(def.particle_radius, 0.025f, 0.0);
    ENSURE_NEAR(def.domain_max.y, 0.5f, 0.0);
    ENSURE_NEAR(def.rest_density, pbf_default_world_def().rest_density, 0.0); /* a default */

    pbf_world *w = NULL;
    st = pbf_scene_create_world(scene, &w, &err);
    pbf_scene_destroy(scene); /* the world does not need the scene */
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK && w != NULL);
    ENSURE_EQ_INT(pbf_world_particles(w).count, 96);
    ENSURE_EQ_INT(pbf_world_box_count(w), 1);
    /* the column falls: after 0.2 s its lowest particles are still on the floor, its mean
     * height has dropped and nothing is outside the box */
    pbf_particles p = pbf_world_particles(w);
    double y0 = 0;
    for (int i = 0; i < p.count; ++i) y0 += p.y[i] / p.count;
    for (int s = 0; s < 30; ++s) ENSURE(pbf_world_step(w, 1.0f / 150.0f, &err) == PBF_OK);
    p = pbf_world_particles(w);
    double y1 = 0;
    for (int i = 0; i < p.count; ++i) y1 += p.y[i] / p.count;
    pbf_stats stats = pbf_world_stats(w);
    pbf_world_destroy(w);
    printf("  mean height %.4f m -> %.4f m after %.2f s\n", y0, y1, stats.time);
    ENSURE(y1 < y0 - 0.01);
    ENSURE_EQ_INT(stats.escaped, 0);
    ENSURE_EQ_INT(stats.nonfinite, 0);
}

static void test_load_file_with_overrides(void) {
    const char *path = PBF_SCENES_DIR "/quick.json";
    pbf_scene *scene = NULL;
    pbf_error err;
    pbf_status st = pbf_scene_load(path, NULL, 0, &scene, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK);
    pbf_scene_info info = pbf_scene_get_info(scene);
    int64_t fine = info.particles;
    ENSURE(strcmp(info.name, "quick") == 0);
    ENSURE(strcmp(info.source, path) == 0);
    ENSURE(strlen(info.description) > 0);
    ENSURE_EQ_INT(fine, 2250);
    ENSURE_EQ_INT(info.boxes, 1);
    pbf_scene_destroy(scene);

    /* twice the radius: an eighth of the particles; a vector and a count too */
    const char *set[] = {"particle_radius=0.02", "gravity=0,-1.5,0", "substeps=2"};
    st = pbf_scene_load(path, set, 3, &scene, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK);
    info = pbf_scene_get_info(scene);
    pbf_world_def def = pbf_scene_world_def(scene);
    ENSURE_NEAR(def.particle_radius, 0.02f, 0.0);
    ENSURE_NEAR(def.gravity.y, -1.5f, 0.0);
    ENSURE_EQ_INT(info.substeps, 2);
    ENSURE(info.particles * 8 >= fine - 300 && info.particles * 8 <= fine + 300);
    pbf_world *w = NULL;
    st = pbf_scene_create_world(scene, &w, &err);
    pbf_scene_destroy(scene);
    ENSURE(st == PBF_OK);
    ENSURE_EQ_INT(pbf_world_particles(w).count, info.particles);
    pbf_world_destroy(w);
}

/* A failure leaves *out NULL and a message that names `where`, and contains `what`. */
static void expect_error(pbf_status st, pbf_status want, const pbf_scene *scene,
                         const pbf_error *err, const char *what, const char *what2) {
    printf("  %s\n", err->message);
    ENSURE_EQ_INT(st, want);
    ENSURE_EQ_INT(err->status, want);
    ENSURE(scene == NULL);
    ENSURE(strstr(err->message, what) != NULL);
    if (what2) ENSURE(strstr(err->message, what2) != NULL);
}

static void test_errors(void) {
    pbf_scene *scene = (pbf_scene *)&scene; /* not NULL: a failure must reset it */
    pbf_error err;
    static const char bad_value[] = "{\"particle_radius\": -1, \"fluid\": []}";
    pbf_status st = pbf_scene_parse(bad_value, sizeof bad_value - 1, "mine.json", NULL, 0, &scene,
                                    &err);
    expect_error(st, PBF_ERR_INVALID_ARGUMENT, scene, &err, "mine.json", "particle_radius");

    scene = (pbf_scene *)&scene;
    static const char typo[] = "{\"particle_radus\": 0.01}";
    st = pbf_scene_parse(typo, sizeof typo - 1, "<dict>", NULL, 0, &scene, &err);
    expect_error(st, PBF_ERR_INVALID_ARGUMENT, scene, &err, "<dict>", "particle_radius");

    scene = (pbf_scene *)&scene;
    static const char broken[] = "{\"fps\": 60,";
    st = pbf_scene_parse(broken, sizeof broken - 1, "cut.json", NULL, 0, &scene, &err);
    expect_error(st, PBF_ERR_INVALID_ARGUMENT, scene, &err, "cut.json", "JSON");

    const char *not_number[] = {"particle_radius=abc"};
    st = pbf_scene_parse(column_json, sizeof column_json - 1, "column.json", not_number, 1, &scene,
                         &err);
    expect_error(st, PBF_ERR_INVALID_ARGUMENT, scene, &err, "override particle_radius", "abc");

    const char *out_of_range[] = {"solver_iterations=0"};
    st = pbf_scene_parse(column_json, sizeof column_json - 1, "column.json", out_of_range, 1,
                         &scene, &err);
    expect_error(st, PBF_ERR_INVALID_ARGUMENT, scene, &err, "override solver_iterations", "0");

    const char *no_equals[] = {"particle_radius"};
    st = pbf_scene_parse(column_json, sizeof column_json - 1, "column.json", no_equals, 1, &scene,
                         &err);
    expect_error(st, PBF_ERR_INVALID_ARGUMENT, scene, &err, "KEY=VALUE", "particle_radius");

    st = pbf_scene_load(PBF_SCENES_DIR "/no_such_scene.json", NULL, 0, &scene, &err);
    expect_error(st, PBF_ERR_IO, scene, &err, "no_such_scene.json", NULL);

    ENSURE(pbf_scene_load("x.json", NULL, 0, NULL, &err) == PBF_ERR_INVALID_ARGUMENT);
    pbf_world *w = (pbf_world *)&w;
    ENSURE(pbf_scene_create_world(NULL, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(w == NULL);
    pbf_scene_destroy(NULL);
    ENSURE(pbf_scene_get_info(NULL).name == NULL);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_parse_text);
    RUN_SUBTEST(test_load_file_with_overrides);
    RUN_SUBTEST(test_errors);
    return test_end();
}
