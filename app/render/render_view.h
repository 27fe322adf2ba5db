/*
 * The software renderer's camera frame and small vector helpers, shared by app/render/render.c
 * (particles, floor, lines, text) and app/render/render_surface.c (surface meshes). Internal to the
 * renderer.
 */
#ifndef PBFAPP_RENDER_VIEW_H
#define PBFAPP_RENDER_VIEW_H

#include <math.h>

#include "io/camera.h"

typedef struct pbfapp_view {
    float pos[3], f[3], s[3], u[3]; /* eye, forward, right, up (orthonormal) */
    float focal;                    /* pixels per unit of x/d */
    float cx, cy;                   /* image centre, pixels */
} pbfapp_view;

#define PBFAPP_NEAR_PLANE 1e-4f

static inline float pbfapp_dot3(const float a[3], const float b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void pbfapp_normalize3(float v[3]) {
    float n = sqrtf(pbfapp_dot3(v, v));
    if (n > 0)
        for (int k = 0; k < 3; ++k) v[k] /= n;
}

static inline void pbfapp_cross3(const float a[3], const float b[3], float o[3]) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

/* The same eye frame as pbf_camera_matrices (x right, y up, looking along f). */
static inline void pbfapp_make_view(const pbf_camera *c, int width, int height, pbfapp_view *v) {
    for (int k = 0; k < 3; ++k) {
        v->pos[k] = c->position[k];
        v->f[k] = c->target[k] - c->position[k];
    }
    pbfapp_normalize3(v->f);
    pbfapp_cross3(v->f, c->up, v->s);
    pbfapp_normalize3(v->s);
    pbfapp_cross3(v->s, v->f, v->u);
    float fov = c->fov_deg > 1 && c->fov_deg < 170 ? c->fov_deg : 45.0f;
    v->focal = 0.5f * (float)height / tanf(0.5f * fov * 3.14159265f / 180.0f);
    v->cx = 0.5f * (float)width;
    v->cy = 0.5f * (float)height;
}

/* World point -> eye coordinates (x right, y up, d = distance along the view axis). */
static inline void pbfapp_to_eye(const pbfapp_view *v, const float p[3], float *ex, float *ey,
                                 float *d) {
    float q[3] = {p[0] - v->pos[0], p[1] - v->pos[1], p[2] - v->pos[2]};
    *ex = pbfapp_dot3(q, v->s);
    *ey = pbfapp_dot3(q, v->u);
    *d = pbfapp_dot3(q, v->f);
}

/* Distance along the view axis at which the ray through image point (px, py) (pixels, x right,
 * y down) meets the floor y = lo[1] inside [lo, hi] in x and z; INFINITY where it does not. */
static inline float pbfapp_floor_depth(const pbfapp_view *v, const float lo[3], const float hi[3],
                                       float px, float py) {
    float a = (px - v->cx) / v->focal;
    float b = -(py - v->cy) / v->focal;
    float dir[3];
    for (int k = 0; k < 3; ++k) dir[k] = v->f[k] + a * v->s[k] + b * v->u[k];
    if (!(dir[1] < 0) || !(v->pos[1] > lo[1])) return INFINITY;
    float t = (lo[1] - v->pos[1]) / dir[1];
    if (!(t > PBFAPP_NEAR_PLANE)) return INFINITY;
    float hx = v->pos[0] + t * dir[0], hz = v->pos[2] + t * dir[2];
    if (hx < lo[0] || hx > hi[0] || hz < lo[2] || hz > hi[2]) return INFINITY;
    return t;
}

/* app/render/render_surface.c: draws in->mesh (surface mode of render.h). */
#include "render/render.h"

/* Distance along the view axis at which the ray through image point (px, py) enters the nearest
 * of the n boxes (slab test); INFINITY where it meets none (a box around the eye is skipped).
 * *face: the index of the box times 6 plus the face it enters through, 2 * axis + (1 on the
 * box's max side); -1 with INFINITY. */
static inline float pbfapp_boxes_depth(const pbfapp_view *v, const pbfapp_render_box *boxes, int n,
                                       float px, float py, int *face) {
    float a = (px - v->cx) / v->focal;
    float b = -(py - v->cy) / v->focal;
    float dir[3];
    for (int k = 0; k < 3; ++k) dir[k] = v->f[k] + a * v->s[k] + b * v->u[k];
    float best = INFINITY;
    *face = -1;
    for (int i = 0; i < n; ++i) {
        float t0 = -INFINITY, t1 = INFINITY;
        int enter = -1;
        for (int k = 0; k < 3 && t0 <= t1; ++k) {
            const float lo = boxes[i].min[k], hi = boxes[i].max[k], o = v->pos[k];
            if (dir[k] == 0.0f) {
                if (o < lo || o > hi) t0 = INFINITY;
                continue;
            }
            float inv = 1.0f / dir[k];
            float ta = (lo - o) * inv, tb = (hi - o) * inv;
            int side = 0; /* the slab is entered through its min side when the ray runs up k */
            if (ta > tb) {
                float q = ta;
                ta = tb;
                tb = q;
                side = 1;
            }
            if (ta > t0) {
                t0 = ta;
                enter = 2 * k + side;
            }
            if (tb < t1) t1 = tb;
        }
        if (enter < 0 || !(t0 <= t1) || !(t0 > PBFAPP_NEAR_PLANE) || !(t0 < best)) continue;
        best = t0;
        *face = 6 * i + enter;
    }
    return best;
}
pbf_status pbfapp_render_surface(const pbfapp_render_input *in, pbfapp_image *img,
                                 pbf_error *err);

#endif /* PBFAPP_RENDER_VIEW_H */
