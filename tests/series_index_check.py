#!/usr/bin/python3
"""The series indexes of `pbf run` as ParaView reads them: one File > Open loads the run with its
simulated times.

    series_index_check.py PBF_EXE SCENE.json [OUT_DIR]

  - vtp writes frames.pvd (a ParaView collection), ply and csv write frames.ply.series /
    frames.csv.series (ParaView's file series index, JSON). vtkPVDReader is part of ParaView, not
    of VTK, so the XML and JSON are parsed here as ParaView does; every file they name is loaded
    with VTK's reader for its format (vtkXMLPolyDataReader, vtkPLYReader, vtkDelimitedTextReader)
    and must hold the run's particles; the index must list frames 0..N in order, each once, with
    the time stats.jsonl gives that frame (and, for .vtp, the TimeValue stored in the file).
  - A run killed with SIGKILL part way leaves an index that parses and names only complete,
    loadable frames; `pbf run --resume` continues it, and the index then equals that of an
    uninterrupted run byte for byte.

Exits 77 (skipped) when VTK's Python module (Debian: python3-vtk9) is missing.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET


def fail(message):
    print("series_index_check: FAIL: " + message, flush=True)
    sys.exit(1)


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300)
    if proc.returncode != 0:
        print(proc.stdout, flush=True)
        fail("`%s` exited with %d" % (" ".join(cmd), proc.returncode))
    return proc.stdout


def stats_of(out):
    """{frame: (time, particles)} from stats.jsonl."""
    result = {}
    with open(os.path.join(out, "stats.jsonl")) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                result[r["frame"]] = (r["time"], r["particles"])
    return result


def read_index(out, fmt):
    """[(file, time)] of the run's index, parsed as ParaView parses it."""
    if fmt == "vtp":
        path = os.path.join(out, "frames.pvd")
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError) as e:
            fail("%s does not parse as XML: %s" % (path, e))
        if root.tag != "VTKFile" or root.get("type") != "Collection":
            fail("%s: the root is not <VTKFile type=\"Collection\">" % path)
        coll = root.find("Collection")
        if coll is None:
            fail("%s: no <Collection>" % path)
        return [(d.get("file"), float(d.get("timestep"))) for d in coll.findall("DataSet")]
    path = os.path.join(out, "frames.%s.series" % fmt)
    try:
        with open(path) as f:
            doc = json.load(f)
    except (ValueError, OSError) as e:
        fail("%s does not parse as JSON: %s" % (path, e))
    if doc.get("file-series-version") != "1.0" or not isinstance(doc.get("files"), list):
        fail("%s: not a ParaView file series (file-series-version 1.0, files)" % path)
    return [(e["name"], float(e["time"])) for e in doc["files"]]


def load(vtk, path, fmt):
    """Points (or rows) VTK reads from one frame file, and the file's own time (vtp) or None."""
    if fmt == "vtp":
        r = vtk["vtkXMLPolyDataReader"]()
    elif fmt == "ply":
        r = vtk["vtkPLYReader"]()
    else:
        r = vtk["vtkDelimitedTextReader"]()
        r.SetHaveHeaders(True)
        r.SetDetectNumericColumns(True)
    r.SetFileName(path)
    r.Update()
    out = r.GetOutput()
    if fmt == "csv":
        names = [out.GetColumnName(k) for k in range(out.GetNumberOfColumns())]
        if names != ["x", "y", "z", "vx", "vy", "vz", "density", "id"]:
            fail("%s: VTK reads the columns %s" % (path, names))
        return out.GetNumberOfRows(), None
    t = None
    if fmt == "vtp":
        fd = out.GetFieldData().GetArray("TimeValue")
        t = fd.GetValue(0) if fd is not None else None
        for name in ("velocity", "density", "id"):
            if out.GetPointData().GetArray(name) is None:
                fail("%s: VTK finds no point array %s" % (path, name))
    return out.GetNumberOfPoints(), t


