#!/usr/bin/env python3
"""Times SPlisHSPlasH (pysplishsplash) headless on one scene file.

Run it only inside bench/.venv (bench/side_by_side.sh does). It runs the scene with its Python
API (SimulatorBase.init(useGui=False, ...) + run(), stopping after warm-up + measured steps),
records a time stamp in the per-step callback (setTimeStepCB) and reports, as JSON, the wall
time of the measured steps: the interval between two consecutive callbacks is one
timeStepNoGUI() (one simulation step, exporters disabled by the scene) plus the callback. The
startup (scene loading, volume-map construction, the first steps) is excluded. The thread count
is OMP_NUM_THREADS, set by the caller.

At the last measured step it also takes the density error the way `pbf bench` reports it: the
mean and the maximum over particles of max(rho / rho0 - 1, 0), in percent.
"""
import argparse
import json
import os
import statistics
import sys
import time


def peer_version() -> str:
    try:
        from importlib.metadata import version
        return version("pysplishsplash")
    except Exception:  # noqa: BLE001 (only a label)
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scene", required=True, help="scene file (its UnitBox.obj beside it)")
    ap.add_argument("--warmup", type=int, default=5, help="steps excluded (at least 1)")
    ap.add_argument("--steps", type=int, default=30, help="measured steps")
    ap.add_argument("--json", required=True, help="output file")
    ap.add_argument("--out-dir", default=None, help="SPlisHSPlasH's output directory (log only)")
    a = ap.parse_args()

    import pysplishsplash as sph  # noqa: E402 (imported late: the venv's package)

    scene = os.path.abspath(a.scene)
    with open(scene) as f:
        conf = json.load(f)["Configuration"]
    dt = float(conf.get("timeStepSize", 0.001))
    warmup = max(a.warmup, 1)
    total = warmup + a.steps
    out_dir = os.path.abspath(a.out_dir or os.path.join(os.path.dirname(scene), "out"))

    stamps = []
    state = {}

    def on_step():
        stamps.append(time.perf_counter())
        if len(stamps) == total:  # the last measured step: particle count and density error
            fm = sph.Simulation.getCurrent().getFluidModel(0)
            n = fm.numActiveParticles()
            rho0 = fm.getDensity0()
            errs = [max(fm.getDensity(i) / rho0 - 1.0, 0.0) * 100.0 for i in range(n)]
            state.update(
                particles=n,
                simulated_time_s=sph.TimeManager.getCurrent().getTime(),
                density_error_avg=sum(errs) / n if n else 0.0,
                density_error_max=max(errs) if errs else 0.0,
            )

    t0 = time.perf_counter()
    base = sph.Exec.SimulatorBase()
    base.init(useGui=False, sceneFile=scene, outputDir=out_dir, useCache=True,
              initialPause=False, stopAt=(total + 0.5) * dt)
    base.setTimeStepCB(on_step)
    base.run()  # initSimulation + steps until stopAt + cleanup
    wall = time.perf_counter() - t0

    if len(stamps) < total:
        print(f"splash_timing: SPlisHSPlasH made {len(stamps)} steps, {total} wanted", file=sys.stderr)
        return 1
    # stamps[k] ends step k+1, so stamps[k] - stamps[k-1] is step k+1: the measured steps
    # warmup+1 .. warmup+steps are the intervals ending at stamps[warmup] .. stamps[total-1].
    d = [(stamps[k] - stamps[k - 1]) * 1000.0 for k in range(warmup, total)]
    res = {
        "tool": "SPlisHSPlasH (pysplishsplash %s)" % peer_version(),
        "scene": os.path.basename(scene),
        "particle_radius": conf.get("particleRadius"),
        "dt": dt,
        "iterations": conf.get("PBF", {}).get("maxIterations"),
        "threads": int(os.environ.get("OMP_NUM_THREADS", "0") or 0),
        "warmup_steps": warmup,
        "steps": a.steps,
        "ms_per_step_mean": sum(d) / len(d),
        "ms_per_step_min": min(d),
        "ms_per_step_median": statistics.median(d),
        "ms_per_step_max": max(d),
        "ms_note": "wall time between consecutive per-step callbacks (setTimeStepCB) after the "
                   "warm-up: one timeStepNoGUI() each; startup and volume maps excluded",
        "process_wall_s": wall,
        **state,
    }
    res["particle_steps_per_s"] = res["particles"] * 1000.0 / res["ms_per_step_mean"]
    with open(a.json, "w") as f:
        json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
