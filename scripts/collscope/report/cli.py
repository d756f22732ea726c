"""Turns a collscope results file (results/SCHEMA.md) into Markdown tables and PNG plots.

    scripts/report FILE.h5 [--out DIR] [--predicted PREDICTED.jsonl] [--noise-threshold X]

DIR defaults to FILE's name without .h5 plus "_report", next to FILE
(output/quickstart.h5 -> output/quickstart_report/). It gets:

  report.md           the index: what the file holds, every table below, every plot
  volume.md           per row: bytes and messages measured (summed over ranks) against the
                      exact theory, checked rank by rank (and each traffic matrix against
                      its rank totals); any difference is a MISMATCH. Vendor rows the MPI
                      library counted (--vendor-volume) with their N x N matrices and the
                      hand-written algorithm their traffic identifies
  textbook_vs_theory.md  per row: the usual closed form (docs/textbook-formulas.md) against
                      the exact theory (max and mean over ranks), the difference, and why
  time_model.md       per row with a model (--model FILE): predicted against measured time;
                      per (transport, N), algorithm and size band the median and worst
                      ratio (scripts/collscope/model/accuracy.py, as scripts/model-check prints it);
                      per (collective, algorithm) the median, min and max ratio
  layers.md           the layer pipelines' rows (/layer): per run the time split into
                      compute, communication, exposed and hidden communication, the GEMM
                      rate, the busiest rank's bytes beside the textbook figure; then the
                      schemes side by side where they compute the same thing (the three
                      TP -> SP switches, the TP -> SP -> EP flows, the two ETP schemes,
                      TP's MLP against EP's, each layer with and without --overlap),
                      fastest first, each against the fastest beyond the noise or a tie
  tuning.md           rows run under an Open MPI decision file (scripts/tune-mpi validate,
                      docs/tuning.md) beside the default: per (collective, N, size) what the
                      default ran, what the file ran (and whether its traffic shows the
                      rule's algorithm), the gain with its interval, the rule kept or dropped
  noise.md            how far to trust the times (docs/statistics.md): the machine under
                      the runs (/runs, schema 5: cores, load, governor, other busy
                      processes, the warnings), the rounds and a run-wide shift across
                      them, every noisy row (spread above its threshold); a file older
                      than schema 5 has its spread computed from times_us, and says so
  advisor.md          the fastest algorithm per (collective, transport, N, size range),
                      beside what the published selection rules pick
                      (docs/selection-rules.md), the algorithm the library ran (vendor rows
                      with an identified algorithm) and, with a model, the algorithm the time
                      model predicts fastest (and where they disagree); a verdict says
                      "disagree" only where the pick is slower beyond the noise (the
                      interval of the ratio above 1), else "tie (within noise)"; with
                      --predicted (scripts/predict-rules' predicted_rules.jsonl) also the
                      rules against predictions at N this machine cannot run
  busbw_<collective>_np<N>_<transport>.png   busbw against size, one line per algorithm
                                             (median; band: the iterations' quartiles;
                                             noisy points ringed; legend beside the axes)
  time_<collective>_np<N>_<transport>.png    measured (solid, with its band) and predicted
                                             (dashed) time; device rows' <transport> names
                                             their path and sharing (mpi_ipc, nccl,
                                             ucx_staged_mps, mpi_ipc_time_sliced_gpu)
  traffic_<collective>_<algorithm>_np<N>.png the N x N bytes sent (row: sender) at the
                                             largest size of each algorithm (a vendor's:
                                             as the library counted it)
  pingpong_bw_np<N>.png, pingpong_latency_np<N>.png   --pairs all matrices (bandwidth at
                                             the largest size, latency at the smallest)

A short summary goes to stdout. Files of an earlier report in DIR are overwritten; files
this report does not make are left alone (report.md lists what belongs to this one).

Exit status:
  0  the report was written (a file without rows gives a report.md that says so)
  2  bad input: no such file, not an HDF5 file, an HDF5 file that is not a collscope
     results file, another schema version, a table missing or damaged, --out not a
     writable directory; one line "report: <what>" on stderr and nothing written
  3  the file could not be read (unreadable, locked by a writer) or the report could not
     be written (disk full): one line on stderr
  4  a volume MISMATCH in at least one row: measured bytes or messages differ from the
     exact theory, or a traffic matrix from its rank totals. Everything is written first;
     stderr names each such row.

Needs Debian's /usr/bin/python3 with python3-h5py, python3-numpy and python3-matplotlib.
"""

