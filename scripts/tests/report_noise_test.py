#!/usr/bin/python3
"""scripts/report's noise (scripts/collscope/noise.py, the advisor's verdicts; see
docs/statistics.md), on synthetic rows and on the old-schema files of results/tests/data:

  advisor   the rules' pick (direct, at N = 2) 6 % slower than ring in 10 noisy
            iterations: a tie with its interval; 1.5x slower in tight ones: disagree;
            slower in one round of two only (a slow state): a tie; the counts of sizes
            turned into ties
  shift     a run 2.5x slower from 32 KiB up in one round of three: named as a slow run;
            none where the rounds agree
  spread    rows without the schema-5 columns get them computed from times_us (and are
            counted), rows with them keep theirs
  old       scripts/report on schema 1-4 files: exit 0, noise.md says the spread was
            computed and that the file predates the machine fields
  machine   the machine's warnings of schema-5 runs, one line per kind with its runs
  threshold scripts/report --noise-threshold: out of (0, 10] or a word, exit 2 and one
            line; a good one flags the rows against itself

usage: report_noise_test.py SOURCE_DIR
"""
import os
import random
import subprocess
import sys
import tempfile

from collscope import noise, report
from collscope.checks import check, run_tests

sys.dont_write_bytecode = True
SOURCE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RNG = random.Random(7)


def row(algorithm, nbytes, factor, spread, k=-1, n=10, run_id=0):
    """A host allreduce row at N = 2 whose n iterations scatter by `spread` around factor
    x 100 us (x the size in KiB)."""
    base = 100.0 * max(1, nbytes // 1024) * factor
    times = [base * RNG.lognormvariate(0, spread) for _ in range(n)]
    r = {"collective": "allreduce", "algorithm": algorithm, "transport": "mpi", "medium": "mpi",
         "nranks": 2, "bytes": nbytes, "dtype": "float", "op": "sum", "times_us": times,
         "time_us": sorted(times)[n // 2], "predicted_us": None, "vendor": False,
         "vendor_algorithm": "", "volume_source": "", "volume_witness": "", "nodes": None,
         "run": None, "run_id": run_id, "round": k}
    return r


def by_size(group):
    return {s["bytes"]: s for s in group["sizes"]}


def test_advisor():
    RNG.seed(7)
    rows = [row("ring", 1024, 1.0, 0.2), row("direct", 1024, 1.06, 0.2),
            row("ring", 4096, 1.0, 0.02), row("direct", 4096, 1.5, 0.02)]
    noise.annotate(rows)
    g = report.advise_group(rows)
    check(g["pick"] == "direct", f"the rules pick direct at N = 2 ({g['pick']})")
    sizes = by_size(g)
    small, planted = sizes[1024], sizes[4096]
    check(small["verdict_without_noise"] == "disagree" and small["verdict"] == report.TIE_VERDICT,
          f"6 % in 10 noisy iterations: disagree by median, a tie beyond it "
          f"({small['rule_test'].text()})")
    check(small["rule_test"].interval.holds_one, "its interval holds 1")
    check(planted["verdict"] == "disagree" and planted["rule_test"].interval.low > 1.3,
          f"1.5x in tight iterations stays disagree ({planted['rule_test'].text()})")
    text = "\n".join(report.noise_count_lines([g]))
    check("at 2 sizes; at 1 of them the difference is within the noise" in text,
          f"advisor.md counts the ties: {text[:120]}...")
    two = [row("ring", 4096, 1.0, 0.02, k=0), row("direct", 4096, 2.5, 0.02, k=0),
           row("ring", 4096, 1.0, 0.02, k=1), row("direct", 4096, 1.0, 0.02, k=1)]
    noise.annotate(two)
    s = by_size(report.advise_group(two))[4096]
    check(s["verdict"] == report.TIE_VERDICT,
          f"slower in one round of two (a slow state): a tie ({s['rule_test'].text()})")


def test_shift():
    RNG.seed(8)
    rows = []
    for k in range(3):
        for run_id, algorithm in enumerate(("ring", "direct", "tree")):
            slow = 2.5 if (k == 1 and algorithm == "tree") else 1.0
            rows += [row(algorithm, b, slow, 0.03, k=k, run_id=10 * k + run_id)
                     for b in (16 << 10, 64 << 10, 256 << 10, 1 << 20)]
    noise.annotate(rows)
    shift = noise.run_wide_shift(rows)
    check([(label.split()[0], k) for label, k, _, _ in shift["slow"]] == [("allreduce_tree", 1)],
          f"the one slow run found: {shift['slow']}")
    check(shift["slow"] and shift["slow"][0][3] == 3, "over its 3 cells from 32 KiB up")
    text = " ".join(noise.shift_lines(rows))
    check("Run-wide shift" in text and "allreduce_tree" in text, "noise.md names it")
    calm = [r for r in rows if not (r["round"] == 1 and r["algorithm"] == "tree")]
    check(not noise.run_wide_shift(calm)["slow"], "none where the rounds agree")
    check("No run-wide shift" in " ".join(noise.shift_lines(calm)), "and says so")


def test_spread():
    old = row("ring", 1024, 1.0, 0.5)
    new = dict(row("ring", 1024, 1.0, 0.5), time_us_p25=1.0, time_us_p75=2.0, time_spread=0.5,
               noisy=False, noise_threshold=0.9, round=3)
    computed = noise.annotate([old, new])
    check(computed == 1, f"one row computed, one read ({computed})")
    check(old["spread"] is not None and old["noisy"] == (old["spread"] > 0.2),
          f"computed: spread {old['spread']:.2f}, noisy {old['noisy']}")
    check(new["noisy"] is False and new["p25"] == 1.0 and new["noise_threshold"] == 0.9
          and new["round"] == 3, "read: the row's own columns")


def test_old_files():
    for version in (1, 2, 3, 4):
        path = os.path.join(SOURCE, "results", "tests", "data", f"schema_v{version}.h5")
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "report"), path,
                                "--out", out], capture_output=True, text=True, timeout=120)
            page = open(os.path.join(out, "noise.md")).read() if p.returncode == 0 else ""
        check(p.returncode == 0, f"schema {version}: exit 0 ({p.stderr.strip()[:200]})")
        check("computed here from times_us" in page, f"schema {version}: the spread computed, said")
        check("predates the machine fields" in page, f"schema {version}: no machine record, said")
        check("spread computed from times_us" in p.stdout, f"schema {version}: the summary says it")


