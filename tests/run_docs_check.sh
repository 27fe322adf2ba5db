#!/usr/bin/env bash
# The documentation says what the program does:
#   1. README.md's usage block is the one `pbf --help` prints, and every option line of it is one
#      of `pbf run --help`;
#   2. `pbf --frames 1` (options without a command) runs the default scene;
#   3. README.md lists exactly the arrays a default (vtp) frame carries;
#   4. README.md, `pbf validate --help` and docs/validation.md give the same full-run time;
#   5. no text a user reads names this project's bookkeeping ("issue 4", "seed 003", "the peer")
#      instead of a paper, method or program;
#   6. every relative link of README.md, docs/*.md, bench/README.md and bench/results/LOG.md leads
#      to a file that exists, and a link to a heading (FILE.md#anchor) to a heading of that file;
#   7. README.md's MPI commands, run as written (as whoever runs the test, root or not, on this
#      machine's cores; only --frames 1 added), give frame 1 of the single-process run of 2., byte
#      for byte (skipped where pbf has no MPI or mpirun is missing);
#   8. docs/scenes.md's annotated scene is docs/annotated_scene.json, which holds every kind of
#      geometry (fluid blocks with and without a velocity, an obstacle, both motions of moving
#      walls with every motion key, a camera), every key of it is named in the page's table, it
#      loads and runs a frame with the particle count it states, and the limits the page states
#      hold: overlapping boxes, fluid overlapping a box or another block, a box outside the domain
#      and a wall whose path leaves it are refused (exit 2), a block touching a box is not;
#   9. README.md's size of the default run's output: 121 frames of the size of frame 1 of 2.
#
#   bash tests/run_docs_check.sh PATH/TO/pbf SOURCE_DIR [HAVE_MPI(ON/OFF) MPIRUN]
set -u

