#!/usr/bin/env bash
# scripts/blender_import.py run headless in Blender on a small run of scenes/quick.json:
#   - `pbf run --frames 3 --mesh` -> 4 PLY meshes imported as 4 objects, frames 0 to 3 at the
#     scene's fps; each object's vertex and triangle counts are the file's, its bounds the file's
#     vertices turned into Blender's axes (pbf (x, y, z) -> Blender (x, -z, y)) and inside the
#     container; each object visible on its own frame only; the camera is the default view;
#   - one frame rendered with Cycles (tiny, 1 sample): a PNG of the asked size, not blank;
#   - the same meshes as OBJ (`pbf mesh --format obj`) with --frames 1:2: 2 objects, the same
#     counts;
#   - a directory without meshes and a frame to render outside the series: exit 2 with a
#     message.
# Exit 77 (skipped) when blender is not installed (bash scripts/setup-debian.sh --with-blender).
#
#   bash tests/run_blender.sh PATH/TO/pbf PYTHON3
set -uo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: run_blender.sh PATH/TO/pbf PYTHON3" >&2
    exit 2
fi
pbf="$1"
python="$2"
if [[ "${pbf}" != /* ]]; then pbf="$(pwd)/${pbf}"; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="${here}/../scripts/blender_import.py"
if ! command -v blender > /dev/null 2>&1; then
    echo "SKIP: blender is not installed (bash scripts/setup-debian.sh --with-blender)"
    exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_blender.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

source "${here}/check.sh"

blender_run() { # blender_run LOG ARGS... : the script headless, its output in LOG
    local log="$1"
    shift
    blender -b --factory-startup --python-exit-code 1 --python "${script}" -- "$@" \
        > "${log}" 2>&1
}

rc=0
"${pbf}" run "${here}/../scenes/quick.json" --out "${tmp}/run" --frames 3 --mesh -q \
    > "${tmp}/run.log" 2>&1 || rc=$?
check "pbf run --frames 3 --mesh: exit 0 (got ${rc})" ${rc}

rc=0
blender_run "${tmp}/ply.log" "${tmp}/run" --report "${tmp}/ply.json" --render 2 --size 64x36 \
    --samples 1 --threads 2 --out "${tmp}/png" || rc=$?
check "blender import of the PLY series: exit 0 (got ${rc}: $(grep -v '^Fra:' "${tmp}/ply.log" | tail -n 3))" ${rc}

rc=0
"${python}" - "${tmp}/run" "${tmp}/ply.json" 0 3 "${tmp}/png/blender_00002.png" <<'PYEOF' || rc=$?
import json, math, os, struct, sys, zlib

run, report_path, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
png = sys.argv[5] if len(sys.argv) > 5 else None
report = json.load(open(report_path))
scene = json.load(open(os.path.join(run, "scene.json")))
errors = []

def read_ply(path):
    data = open(path, "rb").read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode().split("\n")
    nv = int([l for l in header if l.startswith("element vertex")][0].split()[2])
    nf = int([l for l in header if l.startswith("element face")][0].split()[2])
    pts = [struct.unpack_from("<3f", data, end + 24 * i) for i in range(nv)]
    return nv, nf, pts

frames = report["frames"]
numbers = [f["number"] for f in frames]
if numbers != list(range(first, last + 1)):
    errors.append(f"frames {numbers}, expected {first} to {last}")
if (report["frame_start"], report["frame_end"]) != (first, last):
    errors.append(f"scene frames {report['frame_start']} to {report['frame_end']}")
if abs(report["fps"] - scene["fps"]) > 1e-6:
    errors.append(f"fps {report['fps']}, scene {scene['fps']}")
lo, hi, r = scene["domain_min"], scene["domain_max"], scene["particle_radius"]
box_lo = [lo[0] - 2 * r, -hi[2] - 2 * r, lo[1] - 2 * r]  # Blender axes: (x, -z, y)
box_hi = [hi[0] + 2 * r, -lo[2] + 2 * r, hi[1] + 2 * r]
for f in frames:
    nv, nf, pts = read_ply(os.path.join(run, f"mesh_{f['number']:05d}.ply"))
    if (f["vertices"], f["triangles"]) != (nv, nf):
        errors.append(f"frame {f['number']}: {f['vertices']} vertices, {f['triangles']} "
                      f"triangles; the file has {nv}, {nf}")
    b = [(p[0], -p[2], p[1]) for p in pts]
    want_lo = [min(q[k] for q in b) for k in range(3)]
    want_hi = [max(q[k] for q in b) for k in range(3)]
    for k in range(3):
        if abs(f["bounds_min"][k] - want_lo[k]) > 1e-5 or abs(f["bounds_max"][k] - want_hi[k]) > 1e-5:
            errors.append(f"frame {f['number']}: bounds {f['bounds_min']} {f['bounds_max']}, "
                          f"the file's {want_lo} {want_hi}")
            break
        if f["bounds_min"][k] < box_lo[k] or f["bounds_max"][k] > box_hi[k]:
            errors.append(f"frame {f['number']}: bounds outside the container")
            break
    if f["visible_at"] != [f["number"]]:
        errors.append(f"frame {f['number']}: visible at frames {f['visible_at']}")
if report["material"]["ior"] != 1.33 or report["material"]["transmission"] != 1.0:
    errors.append(f"material {report['material']}")
if png:
    data = open(png, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        errors.append(f"{png}: not a PNG")
    else:
        w, h = struct.unpack(">II", data[16:24])
        if (w, h) != (64, 36):
            errors.append(f"{png}: {w}x{h}, expected 64x36")
        # decompress the image data: not one colour everywhere
        idat, pos = b"", 8
        while pos < len(data):
            n, kind = struct.unpack(">I4s", data[pos:pos + 8])
            if kind == b"IDAT":
                idat += data[pos + 8:pos + 8 + n]
            pos += 12 + n
        raw = zlib.decompress(idat)
        if len(set(raw[1:len(raw) // 2])) < 20:
            errors.append(f"{png}: nearly uniform")
for e in errors:
    print("     " + e)
print(f"     {len(frames)} frames, {sum(f['triangles'] for f in frames)} triangles; camera "
      f"{report['camera']}")
sys.exit(1 if errors else 0)
PYEOF
check "PLY series: 4 objects for frames 0..3, counts and bounds of the files, one visible per frame, the water material, a rendered 64x36 PNG" ${rc}

rc=0
"${pbf}" mesh "${tmp}/run" --format obj --out "${tmp}/obj" -q > "${tmp}/obj_mesh.log" 2>&1 || rc=$?
cp "${tmp}/run/scene.json" "${tmp}/obj/"
blender_run "${tmp}/obj.log" "${tmp}/obj" --frames 1:2 --report "${tmp}/obj.json" || rc=$?
"${python}" - "${tmp}/obj.json" "${tmp}/ply.json" <<'PYEOF' || rc=$?
import json, sys
obj, ply = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
counts = lambda r, n: [(f["vertices"], f["triangles"]) for f in r["frames"] if f["number"] in n]
ok = [f["number"] for f in obj["frames"]] == [1, 2] and counts(obj, (1, 2)) == counts(ply, (1, 2))
ok = ok and all(f["file"].endswith(".obj") and f["visible_at"] == [f["number"]] for f in obj["frames"])
print(f"     OBJ: frames {[f['number'] for f in obj['frames']]}, {counts(obj, (1, 2))}")
sys.exit(0 if ok else 1)
PYEOF
check "OBJ series with --frames 1:2: frames 1 and 2, the same counts as the PLY files (exit ${rc})" ${rc}

mkdir -p "${tmp}/empty"
cp "${tmp}/run/scene.json" "${tmp}/empty/"
rc=0
blender_run "${tmp}/empty.log" "${tmp}/empty" || rc=$?
[[ ${rc} -eq 2 ]] && grep -q "no mesh_NNNNN.ply or .obj files" "${tmp}/empty.log"
check "a directory without meshes: exit 2 (got ${rc}) with a message" $?
rc=0
blender_run "${tmp}/far.log" "${tmp}/run" --render 9 || rc=$?
[[ ${rc} -eq 2 ]] && grep -q -- "--render: frame 9 is outside" "${tmp}/far.log"
check "--render 9 outside frames 0..3: exit 2 (got ${rc}) with a message" $?

echo "run_blender: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
