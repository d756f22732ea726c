"""How well the time model predicts every hand-written algorithm on this machine.

    scripts/model-check [--np 2] [--model FILE]... [--fits N] [--fit-args "ARGS"]
                        [--sizes "-b 1K -e 64M -f 4"] [--iters 20] [--repeats 3]
                        [--algorithms allreduce_ring,...] [--bin DIR] [--out DIR]
                        [--mpirun "mpirun -q"] [--mpirun-args "ARGS"] [--json FILE]

Without --model it fits one first (scripts/fit-model, with --fit-args), or N one after
the other with --fits N. It then runs every `<collective>_<algorithm>` binary of --bin
(the vendor's `*_mpi` and `*_nccl` left out) over the sweep with --model, --repeats times
(interleaved: repeat k runs every binary once), and prints per algorithm and size band
(scripts/collscope/model/accuracy.py) the median and the worst predicted / measured, the worst row
overall, and how noisy the measurements were (the relative spread of the repeats).
Measured: per (algorithm, size) the median over repeats of each run's time_us.

With two or more models (--model A --model B, or --fits 2), repeat k predicts with
model k mod M, so every model sees every size, the accuracy tables are the first
model's, a stability table gives, per algorithm and band, the other models'
predictions over the first's, and one line per model says how many cells each misses
against the same measurements (to compare two ways of modelling side by side).

--out DIR keeps the fitted models and every run's JSON lines (default: a temporary
directory, removed). Exit code: 0 (whatever the accuracy: the tables say it, a * marks a
median outside its band's target); 2 on bad usage, a missing binary or model file; 3
when a fit or a run fails.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

from collscope import algorithms
from collscope import stats
from collscope.command_line import join_command_line_values, launch, split_words
from collscope.model import accuracy as acc
from collscope.paths import ROOT, SCRIPTS   # scripts/fit-model (in a GPU bundle: python/fit-model)

PROGRAM = "model-check"
RUN_TIMEOUT_S = 900


def fail(msg, code):
    print(f"{PROGRAM}: error: {msg}", file=sys.stderr)
    sys.exit(code)


# Options whose value is itself a command line (command_line.join_command_line_values).
COMMAND_LINE_OPTIONS = ("--mpirun", "--mpirun-args", "--fit-args", "--sizes")


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROGRAM, description="Predicted against measured time.")
    p.add_argument("--np", type=int, default=2, help="ranks (>= 2)")
    p.add_argument("--model", action="append", default=[], help="model file (repeatable)")
    p.add_argument("--fits", type=int, default=1, help="fits to make without --model")
    p.add_argument("--fit-args", default="", help="passed to scripts/fit-model")
    p.add_argument("--sizes", default="-b 1K -e 64M -f 4", help="the sweep's size flags")
    p.add_argument("--iters", type=int, default=20, help="timed iterations per size and run")
    p.add_argument("--repeats", type=int, default=3, help="runs of every binary")
    p.add_argument("--algorithms", default="", help="comma-separated binaries (default all)")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="binaries")
    p.add_argument("--out", default=None, help="keep models and runs here")
    p.add_argument("--mpirun", default="mpirun -q", help="the launcher")
    p.add_argument("--mpirun-args", default="", help="passed to every launch")
    p.add_argument("--json", default=None, help="also write the rows and tables as JSON")
    argv = sys.argv[1:] if argv is None else argv
    a = p.parse_args(join_command_line_values(argv, COMMAND_LINE_OPTIONS))
    # (argparse exits 2 on bad usage)
    for name, low in (("np", 2), ("fits", 1), ("iters", 1), ("repeats", 1)):
        if getattr(a, name) < low:
            fail(f"--{name} must be at least {low}, got {getattr(a, name)}", 2)
    words = split_words(a, ("mpirun", "mpirun_args", "sizes", "fit_args"), fail, "the arguments")
    a.launcher = words["mpirun"] + words["mpirun_args"]
    a.size_flags, a.fit_flags = words["sizes"], words["fit_args"]
    for m in a.model:
        if not os.path.isfile(m):
            fail(f"no model file '{m}'", 2)
    a.binaries = binaries(a)
    return a


def hand_written(catalogue, name):
    """(collective, algorithm) of a hand-written algorithm's benchmark binary, or None
    (a vendor's, a test, anything else)."""
    pair = catalogue.split(name)
    return pair if pair and pair[1] in catalogue.hand_written().get(pair[0], []) else None


def binaries(a):
    if not os.path.isdir(a.bin):
        fail(f"no directory '{a.bin}' (build first, or pass --bin)", 2)
    try:
        catalogue = algorithms.load(a.bin)
    except algorithms.Missing as e:
        fail(str(e), 2)
    found = sorted(n for n in os.listdir(a.bin)
                   if hand_written(catalogue, n) and os.access(os.path.join(a.bin, n), os.X_OK))
    if a.algorithms:
        wanted = [w.strip() for w in a.algorithms.split(",") if w.strip()]
        for w in wanted:
            if w not in found:
                fail(f"no hand-written algorithm binary '{w}' in {a.bin}", 2)
        found = wanted
    if not found:
        fail(f"no hand-written algorithm binaries in {a.bin} (build first)", 2)
    return found


# ---- fitting and running ---------------------------------------------------------------


def fit_models(a, out):
    models = []
    for k in range(a.fits):
        path = os.path.join(out, f"fit{k + 1}.json")
        cmd = [os.path.join(SCRIPTS, "fit-model"), "--np", str(a.np), "--out", path,
               "--bin", a.bin, "--mpirun", a.mpirun, "--mpirun-args", a.mpirun_args,
               *a.fit_flags]
        print(f"{PROGRAM}: fit {k + 1} of {a.fits}: {' '.join(shlex.quote(c) for c in cmd)}",
              flush=True)
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
            fail(f"scripts/fit-model exited {p.returncode}: {last}", 3 if p.returncode != 2 else 2)
        models.append(path)
    return models


def run(a, binary, model, out_file):
    cmd = [*a.launcher, "-np", str(a.np), os.path.join(a.bin, binary), *a.size_flags, "-n",
           str(a.iters), "-w", "3", "-c", "0", "--model", model, "--format", "jsonl"]
    p = launch(cmd, fail, RUN_TIMEOUT_S, lambda returncode: 2 if returncode == 2 else 3)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    with open(out_file, "a") as f:
        f.write("".join(line + "\n" for line in lines))
    return [json.loads(line) for line in lines]


def measure(a, models, out):
    """{(collective, algorithm, bytes): {"measured": [us...], "predicted": {model: us},
    "rounds": {repeat: [that run's times_us]}}}"""
    repeats = max(a.repeats, len(models))
    cells = {}
    for k in range(repeats):
        model = models[k % len(models)]
        print(f"{PROGRAM}: repeat {k + 1} of {repeats} ({len(a.binaries)} binaries, model "
              f"{os.path.basename(model)})", flush=True)
        for binary in a.binaries:
            for r in run(a, binary, model, os.path.join(out, "runs.jsonl")):
                key = (r["collective"], r["algorithm"], r["bytes"])
                c = cells.setdefault(key, {"measured": [], "predicted": {}, "rounds": {}})
                c["measured"].append(r["time_us"])
                c["rounds"][k] = [t for t in r.get("times_us") or [r["time_us"]] if t > 0]
                if r.get("predicted_us") is not None:
                    c["predicted"][model] = r["predicted_us"]
    return cells


# ---- tables ----------------------------------------------------------------------------


def rows_of(cells, model, reference=None):
    """One row per (algorithm, size): the ratio of `model`'s prediction to the measured
    median, or (with `reference`) to the reference model's prediction."""
    rows = []
    for (coll, algo, nbytes), c in sorted(cells.items()):
        if model not in c["predicted"]:
            continue
        measured = statistics.median(c["measured"])
        base = c["predicted"].get(reference) if reference else measured
        if not base or base <= 0:
            continue
        spread = (statistics.median(abs(t - measured) for t in c["measured"]) * 1.4826 /
                  measured if measured > 0 else 0.0)
        row = {"collective": coll, "algorithm": algo, "bytes": nbytes,
               "measured_us": measured, "predicted_us": c["predicted"][model],
               "ratio": c["predicted"][model] / base, "spread": spread}
        if reference is None:
            row.update(ratio_interval(c["predicted"][model], c.get("rounds", {}), nbytes))
        rows.append(row)
    return rows


def ratio_interval(predicted, rounds, nbytes):
    """{"ratio_low", "ratio_high", "miss_beyond_noise"}: predicted / measured over the
    measured median's 95 % interval (docs/statistics.md: the repeats' medians with 6
    repeats or more, else each repeat's iterations), and whether all of that interval
    lies outside the size's target band: a miss the noise cannot explain."""
    mi = stats.median_interval_rounds(rounds)
    if mi is None or mi[1] <= 0:
        return {"ratio_low": None, "ratio_high": None, "miss_beyond_noise": False}
    low, high = predicted / mi[2], predicted / mi[1]
    tolerance = acc.BANDS[acc.band_of(nbytes)][2]
    beyond = high < 1 - tolerance or low > 1 + tolerance
    return {"ratio_low": low, "ratio_high": high, "miss_beyond_noise": beyond}


def print_table(header, body):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    for i, row in enumerate([header] + body):
        print("  ".join(str(x).ljust(w) if j < 2 else str(x).rjust(w)
                        for j, (x, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def noise_text(rows):
    per_band = {}
    for r in rows:
        per_band.setdefault(acc.band_of(r["bytes"]), []).append(r["spread"])
    return ", ".join(f"{acc.band_label(b)}: {statistics.median(s) * 100:.0f}% median, "
                     f"{max(s) * 100:.0f}% worst" for b, s in sorted(per_band.items()))


def report_accuracy(rows, model, repeats):
    summary = acc.band_summary(rows)
    print(f"\npredicted / measured with {model}: per band median (worst); * = median outside "
          f"the target ({acc.targets_text()})\n")
    print_table(*acc.table(summary))
    w = acc.worst_row(rows)
    if w:
        print(f"\nworst row: {w['collective']}_{w['algorithm']} at {w['bytes']} B: predicted "
              f"{w['predicted_us']:.1f} us, measured {w['measured_us']:.1f} us "
              f"(ratio {w['ratio']:.2f})")
    print("over every algorithm, median of the medians (worst median): " + ", ".join(
        f"{acc.band_label(b)}: {m:.2f} ({x:.2f})" for b, (m, x) in acc.overall(summary).items()))
    outside, total = outside_count(summary)
    print(f"cells outside their target: {outside} of {total}")
    beyond = [r for r in rows if r.get("miss_beyond_noise")]
    print(f"rows whose prediction misses its band's target beyond the measurement noise "
          f"(the {stats.LEVEL:.0%} interval of predicted / measured wholly outside it): "
          f"{len(beyond)} of {len(rows)}")
    print(f"measurement noise (relative robust SD of {repeats} repeats per size): "
          f"{noise_text(rows)}")
    return summary


def report_stability(cells, models):
    out = {}
    for other in models[1:]:
        rows = rows_of(cells, other, reference=models[0])
        summary = acc.band_summary(rows)
        print(f"\nstability: predicted by {other} / predicted by {models[0]}, per band "
              "median (worst)\n")
        header, body = acc.table(summary)
        print_table(header, [[x.replace(" *", "") for x in row] for row in body])
        w = acc.worst_row(rows)
        if w:
            print(f"\nlargest difference: {w['collective']}_{w['algorithm']} at {w['bytes']} B: "
                  f"{w['ratio']:.3f}")
        out[other] = {"rows": rows, "worst": w}
    return out


def outside_count(summary):
    """(cells outside their target, cells) of a band summary."""
    return len(acc.misses(summary)), sum(len(c) for c in summary.values())


def report_others(cells, models):
    """With several models, one line per model (the first included): its own accuracy
    against the same measurements (each model predicts every size: the predictions do
    not depend on the repeat)."""
    if len(models) < 2:
        return {}
    print("\nevery model against the same measurements:")
    out = {}
    for model in models:
        summary = acc.band_summary(rows_of(cells, model))
        outside, total = outside_count(summary)
        medians = ", ".join(f"{acc.band_label(b)}: {m:.2f}"
                            for b, (m, _) in acc.overall(summary).items())
        print(f"  {model}: {outside} of {total} cells outside their target; median of the "
              f"medians {medians}")
        out[model] = {"outside": outside, "cells": total}
    return out


def main(argv=None):
    a = parse_args(argv)
    out = a.out or tempfile.mkdtemp(prefix="collscope-model-check.")
    try:
        os.makedirs(out, exist_ok=True)
        models = a.model or fit_models(a, out)
        cells = measure(a, models, out)
        rows = rows_of(cells, models[0])
        if not rows:
            fail("no run reported a prediction (are these hand-written algorithms?)", 3)
        summary = report_accuracy(rows, models[0], max(a.repeats, len(models)))
        stability = report_stability(cells, models) if len(models) > 1 else {}
        each = report_others(cells, models)
        if a.json:
            with open(a.json + ".tmp", "w") as f:
                json.dump({"models": models, "rows": rows, "stability": stability,
                           "accuracy_per_model": each,
                           "bands": {f"{c}_{al}": {acc.band_label(b): v for b, v in cells.items()}
                                     for (c, al), cells in summary.items()}}, f, indent=1)
            os.replace(a.json + ".tmp", a.json)
    finally:
        if a.out is None:
            shutil.rmtree(out, ignore_errors=True)
