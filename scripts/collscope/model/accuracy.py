"""How well the time model predicts, per algorithm and size band: the one computation that
scripts/model-check prints and scripts/report's time-model page shows.

A row is a dict with collective, algorithm, bytes (the size column) and ratio
(predicted / measured time). Per (collective, algorithm) and band: the median ratio, the
worst one (farthest from 1, up or down, by factor) and the number of rows; a cell is
within target when its median is within the band's tolerance. The tolerances are the
model's accuracy targets at 2 ranks on one machine (MODEL.md, "Accuracy").
"""
import math
import statistics

KIB, MIB = 1024, 1024 * 1024

# (lower bound in bytes, label, tolerance of the median ratio)
BANDS = (
    (0, "< 64 KiB", 0.30),
    (64 * KIB, "64 KiB - 1 MiB", 0.15),
    (1 * MIB, "1 - 16 MiB", 0.15),
    (16 * MIB, ">= 16 MiB", 0.15),
)


def band_of(nbytes):
    """The index in BANDS of a size."""
    index = 0
    for i, (low, _, _) in enumerate(BANDS):
        if nbytes >= low:
            index = i
    return index


def band_label(index):
    return BANDS[index][1]


def farthest_from_one(ratios):
    """The ratio farthest from 1 by factor (0.5 and 2 are as far)."""
    return max(ratios, key=lambda r: abs(math.log(r)) if r > 0 else math.inf)


def within(index, ratio):
    tolerance = BANDS[index][2]
    return 1 - tolerance <= ratio <= 1 + tolerance


def band_summary(rows):
    """{(collective, algorithm): {band index: {"median", "worst", "rows", "ok"}}} over rows
    with a positive ratio."""
    cells = {}
    for r in rows:
        if r.get("ratio") is None or not r["ratio"] > 0:
            continue
        key = (r["collective"], r["algorithm"])
        cells.setdefault(key, {}).setdefault(band_of(r["bytes"]), []).append(r["ratio"])
    out = {}
    for key, bands in cells.items():
        out[key] = {}
        for b, ratios in bands.items():
            med = statistics.median(ratios)
            out[key][b] = {"median": med, "worst": farthest_from_one(ratios),
                           "rows": len(ratios), "ok": within(b, med)}
    return out


def worst_row(rows):
    """The row whose ratio is farthest from 1, or None."""
    rated = [r for r in rows if r.get("ratio") is not None and r["ratio"] > 0]
    return max(rated, key=lambda r: abs(math.log(r["ratio"]))) if rated else None


def used_bands(summary):
    return sorted({b for bands in summary.values() for b in bands})


def table(summary):
    """(header, body) of the per-algorithm table: one row per (collective, algorithm), per
    band "median (worst)" with a * when the median misses the band's target."""
    bands = used_bands(summary)
    header = ["collective", "algorithm"] + [band_label(b) for b in bands]
    body = []
    for (coll, algo), cells in sorted(summary.items()):
        row = [coll, algo]
        for b in bands:
            c = cells.get(b)
            row.append("-" if c is None else
                       f"{c['median']:.2f} ({c['worst']:.2f}){'' if c['ok'] else ' *'}")
        body.append(row)
    return header, body


def misses(summary):
    """[(collective, algorithm, band label, median)] of the cells outside their target."""
    return [(coll, algo, band_label(b), c["median"])
            for (coll, algo), cells in sorted(summary.items())
            for b, c in sorted(cells.items()) if not c["ok"]]


def overall(summary):
    """Per band, over every algorithm: (median of the medians, the worst median)."""
    out = {}
    for b in used_bands(summary):
        meds = [cells[b]["median"] for cells in summary.values() if b in cells]
        out[b] = (statistics.median(meds), farthest_from_one(meds))
    return out


def targets_text():
    return ", ".join(f"{label}: median within ±{tol * 100:.0f}%" for _, label, tol in BANDS)
