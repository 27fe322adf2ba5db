#!/usr/bin/env bash
# Installs the Debian 12 packages that pbf's build and tests need (listed in
# scripts/debian-packages.txt), only those that are missing. Safe to run again: when everything
# is present it prints nothing and changes nothing.
#
#   bash scripts/setup-debian.sh
#   bash scripts/setup-debian.sh --with-blender    # also Blender (large: about 300 MB with its
#                                                  # libraries), for scripts/blender_import.py
#                                                  # and its test; PBF_WITH_BLENDER=1 does the same
#   bash scripts/setup-debian.sh --with-openvdb    # also OpenVDB (libopenvdb-dev with TBB, Imath,
#                                                  # Blosc: 65 MB beside the packages below), for
#                                                  # `pbf mesh --format vdb` and its test (configure
#                                                  # again afterwards); PBF_WITH_OPENVDB=1 does the same
#
# Runs apt-get as root directly, through sudo when not root, or else prints the command to run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
list="${here}/debian-packages.txt"

with_blender="${PBF_WITH_BLENDER:-0}"
with_openvdb="${PBF_WITH_OPENVDB:-0}"
for arg in "$@"; do
    case "${arg}" in
        --with-blender) with_blender=1 ;;
        --with-openvdb) with_openvdb=1 ;;
        *)
            echo "setup-debian.sh: unknown argument \"${arg}\" (they are --with-blender and --with-openvdb)" >&2
            exit 2
            ;;
    esac
done

if [[ ! -r "${list}" ]]; then
    echo "setup-debian.sh: cannot read ${list}" >&2
    exit 1
fi

# Package names: strip comments and blanks.
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "${list}")
if [[ "${with_blender}" == 1 ]]; then
    wanted+=(blender)
fi
if [[ "${with_openvdb}" == 1 ]]; then
    wanted+=(libopenvdb-dev)
fi

if ! command -v dpkg-query > /dev/null 2>&1; then
    echo "setup-debian.sh: dpkg-query not found; this script is for Debian 12." >&2
    echo "Install these packages with your system's package manager: ${wanted[*]}" >&2
    exit 1
fi

missing=()
for pkg in "${wanted[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "${pkg}" 2> /dev/null || true)"
    if [[ "${status}" != "install ok installed" ]]; then
        missing+=("${pkg}")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

echo "setup-debian.sh: missing packages: ${missing[*]}"

if [[ "$(id -u)" -eq 0 ]]; then
    as_root=()
elif command -v sudo > /dev/null 2>&1; then
    as_root=(sudo)
else
    echo "setup-debian.sh: not root and no sudo; as root, run:" >&2
    echo "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi

"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Check that everything is there now (a misspelt name in the list fails here, not later).
for pkg in "${missing[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "${pkg}" 2> /dev/null || true)"
    if [[ "${status}" != "install ok installed" ]]; then
        echo "setup-debian.sh: ${pkg} is still not installed" >&2
        exit 1
    fi
done
echo "setup-debian.sh: done"
