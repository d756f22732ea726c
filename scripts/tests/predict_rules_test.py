#!/usr/bin/python3
"""scripts/predict-rules and scripts/report --predicted.

  verdicts   at N = 16 and 64, 8 ranks per node, 1 KiB and 1 MiB: every hand-written
             algorithm of the four ruled collectives is predicted (volume ok), and each
             verdict's fastest, pick and ratio are recomputed here from the prediction
             lines; the picks are the rules' as docs/selection-rules.md states them
  report     report --predicted puts the same verdicts in advisor.md
  bad input  bad flags, a missing model, an unruled collective, a bad --predicted file:
             exit 2, one line, nothing written

Usage: predict_rules_test.py --bin BUILD/bin --source SOURCE_DIR --tool RESULTS_TOOL
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from collscope.checks import check, failures
from collscope import algorithms


# The rules, as docs/selection-rules.md states them, at the points the test predicts
# (16 and 64 ranks at 8 per node: 2 and 8 nodes, a fat tree).
EXPECTED_PICKS = {("allreduce", 16): "halving_doubling", ("allreduce", 64): "dbt",
                  ("alltoall", 16): "bruck", ("alltoall", 64): "ring",
                  ("allgather", 16): "ring", ("allgather", 64): "ring",
                  ("reduce_scatter", 16): "ring", ("reduce_scatter", 64): "ring"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--tool", required=True)
    args = ap.parse_args()
    script = os.path.join(args.source, "scripts/predict-rules")
    report = os.path.join(args.source, "scripts/report")
    model = os.path.join(args.source, "collectives/model/example.json")
    env = dict(os.environ, COLLSCOPE_BUILD=os.path.dirname(os.path.abspath(args.bin)))
    catalogue = [(c, a) for c, names in algorithms.load(args.bin).hand_written().items()
                 for a in names]

    def run(cmd):
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rules")
        p = run([script, "--model", model, "--nranks", "16,64", "--sizes", "1K,1M",
                 "--ranks-per-node", "8", "--bin", args.bin, "--out", out])
        check(p.returncode == 0, f"predict-rules exits 0 ({p.returncode}: {p.stderr.strip()})")
        jsonl = os.path.join(out, "predicted_rules.jsonl")
        check(os.path.isfile(jsonl) and os.path.isfile(os.path.join(out, "predicted_rules.md")),
              "predicted_rules.jsonl and .md written")
        if failures:
            return 1
        lines = [json.loads(line) for line in open(jsonl)]
        preds = [x for x in lines if x["kind"] == "prediction"]
        verdicts = [x for x in lines if x["kind"] == "verdict"]
        ruled = [(c, a) for c, a in catalogue if c in
                 ("allreduce", "alltoall", "allgather", "reduce_scatter")]
        check(len(preds) == len(ruled) * 2 * 2,
              f"{len(preds)} predictions: every ruled algorithm at 2 N x 2 sizes")
        check(all(x["volume_ok"] for x in preds), "every prediction's volume equals the theory")
        check(len(verdicts) == 4 * 2 * 2, f"{len(verdicts)} verdicts: 4 collectives x 2 N x 2 sizes")
        for v in verdicts:
            times = {x["algorithm"][len(v["collective"]) + 1:]: x["time_us"] for x in preds
                     if x["algorithm"].startswith(v["collective"] + "_")
                     and x["nranks"] == v["nranks"] and x["size"] == v["size"]}
            fastest = min(times, key=lambda a: (times[a], a != v["pick"], a))
            where = f"{v['collective']} N={v['nranks']} {v['size']} B"
            check(v["fastest"] == fastest and v["fastest_us"] == times[fastest],
                  f"{where}: fastest {v['fastest']} is the lowest prediction ({fastest})")
            check(v["pick"] == EXPECTED_PICKS[(v["collective"], v["nranks"])],
                  f"{where}: the rules pick {v['pick']}")
            check(v["pick_us"] == times.get(v["pick"])
                  and abs(v["pick_over_fastest"] - times[v["pick"]] / times[fastest]) < 1e-12
                  and v["verdict"] == ("agree" if v["pick"] == fastest else "disagree"),
                  f"{where}: pick time, ratio and verdict ({v['verdict']})")
        md = open(os.path.join(out, "predicted_rules.md"), encoding="utf-8").read()
        check(md.count("\n| 16 |") + md.count("\n| 64 |") == len(verdicts),
              "the markdown has a line per verdict")

        # A point past --timeout is left out and listed, not a failure.
        p = run([script, "--model", model, "--nranks", "64", "--sizes", "1K", "--collectives",
                 "allreduce", "--timeout", "0.000001", "--bin", args.bin,
                 "--out", os.path.join(tmp, "slow")])
        check(p.returncode == 0 and "Not predicted" in p.stdout and
              "allreduce_ring at N = 64, 1024 B: over" in p.stdout,
              f"--timeout: the points left out are listed ({p.returncode}: {p.stderr.strip()})")

        # report --predicted: the verdicts in advisor.md.
        h5 = os.path.join(tmp, "sample.h5")
        t = subprocess.run([args.tool, "write", h5, "sample", "0", "3"], capture_output=True,
                           text=True, timeout=60)
        check(t.returncode == 0, f"results_tool writes a sample file ({t.stderr.strip()})")
        rep_out = os.path.join(tmp, "report")
        p = run([sys.executable, report, h5, "--out", rep_out, "--predicted", jsonl])
        check(p.returncode in (0, 4), f"report --predicted runs ({p.returncode}: "
                                      f"{p.stderr.strip()[-300:]})")
        advisor = os.path.join(rep_out, "advisor.md")
        text = open(advisor, encoding="utf-8").read() if os.path.isfile(advisor) else ""
        check("## The rules against predictions at scale" in text,
              "advisor.md has the predictions section")
        for v in verdicts:
            line = (f"| {v['nranks']} | {v['nodes']} | {'1 KiB' if v['size'] == 1024 else '1 MiB'}"
                    f" | {v['fastest']} | {v['fastest_us']:.1f} | {v['pick']} |")
            check(line in text, f"advisor.md: {v['collective']} N={v['nranks']} "
                                f"{v['size']} B line")

        # Bad input: exit 2, one line, nothing written.
        bad_out = os.path.join(tmp, "bad")
        cases = {"no model": [script, "--nranks", "16"],
                 "model file missing": [script, "--model", os.path.join(tmp, "none.json")],
                 "bad N": [script, "--model", model, "--nranks", "16,x"],
                 "N zero": [script, "--model", model, "--nranks", "0"],
                 "bad size": [script, "--model", model, "--sizes", "1X"],
                 "empty list item": [script, "--model", model, "--sizes", "1K,,1M"],
                 "unruled collective": [script, "--model", model, "--collectives", "broadcast"],
                 "bad ranks per node": [script, "--model", model, "--ranks-per-node", "0"],
                 "bad timeout": [script, "--model", model, "--timeout", "soon"],
                 "unknown --exclude": [script, "--model", model, "--exclude", "allreduce_nosuch"],
                 "unknown flag": [script, "--model", model, "--bogus"]}
        for what, cmd in cases.items():
            p = run(cmd + ["--bin", args.bin, "--out", bad_out])
            lines = p.stderr.strip().splitlines()
            check(p.returncode == 2 and len(lines) == 1 and
                  lines[0].startswith("predict-rules: error: ") and not os.path.exists(bad_out),
                  f"{what}: exit 2 and one line ({p.returncode}: {p.stderr.strip()})")
        not_json = os.path.join(tmp, "not.jsonl")
        with open(not_json, "w") as f:
            f.write("{\"kind\": \"verdict\"\n")
        no_verdicts = os.path.join(tmp, "none.jsonl")
        with open(no_verdicts, "w") as f:
            f.write("{\"kind\": \"prediction\"}\n")
        for what, path in (("missing", os.path.join(tmp, "absent.jsonl")),
                           ("not JSON", not_json), ("no verdict lines", no_verdicts)):
            target = os.path.join(tmp, "report_bad")
            p = run([sys.executable, report, h5, "--out", target, "--predicted", path])
            lines = p.stderr.strip().splitlines()
            check(p.returncode == 2 and len(lines) == 1 and "--predicted" in lines[0]
                  and not os.path.exists(target),
                  f"report --predicted {what}: exit 2 and one line ({p.stderr.strip()})")
    print(f"predict_rules_test: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
