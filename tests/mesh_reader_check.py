#!/usr/bin/python3
"""Surface meshes of `pbf run --mesh` and `pbf mesh` read back by VTK's own readers.

    mesh_reader_check.py PBF_EXE SCENE.json OUT_DIR

1. `PBF_EXE run SCENE --frames 2 --mesh --out OUT_DIR/run`: mesh_00000.ply .. mesh_00002.ply
   appear beside the frames; each is read by vtkPLYReader.
2. `PBF_EXE mesh OUT_DIR/run --format obj --out OUT_DIR/obj`: mesh_0000N.obj, read by
   vtkOBJReader.
For every mesh: VTK reads it without an error; it has points and only triangles; the triangle
and point counts of the PLY and the OBJ of a frame agree; every edge is shared by exactly two
triangles (vtkFeatureEdges finds no boundary and no non-manifold edge); the enclosed volume
(vtkMassProperties) is within 15 % of the particles' volume (particles x (2r)^3; the liquid
splashes around an obstacle here) and positive; the per-point normals (PLY: nx ny nz; OBJ: vn)
are unit vectors pointing out (the mean of n . (p - centroid) is positive); all points lie within
the container grown by 2r. Exits 77 (skip) when VTK for Debian's python3 (python3-vtk9) is
missing, with a message.
"""
import json
import os
import shutil
import subprocess
import sys


def fail(msg):
    print("mesh_reader_check: FAIL: " + msg, flush=True)
    sys.exit(1)


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    pbf, scene, out = argv[1], argv[2], argv[3]
    try:
        import vtk  # noqa: F401
        from vtkmodules.vtkIOPLY import vtkPLYReader
        from vtkmodules.vtkIOGeometry import vtkOBJReader
        from vtkmodules.vtkFiltersCore import vtkFeatureEdges
        from vtkmodules.vtkFiltersCore import vtkMassProperties
        from vtkmodules.vtkCommonCore import vtkCommand
    except ImportError as e:
        print("mesh_reader_check: SKIP: VTK for python3 is missing (python3-vtk9; "
              "scripts/setup-debian.sh installs it): %s" % e, flush=True)
        return 77
    with open(scene) as f:
        sc = json.load(f)
    r = float(sc["particle_radius"])
    lo = [float(v) - 2 * r for v in sc.get("domain_min", [0, 0, 0])]
    hi = [float(v) + 2 * r for v in sc.get("domain_max", [1, 1, 1])]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    run_dir, obj_dir = os.path.join(out, "run"), os.path.join(out, "obj")
    subprocess.run([pbf, "run", scene, "--frames", "2", "--mesh", "--out", run_dir, "-q"],
                   check=True, timeout=120)
    subprocess.run([pbf, "mesh", run_dir, "--format", "obj", "--out", obj_dir, "-q"],
                   check=True, timeout=120)
    stats = {}
    with open(os.path.join(run_dir, "stats.jsonl")) as f:
        for line in f:
            d = json.loads(line)
            stats[int(d["frame"])] = int(d["particles"])

    class Errors:
        def __init__(self):
            self.count = 0

        def __call__(self, obj, event):
            self.count += 1

    def read(path, reader_cls):
        if not os.path.exists(path):
            fail("%s was not written" % path)
        reader = reader_cls()
        errors = Errors()
        reader.AddObserver(vtkCommand.ErrorEvent, errors)
        reader.SetFileName(path)
        reader.Update()
        poly = reader.GetOutput()
        if errors.count or poly is None or poly.GetNumberOfPoints() == 0:
            fail("%s: VTK could not read it (%d errors)" % (path, errors.count))
        return poly

    def check(path, poly, particles):
        n = poly.GetNumberOfPoints()
        ncells = poly.GetNumberOfCells()
        for c in range(ncells):
            if poly.GetCellType(c) != 5:  # VTK_TRIANGLE
                fail("%s: cell %d is not a triangle" % (path, c))
        fe = vtkFeatureEdges()
        fe.SetInputData(poly)
        fe.BoundaryEdgesOn()
        fe.NonManifoldEdgesOn()
        fe.FeatureEdgesOff()
        fe.ManifoldEdgesOff()
        fe.Update()
        if fe.GetOutput().GetNumberOfCells() != 0:
            fail("%s: %d boundary or non-manifold edges" % (path, fe.GetOutput().GetNumberOfCells()))
        mp = vtkMassProperties()
        mp.SetInputData(poly)
        mp.Update()
        vol, pv = mp.GetVolume(), particles * (2 * r) ** 3
        if not (abs(vol / pv - 1) < 0.15):
            fail("%s: volume %.6g vs particles' %.6g" % (path, vol, pv))
        normals = poly.GetPointData().GetNormals()
        if normals is None or normals.GetNumberOfTuples() != n:
            fail("%s: no per-point normals" % path)
        pts = poly.GetPoints()
        cen = [sum(pts.GetPoint(i)[a] for i in range(n)) / n for a in range(3)]
        dot = 0.0
        for i in range(n):
            p, nn = pts.GetPoint(i), normals.GetTuple3(i)
            ln = sum(v * v for v in nn) ** 0.5
            if abs(ln - 1) > 1e-3:
                fail("%s: normal %d has length %g" % (path, i, ln))
            if any(p[a] < lo[a] or p[a] > hi[a] for a in range(3)):
                fail("%s: point %d %s outside the container" % (path, i, p))
            dot += sum(nn[a] * (p[a] - cen[a]) for a in range(3))
        if dot <= 0:
            fail("%s: normals point inwards on average" % path)
        return n, ncells, vol

    for frame in range(3):
        ply = os.path.join(run_dir, "mesh_%05d.ply" % frame)
        obj = os.path.join(obj_dir, "mesh_%05d.obj" % frame)
        a = check(ply, read(ply, vtkPLYReader), stats[frame])
        b = check(obj, read(obj, vtkOBJReader), stats[frame])
        if a[0] != b[0] or a[1] != b[1]:
            fail("frame %d: PLY has %d points %d triangles, OBJ %d and %d" % (frame, a[0], a[1],
                                                                              b[0], b[1]))
        print("mesh_reader_check: frame %d: %d points, %d triangles, volume %.6g (particles %.6g)"
              % (frame, a[0], a[1], a[2], stats[frame] * (2 * r) ** 3), flush=True)
    print("mesh_reader_check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
