"""textbook_vs_theory.md: per row the usual closed form (docs/textbook-formulas.md) against
the exact theory's bytes sent per rank (max and mean), the difference, and why, read from
the row."""

import math

import numpy as np

from collscope.report.formatting import algo_label, fmt_bytes_value, md_table
from collscope.selection_rules import is_pow2

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
