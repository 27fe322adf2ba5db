/* The public particle fields as the writers, checkpoints and the guard walk them. */
#include "io/particle_fields.h"

#include <stdio.h>
#include <string.h>

size_t pbfapp_columns(pbfapp_column *out, size_t max) {
    size_t nf = 0, n = 0;
    const pbf_field_info *f = pbf_particle_fields(&nf);
    for (size_t i = 0; i < nf; ++i)
        for (int c = 0; c < f[i].components; ++c, ++n)
            if (out && n < max) out[n] = (pbfapp_column){i, c, &f[i]};
    return n;
}

size_t pbfapp_particle_bytes(void) {
    return pbfapp_columns(NULL, 0) * PBFAPP_FIELD_ELEMENT_BYTES;
}

const void *pbfapp_column_data(const pbf_particles *p, const pbfapp_column *c) {
    return pbf_particles_component(p, c->field, c->component);
}

void pbfapp_column_name(const pbfapp_column *c, char *buf, size_t size) {
    static const char axis[3] = {'x', 'y', 'z'};
    const char *name = c->info->name;
    char a = c->component >= 0 && c->component < 3 ? axis[c->component] : '?';
    if (c->info->components == 1)
        snprintf(buf, size, "%s", name);
    else if (strcmp(name, "position") == 0)
        snprintf(buf, size, "%c", a);
    else if (strcmp(name, "velocity") == 0)
        snprintf(buf, size, "v%c", a);
    else
        snprintf(buf, size, "%s_%c", name, a);
}

int pbfapp_field_index(const char *name) {
    size_t nf = 0;
    const pbf_field_info *f = pbf_particle_fields(&nf);
    for (size_t i = 0; i < nf; ++i)
        if (strcmp(f[i].name, name) == 0) return (int)i;
    return -1;
}

pbf_particles pbfapp_snapshot_particles(const pbf_snapshot *s) {
    pbf_particles p;
    memset(&p, 0, sizeof p);
    p.count = s->count;
    p.x = s->x;
    p.y = s->y;
    p.z = s->z;
    p.vx = s->vx;
    p.vy = s->vy;
    p.vz = s->vz;
    p.density = s->density;
    p.id = s->id;
    return p;
}

/* The members a pbf_snapshot shares with pbf_particles, in order. Which of them holds column c
 * is the library's to say: a view whose member k points at probe k is asked for the column. */
enum { MEMBERS = 8 };

static int member_of(const pbfapp_column *c) {
    static float probe_f[MEMBERS - 1];
    static uint32_t probe_id[1];
    pbf_particles probe;
    memset(&probe, 0, sizeof probe);
    probe.count = 1;
    probe.x = &probe_f[0];
    probe.y = &probe_f[1];
    probe.z = &probe_f[2];
    probe.vx = &probe_f[3];
    probe.vy = &probe_f[4];
    probe.vz = &probe_f[5];
    probe.density = &probe_f[6];
    probe.id = &probe_id[0];
    const void *a = pbf_particles_component(&probe, c->field, c->component);
    if (a == (const void *)probe_id) return MEMBERS - 1;
    for (int k = 0; k < MEMBERS - 1; ++k)
        if (a == (const void *)&probe_f[k]) return k;
    return -1;
}

int pbfapp_snapshot_set_column(pbf_snapshot *s, const pbfapp_column *c, const void *data) {
    switch (member_of(c)) {
    case 0: s->x = data; return 1;
    case 1: s->y = data; return 1;
    case 2: s->z = data; return 1;
    case 3: s->vx = data; return 1;
    case 4: s->vy = data; return 1;
    case 5: s->vz = data; return 1;
    case 6: s->density = data; return 1;
    case 7: s->id = data; return 1;
    default: return 0;
    }
}
