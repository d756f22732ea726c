"""time_model.md: per row with a model (--model FILE) the predicted against the measured
time and whether the prediction lies within the measured median's interval; per (transport,
N) the size bands (scripts/collscope/model/accuracy.py, as scripts/model-check prints them);
per (collective, algorithm) the median, min and max ratio."""

import math
import statistics

from collscope import noise
from collscope import stats           # the verdicts beyond the noise (docs/statistics.md)
from collscope.model import accuracy as model_accuracy
from collscope.report.formatting import fmt_ratio, fmt_us, md_table, variant

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
    body, outside = [], 0
    for r in rows:
        shown, beyond = prediction_interval(r)
        outside += beyond
        body.append([r["index"], r["collective"], r["algorithm"], r["transport"], r["nranks"],
                     r["bytes"], variant(r), fmt_us(r["time_us"]) + noise.mark(r),
                     fmt_us(r["predicted_us"]), fmt_ratio(ratio_of(r)), shown,
                     "outside" if beyond else "within"])
    lines += [f"The prediction lies outside the {stats.LEVEL:.0%} interval of the measured "
              f"median (sign test on the row's iterations, docs/statistics.md) in {outside} "
              f"of {len(rows)} rows; within it, the model and the measurement cannot be told "
              "apart on this row. (noisy): the row's spread is above its threshold.", ""]
    lines.append(md_table(["#", "collective", "algorithm", "transport", "N", "bytes", "variant",
                           "measured (us)", "predicted (us)", "predicted / measured",
                           f"{stats.LEVEL:.0%} interval", "prediction vs noise"],
                          body, "rlllrrlrrrrl"))
    return "\n".join(lines + [""])


def prediction_interval(row):
    """('[0.91, 1.1]', outside?) of predicted / measured, the measured median's interval
    from the row's iterations."""
    mi = stats.median_interval(noise.samples_of(row))
    if mi is None or mi[1] <= 0 or math.isinf(mi[2]):
        return "—", False
    _, low, high = mi
    p = row["predicted_us"]
    return f"[{fmt_ratio(p / high)}, {fmt_ratio(p / low)}]", not low <= p <= high
