"""advisor.md: the fastest algorithm per (collective, transport, N, size range) beside what
the published selection rules pick (docs/selection-rules.md), each verdict beyond the noise
or a tie; what the library ran (vendor rows with an identified algorithm); the time model's
pick; the median time per size; with --predicted the rules against predictions at scale."""

import math
import statistics

from collscope import noise
from collscope import stats           # the verdicts beyond the noise (docs/statistics.md)
from collscope.report.formatting import algo_label, fmt_us, human_bytes, md_table, size_range
from collscope.report.load import VENDOR_ALGORITHMS, monitored, nnodes_of
from collscope.selection_rules import predicted_rules_markdown, rule_pick

# ---- 4. advisor: fastest measured against the published selection rules ------------------


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


TIE_VERDICT = "tie (within noise)"


def versus(samples, nbytes, a, b):
    """stats.Verdict of algorithm a's times against b's at one size (None: the same
    algorithm, or either without times)."""
    per = samples.get(nbytes, {})
    if a is None or b is None or a == b or a not in per or b not in per:
        return None
    return stats.compare_rounds(per[a], per[b])


def noise_verdict(pick, hand, verdict):
    """agree (the same algorithm), disagree (the pick slower beyond the noise) or a tie."""
    if pick == hand:
        return "agree"
    return "disagree" if verdict and verdict.word == "slower" else TIE_VERDICT


def model_verdict(pick, hand, per_algorithm, verdict=None):
    """(verdict, measured time of the model's pick over the measured winner's)."""
    if pick is None or hand is None:
        return "no prediction", None
    ratio = (per_algorithm[pick] / per_algorithm[hand]
             if pick in per_algorithm and per_algorithm.get(hand) else None)
    return noise_verdict(pick, hand, verdict) if pick in per_algorithm else "disagree", ratio


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


def size_verdict(pick, hand, per_algorithm, verdict=False):
    """The rules' pick against the fastest hand-written algorithm; with `verdict` (the
    pick's stats.Verdict against it) a difference within the noise is a tie."""
    if pick is None:
        return "no rule"
    if hand is None:
        return "no hand-written algorithm measured"
    if pick not in per_algorithm:
        return f"the rules' pick ({pick}) not measured"
    if verdict is False:
        return "agree" if pick == hand else "disagree"
    return noise_verdict(pick, hand, verdict)


def tied_with(samples, nbytes, hand, per_algorithm):
    """The hand-written algorithms whose times at this size tie with the fastest's."""
    out = []
    for a in sorted(per_algorithm):
        v = versus(samples, nbytes, a, hand)
        if a not in VENDOR_ALGORITHMS and v is not None and v.word == stats.TIE:
            out.append(a)
    return out


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
    predictions = median_predictions(rows)
    context = {"pick": pick, "ran": library_ran(rows), "monitored": timed_monitored(rows),
               "samples": noise.cell_rounds(rows, excluded=monitored),
               "noisy": {(r["bytes"], r["algorithm"]) for r in rows if r.get("noisy")}}
    sizes = [advise_size(b, per, predictions.get(b, {}), context)
             for b, per in sorted(median_times(rows).items())]
    return {"collective": first["collective"], "transport": first["medium"],
            "nranks": first["nranks"], "nnodes": nnodes, "pick": pick, "rule": rule,
            "sizes": sizes,
            "ranges": merge_ranges(sizes, lambda s: (s["fastest"], s["hand"], s["verdict"])),
            "model_ranges": merge_ranges(sizes, lambda s: (s["model_pick"], s["hand"],
                                                           s["model_verdict"])),
            "ran_ranges": merge_ranges(sizes, lambda s: (s["ran"], s["hand"]))}


