#!/usr/bin/env python3
"""Pinned predictions: collscope_predict --format exact (every predicted figure to the last
bit) over a slice of the prediction table must print exactly what it printed when the
golden file was written, so a change of any figure, in any algorithm, fails here.

The slice: every hand-written algorithm, N = 1, 2, 3, 5, 8, 16, 33, 1 and 4 ranks per
node, 1 KiB, 1 MiB and 1 GiB, out of place and in place, under three models that between
them use every rule of the simulator (example.json; a receiver-moved class with input
curves and node-pair links, data/cluster_model.json; a version-1 file). One SHA-256 per
(model, algorithm, placement) group of rows is kept in data/predict_golden.txt, with the
command that prints the group's rows.

Usage: predict_golden_test.py --bin BUILD/bin --source SOURCE_DIR [--write]
--write writes the golden file from this build instead of checking against it: only for
a change that is meant to move predictions, said so in its commit.
"""
import argparse
import hashlib
import os
import subprocess
import sys

from collscope import algorithms as catalogue

NS = "1,2,3,5,8,16,33"
SIZES = ["-b", "1K", "-e", "1G", "-f", "1024"]
MODELS = ("collectives/model/example.json", "collectives/tests/data/cluster_model.json",
          "collectives/tests/data/version1_model.json")
GOLDEN = "collectives/tests/data/predict_golden.txt"


def hand_written(bin_dir):
    """<collective>_<algorithm> of every hand-written entry, in the catalogue's order."""
    return [f"{c}_{n}" for c, names in catalogue.load(bin_dir).hand_written().items()
            for n in names]


def groups(bin_dir):
    """(name, argv after the binary) for every group of rows."""
    for model in MODELS:
        for algo in hand_written(bin_dir):
            for placement in ("out_of_place", "in_place"):
                for rpn in ("1", "4"):
                    argv = [algo, "--model", model, "-N", NS, "--ranks-per-node", rpn] + SIZES
                    if placement == "in_place":
                        argv.append("--in-place")
                    name = f"{os.path.basename(model)} {algo} {placement} rpn{rpn}"
                    yield name, argv + ["--format", "exact"]


def digest(binary, source, argv):
    p = subprocess.run([binary] + argv, cwd=source, capture_output=True, text=True,
                       timeout=120)
    return hashlib.sha256(f"exit {p.returncode}\n{p.stdout}".encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    binary = os.path.join(os.path.abspath(args.bin), "collscope_predict")
    golden_path = os.path.join(args.source, GOLDEN)
    got = {name: (digest(binary, args.source, argv), argv) for name, argv in groups(args.bin)}
    if args.write:
        with open(golden_path, "w") as f:
            f.write("# collectives/tests/predict_golden_test.py: SHA-256 of each group's\n"
                    "# `collscope_predict ... --format exact` output (run from the source\n"
                    "# directory), after its exit code.\n")
            for name, (h, argv) in got.items():
                f.write(f"{h}  {name}  |  {' '.join(argv)}\n")
        print(f"predict_golden_test: wrote {len(got)} groups to {golden_path}")
        return 0
    want = {}
    with open(golden_path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            h, rest = line.rstrip("\n").split("  ", 1)
            want[rest.split("  |  ")[0]] = h
    failures = []
    if set(want) != set(got):
        failures.append(f"groups differ: missing {sorted(set(want) - set(got))[:5]}, "
                        f"new {sorted(set(got) - set(want))[:5]}")
    for name, (h, argv) in got.items():
        if name in want and want[name] != h:
            failures.append(f"{name}: predictions changed (collscope_predict {' '.join(argv)})")
    for f in failures[:20]:
        print("FAIL:", f)
    print(f"predict_golden_test: {len(got)} groups, {len(failures)} changed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
