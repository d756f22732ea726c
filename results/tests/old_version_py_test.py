#!/usr/bin/python3
"""A results file of an older schema version is still read by the Python tools: the report
renders it with today's names, and merge keeps it at its version with every row.

    old_version_py_test.py SOURCE_DIR VERSION

The fixtures (results/tests/data/schema_vN.h5) were written by the release before
version N + 1: version 1 holds allreduce_ring and alltoallv_mpi rows, pingpong and a
tp_mlp layer row; version 2 allreduce_ring and allreduce_mpi rows on host memory, an
allreduce_ring row on the emulated device over ipc (its copies per rank), pingpong and a
tp_mlp layer row; version 3 the same rows as version 2 (the ipc row with its copies and
its receives reduced in the sender's memory); version 4 allreduce_ring and allreduce_mpi
rows on host memory (the vendor's counted by the MPI library), an allreduce_ring row on the
emulated device over ipc, pingpong and a tp_mlp layer row.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

from collscope.checks import check, failures

SOURCE, VERSION = sys.argv[1], int(sys.argv[2])
FIXTURE = os.path.join(SOURCE, "results", "tests", "data", f"schema_v{VERSION}.h5")


def run(*cmd):
    return subprocess.run([sys.executable, *cmd], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    fixture = os.path.join(tmp, f"v{VERSION}.h5")
    shutil.copyfile(FIXTURE, fixture)
    out = os.path.join(tmp, "report")
    p = run(os.path.join(SOURCE, "scripts", "report"), fixture, "--out", out)
    check(p.returncode == 0, f"report of a version-{VERSION} file: exit 0 (got {p.returncode}: {p.stderr.strip()})")
    tables = "".join(open(os.path.join(out, name)).read() for name in os.listdir(out)
                     if name.endswith(".md")) if os.path.isdir(out) else ""
    check("2(N-1)/N x D" in tables, "the ring rows' closed form reaches the report")
    check("seed" not in tables.lower(), "the report says nothing of version 1's old names")
    if VERSION >= 2:
        check("ipc" in tables, "the device row's path reaches the report")

    merged = os.path.join(tmp, "merged.h5")
    p = run(os.path.join(SOURCE, "scripts", "merge"), merged, fixture)
    check(p.returncode == 0, f"merge of a version-{VERSION} file: exit 0 (got {p.returncode}: {p.stderr.strip()})")
    if os.path.exists(merged):
        with h5py.File(merged, "r") as f, h5py.File(fixture, "r") as g:
            check(int(f.attrs["collscope_schema_version"]) == VERSION, f"the merged file stays version {VERSION}")
            for group in ("collective", "pingpong", "layer"):
                check(len(f[group + "/rows"]) == len(g[group + "/rows"]),
                      f"every {group} row is kept ({len(g[group + '/rows'])})")

print(f"version {VERSION}: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
