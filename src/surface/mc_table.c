/*
 * The marching-cubes case table, derived from one rule instead of typed in.
 *
 * For a corner pattern, each cube face gets the segments of the contour on it: a face with two
 * cut edges gets one segment; a face with four (inside corners on a diagonal, the ambiguous
 * case) gets two, each cutting off one inside corner. The segments depend only on the face's
 * own four corners, so the two cubes that share a face cut it identically: the surface has no
 * cracks. Each segment is oriented so that, seen from outside the cube, the inside part of the
 * face is on its right; then every cut edge starts exactly one segment and ends exactly one, the
 * segments chain into closed loops, and each loop is triangulated as a fan from a vertex that
 * puts no triangle on a cube face (fan_apex). A triangle (a, b, c) of the loop order has
 * (b - a) x (c - a) pointing from inside (value > iso) to outside.
 */
#include <string.h>

#include "surface_internal.h"

const uint8_t pbf_mc_edge_corner[12][2] = {
    {0, 1}, {2, 3}, {4, 5}, {6, 7}, /* along x */
    {0, 2}, {1, 3}, {4, 6}, {5, 7}, /* along y */
    {0, 4}, {1, 5}, {2, 6}, {3, 7}, /* along z */
};

static int edge_of(int a, int b) {
    for (int e = 0; e < 12; ++e)
        if ((pbf_mc_edge_corner[e][0] == a && pbf_mc_edge_corner[e][1] == b) ||
            (pbf_mc_edge_corner[e][0] == b && pbf_mc_edge_corner[e][1] == a))
            return e;
    return -1;
}

static void corner_pos(int k, double p[3]) {
    p[0] = k & 1;
    p[1] = (k >> 1) & 1;
    p[2] = (k >> 2) & 1;
}

static void edge_mid(int e, double p[3]) {
    double a[3], b[3];
    corner_pos(pbf_mc_edge_corner[e][0], a);
    corner_pos(pbf_mc_edge_corner[e][1], b);
    for (int i = 0; i < 3; ++i) p[i] = 0.5 * (a[i] + b[i]);
}

/* Adds the segment between cut edges e0 and e1 of a face with outward normal f, oriented so that
 * the inside reference point `in` lies to the right of it seen from outside. */
static int add_segment(int next[12], int e0, int e1, const double f[3], const double in[3]) {
    double p[3], q[3], d[3], m[3], c[3];
    edge_mid(e0, p);
    edge_mid(e1, q);
    for (int i = 0; i < 3; ++i) {
        d[i] = q[i] - p[i];
        m[i] = 0.5 * (p[i] + q[i]);
    }
    c[0] = f[1] * d[2] - f[2] * d[1];
    c[1] = f[2] * d[0] - f[0] * d[2];
    c[2] = f[0] * d[1] - f[1] * d[0];
    double s = c[0] * (in[0] - m[0]) + c[1] * (in[1] - m[1]) + c[2] * (in[2] - m[2]);
    int from = s < 0 ? e0 : e1, to = s < 0 ? e1 : e0;
    if (next[from] >= 0) return -1;
    next[from] = to;
    return 0;
}

/* The two cube faces that hold edge e, as bits 2 axis + side of a mask. */
static int edge_faces(int e) {
    int axis = e / 4, c0 = pbf_mc_edge_corner[e][0], m = 0;
    for (int b = 0; b < 3; ++b)
        if (b != axis) m |= 1 << (2 * b + ((c0 >> b) & 1));
    return m;
}

/* The first loop vertex from which a fan has no triangle whose three cut edges lie on one cube
 * face, or -1. Such a triangle lies in the face's plane: where a loop runs through both
 * segments of an ambiguous face (four cut edges), a fan from one of them would lay a triangle
 * on the face, and the cube on the other side of it may lay the same triangle facing the
 * other way: two back-to-back triangles and four triangles on an edge. A fan from a vertex
 * off that face keeps the surface off the face, as the cut rule intends. */
