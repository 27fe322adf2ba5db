#!/usr/bin/env bash
# Side-by-side timing of pbf and SPlisHSPlasH on its dam break scenes
# (../shared/peers/splishsplash/dam_break_pbf_fixed4_r025.json = `pbf bench --case small`,
# ..._r0125.json = `--case medium`): same geometry, particle count, dt 0.005 s, 4 PBF
# iterations, kernel radius 4 r, the same warm-up and measured steps, the same thread count, in
# one run. pbf runs twice: with SPlisHSPlasH's physics (its scene has no vorticity confinement:
# pbf with `--set vorticity=0`, the figure the targets are judged on) and with pbf's defaults
# (vorticity confinement 0.01, one more neighbour gather per pair); both keep one viscosity pass
# (pbf XSPH 0.01, SPlisHSPlasH's scene its "Standard" viscosity 0.01). Prints both and the ratios
# of particle-steps per second, and writes bench/results/side_by_side_<date>_<host>.json.
#
#   bash bench/side_by_side.sh [--cases small,medium] [--steps N] [--warmup N] [--threads N]
#                              [--repeat N] [--build DIR] [--peer-dir DIR] [--targets]
#                              [--methods pbf,wcsph,pcisph,iisph,dfsph] [--tolerance PCT]
#
# --repeat N (default 1; 3 with --targets) alternates the programs N times (SPlisHSPlasH, pbf,
# SPlisHSPlasH, pbf, ...); the ratio is the median of the N per-repeat ratios, so that a slow
# stretch of a shared machine hits both programs' figures alike. Each repeat is in the JSON.
# With --methods each method's pair is alternated N times (pbf's defaults and the matched-error
# ladder run once); its times are the medians of the repeats' means.
#
# --targets also runs pbf alone at 1 thread (the speed-up from 1 to N threads), at 1,000,000
# particles (1 and N threads, --repeat times: time per step and speed-up as medians over the
# repeats, resident bytes per particle as the largest) and one step at 10,000,000 particles, and prints the performance targets (>= 5x the peer at 59k particles,
# <= 0.5 s per step at 1M, >= 1.9x from 1 to 2 threads at 59k and 1M, <= 128 bytes per
# particle at 1M, 10M runs), each with its figure and met / NOT met.
#
# --methods LIST runs, instead, each pressure solver on both programs on the case (default
# medium): SPlisHSPlasH's `simulationMethod` (0 WCSPH, 1 PCISPH, 2 PBF, 3 IISPH, 4 DFSPH) against
# pbf's `solver`, at the same fixed time step (0.005 s; WCSPH 0.0005 s, which both need to stay
# stable: the Tait sound speed is 18.7 m/s), the same simulated time (warm-up and measured steps
# scaled by 0.005 s / dt), the same density error tolerance (--tolerance, default 0.1 %:
# SPlisHSPlasH's maxError and maxErrorV; pbf's *_tolerance), the same minimum and maximum
# iterations (PCISPH 3, IISPH and DFSPH 2, divergence 1; at most 100), CFL substepping off on
# both sides (WCSPH: pbf's wcsph_cfl 0.4 needs no substep at that dt), PBF with 4 fixed
# iterations, WCSPH with stiffness 50000 Pa and exponent 7, and the same physics: pbf with
# vorticity = 0, as SPlisHSPlasH's scenes run no vorticity confinement (both keep their viscosity
# of 0.01); pbf also runs each method with its defaults (vorticity confinement on), reported
# beside. Prints per method both times per step and per simulated second, iterations, density
# errors and the speed ratio at the same tolerance; then, for PCISPH, IISPH and DFSPH, a
# matched-error figure beside it: pbf again at each tolerance of the ladder 0.1/0.2/0.5/1/2 %,
# and the ratio at the loosest whose measured average density error is still at most
# SPlisHSPlasH's measured average (SPlisHSPlasH stops at its own error measure, often well above
# the tolerance). Writes bench/results/side_by_side_methods_<date>_<host>.json.
#
# The peer is pysplishsplash (PyPI) in a virtual environment bench/.venv, created on first use
# (never installed globally; pip needs PyPI), or the Python named by PBF_SPLASH_PYTHON, which
# must have it already (its volume maps are cached in PBF_SPLASH_CACHE, default
# bench/.venv/splash-cache). Its ms/step is the mean wall-clock interval between
# its per-step callbacks after the warm-up (bench/splash_timing.py), so scene loading and the
# volume-map construction (tens of seconds the first time; cached in bench/.venv/splash-cache)
# are excluded. pbf's is `pbf bench` (wall time of each pbf_world_step after the warm-up).
# pbf is built with the README's default Release build in --build (default: build) if missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