def check_index(vtk, out, fmt, complete=True):
    entries = read_index(out, fmt)
    stats = stats_of(out)
    if not entries:
        fail("%s: the %s index lists no frame" % (out, fmt))
    for k, (name, t) in enumerate(entries):
        want = "frame_%05d.%s" % (k, fmt)
        if name != want:
            fail("%s: index entry %d names %s, expected %s (frames 0, 1, ... in order)"
                 % (out, k, name, want))
        path = os.path.join(out, name)
        if not os.path.isfile(path):
            fail("%s: the index lists %s, which is not there" % (out, name))
        if complete or k in stats:
            if k not in stats:
                fail("%s: frame %d is in the index but not in stats.jsonl" % (out, k))
            if t != stats[k][0]:
                fail("%s: index time of frame %d is %r, stats.jsonl says %r" % (out, k, t, stats[k][0]))
        if k > 0 and t <= entries[k - 1][1]:
            fail("%s: times do not increase at frame %d (%r after %r)" % (out, k, t, entries[k - 1][1]))
        n, file_time = load(vtk, path, fmt)
        particles = stats[k][1] if k in stats else stats[0][1]
        if n != particles or n == 0:
            fail("%s: VTK reads %d points/rows, stats.jsonl says %d particles" % (path, n, particles))
        if file_time is not None and abs(file_time - t) > 1e-8 * max(1.0, abs(t)):
            fail("%s: TimeValue %r differs from the index time %r" % (path, file_time, t))
    if complete:
        listed = len(entries)
        on_disk = len([f for f in os.listdir(out) if f.startswith("frame_") and f.endswith("." + fmt)])
        if listed != on_disk or listed != len(stats):
            fail("%s: the index lists %d frames, %d are on disk, stats.jsonl has %d"
                 % (out, listed, on_disk, len(stats)))
    return entries


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    pbf, scene = argv[1], argv[2]
    try:
        from vtkmodules.vtkIOXML import vtkXMLPolyDataReader
        from vtkmodules.vtkIOPLY import vtkPLYReader
        from vtkmodules.vtkIOInfovis import vtkDelimitedTextReader
    except ImportError as e:
        print("series_index_check: SKIP: VTK's Python module is missing (%s); Debian package "
              "python3-vtk9 (scripts/setup-debian.sh)" % e, flush=True)
        return 77
    vtk = {"vtkXMLPolyDataReader": vtkXMLPolyDataReader, "vtkPLYReader": vtkPLYReader,
           "vtkDelimitedTextReader": vtkDelimitedTextReader}
    keep = len(argv) == 4
    top = argv[3] if keep else tempfile.mkdtemp(prefix="pbf_series_check_")
    if keep:
        shutil.rmtree(top, ignore_errors=True)
        os.makedirs(top)
    try:
        for fmt in ("vtp", "ply", "csv"):
            out = os.path.join(top, fmt)
            run([pbf, "run", scene, "--out", out, "--frames", "4", "--format", fmt, "-q"])
            entries = check_index(vtk, out, fmt)
            print("ok   %s: the index lists frames 0..%d with the times of stats.jsonl; VTK loads "
                  "each" % (fmt, len(entries) - 1), flush=True)

        # killed part way, then resumed
        frames = 24
        ref = os.path.join(top, "ref")
        run([pbf, "run", scene, "--out", ref, "--frames", str(frames), "-q"])
        kill = os.path.join(top, "kill")
        pvd = os.path.join(kill, "frames.pvd")
        killed = False
        for threshold in (6, 3, 1):  # a fast machine may finish first: kill it earlier then
            shutil.rmtree(kill, ignore_errors=True)
            proc = subprocess.Popen([pbf, "run", scene, "--out", kill, "--frames", str(frames),
                                     "--checkpoint-every", "3", "-q"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 120
            while time.time() < deadline and proc.poll() is None:
                try:
                    with open(pvd) as f:
                        if f.read().count("<DataSet") >= threshold:
                            break
                except OSError:
                    pass
                time.sleep(0.002)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed = True
                break
        if not killed:
            fail("the run finished each time before it could be killed")
        entries = check_index(vtk, kill, "vtp", complete=False)
        if len(entries) >= frames + 1:
            fail("the killed run's index lists every frame: it was not killed part way")
        print("ok   killed after frame %d: frames.pvd parses and names only complete frames"
              % (len(entries) - 1), flush=True)
        run([pbf, "run", "--resume", kill, "-q"])
        check_index(vtk, kill, "vtp")
        with open(os.path.join(ref, "frames.pvd"), "rb") as a, open(pvd, "rb") as b:
            if a.read() != b.read():
                fail("after --resume, %s differs from the uninterrupted run's" % pvd)
        print("ok   resumed: frames.pvd equals the uninterrupted run's (%d frames)" % (frames + 1),
              flush=True)
    finally:
        if not keep:
            shutil.rmtree(top, ignore_errors=True)
    print("series_index_check: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
