#!/usr/bin/env python3
"""The dam-break surge front in pbf and in SPlisHSPlasH, against two experiments.

`pbf validate` scores its dam-break front against Koshizuka & Oka (1996): the largest relative
error of Z = front / L over the experiment's points with 0 < T <= 3 (T = t sqrt(2g/L)), after one
time shift of at most 0.2 in T. This script puts SPlisHSPlasH, the reference implementation of
the field's pressure solvers, through the same measure on the same column, and scores both
programs against Martin & Moyce (1952) too (columns of the same shape, a wide and 2a high, for
a = 2.25 and 1.125 in), and the two experiments against each other.

The column is Koshizuka & Oka's (L wide, 2L high), here in a tank 5L x 3L x L (L deep: a 3-D
box, as the validation's walls-and-edges case), at n particles across L, Froude-scaled to
SPlisHSPlasH's particle size r = 0.025 m (L = 2 n r): lengths x S, times x sqrt(S), so Z and T
are those of the validation. The step is the validation's (1/480 s at n = 18, 1/960 s at
n = 36, before scaling); frames every two steps.

SPlisHSPlasH's column is settled before the release. Its fluid block, sampled at a spacing of
2r, starts about 15 % over its rest density by its own estimate (after its first step) and
jumps up at once (14.7 m/s, its top about 1.1 L higher after 0.26 s at n = 18). Released from
that state, its fronts ran 35-41 % ahead of the experiment with fixed steps, and reached the far
wall by T = 1 with CFL steps. So the script first settles SPlisHSPlasH's column with its DFSPH
in a closed box L x 3L x L for SETTLE_S (2.5 s at L = 0.9 m, its CFL steps), from a block
0.906 x 2L high, which expands to about 2L (the largest y + r at the end is written to the
result as "settled_top_L"); it exports that state (partio) and releases it in the tank. pbf
starts from its lattice at rest density, as `pbf validate` does.

Programs and methods (SPlisHSPlasH's volume-map walls, Bender et al. 2019, and its standard
XSPH viscosity 0.01, its CFL-adaptive steps up to the validation's step; pbf with its defaults
and fixed steps, vorticity confinement off as SPlisHSPlasH's scenes):
  pbf          pbf's PBF, 4 iterations;
  splash-pbf   SPlisHSPlasH's PBF (Macklin & Mueller 2013), 4 iterations;
  splash-dfsph SPlisHSPlasH's DFSPH (Bender & Koschier 2015), its default tolerances
               (density 0.01 %, divergence 0.1 %).

The front is pbf validate's: the largest x + r over the particles within 2 spacings of the floor
that have at least 4 such particles within 2 spacings.

Run it inside bench/.venv (created by bench/side_by_side.sh):
    OMP_NUM_THREADS=2 bench/.venv/bin/python bench/dam_front_peers.py --pbf build/pbf \\
        --out /tmp/dam_front --json bench/results/dam_front_peers_<date>_<host>.json
It prints one JSON object (after SPlisHSPlasH's log, which goes to stdout too; --json FILE
writes it alone).
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

G = 9.81
L0 = 0.146  # Koshizuka & Oka's column width, m
R = 0.025   # SPlisHSPlasH's particle radius, m
T_MAX = 3.0  # scored points: 0 < T <= 3
T_END = 3.2  # the runs end a little past the last scored point
SHIFT_MAX = 0.2
SETTLE_S = 2.5  # s at L = 0.9 m: SPlisHSPlasH's column settles in a closed box first
SETTLE_BLOCK = 0.906  # its block's height / 2L: the block expands to about 2L as it settles

# T = t sqrt(2g/L), Z = z/L (PySPH's dam-break example data, as pbf validate compiles them)
KO = [(0.0, 1.0), (0.381, 1.111), (0.769, 1.252), (1.153, 1.505), (1.537, 1.892), (1.935, 2.241),
      (2.323, 2.615), (2.719, 3.003), (3.096, 3.624)]
MM2 = [(0.0, 1.0), (0.832, 1.217), (1.219, 1.474), (1.997, 2.292), (2.547, 2.995), (3.345, 4.134)]
MM1 = [(0.0, 1.0), (0.849, 1.245), (1.212, 1.443), (1.602, 1.884), (2.283, 2.689), (2.950, 3.728),
       (3.598, 4.528)]
EXPERIMENTS = {"Koshizuka & Oka (1996)": KO, "Martin & Moyce (1952), a = 2.25 in": MM2,
               "Martin & Moyce (1952), a = 1.125 in": MM1}


class Setup:
    def __init__(self, n):
        self.n = n
        self.L = 2 * n * R
        self.S = self.L / L0
        self.dt = (1.0 / 480.0) * (18.0 / n) * math.sqrt(self.S)
        self.t_scale = math.sqrt(2 * G / self.L)  # T = t * t_scale
        self.t_end = T_END / self.t_scale
        self.steps = int(math.ceil(self.t_end / self.dt))
        self.settle_s = SETTLE_S * math.sqrt(self.L / 0.9)


def interp(curve, T):
    """Piecewise linear Z(T) of (T, Z) points; Z(0) before the first, None past the last."""
    if T <= curve[0][0]:
        return curve[0][1]
    for (t0, z0), (t1, z1) in zip(curve, curve[1:]):
        if T <= t1:
            return z0 + (z1 - z0) * (T - t0) / (t1 - t0)
    return None


def curve_error(curve, exp, shift):
    worst = 0.0
    for T, Z in exp[1:]:
        if T > T_MAX:
            continue
        z = interp(curve, T - shift)
        if z is None:
            return math.inf
        worst = max(worst, 100.0 * abs(z - Z) / Z)
    return worst


def best_shift(curve, exp, limit=SHIFT_MAX):
    """The shift in [-limit, limit] (steps of 0.001) that minimises the error, and that error."""
    best, be = 0.0, curve_error(curve, exp, 0.0)
    k = int(round(limit / 0.001))
    for i in range(-k, k + 1):
        e = curve_error(curve, exp, i * 0.001)
        if e < be - 1e-12:
            best, be = i * 0.001, e
    return best, be


def scores(curve):
    out = {}
    for name, exp in EXPERIMENTS.items():
        sh, e = best_shift(curve, exp)
        out[name] = {"error_no_shift_pct": round(curve_error(curve, exp, 0.0), 2),
                     "shift": round(sh, 3), "error_pct": round(e, 2)}
    return out


def front(xs, ys, zs, spacing):
    """pbf validate's front: the largest x + r over the particles within 2 spacings of the floor
    (y = 0) with at least 4 such particles within 2 spacings; None when none has."""
    rad = 2.0 * spacing
    band = sorted(((x, y, z) for x, y, z in zip(xs, ys, zs) if 0.0 <= y <= rad), reverse=True)
    r2 = rad * rad
    for i, (x, y, z) in enumerate(band):
        count = 0
        for step in (-1, 1):
            j = i + step
            while 0 <= j < len(band) and count < 4:
                dx = band[j][0] - x
                if abs(dx) > rad:
                    break
                if dx * dx + (band[j][1] - y) ** 2 + (band[j][2] - z) ** 2 <= r2:
                    count += 1
                j += step
        if count >= 4:
            return x + spacing / 2.0
    return None


def splash_scene(path, peer_dir, su, method, fluid_file=None, settle=False):
    """SPlisHSPlasH's scene: the settling box (settle) or the dam-break tank with the settled
    column from fluid_file."""
    L = su.L
    conf = {"particleRadius": R, "numberOfStepsPerRenderUpdate": 1,
            "simulationMethod": {"pbf": 2, "dfsph": 4}[method], "gravitation": [0, -G, 0],
            "timeStepSize": su.dt, "cflMethod": 1, "cflFactor": 1, "cflMaxTimeStepSize": su.dt,
            "boundaryHandlingMethod": 2, "enablePartioExport": settle, "enableVTKExport": False}
    if settle:  # one partio frame, at the end
        conf["dataExportFPS"] = 1.0001 / su.settle_s
        conf["particleAttributes"] = "velocity"
    if method == "pbf":
        conf["PBF"] = {"minIterations": 4, "maxIterations": 4, "maxError": 0.01,
                       "velocityUpdateMethod": 0}
    else:
        conf["DFSPH"] = {"minIterations": 2, "maxIterations": 100, "maxError": 0.01,
                         "maxErrorV": 0.1, "enableDivergenceSolver": True}
    box = [L, 3 * L, L] if settle else [5 * L, 3 * L, L]
    doc = {
        "Configuration": conf,
        "Materials": [{"id": "Fluid", "density0": 1000, "viscosityMethod": 1,
                       "Standard viscosity": {"viscosity": 0.01}}],
        "RigidBodies": [{"geometryFile": os.path.join(peer_dir, "UnitBox.obj"),
                         "translation": [box[0] / 2, box[1] / 2, box[2] / 2],
                         "rotationAxis": [1, 0, 0], "rotationAngle": 0, "scale": box,
                         "isDynamic": False, "isWall": True, "mapInvert": True,
                         "mapThickness": 0.0,
                         "mapResolution": [12 * int(round(box[0] / L)), 36, 12]}],
    }
    if settle:
        doc["FluidBlocks"] = [{"denseMode": 0, "start": [0, 0, 0],
                               "end": [L, SETTLE_BLOCK * 2 * L, L],
                               "translation": [0, 0, 0], "scale": [1, 1, 1]}]
    else:
        doc["FluidModels"] = [{"particleFile": fluid_file, "id": "Fluid",
                               "translation": [0, 0, 0], "scale": [1, 1, 1]}]
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def settle_splash(peer_dir, d, su):
    """Settles SPlisHSPlasH's column (DFSPH) in the closed box; returns the exported state's
    file and the settled column's top (largest y + r, in L)."""
    import glob
    import pysplishsplash as sph  # noqa: E402 (the venv's package)
    scene = os.path.join(d, "settle_scene.json")
    splash_scene(scene, peer_dir, su, "dfsph", settle=True)
    top = [0.0]

    def on_step():
        fm = sph.Simulation.getCurrent().getFluidModel(0)
        top[0] = max(float(fm.getPosition(i)[1]) for i in range(fm.numActiveParticles())) + R

    base = sph.Exec.SimulatorBase()
    base.init(useGui=False, sceneFile=scene, outputDir=os.path.join(d, "settle"), useCache=False,
              initialPause=False, stopAt=su.settle_s)
    base.setTimeStepCB(on_step)
    base.run()
    files = sorted(glob.glob(os.path.join(d, "settle", "partio", "*.bgeo")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    if not files:
        raise RuntimeError("dam_front_peers: SPlisHSPlasH exported no settled column")
    return files[-1], top[0] / su.L


def run_splash(scene, out_dir, su):
    import pysplishsplash as sph  # noqa: E402 (the venv's package)
    curve = []
    info = {}
    steps = [0]

    def on_step():
        steps[0] += 1
        if steps[0] % 2 and steps[0] > 1:
            return
        fm = sph.Simulation.getCurrent().getFluidModel(0)
        n = fm.numActiveParticles()
        xs, ys, zs = [], [], []
        for i in range(n):
            p = fm.getPosition(i)
            xs.append(float(p[0]))
            ys.append(float(p[1]))
            zs.append(float(p[2]))
        if steps[0] == 1:
            info.update({"particles": n, "column_x": [min(xs) - R, max(xs) + R],
                         "column_y": [min(ys) - R, max(ys) + R],
                         "column_z": [min(zs) - R, max(zs) + R]})
        t = float(sph.TimeManager.getCurrent().getTime())
        z = front(xs, ys, zs, 2 * R)
        if z is not None and math.isfinite(z):
            curve.append((t * su.t_scale, z / su.L))

    base = sph.Exec.SimulatorBase()
    base.init(useGui=False, sceneFile=scene, outputDir=out_dir, useCache=False,
              initialPause=False, stopAt=su.t_end + 0.5 * su.dt)
    base.setTimeStepCB(on_step)
    base.run()
    return [(0.0, 1.0)] + curve, info


def run_pbf(exe, out_dir, su):
    L = su.L
    scene = {
        "name": "dam_front_peers", "domain_min": [0, 0, 0], "domain_max": [5 * L, 3 * L, L],
        "particle_radius": R, "solver_iterations": 4, "vorticity": 0, "fps": 1.0 / (2 * su.dt),
        "substeps": 2, "frames": int(math.ceil(su.steps / 2)), "format": "csv",
        "fluid": [{"min": [0, 0, 0], "max": [L, 2 * L, L], "velocity": [0, 0, 0]}],
    }
    path = os.path.join(out_dir, "pbf_scene.json")
    with open(path, "w") as f:
        json.dump(scene, f, indent=1)
    subprocess.run([exe, "run", path, "--out", os.path.join(out_dir, "pbf_out"), "-q"], check=True)
    curve = [(0.0, 1.0)]
    info = {}
    with open(os.path.join(out_dir, "pbf_out", "stats.jsonl")) as f:
        stats = [json.loads(line) for line in f]
    for s in stats:
        with open(os.path.join(out_dir, "pbf_out", "frame_%05d.csv" % s["frame"])) as f:
            rows = [l.split(",") for l in f.read().split("\n")[1:] if l]
        xs = [float(r[0]) for r in rows]
        ys = [float(r[1]) for r in rows]
        zs = [float(r[2]) for r in rows]
        if s["frame"] == 0:
            info = {"particles": len(rows), "column_x": [min(xs) - R, max(xs) + R]}
            continue
        z = front(xs, ys, zs, 2 * R)
        if z is not None:
            curve.append((s["time"] * su.t_scale, z / L))
    return curve, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pbf", default="build/pbf", help="the pbf executable")
    ap.add_argument("--out", default="out/dam_front_peers", help="working folder")
    ap.add_argument("--json", help="also write the result here (SPlisHSPlasH logs to stdout)")
    ap.add_argument("--n", type=int, nargs="+", default=[18], help="particles across L")
    ap.add_argument("--programs", default="pbf,splash-pbf,splash-dfsph",
                    help="comma-separated: pbf, splash-pbf, splash-dfsph")
    ap.add_argument("--peer-dir", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                        "shared", "peers", "splishsplash"),
                    help="folder with SPlisHSPlasH's UnitBox.obj")
    a = ap.parse_args()
    preload_gldispatch()
    os.makedirs(a.out, exist_ok=True)
    out = machine_and_build(a.pbf)
    out.update({"experiments_against_each_other": {}, "runs": []})
    for name, exp in EXPERIMENTS.items():  # each experiment's own front scored against the others
        if exp is not KO:
            sh, e = best_shift(exp, KO)
            out["experiments_against_each_other"][name + " vs Koshizuka & Oka (1996)"] = {
                "shift": round(sh, 3), "error_pct": round(e, 2)}
    for n in a.n:
        su = Setup(n)
        settled = None  # SPlisHSPlasH's settled column: (file, top in L), made once per n
        for prog in a.programs.split(","):
            d = os.path.join(os.path.abspath(a.out), "n%d_%s" % (n, prog))
            shutil.rmtree(d, ignore_errors=True)  # SPlisHSPlasH ends at once in an old folder
            os.makedirs(d)
            run = {"program": prog, "n": n, "L_m": su.L, "dt_s": su.dt, "t_end_s": su.t_end}
            try:
                if prog == "pbf":
                    curve, info = run_pbf(os.path.abspath(a.pbf), d, su)
                else:
                    peer = os.path.abspath(a.peer_dir)
                    if settled is None:
                        sd = os.path.join(os.path.abspath(a.out), "n%d_splash_settle" % n)
                        shutil.rmtree(sd, ignore_errors=True)
                        os.makedirs(sd)
                        settled = settle_splash(peer, sd, su)
                    scene = os.path.join(d, "scene.json")
                    splash_scene(scene, peer, su, prog.split("-")[1], fluid_file=settled[0])
                    curve, info = run_splash(scene, os.path.join(d, "out"), su)
                    info["settle_s"] = su.settle_s
                    info["settled_top_L"] = round(settled[1], 4)
            except ImportError as e:
                run["skipped"] = "pysplishsplash not importable: %s" % e
                out["runs"].append(run)
                continue
            run.update(info)
            run["scores"] = scores(curve)
            run["front"] = [[round(T, 4), round(Z, 4)] for T, Z in curve]
            out["runs"].append(run)
            with open(os.path.join(d, "front.dat"), "w") as f:
                f.write("# T Z\n" + "".join("%.5f %.5f\n" % p for p in curve))
    write_result(out, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
