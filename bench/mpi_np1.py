#!/usr/bin/python3
"""The decomposition's own cost on one process: `mpirun -np 1 pbf run` against the same `pbf run`
without MPI (docs/mpi.md), on the tank of bench/mpi_weak.py (0.6 x 0.3 x 0.3 m, water 0.2 m
deep, at rest, the particle radius giving about --particles particles).

    bench/mpi_np1.py [--pbf build/pbf] [--base PBF] [--particles 1000000] [--repeats 3]
                     [--threads 1] [--json FILE]

Each configuration runs --frames-a and --frames-b frames (default 1 and 2: 4 and 8 steps); the
per-step cost is the difference of the two runs' user CPU time (/usr/bin/time's %U: mpirun's
and the process's) over the difference of their steps, which leaves out the setup (building the
scene, the domain, mpirun's start) and the first frame's writing alike; also `pbf run`'s own
mean ms/step (wall clock around the steps). Configurations are interleaved, --repeats times
(a burst of load on a shared machine hits each alike), and the median is kept. With --base, a
second pbf binary (before a change) runs the same configurations, interleaved with the first.
mpirun runs with --bind-to none (a serial run is not bound either). With a pbf whose MPI summary
line gives it, the decomposition's own time per step (the wall time in its hooks: on one process
its passes over the particles, nothing to wait for), per run: the least noisy of the figures.
"""
import argparse
import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import children_die  # noqa: F401,E402 (the processes it starts die with it)
import sys
import tempfile

from pbf_run_output import parse_run

here = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser()
p.add_argument("--pbf", default=os.path.join(here, "..", "build", "pbf"))
p.add_argument("--base", default=None, help="a second pbf (before a change), run alike")
p.add_argument("--particles", type=float, default=1e6)
p.add_argument("--repeats", type=int, default=3)
p.add_argument("--threads", type=int, default=1)
p.add_argument("--frames-a", type=int, default=1)
p.add_argument("--frames-b", type=int, default=2)
p.add_argument("--json", default=None)
a = p.parse_args()
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS=str(a.threads))
tmp = tempfile.mkdtemp(prefix="pbf_mpi_np1.")
radius = ((0.6 * 0.2 * 0.3) / (8.0 * a.particles)) ** (1.0 / 3.0)
scene = os.path.join(tmp, "tank.json")
json.dump({"name": "tank", "domain_min": [0, 0, 0], "domain_max": [0.6, 0.3, 0.3],
           "particle_radius": radius, "fps": 60, "substeps": 4, "format": "vtp",
           "mpi_output": "pieces", "fluid": [{"min": [0, 0, 0], "max": [0.6, 0.2, 0.3]}]},
          open(scene, "w"))
bins = {"new": os.path.abspath(a.pbf)}
if a.base:
    bins["base"] = os.path.abspath(a.base)


def run(binary, mpi, frames):
    cmd = [binary, "run", scene, "--out", os.path.join(tmp, "out"), "--frames", str(frames),
           "--set", "threads=%d" % a.threads]
    if mpi:
        cmd = ["mpirun", "--bind-to", "none", "-np", "1"] + cmd
    cmd = ["/usr/bin/time", "-f", "TIME %U %e"] + cmd
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stdout[-3000:]))
    t = re.search(r"TIME ([0-9.]+) ([0-9.]+)", r.stdout)
    res = {"user_s": float(t.group(1)), "wall_s": float(t.group(2))}
    res.update({k: v for k, v in parse_run(r.stdout).items()
                if k in ("ms_per_step", "steps", "particles", "decomposition_ms_per_step")})
    return res


configs = [(b, mpi) for b in bins for mpi in (0, 1)]
samples = {c: [] for c in configs}
loads = []
for k in range(a.repeats):
    for c in configs:
        loads.append(os.getloadavg()[0])
        ra, rb = run(bins[c[0]], c[1], a.frames_a), run(bins[c[0]], c[1], a.frames_b)
        s = {"user_ms_per_step": 1000.0 * (rb["user_s"] - ra["user_s"]) / (rb["steps"] - ra["steps"]),
             "ms_per_step": rb["ms_per_step"], "runs": [ra, rb],
             "decomposition_ms_per_step": rb["decomposition_ms_per_step"]}
        samples[c].append(s)
        print("repeat %d %-4s %-6s user %.1f ms/step, pbf's mean %.1f ms/step%s" %
              (k + 1, c[0], "np1" if c[1] else "serial", s["user_ms_per_step"], s["ms_per_step"],
               ", decomposition %.2f ms/step (%d steps), %.2f (%d steps)" % (
                   ra["decomposition_ms_per_step"], ra["steps"], rb["decomposition_ms_per_step"],
                   rb["steps"]) if ra["decomposition_ms_per_step"] is not None else ""),
              flush=True)

out = {}
for b in bins:
    row = {}
    for mpi in (0, 1):
        s = samples[(b, mpi)]
        row["np1" if mpi else "serial"] = {
            "user_ms_per_step": statistics.median(x["user_ms_per_step"] for x in s),
            "user_ms_per_step_all": [round(x["user_ms_per_step"], 2) for x in s],
            "ms_per_step": statistics.median(x["ms_per_step"] for x in s),
            "ms_per_step_all": [x["ms_per_step"] for x in s],
            "particles": s[0]["runs"][0]["particles"]}
        if mpi and s[0]["decomposition_ms_per_step"] is not None:
            for j, fr in ((0, a.frames_a), (1, a.frames_b)):
                v = [x["runs"][j]["decomposition_ms_per_step"] for x in s]
                row["np1"]["decomposition_ms_per_step_%d_frames" % fr] = statistics.median(v)
                row["np1"]["decomposition_ms_per_step_%d_frames_all" % fr] = v
    for key in ("user_ms_per_step", "ms_per_step"):
        d = row["np1"][key] - row["serial"][key]
        row["np1_overhead_" + key] = {"ms": d, "percent": 100.0 * d / row["serial"][key]}
    out[b] = row
    print("%-4s np1 over serial: user %+.1f ms/step (%+.2f %%), pbf's mean %+.1f ms/step (%+.2f %%)"
          % (b, row["np1_overhead_user_ms_per_step"]["ms"],
             row["np1_overhead_user_ms_per_step"]["percent"],
             row["np1_overhead_ms_per_step"]["ms"], row["np1_overhead_ms_per_step"]["percent"]))
res = {
    "tool": "bench/mpi_np1.py",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "machine": {"host": socket.gethostname(), "cpu": next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        platform.processor()), "cores_online": os.cpu_count(), "kernel": platform.release(),
        "load_average_1min_during": [min(loads), max(loads)]},
    "git_commit": subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                                 stdout=subprocess.PIPE, universal_newlines=True).stdout.strip(),
    "settings": {"radius_m": radius, "particles_target": a.particles, "threads": a.threads,
                 "frames": [a.frames_a, a.frames_b], "substeps": 4, "repeats": a.repeats,
                 "binaries": bins, "mpirun": "mpirun --bind-to none -np 1",
                 "scene": "tank 0.6 x 0.3 x 0.3 m, water 0.6 x 0.2 x 0.3 m at rest"},
    "results": out,
    "note": "user_ms_per_step: user CPU time of the --frames-b run less the --frames-a run's, "
            "per step (setup left out); ms_per_step: pbf run's mean over the steps (wall); "
            "medians over the repeats",
}
if a.json:
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print("wrote", a.json)
