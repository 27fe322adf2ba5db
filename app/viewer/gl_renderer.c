/*
 * The viewer's renderer (see render.h). Two particle modes:
 *
 *  - sprites: every particle is a GL_POINTS sprite whose size is the projected diameter of its
 *    sphere; the fragment shader rebuilds the sphere normal from gl_PointCoord, discards outside
 *    the disc, shades with Blinn-Phong and writes the depth of the sphere surface.
 *  - fluid (screen-space fluid rendering: S. Green, "Screen Space Fluid Rendering for Games",
 *    GDC 2010; van der Laan, Green and Sainz, I3D 2009): (0) background and lines into a
 *    colour + depth texture; (1) sprite eye depth into an R32F texture; (2) the narrow-range
 *    filter of that depth (Truong and Yuksel, I3D 2018): 1D along x, 1D along y, 1D along x
 *    again at half the radius, then a small 2D pass (see draw_fluid); its radius is fixed in
 *    metres (6 particle radii) at every window size, its taps spread out beyond 16 pixels;
 *    (3) sprite thickness added up with additive blending, blurred over three particle radii
 *    (a lattice of particles otherwise shows lines of lesser thickness); (4) composite: normals
 *    from the smoothed depth, Schlick Fresnel between the background refracted by the
 *    thickness and tinted by Beer-Lambert absorption and a sky reflection, plus a specular
 *    highlight, into a premultiplied RGBA texture; (5) that texture over the background into
 *    the window. Passes 1-4 run at the window's resolution up to 1280x720 pixels, at half of
 *    it above (SSF_SCALE): the surface is smooth anyway, and a software rasteriser (Mesa
 *    llvmpipe) is 4x faster so.
 *
 * The colour value t of a particle is computed in the vertex shader with the normalisation of
 * render/colormap.h (pbf_color_value): t = (q - lo) / (hi - lo) for the quantity q (density, or the
 * speed |v| for speed and water) and the frame's range [lo, hi]; the ramp itself is a 256-texel
 * 1D texture filled from pbf_colormap.
 */
#include "gl_renderer.h"

#include <epoxy/gl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "font.h"

#define GLSL_VERSION "#version 330 core\n"

enum { VBO_X, VBO_Y, VBO_Z, VBO_DENSITY, VBO_VX, VBO_VY, VBO_VZ, VBO_COUNT };

enum { RAMP_TEXELS = 256 };

/* Screen-space fluid parameters (in particle radii where they are lengths). */
#define SSF_SCALE 2 /* passes 1-4 at 1 / SSF_SCALE of the window's resolution above ... */
#define SSF_FULL_RES_PIXELS (1280 * 720) /* ... this many pixels, at full resolution up to it */
#define SSF_FILTER_RADII 6.0f    /* radius (3 sigma) of the narrow-range depth filter */
#define SSF_THRESHOLD_RADII 10.0f /* its depth range around the centre (widened by each sample) */
#define SSF_CLAMP_RADII 1.0f     /* samples behind the range count as this far behind */
#define SSF_MAX_TAPS 16          /* taps per side and pass; wider filters spread their taps */
#define SSF_FINAL_PX 4.0f        /* radius in pixels of the final 2D pass of the filter */
#define SSF_THICK_BLUR_RADII 3.0f /* radius (3 sigma) of the thickness blur */

struct pbfview_renderer {
    GLuint prog_sprite, prog_depth, prog_thick, prog_bg, prog_lines, prog_blur, prog_thick_blur,
        prog_composite,
        prog_present, prog_text;
    GLuint vao_particles, vbo[VBO_COUNT];
    int capacity;
    uint64_t uploaded[VBO_COUNT]; /* particles_version + 1 of the data in each VBO, 0 = none */
    GLuint vao_empty;
    GLuint vao_lines, vbo_lines;
    GLuint vao_text, vbo_text, font_tex;
    float *text_verts;
    size_t text_cap; /* floats */
    GLuint ramp_tex;
    int ramp_field;
    /* screen-space fluid targets */
    int fb_w, fb_h, targets_ok;
    int ssf_w, ssf_h; /* size of the half-resolution targets */
    GLuint fbo_bg, tex_bg, tex_bg_depth;
    GLuint fbo_a, tex_a, rb_a;
    GLuint fbo_b, tex_b;
    GLuint fbo_thick, tex_thick;
    GLuint fbo_fluid, tex_fluid;
};

/* ---- shaders ------------------------------------------------------------------------------ */

/* clang-format off */

static const char *const sprite_vs =
    GLSL_VERSION
    "layout(location = 0) in float a_x;\n"
    "layout(location = 1) in float a_y;\n"
    "layout(location = 2) in float a_z;\n"
    "layout(location = 3) in float a_density;\n"
    "layout(location = 4) in float a_vx;\n"
    "layout(location = 5) in float a_vy;\n"
    "layout(location = 6) in float a_vz;\n"
    "uniform mat4 u_view;\n"
    "uniform mat4 u_proj;\n"
    "uniform float u_radius;\n"
    "uniform float u_point_scale;\n" /* proj[1][1] * viewport height: diameter = s * r / depth */
    "uniform int u_field;\n"
    "uniform vec2 u_range;\n"
    "out vec3 v_center;\n"
    "out float v_t;\n"
    "void main() {\n"
    "    vec4 eye = u_view * vec4(a_x, a_y, a_z, 1.0);\n"
    "    v_center = eye.xyz;\n"
    "    gl_Position = u_proj * eye;\n"
    "    gl_PointSize = max(u_point_scale * u_radius / max(-eye.z, 1e-4), 1.0);\n"
    "    float t;\n"
    "    float q = u_field == 1 ? a_density : length(vec3(a_vx, a_vy, a_vz));\n"
    "    float span = u_range.y - u_range.x;\n"
    "    t = span > 0.0 ? (q - u_range.x) / span : 0.0;\n"
    "    v_t = clamp(t, 0.0, 1.0);\n"
    "}\n";

/* Shared start of the sprite fragment shaders: the sphere point `pos` (eye space) and normal. */
#define SPRITE_FS_HEAD                                                                             \
    GLSL_VERSION                                                                                   \
    "in vec3 v_center;\n"                                                                          \
    "in float v_t;\n"                                                                              \
    "uniform mat4 u_proj;\n"                                                                       \
    "uniform float u_radius;\n"                                                                    \
    "float sphere(out vec3 n, out vec3 pos) {\n"                                                   \
    "    vec2 p = gl_PointCoord * 2.0 - 1.0;\n"                                                    \
    "    p.y = -p.y;\n"                                                                            \
    "    float r2 = dot(p, p);\n"                                                                  \
    "    if (r2 > 1.0) discard;\n"                                                                 \
    "    n = vec3(p, sqrt(1.0 - r2));\n"                                                           \
    "    pos = v_center + n * u_radius;\n"                                                         \
    "    vec4 clip = u_proj * vec4(pos, 1.0);\n"                                                   \
    "    return clip.z / clip.w * 0.5 + 0.5;\n"                                                    \
    "}\n"

