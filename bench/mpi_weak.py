#!/usr/bin/env python3
"""Weak and strong scaling of `mpirun -np P pbf run` up to as many processes as the machine has
cores (docs/mpi.md), one thread per process. A tank at rest, 0.3 m wide, water 0.2 m deep:
each process's share is 0.6 m of its length, the particle radius chosen so that a share holds
about --per-process particles; P processes get a tank P shares long (weak scaling), and the tank
of --strong-shares shares is also run on every P (strong scaling).

    bench/mpi_weak.py [--pbf build/pbf] [--procs 1,2,4,8,16] [--per-process 1000000]
                      [--frames 2] [--strong-shares 4] [--independent] [--json FILE]

Weak-scaling efficiency at P: serial(1 share) / np P(P shares), the serial run being `pbf run`
without MPI; also against `mpirun -np 1` (the decomposition's own cost left out). Strong:
np 1(S shares) / (P np P(S shares)). With --independent, P serial one-share runs at once, no MPI,
each on its own core: what the machine itself gives P processes (memory bandwidth, caches and
clocks are shared), so the decomposition's own efficiency is that over np P. ms/step is `pbf run`'s mean over its steps (process 0's
wall clock around the steps; frame writing excluded). Frames are written as pieces, one per
process (mpi_output = pieces). Processes are bound to cores (`--bind-to core`); with more
processes than cores mpirun is given --oversubscribe (that run then measures nothing but
correctness: say so).
"""
import argparse
import datetime
import json
import os
import platform
import socket
import subprocess
import children_die  # noqa: F401,E402 (the processes it starts die with it)
import sys
import tempfile

from pbf_run_output import parse_run

here = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser()
p.add_argument("--pbf", default=os.path.join(here, "..", "build", "pbf"))
p.add_argument("--procs", default="1,2,4,8,16")
p.add_argument("--per-process", type=float, default=1e6)
p.add_argument("--frames", type=int, default=2)
p.add_argument("--strong-shares", type=int, default=4, help="0: no strong-scaling runs")
p.add_argument("--independent", action="store_true",
               help="also run P serial one-share runs at once (no MPI): the machine's own limit")
p.add_argument("--json", default=None)
a = p.parse_args()
pbf = os.path.abspath(a.pbf)
procs = [int(x) for x in a.procs.split(",")]
cores = os.cpu_count()
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1")
tmp = tempfile.mkdtemp(prefix="pbf_mpi_weak.")
share = 0.6
# a share holds (0.6 / 2r) (0.2 / 2r) (0.3 / 2r) particles
radius = ((share * 0.2 * 0.3) / (8.0 * a.per_process)) ** (1.0 / 3.0)


def scene(shares):
    length = share * shares
    path = os.path.join(tmp, "tank_%d.json" % shares)
    json.dump({"name": "tank of %d shares" % shares, "domain_min": [0, 0, 0],
               "domain_max": [length, 0.3, 0.3], "particle_radius": radius, "fps": 60,
               "substeps": 4, "format": "vtp", "mpi_output": "pieces",
               "fluid": [{"min": [0, 0, 0], "max": [length, 0.2, 0.3]}]}, open(path, "w"))
    return path


def run(np_, shares):
    out = os.path.join(tmp, "out")
    cmd = [pbf, "run", scene(shares), "--out", out, "--frames", str(a.frames), "--set",
           "threads=1"]
    if np_ > 0:
        cmd = ["mpirun", "--bind-to", "core"] + (["--oversubscribe"] if np_ > cores else []) + \
              ["-np", str(np_)] + cmd
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stdout[-3000:]))
    res = {"processes": max(np_, 1), "mpi": np_ > 0, "shares": shares,
           "oversubscribed": np_ > cores}
    res.update(parse_run(r.stdout))
    print("%-7s P = %2d, %2d shares, %9d particles: %9.1f ms/step" %
          ("mpirun" if np_ else "serial", res["processes"], shares, res["particles"],
           res["ms_per_step"]), flush=True)
    return res


