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
#      to a file that exists, and a link to a heading (FILE.md#anchor) to a heading of that file.
#
#   bash tests/run_docs_check.sh PATH/TO/pbf SOURCE_DIR
set -u

if [[ $# -ne 2 ]]; then
    echo "usage: run_docs_check.sh PATH/TO/pbf SOURCE_DIR" >&2
    exit 2
fi
pbf="$1"
src="$2"
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

echo "docs_check: ${failed} failed"
[[ ${failed} -eq 0 ]]