static const char *const sprite_fs =
    SPRITE_FS_HEAD
    "uniform sampler1D u_ramp;\n"
    "uniform vec3 u_light;\n"
    "out vec4 o_color;\n"
    "void main() {\n"
    "    vec3 n, pos;\n"
    "    gl_FragDepth = sphere(n, pos);\n"
    "    vec3 base = texture(u_ramp, v_t).rgb;\n"
    "    vec3 h = normalize(u_light + normalize(-pos));\n"
    "    float diff = max(dot(n, u_light), 0.0);\n"
    "    float spec = pow(max(dot(n, h), 0.0), 60.0);\n"
    "    o_color = vec4(base * (0.3 + 0.7 * diff) + vec3(0.35 * spec), 1.0);\n"
    "}\n";

static const char *const depth_fs =
    SPRITE_FS_HEAD
    "out float o_depth;\n"
    "void main() {\n"
    "    vec3 n, pos;\n"
    "    gl_FragDepth = sphere(n, pos);\n"
    "    o_depth = -pos.z;\n"
    "}\n";

static const char *const thick_fs =
    GLSL_VERSION
    "uniform float u_radius;\n"
    "out float o_thickness;\n"
    "void main() {\n"
    "    vec2 p = gl_PointCoord * 2.0 - 1.0;\n"
    "    float r2 = dot(p, p);\n"
    "    if (r2 > 1.0) discard;\n"
    "    o_thickness = 2.0 * u_radius * sqrt(1.0 - r2);\n"
    "}\n";

/* One triangle covering the screen; v_uv is 0..1 over the viewport. */
static const char *const fullscreen_vs =
    GLSL_VERSION
    "out vec2 v_uv;\n"
    "void main() {\n"
    "    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));\n"
    "    v_uv = p;\n"
    "    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
    "}\n";

static const char *const bg_fs =
    GLSL_VERSION
    "in vec2 v_uv;\n"
    "uniform vec3 u_top;\n"
    "uniform vec3 u_bottom;\n"
    "out vec4 o_color;\n"
    "void main() {\n"
    "    o_color = vec4(mix(u_bottom, u_top, v_uv.y), 1.0);\n"
    "}\n";

static const char *const lines_vs =
    GLSL_VERSION
    "layout(location = 0) in vec3 a_pos;\n"
    "uniform mat4 u_view;\n"
    "uniform mat4 u_proj;\n"
    "void main() {\n"
    "    gl_Position = u_proj * u_view * vec4(a_pos, 1.0);\n"
    "}\n";

static const char *const lines_fs =
    GLSL_VERSION
    "uniform vec4 u_color;\n"
    "out vec4 o_color;\n"
    "void main() { o_color = u_color; }\n";

/* Narrow-range filter (N. Truong and C. Yuksel, "A Narrow-Range Filter for Screen-Space Fluid
 * Rendering", I3D 2018), one 1D pass along u_dir (a unit vector: the axes, then the diagonals,
 * so that the separable passes leave no axis-aligned boxes). The filter's radius is
 * u_filter_m metres at the pixel's depth, 3 sigma of a Gaussian; above u_max_taps pixels the
 * taps are spread out (stride > 1 pixel) rather than the radius cut, so the smoothing is the
 * same in world units at every window size. Depths are eye distances (> 0; 0 = background).
 * Each side keeps a depth range [lo, hi] around the centre (threshold u_threshold_m), widened
 * by every sample inside it (range extension), so a slope is followed outwards. A sample in
 * front of its range (another surface), or background, is dropped together with its mirror
 * tap (the filter stays symmetric: no streaks at silhouettes); one behind its range is clamped
 * to u_clamp_m behind the centre, so edges round off instead of sinking into what is behind. */
static const char *const nrf_fs =
    GLSL_VERSION
    "uniform sampler2D u_depth;\n"
    "uniform vec2 u_dir;\n"      /* 1D: the unit direction; (0, 0): the 2D pass */
    "uniform float u_px_per_m;\n" /* pixels per metre at eye depth 1 m */
    "uniform float u_filter_m;\n"
    "uniform float u_threshold_m;\n"
    "uniform float u_clamp_m;\n"
    "uniform int u_max_taps;\n"
    "uniform float u_max_px;\n" /* the radius in pixels is capped to this */
    "out float o_depth;\n"
    "float d, behind, thr;\n"
    "ivec2 c, size;\n"
    /* one sample against the range [lo, hi]: its weight is 0 if it is dropped */
    "float sample_nrf(ivec2 o, inout float lo, inout float hi, out float s) {\n"
    "    s = texelFetch(u_depth, clamp(c + o, ivec2(0), size - 1), 0).r;\n"
    "    if (s <= 0.0 || s < lo) return 0.0;\n"
    "    if (s > hi) { s = behind; return 1.0; }\n"
    "    lo = min(lo, s - thr);\n"
    "    hi = max(hi, s + thr);\n"
    "    return 1.0;\n"
    "}\n"
    "void main() {\n"
    "    c = ivec2(gl_FragCoord.xy);\n"
    "    size = textureSize(u_depth, 0);\n"
    "    d = texelFetch(u_depth, c, 0).r;\n"
    "    if (d <= 0.0) { o_depth = 0.0; return; }\n"
    "    float radius = min(u_filter_m * u_px_per_m / d, u_max_px);\n"
    "    if (radius < 1.0) { o_depth = d; return; }\n"
    "    float stride = max(1.0, radius / float(u_max_taps));\n"
    "    int taps = int(radius / stride);\n"
    "    float two_sigma2 = 2.0 * (radius / 3.0) * (radius / 3.0);\n"
    "    thr = u_threshold_m;\n"
    "    behind = d + u_clamp_m;\n"
    "    float lo_p = d - thr, hi_p = d + thr, lo_m = lo_p, hi_m = hi_p;\n"
    "    float sum = d, wsum = 1.0, sp, sm;\n"
    "    if (u_dir != vec2(0.0)) {\n"
    "        for (int i = 1; i <= taps; ++i) {\n"
    "            float x = float(i) * stride;\n"
    "            ivec2 o = ivec2(floor(u_dir * x + 0.5));\n"
    "            float w = exp(-x * x / two_sigma2);\n"
    "            float kp = sample_nrf(o, lo_p, hi_p, sp), km = sample_nrf(-o, lo_m, hi_m, sm);\n"
    "            float k = kp * km;\n" /* a dropped sample drops its mirror too */
    "            sum += w * k * (sp + sm);\n"
    "            wsum += 2.0 * w * k;\n"
    "        }\n"
    "    } else {\n"
    "        for (int j = -taps; j <= taps; ++j) {\n"
    "            for (int i = 1; i <= taps; ++i) {\n" /* half plane, each with its mirror */
    "                vec2 x = vec2(float(i), float(j)) * stride;\n"
    "                float w = exp(-dot(x, x) / two_sigma2);\n"
    "                ivec2 o = ivec2(floor(x + 0.5));\n"
    "                float kp = sample_nrf(o, lo_p, hi_p, sp), km = sample_nrf(-o, lo_m, hi_m, sm);\n"
    "                float k = kp * km;\n"
    "                sum += w * k * (sp + sm);\n"
    "                wsum += 2.0 * w * k;\n"
    "            }\n"
    "        }\n"
    "        for (int j = 1; j <= taps; ++j) {\n" /* the column i = 0 */
    "            float y = float(j) * stride;\n"
    "            float w = exp(-y * y / two_sigma2);\n"
    "            ivec2 o = ivec2(0, int(floor(y + 0.5)));\n"
    "            float kp = sample_nrf(o, lo_p, hi_p, sp), km = sample_nrf(-o, lo_m, hi_m, sm);\n"
    "            float k = kp * km;\n"
    "            sum += w * k * (sp + sm);\n"
    "            wsum += 2.0 * w * k;\n"
    "        }\n"
    "    }\n"
    "    o_depth = sum / wsum;\n"
    "}\n";