if [[ $# -ne 2 && $# -ne 4 ]]; then
    echo "usage: run_docs_check.sh PATH/TO/pbf SOURCE_DIR [HAVE_MPI MPIRUN]" >&2
    exit 2
fi
pbf="$1"
src="$2"
have_mpi="${3:-OFF}"
mpirun_path="${4:-mpirun}"
if [[ "${pbf}" != /* ]]; then pbf="$(pwd)/${pbf}"; fi
readme="${src}/README.md"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pbf_docs_check.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export OMP_WAIT_POLICY=PASSIVE

failed=0
fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}
ok() { echo "ok   $*"; }

# ---- 1. usage -------------------------------------------------------------------------------
# From the source folder, so that the default scene reads scenes/dam_break.json as in README.md.
(cd "${src}" && "${pbf}" --help) > "${tmp}/help.txt" 2>&1 || fail "pbf --help exited non-zero"
(cd "${src}" && "${pbf}" run --help) > "${tmp}/run_help.txt" 2>&1 || fail "pbf run --help exited non-zero"
# the help's first usage block: from "usage: pbf " to the first empty line
awk '/^usage: pbf /{f=1} f&&/^$/{exit} f' "${tmp}/help.txt" > "${tmp}/usage_help.txt"
# README's: the same lines inside its ```text block
awk '/^```text$/{t=1; next} t&&/^```$/{t=0} t' "${readme}" \
    | awk '/^usage: pbf /{f=1} f&&/^$/{exit} f' > "${tmp}/usage_readme.txt"
if [[ ! -s "${tmp}/usage_help.txt" ]]; then
    fail "pbf --help has no \"usage: pbf\" block"
elif diff -u "${tmp}/usage_help.txt" "${tmp}/usage_readme.txt" > "${tmp}/usage.diff"; then
    ok "README.md's usage block is pbf --help's ($(wc -l < "${tmp}/usage_help.txt") lines)"
else
    fail "README.md's usage block differs from pbf --help (- help, + README):"
    cat "${tmp}/usage.diff"
fi
n_opt=0
while IFS= read -r line; do
    n_opt=$((n_opt + 1))
    if ! grep -qxF -- "${line}" "${tmp}/run_help.txt"; then
        fail "README.md's option line is not in pbf run --help: ${line}"
    fi
done < <(awk '/^```text$/{t=1; next} t&&/^```$/{t=0} t' "${readme}" | grep -E '^  -')
if [[ ${n_opt} -lt 5 ]]; then
    fail "README.md's usage block lists only ${n_opt} options"
else
    ok "README.md's ${n_opt} option lines are pbf run --help's"
fi

# ---- 2. options without a command: the default run ------------------------------------------
if (cd "${src}" && "${pbf}" --frames 1 --out "${tmp}/top" -q) > "${tmp}/top.log" 2>&1 &&
    [[ -f "${tmp}/top/frame_00001.vtp" && ! -e "${tmp}/top/frame_00002.vtp" ]] &&
    grep -q '"name": *"dam break"' "${tmp}/top/scene.json" &&
    [[ "$(wc -l < "${tmp}/top/stats.jsonl")" -eq 2 ]]; then
    ok "pbf --frames 1 ran the default scene (dam break) for 1 frame"
else
    fail "pbf --frames 1 did not run the default scene for 1 frame: $(cat "${tmp}/top.log")"
    ls -l "${tmp}/top" 2> /dev/null
fi

# ---- 3. the arrays of a default frame ---------------------------------------------------------
frame="${tmp}/top/frame_00001.vtp"
# README: the bullet of out/frame_00000.vtp, joined into one line
bullet="$(awk '/^- `out\/frame_00000.vtp`/{f=1} f&&/^- `out\/stats/{exit} f' "${readme}" | tr '\n' ' ')"
point_part="${bullet#*point-data arrays }"
point_part="${point_part%%, and the simulated time*}"
field_part="${bullet#*field-data array }"
field_part="${field_part%%.*}"
names() { grep -o '`[A-Za-z_][A-Za-z_0-9]*`' | tr -d '`' | sort | tr '\n' ' '; }
readme_point="$(names <<< "${point_part}")"
readme_field="$(names <<< "${field_part}")"
if [[ -f "${frame}" ]]; then
    vtp_point="$(sed -n '/<PointData/,/<\/PointData>/p' "${frame}" | grep -ao 'Name="[^"]*"' \
        | sed 's/Name="\(.*\)"/`\1`/' | names)"
    vtp_field="$(sed -n '/<FieldData/,/<\/FieldData>/p' "${frame}" | grep -ao 'Name="[^"]*"' \
        | sed 's/Name="\(.*\)"/`\1`/' | names)"
    if [[ -n "${vtp_point}" && "${readme_point}" == "${vtp_point}" ]]; then
        ok "README.md's point-data arrays are the frame's: ${vtp_point}"
    else
        fail "point-data arrays: README.md lists \"${readme_point}\", a frame has \"${vtp_point}\""
    fi
    if [[ -n "${vtp_field}" && "${readme_field}" == "${vtp_field}" ]]; then
        ok "README.md's field-data arrays are the frame's: ${vtp_field}"
    else
        fail "field-data arrays: README.md lists \"${readme_field}\", a frame has \"${vtp_field}\""
    fi
fi

# ---- 4. one full-run time everywhere ----------------------------------------------------------
"${pbf}" validate --help > "${tmp}/validate_help.txt" 2>&1
took="$(tr '\n' ' ' < "${tmp}/validate_help.txt" | tr -s ' ' \
    | grep -o 'the full run takes about [^;.)]* cores, [0-9.]* CPU-minutes' | head -n 1)"
took="${took#the full run takes }"
if [[ -z "${took}" ]]; then
    fail "pbf validate --help does not say how long the full run takes"
else
    v_line="$(grep -F 'pbf validate --out docs/validation' "${readme}" | grep -F '#' | head -n 1)"
    if [[ "${v_line}" == *"${took}"* ]]; then
        ok "README.md gives the full validation run as ${took}"
    else
        fail "README.md's validate command says \"${v_line}\", pbf validate --help \"${took}\""
    fi
    # the report states the wall and CPU time its own run took
    if grep -qE 'in [0-9:]+ of wall time and [0-9:]+ of CPU time' "${src}/docs/validation.md"; then
        ok "docs/validation.md states the wall and CPU time of its run"
    else
        fail "docs/validation.md does not state the wall and CPU time of its run"
    fi
fi

# ---- 5. no bookkeeping words in what users read -------------------------------------------
for cmd in "" run render view devices validate; do
    if [[ -z "${cmd}" ]]; then
        "${pbf}" --help > "${tmp}/help_top.txt" 2>&1
    else
        "${pbf}" "${cmd}" --help > "${tmp}/help_${cmd}.txt" 2>&1
    fi
done
bookkeeping='\bissues? #?([0-9]+|N)\b|\bseed [0-9]{3}\b|(^|[^-_[:alnum:]])peers?\b'
docs=("${readme}" "${src}/ARCHITECTURE.md" "${src}/bench/README.md" "${src}/bench/results/LOG.md")
for f in "${src}"/docs/*.md; do docs+=("${f}"); done
for f in "${docs[@]}" "${tmp}"/help_*.txt; do
    [[ -f "${f}" ]] || continue
    if hits="$(grep -nEi "${bookkeeping}" "${f}")"; then
        fail "${f#"${tmp}/"} names the project's bookkeeping:"
        echo "${hits}" | head -n 5
    fi
done
[[ ${failed} -eq 0 ]] && ok "no \"issue N\", \"seed NNN\" or \"the peer\" in README.md, ARCHITECTURE.md, bench/README.md, bench/results/LOG.md, docs/*.md and --help"

# ---- 6. every relative link leads somewhere ---------------------------------------------------
# Links outside fenced code blocks and code spans; a heading's anchor as GitHub makes it (lower
# case, letters, digits, spaces, '-' and '_' kept, spaces to '-', a repeated one numbered).
if ! command -v python3 > /dev/null; then
    fail "python3 not found: the links were not checked"
elif links="$(python3 - "${src}" << 'EOF'
import glob, os, re, sys

src = sys.argv[1]
files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
files += [os.path.join(src, p) for p in ("bench/README.md", "bench/results/LOG.md")]


def slug(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


headings = {}


def anchors(path):
    if path not in headings:
        seen, found, fence = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"#+\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                found.add(s if s not in seen else "%s-%d" % (s, seen[s]))
                seen[s] = seen.get(s, 0) + 1
        headings[path] = found
    return headings[path]


count = broken = 0
for f in files:
    if not os.path.exists(f):
        continue
    fence = False
    for no, line in enumerate(open(f, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence or line.startswith("```"):
            continue
        for link in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", link):
                continue
            count += 1
            target, _, anchor = link.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(f), target)) if target else f
            where = "%s:%d: %s" % (os.path.relpath(f, src), no, link)
            if not os.path.exists(path):
                print("%s: no such file" % where)
                broken += 1
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                print("%s: no such heading" % where)
                broken += 1
print("%d relative links in %d files" % (count, len(files)))
sys.exit(1 if broken else 0)
EOF
)"; then
    ok "every link leads somewhere: ${links}"
else
    fail "broken links:"
    echo "${links}"
fi

# ---- 7. README's MPI commands, as written --------------------------------------------------
# The sh block after "## Beyond one machine: MPI", run in a folder where ./build/pbf is this pbf
# and scenes/ the repository's, with Open MPI's permission variables removed from the
# environment (the block must say what it needs) and --frames 1 added to the mpirun line.
mpi_block="$(awk '/^## Beyond one machine: MPI/{s=1} s&&/^```sh$/{b=1; next} b&&/^```$/{exit} b' "${readme}")"
if [[ "${have_mpi}" != ON ]] || ! command -v "${mpirun_path}" > /dev/null 2>&1; then
    echo "skip README.md's MPI commands: this pbf has no MPI or ${mpirun_path} is missing"
elif ! grep -q '^mpirun ' <<< "${mpi_block}"; then
    fail "README.md's MPI section has no sh block with an mpirun line"
else
    mkdir -p "${tmp}/mpi/build"
    ln -s "${pbf}" "${tmp}/mpi/build/pbf"
    ln -s "${src}/scenes" "${tmp}/mpi/scenes"
    mkdir -p "${tmp}/mpi/bin"
    ln -s "$(command -v "${mpirun_path}")" "${tmp}/mpi/bin/mpirun"
    sed 's/^\(mpirun .*\)$/\1 --frames 1 -q/' <<< "${mpi_block}" > "${tmp}/mpi/commands.sh"
    (cd "${tmp}/mpi" && env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
        PATH="${tmp}/mpi/bin:${PATH}" timeout 90 bash -e commands.sh) > "${tmp}/mpi.log" 2>&1
    rc=$?
    if [[ ${rc} -ne 0 ]]; then
        fail "README.md's MPI commands exit ${rc} as $(id -un) on $(nproc) cores:"
        sed 's/^/    /' "${tmp}/mpi/commands.sh"
        tail -n 15 "${tmp}/mpi.log"
    elif cmp -s "${tmp}/mpi/out/frame_00001.vtp" "${tmp}/top/frame_00001.vtp"; then
        ok "README.md's MPI commands run as $(id -un) on $(nproc) cores; frame 1 is the single-process run's, byte for byte"
    else
        fail "README.md's MPI commands: out/frame_00001.vtp differs from the single-process run's"
    fi
fi

# ---- 8. the annotated scene of docs/scenes.md ------------------------------------------------
if scene_report="$(cd "${tmp}" && python3 - "${pbf}" "${src}" << 'EOF'
import copy, json, os, re, subprocess, sys

pbf, src = sys.argv[1], sys.argv[2]
page = open(os.path.join(src, "docs", "scenes.md"), encoding="utf-8").read()
path = os.path.join(src, "docs", "annotated_scene.json")
if not os.path.exists(path):
    print("no docs/annotated_scene.json, the complete scene docs/scenes.md annotates")
    sys.exit(1)
text = open(path, encoding="utf-8").read()
problems = []
blocks = re.findall(r"^```json\n(.*?)^```$", page, re.S | re.M)
if blocks != [text]:
    problems.append("docs/scenes.md's json block is not docs/annotated_scene.json (%d blocks)" % len(blocks))
scene = json.loads(text)
fluid, obst, walls = scene.get("fluid", []), scene.get("obstacles", []), scene.get("moving_walls", [])
if not (len(fluid) >= 2 and any("velocity" in b for b in fluid) and any("velocity" not in b for b in fluid)):
    problems.append("want fluid blocks with and without a velocity")
if not obst:
    problems.append("want an obstacle")
types = {w["motion"]["type"] for w in walls}
motion_keys = set().union(*[w["motion"].keys() for w in walls]) if walls else set()
want = {"type", "direction", "amplitude", "period", "phase", "speed", "start", "stop"}
if types != {"oscillate", "linear"} or motion_keys != want:
    problems.append("moving walls: motions %s, keys %s (want oscillate and linear, %s)" % (sorted(types), sorted(motion_keys), sorted(want)))
if set(scene.get("camera", {})) != {"position", "target", "up", "fov"}:
    problems.append("want a camera with position, target, up and fov")
table = page[page.find("| key | what it is |"):]
table = table[:table.find("\n\n")]
named = set(re.findall(r"`\"?([a-z_]+)\"?`", table))
keys = set(scene) | {k for b in fluid for k in b} | {k for w in obst + walls for k in w} | motion_keys
keys |= set(scene.get("camera", {}))
missing = sorted(keys - named)
if missing:
    problems.append("keys of the scene not named in docs/scenes.md's table: %s" % ", ".join(missing))

def run(sc, name, frames=1):
    f = os.path.join(os.getcwd(), name + ".json")
    json.dump(sc, open(f, "w"))
    r = subprocess.run([pbf, "run", f, "--frames", str(frames), "--out", name, "-q"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr.strip()

rc, err = run(scene, "annotated")
stated = re.search(r"([0-9,]+) particles", scene["description"])
stated = int(stated.group(1).replace(",", "")) if stated else -1
count = -1
if rc == 0:
    with open("annotated/stats.jsonl") as f:
        count = json.loads(f.readlines()[-1])["particles"]
if rc != 0 or count != stated or ("%s particles" % format(stated, ",")) not in page:
    problems.append("the annotated scene: exit %d (%s), %d particles, its description and docs/scenes.md state %d" % (rc, err[:200], count, stated))

def variant(change):
    sc = copy.deepcopy(scene)
    change(sc)
    return sc

refused = [
    ("boxes that overlap", "boxes may not overlap",
     lambda sc: sc["obstacles"].append({"min": [0.55, 0, 0], "max": [0.65, 0.1, 0.4]})),
    ("a moving wall that overlaps an obstacle", "boxes may not overlap",
     lambda sc: sc["obstacles"].append({"min": [0.09, 0.2, 0], "max": [0.2, 0.3, 0.4]})),
    ("fluid that overlaps an obstacle", "overlaps obstacles[0]",
     lambda sc: sc["fluid"].append({"min": [0.45, 0, 0], "max": [0.55, 0.2, 0.4]})),
    ("fluid that overlaps a moving wall", "overlaps moving_walls[1]",
     lambda sc: sc["fluid"].append({"min": [0.7, 0, 0], "max": [0.78, 0.2, 0.4]})),
    ("fluid that overlaps fluid", "overlaps fluid[0]",
     lambda sc: sc["fluid"].append({"min": [1.0, 0.3, 0], "max": [1.2, 0.5, 0.4]})),
    ("a box outside the domain", "lies outside the domain",
     lambda sc: sc["obstacles"].append({"min": [0.5, 0.5, 0], "max": [0.6, 0.7, 0.4]})),
    ("a wall whose path leaves the domain", "leaves the domain during the run",
     lambda sc: sc["moving_walls"][0]["motion"].update(amplitude=0.1)),
]
for i, (what, message, change) in enumerate(refused):
    rc, err = run(variant(change), "refused%d" % i)
    if rc != 2 or message not in err or os.path.exists("refused%d" % i):
        problems.append("%s: exit %d, wrote %s: %s (want exit 2, nothing written, \"%s\")" % (what, rc, os.path.exists("refused%d" % i), err[:200], message))
# README's excerpt of the geometry: the annotated scene's, and a scene with it runs
readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
excerpt = re.findall(r"^## Scene files$.*?^```json\n(.*?)^```$", readme, re.S | re.M)
try:
    geometry = json.loads("{" + excerpt[0] + "}")
    rc, err = run(variant(lambda sc: sc.update(geometry)), "readme_excerpt")
    if rc != 0:
        problems.append("README.md's scene excerpt in the annotated scene: exit %d: %s" % (rc, err[:200]))
    for key, entries in geometry.items():
        for e in entries:
            if not any(all(o.get(k) == v for k, v in e.items() if k not in ("velocity", "motion"))
                       for o in scene[key]):
                problems.append("README.md's %s entry %s is not one of docs/annotated_scene.json's" % (key, e))
except (IndexError, ValueError, AttributeError) as e:
    problems.append("README.md's \"Scene files\" has no json excerpt of a scene's geometry (%s)" % e)
rc, err = run(variant(lambda sc: sc["fluid"].append({"min": [0.5, 0.1, 0.1], "max": [0.6, 0.2, 0.3]})), "touching")
if rc != 0:
    problems.append("a block resting on an obstacle's top face: exit %d: %s" % (rc, err[:200]))
print("; ".join(problems) if problems else "%d particles, %d refusals and a touching block as docs/scenes.md says" % (count, len(refused)))
sys.exit(1 if problems else 0)
EOF
)"; then
    ok "docs/scenes.md's annotated scene: ${scene_report}"
else
    fail "docs/scenes.md's annotated scene: ${scene_report}"
fi

# ---- 9. the size of the default run's output --------------------------------------------------
# README: "writes about N MB": the default scene's 120 frames and frame 0, each the size of the
# frame 1 written in 2., within 10 % (the frames of a vtp run differ by a few bytes).
said_mb="$(tr '\n' ' ' < "${readme}" | grep -o 'writes about [0-9]* MB' | head -n 1 | tr -dc '0-9')"
frames="$(grep -o '"frames": *[0-9]*' "${src}/scenes/dam_break.json" | tr -dc '0-9')"
if [[ -z "${said_mb}" || ! -f "${tmp}/top/frame_00001.vtp" ]]; then
    fail "README.md does not say \"writes about N MB\" of the default run, or frame 1 is missing"
else
    one="$(stat -c %s "${tmp}/top/frame_00001.vtp")"
    total_mb=$(((frames + 1) * one / 1000000))
    if ((total_mb * 10 >= said_mb * 9 && total_mb * 10 <= said_mb * 11)); then
        ok "README.md's default run writes about ${said_mb} MB: $((frames + 1)) frames of ${one} bytes, ${total_mb} MB"
    else
        fail "README.md says the default run writes about ${said_mb} MB; $((frames + 1)) frames of ${one} bytes are ${total_mb} MB"
    fi
    # and what `du -sh out` prints: the frames' MiB (du counts 4 KiB blocks: within 2)
    said_du="$(tr '\n' ' ' < "${readme}" | grep -o 'du -sh out` prints [0-9]*M' | head -n 1 | tr -dc '0-9')"
    total_mib=$(((frames + 1) * one / 1048576))
    if [[ -n "${said_du}" ]] && ((said_du >= total_mib - 2 && said_du <= total_mib + 2)); then
        ok "README.md's du -sh out (${said_du}M) is the frames' ${total_mib} MiB"
    else
        fail "README.md's du -sh out: \"${said_du}M\"; the frames are ${total_mib} MiB"
    fi
fi

echo "docs_check: ${failed} failed"
[[ ${failed} -eq 0 ]]
