/* Headless software renderer and PNG writer (see render.h). */
#define _POSIX_C_SOURCE 200809L

#include "render/render.h"
#include "render/render_view.h"
#include "io/util.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render/font5x9.h"


pbf_status pbfapp_image_init(pbfapp_image *img, int width, int height, pbf_error *err) {
    memset(img, 0, sizeof *img);
    if (width < PBFAPP_IMAGE_MIN_SIZE || height < PBFAPP_IMAGE_MIN_SIZE ||
        width > PBFAPP_IMAGE_MAX_SIZE || height > PBFAPP_IMAGE_MAX_SIZE)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                    "image size %dx%d: width and height must be in [%d, %d]", width, height,
                    PBFAPP_IMAGE_MIN_SIZE, PBFAPP_IMAGE_MAX_SIZE);
    size_t n = (size_t)width * (size_t)height;
    img->rgb = malloc(n * 3);
    img->depth = malloc(n * sizeof *img->depth);
    if (!img->rgb || !img->depth) {
        pbfapp_image_free(img);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory for a %dx%d image", width, height);
    }
    img->width = width;
    img->height = height;
    return PBF_OK;
}

void pbfapp_image_free(pbfapp_image *img) {
    if (!img) return;
    free(img->rgb);
    free(img->depth);
    memset(img, 0, sizeof *img);
}

float pbfapp_render_vmax(const pbf_world_def *def) {
    double g =
        sqrt((double)def->gravity.x * def->gravity.x + (double)def->gravity.y * def->gravity.y +
             (double)def->gravity.z * def->gravity.z);
    double h = (double)def->domain_max.y - (double)def->domain_min.y;
    double v = sqrt(2.0 * g * (h > 0 ? h : 0));
    return v > 1e-6 && isfinite(v) ? (float)v : 1.0f;
}

/* ---- camera ------------------------------------------------------------------------------- */

int pbfapp_render_project(const pbf_camera *camera, int width, int height, const float p[3],
                          float *sx, float *sy, float *dist, float *focal) {
    pbfapp_view v;
    pbfapp_make_view(camera, width, height, &v);
    float ex, ey, d;
    pbfapp_to_eye(&v, p, &ex, &ey, &d);
    *dist = d;
    *focal = v.focal;
    if (!(d > PBFAPP_NEAR_PLANE)) return 0;
    *sx = v.cx + v.focal * ex / d;
    *sy = v.cy - v.focal * ey / d;
    return 1;
}

/* ---- pixels ------------------------------------------------------------------------------- */

static unsigned char to_u8(float v) {
    if (!(v > 0)) return 0;
    if (v >= 1) return 255;
    return (unsigned char)(v * 255.0f + 0.5f);
}

static void put(pbfapp_image *img, int x, int y, const float rgb[3]) {
    if (x < 0 || y < 0 || x >= img->width || y >= img->height) return;
    unsigned char *p = img->rgb + ((size_t)y * (size_t)img->width + (size_t)x) * 3;
    p[0] = to_u8(rgb[0]);
    p[1] = to_u8(rgb[1]);
    p[2] = to_u8(rgb[2]);
}

static const float bg_top[3] = {0.97f, 0.98f, 0.99f};
static const float bg_bottom[3] = {0.74f, 0.78f, 0.84f};

static void draw_background(pbfapp_image *img) {
    const int w = img->width, h = img->height;
    for (int y = 0; y < h; ++y) {
        float t = h > 1 ? (float)y / (float)(h - 1) : 0;
        unsigned char c[3];
        for (int k = 0; k < 3; ++k) c[k] = to_u8(bg_top[k] + (bg_bottom[k] - bg_top[k]) * t);
        unsigned char *row = img->rgb + (size_t)y * (size_t)w * 3;
        float *drow = img->depth + (size_t)y * (size_t)w;
        for (int x = 0; x < w; ++x) {
            row[3 * x] = c[0];
            row[3 * x + 1] = c[1];
            row[3 * x + 2] = c[2];
            drow[x] = INFINITY;
        }
    }
}

