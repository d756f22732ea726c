#!/usr/bin/env python3
"""scripts/compare: its bad input (exit 2, one line, before any run), a name's leading
environment assignments, and two short runs end to end at 2 ranks: the same binary on
both sides (a ratio, its interval and a verdict per size, the test named) and one side
slowed 10x through the test hook COLLSCOPE_DEBUG_SLOWDOWN (found: "A slower", the
interval above 1). The plant is large and the rounds 11 because ctest runs this beside
other tests: on 2 busy cores one round of the unslowed side can lose its core for a
whole time slice (its 1 us run median became 30 ms), and at 7 rounds one such round
alone widens the signed-rank interval below 1.

usage: compare_test.py BIN_DIR GROUP   (GROUP: bad_input | end_to_end)
"""
import os
import re
import subprocess
import sys

from collscope import compare
from collscope.checks import check, failures

sys.dont_write_bytecode = True
BIN = os.path.abspath(sys.argv[1])
GROUP = sys.argv[2] if len(sys.argv) > 2 else "bad_input"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compare")
ROW = re.compile(r"^\s+(\d+)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\[([\d.e+-]+|inf), "
                 r"([\d.e+-]+|inf)\]\s+(no difference|A faster|A slower)$")


def run(*args, timeout=300):
    return subprocess.run([sys.executable, SCRIPT, "--bin", BIN, *args], capture_output=True,
                          text=True, timeout=timeout)


def expect_usage(args, words):
    p = run(*args, timeout=60)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith("compare: error: ")
          and all(w in lines[0] for w in words) and not p.stdout,
          f"{' '.join(args)}: exit 2, one line naming {words} ({p.returncode}: {p.stderr.strip()})")


def test_bad_input():
    pair = ["allreduce_ring", "allreduce_ring"]
    expect_usage(["--repeats", "0", *pair], ["--repeats", "'0'"])
    expect_usage(["--repeats", "two", *pair], ["--repeats", "'two'"])
    expect_usage(["--np", "-1", *pair], ["--np"])
    expect_usage(["--metric", "speed", *pair], ["--metric", "'speed'"])
    expect_usage(["--repeats"], ["--repeats", "needs a value"])
    expect_usage(["--fast", *pair], ["unknown option", "'--fast'"])
    expect_usage(["allreduce_ring"], ["two benchmark names"])
    expect_usage(["allreduce_ring", "no_such_binary"], ["no_such_binary"])
    expect_usage(["COLLSCOPE_DEBUG_SLOWDOWN=1.3", "allreduce_ring"], ["no benchmark binary ''"])
    expect_usage(["allreduce_ring 'unbalanced", "allreduce_ring"], ["cannot split"])
    s = compare.side("COLLSCOPE_DEBUG_SLOWDOWN=1.3 X=a=b allreduce_ring -t mpi", BIN)
    check(s["env"] == {"COLLSCOPE_DEBUG_SLOWDOWN": "1.3", "X": "a=b"} and
          s["binary"] == "allreduce_ring" and s["args"] == ["-t", "mpi"],
          f"a name's leading NAME=VALUE words are its environment ({s})")


def table(p):
    return [ROW.match(line) for line in p.stdout.splitlines() if not line.startswith("#")]


def test_end_to_end():
    sizes = ["-b", "1K", "-e", "4K", "-f", "4", "-n", "10", "-w", "2"]
    p = run("--repeats", "2", "allreduce_ring", "allreduce_ring", *sizes)
    rows = table(p)
    check(p.returncode == 0 and len(rows) == 2 and all(rows),
          f"identical binaries, 2 rounds: one row per size, ratio, interval, verdict "
          f"({p.returncode}: {p.stdout}{p.stderr})")
    check("# test: Mann-Whitney" in p.stdout, "fewer than 6 rounds: each round's iterations")
    planted = "COLLSCOPE_DEBUG_SLOWDOWN=10 allreduce_ring"
    p = run("--repeats", "11", "--metric", "time", planted, "allreduce_ring", *sizes)
    rows = table(p)
    check(p.returncode == 0 and len(rows) == 2 and all(rows) and
          all(r.group(7) == "A slower" and float(r.group(5)) > 1 for r in rows),
          f"one side slowed 10x: found at every size, the interval above 1 ({p.stdout}{p.stderr})")
    check("# test: Wilcoxon signed-rank" in p.stdout and "97.5% per row" in p.stdout,
          "11 rounds, 2 rows at 97.5 % each: the signed-rank test")


def main():
    {"bad_input": test_bad_input, "end_to_end": test_end_to_end}[GROUP]()
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
