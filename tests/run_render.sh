#!/usr/bin/env bash
# End-to-end checks of the images and videos of `pbf` on scenes/quick.json:
#   - `pbf run --render --frames 3 --size 320x180` writes frame_00000.png .. frame_00003.png
#     (frame 0, the initial state, included: frames + 1 images), valid 320x180 PNGs, byte-identical
#     across two runs;
#   - `pbf render DIR` re-renders the written frames to the same bytes;
#   - `pbf render DIR --frames A:B` renders exactly frames A..B (A: and :B open-ended), the same
#     bytes as rendering them all; a range with no frame or a malformed one is a usage error;
#   - `pbf run --video FILE.mp4` writes no PNG and a video that ffprobe reads as h264, yuv420p,
#     320x180, frames + 1 frames; .m4v, .mov and .mkv too; any other container (or none) is
#     refused before simulating (exit 2) with the list of those, which both --help texts give;
#   - without ffmpeg on PATH, --video fails before simulating (exit 1, message names ffmpeg);
#   - --camera-pos/--camera-target/--fov give the image of the same camera in the scene file;
#     --range MIN:MAX and --range auto recolour; bad values are usage errors (exit 2);
#   - --surface: `pbf render DIR --surface` draws the run's mesh_NNNNN.ply files (other images
#     than the particles'), the same bytes as meshes reconstructed on the fly (a copy without
#     the meshes, and `pbf run --render --surface`), OBJ meshes too; a broken mesh file is an
#     error naming it (exit 1), a bad --surface-set a usage error (exit 2).
#
#   bash tests/run_render.sh PATH/TO/pbf
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: run_render.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
if [[ "${pbf}" != /* ]]; then pbf="$(pwd)/${pbf}"; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_render.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
frames=3

source "$(dirname "${BASH_SOURCE[0]}")/check.sh"

# PNG width and height from the IHDR chunk (bytes 16..23, big endian).
png_size() {
    od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'
}

for run in a b; do
    rc=0
    "${pbf}" run "${scene}" --out "${tmp}/${run}" --frames ${frames} --render --size 320x180 -q \
        > "${tmp}/${run}.log" 2>&1 || rc=$?
    check "run ${run}: --render exit 0 (got ${rc}: $(tail -n 2 "${tmp}/${run}.log"))" ${rc}
done
n=$(find "${tmp}/a" -name 'frame_*.png' | wc -l)
[[ ${n} -eq $((frames + 1)) ]]
check "--render: ${n} PNG files, expected $((frames + 1)) (frame 0 included)" $?
same=0
for f in "${tmp}"/a/frame_*.png; do
    [[ "$(head -c 8 "${f}" | od -An -tx1 | tr -d ' \n')" == "89504e470d0a1a0a" ]] || same=1
    [[ "$(png_size "${f}")" == "320x180" ]] || same=1
    cmp -s "${f}" "${tmp}/b/$(basename "${f}")" || same=1
done
check "--render: PNG signature, 320x180, identical bytes across two runs" ${same}
[[ -z "$(find "${tmp}/a" -name '*.tmp')" ]]
check "--render: no .tmp file left" $?
[[ -f "${tmp}/a/scene.json" ]]
check "run writes scene.json for pbf render" $?

rc=0
"${pbf}" render "${tmp}/a" --out "${tmp}/c" --size 320x180 -q > "${tmp}/c.log" 2>&1 || rc=$?
check "pbf render DIR: exit 0 (got ${rc}: $(tail -n 2 "${tmp}/c.log"))" ${rc}
same=0
for f in "${tmp}"/a/frame_*.png; do cmp -s "${f}" "${tmp}/c/$(basename "${f}")" || same=1; done
check "pbf render DIR gives the same bytes as pbf run --render" ${same}

# The camera from the command line: the same image as the same camera in the scene file, and
# another image than the default camera's.
rc=0
"${pbf}" render "${tmp}/a" --out "${tmp}/cam1" --size 320x180 -q --camera-pos 2.2,1.2,2.0 \
    --camera-target 0.7,0.25,0.3 --fov 35 > "${tmp}/cam1.log" 2>&1 || rc=$?
python3 - "${tmp}/a/scene.json" "${tmp}/cam_scene.json" <<'PYEOF' || rc=1
import json, sys
s = json.load(open(sys.argv[1]))
s["camera"] = {"position": [2.2, 1.2, 2.0], "target": [0.7, 0.25, 0.3], "fov": 35}
json.dump(s, open(sys.argv[2], "w"))
PYEOF
"${pbf}" render "${tmp}/a" --scene "${tmp}/cam_scene.json" --out "${tmp}/cam2" --size 320x180 -q \
    > "${tmp}/cam2.log" 2>&1 || rc=$?
same=0
for f in "${tmp}"/cam1/frame_*.png; do cmp -s "${f}" "${tmp}/cam2/$(basename "${f}")" || same=1; done
cmp -s "${tmp}/cam1/frame_00003.png" "${tmp}/c/frame_00003.png" && same=1
[[ ${rc} -eq 0 && ${same} -eq 0 ]]
check "--camera-pos/--camera-target/--fov: the same bytes as the scene's camera, not the default" $?

# --range: a given range and auto change the colours; auto reports the range it chose.
rc=0
"${pbf}" render "${tmp}/a" --out "${tmp}/rd" --size 320x180 --color density -q > /dev/null 2>&1 ||
    rc=$?
"${pbf}" render "${tmp}/a" --out "${tmp}/rg" --size 320x180 --color density --range 990:1010 -q \
    > /dev/null 2>&1 || rc=$?
"${pbf}" render "${tmp}/a" --out "${tmp}/ra" --size 320x180 --color density --range auto \
    > "${tmp}/ra.log" 2>&1 || rc=$?
[[ ${rc} -eq 0 ]] && ! cmp -s "${tmp}/rd/frame_00003.png" "${tmp}/rg/frame_00003.png" &&
    ! cmp -s "${tmp}/rd/frame_00003.png" "${tmp}/ra/frame_00003.png" &&
    grep -q -- "--range auto: density from [0-9.]* to [0-9.]* kg/m^3" "${tmp}/ra.log"
check "--range 990:1010 and --range auto recolour the frames; auto says its range (exit ${rc})" $?

# Bad camera and range options: usage errors (exit 2) that name the option, nothing rendered.
bad_opts=("--camera-pos 1,2" "--camera-pos a,b,c" "--camera-target 1,2,3,4" "--fov 0"
    "--fov 170" "--fov wide" "--camera-pos 1,1,1 --camera-target 1,1,1" "--range 2:1"
    "--range 1" "--range lots" "--camera-pos" "--range")
bad=0
for opts in "${bad_opts[@]}"; do
    # shellcheck disable=SC2086 # the options split into words on purpose
    out="$("${pbf}" render "${tmp}/a" --out "${tmp}/bad" ${opts} 2>&1)"
    rc=$?
    first=${opts%% *}
    if [[ ${rc} -ne 2 || "${out}" != *"${first}"* || -e "${tmp}/bad" ]]; then
        echo "     pbf render ${opts}: exit ${rc}: ${out}"
        bad=1
    fi
done
check "bad --camera-pos/--camera-target/--fov/--range values: exit 2, the option named" ${bad}
rc=0
out="$("${pbf}" run "${scene}" --out "${tmp}/auto" --frames 1 --render --range auto 2>&1)" || rc=$?
[[ ${rc} -eq 2 && "${out}" == *"pbf render DIR --range auto"* && ! -e "${tmp}/auto" ]]
check "pbf run --render --range auto: exit 2 (got ${rc}), points to pbf render, nothing written" $?

# --surface: the liquid's meshes as water.
rc=0
"${pbf}" run "${scene}" --out "${tmp}/m" --frames 2 --mesh -q > "${tmp}/m.log" 2>&1 || rc=$?
"${pbf}" render "${tmp}/m" --surface --out "${tmp}/ms" --size 320x180 > "${tmp}/ms.log" 2>&1 ||
    rc=$?
"${pbf}" render "${tmp}/m" --out "${tmp}/mp" --size 320x180 -q > /dev/null 2>&1 || rc=$?
n=$(find "${tmp}/ms" -name 'frame_*.png' | wc -l)
[[ ${rc} -eq 0 && ${n} -eq 3 ]] && grep -q "3 meshes read" "${tmp}/ms.log" &&
    ! cmp -s "${tmp}/ms/frame_00002.png" "${tmp}/mp/frame_00002.png"
check "pbf render --surface: 3 PNGs from the run's 3 meshes, not the particles' images (exit ${rc}: $(tail -n 1 "${tmp}/ms.log"))" $?
mkdir -p "${tmp}/mn"
cp "${tmp}"/m/frame_*.vtp "${tmp}/m/scene.json" "${tmp}/mn/"
rc=0
"${pbf}" render "${tmp}/mn" --surface --size 320x180 > "${tmp}/mn.log" 2>&1 || rc=$?
"${pbf}" run "${scene}" --out "${tmp}/mr" --frames 2 --render --surface --size 320x180 -q \
    > /dev/null 2>&1 || rc=$?
same=0
for f in "${tmp}"/ms/frame_*.png; do
    cmp -s "${f}" "${tmp}/mn/$(basename "${f}")" || same=1
    cmp -s "${f}" "${tmp}/mr/$(basename "${f}")" || same=1
done
[[ ${rc} -eq 0 && ${same} -eq 0 ]] && grep -q "3 surfaces reconstructed" "${tmp}/mn.log"
check "--surface without mesh files reconstructs them: the same bytes, also from pbf run --render --surface (exit ${rc})" $?
rc=0
"${pbf}" mesh "${tmp}/mn" --format obj --out "${tmp}/mo" -q > /dev/null 2>&1 || rc=$?
cp "${tmp}"/m/frame_*.vtp "${tmp}/m/scene.json" "${tmp}/mo/"
"${pbf}" render "${tmp}/mo" --surface --size 320x180 -q > /dev/null 2>&1 || rc=$?
[[ ${rc} -eq 0 ]] && cmp -s "${tmp}/mo/frame_00002.png" "${tmp}/ms/frame_00002.png"
check "--surface with OBJ meshes: the same picture as with PLY (exit ${rc})" $?
head -c 300 "${tmp}/m/mesh_00001.ply" > "${tmp}/cut.ply" && mv "${tmp}/cut.ply" "${tmp}/m/mesh_00001.ply"
rc=0
out="$("${pbf}" render "${tmp}/m" --surface --out "${tmp}/mb" --size 320x180 -q 2>&1)" || rc=$?
[[ ${rc} -eq 1 && "${out}" == *"mesh_00001.ply"* ]]
check "--surface with a truncated mesh file: exit 1 (got ${rc}), names it: ${out}" $?
rc=0
out="$("${pbf}" render "${tmp}/mn" --surface-set iso_level=9 --out "${tmp}/mb2" 2>&1)" || rc=$?
[[ ${rc} -eq 2 && "${out}" == *"--surface-set"*"iso_level"* && ! -e "${tmp}/mb2" ]]
check "--surface-set iso_level=9: exit 2 (got ${rc}), names the option and key: ${out}" $?

# --frames A:B: only those frames, each the same bytes as in the full rendering.
frames_rendered() { (cd "$1" && ls frame_*.png 2> /dev/null | tr '\n' ' '); }
for spec in "1:2=frame_00001.png frame_00002.png " "2:=frame_00002.png frame_00003.png " \
    ":0=frame_00000.png " "3:3=frame_00003.png "; do
    range="${spec%%=*}" want="${spec#*=}" rc=0
    rm -rf "${tmp}/fr"
    "${pbf}" render "${tmp}/a" --frames "${range}" --out "${tmp}/fr" --size 320x180 -q \
        > "${tmp}/fr.log" 2>&1 || rc=$?
    same=0
    for f in ${want}; do cmp -s "${tmp}/fr/${f}" "${tmp}/a/${f}" || same=1; done
    [[ ${rc} -eq 0 && "$(frames_rendered "${tmp}/fr")" == "${want}" && ${same} -eq 0 ]]
    check "pbf render --frames ${range}: exit ${rc}, ${want}(got $(frames_rendered "${tmp}/fr")), the full rendering's bytes" $?
done
for range in 7:9 3:1 x 5; do
    rc=0
    out="$("${pbf}" render "${tmp}/a" --frames "${range}" --out "${tmp}/fr_bad" 2>&1)" || rc=$?
    [[ ${rc} -eq 2 && "${out}" == *"--frames"* && ! -e "${tmp}/fr_bad" ]]
    check "pbf render --frames ${range}: exit 2 (got ${rc}), nothing rendered: ${out}" $?
done

# --video takes the containers it can fill with H.264 and refuses the others, listing those.
containers=".mp4, .m4v, .mov or .mkv"
for bad in "${tmp}/v.webm" "${tmp}/v.avi" "${tmp}/video"; do
    rc=0
    out="$("${pbf}" run "${scene}" --out "${tmp}/vbad" --frames 1 --video "${bad}" 2>&1)" || rc=$?
    [[ ${rc} -eq 2 && "${out}" == *"${containers}"* && ! -e "${tmp}/vbad" && ! -e "${bad}" ]]
    check "--video ${bad##*/}: exit 2 (got ${rc}), lists ${containers}, nothing simulated: ${out}" $?
done
for cmd in run render; do
    "${pbf}" ${cmd} --help 2>&1 | tr -s ' \n' ' ' | grep -qF "containers: ${containers}"
    check "pbf ${cmd} --help names the containers of --video (${containers})" $?
done

if ! command -v ffprobe > /dev/null 2>&1; then
    check "ffprobe on PATH (install ffmpeg: scripts/setup-debian.sh)" 1
else
    rc=0
    "${pbf}" run "${scene}" --out "${tmp}/v" --frames ${frames} --size 320x180 \
        --video "${tmp}/v/quick.mp4" -q > "${tmp}/v.log" 2>&1 || rc=$?
    check "--video: exit 0 (got ${rc}: $(tail -n 3 "${tmp}/v.log"))" ${rc}
    [[ -z "$(find "${tmp}/v" -name '*.png' -o -name '*.tmp*')" ]]
    check "--video alone writes no PNG and leaves no temporary file" $?
    probe="$(ffprobe -v error -count_frames -select_streams v:0 \
        -show_entries stream=codec_name,nb_read_frames,pix_fmt,width,height \
        -of default=noprint_wrappers=1 "${tmp}/v/quick.mp4" 2>&1)"
    echo "     ffprobe: ${probe//$'\n'/ }"
    [[ "${probe}" == *"codec_name=h264"* && "${probe}" == *"pix_fmt=yuv420p"* &&
        "${probe}" == *"width=320"* && "${probe}" == *"height=180"* &&
        "${probe}" == *"nb_read_frames=$((frames + 1))"* ]]
    check "--video: h264, yuv420p, 320x180, $((frames + 1)) frames (frame 0 included)" $?

    rc=0
    "${pbf}" render "${tmp}/a" --video "${tmp}/r.mp4" --size 320x180 -q > "${tmp}/r.log" 2>&1 || rc=$?
    n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
        -of csv=p=0 "${tmp}/r.mp4" 2> /dev/null)
    [[ ${rc} -eq 0 && "${n}" == "$((frames + 1))" ]]
    check "pbf render DIR --video: exit ${rc}, ${n} frames" $?
    for ext in m4v mov mkv MP4; do
        rc=0
        "${pbf}" render "${tmp}/a" --frames 0:1 --video "${tmp}/c.${ext}" --size 320x180 -q \
            > "${tmp}/c.log" 2>&1 || rc=$?
        probe="$(ffprobe -v error -count_frames -select_streams v:0 \
            -show_entries stream=codec_name,nb_read_frames -of default=noprint_wrappers=1 \
            "${tmp}/c.${ext}" 2>&1)"
        [[ ${rc} -eq 0 && "${probe}" == *"codec_name=h264"* && "${probe}" == *"nb_read_frames=2"* ]]
        check "--video c.${ext}: exit ${rc}, h264, 2 frames (${probe//$'\n'/ })" $?
    done
