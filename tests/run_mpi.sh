#!/usr/bin/env bash
# `mpirun -np N pbf run` (src/mpi/, app/cli/mpi_run.c) against the single-process run of
# scenes/quick.json (a dam break, 2250 particles, 12 frames, one thread per process):
#   - 1, 2, 3 and 4 processes (recursive coordinate bisection, the default) write frames and
#     checkpoints byte-identical to the single-process run's, and stats.jsonl lines equal to its
#     own apart from ms, plus ranks and the particle counts per process; each process builds
#     only its part of the scene (on 4, less than 3/4 of it, with room for less);
#   - 2 and 4 processes of 3 threads each: frames byte-identical too;
#   - 4 processes in slabs (mpi_decomposition = slabs): byte-identical too, and with more ghosts
#     per process than bisection's boxes; 8 processes (6 frames): boxes cut across all three
#     axes (a box with 7 or more neighbours: faces, edges and corners), byte-identical;
#   - 4 processes in slabs of equal width (rank_imbalance = 0): processes start empty, and
#     particles migrate into them across the slabs (their count becomes positive);
#   - mpi_output = pieces on 3 processes: VTK's parallel reader reads each frame_NNNNN.pvtp as
#     the single-process frame (tests/pvtp_reader_check.py: count, ids, values by id), the
#     checkpoint is byte-identical, `pbf render` draws the same images from the .pvtp as from
#     the single-process frames; with format = ply it is refused (exit 2);
#   - checkpoints are written by every process (one piece each and an index): the state they
#     hold equals the single-process checkpoint's bit for bit, memory order included
#     (tests/checkpoint_state_check.py merges the pieces by key independently of pbf);
#   - the checkpoint of frame 6 written by 1, 2 and 4 processes resumes on 1, 2 and 4 processes
#     and without MPI: frames 7..12 byte-identical and the state at frame 12 the same; a run
#     stopped at frame 6 on 2 processes resumes on 4, then on 1, then without MPI;
#   - a checkpoint cut short (some pieces written, a piece's .tmp half written, no index: what a
#     process killed while writing leaves) and a damaged piece: the previous checkpoint is used,
#     the run ends identical, the leftovers are deleted;
#   - SIGKILL of one process at random moments of runs on 1 to 4 processes (--checkpoint-every
#     1; 5 kills, fixed seed), each resumed on the next process count until the run finishes:
#     the same frames, stats and final state as an uninterrupted single-process run;
#   - the instability guard stops every process with one message naming the process and the
#     same particle as the single-process run (exit 3);
#   - a speed limit that cuts velocities (cfl 0.15): 4 processes count the same cuts in every
#     frame as the single-process run (owners count, ghosts do not) and warn once.
# Skips (77) when pbf was built without MPI or mpirun is missing.
#
#   bash tests/run_mpi.sh PBF HAVE_MPI [MPIRUN]
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpi_common.sh" "$@"
common=(--set threads=1 --frames 12 -q)

# same files: every frame, and the checkpoint of frame 12 (of a run to frame 12)
same_files() { # same_files DIR [FIRST_FRAME [LAST_FRAME]]
    local d="$1" first="${2:-0}" last="${3:-12}" f k bad=0
    for ((k = first; k <= last; ++k)); do
        f=$(printf 'frame_%05d.vtp' "${k}")
        cmp -s "ref/${f}" "${d}/${f}" || { echo "  ${d}/${f} differs"; bad=1; }
    done
    if [[ "${last}" -eq 12 ]]; then
        same_state ref/checkpoint_00012.pbfck "${d}/checkpoint_00012.pbfck" > /dev/null ||
            { echo "  ${d}/checkpoint_00012.pbfck holds another state"; bad=1; }
    fi
    return "${bad}"
}
# the same state in two checkpoints (single file or pieces + index), memory order included
same_state() { python3 "${here}/checkpoint_state_check.py" "$1" "$2"; }
# stats.jsonl: every member of the reference equal (but ms; solver_error, a sum over processes,
# within 1e-9 relative); ranks = N on every line
same_stats() { # same_stats DIR N
    python3 - "$1" "$2" << 'EOF'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
a = [json.loads(l) for l in open("ref/stats.jsonl")]
b = [json.loads(l) for l in open(d + "/stats.jsonl")]
ok = len(a) == len(b) == 13
for x, y in zip(a, b):
    for k in x:
        if k == "solver_error":  # a sum over processes: equal within double rounding
            if abs(x[k] - y[k]) > 1e-9 * max(abs(x[k]), 1e-12):
                print(f"  frame {x['frame']}: {k} {x[k]} != {y[k]}")
                ok = False
        elif k != "ms" and x[k] != y[k]:
            print(f"  frame {x['frame']}: {k} {x[k]} != {y[k]}")
            ok = False
    if y.get("ranks") != n or not (0 <= y["rank_particles_min"] <= y["rank_particles_max"] <= y["particles"]):
        print(f"  frame {y['frame']}: ranks/rank_particles wrong: {y}")
        ok = False
sys.exit(0 if ok else 1)
EOF
}

