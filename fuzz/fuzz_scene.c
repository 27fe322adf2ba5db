/*
 * libFuzzer harness for the scene parser (pbfapp_scene_parse, from a memory buffer): any input
 * must give PBF_OK or a message, never a crash, a hang, a leak or undefined behaviour. A scene
 * that loads is also hashed and written back with pbfapp_scene_write, and the file must load to
 * a scene of the same hash (what `pbf run --resume` relies on). Built with -DPBF_FUZZ=ON (clang).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmp_path[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > PBFAPP_SCENE_MAX_BYTES) return 0;
    pbfapp_scene scene;
    pbf_error err;
    pbf_status st =
        pbfapp_scene_parse("fuzz.json", (const char *)data, size, NULL, 0, &scene, &err);
    if (st != PBF_OK) {
        if (err.message[0] == '\0') abort(); /* every failure explains itself */
        return 0;
    }
    uint64_t h = pbfapp_scene_hash(&scene);
    if (!tmp_path[0])
        snprintf(tmp_path, sizeof tmp_path, "/tmp/pbf_fuzz_scene_%d.json", (int)getpid());
    if (pbfapp_scene_write(&scene, tmp_path, &err) == PBF_OK) {
        pbfapp_scene back;
        if (pbfapp_scene_load(tmp_path, NULL, 0, &back, &err) != PBF_OK) {
            fprintf(stderr, "scene written back does not load: %s\n", err.message);
            abort();
        }
        if (pbfapp_scene_hash(&back) != h) {
            fprintf(stderr, "scene written back has another hash\n");
            abort();
        }
        pbfapp_scene_free(&back);
        unlink(tmp_path);
    }
    pbfapp_scene_free(&scene);
    return 0;
}