import argparse
import json
import os
import statistics
import sys

from collscope import noise           # each row's spread, the rounds, the machine: noise.md
from collscope import stats           # the verdicts beyond the noise (docs/statistics.md)
from collscope.report.advisor import TIE_VERDICT, advisor_markdown, advisor_groups
from collscope.report.formatting import fmt_ratio, human_bytes, md_table
from collscope.report.index import (TABLES, default_out, empty_report, prepare_out_dir,
                                    report_markdown, write_text)
from collscope.report.layers import layers_markdown
from collscope.report.load import BadInput, IOFailure, read_results
from collscope.report.plots import plot_files
from collscope.report.textbook import textbook_markdown
from collscope.report.time_model import model_rows, ratio_of, time_model_markdown
from collscope.report.tuning import tuning_markdown
from collscope.report.volume import check_volume, volume_markdown

EXIT_OK, EXIT_BAD_INPUT, EXIT_IO, EXIT_MISMATCH = 0, 2, 3, 4


# ---- main -------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"report: {message} (usage: report FILE.h5 [--out DIR])", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def parse_args(argv):
    p = Parser(prog="report", description=__doc__,
               usage="%(prog)s FILE.h5 [--out DIR] [--predicted PREDICTED.jsonl] "
                     "[--noise-threshold X]",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE.h5", help="a collscope results file")
    p.add_argument("--out", metavar="DIR", help="output directory (default: FILE without .h5 "
                   "+ _report, next to FILE)")
    p.add_argument("--predicted", metavar="PREDICTED.jsonl", help="scripts/predict-rules' "
                   "predicted_rules.jsonl: the rules against predictions at scale, in advisor.md")
    p.add_argument("--noise-threshold", metavar="X", help="flag as noisy the rows whose "
                   "relative spread is above X, in (0, 10] (default: each row's own threshold, "
                   "the binaries' --noise-threshold; 0.2 for files before schema 5)")
    return p.parse_args(argv)


VERDICT_KEYS = ("collective", "nranks", "nodes", "size", "fastest", "fastest_us", "pick",
                "pick_us", "pick_over_fastest", "verdict")


def read_predicted(path):
    """The verdict lines of predict-rules' jsonl; BadInput naming the line otherwise."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BadInput(f"--predicted {path}: {e.strerror or e}")
    verdicts = []
    for number, line in enumerate(lines, 1):
        try:
            item = json.loads(line)
        except ValueError:
            raise BadInput(f"--predicted {path}: line {number} is not JSON")
        if not isinstance(item, dict):
            raise BadInput(f"--predicted {path}: line {number} is not a JSON object")
        if item.get("kind") != "verdict":
            continue
        missing = [k for k in VERDICT_KEYS if k not in item]
        if missing:
            raise BadInput(f"--predicted {path}: line {number} lacks {', '.join(missing)}")
        verdicts.append(item)
    if not verdicts:
        raise BadInput(f"--predicted {path}: no verdict lines (write it with "
                       f"scripts/predict-rules)")
    return verdicts


def volume_stats(results, checks):
    all_checks = checks["collective"] + checks["pingpong"]
    return {"ok": sum(c["status"] == "ok" for c in all_checks),
            "mismatch": sum(c["status"] == "MISMATCH" for c in all_checks),
            "measured": sum(c["status"] == "measured" for c in all_checks),
            "na": sum(c["status"] not in ("ok", "MISMATCH", "measured") for c in all_checks),
            "wrong": sum(1 for r in results["collective"] + results["pingpong"]
                         if r["wrong"] is not None and r["wrong"] > 0)}


def report_mismatches(results, checks, out):
    bad = [(r, c) for g in ("collective", "pingpong") for r, c in zip(results[g], checks[g])
           if c["status"] == "MISMATCH"]
    for r, c in bad[:20]:
        print(f"report: volume MISMATCH: {r['collective']} {r['algorithm']} {r['transport']} "
              f"N={r['nranks']} {r['bytes']} B (row {r['index']}): {c['problems'][0]}"
              + (f" (+{len(c['problems']) - 1} more)" if len(c["problems"]) > 1 else ""),
              file=sys.stderr)
    if len(bad) > 20:
        print(f"report: ... and {len(bad) - 20} more rows", file=sys.stderr)
    if bad:
        print(f"report: {len(bad)} row(s) with a volume MISMATCH, see "
              f"{os.path.join(out, 'volume.md')}", file=sys.stderr)
    return len(bad)


def print_summary(results, out, counts, plots):
    rows = results["collective"]
    predicted = model_rows(rows)
    print(f"report: {results['path']}: {len(rows)} collective rows, "
          f"{len(results['pingpong'])} ping-pong rows, {len(results['runs'])} runs")
    print(f"  volume: {counts['ok']} ok, {counts['mismatch']} MISMATCH, {counts['measured']} measured "
          f"(vendor), {counts['na']} n/a")
    if predicted:
        med = statistics.median(ratio_of(r) for r in predicted)
        print(f"  time model: {len(predicted)} rows predicted, median predicted/measured "
              f"{fmt_ratio(med)}")
    else:
        print("  time model: none in this file (run with --model FILE)")
    groups = advisor_groups(rows)
    verdicts = [rng["key"][2] for g in groups for rng in g["ranges"]]
    judged = [v for v in verdicts if v in ("agree", "disagree", TIE_VERDICT)]
    print(f"  advisor: the selection rules agree with the fastest hand-written algorithm on "
          f"{judged.count('agree')} of {len(judged)} size ranges they have a rule for, "
          f"disagree beyond the noise on {judged.count('disagree')}, tie within the noise on "
          f"{judged.count(TIE_VERDICT)}")
    sizes = [s for g in groups for s in g["sizes"]]
    became = sum(1 for s in sizes if s["verdict_without_noise"] == "disagree"
                 and s["verdict"] == TIE_VERDICT)
    stayed = sum(1 for s in sizes if s["verdict"] == "disagree")
    print(f"  advisor sizes: {became} 'disagree' by median became a tie within the noise, "
          f"{stayed} stayed 'disagree'")
    noisy = [r for g in ("collective", "pingpong", "layer") for r in results[g] if r.get("noisy")]
    print(f"  noise: {len(noisy)} noisy rows" +
          (f" (spread computed from times_us: the file predates schema 5)"
           if results["spread_computed"] else ""))
    if counts["wrong"]:
        print(f"  result check: {counts['wrong']} rows with wrong elements")
    count = sum(len(v) for v in plots.values())
    print(f"  wrote {os.path.join(out, 'report.md')}: {len(TABLES)} tables, {count} plots")


def run(argv):
    args = parse_args(argv)
    threshold = None
    if args.noise_threshold is not None:
        try:
            threshold = stats.check_threshold(args.noise_threshold)
        except ValueError as e:
            raise BadInput(f"--noise-threshold: {e}") from None
    results = read_results(args.file)
    if threshold is not None:
        for group in ("collective", "pingpong", "layer"):
            noise.reflag(results[group], threshold)
    predicted = read_predicted(args.predicted) if args.predicted else None
    out = args.out or default_out(args.file)
    prepare_out_dir(out)
    if not results["collective"] and not results["pingpong"] and not results["layer"]:
        write_text(os.path.join(out, "report.md"), empty_report(results))
        print(f"report: {args.file} holds no rows; wrote {os.path.join(out, 'report.md')}")
        return EXIT_OK
    checks = {g: [check_volume(r) for r in results[g]] for g in ("collective", "pingpong")}
    tables = {"volume.md": volume_markdown(results, checks),
              "textbook_vs_theory.md": textbook_markdown(results),
              "time_model.md": time_model_markdown(results),
              "advisor.md": advisor_markdown(results, predicted),
              "layers.md": layers_markdown(results),
              "tuning.md": tuning_markdown(results),
              "noise.md": noise.noise_markdown(results, results["spread_computed"], md_table,
                                               human_bytes)}
    for name, content in tables.items():
        write_text(os.path.join(out, name), content)
    plots = plot_files(results, out)
    counts = volume_stats(results, checks)
    write_text(os.path.join(out, "report.md"), report_markdown(results, tables, plots, counts))
    print_summary(results, out, counts, plots)
    return EXIT_MISMATCH if report_mismatches(results, checks, out) else EXIT_OK


def main():
    try:
        sys.exit(run(sys.argv[1:]))
    except BadInput as e:
        print(f"report: {e}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except IOFailure as e:
        print(f"report: {e}", file=sys.stderr)
        sys.exit(EXIT_IO)
