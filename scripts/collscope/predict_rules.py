"""predict-rules: the selection rules against the time model at scales this machine cannot
run. For every collective the rules cover (allreduce, alltoall, allgather, reduce_scatter),
every hand-written algorithm of it is predicted by collscope_predict (no MPI: its schedule
through the simulator, with the model file's link classes) at each N and size; the
fastest predicted is set beside the rules' pick (docs/selection-rules.md), with the time
of the pick over the fastest's.

    scripts/predict-rules --model FILE [--nranks 16,64,256,1024] [--ranks-per-node 8]
                          [--sizes 1K,1M,64M,1G] [--collectives allreduce,...]
                          [--timeout SECONDS] [--exclude ALGORITHM,...] [--out DIR]

Writes DIR/predicted_rules.jsonl (one line per collective, N, size and algorithm:
predicted time_us, busbw, volume_ok) and DIR/predicted_rules.md (the verdicts), each
written aside and renamed; prints the markdown. DIR defaults to output/predict-rules.
scripts/report --predicted DIR/predicted_rules.jsonl adds the verdicts to advisor.md.
Topology, as in the advisor: ceil(N / ranks-per-node) nodes; one node is a full mesh,
several a fat tree.

A point that runs past --timeout (seconds per point) or out of memory is left out and
listed; the rules' pick missing at a point says so in its verdict.
Exit codes: 0; 1 when a prediction's volume differs from the theory (a bug, printed);
2 on bad usage or a bad model file (one line); 3 when a prediction fails.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

from collscope import algorithms
from collscope.paths import ROOT
from collscope.selection_rules import predicted_rules_markdown, rule_pick
from collscope import sizes

RULED = ("allreduce", "alltoall", "allgather", "reduce_scatter")


class Usage(Exception):
    pass


def hand_written(bin_dir):
    """{collective: [algorithm, ...]} from the one catalogue (collscope/algorithms.py)."""
    try:
        return algorithms.load(bin_dir).hand_written()
    except algorithms.Missing as e:
        raise Failed(str(e))


class Failed(Exception):
    pass


def parse_size(text):
    try:
        value = sizes.parse_size(text)
    except sizes.SizeRefused:
        value = 0
    if value == 0:
        raise Usage(f"bad size '{text}' (a positive number with an optional K, M or G)")
    return value


def parse_list(text, what, item):
    parts = text.split(",")
    if any(not p.strip() for p in parts):
        raise Usage(f"--{what} needs a comma-separated list, got '{text}'")
    return [item(p) for p in parts]


def parse_nranks(text):
    if not re.fullmatch(r"\d+", text.strip()) or not 1 <= int(text) <= 65536:
        raise Usage(f"bad rank count '{text}' (1 to 65536)")
    return int(text)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="predict-rules", add_help=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--nranks", default="16,64,256,1024")
    ap.add_argument("--ranks-per-node", default="8")
    ap.add_argument("--sizes", default="1K,1M,64M,1G")
    ap.add_argument("--collectives", default=",".join(RULED))
    ap.add_argument("--timeout", default="0", help="seconds per point; 0: none")
    ap.add_argument("--exclude", default="", help="collective_algorithm,... not to predict")
    ap.add_argument("--out", default=os.path.join(ROOT, "output", "predict-rules"))
    ap.add_argument("--bin", default=os.path.join(os.environ.get("COLLSCOPE_BUILD",
                                                                 os.path.join(ROOT, "build")), "bin"))

    def error(message):  # argparse's own errors: our one line and exit 2 too
        raise Usage(message)
    ap.error = error
    a = ap.parse_args(argv)
    a.nranks = parse_list(a.nranks, "nranks", parse_nranks)
    a.sizes = sorted(set(parse_list(a.sizes, "sizes", parse_size)))
    if not re.fullmatch(r"\d+", a.ranks_per_node) or int(a.ranks_per_node) < 1:
        raise Usage(f"--ranks-per-node must be a positive integer, got '{a.ranks_per_node}'")
    a.ranks_per_node = int(a.ranks_per_node)
    try:
        a.timeout = float(a.timeout)
    except ValueError:
        raise Usage(f"--timeout must be a number of seconds, got '{a.timeout}'")
    if a.timeout < 0:
        raise Usage(f"--timeout must be 0 or more, got {a.timeout}")
    a.collectives = parse_list(a.collectives, "collectives", str.strip)
    a.exclude = set(parse_list(a.exclude, "exclude", str.strip)) if a.exclude else set()
    for c in a.collectives:
        if c not in RULED:
            raise Usage(f"the rules have nothing for '{c}' (they cover {', '.join(RULED)})")
    if not os.path.isfile(a.model):
        raise Usage(f"no model file '{a.model}'")
    if not os.access(os.path.join(a.bin, "collscope_predict"), os.X_OK):
        raise Usage(f"no collscope_predict in {a.bin}; build it: "
                    f"cmake --build build --target collscope_predict")
    return a


def predict(a, collective, algorithm, skipped):
    """The jsonl rows collscope_predict prints for one algorithm at every N and size, one
    call per point. A point that runs past --timeout or out of memory is left out and
    noted in `skipped` (an N^2-message algorithm at thousands of ranks can do both); any
    other failure is one."""
    rows = []
    for n in a.nranks:
        for size in a.sizes:
            cmd = [os.path.join(a.bin, "collscope_predict"), f"{collective}_{algorithm}",
                   "--model", a.model, "-N", str(n), "--ranks-per-node", str(a.ranks_per_node),
                   "-b", str(size), "-e", str(size), "--format", "jsonl"]
            where = f"{collective}_{algorithm} at N = {n}, {size} B"
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout or None)
            except subprocess.TimeoutExpired:
                skipped.append(f"{where}: over {a.timeout:g} s")
                continue
            if p.returncode == 2:
                raise Usage(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else
                            f"collscope_predict refused {where}")
            if (p.returncode == 3 and "out of memory" in p.stderr) or p.returncode in (-9, 137):
                skipped.append(f"{where}: out of memory")
                continue
            if p.returncode not in (0, 1):
                raise Failed(f"collscope_predict {where} exited {p.returncode}: "
                             f"{p.stderr.strip()}")
            rows += [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return rows


def verdicts(collective, rows, ranks_per_node):
    """Per (N, size): the fastest predicted, the rules' pick and the verdict."""
    by_point = {}
    for r in rows:
        algorithm = r["algorithm"][len(collective) + 1:]  # allreduce_ring -> ring
        by_point.setdefault((r["nranks"], r["size"]), {})[algorithm] = r
    out = []
    for (n, size), per in sorted(by_point.items()):
        nnodes = math.ceil(n / ranks_per_node)
        pick, rule = rule_pick(collective, n, nnodes)
        times = {alg: row["time_us"] for alg, row in per.items()}
        fastest = min((t, alg != pick, alg) for alg, t in times.items())[2]
        ratio = times[pick] / times[fastest] if pick in times and times[fastest] > 0 else None
        verdict = ("the rules' pick was not predicted" if pick not in times
                   else "agree" if pick == fastest else "disagree")
        out.append({"collective": collective, "nranks": n, "nodes": nnodes, "size": size,
                    "fastest": fastest, "fastest_us": times[fastest], "pick": pick,
                    "pick_us": times.get(pick), "rule": rule, "pick_over_fastest": ratio,
                    "verdict": verdict, "times_us": times})
    return out


