#!/usr/bin/python3
"""Reads the frames that `mpirun -np N pbf run ... --set mpi_output=pieces` wrote with VTK's own
parallel reader (vtkXMLPPolyDataReader, what ParaView uses for .pvtp) and compares them with the
single-process run's frames (vtkXMLPolyDataReader).

    pvtp_reader_check.py PIECES_DIR REFERENCE_DIR N FRAMES...

For each frame F of FRAMES:
  - PIECES_DIR/frame_F.pvtp names N pieces, frame_F_00000.vtp .. frame_F_{N-1}.vtp, all present;
  - VTK reads the .pvtp without an error;
  - it has as many points as the reference frame, vertex cells for them, and the same set of
    ids (each once);
  - each particle's position, velocity and density (matched by id) are bit-identical to the
    reference's;
  - frames.pvd lists frame_F.pvtp.

Uses Debian's python3 with python3-vtk9. Without VTK the check FAILS.
"""

import os
import re
import sys


def fail(message):
    print("pvtp_reader_check: FAIL: " + message, flush=True)
    sys.exit(1)


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        sys.exit(2)
    pieces_dir, ref_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    frames = [int(f) for f in sys.argv[4:]]
    try:
        import vtk  # noqa: F401
        from vtk.util.numpy_support import vtk_to_numpy
        import numpy as np
    except ImportError as e:
        fail("python3-vtk9 and python3-numpy are needed (scripts/setup-debian.sh): %s" % e)

    class Errors(vtk.vtkCommand):
        pass

    pvd = open(os.path.join(pieces_dir, "frames.pvd")).read()
    for f in frames:
        name = "frame_%05d.pvtp" % f
        path = os.path.join(pieces_dir, name)
        if not os.path.isfile(path):
            fail("%s: missing" % path)
        text = open(path).read()
        sources = re.findall(r'<Piece Source="([^"]+)"', text)
        want = ["frame_%05d_%05d.vtp" % (f, r) for r in range(n)]
        if sources != want:
            fail("%s names the pieces %s, expected %s" % (path, sources, want))
        for s in sources:
            if not os.path.isfile(os.path.join(pieces_dir, s)):
                fail("%s: piece %s missing" % (path, s))
        if 'file="%s"' % name not in pvd:
            fail("frames.pvd does not list %s" % name)

        def read(reader_cls, p):
            r = reader_cls()
            r.SetFileName(p)
            r.GlobalWarningDisplayOff()
            out = vtk.vtkFileOutputWindow()
            out.SetFileName(os.devnull)
            vtk.vtkOutputWindow.SetInstance(out)
            r.Update()
            if r.GetErrorCode() != 0:
                fail("%s: VTK reader error %d" % (p, r.GetErrorCode()))
            d = r.GetOutput()
            if d is None or d.GetNumberOfPoints() == 0:
                fail("%s: VTK read no points" % p)
            pd = d.GetPointData()
            arrays = {}
            for key in ("id", "velocity", "density"):
                a = pd.GetArray(key)
                if a is None:
                    fail("%s: no point-data array %s" % (p, key))
                arrays[key] = vtk_to_numpy(a)
            arrays["position"] = vtk_to_numpy(d.GetPoints().GetData())
            return d, arrays

        d, a = read(vtk.vtkXMLPPolyDataReader, path)
        ref = os.path.join(ref_dir, "frame_%05d.vtp" % f)
        dr, b = read(vtk.vtkXMLPolyDataReader, ref)
        np_, nr = d.GetNumberOfPoints(), dr.GetNumberOfPoints()
        if np_ != nr:
            fail("%s: %d points, the single-process frame %d" % (path, np_, nr))
        if d.GetNumberOfVerts() != np_:
            fail("%s: %d vertex cells for %d points" % (path, d.GetNumberOfVerts(), np_))
        ia, ib = a["id"].astype(np.int64), b["id"].astype(np.int64)
        if len(np.unique(ia)) != len(ia):
            fail("%s: an id appears twice" % path)
        if not np.array_equal(np.sort(ia), np.sort(ib)):
            fail("%s: the ids differ from the single-process frame's" % path)
        oa, ob = np.argsort(ia), np.argsort(ib)
        for key in ("position", "velocity", "density"):
            x = np.ascontiguousarray(a[key][oa]).view(np.uint32)
            y = np.ascontiguousarray(b[key][ob]).view(np.uint32)
            if not np.array_equal(x, y):
                fail("%s: %s differs from the single-process frame's" % (path, key))
        print("pvtp_reader_check: %s: %d pieces, %d points, ids and values equal to %s"
              % (path, n, np_, ref), flush=True)


main()
