"""What bench/settled_column.py and bench/dam_front_peers.py share: the SPlisHSPlasH wheel's
import on Debian 12, the machine and build a result names, and the result's output."""
import json
import os
import subprocess
import children_die  # noqa: F401,E402 (the processes it starts die with it)
import sys


def preload_gldispatch():
    """The wheel's bundled libGLdispatch crashes its import on Debian 12 unless the system's copy
    is preloaded (as bench/side_by_side.sh does): re-runs the calling script with it preloaded
    (does not return then); returns when the import works or nothing can be preloaded."""
    plain = subprocess.run([sys.executable, "-c", "import pysplishsplash"], capture_output=True)
    if plain.returncode != 0 and "LD_PRELOAD" not in os.environ:
        libs = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.split("\n")
        gld = [l.split()[-1] for l in libs if "libGLdispatch.so.0" in l and "x86-64" in l]
        if gld:
            os.execve(sys.executable, [sys.executable] + sys.argv,
                      dict(os.environ, LD_PRELOAD=gld[0]))


def machine_and_build(pbf_exe):
    """The head of a result: the CPU, cores and OMP_NUM_THREADS, `pbf --version` and the
    repository's commit."""
    cpu = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    ver = subprocess.run([os.path.abspath(pbf_exe), "--version"], capture_output=True, text=True)
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                             "--short=12", "HEAD"], capture_output=True, text=True)
    return {"machine": {"cpu": cpu, "cores": os.cpu_count(),
                        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "")},
            "pbf": ver.stdout.strip(), "commit": commit.stdout.strip()}


def write_result(out, path):
    """Prints the result as JSON (after SPlisHSPlasH's log on stdout) and, with a path, writes it
    there alone."""
    text = json.dumps(out, indent=1)
    print(text)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
