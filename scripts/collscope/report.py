"""Turns a collscope results file (results/SCHEMA.md) into Markdown tables and PNG plots.

    scripts/report FILE.h5 [--out DIR] [--predicted PREDICTED.jsonl]

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
                      fastest first
  advisor.md          the fastest algorithm per (collective, transport, N, size range),
                      beside what the published selection rules pick
                      (docs/selection-rules.md), the algorithm the library ran (vendor rows
                      with an identified algorithm) and, with a model, the algorithm the time
                      model predicts fastest (and where they disagree); with
                      --predicted (scripts/predict-rules' predicted_rules.jsonl) also the
                      rules against predictions at N this machine cannot run
  busbw_<collective>_np<N>_<transport>.png   busbw against size, one line per algorithm
  time_<collective>_np<N>_<transport>.png    measured (solid) and predicted (dashed) time
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
import logging
import math
import os
import statistics
import sys
import tempfile

import h5py
import numpy as np

from collscope import results as cr   # the results layout, shared with merge and sweep
from collscope.model import accuracy as model_accuracy
from collscope.selection_rules import is_pow2, predicted_rules_markdown, rule_pick

EXIT_OK, EXIT_BAD_INPUT, EXIT_IO, EXIT_MISMATCH = 0, 2, 3, 4

VOLUME_KEYS = cr.VOLUME_KEYS
VENDOR_ALGORITHMS = cr.VENDOR_ALGORITHMS


class BadInput(Exception):
    """The input file or the arguments are not usable: exit 2, nothing written."""


class IOFailure(Exception):
    """A file could not be read or written: exit 3."""


# ---- reader: the file as per-row dicts and numpy arrays -------------------------------


text = cr.text


def plain(value):
    """One compound-record field as a Python value."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def open_results_file(path):
    """Opens FILE read-only after checking it is a collscope results file this build reads."""
    try:
        return cr.open_results_file(path)
    except cr.NotResults as e:
        raise BadInput(str(e)) from None
    except cr.Unreadable as e:
        raise IOFailure(str(e)) from None


def pool_values(pool, offset, count, what):
    """pool[offset : offset + count], or None for offset -1 (no such array)."""
    if offset < 0:
        return None
    if offset + count > len(pool):
        raise BadInput(f"{what} points past the end of its pool (damaged file)")
    return pool[offset:offset + count]


def square(values, n, what):
    if values is None:
        return None
    if len(values) != n * n:
        raise BadInput(f"{what} holds {len(values)} values, not {n} x {n}")
    return values.reshape(n, n)


def read_row(rec, index, group, ranks, pools, runs, version):
    """One row of <group>/rows as a dict with this version's names: plain values, None for
    SCHEMA.md's missing ones, per-rank groups as dicts of numpy arrays (None when *_known
    is false), pools sliced."""
    row = cr.current_names({name: plain(rec[name]) for name in rec.dtype.names}, group, version)
    for name in cr.MISSING_TEXT & row.keys():
        row[name] = row[name] or None
    for name in cr.MISSING_FLOAT & row.keys():
        row[name] = None if math.isnan(row[name]) else row[name]
    for name in cr.MISSING_INT & row.keys():
        row[name] = None if row[name] == -1 else row[name]
    for pair in ("pair", "slowest_pair", "first_bad_pair"):
        if pair + "_a" in row:
            a, b = row.pop(pair + "_a"), row.pop(pair + "_b")
            row[pair] = None if a == -1 else (a, b)
    what = f"/{group}/rows[{index}]"
    n = row["nranks"]
    row["index"] = index
    row["run"] = runs[row["run_id"]] if row["run_id"] < len(runs) else None
    per_rank = pool_values(ranks, row["ranks_offset"], row["ranks_count"], what + " ranks")
    if per_rank is None or len(per_rank) != n:
        raise BadInput(f"{what} has {row['ranks_count']} rank records for {n} ranks")
    row["measured"] = ({k: per_rank[k] for k in VOLUME_KEYS} if row["measured_known"] else None)
    row["theory"] = ({k: per_rank["theory_" + k] for k in VOLUME_KEYS}
                     if row["theory_known"] else None)
    row["nodes"] = per_rank["node"] if row["nodes_known"] else None
    arrays = {p: pool_values(pools[p], row[p + "_offset"], row[p + "_count"], f"{what} {p}")
              for p in cr.row_tables(version)[group]}
    times = arrays["times_us"]
    row["times_us"] = times if times is not None else np.zeros(0)
    row["traffic"] = square(arrays["traffic_bytes"], n, what + " traffic_bytes")
    if group == "collective":
        row["splits"] = square(arrays["splits"], n, what + " splits")
        row["theory_traffic"] = square(arrays.get("theory_traffic_bytes"), n,
                                       what + " theory_traffic_bytes")
    else:
        row["latency_matrix"] = square(arrays["latency_us_matrix"], n, what + " latency")
        row["bw_matrix"] = square(arrays["bw_gbps_matrix"], n, what + " bandwidth")
    row["vendor"] = row["algorithm"] in VENDOR_ALGORITHMS or not (
        row["measured_known"] or row["theory_known"])
    return row


def read_table(f, group, runs, version):
    rows = f[group + "/rows"][:]
    ranks = f[group + "/ranks"][:]
    pools = {p: f[f"{group}/{p}"][:] for p in cr.row_tables(version)[group]}
    return [read_row(rec, i, group, ranks, pools, runs, version)
            for i, rec in enumerate(rows) if rec["run_id"] >= 0]  # -1: unfinished row


def read_layer_rows(f, version):
    """The /layer rows (none in a file without /layer) as dicts with this version's names;
    shape as a dict; a version-1 or -2 row lacks the device and time columns."""
    if cr.LAYER not in f:
        return []
    out = []
    for i, rec in enumerate(f[cr.LAYER + "/rows"][:]):
        if rec["run_id"] < 0:
            continue
        row = cr.current_names({n: plain(rec[n]) for n in rec.dtype.names}, cr.LAYER, version)
        row["index"] = i
        try:
            row["shape"] = json.loads(row["shape"])
        except ValueError:
            raise BadInput(f"/layer/rows[{i}] shape is not JSON") from None
        out.append(row)
    return out


def read_results(path):
    """Everything the report needs: {path, attrs, runs, collective, pingpong, layer}."""
    f = open_results_file(path)
    version = cr.schema_version(f)
    try:
        with f:
            attrs = {k: text(v) for k, v in f.attrs.items()}
            runs = [{k: plain(r[k]) for k in r.dtype.names} for r in f["runs"][:]]
            collective = read_table(f, "collective", runs, version)
            pingpong = read_table(f, "pingpong", runs, version)
            layer = read_layer_rows(f, version)
        for r in collective:
            r["medium"] = medium_of(r)
    except (KeyError, ValueError) as e:
        raise BadInput(f"'{path}' does not have schema {version}'s tables: {e}") from None
    except OSError as e:
        raise IOFailure(f"cannot read '{path}': {e}") from None
    return {"path": path, "attrs": attrs, "runs": runs, "collective": collective,
            "pingpong": pingpong, "layer": layer}


def medium_of(row):
    """Where a row's bytes live and how they move, for grouping: host rows by transport
    ("mpi"), device rows apart ("mpi/staged", "ucx/ipc", "nccl"): a GPU's curve is never
    drawn, ranked or advised beside a host one."""
    if row.get("memory", "host") != "device":
        return row["transport"]
    path = row.get("path") or ""
    return row["transport"] if row["transport"] == "nccl" or not path else f"{row['transport']}/{path}"


def nnodes_of(row):
    """Distinct nodes of a row's ranks (its node map, else its run's attribute)."""
    if row["nodes"] is not None:
        return len(set(int(n) for n in row["nodes"]))
    return int(row["run"]["nnodes"]) if row["run"] else 1


