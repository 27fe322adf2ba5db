#!/usr/bin/env bash
# Surface reconstruction, pbf against splashsurf (pysplashsurf from PyPI), side by side.
#
#   bench/surface_vs_splashsurf.sh [options of bench/surface_vs_splashsurf.py]
#
# Makes (once) a venv in $PBF_SPLASH_VENV (default /tmp/pbf_splashsurf_venv) with pysplashsurf
# and numpy, then runs bench/surface_vs_splashsurf.py with it; RAYON_NUM_THREADS follows
# --threads (default 2). Exits 77 with a message when pip cannot install them (offline).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PBF_SPLASH_VENV:-/tmp/pbf_splashsurf_venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pysplashsurf, numpy' 2>/dev/null; then
    python3 -m venv "$venv" || { echo "surface_vs_splashsurf: cannot create a venv in $venv (python3-venv)"; exit 77; }
    if ! "$venv/bin/pip" install -q pysplashsurf numpy; then
        echo "surface_vs_splashsurf: pip could not install pysplashsurf (offline?): skipped"
        exit 77
    fi
fi
threads=2
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
    if [ "${args[$i]}" = "--threads" ] && [ $((i + 1)) -lt ${#args[@]} ]; then threads="${args[$((i + 1))]}"; fi
done
[ -x build/pbf ] || { echo "surface_vs_splashsurf: build/pbf missing: cmake --build build first"; exit 1; }
export RAYON_NUM_THREADS="$threads"
exec "$venv/bin/python" bench/surface_vs_splashsurf.py "$@"
