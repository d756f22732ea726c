"""volume.md: per row the bytes and messages measured against the exact theory, rank by rank,
each traffic matrix against its rank totals (a difference is a MISMATCH: exit 4), and the
vendor rows the MPI library counted, with their matrices and the hand-written algorithm
their traffic identifies."""

import numpy as np

from collscope.report.formatting import algo_label, human_bytes, md_table, variant
from collscope.report.load import VOLUME_KEYS

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
