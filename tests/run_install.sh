#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then what docs/library.md ("Using the library") promises: the
# layout (library with its soname, headers, command, scenes, pbf.pc, CMake package), only the
# public functions exported, its example.c built with
#   cc example.c $(pkg-config --cflags --libs pbf) -o example
# and with its CMakeLists.txt (find_package(pbf), pbf::pbf), both run, and their output checked
# for physical sense: same particle count before and after, the column's mean height falls and
# its front runs along the floor, inside the box, near rest density; both builds print the same,
# and what they print is the output docs/library.md shows, character for character.
# The installed prefix also works after being moved (pbf.pc and the package are relocatable),
# and the installed `pbf` finds its scenes beside it (and, given a relative scene path that is
# not there, says where they are).
#
#   bash tests/run_install.sh BUILD_DIR OUT_DIR SANITIZE(ON/OFF)
set -uo pipefail  # no -e: every step is a check that counts its failure

if [[ $# -ne 3 ]]; then
    echo "usage: run_install.sh BUILD_DIR OUT_DIR SANITIZE" >&2
    exit 2
fi
build="$(cd "$1" && pwd)"
out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readme="${here}/../docs/library.md"
if [[ "$3" == ON ]]; then
    echo "SKIP: a sanitizer build: programs built outside it cannot load its libpbf (the"
    echo "      sanitizer runtime must come first); the other builds run this test"
    exit 77
fi
for tool in cc pkg-config nm readelf; do
    if ! command -v "${tool}" > /dev/null; then
        echo "SKIP: ${tool} not found (scripts/setup-debian.sh installs it)"
        exit 77
    fi
done

source "${here}/check.sh"
source "${here}/readme_example.sh"
expect() { # expect NAME COMMAND...: the command succeeds
    local name="$1" rc=0
    shift
    "$@" || rc=$?
    check "${name}" "${rc}"
}

rm -rf "${out}"
mkdir -p "${out}"
prefix="${out}/prefix"
expect "cmake --install --prefix" cmake --install "${build}" --prefix "${prefix}" > "${out}/install.log"

# ---- layout --------------------------------------------------------------------------------
libdir="$(dirname "$(find "${prefix}" -name pbf.pc -path '*/pkgconfig/*' | head -n 1)")/.."
libdir="$(cd "${libdir}" && pwd)"
real_lib="$(find "${libdir}" -maxdepth 1 -name 'libpbf.so.*.*.*' -type f | head -n 1)"
expect "the library: ${real_lib#"${prefix}"/}" test -n "${real_lib}"
soname="$(readelf -d "${real_lib}" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
expect "soname ${soname} is a link to the library" test "$(readlink -f "${libdir}/${soname}")" = "${real_lib}"
expect "libpbf.so (for -lpbf) links to it" test "$(readlink -f "${libdir}/libpbf.so")" = "${real_lib}"
for f in include/pbf/pbf.h include/pbf/params.h include/pbf/scene.h bin/pbf \
         share/pbf/scenes/dam_break.json share/pbf/scenes/quick.json; do
    expect "installed ${f}" test -s "${prefix}/${f}"
done
expect "installed the CMake package" test -s "${libdir}/cmake/pbf/pbfConfig.cmake" \
    -a -s "${libdir}/cmake/pbf/pbfConfigVersion.cmake" -a -s "${libdir}/cmake/pbf/pbfTargets.cmake"

# ---- exported symbols: the functions of the public headers, nothing else --------------------
nm -D --defined-only "${real_lib}" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort > "${out}/exported.txt"
grep -ohE '\bpbf_[a-z0-9_]+[[:space:]]*\(' "${prefix}"/include/pbf/*.h | tr -d '( \t' | sort -u \
    > "${out}/declared.txt"
extra="$(comm -23 "${out}/exported.txt" "${out}/declared.txt" | tr '\n' ' ')"
expect "every exported symbol is declared in include/pbf/ (extra: ${extra:-none})" test -z "${extra}"
for f in pbf_world_create pbf_world_step pbf_world_particles pbf_scene_load pbf_scene_parse \
         pbf_scene_create_world pbf_particle_fields; do
    expect "exports ${f}" grep -qx "${f}" "${out}/exported.txt"
done

# ---- docs/library.md's example, both ways -------------------------------------------------
ex="${out}/example"
mkdir -p "${ex}"
readme_example "${readme}" example.c > "${ex}/example.c"
check "docs/library.md has example.c" $?
readme_example "${readme}" CMakeLists.txt > "${ex}/CMakeLists.txt"
check "docs/library.md has CMakeLists.txt" $?
export PKG_CONFIG_PATH="${libdir}/pkgconfig"
expect "pkg-config --modversion pbf" pkg-config --modversion pbf
# docs/library.md's command, with warnings as errors
(cd "${ex}" && cc -Wall -Wextra -Wpedantic -Werror example.c $(pkg-config --cflags --libs pbf) \
    -o example) > "${out}/cc.log" 2>&1
rc=$?
check "cc example.c \$(pkg-config --cflags --libs pbf): $(tail -n 3 "${out}/cc.log" | tr "\n" " ")" "${rc}"
LD_LIBRARY_PATH="${libdir}" "${ex}/example" > "${out}/pkgconfig.out" 2>&1
check "./example (pkg-config build) exits 0" $?
lib_used="$(LD_LIBRARY_PATH="${libdir}" ldd "${ex}/example" | awk '/libpbf/ {print $3}')"
expect "./example uses the installed libpbf (${lib_used})" \
    test "$(readlink -f "${lib_used}")" = "${real_lib}"

(cmake -S "${ex}" -B "${ex}/build" -DCMAKE_PREFIX_PATH="${prefix}" &&
    cmake --build "${ex}/build") > "${out}/cmake.log" 2>&1
rc=$?
check "cmake find_package(pbf) + pbf::pbf: $(tail -n 3 "${out}/cmake.log" | tr "\n" " ")" "${rc}"
"${ex}/build/example" > "${out}/cmake.out" 2>&1
check "./build/example (CMake build) exits 0 without LD_LIBRARY_PATH" $?
expect "pbf::pbf carries OpenMP (-fopenmp)" grep -q "fopenmp" \
    "${ex}/build/CMakeFiles/example.dir/flags.make"
cat "${out}/pkgconfig.out"
expect "both builds print the same" cmp -s "${out}/pkgconfig.out" "${out}/cmake.out"
# docs/library.md shows what the example prints: the fenced block of "t = ..." lines, which must be
# what it printed, character for character.
awk '/^```/ { if (!inside) { inside = 1; n = 0; ok = 1; next }
              inside = 0; if (ok && n > 0) { for (i = 1; i <= n; ++i) print line[i]; exit } next }
     inside { line[++n] = $0; if (index($0, "t = ") != 1) ok = 0 }' "${readme}" > "${out}/shown.out"
if [[ -s "${out}/shown.out" ]] && cmp -s "${out}/shown.out" "${out}/pkgconfig.out"; then
    check "docs/library.md shows what example.c prints" 0
else
    check "docs/library.md shows what example.c prints (- shown, + printed): $(diff "${out}/shown.out" "${out}/pkgconfig.out" | tr '\n' ' ')" 1
fi

# "t = T s: N particles, mean height H m, front at x = F m, density error E % avg"
physics="$(awk '
    /^t = / {
        n++; t[n] = $3; count[n] = $5; h[n] = $9; front[n] = $15; err[n] = $19
    }
    END {
        if (n != 2) { print "want 2 lines, got " n; exit }
        if (t[1] != 0 || t[2] < 0.99 || t[2] > 1.01) print "times " t[1] ", " t[2] " (want 0 and 1 s)"
        if (count[1] != 1500 || count[2] != 1500) print "particles " count[1] " -> " count[2] " (want 1500 both)"
        if (h[1] < 0.29 || h[1] > 0.31) print "initial mean height " h[1] " (a 0.6 m column: 0.3 m)"
        if (!(h[2] < 0.5 * h[1]) || h[2] < 0.02) print "mean height " h[1] " -> " h[2] " (want a collapse to a layer)"
        if (!(front[2] > front[1] + 0.3) || front[2] > 1.0) print "front " front[1] " -> " front[2] " (want it to run along the 1 m floor)"
        if (err[2] < 0 || err[2] > 3) print "density error " err[2] " % (want near rest density)"
    }' "${out}/pkgconfig.out")"
expect "the output makes physical sense${physics:+: ${physics}}" test -z "${physics}"

# ---- relocated: the prefix moved elsewhere still works for pkg-config and CMake --------------
moved="${out}/moved"
mv "${prefix}" "${moved}"
libdir_moved="${moved}/${libdir#"${prefix}"/}"
(cd "${ex}" && PKG_CONFIG_PATH="${libdir_moved}/pkgconfig" &&
    cc example.c $(pkg-config --cflags --libs pbf) -o example_moved &&
    LD_LIBRARY_PATH="${libdir_moved}" ./example_moved) > "${out}/moved.out" 2>&1
rc=$?
check "pkg-config after moving the prefix: $(tail -n 2 "${out}/moved.out" | tr "\n" " ")" "${rc}"
(cmake -S "${ex}" -B "${ex}/build_moved" -DCMAKE_PREFIX_PATH="${moved}" &&
    cmake --build "${ex}/build_moved" && "${ex}/build_moved/example") > "${out}/moved_cmake.out" 2>&1
rc=$?
check "CMake after moving the prefix: $(tail -n 2 "${out}/moved_cmake.out" | tr "\n" " ")" "${rc}"

# ---- the installed command finds its scenes beside it -----------------------------------------
help="$(cd "${out}" && "${moved}/bin/pbf" --help 2>&1 || true)"
expect "installed pbf --help names its default scene ${moved}/share/pbf/scenes/dam_break.json" \
    grep -qF "${moved}/share/pbf/scenes/dam_break.json" <<< "${help}"
(cd "${out}" && "${moved}/bin/pbf" run "${moved}/share/pbf/scenes/quick.json" --frames 1 \
    --out "${out}/run" -q) > "${out}/run.log" 2>&1
rc=$?
check "installed pbf runs its quick scene: $(tail -n 2 "${out}/run.log" | tr "\n" " ")" "${rc}"
expect "it wrote frame 1" test -s "${out}/run/frame_00001.vtp"
# a relative scene path that is not there (the current directory has no scenes/): the message
# says where the installed scenes are
rc=0
(cd "${out}" && "${moved}/bin/pbf" run scenes/quick.json --frames 1 --out "${out}/run2" -q) \
    > "${out}/notfound.log" 2>&1 || rc=$?
expect "installed pbf run scenes/quick.json from elsewhere: exit 2 (got ${rc}), names ${moved}/share/pbf/scenes/quick.json: $(head -c 300 "${out}/notfound.log")" \
    test "${rc}" -eq 2 -a -n "$(grep -F "${moved}/share/pbf/scenes/quick.json" "${out}/notfound.log")"

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
