#!/usr/bin/env python3
"""Measures vertical streaks in a screen-space fluid screenshot of `pbf view --fluid`
(tests/run_viewer.sh), with the standard library only.

A separable depth filter (a pass along x, then one along y) leaves, where the depth it smooths
is rough (a splash, the liquid climbing a wall, drops in front of the liquid), columns that
each kept a different part of their vertical neighbourhood: the shading then shows thin vertical
streaks hanging below the splash and along the walls. A streak is a horizontal luminance step
that keeps its sign down a column: over every K x K block of water pixels, the horizontal
difference of luminance averaged down K = 16 rows cancels for noise and for edges that are not
vertical, and stays for a streak. The check: the fraction of blocks where that average exceeds
STEP (luminance units, 0-255) is at most MAX_STREAKS.

usage: viewer_streak_check.py FLUID.png
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viewer_png_check import read_png  # noqa: E402

K = 16
STEP = 5.0
MAX_STREAKS = 0.035


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    try:
        w, h, img = read_png(sys.argv[1])
    except (OSError, ValueError) as e:
        print("FAIL: %s" % e)
        return 1
    lum = [[0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2] for p in row] for row in img]
    water = [[p[2] > p[0] + 40 for p in row] for row in img]
    # the horizontal difference summed down K rows: prefix sums per column
    dx = [[lum[y][x + 1] - lum[y][x] for x in range(w - 1)] for y in range(h)]
    col = [[0.0] * (w - 1) for _ in range(h + 1)]
    for y in range(h):
        for x in range(w - 1):
            col[y + 1][x] = col[y][x] + dx[y][x]
    blocks = streaks = 0
    for y in range(h - K):
        for x in range(w - K):
            if not (water[y][x] and water[y + K][x] and water[y][x + K] and water[y + K][x + K]):
                continue
            blocks += 1
            if abs(col[y + K][x] - col[y][x]) / K > STEP:
                streaks += 1
    if blocks < 1000:
        print("FAIL: %s: too few water blocks to measure (%d)" % (sys.argv[1], blocks))
        return 1
    frac = streaks / float(blocks)
    print("%s: vertical streaks in %.2f%% of %d water blocks (%dx%d px; at most %.1f%%)"
          % (sys.argv[1], 100 * frac, blocks, K, K, 100 * MAX_STREAKS))
    if frac > MAX_STREAKS:
        print("FAIL: vertical streaks in the fluid surface: %.2f%% of the water blocks, expected "
              "<= %.1f%%" % (100 * frac, 100 * MAX_STREAKS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
