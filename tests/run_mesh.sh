#!/usr/bin/env bash
# `pbf mesh` end to end:
#   - splashing frames: the dam break of scenes/dam_break.json at particle radius 0.0125 m
#     (10,944 particles) run to frame 52 in Houdini's binary bgeo format, and `pbf mesh
#     --frames 42:52` meshes the 11 frames in which the front runs up the far wall, breaks and
#     falls back: each mesh closed and manifold, every edge shared by exactly two triangles, no
#     triangle twice or degenerate (tests/mesh_edges_check.py, standard library only);
#   - `pbf mesh` reads the frames of every format `pbf run` writes (vtp, ply, csv, geo, bgeo):
#     the meshes of scenes/quick.json written in each format are the same bytes, and
#     `pbf mesh --help` names every one of them;
#   - a --frames range with no frame, or a malformed one, is a usage error (exit 2).
#
#   bash tests/run_mesh.sh PATH/TO/pbf PYTHON3
set -uo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: run_mesh.sh PATH/TO/pbf PYTHON3" >&2
    exit 2
fi
pbf="$1"
python="$2"
if [[ "${pbf}" != /* ]]; then pbf="$(pwd)/${pbf}"; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_mesh.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export OMP_WAIT_POLICY=PASSIVE
source "${here}/check.sh"

# ---- splashing frames ----------------------------------------------------------------------
rc=0
"${pbf}" run "${here}/../scenes/dam_break.json" --out "${tmp}/splash" --frames 52 --format bgeo \
    --set particle_radius=0.0125 -q > "${tmp}/splash.log" 2>&1 || rc=$?
check "the dam break at r = 0.0125 m to frame 52, bgeo: exit ${rc} ($(tail -n 2 "${tmp}/splash.log"))" ${rc}
rc=0
"${pbf}" mesh "${tmp}/splash" --frames 42:52 -q > "${tmp}/mesh.log" 2>&1 || rc=$?
n=$(ls "${tmp}/splash" | grep -c -E '^mesh_[0-9]{5}\.ply$')
[[ ${rc} -eq 0 && ${n} -eq 11 ]]
check "pbf mesh --frames 42:52 of the bgeo frames: exit ${rc}, ${n} meshes, expected 11 ($(tail -n 2 "${tmp}/mesh.log"))" $?
if [[ ${n} -gt 0 ]]; then
    "${python}" "${here}/mesh_edges_check.py" "${tmp}/splash"/mesh_*.ply > "${tmp}/edges.log" 2>&1
    rc=$?
    sed 's/^/     | /' "${tmp}/edges.log"
    check "the splashing frames' meshes: every edge shared by exactly two triangles, no triangle twice" ${rc}
fi

# ---- every frame format --------------------------------------------------------------------
scene="${here}/../scenes/quick.json"
for f in vtp ply csv geo bgeo; do
    rc=0
    { "${pbf}" run "${scene}" --out "${tmp}/${f}" --frames 2 --format "${f}" -q &&
        "${pbf}" mesh "${tmp}/${f}" -q; } > "${tmp}/${f}.log" 2>&1 || rc=$?
    n=$(ls "${tmp}/${f}" | grep -c -E '^mesh_[0-9]{5}\.ply$')
    [[ ${rc} -eq 0 && ${n} -eq 3 ]]
    check "pbf mesh of ${f} frames: exit ${rc}, ${n} meshes, expected 3 ($(tail -n 1 "${tmp}/${f}.log"))" $?
    if [[ "${f}" != vtp ]]; then
        same=0
        for k in 0 1 2; do
            cmp -s "${tmp}/vtp/mesh_0000${k}.ply" "${tmp}/${f}/mesh_0000${k}.ply" || same=1
        done
        check "the meshes of the ${f} frames are those of the vtp frames, byte for byte" ${same}
    fi
done
"${pbf}" mesh --help > "${tmp}/help.txt" 2>&1
tr -s ' \n' ' ' < "${tmp}/help.txt" | grep -qF "frame_NNNNN.vtp, .pvtp, .ply, .csv, .geo or .bgeo"
check "pbf mesh --help names every frame format (.vtp, .pvtp, .ply, .csv, .geo, .bgeo)" $?

# ---- --frames ------------------------------------------------------------------------------
for range in 7:9 3:1 x 5; do
    rc=0
    out="$("${pbf}" mesh "${tmp}/vtp" --frames "${range}" --out "${tmp}/none" 2>&1)" || rc=$?
    [[ ${rc} -eq 2 && "${out}" == *"--frames"* && ! -e "${tmp}/none" ]]
    check "pbf mesh --frames ${range}: exit 2 (got ${rc}), nothing written: ${out}" $?
done

echo "run_mesh: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
