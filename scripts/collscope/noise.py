"""scripts/report's reading of how far its time figures can be trusted (docs/statistics.md):
each row's spread (schema 5 files carry it; for older ones it is computed here from
times_us, and the report says so), the rounds a sweep was repeated in, a run-wide shift
across them (this VM's two states: a whole run 2-4x slower), the machine under the run
(/runs, schema 5) and the per-(size, algorithm) samples the advisor's verdicts compare.
The page it writes is noise.md.
"""
import math
import re
import statistics

from collscope import stats

# The row columns of schema 5 (results/SCHEMA.md); a file without them gets them computed.
SPREAD_FIELDS = ("time_us_p25", "time_us_p75", "time_spread", "noisy", "noise_threshold")
MACHINE_FIELDS = ("host_cores", "oversubscribed", "load_avg_1m", "cpu_governor",
                  "busy_processes", "machine_warnings")
SHIFT_MIN_BYTES = 32 * 1024   # the slow state shows from about 32 KiB up (docs/timing.md)
SHIFT_FACTOR = 1.5            # a run this much slower than its cells' fastest round: slow


def present(value):
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def samples_of(row):
    """The row's per-iteration times as a list (the pool slice; empty when none)."""
    times = row.get("times_us")
    return [float(t) for t in times if t > 0] if times is not None else []


def annotate(rows):
    """Gives every row p25, p75, spread (None: too few samples), noisy, noise_threshold
    and round (-1: none); from the row's own columns where the file has them, else
    computed from times_us. Returns how many rows had them computed."""
    computed = 0
    for r in rows:
        r["round"] = int(r["round"]) if present(r.get("round")) else -1
        if all(k in r for k in SPREAD_FIELDS):
            spread = r["time_spread"] if present(r["time_spread"]) else None
            r.update(p25=r["time_us_p25"], p75=r["time_us_p75"], spread=spread,
                     noisy=bool(r["noisy"]), noise_threshold=r["noise_threshold"])
            continue
        computed += 1
        times = samples_of(r)
        p25, _, p75 = stats.quartiles(times) if times else (math.nan, math.nan, math.nan)
        spread = stats.relative_spread(times)
        r.update(p25=p25, p75=p75, spread=spread, noise_threshold=stats.NOISE_THRESHOLD,
                 noisy=spread is not None and spread > stats.NOISE_THRESHOLD)
    return computed


def reflag(rows, threshold):
    """Flags the rows noisy against `threshold` instead of their own (report
    --noise-threshold)."""
    for r in rows:
        r["noise_threshold"] = threshold
        r["noisy"] = r.get("spread") is not None and r["spread"] > threshold


def family(r):
    """The runs of one binary: collective, algorithm, transport, memory, N."""
    return (r["collective"], r["algorithm"], r.get("medium", r["transport"]), r["nranks"])


def infer_rounds(rows, excluded=lambda row: False):
    """Gives every collective row its `replicate`: its round, or for a row without one
    (a build before rows had rounds, scripts/quickstart's rounds among them) its run's
    place among the runs of the same binary, by run id: the k-th run of each binary is
    round k's when a sweep ran every binary once per round. Rows `excluded` says to
    leave out (the vendor's counting pass) keep -1. Returns how many binaries had
    several runs so ordered (0: nothing inferred)."""
    runs = {}
    for r in rows:
        if r["round"] < 0 and not excluded(r):
            runs.setdefault(family(r), set()).add(r["run_id"])
    place = {f: {run: i for i, run in enumerate(sorted(ids))} for f, ids in runs.items()}
    for r in rows:
        known = r["round"] >= 0 or excluded(r)
        r["replicate"] = r["round"] if known else place[family(r)][r["run_id"]]
    return sum(1 for ids in runs.values() if len(ids) > 1)


def mark(row):
    """' (noisy)' after a noisy row's time, else ''."""
    return " (noisy)" if row.get("noisy") else ""


# ---- the samples a verdict compares ----------------------------------------------------------

def cell_rounds(rows, excluded=lambda row: False):
    """{bytes: {algorithm: {round: [times]}}}: every row's iterations under its round
    (rows without a round share round -1). Where an algorithm has, at one size, rows
    that `excluded` says to leave out and rows it keeps, the kept ones alone count (the
    advisor leaves out rows timed under the library's monitoring)."""
    by_cell = {}
    for r in rows:
        times = samples_of(r) or ([r["time_us"]] if present(r["time_us"]) and r["time_us"] > 0 else [])
        if times:
            by_cell.setdefault((r["bytes"], r["algorithm"]), []).append(
                (excluded(r), r.get("replicate", r["round"]), times))
    out = {}
    for (b, a), entries in by_cell.items():
        kept = [e for e in entries if not e[0]] or entries
        rounds = {}
        for _, k, times in kept:
            rounds.setdefault(k, []).extend(times)
        out.setdefault(b, {})[a] = rounds
    return out


# ---- rounds and a run-wide shift ---------------------------------------------------------------

