#!/usr/bin/env bash
# `mpirun -np N pbf run` with the options of the single-process run (app/cli/mpi_run.c):
#   - --mesh: process 0 meshes each frame gathered on it: on 2 processes (PLY) and on 3 with
#     mpi_output = pieces (OBJ) the mesh_NNNNN files are byte-identical to the single-process
#     run's; a bad --mesh-set is refused (exit 2) with one message;
#   - --resume of a run stopped before its first checkpoint starts over from frame 0 (one line
#     says so) and ends identical to an uninterrupted run; --resume --set of a key the
#     checkpoints' scene fixes is refused (exit 2) naming the key and both values;
#   - a .pvtp frame index cut short, or missing a piece, is refused by `pbf render` naming the
#     file and the counts.
# Skips (77) when pbf was built without MPI or mpirun is missing.
#
#   bash tests/run_mpi_options.sh PBF HAVE_MPI [MPIRUN]
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpi_common.sh" "$@"
T=(--set threads=1 -q)

# ---- --mesh ---------------------------------------------------------------------------------
"${pbf}" run "${scene}" --out ref --frames 6 --mesh "${T[@]}" > ref.log 2>&1
check "single-process run --mesh (exit $?)" $?
"${pbf}" run "${scene}" --out ref_obj --frames 6 --mesh --mesh-format obj "${T[@]}" > ref_obj.log 2>&1
check "single-process run --mesh --mesh-format obj (exit $?)" $?

same_meshes() { # same_meshes REF DIR EXT: mesh_00000..6 byte-identical
    local k f bad=0
    for ((k = 0; k <= 6; ++k)); do
        f=$(printf 'mesh_%05d.%s' "${k}" "$3")
        cmp -s "$1/${f}" "$2/${f}" || { echo "     $2/${f} differs or is missing"; bad=1; }
    done
    return "${bad}"
}
rc=0
mp 2 run "${scene}" --out np2 --frames 6 --mesh "${T[@]}" > np2.log 2>&1 || rc=$?
same_meshes ref np2 ply
check "2 processes --mesh (exit ${rc}): meshes byte-identical to the single-process run's" $((rc | $?))
rc=0
mp 3 run "${scene}" --out np3 --frames 6 --mesh --mesh-format obj --set mpi_output=pieces "${T[@]}" \
    > np3.log 2>&1 || rc=$?
same_meshes ref_obj np3 obj
check "3 processes, mpi_output = pieces, --mesh --mesh-format obj (exit ${rc}): the same meshes" $((rc | $?))
rc=0
mp 2 run "${scene}" --out bad_mesh --frames 2 --mesh --mesh-set bogus=1 "${T[@]}" > bad_mesh.log 2>&1 ||
    rc=$?
[[ ${rc} -eq 2 && $(grep -c '^pbf: --mesh: surface parameter "bogus"' bad_mesh.log) -eq 1 ]]
ok=$?
check "--mesh-set bogus=1 refused once (exit ${rc}): $(grep '^pbf' bad_mesh.log | head -n 2)" ${ok}

# ---- --resume without a checkpoint: from frame 0 ----------------------------------------------
# what a run killed after frame 1 leaves (no checkpoint: none was asked for): frames 0 and 1,
# their stats lines, a half-written frame
cp -a ref k
rm -f k/mesh_* k/frame_0000[2-6].vtp
head -n 2 ref/stats.jsonl > k/stats.jsonl
printf 'half a frame' > k/frame_00002.vtp.tmp
rc=0
mp 2 run --resume k "${T[@]}" > k.out 2> k.err || rc=$?
[[ ${rc} -eq 0 && $(grep -c '^pbf: ' k.err) -eq 1 ]] &&
    grep -q "^pbf: --resume k: no checkpoint yet (the run stopped before its first): starting over from frame 0$" k.err
ok=$?
check "2 processes --resume without a checkpoint (exit ${rc}): one line, from frame 0: $(grep '^pbf' k.err | head -n 3)" ${ok}
bad=0
for ((n = 0; n <= 6; ++n)); do
    f=$(printf 'frame_%05d.vtp' "${n}")
    cmp -s "ref/${f}" "k/${f}" || { echo "     k/${f} differs"; bad=1; }
done
[[ ! -e k/frame_00002.vtp.tmp ]] || { echo "     k/frame_00002.vtp.tmp left"; bad=1; }
check "the restarted run's frames byte-identical to the uninterrupted run's" ${bad}

# ---- --resume --set of a key the checkpoints fix -------------------------------------------------
mp 2 run "${scene}" --out ck --frames 4 --checkpoint-every 2 "${T[@]}" > ck.log 2>&1
check "2 processes with checkpoints (exit $?)" $?
rc=0
mp 2 run --resume ck --set particle_radius=0.02 "${T[@]}" > locked.out 2> locked.err || rc=$?
[[ ${rc} -eq 2 && $(grep -c '^pbf: ' locked.err) -eq 1 ]] &&
    grep -qF "particle_radius (0.01 in the checkpoints, 0.02 now) may not change on resume" locked.err &&
    ! grep -q "another scene\|no valid checkpoint" locked.err
ok=$?
check "--resume --set particle_radius=0.02 under mpirun (exit ${rc}) names the key: $(grep '^pbf' locked.err | head -n 2)" ${ok}

# ---- a .pvtp index cut short or missing a piece ---------------------------------------------
sed '/<Piece Source="frame_00001_00001.vtp"\/>/,$d' np3/frame_00001.pvtp > cut.pvtp
cp cut.pvtp np3/frame_00001.pvtp
rc=0
"${pbf}" render np3 --size 64x48 -q > render_cut.log 2>&1 || rc=$?
[[ ${rc} -ne 0 ]] && grep -qF "np3/frame_00001.pvtp: truncated (no </PPolyData>)" render_cut.log
ok=$?
check "pbf render: a .pvtp cut after its first piece refused (exit ${rc}): $(head -c 300 render_cut.log)" ${ok}
sed -i 's#$#\n  </PPolyData>\n</VTKFile>#' np3/frame_00001.pvtp # closed again, one piece
rc=0
"${pbf}" render np3 --size 64x48 -q > render_piece.log 2>&1 || rc=$?
[[ ${rc} -ne 0 ]] && grep -q "np3/frame_00001.pvtp: particles missing: [0-9]* particles in 1 pieces of the 2250 particles stats.jsonl gives for frame 1" render_piece.log
ok=$?
check "pbf render: a .pvtp missing pieces refused (exit ${rc}): $(head -c 300 render_piece.log)" ${ok}

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
