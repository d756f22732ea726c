"""layers.md: the layer pipelines' rows (/layer), per run the time split into compute,
communication, exposed and hidden communication, the GEMM rate and the busiest rank's bytes
beside the textbook figure; then the schemes side by side where they compute the same
thing, fastest first, and each layer with and without --overlap."""

import math

from collscope import noise
from collscope import stats
from collscope.report.formatting import md_table
from collscope.report.load import SHARING_LABELS

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
    sharing = SHARING_LABELS.get(row.get("gpu_sharing") or "")
    return memory if memory == "host" else f"{memory} ({row.get('path', '')}" + \
        (f", {row['gpu']}" if row.get("gpu") else "") + (f", {sharing}" if sharing else "") + ")"


def ms(us):
    return "n/a" if us is None or (isinstance(us, float) and math.isnan(us)) else f"{us / 1e3:.3f}"


def layer_cells(row):
    comm, hidden = row["comm_us"], row.get("hidden_comm_us")
    share = f"{100 * hidden / comm:.0f} %" if hidden is not None and comm > 0 else "n/a"
    rate = row.get("gemm_tflops")
    exact, book = row.get("textbook_exact_sent_bytes"), row.get("textbook_bytes")
    ratio = row.get("textbook_exact_over_formula")
    return [ms(row["time_us"]) + noise.mark(row), ms(row["compute_us"]), ms(comm),
            ms(row.get("exposed_comm_us")),
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
        lines.append(md_table(["variant", "against the fastest"] + LAYER_HEADER,
                          [[layer_variant(r) + (" (fastest)" if r is ordered[0] else ""),
                            against_fastest(r, ordered[0])] + layer_cells(r) for r in ordered],
                          ["l", "l"] + ["r"] * (len(LAYER_HEADER) - 1) + ["l"]))
    return lines


def against_fastest(row, fastest_row):
    """A scheme's time over the fastest one's with its interval, beyond the noise or a tie
    (the two rows' iterations; docs/statistics.md)."""
    if row is fastest_row:
        return "—"
    v = stats.compare_rounds({row["round"]: noise.samples_of(row)},
                             {row["round"]: noise.samples_of(fastest_row)})
    if v is None:
        return "no iterations"
    return v.text() if v.word != "faster" else v.interval.text()


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
