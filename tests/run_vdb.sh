#!/usr/bin/env bash
# OpenVDB level sets (`pbf run --mesh-format vdb`, `pbf mesh --format vdb`, app/io/vdb_writer.cpp)
# read back with OpenVDB's own API (tests/vdb_check.cpp) and compared with the PLY meshes of the
# same frames:
#   - a resting block (20^3 particles filling the bottom of a box, 10 frames): frames 0 and 10,
#     cube_size 1 and 0.5 (voxel = cube_size x r): one grid "surface", class level set, active
#     voxels, the volume inside the zero crossing within 3 % of the particles' (8000 (2r)^3; the
#     mesh's rounded edges make it 1-2 % less) and 2 % of the mesh's, bounds equal to the mesh's
#     within a voxel;
#   - a dam-break frame (scenes/quick.json, frame 6): the same checks against the mesh alone;
#   - the same frame on 1 and 2 threads gives the same bytes;
#   - the files are written atomically: no NAME.tmp left; a target that cannot be replaced (a
#     directory in its place) is an error naming the file, exit 1, no NAME.tmp left;
#   - the pbf program does not link OpenVDB (app/io/vdb.c loads pbf_vdb.so on demand); a module
#     that cannot be loaded is an error naming it;
#   - a run owns mesh_NNNNN.vdb: a new run into the directory removes the old ones.
# Without OpenVDB (cmake: "pbf OpenVDB: OFF"): `--format vdb` and `--mesh-format vdb` are refused
# (exit 2, "no OpenVDB support", nothing written or deleted), then exit 77 (skipped).
#
#   bash tests/run_vdb.sh PATH/TO/pbf ON|OFF [PATH/TO/vdb_check]
set -uo pipefail

