#!/usr/bin/python3
"""Results files of older schema versions are still read by the Python tools:

- version 1 (results/tests/data/schema_v1.h5, written by the release before version 2:
  allreduce_ring and alltoallv_mpi rows, pingpong, a tp_mlp layer row): the report renders
  it with today's names;
- version 2 (schema_v2.h5, written by the release before version 3: allreduce_ring and
  allreduce_mpi rows, pingpong, a tp_mlp layer row): the report renders it, its vendor row
  without a measured volume;

and merge keeps each at its version with every row.

    old_versions_py_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

SOURCE = sys.argv[1]
DATA = os.path.join(SOURCE, "results", "tests", "data")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*cmd):
    return subprocess.run([sys.executable, *cmd], capture_output=True, text=True)


def report_tables(tmp, fixture, version):
    out = os.path.join(tmp, f"report_v{version}")
    p = run(os.path.join(SOURCE, "scripts", "report"), fixture, "--out", out)
    check(p.returncode == 0, f"report of a version-{version} file: exit 0 (got {p.returncode}: "
                             f"{p.stderr.strip()})")
    if not os.path.isdir(out):
        return ""
    return "".join(open(os.path.join(out, name)).read() for name in os.listdir(out)
                   if name.endswith(".md"))


def merge_keeps(tmp, fixture, version):
    merged = os.path.join(tmp, f"merged_v{version}.h5")
    p = run(os.path.join(SOURCE, "scripts", "merge"), merged, fixture)
    check(p.returncode == 0, f"merge of a version-{version} file: exit 0 (got {p.returncode}: "
                             f"{p.stderr.strip()})")
    if not os.path.exists(merged):
        return
    with h5py.File(merged, "r") as f, h5py.File(fixture, "r") as g:
        check(int(f.attrs["collscope_schema_version"]) == version,
              f"the merged file stays version {version}")
        for group in ("collective", "pingpong", "layer"):
            check(len(f[group + "/rows"]) == len(g[group + "/rows"]),
                  f"version {version}: every {group} row is kept ({len(g[group + '/rows'])})")


with tempfile.TemporaryDirectory() as tmp:
    for version in (1, 2):
        fixture = os.path.join(tmp, f"v{version}.h5")
        shutil.copyfile(os.path.join(DATA, f"schema_v{version}.h5"), fixture)
        tables = report_tables(tmp, fixture, version)
        check("2(N-1)/N x D" in tables, f"version {version}: the ring rows' closed form reaches "
                                        "the report")
        if version == 1:
            check("seed" not in tables.lower(), "the report says nothing of version 1's old names")
        else:
            check("allreduce | mpi (vendor)" in tables or "mpi (vendor)" in tables,
                  "version 2: the vendor row is in the report")
        merge_keeps(tmp, fixture, version)

print(f"old versions: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