"${pbf}" run "${scene}" --out ref --checkpoint-every 6 "${common[@]}"
check "single-process reference run" $?

for n in 1 2 3 4; do # not quiet: np4.out's summary line is read below
    mp "${n}" run "${scene}" --out "np${n}" --checkpoint-every 6 --set threads=1 --frames 12 \
        > "np${n}.out" 2>&1
    check "mpirun -np ${n}: exit 0" $?
    same_files "np${n}"
    check "mpirun -np ${n}: frames byte-identical to the single-process run, checkpoint of the same state" $?
    same_stats "np${n}" "${n}"
    check "mpirun -np ${n}: stats.jsonl as the single-process run's, ranks = ${n}" $?
done
python3 -c '
import json, sys
s = [json.loads(l) for l in open("np2/stats.jsonl")]
sys.exit(0 if all(x["rank_particles_min"] > 0 for x in s) else 1)'
check "mpirun -np 2: balanced slabs, no process empty" $?
# no process ever holds the whole scene: each builds its slab of cells and the plane on either
# side (pbf_mpi_domain_create_blocks); its arrays then have room for its share (the whole
# scene, 2250 particles, on every process before)
room=$(grep -o 'room for at most [0-9]* particles' np4.out | grep -o '[0-9]*')
built=$(grep -o '[0-9]* built there' np4.out | grep -o '[0-9]*')
echo "  4 processes: room for at most ${room} particles on a process, ${built} built there (of 2250)"
[[ -n "${room}" && -n "${built}" && "${room}" -lt 1688 && "${built}" -lt 1688 ]]
check "mpirun -np 4: no process builds or keeps room for the whole scene (< 3/4 of it)" $?
# max_particles reserves rows in one process, not the limit's worth on every process
mp 4 run "${scene}" --out maxp --set threads=1 --set max_particles=100000 --frames 1 > maxp.out 2>&1
room=$(grep -o 'room for at most [0-9]* particles' maxp.out | grep -o '[0-9]*')
[[ -n "${room}" && "${room}" -lt 1688 ]]
check "mpirun -np 4, max_particles = 100000: room for ${room} particles on a process (< 1688)" $?

# threads within each process: the decomposition's passes (cells, owners, ghost targets, the
# rows' compaction, merge and ghost removal) run on the process's threads; the same files
for n in 2 4; do
    mp "${n}" run "${scene}" --out th${n} --set threads=3 --frames 12 --checkpoint-every 6 -q
    check "mpirun -np ${n}, 3 threads per process: exit 0" $?
    same_files th${n}
    check "mpirun -np ${n}, 3 threads per process: frames and checkpoint byte-identical to the single-process run" $?
done

# slabs against bisection's boxes: the same files, more ghosts
mp 4 run "${scene}" --out sl4 --set mpi_decomposition=slabs --checkpoint-every 6 --set threads=1 \
    --frames 12 > sl4.out 2>&1