/* A "nice" tile size (1, 2 or 5 times a power of ten) giving about 16 tiles along `extent`. */
static float tile_size(float extent) {
    float raw = extent / 16.0f;
    if (!(raw > 0)) return 1;
    float p = powf(10.0f, floorf(log10f(raw)));
    float m = raw / p;
    return p * (m < 1.5f ? 1.0f : m < 3.5f ? 2.0f : 5.0f);
}

/* The floor y = domain_min.y inside the box: ray cast per pixel, rows split among threads. */
static void draw_floor(pbfapp_image *img, const pbfapp_view *v, const pbfapp_render_input *in) {
    const float *lo = in->domain_min, *hi = in->domain_max;
    float ext = hi[0] - lo[0] > hi[2] - lo[2] ? hi[0] - lo[0] : hi[2] - lo[2];
    const float tile = tile_size(ext);
    const float ca[3] = {0.86f, 0.87f, 0.88f}, cb[3] = {0.78f, 0.80f, 0.82f};
    const int w = img->width, h = img->height;
    if (!(v->pos[1] > lo[1])) return; /* seen from below: no floor */
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            float a = ((float)x + 0.5f - v->cx) / v->focal;
            float b = -((float)y + 0.5f - v->cy) / v->focal;
            float dir[3];
            for (int k = 0; k < 3; ++k) dir[k] = v->f[k] + a * v->s[k] + b * v->u[k];
            if (!(dir[1] < 0)) continue;
            float t = (lo[1] - v->pos[1]) / dir[1]; /* distance along the view axis */
            if (!(t > PBFAPP_NEAR_PLANE)) continue;
            float hx = v->pos[0] + t * dir[0], hz = v->pos[2] + t * dir[2];
            if (hx < lo[0] || hx > hi[0] || hz < lo[2] || hz > hi[2]) continue;
            long ix = (long)floorf((hx - lo[0]) / tile), iz = (long)floorf((hz - lo[2]) / tile);
            const float *c = ((ix + iz) & 1) ? cb : ca;
            size_t idx = (size_t)y * (size_t)w + (size_t)x;
            img->depth[idx] = t;
            put(img, x, y, c);
        }
    }
}

/* ---- obstacles ---------------------------------------------------------------------------- */

/* The colour of face `face` (pbfapp_boxes_depth) of a solid box: a clay orange lit by the light
 * of the spheres (upper left, in front of the eye), so each of its faces has its own shade. */
static void box_face_colour(const pbfapp_view *v, int face, float out[3]) {
    static const float base[3] = {0.86f, 0.47f, 0.22f};
    const int axis = (face % 6) / 2, side = face % 2;
    float n[3] = {0, 0, 0};
    n[axis] = side ? 1.0f : -1.0f;
    /* the light's direction in the world: eye x = s, y = u, z = -f (the eye looks along f) */
    float L[3];
    for (int k = 0; k < 3; ++k) L[k] = -0.35f * v->s[k] + 0.55f * v->u[k] - 0.75f * v->f[k];
    pbfapp_normalize3(L);
    float diff = pbfapp_dot3(n, L);
    if (diff < 0) diff = 0;
    const float lit = 0.38f + 0.62f * diff;
    for (int k = 0; k < 3; ++k) out[k] = base[k] * lit; /* < 1 */
}

/* Obstacles and moving walls as solid boxes: per pixel the nearest box face in front of what the
 * depth buffer holds (the floor), shaded per face, into the depth buffer so that spheres and
 * the surface behind a box are hidden by it and those in front hide it. Rows split among
 * threads; each pixel on its own. */
static void draw_solid_boxes(pbfapp_image *img, const pbfapp_view *v,
                             const pbfapp_render_input *in) {
    if (in->box_count <= 0 || !in->boxes) return;
    const int w = img->width, h = img->height;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            int face;
            float t = pbfapp_boxes_depth(v, in->boxes, in->box_count, (float)x + 0.5f,
                                         (float)y + 0.5f, &face);
            size_t idx = (size_t)y * (size_t)w + (size_t)x;
            if (face < 0 || !(t < img->depth[idx])) continue;
            float c[3];
            box_face_colour(v, face, c);
            img->depth[idx] = t;
            put(img, x, y, c);
        }
}

/* ---- spheres ------------------------------------------------------------------------------ */

typedef struct splat {
    float sx, sy, rs, d; /* screen centre, screen radius (pixels), view distance */
    float rgb[3];
} splat;

