/*
 * The software renderer's water: a closed triangle mesh of the liquid (pbf/surface.h) drawn over
 * the floor, the solid obstacles and the background (see render.h, "Surface mode").
 *
 * Rasterisation: every pixel holds SS x SS samples. Vertices are projected once and snapped to
 * a fixed-point grid of 1/256 sample; coverage uses exact 64-bit integer edge functions with the
 * top-left rule, so a sample on an edge shared by two triangles belongs to exactly one of them
 * and a closed mesh covers each sample an even number of times. Per sample, in triangle order:
 *   - a z-buffer (strictly nearer wins, starting from the depth of the floor or of the
 *     nearest obstacle box, whichever is nearer) keeps the front
 *     triangle, whose perspective-correct barycentrics give the depth and the normal;
 *   - the thickness of liquid along the ray is summed over every triangle that covers the
 *     sample: + depth where it faces away from the eye, - depth where it faces the eye, each
 *     depth clipped to that solid's (exact for a closed mesh, whatever the triangle order).
 * The image is split into bands of rows, each drawing the triangles that reach it in input
 * order, so the pixels do not depend on the number of threads.
 *
 * Shading (pbfapp_water_shade) per covered sample, then the SS x SS samples of a pixel averaged
 * (uncovered samples keep what was behind): anti-aliased silhouettes.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "render/render_view.h"
#include "io/util.h"

#define SS PBFAPP_SURFACE_SUPERSAMPLE
#define BAND_ROWS 8   /* image rows per band */
#define FIX 256       /* fixed-point units per sample */
#define FIX_LIMIT (1 << 27) /* projected coordinates beyond this many units: triangle skipped */

/* ---- the water model ---------------------------------------------------------------------- */

float pbfapp_schlick(float cos_theta) {
    /* F0 = ((n - 1) / (n + 1))^2 with n = 1.33 (water in air) */
    const float f0 = 0.0201f;
    float c = cos_theta < 0 ? 0 : cos_theta > 1 ? 1 : cos_theta;
    float m = 1.0f - c, m2 = m * m;
    return f0 + (1.0f - f0) * m2 * m2 * m;
}

/* Sky seen along the unit direction r: a gradient from a light horizon to a blue zenith, a grey
 * ground below the horizon, and the sun (a sharp disc and a soft glow around `sun`). */
void pbfapp_water_sky(const float r[3], const float sun[3], float out[3]) {
    static const float zenith[3] = {0.26f, 0.47f, 0.80f};
    static const float horizon[3] = {0.86f, 0.91f, 0.96f};
    static const float ground[3] = {0.36f, 0.38f, 0.42f};
    if (r[1] >= 0) {
        float t = 1.0f - (1.0f - r[1]) * (1.0f - r[1]);
        for (int k = 0; k < 3; ++k) out[k] = horizon[k] + (zenith[k] - horizon[k]) * t;
    } else {
        float t = -6.0f * r[1];
        if (t > 1) t = 1;
        for (int k = 0; k < 3; ++k) out[k] = horizon[k] + (ground[k] - horizon[k]) * t;
    }
    float c = pbfapp_dot3(r, sun);
    if (c > 0) {
        float c2 = c * c, c4 = c2 * c2, c8 = c4 * c4, c16 = c8 * c8, c32 = c16 * c16;
        float c64 = c32 * c32, c128 = c64 * c64, c256 = c128 * c128, c512 = c256 * c256;
        float glow = 1.5f * c32, disc = 60.0f * c512;
        for (int k = 0; k < 3; ++k) out[k] += (glow + disc) * (k == 2 ? 0.92f : 1.0f);
    }
}

