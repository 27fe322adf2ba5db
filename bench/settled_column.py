#!/usr/bin/env python3
"""A water column settling in a closed box, in pbf and in SPlisHSPlasH, with PBF at 4 iterations.

How still does a column of water at rest get, and how compressed? The Koshizuka & Oka column of
pbf's validation (L wide, 2L high, here L deep too: a 3-D box L x 3L x L) at 18 particles across,
Froude-scaled to SPlisHSPlasH's particle size (r = 0.025 m, L = 0.9 m): lengths x 6.164, times
and speeds x sqrt(6.164), so the step (1/480 s at L = 0.146 m) is 5.17 ms, a frame (1/240 s) two
steps and the validation's 5 s 12.4 s. Percentages of sqrt(g H0) (H0 = 2L) and density errors
are the same at either scale. The settled window is the last (scaled) second, as in `pbf
validate`; --validation-seconds 1 runs the validation's earlier 1 s, whose window was the last
quarter.

Both run PBF with 4 fixed iterations at the same step; SPlisHSPlasH with its volume-map walls
(Bender et al. 2019) and its standard XSPH viscosity 0.01, pbf with its defaults. SPlisHSPlasH
fills a fluid block with particle centres 2r inside the block's faces; a block whose centres sit
one radius from the walls (pbf's lattice, 18 across) made it blow up in the first steps, so its
block is [r, L - r] (16 across: a gap of 2r at the side walls, which the column slumps into).

Run it inside bench/.venv (created by bench/side_by_side.sh):
    bench/.venv/bin/python bench/settled_column.py --pbf build/pbf --out /tmp/settled --json r.json
It prints one JSON object (after SPlisHSPlasH's log, which goes to stdout too; --json FILE writes
it alone): per program, the particles, the largest speed over the settled frames,
the mean speed (over particles, then frames), and the average and largest density error
(max(rho / rho0 - 1, 0)). pbf's largest speed comes from its stats.jsonl (max_speed per frame),
its mean from the csv frames; SPlisHSPlasH's are read back every frame (two steps) through its
Python API.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import children_die  # noqa: F401,E402 (the processes it starts die with it)
import sys

from splash_common import machine_and_build, preload_gldispatch, write_result

L0, R0 = 0.146, 0.146 / 36  # the validation's column at n = 18
R = 0.025
S = R / R0  # length scale
L = L0 * S
DT = (1.0 / 480.0) * math.sqrt(S)
T_END = 5.0 * math.sqrt(S)  # the validation's 5 s (--validation-seconds)
FRAME = 2 * DT
G = 9.81
SQ = math.sqrt(G * 2 * L)


def settled_from():
    """The last (scaled) second of the run, at most its last quarter, as `pbf validate` takes it."""
    return max(0.75 * T_END, T_END - 1.0 * math.sqrt(S))


def in_settled_window(t):
    return t >= settled_from() - 1e-9


def splash_scene(path, peer_dir):
    doc = {
        "Configuration": {
            "particleRadius": R, "numberOfStepsPerRenderUpdate": 1, "simulationMethod": 2,
            "gravitation": [0, -G, 0], "timeStepSize": DT, "cflMethod": 0, "cflFactor": 1,
            "cflMaxTimeStepSize": DT, "particleAttributes": "density;velocity",
            "boundaryHandlingMethod": 2,
            "PBF": {"minIterations": 4, "maxIterations": 4, "maxError": 0.01,
                    "velocityUpdateMethod": 0},
            "enablePartioExport": False, "enableVTKExport": False},
        "Materials": [{"id": "Fluid", "density0": 1000, "viscosityMethod": 1,
                       "Standard viscosity": {"viscosity": 0.01}}],
        "RigidBodies": [{"geometryFile": os.path.join(peer_dir, "UnitBox.obj"),
                         "translation": [L / 2, 1.5 * L, L / 2], "rotationAxis": [1, 0, 0],
                         "rotationAngle": 0, "scale": [L, 3 * L, L], "isDynamic": False,
                         "isWall": True, "mapInvert": True, "mapThickness": 0.0,
                         "mapResolution": [12, 36, 12]}],
        "FluidBlocks": [{"denseMode": 0, "start": [R, R, R], "end": [L - R, 2 * L - R, L - R],
                         "translation": [0, 0, 0], "scale": [1, 1, 1]}],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def run_splash(scene, out_dir):
    import pysplishsplash as sph  # noqa: E402 (the venv's package)
    frames = []
    steps = [0]

    def on_step():
        steps[0] += 1
        if steps[0] % 2:
            return
        fm = sph.Simulation.getCurrent().getFluidModel(0)
        n = fm.numActiveParticles()
        rho0 = fm.getDensity0()
        sp = []
        err = []
        for i in range(n):
            v = fm.getVelocity(i)
            sp.append(math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2))
            err.append(max(fm.getDensity(i) / rho0 - 1.0, 0.0) * 100.0)
        frames.append({"time": sph.TimeManager.getCurrent().getTime(), "particles": n,
                       "max_speed": max(sp), "mean_speed": sum(sp) / n,
                       "density_error_avg": sum(err) / n, "density_error_max": max(err)})

    base = sph.Exec.SimulatorBase()
    base.init(useGui=False, sceneFile=scene, outputDir=out_dir, useCache=False,
              initialPause=False, stopAt=T_END + 0.5 * DT)
    base.setTimeStepCB(on_step)
    base.run()
    return frames


def run_pbf(exe, out_dir):
    scene = {
        "name": "settled_column", "domain_min": [0, 0, 0], "domain_max": [L, 3 * L, L],
        "particle_radius": R, "solver_iterations": 4, "fps": 1.0 / FRAME, "substeps": 2,
        "frames": int(round(T_END / FRAME)), "format": "csv",
        "fluid": [{"min": [0, 0, 0], "max": [L, 2 * L, L], "velocity": [0, 0, 0]}],
    }
    path = os.path.join(out_dir, "pbf_scene.json")
    with open(path, "w") as f:
        json.dump(scene, f, indent=1)
    subprocess.run([exe, "run", path, "--out", os.path.join(out_dir, "pbf_out"), "-q"], check=True)
    frames = []
    with open(os.path.join(out_dir, "pbf_out", "stats.jsonl")) as f:
        for line in f:
            s = json.loads(line)
            if s["frame"] > 0:
                frames.append(s)
    for s in frames:  # the mean speed from the frame's particles (csv: x,y,z,vx,vy,vz,...)
        if not in_settled_window(s["time"]):
            continue
        with open(os.path.join(out_dir, "pbf_out", "frame_%05d.csv" % s["frame"])) as f:
            rows = [l.split(",") for l in f.read().split("\n")[1:] if l]
        s["mean_speed"] = sum(math.sqrt(float(r[3]) ** 2 + float(r[4]) ** 2 + float(r[5]) ** 2)
                              for r in rows) / len(rows)
    return frames


def settled(frames):
    st = [f for f in frames if in_settled_window(f["time"])]
    if not st:
        raise RuntimeError("settled_column: the run ended before the settled window")
    res = {"particles": st[-1]["particles"], "settled_frames": len(st),
           "max_speed_pct": 100.0 * max(f["max_speed"] for f in st) / SQ,
           "density_error_avg_pct": sum(f["density_error_avg"] for f in st) / len(st),
           "density_error_max_pct": max(f["density_error_max"] for f in st),
           "mean_speed_pct": 100.0 * sum(f["mean_speed"] for f in st) / len(st) / SQ}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pbf", default="build/pbf", help="the pbf executable")
    ap.add_argument("--out", default="out/settled_column", help="working folder")
    ap.add_argument("--json", help="also write the result here (SPlisHSPlasH logs to stdout)")
    ap.add_argument("--peer-dir", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                        "shared", "peers", "splishsplash"),
                    help="folder with SPlisHSPlasH's UnitBox.obj")
    ap.add_argument("--validation-seconds", type=float, default=5.0,
                    help="the run's length at the validation's scale (s; 5, as pbf validate)")
    a = ap.parse_args()
    global T_END
    T_END = a.validation_seconds * math.sqrt(S)
    preload_gldispatch()
    os.makedirs(a.out, exist_ok=True)
    out = machine_and_build(a.pbf)
    out["setup"] = {"radius_m": R, "L_m": L, "dt_s": DT, "t_end_s": T_END,
                     "sqrt_gH0_m_s": SQ, "settled_from_s": settled_from()}
    out["pbf_column"] = settled(run_pbf(os.path.abspath(a.pbf), a.out))
    scene = os.path.join(os.path.abspath(a.out), "splash_scene.json")
    splash_scene(scene, os.path.abspath(a.peer_dir))
    splash_dir = os.path.join(os.path.abspath(a.out), "splash")
    # SPlisHSPlasH 2.19 ended a second run in an existing output folder at once, with status 0
    # and no steps: start from an empty one
    shutil.rmtree(splash_dir, ignore_errors=True)
    shutil.rmtree(os.path.join(os.path.abspath(a.out), "Cache"), ignore_errors=True)
    try:
        out["SPlisHSPlasH_column"] = settled(run_splash(scene, splash_dir))
    except ImportError as e:
        out["SPlisHSPlasH_column"] = {"skipped": "pysplishsplash not importable: %s" % e}
    write_result(out, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
