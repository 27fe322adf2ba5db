#!/usr/bin/python3
"""Weak and strong scaling of `mpirun -np P pbf run` at 1 and 2 processes, one thread each
(docs/mpi.md). A tank at rest, 0.3 x 0.3 m in cross-section, water 0.2 m deep, particle radius r;
length L = 0.6 m (one process's share) or 1.2 m (two processes' worth).

    bench/mpi_scaling.py [--pbf build/pbf] [--radius 0.0075] [--repeats 5] [--frames 10]
                         [--json bench/results/mpi_scaling_DATE_HOST.json]

Runs, each --repeats times, interleaved (so that a burst of load on a shared machine hits every
configuration alike), the minimum of each kept:
  serial L        `pbf run` without MPI (the reference a process's share is measured against)
  np1 L           `mpirun -np 1 pbf run`: the decomposition's own cost (migration to itself,
                  merge, halo lists) without any neighbour
  np2 L           `mpirun -np 2 pbf run` (bisection, the default) and `--set
                  mpi_decomposition=slabs`, and bisection with `--mca mpi_yield_when_idle 1`
                  (Open MPI then yields the core while it waits: on a loaded machine the
                  partner process gets scheduled sooner)
  np1 bind to none `mpirun --bind-to none -np 1` at 0.6 m: mpirun binds one or two processes to
                  a core, a serial run is not bound; measured on a quiet VM `-np 1` cost
                  about 2 ms per step at 0.6 and at 1.2 m alike, more than its instructions
Also the CPU time (user + system) of each whole run, every process and mpirun included
(setup and frame writing too): less sensitive to other jobs than the wall clock.
Weak-scaling efficiency: serial(0.6 m) / np2(1.2 m); strong: serial(1.2 m) / (2 np2(1.2 m)).
ms/step is `pbf run`'s mean over the run's steps (process 0's wall clock around the steps,
frames and their writing excluded). The deterministic traffic figures (ghosts, messages, bytes
per particle and step) come from the MPI summary line.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import socket
import subprocess
import children_die  # noqa: F401,E402 (the processes it starts die with it)
import sys
import tempfile

from pbf_run_output import parse_run

here = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser()
p.add_argument("--pbf", default=os.path.join(here, "..", "build", "pbf"))
p.add_argument("--radius", type=float, default=0.0075)
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--frames", type=int, default=10)
p.add_argument("--json", default=None)
p.add_argument("--callgrind", default=None, metavar="PBF",
               help="also count instructions (valgrind's callgrind; a pbf built with "
                    "-DPBF_NATIVE=OFF: valgrind does not know every AVX-512 instruction)")
p.add_argument("--callgrind-frames", type=int, default=2)
a = p.parse_args()
pbf = os.path.abspath(a.pbf)
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1")
tmp = tempfile.mkdtemp(prefix="pbf_mpi_scaling.")


def scene(length):
    path = os.path.join(tmp, "tank_%g.json" % length)
    json.dump({"name": "tank %g m" % length, "domain_min": [0, 0, 0],
               "domain_max": [length, 0.3, 0.3], "particle_radius": a.radius, "fps": 60,
               "substeps": 4, "format": "vtp",
               "fluid": [{"min": [0, 0, 0], "max": [length, 0.2, 0.3]}]}, open(path, "w"))
    return path


def run(np_, length, extra=(), mpi_args=()):
    out = os.path.join(tmp, "out")
    cmd = [pbf, "run", scene(length), "--out", out, "--frames", str(a.frames), "--set",
           "threads=1"] + list(extra)
    if np_ > 0:
        cmd = ["mpirun", "--oversubscribe"] + list(mpi_args) + ["-np", str(np_)] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                       universal_newlines=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stdout[-3000:]))
    res = parse_run(r.stdout)
    res["cpu_s_whole_run"] = cpu
    return res


def callgrind_step(pbf_cg, np_, length):
    """Instructions inside pbf_world_step per process, less those inside MPI calls (waiting
    polls, and how long it polls depends on the other jobs): the work each process does."""
    out = os.path.join(tmp, "cg")
    files = os.path.join(tmp, "cg.%q{OMPI_COMM_WORLD_RANK}" if np_ else "cg.serial")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + files, pbf_cg, "run",
           scene(length), "--out", out, "--frames", str(a.callgrind_frames), "--set", "threads=1",
           "-q"]
    if np_ > 0:
        cmd = ["mpirun", "--oversubscribe", "-np", str(np_)] + cmd
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    res = []
    for r in range(max(np_, 1)):
        f = os.path.join(tmp, "cg.%d" % r if np_ else "cg.serial")
        txt = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", f],
                             stdout=subprocess.PIPE, universal_newlines=True).stdout
        step = mpi = 0
        for line in txt.splitlines():
            m = re.match(r"\s*([\d,]+) \(.*?\)\s+\S*?:(\S+) \[", line)
            if not m:
                continue
            v, fn = int(m.group(1).replace(",", "")), m.group(2)
            if fn == "pbf_world_step":
                step = v
            elif fn.startswith("PMPI_") and fn not in ("PMPI_Init_thread", "PMPI_Finalize"):
                mpi += v  # the Allreduce of the guard after each step is counted too: < 1 %
        res.append({"rank": r, "step_instructions": step, "mpi_instructions": mpi,
                    "work_instructions": step - mpi})
        os.remove(f)
    return res


YIELD = ("--mca", "mpi_yield_when_idle", "1")
NOBIND = ("--bind-to", "none")
configs = [("serial", 0, 0.6, (), ()), ("serial", 0, 1.2, (), ()), ("np1", 1, 0.6, (), ()),
           ("np1", 1, 1.2, (), ()), ("np2 bisection", 2, 1.2, (), ()),
           ("np2 slabs", 2, 1.2, ("--set", "mpi_decomposition=slabs"), ()),
           ("np2 bisection, yield when idle", 2, 1.2, (), YIELD),
           ("np1, bind to none", 1, 0.6, (), NOBIND)]
samples = {c: [] for c in configs}
loads = []
for k in range(a.repeats):
    for c in configs:
        loads.append(os.getloadavg()[0])
        r = run(c[1], c[2], c[3], c[4])
        samples[c].append(r)
        print("repeat %d %-14s L = %.1f m: %.3f ms/step" % (k + 1, c[0], c[2], r["ms_per_step"]),
              flush=True)

rows = []
best = {}
for c in configs:
    s = samples[c]
    row = dict(s[0])
    row.update(config=c[0], processes=max(c[1], 1), mpi=c[1] > 0, length_m=c[2],
               ms_per_step_all=[x["ms_per_step"] for x in s],
               ms_per_step=min(x["ms_per_step"] for x in s),
               cpu_s_whole_run_all=[x["cpu_s_whole_run"] for x in s],
               cpu_s_whole_run=min(x["cpu_s_whole_run"] for x in s))
    row.pop("cpu_s_whole_run_all" if False else "steps", None)
    row["steps"] = s[0]["steps"]
    rows.append(row)
    best[(c[0], c[2])] = row["ms_per_step"]

s06, s12 = best[("serial", 0.6)], best[("serial", 1.2)]
res = {
    "tool": "bench/mpi_scaling.py",
    "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
    "machine": {"host": socket.gethostname(), "cpu": next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        platform.processor()), "cores_online": os.cpu_count(), "kernel": platform.release(),
        "mpi": subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.splitlines()[0],
        "load_average_1min_during": [min(loads), max(loads)],
        "note": "shared VM: other jobs ran during the measurement (load average above); each "
                "figure is the minimum over the repeats"},
    "git_commit": subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                                 stdout=subprocess.PIPE, universal_newlines=True).stdout.strip(),
    "settings": {"radius_m": a.radius, "frames": a.frames, "substeps": 4, "threads_per_process": 1,
                 "repeats": a.repeats, "scene": "tank L x 0.3 x 0.3 m, water L x 0.2 x 0.3 m at rest",
                 "mpirun": "mpirun --oversubscribe -np P"},
    "runs": rows,
    "efficiency": {
        "weak_np2_bisection": s06 / best[("np2 bisection", 1.2)],
        "weak_np2_slabs": s06 / best[("np2 slabs", 1.2)],
        "strong_np2_bisection": s12 / (2 * best[("np2 bisection", 1.2)]),
        "strong_np2_slabs": s12 / (2 * best[("np2 slabs", 1.2)]),
        "weak_np2_bisection_yield": s06 / best[("np2 bisection, yield when idle", 1.2)],
        "strong_np2_bisection_yield": s12 / (2 * best[("np2 bisection, yield when idle", 1.2)]),
        "np1_overhead_0.6": best[("np1", 0.6)] / s06 - 1,
        "np1_overhead_1.2": best[("np1", 1.2)] / s12 - 1,
        "np1_overhead_0.6_bind_to_none": best[("np1, bind to none", 0.6)] / s06 - 1,
        "note": "weak: serial(0.6 m) / np2(1.2 m); strong: serial(1.2 m) / (2 np2(1.2 m)); "
                "np1 overhead: mpirun -np 1 over serial, the decomposition's own per-particle cost"},
}
if a.callgrind:
    cg = {c: callgrind_step(os.path.abspath(a.callgrind), n, L)
          for c, n, L in (("serial 0.6", 0, 0.6), ("serial 1.2", 0, 1.2), ("np1 1.2", 1, 1.2),
                          ("np2 1.2", 2, 1.2), ("np4 1.2", 4, 1.2))}
    # the traffic figures of 4 processes (deterministic; the wall time of 4 processes on this
    # machine's 2 cores means nothing)
    np4 = run(4, 1.2)
    steps = a.callgrind_frames * 4
    w06 = cg["serial 0.6"][0]["work_instructions"]
    n06 = rows[0]["particles"]
    res["instructions"] = {
        "note": "valgrind --tool=callgrind, %d frames (%d steps), a pbf built with "
                "-DPBF_NATIVE=OFF; work_instructions: inclusive count of pbf_world_step less the "
                "MPI calls inside it (their polling depends on the load)" % (a.callgrind_frames, steps),
        "runs": cg,
        "per_particle_step_serial": w06 / (n06 * steps),
        "np1_overhead": cg["np1 1.2"][0]["work_instructions"] / cg["serial 1.2"][0]["work_instructions"] - 1,
        "np2_work_efficiency": w06 / max(x["work_instructions"] for x in cg["np2 1.2"]),
        "np4_run": {k: v for k, v in np4.items() if k not in ("ms_per_step", "cpu_s_whole_run")},
    }
    print(json.dumps({k: v for k, v in res["instructions"].items() if k != "runs"}, indent=1))
print(json.dumps(res["efficiency"], indent=1))
if a.json:
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print("wrote", a.json)
