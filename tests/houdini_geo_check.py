#!/usr/bin/python3
"""pbf's Houdini frames (--format geo, --format bgeo) read back by a reader written here from the
format's specification (Houdini's "GPD" description of the classic .geo / .bgeo, version 5), not
from pbf's code.

    houdini_geo_check.py PBF_EXE SCENE.json [OUT_DIR]

Runs the scene for 2 frames as csv, geo and bgeo (the same simulation), then for each frame:
  - .geo: "PGEOMETRY V5", the counts NPoints NPrims / NPointGroups NPrimGroups / NPointAttrib
    NVertexAttrib NPrimAttrib NAttrib, the point attribute dictionary (NAME SIZE TYPE DEFAULTS),
    one point per line "x y z w (values)", the primitives (none), "beginExtra" "endExtra";
  - .bgeo: big endian; magic "Bgeo", 'V', int32 version 5, the eight int32 counts, the dictionary
    (int16 name length, name, int16 size, int32 type: 0 float, 1 int, 5 vector, SIZE 32-bit
    defaults), per point 4 float32 (x y z w) and the attribute values, then the end bytes
    0x00 0xff and nothing after;
  - both have NPoints = the run's particles, w = 1, the attributes v (3, vector), density (1,
    float) and id (1, int), and every value equal to the .csv frame's (positions, v, density,
    id, in the same rows).
No packaged Houdini reader exists on Debian (Houdini is proprietary; Partio is not packaged).
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

ATTRS = [("v", 3, "vector"), ("density", 1, "float"), ("id", 1, "int")]
TYPE_CODES = {0: "float", 1: "int", 5: "vector"}


def fail(message):
    print("houdini_geo_check: FAIL: " + message, flush=True)
    sys.exit(1)


def f32(v):
    return struct.unpack(">f", struct.pack(">f", v))[0]


def read_geo(path):
    """(points [(x, y, z, w)], attribute dictionary [(name, size, type)], values per point)."""
    with open(path) as f:
        tokens = f.read().split()
    pos = 0

    def take(n=1):
        nonlocal pos
        if pos + n > len(tokens):
            fail("%s: ends early" % path)
        got = tokens[pos:pos + n]
        pos += n
        return got

    if take(2) != ["PGEOMETRY", "V5"]:
        fail("%s: no PGEOMETRY V5 magic" % path)
    counts = {}
    for key in ("NPoints", "NPrims", "NPointGroups", "NPrimGroups", "NPointAttrib",
                "NVertexAttrib", "NPrimAttrib", "NAttrib"):
        k, v = take(2)
        if k != key:
            fail("%s: expected %s, found %s" % (path, key, k))
        counts[key] = int(v)
    attrs = []
    if counts["NPointAttrib"]:
        if take() != ["PointAttrib"]:
            fail("%s: no PointAttrib section" % path)
        for _ in range(counts["NPointAttrib"]):
            name, size, typ = take(3)
            size = int(size)
            take(size)  # the defaults
            attrs.append((name, size, typ))
    width = sum(a[1] for a in attrs)
    points, values = [], []
    for i in range(counts["NPoints"]):
        xyzw = [float(t) for t in take(4)]
        vals = []
        if attrs:
            # "(values)": the parentheses may stand alone or touch the first and last value
            group = take()
            while not group[-1].endswith(")"):
                group += take()
            text = " ".join(group)
            if not text.startswith("("):
                fail("%s: point %d: no \"(\" before its attribute values" % (path, i))
            vals = text[1:-1].split()
            if len(vals) != width:
                fail("%s: point %d: %d attribute values, expected %d" % (path, i, len(vals), width))
        points.append(xyzw)
        values.append(vals)
    if counts["NPrims"] or counts["NPointGroups"] or counts["NPrimGroups"] or counts["NAttrib"]:
        fail("%s: primitives, groups or detail attributes where pbf writes none: %s" % (path, counts))
    if tokens[pos:] != ["beginExtra", "endExtra"]:
        fail("%s: after the points: %s, expected beginExtra endExtra" % (path, tokens[pos:pos + 5]))
    return points, attrs, values


def read_bgeo(path):
    with open(path, "rb") as f:
        data = f.read()
    at = 0

    def take(fmt):
        nonlocal at
        size = struct.calcsize(fmt)
        if at + size > len(data):
            fail("%s: ends early at byte %d" % (path, at))
        got = struct.unpack_from(fmt, data, at)
        at += size
        return got

    magic, vchar, version = take(">4sci")
    if magic != b"Bgeo" or vchar != b"V" or version != 5:
        fail("%s: magic %r %r version %d, expected Bgeo V 5" % (path, magic, vchar, version))
    (npoints, nprims, npgroups, nprgroups, npattr, nvattr, nprattr, nattr) = take(">8i")
    if nprims or npgroups or nprgroups or nvattr or nprattr or nattr:
        fail("%s: primitives, groups or other attributes where pbf writes none" % path)
    attrs = []
    for _ in range(npattr):
        (length,) = take(">h")
        name = data[at:at + length].decode("ascii")
        at += length
        size, code = take(">hi")
        if code not in TYPE_CODES:
            fail("%s: attribute %s has type code %d" % (path, name, code))
        take(">%di" % size)  # defaults
        attrs.append((name, size, TYPE_CODES[code]))
    fmt = ">4f" + "".join(("i" if t == "int" else "f") * s for _, s, t in attrs)
    points, values = [], []
    for _ in range(npoints):
        row = take(fmt)
        points.append(list(row[:4]))
        values.append(list(row[4:]))
    if data[at:] != b"\x00\xff":
        fail("%s: %d bytes after the points, expected the end bytes 00 ff"
             % (path, len(data) - at))
    return points, attrs, values


def read_csv(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
        if header != ["x", "y", "z", "vx", "vy", "vz", "density", "id"]:
            fail("%s: header %s" % (path, header))
        return [line.strip().split(",") for line in f if line.strip()]


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    pbf, scene = argv[1], argv[2]
    keep = len(argv) == 4
    top = argv[3] if keep else tempfile.mkdtemp(prefix="pbf_houdini_check_")
    if keep:
        shutil.rmtree(top, ignore_errors=True)
        os.makedirs(top)
    try:
        for fmt in ("csv", "geo", "bgeo"):
            cmd = [pbf, "run", scene, "--out", os.path.join(top, fmt), "--frames", "2",
                   "--format", fmt, "-q"]
            if subprocess.run(cmd, timeout=300).returncode != 0:
                fail("`%s` failed" % " ".join(cmd))
        for frame in (0, 2):
            rows = read_csv(os.path.join(top, "csv", "frame_%05d.csv" % frame))
            for fmt, reader in (("geo", read_geo), ("bgeo", read_bgeo)):
                path = os.path.join(top, fmt, "frame_%05d.%s" % (frame, fmt))
                points, attrs, values = reader(path)
                if attrs != ATTRS:
                    fail("%s: point attributes %s, expected %s" % (path, attrs, ATTRS))
                if len(points) != len(rows) or not rows:
                    fail("%s: %d points, the .csv has %d rows" % (path, len(points), len(rows)))
                for i, (p, vals, row) in enumerate(zip(points, values, rows)):
                    want_p = [f32(float(c)) for c in row[0:3]] + [1.0]
                    want_v = [f32(float(c)) for c in row[3:7]] + [int(row[7])]
                    got_p = [f32(float(c)) for c in p]
                    got_v = [f32(float(c)) for c in vals[:4]] + [int(vals[4])]
                    if got_p != want_p or got_v != want_v:
                        fail("%s: point %d is %s (%s), the .csv row is %s"
                             % (path, i, p, vals, row))
                print("ok   frame %d %s: %d points with P, v, density, id equal to the .csv's"
                      % (frame, fmt, len(points)), flush=True)
    finally:
        if not keep:
            shutil.rmtree(top, ignore_errors=True)
    print("houdini_geo_check: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
