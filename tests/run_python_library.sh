#!/usr/bin/env bash
# docs/library.md's `PBF_LIBRARY=build/libpbf.so pip install ./python`: a relative PBF_LIBRARY is
# taken from the folder pip is started in (the top of the repository), not from the folder pip
# runs the build backend in (python/). In a virtual environment that sees Debian's NumPy, with no
# package index: the install succeeds, the wheel bundles that very library, `import pbf` loads
# it; a PBF_LIBRARY that names no file fails with a message naming it and where it was looked
# for.
#
#   bash tests/run_python_library.sh PYTHON3 OUT_DIR LIBPBF SANITIZE(ON/OFF)
#
# Skips (77) without python3-venv or NumPy, and in sanitizer builds.
set -uo pipefail
if [[ $# -ne 4 ]]; then
    echo "usage: run_python_library.sh PYTHON3 OUT_DIR LIBPBF SANITIZE" >&2
    exit 2
fi
python="$1"
out="$2"
lib="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
if [[ "$4" == ON ]]; then
    echo "SKIP: a sanitizer build (Python cannot load sanitizer-built code)"
    exit 77
fi
if [[ -z "${python}" ]] || ! "${python}" -c "import venv, ensurepip, numpy" 2> /dev/null; then
    echo "SKIP: no python3 with venv, ensurepip and numpy (Debian: python3-venv python3-numpy)"
    exit 77
fi
source "${here}/check.sh"

rm -rf "${out}"
mkdir -p "${out}"
venv="${out}/venv"
"${python}" -m venv --system-site-packages "${venv}" > "${out}/venv.log" 2>&1
check "python3 -m venv --system-site-packages" $?
[[ -f "${lib}" ]]
check "the library ${lib} is built" $?

# the library's path relative to the top of the repository (build/libpbf.so in a build/ there)
rel="$("${python}" -c 'import os, sys; print(os.path.relpath(os.path.abspath(sys.argv[1]), sys.argv[2]))' "${lib}" "${root}")"
rc=0
(cd "${root}" && PBF_LIBRARY="${rel}" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "${venv}/bin/pip" install ./python) > "${out}/pip.log" 2>&1 || rc=$?
[[ ${rc} -eq 0 ]] || tail -n 15 "${out}/pip.log"
check "PBF_LIBRARY=${rel} pip install ./python from the top of the repository (exit ${rc})" ${rc}

installed="$(cd "${out}" && "${venv}/bin/python" -c 'import os, pbf; print(os.path.join(os.path.dirname(pbf.__file__), "libpbf.so"))' 2> "${out}/import.log")"
rc=$?
[[ ${rc} -eq 0 ]] && cmp -s "${installed}" "$(realpath "${lib}")"
ok=$?
check "import pbf loads the bundled library, the very file PBF_LIBRARY named: $(head -c 300 "${out}/import.log")" ${ok}

# a relative PBF_LIBRARY that names no file: refused, naming it and where it was looked for
rc=0
(cd "${root}" && PBF_LIBRARY=no/such/libpbf.so PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "${venv}/bin/pip" install ./python) > "${out}/pip_bad.log" 2>&1 || rc=$?
[[ ${rc} -ne 0 ]] && grep -qF "PBF_LIBRARY=no/such/libpbf.so: no such file" "${out}/pip_bad.log" &&
    grep -qF "${root}/no/such/libpbf.so" "${out}/pip_bad.log"
ok=$?
check "PBF_LIBRARY=no/such/libpbf.so: pip fails (exit ${rc}) naming it and ${root}/no/such/libpbf.so" ${ok}

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