/* Gaussian blur of the thickness along u_dir (radius u_filter_m at the liquid's depth there,
 * sigma a third of it, taps spread out above u_max_taps pixels as in the depth filter): the
 * sum of sprite chords is bumpy where rays pass between the particles of a regular lattice
 * (lighter lines across the liquid) until it is spread over a couple of particle radii. */
static const char *const thick_blur_fs =
    GLSL_VERSION
    "uniform sampler2D u_thick;\n"
    "uniform sampler2D u_depth;\n"
    "uniform vec2 u_dir;\n"
    "uniform float u_px_per_m;\n"
    "uniform float u_filter_m;\n"
    "uniform int u_max_taps;\n"
    "out float o_thickness;\n"
    "void main() {\n"
    "    ivec2 c = ivec2(gl_FragCoord.xy);\n"
    "    ivec2 size = textureSize(u_thick, 0);\n"
    "    float d = texelFetch(u_depth, c, 0).r;\n"
    "    float t0 = texelFetch(u_thick, c, 0).r;\n"
    "    float radius = d > 0.0 ? u_filter_m * u_px_per_m / d : 0.0;\n"
    "    if (radius < 1.0) { o_thickness = t0; return; }\n"
    "    float stride = max(1.0, radius / float(u_max_taps));\n"
    "    int taps = int(radius / stride);\n"
    "    float two_sigma2 = 2.0 * (radius / 3.0) * (radius / 3.0);\n"
    "    float sum = t0, wsum = 1.0;\n"
    "    for (int i = 1; i <= taps; ++i) {\n"
    "        float x = float(i) * stride;\n"
    "        ivec2 o = ivec2(floor(u_dir * x + 0.5));\n"
    "        float w = exp(-x * x / two_sigma2);\n"
    "        sum += w * (texelFetch(u_thick, clamp(c + o, ivec2(0), size - 1), 0).r +\n"
    "                    texelFetch(u_thick, clamp(c - o, ivec2(0), size - 1), 0).r);\n"
    "        wsum += 2.0 * w;\n"
    "    }\n"
    "    o_thickness = sum / wsum;\n"
    "}\n";

/* Shading (van der Laan, Green and Sainz, "Screen Space Fluid Rendering with Curvature Flow",
 * I3D 2009; Green 2010): the eye-space normal from the smoothed depth (of the two one-sided
 * differences, the smaller: no smearing across depth edges); the background seen through the
 * liquid, displaced along the normal by the thickness (refraction) and attenuated per channel
 * by Beer-Lambert's law, exp(-k T), with the light the water scatters back in its place;
 * Schlick's Fresnel term (F0 = 0.02, water) between that and the reflected sky (a gradient
 * from the horizon to the zenith, the world's direction of the reflected ray); a Blinn-Phong
 * highlight of the light. Alpha fades over the first particle radius of thickness, which
 * anti-aliases silhouettes and leaves single drops half transparent. Premultiplied. */
