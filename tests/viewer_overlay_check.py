#!/usr/bin/env python3
"""Reads the text overlay of a `pbf view` screenshot back (tests/run_viewer.sh) and checks it.

The overlay is drawn with the bitmap font of app/render/font5x9.h, white on a dark translucent panel,
at a known place: font pixels of one screen pixel (windows under 600 pixels high), glyph cells
6 pixels apart from x = 4, text lines 12 pixels apart from y = 5. Every cell is matched against
the font's glyphs (parsed from the header), which turns the pixels back into text. Then:

  - line 1 reads "SCENE: N particles" (the glyphs, descenders included, read back exactly);
  - line 2 reads "F fps   M ms/step   t = T s" with numbers F and M > 0: the frame rate and the
    solver time shown are measured ones (not "-", what the overlay shows before a measurement),
    also in a short run, and T is the simulated time the screenshot was taken at. Their values
    depend on how busy the machine is, so nothing else is asked of them.

usage: viewer_overlay_check.py FILE.png FONT_HEADER SCENE_NAME T_EXPECTED
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viewer_png_check import read_png  # noqa: E402

X0, Y0, ADVANCE, LINE = 4, 5, 6, 12
GLYPH_W, GLYPH_H = 5, 9


def load_font(path):
    text = open(path).read()
    glyphs = {}
    for c, rows in re.findall(r"\{'(\\.|.)', \{((?:\"[.#]{5}\",? ?){9})\}\}", text):
        c = c[1] if c.startswith("\\") else c
        bits = tuple(re.findall(r'"([.#]{5})"', rows))
        glyphs[bits] = c
    glyphs[tuple(["....."] * GLYPH_H)] = " "
    return glyphs


def read_line(rows, width, glyphs, line):
    out = []
    y0 = Y0 + LINE * line
    for k in range((width - X0) // ADVANCE):
        x0 = X0 + ADVANCE * k
        bits = []
        for r in range(GLYPH_H):
            p = rows[y0 + r]
            bits.append("".join("#" if min(p[x0 + c]) >= 200 else "." for c in range(GLYPH_W)))
        out.append(glyphs.get(tuple(bits), "?"))
    return "".join(out).rstrip()


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    path, font, scene, t_expected = sys.argv[1:]
    glyphs = load_font(font)
    if len(glyphs) < 80:
        print("FAIL: only %d glyphs parsed from %s" % (len(glyphs), font))
        return 1
    width, height, rows = read_png(path)
    lines = [read_line(rows, width, glyphs, k) for k in range(3)]
    for k, s in enumerate(lines):
        print("%s: overlay line %d: \"%s\"" % (path, k + 1, s))
    failures = []
    if not re.match(r"^%s: \d+ particles" % re.escape(scene), lines[0]):
        failures.append("line 1 does not read \"%s: N particles\"" % scene)
    m = re.match(r"^(\d+\.\d) fps   (\d+\.\d\d) ms/step   t = (\d+\.\d{3}) s", lines[1])
    if not m:
        failures.append("line 2 does not read \"F fps   M ms/step   t = T s\" with measured "
                        "values")
    else:
        ms, t = float(m.group(2)), m.group(3)
        if not ms > 0:  # a step takes time: a slower machine only shows more
            failures.append("the overlay shows %s ms/step" % m.group(2))
        if t != t_expected:
            failures.append("the overlay shows t = %s s, expected %s" % (t, t_expected))
    if not lines[2].startswith("density error avg "):
        failures.append("line 3 does not read \"density error avg ...\"")
    for f in failures:
        print("FAIL: %s: %s" % (path, f))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
