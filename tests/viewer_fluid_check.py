#!/usr/bin/env python3
"""Checks a screen-space fluid screenshot of `pbf view --fluid` against the sphere screenshot of
the same state (tests/run_viewer.sh), with the standard library only:

  - no NaN pixels: a non-finite value in the shading would come out black (all channels below
    8); the background, the lines, the overlay and the water are never that dark;
  - the liquid is where the particles are: the water pixels (b > r + 40) of the fluid picture
    cover at least MIN_COVER of those of the sphere picture, and at least MIN_INSIDE of its own
    water pixels lie on sphere water pixels or next to them (the surface rounds the spheres'
    outline off, it does not spread);
  - the surface is smooth, not a pile of spheres: the mean absolute Laplacian of the luminance
    over pixels whose 5x5 neighbourhood is water in both pictures is at most MAX_ROUGHNESS times
    that of the sphere picture (each sphere is shaded on its own: light centres, dark rims).

usage: viewer_fluid_check.py SPHERES.png FLUID.png
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viewer_png_check import read_png  # noqa: E402

MIN_COVER = 0.7
MIN_INSIDE = 0.8
MAX_ROUGHNESS = 0.2


def water(p):
    return p[2] > p[0] + 40


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    try:
        w, h, sph = read_png(sys.argv[1])
        w2, h2, fl = read_png(sys.argv[2])
    except (OSError, ValueError) as e:
        print("FAIL: %s" % e)
        return 1
    if (w, h) != (w2, h2):
        print("FAIL: sizes differ: %dx%d and %dx%d" % (w, h, w2, h2))
        return 1
    failures = []
    black = sum(1 for row in fl for p in row if max(p) < 8)
    if black:
        failures.append("%d black pixels (non-finite shading)" % black)
    ms = [[water(p) for p in row] for row in sph]
    mf = [[water(p) for p in row] for row in fl]
    n_s = sum(map(sum, ms))
    n_f = sum(map(sum, mf))
    both = sum(1 for y in range(h) for x in range(w) if ms[y][x] and mf[y][x])

    def near_sphere(x, y):
        return any(ms[j][i] for j in range(max(0, y - 2), min(h, y + 3))
                   for i in range(max(0, x - 2), min(w, x + 3)))

    inside = sum(1 for y in range(h) for x in range(w) if mf[y][x] and near_sphere(x, y))
    cover = both / float(max(n_s, 1))
    inside_frac = inside / float(max(n_f, 1))

    def lum(p):
        return 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]

    def roughness(img):
        total, count = 0.0, 0
        for y in range(2, h - 2):
            for x in range(2, w - 2):
                if not all(ms[j][i] and mf[j][i] for j in range(y - 2, y + 3)
                           for i in range(x - 2, x + 3)):
                    continue
                lap = (4 * lum(img[y][x]) - lum(img[y][x - 1]) - lum(img[y][x + 1]) -
                       lum(img[y - 1][x]) - lum(img[y + 1][x]))
                total += abs(lap)
                count += 1
        return total / count if count else float("nan"), count

    r_s, count = roughness(sph)
    r_f, _ = roughness(fl)
    print("%s: water pixels %d (spheres %d), covers %.1f%% of the spheres' water, %.1f%% of it "
          "on or next to it; roughness (mean |Laplacian| of luminance over %d interior pixels) "
          "%.2f vs %.2f for the spheres (ratio %.2f); %d black pixels"
          % (sys.argv[2], n_f, n_s, 100 * cover, 100 * inside_frac, count, r_f, r_s,
             r_f / r_s if r_s > 0 else float("nan"), black))
    if n_s == 0 or count < 100:
        failures.append("too few water pixels to compare (%d, %d interior)" % (n_s, count))
    if cover < MIN_COVER:
        failures.append("the fluid covers %.1f%% of the spheres' water, expected >= %.0f%%"
                        % (100 * cover, 100 * MIN_COVER))
    if inside_frac < MIN_INSIDE:
        failures.append("only %.1f%% of the fluid's water lies on the spheres', expected >= %.0f%%"
                        % (100 * inside_frac, 100 * MIN_INSIDE))
    if not r_f <= MAX_ROUGHNESS * r_s:
        failures.append("the surface is not smoother than the spheres: roughness %.2f vs %.2f, "
                        "expected a ratio <= %.2f" % (r_f, r_s, MAX_ROUGHNESS))
    for f in failures:
        print("FAIL: %s: %s" % (sys.argv[2], f))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
