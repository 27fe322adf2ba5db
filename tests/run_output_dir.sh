#!/usr/bin/env bash
# A run owns its output directory (scenes/quick.json, a few frames each):
#   - a shorter run into the directory of a longer one (with --render images) leaves only its own
#     frames, no image and the index of its own frames; files that are not pbf's stay; `pbf render`
#     then renders exactly the new frames;
#   - a run in another format removes the earlier format's frames and index;
#   - a scene or option that fails validation deletes nothing;
#   - a resume keeps the frames up to its checkpoint (byte for byte), removes the later ones that
#     the resumed run does not write again, and its index lists exactly its frames;
#   - frame files in a directory no run wrote (no scene.json, no stats.jsonl) are refused with a
#     message, and kept;
#   - an output directory that cannot be one (a file of that name, a file on its path) is refused
#     by `pbf run --out`, `pbf mesh --out`, `pbf render --out` and `--video` with the usage
#     status 2 (docs/cli.md: nothing done), the message naming the path.
#
#   bash tests/run_output_dir.sh PATH/TO/pbf
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: run_output_dir.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_output_dir.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
source "${here}/check.sh"

run() { # run NAME EXPECTED_RC LOG ARGS...
    local name="$1" want="$2" log="$3" rc=0
    shift 3
    "${pbf}" "$@" > "${log}" 2>&1 || rc=$?
    [[ ${rc} -eq ${want} ]]
    check "${name}: exit ${rc}, expected ${want}" $?
    [[ ${rc} -eq ${want} ]] || sed 's/^/     | /' "${log}" | head -n 20
}
count() { ls "$1" | grep -c -E "$2"; }
snapshot() { (cd "$1" && find . -type f | sort | xargs sha256sum); }

d="${tmp}/run"
run "longer run, 6 frames with images and meshes" 0 "${tmp}/a.log" run "${scene}" --out "${d}" \
    --frames 6 --render --size 96x64 --mesh -q
echo "mine" > "${d}/notes.txt"
echo "mine" > "${d}/frame_7.vtp"
[[ $(count "${d}" '^frame_[0-9]{5}\.vtp$') -eq 7 && $(count "${d}" '^frame_[0-9]{5}\.png$') -eq 7 ]]
check "longer run: 7 frames and 7 images" $?

run "shorter run, 2 frames, same directory" 0 "${tmp}/b.log" run "${scene}" --out "${d}" --frames 2
[[ $(count "${d}" '^frame_[0-9]{5}\.vtp$') -eq 3 && $(count "${d}" '^frame_[0-9]{5}\.png$') -eq 0 ]]
check "shorter run: frames 0..2 only, no image of the earlier run ($(ls "${d}" | tr '\n' ' '))" $?
[[ $(count "${d}" '^mesh_') -eq 0 ]]
check "shorter run: no mesh of the earlier run" $?
[[ -f "${d}/frame_00002.vtp" && ! -e "${d}/frame_00003.vtp" ]]
check "shorter run: frame_00003.vtp and later are gone" $?
[[ $(grep -c '<DataSet ' "${d}/frames.pvd") -eq 3 && $(wc -l < "${d}/stats.jsonl") -eq 3 ]]
check "shorter run: frames.pvd and stats.jsonl hold its 3 frames" $?
[[ "$(cat "${d}/notes.txt")" == "mine" && "$(cat "${d}/frame_7.vtp")" == "mine" ]]
check "shorter run: files that are not pbf's are kept" $?
grep -q "removed 22 frame, image, mesh and index files of an earlier run" "${d}/../b.log"
check "shorter run: says what it removed ($(grep removed "${tmp}/b.log"))" $?
run "pbf render of the shorter run" 0 "${tmp}/r.log" render "${d}" --size 96x64
grep -q "rendering 3 frames" "${tmp}/r.log"
check "pbf render renders exactly the 3 new frames" $?