def markdown(results, a, skipped):
    lines = ["# The selection rules against the time model's predictions", "",
             f"Model `{a.model}`, {a.ranks_per_node} rank(s) per node. Every hand-written "
             "algorithm of each collective is predicted by `collscope_predict` (its schedule "
             "through the simulator, no MPI).", ""]
    lines += predicted_rules_markdown(results)
    if skipped:
        lines += ["Not predicted (left out of the verdicts above):", ""]
        lines += [f"- {what}" for what in skipped] + [""]
    return "\n".join(lines)


def write_aside(path, text):
    """Writes `path` through a temporary file in its folder and renames it: never half."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".predict-rules.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv):
    started = time.monotonic()
    try:
        a = parse_args(argv)
        catalogue = hand_written(a.bin)
        known = {f"{c}_{n}" for c, names in catalogue.items() for n in names}
        for name in sorted(a.exclude - known):
            raise Usage(f"--exclude: no hand-written algorithm '{name}'")
        results, raw, volume_ok, skipped = [], [], True, []
        for coll in a.collectives:
            rows = []
            for alg in catalogue.get(coll, []):
                if f"{coll}_{alg}" in a.exclude:
                    skipped.append(f"{coll}_{alg}: excluded (--exclude)")
                    continue
                got = predict(a, coll, alg, skipped)
                volume_ok = volume_ok and all(r["volume_ok"] for r in got)
                rows += got
            raw += [dict(r, collective=coll) for r in rows]
            results += verdicts(coll, rows, a.ranks_per_node)
        text = markdown(results, a, skipped)
        os.makedirs(a.out, exist_ok=True)
        write_aside(os.path.join(a.out, "predicted_rules.jsonl"),
                    "".join(json.dumps(dict(v, kind="verdict")) + "\n" for v in results) +
                    "".join(json.dumps(dict(r, kind="prediction")) + "\n" for r in raw))
        write_aside(os.path.join(a.out, "predicted_rules.md"), text + "\n")
        print(text)
        print(f"predict-rules: {len(raw)} predictions at {len(a.nranks)} N x {len(a.sizes)} "
              f"sizes in {time.monotonic() - started:.1f} s")
        if not volume_ok:
            print("predict-rules: error: a prediction's volume differs from the theory "
                  "(MISMATCH rows in predicted_rules.jsonl)", file=sys.stderr)
            return 1
        return 0
    except (Usage, Failed, OSError) as e:
        print(f"predict-rules: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, Usage) else 3
