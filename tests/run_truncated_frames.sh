#!/usr/bin/env bash
# A frame file cut short is refused by every reader of `pbf render` and `pbf mesh`
# (app/io/frame_read.c), in every format `pbf run` writes: the message names the file, the count
# its header (or, for .csv, which has none, its run's stats.jsonl) gives and the count it holds.
# For .csv both cuts: inside a row, and at a row's end (31 complete rows of 2250). The intact
# frames of the same runs still read. Both commands exit 2 for a refused frame file (bad input,
# docs/cli.md), never 1 (a failed write) or 0.
#
#   bash tests/run_truncated_frames.sh PATH/TO/pbf
set -u
if [[ $# -ne 1 ]]; then
    echo "usage: run_truncated_frames.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json" # 2250 particles
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_truncated.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
source "${here}/check.sh"

# refused NAME DIR WANT...: `pbf render DIR` and `pbf mesh DIR` both fail, each message holding
# every WANT
refused() {
    local name="$1" dir="$2" cmd rc bad w
    shift 2
    for cmd in render mesh; do
        rc=0
        bad=0
        if [[ ${cmd} == render ]]; then
            "${pbf}" render "${dir}" --size 64x48 -q > "${tmp}/out" 2> "${tmp}/err" || rc=$?
        else
            "${pbf}" mesh "${dir}" -q > "${tmp}/out" 2> "${tmp}/err" || rc=$?
        fi
        [[ ${rc} -eq 2 ]] || { echo "     exit ${rc}, not 2"; bad=1; }
        for w in "$@"; do
            grep -qF -- "${w}" "${tmp}/err" || { echo "     no \"${w}\""; bad=1; }
        done
        [[ ${bad} -eq 0 ]] || echo "     stderr: $(head -c 400 "${tmp}/err")"
        check "pbf ${cmd}: ${name} (exit ${rc})" ${bad}
    done
}

for fmt in vtp ply csv geo bgeo; do
    d="${tmp}/${fmt}"
    rc=0
    "${pbf}" run "${scene}" --out "${d}" --format "${fmt}" --frames 1 --set threads=1 -q \
        > "${tmp}/run.log" 2>&1 || rc=$?
    check "pbf run --format ${fmt} --frames 1 (exit ${rc})" ${rc}
    cp -a "${d}" "${d}_intact"
    f="${d}/frame_00001.${fmt}"
    truncate -s $(($(stat -c %s "${f}") / 3)) "${f}"
    case "${fmt}" in
        vtp) want=("NumberOfPoints 2250 in its header, but array") ;;
        ply) want=("element vertex 2250 in its header, but the file holds") ;;
        csv) want=("complete rows of the 2250 particles stats.jsonl gives for frame 1"
                   "the last row ends without a line break") ;;
        geo) want=("NPoints 2250 in its header, but the file") ;;
        bgeo) want=("NPoints 2250 in its header, but the file holds") ;;
    esac
    refused ".${fmt} cut to a third" "${d}" "${f}: truncated: " "${want[@]}"
    # the intact copy reads (both commands)
    rc=0
    "${pbf}" render "${d}_intact" --size 64x48 -q > "${tmp}/intact.log" 2>&1 &&
        "${pbf}" mesh "${d}_intact" -q >> "${tmp}/intact.log" 2>&1 || rc=$?
    check "pbf render and pbf mesh of the intact .${fmt} frames (exit ${rc})" ${rc}
done

# .csv cut at the end of a row: 31 complete rows of 2250
d="${tmp}/csv_rows"
cp -a "${tmp}/csv_intact" "${d}"
head -n 32 "${tmp}/csv_intact/frame_00001.csv" > "${d}/frame_00001.csv"
refused ".csv cut after 31 rows" "${d}" \
    "${d}/frame_00001.csv: rows missing: 31 complete rows of the 2250 particles stats.jsonl gives for frame 1"

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
