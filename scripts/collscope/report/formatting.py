"""The report's formatting, shared by every page: sizes (human_bytes, size_range), times and
ratios (fmt_us, fmt_ratio), a row's variant, Markdown tables (md_table) and algorithm labels
(a vendor's marked). It writes no page."""

import math

from collscope.report.load import VENDOR_ALGORITHMS

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
