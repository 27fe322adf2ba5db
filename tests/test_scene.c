/*
 * The scene loader of the `pbf` command (app/io/scene.c): the shipped scenes load with the
 * particle counts they promise, keys land in the right fields, defaults come from the tables,
 * overrides are applied and checked. The rejections are covered by tests/run_bad_scenes.sh.
 */
#include "test.h"

#include "scene.h"

#ifndef PBF_SCENES_DIR
#define PBF_SCENES_DIR "scenes"
#endif

static void load_shipped(const char *name, int64_t lo, int64_t hi, int frames) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", PBF_SCENES_DIR, name);
    pbfapp_scene s;
    pbf_error err;
    pbf_status st = pbfapp_scene_load(path, NULL, 0, &s, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK);
    int64_t n = s.particles;
    int run_frames = s.run.frames;
    float fps = s.run.fps;
    int64_t sum = 0;
    for (int i = 0; i < s.block_count; ++i) sum += pbf_fluid_block_count(&s.def, &s.blocks[i]);
    pbf_world *w = NULL;
    st = pbfapp_scene_create_world(&s, &w, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    int world_particles = w ? pbf_world_stats(w).particles : -1;
    pbf_world_destroy(w);
    pbfapp_scene_free(&s);
    printf("  %s: %lld particles\n", name, (long long)n);
    ENSURE(st == PBF_OK);
    ENSURE(n >= lo && n <= hi);
    ENSURE_EQ_INT(sum, n);
    ENSURE_EQ_INT(world_particles, n);
    ENSURE_EQ_INT(run_frames, frames);
    ENSURE_NEAR(fps, 60.0, 0.0);
}

static void test_shipped_dam_break(void) {
    load_shipped("dam_break.json", 45000, 55000, 120);
}
static void test_shipped_double_dam_break(void) {
    load_shipped("double_dam_break.json", 120000, 136000, 120);
}
static void test_shipped_moving_wall(void) {
    load_shipped("moving_wall.json", 11000, 20000, 120);
}
static void test_shipped_quick(void) {
    load_shipped("quick.json", 2000, 4000, 10);
}

static const char scene_text[] =
    "{\n"
    "  \"name\": \"t\", \"description\": \"d\",\n"
    "  \"domain_min\": [-1, 0, 0], \"domain_max\": [1, 1, 0.5],\n"
    "  \"particle_radius\": 0.02, \"solver_iterations\": 7, \"constraint\": \"bilateral\",\n"
    "  \"fps\": 30, \"format\": \"csv\",\n"
    "  \"fluid\": [{\"min\": [-1, 0, 0], \"max\": [-0.6, 0.4, 0.4], \"velocity\": [1, 2, 3]}],\n"
    "  \"obstacles\": [{\"min\": [0, 0, 0], \"max\": [0.1, 0.1, 0.1]}],\n"
    "  \"moving_walls\": [{\"min\": [0.5, 0, 0], \"max\": [0.6, 0.5, 0.5],\n"
    "     \"motion\": {\"type\": \"linear\", \"direction\": [1, 0, 0], \"speed\": 0.1}}]\n"
    "}\n";

static void test_keys_and_defaults(void) {
    pbfapp_scene s;
    pbf_error err;
    pbf_status st =
        pbfapp_scene_parse("mem.json", scene_text, sizeof scene_text - 1, NULL, 0, &s, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK);
    pbf_world_def d = pbf_default_world_def();
    pbfapp_run r = pbfapp_default_run();
    int ok_def = s.def.domain_min.x == -1.0f && s.def.domain_max.z == 0.5f &&
                 s.def.particle_radius == 0.02f && s.def.pbf.solver_iterations == 7 &&
                 s.def.pbf.constraint == PBF_CONSTRAINT_BILATERAL &&
                 s.def.rest_density == d.rest_density && s.def.gravity.y == d.gravity.y;
    int ok_run = s.run.fps == 30.0f && s.run.format == PBFAPP_FORMAT_CSV &&
                 s.run.frames == r.frames && s.run.substeps == r.substeps;
    int ok_geo = s.block_count == 1 && s.blocks[0].velocity.z == 3.0f && s.box_count == 2 &&
                 s.obstacle_count == 1 && s.boxes[0].motion.type == PBF_MOTION_NONE &&
                 s.boxes[1].motion.type == PBF_MOTION_LINEAR && s.boxes[1].motion.speed == 0.1f &&
                 s.boxes[1].motion.stop < 0 && s.boxes[1].motion.start == 0.0f;
    int ok_names = strcmp(s.name, "t") == 0 && strcmp(s.description, "d") == 0;
    pbfapp_scene_free(&s);
    ENSURE(ok_def);
    ENSURE(ok_run);
    ENSURE(ok_geo);
    ENSURE(ok_names);
    ENSURE_EQ_INT(r.frames, 120);
    ENSURE_EQ_INT(r.substeps, 4);
    ENSURE(r.format == PBFAPP_FORMAT_VTP);
}