static const char *const composite_fs =
    GLSL_VERSION
    "uniform sampler2D u_depth;\n"
    "uniform sampler2D u_thick;\n"
    "uniform sampler2D u_bg;\n"
    "uniform sampler2D u_bg_depth;\n"
    "uniform mat4 u_proj;\n"
    "uniform mat4 u_view;\n"
    "uniform vec3 u_light;\n"
    "uniform vec3 u_absorb;\n" /* Beer-Lambert absorption coefficients, 1/m */
    "uniform vec3 u_water;\n" /* colour of deep water (light scattered back) */
    "uniform float u_refract;\n" /* screen displacement (uv) per metre of thickness */
    "uniform float u_radius;\n"
    "out vec4 o_color;\n"
    "vec3 eye_pos(vec2 uv, float d) {\n"
    "    vec2 ndc = uv * 2.0 - 1.0;\n"
    "    return vec3(ndc.x * d / u_proj[0][0], ndc.y * d / u_proj[1][1], -d);\n"
    "}\n"
    "float eye_depth_of(float w) {\n" /* window depth -> eye distance */
    "    return u_proj[3][2] / ((w * 2.0 - 1.0) + u_proj[2][2]);\n"
    "}\n"
    "vec3 tangent(ivec2 c, ivec2 dir, ivec2 size, vec2 texel, vec2 uv, vec3 P) {\n"
    "    ivec2 cp = clamp(c + dir, ivec2(0), size - 1);\n"
    "    ivec2 cm = clamp(c - dir, ivec2(0), size - 1);\n"
    "    float dp = texelFetch(u_depth, cp, 0).r;\n"
    "    float dm = texelFetch(u_depth, cm, 0).r;\n"
    "    vec2 step = vec2(dir) * texel;\n"
    "    vec3 fwd = dp > 0.0 ? eye_pos(uv + step, dp) - P : vec3(0.0);\n"
    "    vec3 bwd = dm > 0.0 ? P - eye_pos(uv - step, dm) : vec3(0.0);\n"
    "    if (dp <= 0.0 && dm <= 0.0) return eye_pos(uv + step, -P.z) - P;\n"
    "    if (dp <= 0.0) return bwd;\n"
    "    if (dm <= 0.0) return fwd;\n"
    "    return abs(fwd.z) < abs(bwd.z) ? fwd : bwd;\n"
    "}\n"
    "vec3 sky(vec3 r, vec3 sun) {\n" /* r, sun: world directions */
    "    float up = r.y;\n"
    "    vec3 horizon = vec3(0.85, 0.90, 0.95), zenith = vec3(0.35, 0.55, 0.85);\n"
    "    vec3 ground = vec3(0.30, 0.31, 0.33);\n"
    "    vec3 s = mix(horizon, zenith, pow(clamp(up, 0.0, 1.0), 0.5));\n"
    "    s += vec3(1.0, 0.95, 0.85) * 0.6 * pow(max(dot(r, sun), 0.0), 8.0);\n" /* sun glow */
    "    return up >= 0.0 ? s : mix(horizon, ground, clamp(-up * 4.0, 0.0, 1.0));\n"
    "}\n"
    "void main() {\n"
    "    ivec2 c = ivec2(gl_FragCoord.xy);\n"
    "    ivec2 size = textureSize(u_depth, 0);\n"
    "    vec2 texel = 1.0 / vec2(size);\n"
    "    vec2 uv = (vec2(c) + 0.5) * texel;\n"
    "    float bgw = texture(u_bg_depth, uv).r;\n"
    "    float d = texelFetch(u_depth, c, 0).r;\n"
    "    if (d <= 0.0 || (bgw < 1.0 && eye_depth_of(bgw) < d)) {\n"
    "        o_color = vec4(0.0);\n" /* no fluid, or a line in front of it */
    "        return;\n"
    "    }\n"
    "    vec3 P = eye_pos(uv, d);\n"
    "    vec3 n = normalize(cross(tangent(c, ivec2(1, 0), size, texel, uv, P),\n"
    "                             tangent(c, ivec2(0, 1), size, texel, uv, P)));\n"
    "    vec3 V = normalize(-P);\n"
    "    if (dot(n, V) < 0.0) n = -n;\n"
    "    float Tr = max(texelFetch(u_thick, c, 0).r, 0.0);\n"
    "    float T = max(Tr, u_radius);\n"
    "    float NV = max(dot(n, V), 0.0);\n"
    "    float F = 0.02 + 0.98 * pow(1.0 - NV, 5.0);\n"
    "    vec2 ruv = clamp(uv - n.xy * u_refract * min(T, 0.25), vec2(0.0), vec2(1.0));\n"
    "    vec3 behind = texture(u_bg, ruv).rgb;\n"
    "    vec3 att = exp(-u_absorb * T);\n"
    "    vec3 refracted = behind * att + u_water * (vec3(1.0) - att);\n"
    "    mat3 to_world = transpose(mat3(u_view));\n"
    "    vec3 R = to_world * reflect(-V, n);\n"
    "    vec3 H = normalize(u_light + V);\n"
    "    float spec = pow(max(dot(n, H), 0.0), 60.0) * 0.6;\n"
    "    vec3 col = mix(refracted, sky(R, to_world * u_light), F) + vec3(spec);\n"
    "    float a = smoothstep(0.0, 0.5 * u_radius, Tr);\n"
    "    o_color = vec4(min(col, vec3(1.0)) * a, a);\n"
    "}\n";

/* The half-resolution fluid (premultiplied, bilinear) over the full-resolution background. */
static const char *const present_fs =
    GLSL_VERSION
    "in vec2 v_uv;\n"
    "uniform sampler2D u_bg;\n"
    "uniform sampler2D u_fluid;\n"
    "out vec4 o_color;\n"
    "void main() {\n"
    "    vec3 bg = texelFetch(u_bg, ivec2(gl_FragCoord.xy), 0).rgb;\n"
    "    vec4 fl = texture(u_fluid, v_uv);\n"
    "    o_color = vec4(bg * (1.0 - fl.a) + fl.rgb, 1.0);\n"
    "}\n";

static const char *const text_vs =
    GLSL_VERSION
    "layout(location = 0) in vec2 a_pos;\n"
    "layout(location = 1) in vec2 a_uv;\n"
    "layout(location = 2) in vec4 a_color;\n"
    "uniform vec2 u_screen;\n"
    "out vec2 v_uv;\n"
    "out vec4 v_color;\n"
    "void main() {\n"
    "    v_uv = a_uv;\n"
    "    v_color = a_color;\n"
    "    gl_Position = vec4(a_pos.x / u_screen.x * 2.0 - 1.0,\n"
    "                       1.0 - a_pos.y / u_screen.y * 2.0, 0.0, 1.0);\n"
    "}\n";

static const char *const text_fs =
    GLSL_VERSION
    "in vec2 v_uv;\n"
    "in vec4 v_color;\n"
    "uniform sampler2D u_font;\n"
    "out vec4 o_color;\n"
    "void main() {\n"
    "    o_color = vec4(v_color.rgb, v_color.a * texture(u_font, v_uv).r);\n"
    "}\n";
/* clang-format on */

static GLuint compile(GLenum type, const char *src, const char *name, char *msg, size_t n) {
    GLuint s = glCreateShader(type);
    glShaderSource(s, 1, &src, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[1024] = "";
        glGetShaderInfoLog(s, sizeof log, NULL, log);
        snprintf(msg, n, "the %s shader does not compile: %s", name, log);
        glDeleteShader(s);
        return 0;
    }
    return s;
}

static GLuint program(const char *vs_src, const char *fs_src, const char *name, char *msg,
                      size_t n) {
    GLuint vs = compile(GL_VERTEX_SHADER, vs_src, name, msg, n);
    if (!vs) return 0;
    GLuint fs = compile(GL_FRAGMENT_SHADER, fs_src, name, msg, n);
    if (!fs) {
        glDeleteShader(vs);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, vs);
    glAttachShader(p, fs);
    glLinkProgram(p);
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[1024] = "";
        glGetProgramInfoLog(p, sizeof log, NULL, log);
        snprintf(msg, n, "the %s shader program does not link: %s", name, log);
        glDeleteProgram(p);
        return 0;
    }
    return p;
}

static void set_mat4(GLuint p, const char *name, const float *m) {
    glUniformMatrix4fv(glGetUniformLocation(p, name), 1, GL_FALSE, m);
}
static void set_f(GLuint p, const char *name, float v) {
    glUniform1f(glGetUniformLocation(p, name), v);
}
static void set_i(GLuint p, const char *name, int v) {
    glUniform1i(glGetUniformLocation(p, name), v);
}
static void set_v3(GLuint p, const char *name, float x, float y, float z) {
    glUniform3f(glGetUniformLocation(p, name), x, y, z);
}

/* ---- creation ----------------------------------------------------------------------------- */

