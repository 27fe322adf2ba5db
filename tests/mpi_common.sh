# Shared by the MPI script tests (run_mpi.sh, run_mpi_solvers.sh), sourced with their arguments
# PBF HAVE_MPI [MPIRUN]: sets pbf, mpirun, here, scene (scenes/quick.json), sources check.sh,
# skips (exit 77) when pbf was built without MPI or mpirun is missing, moves into a temporary
# folder removed at exit, and defines mp N ARGS...: pbf on N processes (more processes than cores:
# with --oversubscribe Open MPI runs them in its degraded mode, where a waiting process yields)
# and same_run REF DIR N FRAMES [SOLVER]: a run's frames and stats.jsonl against a reference.
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

same_run() { # same_run REF DIR N FRAMES [SOLVER]: frames 0..FRAMES byte-identical, stats.jsonl
    # equal (the solves' errors and the mean density error, sums over processes, within 1e-9
    # relative), ranks = N; with SOLVER (not wcsph, which has no solve): iterations counted
    local ref="$1" d="$2" n="$3" nf="$4" solver="${5:-}" k f bad=0
    for ((k = 0; k <= nf; ++k)); do
        f=$(printf 'frame_%05d.vtp' "${k}")
        cmp -s "${ref}/${f}" "${d}/${f}" || { echo "  ${d}/${f} differs"; bad=1; }
    done
    python3 - "${ref}" "${d}" "${n}" "${nf}" "${solver}" << 'PY' || bad=1
import json, sys
r, d, n, frames, solver = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
a = [json.loads(l) for l in open(r + "/stats.jsonl")]
b = [json.loads(l) for l in open(d + "/stats.jsonl")]
ok = len(a) == len(b) == frames + 1
if not ok:
    print(f"  {len(a)} and {len(b)} lines, expected {frames + 1}")
for x, y in zip(a, b):
    for k in x:
        if k in ("solver_error", "divergence_error", "density_error_avg"):  # sums over processes
            if abs(x[k] - y[k]) > 1e-9 * max(abs(x[k]), 1e-12):
                print(f"  frame {x['frame']}: {k} {x[k]} != {y[k]}")
                ok = False
        elif k != "ms" and x[k] != y[k]:
            print(f"  frame {x['frame']}: {k} {x[k]} != {y[k]}")
            ok = False
    if y.get("ranks") != n:
        print(f"  frame {y['frame']}: ranks {y.get('ranks')}, expected {n}")
        ok = False
if ok and solver not in ("", "wcsph") and a[-1]["iterations"] <= 0:
    print("  no solver iterations counted")
    ok = False
sys.exit(0 if ok else 1)
PY
    return "${bad}"
}
