/*
 * The headless renderer (app/render/render.c) on tiny synthetic inputs, and its helpers: colour ramps,
 * the default camera, PNG files read back with libpng, the frame readers of `pbf render` and the
 * scene.json that `pbf run` writes for it.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <png.h>
#include <stdint.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "camera.h"
#include "colormap.h"
#include "font.h" /* app/viewer: the overlay's font texture */
#include "frame_read.h"
#include "mesh.h"
#include "output.h"
#include "render.h"
#include "scene.h"

enum { W = 160, H = 120 };

/* A camera on the +z axis looking at the origin: x right, y up. */
static pbf_camera front_camera(void) {
    pbf_camera c = {{0, 0, 5}, {0, 0, 0}, {0, 1, 0}, 30};
    return c;
}

static pbfapp_render_input plain_input(int n, const float *x, const float *y, const float *z,
                                       float radius) {
    pbfapp_render_input in;
    memset(&in, 0, sizeof in);
    in.count = n;
    in.x = x;
    in.y = y;
    in.z = z;
    in.radius = radius;
    for (int a = 0; a < 3; ++a) {
        in.domain_min[a] = -1;
        in.domain_max[a] = 1;
    }
    in.color = PBF_COLOR_WATER;
    in.rest_density = 1000;
    in.range[0] = 0; /* water: speed 0..1 m/s */
    in.range[1] = 1;
    in.camera = front_camera();
    in.flags = PBFAPP_RENDER_NO_FLOOR | PBFAPP_RENDER_NO_LINES | PBFAPP_RENDER_NO_TEXT;
    return in;
}

static void test_colormap(void) {
    ENSURE_EQ_INT(pbf_color_field_from_name("water"), PBF_COLOR_WATER);
    ENSURE_EQ_INT(pbf_color_field_from_name("density"), PBF_COLOR_DENSITY);
    ENSURE_EQ_INT(pbf_color_field_from_name("speed"), PBF_COLOR_SPEED);
    ENSURE_EQ_INT(pbf_color_field_from_name("Speed"), -1);
    ENSURE_EQ_INT(pbf_color_field_from_name(""), -1);
    for (int f = 0; f < 3; ++f)
        ENSURE_EQ_INT(pbf_color_field_from_name(pbf_color_field_name((pbf_color_field)f)), f);
    float a[3], b[3];
    for (int f = 0; f < 3; ++f) {
        /* clamped: below 0 is 0, above 1 is 1; every component in [0, 1] */
        pbf_colormap((pbf_color_field)f, -3.0f, a);
        pbf_colormap((pbf_color_field)f, 0.0f, b);
        ENSURE(memcmp(a, b, sizeof a) == 0);
        pbf_colormap((pbf_color_field)f, 7.0f, a);
        pbf_colormap((pbf_color_field)f, 1.0f, b);
        ENSURE(memcmp(a, b, sizeof a) == 0);
        for (int k = 0; k <= 20; ++k) {
            pbf_colormap((pbf_color_field)f, (float)k / 20.0f, a);
            for (int c = 0; c < 3; ++c) ENSURE(a[c] >= 0.0f && a[c] <= 1.0f);
        }
    }
    /* water: deep blue at 0, lighter at 1 */
    pbf_colormap(PBF_COLOR_WATER, 0, a);
    pbf_colormap(PBF_COLOR_WATER, 1, b);
    ENSURE(a[2] > a[0] && a[2] > a[1]);
    ENSURE(b[0] + b[1] + b[2] > a[0] + a[1] + a[2] + 1.0f);
    /* normalisation over the default ranges */
    float rd[2], rs[2], rw[2];
    pbf_color_default_range(PBF_COLOR_DENSITY, 1000, 3, rd);
    pbf_color_default_range(PBF_COLOR_SPEED, 1000, 3, rs);
    pbf_color_default_range(PBF_COLOR_WATER, 1000, 3, rw);
    ENSURE_NEAR(rd[0], 900, 1e-3);
    ENSURE_NEAR(rd[1], 1100, 1e-3);
    ENSURE(rs[0] == 0 && rs[1] == 3 && rw[0] == 0 && rw[1] == 3);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_DENSITY, 1000, 0, rd), 0.5, 1e-6);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_DENSITY, 900, 0, rd), 0.0, 1e-6);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_DENSITY, 1100, 0, rd), 1.0, 1e-6);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_DENSITY, 5000, 0, rd), 1.0, 0);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_SPEED, 0, 1.5f, rs), 0.5, 1e-6);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_SPEED, 0, 9.0f, rs), 1.0, 0);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_WATER, 0, 0.75f, rw), 0.25, 1e-6);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_SPEED, 0, NAN, rs), 0.0, 0);
    /* a given range: the quantity in its own unit, any offset */
    const float r2[2] = {-2.0f, 2.0f};
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_SPEED, 0, 1.0f, r2), 0.75, 1e-6);
    ENSURE_NEAR(pbf_color_value(PBF_COLOR_DENSITY, -2.0f, 99.0f, r2), 0.0, 1e-6);
}

/* --range MIN:MAX parsing and the data-following range of --range auto. */
static void test_color_range(void) {
    float r[2] = {-7, -7};
    ENSURE(pbf_color_parse_range("0:2", r) && r[0] == 0 && r[1] == 2);
    ENSURE(pbf_color_parse_range("950.5:1.05e3", r) && r[0] == 950.5f && r[1] == 1050.0f);
    ENSURE(pbf_color_parse_range("-1:-0.5", r) && r[0] == -1.0f && r[1] == -0.5f);
    const char *bad[] = {"", ":", "1:", ":2", "2:1", "1:1", "1:2:3", "a:b", "1;2", "nan:1",
                         "0:inf", "1e40:1e41", "0:2 ", "auto"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        r[0] = r[1] = -7;
        if (pbf_color_parse_range(bad[k], r))
            test_fail_(__FILE__, __LINE__, "--range \"%s\" was accepted", bad[k]);
        ENSURE(r[0] == -7 && r[1] == -7); /* untouched */
    }
    /* 1st and 99th percentiles of 0, 1, ..., 100 (shuffled): 1 and 99; NaN left out */
    float v[103];
    for (int i = 0; i <= 100; ++i) v[i] = (float)((i * 37) % 101);
    v[101] = NAN;
    v[102] = INFINITY;
    ENSURE(pbf_color_auto_range(v, 103, r));
    ENSURE_NEAR(r[0], 1.0, 1e-5);
    ENSURE_NEAR(r[1], 99.0, 1e-5);
    /* an outlier does not stretch the range: 1000 values near 1000, one at 10 */
    static float d[1001];
    for (int i = 0; i < 1000; ++i) d[i] = 990.0f + (float)(i % 21);
    d[1000] = 10.0f;
    ENSURE(pbf_color_auto_range(d, 1001, r));
    ENSURE(r[0] >= 990.0f && r[1] <= 1010.0f && r[1] > r[0] + 15.0f);
    /* all equal: widened to a non-empty range around them, never below 0 for speeds */
    float c[4] = {1000, 1000, 1000, 1000};
    ENSURE(pbf_color_auto_range(c, 4, r));
    ENSURE(r[0] < 1000 && r[1] > 1000 && r[1] - r[0] < 50);
    float z[3] = {0, 0, 0};
    ENSURE(pbf_color_auto_range(z, 3, r));
    ENSURE(r[0] == 0 && r[1] > 0);
    float none[2] = {NAN, NAN};
    ENSURE(!pbf_color_auto_range(none, 2, r));
    ENSURE(!pbf_color_auto_range(none, 0, r));
    /* the range is what the renderer maps: one sphere of density 1000 is the ramp's bottom
     * colour with the range [1000, 1100] and its top colour with [900, 1000] */
    const float x = 0, y = 0, zz = 0, rho = 1000;
    pbfapp_render_input in = plain_input(1, &x, &y, &zz, 0.3f);
    in.density = &rho;
    in.color = PBF_COLOR_DENSITY;
    pbfapp_image lo_img, hi_img;
    ENSURE(pbfapp_image_init(&lo_img, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&hi_img, W, H, NULL) == PBF_OK);
    in.range[0] = 1000;
    in.range[1] = 1100;
    ENSURE(pbfapp_render(&in, &lo_img, NULL) == PBF_OK);
    in.range[0] = 900;
    in.range[1] = 1000;
    ENSURE(pbfapp_render(&in, &hi_img, NULL) == PBF_OK);
    const unsigned char *a = lo_img.rgb + ((size_t)(H / 2) * W + W / 2) * 3;
    const unsigned char *b = hi_img.rgb + ((size_t)(H / 2) * W + W / 2) * 3;
    ENSURE(a[2] > a[1]);                   /* viridis bottom: purple, blue above green */
    ENSURE(b[0] > 150 && b[1] > 150 && b[2] < 100); /* viridis top: yellow */
    pbfapp_image_free(&lo_img);
    pbfapp_image_free(&hi_img);
}

