#!/usr/bin/env bash
# The ffmpeg that `--video` starts dies with pbf, however pbf is stopped (app/run/jobs.c:
# pbfapp_job_exec, SIGTERM when its parent ends): `pbf render DIR --video` killed with SIGKILL
#   - while a stand-in ffmpeg (first on PATH: it never reads its input, like an ffmpeg busy
#     encoding or stuck on a slow disk) holds the pipe: pbf blocks writing to it; after the kill
#     the stand-in must be gone (an ffmpeg not tied to pbf would stay);
#   - while the real ffmpeg encodes (skipped when there is no ffmpeg on PATH).
#
#   bash tests/run_video_dies.sh PATH/TO/pbf
set -u
if [[ $# -ne 1 ]]; then
    echo "usage: run_video_dies.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_video_dies.XXXXXX")"
started=() # every ffmpeg seen, ended at exit whatever happened
trap 'for p in "${started[@]}"; do kill -KILL "${p}" 2>/dev/null; done; rm -rf "${tmp}"' EXIT
source "${here}/check.sh"

# gone PID: 0 when the process has ended (absent, or a zombie nobody reaped yet) within 10 s
gone() {
    local s
    for _ in $(seq 1 100); do
        s=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
        [[ ${s} == Z* ]] && return 0
        sleep 0.1
    done
    return 1
}

# killed NAME PATH_PREFIX: starts `pbf render` of the run with --video, waits for its ffmpeg,
# kills pbf with SIGKILL and checks that the ffmpeg ends too
killed() {
    local name="$1" path="$2" parent bad=0 s
    PATH="${path}" "${pbf}" render "${tmp}/run" --video "${tmp}/v_${name}.mp4" --size 320x240 \
        -q > "${tmp}/${name}.log" 2>&1 &
    parent=$!
    local ff_pid=""
    for _ in $(seq 1 200); do
        ff_pid=$(pgrep -P "${parent}" | head -n 1)
        [[ -n "${ff_pid}" ]] && break
        sleep 0.05
    done
    if [[ -z "${ff_pid}" ]]; then
        echo "     no ffmpeg started within 10 s: $(head -c 400 "${tmp}/${name}.log")"
        kill -KILL "${parent}" 2>/dev/null
        wait "${parent}" 2>/dev/null
        check "${name}: pbf render --video started ffmpeg" 1
        return
    fi
    started+=("${ff_pid}")
    kill -KILL "${parent}"
    wait "${parent}" 2>/dev/null
    if [[ -e "${tmp}/v_${name}.mp4" ]]; then # pbf renames the video when it has finished
        echo "     pbf finished before it was killed: nothing shown"
        bad=1
    fi
    if ! gone "${ff_pid}"; then
        s=$(ps -o pid=,stat=,args= -p "${ff_pid}")
        echo "     still running 10 s after pbf was killed: ${s}"
        bad=1
    fi
    check "${name}: ffmpeg ends with pbf killed by SIGKILL" ${bad}
}

rc=0
"${pbf}" run "${here}/../scenes/quick.json" --out "${tmp}/run" --frames 40 --set threads=1 -q \
    > "${tmp}/run.log" 2>&1 || rc=$?
check "pbf run --frames 40 (exit ${rc})" ${rc}

mkdir -p "${tmp}/bin"
printf '#!/bin/sh\nexec sleep 300\n' > "${tmp}/bin/ffmpeg"
chmod +x "${tmp}/bin/ffmpeg"
killed "stand-in" "${tmp}/bin:${PATH}"

if command -v ffmpeg > /dev/null; then
    killed "ffmpeg" "${PATH}"
else
    echo "skip ffmpeg: not on PATH (the stand-in case above still ran)"
fi

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
