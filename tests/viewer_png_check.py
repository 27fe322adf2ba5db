#!/usr/bin/env python3
"""Checks a screenshot of `pbf view` (tests/run_viewer.sh): a PNG decoded with the standard
library only (zlib), then

  - the size is the one asked for;
  - it is not empty: many distinct colours, not one flat colour;
  - water is drawn where the fluid is: blue pixels (b > r + 40, the water ramp and the fluid
    surface's tint; the background and the container lines are grey, the boxes orange) cover
    at least MIN_FRACTION of the lower half of the image, and the lower half holds more of them
    than the upper half (the fluid lies on the floor; the camera looks at it from above).

usage: viewer_png_check.py FILE.png WIDTH HEIGHT
"""
import struct
import sys
import zlib

MIN_FRACTION = 0.05
MIN_COLOURS = 50


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError("expected 8-bit RGB or RGBA, not interlaced (got depth %d, colour type %d,"
                         " interlace %d)" % (depth, colour, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
            elif ftype != 0:
                raise ValueError("bad filter type %d in row %d" % (ftype, y))
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        width, height, rows = read_png(path)
    except (OSError, ValueError, zlib.error) as e:
        print("FAIL: %s: %s" % (path, e))
        return 1
    failures = []
    if (width, height) != (want_w, want_h):
        failures.append("size %dx%d, expected %dx%d" % (width, height, want_w, want_h))
    colours = {p for row in rows for p in row}
    if len(colours) < MIN_COLOURS:
        failures.append("only %d distinct colours: the image is (nearly) empty" % len(colours))
    half = height // 2
    def blue(p):
        return p[2] > p[0] + 40
    upper = sum(blue(p) for row in rows[:half] for p in row)
    lower = sum(blue(p) for row in rows[half:] for p in row)
    fraction = lower / float(width * (height - half))
    print("%s: %dx%d, %d colours, water pixels: lower half %d (%.1f%%), upper half %d"
          % (path, width, height, len(colours), lower, 100 * fraction, upper))
    if fraction < MIN_FRACTION:
        failures.append("water covers %.1f%% of the lower half, expected >= %.0f%%"
                        % (100 * fraction, 100 * MIN_FRACTION))
    if lower <= upper:
        failures.append("more water in the upper half (%d) than in the lower half (%d)"
                        % (upper, lower))
    for f in failures:
        print("FAIL: %s: %s" % (path, f))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
