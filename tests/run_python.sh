#!/usr/bin/env bash
# The Python package (python/) as docs/library.md ("From Python") installs it: its command as
# written (with another python3 first in PATH), a virtual environment that
# sees Debian's NumPy and Matplotlib, `pip install ./python` from the top of the repository with
# no package index (its build backend builds libpbf with CMake and bundles it), then
# tests/python_check.py on the installed package, and docs/library.md's plot_frame.py example run as
# written (Matplotlib's non-interactive Agg backend) with its PNG checked.
#
#   bash tests/run_python.sh PYTHON3 OUT_DIR SANITIZE(ON/OFF)
#
# Skips (77) without python3-venv, NumPy or Matplotlib, and in sanitizer builds.
set -uo pipefail  # no -e: every step is a check that counts its failure

if [[ $# -ne 3 ]]; then
    echo "usage: run_python.sh PYTHON3 OUT_DIR SANITIZE" >&2
    exit 2
fi
python="$1"
out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
if [[ "$3" == ON ]]; then
    echo "SKIP: a sanitizer build (Python cannot load sanitizer-built code without preloading"
    echo "      the runtime); the other builds run this test"
    exit 77
fi
if [[ -z "${python}" ]] || ! "${python}" -c "import venv, ensurepip" 2> /dev/null; then
    echo "SKIP: no python3 with venv and ensurepip (Debian: python3-venv; scripts/setup-debian.sh)"
    exit 77
fi
for module in numpy matplotlib; do
    if ! "${python}" -c "import ${module}" 2> /dev/null; then
        echo "SKIP: ${python} has no ${module} (Debian: python3-${module}; scripts/setup-debian.sh)"
        exit 77
    fi
done

source "${here}/check.sh"
source "${here}/readme_example.sh"

rm -rf "${out}"
mkdir -p "${out}"
venv="${out}/venv"

# docs/library.md's command as written, from the top of the repository, its .venv here instead;
# no package index (offline CI), no version check. Run with a `python3` first in PATH that is not
# the system's (as a conda or pyenv one would be): the command must not depend on which python3
# PATH finds.
command="$(awk '/^```sh$/{b=1; next} b&&/^```$/{b=0} b&&/ -m venv /' "${root}/docs/library.md")"
interpreter="${command%% *}"
if [[ "$(grep -c . <<< "${command}")" -ne 1 ]]; then
    check "docs/library.md has one venv command (found: ${command})" 1
    exit 1
fi
if [[ "${interpreter}" == /* && ! -x "${interpreter}" ]]; then
    echo "SKIP: docs/library.md's venv command names ${interpreter}, which this system has not"
    exit 77
fi
mkdir -p "${out}/other_python"
printf '#!/bin/sh\necho "a python3 that is not the system'"'"'s: $0 $*" >&2\nexit 1\n' \
    > "${out}/other_python/python3"
chmod +x "${out}/other_python/python3"
command="${command//.venv/${venv}}"
start=${SECONDS}
(cd "${root}" && PATH="${out}/other_python:${PATH}" PIP_NO_INDEX=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 bash -ec "${command}") > "${out}/pip.log" 2>&1
rc=$?
check "docs/library.md's ${command//${venv}/.venv} ($((SECONDS - start)) s), another python3 first in PATH: $(tail -n 3 "${out}/pip.log" | tr '\n' ' ')" "${rc}"
if [[ ${rc} -ne 0 ]]; then
    cat "${out}/pip.log"
    exit 1
fi

version="$(sed -n 's/^#define PBF_VERSION_STRING "\(.*\)"/\1/p' "${root}/include/pbf/pbf.h")"
(cd "${out}" && "${venv}/bin/python" "${here}/python_check.py" "${root}/scenes" "${version}")
check "tests/python_check.py" $?

# docs/library.md's plotting example, as written, from a folder that has the repository's scenes/.
work="${out}/example"
mkdir -p "${work}"
ln -s "${root}/scenes" "${work}/scenes"
readme_example "${root}/docs/library.md" plot_frame.py > "${work}/plot_frame.py"
check "docs/library.md has plot_frame.py" $?
(cd "${work}" && MPLBACKEND=Agg MPLCONFIGDIR="${out}/mplconfig" "${venv}/bin/python" plot_frame.py) \
    > "${out}/plot.log" 2>&1
rc=$?
check "python plot_frame.py: $(tail -n 3 "${out}/plot.log" | tr '\n' ' ')" "${rc}"
# A 600 x 400 figure with the particles drawn in many colours of the density ramp.
png_check="$("${venv}/bin/python" - "${work}/frame.png" << 'EOF'
import sys
import numpy as np
import matplotlib.image as mpimg
try:
    img = mpimg.imread(sys.argv[1])
except Exception as e:
    print(f"cannot read: {e}")
    sys.exit()
h, w = img.shape[:2]
rgb = (img[:, :, :3] * 255).astype(np.uint8).reshape(-1, 3)
not_grey = np.ptp(rgb.astype(int), axis=1) > 40  # coloured, not white/black/grey text
colours = len(np.unique(rgb[not_grey], axis=0))
problems = []
if (w, h) != (600, 400):
    problems.append(f"size {w} x {h} (want 600 x 400)")
if not 0.02 < not_grey.mean() < 0.6:
    problems.append(f"{100 * not_grey.mean():.1f} % coloured pixels (want particles drawn)")
if colours < 50:
    problems.append(f"{colours} colours (want a density ramp)")
print("; ".join(problems))
EOF
)"
check "frame.png: 600 x 400, coloured particles${png_check:+: ${png_check}}" "$([[ -z "${png_check}" ]]; echo $?)"

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