void pbfapp_water_shade(const float n_in[3], const float dir[3], float thickness,
                        const float absorb[3], const float behind[3], const float sun[3],
                        float out[3]) {
    /* in-scattered colour of deep water, lit by the sky (ambient) and the sun (diffuse) */
    static const float deep[3] = {0.015f, 0.16f, 0.28f};
    float n[3] = {n_in[0], n_in[1], n_in[2]};
    float c = -pbfapp_dot3(n, dir);
    if (c < 0) { /* an interpolated normal facing away at a silhouette: seen edge-on */
        for (int k = 0; k < 3; ++k) n[k] += c * dir[k];
        pbfapp_normalize3(n);
        c = 0;
    }
    float fres = pbfapp_schlick(c);
    float r[3];
    for (int k = 0; k < 3; ++k) r[k] = dir[k] + 2.0f * c * n[k];
    float sky[3];
    pbfapp_water_sky(r, sun, sky);
    float diff = pbfapp_dot3(n, sun);
    float lit = 0.35f + 0.65f * (diff > 0 ? diff : 0);
    /* the sun's highlight (Blinn-Phong, on top of the reflected sky's sun disc) */
    float hv[3] = {sun[0] - dir[0], sun[1] - dir[1], sun[2] - dir[2]};
    pbfapp_normalize3(hv);
    float nh = pbfapp_dot3(n, hv), spec = 0;
    if (nh > 0) {
        float p2 = nh * nh, p4 = p2 * p2, p8 = p4 * p4, p16 = p8 * p8, p32 = p16 * p16;
        spec = 0.5f * p32 * p32 + 0.12f * p16;
    }
    for (int k = 0; k < 3; ++k) {
        float t = expf(-absorb[k] * (thickness > 0 ? thickness : 0));
        float through = behind[k] * t + deep[k] * lit * (1.0f - t);
        out[k] = (1.0f - fres) * through + fres * sky[k] + spec;
    }
}

/* ---- rasterisation ------------------------------------------------------------------------ */

typedef struct svert {
    int32_t X, Y; /* fixed point: FIX units per sample, sample centres at FIX/2 */
    float invd;   /* 1 / distance along the view axis; 0 = unusable (behind the near plane) */
} svert;

typedef struct stri {
    uint32_t v[3];  /* vertices, ordered so that the edge functions are >= 0 inside */
    int64_t area;   /* > 0 */
    int front;      /* faces the eye */
    int32_t i0, i1, j0, j1; /* sample bounding box (inclusive, clipped to the image) */
} stri;

/* Twice the signed area of (a, b, p) in fixed-point units. */
static inline int64_t edge_fn(const svert *a, const svert *b, int64_t px, int64_t py) {
    return ((int64_t)b->X - a->X) * (py - a->Y) - ((int64_t)b->Y - a->Y) * (px - a->X);
}

/* Top-left rule for the edge a -> b of a triangle with positive area (y down): a sample exactly
 * on the edge is inside only on a top or left edge; of two triangles sharing an edge, which run
 * it in opposite directions, exactly one is. */
static inline int64_t edge_bias(const svert *a, const svert *b) {
    int32_t dy = b->Y - a->Y, dx = b->X - a->X;
    return (dy > 0 || (dy == 0 && dx < 0)) ? 0 : -1;
}

typedef struct surf_ctx {
    const pbfapp_render_input *in;
    const pbf_mesh *mesh;
    const pbfapp_view *v;
    int w, h, ws, hs; /* image and sample-grid sizes */
    const svert *sv;
    const stri *tri;
    const unsigned char *under; /* the picture before the liquid (background, floor, boxes) */
    float absorb[3];            /* 1/m */
    float sun[3];               /* towards the sun, world */
    float refract_px;           /* refraction offset per metre of thickness at unit depth */
} surf_ctx;

/* Bilinear colour of the picture under the liquid at image point (x, y) (pixels). */
static void under_at(const surf_ctx *c, float x, float y, float out[3]) {
    x -= 0.5f;
    y -= 0.5f;
    if (x < 0) x = 0;
    if (y < 0) y = 0;
    if (x > (float)(c->w - 1)) x = (float)(c->w - 1);
    if (y > (float)(c->h - 1)) y = (float)(c->h - 1);
    int x0 = (int)x, y0 = (int)y;
    int x1 = x0 + 1 < c->w ? x0 + 1 : x0, y1 = y0 + 1 < c->h ? y0 + 1 : y0;
    float fx = x - (float)x0, fy = y - (float)y0;
    const unsigned char *p00 = c->under + ((size_t)y0 * (size_t)c->w + (size_t)x0) * 3;
    const unsigned char *p10 = c->under + ((size_t)y0 * (size_t)c->w + (size_t)x1) * 3;
    const unsigned char *p01 = c->under + ((size_t)y1 * (size_t)c->w + (size_t)x0) * 3;
    const unsigned char *p11 = c->under + ((size_t)y1 * (size_t)c->w + (size_t)x1) * 3;
    for (int k = 0; k < 3; ++k) {
        float a = (float)p00[k] + ((float)p10[k] - (float)p00[k]) * fx;
        float b = (float)p01[k] + ((float)p11[k] - (float)p01[k]) * fx;
        out[k] = (a + (b - a) * fy) * (1.0f / 255.0f);
    }
}

