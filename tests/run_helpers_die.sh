#!/usr/bin/env bash
# Every helper process a command or a script starts dies with it, however it is stopped:
#   - `pbf bench` (a forked job per run, app/run/jobs.c) stopped by SIGTERM and by SIGKILL;
#   - `pbf validate --jobs 2` (a coordinator and its workers) stopped by SIGKILL (run_jobs_die.sh
#     stops it by SIGTERM);
#   - the Python bench scripts (bench/*.py import bench/children_die.py) stopped by SIGKILL;
#   - bench/side_by_side.sh stopped by SIGTERM while the peer's timing runs, and by SIGKILL while
#     `pbf bench` runs (its peer is a stand-in Python given by PBF_SPLASH_PYTHON: the peer's
#     timing is a `sleep`, everything else succeeds doing nothing).
# After each stop no process of the stopped run is left (every process is found by a marker in
# its command line).
#
#   bash tests/run_helpers_die.sh PATH/TO/pbf
set -u
if [[ $# -ne 1 ]]; then
    echo "usage: run_helpers_die.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
[[ "${pbf}" == /* ]] || pbf="$(pwd)/${pbf}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_helpers_die.XXXXXX")"
source "${here}/check.sh"

# The processes whose command line holds the marker (a folder of this test, an option).
marked() { pgrep -f -- "$1"; }
# At exit: nothing of this test may outlive it (each process left by a failed check, by its pid).
markers=("${tmp}")
cleanup() {
    local m p
    for m in "${markers[@]}"; do
        for p in $(marked "${m}"); do kill -KILL "${p}" 2> /dev/null; done
    done
    rm -rf "${tmp}"
}
trap cleanup EXIT

# wait_for SECONDS COMMAND...: until COMMAND succeeds (polled every 0.1 s); 1 when it never did.
wait_for() {
    local n=$(($1 * 10))
    shift
    while ((n-- > 0)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
# none_left MARKER: no process names MARKER any more (waiting up to 30 s for the kernel's
# death signals to be delivered and the processes to end on a busy machine).
nothing_marked() { [[ -z "$(marked "$1")" ]]; }
none_left() { wait_for 30 nothing_marked "$1"; }
has_child_named() { pgrep -P "$1" -f "$2" > /dev/null; }

# stop NAME SIGNAL MARKER PID: SIGNAL to PID, then no process of MARKER may be left.
stop() {
    local name="$1" sig="$2" marker="$3" pid="$4" rc left
    markers+=("${marker}")
    kill "-${sig}" "${pid}"
    wait "${pid}" 2> /dev/null
    rc=$?
    none_left "${marker}"
    left=$?
    [[ ${left} -ne 0 ]] && echo "     left running: $(for p in $(marked "${marker}"); do
        ps -o pid=,ppid=,stat=,etime=,args= -p "${p}" | cut -c1-140
        echo -n "; "
    done)"
    check "${name}: stopped by SIG${sig} (exit ${rc}), none of its processes left" ${left}
}

echo "helpers_die: pbf bench, pbf validate, bench/side_by_side.sh, the Python bench scripts"
# ---- pbf bench: a forked job per run ----------------------------------------------------------
for sig in TERM KILL; do
    d="${tmp}/bench_${sig}"
    mkdir -p "${d}"
    (cd "${d}" && exec "${pbf}" bench --particles 20000 --steps 100000 --warmup 1 --threads 1,2 \
        --no-limits -q --json "${d}/b.json") > "${d}/log" 2>&1 &
    pid=$!
    wait_for 60 has_child_named "${pid}" pbf
    check "pbf bench: its job started" $?
    stop "pbf bench" "${sig}" "${d}" "${pid}"
done

# ---- pbf validate --jobs 2: a coordinator and its workers ---------------------------------------
d="${tmp}/validate"
mkdir -p "${d}"
"${pbf}" validate --fast --no-plots --jobs 2 --out "${d}/v" > "${d}.log" 2>&1 &
pid=$!
wait_for 60 has_child_named "${pid}" pbf
check "pbf validate --jobs 2: its jobs started" $?
stop "pbf validate --jobs 2" KILL "${d}" "${pid}"

# ---- bench/side_by_side.sh ----------------------------------------------------------------------
# A stand-in for the peer's Python: the timing script sleeps (PEER_SLEEP seconds) and every other
# call succeeds.
peer="${tmp}/peer"
mkdir -p "${peer}/scenes"
for f in dam_break_pbf_fixed4_r025.json dam_break_pbf_fixed4_r0125.json UnitBox.obj; do
    echo '{}' > "${peer}/scenes/${f}"
done
cat > "${peer}/python" << 'EOF'
#!/usr/bin/env bash
for a in "$@"; do
    if [[ "${a}" == */splash_timing.py ]]; then exec sleep "${PEER_SLEEP}"; fi
done
exit 0
EOF
chmod +x "${peer}/python"
build="$(dirname "${pbf}")"
side() { # side DIR PEER_SLEEP: the comparison on the small case, in the background
    mkdir -p "$1"
    (cd "$1" && PBF_SPLASH_PYTHON="${peer}/python" PBF_SPLASH_CACHE="$1/cache" PEER_SLEEP="$2" \
        exec bash "${root}/bench/side_by_side.sh" --cases small --steps 100000 --warmup 1 \
        --threads 1 --build "${build}" --peer-dir "${peer}/scenes") > "$1.log" 2>&1 &
}

# SIGTERM while the peer's timing runs (a sleep of a time of its own: its marker)
nap="$((300 + $$ % 1000)).25"
side "${tmp}/side_term" "${nap}"
pid=$!
wait_for 60 has_child_named "${pid}" "sleep ${nap}"
check "side_by_side.sh: the peer's timing started" $?
stop "side_by_side.sh while the peer runs" TERM "sleep ${nap}" "${pid}"

# SIGKILL while pbf bench runs (its job too)
side "${tmp}/side_kill" 0
pid=$!
wait_for 60 has_child_named "${pid}" "pbf bench"
check "side_by_side.sh: pbf bench started" $?
bench_pid=$(pgrep -P "${pid}" -f "pbf bench")
wait_for 60 has_child_named "${bench_pid:-0}" pbf
stop "side_by_side.sh while pbf bench runs" KILL "--steps 100000" "${pid}"

# ---- the Python bench scripts (bench/children_die.py) -------------------------------------------
# Every bench/*.py that starts processes imports children_die first ...
for f in "${root}"/bench/*.py; do
    [[ "$(basename "${f}")" == children_die.py ]] && continue
    if grep -q "subprocess" "${f}"; then
        grep -q "^import children_die" "${f}"
        check "$(basename "${f}") imports children_die" $?
    fi
done
# ... and a child it starts through subprocess ends when the script is killed (SIGKILL)
nap="$((300 + $$ % 1000)).75"
(cd "${root}/bench" && exec python3 -c \
    "import subprocess, children_die; subprocess.run(['sleep', '${nap}'])") > "${tmp}/py.log" 2>&1 &
pid=$!
wait_for 60 has_child_named "${pid}" "sleep ${nap}"
check "python: its child started" $?
stop "a Python bench script" KILL "sleep ${nap}" "${pid}"

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