def test_threshold():
    """--noise-threshold: out of (0, 10] or a word, one line and exit 2, nothing written;
    a good one flags the rows against itself."""
    path = os.path.join(SOURCE, "results", "tests", "data", "schema_v3.h5")
    report_cmd = [sys.executable, os.path.join(SOURCE, "scripts", "report"), path]
    with tempfile.TemporaryDirectory() as tmp:
        for bad in ("0", "10.5", "-1", "word"):
            out = os.path.join(tmp, f"bad_{bad}")
            p = subprocess.run(report_cmd + ["--out", out, "--noise-threshold", bad],
                               capture_output=True, text=True, timeout=120)
            lines = p.stderr.strip().splitlines()
            check(p.returncode == 2 and len(lines) == 1 and "(0, 10]" in lines[0]
                  and not os.path.exists(out),
                  f"--noise-threshold {bad}: exit 2, one line, nothing written ({p.stderr.strip()})")
        out = os.path.join(tmp, "good")
        p = subprocess.run(report_cmd + ["--out", out, "--noise-threshold", "0.001"],
                           capture_output=True, text=True, timeout=120)
        page = open(os.path.join(out, "noise.md")).read() if p.returncode == 0 else ""
        check("threshold (0.001;" in page and "**0 of" not in page,
              "--noise-threshold 0.001: the rows flagged against it")
    rows = [row("ring", 1024, 1.0, 0.1), row("ring", 1024, 1.0, 0.6)]
    noise.annotate(rows)
    noise.reflag(rows, 5.0)
    check(not any(r["noisy"] for r in rows) and rows[0]["noise_threshold"] == 5.0,
          "reflag: a threshold of 5 leaves no row noisy")


def test_machine():
    """noise.md's machine: the warnings of schema-5 runs grouped by kind, counted."""
    def run(program, load, warnings):
        return {"run_id": 0, "program": program, "host_cores": 2, "oversubscribed": False,
                "load_avg_1m": load, "cpu_governor": "", "busy_processes": "",
                "machine_warnings": "\n".join(warnings)}
    hot = "the load average on vm ({} over the last minute) exceeds its 2 cores: ..."
    runs = [run("allreduce_ring", 7.5, [hot.format(7.5), "4 ranks on vm's 2 cores"]),
            run("allreduce_dbt", 9.25, [hot.format(9.25)]), run("pingpong", float("nan"), [])]
    table = lambda header, body, align: "\n".join(" | ".join(map(str, r)) for r in body)
    text = "\n".join(noise.machine_lines(runs, table))
    check(f"{hot.format(7.5)} | 2 | allreduce_dbt, allreduce_ring" in text,
          f"two load warnings are one kind, over 2 runs ({text})")
    check("4 ranks on vm's 2 cores | 1 | allreduce_ring" in text, "another kind, its own line")
    check("7.50 – 9.25" in text, "the load range, an unreadable one left out")
    calm = "\n".join(noise.machine_lines([run("allreduce_ring", 0.5, [])], table))
    check("No machine warning" in calm, "no warning: said so")


def main():
    run_tests(test_machine, test_threshold, test_advisor, test_shift, test_spread,
              test_old_files)


if __name__ == "__main__":
    main()
