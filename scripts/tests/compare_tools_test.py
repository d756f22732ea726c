#!/usr/bin/env python3
"""scripts/compare-tools: its parsing of IMB's and OSU's outputs (samples recorded from
IMB 2021.11, OMB 5.3 and OMB 7.0 in data/compare_tools), its bad input (exit 2, one
line) and source folders that do not build (exit 3, one line), and a short run end to
end against IMB and OSU built from the folders in COLLSCOPE_IMB_SOURCE and
COLLSCOPE_OSU_SOURCE (skipped, exit 77, when neither is set).

usage: compare_tools_test.py BIN_DIR GROUP   (GROUP: parse | bad_input | end_to_end)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from collscope import compare_tools as ct   # its parsers, beside scripts/compare-tools's command line
from collscope.checks import check, failures

sys.dont_write_bytecode = True
BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "compare-tools")
DATA = os.path.join(HERE, "data", "compare_tools")
SKIP = 77


def sample(name):
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def test_parse():
    imb = sample("imb_allreduce_barrier.txt")
    times, reps = ct.parse_imb(imb, "Allreduce")
    check(times == {8: 0.24, 1024: 0.46, 1048576: 245.52}, f"IMB Allreduce: t_avg per size ({times})")
    check(set(reps.values()) == {50}, f"IMB Allreduce: 50 repetitions each ({reps})")
    times, _ = ct.parse_imb(imb, "Barrier")
    check(times == {0: 0.20}, f"IMB Barrier: one t_avg, under size 0 ({times})")
    check(ct.parse_imb(imb, "Bcast") == ({}, {}), "IMB: a benchmark that did not run has no rows")
    for version, first, last in (("osu7", 0.81, 1.10), ("osu5", 0.65, 1.11)):
        times = ct.parse_osu(sample(f"{version}_allreduce.txt"))
        check(sorted(times) == [8, 16, 32, 64, 128, 256, 512, 1024]
              and times[8] == first and times[1024] == last,
              f"{version} osu_allreduce: the average column per size ({times})")
    for version, avg in (("osu7", 0.98), ("osu5", 0.78)):
        times = ct.parse_osu(sample(f"{version}_barrier.txt"))
        check(times == {0: avg}, f"{version} osu_barrier: the average, under size 0 ({times})")
    rows = "\n".join(json.dumps({"bytes": b, "time_us": t}) for b, t in ((8, 0.5), (1024, 1.5)))
    check(ct.parse_collscope("# a comment\n" + rows) == {8: 0.5, 1024: 1.5},
          "collscope: time_us per bytes from its JSON lines")
    # allgather's per-rank sizes: IMB's and OSU's 8 and 1024 B at 2 ranks are collscope's 16 and 2048.
    opts = {"np": 2, "sizes": [16, 2048]}
    check(ct.tool_sizes(opts, True) == [8, 1024] and ct.tool_sizes(opts, False) == [16, 2048],
          "per-rank sizes are collscope's bytes / N")
    check(ct.by_bytes(opts, {8: 1.0, 1024: 2.0, 4: 9.0}, [8, 1024], "allgather") == {16: 1.0, 2048: 2.0},
          "a tool's rows keyed by collscope's bytes")
    check(ct.summary([1.0, 2.0, 4.0, None]) == (2.0, 75.0), "a cell: median and half the spread in %")
    check(ct.paired_ratio([2.0, 9.0, 3.0, None], [1.0, 3.0, 2.0, 5.0]) == 2.0,
          "a ratio: the median of each round's ratio (rounds missing a figure left out)")


def run_script(args, work):
    p = subprocess.run([sys.executable, SCRIPT, "--work", work, "--bin", BIN, *args],
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def one_line(code, err, want_code, pattern, what):
    lines = [l for l in err.splitlines() if l.strip()]
    check(code == want_code and len(lines) == 1 and re.search(pattern, lines[0]) is not None,
          f"{what}: exit {want_code}, one line matching {pattern!r} (got {code}, {lines})")


BAD_INPUT = [  # (arguments after --work and --bin, message pattern)
    ([], r"give at least one source folder"),
    (["--imb", "/nonexistent/imb"], r"--imb '/nonexistent/imb' is not a folder"),
    (["--osu", "{d}", "--np", "0"], r"--np must be a positive integer, got '0'"),
    (["--osu", "{d}", "--repeats"], r"--repeats needs a value"),
    (["--osu", "{d}", "--sizes", "12"], r"size '12' is not a power of two"),
    (["--osu", "{d}", "--sizes", "8,1Q"], r"bad size '1Q'"),
    (["--osu", "{d}", "--collectives", "allreduce,allshuffle"], r"unknown collective 'allshuffle'"),
    (["--osu", "{d}", "--ranks", "mean"], r"--ranks must be max, avg or min, got 'mean'"),
    (["--osu", "{d}", "--nice", "50"], r"--nice must be an integer from -20 to 19"),
    (["--osu", "{d}", "--warmup", "-1"], r"--warmup must be a non-negative integer"),
    (["--osu", "{d}", "--bogus"], r"unknown argument '--bogus'"),
    (["--osu", "{d}", "--sizes", "2"], r"allreduce reduces floats: sizes must be at least 4 B"),
    (["--osu", "{d}", "--collectives", "allgather", "--np", "3", "--sizes", "8"],
     r"allgather at 3 ranks: size 8 does not split into 3 equal blocks"),
]


def test_bad_input():
    with tempfile.TemporaryDirectory() as d:
        work = os.path.join(d, "work")
        for args, pattern in BAD_INPUT:
            args = [a.replace("{d}", d) for a in args]
            code, _, err = run_script(args, work)
            one_line(code, err, 2, pattern, " ".join(args) or "no arguments")
        p = subprocess.run([sys.executable, SCRIPT, "--work", work, "--osu", d, "--bin", d],
                           capture_output=True, text=True)
        one_line(p.returncode, p.stderr, 2, r"no collscope binary .*allreduce_mpi",
                 "--bin without collscope's binaries")
        not_building(d, work)


def not_building(d, work):
    """Folders that exist but do not build: exit 3, one line naming the log."""
    imb = os.path.join(d, "imb")
    os.makedirs(imb)
    with open(os.path.join(imb, "Makefile"), "w") as f:
        f.write("IMB-MPI1:\n\t@echo no compiler here; exit 1\n")
    code, _, err = run_script(["--imb", imb], work)
    one_line(code, err, 3, r"IMB in .*imb did not build \(log: .*imb-build\.log\)",
             "an IMB folder whose make fails")
    check(os.path.exists(os.path.join(imb, "Makefile")) and not os.path.exists(os.path.join(imb, "IMB-MPI1")),
          "the source folder itself is left as it was (the build runs in a copy)")
    empty = os.path.join(d, "empty")
    os.makedirs(empty)
    code, _, err = run_script(["--osu", empty], work)
    one_line(code, err, 3, r"OSU in .*empty did not build", "a folder without OSU's sources")
    osu = os.path.join(d, "osu")
    os.makedirs(os.path.join(osu, "c", "mpi", "collective"))
    open(os.path.join(osu, "c", "mpi", "collective", "osu_allreduce.c"), "w").close()
    with open(os.path.join(osu, "configure"), "w") as f:
        f.write("#!/bin/sh\necho 'configure: error: no MPI here' >&2\nexit 1\n")
    os.chmod(os.path.join(osu, "configure"), 0o755)
    code, _, err = run_script(["--osu", osu], work)
    one_line(code, err, 3, r"OSU in .*osu did not build \(log: .*osu-build\.log\)",
             "an OSU folder whose configure fails")


def test_end_to_end():
    imb, osu = os.environ.get("COLLSCOPE_IMB_SOURCE"), os.environ.get("COLLSCOPE_OSU_SOURCE")
    if not imb and not osu:
        print("skipped: set COLLSCOPE_IMB_SOURCE and/or COLLSCOPE_OSU_SOURCE to source folders")
        sys.exit(SKIP)
    # The build is kept beside the test's binaries: built once, reused while the source
    # folder stays the same.
    work = os.path.join(os.path.dirname(os.path.abspath(BIN)), "compare-tools-test")
    args = (["--imb", imb] if imb else []) + (["--osu", osu] if osu else [])
    args += ["--collectives", "allreduce,barrier", "--sizes", "8,1K", "--repeats", "2",
             "--iters", "20", "--warmup", "2"]
    code, out, err = run_script(args, work)
    check(code == 0, f"a short run: exit 0 (got {code}: {err.strip()[-300:]})")
    rows = {int(l.split()[0]): l.split() for l in out.splitlines()
            if l.strip() and not l.startswith("#")}
    check(sorted(rows) == [0, 8, 1024], f"rows: allreduce at 8 and 1024 B, the barrier ({sorted(rows)})")
    for size, fields in rows.items():
        numbers = [float(x) for x in fields[1:] if re.fullmatch(r"\d+\.\d+", x)]
        tools = (1 if imb else 0) + (1 if osu else 0)
        # a time per tool and for loop and call, a ratio per tool
        check(len(numbers) == 2 * tools + 2 and all(x > 0 for x in numbers),
              f"size {size}: every measured column filled ({' '.join(fields)})")


def main():
    group = sys.argv[2]
    {"parse": test_parse, "bad_input": test_bad_input, "end_to_end": test_end_to_end}[group]()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
