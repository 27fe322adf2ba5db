#!/usr/bin/env bash
# Packs a build of this machine for a GPU machine that has the NVIDIA driver, CUDA and CMake but
# none of Debian's packages (no Open MPI, no ocl-icd loader, no cJSON, libpng or GLFW): the build
# tree without its object files (ctest runs there as here), every shared library its programs
# load that is not glibc's, the OpenCL ICD loader, and Open MPI's own trees (mpirun, its
# components, PMIx, help texts), so that `mpirun -np N pbf run` runs there too.
#
#   bash scripts/device_bundle.sh BUILD_DIR OUT_DIR     (writes OUT_DIR/bundle.tar.gz)
#
# The machine unpacks it with scripts/device_env.sh, which also says how.
set -euo pipefail
if [[ $# -ne 2 ]]; then
    echo "usage: device_bundle.sh BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build="$(cd "$1" && pwd)"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
stage="$(mktemp -d "${TMPDIR:-/tmp}/pbf_bundle.XXXXXX")"
trap 'rm -rf "${stage}"' EXIT

# 1. the build tree, object files and CMake's scratch left out; the absolute path it was built
#    at is recorded so the machine can put it there again (CTestTestfile.cmake names it)
mkdir -p "${stage}/build"
(cd "${build}" && find . -type f ! -name '*.o' ! -name '*.a' ! -path './CMakeFiles/*' \
    ! -path '*/CMakeFiles/*.dir/*' ! -path './Testing/*' ! -path '*_out/*' -print0 |
    tar --null -T - -cf - ) | (cd "${stage}/build" && tar -xf -)
echo "${build}" > "${stage}/build_path"
git -C "${build}/.." rev-parse HEAD > "${stage}/commit" 2>/dev/null || true

# 2. the shared libraries: everything the build's programs and Open MPI's load, glibc excepted
mkdir -p "${stage}/lib"
elfs=()
while IFS= read -r -d '' f; do
    if head -c 4 "$f" | grep -q 'ELF'; then elfs+=("$f"); fi
done < <(find "${build}" -maxdepth 3 -type f -perm -u+x ! -path '*/CMakeFiles/*' -print0)
ompi_trees=()
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
         /usr/share/pmix /etc/openmpi; do
    [[ -d "$d" ]] && ompi_trees+=("$d")
done
for b in /usr/bin/orterun /usr/bin/orted /usr/bin/opal_wrapper; do
    [[ -x "$b" ]] && elfs+=("$b")
done
while IFS= read -r -d '' f; do elfs+=("$f"); done < <(find "${ompi_trees[@]}" -name '*.so*' -type f -print0 2>/dev/null)
elfs+=(/usr/lib/x86_64-linux-gnu/libOpenCL.so.1)
for f in "${elfs[@]}"; do
    ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
    case "$(basename "${lib}")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*|libresolv.so*) ;;
        *) cp -L "${lib}" "${stage}/lib/" ;;
    esac
done
cp -L /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 "${stage}/lib/"

# 3. Open MPI's trees at their own paths (its components are found by the path it was built with)
mkdir -p "${stage}/root/usr/bin"
for d in "${ompi_trees[@]}"; do
    mkdir -p "${stage}/root$(dirname "$d")"
    cp -a "$d" "${stage}/root$d"
done
for b in orterun orted opal_wrapper; do
    [[ -x /usr/bin/$b ]] && cp -L /usr/bin/$b "${stage}/root/usr/bin/"
done
[[ -x "${stage}/root/usr/bin/orterun" ]] && ln -sf orterun "${stage}/root/usr/bin/mpirun"

tar -C "${stage}" -czf "${out}/bundle.tar.gz" .
echo "device_bundle: $(du -h "${out}/bundle.tar.gz" | cut -f1) in ${out}/bundle.tar.gz (build ${build})"
