#!/usr/bin/env bash
# Every shipped scene runs a few frames: no non-finite value, no particle outside the container,
# the particle count constant, the density error bounded, no velocity cut by the speed limit;
# then one frame (4 steps) with each of the solvers in PBF_SHIPPED_SOLVERS (default: pcisph
# iisph), chosen with --set solver=NAME.
# And every shipped scene's speed limit cfl * h / dt, from its own particle radius, frame rate and
# substeps, is at least 3 sqrt(2 g H) (H: the container's height; the fastest particle of a full
# run of each shipped scene, measured without the limit, reaches 2.15 sqrt(2 g H): the double dam
# break's splash, 8.5 m/s), so that the limit never changes a shipped scene's motion.
# Usage: run_shipped_scenes.sh PBF SCENES_DIR
set -euo pipefail
pbf=$1
scenes=$2
frames=${PBF_SHIPPED_FRAMES:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
solvers=${PBF_SHIPPED_SOLVERS-pcisph iisph}
fail=0
runs=()
for scene in "$scenes"/*.json; do
    runs+=("$scene:")
    for solver in $solvers; do runs+=("$scene:$solver"); done
done
for run in "${runs[@]}"; do
    scene=${run%:*}
    solver=${run##*:}
    name=$(basename "$scene" .json)${solver:+ ($solver)}
    out="$tmp/run"
    rm -rf "$out"
    n=$frames
    set_solver=()
    if [[ -n $solver ]]; then
        n=1
        set_solver=(--set "solver=$solver")
    fi
    if ! "$pbf" run "$scene" --out "$out" --frames "$n" --format csv --quiet ${set_solver[@]+"${set_solver[@]}"}; then
        echo "FAIL $name: pbf run exited non-zero"
        fail=1
        continue
    fi
    lines=$(wc -l <"$out/stats.jsonl")
    if [[ $lines -ne $((n + 1)) ]]; then
        echo "FAIL $name: stats.jsonl has $lines lines, expected $((n + 1))"
        fail=1
    fi
    # every frame: nonfinite 0, escaped 0, same particle count as frame 0, density error < 50 %
    if ! awk -v name="$name" '
        {
            match($0, /"particles": *[0-9]+/); p = substr($0, RSTART, RLENGTH); sub(/.*: */, "", p)
            match($0, /"nonfinite": *[0-9]+/); nf = substr($0, RSTART, RLENGTH); sub(/.*: */, "", nf)
            match($0, /"escaped": *[0-9]+/); es = substr($0, RSTART, RLENGTH); sub(/.*: */, "", es)
            match($0, /"density_error_max": *[-0-9.eE+]+/); dm = substr($0, RSTART, RLENGTH); sub(/.*: */, "", dm)
            match($0, /"speed_clamps": *[0-9]+/); sc = substr($0, RSTART, RLENGTH); sub(/.*: */, "", sc)
            if (NR == 1) first = p
            if (p != first || nf != 0 || es != 0 || dm + 0 > 50 || sc != 0) {
                printf "FAIL %s frame %d: particles %s (first %s) nonfinite %s escaped %s density_error_max %s speed_clamps %s\n", name, NR - 1, p, first, nf, es, dm, sc
                bad = 1
            }
        }
        END { exit bad }' "$out/stats.jsonl"; then
        fail=1
    else
        echo "ok   $name: $(head -n1 "$out/stats.jsonl" | grep -o '"particles": *[0-9]*'), $n frames"
    fi
    # the speed limit against the scene's own free-fall speed (the effective scene: scene.json)
    if ! python3 - "$out/scene.json" "$name" <<'PY'; then
import json, math, sys
s = json.load(open(sys.argv[1]))
h = s["kernel_ratio"] * 2.0 * s["particle_radius"]
dt = 1.0 / (s["fps"] * s["substeps"])
limit = s["cfl"] * h / dt
g = math.sqrt(sum(c * c for c in s["gravity"]))
H = s["domain_max"][1] - s["domain_min"][1]
fall = math.sqrt(2.0 * g * H)
ok = limit >= 3.0 * fall
print("%s %s: speed limit cfl h / dt = %.3g m/s, 3 sqrt(2 g H) = %.3g m/s" % ("ok  " if ok else "FAIL", sys.argv[2], limit, 3.0 * fall))
sys.exit(0 if ok else 1)
PY
        fail=1
    fi
done
exit $fail