int pbfview_renderer_create(pbfview_renderer **out, char *msg, size_t n) {
    *out = NULL;
    pbfview_renderer *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(msg, n, "out of memory");
        return -1;
    }
    r->ramp_field = -1;
    struct {
        GLuint *dst;
        const char *vs, *fs, *name;
    } progs[] = {
        {&r->prog_sprite, sprite_vs, sprite_fs, "sphere sprite"},
        {&r->prog_depth, sprite_vs, depth_fs, "fluid depth"},
        {&r->prog_thick, sprite_vs, thick_fs, "fluid thickness"},
        {&r->prog_bg, fullscreen_vs, bg_fs, "background"},
        {&r->prog_lines, lines_vs, lines_fs, "line"},
        {&r->prog_blur, fullscreen_vs, nrf_fs, "narrow-range filter"},
        {&r->prog_thick_blur, fullscreen_vs, thick_blur_fs, "thickness blur"},
        {&r->prog_composite, fullscreen_vs, composite_fs, "fluid composite"},
        {&r->prog_present, fullscreen_vs, present_fs, "fluid present"},
        {&r->prog_text, text_vs, text_fs, "text"},
    };
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; ++i) {
        *progs[i].dst = program(progs[i].vs, progs[i].fs, progs[i].name, msg, n);
        if (!*progs[i].dst) {
            pbfview_renderer_destroy(r);
            return -1;
        }
    }

    /* Particles: one float attribute per VBO (locations 0..6 = x y z density vx vy vz). */
    glGenVertexArrays(1, &r->vao_particles);
    glBindVertexArray(r->vao_particles);
    glGenBuffers(VBO_COUNT, r->vbo);
    for (int i = 0; i < VBO_COUNT; ++i) {
        glBindBuffer(GL_ARRAY_BUFFER, r->vbo[i]);
        glVertexAttribPointer((GLuint)i, 1, GL_FLOAT, GL_FALSE, 0, NULL);
        glEnableVertexAttribArray((GLuint)i);
    }

    glGenVertexArrays(1, &r->vao_empty);

    glGenVertexArrays(1, &r->vao_lines);
    glBindVertexArray(r->vao_lines);
    glGenBuffers(1, &r->vbo_lines);
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_lines);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 3 * sizeof(float), NULL);
    glEnableVertexAttribArray(0);

    glGenVertexArrays(1, &r->vao_text);
    glBindVertexArray(r->vao_text);
    glGenBuffers(1, &r->vbo_text);
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_text);
    const GLsizei stride = 8 * sizeof(float);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, stride, NULL);
    glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, stride, (const void *)(2 * sizeof(float)));
    glVertexAttribPointer(2, 4, GL_FLOAT, GL_FALSE, stride, (const void *)(4 * sizeof(float)));
    glEnableVertexAttribArray(0);
    glEnableVertexAttribArray(1);
    glEnableVertexAttribArray(2);
    glBindVertexArray(0);

    unsigned char atlas[PBFVIEW_FONT_ATLAS_W * PBFVIEW_FONT_ATLAS_H];
    pbfview_font_atlas(atlas);
    glGenTextures(1, &r->font_tex);
    glBindTexture(GL_TEXTURE_2D, r->font_tex);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R8, PBFVIEW_FONT_ATLAS_W, PBFVIEW_FONT_ATLAS_H, 0, GL_RED,
                 GL_UNSIGNED_BYTE, atlas);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);

    glGenTextures(1, &r->ramp_tex);
    glBindTexture(GL_TEXTURE_1D, r->ramp_tex);
    glTexParameteri(GL_TEXTURE_1D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_1D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_1D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);

    glEnable(GL_PROGRAM_POINT_SIZE);
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) {
        snprintf(msg, n, "OpenGL error 0x%04x while setting up the renderer", (unsigned)e);
        pbfview_renderer_destroy(r);
        return -1;
    }
    *out = r;
    return 0;
}

static void delete_targets(pbfview_renderer *r) {
    GLuint fbos[] = {r->fbo_bg, r->fbo_a, r->fbo_b, r->fbo_thick, r->fbo_fluid};
    GLuint texs[] = {r->tex_bg, r->tex_bg_depth, r->tex_a, r->tex_b, r->tex_thick, r->tex_fluid};
    glDeleteFramebuffers(5, fbos);
    glDeleteTextures(6, texs);
    glDeleteRenderbuffers(1, &r->rb_a);
    r->fbo_bg = r->fbo_a = r->fbo_b = r->fbo_thick = r->fbo_fluid = 0;
    r->tex_bg = r->tex_bg_depth = r->tex_a = r->tex_b = r->tex_thick = r->tex_fluid = 0;
    r->rb_a = 0;
    r->fb_w = r->fb_h = 0;
    r->targets_ok = 0;
}

void pbfview_renderer_destroy(pbfview_renderer *r) {
    if (!r) return;
    GLuint progs[] = {r->prog_sprite,    r->prog_depth,   r->prog_thick,
                      r->prog_bg,        r->prog_lines,   r->prog_blur,      r->prog_thick_blur,
                      r->prog_composite, r->prog_present, r->prog_text};
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; ++i)
        if (progs[i]) glDeleteProgram(progs[i]);
    if (r->vao_particles) {
        glDeleteBuffers(VBO_COUNT, r->vbo);
        glDeleteBuffers(1, &r->vbo_lines);
        glDeleteBuffers(1, &r->vbo_text);
        GLuint vaos[] = {r->vao_particles, r->vao_empty, r->vao_lines, r->vao_text};
        glDeleteVertexArrays(4, vaos);
        glDeleteTextures(1, &r->font_tex);
        glDeleteTextures(1, &r->ramp_tex);
    }
    delete_targets(r);
    free(r->text_verts);
    free(r);
}

static GLuint make_texture(GLint internal, int w, int h, GLenum format, GLenum type, GLint filter) {
    GLuint t;
    glGenTextures(1, &t);
    glBindTexture(GL_TEXTURE_2D, t);
    glTexImage2D(GL_TEXTURE_2D, 0, internal, w, h, 0, format, type, NULL);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    return t;
}

static GLuint make_fbo(GLuint color, GLuint depth_tex, GLuint depth_rb, int *ok) {
    GLuint f;
    glGenFramebuffers(1, &f);
    glBindFramebuffer(GL_FRAMEBUFFER, f);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color, 0);
    if (depth_tex)
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_TEXTURE_2D, depth_tex, 0);
    if (depth_rb)
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, depth_rb);
    if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) *ok = 0;
    return f;
}