def rounds_in(rows):
    return sorted({r.get("replicate", r["round"]) for r in rows
                   if r.get("replicate", r["round"]) >= 0})


def cell_key(r):
    return (r["collective"], r["algorithm"], r.get("medium", r["transport"]), r["nranks"],
            r["bytes"], r["dtype"], r["op"])


def shifted_cells(rows):
    """[(run_id, round, factor)]: per large cell seen in two rounds or more, how many
    times its fastest round's median each round's row took."""
    cells = {}
    for r in rows:
        k = r.get("replicate", r["round"])
        if k >= 0 and r["bytes"] >= SHIFT_MIN_BYTES and present(r["time_us"]):
            cells.setdefault(cell_key(r), []).append((k, r))
    out = []
    for group in cells.values():
        if len({k for k, _ in group}) < 2:
            continue
        fastest = min(r["time_us"] for _, r in group)
        if fastest > 0:
            out += [(r["run_id"], k, r["time_us"] / fastest, r) for k, r in group]
    return out


def run_wide_shift(rows):
    """{"cells": large cells measured in two rounds or more, "slow": [(label, round,
    median factor, cells)] of the runs whose large cells took SHIFT_FACTOR or more times
    their fastest round, in median}."""
    per_run = {}
    for run_id, k, factor, row in shifted_cells(rows):
        per_run.setdefault((run_id, k), {"factors": [], "row": row})["factors"].append(factor)
    slow = []
    for (run_id, k), entry in sorted(per_run.items(), key=lambda kv: (kv[0][1], str(kv[0][0]))):
        factor = statistics.median(entry["factors"])
        if factor >= SHIFT_FACTOR:
            r = entry["row"]
            slow.append((f"{r['collective']}_{r['algorithm']} ({r.get('medium', r['transport'])}, "
                         f"N = {r['nranks']})", k, factor, len(entry["factors"])))
    return {"runs": len(per_run), "slow": slow}


def shift_lines(rows):
    """The rounds paragraph of noise.md."""
    rounds = rounds_in(rows)
    if len(rounds) < 2:
        which = (f"One round ({rounds[0]})" if rounds else
                 "No rounds (the rows carry none: made without rounds, or before rows had them)")
        return [f"{which}: a run-wide shift of the machine cannot be told from a difference "
                "between algorithms. Repeat the sweep in rounds (scripts/quickstart with "
                "ROUNDS=2 or more, scripts/sweep --rounds R)."]
    shift = run_wide_shift(rows)
    inferred = any(r["round"] < 0 <= r.get("replicate", -1) for r in rows)
    carried = ("the rows carry no round: each binary's k-th run is taken as round k's, in "
               "run order (the sweep ran every binary once per round)" if inferred else
               "every row carries its round")
    head = (f"{len(rounds)} rounds ({', '.join(map(str, rounds))}); {carried}, and the advisor "
            f"compares algorithms round by round (docs/statistics.md).")
    if not shift["slow"]:
        return [head, "", f"No run-wide shift: none of the {shift['runs']} runs with cells from "
                f"32 KiB up in two rounds or more took {SHIFT_FACTOR}x its cells' fastest "
                "round, in median."]
    factors = [f for _, _, f, _ in shift["slow"]]
    named = "; ".join(f"{label} round {k}: {f:.2f}x over {n} cells"
                      for label, k, f, n in shift["slow"][:12])
    more = len(shift["slow"]) - 12
    return [head, "", f"**Run-wide shift**: {len(shift['slow'])} of {shift['runs']} runs ran in "
            f"a slow state: their cells from 32 KiB up took {min(factors):.2f}x – "
            f"{max(factors):.2f}x the same cells' fastest round, in median ({named}"
            f"{f'; +{more} more' if more > 0 else ''}). A difference in those rounds alone "
            "is the machine's, not the algorithms': the advisor declares one only where "
            "every round finds it."]


# ---- the machine under the run (/runs, schema 5) -----------------------------------------------

