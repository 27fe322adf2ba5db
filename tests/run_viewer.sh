#!/usr/bin/env bash
# `pbf view` end to end: screenshots under Xvfb with Mesa's software rasteriser (llvmpipe), in
# sphere and in screen-space fluid mode, checked by tests/viewer_png_check.py, the fluid one
# against the sphere one by tests/viewer_fluid_check.py, a larger fluid one for vertical streaks
# by tests/viewer_streak_check.py, their text overlay
# read back by tests/viewer_overlay_check.py; and the error
# paths (no display: exit 1 with a message; bad option: exit 2). Fails, never skips, when
# xvfb-run or python3 is missing or pbf was built without the viewer.
#
# usage: run_viewer.sh PBF PYTHON3 SCENE WORKDIR
set -u
pbf=$1 py=$2 scene=$3 work=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
failures=0
fail() {
    echo "viewer: FAIL: $*"
    failures=$((failures + 1))
}

command -v xvfb-run >/dev/null ||
    { echo "viewer: FAIL: xvfb-run not found: install xvfb and xauth (scripts/setup-debian.sh)"; exit 1; }
[[ -n "${py}" && -x "${py}" ]] ||
    { echo "viewer: FAIL: no python3 (\"${py}\"): run scripts/setup-debian.sh"; exit 1; }
if "${pbf}" view --help 2>&1 | grep -q "built without the viewer"; then
    echo "viewer: FAIL: pbf was built without the viewer: install libglfw3-dev and libepoxy-dev" \
        "(scripts/setup-debian.sh) and rebuild"
    exit 1
fi
rm -rf "${work}" && mkdir -p "${work}" || exit 1
export LIBGL_ALWAYS_SOFTWARE=1
# Sanitizer builds: the OpenGL driver's own allocations are not ours to report.
export LSAN_OPTIONS="${LSAN_OPTIONS:+${LSAN_OPTIONS}:}suppressions=${here}/viewer_lsan.supp:print_suppressions=0"

# No display: a clear message and exit status 1, not a crash.
out=$(env -u DISPLAY -u WAYLAND_DISPLAY "${pbf}" view "${scene}" --frames 1 2>&1)
rc=$?
[[ ${rc} -eq 1 ]] || fail "without a display: exit status ${rc}, expected 1; output: ${out}"
grep -q "cannot open a window" <<<"${out}" || fail "without a display: no clear message: ${out}"

# A bad option: usage error, exit status 2, before any window is opened.
out=$("${pbf}" view "${scene}" --color purple 2>&1)
rc=$?
[[ ${rc} -eq 2 ]] || fail "--color purple: exit status ${rc}, expected 2; output: ${out}"

# Bad camera and colour-range options: usage errors naming the option, before any window.
for opts in "--camera-pos 1,2" "--camera-target a,b,c" "--fov 200" "--range auto" "--range 2:1" \
    "--camera-pos 0.1,0.1,0.1 --camera-target 0.1,0.1,0.1"; do
    # shellcheck disable=SC2086 # the options split into words on purpose
    out=$(env -u DISPLAY -u WAYLAND_DISPLAY "${pbf}" view "${scene}" ${opts} 2>&1)
    rc=$?
    [[ ${rc} -eq 2 && "${out}" == *"${opts%% *}"* ]] ||
        fail "${opts}: exit status ${rc}, expected 2 naming the option; output: ${out}"
done

