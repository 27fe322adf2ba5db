#!/usr/bin/env bash
# Progress bars of long work (app/run/progress.c): `pbf render`, `pbf bench` and `pbf validate` draw
# a bar with the time left ("[####....] render frame 2/5  ETA 0.3 s") on a terminal, here a
# pseudo-terminal (tests/pty_run.py), and stay quiet with -q and when stderr is not a terminal
# (no '\r', no escape sequence, no ETA in what they write to a file or a pipe).
# `pbf validate` is stopped once its bar is there (its cases take minutes).
#
#   bash tests/run_progress.sh PATH/TO/pbf PYTHON3
set -uo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: run_progress.sh PATH/TO/pbf PYTHON3" >&2
    exit 2
fi
pbf="$1"
py="$2"
if [[ "${pbf}" != /* ]]; then pbf="$(pwd)/${pbf}"; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ -n "${py}" && -x "${py}" ]] ||
    { echo "run_progress: no python3 (\"${py}\"): run scripts/setup-debian.sh"; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_progress.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
source "${here}/check.sh"
ptyrun() { "${py}" "${here}/pty_run.py" "$@"; }

# has_bar FILE LABEL: a bar "[###...] LABEL ... ETA <number>" redrawn in place ('\r', then
# erase to the end of the line)
has_bar() {
    "${py}" - "$1" "$2" <<'PYEOF'
import re, sys
data = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
label = re.escape(sys.argv[2])
ok = "\033[K" in data and re.search(r"\r\[[#.]{5,20}\] %s .*ETA [0-9]" % label, data)
if not ok:
    print("     no bar with an ETA for %s in: %r" % (sys.argv[2], data[-600:]))
sys.exit(0 if ok else 1)
PYEOF
}
# quiet FILE [tty]: no escape sequence, no ETA, no bar, and (not from a terminal, which turns
# "\n" into "\r\n") no '\r'
quiet() {
    if { [[ $# -lt 2 ]] && grep -q $'\r' "$1"; } || grep -q $'\033' "$1" || grep -q "ETA" "$1" ||
        grep -Eq '\[[#.]{5,20}\]' "$1"; then
        echo "     progress output in $1: $(tr '\r' '|' < "$1" | head -c 400)"
        return 1
    fi
}

rc=0
"${pbf}" run "${here}/../scenes/quick.json" --out "${tmp}/run" --frames 4 -q > "${tmp}/run.log" 2>&1 ||
    rc=$?
check "pbf run --frames 4 for the frames to render (exit ${rc})" ${rc}

# pbf render
rc=0
ptyrun "${tmp}/render_tty.txt" -- "${pbf}" render "${tmp}/run" --size 96x64 || rc=$?
[[ ${rc} -eq 0 ]] && has_bar "${tmp}/render_tty.txt" render && grep -q "took" "${tmp}/render_tty.txt"
check "pbf render on a terminal: a bar with the time left, then how long it took (exit ${rc})" $?
rc=0
"${pbf}" render "${tmp}/run" --size 96x64 > "${tmp}/render_out.txt" 2> "${tmp}/render_err.txt" ||
    rc=$?
[[ ${rc} -eq 0 ]] && quiet "${tmp}/render_err.txt" && quiet "${tmp}/render_out.txt" &&
    grep -q "rendered 5 frames" "${tmp}/render_out.txt"
check "pbf render to a file: no bar, the summary only (exit ${rc})" $?
rc=0
ptyrun "${tmp}/render_q.txt" -- "${pbf}" render "${tmp}/run" --size 96x64 -q || rc=$?
[[ ${rc} -eq 0 ]] && quiet "${tmp}/render_q.txt" tty && [[ ! -s "${tmp}/render_q.txt" ]]
check "pbf render -q on a terminal: nothing written (exit ${rc})" $?

# pbf bench: two runs (forked); each run's line whole, where the bar was
bench=(bench --particles 500 --steps 20 --warmup 2 --threads 1,2)
rc=0
ptyrun "${tmp}/bench_tty.txt" -- "${pbf}" "${bench[@]}" || rc=$?
[[ ${rc} -eq 0 ]] && has_bar "${tmp}/bench_tty.txt" bench &&
    grep -aq "pbf bench: custom, 512 particles, cpu, 2 threads, 2 + 20 steps ... [0-9.]* ms/step" \
        "${tmp}/bench_tty.txt"
check "pbf bench on a terminal: a bar with the time left and the result lines (exit ${rc})" $?
rc=0
"${pbf}" "${bench[@]}" > "${tmp}/bench_out.txt" 2> "${tmp}/bench_err.txt" || rc=$?
[[ ${rc} -eq 0 ]] && quiet "${tmp}/bench_err.txt" &&
    [[ $(grep -c "ms/step$" "${tmp}/bench_err.txt") -eq 2 ]]
check "pbf bench to a file: no bar, one line per run (exit ${rc})" $?
rc=0
ptyrun "${tmp}/bench_q.txt" -- "${pbf}" "${bench[@]}" -q || rc=$?
[[ ${rc} -eq 0 ]] && quiet "${tmp}/bench_q.txt" tty && ! grep -q "pbf bench: custom" "${tmp}/bench_q.txt"
check "pbf bench -q on a terminal: no bar, no progress lines (exit ${rc})" $?

# pbf validate: stopped once the bar is drawn (or, to a pipe, its first line); -q: nothing
# within 2 s (a busy machine writes no more). The time limits only bound a hung command: how soon
# the output comes depends on the machine's load, so nothing waits for less than a minute.
validate=(validate --fast --no-plots --jobs 2)
rc=0
ptyrun --until '\] validate [0-9]+/[0-9]+ cases' --timeout 60 "${tmp}/val_tty.txt" -- \
    "${pbf}" "${validate[@]}" --out "${tmp}/val1" || rc=$?
[[ ${rc} -eq 0 ]] && grep -aq $'\r' "${tmp}/val_tty.txt"
check "pbf validate on a terminal: a bar (exit ${rc}: 0 = the bar was seen)" $?
rc=0
ptyrun --timeout 2 "${tmp}/val_q.txt" -- "${pbf}" "${validate[@]}" -q --out "${tmp}/val2" || rc=$?
[[ ${rc} -eq 124 ]] && quiet "${tmp}/val_q.txt" tty && [[ ! -s "${tmp}/val_q.txt" ]]
check "pbf validate -q on a terminal: nothing written in 2 s (exit ${rc}, 124 = stopped)" $?
rc=0
ptyrun --no-tty --until 'pbf validate: 8 simulations' --timeout 60 "${tmp}/val_pipe.txt" -- \
    "${pbf}" "${validate[@]}" --out "${tmp}/val3" || rc=$?
[[ ${rc} -eq 0 ]] && quiet "${tmp}/val_pipe.txt" && grep -q "pbf validate: 8 simulations" "${tmp}/val_pipe.txt"
check "pbf validate to a pipe: its plain lines, no bar (exit ${rc}: 0 = its first line was seen)" $?

echo "run_progress: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
