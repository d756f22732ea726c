#!/usr/bin/env python3
"""scripts/predict and collscope_predict (MODEL.md, "Prediction at scale"): every
hand-written algorithm's traces carry exactly its theory's volume at every rank at
N = 1, 2, 3, 7, 16, 33, 64; the predicted time grows with the size; every kind of bad
input is one line `collscope_predict: error: ...` and exit 2.

Usage: predict_test.py --bin BUILD/bin --source SOURCE_DIR
"""
import argparse
import json
import os
import subprocess
import sys
from collscope import algorithms as catalogue

NS = "1,2,3,7,16,33,64"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    binary = os.path.join(args.bin, "collscope_predict")
    model = os.path.join(args.source, "collectives/model/example.json")
    wrapper = os.path.join(args.source, "scripts/predict")
    algorithms = [f"{c}_{n}" for c, names in catalogue.load(args.bin).hand_written().items()
                  for n in names]
    assert len(algorithms) >= 20, algorithms
    failures = []

    def run(cmd):
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    # Volume at every rank, and time growing with size.
    for algo in algorithms:
        for rpn in ("1", "4"):
            p = run([binary, algo, "--model", model, "-N", NS, "--ranks-per-node", rpn,
                     "-b", "4K", "-e", "1M", "-f", "256", "--format", "jsonl"])
            if p.returncode != 0:
                failures.append(f"{algo} rpn {rpn}: exit {p.returncode}: {p.stderr.strip()}")
                continue
            rows = [json.loads(line) for line in p.stdout.splitlines()]
            by_n = {}
            for r in rows:
                if not r["volume_ok"] or r["max_sent_bytes"] != r["theory_max_sent_bytes"]:
                    failures.append(f"{algo} N={r['nranks']} size={r['size']}: volume mismatch")
                if not r["time_us"] > 0:
                    failures.append(f"{algo} N={r['nranks']}: time {r['time_us']}")
                by_n.setdefault(r["nranks"], []).append(r)
            want_rows = 7 if algo.startswith("barrier") else 14
            if len(rows) != want_rows:
                failures.append(f"{algo}: {len(rows)} rows, want {want_rows}")
            if algo.startswith("barrier"):
                continue
            for n, rs in by_n.items():
                small, large = sorted(rs, key=lambda r: r["size"])
                # One rank moves nothing: its copies may cost nothing (copy_rate), so
                # only N > 1 must grow strictly.
                if large["time_us"] < small["time_us"] or (
                        n > 1 and not large["time_us"] > small["time_us"]):
                    failures.append(f"{algo} N={n}: time {small['time_us']} at "
                                    f"{small['size']} B, {large['time_us']} at {large['size']} B")

    # The table form and the wrapper.
    p = run([wrapper, "allreduce_ring", "--model", model, "-N", "16", "-b", "1M"])
    if (p.returncode != 0 or " ok " not in p.stdout or "busbw" not in p.stdout or
            "Mevents/s" not in p.stdout):
        failures.append(f"wrapper table: exit {p.returncode}: {p.stdout}{p.stderr}")

    # A size in plain bytes is the same size as with a suffix (64M = 67108864).
    same = [run([binary, "allreduce_ring", "--model", model, "-N", "4", "-b", b, "--format",
                 "jsonl"]) for b in ("64M", "67108864")]
    timing = ("trace_s", "sim_s", "events_per_s", "peak_rss_mib")  # how long it took

    def predicted(p):
        return [{k: v for k, v in json.loads(line).items() if k not in timing}
                for line in p.stdout.splitlines()]
    rates = [json.loads(line).get("events_per_s") for line in same[0].stdout.splitlines()]
    if not rates or any(not isinstance(v, (int, float)) or v < 0 for v in rates):
        failures.append(f"jsonl rows carry events_per_s: {same[0].stdout}")
    if any(p.returncode != 0 for p in same) or predicted(same[0]) != predicted(same[1]):
        failures.append(f"-b 64M and -b 67108864 differ: {[p.stdout + p.stderr for p in same]}")

    # Bad input of every kind: one line, exit 2.
    bad_model = os.path.join(args.bin, "predict_test_bad_model.json")
    with open(bad_model, "w") as f:
        f.write('{"version": 2, "intra_node": {"link_delay": -1}}')
    ok = ["--model", model, "-N", "4"]
    cases = {
        "unknown algorithm": ["allreduce_nosuch"] + ok,
        "vendor algorithm": ["allreduce_mpi"] + ok,
        "no algorithm": ok,
        "N zero": ["allreduce_ring", "--model", model, "-N", "0"],
        "N not a number": ["allreduce_ring", "--model", model, "-N", "16,x"],
        "N too large": ["allreduce_ring", "--model", model, "-N", "100000"],
        "N missing": ["allreduce_ring", "--model", model],
        "model missing": ["allreduce_ring", "-N", "4"],
        "model file absent": ["allreduce_ring", "--model", "/nonexistent/m.json", "-N", "4"],
        "model file bad": ["allreduce_ring", "--model", bad_model, "-N", "4"],
        "size bad": ["allreduce_ring"] + ok + ["-b", "1X"],
        "size negative": ["allreduce_ring"] + ok + ["-b", "-5"],
        "size overflows": ["allreduce_ring"] + ok + ["-b", "18014398509481984K"],
        "sizes reversed": ["allreduce_ring"] + ok + ["-b", "1M", "-e", "1K"],
        "factor bad": ["allreduce_ring"] + ok + ["-f", "1"],
        "dtype bad": ["allreduce_ring"] + ok + ["-d", "float128"],
        "format bad": ["allreduce_ring"] + ok + ["--format", "xml"],
        "ranks per node bad": ["allreduce_ring"] + ok + ["--ranks-per-node", "0"],
        "unknown flag": ["allreduce_ring"] + ok + ["--frobnicate"],
        "missing value": ["allreduce_ring"] + ok + ["-b"],
    }
    for what, argv in cases.items():
        p = run([binary] + argv)
        lines = p.stderr.splitlines()
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith(
                "collscope_predict: error: "):
            failures.append(f"bad input '{what}': exit {p.returncode}, stderr {p.stderr!r}")
    os.remove(bad_model)

    for f in failures:
        print("FAIL:", f)
    print(f"predict_test: {len(algorithms)} algorithms, {len(cases)} bad inputs, "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