# Screenshots after 10 frames at 320x240: spheres, then the fluid surface.
for mode in spheres fluid; do
    png="${work}/shot_${mode}.png"
    extra=()
    [[ ${mode} == fluid ]] && extra=(--fluid)
    echo "viewer: ${mode}: pbf view ${scene} --screenshot ${png} --frames 10 --size 320x240 ${extra[*]}"
    xvfb-run -a -s "-screen 0 1280x720x24" \
        "${pbf}" view "${scene}" --screenshot "${png}" --frames 10 --size 320x240 "${extra[@]}" \
        > "${work}/${mode}.log"
    rc=$?
    cat "${work}/${mode}.log"
    if [[ ${rc} -ne 0 ]]; then
        fail "${mode}: pbf view exited with status ${rc}"
    elif [[ ! -s "${png}" ]]; then
        fail "${mode}: no screenshot written"
    else
        "${py}" "${here}/viewer_png_check.py" "${png}" 320 240 || fail "${mode}: ${png}"
        # The overlay read back glyph by glyph: the text reads right (descenders) and shows a
        # measured frame rate and step time (their values depend on the machine's load: not
        # compared) at t = 10 / fps of the scene after 10 frames.
        t=$("${py}" -c 'import json, sys; print("%.3f" % (10 / json.load(open(sys.argv[1])).get("fps", 60)))' "${scene}")
        name=$("${py}" -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "${scene}")
        "${py}" "${here}/viewer_overlay_check.py" "${png}" "${here}/../app/render/font5x9.h" "${name}" \
            "${t}" || fail "${mode}: overlay of ${png}"
    fi
done

# The fluid surface against the spheres of the same state: no NaN pixels, the liquid where the
# particles are, and a smooth surface (tests/viewer_fluid_check.py).
if [[ -s "${work}/shot_spheres.png" && -s "${work}/shot_fluid.png" ]]; then
    "${py}" "${here}/viewer_fluid_check.py" "${work}/shot_spheres.png" "${work}/shot_fluid.png" ||
        fail "fluid surface against the spheres"
fi

# Vertical streaks of the separable depth filter (below the splash, along the walls): after 30
# frames the splash of the scene is at the right wall; measured by tests/viewer_streak_check.py.
png="${work}/shot_fluid_streaks.png"
xvfb-run -a -s "-screen 0 1280x720x24" "${pbf}" view "${scene}" --screenshot "${png}" --frames 30 \
    --size 640x480 --fluid > "${work}/streaks.log" 2>&1
rc=$?
if [[ ${rc} -ne 0 || ! -s "${png}" ]]; then
    fail "fluid at 640x480: exit status ${rc}: $(cat "${work}/streaks.log")"
else
    "${py}" "${here}/viewer_streak_check.py" "${png}" || fail "vertical streaks in ${png}"
fi

# --checkpoint: a file that is no checkpoint is refused by name (exit status 2), before any window.
printf 'not a checkpoint' > "${work}/bad.pbfck"
out=$(env -u DISPLAY -u WAYLAND_DISPLAY "${pbf}" view "${scene}" --checkpoint "${work}/bad.pbfck" 2>&1)
rc=$?
[[ ${rc} -eq 2 && "${out}" == *"--checkpoint ${work}/bad.pbfck"* ]] ||
    fail "--checkpoint of a damaged file: exit status ${rc}, expected 2 naming it; output: ${out}"

# The camera and the colour range from the command line change the picture.
png="${work}/shot_camera.png"
xvfb-run -a -s "-screen 0 1280x720x24" "${pbf}" view "${scene}" --screenshot "${png}" --frames 2 \
    --size 320x240 --camera-pos 0.25,0.9,0.9 --camera-target 0.25,0.1,0.15 --fov 50 \
    --color speed --range 0:0.5 > "${work}/camera.log" 2>&1
rc=$?
if [[ ${rc} -ne 0 || ! -s "${png}" ]]; then
    fail "--camera-pos/--camera-target/--fov/--range: exit status ${rc}: $(cat "${work}/camera.log")"
elif cmp -s "${png}" "${work}/shot_spheres.png"; then
    fail "--camera-pos/--camera-target/--fov/--range: the same picture as the default view"
fi

if [[ ${failures} -ne 0 ]]; then
    echo "viewer: ${failures} check(s) failed"
    exit 1
fi
echo "viewer: all checks passed"