# Every program this script starts ends with it, however the script is stopped (SIGTERM, SIGINT,
# SIGKILL): `child` starts it through `setpriv --pdeathsig TERM` (util-linux), so that the kernel
# sends it SIGTERM when the script ends; pbf's own forked jobs end with pbf (app/run/jobs.c).
if setpriv --pdeathsig TERM true 2> /dev/null; then
    child() { setpriv --pdeathsig TERM -- "$@"; }
else
    child() { "$@"; }
fi

cases="small,medium"
steps=30
warmup=5
threads=2
build="build"
peer_dir="${root}/../shared/peers/splishsplash"
targets=0
repeat=""
methods=""
tolerance="0.1"
splash_version="${PBF_SPLASH_VERSION:-2.19.0}"

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cases) cases="$2"; shift 2 ;;
        --steps) steps="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --build) build="$2"; shift 2 ;;
        --peer-dir) peer_dir="$2"; shift 2 ;;
        --targets) targets=1; shift ;;
        --repeat) repeat="$2"; shift 2 ;;
        --methods) methods="$2"; shift 2 ;;
        --tolerance) tolerance="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "side_by_side.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -n "${methods}" && "${cases}" == "small,medium" ]]; then cases="medium"; fi
[[ -n "${repeat}" ]] || { [[ "${targets}" == 1 ]] && repeat=3 || repeat=1; }
[[ "${tolerance}" =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "side_by_side.sh: --tolerance: a number (%)" >&2; exit 2; }
for v in "${steps}" "${warmup}" "${threads}" "${repeat}"; do
    [[ "${v}" =~ ^[0-9]+$ && "${v}" -ge 1 ]] || { echo "side_by_side.sh: expected whole numbers >= 1" >&2; exit 2; }
done
[[ -d "${peer_dir}" ]] || { echo "side_by_side.sh: SPlisHSPlasH scenes not found in ${peer_dir} (--peer-dir)" >&2; exit 2; }

# ---- the peer's virtual environment ---------------------------------------------------------
venv="${root}/bench/.venv"
py="${PBF_SPLASH_PYTHON:-${venv}/bin/python}"
if [[ -z "${PBF_SPLASH_PYTHON:-}" && ! -x "${py}" ]]; then
    base_py="$(command -v python3.11 || command -v python3)"
    echo "side_by_side: creating ${venv} with ${base_py} ($("${base_py}" --version))"
    child "${base_py}" -m venv "${venv}"
fi
if [[ -z "${PBF_SPLASH_PYTHON:-}" ]] && ! "${py}" -m pip show pysplishsplash >/dev/null 2>&1; then
    echo "side_by_side: pip install pysplishsplash==${splash_version} into ${venv}"
    child "${py}" -m pip install --quiet --disable-pip-version-check "pysplishsplash==${splash_version}"
fi

# The wheel bundles its own libGLdispatch but links the system's libGL.so.1, whose libGLX then
# initialises the bundled copy and crashes at import (seen with Debian 12's libglvnd 1.6).
# Preloading the system libGLdispatch makes both use one copy. Only when the plain import fails.
peer_env=()
if ! ("${py}" -c "import pysplishsplash") >/dev/null 2>&1; then
    gld="$(ldconfig -p 2>/dev/null | awk '/libGLdispatch\.so\.0 .*x86-64/ && !found { print $NF; found = 1 }')" # no early exit: ldconfig would get SIGPIPE (pipefail)
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
    child cmake -S . -B "${build}" -DCMAKE_BUILD_TYPE=Release >/dev/null
    child cmake --build "${build}" -j2 >/dev/null
fi

# ---- run ---------------------------------------------------------------------------------------
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cp "${peer_dir}"/*.json "${peer_dir}"/UnitBox.obj "${work}/"
cache="${PBF_SPLASH_CACHE:-${venv}/splash-cache}"
mkdir -p "${cache}"
ln -s "${cache}" "${work}/Cache" # the peer caches volume maps in SCENE_DIR/Cache

# ---- --methods: each pressure solver on both programs -----------------------------------------
if [[ -n "${methods}" ]]; then
    [[ "${cases}" != *,* ]] || { echo "side_by_side.sh: --methods takes one case (--cases small or medium)" >&2; exit 2; }
    case "${cases}" in
        small) scene="dam_break_pbf_fixed4_r025.json" ;;
        medium) scene="dam_break_pbf_fixed4_r0125.json" ;;
        *) echo "side_by_side.sh: case ${cases}: SPlisHSPlasH has scenes for small and medium only" >&2; exit 2 ;;
    esac
    pair_args=()
    # the same physics on both sides: SPlisHSPlasH's scenes run no vorticity confinement, so pbf
    # runs none either (its default is on); both keep their viscosity of 0.01
    same_physics=(--set vorticity=0)
    ladder="0.1 0.2 0.5 1 2"
    IFS=',' read -r -a method_list <<<"${methods}"
    for m in "${method_list[@]}"; do
        tol="${tolerance}"
        dt="0.005"
        peer_p=()
        pbf_p=()
        case "${m}" in
            pbf) peer_p=(--param minIterations=4 --param maxIterations=4)
                 pbf_p=(--iterations 4) ;;
            wcsph) dt="0.0005"
                   peer_p=(--param stiffness=50000 --param exponent=7)
                   pbf_p=(--set wcsph_stiffness=50000 --set wcsph_exponent=7) ;;
            pcisph) peer_p=(--param "maxError=${tol}" --param minIterations=3 --param maxIterations=100)
                    pbf_p=(--set "pcisph_tolerance=${tol}" --set pcisph_min_iterations=3
                           --set pcisph_max_iterations=100 --set pcisph_cfl=0) ;;
            iisph) peer_p=(--param "maxError=${tol}" --param minIterations=2 --param maxIterations=100)
                   pbf_p=(--set "iisph_tolerance=${tol}" --set iisph_min_iterations=2
                          --set iisph_max_iterations=100 --set iisph_cfl=0) ;;
            # SPlisHSPlasH's TimeStepDFSPH warm-starts both solves from half the previous
            # substep's stiffness (USE_WARMSTART, USE_WARMSTART_V); pbf warm-starts its
            # divergence solve at the same fraction, within the solve's first iteration (its
            # density solve's start, dfsph_warm_start, stays off: with the Chebyshev iterations
            # it gains energy at an impact)
            dfsph) peer_p=(--param "maxError=${tol}" --param minIterations=2 --param maxIterations=100
                           --param "maxErrorV=${tol}" --param maxIterationsV=100
                           --param enableDivergenceSolver=true)
                   pbf_p=(--set "dfsph_tolerance=${tol}" --set dfsph_min_iterations=2
                          --set dfsph_max_iterations=100 --set "dfsph_divergence_tolerance=${tol}"
                          --set dfsph_divergence_min_iterations=1
                          --set dfsph_divergence_max_iterations=100 --set dfsph_cfl=0
                          --set dfsph_divergence_warm_start=0.5) ;;
            *) echo "side_by_side.sh: method ${m}: expected pbf, wcsph, pcisph, iisph or dfsph" >&2; exit 2 ;;
        esac
        # the same simulated time for every method: steps scaled by 0.005 s / dt
        scale="$(awk -v dt="${dt}" 'BEGIN { printf "%d", 0.005 / dt + 0.5 }')"
        m_steps=$((steps * scale))
        m_warmup=$((warmup * scale))
        # --repeat N: SPlisHSPlasH and pbf alternated N times (the report takes the median of
        # the per-repeat ratios); pbf's defaults and the ladder once, after them
        pbf_runs=""
        peer_runs=""
        for ((rep = 1; rep <= repeat; ++rep)); do
            echo "side_by_side: ${m}: [${rep}/${repeat}] SPlisHSPlasH, ${cases}, dt ${dt} s, OMP_NUM_THREADS=${threads}, ${m_warmup} + ${m_steps} steps ..."
            child env "${peer_env[@]}" OMP_NUM_THREADS="${threads}" "${py}" "${root}/bench/splash_timing.py" \
                --scene "${work}/${scene}" --warmup "${m_warmup}" --steps "${m_steps}" \
                --method "${m}" --dt "${dt}" "${peer_p[@]}" \
                --json "${work}/peer_${m}_r${rep}.json" --out-dir "${work}/out_${m}" \
                >"${work}/peer_${m}.log" 2>&1 \
                || { tail -n 20 "${work}/peer_${m}.log" >&2; echo "side_by_side: SPlisHSPlasH (${m}) failed" >&2; exit 1; }
            echo "side_by_side: ${m}: [${rep}/${repeat}] pbf bench --case ${cases} --set solver=${m} --dt ${dt} ${pbf_p[*]} --set vorticity=0 (SPlisHSPlasH's physics)"
            child "${build}/pbf" bench --case "${cases}" --threads "${threads}" --warmup "${m_warmup}" \
                --steps "${m_steps}" --dt "${dt}" --set "solver=${m}" "${pbf_p[@]}" --set vorticity=0 \
                --no-limits -q --json "${work}/pbf_${m}_r${rep}.json" >/dev/null
            pbf_runs+="${pbf_runs:++}${work}/pbf_${m}_r${rep}.json"
            peer_runs+="${peer_runs:++}${work}/peer_${m}_r${rep}.json"
        done
        echo "side_by_side: ${m}: pbf bench with pbf's defaults (vorticity confinement)"
        child "${build}/pbf" bench --case "${cases}" --threads "${threads}" --warmup "${m_warmup}" \
            --steps "${m_steps}" --dt "${dt}" --set "solver=${m}" "${pbf_p[@]}" --no-limits -q \
            --json "${work}/pbf_${m}_default.json" >/dev/null
        pair_args+=(--method "${m}=${pbf_runs},${peer_runs},${work}/pbf_${m}_default.json")
        # the matched-error ladder: pbf's iterative solvers again at each looser tolerance; the
        # report picks the loosest whose measured average density error is still at most the
        # peer's measured one (beside, never instead of, the same-tolerance figure)
        case "${m}" in pcisph|iisph|dfsph)
            for lt in ${ladder}; do
                awk -v a="${lt}" -v b="${tol}" 'BEGIN { exit !(a + 0 > b + 0) }' || continue
                lp=(--set "${m}_tolerance=${lt}")
                [[ "${m}" == dfsph ]] && lp+=(--set "dfsph_divergence_tolerance=${lt}")
                echo "side_by_side: ${m}: pbf at tolerance ${lt} % (matched-error ladder)"
                child "${build}/pbf" bench --case "${cases}" --threads "${threads}" --warmup "${m_warmup}" \
                    --steps "${m_steps}" --dt "${dt}" --set "solver=${m}" "${pbf_p[@]}" \
                    "${same_physics[@]}" "${lp[@]}" --no-limits -q \
                    --json "${work}/pbf_${m}_tol${lt}.json" >/dev/null
                pair_args+=(--ladder "${m}=${lt},${work}/pbf_${m}_tol${lt}.json")
            done ;;
        esac
    done
    mkdir -p "${root}/bench/results"
    host="$(hostname -s 2>/dev/null || uname -n)"
    out="${root}/bench/results/side_by_side_methods_$(date -u +%Y%m%dT%H%M%SZ)_${host}.json"
    child "${py}" "${root}/bench/side_by_side_report.py" "${pair_args[@]}" --tolerance "${tolerance}" \
        --ladder-text "${ladder// //}" --out "${out}"
    exit 0
fi

# ---- cases, targets: SPlisHSPlasH and pbf, alternated --repeat times -----------------------------
# pbf runs twice per repeat: with SPlisHSPlasH's physics (its scene runs no vorticity
# confinement: `--set vorticity=0`; the figure the targets are judged on) and with pbf's
# defaults (vorticity confinement 0.01). The repeats alternate the programs, so that both are
# timed over the same stretch of the machine's time; the report takes per-repeat ratios.
IFS=',' read -r -a case_list <<<"${cases}"
for c in "${case_list[@]}"; do
    case "${c}" in
        small|medium) ;;
        *) echo "side_by_side.sh: case ${c}: SPlisHSPlasH has scenes for small and medium only" >&2; exit 2 ;;
    esac
done
scene_of() { [[ "$1" == small ]] && echo "dam_break_pbf_fixed4_r025.json" || echo "dam_break_pbf_fixed4_r0125.json"; }
peer_args=()
log_args=()
pbf_args=()
pbf_threads="${threads}"
[[ "${targets}" == 1 && "${threads}" != 1 ]] && pbf_threads="1,${threads}"
for ((rep = 1; rep <= repeat; ++rep)); do
    for c in "${case_list[@]}"; do
        scene="$(scene_of "${c}")"
        [[ -f "${work}/${scene}" ]] || { echo "side_by_side.sh: ${peer_dir}/${scene} missing" >&2; exit 2; }
        echo "side_by_side: [${rep}/${repeat}] SPlisHSPlasH, ${c} (${scene}), OMP_NUM_THREADS=${threads}, ${warmup} + ${steps} steps ..."
        child env "${peer_env[@]}" OMP_NUM_THREADS="${threads}" "${py}" "${root}/bench/splash_timing.py" \
            --scene "${work}/${scene}" --warmup "${warmup}" --steps "${steps}" \
            --json "${work}/peer_${c}_${rep}.json" --out-dir "${work}/out_${c}" >"${work}/peer_${c}.log" 2>&1 \
            || { tail -n 20 "${work}/peer_${c}.log" >&2; echo "side_by_side: SPlisHSPlasH failed" >&2; exit 1; }
        own="$(awk '/^Average time: SimStep:/ {print $4}' "${work}/peer_${c}.log" | tail -n 1)"
        "${py}" -c "import json,sys; d=json.load(open(sys.argv[1])); print('  %d particles: %.3f ms/step (mean), %.3f min; its own SimStep average over all steps: %s ms' % (d['particles'], d['ms_per_step_mean'], d['ms_per_step_min'], sys.argv[2] or '?'))" "${work}/peer_${c}_${rep}.json" "${own}"
        peer_args+=(--peer "${c}=${work}/peer_${c}_${rep}.json")
        [[ -n "${own}" ]] && log_args+=(--peer-log "${c}=${own}")
    done
    limits=()
    [[ "${rep}" -gt 1 ]] && limits=(--no-limits) # the machine's limits: measured once
    echo "side_by_side: [${rep}/${repeat}] pbf bench --case ${cases} --threads ${pbf_threads} --warmup ${warmup} --steps ${steps} --set vorticity=0 (SPlisHSPlasH's physics)"
    child "${build}/pbf" bench --case "${cases}" --threads "${pbf_threads}" --warmup "${warmup}" \
        --steps "${steps}" --set vorticity=0 "${limits[@]}" --json "${work}/pbf_same_${rep}.json"
    echo "side_by_side: [${rep}/${repeat}] pbf bench --case ${cases} --threads ${pbf_threads} --warmup ${warmup} --steps ${steps} (pbf's defaults: vorticity confinement)"
    child "${build}/pbf" bench --case "${cases}" --threads "${pbf_threads}" --warmup "${warmup}" \
        --steps "${steps}" --no-limits -q --json "${work}/pbf_default_${rep}.json" >/dev/null
    pbf_args+=(--pbf "${work}/pbf_same_${rep}.json" --pbf-default "${work}/pbf_default_${rep}.json")
done
target_args=()
if [[ "${targets}" == 1 ]]; then
    # 1M: --repeat times, alternating the two physics; the report takes the medians over the
    # repeats of s per step and of the 1 -> N thread speed-up (each repeat's own pair)
    big_args=()
    for ((rep = 1; rep <= repeat; ++rep)); do
        limits=()
        [[ "${rep}" -gt 1 ]] && limits=(--no-limits -q)
        echo "side_by_side: [${rep}/${repeat}] pbf bench --particles 1000000 --threads ${pbf_threads} --warmup 1 --steps 5 --set vorticity=0 (SPlisHSPlasH's physics)"
        if [[ "${rep}" -gt 1 ]]; then
            child "${build}/pbf" bench --particles 1000000 --threads "${pbf_threads}" --warmup 1 --steps 5 \
                --set vorticity=0 "${limits[@]}" --json "${work}/pbf_1m_${rep}.json" >/dev/null
        else
            child "${build}/pbf" bench --particles 1000000 --threads "${pbf_threads}" --warmup 1 --steps 5 \
                --set vorticity=0 --json "${work}/pbf_1m_${rep}.json"
        fi
        echo "side_by_side: [${rep}/${repeat}] pbf bench --particles 1000000 --threads ${pbf_threads} --warmup 1 --steps 5 (pbf's defaults)"
        child "${build}/pbf" bench --particles 1000000 --threads "${pbf_threads}" --warmup 1 --steps 5 \
            --no-limits -q --json "${work}/pbf_1m_default_${rep}.json" >/dev/null
        big_args+=(--pbf-1m "${work}/pbf_1m_${rep}.json" --pbf-1m-default "${work}/pbf_1m_default_${rep}.json")
    done
    echo "side_by_side: pbf bench --particles 10000000 --threads ${threads} --warmup 0 --steps 1"
    child "${build}/pbf" bench --particles 10000000 --threads "${threads}" --warmup 0 --steps 1 \
        --json "${work}/pbf_10m.json" || true
    target_args=(--targets "${big_args[@]}" --pbf-10m "${work}/pbf_10m.json")
fi

mkdir -p "${root}/bench/results"
host="$(hostname -s 2>/dev/null || uname -n)"
out="${root}/bench/results/side_by_side_$(date -u +%Y%m%dT%H%M%SZ)_${host}.json"
child "${py}" "${root}/bench/side_by_side_report.py" "${pbf_args[@]}" "${peer_args[@]}" \
    "${log_args[@]}" "${target_args[@]}" --out "${out}"