/* --camera-pos, --camera-target, --fov: parsing, applying over a camera, checking. */
static void test_camera_options(void) {
    float p[3] = {-7, -7, -7};
    ENSURE(pbf_camera_parse_vec3("1,2,3", p) && p[0] == 1 && p[1] == 2 && p[2] == 3);
    ENSURE(pbf_camera_parse_vec3(" -1.5 , 2e-1,3 ", p) && p[0] == -1.5f && p[1] == 0.2f &&
           p[2] == 3);
    ENSURE(pbf_camera_parse_vec3("0,0,-1000000", p) && p[2] == -1e6f);
    const char *bad[] = {"", "1", "1,2", "1,2,3,4", "1,,3", "a,b,c", "1,2,3x", "nan,0,0",
                         "inf,0,0", "0,1e7,0", "1 2 3", "1;2;3", ",1,2,3"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        p[0] = p[1] = p[2] = -7;
        if (pbf_camera_parse_vec3(bad[k], p))
            test_fail_(__FILE__, __LINE__, "X,Y,Z \"%s\" was accepted", bad[k]);
        ENSURE(p[0] == -7 && p[1] == -7 && p[2] == -7);
    }
    float fov = -1;
    ENSURE(pbf_camera_parse_fov("40", &fov) && fov == 40);
    ENSURE(pbf_camera_parse_fov("1.5", &fov) && fov == 1.5f);
    const char *bad_fov[] = {"", "1", "170", "0", "-5", "200", "abc", "40deg", "nan", "4 0"};
    for (size_t k = 0; k < sizeof bad_fov / sizeof bad_fov[0]; ++k) {
        fov = -1;
        if (pbf_camera_parse_fov(bad_fov[k], &fov))
            test_fail_(__FILE__, __LINE__, "--fov \"%s\" was accepted", bad_fov[k]);
        ENSURE(fov == -1);
    }
    /* each option replaces only its part */
    pbf_camera base = {{0, 0, 5}, {0, 0, 0}, {0, 1, 0}, 30}, c = base;
    pbf_camera_override o;
    memset(&o, 0, sizeof o);
    pbf_camera_apply(&c, &o);
    ENSURE(memcmp(&c, &base, sizeof c) == 0);
    o.has_position = 1;
    o.position[0] = 3;
    o.position[1] = 1;
    o.position[2] = 2;
    pbf_camera_apply(&c, &o);
    ENSURE(c.position[0] == 3 && c.position[1] == 1 && c.position[2] == 2);
    ENSURE(c.target[0] == 0 && c.target[1] == 0 && c.target[2] == 0 && c.fov_deg == 30);
    ENSURE(c.up[1] == 1);
    char msg[300];
    ENSURE(pbf_camera_check(&c, msg, sizeof msg));
    memset(&o, 0, sizeof o);
    o.has_fov = 1;
    o.fov_deg = 60;
    pbf_camera_apply(&c, &o);
    ENSURE(c.fov_deg == 60 && c.position[0] == 3);
    /* where the camera lands in the image: the target at the centre */
    float sx, sy, d, f;
    ENSURE(pbfapp_render_project(&c, W, H, c.target, &sx, &sy, &d, &f));
    ENSURE_NEAR(sx, 0.5 * W, 1e-3);
    ENSURE_NEAR(sy, 0.5 * H, 1e-3);
    /* looking straight down: up becomes -z, and the camera is usable */
    memset(&o, 0, sizeof o);
    o.has_position = o.has_target = 1;
    o.position[1] = 4;
    pbf_camera_apply(&c, &o);
    ENSURE(c.up[0] == 0 && c.up[1] == 0 && c.up[2] == -1);
    ENSURE(pbf_camera_check(&c, msg, sizeof msg));
    float below[3] = {0, -1, 0}, bx, by;
    ENSURE(pbfapp_render_project(&c, W, H, below, &bx, &by, &d, &f));
    ENSURE_NEAR(bx, 0.5 * W, 1e-3); /* straight below the eye: the image centre */
    ENSURE_NEAR(by, 0.5 * H, 1e-3);
    /* the same point twice: refused, with the options named */
    o.position[1] = 0;
    pbf_camera_apply(&c, &o);
    ENSURE(!pbf_camera_check(&c, msg, sizeof msg));
    ENSURE(strstr(msg, "--camera-pos") != NULL && strstr(msg, "same point") != NULL);
}

static void test_camera(void) {
    const float boxes[3][2][3] = {{{0, 0, 0}, {1.6f, 0.8f, 0.6f}},
                                  {{-1, -1, -1}, {1, 1, 1}},
                                  {{0, 0, 0}, {0.1f, 2.0f, 0.1f}}};
    const float aspects[3] = {16.0f / 9.0f, 1.0f, 0.5f};
    for (int b = 0; b < 3; ++b)
        for (int a = 0; a < 3; ++a) {
            const float *lo = boxes[b][0], *hi = boxes[b][1];
            pbf_camera c = pbf_camera_default(lo, hi, aspects[a]);
            /* from the front-right-above */
            ENSURE(c.position[2] > hi[2] && c.position[1] > hi[1] &&
                   c.position[0] > 0.5f * (lo[0] + hi[0]));
            float view[16], proj[16];
            pbf_camera_matrices(&c, aspects[a], 0.01f, 100.0f, view, proj);
            int touches = 0;
            for (int k = 0; k < 8; ++k) {
                float p[4] = {(k & 1) ? hi[0] : lo[0], (k & 2) ? hi[1] : lo[1],
                              (k & 4) ? hi[2] : lo[2], 1};
                float e[4] = {0}, clip[4] = {0};
                for (int r = 0; r < 4; ++r)
                    for (int cc = 0; cc < 4; ++cc) e[r] += view[cc * 4 + r] * p[cc];
                for (int r = 0; r < 4; ++r)
                    for (int cc = 0; cc < 4; ++cc) clip[r] += proj[cc * 4 + r] * e[cc];
                ENSURE(clip[3] > 0);
                float nx = clip[0] / clip[3], ny = clip[1] / clip[3], nz = clip[2] / clip[3];
                ENSURE(fabsf(nx) <= 1.0f && fabsf(ny) <= 1.0f && nz > -1.0f && nz < 1.0f);
                if (fabsf(nx) > 0.8f || fabsf(ny) > 0.8f) touches = 1;
            }
            ENSURE(touches); /* framed well: not a speck in the middle */
            /* the target projects to the image centre */
            int W2 = (int)(aspects[a] * 100), H2 = 100;
            float sx, sy, d, f;
            ENSURE(pbfapp_render_project(&c, W2, H2, c.target, &sx, &sy, &d, &f));
            ENSURE_NEAR(sx, 0.5 * W2, 1e-3);
            ENSURE_NEAR(sy, 0.5 * H2, 1e-3);
        }
}

/* Colour of pixel (x, y). */
static const unsigned char *px(const pbfapp_image *img, int x, int y) {
    return img->rgb + ((size_t)y * (size_t)img->width + (size_t)x) * 3;
}

