#!/usr/bin/env python3
"""docs_drift_test.py can fail: run on a small tree with one drift of each kind it checks
(a missing path, a bare header name, a binary no CMakeLists.txt builds, a function no code
defines, a path in a .def list's comment, a schema version the C++ does not write), it must name each of them and exit 1; on the same tree without them, exit 0.

    docs_drift_planted_test.py   exit 0 passed, 1 failed
"""
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "docs_drift_test.py")
GOOD = "Run `build/bin/tool` and see `src/here.hpp`, `here.hpp` and `real_fn(x)`.\n"
PLANTED = ("Run `build/bin/nope -b 8`, see `src/missing.hpp` and `ghost_fn(x)`.\n",
           "// a comment naming gone.hpp\nint real_fn(int x) { return x; }\n")


def tree(root, planted):
    def write(rel, text):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    write("collectives/include/collscope/algorithms.def",
          ("// the registry: src/gone_registry.cpp\n" if planted else "// the registry: src/here.cpp\n")
          + "COLLSCOPE_ALGORITHM(allreduce, ring, x)\n")
    write("results/include/collscope/results/results_file.hpp",
          "inline constexpr int kSchemaVersion = 5;\n")
    write("results/SCHEMA.md", "# Results, schema version 4\n\nThis build writes **version 3**.\n" if planted
          else "# Results, schema version 5\n\nThis build writes **version 5**.\n")
    write("CMakeLists.txt", "add_executable(tool src/here.cpp)\n")
    write("src/here.hpp", "#pragma once\n")
    write("README.md", GOOD + (PLANTED[0] if planted else ""))
    write("src/here.cpp", PLANTED[1] if planted else "int real_fn(int x) { return x; }\n")


failures = []
for planted, want_code, want in ((False, 0, []),
                                 (True, 1, ["binary nope", "src/missing.hpp", "ghost_fn", "gone.hpp", "gone_registry.cpp",
                                          "states schema version 4", "states schema version 3"])):
    with tempfile.TemporaryDirectory() as root:
        tree(root, planted)
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        fails = [l for l in p.stdout.splitlines() if l.startswith("FAIL ")]
        ok = p.returncode == want_code and len(fails) == len(want) and all(
            any(w in l for l in fails) for w in want)
        print(("ok   " if ok else "FAIL ") + f"planted={planted}: exit {p.returncode}, {fails}")
        if not ok:
            failures.append(planted)
sys.exit(1 if failures else 0)
