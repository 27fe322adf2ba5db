#!/usr/bin/env bash
# `mpirun -np N pbf run` on the OpenCL backend, one device per process (src/mpi/'s hooks
# as host round trips of the rows they move; pbf_mpi_device), against the single-process OpenCL
# run of scenes/quick.json (a dam break, 2250 particles, 6 frames, one thread per process). On a
# machine without a GPU this is PoCL, a real OpenCL device on the CPU: the same kernels, the same
# host sequence (src/backends/gpu/gpu_steps.c) as on a GPU.
#   - PBF (fixed iterations, and stopped at pbf_tolerance = 0.05 %), WCSPH, PCISPH, IISPH and
#     DFSPH on 1, 2 and 4 processes: every frame byte-identical to the single-process OpenCL
#     run's, and stats.jsonl equal to its own (iterations, substeps, particle counts, speed-limit
#     cuts exactly; the solves' errors and the mean density error, sums over processes in
#     another order than the device's reduction, within 1e-9 relative), ranks = N;
#   - 4 processes in slabs of equal width (rank_imbalance = 0), 12 frames: processes start
#     empty and particles migrate into them; byte-identical;
#   - a speed limit that cuts velocities (cfl 0.15) on 4 processes: the same cuts counted (the
#     ghosts' cuts are their owners'), byte-identical;
#   - the guard (guard_density_error 0.5 %) stops all 4 processes with one message naming the
#     process and the particle the single-process run names (exit 3);
#   - a checkpoint written by 2 OpenCL processes at frame 3 resumed on 4 to frame 6: frames
#     byte-identical to the uninterrupted run's.
# Skips (77) when pbf was built without MPI, mpirun is missing or `pbf devices` lists no OpenCL
# device.
#
#   bash tests/run_mpi_gpu.sh PBF HAVE_MPI [MPIRUN]
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpi_common.sh" "$@"
frames=6

if ! "${pbf}" devices 2> /dev/null | awk '{print $1}' | grep -q '^opencl:'; then
    echo "skipped: no OpenCL device (pbf devices lists none; pocl-opencl-icd gives one on the CPU)"
    exit 77
fi

common=(--set device=opencl --set threads=1 -q)
for solver in pbf pbf_tol wcsph pcisph iisph dfsph; do
    case "${solver}" in
    pbf) set_args=(--set solver=pbf) name="pbf" ;;
    pbf_tol) set_args=(--set solver=pbf --set pbf_tolerance=0.05) name="pbf, pbf_tolerance = 0.05 %" ;;
    *) set_args=(--set "solver=${solver}") name="${solver}" ;;
    esac
    "${pbf}" run "${scene}" --out "ref_${solver}" --frames "${frames}" "${common[@]}" \
        "${set_args[@]}"
    check "${name}: single-process OpenCL reference run" $?
    for n in 1 2 4; do
        mp "${n}" run "${scene}" --out "np${n}_${solver}" --frames "${frames}" "${common[@]}" \
            "${set_args[@]}"
        check "${name}, OpenCL, mpirun -np ${n}: exit 0" $?
        same_run "ref_${solver}" "np${n}_${solver}" "${n}" "${frames}" "${solver%_tol}"
        check "${name}, OpenCL, mpirun -np ${n}: frames byte-identical, the same statistics" $?
    done
done

# the traffic between device and host: on 1 process (no ghost, no halo entry, no particle
# travels) PBF with 4 iterations moves 37 B per particle and step (x* and the keys after predict
# 16, the cells and the ghost mask 5, the solve's error 4 per iteration); on 2 processes only the
# particles that travel and the halo's entries cross the bus besides: about 120 B, against 396 B
# when every exchange moved whole rows
for n in 1 2; do
    mp "${n}" run "${scene}" --out "bytes${n}" --frames 2 --set device=opencl --set threads=1 \
        --set solver_iterations=4 > "bytes${n}.log" 2>&1
    check "OpenCL, mpirun -np ${n}, device traffic run: exit 0" $?