/* (Re)creates the screen-space fluid targets for a w x h framebuffer. */
static int ensure_targets(pbfview_renderer *r, int w, int h) {
    if (r->fb_w == w && r->fb_h == h) return r->targets_ok;
    delete_targets(r);
    r->fb_w = w;
    r->fb_h = h;
    int ok = 1;
    r->tex_bg = make_texture(GL_RGBA8, w, h, GL_RGBA, GL_UNSIGNED_BYTE, GL_LINEAR);
    r->tex_bg_depth =
        make_texture(GL_DEPTH_COMPONENT24, w, h, GL_DEPTH_COMPONENT, GL_UNSIGNED_INT, GL_NEAREST);
    r->fbo_bg = make_fbo(r->tex_bg, r->tex_bg_depth, 0, &ok);
    /* Small windows at full resolution: at half of it, particles project to a pixel or less
     * and drops and edges turn into 2x2 blocks. */
    const int scale = (long)w * (long)h > SSF_FULL_RES_PIXELS ? SSF_SCALE : 1;
    const int sw = (w + scale - 1) / scale, sh = (h + scale - 1) / scale;
    r->ssf_w = sw;
    r->ssf_h = sh;
    r->tex_a = make_texture(GL_R32F, sw, sh, GL_RED, GL_FLOAT, GL_NEAREST);
    glGenRenderbuffers(1, &r->rb_a);
    glBindRenderbuffer(GL_RENDERBUFFER, r->rb_a);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT24, sw, sh);
    r->fbo_a = make_fbo(r->tex_a, 0, r->rb_a, &ok);
    r->tex_b = make_texture(GL_R32F, sw, sh, GL_RED, GL_FLOAT, GL_NEAREST);
    r->fbo_b = make_fbo(r->tex_b, 0, 0, &ok);
    r->tex_thick = make_texture(GL_R32F, sw, sh, GL_RED, GL_FLOAT, GL_NEAREST);
    r->fbo_thick = make_fbo(r->tex_thick, 0, 0, &ok);
    r->tex_fluid = make_texture(GL_RGBA8, sw, sh, GL_RGBA, GL_UNSIGNED_BYTE, GL_LINEAR);
    r->fbo_fluid = make_fbo(r->tex_fluid, 0, 0, &ok);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    r->targets_ok = ok && glGetError() == GL_NO_ERROR;
    return r->targets_ok;
}

/* ---- per frame ---------------------------------------------------------------------------- */

/* Copies the library's arrays into the VBOs the current colour field needs (x, y, z always). */
static void upload_particles(pbfview_renderer *r, const pbfview_frame *f) {
    const pbf_particles *p = f->particles;
    if (p->count <= 0) return;
    if (p->count > r->capacity) {
        int cap = r->capacity + r->capacity / 2;
        if (cap < p->count) cap = p->count;
        if (cap < 1024) cap = 1024;
        for (int i = 0; i < VBO_COUNT; ++i) {
            glBindBuffer(GL_ARRAY_BUFFER, r->vbo[i]);
            glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)cap * (GLsizeiptr)sizeof(float), NULL,
                         GL_DYNAMIC_DRAW);
            r->uploaded[i] = 0;
        }
        r->capacity = cap;
    }
    const float *src[VBO_COUNT] = {p->x, p->y, p->z, p->density, p->vx, p->vy, p->vz};
    const int need_density = f->field == PBF_COLOR_DENSITY;
    const int need_velocity = !need_density;
    const GLsizeiptr bytes = (GLsizeiptr)p->count * (GLsizeiptr)sizeof(float);
    for (int i = 0; i < VBO_COUNT; ++i) {
        /* the fluid surface uses positions only */
        int need =
            i <= VBO_Z ||
            (!f->fluid && ((i == VBO_DENSITY && need_density) || (i >= VBO_VX && need_velocity)));
        if (!need || r->uploaded[i] == f->particles_version + 1) continue;
        glBindBuffer(GL_ARRAY_BUFFER, r->vbo[i]);
        glBufferSubData(GL_ARRAY_BUFFER, 0, bytes, src[i]);
        r->uploaded[i] = f->particles_version + 1;
    }
}

static void update_ramp(pbfview_renderer *r, pbf_color_field field) {
    if (r->ramp_field == (int)field) return;
    float texels[RAMP_TEXELS * 3];
    for (int i = 0; i < RAMP_TEXELS; ++i)
        pbf_colormap(field, (float)i / (float)(RAMP_TEXELS - 1), texels + 3 * i);
    glBindTexture(GL_TEXTURE_1D, r->ramp_tex);
    glTexImage1D(GL_TEXTURE_1D, 0, GL_RGB8, RAMP_TEXELS, 0, GL_RGB, GL_FLOAT, texels);
    r->ramp_field = (int)field;
}

static void light_eye(const pbfview_frame *f, float out[3]) {
    const float *l = f->light_dir, *v = f->view;
    float e[3];
    for (int i = 0; i < 3; ++i)
        e[i] = v[0 * 4 + i] * l[0] + v[1 * 4 + i] * l[1] + v[2 * 4 + i] * l[2];
    float len = sqrtf(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    if (len <= 0) len = 1;
    for (int i = 0; i < 3; ++i) out[i] = e[i] / len;
}

static void draw_background(pbfview_renderer *r) {
    glDisable(GL_DEPTH_TEST);
    glDepthMask(GL_FALSE);
    glUseProgram(r->prog_bg);
    set_v3(r->prog_bg, "u_top", 0.15f, 0.16f, 0.18f);
    set_v3(r->prog_bg, "u_bottom", 0.52f, 0.52f, 0.53f);
    glBindVertexArray(r->vao_empty);
    glDrawArrays(GL_TRIANGLES, 0, 3);
    glDepthMask(GL_TRUE);
    glEnable(GL_DEPTH_TEST);
}

static void draw_lines(pbfview_renderer *r, const pbfview_frame *f) {
    if (f->line_vertices <= 0) return;
    glUseProgram(r->prog_lines);
    set_mat4(r->prog_lines, "u_view", f->view);
    set_mat4(r->prog_lines, "u_proj", f->proj);
    glBindVertexArray(r->vao_lines);
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_lines);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)f->line_vertices * 3 * (GLsizeiptr)sizeof(float),
                 f->lines, GL_STREAM_DRAW);
    GLint color = glGetUniformLocation(r->prog_lines, "u_color");
    int nc = f->container_vertices < f->line_vertices ? f->container_vertices : f->line_vertices;
    if (nc > 0) {
        glUniform4f(color, 0.85f, 0.86f, 0.88f, 1.0f);
        glDrawArrays(GL_LINES, 0, nc);
    }
    if (f->line_vertices > nc) {
        glUniform4f(color, 0.95f, 0.55f, 0.15f, 1.0f);
        glDrawArrays(GL_LINES, nc, f->line_vertices - nc);
    }
}

