#!/usr/bin/env python3
"""The shape of the code, as ARCHITECTURE.md promises it:

1. the include graph of src/ has no circle between modules (a module: a .c file and the .h of
   the same name; an include from a file of one module to another is an arrow);
2. no file in src/ or app/ is over MAX_LINES lines;
3. no C function in src/ or app/ is over MAX_FUNCTION lines (tables are data, not functions);
4. outside a method's folder (src/solvers/<name>/) nothing in src/ names a method: no solver
   kind (PBF_SOLVER_*) and no method's stage function is named there; the registry
   (src/solvers/registry.c) lists the methods.

Usage: layout_check.py SOURCE_DIR. Prints one line per finding; exit 1 on any.
"""
import collections
import os
import re
import sys

MAX_LINES = 1200
MAX_FUNCTION = 150
# Files over the function limit on purpose, with the reason (empty today).
FUNCTION_EXCEPTIONS = {}

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
failed = []


def sources(top, exts):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.relpath(os.path.join(d, f), root)


# ---- 1. the include graph of src/ ---------------------------------------------------------------
src_files = set(sources("src", (".c", ".h", ".cl", ".cu")))
module = lambda f: os.path.splitext(f)[0]
graph = collections.defaultdict(set)
for f in src_files:
    with open(os.path.join(root, f), errors="replace") as fh:
        for line in fh:
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if not m:
                continue
            here = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
            there = os.path.normpath(os.path.join("src", m.group(1)))
            target = here if here in src_files else there if there in src_files else None
            if target and module(target) != module(f):
                graph[module(f)].add(module(target))

state = {}
cycle = []


def visit(v, path):
    state[v] = 1
    for w in sorted(graph[v]):
        if state.get(w) == 1:
            cycle.extend(path[path.index(w):] + [w] if w in path else [v, w])
            return True
        if w not in state and visit(w, path + [w]):
            return True
    state[v] = 2
    return False


for v in sorted(graph):
    if v not in state and visit(v, [v]):
        break
if cycle:
    failed.append("include circle: " + " -> ".join(cycle))
else:
    print(f"ok   the include graph of src/ ({len(graph)} modules) has no circle")

# ---- 2. file sizes ------------------------------------------------------------------------------
code = [f for top in ("src", "app") for f in sources(top, (".c", ".h", ".cl", ".cu", ".cpp"))]
big = []
for f in code:
    with open(os.path.join(root, f), errors="replace") as fh:
        n = sum(1 for _ in fh)
    if n > MAX_LINES:
        big.append(f"{f} ({n} lines)")
if big:
    failed.append(f"files over {MAX_LINES} lines: " + ", ".join(big))
else:
    print(f"ok   no file of src/ and app/ ({len(code)}) is over {MAX_LINES} lines")

# ---- 3. function lengths: a function starts at a line in column 0 that opens its body ----------
long_fns = []
for f in code:
    if not f.endswith((".c", ".cl", ".cu")):
        continue
    with open(os.path.join(root, f), errors="replace") as fh:
        lines = fh.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        # a definition: a line at column 0 with a '(' whose body opens on it or the next lines
        if re.match(r"^[A-Za-z_][^;=]*\(", line) and not line.startswith(("typedef", "#")):
            j = i
            while j < len(lines) and "{" not in lines[j] and ";" not in lines[j]:
                j += 1
            if j < len(lines) and "{" in lines[j] and lines[j].rstrip().endswith("{"):
                depth, k = 0, j
                while k < len(lines):
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth <= 0 and k > j - 1 and "}" in lines[k]:
                        break
                    k += 1
                length = k - i + 1
                name = re.match(r"^[^(]*?([A-Za-z_][A-Za-z_0-9]*)\s*\(", line)
                name = name.group(1) if name else "?"
                if length > MAX_FUNCTION and name not in FUNCTION_EXCEPTIONS.get(f, ()):
                    long_fns.append(f"{f}:{i + 1} {name} ({length} lines)")
                i = k + 1
                continue
        i += 1
if long_fns:
    failed.append(f"functions over {MAX_FUNCTION} lines: " + ", ".join(long_fns))
else:
    print(f"ok   no function of src/ and app/ is over {MAX_FUNCTION} lines")

# ---- 4. methods named only in their folders -----------------------------------------------------
with open(os.path.join(root, "src", "solvers", "registry.c")) as fh:
    listed = re.search(r"#define PBF_METHODS\(FIRST, X\)(.*)", fh.read())
methods = sorted(re.findall(r"\b(?:FIRST|X)\((\w+)\)", listed.group(1))) if listed else []
if not methods:
    failed.append("src/solvers/registry.c: no PBF_METHODS list")
with open(os.path.join(root, "include", "pbf", "pbf.h")) as fh:
    kinds = re.findall(r"\b(PBF_SOLVER_[A-Z0-9_]+)\s*=", fh.read())
names = re.compile(
    r"\b(" + "|".join(kinds) + r")\b|\bpbf_(" + "|".join(methods) + r")_[a-z_0-9]+_(cpu|gpu)\b"
)
outside = []
for f in sorted(src_files):
    parts = f.split(os.sep)
    if len(parts) >= 3 and parts[1] == "solvers" and parts[2] in methods:
        continue  # the method's own folder
    if f == os.path.join("src", "solvers", "registry.c"):
        continue
    with open(os.path.join(root, f), errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            s = re.sub(r"/\*.*?(\*/|$)", "", line.split("//")[0])
            if s.lstrip().startswith("*"):
                continue  # comments may speak of a method
            m = names.search(s)
            if m:
                outside.append(f"{f}:{n} {m.group(0)}")
if outside:
    failed.append("a method named outside its folder: " + ", ".join(outside))
else:
    print(f"ok   outside src/solvers/<method>/ nothing in src/ names one of {len(methods)} "
          f"methods ({', '.join(methods)})")

for f in failed:
    print("FAIL " + f)
sys.exit(1 if failed else 0)
