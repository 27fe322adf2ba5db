#!/usr/bin/env bash
# What a lent GPU machine runs, in one call, from a build of this machine packed by
# scripts/device_bundle.sh into .dev/ (see scripts/device_env.sh): the machine's facts, the
# device tests (CUDA and OpenCL on the NVIDIA GPU), the benchmarks and the MPI scaling runs.
# Logs and JSON come back in $OUT/gpu_session.tar.gz (or ./gpu_out), the short summary as
# $OUT/summary.txt and as the last lines printed.
#
#   bash bench/gpu_session.sh PHASE...   PHASE: probe tests bench big variants ncu mpi
#                                        (default: probe tests bench)
set -uo pipefail
final="${OUT:-$(pwd)/gpu_out}"
out=/tmp/pbf_gpu_session   # everything, packed into ${final}/gpu_session.tar.gz at the end
mkdir -p "${out}" "${final}"
phases=("$@")
[[ ${#phases[@]} -eq 0 ]] && phases=(probe tests bench)
# shellcheck source=../scripts/device_env.sh
source scripts/device_env.sh > "${out}/env.log" 2>&1 || { cat "${out}/env.log"; exit 1; }
cat "${out}/env.log"
summary="${out}/summary.txt"
: > "${summary}"
note() { echo "$*" | tee -a "${summary}"; }
has() { for p in "${phases[@]}"; do [[ "$p" == "$1" ]] && return 0; done; return 1; }
stamp="$(date -u +%Y%m%dT%H%M%SZ)"

if has probe; then
    {
        nvidia-smi
        nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
        lscpu | head -20
        grep -o 'avx512[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
        free -g
        "${PBF}" devices
    } > "${out}/probe.log" 2>&1
    note "probe: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1); cpu: $(lscpu | sed -n 's/^Model name: *//p')"
    note "devices:"; "${PBF}" devices 2>&1 | sed 's/^/  /' | tee -a "${summary}"
fi

if has tests; then
    # the GPU-labelled tests: PBF and the SPH family on CUDA and on OpenCL (NVIDIA's driver),
    # the OpenCL backend against the CPU, the devices in the command, MPI with a GPU per process
    (cd "${PBF_BUILD}" && timeout 360 ctest --output-on-failure -L "cuda|opencl" --timeout 150) > "${out}/ctest_gpu.log" 2>&1
    note "ctest (cuda|opencl): $(grep -E 'tests passed|tests failed' "${out}/ctest_gpu.log" | tail -n 1)"
    grep -E '^ *[0-9]+/[0-9]+ Test' "${out}/ctest_gpu.log" | sed 's/^/  /' | tee -a "${summary}"
    (cd "${PBF_BUILD}" && timeout 150 ctest --output-on-failure -R app_devices --timeout 140) \
        > "${out}/ctest_devices.log" 2>&1
    note "app_devices: $(grep -E 'tests passed|tests failed' "${out}/ctest_devices.log" | tail -n 1)"
fi

if has bench; then
    for dev in cuda opencl; do
        for n in 1000000 10000000; do
            timeout 90 "${PBF}" bench --device "${dev}" --particles "${n}" --steps 50 --quiet \
                --json "${out}/bench_${dev}_${n}.json" > "${out}/bench_${dev}_${n}.log" 2>&1
            note "bench ${dev} ${n}: rc $? $(awk '/^custom/{print $5 " ms/step"; exit}' "${out}/bench_${dev}_${n}.log")"
        done
    done
    timeout 120 "${PBF}" bench --device cuda --case small,medium,large --quiet \
        --json "${out}/bench_cuda_cases.json" > "${out}/bench_cuda_cases.log" 2>&1
    note "bench cuda cases: rc $?"
fi

if has big; then
    timeout 400 "${PBF}" bench --device cuda --particles 100000000 --steps 10 --warmup 2 --quiet \
        --json "${out}/bench_cuda_100M.json" > "${out}/bench_cuda_100M.log" 2>&1
    note "bench cuda 100M: rc $?"
fi

if has variants; then
    # other builds of pbf packed beside the bundle (.dev/variants/pbf_NAME): 1M particles on CUDA
    for v in .dev/variants/pbf_*; do
        [[ -x "$v" ]] || continue
        name="$(basename "$v")"
        for dev in cuda opencl; do
            timeout 90 "$v" bench --device "${dev}" --particles 1000000 --steps 50 --quiet \
                --json "${out}/variant_${name}_${dev}.json" > "${out}/variant_${name}_${dev}.log" 2>&1
            note "variant ${name} ${dev}: rc $? $(awk '/^custom/{print $5 " ms/step"; exit}' "${out}/variant_${name}_${dev}.log") $(awk '/^custom/{n++} n==2{print "stages " $0; exit}' "${out}/variant_${name}_${dev}.log")"
        done
    done
fi

if has ncu; then
    ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)"
    timeout 240 "${ncu_bin}" --clock-control none -k regex:'pbf_k_(lambda|delta_p|curl|vorticity_xsph)' \
        -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section MemoryWorkloadAnalysis --section WarpStateStats \
        "${PBF}" bench --device cuda --particles 1000000 --steps 2 --warmup 1 --quiet \
        > "${out}/ncu.log" 2>&1
    note "ncu: rc $? ($(wc -l < "${out}/ncu.log") lines)"
fi

if has mpi; then
    PYTHONUNBUFFERED=1 timeout 420 python3 bench/mpi_weak.py --pbf "${PBF}" --procs 1,2,4,8,16 \
        --per-process 1000000 --frames 1 --strong-shares 4 --independent --json "${out}/mpi_weak.json" \
        > "${out}/mpi_weak.log" 2>&1
    note "mpi weak: rc $?"
    grep -E "^(serial|mpirun)" "${out}/mpi_weak.log" | sed 's/^/  /' | tee -a "${summary}"
fi
note "stamp ${stamp}"
cp "${summary}" "${final}/summary.txt"
tar -C "${out}" -czf "${final}/gpu_session.tar.gz" .
