#!/usr/bin/env bash
# Runs `pbf run` on every malformed scene, bad command line and bad checkpoint of
# tests/bad_scenes/expected.tsv and checks: the exit code, a substring of the message on stderr
# (which must start "pbf: "; a substring ending in "$" must end the message), no crash, hang
# (60 s timeout per case) or sanitizer report, and that no frame file was written.
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

# Generated hostile scenes: 1 MiB key, 1 MiB string where a number belongs, arrays nested 50000
# deep, 100001 fluid blocks.
base_start='{"domain_min": [0, 0, 0], "domain_max": [0.4, 0.4, 0.4], "particle_radius": 0.02,'
base_fluid='"fluid": [{"min": [0, 0, 0], "max": [0.2, 0.2, 0.2]}]'
mib="$(head -c 1048576 /dev/zero | tr '\0' 'k')"
printf '%s "%s": 1, %s}\n' "${base_start}" "${mib}" "${base_fluid}" > "${tmp}/long_key.json"
printf '%s "relaxation": "%s", %s}\n' "${base_start}" "${mib}" "${base_fluid}" > "${tmp}/long_string.json"
unset mib
{
    printf '{"fluid": '
    head -c 50000 /dev/zero | tr '\0' '['
    head -c 50000 /dev/zero | tr '\0' ']'
    printf '}\n'
} > "${tmp}/deep_nesting.json"
{
    printf '%s "fluid": [' "${base_start}"
    for ((k = 0; k < 100000; ++k)); do printf '{},'; done
    printf '{}]}\n'
} > "${tmp}/many_blocks.json"

# Output paths where a directory stands in for a file pbf writes.
mkdir -p "${tmp}/stats_is_dir/stats.jsonl" "${tmp}/frame_is_dir/frame_00000.vtp" \
    "${tmp}/scene_is_dir/scene.json"

# Checkpoint fixtures for --resume: a good run of base_valid.json (checkpoints of frames 1 and 2,
# no frame files kept), copied and damaged. ck_write DIR OFFSET HEX-BYTES overwrites bytes in
# every checkpoint of DIR.
export OMP_WAIT_POLICY=PASSIVE
if ! "${pbf}" run "${dir}/base_valid.json" --out "${tmp}/ck_good" --frames 2 --checkpoint-every 1 \
    --threads 1 -q > "${tmp}/ck_setup.log" 2>&1; then
    echo "FAIL setup: the checkpoint fixture run failed: $(cat "${tmp}/ck_setup.log")"
    exit 1
fi
rm -f "${tmp}/ck_good"/frame_*
ck_copy() { rm -rf "${tmp}/$1" && cp -r "${tmp}/ck_good" "${tmp}/$1"; }
ck_write() {
    local f
    for f in "${tmp}/$1"/checkpoint_*.pbfck; do
        printf "$3" | dd of="${f}" bs=1 seek="$2" conv=notrunc 2> /dev/null
    done
}
ck_copy ck_no_scene && rm -f "${tmp}/ck_no_scene/scene.json"
ck_copy ck_scene_dir && rm -f "${tmp}/ck_scene_dir/scene.json" && mkdir "${tmp}/ck_scene_dir/scene.json"
ck_copy ck_scene_bad && echo '{"frames": 1,' > "${tmp}/ck_scene_bad/scene.json"
ck_copy ck_truncated && for f in "${tmp}/ck_truncated"/checkpoint_*; do truncate -s 100 "${f}"; done
ck_copy ck_short && for f in "${tmp}/ck_short"/checkpoint_*; do truncate -s 5 "${f}"; done
ck_copy ck_empty && for f in "${tmp}/ck_empty"/checkpoint_*; do truncate -s 0 "${f}"; done
ck_copy ck_too_long && for f in "${tmp}/ck_too_long"/checkpoint_*; do printf 'x' >> "${f}"; done
ck_copy ck_bitflip && ck_write ck_bitflip 300 '\x55'
ck_copy ck_magic && ck_write ck_magic 0 'PBFCKPTX'
ck_copy ck_version && ck_write ck_version 8 '\x63\x00\x00\x00'
ck_copy ck_version0 && ck_write ck_version0 8 '\x00\x00\x00\x00'
ck_copy ck_endian && ck_write ck_endian 12 '\x01\x02\x03\x04'
ck_copy ck_header_size && ck_write ck_header_size 16 '\x20\x00\x00\x00'
ck_copy ck_count_huge && ck_write ck_count_huge 20 '\xff\xff\xff\x7f'
ck_copy ck_count_negative && ck_write ck_count_negative 20 '\xff\xff\xff\xff'
ck_copy ck_garbage && for f in "${tmp}/ck_garbage"/checkpoint_*; do head -c 4000 /dev/urandom > "${f}"; done
ck_copy ck_dir && rm -f "${tmp}/ck_dir"/checkpoint_* && mkdir "${tmp}/ck_dir/checkpoint_00002.pbfck"
ck_copy ck_stats_dir && rm -f "${tmp}/ck_stats_dir/stats.jsonl" && mkdir "${tmp}/ck_stats_dir/stats.jsonl"
# checkpoints of another scene (particle_radius 0.025) next to this scene.json
"${pbf}" run "${dir}/base_valid.json" --out "${tmp}/ck_other_src" --frames 2 --checkpoint-every 1 \
    --threads 1 -q --set particle_radius=0.025 > /dev/null 2>&1
