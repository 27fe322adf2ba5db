#!/usr/bin/env python3
"""Checks that surface meshes are closed, oriented 2-manifolds, with the standard library only.

For each binary little-endian PLY mesh (as `pbf mesh` and `pbf run --mesh` write them: vertices
of float x y z nx ny nz, faces of uchar count and int or uint indices), every face is a triangle
of three distinct vertices in range, no triangle appears twice (in either winding), and every
edge is shared by exactly two triangles that run it in opposite directions (so each directed edge
appears once). Mesh libraries call such a mesh watertight.

    python3 tests/mesh_edges_check.py MESH.ply [MESH.ply ...]

Prints one line per mesh; exits 1 if any mesh fails, 2 on a file it cannot read.
"""
import struct
import sys

SIZES = {"char": 1, "uchar": 1, "int8": 1, "uint8": 1, "short": 2, "ushort": 2, "int16": 2,
         "uint16": 2, "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
         "double": 8, "float64": 8}
CODES = {"uchar": "B", "uint8": "B", "char": "b", "int8": "b", "int": "i", "int32": "i",
         "uint": "I", "uint32": "I"}


def read_ply(path):
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"end_header\n")
    if not data.startswith(b"ply\n") or end < 0:
        raise ValueError("not a PLY file")
    header = data[:end].decode("ascii").split("\n")
    if "format binary_little_endian 1.0" not in header:
        raise ValueError("not binary little-endian")
    nv = nf = 0
    vbytes = 0
    face = None
    element = None
    for line in header:
        t = line.split()
        if t[:1] == ["element"]:
            element = t[1]
            if element == "vertex":
                nv = int(t[2])
            elif element == "face":
                nf = int(t[2])
        elif t[:1] == ["property"] and element == "vertex":
            vbytes += SIZES[t[1]]
        elif t[:2] == ["property", "list"] and element == "face":
            face = (CODES[t[2]], CODES[t[3]])
    if face is None:
        raise ValueError("no face list")
    off = end + len(b"end_header\n") + nv * vbytes
    fmt = "<" + face[0] + "3" + face[1]
    step = struct.calcsize(fmt)
    if len(data) != off + nf * step:
        raise ValueError("%d bytes, expected %d for %d vertices and %d triangles"
                         % (len(data), off + nf * step, nv, nf))
    tris = []
    for k in range(nf):
        n, a, b, c = struct.unpack_from(fmt, data, off + k * step)
        if n != 3:
            raise ValueError("face %d has %d vertices" % (k, n))
        tris.append((a, b, c))
    return nv, tris


def check(path):
    nv, tris = read_ply(path)
    problems = []
    directed = {}
    seen = {}
    for k, (a, b, c) in enumerate(tris):
        if len({a, b, c}) < 3 or min(a, b, c) < 0 or max(a, b, c) >= nv:
            problems.append("triangle %d %s is degenerate or out of range" % (k, (a, b, c)))
            continue
        key = tuple(sorted((a, b, c)))
        if key in seen:
            problems.append("triangles %d %s and %d %s are the same triangle"
                            % (seen[key], tris[seen[key]], k, (a, b, c)))
        seen[key] = k
        for e in ((a, b), (b, c), (c, a)):
            directed[e] = directed.get(e, 0) + 1
    shared = {}
    for (a, b), n in directed.items():
        e = (min(a, b), max(a, b))
        shared[e] = shared.get(e, 0) + n
    bad = [e for e, n in shared.items() if n != 2]
    if bad:
        problems.append("%d edges not shared by exactly two triangles, e.g. %s by %d"
                        % (len(bad), bad[0], shared[bad[0]]))
    twice = [e for e, n in directed.items() if n != 1]
    if twice and not bad:
        problems.append("%d edges run twice the same way (inconsistent winding), e.g. %s"
                        % (len(twice), twice[0]))
    return len(tris), problems


def main(paths):
    if not paths:
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        try:
            n, problems = check(path)
        except (OSError, ValueError, KeyError, struct.error) as e:
            print("FAIL %s: cannot read it: %s" % (path, e))
            return 2
        if problems:
            failed += 1
            print("FAIL %s: %d triangles; %s" % (path, n, "; ".join(problems[:3])))
        else:
            print("ok   %s: %d triangles, every edge shared by exactly two" % (path, n))
    print("%d of %d meshes closed and manifold" % (len(paths) - failed, len(paths)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
