#!/usr/bin/env bash
# Runs `pbf run` on every malformed scene and bad command line of tests/bad_scenes/expected.tsv
# and checks: the exit code, a substring of the message on stderr (which must start "pbf: "),
# no crash or sanitizer report, and that no frame file was written.
#
#   bash tests/run_bad_scenes.sh PATH/TO/pbf
set -u

if [[ $# -ne 1 ]]; then
    echo "usage: run_bad_scenes.sh PATH/TO/pbf" >&2
    exit 2
fi
pbf="$1"
if [[ "${pbf}" != /* ]]; then pbf="$(pwd)/${pbf}"; fi
if [[ ! -x "${pbf}" ]]; then
    echo "run_bad_scenes.sh: ${pbf} is not an executable" >&2
    exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${here}/bad_scenes"
table="${dir}/expected.tsv"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_bad_scenes.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

# Fixtures that are not kept in git: a file over the 16 MiB limit, a named pipe, a regular file
# where the output directory should be.
truncate -s 17M "${tmp}/huge.json"
mkfifo "${tmp}/fifo.json"
echo "not a directory" > "${tmp}/afile"

run_timeout=()
if command -v timeout > /dev/null 2>&1; then run_timeout=(timeout 120); fi

mem_kib="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2> /dev/null || echo 0)"
mem_kib="${mem_kib:-0}"

cd "${dir}" || exit 2
passed=0
failed=0
n=0
declare -A listed=()
while IFS=$'\t' read -r file code want args || [[ -n "${file}" ]]; do
    [[ -z "${file}" || "${file}" == \#* ]] && continue
    n=$((n + 1))
    file="${file//\{TMP\}/${tmp}}"
    want="${want//\{TMP\}/${tmp}}"
    args="${args:-}"
    args="${args//\{TMP\}/${tmp}}"
    listed["${file}"]=1
    # The memory-limit scene asks for ~2e9 particles (~134 GiB at 72 bytes each): only a
    # machine with less memory than that refuses it, so skip it on big machines.
    if [[ "${file}" == too_much_memory.json && ${mem_kib} -gt $((64 * 1024 * 1024)) ]]; then
        echo "skip ${file}: this machine has $((mem_kib / 1024 / 1024)) GiB of memory"
        continue
    fi
    out="${tmp}/run${n}/out"
    mkdir -p "${tmp}/run${n}"
    # shellcheck disable=SC2086  # extra arguments are split on spaces on purpose
    "${run_timeout[@]}" "${pbf}" run "${file}" --out "${out}" ${args} \
        > "${tmp}/run${n}/stdout" 2> "${tmp}/run${n}/stderr"
    rc=$?
    err="$(cat "${tmp}/run${n}/stderr")"
    problem=""
    if [[ ${rc} -ge 124 ]]; then
        problem="crashed or timed out (exit ${rc})"
    elif [[ "${rc}" != "${code}" ]]; then
        problem="exit ${rc}, expected ${code}"
    elif [[ "${err}" != *"${want}"* ]]; then
        problem="message lacks \"${want}\""
    elif [[ "${err}" != "pbf: "* ]]; then
        problem="message does not start with \"pbf: \""
    elif [[ "${err}" == *"Sanitizer"* || "${err}" == *"runtime error:"* ]]; then
        problem="sanitizer report"
    fi
    frames="$(find "${tmp}" -name 'frame_*' 2> /dev/null | head -n 3)"
    if [[ -z "${problem}" && -n "${frames}" ]]; then
        problem="frames were written: ${frames//$'\n'/ }"
    fi
    if [[ -n "${problem}" ]]; then
        failed=$((failed + 1))
        echo "FAIL ${file} ${args}: ${problem}"
        echo "     stderr: ${err}"
    else
        passed=$((passed + 1))
        echo "ok   ${file} ${args} -> ${rc}: ${err}"
    fi
    find "${tmp}" -name 'frame_*' -delete 2> /dev/null
done < "${table}"

# Every scene file of the directory must be in the table (base_valid.json is the valid base of the
# command-line cases).
for f in *.json; do
    if [[ -z "${listed[${f}]:-}" ]]; then
        failed=$((failed + 1))
        echo "FAIL ${f}: not listed in expected.tsv"
    fi
done

echo "bad_scenes: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
