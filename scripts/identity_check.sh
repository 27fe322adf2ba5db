#!/usr/bin/env bash
# Byte-identity of the frames a build writes: every shipped scene with every pressure solver (and
# the variants that take other code paths: PBF's tolerance loop, no vorticity / XSPH, DFSPH's
# warm starts, IISPH without its warm start), on the CPU (1 and 2 threads) and on OpenCL where a
# device is found (PoCL in CI), under MPI with 2 processes where mpirun is found, and in every frame
# format. Writes one "sha256  run/file" line per frame file to OUT (sorted).
#
#   scripts/identity_check.sh PBF OUT            hash the frames of the pbf binary PBF
#   scripts/identity_check.sh --compare A B      compare two such lists; exit 1 on any difference
#
# A restructuring that must change nothing for users is checked by hashing the frames of the
# binary before (a build of the commit before it) and after, and comparing the two lists.
set -euo pipefail

if [[ ${1:-} == --compare ]]; then
    a=$2
    b=$3
    if diff -u "$a" "$b" >/dev/null; then
        echo "identity: $(wc -l <"$a") frame files, all byte-identical"
        exit 0
    fi
    echo "identity: DIFFERENT frames:"
    diff -u "$a" "$b" | grep -E '^[-+][0-9a-f]' | head -40
    exit 1
fi

pbf=$(readlink -f "$1")
out=$(readlink -f "$2")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
frames_small=${PBF_IDENTITY_FRAMES:-6}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_opencl=0
if "$pbf" devices 2>/dev/null | grep -q '^ *opencl'; then have_opencl=1; fi
have_mpi=0
if command -v mpirun >/dev/null && "$pbf" run --help 2>/dev/null | grep -q 'Under MPI'; then
    have_mpi=1
fi

: >"$tmp/list"
run() { # NAME -- pbf run arguments
    local name=$1
    shift
    local dir="$tmp/runs/$name"
    mkdir -p "$(dirname "$dir")"
    if ! "$@" --out "$dir" --quiet; then
        echo "identity: run $name failed: $*" >&2
        exit 2
    fi
    (cd "$tmp/runs" && find "$name" -name 'frame_*' -type f | sort | xargs sha256sum) >>"$tmp/list"
}

solvers="pbf wcsph pcisph iisph dfsph sesph"
variants=(
    "pbf:tol|--set solver=pbf --set pbf_tolerance=0.5 --set pbf_min_iterations=2"
    "pbf:novort|--set solver=pbf --set vorticity=0 --set xsph_viscosity=0"
    "pbf:it2|--set solver=pbf --set solver_iterations=2 --set chebyshev_rho=0.5"
    "dfsph:warm|--set solver=dfsph --set dfsph_warm_start=0.5 --set dfsph_divergence_warm_start=0.5"
    "iisph:cold|--set solver=iisph --set iisph_warm_start=0"
    "wcsph:poly6|--set solver=wcsph --set sph_kernel=poly6_spiky"
)
devices=(cpu)
[[ $have_opencl == 1 ]] && devices+=(opencl)

for dev in "${devices[@]}"; do
    for scene in quick moving_wall dam_break double_dam_break; do
        case $scene in
            quick) n=$frames_small ;;
            moving_wall) n=3 ;;
            dam_break) n=2 ;;
            double_dam_break) n=1 ;;
        esac
        for s in $solvers; do
            run "$dev/$scene/$s" "$pbf" run "$root/scenes/$scene.json" --frames "$n" \
                --device "$dev" --set solver="$s"
        done
    done
    for v in "${variants[@]}"; do
        name=${v%%|*}
        read -r -a args <<<"${v#*|}"
        run "$dev/quick/$name" "$pbf" run "$root/scenes/quick.json" --frames "$frames_small" \
            --device "$dev" "${args[@]}"
    done
done
# Thread counts: one backend gives the same bits for any count (a check of the harness too).
for s in $solvers; do
    run "cpu1/quick/$s" env OMP_NUM_THREADS=1 "$pbf" run "$root/scenes/quick.json" \
        --frames "$frames_small" --set solver="$s" --threads 1
done
# Every frame format.
for f in ply csv geo bgeo; do
    run "fmt/$f" "$pbf" run "$root/scenes/quick.json" --frames 2 --format "$f"
done
# MPI: 2 processes, every solver.
if [[ $have_mpi == 1 ]]; then
    for s in $solvers; do
        run "mpi2/quick/$s" mpirun --allow-run-as-root --oversubscribe -np 2 \
            env OMP_NUM_THREADS=1 "$pbf" run "$root/scenes/quick.json" --frames "$frames_small" \
            --set solver="$s"
    done
fi
sort -k2 "$tmp/list" >"$out"
echo "identity: $(wc -l <"$out") frame files hashed (opencl: $have_opencl, mpi: $have_mpi) -> $out"
