#!/usr/bin/env bash
# "Never lose a run", everything but the SIGKILL loop (tests/run_kill_resume.sh):
#   - damaged checkpoints: the newest truncated / bit-flipped -> the previous one is used, with a
#     message, and the run still ends identical to an uninterrupted one; none valid -> exit 2;
#     a checkpoint of another scene (or of --set overrides that change the simulation) refused;
#   - disk full, simulated with `ulimit -f` (RLIMIT_FSIZE; pbf ignores SIGXFSZ so the write fails
#     with EFBIG): exit 1, the message names the file, the earlier files intact and readable, no
#     .tmp left, and a resume finishes the run identical to an uninterrupted one;
#   - SIGTERM and SIGINT: the frame is finished, a checkpoint written, exit 143 / 130 with a
#     message saying how to resume; a fresh run into that directory is refused (exit 2); the
#     resumed run ends identical;
#   - the instability guard: exit 3 with the diagnostic (check, step, frame, stage, particle,
#     value, last checkpoint); --adaptive retries with more substeps and finishes, or gives up
#     (exit 3) at 8x.
#
#   bash tests/run_resilience.sh PATH/TO/pbf
set -u

if [[ $# -ne 1 ]]; then
    echo "usage: run_resilience.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
res="${here}/resilience"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_resilience.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export OMP_WAIT_POLICY=PASSIVE
source "$(dirname "${BASH_SOURCE[0]}")/check.sh"

# contains NAME FILE SUBSTRING
contains() {
    if grep -qF -- "$3" "$2"; then
        check "$1" 0
    else
        check "$1: lacks \"$3\"" 1
        sed 's/^/     | /' "$2" | head -n 20
    fi
}

# same_run NAME REF DIR: identical frame files and stats.jsonl (but for "ms").
same_run() {
    local bad=0 f
    for f in "$2"/frame_*; do
        cmp -s "${f}" "$3/$(basename "${f}")" || { echo "     $(basename "${f}") differs"; bad=1; }
    done
    [[ $(ls "$2" | grep -c '^frame_') -eq $(ls "$3" | grep -c '^frame_') ]] || bad=1
    cmp -s <(sed 's/,"ms":[^}]*}/}/' "$2/stats.jsonl") <(sed 's/,"ms":[^}]*}/}/' "$3/stats.jsonl") ||
        { echo "     stats.jsonl differs"; bad=1; }
    check "$1" ${bad}
}

no_tmp() { # no_tmp NAME DIR
    [[ -z "$(find "$2" -name '*.tmp')" ]]
    check "$1: no .tmp file left" $?
}

run() { # run NAME EXPECTED_RC LOG ARGS...: runs pbf, checks the exit code
    local name="$1" want="$2" log="$3"
    shift 3
    local rc=0
    "${pbf}" "$@" > "${log}" 2>&1 || rc=$?
    [[ ${rc} -eq ${want} ]]
    check "${name}: exit ${rc}, expected ${want}" $?
    [[ ${rc} -eq ${want} ]] || sed 's/^/     | /' "${log}" | head -n 20
    if grep -q -e 'Sanitizer' -e 'runtime error:' "${log}"; then check "${name}: sanitizer report" 1; fi
}

T=(--threads 1 -q)
tiny="${res}/tiny.json"

# ---- reference runs ----------------------------------------------------------------------------
run "reference tiny" 0 "${tmp}/ref.log" run "${tiny}" --out "${tmp}/ref" --checkpoint-every 1 "${T[@]}"
run "reference drop" 0 "${tmp}/refd.log" run "${res}/drop.json" --out "${tmp}/refd" --checkpoint-every 1 "${T[@]}"

# ---- damaged checkpoints -----------------------------------------------------------------------
# Stop after 10 frames (the checkpoints of frames 9 and 10 are kept), damage, resume with
# --frames 30 (frames is not part of the scene hash: a finished run can be extended).
mk10() { run "setup $1" 0 "${tmp}/$1.setup.log" run "${tiny}" --out "${tmp}/$1" --frames 10 --checkpoint-every 1 "${T[@]}"; }
flip() { # flip FILE OFFSET: inverts one byte
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "\\$(printf '%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2> /dev/null
}

mk10 trunc
truncate -s 1000 "${tmp}/trunc/checkpoint_00010.pbfck"
run "truncated newest checkpoint" 0 "${tmp}/trunc.log" run --resume "${tmp}/trunc" --frames 30 --checkpoint-every 1 "${T[@]}"
contains "truncated: message" "${tmp}/trunc.log" "checkpoint_00010.pbfck: truncated: 1000 bytes"
contains "truncated: falls back" "${tmp}/trunc.log" "using ${tmp}/trunc/checkpoint_00009.pbfck (frame 9)"
same_run "truncated: the resumed run ends identical" "${tmp}/ref" "${tmp}/trunc"

mk10 flip
flip "${tmp}/flip/checkpoint_00010.pbfck" 3000
run "bit-flipped newest checkpoint" 0 "${tmp}/flip.log" run --resume "${tmp}/flip" --frames 30 --checkpoint-every 1 "${T[@]}"
contains "bit flip: message" "${tmp}/flip.log" "checkpoint_00010.pbfck: checksum mismatch"
contains "bit flip: falls back" "${tmp}/flip.log" "using ${tmp}/flip/checkpoint_00009.pbfck"
same_run "bit flip: the resumed run ends identical" "${tmp}/ref" "${tmp}/flip"

mk10 both
truncate -s 0 "${tmp}/both/checkpoint_00010.pbfck"
flip "${tmp}/both/checkpoint_00009.pbfck" 100
cp "${tmp}/both/stats.jsonl" "${tmp}/both.stats"
run "no valid checkpoint" 2 "${tmp}/both.log" run --resume "${tmp}/both" "${T[@]}"
contains "no valid checkpoint: message" "${tmp}/both.log" "no valid checkpoint to resume from"
contains "no valid checkpoint: names the empty one" "${tmp}/both.log" "checkpoint_00010.pbfck: empty (0 bytes)"
cmp -s "${tmp}/both.stats" "${tmp}/both/stats.jsonl"
check "no valid checkpoint: stats.jsonl untouched" $?

mk10 other
run "another scene (--set relaxation) refused" 2 "${tmp}/other.log" run --resume "${tmp}/other" --set relaxation=0.02 "${T[@]}"
contains "another scene: message names the key" "${tmp}/other.log" "relaxation (0.01 in the checkpoints, 0.02 now) may not change on resume"
cp "${tmp}/ref/checkpoint_00029.pbfck" "${tmp}/other/checkpoint_00011.pbfck"
run "another scene: checkpoint of the same scene but another frame name" 0 "${tmp}/other2.log" run --resume "${tmp}/other" --frames 12 "${T[@]}"
contains "frame mismatch: message" "${tmp}/other2.log" "holds frame 29, not the frame of its name"
run "checkpoint of another scene file" 2 "${tmp}/other3.log" run --resume "${tmp}/other" --set particle_radius=0.019 "${T[@]}"

# a run that is complete: nothing to do; --frames continues it
run "resume a complete run" 0 "${tmp}/complete.log" run --resume "${tmp}/ref" --threads 1
contains "resume a complete run: message" "${tmp}/complete.log" "the run is complete"

# ---- disk full (ulimit -f, in KiB for bash) ----------------------------------------------------
# stats.jsonl grows past 3 KiB at frame ~20 of 40 (frames ~1.5 KiB, scene.json ~1.2 KiB).
rc=0
(ulimit -f 3 && exec "${pbf}" run "${res}/drop.json" --out "${tmp}/full" --checkpoint-every 1 "${T[@]}") > "${tmp}/full.log" 2>&1 || rc=$?
[[ ${rc} -eq 1 ]]
check "disk full (stats.jsonl): exit ${rc}, expected 1" $?
contains "disk full: the message names the file" "${tmp}/full.log" "stats.jsonl: write failed: File too large"
no_tmp "disk full" "${tmp}/full"
good=1
nlines=$(wc -l < "${tmp}/full/stats.jsonl")
while IFS= read -r line; do
    [[ "${line}" == '{"frame":'*'}' ]] || good=0
done < "${tmp}/full/stats.jsonl"
[[ ${good} -eq 1 && ${nlines} -ge 5 && $(tail -c 1 "${tmp}/full/stats.jsonl" | od -An -c | tr -d ' ') == '\n' ]]
check "disk full: stats.jsonl holds ${nlines} complete lines" $?
bad=0
for f in "${tmp}/full"/frame_*; do cmp -s "${f}" "${tmp}/refd/$(basename "${f}")" || bad=1; done
check "disk full: the $(ls "${tmp}/full" | grep -c '^frame_') frames written are intact" ${bad}
run "disk full: resume once there is room" 0 "${tmp}/full2.log" run --resume "${tmp}/full" --checkpoint-every 1 "${T[@]}"
same_run "disk full: the resumed run ends identical" "${tmp}/refd" "${tmp}/full"

# A frame file larger than the limit (tiny.json: ~10 KB frames) in a directory holding an
# earlier run: the run owns the directory, so the earlier run's frames were removed before the
# first frame, and the failed write leaves no partial frame_00000.vtp (nor a .tmp) behind.
cp -r "${tmp}/ref" "${tmp}/full3"
rc=0
(ulimit -f 4 && exec "${pbf}" run "${tiny}" --out "${tmp}/full3" "${T[@]}") > "${tmp}/full3.log" 2>&1 || rc=$?
[[ ${rc} -eq 1 ]]
check "disk full (frame file): exit ${rc}, expected 1" $?
contains "disk full (frame file): the message names the file" "${tmp}/full3.log" "frame_00000.vtp.tmp: write failed: File too large (disk full or file size limit)"
[[ -z "$(ls "${tmp}/full3" | grep '^frame_')" ]]
check "disk full (frame file): no partial frame_00000.vtp, no frame of the earlier run" $?
no_tmp "disk full (frame file)" "${tmp}/full3"

# ---- SIGTERM / SIGINT ----------------------------------------------------------------------------
# 300 frames, so that even a fast machine is still running when the signal comes.
run "reference tiny, 300 frames" 0 "${tmp}/ref300.log" run "${tiny}" --out "${tmp}/ref300" --frames 300 "${T[@]}"
# signal_stop NAME SIGNAL EXPECTED_RC
signal_stop() {
    local dir="${tmp}/$1" rc=0 i
    "${pbf}" run "${tiny}" --out "${dir}" --frames 300 "${T[@]}" > "${tmp}/$1.log" 2>&1 &
    local pid=$!
    for ((i = 0; i < 400; ++i)); do # wait until a few frames are written
        [[ -f "${dir}/frame_00003.vtp" ]] && break
        sleep 0.01
    done
    kill "-$2" "${pid}"
    wait "${pid}" || rc=$?
    [[ ${rc} -eq $3 ]]
    check "$1: exit ${rc}, expected $3" $?
    contains "$1: message" "${tmp}/$1.log" "stopped by $2 after frame"
    contains "$1: how to resume" "${tmp}/$1.log" "resume with: pbf run --resume ${dir}"
    local n
    n=$(ls "${dir}" | grep -c '^checkpoint_')
    [[ ${n} -eq 1 ]]
    check "$1: one final checkpoint" $?
    no_tmp "$1" "${dir}"
    run "$1: a fresh run into the unfinished run's directory is refused" 2 "${tmp}/$1.fresh.log" \
        run "${tiny}" --out "${dir}" "${T[@]}"
    contains "$1: refused fresh run: message" "${tmp}/$1.fresh.log" "holds an unfinished run"
    run "$1: resume" 0 "${tmp}/$1.resume.log" run --resume "${dir}" "${T[@]}"
    same_run "$1: the resumed run ends identical" "${tmp}/ref300" "${dir}"
}
signal_stop sigterm SIGTERM 143
signal_stop sigint SIGINT 130

# ---- the instability guard ---------------------------------------------------------------------
run "guard: density error above 0.001%" 3 "${tmp}/guard.log" run "${tiny}" --out "${tmp}/guard" --set guard_density_error=0.001 "${T[@]}"
for want in 'unstable simulation at step 1 (frame 1, substep 1 of 2)' 'check "density" failed' \
    'stage -' 'particle index' '(id ' ' at (' '> guard_density_error 0.001%' \
    'no checkpoint to resume from'; do
    contains "guard: diagnostic has \"${want}\"" "${tmp}/guard.log" "${want}"
done
[[ ! -f "${tmp}/guard/frame_00001.vtp" ]]
check "guard: the unstable frame is not written" $?

fast="${res}/fast.json" # 1 substep: the impact compresses by ~34%; 2 substeps: ~8% (its steps as given)
run "guard: impact over guard_density_error=20" 3 "${tmp}/g2.log" run "${fast}" --out "${tmp}/g2" --set guard_density_error=20 --checkpoint-every 1 "${T[@]}"
contains "guard: names the last good checkpoint" "${tmp}/g2.log" "last good checkpoint: ${tmp}/g2/checkpoint_"
run "guard: resume with --adaptive finishes" 0 "${tmp}/g2r.log" run --resume "${tmp}/g2" --adaptive --set guard_density_error=20 "${T[@]}"
contains "guard: --adaptive announces the retry" "${tmp}/g2r.log" "--adaptive: retrying frame"

run "adaptive: retries with 2x substeps and finishes" 0 "${tmp}/ad.log" run "${fast}" --out "${tmp}/ad" --set guard_density_error=20 --adaptive "${T[@]}"
contains "adaptive: message" "${tmp}/ad.log" "retrying frame 1 from its start with 2x substeps"
[[ $(wc -l < "${tmp}/ad/stats.jsonl") -eq 13 ]]
check "adaptive: all 12 frames written" $?

run "adaptive: gives up at 8x" 3 "${tmp}/ad8.log" run "${tiny}" --out "${tmp}/ad8" --set guard_density_error=0.001 --adaptive "${T[@]}"
contains "adaptive: tried 8x" "${tmp}/ad8.log" "with 8x substeps (16 steps"
contains "adaptive: gives up" "${tmp}/ad8.log" "even with 8x substeps"

run "guard off (0): the run finishes" 0 "${tmp}/off.log" run "${fast}" --out "${tmp}/off" --set guard_density_error=0 "${T[@]}"

echo "resilience: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