check "mpirun -np 4, slabs: exit 0" $?
same_files sl4
check "mpirun -np 4, slabs: frames and checkpoint byte-identical to the single-process run" $?
ghosts() { grep -o '[0-9]* ghosts' "$1" | grep -o '[0-9]*'; }
neighbours() { grep -o 'up to [0-9]* neighbours' "$1" | grep -o '[0-9]*'; }
gs=$(ghosts sl4.out)
gb=$(ghosts np4.out)
echo "  ghosts per process and step on 4 processes: slabs ${gs}, bisection ${gb}"
[[ -n "${gs}" && -n "${gb}" && "${gb}" -lt "${gs}" ]]
check "mpirun -np 4: bisection's boxes receive fewer ghosts than slabs" $?
mp 8 run "${scene}" --out bi8 --set threads=1 --frames 6 > bi8.out 2>&1
check "mpirun -np 8, bisection: exit 0" $?
same_files bi8 0 6
check "mpirun -np 8, bisection: frames 0..6 byte-identical to the single-process run" $?
nb=$(neighbours bi8.out)
echo "  8 processes: up to ${nb} neighbours"
[[ -n "${nb}" && "${nb}" -ge 7 ]]
check "mpirun -np 8, bisection: boxes cut across three axes (a box with >= 7 neighbours)" $?

# frames written in pieces, read back with VTK's parallel reader
mp 3 run "${scene}" --out pc3 --set mpi_output=pieces --checkpoint-every 6 "${common[@]}"
check "mpirun -np 3, mpi_output = pieces: exit 0" $?
/usr/bin/python3 "${here}/pvtp_reader_check.py" pc3 ref 3 0 1 6 12
check "mpirun -np 3, pieces: VTK reads each .pvtp as the single-process frame" $?
same_state ref/checkpoint_00012.pbfck pc3/checkpoint_00012.pbfck
check "mpirun -np 3, pieces: the checkpoint's state equals the single-process one" $?
[[ $(ls np4 | grep -c '^checkpoint_00012_0000[0-3]\.pbfpc$') -eq 4 && $(ls np4 | grep -c '\.pbfpc$') -eq 8 ]]
check "mpirun -np 4: each checkpoint in 4 pieces, the last two checkpoints kept" $?
"${pbf}" render pc3 --size 320x180 --out pc3_png -q && "${pbf}" render ref --size 320x180 --out ref_png -q &&
    cmp -s ref_png/frame_00012.png pc3_png/frame_00012.png && cmp -s ref_png/frame_00001.png pc3_png/frame_00001.png
check "pbf render of the .pvtp frames: the same images as of the single-process frames" $?
mp 2 run "${scene}" --out pcply --set mpi_output=pieces --set format=ply "${common[@]}" > pcply.out 2>&1
rc=$?
[[ "${rc}" -ne 0 ]] && grep -q 'mpi_output = "pieces" needs format = "vtp"' pcply.out
check "mpi_output = pieces with format = ply: refused, naming both keys" $?

mp 4 run "${scene}" --out eq4 --set mpi_decomposition=slabs --set rank_imbalance=0 \
    --checkpoint-every 6 "${common[@]}"
check "mpirun -np 4, slabs of equal width: exit 0" $?
same_files eq4
check "mpirun -np 4, slabs of equal width: byte-identical frames" $?
python3 -c '
import json, sys
s = [json.loads(l) for l in open("eq4/stats.jsonl")]
first, last = s[0]["rank_particles_min"], s[-1]["rank_particles_min"]
print(f"  smallest process: {first} particles at frame 0, {last} at frame 12")
sys.exit(0 if first == 0 and last > 0 else 1)'
check "mpirun -np 4, slabs of equal width: an empty process receives migrating particles" $?

# the checkpoint of frame 6 written by n processes, resumed on m (0: without MPI)
from6() { # from6 SRC DST: DST = SRC as it was when frame 6's checkpoint was the newest
    rm -rf "$2" && cp -r "$1" "$2" && rm -f "$2"/checkpoint_00012*
}
for n in 1 2 4; do
    for m in 1 2 4 0; do
        from6 "np${n}" "rs${n}_${m}"
        if [[ "${m}" -eq 0 ]]; then
            "${pbf}" run --resume "rs${n}_${m}" --frames 12 -q
        else
            mp "${m}" run --resume "rs${n}_${m}" --frames 12 -q
        fi
        rc=$?
        [[ "${rc}" -eq 0 ]] && same_files "rs${n}_${m}" 7
        check "checkpoint of $((n)) process(es) resumed on ${m/#0/no MPI} process(es): frames 7..12 and state byte-identical" $?
    done