static int fan_apex(const int *loop, int n) {
    for (int r = 0; r < n; ++r) {
        int ok = 1;
        for (int k = 1; ok && k + 1 < n; ++k)
            ok = !(edge_faces(loop[r]) & edge_faces(loop[(r + k) % n]) &
                   edge_faces(loop[(r + k + 1) % n]));
        if (ok) return r;
    }
    return -1;
}

int pbf_mc_table_build(pbf_mc_table *t) {
    memset(t, 0, sizeof *t);
    for (int cs = 0; cs < 256; ++cs) {
        int next[12];
        for (int e = 0; e < 12; ++e) next[e] = -1;
        for (int axis = 0; axis < 3; ++axis) {
            int u = (axis + 1) % 3, v = (axis + 2) % 3;
            for (int side = 0; side < 2; ++side) {
                double f[3] = {0, 0, 0};
                f[axis] = side ? 1.0 : -1.0;
                int c[4];
                static const int cu[4] = {0, 1, 1, 0}, cv[4] = {0, 0, 1, 1};
                for (int k = 0; k < 4; ++k) c[k] = side << axis | cu[k] << u | cv[k] << v;
                int in[4], nin = 0;
                for (int k = 0; k < 4; ++k) nin += in[k] = (cs >> c[k]) & 1;
                if (nin == 0 || nin == 4) continue;
                int ambiguous = nin == 2 && in[0] == in[2];
                if (!ambiguous) {
                    int cut[2], nc = 0;
                    double ref[3] = {0, 0, 0};
                    for (int k = 0; k < 4; ++k) {
                        if (in[k] != in[(k + 1) % 4]) cut[nc++] = edge_of(c[k], c[(k + 1) % 4]);
                        if (in[k]) {
                            double p[3];
                            corner_pos(c[k], p);
                            for (int i = 0; i < 3; ++i) ref[i] += p[i] / nin;
                        }
                    }
                    if (nc != 2 || add_segment(next, cut[0], cut[1], f, ref) != 0) return -1;
                } else {
                    for (int k = 0; k < 4; ++k) {
                        if (!in[k]) continue;
                        double p[3];
                        corner_pos(c[k], p);
                        int ea = edge_of(c[(k + 3) % 4], c[k]), eb = edge_of(c[k], c[(k + 1) % 4]);
                        if (add_segment(next, ea, eb, f, p) != 0) return -1;
                    }
                }
            }
        }
        /* every cut edge must start one segment and end one */
        int ends[12] = {0};
        for (int e = 0; e < 12; ++e) {
            int a = (cs >> pbf_mc_edge_corner[e][0]) & 1, b = (cs >> pbf_mc_edge_corner[e][1]) & 1;
            if ((a != b) != (next[e] >= 0)) return -1;
            if (next[e] >= 0) ends[next[e]]++;
        }
        for (int e = 0; e < 12; ++e)
            if (ends[e] != (next[e] >= 0)) return -1;
        int used[12] = {0}, nt = 0;
        for (int e0 = 0; e0 < 12; ++e0) {
            if (next[e0] < 0 || used[e0]) continue;
            int loop[12], n = 0;
            for (int e = e0; !used[e]; e = next[e]) {
                used[e] = 1;
                loop[n++] = e;
            }
            if (n < 3) return -1;
            int r = fan_apex(loop, n);
            if (r < 0) return -1;
            for (int k = 1; k + 1 < n; ++k) {
                t->tri[cs][3 * nt + 0] = (int8_t)loop[r];
                t->tri[cs][3 * nt + 1] = (int8_t)loop[(r + k) % n];
                t->tri[cs][3 * nt + 2] = (int8_t)loop[(r + k + 1) % n];
                ++nt;
            }
        }
        if (nt > 12) return -1;
        t->ntri[cs] = (uint8_t)nt;
    }
    return 0;
}
