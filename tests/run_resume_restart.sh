#!/usr/bin/env bash
# `pbf run --resume DIR` of a run stopped before its first checkpoint (SIGKILL: no checkpoint is
# written; a .tmp frame left behind): it starts over from frame 0, says so in one line on
# stderr, and ends with frames, frames.pvd, scene.json and stats.jsonl (ms aside) identical to an
# uninterrupted run's, the .tmp gone. A complete run without checkpoints is left as it is (exit
# 0, "the run is complete").
#
#   bash tests/run_resume_restart.sh PATH/TO/pbf
set -u
if [[ $# -ne 1 ]]; then
    echo "usage: run_resume_restart.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_resume_restart.XXXXXX")"
killed_pid=""
trap '[[ -n "${killed_pid}" ]] && kill -KILL "${killed_pid}" 2> /dev/null; rm -rf "${tmp}"' EXIT
source "${here}/check.sh"
T=(--set threads=1 -q)

# A long run killed by SIGKILL once its second frame is on disk: it cannot have finished, and
# SIGKILL writes no checkpoint. Then a leftover of an interrupted frame write.
"${pbf}" run "${scene}" --out "${tmp}/k" --frames 100000 "${T[@]}" > "${tmp}/k.log" 2>&1 &
killed_pid=$!
for _ in $(seq 1 600); do
    [[ -f "${tmp}/k/frame_00001.vtp" ]] && break
    sleep 0.1
done
kill -KILL "${killed_pid}"
wait "${killed_pid}" 2> /dev/null
killed_pid=""
printf 'half a frame' > "${tmp}/k/frame_00002.vtp.tmp"
left="$(ls "${tmp}/k" | tr '\n' ' ')"
[[ "${left}" != *checkpoint_* && "${left}" == *frame_00001.vtp* ]]
check "the killed run left frames and no checkpoint: ${left}" $?

# The uninterrupted run goes 3 frames beyond what the killed one wrote (however far it got before
# the kill: a fast machine writes several frames between two polls), so that the resume below has
# frames to compute.
last=$(ls "${tmp}/k" | sed -n 's/^frame_0*\([0-9][0-9]*\)\.vtp$/\1/p' | sort -n | tail -n 1)
N=$((${last:-0} + 3))
rc=0
"${pbf}" run "${scene}" --out "${tmp}/ref" --frames "${N}" "${T[@]}" > "${tmp}/ref.log" 2>&1 || rc=$?
check "the uninterrupted run of ${N} frames (exit ${rc})" ${rc}

# --resume (with --frames N, a key a resume may change): from frame 0
rc=0
"${pbf}" run --resume "${tmp}/k" --frames "${N}" "${T[@]}" > "${tmp}/resume.out" 2> "${tmp}/resume.err" ||
    rc=$?
check "--resume without a checkpoint: exit ${rc}: $(cat "${tmp}/resume.err")" ${rc}
[[ $(wc -l < "${tmp}/resume.err") -eq 1 ]] &&
    grep -q "^pbf: --resume ${tmp}/k: no checkpoint yet (the run stopped before its first): starting over from frame 0$" \
        "${tmp}/resume.err"
check "--resume without a checkpoint: one line on stderr says it starts over from frame 0" $?
bad=0
for f in "${tmp}/ref"/frame_*.vtp "${tmp}/ref/frames.pvd" "${tmp}/ref/scene.json"; do
    cmp -s "${f}" "${tmp}/k/${f##*/}" || { echo "     ${f##*/} differs from the uninterrupted run's"; bad=1; }
done
[[ $(ls "${tmp}/k" | grep -c '^frame_') -eq $(ls "${tmp}/ref" | grep -c '^frame_') ]] ||
    { echo "     frame files: $(ls "${tmp}/k" | grep '^frame_' | tr '\n' ' ')"; bad=1; }
cmp -s <(sed 's/,"ms":[^}]*}/}/' "${tmp}/ref/stats.jsonl") <(sed 's/,"ms":[^}]*}/}/' "${tmp}/k/stats.jsonl") ||
    { echo "     stats.jsonl differs (ms aside)"; bad=1; }
check "--resume without a checkpoint: frames, frames.pvd, scene.json, stats.jsonl as the uninterrupted run's, no .tmp left" ${bad}

# A complete run without checkpoints: nothing to do, nothing rewritten.
cp -a "${tmp}/ref" "${tmp}/ref_copy"
rc=0
"${pbf}" run --resume "${tmp}/ref" --set threads=1 > "${tmp}/complete.out" 2> "${tmp}/complete.err" || rc=$?
[[ ${rc} -eq 0 ]] && grep -q "the run is complete (frame ${N} of ${N})" "${tmp}/complete.out" &&
    diff -r "${tmp}/ref" "${tmp}/ref_copy" > /dev/null && [[ ! -s "${tmp}/complete.err" ]]
ok=$?
check "--resume of a complete run without checkpoints: exit ${rc}, \"the run is complete\", files untouched: $(cat "${tmp}/complete.out" "${tmp}/complete.err")" ${ok}

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