done
# stopped at frame 6 on 2 processes, resumed on 4 to frame 9, on 1 to 10, without MPI to 12
mp 2 run "${scene}" --out res --checkpoint-every 3 --set threads=1 --frames 6 -q &&
    mp 4 run --resume res --frames 9 -q && mp 1 run --resume res --frames 10 -q &&
    "${pbf}" run --resume res --frames 12 -q
check "resume from 2 processes on 4, on 1, then without MPI: exit 0" $?
same_files res 7
cmp -s ref/checkpoint_00012.pbfck res/checkpoint_00012.pbfck
check "resume on other process counts: frames 7..12 byte-identical, the last checkpoint (single file) too" $?

# what a process killed while writing the checkpoint of frame 12 leaves: some pieces, a piece's
# half-written .tmp, no index; the previous checkpoint (frame 6) is used
rm -rf cut && cp -r np4 cut && rm -f cut/checkpoint_00012.pbfck cut/checkpoint_00012_0000[23].pbfpc &&
    head -c 1000 np4/checkpoint_00012_00002.pbfpc > cut/checkpoint_00012_00002.pbfpc.tmp
mp 3 run --resume cut --frames 12 > cut.out 2>&1
rc=$?
[[ "${rc}" -eq 0 ]] && grep -q 'checkpoint_00006.pbfck: frame 6' cut.out && same_files cut 7 &&
    ! ls cut | grep -q '\.tmp$' && [[ $(ls cut | grep -c '\.pbfpc$') -eq 7 ]] # 4 of frame 6, 3 of 12
ok=$?
[[ "${ok}" -eq 0 ]] || { echo "  exit ${rc}; what the run printed:"; sed 's/^/    /' cut.out; ls cut | sed 's/^/    /'; }
check "checkpoint cut short by a killed process: resumed from the previous one, identical, leftovers deleted" "${ok}"
# a damaged piece of the newest checkpoint: refused with a message, the previous one used; process
# 2 of 3 reads piece 1 of 2, and process 0 prints its message (gathered, not forwarded by mpirun)
rm -rf dmg && cp -r np2 dmg && printf 'Z' | dd of=dmg/checkpoint_00012_00001.pbfpc bs=1 seek=300 conv=notrunc 2> /dev/null
mp 3 run --resume dmg --frames 12 > dmg.out 2>&1
rc=$?
[[ "${rc}" -eq 0 ]] && grep -q 'MPI process 2: dmg/checkpoint_00012_00001.pbfpc: checksum mismatch' dmg.out &&
    grep -q 'trying the previous checkpoint' dmg.out && same_files dmg 7
ok=$?
[[ "${ok}" -eq 0 ]] || { echo "  exit ${rc}; what the run printed:"; sed 's/^/    /' dmg.out; }
check "a damaged piece: refused, the previous checkpoint used, the run ends identical" "${ok}"

