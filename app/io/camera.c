/* Perspective camera: default framing of a box and OpenGL-style matrices (see camera.h). */
#include "io/camera.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void normalize3(float v[3]) {
    float n = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (n > 0) {
        v[0] /= n;
        v[1] /= n;
        v[2] /= n;
    }
}

static void cross3(const float a[3], const float b[3], float out[3]) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static float dot3(const float a[3], const float b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* The eye sits on the ray from the box centre along `dir` at the smallest distance for which
 * every corner of the box lies inside the view frustum shrunk by a margin: for a corner at offset
 * p from the centre, with camera axes right r, up u and view direction -dir, the corner is
 * visible when |p.r| <= tan(fovx/2) * (dist - p.dir) and the same for p.u and fovy. */
pbf_camera pbf_camera_default(const float lo[3], const float hi[3], float aspect) {
    pbf_camera c;
    const float fov = 40.0f;
    const float margin = 0.92f; /* corners use at most 92% of the half-width / half-height */
    if (!(aspect > 0) || !isfinite(aspect)) aspect = 16.0f / 9.0f;
    float dir[3] = {0.38f, 0.48f, 1.0f};
    normalize3(dir);
    float up[3] = {0, 1, 0};
    float right[3], cam_up[3];
    cross3(up, dir, right); /* right = up x back */
    normalize3(right);
    cross3(dir, right, cam_up);
    float centre[3];
    for (int a = 0; a < 3; ++a) centre[a] = 0.5f * (lo[a] + hi[a]);
    float ty = tanf(0.5f * fov * 3.14159265f / 180.0f) * margin;
    float tx = ty * aspect;
    float dist = 0;
    for (int k = 0; k < 8; ++k) {
        float p[3] = {((k & 1) ? hi[0] : lo[0]) - centre[0], ((k & 2) ? hi[1] : lo[1]) - centre[1],
                      ((k & 4) ? hi[2] : lo[2]) - centre[2]};
        float along = dot3(p, dir);
        float need_x = along + fabsf(dot3(p, right)) / tx;
        float need_y = along + fabsf(dot3(p, cam_up)) / ty;
        if (need_x > dist) dist = need_x;
        if (need_y > dist) dist = need_y;
    }
    if (!(dist > 0)) dist = 1;
    for (int a = 0; a < 3; ++a) {
        c.position[a] = centre[a] + dir[a] * dist;
        c.target[a] = centre[a];
        c.up[a] = up[a];
    }
    c.fov_deg = fov;
    return c;
}

void pbf_camera_matrices(const pbf_camera *c, float aspect, float znear, float zfar, float view[16],
                         float proj[16]) {
    /* View: the classic lookAt. Rows of the rotation are the camera axes s, u, -f. */
    float f[3] = {c->target[0] - c->position[0], c->target[1] - c->position[1],
                  c->target[2] - c->position[2]};
    normalize3(f);
    float s[3], u[3];
    cross3(f, c->up, s);
    normalize3(s);
    cross3(s, f, u);
    for (int i = 0; i < 16; ++i) view[i] = 0;
    view[0] = s[0];
    view[4] = s[1];
    view[8] = s[2];
    view[1] = u[0];
    view[5] = u[1];
    view[9] = u[2];
    view[2] = -f[0];
    view[6] = -f[1];
    view[10] = -f[2];
    view[12] = -dot3(s, c->position);
    view[13] = -dot3(u, c->position);
    view[14] = dot3(f, c->position);
    view[15] = 1;
    /* Projection: gluPerspective. */
    float t = 1.0f / tanf(0.5f * c->fov_deg * 3.14159265f / 180.0f);
    for (int i = 0; i < 16; ++i) proj[i] = 0;
    proj[0] = t / aspect;
    proj[5] = t;
    proj[10] = (zfar + znear) / (znear - zfar);
    proj[11] = -1;
    proj[14] = 2 * zfar * znear / (znear - zfar);
}

/* ---- command-line options ----------------------------------------------------------------- */

static const char *skip_spaces(const char *s) {
    while (*s == ' ' || *s == '\t') ++s;
    return s;
}

/* One number at s, then spaces; *end past them. 0 if there is none or it is not finite. */
static int parse_number(const char *s, float *v, const char **end) {
    char *e = NULL;
    s = skip_spaces(s);
    errno = 0;
    double d = strtod(s, &e);
    if (e == s || errno == ERANGE || !isfinite(d)) return 0;
    *v = (float)d;
    *end = skip_spaces(e);
    return 1;
}

int pbf_camera_parse_vec3(const char *s, float out[3]) {
    if (!s) return 0;
    float v[3];
    const char *p = s;
    for (int a = 0; a < 3; ++a) {
        if (!parse_number(p, &v[a], &p)) return 0;
        if (!(fabsf(v[a]) <= PBF_CAMERA_COORD_MAX)) return 0;
        if (a < 2) {
            if (*p != ',') return 0;
            ++p;
        }
    }
    if (*p != '\0') return 0;
    for (int a = 0; a < 3; ++a) out[a] = v[a];
    return 1;
}

int pbf_camera_parse_fov(const char *s, float *out) {
    if (!s) return 0;
    float v;
    const char *p;
    if (!parse_number(s, &v, &p) || *p != '\0') return 0;
    if (!(v > 1.0f && v < 170.0f)) return 0;
    *out = v;
    return 1;
}

void pbf_camera_apply(pbf_camera *c, const pbf_camera_override *o) {
    if (!o) return;
    for (int a = 0; a < 3; ++a) {
        if (o->has_position) c->position[a] = o->position[a];
        if (o->has_target) c->target[a] = o->target[a];
    }
    if (o->has_fov) c->fov_deg = o->fov_deg;
    if (!o->has_position && !o->has_target) return;
    float f[3] = {c->target[0] - c->position[0], c->target[1] - c->position[1],
                  c->target[2] - c->position[2]};
    float up[3] = {c->up[0], c->up[1], c->up[2]};
    normalize3(f);
    normalize3(up);
    float x[3];
    cross3(f, up, x);
    if (dot3(x, x) < 1e-8f && dot3(f, f) > 0) {
        c->up[0] = 0;
        c->up[1] = 0;
        c->up[2] = dot3(f, up) > 0 ? 1.0f : -1.0f; /* looking down: -z is up in the image */
    }
}

int pbf_camera_check(const pbf_camera *c, char *msg, size_t size) {
    double f[3], len2 = 0, up2 = 0, dot = 0;
    for (int a = 0; a < 3; ++a) {
        f[a] = (double)c->target[a] - (double)c->position[a];
        len2 += f[a] * f[a];
        up2 += (double)c->up[a] * c->up[a];
        dot += f[a] * c->up[a];
    }
    if (!(len2 > 1e-18)) {
        snprintf(msg, size,
                 "the camera position and target are the same point (%g, %g, %g); move one "
                 "with --camera-pos or --camera-target",
                 (double)c->position[0], (double)c->position[1], (double)c->position[2]);
        return 0;
    }
    if (!(up2 > 1e-18) || dot * dot > 0.9999 * len2 * up2) {
        snprintf(msg, size, "the camera's up direction (%g, %g, %g) is along its view direction",
                 (double)c->up[0], (double)c->up[1], (double)c->up[2]);
        return 0;
    }
    if (!(c->fov_deg > 1.0f && c->fov_deg < 170.0f)) {
        snprintf(msg, size, "the camera's field of view %g is out of range (1, 170) degrees",
                 (double)c->fov_deg);
        return 0;
    }
    return 1;
}
