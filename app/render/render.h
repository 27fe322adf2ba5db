/*
 * Headless software renderer: particles as shaded spheres into an RGB image, deterministic
 * (the same input gives byte-identical pixels for any thread count), no display and no GL.
 *
 * The picture, in drawing order:
 *   1. a vertical background gradient;
 *   2. the container's floor (the face y = domain_min.y) as a light checkerboard, into the depth
 *      buffer (PBFAPP_RENDER_NO_FLOOR leaves it out);
 *   3. each obstacle or moving wall as a solid box (its faces a clay orange, each lit by the
 *      light of the spheres, so the faces differ in shade), into the depth buffer: spheres
 *      behind a box are hidden by it, spheres in front of it hide it;
 *   4. every particle as a sphere of radius `radius`: for each pixel of its projected disc the
 *      normal comes from the disc coordinate, the depth is the sphere surface's (so spheres cut
 *      into one another correctly through a float z-buffer) and the colour is the field's ramp
 *      (pbf_colormap) lit by one directional light with Blinn-Phong shading; silhouettes are
 *      anti-aliased: a pixel the disc covers only partly blends the sphere's colour over what is
 *      behind it by the covered fraction (analytic coverage of the pixel by the disc's edge);
 *   5. the container's 12 edges (dark) and the edges of each box (dark orange), depth-tested
 *      against the spheres, the boxes and the floor (a box's hidden edges stay hidden);
 *   6. the simulated time ("t = 1.234 s") and an optional title in the top-left corner and a
 *      colour legend with its range at the bottom right (PBFAPP_RENDER_NO_TEXT leaves them out),
 *      in the 5x9 bitmap font of app/render/font5x9.h.
 *
 * Parallel work is split by bands of image rows, each band drawing its particles in input
 * order, so the result does not depend on the number of threads.
 *
 * Surface mode (`mesh` set; render/render_surface.c): instead of step 4 the liquid's closed surface
 * mesh (pbf/surface.h) is drawn as water, with PBFAPP_SURFACE_SUPERSAMPLE^2 samples per pixel
 * (anti-aliasing) and a z-buffer; per sample:
 *   - the normal interpolated (perspective-correct) from the vertex normals;
 *   - the thickness of liquid along the ray (the mesh is closed: the depths of the triangles
 *     facing away minus those facing the eye, clipped at the floor or an obstacle box);
 *   - colour = (1 - F) * transmitted + F * sky(reflected ray), with F Schlick's approximation
 *     of the Fresnel reflectance of water (n = 1.33, F0 = 0.02); the sky a gradient from a light
 *     horizon to a blue zenith over a grey ground, with a sun; transmitted = what is behind
 *     (floor or background, shifted along the normal by a refraction offset growing with the
 *     thickness) attenuated by Beer-Lambert absorption exp(-sigma * thickness) (sigma per
 *     colour channel, red absorbed most, scaled to the container's size), plus the light
 *     scattered by deep water (blue-green, lit by the sun) in its place;
 * the samples of a pixel are averaged. The colour legend is left out (the particles' colour
 * field is not drawn); time and title stay.
 */
#ifndef PBFAPP_RENDER_H
#define PBFAPP_RENDER_H

#include <stdint.h>

#include "io/camera.h"
#include "render/colormap.h"
#include "pbf/pbf.h"
#include "pbf/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PBFAPP_IMAGE_MIN_SIZE 16
#define PBFAPP_IMAGE_MAX_SIZE 8192

typedef struct pbfapp_image {
    int width, height;
    unsigned char *rgb; /* width * height * 3 bytes, rows top to bottom */
    float *depth;       /* width * height, distance along the view axis; INFINITY = empty */
} pbfapp_image;

/* Allocates an image of width x height (each in [PBFAPP_IMAGE_MIN_SIZE, PBFAPP_IMAGE_MAX_SIZE]). */
pbf_status pbfapp_image_init(pbfapp_image *img, int width, int height, pbf_error *err);
void pbfapp_image_free(pbfapp_image *img);