#define BAND_ROWS 16

/* Light from the upper left, in front; the viewer along +z (eye space). */
typedef struct lighting {
    float L[3], H[3];
} lighting;

static void make_lighting(lighting *l) {
    float L[3] = {-0.35f, 0.55f, 0.75f};
    pbfapp_normalize3(L);
    float H[3] = {L[0], L[1], L[2] + 1.0f};
    pbfapp_normalize3(H);
    memcpy(l->L, L, sizeof L);
    memcpy(l->H, H, sizeof H);
}

static float clamp01f(float v) {
    return v > 0 ? (v < 1 ? v : 1) : 0;
}

/* Blinn-Phong colour of sphere s at pixel (x, y); outside its disc the silhouette's normal. */
static void shade_pixel(const splat *s, const lighting *l, int x, int y, float out[3]) {
    const float inv = 1.0f / s->rs;
    float dx = ((float)x + 0.5f - s->sx) * inv, dy = ((float)y + 0.5f - s->sy) * inv;
    float q = dx * dx + dy * dy;
    if (q > 1) {
        float k = 1.0f / sqrtf(q);
        dx *= k;
        dy *= k;
        q = 1;
    }
    float nz = sqrtf(1.0f - q);
    float nv[3] = {dx, -dy, nz};
    float diff = pbfapp_dot3(nv, l->L);
    if (diff < 0) diff = 0;
    float nh = pbfapp_dot3(nv, l->H);
    float spec = 0;
    if (nh > 0) { /* nh^48 = nh^32 * nh^16 */
        float p2 = nh * nh, p4 = p2 * p2, p8 = p4 * p4, p16 = p8 * p8;
        spec = p16 * p16 * p16;
    }
    float lit = 0.30f + 0.70f * diff;
    for (int k = 0; k < 3; ++k) out[k] = clamp01f(s->rgb[k] * lit + 0.35f * spec);
}

/* Band rows [y_lo, y_hi), anti-aliased by coverage. A sphere covers a pixel by
 * c = clamp(rs + 1/2 - dist, 0, 1) (dist: pixel centre to disc centre, in pixels; the area of the
 * pixel inside a straight edge at that distance). First the depth pass in drawing order: per
 * pixel the nearest sphere that covers it fully (c = 1) against the depth buffer (`solid`), and
 * the nearest sphere that covers it partly (`edge`, with its depth). Then one shading per pixel:
 * the solid sphere's colour (or the floor or background already there), with the edge sphere, if
 * it is in front, blended over it by its coverage: silhouettes get intermediate values. */