static void test_spheres_where_projected(void) {
    const float x[3] = {-0.6f, 0.3f, 0.5f}, y[3] = {0.2f, -0.3f, 0.4f}, z[3] = {0, 0.5f, -0.8f};
    const float r = 0.22f;
    pbfapp_image img, bg;
    ENSURE(pbfapp_image_init(&img, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&bg, W, H, NULL) == PBF_OK);
    pbfapp_render_input in = plain_input(3, x, y, z, r);
    ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
    pbfapp_render_input empty = plain_input(0, x, y, z, r);
    ENSURE(pbfapp_render(&empty, &bg, NULL) == PBF_OK);
    /* The background is a vertical gradient: rows differ, columns do not. */
    ENSURE(memcmp(px(&bg, 0, 0), px(&bg, 0, H - 1), 3) != 0);
    ENSURE(memcmp(px(&bg, 0, 7), px(&bg, W - 1, 7), 3) == 0);
    float sx[3], sy[3], rs[3];
    for (int i = 0; i < 3; ++i) {
        float p[3] = {x[i], y[i], z[i]}, d, f;
        ENSURE(pbfapp_render_project(&in.camera, W, H, p, &sx[i], &sy[i], &d, &f));
        rs[i] = r * f / d;
        ENSURE(rs[i] > 3);
    }
    /* Inside: at least a pixel inside the edge of some disc; outside: at least half a pixel
     * beyond every disc's edge (anti-aliasing touches only the pixels in between). */
    int inside = 0, outside = 0;
    for (int j = 0; j < H; ++j)
        for (int i = 0; i < W; ++i) {
            float in_min = 1e30f, out_min = 1e30f;
            for (int k = 0; k < 3; ++k) {
                float dx = (float)i + 0.5f - sx[k], dy = (float)j + 0.5f - sy[k];
                float dist = sqrtf(dx * dx + dy * dy);
                if (dist - (rs[k] - 1.0f) < in_min) in_min = dist - (rs[k] - 1.0f);
                if (dist - (rs[k] + 0.5f) < out_min) out_min = dist - (rs[k] + 0.5f);
            }
            const unsigned char *a = px(&img, i, j), *b = px(&bg, i, j);
            if (in_min < 0) {
                ++inside;
                /* water: blue dominates */
                if (!(memcmp(a, b, 3) != 0 && a[2] > a[0] && a[2] > a[1]))
                    test_fail_(__FILE__, __LINE__, "pixel (%d, %d) inside a disc is %d,%d,%d", i, j,
                               a[0], a[1], a[2]);
                ENSURE(isfinite(img.depth[(size_t)j * W + (size_t)i]));
            } else if (out_min > 0) {
                ++outside;
                if (memcmp(a, b, 3) != 0)
                    test_fail_(__FILE__, __LINE__,
                               "pixel (%d, %d) outside every disc is not "
                               "background",
                               i, j);
                ENSURE(isinf(img.depth[(size_t)j * W + (size_t)i]));
            }
        }
    ENSURE(inside > 300 && outside > 10000);
    pbfapp_image_free(&img);
    pbfapp_image_free(&bg);
}

static void test_near_hides_far(void) {
    /* Two overlapping spheres, the near one (z = 0.5) dense (yellow on viridis), the far one
     * (z = -0.5) light (purple); in either drawing order the near one covers the overlap. */
    const float x[2] = {0.0f, 0.15f}, y[2] = {0.0f, 0.0f}, z[2] = {0.5f, -0.5f};
    const float rho[2] = {1100, 900};
    pbfapp_image a, b;
    ENSURE(pbfapp_image_init(&a, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&b, W, H, NULL) == PBF_OK);
    pbfapp_render_input in = plain_input(2, x, y, z, 0.3f);
    in.density = rho;
    in.color = PBF_COLOR_DENSITY;
    pbf_color_default_range(PBF_COLOR_DENSITY, 1000, 1, in.range);
    ENSURE(pbfapp_render(&in, &a, NULL) == PBF_OK);
    const uint32_t reversed[2] = {1, 0};
    in.order = reversed;
    ENSURE(pbfapp_render(&in, &b, NULL) == PBF_OK);
    ENSURE(memcmp(a.rgb, b.rgb, (size_t)W * H * 3) == 0);
    float sx, sy, d, f;
    float near_c[3] = {x[0], y[0], z[0]}, far_c[3] = {x[1], y[1], z[1]};
    ENSURE(pbfapp_render_project(&in.camera, W, H, near_c, &sx, &sy, &d, &f));
    /* the near sphere's centre: yellow (red and green high, blue low) */
    const unsigned char *c = px(&a, (int)sx, (int)sy);
    ENSURE(c[0] > 150 && c[1] > 150 && c[2] < 100);
    /* a point of the far sphere outside the near disc: purple (blue above green) */
    float fsx, fsy;
    ENSURE(pbfapp_render_project(&in.camera, W, H, far_c, &fsx, &fsy, &d, &f));
    float rs_far = 0.3f * f / d;
    c = px(&a, (int)(fsx + 0.8f * rs_far), (int)fsy);
    ENSURE(c[2] > c[1]);
    pbfapp_image_free(&a);
    pbfapp_image_free(&b);
}

/* A small cloud with floor, lines, text and legend: the same bytes every time, any threads. */
static void test_deterministic(void) {
    enum { N = 500 };
    static float x[N], y[N], z[N], vx[N], vy[N], vz[N], rho[N];
    uint32_t state = 12345u;
    for (int i = 0; i < N; ++i) {
        float u[7];
        for (int k = 0; k < 7; ++k) {
            state = state * 1664525u + 1013904223u;
            u[k] = (float)(state >> 8) / 16777216.0f;
        }
        x[i] = u[0] * 1.6f;
        y[i] = u[1] * 0.5f;
        z[i] = u[2] * 0.6f;
        vx[i] = u[3] - 0.5f;
        vy[i] = u[4] - 0.5f;
        vz[i] = u[5] - 0.5f;
        rho[i] = 950 + 100 * u[6];
    }
    pbfapp_render_box box = {{0.6f, 0, 0.2f}, {0.8f, 0.2f, 0.4f}};
    pbfapp_render_input in = plain_input(N, x, y, z, 0.02f);
    in.vx = vx;
    in.vy = vy;
    in.vz = vz;
    in.density = rho;
    in.flags = 0;
    in.domain_min[0] = in.domain_min[1] = in.domain_min[2] = 0;
    in.domain_max[0] = 1.6f;
    in.domain_max[1] = 0.8f;
    in.domain_max[2] = 0.6f;
    in.boxes = &box;
    in.box_count = 1;
    in.time = 0.25;
    in.title = "test";
    in.camera = pbf_camera_default(in.domain_min, in.domain_max, 320.0f / 180.0f);
    for (int f = 0; f < 3; ++f) {
        in.color = (pbf_color_field)f;
        pbf_color_default_range(in.color, 1000, 1, in.range);
        pbfapp_image a, b;
        ENSURE(pbfapp_image_init(&a, 320, 180, NULL) == PBF_OK);
        ENSURE(pbfapp_image_init(&b, 320, 180, NULL) == PBF_OK);
#ifdef _OPENMP
        omp_set_num_threads(1);
#endif
        ENSURE(pbfapp_render(&in, &a, NULL) == PBF_OK);
#ifdef _OPENMP
        omp_set_num_threads(3);
#endif
        ENSURE(pbfapp_render(&in, &b, NULL) == PBF_OK);
        ENSURE(memcmp(a.rgb, b.rgb, 320 * 180 * 3) == 0);
        /* not empty: many pixels differ from the background alone */
        pbfapp_render_input none = in;
        none.count = 0;
        none.flags = PBFAPP_RENDER_NO_FLOOR | PBFAPP_RENDER_NO_LINES | PBFAPP_RENDER_NO_TEXT;
        ENSURE(pbfapp_render(&none, &b, NULL) == PBF_OK);
        int differ = 0;
        for (int i = 0; i < 320 * 180; ++i)
            if (memcmp(a.rgb + 3 * i, b.rgb + 3 * i, 3) != 0) ++differ;
        ENSURE(differ > 320 * 180 / 10);
        pbfapp_image_free(&a);
        pbfapp_image_free(&b);
    }
}

static void test_png_roundtrip(void) {
    pbfapp_image img;
    ENSURE(pbfapp_image_init(&img, 37, 21, NULL) == PBF_OK);
    for (int i = 0; i < 37 * 21 * 3; ++i) img.rgb[i] = (unsigned char)(i * 7 + 3);
    char path[] = "test_render_png_XXXXXX";
    int fd = mkstemp(path);
    ENSURE(fd >= 0);
    close(fd);
    pbf_error err;
    ENSURE(pbfapp_write_png(path, &img, &err) == PBF_OK);
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    ENSURE(png_image_begin_read_from_file(&pi, path));
    ENSURE_EQ_INT((int)pi.width, 37);
    ENSURE_EQ_INT((int)pi.height, 21);
    pi.format = PNG_FORMAT_RGB;
    unsigned char back[37 * 21 * 3];
    ENSURE(png_image_finish_read(&pi, NULL, back, 0, NULL));
    ENSURE(memcmp(back, img.rgb, sizeof back) == 0);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    ENSURE(access(tmp, F_OK) != 0); /* renamed, nothing left behind */
    unlink(path);
    /* an unwritable place: an error naming the file, no crash */
    ENSURE(pbfapp_write_png("/proc/no/such/dir/x.png", &img, &err) == PBF_ERR_IO);
    ENSURE(strstr(err.message, "/proc/no/such/dir/x.png") != NULL);
    pbfapp_image_free(&img);
    ENSURE(pbfapp_image_init(&img, 8, 100, &err) == PBF_ERR_INVALID_ARGUMENT);
}