if [[ $# -lt 2 ]]; then
    echo "usage: run_vdb.sh PATH/TO/pbf ON|OFF [PATH/TO/vdb_check]" >&2
    exit 2
fi
pbf="$1"
have="$2"
vdb_check="${3:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_vdb.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export OMP_WAIT_POLICY=PASSIVE

source "${here}/check.sh"

# the resting block: 20 x 20 x 20 particles of radius 5 mm filling [0, 0.2]^3 of a taller box
cat > "${tmp}/block.json" <<'EOF'
{
  "name": "resting_block",
  "domain_min": [0, 0, 0],
  "domain_max": [0.2, 0.4, 0.2],
  "gravity": [0, -9.81, 0],
  "particle_radius": 0.005,
  "frames": 10,
  "fps": 60,
  "substeps": 4,
  "fluid": [{"min": [0, 0, 0], "max": [0.2, 0.2, 0.2]}]
}
EOF

if [[ "${have}" != ON ]]; then
    rc=0
    "${pbf}" run "${tmp}/block.json" --out "${tmp}/no" --frames 1 --mesh-format vdb -q \
        > "${tmp}/no_run.log" 2>&1 || rc=$?
    check "without OpenVDB: pbf run --mesh-format vdb exits 2 (got ${rc})" $((rc != 2))
    grep -q "no OpenVDB support" "${tmp}/no_run.log"
    check "  its message says the build has no OpenVDB support: $(head -c 300 "${tmp}/no_run.log")" $?
    [[ ! -e "${tmp}/no" ]]
    check "  nothing written" $?
    "${pbf}" run "${tmp}/block.json" --out "${tmp}/yes" --frames 1 -q > /dev/null 2>&1
    rc=0
    "${pbf}" mesh "${tmp}/yes" --format vdb -q > "${tmp}/no_mesh.log" 2>&1 || rc=$?
    check "without OpenVDB: pbf mesh --format vdb exits 2 (got ${rc})" $((rc != 2))
    grep -q "no OpenVDB support" "${tmp}/no_mesh.log"
    check "  its message says the build has no OpenVDB support: $(head -c 300 "${tmp}/no_mesh.log")" $?
    ! ls "${tmp}/yes"/mesh_* > /dev/null 2>&1
    check "  no mesh file written" $?
    "${pbf}" mesh --help | grep -q "vdb not available"
    check "  pbf mesh --help says vdb is not available" $?
    if [[ ${failed} -ne 0 ]]; then
        echo "FAILED: ${failed} check(s)"
        exit 1
    fi
    echo "SKIP: pbf was built without OpenVDB (bash scripts/setup-debian.sh --with-openvdb, then" \
        "configure again); the refusal of the vdb format was checked"
    exit 77
fi

# ---- the resting block ------------------------------------------------------------------------
rc=0
"${pbf}" run "${tmp}/block.json" --out "${tmp}/block" --mesh-format vdb -q > "${tmp}/run.log" 2>&1 || rc=$?
check "pbf run --mesh-format vdb: exit 0 (got ${rc}: $(tail -n 3 "${tmp}/run.log"))" ${rc}
n=$(ls "${tmp}/block"/mesh_*.vdb 2> /dev/null | wc -l)
check "  11 files mesh_00000.vdb .. mesh_00010.vdb (got ${n})" $((n != 11))
! ls "${tmp}/block"/*.tmp > /dev/null 2>&1
check "  no NAME.tmp left" $?
rc=0
"${pbf}" mesh "${tmp}/block" --format ply --out "${tmp}/block_ply" -q || rc=$?
check "pbf mesh --format ply of the same frames: exit 0 (got ${rc})" ${rc}
# the particles' volume: 8000 x (2 r)^3 = 0.008 m^3
for f in 00000 00010; do
    rc=0
    "${vdb_check}" "${tmp}/block/mesh_${f}.vdb" "${tmp}/block_ply/mesh_${f}.ply" 0.005 0.008 0.03 \
        || rc=$?
    check "resting block, frame ${f}, cube_size 1 (vdb_check above)" ${rc}
done
rc=0
"${pbf}" mesh "${tmp}/block" --format vdb --set cube_size=0.5 --frames 10:10 --out "${tmp}/half" -q \
    && "${pbf}" mesh "${tmp}/block" --format ply --set cube_size=0.5 --frames 10:10 \
        --out "${tmp}/half" -q || rc=$?
check "pbf mesh --format vdb --set cube_size=0.5: exit 0 (got ${rc})" ${rc}
rc=0
"${vdb_check}" "${tmp}/half/mesh_00010.vdb" "${tmp}/half/mesh_00010.ply" 0.0025 0.008 0.03 || rc=$?
check "resting block, frame 10, cube_size 0.5: voxel 2.5 mm (vdb_check above)" ${rc}

# ---- a dam-break frame ------------------------------------------------------------------------
rc=0
"${pbf}" run "${here}/../scenes/quick.json" --out "${tmp}/dam" --frames 6 -q || rc=$?
"${pbf}" mesh "${tmp}/dam" --format vdb --frames 6:6 -q || rc=$?
"${pbf}" mesh "${tmp}/dam" --format ply --frames 6:6 -q || rc=$?
check "dam break (scenes/quick.json), frame 6: vdb and ply meshes (exit ${rc})" ${rc}
rc=0
"${vdb_check}" "${tmp}/dam/mesh_00006.vdb" "${tmp}/dam/mesh_00006.ply" 0.01 || rc=$?
check "dam break, frame 6 (vdb_check above)" ${rc}

# the same frame on 1 and 2 threads: the same bytes (the file's UUID is made from its contents)
rc=0
for t in 1 2; do
    "${pbf}" mesh "${tmp}/dam" --format vdb --frames 6:6 --set threads=${t} --out "${tmp}/t${t}" -q \
        || rc=$?
done
cmp -s "${tmp}/t1/mesh_00006.vdb" "${tmp}/t2/mesh_00006.vdb" && cmp -s "${tmp}/t1/mesh_00006.vdb" \
    "${tmp}/dam/mesh_00006.vdb" || rc=1
check "dam break, frame 6, on 1 and 2 threads and the default: byte-identical files" ${rc}

# ---- atomic writing and errors ----------------------------------------------------------------
mkdir -p "${tmp}/err"
cp "${tmp}/dam/scene.json" "${tmp}/dam/frame_00006.vtp" "${tmp}/err/"
mkdir "${tmp}/err/mesh_00006.vdb"
rc=0
"${pbf}" mesh "${tmp}/err" --format vdb -q > "${tmp}/err.log" 2>&1 || rc=$?
check "a directory in the place of mesh_00006.vdb: exit 1 (got ${rc})" $((rc != 1))
grep -q "mesh_00006.vdb" "${tmp}/err.log"
check "  the message names the file: $(head -c 300 "${tmp}/err.log")" $?
! ls "${tmp}/err"/*.tmp > /dev/null 2>&1
check "  no NAME.tmp left" $?

# OpenVDB is loaded only to write a .vdb file: `pbf` itself does not link it; a missing module
# (PBF_VDB_MODULE naming another file) is an error naming the file, before any frame
rc=0
if command -v ldd > /dev/null 2>&1; then
    ! ldd "${pbf}" | grep -q -i openvdb || rc=1
fi
check "the pbf program does not link OpenVDB (the module pbf_vdb.so is loaded on demand)" ${rc}
rc=0
PBF_VDB_MODULE="${tmp}/no_such_module.so" "${pbf}" mesh "${tmp}/dam" --format vdb --out \
    "${tmp}/nomod" -q > "${tmp}/nomod.log" 2>&1 || rc=$?
grep -q "no_such_module.so" "${tmp}/nomod.log" && [[ ${rc} -eq 1 ]] && \
    ! ls "${tmp}/nomod"/mesh_* > /dev/null 2>&1
check "PBF_VDB_MODULE naming a missing file: exit 1 (got ${rc}), message names it, no file: $(head -c 300 "${tmp}/nomod.log")" $?

# a new run into the directory removes the level sets of the earlier one
rc=0
"${pbf}" run "${tmp}/block.json" --out "${tmp}/block" --frames 2 -q > /dev/null 2>&1 || rc=$?
n=$(ls "${tmp}/block"/mesh_*.vdb 2> /dev/null | wc -l)
check "a new run without --mesh into the directory removes the old mesh_NNNNN.vdb (${n} left)" \
    $((rc != 0 || n != 0))

if [[ ${failed} -ne 0 ]]; then
    echo "FAILED: ${failed} check(s)"
    exit 1
fi
echo "all vdb checks passed"
