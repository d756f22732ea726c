#!/usr/bin/env python3
"""Docs that cannot drift: every repository path, binary and function the Markdown files
and the code's comments name must exist.

    docs_drift_test.py SOURCE_DIR [--list]

What is checked:
  - in Markdown (every *.md outside build/ and output/): each `code span` and link
    target that looks like a repository path (a known extension, or a folder of the tree
    followed by a slash) must exist, relative to the file, to the repository root, or to
    an include folder; a bare file name (`sequencer.hpp`) must exist somewhere in the
    tree; `build/bin/NAME` must be a binary the build makes; `name(...)` in a code span
    must be a function some code line (not a comment) calls or defines;
  - in comments of C++, CUDA and Python files and of the .def lists: each word that is a
    path with a known extension, or a bare header name (`foo.hpp`), must exist as above;
  - the schema version a Markdown text states ("schema version N", "SCHEMA.md, version
    N", "this build writes version N") must be the one the C++ writes (kSchemaVersion in
    results_file.hpp; the Python package reads it from the schema the build exports).
A path with several parts may also be written from any folder of the tree
(`blocks/moe_block.hpp` for layers/include/collscope/layers/blocks/moe_block.hpp).
Placeholders (<...>, *, {...}, $VAR, DIR, FILE, N), paths outside the repository (/tmp,
/usr, ~, http) and paths on a line that names another project's source (NCCL, Megatron,
Open MPI, ...: their files, not ours) are not checked. --list prints every name that was checked.
Exit 0 when everything named exists, 1 otherwise (each miss on a line: file:line: what).
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
LIST = "--list" in sys.argv
SKIP_DIRS = {".git", "build", "output", "__pycache__", "node_modules"}
EXTENSIONS = (".hpp", ".cpp", ".cu", ".cuh", ".h", ".py", ".md", ".def", ".json", ".txt",
              ".cmake", ".sbatch", ".sh", ".h5", ".yaml", ".cfg")
CODE_EXTENSIONS = (".hpp", ".cpp", ".cu", ".cuh", ".h", ".py")
# files written by runs or by users, named in the docs as examples, not shipped
NOT_SHIPPED = re.compile(r"^(output|results?_?\w*\.h5$)|(^|/)(verdict|report|summary|benchmarks|"
                         r"predicted_rules|advisor|volume|accept|run|sweep|spec|model|fit|"
                         r"layers|noise|timeline|merged|out|old|new|a|b|x|my\w*|textbook_vs_theory|time_model|cluster|rank|"
                         r"decision|validation|tune-sweep|tune-validate|"
                         r"\w+\.incomplete)\.(json|md|h5|jsonl|txt)$")


def walk():
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            yield os.path.join(top, f)


FILES = list(walk())
REL = {os.path.relpath(f, ROOT) for f in FILES}
DIRS = {os.path.dirname(r) for r in REL}
for d in list(DIRS):
    while d:
        d = os.path.dirname(d)
        DIRS.add(d)
BASENAMES = {os.path.basename(r) for r in REL}
INCLUDE_ROOTS = sorted({r.split("/include/")[0] + "/include" for r in REL if "/include/" in r})
TOP_DIRS = {r.split("/")[0] for r in REL if "/" in r}


def code_lines():
    """Every non-comment line of the code (C++, CUDA, Python, the scripts)."""
    for f in FILES:
        rel = os.path.relpath(f, ROOT)
        if not (rel.endswith(CODE_EXTENSIONS) or is_script(f)):
            continue
        for line in open(f, errors="replace"):
            s = line.strip()
            if not s.startswith(("//", "#", "*", "/*")):
                yield s


def is_script(path):
    if not os.path.relpath(path, ROOT).startswith("scripts/") or "." in os.path.basename(path):
        return False
    with open(path, "rb") as f:
        return f.read(2) == b"#!"


def binaries():
    names = set()
    for f in FILES:
        if os.path.basename(f) == "CMakeLists.txt":
            names.update(re.findall(r"add_executable\(\s*([A-Za-z0-9_]+)", open(f).read()))
    algos = open(os.path.join(ROOT, "collectives/include/collscope/algorithms.def")).read()
    for coll, name in re.findall(r"^COLLSCOPE_ALGORITHM\((\w+), (\w+),", algos, re.M):
        names.add(f"{coll}_{name}")
    for coll in re.findall(r"^COLLSCOPE_ALGORITHM\((\w+),", algos, re.M):
        names.update({f"{coll}_mpi", f"{coll}_nccl"})
    return names


BINARIES = binaries()
CODE = "\n".join(code_lines())
misses = []
checked = set()


def placeholder(name):
    return (re.search(r"[<>*{}$|\[\]]|\.\.\.|^-|(^|/)(DIR|FILE|OUT|NAME|SPEC|PATH|N|X|FOO)(/|$|\.)", name)
            or name.startswith(("/", "~", "http", "../../", "$")))


def path_exists(name, here):
    name = name.rstrip("/").split("#")[0].split(":")[0]
    if not name:
        return True
    candidates = [os.path.normpath(os.path.join(here, name)), os.path.normpath(name)]
    candidates += [os.path.normpath(os.path.join(r, name)) for r in INCLUDE_ROOTS]
    candidates += [os.path.normpath(os.path.join(r, "collscope", name)) for r in INCLUDE_ROOTS]
    if any(c in REL or c in DIRS for c in candidates):
        return True
    return "/" in name and any(r.endswith("/" + name) for r in REL)


# a line naming another project's sources: the paths on it are that project's
EXTERNAL = re.compile(r"NCCL|nccl-tests|Megatron|megatron|Open MPI|ompi/|MPICH|OSU|OMB|IMB|UCX|"
                      r"PyTorch|DeepSpeed|HDF5|cuBLAS|CUDA|nccl|nvidia", re.I)
# other projects' files named on a line of their own context
EXTERNAL_PATHS = {"doc/PERFORMANCE.md"}  # NCCL's performance notes


def check_path(name, rel, lineno, line=""):
    here = os.path.dirname(rel)
    if placeholder(name) or NOT_SHIPPED.search(name):
        return
    if name in EXTERNAL_PATHS or (EXTERNAL.search(line) and not path_exists(name, here)
                                  and not name.startswith("build/bin/")):
        return
    if name.startswith("build/bin/"):
        binary = name[len("build/bin/"):].split("/")[0]
        checked.add("binary " + binary)
        if binary and binary not in BINARIES:
            misses.append(f"{rel}:{lineno}: binary {binary} is not built by any CMakeLists.txt")
        return
    if name.startswith(("build/", "output/")):
        return
    checked.add("path " + name)
    if "/" not in name.rstrip("/"):
        if name.endswith(EXTENSIONS) and name not in BASENAMES and not path_exists(name, here):
            misses.append(f"{rel}:{lineno}: {name} is no file of the repository")
        return
    if not path_exists(name, here):
        misses.append(f"{rel}:{lineno}: {name} does not exist")


def looks_like_path(token):
    t = token.rstrip("/.,;:)")
    if " " in t or not t:
        return False
    if t.endswith(EXTENSIONS) or t.startswith("build/bin/"):
        return True
    return "/" in t and t.split("/")[0] in TOP_DIRS and re.fullmatch(r"[\w./-]+", t) is not None


def check_markdown(path):
    rel = os.path.relpath(path, ROOT)
    in_fence = False
    for lineno, line in enumerate(open(path, errors="replace"), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if not target.startswith(("http", "#", "mailto")):
                check_path(target, rel, lineno, line)
        for span in re.findall(r"`([^`]+)`", line):
            span = span.strip()
            call = re.fullmatch(r"([A-Za-z_][\w:]*)\((.*)\)", span)
            if call and not span.startswith(("MPI_", "nccl", "cuda", "cu", "ucp_", "H5", "std::")):
                name = call.group(1).split("::")[-1]
                checked.add("function " + name)
                if not re.search(r"\b" + re.escape(name) + r"\s*\(", CODE):
                    misses.append(f"{rel}:{lineno}: {span}: no code defines or calls {name}")
                continue
            first = span.split()[0]  # a command line: its program
            if looks_like_path(span):
                check_path(span.rstrip(".,;:"), rel, lineno, line)
            elif " " in span and "/" in first and looks_like_path(first):
                check_path(first, rel, lineno, line)


def check_comments(path):
    rel = os.path.relpath(path, ROOT)
    marker = "#" if rel.endswith(".py") or is_script(path) else "//"
    for lineno, line in enumerate(open(path, errors="replace"), 1):
        at = line.find(marker)
        if at < 0 or (marker == "#" and line[:at].count('"') % 2 == 1):
            continue
        for token in re.findall(r"[\w./-]+\.(?:hpp|cpp|cu|md|py|def)\b", line[at:]):
            if token.startswith("."):
                continue
            check_path(token, rel, lineno, line)


SCHEMA_HEADER = "results/include/collscope/results/results_file.hpp"
# "schema version 5", "SCHEMA.md, version 5", "this build writes **version 5**", "`5` (a file this build writes"
STATED_VERSION = re.compile(r"(?i)(?:schema version|SCHEMA\.md, version|this build writes \**version)\s+(\d+)"
                            r"|`(\d+)` \(a file this build writes")


def written_schema_version():
    """kSchemaVersion in the C++ (None in a tree without it)."""
    if SCHEMA_HEADER not in REL:
        return None
    m = re.search(r"kSchemaVersion\s*=\s*(\d+)", open(os.path.join(ROOT, SCHEMA_HEADER)).read())
    return int(m.group(1)) if m else None


def check_schema_versions(version):
    for f in FILES:
        rel = os.path.relpath(f, ROOT)
        if not rel.endswith(".md"):
            continue
        for lineno, line in enumerate(open(f, errors="replace"), 1):
            for v in ("".join(m) for m in STATED_VERSION.findall(line)):
                checked.add(f"schema version {v}")
                if int(v) != version:
                    misses.append(f"{rel}:{lineno}: states schema version {v}; "
                                  f"the build writes {version} ({SCHEMA_HEADER})")


for f in FILES:
    rel = os.path.relpath(f, ROOT)
    if rel.endswith(".md"):
        check_markdown(f)
    elif rel.endswith(CODE_EXTENSIONS + (".def",)) or is_script(f):
        check_comments(f)
if written_schema_version() is not None:
    check_schema_versions(written_schema_version())

if LIST:
    print("\n".join(sorted(checked)))
for m in misses:
    print("FAIL " + m)
print(f"docs_drift_test: {len(checked)} names checked, {len(misses)} missing")
sys.exit(1 if misses else 0)
