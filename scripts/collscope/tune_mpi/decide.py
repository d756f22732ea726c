"""From a tuning sweep's rows to a decision file: per (collective, N, size) the fastest
forced algorithm, only where it beats Open MPI's default beyond the noise; the default
everywhere else.

The test (collscope.stats.compare_rounds): the candidate's times against the default's,
one pair of run medians per round (Wilcoxon signed-rank), never iterations alone: the
iterations of one run share its process's placement and the machine's state of the
moment, so a test on them calls run-to-run noise a difference. With K candidates in a
cell each is tested at the family level of K (Bonferroni), so that picking the best of K
cannot pass noise off as a gain: 7 candidates at 95% need 9 rounds. A candidate
whose probe traffic shows another algorithm (a fallback) is not a candidate.
"""
import math
from dataclasses import dataclass, field

from collscope import stats
from collscope.report import load
from collscope.tune_mpi import openmpi
from collscope.tune_mpi.rules import Band

DEFAULT = (0, 0, 0)        # (algorithm, fan in/out, segment size): Open MPI's fixed decision


def params_of(row):
    """{name: value} of a row's recorded coll_* MCA parameters."""
    words = (row.get("mpi_coll_params") or "").split()
    return dict(w.split("=", 1) for w in words if "=" in w)


def tuned_collective(row):
    """The Open MPI collective a collscope vendor row called."""
    c = row["collective"]
    if c == "broadcast":
        return "bcast"
    if c == "reduce_scatter":
        return "reduce_scatter_block" if row["count"] % row["nranks"] == 0 else "reduce_scatter"
    return c


def variant_of(row, collective):
    """("default" | "file" | "forced", (algorithm, fanout, segsize))."""
    p = params_of(row)
    if "coll_tuned_dynamic_rules_filename" in p:
        return "file", DEFAULT
    alg = int(p.get(f"coll_tuned_{collective}_algorithm", 0))
    if not alg:
        return "default", DEFAULT
    seg = int(p.get(f"coll_tuned_{collective}_algorithm_segmentsize", 0))
    fan = int(p.get(f"coll_tuned_{collective}_algorithm_chain_fanout", 0))
    return "forced", (alg, fan, seg)


@dataclass
class Side:
    """One variant in one cell: its times by round, and what its probe's traffic named."""
    rounds: dict = field(default_factory=dict)
    ran: str = ""                 # the probe's vendor_algorithm


def cells_of(rows):
    """{(collective, N, bytes): {(kind, choice): Side}} of the _mpi rows."""
    cells = {}
    for r in rows:
        if r["algorithm"] != "mpi":
            continue
        c = tuned_collective(r)
        kind, choice = variant_of(r, c)
        side = cells.setdefault((c, r["nranks"], r["bytes"]), {}).setdefault((kind, choice), Side())
        if load.monitored(r):
            side.ran = r.get("vendor_algorithm") or ""
        elif r.get("times_us") is not None and len(r["times_us"]):
            side.rounds.setdefault(r.get("round", -1), []).extend(float(t) for t in r["times_us"])
    return cells


def read_rows(paths):
    rows = []
    for p in paths:
        rows.extend(load.read_results(p)["collective"])
    return rows


@dataclass
class Decision:
    """One cell's outcome."""
    collective: str
    nranks: int
    nbytes: int
    default_ran: str
    choice: tuple = DEFAULT
    verdict: object = None        # the chosen candidate's stats.Verdict against the default
    candidates: list = field(default_factory=list)   # [(choice, verdict or None, note)]
    default_us: float = math.nan
    chosen_us: float = math.nan


def median_of(side):
    all_times = [t for ts in side.rounds.values() for t in ts]
    return stats.quantile(all_times, 0.5) if all_times else math.nan


