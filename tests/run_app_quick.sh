#!/usr/bin/env bash
# End-to-end checks of the `pbf` command on scenes/quick.json: every format writes frames
# 0..N in id order with the right particle count, stats.jsonl has one line per frame with the
# documented keys, the series index (frames.pvd for vtp, frames.EXT.series for ply and csv) lists
# every frame, no NAME.tmp is left behind; the speed limit's cuts are counted in stats.jsonl and a
# run that the limit changes gets exactly one warning naming the parameter; --help lists every
# parameter; --version works.
#
#   bash tests/run_app_quick.sh PATH/TO/pbf
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: run_app_quick.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_app_quick.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/check.sh"

frames=3
for fmt in vtp ply csv geo bgeo; do
    out="${tmp}/${fmt}"
    rc=0
    "${pbf}" run "${scene}" --out "${out}" --frames "${frames}" --format "${fmt}" \
        > "${tmp}/${fmt}.stdout" 2> "${tmp}/${fmt}.stderr" || rc=$?
    check "${fmt}: exit 0 (got ${rc}: $(tail -n 2 "${tmp}/${fmt}.stderr"))" "${rc}"
    n_frames=$(find "${out}" -name "frame_*.${fmt}" | wc -l)
    [[ ${n_frames} -eq $((frames + 1)) ]]
    check "${fmt}: ${n_frames} frame files, expected $((frames + 1))" $?
    [[ -f "${out}/frame_00000.${fmt}" && -f "${out}/frame_0000${frames}.${fmt}" ]]
    check "${fmt}: frame_00000 and frame_0000${frames} exist" $?
    [[ -z "$(find "${out}" -name '*.tmp')" ]]
    check "${fmt}: no .tmp file left" $?
    lines=$(wc -l < "${out}/stats.jsonl")
    [[ ${lines} -eq $((frames + 1)) ]]
    check "${fmt}: stats.jsonl has ${lines} lines, expected $((frames + 1))" $?
    keys_ok=0
    while read -r line; do
        keys=$(sed -E 's/"([a-z_]+)":[^,}]*[,}]/\1 /g' <<< "${line}" | tr -d '{}')
        if [[ "${keys}" != "frame time particles density_error_avg density_error_max max_speed nonfinite escaped speed_clamps ms substeps iterations solver_error divergence_iterations divergence_error " ]]; then
            echo "     bad stats line: ${line}"
            keys_ok=1
        fi
    done < "${out}/stats.jsonl"
    check "${fmt}: stats.jsonl keys" ${keys_ok}
    particles=$(sed -E 's/.*"particles":([0-9]+).*/\1/' <<< "$(head -n 1 "${out}/stats.jsonl")")
    last="${out}/frame_0000${frames}.${fmt}"
    case "${fmt}" in
    csv)
        [[ "$(head -n 1 "${last}")" == "x,y,z,vx,vy,vz,density,id" && $(wc -l < "${last}") -eq $((particles + 1)) ]]
        check "csv: header and ${particles} rows" $?
        [[ "$(tail -n 1 "${last}" | cut -d, -f8)" == "$((particles - 1))" ]]
        check "csv: the last row is the particle of id $((particles - 1))" $?
        ;;
    geo)
        [[ "$(head -n 2 "${last}" | tr '\n' ' ')" == "PGEOMETRY V5 NPoints ${particles} NPrims 0 " ]]
        check "geo: PGEOMETRY V5 with NPoints ${particles}" $?
        ;;
    bgeo)
        [[ "$(head -c 5 "${last}")" == "BgeoV" && $(od -An -tu1 -j 9 -N 4 "${last}" | awk '{print $1*16777216+$2*65536+$3*256+$4}') -eq ${particles} ]]
        check "bgeo: Bgeo V magic and ${particles} points" $?
        ;;
    ply)
        grep -aq "^element vertex ${particles}\$" "${last}"
        check "ply: element vertex ${particles}" $?
        ;;
    vtp)
        grep -aq "NumberOfPoints=\"${particles}\"" "${last}"
        check "vtp: NumberOfPoints=\"${particles}\"" $?
        ;;
    esac
    case "${fmt}" in
    vtp) index="${out}/frames.pvd" ;;
    ply | csv) index="${out}/frames.${fmt}.series" ;;
    *) index="" ;;
    esac
    if [[ -n "${index}" ]]; then
        [[ -f "${index}" && $(grep -c "frame_[0-9]*\.${fmt}" "${index}") -eq $((frames + 1)) ]]
        check "${fmt}: $(basename "${index}") lists the $((frames + 1)) frames" $?
    else
        [[ -z "$(find "${out}" -name 'frames.*')" ]]
        check "${fmt}: no series index (ParaView does not read ${fmt})" $?
    fi
