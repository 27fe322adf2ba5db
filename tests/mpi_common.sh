# Shared by the MPI script tests (run_mpi.sh, run_mpi_solvers.sh), sourced with their arguments
# PBF HAVE_MPI [MPIRUN]: sets pbf, mpirun, here, scene (scenes/quick.json), sources check.sh,
# skips (exit 77) when pbf was built without MPI or mpirun is missing, moves into a temporary
# folder removed at exit, and defines mp N ARGS...: pbf on N processes (more processes than cores:
# with --oversubscribe Open MPI runs them in its degraded mode, where a waiting process yields).
pbf="$1"
have_mpi="$2"
mpirun="${3:-mpirun}"
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
scene="${here}/../scenes/quick.json"
source "${here}/check.sh"

if [[ "${have_mpi}" != "ON" ]]; then
    echo "skipped: this pbf was built without MPI (install libopenmpi-dev: cmake prints \"pbf MPI: ON\")"
    exit 77
fi
if ! command -v "${mpirun}" > /dev/null 2>&1; then
    echo "skipped: ${mpirun} not found (install openmpi-bin)"
    exit 77
fi

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
cd "${tmp}" || exit 1
mp() { # mp N ARGS...: pbf on N processes
    local n="$1"
    shift
    "${mpirun}" --oversubscribe --allow-run-as-root -np "${n}" "${pbf}" "$@"
}
