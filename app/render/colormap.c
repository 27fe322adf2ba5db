/* Colour ramps and value normalisation (see colormap.h). */
#include "render/colormap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[] = {"water", "density", "speed"};

int pbf_color_field_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < 3; ++i)
        if (strcmp(name, field_names[i]) == 0) return i;
    return -1;
}

const char *pbf_color_field_name(pbf_color_field f) {
    return (int)f >= 0 && (int)f < 3 ? field_names[f] : "unknown";
}

static float clamp01(float t) {
    if (!(t > 0)) return 0; /* also NaN -> 0 */
    return t < 1 ? t : 1;
}

/* Piecewise-linear ramp through n equally spaced control colours. */
static void ramp(const float (*c)[3], int n, float t, float rgb[3]) {
    float x = t * (float)(n - 1);
    int i = (int)x;
    if (i >= n - 1) i = n - 2;
    float u = x - (float)i;
    for (int k = 0; k < 3; ++k) rgb[k] = c[i][k] + (c[i + 1][k] - c[i][k]) * u;
}

/* matplotlib's viridis sampled at t = 0, 0.1, ..., 1. */
static const float viridis[11][3] = {
    {0.267004f, 0.004874f, 0.329415f}, {0.282623f, 0.140926f, 0.457517f},
    {0.253935f, 0.265254f, 0.529983f}, {0.206756f, 0.371758f, 0.553117f},
    {0.163625f, 0.471133f, 0.558148f}, {0.127568f, 0.566949f, 0.550556f},
    {0.134692f, 0.658636f, 0.517649f}, {0.266941f, 0.748751f, 0.440573f},
    {0.477504f, 0.821444f, 0.318195f}, {0.741388f, 0.873449f, 0.149561f},
    {0.993248f, 0.906157f, 0.143936f},
};

/* Deep blue (calm) to light blue-white (fast). */
static const float water[4][3] = {
    {0.03f, 0.22f, 0.55f},
    {0.10f, 0.42f, 0.78f},
    {0.45f, 0.72f, 0.94f},
    {0.88f, 0.95f, 1.00f},
};

/* Google's Turbo, polynomial approximation (Mikhailov 2019, fit by R. Du, Apache-2.0). */
static void turbo(float t, float rgb[3]) {
    const double x = t, x2 = x * x, x3 = x2 * x, x4 = x2 * x2, x5 = x4 * x;
    double r = 0.13572138 + 4.61539260 * x - 42.66032258 * x2 + 132.13108234 * x3 -
               152.94239396 * x4 + 59.28637943 * x5;
    double g = 0.09140261 + 2.19418839 * x + 4.84296658 * x2 - 14.18503333 * x3 + 4.27729857 * x4 +
               2.82956604 * x5;
    double b = 0.10667330 + 12.64194608 * x - 60.58204836 * x2 + 110.36276771 * x3 -
               89.90310912 * x4 + 27.34824973 * x5;
    rgb[0] = clamp01((float)r);
    rgb[1] = clamp01((float)g);
    rgb[2] = clamp01((float)b);
}

void pbf_colormap(pbf_color_field f, float t, float rgb[3]) {
    t = clamp01(t);
    switch (f) {
    case PBF_COLOR_DENSITY: ramp(viridis, 11, t, rgb); return;
    case PBF_COLOR_SPEED: turbo(t, rgb); return;
    case PBF_COLOR_WATER:
    default: ramp(water, 4, t, rgb); return;
    }
}

float pbf_color_quantity(pbf_color_field f, float density, float speed) {
    return f == PBF_COLOR_DENSITY ? density : speed;
}

void pbf_color_default_range(pbf_color_field f, float rho0, float vmax, float range[2]) {
    if (f == PBF_COLOR_DENSITY) {
        if (!(rho0 > 0)) rho0 = 1000.0f;
        range[0] = 0.9f * rho0;
        range[1] = 1.1f * rho0;
    } else {
        range[0] = 0.0f;
        range[1] = vmax > 0 ? vmax : 1.0f;
    }
}

float pbf_color_value(pbf_color_field f, float density, float speed, const float range[2]) {
    float q = pbf_color_quantity(f, density, speed);
    float span = range[1] - range[0];
    return clamp01(span > 0 ? (q - range[0]) / span : 0.0f);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between the order statistics of sorted v[0..n-1] at percent p. */
static float percentile(const float *v, size_t n, double p) {
    double x = p / 100.0 * (double)(n - 1);
    size_t i = (size_t)x;
    if (i >= n - 1) return v[n - 1];
    double u = x - (double)i;
    return (float)((double)v[i] + ((double)v[i + 1] - (double)v[i]) * u);
}

int pbf_color_auto_range(float *values, size_t n, float range[2]) {
    size_t m = 0;
    for (size_t i = 0; i < n; ++i)
        if (isfinite(values[i])) values[m++] = values[i];
    if (m == 0) return 0;
    qsort(values, m, sizeof *values, cmp_float);
    float lo = percentile(values, m, PBF_COLOR_AUTO_LO);
    float hi = percentile(values, m, PBF_COLOR_AUTO_HI);
    if (!(hi > lo)) {
        float d = fabsf(lo) * 0.01f;
        if (!(d > 1e-6f)) d = 1e-3f;
        int nonneg = values[0] >= 0;
        lo -= d;
        hi += d;
        if (nonneg && lo < 0) lo = 0;
    }
    range[0] = lo;
    range[1] = hi;
    return 1;
}

int pbf_color_parse_range(const char *s, float range[2]) {
    if (!s) return 0;
    char *end = NULL;
    double a = strtod(s, &end);
    if (end == s || *end != ':' || !isfinite(a)) return 0;
    const char *s2 = end + 1;
    double b = strtod(s2, &end);
    if (end == s2 || *end != '\0' || !isfinite(b)) return 0;
    if (!(b > a) || fabs(a) > 3e38 || fabs(b) > 3e38 || !((float)b > (float)a)) return 0;
    range[0] = (float)a;
    range[1] = (float)b;
    return 1;
}