before="$(snapshot "${d}")"
run "bad --set value: refused" 2 "${tmp}/c.log" run "${scene}" --out "${d}" --set particle_radius=-1
run "bad --format: refused" 2 "${tmp}/c2.log" run "${scene}" --out "${d}" --format xyz
[[ "$(snapshot "${d}")" == "${before}" ]]
check "refused runs delete and change nothing in the directory" $?

run "ply run into the vtp run's directory" 0 "${tmp}/e.log" run "${scene}" --out "${d}" --frames 1 \
    --format ply -q
[[ $(count "${d}" '^frame_[0-9]{5}\.vtp$') -eq 0 && $(count "${d}" '^frame_[0-9]{5}\.ply$') -eq 2 &&
    ! -e "${d}/frames.pvd" && -f "${d}/frames.ply.series" ]]
check "another format: the vtp frames and frames.pvd are gone, frames.ply.series is there" $?

# Resume: a complete 10-frame run with checkpoints 8 and 10; without the last checkpoint it
# resumes from 8 and, with --frames 9, writes frame 9 again; frame 10 is past its end.
r="${tmp}/resume"
run "10 frames, checkpoint every 4" 0 "${tmp}/f.log" run "${scene}" --out "${r}" --frames 10 \
    --checkpoint-every 4 -q
cp -r "${r}" "${tmp}/ref"
rm "${r}/checkpoint_00010.pbfck"
run "resume from frame 8 to frame 9" 0 "${tmp}/g.log" run --resume "${r}" --frames 9 -q
same=0
for k in 0 1 2 3 4 5 6 7 8 9; do
    f=$(printf 'frame_%05d.vtp' ${k})
    cmp -s "${tmp}/ref/${f}" "${r}/${f}" || { echo "     ${f} differs or is missing"; same=1; }
done
check "resume: frames 0..9 equal the uninterrupted run's" ${same}
[[ ! -e "${r}/frame_00010.vtp" ]]
check "resume: frame_00010.vtp (after the resumed run's end) is gone" $?
[[ $(grep -c '<DataSet ' "${r}/frames.pvd") -eq 10 ]] &&
    cmp -s <(head -n 13 "${tmp}/ref/frames.pvd") <(head -n 13 "${r}/frames.pvd")
check "resume: frames.pvd lists frames 0..9 as the uninterrupted run did" $?

f="${tmp}/foreign"
mkdir -p "${f}"
echo "a photo" > "${f}/frame_00001.png"
run "a directory of someone else's frame files" 2 "${tmp}/h.log" run "${scene}" --out "${f}" \
    --frames 1 -q
grep -q "frame_00001.png but no scene.json or stats.jsonl" "${tmp}/h.log"
check "foreign frames: the message names the file ($(head -c 200 "${tmp}/h.log"))" $?
[[ "$(cat "${f}/frame_00001.png")" == "a photo" && $(ls "${f}" | wc -l) -eq 1 ]]
check "foreign frames: kept, and nothing written" $?

# Paths that cannot be an output directory: exit 2, the message names the path, nothing made.
blocker="${tmp}/afile"
echo "not a directory" > "${blocker}"
refused() { # refused NAME PATH ARGS...
    local name="$1" path="$2"
    shift 2
    run "${name}" 2 "${tmp}/o.log" "$@"
    grep -qF -- "${path}" "${tmp}/o.log"
    check "${name}: the message names ${path} ($(head -c 200 "${tmp}/o.log"))" $?
}
for out in "${blocker}" "${blocker}/sub"; do
    refused "pbf run --out ${out#"${tmp}/"}" "${out}" run "${scene}" --out "${out}" --frames 1 -q
    refused "pbf mesh --out ${out#"${tmp}/"}" "${out}" mesh "${d}" --out "${out}" -q
    refused "pbf render --out ${out#"${tmp}/"}" "${out}" render "${d}" --out "${out}" --size 64x64 -q
done
if command -v ffmpeg > /dev/null; then
    refused "pbf render --video afile/v.mp4" "${blocker}" render "${d}" --video "${blocker}/v.mp4" \
        --size 64x64 -q
fi
[[ "$(cat "${blocker}")" == "not a directory" ]]
check "the file in the way is intact" $?

echo "output_dir: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
