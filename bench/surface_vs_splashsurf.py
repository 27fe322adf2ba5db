#!/usr/bin/env python3
"""Surface reconstruction, pbf against splashsurf (PyPI's pysplashsurf), on the same particles.

    bench/surface_vs_splashsurf.sh [--frame-dir DIR] [--frame N] [--repeat K] [--threads T]
                                   [--json FILE] [--machine TEXT]

The shell wrapper makes a venv under /tmp with pysplashsurf and numpy (exit 77 with a message
when pip cannot get them) and runs this script with it. This script:
  1. needs DIR/frame_NNNNN.ply (binary PLY of `pbf run --format ply`); when missing it runs
     `pbf run scenes/dam_break.json --frames N --format ply --out DIR` first (the default dam
     break: 51,200 particles, r = 0.0075 m);
  2. reads the positions of frame N (numpy), and times, alternating, K times each:
       pbf:        `pbf mesh DIR --frames N:N --timings --set threads=T ...`: the reconstruction's
                   own wall time as pbf reports it (file reading and writing excluded);
       splashsurf: pysplashsurf.reconstruction_pipeline(...) around the call alone, with
                   RAYON_NUM_THREADS=T (set by the wrapper);
     with the same particle radius, smoothing length (in radii; support = 2x), cube size (in
     radii) and iso level, in two configurations: "plain" (normals, no smoothing) and
     "smoothed" (25 smoothing iterations: splashsurf's weighted Laplacian of Loeschner et al.
     2023 with its defaults; pbf's Taubin lambda|mu);
  3. prints a table and writes the JSON (min, median, max ms per tool and configuration, mesh
     sizes, versions, the machine's description).
Timings on a shared machine vary: the minimum and the median of K runs are both reported.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import children_die  # noqa: F401,E402 (the processes it starts die with it)
import sys
import time

import numpy as np


def read_ply_positions(path):
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode("ascii").splitlines()
    count, props = 0, []
    for line in header:
        parts = line.split()
        if parts[:2] == ["element", "vertex"]:
            count = int(parts[2])
        elif parts[:1] == ["property"] and len(parts) == 3:
            props.append((parts[2], {"float": "<f4", "uint": "<u4", "int": "<i4"}[parts[1]]))
    rec = np.frombuffer(data, dtype=np.dtype(props), count=count, offset=end)
    return np.stack([rec["x"], rec["y"], rec["z"]], axis=1).astype(np.float32)


def scene_radius(frame_dir):
    with open(os.path.join(frame_dir, "scene.json")) as f:
        return float(json.load(f)["particle_radius"])


def run_pbf(pbf, frame_dir, frame, threads, iso, sl, cube, smooth, out_dir):
    cmd = [pbf, "mesh", frame_dir, "--frames", "%d:%d" % (frame, frame), "--timings", "-q",
           "--out", out_dir, "--set", "threads=%d" % threads, "--set", "iso_level=%g" % iso,
           "--set", "smoothing_length=%g" % sl, "--set", "cube_size=%g" % cube,
           "--set", "smoothing_iterations=%d" % smooth]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    line = [l for l in out.splitlines() if l.startswith("timings:")][-1].split()[1:]
    kv = dict(zip(line[0::2], line[1::2]))
    return float(kv["total_ms"]), int(kv["triangles"]), int(kv["vertices"]), kv


def run_splash(ps, pos, radius, iso, sl, cube, smooth):
    kw = dict(particle_radius=radius, rest_density=1000.0, smoothing_length=sl, cube_size=cube,
              iso_surface_threshold=iso, multi_threading=True, compute_normals=True)
    if smooth:
        kw.update(mesh_smoothing_iters=smooth, mesh_smoothing_weights=True)
    t0 = time.perf_counter()
    res = ps.reconstruction_pipeline(pos, **kw)
    ms = 1000.0 * (time.perf_counter() - t0)
    mesh = res[0] if isinstance(res, tuple) else res
    m = getattr(mesh, "mesh", mesh)
    tris = getattr(m, "triangles", None)
    verts = getattr(m, "vertices", None)
    return ms, (len(tris) if tris is not None else -1), (len(verts) if verts is not None else -1)


def stats(v):
    return {"min": min(v), "median": statistics.median(v), "max": max(v), "runs": len(v)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pbf", default="build/pbf")
    ap.add_argument("--frame-dir", default="/tmp/pbf_surface_bench_db")
    ap.add_argument("--frame", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iso", type=float, default=0.6)
    ap.add_argument("--smoothing-length", type=float, default=2.0)
    ap.add_argument("--cube-size", type=float, default=1.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--machine", default=platform.processor() or platform.machine())
    a = ap.parse_args()

    import pysplashsurf as ps
    from importlib.metadata import version

    frame_path = os.path.join(a.frame_dir, "frame_%05d.ply" % a.frame)
    if not os.path.exists(frame_path):
        print("making %s with pbf run ..." % frame_path, flush=True)
        subprocess.run([a.pbf, "run", "scenes/dam_break.json", "--frames", str(a.frame), "--format",
                        "ply", "--out", a.frame_dir, "-q"], check=True)
    pos = read_ply_positions(frame_path)
    radius = scene_radius(a.frame_dir)
    out_dir = a.frame_dir + "_meshes"
    os.makedirs(out_dir, exist_ok=True)
    results = {}
    for name, smooth in (("plain", 0), ("smoothed", 25)):
        p_ms, s_ms = [], []
        p_info = s_info = None
        # one warm-up each (page cache, thread pools), then alternate
        run_pbf(a.pbf, a.frame_dir, a.frame, a.threads, a.iso, a.smoothing_length, a.cube_size,
                smooth, out_dir)
        run_splash(ps, pos, radius, a.iso, a.smoothing_length, a.cube_size, smooth)
        for _ in range(a.repeat):
            ms, tris, verts, kv = run_pbf(a.pbf, a.frame_dir, a.frame, a.threads, a.iso,
                                          a.smoothing_length, a.cube_size, smooth, out_dir)
            p_ms.append(ms)
            p_info = {"triangles": tris, "vertices": verts,
                      "stages_ms": {k[:-3]: float(v) for k, v in kv.items() if k.endswith("_ms")},
                      "bytes": int(kv["bytes"])}
            ms, tris, verts = run_splash(ps, pos, radius, a.iso, a.smoothing_length, a.cube_size,
                                         smooth)
            s_ms.append(ms)
            s_info = {"triangles": tris, "vertices": verts}
        results[name] = {
            "smoothing_iterations": smooth,
            "pbf": dict(stats(p_ms), **p_info),
            "splashsurf": dict(stats(s_ms), **s_info),
            "pbf_over_splashsurf_median": statistics.median(p_ms) / statistics.median(s_ms),
        }
        print("%-9s pbf %7.1f ms (min %7.1f)  splashsurf %7.1f ms (min %7.1f)  ratio %.2f  "
              "triangles pbf %d splashsurf %d" % (
                  name, statistics.median(p_ms), min(p_ms), statistics.median(s_ms), min(s_ms),
                  results[name]["pbf_over_splashsurf_median"], p_info["triangles"],
                  s_info["triangles"]), flush=True)
    doc = {
        "what": "surface reconstruction of one particle frame, pbf vs splashsurf, same run",
        "machine": a.machine,
        "threads": a.threads,
        "particles": int(pos.shape[0]),
        "frame": frame_path,
        "particle_radius": radius,
        "smoothing_length_radii": a.smoothing_length,
        "cube_size_radii": a.cube_size,
        "iso_level": a.iso,
        "pysplashsurf_version": version("pysplashsurf"),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_end": os.getloadavg(),
        "results": results,
    }
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print("wrote " + a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