/* The readers of `pbf render` give back exactly what the writers of `pbf run` wrote. */
static void test_frame_readers(void) {
    enum { N = 29 };
    float x[N], y[N], z[N], vx[N], vy[N], vz[N], rho[N];
    uint32_t id[N], order[N];
    for (int i = 0; i < N; ++i) {
        id[i] = (uint32_t)((i * 7 + 3) % N);
        x[i] = 0.1f * (float)id[i] + 1.0f / 3.0f;
        y[i] = -0.2f * (float)id[i];
        z[i] = 0.3f;
        vx[i] = 1e-3f * (float)i;
        vy[i] = -2.5f;
        vz[i] = 3.0f / 7.0f;
        rho[i] = 1000.0f + (float)i / 9.0f;
    }
    pbf_particles p = {N, x, y, z, vx, vy, vz, rho, id};
    ENSURE(pbfapp_id_order(&p, order, NULL) == PBF_OK);
    const char *exts[3] = {"vtp", "ply", "csv"};
    for (int e = 0; e < 3; ++e) {
        char path[64];
        snprintf(path, sizeof path, "test_render_frame.%s", exts[e]);
        pbf_error err;
        pbf_status st = e == 0   ? pbfapp_write_vtp(path, &p, order, 0.125, &err)
                        : e == 1 ? pbfapp_write_ply(path, &p, order, 0.125, &err)
                                 : pbfapp_write_csv(path, &p, order, &err);
        ENSURE(st == PBF_OK);
        pbfapp_frame_data f;
        memset(&f, 0, sizeof f);
        ENSURE(pbfapp_read_frame(path, &f, &err) == PBF_OK);
        ENSURE_EQ_INT(f.count, N);
        ENSURE_EQ_INT(f.has_time, e < 2);
        if (e < 2) ENSURE(f.time == 0.125);
        for (int k = 0; k < N; ++k) {
            uint32_t i = order[k];
            ENSURE(f.x[k] == x[i] && f.y[k] == y[i] && f.z[k] == z[i]);
            ENSURE(f.vx[k] == vx[i] && f.vy[k] == vy[i] && f.vz[k] == vz[i]);
            ENSURE(f.density[k] == rho[i]);
            ENSURE_EQ_INT((int)f.id[k], k);
        }
        pbfapp_frame_data_free(&f);
        unlink(path);
    }
    pbfapp_frame_data f;
    memset(&f, 0, sizeof f);
    pbf_error err;
    ENSURE(pbfapp_read_frame("no_such_frame.vtp", &f, &err) == PBF_ERR_IO);
    ENSURE(strstr(err.message, "no_such_frame.vtp") != NULL);
}

/* scene.json written by `pbf run` loads back to the same scene. */
static void test_scene_write_roundtrip(void) {
    const char *text =
        "{\"name\": \"round \\\"trip\\\"\", \"domain_max\": [1.6, 0.8, 0.6], "
        "\"particle_radius\": 0.0075, \"frames\": 7, \"fps\": 30, \"xsph_viscosity\": 0.0123,"
        "\"camera\": {\"position\": [2, 1.5, 3], \"target\": [0.8, 0.2, 0.3], \"fov\": 33.3},"
        "\"obstacles\": [{\"min\": [0.7, 0, 0.2], \"max\": [0.9, 0.1, 0.4]}],"
        "\"moving_walls\": [{\"min\": [1.4, 0, 0], \"max\": [1.45, 0.8, 0.6], \"motion\": "
        "{\"type\": \"oscillate\", \"direction\": [-1, 0, 0], \"amplitude\": 0.1, \"period\": 1.7,"
        " \"phase\": 0.3}}],"
        "\"fluid\": [{\"min\": [0, 0, 0], \"max\": [0.3, 0.3, 0.3], \"velocity\": [0.1, 0, 0]}]}";
    pbfapp_scene a, b;
    pbf_error err;
    pbf_status st = pbfapp_scene_parse("mem.json", text, strlen(text), NULL, 0, &a, &err);
    if (st != PBF_OK) test_fail_(__FILE__, __LINE__, "%s", err.message);
    ENSURE(st == PBF_OK);
    ENSURE(a.has_camera);
    ENSURE_NEAR(a.camera.fov_deg, 33.3, 1e-5);
    ENSURE(a.camera.up[1] == 1.0f && a.camera.up[0] == 0.0f);
    const char *path = "test_render_scene.json";
    ENSURE(pbfapp_scene_write(&a, path, &err) == PBF_OK);
    st = pbfapp_scene_load(path, NULL, 0, &b, &err);
    if (st != PBF_OK) test_fail_(__FILE__, __LINE__, "%s", err.message);
    ENSURE(st == PBF_OK);
    ENSURE(strcmp(a.name, b.name) == 0);
    ENSURE(memcmp(&a.def, &b.def, sizeof a.def) == 0);
    ENSURE(memcmp(&a.run, &b.run, sizeof a.run) == 0);
    ENSURE(memcmp(&a.camera, &b.camera, sizeof a.camera) == 0 && b.has_camera);
    ENSURE_EQ_INT(b.box_count, 2);
    ENSURE_EQ_INT(b.obstacle_count, 1);
    ENSURE(memcmp(a.boxes, b.boxes, 2 * sizeof *a.boxes) == 0);
    ENSURE_EQ_INT(b.block_count, 1);
    ENSURE(memcmp(a.blocks, b.blocks, sizeof *a.blocks) == 0);
    unlink(path);
    pbfapp_scene_free(&a);
    pbfapp_scene_free(&b);
}

/* Silhouettes are anti-aliased: a pixel the disc covers partly lies between the sphere's colour
 * and the background, by the covered fraction; pixels beyond the coverage are background. */
static void test_antialias(void) {
    const float x = 0.013f, y = 0.007f, z = 0, r = 0.4f;
    pbfapp_image img, bg;
    ENSURE(pbfapp_image_init(&img, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&bg, W, H, NULL) == PBF_OK);
    pbfapp_render_input in = plain_input(1, &x, &y, &z, r);
    ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
    pbfapp_render_input empty = plain_input(0, &x, &y, &z, r);
    ENSURE(pbfapp_render(&empty, &bg, NULL) == PBF_OK);
    float c[3] = {x, y, z}, sx, sy, d, f;
    ENSURE(pbfapp_render_project(&in.camera, W, H, c, &sx, &sy, &d, &f));
    const float rs = r * f / d;
    ENSURE(rs > 12 && rs < 40);
    int partial = 0, blended = 0, full_differs = 0, full = 0;
    for (int j = 0; j < H; ++j)
        for (int i = 0; i < W; ++i) {
            float dx = (float)i + 0.5f - sx, dy = (float)j + 0.5f - sy;
            float dist = sqrtf(dx * dx + dy * dy);
            float cover = rs + 0.5f - dist;
            const unsigned char *a = px(&img, i, j), *b = px(&bg, i, j);
            if (cover <= 0) {
                ENSURE(memcmp(a, b, 3) == 0);
            } else if (cover >= 1) {
                ++full;
                full_differs += memcmp(a, b, 3) != 0;
            } else if (cover > 0.2f && cover < 0.8f) {
                /* the fully covered pixel 1.5 pixels further in, along the radius */
                int ii = (int)floorf(sx + dx / dist * (dist - 1.5f));
                int jj = (int)floorf(sy + dy / dist * (dist - 1.5f));
                const unsigned char *in_px = px(&img, ii, jj);
                float lum = (float)(a[0] + a[1] + a[2]);
                float lum_in = (float)(in_px[0] + in_px[1] + in_px[2]);
                float lum_bg = (float)(b[0] + b[1] + b[2]);
                ENSURE(lum_bg - lum_in > 150); /* deep blue on a light background */
                float t = (lum - lum_in) / (lum_bg - lum_in);
                ++partial;
                if (t > 0.05f && t < 0.95f && fabsf(t - (1.0f - cover)) < 0.25f)
                    ++blended;
                else
                    test_fail_(__FILE__, __LINE__,
                               "pixel (%d, %d), coverage %.2f: %d,%d,%d is not a blend of the "
                               "sphere (%d,%d,%d) and the background (%d,%d,%d): t = %.2f",
                               i, j, (double)cover, a[0], a[1], a[2], in_px[0], in_px[1],
                               in_px[2], b[0], b[1], b[2], (double)t);
            }
        }
    ENSURE(full > 500 && full_differs == full);
    ENSURE(partial > 40 && blended == partial);
    pbfapp_image_free(&img);
    pbfapp_image_free(&bg);
}

