#!/usr/bin/env python3
"""Times SPlisHSPlasH (pysplishsplash) headless on one scene file.

Run it only inside bench/.venv (bench/side_by_side.sh does). It runs the scene with its Python
API (SimulatorBase.init(useGui=False, ...) + run(), stopping after warm-up + measured steps),
records a time stamp in the per-step callback (setTimeStepCB) and reports, as JSON, the wall
time of the measured steps: the interval between two consecutive callbacks is one
timeStepNoGUI() (one simulation step, exporters disabled by the scene) plus the callback. The
startup (scene loading, volume-map construction, the first steps) is excluded. The thread count
is OMP_NUM_THREADS, set by the caller.

After the first step it reads back the non-pressure physics the simulator runs (JSON
`peer_physics`: viscosity and vorticity methods and coefficients, kernels, support radius,
boundary handling), so that the comparison can say what both programs compute.

At the last measured step it also takes the density error the way `pbf bench` reports it: the
mean and the maximum over particles of max(rho / rho0 - 1, 0), in percent.

--method NAME (wcsph, pcisph, pbf, iisph, dfsph) runs another pressure solver on the same scene:
a copy of the scene with SPlisHSPlasH's `simulationMethod` (0 WCSPH, 1 PCISPH, 2 PBF, 3 IISPH,
4 DFSPH), a fixed time step (--dt; `cflMethod` 0) and the solver's parameters (--param
KEY=VALUE: maxError in %, minIterations, maxIterations, maxErrorV, stiffness, exponent, ...),
written into `Configuration` and into the method's own block inside it (as the PBF scene's
`"PBF"` block), and reads back the values the
solver took (JSON `peer_settings`) and its iterations in each measured step.
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


# SPlisHSPlasH's `simulationMethod` and the name of each method's parameter block.
METHODS = {"wcsph": 0, "pcisph": 1, "pbf": 2, "iisph": 3, "dfsph": 4}
BLOCKS = {"wcsph": "WCSPH", "pcisph": "PCISPH", "pbf": "PBF", "iisph": "IISPH", "dfsph": "DFSPH"}
SETTINGS = ("MIN_ITERATIONS", "MAX_ITERATIONS", "MAX_ERROR", "MAX_ITERATIONS_V", "MAX_ERROR_V",
            "USE_DIVERGENCE_SOLVER", "STIFFNESS", "EXPONENT")


def method_scene(scene, method, dt, params):
    """A copy of `scene` beside it that runs `method` at the fixed step `dt` with `params`."""
    with open(scene) as f:
        doc = json.load(f)
    conf = doc["Configuration"]
    conf["simulationMethod"] = METHODS[method]
    if dt:
        conf.update(timeStepSize=dt, cflMethod=0, cflMaxTimeStepSize=dt)
    block = {}
    for item in params:
        key, value = item.split("=", 1)
        v = json.loads(value) if value not in ("true", "false") else value == "true"
        block[key] = v
        conf[key] = v
    conf[BLOCKS[method]] = dict(conf.get(BLOCKS[method], {}), **block)
    out = os.path.join(os.path.dirname(scene), "%s_%s.json" % (
        os.path.splitext(os.path.basename(scene))[0], method))
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
    return out


def read_settings(sph, ts):
    """The solver parameters as SPlisHSPlasH holds them (what it really ran with)."""
    got = {"time_step_size": sph.TimeManager.getCurrent().getTimeStepSize()}
    for name in SETTINGS:
        if not hasattr(ts, name):
            continue
        pid = getattr(ts, name)
        kind = ts.getType(pid)
        try:
            if kind in (ts.FLOAT, ts.DOUBLE):
                got[name.lower()] = ts.getValueFloat(pid)
            elif kind == ts.BOOL:
                got[name.lower()] = ts.getValueBool(pid)
            elif kind in (ts.UINT8, ts.UINT16, ts.UINT32):
                got[name.lower()] = ts.getValueUInt(pid)
            else:
                got[name.lower()] = ts.getValueInt(pid)
        except Exception:  # noqa: BLE001 (a label only)
            got[name.lower()] = None
    return got


def read_physics(sph):
    """The non-pressure physics SPlisHSPlasH runs (read back from the simulator, not the file):
    viscosity and vorticity methods with their coefficients, kernels, support radius, boundary
    handling, PBF's velocity update. Each read that fails is None (a label only)."""
    sim = sph.Simulation.getCurrent()
    fm = sim.getFluidModel(0)
    got = {}

    def grab(key, fn):
        try:
            got[key] = fn()
        except Exception:  # noqa: BLE001 (a label only)
            got[key] = None

    grab("viscosity_method", lambda: type(fm.getViscosityBase()).__name__)
    grab("viscosity_coefficient",
         lambda: fm.getViscosityBase().getValueFloat(fm.getViscosityBase().VISCOSITY_COEFFICIENT))
    grab("vorticity_method", lambda: (lambda v: type(v).__name__ if v is not None else "none")(
        fm.getVorticityBase()))
    grab("surface_tension_method", lambda: (lambda v: type(v).__name__ if v is not None
                                            else "none")(fm.getSurfaceTensionBase()))
    grab("kernel_method", lambda: sim.getValueInt(sim.KERNEL_METHOD))
    grab("grad_kernel_method", lambda: sim.getValueInt(sim.GRAD_KERNEL_METHOD))
    grab("support_radius", sim.getSupportRadius)
    grab("particle_radius", sim.getParticleRadius)
    grab("boundary_handling", lambda: str(sim.getBoundaryHandlingMethod()))
    grab("particles", fm.numActiveParticles)
    ts = sim.getTimeStep()
    grab("time_step_class", lambda: type(ts).__name__)
    if hasattr(ts, "VELOCITY_UPDATE_METHOD"):
        grab("pbf_velocity_update_method", lambda: ts.getValueInt(ts.VELOCITY_UPDATE_METHOD))
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scene", required=True, help="scene file (its UnitBox.obj beside it)")
    ap.add_argument("--warmup", type=int, default=5, help="steps excluded (at least 1)")
    ap.add_argument("--steps", type=int, default=30, help="measured steps")
    ap.add_argument("--json", required=True, help="output file")
    ap.add_argument("--out-dir", default=None, help="SPlisHSPlasH's output directory (log only)")
    ap.add_argument("--method", choices=sorted(METHODS), default=None,
                    help="pressure solver (default: the scene's)")
    ap.add_argument("--dt", type=float, default=None, help="fixed time step, s (with --method)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a solver parameter of SPlisHSPlasH (with --method); may be repeated")
    a = ap.parse_args()

    import pysplishsplash as sph  # noqa: E402 (imported late: the venv's package)

    scene = os.path.abspath(a.scene)
    if a.method:
        scene = method_scene(scene, a.method, a.dt, a.param)
    with open(scene) as f:
        conf = json.load(f)["Configuration"]
    dt = float(conf.get("timeStepSize", 0.001))
    warmup = max(a.warmup, 1)
    total = warmup + a.steps
    out_dir = os.path.abspath(a.out_dir or os.path.join(os.path.dirname(scene), "out"))

    stamps = []
    state = {}
    iters = []
    iters_v = []
    settings = {}
    physics = {}

    def on_step():
        stamps.append(time.perf_counter())
        if len(stamps) == 1:  # after the first (warm-up) step: what the solver really runs
            physics.update(read_physics(sph))
        if a.method and len(stamps) > warmup:  # iterations of the step just made (cheap reads)
            ts = sph.Simulation.getCurrent().getTimeStep()
            if hasattr(ts, "SOLVER_ITERATIONS"):
                iters.append(ts.getValueInt(ts.SOLVER_ITERATIONS))
            if hasattr(ts, "SOLVER_ITERATIONS_V"):
                iters_v.append(ts.getValueInt(ts.SOLVER_ITERATIONS_V))
            if not settings:
                settings.update(read_settings(sph, ts))
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
        "method": a.method or {v: k for k, v in METHODS.items()}.get(conf.get("simulationMethod")),
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
        "load_average_at_end": list(os.getloadavg()),
        "peer_physics": physics,
        **state,
    }
    res["particle_steps_per_s"] = res["particles"] * 1000.0 / res["ms_per_step_mean"]
    res["s_per_simulated_s"] = res["ms_per_step_mean"] / 1000.0 / dt
    if a.method:
        res["peer_settings"] = settings
        res["iterations_per_step"] = sum(iters) / len(iters) if iters else None
        res["divergence_iterations_per_step"] = sum(iters_v) / len(iters_v) if iters_v else None
    with open(a.json, "w") as f:
        json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
