#!/usr/bin/env bash
# shellcheck disable=SC2016 # the python snippets below take their arguments from sys.argv
# Devices in the `pbf` command: `pbf devices` lists the CPU; --device (run, view, bench) and the
# scene key "device" choose where the solver runs; a device that is not there is refused with the
# library's message naming it, before anything is written; a checkpoint resumes with --device;
# `pbf bench --device cpu` reports the device memory. On every GPU device `pbf devices` lists
# (OpenCL, CUDA), scenes/quick.json runs to the end with as many frames as on the CPU and density
# errors within 20 % of the CPU run's, and so do 10 frames of it with solver wcsph and dfsph
# (skipped, with a message, when none is listed).
#
#   bash tests/run_devices.sh PATH/TO/pbf PYTHON3
set -uo pipefail # no -e: every check runs and is counted, a failed one does not stop the script

if [[ $# -ne 2 ]]; then
    echo "usage: run_devices.sh PATH/TO/pbf PYTHON3" >&2
    exit 2
fi
pbf="$1"
py="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scene="${here}/../scenes/quick.json"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_devices.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export OMP_WAIT_POLICY=PASSIVE

# shellcheck source=check.sh
source "${here}/check.sh"

# ---- pbf devices ------------------------------------------------------------------------------
rc=0
"${pbf}" devices > "${tmp}/devices.txt" 2> "${tmp}/devices.err" || rc=$?
check "pbf devices exits 0 (got ${rc}: $(cat "${tmp}/devices.err"))" "${rc}"
sed 's/^/     | /' "${tmp}/devices.txt"
s=0; [[ "$(head -n 1 "${tmp}/devices.txt")" == "id "*"name"*"memory"*"units"*"driver" ]] || s=1
check "pbf devices: a header line id, name, memory, units, driver" "${s}"
s=0; [[ "$(sed -n 2p "${tmp}/devices.txt" | awk '{print $1}')" == "cpu" ]] || s=1
check "pbf devices lists cpu first" "${s}"
rc=0
"${pbf}" devices --bogus > /dev/null 2> "${tmp}/devices_bad.err" || rc=$?
s=0; [[ ${rc} -eq 2 ]] && grep -q -- "--bogus" "${tmp}/devices_bad.err" || s=1
check "pbf devices --bogus: usage error (exit ${rc})" "${s}"

# --help texts name the command and the option.
"${pbf}" --help > "${tmp}/help.txt"
s=0; grep -q "pbf devices" "${tmp}/help.txt" && grep -q -- "--device D" "${tmp}/help.txt" || s=1
check "pbf --help documents pbf devices and --device" "${s}"
"${pbf}" bench --help > "${tmp}/bench_help.txt"
s=0; grep -q -- "--device D" "${tmp}/bench_help.txt" || s=1
check "pbf bench --help documents --device" "${s}"
if "${pbf}" view --help > "${tmp}/view_help.txt" 2> /dev/null; then
    s=0; grep -q -- "--device D" "${tmp}/view_help.txt" || s=1
    check "pbf view --help documents --device" "${s}"
fi
s=0; grep -q "frames, threads, device," "${tmp}/help.txt" || s=1
check "pbf run --help: --resume may change the device" "${s}"

# ---- a device that is not there: the library's message, exit 2, nothing written -------------
for dev in nosuch opencl:7.7 cuda:99; do
    out="${tmp}/missing_${dev//[:.]/_}"
    rc=0
    "${pbf}" run "${scene}" --out "${out}" --frames 2 --device "${dev}" > "${tmp}/missing.out" \
        2> "${tmp}/missing.err" || rc=$?
    s=0; [[ ${rc} -eq 2 ]] && grep -q "\"${dev}\"" "${tmp}/missing.err" || s=1
    check "--device ${dev}: exit 2 naming the device (exit ${rc}: $(head -c 300 "${tmp}/missing.err"))" "${s}"
    s=0; [[ ! -e "${out}" ]] || s=1
    check "--device ${dev}: no output directory made" "${s}"
done
# An output directory holding an earlier run is left exactly as it was.
"${pbf}" run "${scene}" --out "${tmp}/earlier" --frames 1 -q
(cd "${tmp}/earlier" && find . -type f -exec sha256sum {} + | sort) > "${tmp}/earlier.sum"
rc=0
"${pbf}" run "${scene}" --out "${tmp}/earlier" --frames 3 --set device=nosuch -q 2> /dev/null || rc=$?
(cd "${tmp}/earlier" && find . -type f -exec sha256sum {} + | sort) > "${tmp}/earlier2.sum"
s=0; [[ ${rc} -eq 2 ]] && cmp -s "${tmp}/earlier.sum" "${tmp}/earlier2.sum" || s=1
check "--set device=nosuch over an earlier run: exit 2 (got ${rc}), its files unchanged" "${s}"

# ---- --device cpu and the scene key ----------------------------------------------------------
"${pbf}" run "${scene}" --out "${tmp}/plain" --frames 4 --threads 2 -q
rc=0
"${pbf}" run "${scene}" --out "${tmp}/cpu" --frames 3 --threads 2 --device cpu > "${tmp}/cpu.out" 2>&1 || rc=$?
check "pbf run --device cpu exits 0 (got ${rc})" "${rc}"
s=0; grep -q "particles on cpu" "${tmp}/cpu.out" || s=1
check "pbf run names the device it runs on" "${s}"
s=0; cmp -s "${tmp}/plain/frame_00003.vtp" "${tmp}/cpu/frame_00003.vtp" || s=1
check "--device cpu: the same frames as the default" "${s}"
sed 's/^{/{\n  "device": "cpu",/' "${scene}" > "${tmp}/scene_cpu.json"
rc=0
"${pbf}" run "${tmp}/scene_cpu.json" --out "${tmp}/key" --frames 3 --threads 2 -q || rc=$?
s=0; cmp -s "${tmp}/plain/frame_00003.vtp" "${tmp}/key/frame_00003.vtp" || s=1
check "scene key \"device\": \"cpu\": exit ${rc}, the same frames" "${s}"
s=0; grep -q '"device": *"cpu"' "${tmp}/key/scene.json" || s=1
check "OUT/scene.json records the device" "${s}"

# ---- checkpoints resume on another device (here: the device named again) --------------------
"${pbf}" run "${scene}" --out "${tmp}/ck" --frames 2 --threads 2 --checkpoint-every 1 -q
rc=0
"${pbf}" run --resume "${tmp}/ck" --frames 3 --device cpu -q 2> "${tmp}/resume.err" || rc=$?
check "--resume DIR --device cpu exits 0 (got ${rc}: $(head -c 300 "${tmp}/resume.err"))" "${rc}"
rc=0
"${pbf}" run --resume "${tmp}/ck" --frames 4 --set device=cpu --set threads=1 -q \
    2> "${tmp}/resume2.err" || rc=$?
check "--resume DIR --set device=cpu exits 0 (got ${rc}: $(head -c 300 "${tmp}/resume2.err"))" "${rc}"
s=0; cmp -s "${tmp}/plain/frame_00004.vtp" "${tmp}/ck/frame_00004.vtp" &&
    [[ $(wc -l < "${tmp}/ck/stats.jsonl") -eq 5 ]] || s=1
check "the resumed run ends bit-identical to the uninterrupted one" "${s}"

# ---- pbf bench --device ----------------------------------------------------------------------
rc=0
"${pbf}" bench --particles 500 --steps 3 --warmup 1 --threads 1 --device cpu \
    --json "${tmp}/bench.json" > "${tmp}/bench.txt" 2> "${tmp}/bench.err" || rc=$?
check "pbf bench --device cpu exits 0 (got ${rc}: $(tail -n 1 "${tmp}/bench.err"))" "${rc}"
s=0; grep -q "^device cpu" "${tmp}/bench.txt" && grep -q "^device memory" "${tmp}/bench.txt" || s=1
check "pbf bench: the table names the device and has the device memory" "${s}"
rc=0
"${py}" - "${tmp}/bench.json" <<'EOF' || rc=$?
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settings"]["device"] == "cpu", d["settings"]
for r in d["runs"]:
    assert r["ok"] and r["device"] == "cpu", r
    m = r["device_memory"]
    assert m["backend"] == "cpu", m
    assert m["bytes_per_particle"] > 0 and m["grid_bytes"] > 0, m
    assert m["total_bytes"] >= m["bytes_per_particle"] * r["particles"] + m["grid_bytes"] - 1, m
    assert r["rss_peak_kib"] > 0 and "rss_bytes_per_particle" in r, r
    for s in ("predict", "grid", "lambda", "delta_p", "collide", "velocity", "stats", "total"):
        assert r["stages_ms"][s] >= 0, (s, r["stages_ms"])
EOF
check "pbf bench --device cpu JSON: device, device_memory, rss and stage fields" "${rc}"
rc=0
"${pbf}" bench --particles 500 --steps 1 --warmup 0 --device nosuch -q > /dev/null \
    2> "${tmp}/bench_bad.err" || rc=$?
s=0; [[ ${rc} -eq 2 ]] && grep -q '"nosuch"' "${tmp}/bench_bad.err" || s=1
check "pbf bench --device nosuch: exit 2 naming it (got ${rc}: $(head -c 200 "${tmp}/bench_bad.err"))" "${s}"

# ---- every GPU device listed: quick.json against the CPU -------------------------------------
"${pbf}" run "${scene}" --out "${tmp}/ref" -q
for kind in opencl cuda; do
    if ! awk 'NR > 1 {print $1}' "${tmp}/devices.txt" | grep -q "^${kind}:"; then
        echo "skip ${kind}: pbf devices lists no ${kind} device ($(grep "^note: ${kind}" "${tmp}/devices.txt" || echo "none"))"
        continue
    fi
    rc=0
    "${pbf}" run "${scene}" --out "${tmp}/${kind}" --device "${kind}" -q 2> "${tmp}/${kind}.err" || rc=$?
    check "quick.json --device ${kind} exits 0 (got ${rc}: $(head -c 300 "${tmp}/${kind}.err"))" "${rc}"
    rc=0
    "${py}" - "${tmp}/ref/stats.jsonl" "${tmp}/${kind}/stats.jsonl" <<'EOF' || rc=$?
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1])]
gpu = [json.loads(l) for l in open(sys.argv[2])]
assert len(cpu) == len(gpu), ("frames", len(cpu), len(gpu))
def close(a, b):  # within 20 % of the CPU value (0.01 percentage points for values near 0)
    return abs(a - b) <= 0.2 * abs(a) + 0.01