done

# --quiet prints nothing on success.
rc=0
"${pbf}" run "${scene}" --out "${tmp}/quiet" --frames 1 --quiet > "${tmp}/q.out" 2>&1 || rc=$?
[[ ${rc} -eq 0 && ! -s "${tmp}/q.out" ]]
check "--quiet: exit 0 and no output" $?

# The speed limit (cfl): the default never cuts a velocity of this scene (speed_clamps 0 in every
# frame, no warning); cfl = 0.15 (|v| <= 1.44 m/s, below the flow's 2.4 m/s) cuts velocities in
# many frames, each frame's cuts are in stats.jsonl, and exactly one warning names cfl and the
# option that raises it.
clamps_of() { sed -E 's/.*"speed_clamps":([0-9]+).*/\1/' "$1" | tr '\n' ' '; }
rc=0
"${pbf}" run "${scene}" --out "${tmp}/limit_default" --format csv > /dev/null 2> "${tmp}/limit_default.err" || rc=$?
[[ ${rc} -eq 0 && -z "$(clamps_of "${tmp}/limit_default/stats.jsonl" | tr -d '0 ')" ]]
check "default cfl: no velocity cut in the 10 frames (speed_clamps: $(clamps_of "${tmp}/limit_default/stats.jsonl"))" $?
! grep -q "warning" "${tmp}/limit_default.err"
check "default cfl: no warning" $?
rc=0
"${pbf}" run "${scene}" --out "${tmp}/limit_low" --format csv --frames 20 --set cfl=0.15 \
    > /dev/null 2> "${tmp}/limit_low.err" || rc=$?
check "cfl 0.15: exit 0 (got ${rc})" "${rc}"
cut_frames=0
for c in $(clamps_of "${tmp}/limit_low/stats.jsonl"); do
    [[ ${c} -gt 0 ]] && cut_frames=$((cut_frames + 1))
done
[[ ${cut_frames} -ge 5 && "$(head -n 1 "${tmp}/limit_low/stats.jsonl" | grep -o '"speed_clamps":[0-9]*')" == '"speed_clamps":0' ]]
check "cfl 0.15: speed_clamps > 0 in ${cut_frames} frames, 0 in frame 0 ($(clamps_of "${tmp}/limit_low/stats.jsonl"))" $?
[[ $(grep -c "warning" "${tmp}/limit_low.err") -eq 1 ]] &&
    grep -q 'speed limit cut [0-9]* particle velocities' "${tmp}/limit_low.err" &&
    grep -q 'cfl = 0.15' "${tmp}/limit_low.err" && grep -q -- '--set cfl=0.3' "${tmp}/limit_low.err"
check "cfl 0.15: exactly one warning, naming cfl and --set cfl=: $(cat "${tmp}/limit_low.err")" $?
# -q keeps the warning (it says the results are not what the physics gives)
rc=0
"${pbf}" run "${scene}" --out "${tmp}/limit_low_q" --format csv --frames 20 --set cfl=0.15 -q \
    > "${tmp}/limit_low_q.out" 2>&1 || rc=$?
[[ ${rc} -eq 0 && $(grep -c "warning" "${tmp}/limit_low_q.out") -eq 1 ]]
check "cfl 0.15 with --quiet: the one warning still printed" $?

# --help names every parameter of both tables; --version prints the version.
"${pbf}" --help > "${tmp}/help.txt"
"${pbf}" run --help > "${tmp}/run_help.txt"
help_ok=0
for key in domain_min domain_max gravity particle_radius rest_density kernel_ratio \
    solver_iterations relaxation constraint scorr_k scorr_n scorr_dq xsph_viscosity vorticity cfl \
    friction_static friction_dynamic max_particles threads device solver frames fps substeps \
    format --out --frames --threads --device --format --set --quiet; do
    for f in help.txt run_help.txt; do
        if ! grep -q -- "${key}" "${tmp}/${f}"; then
            echo "     ${f} lacks ${key}"
            help_ok=1
        fi
    done
done
check "--help lists every option and parameter" ${help_ok}
[[ "$("${pbf}" --version)" == "pbf "[0-9]* ]]
check "--version" $?

echo "app_quick: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