/* `target_height`: height in pixels of the framebuffer drawn into, for the sprite size. */
static void sprite_uniforms(GLuint p, const pbfview_frame *f, int target_height) {
    set_mat4(p, "u_view", f->view);
    set_mat4(p, "u_proj", f->proj);
    set_f(p, "u_radius", f->radius);
    set_f(p, "u_point_scale", f->proj[5] * (float)target_height);
    set_i(p, "u_field", (int)f->field);
    glUniform2f(glGetUniformLocation(p, "u_range"), f->range[0], f->range[1]);
}

static void draw_points(pbfview_renderer *r, const pbfview_frame *f) {
    if (f->particles->count <= 0) return;
    glBindVertexArray(r->vao_particles);
    glDrawArrays(GL_POINTS, 0, f->particles->count);
}

static void draw_fluid(pbfview_renderer *r, const pbfview_frame *f, const float light[3]) {
    const int w = f->width, h = f->height, sw = r->ssf_w, sh = r->ssf_h;
    /* (0) background and lines, kept as colour + depth textures (full resolution) */
    glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_bg);
    glViewport(0, 0, w, h);
    glClear(GL_DEPTH_BUFFER_BIT);
    draw_background(r);
    draw_lines(r, f);

    /* (1) eye depth of the nearest sphere surface (half resolution from here to (4)) */
    glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_a);
    glViewport(0, 0, sw, sh);
    glClearColor(0, 0, 0, 0);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    glUseProgram(r->prog_depth);
    sprite_uniforms(r->prog_depth, f, sh);
    draw_points(r, f);

    /* (2) narrow-range filter, ping-pong between a and b: x, y, x at half the radius, then a
     * small 2D pass. A 1D pass leaves streaks along its direction where the depth is rough (a
     * splash, liquid climbing a wall, drops in front): each column keeps a different part of
     * its neighbourhood (samples in front of the range are dropped with their mirror), and the
     * normals of the shading turn the small differences between columns into bright lines.
     * Ending on the y pass hung vertical curtains below every splash and along the walls,
     * wider than the 2D pass can remove; the short x pass after it averages across those
     * columns (tests/viewer_streak_check.py measures them). */
    glDisable(GL_DEPTH_TEST);
    glUseProgram(r->prog_blur);
    set_i(r->prog_blur, "u_depth", 0);
    set_f(r->prog_blur, "u_px_per_m", 0.5f * f->proj[5] * (float)sh);
    set_f(r->prog_blur, "u_filter_m", SSF_FILTER_RADII * f->radius);
    set_f(r->prog_blur, "u_threshold_m", SSF_THRESHOLD_RADII * f->radius);
    set_f(r->prog_blur, "u_clamp_m", SSF_CLAMP_RADII * f->radius);
    const GLint dir = glGetUniformLocation(r->prog_blur, "u_dir");
    const GLint max_taps = glGetUniformLocation(r->prog_blur, "u_max_taps");
    const GLint max_px = glGetUniformLocation(r->prog_blur, "u_max_px");
    glBindVertexArray(r->vao_empty);
    glActiveTexture(GL_TEXTURE0);
    static const struct {
        float dir[2], radius;
        int taps;
    } passes[] = {{{1, 0}, 1, SSF_MAX_TAPS},
                  {{0, 1}, 1, SSF_MAX_TAPS},
                  {{1, 0}, 0.5f, SSF_MAX_TAPS},
                  {{0, 0}, 1, (int)SSF_FINAL_PX}};
    const int npass = (int)(sizeof passes / sizeof passes[0]);
    for (int pass = 0; pass < npass; ++pass) {
        glBindFramebuffer(GL_FRAMEBUFFER, pass % 2 ? r->fbo_a : r->fbo_b);
        glBindTexture(GL_TEXTURE_2D, pass % 2 ? r->tex_b : r->tex_a);
        glUniform2f(dir, passes[pass].dir[0], passes[pass].dir[1]);
        glUniform1i(max_taps, passes[pass].taps);
        glUniform1f(max_px, pass < npass - 1 ? 1e9f : SSF_FINAL_PX);
        set_f(r->prog_blur, "u_filter_m", passes[pass].radius * SSF_FILTER_RADII * f->radius);
        glDrawArrays(GL_TRIANGLES, 0, 3);
    }
    /* the smoothed depth, and the other texture, free again */
    const GLuint depth = npass % 2 ? r->tex_b : r->tex_a;
    const GLuint spare_fbo = npass % 2 ? r->fbo_a : r->fbo_b,
                 spare = npass % 2 ? r->tex_a : r->tex_b;

    /* (3) thickness: additive blending of the spheres' chord lengths */
    glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_thick);
    glClear(GL_COLOR_BUFFER_BIT);
    glEnable(GL_BLEND);
    glBlendFunc(GL_ONE, GL_ONE);
    glUseProgram(r->prog_thick);
    sprite_uniforms(r->prog_thick, f, sh);
    draw_points(r, f);
    glDisable(GL_BLEND);
    /* (3b) thickness spread over a few particle radii: thick -> spare (x), spare -> thick (y) */
    glUseProgram(r->prog_thick_blur);
    set_i(r->prog_thick_blur, "u_thick", 0);
    set_i(r->prog_thick_blur, "u_depth", 1);
    set_f(r->prog_thick_blur, "u_px_per_m", 0.5f * f->proj[5] * (float)sh);
    set_f(r->prog_thick_blur, "u_filter_m", SSF_THICK_BLUR_RADII * f->radius);
    set_i(r->prog_thick_blur, "u_max_taps", SSF_MAX_TAPS);
    const GLint tdir = glGetUniformLocation(r->prog_thick_blur, "u_dir");
    glBindVertexArray(r->vao_empty);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, depth);
    glActiveTexture(GL_TEXTURE0);
    glBindFramebuffer(GL_FRAMEBUFFER, spare_fbo);
    glBindTexture(GL_TEXTURE_2D, r->tex_thick);
    glUniform2f(tdir, 1, 0);
    glDrawArrays(GL_TRIANGLES, 0, 3);
    glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_thick);
    glBindTexture(GL_TEXTURE_2D, spare);
    glUniform2f(tdir, 0, 1);
    glDrawArrays(GL_TRIANGLES, 0, 3);

    /* (4) shading of the surface into a premultiplied RGBA texture */
    glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_fluid);
    glUseProgram(r->prog_composite);
    GLuint texs[4] = {depth, r->tex_thick, r->tex_bg, r->tex_bg_depth};
    const char *names[4] = {"u_depth", "u_thick", "u_bg", "u_bg_depth"};
    for (int i = 0; i < 4; ++i) {
        glActiveTexture(GL_TEXTURE0 + (GLenum)i);
        glBindTexture(GL_TEXTURE_2D, texs[i]);
        set_i(r->prog_composite, names[i], i);
    }
    set_mat4(r->prog_composite, "u_proj", f->proj);
    set_mat4(r->prog_composite, "u_view", f->view);
    set_f(r->prog_composite, "u_radius", f->radius);
    set_v3(r->prog_composite, "u_light", light[0], light[1], light[2]);
    set_v3(r->prog_composite, "u_absorb", 80.0f, 24.0f, 10.0f);
    set_v3(r->prog_composite, "u_water", 0.05f, 0.26f, 0.42f);
    set_f(r->prog_composite, "u_refract", 0.1f);
    glDrawArrays(GL_TRIANGLES, 0, 3);

    /* (5) over the background, into the window */
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glViewport(0, 0, w, h);
    glUseProgram(r->prog_present);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, r->tex_bg);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, r->tex_fluid);
    set_i(r->prog_present, "u_bg", 0);
    set_i(r->prog_present, "u_fluid", 1);
    glDrawArrays(GL_TRIANGLES, 0, 3);
    glEnable(GL_DEPTH_TEST);
    glActiveTexture(GL_TEXTURE0);
}