static void test_overrides(void) {
    pbfapp_override o[] = {
        {"gravity", "0,-1.5,0.25", NULL},   {"frames", "3", "--frames"},
        {"format", "ply", "--format"},      {"constraint", "unilateral", NULL},
        {"particle_radius", "0.025", NULL},
    };
    pbfapp_scene s;
    pbf_error err;
    pbf_status st = pbfapp_scene_parse("mem.json", scene_text, sizeof scene_text - 1, o,
                                       sizeof o / sizeof o[0], &s, &err);
    if (st != PBF_OK) printf("%s\n", err.message);
    ENSURE(st == PBF_OK);
    int ok = s.def.gravity.x == 0.0f && s.def.gravity.y == -1.5f && s.def.gravity.z == 0.25f &&
             s.run.frames == 3 && s.run.format == PBFAPP_FORMAT_PLY &&
             s.def.pbf.constraint == PBF_CONSTRAINT_UNILATERAL && s.def.particle_radius == 0.025f;
    pbfapp_scene_free(&s);
    ENSURE(ok);
}

static void test_override_errors_name_the_option(void) {
    pbfapp_override bad_value[] = {{"solver_iterations", "x", "--set solver_iterations"}};
    pbfapp_override bad_key[] = {{"iterations", "3", NULL}};
    pbfapp_scene s;
    pbf_error e1, e2;
    ENSURE(pbfapp_scene_parse("mem.json", scene_text, sizeof scene_text - 1, bad_value, 1, &s,
                              &e1) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(e1.message, "--set solver_iterations") != NULL);
    ENSURE(strstr(e1.message, "\"x\"") != NULL);
    ENSURE(pbfapp_scene_parse("mem.json", scene_text, sizeof scene_text - 1, bad_key, 1, &s, &e2) ==
           PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(e2.message, "--set iterations") != NULL);
    ENSURE(strstr(e2.message, "solver_iterations") != NULL); /* the suggestion */
    ENSURE(s.path == NULL && s.blocks == NULL);              /* left empty on failure */
}

static void test_vec3_override_is_all_or_nothing(void) {
    pbf_world_def d = pbf_default_world_def();
    pbfapp_run r = pbfapp_default_run();
    pbf_vec3 before = d.gravity;
    pbf_error err;
    ENSURE(pbfapp_apply_override(&d, &r, "gravity", "1,2,99999", "--set gravity", &err) ==
           PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "--set gravity[2]") != NULL);
    ENSURE(d.gravity.x == before.x && d.gravity.y == before.y && d.gravity.z == before.z);
}

static void test_closest_name(void) {
    const char *names[] = {"particle_radius", "rest_density", "frames"};
    ENSURE(pbfapp_closest_name("particle_radus", names, 3) == names[0]);
    ENSURE(pbfapp_closest_name("Frames", names, 3) == names[2]);
    ENSURE(pbfapp_closest_name("zzzzzzzz", names, 3) == NULL);
}

static void test_option_hint(void) {
    const char *names[] = {"out", "frames", "threads", "checkpoint-every"};
    char hint[96];
    pbfapp_option_hint(hint, sizeof hint, "--frmes", names, 4);
    ENSURE(strcmp(hint, " (did you mean \"--frames\"?)") == 0);
    pbfapp_option_hint(hint, sizeof hint, "--fram=3", names, 4);
    ENSURE(strcmp(hint, " (did you mean \"--frames\"?)") == 0);
    pbfapp_option_hint(hint, sizeof hint, "-threds", names, 4);
    ENSURE(strcmp(hint, " (did you mean \"--threads\"?)") == 0);
    pbfapp_option_hint(hint, sizeof hint, "--checkpoint", names, 4);
    ENSURE(strcmp(hint, " (did you mean \"--checkpoint-every\"?)") == 0);
    pbfapp_option_hint(hint, sizeof hint, "--zzzzzzzz", names, 4);
    ENSURE(strcmp(hint, "") == 0);
    pbfapp_option_hint(hint, sizeof hint, "-x", names, 4); /* short options: no guess */
    ENSURE(strcmp(hint, "") == 0);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_shipped_dam_break);
    RUN_SUBTEST(test_shipped_double_dam_break);
    RUN_SUBTEST(test_shipped_moving_wall);
    RUN_SUBTEST(test_shipped_quick);
    RUN_SUBTEST(test_keys_and_defaults);
    RUN_SUBTEST(test_overrides);
    RUN_SUBTEST(test_override_errors_name_the_option);
    RUN_SUBTEST(test_vec3_override_is_all_or_nothing);
    RUN_SUBTEST(test_closest_name);
    RUN_SUBTEST(test_option_hint);
    return test_end();
}