def decide_cell(key, sides, level=stats.LEVEL):
    c, n, nbytes = key
    default = sides.get(("default", DEFAULT))
    d = Decision(c, n, nbytes, default.ran if default else "")
    if not default or not default.rounds:
        return d
    d.default_us = median_of(default)
    forced = {choice: s for (kind, choice), s in sides.items() if kind == "forced" and s.rounds}
    each = stats.family_level(len(forced), level)
    best = None
    for choice, side in sorted(forced.items()):
        status, what = openmpi.confirm(c, choice[0], n, side.ran, choice[2])
        if status == "fell back":
            d.candidates.append((choice, None, f"fell back: ran {what}"))
            continue
        common = len(set(side.rounds) & set(default.rounds))
        if common < stats.paired_min_rounds(each):
            # iterations of one run share its process's luck: only runs are independent
            # (three rounds of iterations called the default's own algorithm 1.4x faster)
            d.candidates.append((choice, None, f"{common} rounds: the run-level test at "
                                 f"{stats.percent(each)} needs {stats.paired_min_rounds(each)}"))
            continue
        v = stats.compare_rounds(side.rounds, default.rounds, each)
        d.candidates.append((choice, v, "" if status == "ran" else what))
        if v and v.word == "faster" and (best is None or v.interval.estimate < best[1].interval.estimate):
            best = (choice, v, side)
    if best:
        d.choice, d.verdict, d.chosen_us = best[0], best[1], median_of(best[2])
    return d


def decide(rows, level=stats.LEVEL):
    """[Decision] for every cell of the rows, ordered by collective, N, size."""
    cells = cells_of(rows)
    return [decide_cell(k, cells[k], level) for k in sorted(cells)]


def band_starts(sizes):
    """Where each measured size's band starts: 0, then the geometric middle between
    neighbours (a size between two measured ones takes the nearer on a log scale)."""
    return [0] + [math.isqrt(a * b) + 1 for a, b in zip(sizes, sizes[1:])]


def bands_of(decisions, algorithms):
    """[Band] of one (collective, N), adjacent bands with one choice merged."""
    decisions = sorted(decisions, key=lambda d: d.nbytes)
    bands = []
    for start, d in zip(band_starts([d.nbytes for d in decisions]), decisions):
        alg, fan, seg = d.choice
        if bands and (bands[-1].algorithm, bands[-1].faninout, bands[-1].segsize) == d.choice:
            bands[-1].evidence.extend(evidence(d, algorithms))
            continue
        bands.append(Band(start, alg, fan, seg, evidence(d, algorithms)))
    return bands


def choice_name(collective, choice, algorithms):
    alg, fan, seg = choice
    if not alg:
        return "default"
    name = algorithms.get(collective, {}).get(alg, f"algorithm {alg}")
    extra = (f", segments {seg} B" if seg else "") + (f", fan-out {fan}" if fan else "")
    return f"{name} ({alg}{extra})"


def evidence(d, algorithms):
    head = f"{d.collective} N={d.nranks} {d.nbytes} B: default ran {d.default_ran or '?'}"
    if d.verdict is None:
        return [f"{head}; kept (no algorithm faster beyond the noise)"]
    i = d.verdict.interval
    return [f"{head}; {choice_name(d.collective, d.choice, algorithms)} {d.chosen_us:.4g} us against "
            f"{d.default_us:.4g} us: time ratio {i.text()} ({d.verdict.method()})"]


def rules_of(decisions, algorithms):
    """{collective: {communicator size: [Band]}}: the measured N's bands, and the default at
    every N not measured (a communicator size just above a measured one and 1 below the
    smallest), for collectives with at least one rule."""
    by = {}
    for d in decisions:
        by.setdefault(d.collective, {}).setdefault(d.nranks, []).append(d)
    rules = {}
    for c, per_n in by.items():
        if all(d.choice == DEFAULT for ds in per_n.values() for d in ds):
            continue
        sizes = {n: bands_of(ds, algorithms) for n, ds in per_n.items()}
        for n in list(per_n):
            if n + 1 not in per_n:
                sizes[n + 1] = [Band(0, 0, 0, 0, [f"{c} N={n + 1}+: not measured, the default"])]
        if min(per_n) > 1:
            sizes[1] = [Band(0, 0, 0, 0, [f"{c} N<{min(per_n)}: not measured, the default"])]
        rules[c] = sizes
    return rules