static void shade_band(pbfapp_image *img, int *solid, int *edge, float *edge_depth,
                       const splat *sp, const int *list, int n, int y_lo, int y_hi, float radius) {
    const int w = img->width;
    for (int k = 0; k < n; ++k) {
        const splat *s = &sp[list[k]];
        const float ext = s->rs + 0.5f, ext2 = ext * ext;
        /* c = 1 where dist <= rs - 1/2 */
        const float full2 = s->rs > 0.5f ? (s->rs - 0.5f) * (s->rs - 0.5f) : -1.0f;
        const float inv2 = 1.0f / (s->rs * s->rs);
        int y0 = (int)floorf(s->sy - ext), y1 = (int)ceilf(s->sy + ext);
        int x0 = (int)floorf(s->sx - ext), x1 = (int)ceilf(s->sx + ext);
        if (y0 < y_lo) y0 = y_lo;
        if (y1 > y_hi - 1) y1 = y_hi - 1;
        if (x0 < 0) x0 = 0;
        if (x1 > w - 1) x1 = w - 1;
        for (int y = y0; y <= y1; ++y) {
            float dy = (float)y + 0.5f - s->sy;
            float dy2 = dy * dy;
            if (dy2 >= ext2) continue;
            size_t row = (size_t)y * (size_t)w;
            for (int x = x0; x <= x1; ++x) {
                float dx = (float)x + 0.5f - s->sx;
                float dist2 = dx * dx + dy2;
                if (dist2 >= ext2) continue;
                float q = dist2 * inv2;
                float depth = q < 1 ? s->d - radius * sqrtf(1.0f - q) : s->d;
                const size_t i = row + (size_t)x;
                if (dist2 <= full2) {
                    if (depth < img->depth[i]) {
                        img->depth[i] = depth;
                        solid[i] = list[k];
                    }
                } else if (depth < edge_depth[i]) {
                    edge_depth[i] = depth;
                    edge[i] = list[k];
                }
            }
        }
    }
    lighting l;
    make_lighting(&l);
    for (int y = y_lo; y < y_hi; ++y) {
        size_t row0 = (size_t)y * (size_t)w;
        unsigned char *row = img->rgb + row0 * 3;
        for (int x = 0; x < w; ++x) {
            size_t i = row0 + (size_t)x;
            int e = edge[i] >= 0 && edge_depth[i] < img->depth[i] ? edge[i] : -1;
            if (solid[i] < 0 && e < 0) continue;
            float c[3];
            if (solid[i] >= 0) {
                shade_pixel(&sp[solid[i]], &l, x, y, c);
            } else {
                for (int k = 0; k < 3; ++k) c[k] = (float)row[3 * x + k] / 255.0f;
            }
            if (e >= 0) {
                const splat *s = &sp[e];
                float dx = (float)x + 0.5f - s->sx, dy = (float)y + 0.5f - s->sy;
                float cover = clamp01f(s->rs + 0.5f - sqrtf(dx * dx + dy * dy));
                float ec[3];
                shade_pixel(s, &l, x, y, ec);
                for (int k = 0; k < 3; ++k) c[k] = cover * ec[k] + (1.0f - cover) * c[k];
                if (cover >= 0.5f) img->depth[i] = edge_depth[i];
            }
            row[3 * x] = to_u8(c[0]);
            row[3 * x + 1] = to_u8(c[1]);
            row[3 * x + 2] = to_u8(c[2]);
        }
    }
}

static pbf_status draw_spheres(pbfapp_image *img, const pbfapp_view *v, const pbfapp_render_input *in,
                               pbf_error *err) {
    const int n = in->count, h = img->height, w = img->width;
    if (n <= 0) return PBF_OK;
    splat *sp = malloc((size_t)n * sizeof *sp);
    const int nbands = (h + BAND_ROWS - 1) / BAND_ROWS;
    int *start = calloc((size_t)nbands + 1, sizeof *start);
    const size_t npix = (size_t)w * (size_t)h;
    int *solid = malloc(npix * sizeof *solid);
    int *edge = malloc(npix * sizeof *edge);
    float *edge_depth = malloc(npix * sizeof *edge_depth);
    if (!sp || !start || !solid || !edge || !edge_depth) {
        free(sp);
        free(start);
        free(solid);
        free(edge);
        free(edge_depth);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory rendering %d particles", n);
    }
    const float r = in->radius;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int k = 0; k < n; ++k) {
        int i = in->order ? (int)in->order[k] : k;
        float p[3] = {in->x[i], in->y[i], in->z[i]};
        float ex, ey, d;
        pbfapp_to_eye(v, p, &ex, &ey, &d);
        splat *s = &sp[k];
        s->rs = 0;
        if (!(d - r > PBFAPP_NEAR_PLANE) || !isfinite(ex) || !isfinite(ey)) continue;
        s->d = d;
        s->sx = v->cx + v->focal * ex / d;
        s->sy = v->cy - v->focal * ey / d;
        s->rs = v->focal * r / d;
        const float ext = s->rs + 0.5f; /* coverage reaches half a pixel past the disc */
        if (s->sx + ext < 0 || s->sx - ext > (float)w || s->sy + ext < 0 || s->sy - ext > (float)h)
            s->rs = 0;
        float speed = 0;
        if (in->vx && in->vy && in->vz)
            speed = sqrtf(in->vx[i] * in->vx[i] + in->vy[i] * in->vy[i] + in->vz[i] * in->vz[i]);
        float rho = in->density ? in->density[i] : in->rest_density;
        float t = pbf_color_value(in->color, rho, speed, in->range);
        pbf_colormap(in->color, t, s->rgb);
    }
    /* Bands of rows: count, prefix sums, fill (in drawing order). */
    for (int k = 0; k < n; ++k) {
        if (!(sp[k].rs > 0)) continue;
        int b0 = (int)floorf(sp[k].sy - sp[k].rs - 0.5f),
            b1 = (int)ceilf(sp[k].sy + sp[k].rs + 0.5f);
        b0 = b0 < 0 ? 0 : b0 >= h ? nbands - 1 : b0 / BAND_ROWS;
        b1 = b1 < 0 ? 0 : b1 >= h ? nbands - 1 : b1 / BAND_ROWS;
        for (int b = b0; b <= b1; ++b) ++start[b + 1];
    }
    for (int b = 0; b < nbands; ++b) start[b + 1] += start[b];
    int *list = malloc(((size_t)start[nbands] + 1) * sizeof *list);
    int *fill = malloc((size_t)nbands * sizeof *fill);
    if (!list || !fill) {
        free(sp);
        free(start);
        free(solid);
        free(edge);
        free(edge_depth);
        free(list);
        free(fill);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "out of memory rendering %d particles", n);
    }
    memcpy(fill, start, (size_t)nbands * sizeof *fill);
    for (int k = 0; k < n; ++k) {
        if (!(sp[k].rs > 0)) continue;
        int b0 = (int)floorf(sp[k].sy - sp[k].rs - 0.5f),
            b1 = (int)ceilf(sp[k].sy + sp[k].rs + 0.5f);
        b0 = b0 < 0 ? 0 : b0 >= h ? nbands - 1 : b0 / BAND_ROWS;
        b1 = b1 < 0 ? 0 : b1 >= h ? nbands - 1 : b1 / BAND_ROWS;
        for (int b = b0; b <= b1; ++b) list[fill[b]++] = k;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(monotonic : dynamic, 1)
#endif
    for (int b = 0; b < nbands; ++b) {
        int y_hi = (b + 1) * BAND_ROWS < h ? (b + 1) * BAND_ROWS : h;
        for (size_t i = (size_t)b * BAND_ROWS * (size_t)w; i < (size_t)y_hi * (size_t)w; ++i) {
            solid[i] = -1;
            edge[i] = -1;
            edge_depth[i] = INFINITY;
        }
        shade_band(img, solid, edge, edge_depth, sp, list + start[b], start[b + 1] - start[b],
                   b * BAND_ROWS, y_hi, r);
    }
    free(solid);
    free(edge);
    free(edge_depth);
    free(sp);
    free(start);
    free(list);
    free(fill);
    return PBF_OK;
}