def independent(n):
    """n serial runs of one share at once, each on its own core (taskset): what the machine
    gives n processes that never talk (shared memory bandwidth, caches, clocks), the ceiling
    of any decomposition's weak scaling on it."""
    procs_ = []
    path = scene(1)  # written once: the runs start while the others read it
    for k in range(n):
        out = os.path.join(tmp, "ind%d" % k)
        cmd = [pbf, "run", path, "--out", out, "--frames", str(a.frames), "--set", "threads=1"]
        if n <= cores:
            cmd = ["taskset", "-c", str(k)] + cmd
        procs_.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       env=env, universal_newlines=True))
    ms = []
    for pr in procs_:
        text = pr.communicate()[0]
        if pr.returncode != 0:
            sys.exit("failed: independent serial run\n" + text[-3000:])
        ms.append(parse_run(text)["ms_per_step"])
    res = {"processes": n, "mpi": False, "independent": True, "shares": 1,
           "ms_per_step": max(ms), "ms_per_step_each": ms}
    print("%d independent serial runs at once: %.1f .. %.1f ms/step" % (n, min(ms), max(ms)),
          flush=True)
    return res


runs = [run(0, 1)]
for n in procs:
    runs.append(run(n, n))
if a.strong_shares > 0:
    for n in procs:
        if n != a.strong_shares:
            runs.append(run(n, a.strong_shares))
if a.independent:
    for n in procs:
        runs.append(independent(n))
serial = runs[0]["ms_per_step"]
by = {(r["processes"], r["shares"], r["mpi"]): r for r in runs if not r.get("independent")}
ind = {r["processes"]: r["ms_per_step"] for r in runs if r.get("independent")}
weak = {str(n): serial / by[(n, n, True)]["ms_per_step"] for n in procs}
np1 = by.get((1, 1, True))
weak_np1 = {str(n): np1["ms_per_step"] / by[(n, n, True)]["ms_per_step"] for n in procs} if np1 else {}
strong = {}
if a.strong_shares > 0 and (1, a.strong_shares, True) in by:
    t1 = by[(1, a.strong_shares, True)]["ms_per_step"]
    strong = {str(n): t1 / (n * by[(n, a.strong_shares, True)]["ms_per_step"]) for n in procs}
res = {
    "tool": "bench/mpi_weak.py",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "machine": {"host": socket.gethostname(), "cpu": next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        platform.processor()), "cores_online": cores, "kernel": platform.release(),
        "mpi": subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE,
                              universal_newlines=True, env=env).stdout.splitlines()[0]},
    "git_commit": subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                                 stdout=subprocess.PIPE, universal_newlines=True).stdout.strip(),
    "settings": {"radius_m": radius, "per_process_target": a.per_process, "frames": a.frames,
                 "substeps": 4, "threads_per_process": 1, "share_m": share,
                 "scene": "tank (0.6 P) x 0.3 x 0.3 m, water (0.6 P) x 0.2 x 0.3 m at rest",
                 "mpirun": "mpirun --bind-to core -np P (--oversubscribe beyond the cores)"},
    "runs": runs,
    "efficiency": {"weak": weak, "weak_against_np1": weak_np1, "strong": strong,
                   "machine_independent": {str(n): serial / t for n, t in ind.items()},
                   "decomposition": {str(n): t / by[(n, n, True)]["ms_per_step"]
                                     for n, t in ind.items()},
                   "strong_shares": a.strong_shares,
                   "note": "weak: serial(1 share) / np P(P shares); weak_against_np1: the same "
                           "over mpirun -np 1; strong: np1(S) / (P npP(S)); machine_independent: "
                           "serial / the slowest of P serial runs at once (the machine's ceiling); "
                           "decomposition: that slowest run / np P(P shares)"},
}
print(json.dumps(res["efficiency"], indent=1))
if a.json:
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print("wrote", a.json)