# SIGKILL of one process at random moments, resumed on another process count each time: each
# attempt is killed once its run has written 1 to 4 more frames (stats.jsonl lines) and then a
# random 0-40 ms more (so that kills land in checkpoint writes too), 5 times; then it finishes
# 120 frames: a frame of tiny.json takes milliseconds, so a run may write several frames between
# the poll and the kill; 5 kills must land before the run's end on a fast machine too
tiny="${here}/resilience/tiny.json"
kframes=120
"${pbf}" run "${tiny}" --out kref --frames "${kframes}" --checkpoint-every 1 --set threads=1 -q
RANDOM=17 # fixed seed
kills=0 attempts=0 counts=(2 4 1 3)
lines() { [[ -f kill/stats.jsonl ]] && wc -l < kill/stats.jsonl || echo 0; }
while [[ ${attempts} -lt 30 ]]; do
    n=${counts[$((attempts % 4))]}
    attempts=$((attempts + 1))
    if compgen -G "kill/checkpoint_*.pbfck" > /dev/null; then
        args=(run --resume kill --checkpoint-every 1 -q)
    else
        args=(run "${tiny}" --out kill --frames "${kframes}" --checkpoint-every 1 --set threads=1 -q)
    fi
    target=$(($(lines) + 1 + RANDOM % 4))
    "${mpirun}" --oversubscribe --allow-run-as-root -np "${n}" "${pbf}" "${args[@]}" > kill.out 2>&1 &
    job=$!
    if [[ ${kills} -lt 5 ]]; then
        while kill -0 "${job}" 2> /dev/null && [[ $(lines) -lt ${target} ]]; do sleep 0.02; done
        extra=$((RANDOM % 41))
        sleep "0.0$((extra / 10))$((extra % 10))"
        victims=($(pgrep -P "${job}" -x pbf))
        if [[ ${#victims[@]} -gt 0 ]]; then
            victim=${victims[$((RANDOM % ${#victims[@]}))]}
            if kill -KILL "${victim}" 2> /dev/null; then
                kills=$((kills + 1))
                echo "  kill ${kills}: one of ${n} processes at frame $(($(lines) - 1)) + ${extra} ms; then $(ls kill | grep -c 'pbfck$') indexes, $(ls kill | grep -c 'pbfpc$') pieces"
            fi
        fi
    fi
    wait "${job}"
    rc=$?
    [[ ${rc} -eq 0 ]] && break
done
echo "  ${kills} processes killed in ${attempts} attempts"
ok=1
for f in kref/frame_*.vtp; do cmp -s "${f}" "kill/$(basename "${f}")" || ok=0; done
[[ ${rc} -eq 0 && ${kills} -ge 5 && ${ok} -eq 1 ]] && same_state "kref/checkpoint_00${kframes}.pbfck" "kill/checkpoint_00${kframes}.pbfck" > /dev/null &&
    python3 - << 'EOF'
import json, sys
a = [json.loads(l) for l in open("kref/stats.jsonl")]
b = [json.loads(l) for l in open("kill/stats.jsonl")]
bad = len(a) != len(b) or any(
    (abs(x[k] - y[k]) > 1e-9 * max(abs(x[k]), 1e-12)) if k == "solver_error" else x[k] != y[k]
    for x, y in zip(a, b) for k in x if k != "ms")
sys.exit(1 if bad else 0)
EOF
check "SIGKILL of a process at random moments, resumed on 1 to 4 processes: frames, stats and final state as uninterrupted" $?

"${pbf}" run "${scene}" --out g1 --set guard_density_error=0.5 "${common[@]}" 2> g1.err
g1=$?
mp 4 run "${scene}" --out g4 --set guard_density_error=0.5 "${common[@]}" > g4.out 2>&1
g4=$?
sed 's/^/  /' g4.out | head -3
id1=$(grep -o '(id [0-9]*)' g1.err)
[[ "${g1}" -eq 3 && "${g4}" -ne 0 ]] && grep -q 'exit code: *3\|Exit code: *3' g4.out &&
    [[ $(grep -c 'unstable simulation' g4.out) -eq 1 ]] && grep -q 'on MPI process [0-3] of 4' g4.out &&
    grep -qF "${id1}" g4.out
check "guard over 4 processes: exit 3, one message naming the process and the particle ${id1}" $?

# the speed limit's cuts: counted by owners only, the same as one process's, one warning
"${pbf}" run "${scene}" --out lim1 --set cfl=0.15 "${common[@]}" 2> lim1.err
mp 4 run "${scene}" --out lim4 --set cfl=0.15 "${common[@]}" > lim4.out 2>&1
python3 - << 'EOF'
import json, sys
a = [json.loads(l)["speed_clamps"] for l in open("lim1/stats.jsonl")]
b = [json.loads(l)["speed_clamps"] for l in open("lim4/stats.jsonl")]
print(f"  speed_clamps per frame: 1 process {a}, 4 processes {b}")
sys.exit(0 if a == b and sum(a) > 0 else 1)
EOF
check "cfl 0.15 on 4 processes: the same speed-limit cuts per frame as one process" $?
[[ $(grep -c "warning: frame [0-9]*: the speed limit cut" lim4.out) -eq 1 &&
    $(grep -c "warning" lim1.err) -eq 1 ]]
check "cfl 0.15 on 4 processes: one warning, as on one process" $?

echo "${passed} passed, ${failed} failed"
[[ "${failed}" -eq 0 ]]
