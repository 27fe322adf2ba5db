#!/bin/bash
# `pbf validate --set KEY=VALUE` and `--resolution N` (app/validate/): a world key is taken,
# a key every case sets itself, a run key, an unknown key or a bad value is refused with exit 2
# and a message naming it, before any case runs. Without --out it writes a new folder
# validation-YYYYMMDD-HHMMSS of the current directory, never docs/validation(.md), and refuses
# (exit 2) when that folder exists. Usage: SCRIPT PBF
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

# ---- no --out: a fresh folder, never docs/validation.md ----------------------------------------
# In a folder that holds a docs/validation.md of its own, as a clone does: the run (in this
# process, --jobs 1) is stopped once its folder holds the scenes of its cases.
work="${tmp}/clone"
mkdir -p "${work}/docs"
echo "the tracked report" > "${work}/docs/validation.md"
(cd "${work}" && exec "${pbf}" validate --fast --no-plots --jobs 1 -q) > "${tmp}/fresh.log" 2>&1 &
pid=$!
made=""
for ((k = 0; k < 200; ++k)); do
    made="$(cd "${work}" && ls -d validation-[0-9]*-[0-9]* 2> /dev/null | head -n 1)"
    [[ -n "${made}" && -n "$(ls "${work}/${made}/scenes" 2> /dev/null)" ]] && break
    kill -0 "${pid}" 2> /dev/null || break
    sleep 0.1
done
kill -KILL "${pid}" 2> /dev/null
wait "${pid}" 2> /dev/null
[[ "${made}" =~ ^validation-[0-9]{8}-[0-9]{6}$ ]]
ok=$?
check "pbf validate without --out writes a new folder validation-YYYYMMDD-HHMMSS (${made:-none}: $(ls "${work}" | tr '\n' ' '))" ${ok}
[[ "$(cat "${work}/docs/validation.md")" == "the tracked report" && ! -e "${work}/docs/validation" ]]
check "pbf validate without --out leaves docs/validation.md and docs/validation/ alone" $?
# the folder of this second (and the next few) already there: refused, nothing written
rm -rf "${work:?}"/validation-*
for ((k = 0; k < 5; ++k)); do
    mkdir -p "${work}/validation-$(date -d "+${k} seconds" +%Y%m%d-%H%M%S)"
done
(cd "${work}" && "${pbf}" validate --fast --no-plots --jobs 1 -q) > "${tmp}/taken.log" 2>&1
rc=$?
[[ ${rc} -eq 2 ]] && grep -q "already exists and is not overwritten" "${tmp}/taken.log" &&
    [[ -z "$(find "${work}" -mindepth 2 -path "${work}/validation-*" | head -n 1)" ]]
ok=$?
check "pbf validate without --out refuses an existing folder (exit ${rc}: $(head -c 200 "${tmp}/taken.log"))" ${ok}

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
