/*
 * A perspective camera for the headless renderer (app/render.c) and the live viewer
 * (app/viewer/). Plain data: where the eye is, what it looks at, which way is up, and the
 * vertical field of view. The matrices follow OpenGL conventions (right-handed eye space looking
 * down -z, clip depth -1..1, column-major storage: element (row r, column c) is m[c * 4 + r]).
 */
#ifndef PBFAPP_CAMERA_H
#define PBFAPP_CAMERA_H

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

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_CAMERA_H */
