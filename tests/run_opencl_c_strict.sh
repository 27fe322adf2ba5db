#!/usr/bin/env bash
# The kernel source as strict OpenCL C 1.2: what NVIDIA's OpenCL compiler accepts, not only what
# PoCL (clang, with its extensions) does. clang's OpenCL front end with -Werror=pedantic refuses
# the extensions a driver's compiler may refuse (variadic macros, for one, which NVIDIA's driver
# rejects). Each configuration the OpenCL backend builds: a GPU's (one candidate at a time, no
# lists) and a CPU device's (8-wide blocks, all lanes, lists), with and without fp64 cells.
#
#   bash tests/run_opencl_c_strict.sh PATH/TO/opencl_source_dump CLANG
set -uo pipefail
if [[ $# -ne 2 ]]; then
    echo "usage: run_opencl_c_strict.sh PATH/TO/opencl_source_dump CLANG" >&2
    exit 2
fi
dump="$1"
clang="$2"
if ! command -v "${clang}" > /dev/null 2>&1; then
    echo "skipped: ${clang} is not on this machine"
    exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_clstrict.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
"${dump}" > "${tmp}/k.cl" || { echo "FAIL: could not write the kernel source"; exit 1; }
fails=0
for cfg in "-DPBF_TEST_BLOCK=1u -DPBF_LANES_ALL=0 -DPBF_LISTS=0" \
           "-DPBF_TEST_BLOCK=8u -DPBF_LANES_ALL=1 -DPBF_LISTS=1" \
           "-DPBF_TEST_BLOCK=1u -DPBF_LANES_ALL=0 -DPBF_LISTS=0 -DPBF_CELL_FP64=1"; do
    for lanes in 4 8; do
        # shellcheck disable=SC2086 # cfg holds several options
        if "${clang}" -x cl -cl-std=CL1.2 -fsyntax-only -Xclang -finclude-default-header \
               -D__OPENCL_VERSION__=120 -DPBF_LANES=${lanes} ${cfg} -DPBF_SCAN_WG=256 \
               -DPBF_STATS_WG=256 -Wpedantic -Werror=pedantic -Wno-unused-function \
               "${tmp}/k.cl" > "${tmp}/log" 2>&1; then
            echo "ok   OpenCL C 1.2, strict: PBF_LANES=${lanes} ${cfg}"
        else
            echo "FAIL OpenCL C 1.2, strict: PBF_LANES=${lanes} ${cfg}"
            grep -E "error" "${tmp}/log" | head -n 10 | sed 's/^/     | /'
            fails=$((fails + 1))
        fi
    done
done
[[ ${fails} -eq 0 ]]
