/*
 * Particle colouring shared by the headless renderer (app/render.c) and the live viewer.
 *
 * Normalisation (how a particle's value becomes t in [0, 1], see pbf_color_value):
 *   water    t = speed / vmax: calm water is deep blue (t = 0), fast water (splashes, spray)
 *            turns light blue-white (t = 1)
 *   density  t = (rho / rho0 - 0.9) / 0.2, i.e. [0.9 rho0, 1.1 rho0] -> [0, 1] (rest density in
 *            the middle, green on viridis-like ramps)
 *   speed    t = speed / vmax with vmax the caller's scale; the renderer (app/render.c) uses
 *            vmax = sqrt(2 |g| H), the speed of a free fall over the container height H (1 m/s
 *            without gravity), the same for every frame of a run
 * Values outside the range are clamped.
 */
#ifndef PBFAPP_COLORMAP_H
#define PBFAPP_COLORMAP_H

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

/* Normalisation: density maps [rho0*0.9, rho0*1.1] (or rest-relative), speed maps [0, vmax]. */
float pbf_color_value(pbf_color_field f, float density, float speed, float rho0, float vmax);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_COLORMAP_H */
