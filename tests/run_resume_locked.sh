#!/usr/bin/env bash
# `pbf run --resume DIR --set KEY=VALUE` with a key that shapes the simulated state (one of the
# scene hash the checkpoints carry): refused (exit 2) in one line naming each such key with the
# value the checkpoints were written with and the new one, and the keys a resume may change;
# never "written for another scene" or "no valid checkpoint", nothing in DIR touched. A key a
# resume may change (frames) still resumes.
#
#   bash tests/run_resume_locked.sh PATH/TO/pbf
set -u
if [[ $# -ne 1 ]]; then
    echo "usage: run_resume_locked.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_resume_locked.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
source "${here}/check.sh"
T=(--set threads=1 -q)
d="${tmp}/run"

rc=0
"${pbf}" run "${scene}" --out "${d}" --frames 4 --checkpoint-every 2 "${T[@]}" > "${tmp}/run.log" 2>&1 ||
    rc=$?
check "a run of 4 frames with checkpoints (exit ${rc})" ${rc}
cp -a "${d}" "${tmp}/before"

# refused NAME WANT... -- ARGS...: exit 2, one line holding every WANT, none of the old words,
# the directory untouched
refused() {
    local name="$1" want=() rc=0 bad=0 w
    shift
    while [[ "$1" != "--" ]]; do
        want+=("$1")
        shift
    done
    shift
    "${pbf}" run --resume "${d}" "$@" "${T[@]}" > "${tmp}/out" 2> "${tmp}/err" || rc=$?
    [[ ${rc} -eq 2 ]] || { echo "     exit ${rc}, expected 2"; bad=1; }
    [[ $(wc -l < "${tmp}/err") -eq 1 ]] || { echo "     $(wc -l < "${tmp}/err") lines on stderr, expected 1"; bad=1; }
    for w in "${want[@]}" "may not change on resume" "a resume may change only" "frames"; do
        grep -qF -- "${w}" "${tmp}/err" || { echo "     no \"${w}\""; bad=1; }
    done
    for w in "another scene" "no valid checkpoint" "hash"; do
        grep -qF -- "${w}" "${tmp}/err" && { echo "     says \"${w}\""; bad=1; }
    done
    diff -r "${d}" "${tmp}/before" > /dev/null || { echo "     ${d} changed"; bad=1; }
    [[ ${bad} -eq 0 ]] || echo "     stderr: $(cat "${tmp}/err")"
    check "${name}" ${bad}
}

refused "--set particle_radius=0.02: names the key, the checkpoints' value and the new one" \
    "--resume ${d}: particle_radius (0.01 in the checkpoints, 0.02 now) may not change on resume" \
    -- --set particle_radius=0.02
refused "--set particle_radius, fps and gravity: names each" \
    "particle_radius (0.01 in the checkpoints, 0.015 now)" "fps (60 in the checkpoints, 30 now)" \
    "gravity (0,-9.81,0 in the checkpoints, 0,-5,0 now)" \
    -- --set particle_radius=0.015 --set fps=30 --set gravity=0,-5,0
refused "--format ply: names format" "format (vtp in the checkpoints, ply now)" -- --format ply

# keys a resume may change: it resumes
rc=0
"${pbf}" run --resume "${d}" --frames 6 "${T[@]}" --set guard_density_error=50 > "${tmp}/ok.log" 2>&1 || rc=$?
[[ ${rc} -eq 0 && -f "${d}/frame_00006.vtp" ]]
ok=$?
check "--frames 6 --set threads=1 --set guard_density_error=50: resumes (exit ${rc}) $(cat "${tmp}/ok.log")" ${ok}

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