static unsigned char to_byte(float v) {
    if (!(v > 0)) return 0;
    if (v >= 1) return 255;
    return (unsigned char)(v * 255.0f + 0.5f);
}

/* Rows [y_lo, y_hi) of the image: depth and thickness passes over the band's triangles `list`,
 * then shading and the average of each pixel's samples. */
static void surface_band(const surf_ctx *c, pbfapp_image *img, const int *list, int n, int y_lo,
                         int y_hi, float *depth, float *floor_d, float *thick, int *front) {
    const int ws = c->ws, j_lo = y_lo * SS, j_hi = y_hi * SS;
    const size_t nsamp = (size_t)(j_hi - j_lo) * (size_t)ws;
    for (int j = j_lo; j < j_hi; ++j)
        for (int i = 0; i < ws; ++i) {
            size_t s = (size_t)(j - j_lo) * (size_t)ws + (size_t)i;
            float fd = INFINITY;
            const float px = ((float)i + 0.5f) / SS, py = ((float)j + 0.5f) / SS;
            if (!(c->in->flags & PBFAPP_RENDER_NO_FLOOR))
                fd = pbfapp_floor_depth(c->v, c->in->domain_min, c->in->domain_max, px, py);
            if (c->in->box_count > 0 && c->in->boxes) { /* solid obstacles hide the liquid */
                int face;
                float bd = pbfapp_boxes_depth(c->v, c->in->boxes, c->in->box_count, px, py, &face);
                if (bd < fd) fd = bd;
            }
            floor_d[s] = fd;
            depth[s] = fd;
        }
    memset(thick, 0, nsamp * sizeof *thick);
    for (size_t s = 0; s < nsamp; ++s) front[s] = -1;
    for (int k = 0; k < n; ++k) {
        const stri *t = &c->tri[list[k]];
        const svert *a = &c->sv[t->v[0]], *b = &c->sv[t->v[1]], *d = &c->sv[t->v[2]];
        int j0 = t->j0 > j_lo ? t->j0 : j_lo, j1 = t->j1 < j_hi - 1 ? t->j1 : j_hi - 1;
        if (j0 > j1 || t->i0 > t->i1) continue;
        const int64_t b0 = edge_bias(b, d), b1 = edge_bias(d, a), b2 = edge_bias(a, b);
        const int64_t sx0 = -((int64_t)d->Y - b->Y) * FIX, sx1 = -((int64_t)a->Y - d->Y) * FIX,
                      sx2 = -((int64_t)b->Y - a->Y) * FIX;
        const float inv_area = 1.0f / (float)t->area;
        const float sign = t->front ? -1.0f : 1.0f;
        for (int j = j0; j <= j1; ++j) {
            const int64_t py = (int64_t)j * FIX + FIX / 2, px = (int64_t)t->i0 * FIX + FIX / 2;
            int64_t w0 = edge_fn(b, d, px, py), w1 = edge_fn(d, a, px, py),
                    w2 = edge_fn(a, b, px, py);
            size_t s = (size_t)(j - j_lo) * (size_t)ws + (size_t)t->i0;
            for (int i = t->i0; i <= t->i1; ++i, ++s, w0 += sx0, w1 += sx1, w2 += sx2) {
                if (w0 + b0 < 0 || w1 + b1 < 0 || w2 + b2 < 0) continue;
                float invd =
                    ((float)w0 * a->invd + (float)w1 * b->invd + (float)w2 * d->invd) * inv_area;
                float z = 1.0f / invd;
                thick[s] += sign * (z < floor_d[s] ? z : floor_d[s]);
                if (z < depth[s]) {
                    depth[s] = z;
                    front[s] = list[k];
                }
            }
        }
    }
    const pbf_mesh *m = c->mesh;
    const pbfapp_view *v = c->v;
    const float inv_ss2 = 1.0f / (float)(SS * SS);
    const float max_shift = 0.04f * (float)c->h;
    for (int y = y_lo; y < y_hi; ++y)
        for (int x = 0; x < c->w; ++x) {
            const size_t pi = (size_t)y * (size_t)c->w + (size_t)x;
            unsigned char *out = img->rgb + pi * 3;
            float sum[3] = {0, 0, 0}, nearest = INFINITY;
            int covered = 0;
            for (int sj = 0; sj < SS; ++sj)
                for (int si = 0; si < SS; ++si) {
                    const int i = x * SS + si, j = y * SS + sj;
                    const size_t s = (size_t)(j - j_lo) * (size_t)ws + (size_t)i;
                    const int ti = front[s];
                    if (ti < 0) {
                        for (int k = 0; k < 3; ++k) sum[k] += (float)c->under[pi * 3 + k];
                        continue;
                    }
                    ++covered;
                    if (depth[s] < nearest) nearest = depth[s];
                    /* perspective-correct barycentrics of the front triangle */
                    const stri *t = &c->tri[ti];
                    const svert *a = &c->sv[t->v[0]], *b = &c->sv[t->v[1]], *d = &c->sv[t->v[2]];
                    const int64_t px = (int64_t)i * FIX + FIX / 2, py = (int64_t)j * FIX + FIX / 2;
                    float l0 = (float)edge_fn(b, d, px, py) * a->invd;
                    float l1 = (float)edge_fn(d, a, px, py) * b->invd;
                    float l2 = (float)edge_fn(a, b, px, py) * d->invd;
                    float ls = l0 + l1 + l2;
                    if (!(ls > 0)) ls = 1;
                    l0 /= ls;
                    l1 /= ls;
                    l2 /= ls;
                    const float *na = m->normals + 3 * (size_t)t->v[0];
                    const float *nb = m->normals + 3 * (size_t)t->v[1];
                    const float *nc = m->normals + 3 * (size_t)t->v[2];
                    float nrm[3];
                    for (int k = 0; k < 3; ++k) nrm[k] = l0 * na[k] + l1 * nb[k] + l2 * nc[k];
                    pbfapp_normalize3(nrm);
                    /* the ray through the sample */
                    const float fx = ((float)i + 0.5f) / SS, fy = ((float)j + 0.5f) / SS;
                    const float ra = (fx - v->cx) / v->focal, rb = -(fy - v->cy) / v->focal;
                    float dir[3];
                    for (int k = 0; k < 3; ++k) dir[k] = v->f[k] + ra * v->s[k] + rb * v->u[k];
                    pbfapp_normalize3(dir);
                    /* what lies behind, shifted as the surface refracts it */
                    float th = thick[s] > 0 ? thick[s] : 0;
                    float shift = c->refract_px * th / depth[s];
                    if (shift > max_shift) shift = max_shift;
                    float behind[3];
                    under_at(c, fx - shift * pbfapp_dot3(nrm, v->s),
                             fy + shift * pbfapp_dot3(nrm, v->u), behind);
                    float col[3];
                    pbfapp_water_shade(nrm, dir, th, c->absorb, behind, c->sun, col);
                    for (int k = 0; k < 3; ++k) {
                        float q = col[k] < 0 ? 0 : col[k] > 1 ? 1 : col[k];
                        sum[k] += q * 255.0f;
                    }
                }
            if (!covered) continue;
            for (int k = 0; k < 3; ++k) out[k] = to_byte(sum[k] * inv_ss2 * (1.0f / 255.0f));
            if (2 * covered >= SS * SS) img->depth[pi] = nearest;
        }
}