/* ---- lines -------------------------------------------------------------------------------- */

/* A 3-D segment, clipped to the near plane, drawn with a square brush of `th` pixels; a pixel is
 * drawn where the segment is not behind what the depth buffer holds (lines do not write depth). */
static void draw_line3(pbfapp_image *img, const pbfapp_view *v, const float a[3], const float b[3], int th,
                       const float rgb[3]) {
    float ax, ay, ad, bx, by, bd;
    pbfapp_to_eye(v, a, &ax, &ay, &ad);
    pbfapp_to_eye(v, b, &bx, &by, &bd);
    const float nearp = 1e-3f;
    if (ad < nearp && bd < nearp) return;
    if (ad < nearp || bd < nearp) {
        float t = (nearp - ad) / (bd - ad);
        float cx = ax + (bx - ax) * t, cy = ay + (by - ay) * t;
        if (ad < nearp) {
            ax = cx;
            ay = cy;
            ad = nearp;
        } else {
            bx = cx;
            by = cy;
            bd = nearp;
        }
    }
    float x0 = v->cx + v->focal * ax / ad, y0 = v->cy - v->focal * ay / ad;
    float x1 = v->cx + v->focal * bx / bd, y1 = v->cy - v->focal * by / bd;
    float len = fabsf(x1 - x0) > fabsf(y1 - y0) ? fabsf(x1 - x0) : fabsf(y1 - y0);
    if (!isfinite(len) || len > 1e5f) return;
    int steps = (int)ceilf(len) + 1;
    float ia = 1.0f / ad, ib = 1.0f / bd;
    const int w = img->width, h = img->height;
    for (int k = 0; k <= steps; ++k) {
        float t = (float)k / (float)steps;
        float px = x0 + (x1 - x0) * t, py = y0 + (y1 - y0) * t;
        float depth = 1.0f / (ia + (ib - ia) * t);
        int cx = (int)floorf(px - 0.5f * (float)(th - 1)),
            cy = (int)floorf(py - 0.5f * (float)(th - 1));
        for (int oy = 0; oy < th; ++oy)
            for (int ox = 0; ox < th; ++ox) {
                int x = cx + ox, y = cy + oy;
                if (x < 0 || y < 0 || x >= w || y >= h) continue;
                float zb = img->depth[(size_t)y * (size_t)w + (size_t)x];
                if (depth <= zb * 1.002f + 1e-4f) put(img, x, y, rgb);
            }
    }
}