done
python3 - bytes1.log bytes2.log << 'PY'
import re, sys
b = [float(re.search(r"([0-9.]+) B between device and host", open(f).read()).group(1))
     for f in sys.argv[1:]]
print(f"  device <-> host per owned particle and step: {b[0]} B on 1 process, {b[1]} B on 2")
sys.exit(0 if b[0] == 37.0 and b[1] < 200.0 else 1)
PY
check "OpenCL, mpirun -np 1 and 2: only x*, the keys, the travelling particles and the halo's entries cross the bus" $?

# slabs of equal width: the outer processes start empty, particles migrate into them (from
# frame 9 on)
"${pbf}" run "${scene}" --out ref12 --frames 12 "${common[@]}"
mp 4 run "${scene}" --out eq4 --frames 12 --set mpi_decomposition=slabs \
    --set rank_imbalance=0 "${common[@]}"
check "OpenCL, 4 slabs of equal width: exit 0" $?
same_run ref12 eq4 4 12
check "OpenCL, 4 slabs of equal width: frames byte-identical, the same statistics" $?
python3 - eq4/stats.jsonl << 'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
ok = s[0]["rank_particles_min"] == 0 and s[-1]["rank_particles_min"] > 0
print(f"  particles on the smallest process: {s[0]['rank_particles_min']} at frame 0, "
      f"{s[-1]['rank_particles_min']} at frame {s[-1]['frame']}")
sys.exit(0 if ok else 1)
PY
check "OpenCL, 4 slabs of equal width: a process starts empty, particles migrate into it" $?

# the speed limit cuts velocities: the same count on 4 processes
"${pbf}" run "${scene}" --out ref_cfl --frames "${frames}" --set cfl=0.15 "${common[@]}"
mp 4 run "${scene}" --out np4_cfl --frames "${frames}" --set cfl=0.15 "${common[@]}"
check "OpenCL, cfl 0.15, mpirun -np 4: exit 0" $?
same_run ref_cfl np4_cfl 4 "${frames}"
check "OpenCL, cfl 0.15, mpirun -np 4: frames byte-identical, the same speed-limit cuts" $?
python3 -c "
import json, sys
n = sum(json.loads(l)['speed_clamps'] for l in open('np4_cfl/stats.jsonl'))
print(f'  {n} speed-limit cuts')
sys.exit(0 if n > 0 else 1)"
check "OpenCL, cfl 0.15: the speed limit cut velocities" $?

# the guard: every process stops, one message naming the process and the single-process
# run's particle
"${pbf}" run "${scene}" --out g1 --frames "${frames}" --set guard_density_error=0.5 \
    "${common[@]}" 2> g1.err
g1=$?
mp 4 run "${scene}" --out g4 --frames "${frames}" --set guard_density_error=0.5 \
    "${common[@]}" > g4.out 2>&1
g4=$?
sed 's/^/  /' g4.out | head -1
id1=$(grep -o '(id [0-9]*)' g1.err)
[[ "${g1}" -eq 3 && "${g4}" -ne 0 && -n "${id1}" ]] && grep -q 'exit code: *3\|Exit code: *3' g4.out &&
    [[ $(grep -c 'unstable simulation' g4.out) -eq 1 ]] && grep -q 'on MPI process [0-3] of 4' g4.out &&
    grep -qF "${id1}" g4.out
check "OpenCL, guard over 4 processes: exit 3, one message naming the process and the particle ${id1}" $?

# a checkpoint written by 2 OpenCL processes, resumed on 4
mp 2 run "${scene}" --out res --checkpoint-every 3 --frames 3 "${common[@]}" &&
    mp 4 run --resume res --frames "${frames}" -q
check "OpenCL: 2 processes to frame 3, resumed on 4 to frame ${frames}: exit 0" $?
s=0
for ((k = 1; k <= frames; ++k)); do
    f=$(printf 'frame_%05d.vtp' "${k}")
    cmp -s "ref_pbf/${f}" "res/${f}" || { echo "  res/${f} differs"; s=1; }
done
check "OpenCL: resumed on another process count, frames byte-identical" "${s}"

echo "${passed} passed, ${failed} failed"
[[ "${failed}" -eq 0 ]]
