"""Runs two benchmark binaries alternately, several rounds in one go, and prints per size
the ratio of their median busbw (or time), A / B, with its interval and a verdict: "no
difference" where the interval holds 1, else which one is faster. The table as a whole is
at 95 %: each of its S rows at 1 - 0.05 / S (a run of two identical binaries says "no
difference" on every row 95 times in 100). Example:

    scripts/compare allreduce_ring allreduce_mpi -b 16M -e 64M -f 4
    scripts/compare --np 2 --repeats 7 allreduce_dbt allreduce_mpi -b 1K -e 1K
    scripts/compare "allreduce_ring -t ucx" "allreduce_ring -t mpi" -b 1K -e 64M -f 1024
    scripts/compare --metric time "pingpong -t ucx" pingpong -b 8 -e 8
    scripts/compare "COLLSCOPE_DEBUG_SLOWDOWN=1.3 allreduce_ring" allreduce_ring -b 1K -e 1M

A name may carry its own arguments (quoted, after the binary) and, before the binary,
environment assignments for its runs (NAME=VALUE words). Options before the two names:
--np N (ranks, 2), --repeats R (rounds, 20), --bin DIR (build/bin), --metric busbw|time
(busbw: higher is better; time: the median time_us, lower is better). Everything after
the two names goes to both binaries.

Each round runs A then B, the next B then A (a slow spell of the machine falls on both
alike, and neither always runs first). The interval is docs/statistics.md's: with enough
rounds (6 at 95 %, 7 for 3 rows at 98.3 % each, 10 for 20 rows), the Wilcoxon signed-rank
interval over the rounds' paired medians (the round is the unit: this machine can run a
whole run slow); with fewer, each round's iterations give a Mann-Whitney interval and a
difference counts only where every round finds it. Exit code: 0 (whatever the verdicts), 2 on bad usage, 3 when a run fails.
"""
import json
import os
import re
import shlex
import statistics
import subprocess
import sys

from collscope import noise   # warning_kind: the machine's warnings by kind
from collscope import stats
from collscope.paths import ROOT