/* Appends one textured quad (two triangles) to the overlay vertex array. */
static void quad(float *v, float x0, float y0, float x1, float y1, float u0, float v0, float u1,
                 float v1, const float c[4]) {
    const float corners[6][4] = {{x0, y0, u0, v0}, {x1, y0, u1, v0}, {x1, y1, u1, v1},
                                 {x0, y0, u0, v0}, {x1, y1, u1, v1}, {x0, y1, u0, v1}};
    for (int k = 0; k < 6; ++k) {
        memcpy(v + 8 * k, corners[k], 4 * sizeof(float));
        memcpy(v + 8 * k + 4, c, 4 * sizeof(float));
    }
}

static void cell_uv(int ch, float uv[4]) {
    int cell = ch - 32;
    int col = cell % PBFVIEW_FONT_COLUMNS, row = cell / PBFVIEW_FONT_COLUMNS;
    uv[0] = (float)(col * PBFVIEW_FONT_CELL_W) / (float)PBFVIEW_FONT_ATLAS_W;
    uv[1] = (float)(row * PBFVIEW_FONT_CELL_H) / (float)PBFVIEW_FONT_ATLAS_H;
    uv[2] = (float)((col + 1) * PBFVIEW_FONT_CELL_W) / (float)PBFVIEW_FONT_ATLAS_W;
    uv[3] = (float)((row + 1) * PBFVIEW_FONT_CELL_H) / (float)PBFVIEW_FONT_ATLAS_H;
}

static void draw_overlay(pbfview_renderer *r, const pbfview_frame *f) {
    const char *text = f->overlay;
    if (!text || !text[0]) return;
    const float scale = f->height >= 600 ? 2.0f : 1.0f;
    const float cw = PBFVIEW_FONT_CELL_W * scale, chh = (PBFVIEW_FONT_CELL_H + 2) * scale;
    const float margin = 4.0f * scale;
    size_t len = strlen(text);
    int lines = 1, col = 0, maxcol = 0;
    for (size_t i = 0; i < len; ++i) {
        if (text[i] == '\n') {
            ++lines;
            col = 0;
        } else if (++col > maxcol) {
            maxcol = col;
        }
    }
    size_t need = (len + 1) * 6 * 8;
    if (need > r->text_cap) {
        float *nv = realloc(r->text_verts, need * sizeof(float));
        if (!nv) return;
        r->text_verts = nv;
        r->text_cap = need;
    }
    float *v = r->text_verts;
    size_t quads = 0;
    const float panel[4] = {0.0f, 0.0f, 0.0f, 0.45f};
    const float ink[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    float uv[4];
    cell_uv(PBFVIEW_FONT_SOLID, uv);
    float mu = 0.5f * (uv[0] + uv[2]), mv = 0.5f * (uv[1] + uv[3]);
    quad(v, 0, 0, 2 * margin + (float)maxcol * cw, 2 * margin + (float)lines * chh, mu, mv, mu, mv,
         panel);
    ++quads;
    float x = margin, y = margin + scale;
    for (size_t i = 0; i < len; ++i) {
        int c = (unsigned char)text[i];
        if (c == '\n') {
            x = margin;
            y += chh;
            continue;
        }
        if (c < 32 || c > 126) c = '?';
        if (c != ' ') {
            cell_uv(c, uv);
            quad(v + quads * 48, x, y, x + cw, y + PBFVIEW_FONT_CELL_H * scale, uv[0], uv[1], uv[2],
                 uv[3], ink);
            ++quads;
        }
        x += cw;
    }
    glDisable(GL_DEPTH_TEST);
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glUseProgram(r->prog_text);
    glUniform2f(glGetUniformLocation(r->prog_text, "u_screen"), (float)f->width, (float)f->height);
    set_i(r->prog_text, "u_font", 0);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, r->font_tex);
    glBindVertexArray(r->vao_text);
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_text);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(quads * 48 * sizeof(float)), v, GL_STREAM_DRAW);
    glDrawArrays(GL_TRIANGLES, 0, (GLsizei)(quads * 6));
    glDisable(GL_BLEND);
    glEnable(GL_DEPTH_TEST);
}

int pbfview_renderer_draw(pbfview_renderer *r, const pbfview_frame *f, char *msg, size_t n) {
    int rc = 0;
    pbfview_frame fr = *f;
    if (fr.width <= 0 || fr.height <= 0) return 0; /* minimised */
    if (fr.fluid && !ensure_targets(r, fr.width, fr.height)) {
        snprintf(msg, n,
                 "the screen-space fluid framebuffers (%dx%d, R32F) are not supported; "
                 "showing spheres",
                 fr.width, fr.height);
        fr.fluid = 0;
        rc = -1;
    }
    upload_particles(r, &fr);
    update_ramp(r, fr.field);
    float light[3];
    light_eye(&fr, light);

    glViewport(0, 0, fr.width, fr.height);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    if (fr.fluid) {
        draw_fluid(r, &fr, light);
    } else {
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
        glClear(GL_DEPTH_BUFFER_BIT);
        draw_background(r);
        draw_lines(r, &fr);
        glUseProgram(r->prog_sprite);
        sprite_uniforms(r->prog_sprite, &fr, fr.height);
        set_v3(r->prog_sprite, "u_light", light[0], light[1], light[2]);
        set_i(r->prog_sprite, "u_ramp", 0);
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_1D, r->ramp_tex);
        draw_points(r, &fr);
    }
    draw_overlay(r, &fr);
    glBindVertexArray(0);
    return rc;
}
