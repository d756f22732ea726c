#!/usr/bin/python3
"""A results file of schema version 1 (results/tests/data/schema_v1.h5, written by the
release before version 2: allreduce_ring and alltoallv_mpi rows, pingpong, a tp_mlp layer
row) is still read by the Python tools: the report renders it with version 2's names, and
merge keeps it at version 1 with every row.

    version1_py_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

SOURCE = sys.argv[1]
FIXTURE = os.path.join(SOURCE, "results", "tests", "data", "schema_v1.h5")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*cmd):
    return subprocess.run([sys.executable, *cmd], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    fixture = os.path.join(tmp, "v1.h5")
    shutil.copyfile(FIXTURE, fixture)
    out = os.path.join(tmp, "report")
    p = run(os.path.join(SOURCE, "scripts", "report"), fixture, "--out", out)
    check(p.returncode == 0, f"report of a version-1 file: exit 0 (got {p.returncode}: {p.stderr.strip()})")
    tables = "".join(open(os.path.join(out, name)).read() for name in os.listdir(out)
                     if name.endswith(".md")) if os.path.isdir(out) else ""
    check("2(N-1)/N x D" in tables, "the ring rows' closed form reaches the report")
    check("seed" not in tables.lower(), "the report says nothing of version 1's old names")

    merged = os.path.join(tmp, "merged.h5")
    p = run(os.path.join(SOURCE, "scripts", "merge"), merged, fixture)
    check(p.returncode == 0, f"merge of a version-1 file: exit 0 (got {p.returncode}: {p.stderr.strip()})")
    if os.path.exists(merged):
        with h5py.File(merged, "r") as f, h5py.File(fixture, "r") as g:
            check(int(f.attrs["collscope_schema_version"]) == 1, "the merged file stays version 1")
            for group in ("collective", "pingpong", "layer"):
                check(len(f[group + "/rows"]) == len(g[group + "/rows"]),
                      f"every {group} row is kept ({len(g[group + '/rows'])})")

print(f"version1: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
