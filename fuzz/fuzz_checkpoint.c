/*
 * libFuzzer harness for the checkpoint reader (pbfapp_checkpoint_decode): any input must be
 * accepted or refused with a message, never a crash, an over-read, a leak or undefined behaviour.
 * Random bytes rarely get past the checksum, so each input is tried twice: as it is, and with
 * its last 8 bytes replaced by the right checksum, which exercises the checks behind it (header
 * values, finite values, unique ids) and pbf_world_restore of what is accepted. Built with
 * -DPBF_FUZZ=ON (clang).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pbf_world *world(void) {
    static pbf_world *w = NULL;
    if (!w) {
        pbf_world_def def = pbf_default_world_def();
        def.threads = 1;
        def.domain_max = (pbf_vec3){0.4f, 0.4f, 0.4f};
        def.particle_radius = 0.02f;
        pbf_error err;
        if (pbf_world_create(&def, &w, &err) != PBF_OK) abort();
    }
    return w;
}

static void try_decode(const uint8_t *data, size_t size) {
    pbfapp_checkpoint c;
    pbf_error err;
    err.message[0] = '\0';
    if (pbfapp_checkpoint_decode(data, size, "fuzz.pbfck", &c, &err) != PBF_OK) {
        if (err.message[0] == '\0') abort();
        return;
    }
    /* what is accepted can be given to a world; small counts only (time) */
    if (c.count <= 4096 && pbf_world_restore(world(), &c.snapshot, &err) == PBF_OK) {
        pbf_stats s = pbf_world_stats(world());
        if (s.particles != c.count) abort();
    }
    pbfapp_checkpoint_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try_decode(data, size);
    if (size >= PBFAPP_CHECKPOINT_HEADER_BYTES + 8 && size <= (1u << 20)) {
        uint8_t *fixed = malloc(size);
        if (!fixed) return 0;
        memcpy(fixed, data, size);
        uint64_t sum = pbfapp_fnv1a64(PBFAPP_FNV_OFFSET, fixed, size - 8);
        memcpy(fixed + size - 8, &sum, 8);
        try_decode(fixed, size);
        free(fixed);
    }
    return 0;
}