/* Ink pixels of glyph cell k (columns 6k .. 6k+4 from x0) in font rows r0 .. r1 (from y0). */
static int cell_ink(const pbfapp_image *img, int x0, int y0, int k, int r0, int r1) {
    int n = 0;
    for (int r = r0; r <= r1; ++r)
        for (int col = 0; col < 5; ++col) n += px(img, x0 + 6 * k + col, y0 + r)[0] < 128;
    return n;
}

/* The font of `pbf render` and of the viewer's overlay has descenders: g j p q y reach below
 * the baseline (font rows 7 and 8), a c e m n do not, and q is not 9. */
static void test_font_descenders(void) {
    pbfapp_image img;
    ENSURE(pbfapp_image_init(&img, 200, 24, NULL) == PBF_OK);
    memset(img.rgb, 255, 200 * 24 * 3);
    const float black[3] = {0, 0, 0};
    const int x0 = 4, y0 = 4;
    const char *text = "gjpqy acemn q9 QUICK 0189 quick";
    pbfapp_render_text(&img, x0, y0, 1, text, black);
    ENSURE(x0 + 6 * (int)strlen(text) <= img.width);
    for (int k = 0; k < 5; ++k) {
        if (cell_ink(&img, x0, y0, k, 7, 8) == 0)
            test_fail_(__FILE__, __LINE__, "'%c' has no descender", text[k]);
        ENSURE(cell_ink(&img, x0, y0, k, 2, 6) > 0);
    }
    for (int k = 6; k < 11; ++k) {
        if (cell_ink(&img, x0, y0, k, 7, 8) != 0)
            test_fail_(__FILE__, __LINE__, "'%c' reaches below the baseline", text[k]);
        ENSURE(cell_ink(&img, x0, y0, k, 2, 6) > 0);   /* lower case: x-height rows */
        ENSURE(cell_ink(&img, x0, y0, k, 0, 1) == 0);  /* and nothing above them */
    }
    for (int k = 15; k < 25; ++k) /* capitals and digits stand on the baseline */
        if (text[k] != ' ') ENSURE(cell_ink(&img, x0, y0, k, 7, 8) == 0);
    /* q (cell 12) and 9 (cell 13) differ, pixel by pixel */
    int differ = 0;
    for (int r = 0; r < 9; ++r)
        for (int col = 0; col < 5; ++col)
            differ += (px(&img, x0 + 72 + col, y0 + r)[0] < 128) !=
                      (px(&img, x0 + 78 + col, y0 + r)[0] < 128);
    ENSURE(differ >= 6);
    ENSURE(cell_ink(&img, x0, y0, 12, 7, 8) > 0 && cell_ink(&img, x0, y0, 13, 7, 8) == 0);
    ENSURE(cell_ink(&img, x0, y0, 12, 0, 1) == 0 && cell_ink(&img, x0, y0, 13, 0, 1) > 0);
    /* the viewer's font texture holds the same glyphs */
    static unsigned char atlas[PBFVIEW_FONT_ATLAS_W * PBFVIEW_FONT_ATLAS_H];
    pbfview_font_atlas(atlas);
    ENSURE(PBFVIEW_FONT_GLYPH_H == 9 && PBFVIEW_FONT_CELL_H >= 10);
    for (int k = 0; text[k]; ++k) {
        int cell = (unsigned char)text[k] - 32;
        int ax = (cell % PBFVIEW_FONT_COLUMNS) * PBFVIEW_FONT_CELL_W;
        int ay = (cell / PBFVIEW_FONT_COLUMNS) * PBFVIEW_FONT_CELL_H;
        for (int r = 0; r < 9; ++r)
            for (int col = 0; col < 5; ++col) {
                int in_atlas = atlas[(size_t)(ay + r) * PBFVIEW_FONT_ATLAS_W + (size_t)(ax + col)] > 0;
                int in_image = px(&img, x0 + 6 * k + col, y0 + r)[0] < 128;
                if (in_atlas != in_image)
                    test_fail_(__FILE__, __LINE__, "'%c' row %d column %d: atlas %d, image %d",
                               text[k], r, col, in_atlas, in_image);
            }
    }
    pbfapp_image_free(&img);
}

/* ---- surface mode ------------------------------------------------------------------------- */

typedef struct test_mesh {
    int nv, nt;
    float pos[3 * 4096], nrm[3 * 4096];
    uint32_t tri[3 * 8192];
} test_mesh;

static pbf_mesh mesh_view(const test_mesh *m) {
    pbf_mesh v = {m->nv, m->nt, m->pos, m->nrm, m->tri};
    return v;
}

/* Appends a triangle, wound counter-clockwise seen from outside (from `centre`). */
static void add_tri(test_mesh *m, uint32_t a, uint32_t b, uint32_t c, const float centre[3]) {
    const float *pa = m->pos + 3 * a, *pb = m->pos + 3 * b, *pc = m->pos + 3 * c;
    float e1[3], e2[3], o[3];
    for (int k = 0; k < 3; ++k) {
        e1[k] = pb[k] - pa[k];
        e2[k] = pc[k] - pa[k];
        o[k] = (pa[k] + pb[k] + pc[k]) / 3.0f - centre[k];
    }
    float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                  e1[0] * e2[1] - e1[1] * e2[0]};
    int flip = n[0] * o[0] + n[1] * o[1] + n[2] * o[2] < 0;
    uint32_t *t = m->tri + 3 * m->nt++;
    t[0] = a;
    t[1] = flip ? c : b;
    t[2] = flip ? b : c;
}

/* A closed UV sphere (shared vertices, normals radial). */
static void make_sphere(test_mesh *m, const float c[3], float r, int rings, int segs) {
    m->nv = m->nt = 0;
    const float pi = 3.14159265f;
    for (int i = 0; i <= rings; ++i) {
        float th = pi * (float)i / (float)rings;
        int nseg = (i == 0 || i == rings) ? 1 : segs;
        for (int j = 0; j < nseg; ++j) {
            float ph = 2 * pi * (float)j / (float)segs;
            float n[3] = {sinf(th) * cosf(ph), cosf(th), sinf(th) * sinf(ph)};
            for (int k = 0; k < 3; ++k) {
                m->pos[3 * m->nv + k] = c[k] + r * n[k];
                m->nrm[3 * m->nv + k] = n[k];
            }
            ++m->nv;
        }
    }
    /* vertex index of ring i, segment j (rings 1 .. rings-1 hold segs vertices) */
#define RV(i, j) ((i) == 0 ? 0u : (i) == rings ? (uint32_t)(1 + (rings - 1) * segs) : (uint32_t)(1 + ((i) - 1) * segs + ((j) % segs)))
    for (int i = 0; i < rings; ++i)
        for (int j = 0; j < segs; ++j) {
            if (i > 0) add_tri(m, RV(i, j), RV(i, j + 1), RV(i + 1, j), c);
            if (i + 1 < rings) add_tri(m, RV(i + 1, j), RV(i, j + 1), RV(i + 1, j + 1), c);
            if (i + 1 == rings && i > 0) continue;
        }
#undef RV
}

/* Appends a box [lo, hi] with flat faces (4 vertices per face, normals along the axes). */
static void add_box(test_mesh *m, const float lo[3], const float hi[3]) {
    float c[3];
    for (int k = 0; k < 3; ++k) c[k] = 0.5f * (lo[k] + hi[k]);
    for (int axis = 0; axis < 3; ++axis)
        for (int side = 0; side < 2; ++side) {
            int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
            uint32_t base = (uint32_t)m->nv;
            for (int q = 0; q < 4; ++q) {
                float *p = m->pos + 3 * m->nv, *n = m->nrm + 3 * m->nv;
                p[axis] = side ? hi[axis] : lo[axis];
                p[a1] = (q & 1) ? hi[a1] : lo[a1];
                p[a2] = (q & 2) ? hi[a2] : lo[a2];
                n[0] = n[1] = n[2] = 0;
                n[axis] = side ? 1.0f : -1.0f;
                ++m->nv;
            }
            add_tri(m, base, base + 1, base + 3, c);
            add_tri(m, base, base + 3, base + 2, c);
        }
}

