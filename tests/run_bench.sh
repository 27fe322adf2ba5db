#!/usr/bin/env bash
# shellcheck disable=SC2016 # the bash -c snippets below take their arguments as "$1", "$2"
# `pbf bench` (app/bench/bench.c) on tiny runs: the standard cases have the peer's particle counts,
# --particles rounds up to a cube, the JSON has the documented fields, 1 and 2 threads give the
# same final state (same density error) and a speed-up, the stage limits (app/bench/bench_limits.c)
# are there with shares in range and a work model that follows the iteration count, --json - is
# clean JSON on stdout, and bad options are usage errors (exit 2). Timings themselves are not
# checked.
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

# Stage limits: the machine measured at both thread counts; every stage modelled, the neighbour
# passes' shares of the bandwidth and of the peak in (0, 100 %] (a small margin for a busy
# machine's measurement), and the same model (neighbours, bytes, flops) for both thread counts.
rc=0
"${py}" - "${tmp}/b.json" <<'EOF' || rc=$?
import json, sys
d = json.load(open(sys.argv[1]))
m = d["machine_limits"]
assert m["measured"] is True, m
assert [e["threads"] for e in m["by_threads"]] == [1, 2], m
for e in m["by_threads"]:
    assert e["triad_gb_per_s"] > 0 and e["peak_gflop_per_s"] > 0, e
assert m["triad_array_bytes"] >= 64 * 1024 * 1024 and m["triad_bytes_per_element"] == 24, m
assert m["vector_lanes"] in (4, 8) and m["accumulators"] >= 8, m
assert "stage_limits_note" in d["settings"]
stages = ("predict", "grid", "lambda", "delta_p", "collide", "velocity", "stats")
keys = ("ms", "passes_per_step", "bytes_per_step", "flops_per_step", "gb_per_s",
        "bandwidth_pct", "gflop_per_s", "peak_pct", "bound", "flops_per_neighbour_pass",
        "flops_per_particle_pass", "bytes_per_neighbour_pass", "bytes_per_particle_pass",
        "bytes_per_cell_pass")
models = []
for r in d["runs"]:
    sl = r["stage_limits"]
    assert sl is not None, r
    # a lattice block: between 1 (alone) and 27 within 2 spacings (33 with the 6 at 2 spacings
    # that rounding may admit)
    assert 1 < sl["neighbours_per_particle"] <= 33, sl
    assert abs(sl["neighbour_pairs"] - sl["neighbours_per_particle"] * 512) < 1e-6, sl
    assert set(sl["stages"]) == set(stages), sl["stages"].keys()
    for s in stages:
        st = sl["stages"][s]
        assert all(k in st for k in keys), (s, st)
        assert st["ms"] == r["stages_ms"][s], (s, st, r["stages_ms"])
        assert st["bound"] in ("memory", "compute", "latency/other", "none"), st
        if s != "collide":  # PBF's collide is a swap of buffers: no work
            assert st["bytes_per_step"] > 0 and st["flops_per_step"] > 0, (s, st)
    for s in ("lambda", "delta_p", "velocity"):
        st = sl["stages"][s]
        for k in ("bandwidth_pct", "peak_pct"):
            assert 0 < st[k] <= 120, (r["threads"], s, k, st)
        assert st["bound"] != "none", st
    assert sl["stages"]["lambda"]["passes_per_step"] == 4, sl
    assert sl["stages"]["collide"]["bound"] == "none", sl
    models.append([(sl["stages"][s]["bytes_per_step"], sl["stages"][s]["flops_per_step"])
                   for s in stages])
assert models[0] == models[1], models
EOF
check "stage limits: machine measured, every stage modelled, shares in (0, 100 %]" "${rc}"
ok_if "the table has the machine's limits and the stage-limits table" \
    bash -c 'grep -q "^memory bandwidth (STREAM triad" "$1" && grep -q "^peak float throughput" "$1" &&
             grep -q "^stage limits" "$1" &&
             grep -Eq "^custom  *2 lambda .*(memory|compute|latency/other)$" "$1"' _ "${tmp}/table.txt"

# The model's work follows the iteration count: lambda and delta p run once per iteration, the
# work per pass is the same per neighbour and per particle, and the work per step is passes x
# (neighbour pairs x per neighbour + particles x per particle); predict runs once either way.
for it in 2 4; do
    rc=0
    "${pbf}" bench --particles 500 --steps 1 --warmup 0 --threads 1 --iterations "${it}" -q \
        --json "${tmp}/it${it}.json" >/dev/null 2>&1 || rc=$?
    check "bench --iterations ${it} exits 0" "${rc}"
done
rc=0
"${py}" - "${tmp}/it2.json" "${tmp}/it4.json" <<'EOF' || rc=$?
import json, sys
a, b = (json.load(open(f))["runs"][0]["stage_limits"] for f in sys.argv[1:3])
for sl, it in ((a, 2), (b, 4)):
    n, pairs = 512, sl["neighbour_pairs"]
    assert pairs > n, sl
    for s, passes in (("lambda", it), ("delta_p", it), ("predict", 1)):
        st = sl["stages"][s]
        assert st["passes_per_step"] == passes, (it, s, st)
        for k, per_nb, per_p in (("flops_per_step", "flops_per_neighbour_pass",
                                  "flops_per_particle_pass"),
                                 ("bytes_per_step", "bytes_per_neighbour_pass",
                                  "bytes_per_particle_pass")):
            want = passes * (st[per_nb] * pairs + st[per_p] * n)
            assert want > 0 and abs(st[k] / want - 1) < 1e-12, (it, s, k, st)
for s in ("lambda", "delta_p", "predict"):
    for k in ("flops_per_neighbour_pass", "flops_per_particle_pass", "bytes_per_neighbour_pass",
              "bytes_per_particle_pass"):
        assert a["stages"][s][k] == b["stages"][s][k], (s, k, a["stages"][s], b["stages"][s])
# the neighbour passes' flops: about 30 per neighbour (distance, kernels, sums)
assert 25 <= a["stages"]["lambda"]["flops_per_neighbour_pass"] <= 40, a["stages"]["lambda"]
EOF
check "the model's lambda and delta_p work doubles with the iterations (2 -> 4)" "${rc}"

# --no-limits: nothing measured, no model, and the table and the JSON say so.
rc=0
"${pbf}" bench --particles 500 --steps 1 --warmup 0 --threads 1 --no-limits -q \
    --json "${tmp}/nl.json" >"${tmp}/nl.txt" 2>&1 || rc=$?
check "bench --no-limits exits 0" "${rc}"
rc=0
"${py}" - "${tmp}/nl.json" <<'EOF' || rc=$?
import json, sys
d = json.load(open(sys.argv[1]))
assert d["machine_limits"] == {"measured": False, "reason": "--no-limits"}, d["machine_limits"]
assert d["runs"][0]["stage_limits"] is None, d["runs"][0]
EOF
check "--no-limits: machine_limits not measured, stage_limits null" "${rc}"
ok_if "--no-limits: the table says why there are no stage limits" \
    bash -c 'grep -q "^stage limits: not shown (--no-limits)" "$1" && ! grep -q "^memory bandwidth" "$1"' \
    _ "${tmp}/nl.txt"
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
for args in "--bogus" "--no-limits=1" "--case huge" "--threads 0" "--threads 1,,2" "--particles 0" \
    "--particles 1000000001" "--dt 0" "--steps x" "--set nope=1" "--set particle_radius=0.03"; do
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