for c, g in zip(cpu, gpu):
    assert g["nonfinite"] == 0 and g["escaped"] == 0, g
    assert c["particles"] == g["particles"], (c, g)
    assert close(c["density_error_avg"], g["density_error_avg"]), ("avg", c, g)
mean = lambda rows, k: sum(r[k] for r in rows) / len(rows)
assert close(mean(cpu, "density_error_max"), mean(gpu, "density_error_max")), \
    ("mean of max", mean(cpu, "density_error_max"), mean(gpu, "density_error_max"))
print("     %s: %d frames, mean density error avg %.4f%% (cpu %.4f%%), mean max %.4f%% (cpu %.4f%%)"
      % (sys.argv[2].split("/")[-2], len(gpu), mean(gpu, "density_error_avg"),
         mean(cpu, "density_error_avg"), mean(gpu, "density_error_max"),
         mean(cpu, "density_error_max")))
EOF
    check "--device ${kind}: the frames of the CPU run, density errors within 20 % of its" "${rc}"
    for solver in wcsph dfsph; do
        [[ -d "${tmp}/ref_${solver}" ]] ||
            "${pbf}" run "${scene}" --out "${tmp}/ref_${solver}" --frames 10 --set "solver=${solver}" -q
        rc=0
        "${pbf}" run "${scene}" --out "${tmp}/${kind}_${solver}" --frames 10 --device "${kind}" \
            --set "solver=${solver}" -q 2> "${tmp}/${kind}_${solver}.err" || rc=$?
        check "quick.json --set solver=${solver} --device ${kind} exits 0 (got ${rc}: $(head -c 300 "${tmp}/${kind}_${solver}.err"))" "${rc}"
        rc=0
        "${py}" - "${tmp}/ref_${solver}/stats.jsonl" "${tmp}/${kind}_${solver}/stats.jsonl" <<'EOF' || rc=$?
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1])]
gpu = [json.loads(l) for l in open(sys.argv[2])]
assert len(cpu) == len(gpu) == 11, ("frames", len(cpu), len(gpu))
close = lambda a, b: abs(a - b) <= 0.2 * abs(a) + 0.01
for c, g in zip(cpu, gpu):
    assert g["nonfinite"] == 0 and g["escaped"] == 0, g
    assert c["particles"] == g["particles"], (c, g)
    assert close(c["density_error_avg"], g["density_error_avg"]), ("avg", c, g)
    assert close(c["solver_error"], g["solver_error"]), ("solver_error", c, g)
    assert g["frame"] == 0 or g["substeps"] >= 1, g