static float lum(const unsigned char *p) {
    return (float)p[0] + (float)p[1] + (float)p[2];
}

/* A sphere: water where it is, background elsewhere, lit from above (the upper half brighter),
 * tinted by its thickness (the centre, where the light crosses most water, has less red than
 * the rim), its depth in the depth buffer. */
static void test_surface_sphere(void) {
    static test_mesh m;
    const float c[3] = {0, 0, 0}, r = 0.6f;
    make_sphere(&m, c, r, 32, 64);
    ENSURE(m.nv < 4096 && m.nt < 8192);
    pbf_mesh mesh = mesh_view(&m);
    pbfapp_image img, bg;
    ENSURE(pbfapp_image_init(&img, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&bg, W, H, NULL) == PBF_OK);
    pbfapp_render_input in = plain_input(0, NULL, NULL, NULL, 0.01f);
    ENSURE(pbfapp_render(&in, &bg, NULL) == PBF_OK);
    in.mesh = &mesh;
    ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
    float sx, sy, d, f;
    ENSURE(pbfapp_render_project(&in.camera, W, H, c, &sx, &sy, &d, &f));
    const float rs = r * f / d;
    ENSURE(rs > 20 && rs < 40);
    double upper = 0, lower = 0;
    int nu = 0, nl = 0, brightest_y = -1;
    float brightest = -1;
    for (int j = 0; j < H; ++j)
        for (int i = 0; i < W; ++i) {
            float dx = (float)i + 0.5f - sx, dy = (float)j + 0.5f - sy;
            float dist = sqrtf(dx * dx + dy * dy);
            const unsigned char *a = px(&img, i, j), *b = px(&bg, i, j);
            float depth = img.depth[(size_t)j * W + (size_t)i];
            if (dist > rs * 1.02f + 1.5f) {
                if (memcmp(a, b, 3) != 0 || !isinf(depth))
                    test_fail_(__FILE__, __LINE__, "pixel (%d, %d) outside the sphere changed", i,
                               j);
            } else if (dist < rs - 2.0f) {
                if (!(memcmp(a, b, 3) != 0 && a[2] >= a[0] && isfinite(depth) && depth > d - r - 0.01f &&
                      depth < d + 0.01f))
                    test_fail_(__FILE__, __LINE__, "pixel (%d, %d) inside: %d,%d,%d depth %g", i, j,
                               a[0], a[1], a[2], (double)depth);
                if (dist < 0.8f * rs) {
                    if (dy < 0) upper += lum(a), ++nu;
                    else lower += lum(a), ++nl;
                }
                if (lum(a) > brightest) brightest = lum(a), brightest_y = j;
            }
        }
    ENSURE(nu > 300 && nl > 300);
    upper /= nu;
    lower /= nl;
    if (!(upper > lower + 15))
        test_fail_(__FILE__, __LINE__, "no shading gradient: upper half %.1f, lower half %.1f",
                   upper, lower);
    ENSURE((float)brightest_y < sy);
    /* the centre's depth is the sphere's front */
    ENSURE_NEAR(img.depth[(size_t)(int)sy * W + (size_t)(int)sx], d - r, 0.01);
    /* thickness tint: less red at the centre than at 0.93 rs left and right of it */
    const unsigned char *mid = px(&img, (int)sx, (int)sy);
    const unsigned char *left = px(&img, (int)(sx - 0.93f * rs), (int)sy);
    const unsigned char *right = px(&img, (int)(sx + 0.93f * rs), (int)sy);
    if (!(mid[0] + 10 < left[0] && mid[0] + 10 < right[0]))
        test_fail_(__FILE__, __LINE__, "red at the centre %d, near the rim %d and %d", mid[0],
                   left[0], right[0]);
    pbfapp_image_free(&img);
    pbfapp_image_free(&bg);
}

/* Fresnel: Schlick's reflectance of water, and the shading of a surface seen at normal and
 * at grazing incidence: more of the sky, less of the water body, at grazing angles. */
static void test_surface_fresnel(void) {
    ENSURE_NEAR(pbfapp_schlick(1.0f), 0.0201, 0.0005);
    ENSURE_NEAR(pbfapp_schlick(0.0f), 1.0, 1e-6);
    float prev = 2;
    for (int k = 0; k <= 20; ++k) {
        float fr = pbfapp_schlick((float)k / 20.0f);
        ENSURE(fr < prev);
        prev = fr;
    }
    /* A horizontal surface over thick water (nothing behind shows), the sun below it (no
     * diffuse light, no highlight, no sun in the reflected sky), the eye looking down at angle
     * a from the vertical: brightness grows with a; nearly the sky when grazing. */
    const float n[3] = {0, 1, 0}, sun[3] = {0, -1, 0}, absorb[3] = {9, 3, 1.6f};
    const float black[3] = {0, 0, 0};
    float prev_lum = -1, first = 0, last = 0;
    for (int k = 0; k <= 9; ++k) {
        float a = (float)k * 0.17f; /* 0 .. 1.53 rad */
        float dir[3] = {0, -cosf(a), sinf(a)}, out[3], sky[3];
        pbfapp_water_shade(n, dir, 100.0f, absorb, black, sun, out);
        float l = out[0] + out[1] + out[2];
        if (!(k < 3 ? l >= prev_lum : l > prev_lum))
            test_fail_(__FILE__, __LINE__, "angle %.2f: brightness %.4f not above %.4f",
                       (double)a, (double)l, (double)prev_lum);
        prev_lum = l;
        if (k == 0) first = l;
        if (k == 9) {
            last = l;
            float r[3] = {0, cosf(a), sinf(a)};
            pbfapp_water_sky(r, sun, sky);
            float sl = sky[0] + sky[1] + sky[2];
            ENSURE(l > 0.6f * sl);
        }
    }
    ENSURE(last > 4 * first);
}

/* A quasi-orthographic view of a box face: edges at fractional pixel positions are anti-aliased,
 * the edge pixel a blend of the water and the background by the fraction of its 3x3 samples
 * the face covers; the face itself uniform (no seam along the diagonal shared by its two
 * triangles). */
