#!/usr/bin/env bash
# Side-by-side timing of pbf and SPlisHSPlasH on its dam break scenes
# (../shared/peers/splishsplash/dam_break_pbf_fixed4_r025.json = `pbf bench --case small`,
# ..._r0125.json = `--case medium`): same geometry, dt 0.005 s, 4 PBF iterations, the same
# warm-up and measured steps, the same thread count, in one run. Prints both and the ratio of
# particle-steps per second, and writes bench/results/side_by_side_<date>_<host>.json.
#
#   bash bench/side_by_side.sh [--cases small,medium] [--steps N] [--warmup N] [--threads N]
#                              [--build DIR] [--peer-dir DIR] [--targets]
#
# --targets also runs pbf alone at 1 thread (the speed-up from 1 to N threads), at 1,000,000
# particles (1 and N threads: time per step, speed-up, resident bytes per particle) and one step
# at 10,000,000 particles, and prints the performance targets (>= 5x the peer at 59k particles,
# <= 0.5 s per step at 1M, >= 1.9x from 1 to 2 threads at 59k and 1M, <= 128 bytes per
# particle at 1M, 10M runs), each with its figure and met / NOT met.
#
# The peer is pysplishsplash (PyPI) in a virtual environment bench/.venv, created on first use
# (never installed globally; pip needs PyPI). Its ms/step is the mean wall-clock interval between
# its per-step callbacks after the warm-up (bench/splash_timing.py), so scene loading and the
# volume-map construction (tens of seconds the first time; cached in bench/.venv/splash-cache)
# are excluded. pbf's is `pbf bench` (wall time of each pbf_world_step after the warm-up).
# pbf is built with the README's default Release build in --build (default: build) if missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

cases="small,medium"
steps=30
warmup=5
threads=2
build="build"
peer_dir="${root}/../shared/peers/splishsplash"
targets=0
splash_version="${PBF_SPLASH_VERSION:-2.19.0}"

usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cases) cases="$2"; shift 2 ;;
        --steps) steps="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --build) build="$2"; shift 2 ;;
        --peer-dir) peer_dir="$2"; shift 2 ;;
        --targets) targets=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "side_by_side.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
for v in "${steps}" "${warmup}" "${threads}"; do
    [[ "${v}" =~ ^[0-9]+$ && "${v}" -ge 1 ]] || { echo "side_by_side.sh: expected whole numbers >= 1" >&2; exit 2; }
done
[[ -d "${peer_dir}" ]] || { echo "side_by_side.sh: SPlisHSPlasH scenes not found in ${peer_dir} (--peer-dir)" >&2; exit 2; }

# ---- the peer's virtual environment ---------------------------------------------------------
venv="${root}/bench/.venv"
py="${venv}/bin/python"
if [[ ! -x "${py}" ]]; then
    base_py="$(command -v python3.11 || command -v python3)"
    echo "side_by_side: creating ${venv} with ${base_py} ($("${base_py}" --version))"
    "${base_py}" -m venv "${venv}"
fi
if ! "${py}" -m pip show pysplishsplash >/dev/null 2>&1; then
    echo "side_by_side: pip install pysplishsplash==${splash_version} into ${venv}"
    "${py}" -m pip install --quiet --disable-pip-version-check "pysplishsplash==${splash_version}"
fi

# The wheel bundles its own libGLdispatch but links the system's libGL.so.1, whose libGLX then
# initialises the bundled copy and crashes at import (seen with Debian 12's libglvnd 1.6).
# Preloading the system libGLdispatch makes both use one copy. Only when the plain import fails.
peer_env=()
if ! ("${py}" -c "import pysplishsplash") >/dev/null 2>&1; then
    gld="$(ldconfig -p 2>/dev/null | awk '/libGLdispatch\.so\.0 .*x86-64/ {print $NF; exit}')"
    if [[ -n "${gld}" ]] && (LD_PRELOAD="${gld}" "${py}" -c "import pysplishsplash") >/dev/null 2>&1; then
        peer_env=("LD_PRELOAD=${gld}")
        echo "side_by_side: pysplishsplash imports with LD_PRELOAD=${gld}"
    else
        echo "side_by_side: pysplishsplash does not import; it needs the system's libGL.so.1 and" >&2
        echo "  libX11.so.6 (Debian: apt-get install libgl1 libx11-6). The error:" >&2
        "${py}" -c "import pysplishsplash" >&2 || true
        exit 1
    fi
