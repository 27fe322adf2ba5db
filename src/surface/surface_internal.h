/* Internals of the surface reconstruction (src/surface/), shared with the tests. */
#ifndef PBF_SURFACE_INTERNAL_H
#define PBF_SURFACE_INTERNAL_H

#include <stdint.h>

/* Cube corners k = 0..7 sit at (k & 1, (k >> 1) & 1, (k >> 2) & 1). Cube edges e = 0..11 run
 * along axis e / 4 from corner pbf_mc_edge_corner[e][0] to pbf_mc_edge_corner[e][1]. */
extern const uint8_t pbf_mc_edge_corner[12][2];

/* The marching-cubes case table: for each of the 256 inside/outside patterns of the corners
 * (bit k set: corner k is inside, value > iso), ntri triangles given as triples of cube edges,
 * wound counter-clockwise seen from outside. Built by pbf_mc_table_build from one rule: on a
 * face whose inside corners are diagonal, each inside corner is cut off on its own; and no
 * triangle has its three cut edges on one cube face. */
typedef struct pbf_mc_table {
    uint8_t ntri[256];
    int8_t tri[256][36];
} pbf_mc_table;

/* Returns 0, or -1 if a case did not close into loops (a bug). */
int pbf_mc_table_build(pbf_mc_table *t);

#endif
