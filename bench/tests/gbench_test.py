#!/usr/bin/env python3
"""--gbench end to end through mpirun (docs/timing.md, "Google Benchmark"): the report is
Google Benchmark's JSON with the names, counters and aggregates collscope promises, written
by rank 0 alone and made of the same timed samples as the rows; compare.py from Debian's
libbenchmark-tools pairs two runs and runs its U test; bad flags are one line and exit 2;
and without --gbench the table and JSON lines keep today's format (bench/tests/
gbench_off_format.json, taken from the build before Google Benchmark came in).

usage: gbench_test.py BIN_DIR GROUP   (GROUP: json | out_file | compare | bad_input | off)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from collscope.checks import check, failures
from collscope.runtime_noise import without_runtime_noise

BIN = sys.argv[1] if len(sys.argv) > 1 else ""
HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = "/usr/share/benchmark/compare.py"  # Debian's libbenchmark-tools
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
AGGREGATES = ("mean", "median", "stddev", "cv", "p25", "p75", "min", "max")


def run(args, np=2, env=None, binary="allreduce_ring", timeout=120):
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np), os.path.join(BIN, binary)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, **(env or {})),
                       timeout=timeout)
    return p.returncode, p.stdout, without_runtime_noise(p.stderr)


def quantile(values, q):
    """numpy.percentile's default: linear between the order statistics."""
    v = sorted(values)
    h = (len(v) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def check_report(report, rows, names, iterations, repetitions, nranks, per_iteration):
    """The library's JSON against the rows (-J) of the same run: every name, its
    repetitions made of the row's samples, its counters and its aggregates."""
    runs = [b for b in report["benchmarks"] if b["run_type"] == "iteration"]
    aggs = [b for b in report["benchmarks"] if b["run_type"] == "aggregate"]
    check(sorted({b["name"] for b in runs}) == sorted(names), f"benchmark names {names}")
    check(report["context"].get("collscope_nranks") == str(nranks)
          and report["context"].get("executable", "").endswith("allreduce_ring"),
          f"context: collscope_nranks {nranks}, the executable ({report['context']})")
    for name, row in zip(names, rows):
        reps = sorted((b for b in runs if b["name"] == name), key=lambda b: b["repetition_index"])
        check(len(reps) == repetitions and all(b["iterations"] == iterations and b["time_unit"] == "us"
                                               and "error_occurred" not in b for b in reps),
              f"{name}: {repetitions} repetitions of {iterations} iterations in us")
        times = row["times_us"]
        check(len(times) == repetitions * per_iteration, f"{name}: the row keeps every sample "
              f"({len(times)} == {repetitions} x {per_iteration})")
        # Each repetition's time is the mean of its iterations' samples (the row's, in us).
        means = [sum(times[k * per_iteration:(k + 1) * per_iteration]) / per_iteration
                 for k in range(repetitions)]
        check(all(close(b["real_time"], m, 2e-3) for b, m in zip(reps, means)),
              f"{name}: repetition times {[b['real_time'] for b in reps]} are the row's samples' "
              f"means {means}")
        factor = 2 * (nranks - 1) / nranks
        check(all(b["bytes"] == row["bytes"]
                  and close(b["algbw"], row["bytes"] / (b["real_time"] * 1e-6), 1e-6)
                  and close(b["busbw"], b["algbw"] * factor, 1e-6)
                  and close(b["bytes_per_second"], b["algbw"], 1e-6) for b in reps),
              f"{name}: counters bytes, algbw, busbw (x {factor:.3f}), bytes_per_second")
        mine = {b["aggregate_name"]: b["real_time"] for b in aggs if b["run_name"] == name}
        check(sorted(mine) == sorted(AGGREGATES), f"{name}: aggregates {sorted(mine)}")
        values = [b["real_time"] for b in reps]
        want = {"p25": quantile(values, 0.25), "p75": quantile(values, 0.75),
                "min": min(values), "max": max(values), "median": quantile(values, 0.5)}
        check(all(close(mine.get(k, -1), v, 1e-9) for k, v in want.items()),
              f"{name}: p25, p75, min, max, median over the repetitions ({mine} against {want})")


def test_json():
    with tempfile.TemporaryDirectory() as d:
        rows_path = os.path.join(d, "rows.jsonl")
        # 3 ranks: a report from a second rank would make stdout two JSON documents.
        code, out, err = run(["-b", "8", "-e", "64", "-f", "8", "-n", "4", "--gbench",
                              "--benchmark_repetitions=3", "--benchmark_format=json",
                              "-J", rows_path], np=3)
        check(code == 0, f"--gbench --benchmark_format=json: exit 0 (got {code}: {err.strip()})")
        try:
            report = json.loads(out)
        except ValueError as e:
            check(False, f"stdout is one JSON document, rank 0's ({e}): {out[:300]!r}")
            return
        rows = [json.loads(l) for l in open(rows_path)]
        check(len(rows) == 2 and all(r["timing"] == "call" and r["iters"] == 4 for r in rows),
              f"-J: one row per case, timing call, iters 4 ({len(rows)} rows)")
        names = [f"allreduce_ring/mpi/host/float/sum/{s}/iterations:4/repeats:3/manual_time"
                 for s in (8, 64)]
        check_report(report, rows, names, 4, 3, 3, 4)

        # --timing loop: one iteration per repetition, the average of -n calls back to back.
        code, out, err = run(["-b", "1K", "-e", "1K", "-n", "6", "--timing", "loop", "--gbench",
                              "--benchmark_repetitions=5", "--benchmark_format=json",
                              "-J", rows_path])
        check(code == 0, f"--gbench --timing loop: exit 0 (got {code}: {err.strip()})")
        report = json.loads(out) if code == 0 else {"benchmarks": [], "context": {}}
        rows = [json.loads(l) for l in open(rows_path)] if code == 0 else []
        check(len(rows) == 1 and rows[0]["timing"] == "loop" and rows[0]["iters"] == 6,
              "--timing loop: one row, timing loop, iters 6")
        if rows:
            check_report(report, rows,
                         ["allreduce_ring/mpi/host/float/sum/1024/iterations:1/repeats:5/manual_time"],
                         1, 5, 2, 1)


def test_out_file():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gb.json")
        code, out, err = run(["-b", "8", "-e", "8", "-n", "3", "--gbench", "--benchmark_repetitions=2",
                              "--benchmark_out=" + path, "--benchmark_filter=/8/"], np=3)
        check(code == 0, f"--benchmark_out: exit 0 (got {code}: {err.strip()})")
        check(os.path.exists(path) and not os.path.exists(path + ".tmp"),
              "--benchmark_out: the file in place, no .tmp left")
        report = json.load(open(path)) if os.path.exists(path) else {"benchmarks": []}
        names = {b["name"] for b in report["benchmarks"]}
        check(names == {"allreduce_ring/mpi/host/float/sum/8/iterations:3/repeats:2/manual_time",
                        *(f"allreduce_ring/mpi/host/float/sum/8/iterations:3/repeats:2/manual_time_{a}"
                          for a in AGGREGATES)}, f"--benchmark_out holds the JSON report ({names})")
        # The console report on stdout, once: rank 0's.
        check(out.count("Benchmark ") == 1 and out.count("/repeats:2/manual_time ") == 2
              and "\x1b[" not in out,
              f"console report on stdout once, without colour codes: {out!r}")
        code, out, err = run(["-b", "8", "-e", "8", "--gbench", "--benchmark_out=/nonexistent/d/x.json"])
        lines = [l for l in err.splitlines() if l.strip()]
        check(code == 3 and len(lines) == 1 and "cannot write the Google Benchmark file" in lines[0]
              and out.strip() == "", f"unwritable --benchmark_out: exit 3, one line ({code}, {lines})")
        code, out, _ = run(["-b", "8", "-e", "64", "-f", "8", "--gbench", "--benchmark_list_tests"])
        check(code == 0 and out.split() == [
            f"allreduce_ring/mpi/host/float/sum/{s}/iterations:20/repeats:9/manual_time" for s in (8, 64)],
            f"--benchmark_list_tests: the names, once, nothing run ({out!r})")


def compare(a, b, dump):
    p = subprocess.run(["/usr/bin/python3", COMPARE, "--dump_to_json", dump, "--no-color",
                        "benchmarks", a, b], capture_output=True, text=True, timeout=120)
    diff = json.load(open(dump)) if p.returncode == 0 and os.path.exists(dump) else []
    return p.returncode, p.stdout + p.stderr, diff


def utest_of(diff, name):
    for entry in diff:
        if entry.get("name") == name and entry.get("utest"):
            return entry["utest"], entry["measurements"]
    return {}, []


def test_compare():
    if not os.path.exists(COMPARE) or subprocess.run(["/usr/bin/python3", "-c", "import scipy"]).returncode:
        print(f"SKIPPED: needs {COMPARE} (libbenchmark-tools) and python3-scipy")
        sys.exit(77)
    name = "allreduce_ring/mpi/host/float/sum/8/iterations:10/repeats:9/manual_time"
    with tempfile.TemporaryDirectory() as d:
        outs = {}
        for tag, env in (("a", {}), ("b", {}), ("slow", {"COLLSCOPE_DEBUG_SLOWDOWN": "10"})):
            outs[tag] = os.path.join(d, tag + ".json")
            code, _, err = run(["-b", "8", "-e", "8", "-n", "10", "--gbench", "--benchmark_repetitions=9",
                                "--benchmark_out=" + outs[tag]], env=env)
            check(code == 0, f"run {tag}: exit 0 (got {code}: {err.strip()})")
        code, text, diff = compare(outs["a"], outs["b"], os.path.join(d, "ab.json"))
        utest, _ = utest_of(diff, name)
        check(code == 0 and "U Test, Repetitions: 9 vs 9" in text and name + "_pvalue" in text
              and 0 <= utest.get("time_pvalue", -1) <= 1 and utest.get("nr_of_repetitions") == 9,
              f"compare.py pairs two runs and reports its U test ({code}, {utest}): {text[-600:]}")
        code, text, diff = compare(outs["a"], outs["slow"], os.path.join(d, "slow.json"))
        utest, measurements = utest_of(diff, name)
        changes = [m["time"] for m in measurements]
        # 10x, not less: on a busy machine two runs of one binary can differ by 2x.
        check(code == 0 and utest.get("time_pvalue", 1) < 0.01 and changes
              and sum(c > 1 for c in changes) >= 8,
              f"compare.py finds the planted 10x slowdown: p {utest.get('time_pvalue')}, "
              f"changes {changes}")


# Through mpirun, on every rank alike (bench/tests/gbench_flags_test.cpp has every flag).
BAD = [  # (args, message pattern, environment)
    (["--gbench", "--benchmark_repetitions=0"],
     r"--benchmark_repetitions must be a whole number of at least 1, got '0'", None),
    (["--gbench", "--benchmark_repetitions=many"],
     r"--benchmark_repetitions must be a whole number of at least 1, got 'many'", None),
    (["--gbench", "--benchmark_format=xml"],
     r"--benchmark_format must be one of console, json, csv, got 'xml'", None),
    (["--gbench", "--benchmark_enable_random_interleaving=true"], r"random_interleaving cannot be used", None),
    (["--gbench", "--benchmark_filter=/float/sum/3$"],
     r"--benchmark_filter '/float/sum/3\$' selects none of the 1 benchmarks", None),
    (["--benchmark_format=json"], r"--benchmark_format applies to --gbench only", None),
    (["--gbench", "-m", "device", "--path", "ipc", "--graph", "2"], r"--gbench times calls .*drop --graph",
     {"COLLSCOPE_DEVICE_EMULATION": "1"}),
]


def test_bad_input():
    for args, pattern, env in BAD:
        code, out, err = run(["-b", "8", "-e", "8"] + args, np=2, env=env)
        lines = [l for l in err.splitlines() if l.strip()]
        check(code == 2 and len(lines) == 1 and lines[0].startswith("allreduce_ring: error: ")
              and re.search(pattern, lines[0]) is not None and out.strip() == "",
              f"{' '.join(args)}: exit 2, one line matching {pattern!r} "
              f"(got {code}, {lines}, stdout {out[:100]!r})")


NUMBER = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")


def format_of(table, jsonl):
    """What must not change without --gbench: each table line's length and its words with
    every number masked (the machine's warnings left out: they depend on the machine), and
    each JSON line's keys in order with the kind of each value."""
    lines = []
    for line in table.splitlines():
        if line.startswith("# warning:"):
            continue
        words = [NUMBER.sub("#", w).replace("%!", "%") for w in line.split()]
        lines.append([len(line)] + words)
    kinds = []
    for line in jsonl.splitlines():
        row = json.loads(line)
        kinds.append([[k, type(v).__name__ if v is not None else "null"] for k, v in row.items()])
    return {"table": lines, "jsonl": kinds}


OFF_ARGS = ["-b", "8", "-e", "64", "-f", "8", "-n", "5", "-w", "1"]


def current_format():
    code, table, err = run(OFF_ARGS)
    code2, jsonl, err2 = run(OFF_ARGS + ["--format", "jsonl"])
    check(code == 0 and code2 == 0, f"without --gbench: exit 0 ({code}, {code2}: {err} {err2})")
    return format_of(table, jsonl) if code == 0 and code2 == 0 else {}


def test_off():
    want = json.load(open(os.path.join(HERE, "gbench_off_format.json")))
    got = current_format()
    for part in ("table", "jsonl"):
        check(got.get(part) == want[part],
              f"without --gbench the {part} has today's format "
              f"(got {json.dumps(got.get(part))[:600]}, want {json.dumps(want[part])[:600]})")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "write-off-format":  # once, from the build before
        json.dump(current_format(), open(os.path.join(HERE, "gbench_off_format.json"), "w"), indent=None)
        sys.exit(0)
    {"json": test_json, "out_file": test_out_file, "compare": test_compare,
     "bad_input": test_bad_input, "off": test_off}[sys.argv[2]]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