def advise_size(b, per, predicted, context):
    """One size of a group: the winners, the rules' pick, the vendor and the model's pick
    against the fastest hand-written algorithm, each beyond the noise or a tie."""
    pick, samples = context["pick"], context["samples"]
    hand = fastest(per, True, pick)
    ratio = per[pick] / per[hand] if pick in per and hand and per[hand] > 0 else None
    rule = versus(samples, b, pick, hand)
    mpick = model_pick(predicted)
    mtest = versus(samples, b, mpick, hand)
    mverdict, mratio = model_verdict(mpick, hand, per, mtest)
    vendor = [a for a in per if a in VENDOR_ALGORITHMS]
    vendor_ratio = (per[vendor[0]] / per[hand] if vendor and hand and per[hand] > 0 else None)
    return {"bytes": b, "times": per, "fastest": fastest(per, False, pick),
            "hand": hand, "rule_ratio": ratio, "rule_test": rule, "ran": context["ran"].get(b),
            "vendor_over_hand": vendor_ratio,
            "vendor_test": versus(samples, b, vendor[0], hand) if vendor else None,
            "vendor_monitored": bool(vendor) and (b, vendor[0]) in context["monitored"],
            "verdict": size_verdict(pick, hand, per, rule),
            "verdict_without_noise": size_verdict(pick, hand, per),
            "ties": tied_with(samples, b, hand, per) if hand else [], "predicted": predicted,
            "model_pick": mpick, "model_verdict": mverdict, "model_ratio": mratio,
            "model_test": mtest, "noisy": {a for a in per if (b, a) in context["noisy"]}}


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
             "Verdict: whether it is the fastest hand-written algorithm measured, *disagree* "
             f"only where the measured times tell them apart beyond the noise (else "
             f"*{TIE_VERDICT}*, docs/statistics.md); *pick ÷ fastest*: the measured time of "
             "the model's pick over the winner's, over the range (1.00x where they agree), "
             "and its interval.", ""]
    body = []
    for g in groups:
        for rng in g["model_ranges"]:
            pick, hand, verdict = rng["key"]
            if verdict == "no prediction":
                continue
            ratios = [s["model_ratio"] for s in rng["sizes"] if s["model_ratio"] is not None]
            body.append([g["collective"], g["transport"], g["nranks"],
                         size_range([s["bytes"] for s in rng["sizes"]]), pick, hand, verdict,
                         ratio_span(ratios), interval_span([s["model_test"] for s in rng["sizes"]])])
    if not body:
        return lines + ["No predictions in this file (run the hand-written algorithms with "
                        "--model FILE).", ""]
    disagree = sum(1 for row in body if row[6] == "disagree")
    tied = sum(1 for row in body if row[6] == TIE_VERDICT)
    return lines + [md_table(["collective", "transport", "N", "sizes", "model picks",
                              "fastest hand-written", "verdict", "pick ÷ fastest",
                              f"{stats.LEVEL:.0%} interval"], body, "llrllllrr"), "",
                    f"The model's pick is slower than the measured winner beyond the noise in "
                    f"{disagree} of {len(body)} ranges, within the noise in {tied}.", ""]


def interval_span(verdicts):
    """The hull of the intervals of a range's sizes ('[0.95, 1.2]'), or '—'."""
    tested = [v.interval for v in verdicts if v is not None]
    if not tested:
        return "—"
    return f"[{stats.bound(min(i.low for i in tested))}, {stats.bound(max(i.high for i in tested))}]"


def noise_count_lines(groups):
    """How many sizes the noise test turned from disagree into a tie, and the test."""
    sizes = [s for g in groups for s in g["sizes"]]
    before = [s for s in sizes if s["verdict_without_noise"] == "disagree"]
    tied = [s for s in before if s["verdict"] == TIE_VERDICT]
    methods = sorted({s["rule_test"].method() for s in sizes if s["rule_test"]})
    return [f"Noise: the rules' pick is not the fastest hand-written algorithm by median at "
            f"{len(before)} sizes; at {len(tied)} of them the difference is within the noise "
            f"(*{TIE_VERDICT}*: the {stats.LEVEL:.0%} interval of pick ÷ fastest holds 1), at "
            f"{len(before) - len(tied)} it stands out (*disagree*). Test: "
            f"{'; '.join(methods) or 'none needed'} (docs/statistics.md; noise.md has the "
            "rounds and the machine).", ""]


def ratio_span(ratios):
    if not ratios:
        return "—"
    lo, hi = min(ratios), max(ratios)
    return f"{lo:.2f}x" if hi - lo < 0.005 else f"{lo:.2f}x – {hi:.2f}x"


