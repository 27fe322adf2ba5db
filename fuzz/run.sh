#!/usr/bin/env bash
# Bounded fuzzing of the scene parser and the checkpoint reader with libFuzzer (clang):
# configures and builds BUILD_DIR (default build-fuzz) with -DPBF_FUZZ=ON, makes the seed corpora
# (scenes/, tests/bad_scenes/, tests/resilience/ for scenes; checkpoints written by a short run for
# checkpoints), runs each harness for SECONDS (default 60) and prints its number of executions.
# Any crash, leak, sanitizer report or timeout fails (the input is saved in BUILD_DIR/fuzz/).
#
#   bash fuzz/run.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${1:-60}"
build="${2:-build-fuzz}"

cmake -S . -B "${build}" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPBF_FUZZ=ON -DPBF_OPENCL=OFF -DPBF_CUDA=OFF -DPBF_OPENVDB=OFF \
    -DBUILD_TESTING=OFF > /dev/null
cmake --build "${build}" -j2 --target fuzz_scene fuzz_checkpoint pbf_cli

work="${build}/fuzz"
rm -rf "${work}/seeds_scene" "${work}/seeds_checkpoint"
mkdir -p "${work}/seeds_scene" "${work}/seeds_checkpoint" "${work}/corpus_scene" \
    "${work}/corpus_checkpoint" "${work}/artifacts"
for f in scenes/*.json tests/bad_scenes/*.json tests/resilience/*.json; do
    [[ -f "${f}" ]] && cp "${f}" "${work}/seeds_scene/"
done
# checkpoints of a real run (the ASan build of pbf; its leak check is not the point here)
seed_out="${work}/seed_run"
rm -rf "${seed_out}"
ASAN_OPTIONS=detect_leaks=0 OMP_WAIT_POLICY=PASSIVE "${build}/pbf" run tests/resilience/drop.json \
    --out "${seed_out}" --frames 3 --checkpoint-every 1 --threads 1 -q
cp "${seed_out}"/checkpoint_*.pbfck "${work}/seeds_checkpoint/"
ASAN_OPTIONS=detect_leaks=0 OMP_WAIT_POLICY=PASSIVE "${build}/pbf" run tests/bad_scenes/base_valid.json \
    --out "${seed_out}" --frames 1 --checkpoint-every 1 --threads 1 -q
cp "${seed_out}/checkpoint_00001.pbfck" "${work}/seeds_checkpoint/base_valid_1.pbfck"
rm -rf "${seed_out}"

total=0
for name in scene checkpoint; do
    log="${work}/fuzz_${name}.log"
    echo "---- fuzz_${name}: ${secs} s"
    rc=0
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 OMP_WAIT_POLICY=PASSIVE \
        "${build}/fuzz/fuzz_${name}" -max_total_time="${secs}" -timeout=20 -rss_limit_mb=2560 \
        -max_len=131072 -print_final_stats=1 -artifact_prefix="${work}/artifacts/${name}-" \
        "${work}/corpus_${name}" "${work}/seeds_${name}" > "${log}" 2>&1 || rc=$?
    runs=$(sed -n 's/^Done \([0-9]*\) runs in .*/\1/p' "${log}" | tail -n 1)
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus)' "${log}" || true
    if [[ ${rc} -ne 0 ]]; then
        echo "FAIL fuzz_${name}: exit ${rc}; the end of ${log}:"
        tail -n 60 "${log}"
        exit 1
    fi
    echo "fuzz_${name}: ${runs:-?} executions, no crash"
    total=$((total + ${runs:-0}))
done
echo "fuzz: ${total} executions in total"