fi

# ---- pbf -------------------------------------------------------------------------------------
if [[ ! -x "${build}/pbf" ]]; then
    echo "side_by_side: building pbf (README default: Release) in ${build}/"
    cmake -S . -B "${build}" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "${build}" -j2 >/dev/null
fi

# ---- run ---------------------------------------------------------------------------------------
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cp "${peer_dir}"/*.json "${peer_dir}"/UnitBox.obj "${work}/"
mkdir -p "${venv}/splash-cache"
ln -s "${venv}/splash-cache" "${work}/Cache" # the peer caches volume maps in SCENE_DIR/Cache

peer_args=()
log_args=()
IFS=',' read -r -a case_list <<<"${cases}"
for c in "${case_list[@]}"; do
    case "${c}" in
        small) scene="dam_break_pbf_fixed4_r025.json" ;;
        medium) scene="dam_break_pbf_fixed4_r0125.json" ;;
        *) echo "side_by_side.sh: case ${c}: SPlisHSPlasH has scenes for small and medium only" >&2; exit 2 ;;
    esac
    [[ -f "${work}/${scene}" ]] || { echo "side_by_side.sh: ${peer_dir}/${scene} missing" >&2; exit 2; }
    echo "side_by_side: SPlisHSPlasH, ${c} (${scene}), OMP_NUM_THREADS=${threads}, ${warmup} + ${steps} steps ..."
    env "${peer_env[@]}" OMP_NUM_THREADS="${threads}" "${py}" "${root}/bench/splash_timing.py" \
        --scene "${work}/${scene}" --warmup "${warmup}" --steps "${steps}" \
        --json "${work}/peer_${c}.json" --out-dir "${work}/out_${c}" >"${work}/peer_${c}.log" 2>&1 \
        || { tail -n 20 "${work}/peer_${c}.log" >&2; echo "side_by_side: SPlisHSPlasH failed" >&2; exit 1; }
    own="$(awk '/^Average time: SimStep:/ {print $4}' "${work}/peer_${c}.log" | tail -n 1)"
    "${py}" -c "import json,sys; d=json.load(open(sys.argv[1])); print('  %d particles: %.3f ms/step (mean), %.3f min; its own SimStep average over all steps: %s ms' % (d['particles'], d['ms_per_step_mean'], d['ms_per_step_min'], sys.argv[2] or '?'))" "${work}/peer_${c}.json" "${own}"
    peer_args+=(--peer "${c}=${work}/peer_${c}.json")
    [[ -n "${own}" ]] && log_args+=(--peer-log "${c}=${own}")
done

pbf_threads="${threads}"
[[ "${targets}" == 1 && "${threads}" != 1 ]] && pbf_threads="1,${threads}"
echo "side_by_side: pbf bench --case ${cases} --threads ${pbf_threads} --warmup ${warmup} --steps ${steps}"
"${build}/pbf" bench --case "${cases}" --threads "${pbf_threads}" --warmup "${warmup}" \
    --steps "${steps}" --json "${work}/pbf.json"
target_args=()
if [[ "${targets}" == 1 ]]; then
    echo "side_by_side: pbf bench --particles 1000000 --threads ${pbf_threads} --warmup 1 --steps 5"
    "${build}/pbf" bench --particles 1000000 --threads "${pbf_threads}" --warmup 1 --steps 5 \
        --json "${work}/pbf_1m.json"
    echo "side_by_side: pbf bench --particles 10000000 --threads ${threads} --warmup 0 --steps 1"
    "${build}/pbf" bench --particles 10000000 --threads "${threads}" --warmup 0 --steps 1 \
        --json "${work}/pbf_10m.json" || true
    target_args=(--targets --pbf-1m "${work}/pbf_1m.json" --pbf-10m "${work}/pbf_10m.json")
fi

mkdir -p "${root}/bench/results"
host="$(hostname -s 2>/dev/null || uname -n)"
out="${root}/bench/results/side_by_side_$(date -u +%Y%m%dT%H%M%SZ)_${host}.json"
"${py}" "${root}/bench/side_by_side_report.py" --pbf "${work}/pbf.json" "${peer_args[@]}" \
    "${log_args[@]}" "${target_args[@]}" --out "${out}"
