#!/usr/bin/env bash
# shellcheck disable=SC2016 # the bash -c snippets below take their arguments as "$1", "$2"
# `pbf bench` (app/bench.c) on tiny runs: the standard cases have the peer's particle counts,
# --particles rounds up to a cube, the JSON has the documented fields, 1 and 2 threads give the
# same final state (same density error) and a speed-up, --json - is clean JSON on stdout, and
# bad options are usage errors (exit 2). Timings themselves are not checked.
#
#   bash tests/run_bench.sh PATH/TO/pbf PYTHON3
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: run_bench.sh PATH/TO/pbf PYTHON3" >&2
    exit 2
fi
pbf="$1"
py="$2"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_bench.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

ok_if() { # ok_if NAME COMMAND...: passes when COMMAND succeeds
    local name="$1"
    shift
    if "$@"; then check "${name}" 0; else check "${name}" 1; fi
}

source "$(dirname "${BASH_SOURCE[0]}")/check.sh"

# Two thread counts: two forked runs; the JSON checked field by field.
rc=0
"${pbf}" bench --particles 500 --steps 3 --warmup 1 --threads 1,2 --json "${tmp}/b.json" \
    >"${tmp}/table.txt" 2>"${tmp}/err.txt" || rc=$?
check "bench --particles 500 --threads 1,2 exits 0" "${rc}"
rc=0
"${py}" - "${tmp}/b.json" <<'EOF' || rc=$?
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("cpu", "cores_online", "host"):
    assert k in d["machine"], k
for k in ("compiler", "build_type", "flags", "git_commit"):
    assert k in d["build"], k
assert d["settings"]["dt"] == 0.005 and d["settings"]["iterations"] == 4, d["settings"]
runs = d["runs"]
assert [r["threads"] for r in runs] == [1, 2], runs
for r in runs:
    assert r["ok"], r
    assert r["case"] == "custom" and r["particles"] == 512 and r["particles_per_side"] == 8, r
    assert r["steps"] == 3 and r["warmup_steps"] == 1, r
    assert 0 < r["ms_per_step_min"] <= r["ms_per_step_mean"], r
    for s in ("predict", "grid", "lambda", "delta_p", "collide", "velocity", "stats", "total"):
        assert r["stages_ms"][s] >= 0, (s, r["stages_ms"])
    assert r["particle_steps_per_s"] > 0 and r["rss_peak_kib"] > 0, r
    assert r["rss_kib"] == r["rss_peak_kib"] - r["rss_baseline_kib"], r
    assert r["nonfinite"] == 0 and r["escaped"] == 0, r
    assert abs(r["simulated_time_s"] - 4 * 0.005) < 1e-9, r
assert runs[0]["speedup_vs_1_thread"] == 1.0 and runs[1]["speedup_vs_1_thread"] > 0, runs
# results are bit-identical for any thread count
assert runs[0]["density_error_avg"] == runs[1]["density_error_avg"], runs
assert runs[0]["density_error_max"] == runs[1]["density_error_max"], runs
EOF
check "JSON fields, 512 particles, same final state with 1 and 2 threads" "${rc}"
ok_if "table on stdout with the stage breakdown" \
    bash -c 'grep -q "^custom  *512  *2 " "$1" && grep -q "delta_p" "$1"' _ "${tmp}/table.txt"

# One run: in-process; the standard small case has the peer's 19^3 particles.
rc=0
"${pbf}" bench --case small --steps 1 --warmup 0 --threads 1 --json - -q >"${tmp}/s.json" \
    2>"${tmp}/s_table.txt" || rc=$?
check "bench --case small --json - exits 0" "${rc}"
ok_if "--json - is JSON on stdout; small = 6859 particles" "${py}" -c \
    "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; assert r['particles'] == 6859 and r['particle_radius'] == 0.025, r" \
    "${tmp}/s.json"
ok_if "--json -: the table goes to stderr" grep -q "^small  *6859 " "${tmp}/s_table.txt"

# Medium has the peer's 39^3 (one step at 1 thread).
ok_if "medium = 59319 particles" \
    bash -c '"$1" bench --case medium --steps 1 --warmup 0 --threads 1 -q | grep -q "^medium  *59319 "' _ "${pbf}"

# Usage errors.
for args in "--bogus" "--case huge" "--threads 0" "--threads 1,,2" "--particles 0" \
    "--particles 10000001" "--dt 0" "--steps x" "--set nope=1" "--set particle_radius=0.03"; do
    rc=0
    # shellcheck disable=SC2086
    "${pbf}" bench ${args} >/dev/null 2>"${tmp}/usage.txt" || rc=$?
    ok_if "usage error (exit 2): ${args}" \
        bash -c '[[ "$1" -eq 2 ]] && grep -q "pbf bench" "$2"' _ "${rc}" "${tmp}/usage.txt"
done
ok_if "bench --help" bash -c '"$1" bench --help | grep -q -- "--particles N"' _ "${pbf}"
ok_if "pbf --help lists bench" bash -c '"$1" --help | grep -q "pbf bench"' _ "${pbf}"

echo "${passed} passed, ${failed} failed"
[[ "${failed}" -eq 0 ]]