static void test_surface_antialias(void) {
    static test_mesh m;
    pbfapp_render_input in = plain_input(0, NULL, NULL, NULL, 0.01f);
    in.camera.position[2] = 500;
    in.camera.fov_deg = 0.3f;
    const float zf = 0.8f;
    float sx, sy, d, focal, o[3] = {0, 0, zf};
    ENSURE(pbfapp_render_project(&in.camera, W, H, o, &sx, &sy, &d, &focal));
    /* the face from image x 57.4 to 102.75 and y 40.6 to 80.3 */
    const float xl = 57.4f, xr = 102.75f, yt = 40.6f, yb = 80.3f;
    float lo[3] = {(xl - sx) * d / focal, -(yb - sy) * d / focal, -zf};
    float hi[3] = {(xr - sx) * d / focal, -(yt - sy) * d / focal, zf};
    m.nv = m.nt = 0;
    add_box(&m, lo, hi);
    pbf_mesh mesh = mesh_view(&m);
    pbfapp_image img, bg;
    ENSURE(pbfapp_image_init(&img, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&bg, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_render(&in, &bg, NULL) == PBF_OK);
    in.mesh = &mesh;
    ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
    /* uniform along each row inside (the background seen through varies from row to row) */
    ENSURE(lum(px(&bg, 80, 60)) - lum(px(&img, 80, 60)) > 150);
    for (int j = 42; j <= 78; ++j)
        for (int i = 59; i <= 101; ++i) {
            const unsigned char *a = px(&img, i, j), *ref = px(&img, 80, j);
            for (int k = 0; k < 3; ++k)
                if (abs((int)a[k] - (int)ref[k]) > 2)
                    test_fail_(__FILE__, __LINE__, "pixel (%d, %d) %d,%d,%d, centre %d,%d,%d", i,
                               j, a[0], a[1], a[2], ref[0], ref[1], ref[2]);
        }
    /* edges: sample centres at 1/6, 1/2, 5/6 of a pixel; left edge at .4 (2 of 3 columns of
     * samples inside), right at .75 (2 of 3), top at .6 (1 of 3), bottom at .3 (1 of 3) */
    struct {
        int i, j, di, dj;
        float cover;
    } edges[] = {{57, 60, 1, 0, 2.0f / 3}, {102, 60, -1, 0, 2.0f / 3},
                 {80, 40, 0, 1, 1.0f / 3}, {80, 80, 0, -1, 1.0f / 3}};
    for (int e = 0; e < 4; ++e)
        for (int t = -8; t <= 8; t += 4) {
            int i = edges[e].i + (edges[e].dj ? 0 : 0) + (edges[e].di ? 0 : t);
            int j = edges[e].j + (edges[e].di ? t : 0);
            const unsigned char *a = px(&img, i, j), *b = px(&bg, i, j);
            const unsigned char *inside = px(&img, i + 2 * edges[e].di, j + 2 * edges[e].dj);
            const unsigned char *out = px(&img, i - edges[e].di, j - edges[e].dj);
            ENSURE(memcmp(out, px(&bg, i - edges[e].di, j - edges[e].dj), 3) == 0);
            float frac = (lum(b) - lum(a)) / (lum(b) - lum(inside));
            if (!(fabsf(frac - edges[e].cover) < 0.06f))
                test_fail_(__FILE__, __LINE__, "edge %d at (%d, %d): coverage %.3f, expected %.3f",
                           e, i, j, (double)frac, (double)edges[e].cover);
        }
    pbfapp_image_free(&img);
    pbfapp_image_free(&bg);
}

/* The same view of a box face whose corners lie exactly on sample centres, so the diagonal its
 * two triangles share runs through a sample in every row: each of those samples is covered by
 * exactly one of them (no lighter or darker seam: uniform rows). */
static void test_surface_shared_edges(void) {
    static test_mesh m;
    pbfapp_render_input in = plain_input(0, NULL, NULL, NULL, 0.01f);
    in.camera.position[2] = 500;
    in.camera.fov_deg = 0.3f;
    const float zf = 0.8f, ss = PBFAPP_SURFACE_SUPERSAMPLE;
    float sx, sy, d, focal, o[3] = {0, 0, zf};
    ENSURE(pbfapp_render_project(&in.camera, W, H, o, &sx, &sy, &d, &focal));
    const float xl = 171.5f / ss, xr = (171.5f + 135) / ss, yt = 121.5f / ss,
                yb = (121.5f + 135) / ss;
    float lo[3] = {(xl - sx) * d / focal, -(yb - sy) * d / focal, -zf};
    float hi[3] = {(xr - sx) * d / focal, -(yt - sy) * d / focal, zf};
    m.nv = m.nt = 0;
    add_box(&m, lo, hi);
    pbf_mesh mesh = mesh_view(&m);
    pbfapp_image img;
    ENSURE(pbfapp_image_init(&img, W, H, NULL) == PBF_OK);
    in.mesh = &mesh;
    ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
    for (int j = (int)yt + 2; j <= (int)yb - 2; ++j)
        for (int i = (int)xl + 2; i <= (int)xr - 2; ++i) {
            const unsigned char *a = px(&img, i, j), *ref = px(&img, (int)xl + 2, j);
            for (int k = 0; k < 3; ++k)
                if (abs((int)a[k] - (int)ref[k]) > 2)
                    test_fail_(__FILE__, __LINE__, "pixel (%d, %d) %d,%d,%d, row start %d,%d,%d",
                               i, j, a[0], a[1], a[2], ref[0], ref[1], ref[2]);
        }
    pbfapp_image_free(&img);
}

/* Two boxes, one behind the other: the near one's depth in the depth buffer where they overlap,
 * and there the light crosses both (less red than through either alone); in either triangle
 * order the same picture. */
static void test_surface_two_boxes(void) {
    static test_mesh m, m2;
    const float lo1[3] = {-0.6f, -0.3f, 0.2f}, hi1[3] = {0.2f, 0.3f, 0.6f};
    const float lo2[3] = {-0.2f, -0.3f, -0.6f}, hi2[3] = {0.6f, 0.3f, -0.2f};
    m.nv = m.nt = 0;
    add_box(&m, lo1, hi1);
    add_box(&m, lo2, hi2);
    m2 = m;
    for (int t = 0; t < m.nt; ++t) /* reversed triangle order */
        memcpy(m2.tri + 3 * t, m.tri + 3 * (m.nt - 1 - t), 3 * sizeof(uint32_t));
    pbf_mesh a = mesh_view(&m), b = mesh_view(&m2);
    pbfapp_image ia, ib;
    ENSURE(pbfapp_image_init(&ia, W, H, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&ib, W, H, NULL) == PBF_OK);
    pbfapp_render_input in = plain_input(0, NULL, NULL, NULL, 0.01f);
    in.mesh = &a;
    ENSURE(pbfapp_render(&in, &ia, NULL) == PBF_OK);
    in.mesh = &b;
    ENSURE(pbfapp_render(&in, &ib, NULL) == PBF_OK);
    ENSURE(memcmp(ia.rgb, ib.rgb, (size_t)W * H * 3) == 0);
    float p_both[3] = {0, 0, 0.6f}, p_near[3] = {-0.45f, 0, 0.6f}, p_far[3] = {0.45f, 0, -0.2f};
    float sxb, syb, sxn, syn, sxf, syf, d, f, dn, df;
    ENSURE(pbfapp_render_project(&in.camera, W, H, p_both, &sxb, &syb, &d, &f));
    ENSURE(pbfapp_render_project(&in.camera, W, H, p_near, &sxn, &syn, &dn, &f));
    ENSURE(pbfapp_render_project(&in.camera, W, H, p_far, &sxf, &syf, &df, &f));
    ENSURE_NEAR(ia.depth[(size_t)(int)syb * W + (size_t)(int)sxb], d, 0.01);
    ENSURE_NEAR(ia.depth[(size_t)(int)syf * W + (size_t)(int)sxf], df, 0.01);
    const unsigned char *both = px(&ia, (int)sxb, (int)syb), *near_only = px(&ia, (int)sxn, (int)syn),
                        *far_only = px(&ia, (int)sxf, (int)syf);
    if (!(both[0] + 10 < near_only[0] && both[0] + 10 < far_only[0]))
        test_fail_(__FILE__, __LINE__, "red through both boxes %d, near %d, far %d", both[0],
                   near_only[0], far_only[0]);
    pbfapp_image_free(&ia);
    pbfapp_image_free(&ib);
}

/* Obstacles are solid shaded boxes, not outlines: the middle of each face the camera sees is
 * the box's colour (a clay orange), each of the three faces its own shade; a particle behind
 * the box is hidden by it, one in front of it hides it; the box is in the depth buffer; in
 * surface mode too. */
static void test_solid_obstacles(void) {
    enum { SW = 200, SH = 150 };
    const pbfapp_render_box box = {{-0.2f, -0.2f, -0.2f}, {0.2f, 0.2f, 0.2f}};
    const float eye[3] = {1.5f, 1.2f, 2.5f};
    float d[3] = {-eye[0], -eye[1], -eye[2]}, len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int k = 0; k < 3; ++k) d[k] /= len;
    /* a particle 0.8 m behind the box's centre, seen through it, and one 0.8 m in front */
    float x[1] = {0.0f}, y[1] = {0.0f}, z[1] = {0.0f}; /* (set below, before each render) */
    pbfapp_render_input in = plain_input(1, x, y, z, 0.05f);
    in.flags = PBFAPP_RENDER_NO_FLOOR | PBFAPP_RENDER_NO_TEXT; /* outlines drawn as usual */
    in.camera = (pbf_camera){{eye[0], eye[1], eye[2]}, {0, 0, 0}, {0, 1, 0}, 40};
    in.boxes = &box;
    in.box_count = 1;
    pbfapp_image img;
    ENSURE(pbfapp_image_init(&img, SW, SH, NULL) == PBF_OK);
    const float faces[3][3] = {{0.2f, 0, 0}, {0, 0.2f, 0}, {0, 0, 0.2f}}, centre[3] = {0, 0, 0};
    for (int behind = 1; behind >= 0; --behind) {
        const float s = behind ? 0.8f : -0.8f;
        x[0] = s * d[0];
        y[0] = s * d[1];
        z[0] = s * d[2];
        ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
        float sx, sy, dist, focal;
        ENSURE(pbfapp_render_project(&in.camera, SW, SH, centre, &sx, &sy, &dist, &focal));
        const unsigned char *c = px(&img, (int)sx, (int)sy);
        int orange = c[0] > c[2] + 60 && c[0] > c[1], blue = c[2] > c[0] + 40;
        if (behind ? !orange : !blue)
            test_fail_(__FILE__, __LINE__,
                       "particle %s the box: pixel (%d %d %d) at the box's "
                       "centre, expected %s",
                       behind ? "behind" : "in front of", c[0], c[1], c[2],
                       behind ? "the box's orange" : "the particle's blue");
    }
    unsigned char shade[3][3];
    for (int f = 0; f < 3; ++f) {
        float sx, sy, dist, focal;
        ENSURE(pbfapp_render_project(&in.camera, SW, SH, faces[f], &sx, &sy, &dist, &focal));
        const unsigned char *c = px(&img, (int)sx, (int)sy);
        memcpy(shade[f], c, 3);
        if (!(c[0] > c[2] + 30 && c[0] >= c[1]))
            test_fail_(__FILE__, __LINE__, "face %d: pixel (%d %d %d) is not the box's colour", f,
                       c[0], c[1], c[2]);
        ENSURE(img.depth[(size_t)(int)sy * SW + (size_t)(int)sx] < dist + 0.01f);
    }
    ENSURE(memcmp(shade[0], shade[1], 3) != 0 && memcmp(shade[1], shade[2], 3) != 0 &&
           memcmp(shade[0], shade[2], 3) != 0);
    /* surface mode: a mesh far behind the box does not show through it */
    static test_mesh m;
    m.nv = m.nt = 0;
    float far_lo[3], far_hi[3]; /* a 0.2 m cube of water 0.8 m behind the box's centre */
    for (int k = 0; k < 3; ++k) {
        far_lo[k] = 0.8f * d[k] - 0.1f;
        far_hi[k] = 0.8f * d[k] + 0.1f;
    }
    add_box(&m, far_lo, far_hi);
    pbf_mesh mesh = mesh_view(&m);
    in.count = 0;
    in.mesh = &mesh;
    ENSURE(pbfapp_render(&in, &img, NULL) == PBF_OK);
    float sx, sy, dist, focal;
    ENSURE(pbfapp_render_project(&in.camera, SW, SH, centre, &sx, &sy, &dist, &focal));
    const unsigned char *c = px(&img, (int)sx, (int)sy);
    if (!(c[0] > c[2] + 60 && c[0] > c[1]))
        test_fail_(__FILE__, __LINE__,
                   "surface mode: pixel (%d %d %d) at the box's centre, "
                   "expected the box's orange in front of the water",
                   c[0], c[1], c[2]);
    pbfapp_image_free(&img);
}

