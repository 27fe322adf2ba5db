#!/usr/bin/python3
"""pbf's PLY frames read back by VTK's own PLY reader, and every attribute checked.

    ply_reader_check.py PBF_EXE SCENE.json [OUT_DIR]

Runs the scene twice for 2 frames, as .vtp and as .ply (the same simulation, so the same
particles), then for each frame:
  - vtkPLYReader reads the .ply without an error and gives one point per particle, at exactly the
    positions of the .vtp (read with vtkXMLPolyDataReader), particle by particle;
  - the header is a standard binary little-endian PLY: one "vertex" element with the properties
    float x y z vx vy vz density and uint id (the names and types Blender, Houdini, MeshLab,
    CloudCompare, Open3D and meshio read), and the file size matches it;
  - the properties parsed here per the PLY specification equal the .vtp's arrays: velocity,
    density and id, exactly.
VTK's PLY reader keeps only x y z and the fixed properties it knows (nx ny nz, u v, red green
blue alpha): it drops any other vertex property. If it ever returns arrays named like ours they
are compared too.

Exits 77 (skipped) when VTK's Python module (Debian: python3-vtk9) is missing.
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

PROPS = [("float", "x"), ("float", "y"), ("float", "z"), ("float", "vx"), ("float", "vy"),
         ("float", "vz"), ("float", "density"), ("uint", "id")]


def fail(message):
    print("ply_reader_check: FAIL: " + message, flush=True)
    sys.exit(1)


def parse_ply(path):
    """{name: [values]} of the vertex element, per the PLY spec (binary_little_endian 1.0)."""
    sizes = {"char": "b", "uchar": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I",
             "float": "f", "double": "d", "int8": "b", "uint8": "B", "int16": "h",
             "uint16": "H", "int32": "i", "uint32": "I", "float32": "f", "float64": "d"}
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"end_header\n")
    if not data.startswith(b"ply\n") or end < 0:
        fail("%s: no ply magic or end_header" % path)
    header = data[:end].decode("ascii").split("\n")
    if header[1] != "format binary_little_endian 1.0":
        fail("%s: format line is %r" % (path, header[1]))
    elements, current = [], None
    for line in header[2:]:
        words = line.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "element":
            current = (words[1], int(words[2]), [])
            elements.append(current)
        elif words[0] == "property" and current is not None:
            if words[1] == "list":
                fail("%s: unexpected list property %s" % (path, line))
            if words[1] not in sizes:
                fail("%s: unknown property type %s" % (path, words[1]))
            current[2].append((words[1], words[2]))
        else:
            fail("%s: unexpected header line %r" % (path, line))
    if len(elements) != 1 or elements[0][0] != "vertex":
        fail("%s: elements %s, expected one \"vertex\" element" % (path, [e[0] for e in elements]))
    _, count, props = elements[0]
    if props != PROPS:
        fail("%s: vertex properties %s, expected %s" % (path, props, PROPS))
    fmt = "<" + "".join(sizes[t] for t, _ in props)
    body = data[end + len(b"end_header\n"):]
    if len(body) != count * struct.calcsize(fmt):
        fail("%s: %d bytes of vertex data for %d vertices of %d bytes"
             % (path, len(body), count, struct.calcsize(fmt)))
    rows = list(struct.iter_unpack(fmt, body))
    return {name: [r[k] for r in rows] for k, (_, name) in enumerate(props)}, count


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    pbf, scene = argv[1], argv[2]
    try:
        from vtkmodules.vtkIOPLY import vtkPLYReader
        from vtkmodules.vtkIOXML import vtkXMLPolyDataReader
        from vtkmodules.vtkCommonCore import vtkCommand
    except ImportError as e:
        print("ply_reader_check: SKIP: VTK's Python module is missing (%s); Debian package "
              "python3-vtk9 (scripts/setup-debian.sh)" % e, flush=True)
        return 77
    keep = len(argv) == 4
    top = argv[3] if keep else tempfile.mkdtemp(prefix="pbf_ply_check_")
    if keep:
        shutil.rmtree(top, ignore_errors=True)
        os.makedirs(top)
    try:
        for fmt in ("vtp", "ply"):
            cmd = [pbf, "run", scene, "--out", os.path.join(top, fmt), "--frames", "2",
                   "--format", fmt, "-q"]
            if subprocess.run(cmd, timeout=300).returncode != 0:
                fail("`%s` failed" % " ".join(cmd))
        for frame in (0, 2):
            ply = os.path.join(top, "ply", "frame_%05d.ply" % frame)
            vtp = os.path.join(top, "vtp", "frame_%05d.vtp" % frame)
            errors = []
            r = vtkPLYReader()
            r.AddObserver(vtkCommand.ErrorEvent, lambda *a: errors.append(a))
            r.SetFileName(ply)
            r.Update()
            got = r.GetOutput()
            x = vtkXMLPolyDataReader()
            x.SetFileName(vtp)
            x.Update()
            ref = x.GetOutput()
            n = ref.GetNumberOfPoints()
            if errors or got.GetNumberOfPoints() != n or n == 0:
                fail("%s: vtkPLYReader gives %d points (errors %s), the .vtp has %d"
                     % (ply, got.GetNumberOfPoints(), errors, n))
            for i in range(n):
                if got.GetPoint(i) != ref.GetPoint(i):
                    fail("%s: vtkPLYReader point %d is %s, the .vtp has %s"
                         % (ply, i, got.GetPoint(i), ref.GetPoint(i)))
            cols, count = parse_ply(ply)
            if count != n:
                fail("%s: element vertex %d, the .vtp has %d points" % (ply, count, n))
            vel = ref.GetPointData().GetArray("velocity")
            den = ref.GetPointData().GetArray("density")
            ids = ref.GetPointData().GetArray("id")
            for i in range(n):
                p = ref.GetPoint(i)
                v = vel.GetTuple3(i)
                want = {"x": p[0], "y": p[1], "z": p[2], "vx": v[0], "vy": v[1], "vz": v[2],
                        "density": den.GetValue(i), "id": ids.GetValue(i)}
                for name, value in want.items():
                    if cols[name][i] != (value if name == "id" else f32(value)):
                        fail("%s: vertex %d %s = %r, the .vtp has %r"
                             % (ply, i, name, cols[name][i], value))
            pd = got.GetPointData()
            extra = [pd.GetArrayName(k) for k in range(pd.GetNumberOfArrays())]
            for name in extra:
                if name in cols:
                    arr = pd.GetArray(name)
                    for i in range(n):
                        if arr.GetTuple1(i) != cols[name][i]:
                            fail("%s: vtkPLYReader array %s differs at %d" % (ply, name, i))
            print("ok   frame %d: vtkPLYReader reads the %d points at the .vtp's positions; "
                  "x y z vx vy vz density id equal the .vtp's arrays (VTK's PLY reader arrays: %s)"
                  % (frame, n, extra or "none"), flush=True)
    finally:
        if not keep:
            shutil.rmtree(top, ignore_errors=True)
    print("ply_reader_check: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