typedef struct pbfapp_render_box {
    float min[3], max[3];
} pbfapp_render_box;

enum {
    PBFAPP_RENDER_NO_FLOOR = 1 << 0, /* no floor checkerboard */
    PBFAPP_RENDER_NO_LINES = 1 << 1, /* no container or box outlines */
    PBFAPP_RENDER_NO_TEXT = 1 << 2   /* no time, title or legend */
};

typedef struct pbfapp_render_input {
    int count;
    const float *x, *y, *z;    /* positions, m */
    const float *vx, *vy, *vz; /* velocities, m/s; NULL = at rest */
    const float *density;      /* kg/m^3; NULL = rest_density */
    const uint32_t *order;     /* drawing order (memory indices); NULL = 0 .. count-1 */
    float radius;              /* sphere radius, m (the particle radius) */
    float domain_min[3], domain_max[3];
    const pbfapp_render_box *boxes; /* obstacles and moving walls, where they are now */
    int box_count;
    double time;           /* simulated time written in the corner, s */
    const char *title;     /* second line of the corner text (NULL or "" = none) */
    pbf_color_field color; /* what the colour shows */
    float rest_density;    /* kg/m^3, the density where `density` is NULL */
    float range[2];        /* the colour quantity (kg/m^3 or m/s) mapped to the ends of the
                              ramp (pbf_color_default_range, pbf_color_auto_range) */
    pbf_camera camera;
    int flags; /* PBFAPP_RENDER_* */
    const pbf_mesh *mesh; /* non-NULL: draw this surface mesh as water instead of the particles
                             (count may then be 0) */
} pbfapp_render_input;

/* Samples per pixel along each axis in surface mode. */
#define PBFAPP_SURFACE_SUPERSAMPLE 3

/* Speed scale of the colour ramps: sqrt(2 |g| H), the speed of a free fall over the container
 * height H, or 1 m/s without gravity. */
float pbfapp_render_vmax(const pbf_world_def *def);

/* Renders into img (its size decides the aspect ratio). Fails only on invalid input (count < 0,
 * NULL positions) or out of memory. */
pbf_status pbfapp_render(const pbfapp_render_input *in, pbfapp_image *img, pbf_error *err);

/* The water model of surface mode, for one ray: n the unit outward normal, dir the unit ray
 * direction (from the eye), thickness the length of liquid along the ray (m), absorb the
 * absorption coefficients (1/m, per channel), behind the colour behind the liquid, sun the unit
 * direction towards the sun. Colours linear in [0, 1] (out may exceed 1 in a highlight). */
void pbfapp_water_shade(const float n[3], const float dir[3], float thickness,
                        const float absorb[3], const float behind[3], const float sun[3],
                        float out[3]);
/* Schlick's approximation of the Fresnel reflectance of water seen at cos_theta. */
float pbfapp_schlick(float cos_theta);
/* The sky seen along the unit direction r (sun: unit direction towards the sun). */
void pbfapp_water_sky(const float r[3], const float sun[3], float out[3]);

/* Text in the font of render/font5x9.h with the top-left corner of its first glyph cell at (x, y),
 * each font pixel a square of `scale` image pixels; '\n' starts a new line. Glyph rows 0..6 are
 * above the baseline, rows 7..8 (descenders) below. Pixels outside the image are skipped. */
void pbfapp_render_text(pbfapp_image *img, int x, int y, int scale, const char *text,
                        const float rgb[3]);

/* Where a world point lands: pixel coordinates (x right, y down, pixel centres at +0.5) and the
 * distance along the view axis; the projected radius of a sphere of radius r there is
 * r * (*focal) / (*dist). Returns 0 if the point is behind the near plane. */
int pbfapp_render_project(const pbf_camera *camera, int width, int height, const float p[3],
                          float *sx, float *sy, float *dist, float *focal);

/* Writes the image as an 8-bit RGB PNG: PATH.tmp, fsync, rename to PATH. */
pbf_status pbfapp_write_png(const char *path, const pbfapp_image *img, pbf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_RENDER_H */