OPTIONS = ("--np", "--repeats", "--bin", "--metric")
WARNINGS = {}   # the runs' machine warnings by kind: [the first one's text, runs that gave one]
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def usage(msg):
    print(f"compare: error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse(argv):
    opts = {"np": 2, "repeats": 20, "bin": os.path.join(ROOT, "build", "bin"), "metric": "busbw"}
    while argv and argv[0].startswith("--"):
        if argv[0] not in OPTIONS:
            usage(f"unknown option '{argv[0]}' (expected {', '.join(OPTIONS)} before the names)")
        if len(argv) < 2:
            usage(f"{argv[0]} needs a value")
        key, value = argv[0][2:], argv[1]
        if key == "metric" and value not in ("busbw", "time"):
            usage(f"--metric must be busbw or time, got '{value}'")
        elif key not in ("bin", "metric"):
            if not value.isdigit() or int(value) < 1:
                usage(f"--{key} must be a positive integer, got '{value}'")
            value = int(value)
        opts[key] = value
        argv = argv[2:]
    if len(argv) < 2:
        usage("need two benchmark names, e.g. allreduce_ring allreduce_mpi")
    sides = [side(name, opts["bin"]) for name in argv[:2]]
    return opts, sides, argv[2:]


def side(name, bin_dir):
    """{"name", "env", "binary", "args"} of one name: its leading NAME=VALUE words, the
    binary, its own arguments."""
    try:
        words = shlex.split(name)
    except ValueError as e:
        usage(f"cannot split '{name}': {e}")
    env = {}
    while words and ASSIGNMENT.fullmatch(words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    binary = words[0] if words else ""
    if not binary or not os.access(os.path.join(bin_dir, binary), os.X_OK):
        usage(f"no benchmark binary '{binary}' in {bin_dir}")
    return {"name": name, "env": env, "binary": binary, "args": words[1:]}


def run_once(opts, s, args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", **s["env"])
    cmd = ["mpirun", "-q", "-np", str(opts["np"]), os.path.join(opts["bin"], s["binary"]),
           "--format", "jsonl", *s["args"], *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    except OSError as e:
        print(f"compare: error: cannot run {' '.join(cmd)}: {e}", file=sys.stderr)
        sys.exit(3)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        print(f"compare: error: {' '.join(cmd)} exited {p.returncode}: {last}", file=sys.stderr)
        sys.exit(3)
    for line in p.stderr.splitlines():   # "<binary>: warning: ...", printed at the start
        if ": warning: " in line:
            warning = line.split(": warning: ", 1)[1].strip()
            WARNINGS.setdefault(noise.warning_kind(warning), [warning, 0])[1] += 1
    try:
        return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    except ValueError:
        print(f"compare: error: {' '.join(cmd)} printed a line that is not JSON", file=sys.stderr)
        sys.exit(3)


def key_of(row):
    return (row["bytes"], row.get("dtype", "-"), row.get("op", "-"))


def measure(opts, sides, args):
    """[{key: {"times": {round: [times_us]}, "values": [the metric's figure per run]}}]
    per side; round k runs A then B when k is even, B then A when it is odd."""
    field = "busbw_gbps" if opts["metric"] == "busbw" else "time_us"
    cells = [{}, {}]
    for k in range(opts["repeats"]):
        for i in ((0, 1) if k % 2 == 0 else (1, 0)):
            for r in run_once(opts, sides[i], args):
                c = cells[i].setdefault(key_of(r), {"times": {}, "values": []})
                c["times"][k] = [t for t in r.get("times_us") or [r["time_us"]] if t > 0]
                c["values"].append(r.get(field, float("nan")))
    return cells


def ratio_cells(verdict, metric):
    """(ratio, interval, verdict text) of A / B in the metric's terms: a busbw ratio is
    the inverse of the time ratio."""
    if verdict is None:
        return "n/a", "", "no times"
    i = verdict.interval
    if metric == "busbw":
        estimate, low, high = 1 / i.estimate, 1 / i.high, (1 / i.low if i.low > 0 else float("inf"))
    else:
        estimate, low, high = i.estimate, i.low, i.high
    word = {"tie": "no difference", "faster": "A faster", "slower": "A slower"}[verdict.word]
    return f"{estimate:.3f}", f"[{stats.bound(low)}, {stats.bound(high)}]", word


def print_table(opts, sides, cells):
    a, b = sides[0]["name"], sides[1]["name"]
    unit = "busbw (GB/s)" if opts["metric"] == "busbw" else "time (us)"
    keys = [key for key in sorted(cells[0]) if key in cells[1]]
    level = stats.family_level(len(keys))
    family = (f"its interval at {stats.percent(level)} per row, so that the table as a whole "
              f"is at {stats.percent(stats.LEVEL)} (Bonferroni over {len(keys)} rows)"
              if len(keys) > 1 else f"its {stats.percent(level)} interval")
    print(f"# A = {a}, B = {b}: {opts['np']} ranks, {opts['repeats']} rounds (A B, then B A), "
          f"median {unit}; ratio = A / B with {family}")
    print(f"# {'bytes':>12} {'dtype':>8} {'op':>5} {'A':>12} {'B':>12} {'ratio':>7} "
          f"{'interval':>17}  verdict")
    methods = set()
    for key in keys:
        va, vb = (statistics.median(c[key]["values"]) for c in cells)
        verdict = stats.compare_rounds(cells[0][key]["times"], cells[1][key]["times"], level)
        ratio, interval, word = ratio_cells(verdict, opts["metric"])
        if verdict:
            methods.add(verdict.method())
        print(f"  {key[0]:>12} {key[1]:>8} {key[2]:>5} {va:>12.3f} {vb:>12.3f} {ratio:>7} "
              f"{interval:>17}  {word}")
    for m in sorted(methods):
        print(f"# test: {m} (docs/statistics.md)")
    runs = 2 * opts["repeats"]
    for text, count in WARNINGS.values():
        print(f"# machine: {text} ({count} of the {runs} runs warned so)")


def main():
    opts, sides, args = parse(sys.argv[1:])
    print_table(opts, sides, measure(opts, sides, args))
