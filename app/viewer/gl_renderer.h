/*
 * The viewer's OpenGL 3.3 core renderer: particles as point-sprite spheres or as a screen-space
 * fluid surface (Green 2010), the container and boxes as lines, and a text overlay.
 *
 * Particle data goes to the GPU straight from the library's read-only structure-of-arrays view
 * (pbf_world_particles): one float VBO per array (x, y, z, and density or vx, vy, vz as the
 * colour field needs), each filled with one glBufferSubData of the library's own array. There is
 * no per-particle work on the CPU; the colour value is computed in the vertex shader.
 *
 * Needs a current OpenGL >= 3.3 core context (loaded through libepoxy).
 */
#ifndef PBFVIEW_GL_RENDERER_H
#define PBFVIEW_GL_RENDERER_H

#include <stddef.h>
#include <stdint.h>

#include "render/colormap.h"
#include "pbf/pbf.h"

typedef struct pbfview_renderer pbfview_renderer;

/* What one frame shows. */
typedef struct pbfview_frame {
    int width, height;        /* framebuffer size, pixels */
    float view[16], proj[16]; /* column-major, OpenGL conventions */
    const pbf_particles *particles;
    uint64_t particles_version; /* changes whenever the particle arrays change */
    float radius;               /* particle radius, m */
    float range[2];             /* the colour quantity (kg/m^3 or m/s) at the ramp's ends */
    pbf_color_field field;
    int fluid;              /* 1: screen-space fluid surface, 0: sphere sprites */
    const float *lines;     /* xyz triples, two per segment */
    int line_vertices;      /* number of vertices in `lines` */
    int container_vertices; /* the first ones are the container (grey), the rest boxes */
    const float *light_dir; /* world-space direction towards the light (3 floats) */
    const char *overlay;    /* text, lines separated by '\n'; NULL for none */
} pbfview_frame;

/* Compiles the shaders and makes the buffers. Returns 0, or -1 with a message. */
int pbfview_renderer_create(pbfview_renderer **out, char *message, size_t message_size);

/* Draws into the default framebuffer (its back buffer). Returns 0, or -1 with a message if the
 * fluid mode's framebuffers cannot be made (the caller can fall back to sprites). */
int pbfview_renderer_draw(pbfview_renderer *r, const pbfview_frame *frame, char *message,
                          size_t message_size);

void pbfview_renderer_destroy(pbfview_renderer *r); /* NULL is allowed */

#endif /* PBFVIEW_GL_RENDERER_H */
