#!/usr/bin/env bash
# `mpirun -np N pbf run` with every pressure solver (src/mpi/domain.c's halos for the SPH
# solvers' stages, and the solves' errors summed over processes so that every process stops
# after the same iteration), against the single-process run of scenes/quick.json (a dam break,
# 2250 particles, 6 frames, one thread per process):
#   - WCSPH, PCISPH, IISPH and DFSPH (each with its CFL substeps and tolerance stop, the
#     defaults) and PBF stopped at a tolerance (pbf_tolerance = 0.05 %) on 2 and 4 processes:
#     every frame byte-identical to the single-process run's, and stats.jsonl equal to its own
#     (iterations, substeps, divergence iterations; the solves' errors, summed over processes,
#     within 1e-9 relative), ranks = N.
# Skips (77) when pbf was built without MPI or mpirun is missing.
#
#   bash tests/run_mpi_solvers.sh PBF HAVE_MPI [MPIRUN]
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpi_common.sh" "$@"
frames=6

same_run() { # same_run REF DIR N: frames byte-identical, stats.jsonl equal (errors 1e-9)
    local ref="$1" d="$2" n="$3" k f bad=0
    for ((k = 0; k <= frames; ++k)); do
        f=$(printf 'frame_%05d.vtp' "${k}")
        cmp -s "${ref}/${f}" "${d}/${f}" || { echo "  ${d}/${f} differs"; bad=1; }
    done
    python3 - "${ref}" "${d}" "${n}" "${frames}" "${solver}" << 'PY' || bad=1
import json, sys
r, d, n, frames, solver = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
a = [json.loads(l) for l in open(r + "/stats.jsonl")]
b = [json.loads(l) for l in open(d + "/stats.jsonl")]
ok = len(a) == len(b) == frames + 1
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
if ok and solver != "wcsph" and a[-1]["iterations"] <= 0:  # WCSPH: no solve
    print("  no solver iterations counted")
    ok = False
sys.exit(0 if ok else 1)
PY
    return "${bad}"
}

for solver in wcsph pcisph iisph dfsph pbf; do
    set_args=(--set "solver=${solver}")
    name="${solver}"
    if [[ "${solver}" == pbf ]]; then
        set_args+=(--set pbf_tolerance=0.05)
        name="pbf, pbf_tolerance = 0.05 %"
    fi
    "${pbf}" run "${scene}" --out "ref_${solver}" --set threads=1 --frames "${frames}" -q \
        "${set_args[@]}"
    check "${name}: single-process reference run" $?
    for n in 2 4; do
        mp "${n}" run "${scene}" \
            --out "np${n}_${solver}" --set threads=1 --frames "${frames}" -q "${set_args[@]}"
        check "${name}, mpirun -np ${n}: exit 0" $?
        same_run "ref_${solver}" "np${n}_${solver}" "${n}"
        check "${name}, mpirun -np ${n}: frames byte-identical, the same iterations and statistics" $?
    done
done

echo "${passed} passed, ${failed} failed"
[[ "${failed}" -eq 0 ]]
