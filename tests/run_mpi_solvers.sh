#!/usr/bin/env bash
# `mpirun -np N pbf run` with every pressure solver (src/mpi/'s halos for the SPH
# solvers' stages, and the solves' errors summed over processes so that every process stops
# after the same iteration), against the single-process run of scenes/quick.json (a dam break,
# 2250 particles, 6 frames, one thread per process):
#   - WCSPH, PCISPH, IISPH and DFSPH (each with its CFL substeps and tolerance stop, the
#     defaults; DFSPH also with dfsph_divergence_warm_start = 0.5, whose kappa^v_i migrates
#     with its particle) and PBF stopped at a tolerance (pbf_tolerance = 0.05 %) on 2 and 4
#     processes:
#     every frame byte-identical to the single-process run's, and stats.jsonl equal to its own
#     (iterations, substeps, divergence iterations; the solves' errors, summed over processes,
#     within 1e-9 relative), ranks = N.
# Skips (77) when pbf was built without MPI or mpirun is missing.
#
#   bash tests/run_mpi_solvers.sh PBF HAVE_MPI [MPIRUN]
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpi_common.sh" "$@"
frames=6

for solver in wcsph pcisph iisph dfsph dfsph_warm_v pbf; do
    set_args=(--set "solver=${solver}")
    name="${solver}"
    if [[ "${solver}" == pbf ]]; then
        set_args+=(--set pbf_tolerance=0.05)
        name="pbf, pbf_tolerance = 0.05 %"
    elif [[ "${solver}" == dfsph_warm_v ]]; then # kappa^v_i migrates with its particle
        set_args=(--set solver=dfsph --set dfsph_divergence_warm_start=0.5)
        name="dfsph, dfsph_divergence_warm_start = 0.5"
    fi
    "${pbf}" run "${scene}" --out "ref_${solver}" --set threads=1 --frames "${frames}" -q \
        "${set_args[@]}"
    check "${name}: single-process reference run" $?
    for n in 2 4; do
        mp "${n}" run "${scene}" \
            --out "np${n}_${solver}" --set threads=1 --frames "${frames}" -q "${set_args[@]}"
        check "${name}, mpirun -np ${n}: exit 0" $?
        same_run "ref_${solver}" "np${n}_${solver}" "${n}" "${frames}" "${solver}"
        check "${name}, mpirun -np ${n}: frames byte-identical, the same iterations and statistics" $?
    done
done

echo "${passed} passed, ${failed} failed"
[[ "${failed}" -eq 0 ]]
