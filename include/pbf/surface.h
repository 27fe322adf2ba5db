/*
 * Surface reconstruction: a triangle mesh of the liquid from any set of particle positions.
 *
 *     pbf_surface_params sp = pbf_surface_default_params();
 *     sp.particle_radius = 0.0075f;                     // the simulation's particle radius
 *     pbf_surface *s = NULL;
 *     pbf_error err;
 *     if (pbf_surface_create(&sp, &s, &err) != PBF_OK) { puts(err.message); return 1; }
 *     pbf_mesh mesh;
 *     pbf_particles p = pbf_world_particles(world);     // or any x, y, z arrays
 *     if (pbf_surface_reconstruct(s, p.x, p.y, p.z, p.count, &mesh, &err) != PBF_OK) ...
 *     // mesh.positions / mesh.normals / mesh.triangles stay valid until the next call
 *     pbf_surface_destroy(s);
 *
 * The method:
 *  - Field: phi(x) = V sum_j W(x - x_j), with W(d) = A (1 - d^2/R^2)^3 (the poly6 shape, compact
 *    support R = 2 * smoothing_length * particle_radius) and V such that a cubic lattice at the
 *    rest spacing 2r has phi = 1 exactly: phi is the density relative to the rest density, as
 *    the solver measures it when R equals its kernel radius h. The surface is phi = iso_level.
 *  - Anisotropy (optional, Yu & Turk 2010): positions are smoothed (x_i' = (1 - l) x_i + l
 *    weighted mean of the neighbours within R, l = 0.5: the paper's 0.9 over 2R shrank a
 *    resting block by 28 %, this by 7 %) and each particle's kernel is
 *    stretched along the principal axes of its neighbourhood's weighted covariance
 *    (eigenvalue ratio at most 4, volume of the support kept; fewer than 25 neighbours: a
 *    sphere), so flat surfaces are flat and thin sheets are thin.
 *  - Sparse grid: the grid points (spacing cube_size * particle_radius) are grouped in blocks of
 *    8^3; only blocks within reach of a particle exist (a hash of block coordinates, particles
 *    binned by block with a counting sort), so memory grows with the liquid, not the box.
 *  - Marching cubes with a case table built so that on every ambiguous cube face the inside
 *    corners are kept apart: a face is cut the same way by both cubes that share it, and no
 *    triangle lies on a cube face (where the cube beyond could lay its twin), so the mesh is
 *    closed and every edge is shared by exactly two triangles wherever the liquid is closed.
 *    Triangles wind counter-clockwise seen from outside (right-hand normals point out).
 *  - Normals: minus the field gradient (central differences on the grid, interpolated along the
 *    cut edge), normalised: they point out of the liquid.
 *  - Smoothing (optional): Taubin's lambda|mu Laplacian smoothing (lambda = 0.5, mu = -0.53),
 *    one pair per iteration, which removes single-particle bumps without shrinking the volume.
 *  - OpenMP over blocks; every value is summed in an order fixed by the input, so the mesh is
 *    bit-identical for any thread count.
 */
#ifndef PBF_SURFACE_H
#define PBF_SURFACE_H

#include <stddef.h>
#include <stdint.h>

#include "pbf/params.h"
#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parameters. Lengths other than the radius are multiples of particle_radius (splashsurf's
 * convention), so the defaults suit any resolution. The table pbf_surface_param_table() gives
 * each one's key, unit, default, range and description. */
typedef struct pbf_surface_params {
    float particle_radius;    /* r, m; particles sit 2r apart at rest */
    float smoothing_length;   /* kernel support R = 2 * smoothing_length * r */
    float iso_level;          /* surface at phi = iso_level (phi = 1 inside at rest) */
    float cube_size;          /* marching-cubes cell edge, in r */
    int anisotropic;          /* 1: Yu & Turk 2010 kernels and position smoothing */
    int smoothing_iterations; /* Taubin lambda|mu pairs on the mesh; 0 = none */
    int threads;              /* OpenMP threads; 0 = the OpenMP default (result does not depend on it) */
} pbf_surface_params;

pbf_surface_params pbf_surface_default_params(void);

/* The parameter table (offsets into pbf_surface_params), as pbf/params.h describes. */
const pbf_param_info *pbf_surface_param_table(size_t *count);

/* Checks every field; the message names the field and the value. */
pbf_status pbf_surface_params_validate(const pbf_surface_params *params, pbf_error *err);

/* A triangle mesh. Arrays are owned by the pbf_surface that made it. */
typedef struct pbf_mesh {
    int vertex_count;
    int triangle_count;
    const float *positions;    /* x y z per vertex, m */
    const float *normals;      /* unit outward normal per vertex */
    const uint32_t *triangles; /* 3 vertex indices per triangle, counter-clockwise from outside */
} pbf_mesh;

/* What the last reconstruction did. */
typedef struct pbf_surface_info {
    int particles;
    int blocks;          /* grid blocks evaluated (8^3 points each) */
    int surface_blocks;  /* blocks that hold part of the surface */
    int vertices, triangles;
    size_t bytes;        /* memory held by the pbf_surface after the call */
    double ms_total;     /* wall time of the stages below */
    double ms_anisotropy, ms_grid, ms_field, ms_march, ms_smooth;
} pbf_surface_info;

typedef struct pbf_surface pbf_surface;

pbf_status pbf_surface_create(const pbf_surface_params *params, pbf_surface **out,
                              pbf_error *err);
void pbf_surface_destroy(pbf_surface *s);

/* Meshes `count` particles at (x[i], y[i], z[i]). Fills *mesh (arrays valid until the next call
 * on s or its destruction). No particle: an empty mesh. A non-finite position is an error naming
 * the particle. */
pbf_status pbf_surface_reconstruct(pbf_surface *s, const float *x, const float *y, const float *z,
                                   int count, pbf_mesh *mesh, pbf_error *err);

/* Statistics of the last pbf_surface_reconstruct. */
pbf_surface_info pbf_surface_last_info(const pbf_surface *s);

/* Volume enclosed by a closed, consistently oriented mesh (divergence theorem), m^3. */
double pbf_mesh_volume(const pbf_mesh *mesh);

#ifdef __cplusplus
}
#endif

#endif /* PBF_SURFACE_H */
