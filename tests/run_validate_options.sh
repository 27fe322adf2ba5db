#!/bin/bash
# `pbf validate --set KEY=VALUE` and `--resolution N` (app/validate/): a world key is taken,
# a key every case sets itself, a run key, an unknown key or a bad value is refused with exit 2
# and a message naming it, before any case runs. Usage: SCRIPT PBF
pbf="$1"
here="$(cd "$(dirname "$0")" && pwd)"
source "${here}/check.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

refused() { # refused NAME PATTERN ARGS...: exit 2 and PATTERN on stderr
    local name="$1" pat="$2"
    shift 2
    "${pbf}" validate --out "${tmp}/x" "$@" > "${tmp}/out" 2> "${tmp}/err"
    local rc=$?
    [[ ${rc} -eq 2 ]] && grep -qF -- "${pat}" "${tmp}/err"
    local ok=$?
    [[ ${ok} -ne 0 ]] && { echo "  exit ${rc}:"; cat "${tmp}/err"; }
    check "${name}" ${ok}
}
refused "a key every case sets" "--set solver_iterations: every case sets this key itself" \
    --set solver_iterations=8
refused "a key of pbf run" "--set frames: a key of \`pbf run\`" --set frames=3
refused "an unknown key" "frictoin_dynamic" --set frictoin_dynamic=0.2
refused "a value out of range" "friction_dynamic" --set friction_dynamic=-1
refused "no =" "expected KEY=VALUE" --set friction_dynamic
refused "a resolution not run" "--resolution: \"20\" is not 18, 36 or 72" --resolution 20

"${pbf}" validate --help | grep -qF -- "--set KEY=VALUE"
check "--help names --set" $?
"${pbf}" validate --help | grep -qF -- "--resolution N"
check "--help names --resolution" $?

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