def vendor_clause(judged):
    """'; ring hand-written is 1.30x faster than the library at 1 MiB (...)', beyond the
    noise only."""
    beyond = [s for s in judged if s["vendor_test"] and s["vendor_test"].word == "slower"]
    worst = max(beyond or judged, key=lambda s: s["vendor_over_hand"])
    r, at = worst["vendor_over_hand"], human_bytes(worst["bytes"])
    interval = worst["vendor_test"].interval.text() if worst["vendor_test"] else "no interval"
    if beyond:
        return (f"; {worst['hand']} hand-written is {r:.2f}x faster than the library at {at}, "
                f"beyond the noise ({interval})")
    if r > 1:
        return (f"; no hand-written algorithm is faster than the library beyond the noise "
                f"(largest ratio {r:.2f}x at {at}: {TIE_VERDICT}, {interval})")
    return (f"; the library is at least as fast as every hand-written algorithm "
            f"(best ratio {r:.2f}x at {at})")


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
        text += vendor_clause(judged)
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
                         shown, interval_span([s["vendor_test"] for s in rng["sizes"]]),
                         g["pick"] or "—"])
        sentence = library_ran_sentence(g)
        if sentence:
            sentences.append(f"- {sentence}")
    if not body:
        return lines + ["No vendor row with an identified algorithm in this file (run the "
                        "`*_mpi` binaries with --vendor-volume, the default, on Open MPI).", ""]
    return lines + sentences + [""] + [md_table(
        ["collective", "transport", "N", "sizes", "library ran", "fastest hand-written",
         "library ÷ fastest hand-written", f"{stats.LEVEL:.0%} interval", "rules pick"], body,
        "llrlllrrl"), ""]


def median_cell(s, a):
    if a not in s["times"]:
        return "—"
    shown = fmt_us(s["times"][a])
    shown = f"**{shown}**" if a == s["fastest"] else shown
    return shown + (" ≈" if a in s["ties"] else "") + (" ~" if a in s["noisy"] else "")


def median_table_lines(g):
    """One group's median time per size and algorithm."""
    algos = sorted({a for s in g["sizes"] for a in s["times"]},
                   key=lambda a: (a in VENDOR_ALGORITHMS, a))
    rows = [[s["bytes"], human_bytes(s["bytes"])] + [median_cell(s, a) for a in algos] +
            [algo_label(s["fastest"]), s["hand"] or "—", s["model_pick"] or "—"]
            for s in g["sizes"]]
    return [f"### {g['collective']}, {g['transport']}, N = {g['nranks']}", "",
            md_table(["bytes", "size"] + [algo_label(a) for a in algos] +
                     ["fastest", "fastest hand-written", "model picks"], rows,
                     "rr" + "r" * len(algos) + "lll"), ""]


def advisor_markdown(results, predicted=None):
    groups = advisor_groups(results["collective"])
    lines = [
        "# Advisor: the fastest algorithm against the published selection rules", "",
        "Fastest: the lowest median `time_us` per size (median again over rows of one "
        "algorithm and size, e.g. several dtypes); consecutive sizes with the same winners "
        "make one range. The vendor collective competes and is marked `(vendor)`; the verdict "
        "compares the rules' pick with the fastest **hand-written** algorithm, because the "
        "rules pick among those (an exact tie counts for the rules' pick). *rule ÷ fastest*: "
        "the time of the rules' pick over the fastest hand-written one, over the range, and "
        "the interval of that ratio from the rows' iterations and rounds (docs/statistics.md; "
        "the range's sizes' intervals joined). The verdict is *disagree* only where the "
        f"interval lies above 1, the pick slower beyond the noise; where it holds 1, "
        f"*{TIE_VERDICT}*: the samples cannot tell the two apart. "
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
            body.append([g["collective"], g["transport"], g["nranks"], g["nnodes"],
                         size_range([s["bytes"] for s in rng["sizes"]]), algo_label(fast),
                         hand or "—", g["pick"] or "—", g["rule"], ratio_span(ratios),
                         interval_span([s["rule_test"] for s in rng["sizes"]]), verdict])
    lines += [md_table(["collective", "transport", "N", "nodes", "sizes", "fastest",
                        "fastest hand-written", "rules pick", "rule used",
                        "rule ÷ fastest", f"{stats.LEVEL:.0%} interval", "verdict"], body,
                       "llrrlllllrrl"), ""]
    lines += noise_count_lines(groups)
    lines += library_ran_markdown(groups)
    lines += model_pick_markdown(groups)
    lines += ["## Median time per size (us)", "",
              "**Bold**: the fastest; ≈: a hand-written algorithm within the noise of the "
              "fastest hand-written one (a tie); ~: a noisy cell (a row of it has a relative "
              "spread above its threshold, noise.md).", ""]
    for g in groups:
        lines += median_table_lines(g)
    if predicted:
        lines += ["## The rules against predictions at scale", "",
                  "From `scripts/predict-rules` (the time model at N this machine cannot run; "
                  "where this file has measurements, the sections above set the model's pick "
                  "beside the measured winner).", ""] + predicted_rules_markdown(predicted)
    return "\n".join(lines)