def machine_lines(runs, table):
    """The machine paragraph and table of noise.md; `table(header, rows, align)` makes a
    Markdown table."""
    runs = [r for r in runs if r.get("run_id", 0) >= 0]
    if not runs or not all(k in runs[0] for k in MACHINE_FIELDS):
        return ["The file predates the machine fields (schema 4 or older): nothing says how "
                "many cores the runs had, the load beside them or the CPU frequency governor. "
                "Runs of this build record them in /runs (results/SCHEMA.md)."]
    warnings = {}   # kind: [the first warning of that kind, the programs of its runs]
    for r in runs:
        for w in warning_lines(r["machine_warnings"]):
            warnings.setdefault(warning_kind(w), [w, []])[1].append(r["program"])
    cores = sorted({int(r["host_cores"]) for r in runs})
    loads = [float(r["load_avg_1m"]) for r in runs if present(float(r["load_avg_1m"]))]
    load = f"{min(loads):.2f} – {max(loads):.2f}" if loads else "unreadable"
    governors = sorted({r["cpu_governor"] or "unreadable" for r in runs})
    over = sum(bool(r["oversubscribed"]) for r in runs)
    lines = [f"{len(runs)} runs on {', '.join(map(str, cores))} cores; load average (1 min) at "
             f"their start {load}; CPU frequency governor {', '.join(governors)}; {over} "
             "run(s) with more ranks than cores.", ""]
    if not warnings:
        return lines + ["No machine warning: nothing at the start of any run said its figures "
                        "could not be trusted."]
    body = [[w, len(progs), ", ".join(sorted(set(progs))[:6]) +
             (" ..." if len(set(progs)) > 6 else "")]
            for w, progs in sorted(warnings.values(), key=lambda e: -len(e[1]))]
    busy = sorted({r["busy_processes"] for r in runs if r["busy_processes"]})
    lines += ["**Machine warnings** (each run's, at its start; one line per kind, its first "
              "occurrence shown): a figure of those runs may be the machine's, not the "
              "algorithm's.", "", table(["warning (the first of its kind)", "runs", "programs"],
                                       body, "lrl")]
    if busy:
        lines += ["", "Other processes busy at the start of a run (first few): " +
                  "; ".join(busy[:3])]
    return lines


def warning_kind(text):
    """A warning with its figures and parenthesised details left out: the load average's
    warnings of two runs are of one kind whatever their loads."""
    return re.sub(r"\([^)]*\)|\d+(\.\d+)?", "#", text)


def warning_lines(text):
    """A run's machine_warnings (one line each, joined by newlines) as a list."""
    return [w.strip() for w in (text or "").split("\n") if w.strip()]


# ---- noise.md -----------------------------------------------------------------------------------

def noisy_rows_lines(results, computed, table, size_text):
    groups = [("collective", r) for r in results["collective"]] + \
        [("pingpong", r) for r in results["pingpong"]] + [("layer", r) for r in results["layer"]]
    rows = [(g, r) for g, r in groups if r.get("p25") is not None]
    noisy = [(g, r) for g, r in rows if r["noisy"]]
    thresholds = sorted({r["noise_threshold"] for _, r in rows})
    lines = [f"Spread: (p75 - p25) / median of a row's iterations; a row is *noisy* above the "
             f"threshold ({', '.join(f'{t:g}' for t in thresholds) or stats.NOISE_THRESHOLD}; "
             "the binaries' --noise-threshold, or scripts/report's), and rows with fewer than "
             f"{stats.SPREAD_MIN_SAMPLES} iterations have no spread. "
             f"**{len(noisy)} of {len(rows)} rows are noisy.**"]
    if computed:
        lines += ["", f"This file's rows do not carry their spread (made before schema 5): "
                  f"it was computed here from times_us for {computed} rows."]
    if not noisy:
        return lines
    body = [[g, r["index"], r.get("collective") or r.get("program"), r.get("algorithm") or
             r.get("scheme", ""), r["nranks"], size_text(r["bytes"]) if "bytes" in r else "—", r["round"],
             f"{r['time_us']:.3g}", f"{r['p25']:.3g}", f"{r['p75']:.3g}",
             f"{r['spread']:.2f}"] for g, r in noisy]
    return lines + ["", table(["table", "#", "collective", "algorithm", "N", "size", "round",
                               "median (us)", "p25", "p75", "spread"], body, "lrllrrrrrrr")]


def noise_markdown(results, computed, table, size_text):
    """noise.md: the machine, the rounds, the noisy rows and how verdicts are made."""
    rows = results["collective"]
    return "\n".join(
        ["# Noise: the machine, the rounds, the rows' spread", "",
         "How far to trust the time figures of this file. The advisor and the time model "
         "declare a difference only where it stands out of the noise by the test of "
         "docs/statistics.md (a rank-based interval of the ratio at "
         f"{stats.LEVEL:.0%}), else a tie (within noise).", "",
         "## The machine under the run", "", *machine_lines(results["runs"], table), "",
         "## Rounds", "", *shift_lines(rows), "",
         "## Noisy rows", "", *noisy_rows_lines(results, computed, table, size_text), ""])


def summary_line(results):
    """report.md's one line on noise."""
    rows = [r for g in ("collective", "pingpong", "layer") for r in results[g]]
    noisy = sum(1 for r in rows if r.get("noisy"))
    rounds = rounds_in(results["collective"])
    runs = [r for r in results["runs"] if "machine_warnings" in r]
    warned = sum(1 for r in runs if r["machine_warnings"])
    machine = (f"{warned} of {len(runs)} runs with a machine warning" if runs
               else "no machine record (schema 4 or older)")
    slow = run_wide_shift(results["collective"])["slow"] if len(rounds) > 1 else []
    computed = " (spread computed from times_us)" if results.get("spread_computed") else ""
    shifted = f", {len(slow)} run(s) in a slow state" if slow else ""
    return (f"- noise: {noisy} of {len(rows)} rows noisy{computed}; {len(rounds) or 'no'} "
            f"round(s){shifted}; {machine} ([noise.md](noise.md))")
