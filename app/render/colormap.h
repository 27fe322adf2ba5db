/*
 * Particle colouring shared by the headless renderer (app/render/render.c) and the live viewer.
 *
 * Normalisation: a particle's quantity (density in kg/m^3 for `density`, speed in m/s for
 * `speed` and `water`) maps linearly from a range [lo, hi] to t in [0, 1]; values outside are
 * clamped. The default ranges (pbf_color_default_range):
 *   water    [0, vmax]: calm water is deep blue (t = 0), fast water (splashes, spray) turns light
 *            blue-white (t = 1)
 *   density  [0.9 rho0, 1.1 rho0] (rest density in the middle, green on viridis)
 *   speed    [0, vmax]
 * with vmax the caller's speed scale; the renderer (render/render.c) uses vmax = sqrt(2 |g| H), the
 * speed of a free fall over the container height H (1 m/s without gravity), the same for every
 * frame of a run. `--range MIN:MAX` gives another range, `--range auto` one that follows the data
 * (pbf_color_auto_range: percentiles over the frames of a series).
 */
#ifndef PBFAPP_COLORMAP_H
#define PBFAPP_COLORMAP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pbf_color_field {
    PBF_COLOR_WATER = 0,
    PBF_COLOR_DENSITY = 1,
    PBF_COLOR_SPEED = 2
} pbf_color_field;

/* Name <-> enum ("water", "density", "speed"); returns -1 for an unknown name. */
int pbf_color_field_from_name(const char *name);
const char *pbf_color_field_name(pbf_color_field f);

/* Colour of a value t in [0,1] (clamped) on the field's ramp (density/speed: a perceptual ramp
 * such as viridis or turbo; water: light to deep blue). */
void pbf_colormap(pbf_color_field f, float t, float rgb[3]);

/* The quantity the field shows: density for PBF_COLOR_DENSITY, else speed. */
float pbf_color_quantity(pbf_color_field f, float density, float speed);

/* The default range of the field's quantity (see above). */
void pbf_color_default_range(pbf_color_field f, float rho0, float vmax, float range[2]);

/* t in [0, 1] of the field's quantity in range [lo, hi] (clamped; NaN -> 0). */
float pbf_color_value(pbf_color_field f, float density, float speed, const float range[2]);

/* A range that follows the data: the PBF_COLOR_AUTO_LO and _HI percentiles of values[0..n-1]
 * (sorted in place; non-finite values are left out), widened to a non-empty interval when they
 * are equal (never below 0 when all values are >= 0). Returns 0 when no value is finite. */
#define PBF_COLOR_AUTO_LO 1.0  /* percent */
#define PBF_COLOR_AUTO_HI 99.0 /* percent */
int pbf_color_auto_range(float *values, size_t n, float range[2]);

/* Parses a --range value "MIN:MAX" (finite numbers, MIN < MAX). Returns 1, or 0. */
int pbf_color_parse_range(const char *s, float range[2]);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_COLORMAP_H */