static void draw_box_edges(pbfapp_image *img, const pbfapp_view *v, const float lo[3], const float hi[3],
                           int th, const float rgb[3]) {
    for (int e = 0; e < 12; ++e) {
        /* Edge e runs along axis e / 4; the other two axes take the corners of bits of e % 4. */
        int axis = e / 4, bits = e % 4;
        int o1 = (axis + 1) % 3, o2 = (axis + 2) % 3;
        float a[3], b[3];
        a[axis] = lo[axis];
        b[axis] = hi[axis];
        a[o1] = b[o1] = (bits & 1) ? hi[o1] : lo[o1];
        a[o2] = b[o2] = (bits & 2) ? hi[o2] : lo[o2];
        draw_line3(img, v, a, b, th, rgb);
    }
}

/* ---- text --------------------------------------------------------------------------------- */

void pbfapp_render_text(pbfapp_image *img, int x, int y, int scale, const char *text,
                        const float rgb[3]) {
    if (scale < 1) scale = 1;
    const int x_start = x;
    for (const char *c = text; *c; ++c) {
        if (*c == '\n') {
            x = x_start;
            y += PBFAPP_FONT_LINE * scale;
            continue;
        }
        const pbfapp_glyph *g = pbfapp_font_glyph((unsigned char)*c);
        for (int r = 0; g && r < PBFAPP_FONT_GLYPH_H; ++r)
            for (int col = 0; col < PBFAPP_FONT_GLYPH_W; ++col)
                if (pbfapp_font_ink(g, col, r))
                    for (int sy = 0; sy < scale; ++sy)
                        for (int sx = 0; sx < scale; ++sx)
                            put(img, x + col * scale + sx, y + r * scale + sy, rgb);
        x += PBFAPP_FONT_ADVANCE * scale;
    }
}

static void draw_text(pbfapp_image *img, int x, int y, int scale, const char *text,
                      const float rgb[3]) {
    pbfapp_render_text(img, x, y, scale, text, rgb);
}

static int text_width(const char *text, int scale) {
    int n = (int)strlen(text);
    return n > 0 ? (PBFAPP_FONT_ADVANCE * n - 1) * scale : 0;
}

static void fill_rect(pbfapp_image *img, int x0, int y0, int x1, int y1, const float rgb[3]) {
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) put(img, x, y, rgb);
}

/* A legend label: 4 significant digits, no exponent for the usual magnitudes. */
static void legend_number(char *buf, size_t size, float v) {
    double a = fabs((double)v);
    if (a >= 1e5 || (a > 0 && a < 1e-3))
        snprintf(buf, size, "%.3g", (double)v);
    else if (a >= 100)
        snprintf(buf, size, "%.0f", (double)v);
    else
        snprintf(buf, size, "%.4g", (double)v);
}

static void draw_legend(pbfapp_image *img, const pbfapp_render_input *in, int scale) {
    static const float ink[3] = {0.10f, 0.11f, 0.14f};
    char title[64], lo[32], hi[32];
    switch (in->color) {
    case PBF_COLOR_DENSITY: snprintf(title, sizeof title, "density (kg/m3)"); break;
    case PBF_COLOR_SPEED: snprintf(title, sizeof title, "speed (m/s)"); break;
    case PBF_COLOR_WATER:
    default: snprintf(title, sizeof title, "water: speed (m/s)"); break;
    }
    legend_number(lo, sizeof lo, in->range[0]);
    legend_number(hi, sizeof hi, in->range[1]);
    const int w = img->width, h = img->height, m = 8 * scale;
    int bw = 100 * scale;
    if (bw > w / 3) bw = w / 3;
    const int bh = 8 * scale;
    const int bx = w - m - bw;
    const int by = h - m - PBFAPP_FONT_GLYPH_H * scale - 3 * scale - bh;
    draw_text(img, w - m - text_width(title, scale), by - (PBFAPP_FONT_GLYPH_H + 2) * scale, scale,
              title, ink);
    fill_rect(img, bx - 1, by - 1, bx + bw + 1, by + bh + 1, ink);
    for (int x = 0; x < bw; ++x) {
        float rgb[3];
        pbf_colormap(in->color, bw > 1 ? (float)x / (float)(bw - 1) : 0, rgb);
        fill_rect(img, bx + x, by, bx + x + 1, by + bh, rgb);
    }
    draw_text(img, bx, by + bh + 3 * scale, scale, lo, ink);
    draw_text(img, bx + bw - text_width(hi, scale), by + bh + 3 * scale, scale, hi, ink);
}