print("     %s: last frame density error avg %.4f%% (cpu %.4f%%), %d substeps (cpu %d), "
      "%d iterations (cpu %d)" % (sys.argv[2].split("/")[-2], gpu[-1]["density_error_avg"],
      cpu[-1]["density_error_avg"], gpu[-1]["substeps"], cpu[-1]["substeps"],
      gpu[-1]["iterations"], cpu[-1]["iterations"]))
EOF
        check "--device ${kind} --set solver=${solver}: 10 frames close to the CPU run's" "${rc}"
    done
    sed "s/^{/{\n  \"device\": \"${kind}\",/" "${scene}" > "${tmp}/scene_${kind}.json"
    rc=0
    "${pbf}" run "${tmp}/scene_${kind}.json" --out "${tmp}/${kind}_key" --frames 1 \
        > "${tmp}/${kind}_key.out" 2>&1 || rc=$?
    s=0; [[ ${rc} -eq 0 ]] && grep -q "particles on ${kind}" "${tmp}/${kind}_key.out" || s=1
    check "scene key \"device\": \"${kind}\" runs on ${kind} (exit ${rc})" "${s}"
    rc=0
    "${pbf}" bench --particles 500 --steps 3 --warmup 1 --device "${kind}" -q \
        --json "${tmp}/bench_${kind}.json" > /dev/null 2>&1 || rc=$?
    "${py}" -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]; m = r["device_memory"]; assert r["ok"] and m["backend"] == sys.argv[2] and m["bytes_per_particle"] > 0, r' \
        "${tmp}/bench_${kind}.json" "${kind}" || rc=1
    check "pbf bench --device ${kind}: device memory of the ${kind} backend" "${rc}"
done

echo "devices: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