/* The vertices on the screen, in fixed point (invd = 0: behind the camera or off the
 * representable range). */
static void project_vertices(const pbfapp_view *vp, const pbf_mesh *m, svert *sv) {
    const pbfapp_view v = *vp;
    const int nv = m->vertex_count;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int i = 0; i < nv; ++i) {
        float ex, ey, d;
        pbfapp_to_eye(&v, m->positions + 3 * (size_t)i, &ex, &ey, &d);
        sv[i].invd = 0;
        sv[i].X = sv[i].Y = 0;
        if (!(d > PBFAPP_NEAR_PLANE) || !isfinite(ex) || !isfinite(ey)) continue;
        double X = ((double)v.cx + (double)v.focal * ex / d) * SS * FIX;
        double Y = ((double)v.cy - (double)v.focal * ey / d) * SS * FIX;
        if (!(fabs(X) < FIX_LIMIT && fabs(Y) < FIX_LIMIT)) continue;
        sv[i].X = (int32_t)lrint(X);
        sv[i].Y = (int32_t)lrint(Y);
        sv[i].invd = 1.0f / d;
    }
}

/* Each triangle's screen orientation, area and sample bounds (area = 0: not drawn). */
static void setup_triangles(const surf_ctx *cp, const pbf_mesh *m, const svert *sv, stri *tri) {
    const surf_ctx c = *cp;
    const int nv = m->vertex_count, nt = m->triangle_count;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int t = 0; t < nt; ++t) {
        stri *q = &tri[t];
        q->area = 0;
        const uint32_t *idx = m->triangles + 3 * (size_t)t;
        if (idx[0] >= (uint32_t)nv || idx[1] >= (uint32_t)nv || idx[2] >= (uint32_t)nv) continue;
        const svert *a = &sv[idx[0]], *b = &sv[idx[1]], *d = &sv[idx[2]];
        if (a->invd == 0 || b->invd == 0 || d->invd == 0) continue;
        int64_t area = edge_fn(a, b, d->X, d->Y);
        if (area == 0) continue;
        /* Counter-clockwise from outside in the world is clockwise on the screen (y down). */
        q->front = area < 0;
        q->v[0] = idx[0];
        q->v[1] = area < 0 ? idx[2] : idx[1];
        q->v[2] = area < 0 ? idx[1] : idx[2];
        q->area = area < 0 ? -area : area;
        int32_t xmin = a->X, xmax = a->X, ymin = a->Y, ymax = a->Y;
        if (b->X < xmin) xmin = b->X;
        if (b->X > xmax) xmax = b->X;
        if (d->X < xmin) xmin = d->X;
        if (d->X > xmax) xmax = d->X;
        if (b->Y < ymin) ymin = b->Y;
        if (b->Y > ymax) ymax = b->Y;
        if (d->Y < ymin) ymin = d->Y;
        if (d->Y > ymax) ymax = d->Y;
        /* samples whose centre (i + 1/2) * FIX may lie in [min, max] */
        int32_t i0 = (int32_t)((xmin - FIX / 2 + (int64_t)FIX * 1048576) / FIX - 1048576);
        int32_t j0 = (int32_t)((ymin - FIX / 2 + (int64_t)FIX * 1048576) / FIX - 1048576);
        int32_t i1 = (int32_t)((xmax - FIX / 2 + (int64_t)FIX * 1048576) / FIX - 1048576) + 1;
        int32_t j1 = (int32_t)((ymax - FIX / 2 + (int64_t)FIX * 1048576) / FIX - 1048576) + 1;
        q->i0 = i0 < 0 ? 0 : i0;
        q->j0 = j0 < 0 ? 0 : j0;
        q->i1 = i1 > c.ws - 1 ? c.ws - 1 : i1;
        q->j1 = j1 > c.hs - 1 ? c.hs - 1 : j1;
        if (q->i0 > q->i1 || q->j0 > q->j1) q->area = 0;
    }
}

