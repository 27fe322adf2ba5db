#!/usr/bin/env bash
# Performance regression guard: counts the instructions (Ir) that a small fixed `pbf bench` run
# executes under valgrind --tool=callgrind and compares them with bench/callgrind_baseline.txt.
# Fails (exit 1) when either count grows by more than 10 %:
#   total  every instruction of the process (start-up, world creation with its wall tables, steps)
#   step   inclusive cost of pbf_world_step (the solver alone: 1 warm-up + 5 measured steps)
# Instruction counts do not depend on the machine's load, so this runs in CI on a busy machine.
#
#   bash bench/callgrind_guard.sh            check against the baseline
#   bash bench/callgrind_guard.sh --update   rewrite the baseline (after an intended change)
#
# Build configuration (the baseline must come from the same one): gcc (the default cc), CMake
# Release, -DPBF_NATIVE=OFF, in build-callgrind/ (built here if needed, target pbf_cli only).
# Not the README's default -march=native build: valgrind 3.19 cannot run AVX-512 code, and
# native code would make the counts depend on the CPU. Counts still depend on the compiler and
# libc versions (the baseline records them and a mismatch is reported); Debian 12 is the
# reference. Override the build directory with PBF_CALLGRIND_BUILD=DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

baseline="${root}/bench/callgrind_baseline.txt"
build="${PBF_CALLGRIND_BUILD:-build-callgrind}"
limit_pct=10
bench_args=(bench --particles 2000 --steps 5 --warmup 1 --threads 1 --no-limits -q)

update=0
case "${1:-}" in
    "") ;;
    --update) update=1 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "callgrind_guard.sh: unknown option $1 (--update, --help)" >&2; exit 2 ;;
esac

command -v valgrind >/dev/null || { echo "callgrind_guard: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
command -v callgrind_annotate >/dev/null || { echo "callgrind_guard: callgrind_annotate not found (valgrind package)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
if ! { cmake -S . -B "${build}" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release -DPBF_NATIVE=OFF -DPBF_OPENCL=OFF -DPBF_CUDA=OFF &&
    cmake --build "${build}" -j2 --target pbf_cli; } >"${work}/build.log" 2>&1; then
    cat "${work}/build.log" >&2
    echo "callgrind_guard: the build in ${build}/ failed" >&2
    exit 1
fi

compiler="$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "${build}/CMakeCache.txt")"
compiler_version="$("${compiler:-cc}" --version | head -n1)"
valgrind_version="$(valgrind --version)"

OMP_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="${work}/callgrind.out" \
    "${build}/pbf" "${bench_args[@]}" >"${work}/stdout" 2>"${work}/stderr" || {
    cat "${work}/stderr" >&2
    echo "callgrind_guard: the run failed" >&2
    exit 1
}
total="$(awk '/^totals:/ {print $2}' "${work}/callgrind.out" | tail -n1)"
[[ -n "${total}" ]] || total="$(awk '/^summary:/ {print $2}' "${work}/callgrind.out" | tail -n1)"
step="$(callgrind_annotate --inclusive=yes "${work}/callgrind.out" 2>/dev/null |
    awk '/[: ]pbf_world_step[ \[]/ {gsub(",", "", $1); print $1; exit}')"
if [[ -z "${total}" || -z "${step}" ]]; then
    echo "callgrind_guard: could not read the counts (total '${total}', pbf_world_step '${step}')" >&2
    exit 1
fi

if [[ "${update}" == 1 ]]; then
    cat >"${baseline}" <<EOF
# Baseline of bench/callgrind_guard.sh: instructions (Ir) under valgrind --tool=callgrind of
#   pbf ${bench_args[*]}
# built gcc Release -DPBF_NATIVE=OFF. Regenerate with: bash bench/callgrind_guard.sh --update
total ${total}
step ${step}
compiler ${compiler_version}
valgrind ${valgrind_version}
date $(date -u +%Y-%m-%d)
EOF
    echo "callgrind_guard: baseline written to bench/callgrind_baseline.txt: total ${total} Ir, pbf_world_step ${step} Ir"
    exit 0
fi

[[ -f "${baseline}" ]] || { echo "callgrind_guard: no baseline ${baseline}; make one with --update" >&2; exit 2; }
base_total="$(awk '$1 == "total" {print $2}' "${baseline}")"
base_step="$(awk '$1 == "step" {print $2}' "${baseline}")"
base_compiler="$(sed -n 's/^compiler //p' "${baseline}")"
if [[ "${base_compiler}" != "${compiler_version}" ]]; then
    echo "callgrind_guard: note: the baseline was taken with '${base_compiler}', this build uses '${compiler_version}'"
fi

fail=0
check() { # name now base
    local pct verdict
    pct="$(awk -v n="$2" -v b="$3" 'BEGIN { printf "%+.2f", 100 * (n - b) / b }')"
    verdict="ok"
    if awk -v n="$2" -v b="$3" -v l="${limit_pct}" 'BEGIN { exit !(n > b * (1 + l / 100)) }'; then
        verdict="FAIL: more than ${limit_pct} % above the baseline"
        fail=1
    elif awk -v n="$2" -v b="$3" -v l="${limit_pct}" 'BEGIN { exit !(n < b * (1 - l / 100)) }'; then
        verdict="ok, faster: consider bash bench/callgrind_guard.sh --update"
    fi
    printf 'callgrind_guard: %-16s %14s Ir, baseline %14s (%s %%): %s\n' "$1" "$2" "$3" "${pct}" "${verdict}"
}
check "total" "${total}" "${base_total}"
check "pbf_world_step" "${step}" "${base_step}"
if [[ "${fail}" == 1 ]]; then
    echo "callgrind_guard: instruction count regression. If intended (more work per step for a"
    echo "  reason), update the baseline: bash bench/callgrind_guard.sh --update"
    exit 1
fi