# ---- formatting -------------------------------------------------------------------------


def human_bytes(n):
    """Exact, in the largest unit that divides it: 1024 -> '1 KiB', 3 << 20 -> '3 MiB',
    1536 << 10 -> '1536 KiB'; a size that is no whole KiB stays in bytes (65532 -> '65532 B'),
    never rounded into a size it is not."""
    n = int(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def size_range(sizes):
    lo, hi = min(sizes), max(sizes)
    return human_bytes(lo) if lo == hi else f"{human_bytes(lo)} – {human_bytes(hi)}"


def fmt_us(x):
    if x is None or math.isnan(x):
        return "n/a"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def fmt_bytes_value(x):
    """A byte figure that may be fractional (a formula's D/N): exact when integral."""
    return str(int(round(x))) if abs(x - round(x)) < 1e-9 else f"{x:.2f}"


def fmt_ratio(x):
    return f"{x:.3g}"


def variant(row):
    """What else tells rows of one (collective, algorithm, N, bytes) apart."""
    parts = [row["dtype"], row["op"]]
    if row["root"] >= 0:
        parts.append(f"root {row['root']}")
    if row["in_place"]:
        parts.append("in-place")
    if row["split"]:
        parts.append(f"split {row['split']}")
    return " ".join(parts)


def cell(value):
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_table(header, rows, align):
    """A Markdown table; align is one letter per column: l(eft) or r(ight)."""
    rule = {"l": "---", "r": "---:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule[a] for a in align) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def algo_label(algorithm):
    return f"{algorithm} (vendor)" if algorithm in VENDOR_ALGORITHMS else algorithm


# ---- 1. volume: measured against theory --------------------------------------------------


def check_volume(row):
    """{'status': ok | MISMATCH | measured | vendor | no theory | no measurement,
        'sums': {key: (measured, theory)}, 'problems': [text]}; measured: a vendor row the
    library counted (no theory; its traffic matrix must still add up)."""
    measured, theory = row["measured"], row["theory"]
    if measured is None and theory is None:
        return {"status": "vendor", "sums": {}, "problems": []}
    if theory is None and row["vendor"]:
        sums = {k: (int(measured[k].sum()), None) for k in VOLUME_KEYS}
        problems = traffic_problems(row)
        return {"status": "MISMATCH" if problems else "measured", "sums": sums, "problems": problems}
    if measured is None or theory is None:
        status = "no measurement" if measured is None else "no theory"
        return {"status": status, "sums": {}, "problems": []}
    sums = {k: (int(measured[k].sum()), int(theory[k].sum())) for k in VOLUME_KEYS}
    problems = []
    for k in VOLUME_KEYS:
        for r in np.nonzero(measured[k] != theory[k])[0]:
            problems.append(f"rank {r} {k} {int(measured[k][r])} != theory {int(theory[k][r])}")
    problems += traffic_problems(row)
    if row["volume"] == "MISMATCH":
        problems.append("the benchmark itself recorded volume MISMATCH")
    return {"status": "MISMATCH" if problems else "ok", "sums": sums, "problems": problems}


def traffic_problems(row):
    """The traffic matrix (row: sender) must add up to each rank's sent and received bytes."""
    matrix, measured = row["traffic"], row["measured"]
    if matrix is None or measured is None:
        return []
    out = []
    for r in np.nonzero(matrix.sum(axis=1) != measured["sent_bytes"])[0]:
        out.append(f"traffic matrix row {r} sums to {int(matrix[r].sum())}, "
                   f"rank {r} sent_bytes {int(measured['sent_bytes'][r])}")
    for r in np.nonzero(matrix.sum(axis=0) != measured["recv_bytes"])[0]:
        out.append(f"traffic matrix column {r} sums to {int(matrix[:, r].sum())}, "
                   f"rank {r} recv_bytes {int(measured['recv_bytes'][r])}")
    return out


def identified_text(row):
    """What a vendor row's traffic says the library ran."""
    name = row.get("vendor_algorithm") or ""
    if not name:
        return ""
    if name != "unmatched":
        return f"ran {name.replace('|', ' or ')} (equals its exact theory)"
    return (f"unmatched: closest {row['vendor_algorithm_closest']}, off by "
            f"{row['vendor_algorithm_off_bytes']} B and {row['vendor_algorithm_off_msgs']} messages")


def volume_cells(row, check):
    status = check["status"]
    if status == "measured" or (status == "MISMATCH" and row["theory"] is None):
        s = check["sums"]
        mark = "**MISMATCH**" if status == "MISMATCH" else "measured"
        detail = per_rank_text(row, check) if status == "MISMATCH" else identified_text(row)
        return [s["sent_bytes"][0], "—", s["recv_bytes"][0], "—", f"{s['sent_msgs'][0]} / —",
                f"{s['recv_msgs'][0]} / —", detail, mark]
    if status != "ok" and status != "MISMATCH":
        na = {"vendor": "n/a (vendor)", "no theory": "n/a (no theory)",
              "no measurement": "n/a (not measured)"}[status]
        return ["n/a"] * 6 + ["", na]
    s = check["sums"]
    mark = "**MISMATCH**" if status == "MISMATCH" else "ok"
    return [s["sent_bytes"][0], s["sent_bytes"][1], s["recv_bytes"][0], s["recv_bytes"][1],
            f"{s['sent_msgs'][0]} / {s['sent_msgs'][1]}",
            f"{s['recv_msgs'][0]} / {s['recv_msgs'][1]}", per_rank_text(row, check), mark]


def per_rank_text(row, check, most=3):
    """The first few problems of a row, or that every rank matched."""
    problems = check["problems"]
    if not problems:
        return f"all {row['nranks']} ranks match"
    more = len(problems) - most
    return "; ".join(problems[:most]) + (f" (+{more} more)" if more > 0 else "")


VOLUME_HEADER = ["#", "collective", "algorithm", "transport", "N", "bytes", "variant",
                 "sent Σ measured", "sent Σ theory", "recv Σ measured", "recv Σ theory",
                 "msgs sent Σ (m / t)", "msgs recv Σ (m / t)", "per rank", "volume"]


def pingpong_variant(row):
    if row["pairs"] == "all":
        return "pairs all"
    return f"pair {row['pair'][0]},{row['pair'][1]}" if row["pair"] else ""


def volume_section(rows, checks, label):
    if not rows:
        return f"No {label} rows."
    body = []
    for row, check in zip(rows, checks):
        v = variant(row) if label == "collective" else pingpong_variant(row)
        body.append([row["index"], row["collective"], algo_label(row["algorithm"]),
                     row["transport"], row["nranks"], row["bytes"], v] + volume_cells(row, check))
    return md_table(VOLUME_HEADER, body, "rlllrrl" + "r" * 4 + "llll")


def matrix_markdown(matrix):
    """An N x N bytes matrix as a Markdown table (row: sender)."""
    n = len(matrix)
    header = ["from \\ to"] + [str(j) for j in range(n)]
    body = [[str(i)] + [str(int(v)) for v in matrix[i]] for i in range(n)]
    return md_table(header, body, "r" * (n + 1))


def vendor_matrices_markdown(rows, most=16):
    """Every vendor row the library counted: its source, what it identifies, its matrix."""
    counted = [r for r in rows if r["vendor"] and r["traffic"] is not None]
    lines = ["## Vendor collectives: the library's own count", ""]
    if not counted:
        return lines + ["No vendor row with a measured volume (run the `*_mpi` binaries with "
                        "--vendor-volume, the default, on Open MPI).", ""]
    lines += ["The bytes each rank sent each peer in the probe call, as the MPI library counted "
              "them (`volume_source`; Open MPI's pml monitoring through MPI_T), and the "
              "hand-written algorithms whose exact theory equals that traffic in bytes and "
              "messages, cell for cell (collscope/runtime/identify.hpp).", ""]
    for r in counted:
        lines += [f"### #{r['index']} {r['collective']} {algo_label(r['algorithm'])}, N = "
                  f"{r['nranks']}, {human_bytes(r['bytes'])}, {variant(r)}", "",
                  f"source: `{r.get('volume_source') or '?'}`; "
                  f"{identified_text(r) or 'no hand-written algorithm to match'}", ""]
        if r["nranks"] <= most:
            lines += [matrix_markdown(r["traffic"]), ""]
        else:
            lines += [f"(N = {r['nranks']}: the matrix is in the file, /collective/traffic_bytes)", ""]
    return lines


def volume_markdown(results, checks):
    counts = {}
    for c in checks["collective"] + checks["pingpong"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    bad = counts.get("MISMATCH", 0)
    verdict = (f"**{bad} row(s) MISMATCH**: the measured volume is not what theory says; "
               "that is a bug in an algorithm, its theory or the counting." if bad else
               f"All {counts.get('ok', 0)} rows with a measurement and a theory agree byte for "
               "byte and message for message.")
    return "\n".join([
        "# Volume: measured against exact theory", "",
        verdict, "",
        "Σ: summed over ranks, bytes and messages of one call (the probe call). Every rank's "
        "four figures are compared with the theory one by one (the `per rank` column names "
        "any rank that differs), and each N x N traffic matrix must add up to its ranks' "
        "sent (rows) and received (columns) bytes. Vendor collectives run inside the library: "
        "they have no theory; where the library counted them (`measured`) their sums and "
        "matrices are below with the hand-written algorithm their traffic identifies, "
        "elsewhere nothing is counted (n/a). `#` is the row's index in /collective/rows "
        "(/pingpong/rows below).", "",
        "## Collectives", "", volume_section(results["collective"], checks["collective"],
                                              "collective"), "",
        *vendor_matrices_markdown(results["collective"]),
        "## Ping-pong", "", volume_section(results["pingpong"], checks["pingpong"], "pingpong"),
        ""])


# ---- 2. textbook formula against exact theory --------------------------------------------
# docs/textbook-formulas.md states every formula, its source, and how far it is off.

# Algorithms whose schedule folds the ranks beyond the largest power of two p <= N.
FOLD_ALGORITHMS = {"halving_doubling", "recursive_doubling", "halving"}
# Formulas quoted per worker as sent plus received, not sent alone.
SENT_PLUS_RECEIVED = {("allreduce", "tree"), ("allreduce", "dbt"), ("allreduce", "direct")}


def known_reason(row, ranks_differ):
    """What the formula leaves out where the row's numbers alone cannot say it
    (docs/textbook-formulas.md); asked only when formula and theory differ."""
    key, n = (row["collective"], row["algorithm"]), row["nranks"]
    if key == ("allreduce", "tree") and ranks_differ:
        return "2 x D is a leaf's send + receive; inner nodes send to more peers"
    if key == ("allreduce", "dbt") and ranks_differ:
        return "D treats every rank alike; inner nodes of a tree send to several peers"
    if key == ("alltoall", "ring"):
        return "store and forward: a rank sends N(N-1)/2 blocks, the formula counts N-1"
    if key == ("alltoall", "bruck") and not is_pow2(n):
        return ("non-power-of-two N: Bruck sends Σ popcount(i) blocks, which is log2 N x D/2 "
                "only when N is a power of two")
    return None


def block_divisor(row):
    """How many blocks the formula's D/N splits into where the algorithm splits the vector
    (None where it does not: all-to-all's count is per peer, whole-vector algorithms)."""
    if row["textbook_formula"] is None or "/N" not in row["textbook_formula"]:
        return None
    if row["collective"] in ("alltoall", "alltoallv"):
        return None
    if row["algorithm"] == "halving_doubling":  # blocks over the p ranks left after the fold
        n = row["nranks"]
        return 1 << (n.bit_length() - 1)
    return row["nranks"]


def rooted_formula(row):
    """A formula for the root alone ("... (root)"), compared with the root's figure only."""
    return row["textbook_formula"] is not None and row["textbook_formula"].endswith("(root)")


def textbook_reasons(row, figure, theory_sent):
    """Why the formula's one figure differs from the exact per-rank theory, from the row."""
    reasons = []
    n, count = row["nranks"], row["count"]
    d = block_divisor(row)
    if d and count % d:
        what = "N" if d == n else f"p = {d}"
        reasons.append(f"uneven blocks: count {count} % {what} = {count % d} "
                       "(the formula assumes D/N exact)")
    if not is_pow2(n) and row["algorithm"] in FOLD_ALGORITHMS:
        reasons.append("non-power-of-two N: the fold steps send extra")
    ranks_differ = theory_sent.min() != theory_sent.max()
    if ranks_differ:
        reasons.append(f"ranks differ ({int(theory_sent.min())} to {int(theory_sent.max())} B): "
                       "the formula gives one figure")
    if (row["collective"], row["algorithm"]) in SENT_PLUS_RECEIVED:
        reasons.append("the formula counts sent + received per worker")
    known = known_reason(row, ranks_differ)
    if known:
        reasons.append(known)
    return reasons or ["the closed form differs (no reason found in the data)"]


def compare_textbook(row):
    """{'figure', 'max', 'mean', 'diff', 'pct', 'why'}; figure None: no textbook formula."""
    figure = row["textbook_sent_bytes"]
    if row["textbook_formula"] is None or figure is None:
        why = "no textbook formula" + (" (vendor: no theory)" if row["vendor"] else "")
        return {"figure": None, "why": why}
    if row["theory"] is None:
        return {"figure": figure, "why": "no exact theory for this row"}
    sent = row["theory"]["sent_bytes"]
    if rooted_formula(row):
        sent = sent[row["root"]:row["root"] + 1]
    hi, mean = int(sent.max()), float(sent.mean())
    exact = bool(np.all(np.abs(sent.astype(np.float64) - figure) < 1e-6))
    why = "exact" if exact else "; ".join(textbook_reasons(row, figure, sent))
    pct = (figure - hi) / hi * 100 if hi else (0.0 if figure == 0 else math.inf)
    return {"figure": figure, "max": hi, "mean": mean, "diff": figure - hi, "pct": pct, "why": why}


def textbook_markdown(results):
    rows = results["collective"]
    lines = [
        "# Textbook formula against exact theory", "",
        "The closed form usually quoted for the algorithm (`textbook_formula`, "
        "`textbook_sent_bytes`, with D = the size column; docs/textbook-formulas.md gives "
        "each one's source and how far it is off) beside the exact theory's bytes sent per "
        "rank, its maximum and mean over ranks (the root's alone for a formula marked "
        "\"(root)\"). Difference: formula - max. *why* is read from the row: uneven blocks "
        "(count not divisible by N; by p, the largest power of two <= N, for "
        "halving-doubling), non-power-of-two N for the folding algorithms (halving-doubling, "
        "recursive halving and doubling) and Bruck all-to-all (Bruck allgather sends N-1 "
        "blocks for any N), ranks that differ where the formula gives one figure, a formula "
        "that counts sent + received; `exact` when every rank it describes sends exactly its "
        "figure.", ""]
    if not rows:
        return "\n".join(lines + ["No collective rows.", ""])
    body = []
    for row in rows:
        c = compare_textbook(row)
        head = [row["index"], row["collective"], algo_label(row["algorithm"]), row["nranks"],
                row["bytes"], row["count"]]
        if c["figure"] is None or "max" not in c:
            body.append(head + [row["textbook_formula"] or "—", "n/a", "n/a", "n/a", "n/a", "n/a",
                                c["why"]])
            continue
        pct = "n/a" if math.isinf(c["pct"]) else f"{c['pct']:+.2f} %"
        body.append(head + [row["textbook_formula"], fmt_bytes_value(c["figure"]), c["max"],
                            fmt_bytes_value(c["mean"]), fmt_bytes_value(c["diff"]), pct,
                            c["why"]])
    header = ["#", "collective", "algorithm", "N", "bytes", "count", "textbook formula",
              "formula (B)", "theory max (B)", "theory mean (B)", "formula − max (B)",
              "formula − max (%)", "why"]
    return "\n".join(lines + [md_table(header, body, "rllrrrlrrrrrl"), ""])


# ---- 3. time model -----------------------------------------------------------------------


def model_rows(rows):
    return [r for r in rows if r["predicted_us"] is not None and r["time_us"] > 0]


def ratio_of(row):
    return row["predicted_us"] / row["time_us"]


def band_markdown(rows):
    """Per (transport, N): predicted / measured per algorithm and size band, the same
    table as scripts/model-check prints (scripts/collscope/model/accuracy.py)."""
    lines = ["## Per size band", "",
             "Per algorithm and size band: the median predicted / measured over the band's "
             "rows, the worst in parentheses (farthest from 1); * marks a median outside the "
             f"model's target ({model_accuracy.targets_text()}; MODEL.md, \"Accuracy\").", ""]
    groups = {}
    for r in rows:
        groups.setdefault((r["medium"], r["nranks"]), []).append(dict(r, ratio=ratio_of(r)))
    for (transport, n), group in sorted(groups.items()):
        summary = model_accuracy.band_summary(group)
        header, body = model_accuracy.table(summary)
        worst = model_accuracy.worst_row(group)
        lines += [f"### Bands: {transport}, N = {n}", "",
                  md_table(header, body, "ll" + "r" * (len(header) - 2)), "",
                  f"Worst row: #{worst['index']} {worst['collective']} {worst['algorithm']} at "
                  f"{worst['bytes']} B, predicted / measured {fmt_ratio(worst['ratio'])}; cells "
                  f"outside their target: {len(model_accuracy.misses(summary))}.", ""]
    return lines


def time_model_markdown(results):
    rows = model_rows(results["collective"])
    lines = ["# Time model: predicted against measured", ""]
    if not rows:
        return "\n".join(lines + [
            "No model in this file, run with --model FILE (collectives/model/MODEL.md) to "
            "have every hand-written algorithm's time predicted.", ""])
    models = sorted({r["model"] or "?" for r in rows})
    lines += [f"Model file(s): {', '.join('`' + m + '`' for m in models)}. Measured: the "
              "median over iterations of the slowest rank; predicted: the simulator's replay "
              "of the probe call's schedule (MODEL.md). Vendor rows have no prediction.", ""]
    lines += band_markdown(rows)
    lines += ["## Per (collective, algorithm)", ""]
    groups = {}
    for r in rows:
        groups.setdefault((r["collective"], r["algorithm"]), []).append(ratio_of(r))
    summary = [[c, a, len(v), fmt_ratio(statistics.median(v)), fmt_ratio(min(v)),
                fmt_ratio(max(v))] for (c, a), v in sorted(groups.items())]
    lines += [md_table(["collective", "algorithm", "rows", "median predicted / measured",
                        "min", "max"], summary, "llrrrr"), "", "## Per row", ""]
    body = [[r["index"], r["collective"], r["algorithm"], r["transport"], r["nranks"],
             r["bytes"], variant(r), fmt_us(r["time_us"]), fmt_us(r["predicted_us"]),
             fmt_ratio(ratio_of(r))] for r in rows]
    lines.append(md_table(["#", "collective", "algorithm", "transport", "N", "bytes", "variant",
                           "measured (us)", "predicted (us)", "predicted / measured"],
                          body, "rlllrrlrrr"))
    return "\n".join(lines + [""])


# ---- 4. advisor: fastest measured against the published selection rules ------------------


MONITORED = "mpi_t:pml_monitoring"


def monitored(row):
    """A row run with --vendor-volume: its time carries the MPI library's monitoring."""
    return MONITORED in (row.get("volume_source") or "", row.get("volume_witness") or "")


def median_times(rows):
    """{bytes: {algorithm: median time_us over the rows of that size}}; where an algorithm
    has rows with and without the library's monitoring at a size, only those without
    count (the monitoring slows every message: docs/vendor-volume.md)."""
    times = {}
    for r in rows:
        if not math.isnan(r["time_us"]):
            times.setdefault(r["bytes"], {}).setdefault(r["algorithm"], []).append(
                (monitored(r), r["time_us"]))
    out = {}
    for b, per in times.items():
        out[b] = {}
        for a, ts in per.items():
            plain = [t for m, t in ts if not m]
            out[b][a] = statistics.median(plain or [t for _, t in ts])
    return out


def timed_monitored(rows):
    """{(bytes, algorithm)} whose median time comes from monitored rows only."""
    seen = {}
    for r in rows:
        key = (r["bytes"], r["algorithm"])
        seen[key] = seen.get(key, True) and monitored(r)
    return {k for k, only in seen.items() if only}


def median_predictions(rows):
    """{bytes: {algorithm: median predicted_us over the rows of that size}}, rows with a
    prediction only (hand-written algorithms run with --model)."""
    times = {}
    for r in rows:
        if r["predicted_us"] is not None and not math.isnan(r["predicted_us"]):
            times.setdefault(r["bytes"], {}).setdefault(r["algorithm"], []).append(r["predicted_us"])
    return {b: {a: statistics.median(t) for a, t in per.items()} for b, per in times.items()}


def model_pick(predicted):
    """The algorithm the model predicts fastest (ties: the name), or None."""
    return min((t, a) for a, t in predicted.items())[1] if predicted else None


def model_verdict(pick, hand, per_algorithm):
    """(verdict, measured time of the model's pick over the measured winner's)."""
    if pick is None or hand is None:
        return "no prediction", None
    ratio = per_algorithm[pick] / per_algorithm[hand] if per_algorithm.get(hand) else None
    return ("agree" if pick == hand else "disagree"), ratio


def merge_ranges(sizes, key):
    """Consecutive sizes with the same key(size) as [{"key", "sizes"}]."""
    ranges = []
    for s in sizes:
        if ranges and ranges[-1]["key"] == key(s):
            ranges[-1]["sizes"].append(s)
        else:
            ranges.append({"key": key(s), "sizes": [s]})
    return ranges


def fastest(per_algorithm, hand_written_only, prefer=None):
    """The algorithm with the lowest time; on an exact tie `prefer` (the rules' pick), then
    the name."""
    cands = [(t, a != prefer, a) for a, t in per_algorithm.items()
             if not (hand_written_only and a in VENDOR_ALGORITHMS)]
    return min(cands)[2] if cands else None


def size_verdict(pick, hand, per_algorithm):
    if pick is None:
        return "no rule"
    if hand is None:
        return "no hand-written algorithm measured"
    if pick not in per_algorithm:
        return f"the rules' pick ({pick}) not measured"
    return "agree" if pick == hand else "disagree"


def library_ran(rows):
    """{bytes: what the vendor rows' traffic identifies} ('a or b'; several rows of one size
    that disagree: joined with '; ')."""
    ran = {}
    for r in rows:
        name = r.get("vendor_algorithm") or ""
        if r["vendor"] and name:
            shown = name.replace("|", " or ") if name != "unmatched" else \
                f"unmatched (closest {r['vendor_algorithm_closest']})"
            ran.setdefault(r["bytes"], [])
            if shown not in ran[r["bytes"]]:
                ran[r["bytes"]].append(shown)
    return {b: "; ".join(names) for b, names in ran.items()}


def advise_group(rows):
    """One group (collective, transport, N): per size the winners and the verdict, and
    consecutive sizes with the same ones merged into ranges."""
    first = rows[0]
    nnodes = max(nnodes_of(r) for r in rows)
    pick, rule = rule_pick(first["collective"], first["nranks"], nnodes)
    sizes = []
    predictions = median_predictions(rows)
    ran = library_ran(rows)
    monitored_times = timed_monitored(rows)
    for b, per in sorted(median_times(rows).items()):
        hand = fastest(per, True, pick)
        ratio = per[pick] / per[hand] if pick in per and hand and per[hand] > 0 else None
        predicted = predictions.get(b, {})
        mpick = model_pick(predicted)
        mverdict, mratio = model_verdict(mpick, hand, per)
        vendor = [a for a in per if a in VENDOR_ALGORITHMS]
        vendor_ratio = (per[vendor[0]] / per[hand] if vendor and hand and per[hand] > 0 else None)
        vendor_monitored = bool(vendor) and (b, vendor[0]) in monitored_times
        sizes.append({"bytes": b, "times": per, "fastest": fastest(per, False, pick),
                      "hand": hand, "rule_ratio": ratio, "ran": ran.get(b),
                      "vendor_over_hand": vendor_ratio, "vendor_monitored": vendor_monitored,
                      "verdict": size_verdict(pick, hand, per), "predicted": predicted,
                      "model_pick": mpick, "model_verdict": mverdict, "model_ratio": mratio})
    return {"collective": first["collective"], "transport": first["medium"],
            "nranks": first["nranks"], "nnodes": nnodes, "pick": pick, "rule": rule,
            "sizes": sizes,
            "ranges": merge_ranges(sizes, lambda s: (s["fastest"], s["hand"], s["verdict"])),
            "model_ranges": merge_ranges(sizes, lambda s: (s["model_pick"], s["hand"],
                                                           s["model_verdict"])),
            "ran_ranges": merge_ranges(sizes, lambda s: (s["ran"], s["hand"]))}


def advisor_groups(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["collective"], r["medium"], r["nranks"]), []).append(r)
    return [advise_group(g) for _, g in sorted(groups.items())]


def model_pick_markdown(groups):
    """The time model's pick per size range against the fastest hand-written algorithm
    measured, where the file has predictions."""
    lines = ["## The time model's pick", "",
             "Model picks: the hand-written algorithm with the lowest predicted time "
             "(`--model`; the median prediction over the rows of one algorithm and size). "
             "Verdict: whether it is the fastest hand-written algorithm measured; *pick ÷ "
             "fastest*: the measured time of the model's pick over the winner's, over the "
             "range (1.00x where they agree).", ""]
    body = []
    for g in groups:
        for rng in g["model_ranges"]:
            pick, hand, verdict = rng["key"]
            if verdict == "no prediction":
                continue
            ratios = [s["model_ratio"] for s in rng["sizes"] if s["model_ratio"] is not None]
            shown = "—" if not ratios else (
                f"{min(ratios):.2f}x" if max(ratios) - min(ratios) < 0.005
                else f"{min(ratios):.2f}x – {max(ratios):.2f}x")
            body.append([g["collective"], g["transport"], g["nranks"],
                         size_range([s["bytes"] for s in rng["sizes"]]), pick, hand, verdict,
                         shown])
    if not body:
        return lines + ["No predictions in this file (run the hand-written algorithms with "
                        "--model FILE).", ""]
    disagree = sum(1 for row in body if row[6] == "disagree")
    return lines + [md_table(["collective", "transport", "N", "sizes", "model picks",
                              "fastest hand-written", "verdict", "pick ÷ fastest"], body,
                             "llrllllr"), "",
                    f"The model's pick differs from the measured winner in {disagree} of "
                    f"{len(body)} ranges.", ""]


def ratio_span(ratios):
    if not ratios:
        return "—"
    lo, hi = min(ratios), max(ratios)
    return f"{lo:.2f}x" if hi - lo < 0.005 else f"{lo:.2f}x – {hi:.2f}x"


def library_ran_sentence(g):
    """'at N = 4 the library ran A (8 B – 4 KiB) and B (32 KiB – 64 MiB); ...'"""
    parts, seen = [], []
    for rng in g["ran_ranges"]:
        ran = rng["key"][0]
        if ran is None:
            continue
        sizes = [s["bytes"] for s in rng["sizes"]]
        if seen and seen[-1][0] == ran:
            seen[-1][1].extend(sizes)
        else:
            seen.append((ran, sizes))
    parts = [f"{ran} ({size_range(sizes)})" for ran, sizes in seen]
    if not parts:
        return None
    text = f"{g['collective']} at N = {g['nranks']} ({g['transport']}): the library ran " + \
        ", then ".join(parts)
    judged = [s for s in g["sizes"] if s["vendor_over_hand"] is not None]
    if judged:
        worst = max(judged, key=lambda s: s["vendor_over_hand"])
        r = worst["vendor_over_hand"]
        if r > 1:
            text += (f"; {worst['hand']} hand-written is {r:.2f}x faster than the library at "
                     f"{human_bytes(worst['bytes'])}")
        else:
            text += (f"; the library is at least as fast as every hand-written algorithm "
                     f"(best ratio {r:.2f}x at {human_bytes(worst['bytes'])})")
        if any(s["vendor_monitored"] for s in judged):
            text += " (the library timed with its monitoring on, which slows it)"
    return text + "."


def library_ran_markdown(groups):
    """What the library ran (its traffic's match, vendor rows), per size range, beside the
    fastest hand-written algorithm and the rules' pick."""
    lines = ["## What the library ran", "",
             "*library ran*: the hand-written algorithms whose exact theory equals the "
             "vendor row's traffic as the MPI library counted it (`vendor_algorithm`, "
             "docs/vendor-volume.md); *library ÷ fastest hand-written*: the vendor's "
             "median time over the fastest hand-written algorithm's, over the range (above "
             "1: a hand-written algorithm is faster). Rows run with `--vendor-volume` carry "
             "the monitoring's cost: where the file also has the vendor without it, those "
             "times are used, else the ratio is marked *(monitored)*. The rules' pick is as "
             "above; Open MPI's own decision is `coll_tuned_decision_fixed.c` "
             "(docs/selection-rules.md).", ""]
    body, sentences = [], []
    for g in groups:
        for rng in g["ran_ranges"]:
            ran, hand = rng["key"]
            if ran is None:
                continue
            ratios = [s["vendor_over_hand"] for s in rng["sizes"] if s["vendor_over_hand"] is not None]
            shown = ratio_span(ratios)
            if ratios and any(s["vendor_monitored"] for s in rng["sizes"]):
                shown += " (monitored)"
            body.append([g["collective"], g["transport"], g["nranks"],
                         size_range([s["bytes"] for s in rng["sizes"]]), ran, hand or "—",
                         shown, g["pick"] or "—"])
        sentence = library_ran_sentence(g)
        if sentence:
            sentences.append(f"- {sentence}")
    if not body:
        return lines + ["No vendor row with an identified algorithm in this file (run the "
                        "`*_mpi` binaries with --vendor-volume, the default, on Open MPI).", ""]
    return lines + sentences + [""] + [md_table(
        ["collective", "transport", "N", "sizes", "library ran", "fastest hand-written",
         "library ÷ fastest hand-written", "rules pick"], body, "llrlllrl"), ""]


def advisor_markdown(results, predicted=None):
    groups = advisor_groups(results["collective"])
    lines = [
        "# Advisor: the fastest algorithm against the published selection rules", "",
        "Fastest: the lowest median `time_us` per size (median again over rows of one "
        "algorithm and size, e.g. several dtypes); consecutive sizes with the same winners "
        "make one range. The vendor collective competes and is marked `(vendor)`; the verdict "
        "compares the rules' pick with the fastest **hand-written** algorithm, because the "
        "rules pick among those (an exact tie counts for the rules' pick). *rule ÷ fastest*: "
        "the time of the rules' pick over the fastest hand-written one, over the range. "
        "The rules depend on N and the topology only (one node: a full mesh; several nodes: "
        "a fat-tree), never on the message size; docs/selection-rules.md states them in "
        "full, with their reasoning and what the libraries do instead:", "",
        "- allreduce: N <= 8: full mesh -> direct, else ring; 8 < N <= 32: fat-tree and N a "
        "power of two -> halving-doubling, else ring; N > 32: several nodes -> double binary "
        "tree, else ring.",
        "- alltoall: N <= 8 pairwise; 8 < N <= 32 Bruck; N > 32 ring.",
        "- allgather, reduce_scatter (tensor + sequence parallelism): ring for both.",
        "- broadcast, reduce, gather, scatter, alltoallv, barrier: no rule.", ""]
    if not groups:
        return "\n".join(lines + ["No collective rows.", ""])
    body = []
    for g in groups:
        for rng in g["ranges"]:
            fast, hand, verdict = rng["key"]
            ratios = [s["rule_ratio"] for s in rng["sizes"] if s["rule_ratio"] is not None]
            shown = "—" if not ratios else (
                f"{min(ratios):.2f}x" if max(ratios) - min(ratios) < 0.005
                else f"{min(ratios):.2f}x – {max(ratios):.2f}x")
            body.append([g["collective"], g["transport"], g["nranks"], g["nnodes"],
                         size_range([s["bytes"] for s in rng["sizes"]]), algo_label(fast),
                         hand or "—", g["pick"] or "—", g["rule"], shown, verdict])
    lines += [md_table(["collective", "transport", "N", "nodes", "sizes", "fastest",
                        "fastest hand-written", "rules pick", "rule used",
                        "rule ÷ fastest", "verdict"], body, "llrrlllllrl"), ""]
    lines += library_ran_markdown(groups)
    lines += model_pick_markdown(groups)
    lines += ["## Median time per size (us)", ""]
    for g in groups:
        algos = sorted({a for s in g["sizes"] for a in s["times"]},
                       key=lambda a: (a in VENDOR_ALGORITHMS, a))
        rows = [[s["bytes"], human_bytes(s["bytes"])] +
                [(f"**{fmt_us(s['times'][a])}**" if a == s["fastest"] else fmt_us(s["times"][a]))
                 if a in s["times"] else "—" for a in algos] +
                [algo_label(s["fastest"]), s["hand"] or "—", s["model_pick"] or "—"]
                for s in g["sizes"]]
        lines += [f"### {g['collective']}, {g['transport']}, N = {g['nranks']}", "",
                  md_table(["bytes", "size"] + [algo_label(a) for a in algos] +
                           ["fastest", "fastest hand-written", "model picks"], rows,
                           "rr" + "r" * len(algos) + "lll"), ""]
    if predicted:
        lines += ["## The rules against predictions at scale", "",
                  "From `scripts/predict-rules` (the time model at N this machine cannot run; "
                  "where this file has measurements, the sections above set the model's pick "
                  "beside the measured winner).", ""] + predicted_rules_markdown(predicted)
    return "\n".join(lines)


# ---- plots -------------------------------------------------------------------------------


def pyplot():
    # Quiet: a fresh machine's first import logs "building the font cache" on stderr,
    # where this script's own lines must stand alone.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def series(rows, value, positive=False):
    """{algorithm: (sizes, medians of value(row))}, sizes ascending; None and NaN skipped
    (and values <= 0 when `positive`, for a log axis)."""
    points = {}
    for r in rows:
        v = value(r)
        if v is not None and not math.isnan(v) and r["bytes"] > 0 and (v > 0 or not positive):
            points.setdefault(r["algorithm"], {}).setdefault(r["bytes"], []).append(v)
    return {a: (sorted(p), [statistics.median(p[b]) for b in sorted(p)])
            for a, p in points.items()}


def algorithm_colours(algorithms):
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
               "tab:pink", "tab:olive", "tab:cyan"]
    hand = sorted(a for a in algorithms if a not in VENDOR_ALGORITHMS)
    colours = {a: palette[i % len(palette)] for i, a in enumerate(hand)}
    colours.update({a: "black" for a in algorithms if a in VENDOR_ALGORITHMS})
    return colours


def size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = sorted(set(sizes))
    if len(ticks) > 12:
        ticks = ticks[::math.ceil(len(ticks) / 12)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([human_bytes(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_xlabel("size (bytes, log2)")
    ax.grid(True, alpha=0.3)


def save(fig, path):
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except OSError as e:
        raise IOFailure(f"cannot write '{path}': {e}") from None
    finally:
        pyplot().close(fig)


def no_data(ax):
    ax.text(0.5, 0.5, "no measured values", ha="center", va="center", transform=ax.transAxes)


def plot_busbw(rows, title, path):
    plt = pyplot()
    lines = series(rows, lambda r: r["busbw_gbps"])
    colours = algorithm_colours(lines)
    fig, ax = plt.subplots(figsize=(8, 5))
    for a in sorted(lines, key=lambda a: (a in VENDOR_ALGORITHMS, a)):
        x, y = lines[a]
        ax.plot(x, y, marker="o", color=colours[a], label=algo_label(a))
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title)
    if lines:
        size_axis(ax, [b for x, _ in lines.values() for b in x])
        ax.legend()
    else:
        no_data(ax)
    save(fig, path)


def plot_time(rows, title, path):
    plt = pyplot()
    measured = series(rows, lambda r: r["time_us"], positive=True)
    predicted = series(rows, lambda r: r["predicted_us"], positive=True)
    colours = algorithm_colours(measured)
    fig, ax = plt.subplots(figsize=(8, 5))
    for a in sorted(measured, key=lambda a: (a in VENDOR_ALGORITHMS, a)):
        x, y = measured[a]
        ax.plot(x, y, marker="o", color=colours[a], label=f"{algo_label(a)} measured")
        if a in predicted:
            px, py = predicted[a]
            ax.plot(px, py, linestyle="--", marker="x", color=colours[a],
                    label=f"{a} predicted")
    ax.set_ylabel("time (us, median; log)")
    ax.set_title(title)
    if measured:
        size_axis(ax, [b for x, _ in measured.values() for b in x])
        ax.set_yscale("log")
        ax.legend(fontsize="small")
    else:
        no_data(ax)
    save(fig, path)


def short_number(v):
    """Compact annotation for a heatmap cell."""
    if float(v).is_integer() and abs(v) < 1024:
        return str(int(v))
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"


def plot_heatmap(matrix, title, label, path, mask_diagonal=False, annotate=short_number):
    plt = pyplot()
    n = matrix.shape[0]
    data = np.ma.masked_array(matrix.astype(np.float64),
                              mask=np.eye(n, dtype=bool) if mask_diagonal else None)
    fig, ax = plt.subplots(figsize=(max(4.5, 0.6 * n + 3), max(4, 0.6 * n + 2)))
    image = ax.imshow(data, cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label=label)
    if n <= 32:
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
    ax.set_xlabel("receiver rank")
    ax.set_ylabel("sender rank")
    ax.set_title(title)
    if n <= 8:
        lo, hi = image.get_clim()
        for i in range(n):
            for j in range(n):
                if mask_diagonal and i == j:
                    continue
                v = matrix[i, j]
                light = hi > lo and (v - lo) / (hi - lo) > 0.6  # viridis is light at the top
                ax.text(j, i, annotate(v), ha="center", va="center", fontsize=8,
                        color="black" if light else "white")
    save(fig, path)


def plot_files(results, out):
    """Makes every plot; returns {section: [(file name, caption)]}."""
    made = {"busbw": [], "time": [], "traffic": [], "pingpong": []}
    rows = results["collective"]
    groups = {}
    for r in rows:
        groups.setdefault((r["collective"], r["nranks"], r["medium"]), []).append(r)
    for (coll, n, transport), g in sorted(groups.items()):
        if not any(r["bytes"] > 0 for r in g):
            continue  # the barrier: no sizes to plot against
        stem = f"{coll}_np{n}_{transport.replace('/', '_')}"
        plot_busbw(g, f"{coll}, N = {n}, {transport}: busbw",
                   os.path.join(out, f"busbw_{stem}.png"))
        made["busbw"].append((f"busbw_{stem}.png", f"{coll}, N = {n}, {transport}: busbw"))
        plot_time(g, f"{coll}, N = {n}, {transport}: time (dashed: predicted)",
                  os.path.join(out, f"time_{stem}.png"))
        made["time"].append((f"time_{stem}.png", f"{coll}, N = {n}, {transport}: time"))
    largest = {}
    for r in rows:  # the largest size of each hand-written algorithm (later rows win ties)
        key = (r["collective"], r["algorithm"], r["nranks"])
        if r["traffic"] is not None and (key not in largest or r["bytes"] >= largest[key]["bytes"]):
            largest[key] = r
    for (coll, algo, n), r in sorted(largest.items()):
        name = f"traffic_{coll}_{algo}_np{n}.png"
        title = f"{coll} {algo}, N = {n}, {human_bytes(r['bytes'])} ({r['transport']})"
        if r["vendor"]:
            title += ", as the library counted it"
        plot_heatmap(r["traffic"], title, "bytes sent (row -> column)", os.path.join(out, name))
        made["traffic"].append((name, title))
    made["pingpong"] = plot_pingpong(results["pingpong"], out)
    return made


def plot_pingpong(rows, out):
    made = []
    by_n = {}
    for r in rows:
        if r["bw_matrix"] is not None and r["latency_matrix"] is not None:
            by_n.setdefault(r["nranks"], []).append(r)
    for n, g in sorted(by_n.items()):
        big = max(g, key=lambda r: r["bytes"])
        small = min(g, key=lambda r: r["bytes"])
        name = f"pingpong_bw_np{n}.png"
        title = f"ping-pong bandwidth, N = {n}, {human_bytes(big['bytes'])} ({big['transport']})"
        plot_heatmap(big["bw_matrix"], title, "GB/s", os.path.join(out, name), True,
                     lambda v: f"{v:.3g}")
        made.append((name, title))
        name = f"pingpong_latency_np{n}.png"
        title = (f"ping-pong latency (half round trip), N = {n}, "
                 f"{human_bytes(small['bytes'])} ({small['transport']})")
        plot_heatmap(small["latency_matrix"], title, "us", os.path.join(out, name), True,
                     lambda v: f"{v:.3g}")
        made.append((name, title))
    return made


# ---- layers.md: the layer pipelines' schemes side by side ---------------------------------

def layer_variant(row):
    """What distinguishes a layer row among the rows it is compared with."""
    v = f"{row['program']} {row['scheme']}"
    if "tp_to_sp" in row["shape"]:  # layer_tp_sp_ep's switch
        v += f" ({row['shape']['tp_to_sp']})"
    if row["layer"] == "moe" and row.get("etp", 1) > 1:
        v += f" ETP {row['etp']} {row['shape'].get('etp_scheme', '')}"
    for key in ("buckets", "chunks"):
        if row["shape"].get(key, 1) != 1:
            v += f" {key} {row['shape'][key]}"
    return v + (" --overlap" if row.get("overlap") else "")


def where_ran(row):
    memory = row.get("memory") or "host"
    return memory if memory == "host" else f"{memory} ({row.get('path', '')}" + \
        (f", {row['gpu']}" if row.get("gpu") else "") + ")"


def ms(us):
    return "n/a" if us is None or (isinstance(us, float) and math.isnan(us)) else f"{us / 1e3:.3f}"


def layer_cells(row):
    comm, hidden = row["comm_us"], row.get("hidden_comm_us")
    share = f"{100 * hidden / comm:.0f} %" if hidden is not None and comm > 0 else "n/a"
    rate = row.get("gemm_tflops")
    exact, book = row.get("textbook_exact_sent_bytes"), row.get("textbook_bytes")
    ratio = row.get("textbook_exact_over_formula")
    return [ms(row["time_us"]), ms(row["compute_us"]), ms(comm), ms(row.get("exposed_comm_us")),
            share, "n/a" if rate is None or math.isnan(rate) else f"{rate:.3g}",
            "n/a" if exact is None or exact < 0 else int(exact),
            "n/a" if book is None else int(book),
            "n/a" if ratio is None or math.isnan(ratio) else f"{ratio:.3f}",
            "PASS" if row["pass"] else "FAIL"]


LAYER_HEADER = ["time (ms)", "compute", "comm", "exposed", "hidden", "GEMM TFLOP/s",
                "bytes (busiest rank)", "textbook bytes", "exact / textbook", "result"]


# The rows that compute the same thing, so their schemes compete: (title, predicate).
SCHEME_FAMILIES = [
    ("TP -> SP switch: allreduce, reduce_scatter, alltoall", lambda r: r["layer"] == "tp_to_sp"),
    ("TP -> SP -> EP flow, by switch", lambda r: r["layer"] == "tp_sp_ep"),
    ("MoE expert tensor parallelism: the two ETP schemes",
     lambda r: r["layer"] == "moe" and r.get("etp", 1) > 1),
    ("MLP: TP (layer_tp_mlp) against EP (layer_moe)",
     lambda r: r["layer"] == "tp_mlp" or (r["layer"] == "moe" and r.get("etp", 1) == 1)),
]


def comparable_key(row, with_overlap=True):
    key = (row["nranks"], row["dtype"], where_ran(row))
    return key + (bool(row.get("overlap")),) if with_overlap else key


def scheme_tables(rows, title, keep):
    """One table per (N, dtype, where) of the family's rows, fastest first."""
    groups = {}
    for r in rows:
        if keep(r):
            groups.setdefault(comparable_key(r), []).append(r)
    lines = []
    for (n, dtype, where, overlap), group in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len({layer_variant(r) for r in group}) < 2:
            continue
        lines += ["", f"### {title}: N {n}, {dtype}, {where}" + (", --overlap" if overlap else ""), ""]
        ordered = sorted(group, key=lambda r: r["time_us"])
        lines.append(md_table(["variant"] + LAYER_HEADER,
                          [[layer_variant(r) + (" (fastest)" if r is ordered[0] else "")] +
                           layer_cells(r) for r in ordered],
                          ["l"] + ["r"] * (len(LAYER_HEADER) - 1) + ["l"]))
    return lines


def overlap_tables(rows):
    """Each layer with and without --overlap: what the overlap hid."""
    pairs = {}
    for r in rows:
        base = layer_variant(dict(r, overlap=False))
        pairs.setdefault((base,) + comparable_key(r, False), {})[bool(r.get("overlap"))] = r
    body = []
    for (variant, n, dtype, where), p in sorted(pairs.items(), key=lambda kv: str(kv[0])):
        if True in p and False in p:
            off, on = p[False], p[True]
            body.append([variant, n, dtype, where, ms(off["time_us"]), ms(on["time_us"]),
                         ms(off.get("exposed_comm_us")), ms(on.get("exposed_comm_us")),
                         ms(on.get("hidden_comm_us"))])
    if not body:
        return []
    return ["", "### --overlap: the same layer with and without it", "", md_table(
        ["layer", "N", "dtype", "where", "time", "time --overlap", "exposed",
         "exposed --overlap", "hidden --overlap"], body, ["l", "r", "l", "l"] + ["r"] * 5)]


def layers_markdown(results):
    rows = results["layer"]
    lines = ["# Layers: compute, communication and the schemes compared", ""]
    if not rows:
        return "\n".join(lines + ["No layer rows in this file (the layer binaries write them "
                                   "with -O, scripts/layers-measure too).", ""])
    lines += ["Times are medians over the timed iterations of the slowest rank (ms). "
              "comm is the collectives' time on their streams; exposed the part of it no "
              "compute ran beside (the layer waited for it); hidden = comm - exposed, as a "
              "share of comm (--overlap). bytes: what the busiest rank sent over the run, "
              "exact, beside the layer's textbook figure (docs/textbook-formulas.md).", ""]
    lines.append(md_table(["layer", "N", "TP", "EP", "dtype", "where"] + LAYER_HEADER,
                          [[layer_variant(r), r["nranks"], r["tp"], r["ep"], r["dtype"],
                            where_ran(r)] + layer_cells(r) for r in rows],
                          ["l", "r", "r", "r", "l", "l"] + ["r"] * (len(LAYER_HEADER) - 1) + ["l"]))
    lines += ["", "## Schemes side by side"]
    for title, keep in SCHEME_FAMILIES:
        lines += scheme_tables(rows, title, keep)
    lines += overlap_tables(rows)
    return "\n".join(lines) + "\n"


# ---- report.md and the output directory -------------------------------------------------

TABLES = [("volume.md", "Volume: measured against exact theory"),
          ("textbook_vs_theory.md", "Textbook formula against exact theory"),
          ("time_model.md", "Time model: predicted against measured"),
          ("advisor.md", "Advisor: fastest algorithm against the selection rules"),
          ("layers.md", "Layers: compute, communication and the schemes compared")]
PLOT_SECTIONS = [("busbw", "Bus bandwidth"), ("time", "Time, measured and predicted"),
                 ("traffic", "Traffic matrices"), ("pingpong", "Ping-pong matrices")]


def file_summary(results):
    a, runs = results["attrs"], results["runs"]
    programs = sorted({r["program"] for r in runs})
    hosts = sorted({h for r in runs for h in r["hosts"].split(",") if h})
    lines = [f"- file: `{results['path']}` ({a.get('created_by', '?')}, created "
             f"{a.get('created_utc', '?')}, schema {a.get('collscope_schema_version', '?')})",
             f"- runs: {len(runs)} ({', '.join(programs) or 'none'})",
             f"- hosts: {', '.join(hosts) or 'unknown'}"]
    libs = sorted({r["mpi_library"] for r in runs if r["mpi_library"]})
    if libs:
        lines.append(f"- MPI: {'; '.join(libs)}")
    lines.append(f"- rows: {len(results['collective'])} collective, "
                 f"{len(results['pingpong'])} ping-pong, {len(results['layer'])} layer")
    return lines


def demote(markdown):
    """A table file's headings one level down, to sit inside report.md."""
    return "\n".join("#" + line if line.startswith("#") else line for line in markdown.split("\n"))


def volume_line(stats):
    na = (f"{stats['measured']} measured by the library (vendor), "
          f"{stats['na']} n/a (vendor or no theory)")
    if stats["mismatch"]:
        return f"- volume: **{stats['mismatch']} MISMATCH**, {stats['ok']} ok, {na}"
    return f"- volume: {stats['ok']} ok, {na}, no mismatch"


def report_markdown(results, tables, plots, stats):
    lines = [f"# collscope report: {os.path.basename(results['path'])}", ""]
    lines += file_summary(results)
    lines += [volume_line(stats),
              f"- rows whose result check failed (wrong elements): {stats['wrong']}", "",
              "## Contents", ""]
    lines += [f"- [{title}]({name})" for name, title in TABLES]
    lines += [f"- [{title}](#{key})" for key, title in PLOT_SECTIONS if plots.get(key)]
    for name, _ in TABLES:
        lines += ["", demote(tables[name])]
    for key, title in PLOT_SECTIONS:
        if plots.get(key):
            lines += ["", f'<a id="{key}"></a>', "", f"## {title}", ""]
            lines += [f"![{caption}]({name})\n" for name, caption in plots[key]]
    return "\n".join(lines) + "\n"


def empty_report(results):
    return "\n".join([f"# collscope report: {os.path.basename(results['path'])}", ""] +
                     file_summary(results) +
                     ["", "The file holds no finished rows: nothing to tabulate or plot.", ""])


def prepare_out_dir(out):
    """Creates DIR if needed and proves it writable; on failure removes what it created."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise BadInput(f"--out '{out}' exists and is not a directory")
    created, probe = [], out
    while probe and not os.path.exists(probe):
        created.append(probe)
        probe = os.path.dirname(probe)
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".report-probe-"):
            pass
    except OSError as e:
        for d in created:  # deepest first
            try:
                os.rmdir(d)
            except OSError:
                pass
        raise BadInput(f"--out '{out}' is not a writable directory: {e.strerror or e}") from None


def write_text(path, content):
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
    except OSError as e:
        raise IOFailure(f"cannot write '{path}': {e.strerror or e}") from None


def default_out(path):
    stem, ext = os.path.splitext(path)
    return (stem if ext.lower() in (".h5", ".hdf5") else path) + "_report"


# ---- main -------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"report: {message} (usage: report FILE.h5 [--out DIR])", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def parse_args(argv):
    p = Parser(prog="report", description=__doc__,
               usage="%(prog)s FILE.h5 [--out DIR] [--predicted PREDICTED.jsonl]",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE.h5", help="a collscope results file")
    p.add_argument("--out", metavar="DIR", help="output directory (default: FILE without .h5 "
                   "+ _report, next to FILE)")
    p.add_argument("--predicted", metavar="PREDICTED.jsonl", help="scripts/predict-rules' "
                   "predicted_rules.jsonl: the rules against predictions at scale, in advisor.md")
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


def print_summary(results, out, stats, plots):
    rows = results["collective"]
    predicted = model_rows(rows)
    print(f"report: {results['path']}: {len(rows)} collective rows, "
          f"{len(results['pingpong'])} ping-pong rows, {len(results['runs'])} runs")
    print(f"  volume: {stats['ok']} ok, {stats['mismatch']} MISMATCH, {stats['measured']} measured "
          f"(vendor), {stats['na']} n/a")
    if predicted:
        med = statistics.median(ratio_of(r) for r in predicted)
        print(f"  time model: {len(predicted)} rows predicted, median predicted/measured "
              f"{fmt_ratio(med)}")
    else:
        print("  time model: none in this file (run with --model FILE)")
    verdicts = [rng["key"][2] for g in advisor_groups(rows) for rng in g["ranges"]]
    judged = [v for v in verdicts if v in ("agree", "disagree")]
    print(f"  advisor: the selection rules agree with the fastest hand-written algorithm on "
          f"{judged.count('agree')} of {len(judged)} size ranges they have a rule for")
    if stats["wrong"]:
        print(f"  result check: {stats['wrong']} rows with wrong elements")
    count = sum(len(v) for v in plots.values())
    print(f"  wrote {os.path.join(out, 'report.md')}: {len(TABLES)} tables, {count} plots")


def run(argv):
    args = parse_args(argv)
    results = read_results(args.file)
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
              "layers.md": layers_markdown(results)}
    for name, content in tables.items():
        write_text(os.path.join(out, name), content)
    plots = plot_files(results, out)
    stats = volume_stats(results, checks)
    write_text(os.path.join(out, "report.md"), report_markdown(results, tables, plots, stats))
    print_summary(results, out, stats, plots)
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