/* ---- the whole picture -------------------------------------------------------------------- */

pbf_status pbfapp_render(const pbfapp_render_input *in, pbfapp_image *img, pbf_error *err) {
    if (!in || !img || !img->rgb || !img->depth)
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "render: NULL argument");
    if (in->count < 0 || (in->count > 0 && (!in->x || !in->y || !in->z)))
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "render: %d particles with NULL position arrays",
                    in->count);
    pbfapp_view v;
    pbfapp_make_view(&in->camera, img->width, img->height, &v);
    draw_background(img);
    if (!(in->flags & PBFAPP_RENDER_NO_FLOOR)) draw_floor(img, &v, in);
    draw_solid_boxes(img, &v, in);
    pbf_status st =
        in->mesh ? pbfapp_render_surface(in, img, err) : draw_spheres(img, &v, in, err);
    if (st != PBF_OK) return st;
    int scale = (img->height + 180) / 360;
    if (scale < 1) scale = 1;
    if (!(in->flags & PBFAPP_RENDER_NO_LINES)) {
        const int th = img->height >= 540 ? 2 : 1;
        static const float edge[3] = {0.22f, 0.24f, 0.28f};
        static const float obstacle[3] = {0.42f, 0.19f, 0.06f}; /* the solids' edges */
        draw_box_edges(img, &v, in->domain_min, in->domain_max, th, edge);
        for (int b = 0; b < in->box_count; ++b)
            draw_box_edges(img, &v, in->boxes[b].min, in->boxes[b].max, th, obstacle);
    }
    if (!(in->flags & PBFAPP_RENDER_NO_TEXT)) {
        static const float ink[3] = {0.10f, 0.11f, 0.14f};
        char line[160];
        snprintf(line, sizeof line, "t = %.3f s", in->time);
        draw_text(img, 8 * scale, 8 * scale, scale, line, ink);
        if (in->title && in->title[0]) {
            snprintf(line, sizeof line, "%.60s", in->title);
            draw_text(img, 8 * scale, 8 * scale + PBFAPP_FONT_LINE * scale, scale, line, ink);
        }
        if (!in->mesh) draw_legend(img, in, scale);
    }
    return PBF_OK;
}

/* ---- PNG ---------------------------------------------------------------------------------- */

typedef struct png_errbuf {
    char message[256];
} png_errbuf;

static void png_error_fn(png_structp png, png_const_charp msg) {
    png_errbuf *e = png_get_error_ptr(png);
    if (e) snprintf(e->message, sizeof e->message, "%s", msg ? msg : "libpng error");
    png_longjmp(png, 1);
}

static void png_warning_fn(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

pbf_status pbfapp_write_png(const char *path, const pbfapp_image *img, pbf_error *err) {
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof tmp) return pbfapp_fail(err, PBF_ERR_IO, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    png_errbuf ebuf;
    ebuf.message[0] = '\0';
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &ebuf, png_error_fn, png_warning_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        fclose(f);
        unlink(tmp);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory for the PNG writer", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        unlink(tmp);
        return pbfapp_fail(err, PBF_ERR_IO, "%s: PNG write failed: %s", tmp, ebuf.message);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 3);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
    png_write_info(png, info);
    for (int y = 0; y < img->height; ++y)
        png_write_row(png, img->rgb + (size_t)y * (size_t)img->width * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return pbfapp_commit_file(f, tmp, path, err);
}