/* Floor, lines, text and a mesh of a few thousand triangles: the same bytes for 1 and 3
 * threads. */
static void test_surface_threads(void) {
    static test_mesh m;
    const float c[3] = {0.5f, 0.25f, 0.3f};
    make_sphere(&m, c, 0.22f, 24, 48);
    const float lo[3] = {0.9f, 0.0f, 0.1f}, hi[3] = {1.5f, 0.15f, 0.5f};
    add_box(&m, lo, hi);
    pbf_mesh mesh = mesh_view(&m);
    pbfapp_render_input in = plain_input(0, NULL, NULL, NULL, 0.01f);
    in.flags = 0;
    in.domain_min[0] = in.domain_min[1] = in.domain_min[2] = 0;
    in.domain_max[0] = 1.6f;
    in.domain_max[1] = 0.8f;
    in.domain_max[2] = 0.6f;
    in.camera = pbf_camera_default(in.domain_min, in.domain_max, 320.0f / 180.0f);
    in.title = "surface";
    in.mesh = &mesh;
    pbfapp_image a, b;
    ENSURE(pbfapp_image_init(&a, 320, 180, NULL) == PBF_OK);
    ENSURE(pbfapp_image_init(&b, 320, 180, NULL) == PBF_OK);
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    ENSURE(pbfapp_render(&in, &a, NULL) == PBF_OK);
#ifdef _OPENMP
    omp_set_num_threads(3);
#endif
    ENSURE(pbfapp_render(&in, &b, NULL) == PBF_OK);
    ENSURE(memcmp(a.rgb, b.rgb, 320 * 180 * 3) == 0);
    in.mesh = NULL;
    ENSURE(pbfapp_render(&in, &b, NULL) == PBF_OK);
    int differ = 0;
    for (int i = 0; i < 320 * 180; ++i) differ += memcmp(a.rgb + 3 * i, b.rgb + 3 * i, 3) != 0;
    ENSURE(differ > 320 * 180 / 20);
    pbfapp_image_free(&a);
    pbfapp_image_free(&b);
}

/* Meshes written by pbf mesh read back: PLY exactly, OBJ to the printed digits; broken files
 * are errors that name the file. */
static void test_mesh_read(void) {
    static test_mesh m;
    const float c[3] = {0.1f, 0.2f, 0.3f};
    make_sphere(&m, c, 0.5f, 8, 12);
    pbf_mesh mesh = mesh_view(&m);
    char dir[] = "test_render_mesh_XXXXXX", ply[64], obj[64];
    ENSURE(mkdtemp(dir) != NULL);
    snprintf(ply, sizeof ply, "%s/m.ply", dir);
    snprintf(obj, sizeof obj, "%s/m.obj", dir);
    pbf_error err;
    ENSURE(pbfapp_write_mesh_ply(ply, &mesh, &err) == PBF_OK);
    ENSURE(pbfapp_write_mesh_obj(obj, &mesh, &err) == PBF_OK);
    pbfapp_mesh_data d;
    memset(&d, 0, sizeof d);
    for (int k = 0; k < 2; ++k) {
        ENSURE(pbfapp_read_mesh(k ? obj : ply, &d, &err) == PBF_OK);
        ENSURE_EQ_INT(d.vertex_count, m.nv);
        ENSURE_EQ_INT(d.triangle_count, m.nt);
        ENSURE(memcmp(d.positions, m.pos, (size_t)m.nv * 3 * sizeof(float)) == 0);
        ENSURE(memcmp(d.triangles, m.tri, (size_t)m.nt * 3 * sizeof(uint32_t)) == 0);
        for (int i = 0; i < 3 * m.nv; ++i) ENSURE_NEAR(d.normals[i], m.nrm[i], 1e-5);
    }
    /* truncated PLY */
    FILE *f = fopen(ply, "r+b");
    ENSURE(f != NULL);
    ENSURE(fseek(f, 0, SEEK_END) == 0);
    long size = ftell(f);
    fclose(f);
    ENSURE(truncate(ply, size - 20) == 0);
    ENSURE(pbfapp_read_mesh(ply, &d, &err) != PBF_OK);
    ENSURE(strstr(err.message, ply) != NULL && strstr(err.message, "face") != NULL);
    /* OBJ face with a vertex that does not exist */
    f = fopen(obj, "w");
    ENSURE(f != NULL);
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\n", f);
    fclose(f);
    ENSURE(pbfapp_read_mesh(obj, &d, &err) != PBF_OK);
    ENSURE(strstr(err.message, obj) != NULL && strstr(err.message, ":5:") != NULL);
    /* OBJ without normals: computed from the faces (the triangle faces +z) */
    f = fopen(obj, "w");
    ENSURE(f != NULL);
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", f);
    fclose(f);
    ENSURE(pbfapp_read_mesh(obj, &d, &err) == PBF_OK);
    ENSURE(d.triangle_count == 1 && d.vertex_count == 3);
    ENSURE_NEAR(d.normals[2], 1.0, 1e-6);
    pbfapp_mesh_data_free(&d);
    unlink(ply);
    unlink(obj);
    rmdir(dir);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_colormap);
    RUN_SUBTEST(test_color_range);
    RUN_SUBTEST(test_camera_options);
    RUN_SUBTEST(test_antialias);
    RUN_SUBTEST(test_font_descenders);
    RUN_SUBTEST(test_camera);
    RUN_SUBTEST(test_spheres_where_projected);
    RUN_SUBTEST(test_near_hides_far);
    RUN_SUBTEST(test_deterministic);
    RUN_SUBTEST(test_png_roundtrip);
    RUN_SUBTEST(test_frame_readers);
    RUN_SUBTEST(test_scene_write_roundtrip);
    RUN_SUBTEST(test_surface_sphere);
    RUN_SUBTEST(test_surface_fresnel);
    RUN_SUBTEST(test_surface_antialias);
    RUN_SUBTEST(test_surface_shared_edges);
    RUN_SUBTEST(test_surface_two_boxes);
    RUN_SUBTEST(test_solid_obstacles);
    RUN_SUBTEST(test_surface_threads);
    RUN_SUBTEST(test_mesh_read);
    return test_end();
}