pbf_status pbfapp_render_surface(const pbfapp_render_input *in, pbfapp_image *img,
                                 pbf_error *err) {
    const pbf_mesh *m = in->mesh;
    if (m->vertex_count < 0 || m->triangle_count < 0 ||
        (m->vertex_count > 0 && (!m->positions || !m->normals)) ||
        (m->triangle_count > 0 && !m->triangles))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "render: a mesh of %d vertices and %d triangles with NULL arrays",
                           m->vertex_count, m->triangle_count);
    if (m->triangle_count == 0) return PBF_OK;
    const int w = img->width, h = img->height;
    surf_ctx c;
    memset(&c, 0, sizeof c);
    pbfapp_view v;
    pbfapp_make_view(&in->camera, w, h, &v);
    c.in = in;
    c.mesh = m;
    c.v = &v;
    c.w = w;
    c.h = h;
    c.ws = w * SS;
    c.hs = h * SS;
    /* Absorption scaled to the container: light crossing a tenth of its largest side keeps
     * e^-0.9 of its red, e^-0.3 of its green and e^-0.16 of its blue. */
    float ext = 0;
    for (int k = 0; k < 3; ++k)
        if (in->domain_max[k] - in->domain_min[k] > ext) ext = in->domain_max[k] - in->domain_min[k];
    if (!(ext > 0)) ext = 1;
    static const float absorb_unit[3] = {9.0f, 3.0f, 1.6f};
    for (int k = 0; k < 3; ++k) c.absorb[k] = absorb_unit[k] / ext;
    /* the sun: high, on the left, beyond the scene (its glints on liquid facing up) */
    float sun[3], fh[3] = {v.f[0], 0, v.f[2]};
    pbfapp_normalize3(fh);
    for (int k = 0; k < 3; ++k) sun[k] = -0.3f * v.s[k] + 0.6f * fh[k];
    sun[1] += 1.0f;
    pbfapp_normalize3(sun);
    memcpy(c.sun, sun, sizeof sun);
    c.refract_px = 0.5f * v.focal;

    const int nv = m->vertex_count, nt = m->triangle_count;
    const int nbands = (h + BAND_ROWS - 1) / BAND_ROWS;
    svert *sv = malloc((size_t)nv * sizeof *sv);
    stri *tri = malloc((size_t)nt * sizeof *tri);
    int *start = calloc((size_t)nbands + 1, sizeof *start);
    unsigned char *under = malloc((size_t)w * (size_t)h * 3);
    if (!sv || !tri || !start || !under) {
        free(sv);
        free(tri);
        free(start);
        free(under);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory rendering a mesh of %d triangles",
                           nt);
    }
    memcpy(under, img->rgb, (size_t)w * (size_t)h * 3);
    c.under = under;
    c.sv = sv;
    c.tri = tri;
    project_vertices(&v, m, sv);
    pbf_status st = PBF_OK;
    setup_triangles(&c, m, sv, tri);
    /* Bands: count, prefix sums, fill in triangle order. */
    const int band_samples = BAND_ROWS * SS;
    for (int t = 0; t < nt; ++t) {
        if (tri[t].area == 0) continue;
        for (int b = tri[t].j0 / band_samples; b <= tri[t].j1 / band_samples; ++b) ++start[b + 1];
    }
    for (int b = 0; b < nbands; ++b) start[b + 1] += start[b];
    int *list = malloc(((size_t)start[nbands] + 1) * sizeof *list);
    int *fill = malloc((size_t)nbands * sizeof *fill);
    if (!list || !fill) {
        st = pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory rendering a mesh of %d triangles",
                         nt);
    } else {
        memcpy(fill, start, (size_t)nbands * sizeof *fill);
        for (int t = 0; t < nt; ++t) {
            if (tri[t].area == 0) continue;
            for (int b = tri[t].j0 / band_samples; b <= tri[t].j1 / band_samples; ++b)
                list[fill[b]++] = t;
        }
        int failed = 0;
#ifdef _OPENMP
#pragma omp parallel
#endif
        {
            const size_t nsamp = (size_t)band_samples * (size_t)c.ws;
            float *depth = malloc(nsamp * sizeof *depth);
            float *floor_d = malloc(nsamp * sizeof *floor_d);
            float *thick = malloc(nsamp * sizeof *thick);
            int *front = malloc(nsamp * sizeof *front);
            int ok = depth && floor_d && thick && front;
            if (!ok) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
                failed = 1;
            }
#ifdef _OPENMP
#pragma omp for schedule(monotonic : dynamic, 1)
#endif
            for (int b = 0; b < nbands; ++b) {
                if (!ok) continue;
                int y_hi = (b + 1) * BAND_ROWS < h ? (b + 1) * BAND_ROWS : h;
                surface_band(&c, img, list + start[b], start[b + 1] - start[b], b * BAND_ROWS,
                             y_hi, depth, floor_d, thick, front);
            }
            free(depth);
            free(floor_d);
            free(thick);
            free(front);
        }
        if (failed)
            st = pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY,
                             "out of memory rendering a mesh of %d triangles", nt);
    }
    free(list);
    free(fill);
    free(sv);
    free(tri);
    free(start);
    free(under);
    return st;
}
