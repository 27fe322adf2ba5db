/*
 * A perspective camera for the headless renderer (app/render/render.c) and the live viewer
 * (app/viewer/). Plain data: where the eye is, what it looks at, which way is up, and the
 * vertical field of view. The matrices follow OpenGL conventions (right-handed eye space looking
 * down -z, clip depth -1..1, column-major storage: element (row r, column c) is m[c * 4 + r]).
 */
#ifndef PBFAPP_CAMERA_H
#define PBFAPP_CAMERA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbf_camera {
    float position[3], target[3], up[3]; /* m; up need not be normalised or orthogonal */
    float fov_deg;                       /* vertical field of view, degrees, in (1, 170) */
} pbf_camera;

/* A camera that frames the box [lo, hi] well for the given aspect (width/height): looking at the
 * box centre from the front-right-above (+z, slightly +x, +y with y up), whole box visible. */
pbf_camera pbf_camera_default(const float lo[3], const float hi[3], float aspect);

/* Column-major 4x4 view and perspective projection (OpenGL conventions, depth -1..1). */
void pbf_camera_matrices(const pbf_camera *c, float aspect, float znear, float zfar, float view[16],
                         float proj[16]);

/* The camera options of `pbf render`, `pbf run --render` and `pbf view` (--camera-pos X,Y,Z,
 * --camera-target X,Y,Z, --fov DEG): each one given replaces that part of the scene's camera (or
 * of the default camera when the scene has none). */
typedef struct pbf_camera_override {
    int has_position, has_target, has_fov;
    float position[3], target[3], fov_deg;
} pbf_camera_override;

#define PBF_CAMERA_COORD_MAX 1e6f /* |coordinate| limit, m, as for the scene's "camera" */

/* Parses "X,Y,Z": three finite numbers with |v| <= PBF_CAMERA_COORD_MAX, separated by commas
 * (spaces allowed around them). Returns 1, or 0 (out untouched) for anything else. */
int pbf_camera_parse_vec3(const char *s, float out[3]);

/* Parses a field of view in degrees, in (1, 170). Returns 1, or 0. */
int pbf_camera_parse_fov(const char *s, float *out);

/* Applies the options to *c. Where the view direction ends up along c->up (looking straight down
 * or up), up becomes -z for looking down and +z for looking up, so that the image has an up. */
void pbf_camera_apply(pbf_camera *c, const pbf_camera_override *o);

/* 1 if the camera can be used (position differs from target, up is not along the view); else 0
 * with the reason in msg, which names the options. */
int pbf_camera_check(const pbf_camera *c, char *msg, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_CAMERA_H */
