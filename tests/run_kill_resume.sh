#!/usr/bin/env bash
# "Never lose a run": `pbf run --checkpoint-every 1` killed with SIGKILL at random moments and
# resumed with `pbf run --resume DIR` each time, until it finishes, must end exactly like an
# uninterrupted run: every frame file identical byte for byte (cmp), stats.jsonl identical but
# for the wall-clock "ms" field, frames.pvd (the series index) identical, and the final
# checkpoints identical (the whole state, memory order included; their last 8 bytes are the state
# hash). Resumes alternate between 1 and 2 threads (results do not depend on the thread count).
#
# The kill delays come from bash's RANDOM with a fixed seed (reproducible in CI), scaled by the
# time of the uninterrupted run so that each attempt gets a little further on any machine. At
# least MIN_KILLS kills must hit a running process; rounds are repeated until they did. A run
# that ends before its kill means the reference was slowed by other work on the machine (CI
# runs two tests at once): the time scale is then halved, so later kills land again.
#
#   bash tests/run_kill_resume.sh PATH/TO/pbf [MIN_KILLS]
set -u

if [[ $# -lt 1 ]]; then
    echo "usage: run_kill_resume.sh PATH/TO/pbf [MIN_KILLS]" >&2
    exit 2
fi
pbf="$1"
min_kills="${2:-24}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/resilience/tiny.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_kill_resume.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export OMP_WAIT_POLICY=PASSIVE
RANDOM=20260521 # fixed seed

now_ms() { date +%s%3N; }

# Reference: one uninterrupted run.
t0=$(now_ms)
if ! "${pbf}" run "${scene}" --out "${tmp}/ref" --checkpoint-every 1 --threads 1 -q; then
    echo "FAIL: the uninterrupted run failed"
    exit 1
fi
ref_ms=$(($(now_ms) - t0))
frames=$(ls "${tmp}/ref" | grep -c '^frame_.*\.vtp$')
echo "reference: ${frames} frames in ${ref_ms} ms"

kills=0
attempts=0
failed=0
round=0
while [[ ${kills} -lt ${min_kills} && ${round} -lt 20 ]]; do
    round=$((round + 1))
    dir="${tmp}/killed${round}"
    round_kills=0
    while :; do
        attempts=$((attempts + 1))
        threads=$((1 + attempts % 2))
        if compgen -G "${dir}/checkpoint_*.pbfck" > /dev/null; then
            cmd=("${pbf}" run --resume "${dir}" --checkpoint-every 1 --threads "${threads}" -q)
        else
            # nothing to resume yet (killed before the first checkpoint): start again
            cmd=("${pbf}" run "${scene}" --out "${dir}" --checkpoint-every 1 --threads "${threads}" -q)
        fi
        "${cmd[@]}" > "${tmp}/attempt.out" 2>&1 &
        pid=$!
        if [[ ${kills} -lt ${min_kills} ]]; then
            # 2% .. 12% of the reference run, plus 5 ms
            delay_ms=$((5 + ref_ms * (2 + RANDOM % 11) / 100))
            sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
            if kill -KILL "${pid}" 2> /dev/null; then
                wait "${pid}" 2> /dev/null # (no "Killed" job message)
                rc=$?
                if [[ ${rc} -eq 137 ]]; then
                    kills=$((kills + 1))
                    round_kills=$((round_kills + 1))
                    echo "kill ${kills}: after ${delay_ms} ms (${cmd[2]}), checkpoints now: $(ls "${dir}" 2> /dev/null | grep '^checkpoint_' | tr '\n' ' ')"
                    continue
                fi
            else
                wait "${pid}"
                rc=$?
            fi
            if [[ ${rc} -eq 0 && ${ref_ms} -gt 40 ]]; then
                ref_ms=$((ref_ms / 2)) # it finished before the kill: a shorter time scale
                echo "a run ended before its kill: kill delays now scaled to ${ref_ms} ms"
            fi
        else
            wait "${pid}"
            rc=$?
        fi
        if [[ ${rc} -eq 0 ]]; then
            break
        fi
        echo "FAIL: attempt ${attempts} (${cmd[*]}) exited ${rc}:"
        cat "${tmp}/attempt.out"
        failed=$((failed + 1))
        break
    done
    [[ ${failed} -ne 0 ]] && break

    # Compare with the reference.
    bad=0
    for f in "${tmp}/ref"/frame_*.vtp; do
        if ! cmp -s "${f}" "${dir}/$(basename "${f}")"; then
            echo "FAIL round ${round}: $(basename "${f}") differs from the uninterrupted run"
            bad=1
        fi
    done
    n=$(ls "${dir}" | grep -c '^frame_.*\.vtp$')
    [[ ${n} -eq ${frames} ]] || { echo "FAIL round ${round}: ${n} frame files, expected ${frames}"; bad=1; }
    if ! cmp -s <(sed 's/,"ms":[^}]*}/}/' "${tmp}/ref/stats.jsonl") \
        <(sed 's/,"ms":[^}]*}/}/' "${dir}/stats.jsonl"); then
        echo "FAIL round ${round}: stats.jsonl differs (ms aside) from the uninterrupted run"
        diff <(sed 's/,"ms":[^}]*}/}/' "${tmp}/ref/stats.jsonl") \
            <(sed 's/,"ms":[^}]*}/}/' "${dir}/stats.jsonl") | head -n 10
        bad=1
    fi
    # the series index, rewritten after each frame and rebuilt on resume, lists the same frames
    # with the same times as the uninterrupted run's
    if ! cmp -s "${tmp}/ref/frames.pvd" "${dir}/frames.pvd"; then
        echo "FAIL round ${round}: frames.pvd differs from the uninterrupted run"
        diff "${tmp}/ref/frames.pvd" "${dir}/frames.pvd" | head -n 10
        bad=1
    fi
    last=$(printf 'checkpoint_%05d.pbfck' $((frames - 1)))
    if ! cmp -s "${tmp}/ref/${last}" "${dir}/${last}"; then
        echo "FAIL round ${round}: the final state (${last}) differs from the uninterrupted run"
        bad=1
    fi
    ref_hash=$(tail -c 8 "${tmp}/ref/${last}" | od -An -tx8 | tr -d ' ')
    got_hash=$(tail -c 8 "${dir}/${last}" 2> /dev/null | od -An -tx8 | tr -d ' ')
    [[ "${ref_hash}" == "${got_hash}" ]] || bad=1
    ncheck=$(ls "${dir}" | grep -c '^checkpoint_')
    [[ ${ncheck} -le 2 ]] || { echo "FAIL round ${round}: ${ncheck} checkpoints kept, expected 2"; bad=1; }
    if ls "${dir}" | grep -q '\.tmp$'; then
        echo "FAIL round ${round}: .tmp files left: $(ls "${dir}" | grep '\.tmp$' | tr '\n' ' ')"
        bad=1
    fi
    if [[ ${bad} -eq 0 ]]; then
        echo "ok   round ${round}: ${round_kills} kills, final frames, stats and state hash ${got_hash} identical"
    else
        failed=$((failed + 1))
    fi
done

if [[ ${kills} -lt ${min_kills} ]]; then
    echo "FAIL: only ${kills} kills hit a running process, expected at least ${min_kills}"
    failed=$((failed + 1))
fi
echo "kill_resume: ${kills} SIGKILLs survived in ${attempts} attempts over ${round} rounds, ${failed} failures"
[[ ${failed} -eq 0 ]]