fi

# No ffmpeg: a clear error before any simulation (no frame written).
rc=0
PATH="${tmp}/empty-path" "${pbf}" run "${scene}" --out "${tmp}/nf" --frames 1 \
    --video "${tmp}/nf.mp4" > "${tmp}/nf.log" 2>&1 || rc=$?
[[ ${rc} -eq 1 && "$(cat "${tmp}/nf.log")" == *"ffmpeg was not found"* && ! -e "${tmp}/nf" ]]
check "--video without ffmpeg: exit 1 (got ${rc}), names ffmpeg, nothing simulated" $?

"${pbf}" render --help > "${tmp}/help.txt" 2>&1 &&
    grep -q -- "--video" "${tmp}/help.txt" && grep -q -- "--color" "${tmp}/help.txt"
check "pbf render --help" $?
"${pbf}" run --help > "${tmp}/run_help.txt" 2>&1
for key in --render --video --color --size camera --range --camera-pos --camera-target --fov; do
    grep -q -- "${key}" "${tmp}/run_help.txt" || { echo "     run --help lacks ${key}"; false; }
done
check "pbf run --help lists --render --video --color --size camera --range --camera-pos --fov" $?
"${pbf}" render --help > "${tmp}/render_help.txt" 2>&1
for key in "--range auto" "--range MIN:MAX" --camera-pos --camera-target --fov --surface \
    --surface-set; do
    grep -q -- "${key}" "${tmp}/render_help.txt" || { echo "     render --help lacks ${key}"; false; }
done
check "pbf render --help lists --range auto|MIN:MAX, --camera-pos, --camera-target, --fov" $?

echo "run_render: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
