#!/usr/bin/python3
"""Reads pbf's .vtp output back with VTK's own reader (vtkXMLPolyDataReader), as ParaView would.

    vtp_reader_check.py PBF_EXE SCENE.json [OUT_DIR]

Runs `PBF_EXE run SCENE.json --out OUT_DIR --frames 2`, then checks frame_00001.vtp:
  - VTK reads it without an error;
  - it has as many points as stats.jsonl reports particles for that frame, and more than 0;
  - it has vertex cells for them, so ParaView's default representation shows the particles;
  - PointData has `velocity` (3 components) and `density` (1 component), one tuple per point;
  - positions and velocities are finite, densities finite and positive;
  - every position lies inside the scene's container [domain_min, domain_max].

Uses Debian's python3 with python3-vtk9 (scripts/setup-debian.sh installs it). Without VTK the
check FAILS: a skipped check would let an unreadable file through.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(message):
    print("vtp_reader_check: FAIL: " + message, flush=True)
    sys.exit(1)


def find_key(node, key):
    """First value of `key` anywhere in a parsed JSON document (depth first), else None."""
    if isinstance(node, dict):
        if key in node:
            return node[key]
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = find_key(child, key)
        if found is not None:
            return found
    return None


def as_vec3(value, name, origin):
    if (not isinstance(value, list) or len(value) != 3
            or not all(isinstance(v, (int, float)) for v in value)):
        fail("%s: %s is not an array of 3 numbers: %r" % (origin, name, value))
    return [float(v) for v in value]


def domain_from_help(pbf_exe):
    """Default container from `pbf --help`, for scenes that do not set it."""
    proc = subprocess.run([pbf_exe, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=30)
    number = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
    result = {}
    for key in ("domain_min", "domain_max"):
        # "domain_min  m  default 0,0,0  range ..." or "domain_min ... [0, 0, 0]"
        m = re.search(r"^\s*%s\b[^\n]*?[\s\[(]%s\s*,\s*%s\s*,\s*%s" % (key, number, number, number),
                      proc.stdout, re.MULTILINE)
        if not m:
            return None
        result[key] = [float(m.group(i)) for i in (1, 2, 3)]
    return result["domain_min"], result["domain_max"]


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    pbf_exe, scene = argv[1], argv[2]
    if not os.access(pbf_exe, os.X_OK):
        fail("%s is not an executable (build the `pbf` command first)" % pbf_exe)
    if not os.path.isfile(scene):
        fail("scene %s does not exist" % scene)

    try:
        from vtkmodules.vtkCommonCore import vtkCommand
        from vtkmodules.vtkIOXML import vtkXMLPolyDataReader
    except ImportError as e:
        fail("VTK's Python module is missing (%s) in %s; run `bash scripts/setup-debian.sh` "
             "(Debian package python3-vtk9)" % (e, sys.executable))

    keep = len(argv) == 4
    out = argv[3] if keep else tempfile.mkdtemp(prefix="pbf_vtp_check_")
    if keep:
        shutil.rmtree(out, ignore_errors=True)
    try:
        cmd = [pbf_exe, "run", scene, "--out", out, "--frames", "2"]
        print("running: " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=600)
        print(proc.stdout, end="", flush=True)
        if proc.returncode != 0:
            fail("`%s` exited with %d" % (" ".join(cmd), proc.returncode))
        check_output(pbf_exe, scene, out, vtkCommand, vtkXMLPolyDataReader)
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    print("vtp_reader_check: OK", flush=True)
    return 0


def check_output(pbf_exe, scene, out, vtkCommand, vtkXMLPolyDataReader):
    vtp = os.path.join(out, "frame_00001.vtp")
    stats_path = os.path.join(out, "stats.jsonl")
    for path in (vtp, stats_path):
        if not os.path.isfile(path):
            fail("%s was not written; %s holds: %s" % (path, out, sorted(os.listdir(out))))

    # Particles of frame 1 according to stats.jsonl (the line with "frame": 1, else the last).
    records = []
    with open(stats_path) as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as e:
                    fail("%s line %d is not JSON: %s" % (stats_path, number, e))
    if not records:
        fail("%s is empty" % stats_path)
    record = next((r for r in records if isinstance(r, dict) and r.get("frame") == 1), records[-1])
    particles = record.get("particles") if isinstance(record, dict) else None
    if not isinstance(particles, int):
        fail("%s has no integer \"particles\" in %r" % (stats_path, record))

    # The container: from the scene, else the defaults printed by `pbf --help`.
    with open(scene) as f:
        scene_doc = json.load(f)
    lo, hi = find_key(scene_doc, "domain_min"), find_key(scene_doc, "domain_max")
    if lo is not None and hi is not None:
        lo, hi = as_vec3(lo, "domain_min", scene), as_vec3(hi, "domain_max", scene)
    else:
        defaults = domain_from_help(pbf_exe)
        if defaults is None:
            fail("%s sets no domain_min/domain_max and `pbf --help` shows no defaults for them"
                 % scene)
        dmin, dmax = defaults
        lo = as_vec3(lo, "domain_min", scene) if lo is not None else dmin
        hi = as_vec3(hi, "domain_max", scene) if hi is not None else dmax
    # The library stores the box in float; allow for its rounding.
    slack = [1e-6 * max(1.0, abs(a), abs(b)) for a, b in zip(lo, hi)]

    errors = []
    reader = vtkXMLPolyDataReader()
    reader.AddObserver(vtkCommand.ErrorEvent, lambda obj, event: errors.append(event))
    reader.GetExecutive().AddObserver(vtkCommand.ErrorEvent,
                                      lambda obj, event: errors.append(event))
    reader.SetFileName(vtp)
    reader.Update()
    if errors or reader.GetErrorCode() != 0:
        fail("vtkXMLPolyDataReader reported an error reading %s (see the VTK messages above)"
             % vtp)
    poly = reader.GetOutput()

    n = poly.GetNumberOfPoints()
    print("%s: %d points, %d vertex cells; stats.jsonl: %d particles"
          % (vtp, n, poly.GetNumberOfVerts(), particles), flush=True)
    if n <= 0:
        fail("%s has no points" % vtp)
    if n != particles:
        fail("%s has %d points but stats.jsonl reports %d particles" % (vtp, n, particles))
    if poly.GetNumberOfVerts() <= 0:
        fail("%s has no vertex cells (Verts): ParaView's default Surface representation would "
             "show nothing" % vtp)

    pd = poly.GetPointData()
    arrays = {}
    for name, components in (("velocity", 3), ("density", 1)):
        a = pd.GetArray(name)
        if a is None:
            names = [pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays())]
            fail("PointData has no array \"%s\" (it has %s)" % (name, names))
        if a.GetNumberOfComponents() != components:
            fail("PointData \"%s\" has %d components, expected %d"
                 % (name, a.GetNumberOfComponents(), components))
        if a.GetNumberOfTuples() != n:
            fail("PointData \"%s\" has %d tuples for %d points" % (name, a.GetNumberOfTuples(), n))
        arrays[name] = a

    density, velocity, points = arrays["density"], arrays["velocity"], poly.GetPoints()
    bad_density = bad_velocity = outside = 0
    first_bad = []
    for i in range(n):
        rho = density.GetValue(i)
        if not (math.isfinite(rho) and rho > 0.0):
            bad_density += 1
            if len(first_bad) < 5:
                first_bad.append("point %d: density %r" % (i, rho))
        if not all(math.isfinite(c) for c in velocity.GetTuple3(i)):
            bad_velocity += 1
            if len(first_bad) < 5:
                first_bad.append("point %d: velocity %r" % (i, velocity.GetTuple3(i)))
        p = points.GetPoint(i)
        if not all(math.isfinite(p[k]) and lo[k] - slack[k] <= p[k] <= hi[k] + slack[k]
                   for k in range(3)):
            outside += 1
            if len(first_bad) < 5:
                first_bad.append("point %d: position %r outside [%r, %r]" % (i, p, lo, hi))
    if bad_density or bad_velocity or outside:
        fail("%d non-finite or non-positive densities, %d non-finite velocities, %d positions "
             "outside the container or non-finite; first: %s"
             % (bad_density, bad_velocity, outside, "; ".join(first_bad)))
    rng = density.GetRange()
    print("density range [%g, %g] kg/m^3, all %d positions inside [%s, %s]"
          % (rng[0], rng[1], n, lo, hi), flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