ck_copy ck_other && rm -f "${tmp}/ck_other"/checkpoint_* && cp "${tmp}/ck_other_src"/checkpoint_* "${tmp}/ck_other/"
rm -rf "${tmp}/ck_other_src"

run_timeout=()
if command -v timeout > /dev/null 2>&1; then run_timeout=(timeout -k 5 60); fi

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
    # Same for max_particles 2147483647 (~144 GiB).
    if [[ "${file}" == max_particles_beyond_memory.json && ${mem_kib} -gt $((128 * 1024 * 1024)) ]]; then
        echo "skip ${file}: this machine has $((mem_kib / 1024 / 1024)) GiB of memory"
        continue
    fi
    out="${tmp}/run${n}/out"
    mkdir -p "${tmp}/run${n}"
    # shellcheck disable=SC2086  # extra arguments are split on spaces on purpose
    if [[ "${file}" == "-" ]]; then
        # no scene file and no --out: command lines such as --resume DIR
        "${run_timeout[@]}" "${pbf}" run ${args} \
            > "${tmp}/run${n}/stdout" 2> "${tmp}/run${n}/stderr"
    elif [[ "${file}" == "+" ]]; then
        # no command: `pbf ARGS`, options of the default run
        "${run_timeout[@]}" "${pbf}" ${args} \
            > "${tmp}/run${n}/stdout" 2> "${tmp}/run${n}/stderr"
    else
        "${run_timeout[@]}" "${pbf}" run "${file}" --out "${out}" ${args} \
            > "${tmp}/run${n}/stdout" 2> "${tmp}/run${n}/stderr"
    fi
    rc=$?
    err="$(cat "${tmp}/run${n}/stderr")"
    anchored=0
    if [[ "${want}" == *'$' ]]; then
        anchored=1
        want="${want%'$'}"
    fi
    problem=""
    if [[ ${rc} -ge 124 ]]; then
        problem="crashed or timed out (exit ${rc})"
    elif [[ "${rc}" != "${code}" ]]; then
        problem="exit ${rc}, expected ${code}"
    elif [[ "${err}" != *"${want}"* ]]; then
        problem="message lacks \"${want}\""
    elif [[ ${anchored} -eq 1 && "${err}" != *"${want}" ]]; then
        problem="message does not end with \"${want}\""
    elif [[ "${err}" != "pbf: "* ]]; then
        problem="message does not start with \"pbf: \""
    elif [[ "${err}" == *"Sanitizer"* || "${err}" == *"runtime error:"* ]]; then
        problem="sanitizer report"
    fi
    frames="$(find "${tmp}" -type f -name 'frame_*' 2> /dev/null | head -n 3)"
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
    find "${tmp}" -type f -name 'frame_*' -delete 2> /dev/null
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
