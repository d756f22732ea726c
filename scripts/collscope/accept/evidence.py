"""The evidence an acceptance run leaves (acceptance/README.md, "Output"); the GPU
classes' part is in gpu_evidence.py:

accept.h5   every launch's collscope results (pingpong and collective rows, -O), merged
            by scripts/merge, so scripts/report and any h5py reader open it as usual; plus
            a group /acceptance: the verdict, the launches, the compute probes and the
            retests (see the README for the layout);
report.md   the verdict, the blame, the tables and the heatmaps (PNG) beside it, the
            offending link, host or rank marked.
"""

import json
import os
import subprocess
import sys

import numpy as np

from .gpu_evidence import gpu_pictures, gpu_report, write_gpu_h5

from ..paths import SCRIPTS

MERGE = os.path.join(SCRIPTS, "merge")


class EvidenceError(Exception):
    pass


# ---- accept.h5 -----------------------------------------------------------------------------

def write_h5(path, results_files, verdict, got, runner, settings):
    import h5py
    screening, layout = got.screening, got.layout
    files = [f for f in results_files if os.path.exists(f)]
    if files:
        merged = subprocess.run([sys.executable, MERGE, "--force", path] + files, capture_output=True, text=True)
        if merged.returncode != 0:
            raise EvidenceError(f"scripts/merge failed: {merged.stderr.strip()}")
    elif screening.probes:
        raise EvidenceError("no launch left a results file")
    with h5py.File(path, "a") as f:   # without results files (only gpu_probe ran): /acceptance alone
        g = f.create_group("acceptance")
        g.attrs["format"] = "collscope acceptance"
        g.attrs["verdict"] = verdict["verdict"]
        g.attrs["verdict_json"] = json.dumps(verdict)
        g.attrs["settings_json"] = json.dumps(settings)
        g.attrs["launches_json"] = json.dumps(runner.launches)
        g.create_dataset("rank_hosts", data=np.array(layout.rank_hosts, dtype=h5py.string_dtype()))
        times = np.array([p["times_us"] for p in screening.probes], dtype=float)
        g.create_dataset("compute_times_us", data=times)   # [probe repeat][rank][iteration]
        for pattern, mats in screening.bandwidth.items():
            g.create_dataset(f"bw_gbps/{pattern}", data=np.array(mats, dtype=float))  # [repeat][a][b]
        g.create_dataset("latency_us", data=np.array(screening.latency, dtype=float))
        g.attrs["retests_json"] = json.dumps(verdict.get("retests", []))
        if got.gpus:
            write_gpu_h5(g, got.gpus, got.gpu_screening)


# ---- the pictures ----------------------------------------------------------------------------

def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def mark(ax, cells, color="red"):
    from matplotlib.patches import Rectangle
    for r, c in cells:
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor=color, linewidth=2.5))


def ratio_matrix(verdict, metric, n):
    """N x N of each pair's alone median / its class's median (NaN on the diagonal)."""
    m = np.full((n, n), np.nan)
    medians = {c: s.get(metric, {}).get("median") for c, s in verdict["classes"].items() if s.get("measured")}
    for link in verdict["links"]:
        a, b = link["ranks"]
        v, ref = link[metric]["alone_median"], medians.get(link["class"])
        if v is not None and ref:
            m[a][b] = m[b][a] = v / ref
    return m


def offending_cells(verdict, layout):
    """Rank pairs covered by a blame entry (a blamed host's, rank's or link's pairs)."""
    cells = set()
    for link in verdict["links"]:
        if link["verdict"] == "fail":
            a, b = link["ranks"]
            cells |= {(a, b), (b, a)}
    return cells


def rank_labels(layout):
    return [f"{r}\n{layout.host(r)}" for r in range(layout.n)]


def heatmap(plt, m, labels, title, cmap, vmin, vmax, cells, path, fmt="{:.2f}", colorbar="", log=False):
    from matplotlib.colors import LogNorm
    n = len(labels)
    fig, ax = plt.subplots(figsize=(max(5.5, 1.6 + 0.55 * n), max(4.0, 0.9 + 0.5 * n)))
    finite = m[np.isfinite(m) & (m > 0)]
    norm = LogNorm(vmin=finite.min(), vmax=finite.max()) if log and finite.size else None
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, norm=norm,
                   vmin=None if norm else vmin, vmax=None if norm else vmax)
    ax.set_xticks(range(n), labels, fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=7)
    if n <= 16:
        for i in range(n):
            for j in range(n):
                if not np.isnan(m[i][j]):
                    ax.text(j, i, fmt.format(m[i][j]), ha="center", va="center", fontsize=6)
    mark(ax, cells)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label=colorbar)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def host_matrix(verdict, layout):
    hosts = layout.hosts
    m = np.full((len(hosts), len(hosts)), np.nan)
    for h in verdict["hosts"]:
        v = h["intra-node"]["bandwidth"]["value"]
        i = hosts.index(h["host"])
        if v is not None:
            m[i][i] = v
    groups = {}
    for l in verdict["links"]:
        if l["class"] == "inter-node" and l["bandwidth"]["alone_median"] is not None:
            groups.setdefault(tuple(l["hosts"]), []).append(l["bandwidth"]["alone_median"])
    for (ha, hb), vals in groups.items():
        i, j = hosts.index(ha), hosts.index(hb)
        m[i][j] = m[j][i] = float(np.median(vals))
    return m


def blamed_host_cells(verdict, layout):
    hosts, cells = layout.hosts, set()
    for b in verdict["blame"]:
        where = b["where"].split(" (")[0]
        if b["kind"] == "host" and where in hosts:
            i = hosts.index(where)
            cells |= {(i, j) for j in range(len(hosts))} | {(j, i) for j in range(len(hosts))}
        elif b["kind"] == "link":
            names = (b["where"].split("(")[-1].rstrip(")") if "(" in b["where"] else where).split("-")
            if len(names) == 2 and all(h in hosts for h in names):
                i, j = hosts.index(names[0]), hosts.index(names[1])
                cells |= {(i, j), (j, i)}
            elif len(names) == 1 and names[0] in hosts:
                i = hosts.index(names[0])
                cells.add((i, i))
        elif b["kind"] == "rank":
            r = int(b["where"].split()[-1])
            i = hosts.index(layout.host(r))
            cells.add((i, i))
    return cells


def compute_chart(plt, verdict, path):
    ranks = verdict["ranks"]
    times = [r["compute"].get("time_us") or 0 for r in ranks]
    colors = ["tab:red" if r["compute"]["verdict"] == "fail" else
              "tab:orange" if r["compute"]["verdict"] == "inconclusive" else "tab:blue" for r in ranks]
    fig, ax = plt.subplots(figsize=(max(4, 0.5 * len(ranks) + 2), 3))
    ax.bar([f"{r['rank']}\n{r['host']}" for r in ranks], times, color=colors)
    med = ranks[0]["compute"].get("peer_median_us") if ranks else None
    if med:
        ax.axhline(med, color="black", linestyle="--", linewidth=1, label="median rank")
        ax.legend(fontsize=7)
    ax.set_ylabel("us per kernel (median)")
    ax.set_title("compute probe: host reducer, float sum (red: slow to compute)", fontsize=9)
    ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def make_pictures(verdict, got, out):
    plt = pyplot()
    made = []
    if got.gpus:
        made += gpu_pictures(plt, verdict, got.gpus, out, heatmap)
    if not verdict["links"]:   # the GPU classes alone
        return made
    layout = got.layout
    labels = rank_labels(layout)
    cells = offending_cells(verdict, layout)
    for metric, cmap, vmax in (("bandwidth", "RdYlGn", 1.25), ("latency", "RdYlGn_r", 3.0)):
        name = f"links_{metric}.png"
        heatmap(plt, ratio_matrix(verdict, metric, layout.n), labels,
                f"{metric} of each pair alone / its class's median\n(failing pairs boxed)", cmap,
                0 if metric == "bandwidth" else 0.5, vmax, cells, os.path.join(out, name),
                colorbar="x class median")
        made.append((name, f"{metric} per pair, relative to its class"))
    name = "hosts_bandwidth.png"
    heatmap(plt, host_matrix(verdict, layout), layout.hosts,
            "GB/s between hosts (median pair alone)\ndiagonal: within the host; blamed boxed",
            "viridis", None, None, blamed_host_cells(verdict, layout), os.path.join(out, name),
            fmt="{:.3g}", colorbar="GB/s (log scale)", log=True)
    made.append((name, "bandwidth per host pair (blamed host or link boxed)"))
    name = "compute.png"
    compute_chart(plt, verdict, os.path.join(out, name))
    made.append((name, "compute probe per rank"))
    return made


# ---- report.md ----------------------------------------------------------------------------------

def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}g}"


def peer_cell(p):
    if not p or p.get("verdict") == "not judged":
        return "-"
    if "of" not in p:   # no peer judgement, but a candidate's retest decided (README: verdict.json)
        return f"{p['verdict']} (retest)"
    return f"{fmt(p.get('ratio'), 3)} x ({p['bad']}/{p['of']}) {p['verdict']}"


def limit_cell(t):
    return "-" if not t else f"{fmt(t['limit'])} ({t['bad']}/{t['of']}) {t['verdict']}"


def link_rows(verdict, only_bad):
    rows = []
    for l in verdict["links"]:
        if only_bad and l["verdict"] == "pass":
            continue
        bw, lat = l["bandwidth"], l["latency"]
        rows.append([f"{l['ranks'][0]}-{l['ranks'][1]}", l["link"], l["class"], fmt(bw["alone_median"]),
                     peer_cell(bw["peers"]), limit_cell(bw["threshold"]), limit_cell(bw["baseline"]),
                     fmt(lat["alone_median"]), peer_cell(lat["peers"]), limit_cell(lat["threshold"]),
                     f"**{l['verdict']}**" if l["verdict"] != "pass" else "pass", l["explained_by"] or ""])
    return rows


def link_report(v):
    """The hosts, host links, ranks, links, collectives and their retests."""
    lines = ["## Hosts", "", md_table(
        ["host", "ranks", "inter bw GB/s", "inter peers", "inter threshold", "intra bw GB/s", "intra peers",
         "verdict", "explained by"],
        [[h["host"], " ".join(map(str, h["ranks"])), fmt(h["inter-node"]["bandwidth"]["value"]),
          peer_cell(h["inter-node"]["bandwidth"]["peers"]), limit_cell(h["inter-node"]["bandwidth"]["threshold"]),
          fmt(h["intra-node"]["bandwidth"]["value"]), peer_cell(h["intra-node"]["bandwidth"]["peers"]),
          h["verdict"], h["explained_by"] or ""] for h in v["hosts"]]), ""]
    lines += ["## Host links", "", md_table(
        ["link", "pairs", "bandwidth peers", "latency peers", "verdict", "explained by"],
        [[l["link"], len(l["pairs"]), peer_cell(l["bandwidth"]), peer_cell(l["latency"]), l["verdict"],
          l["explained_by"] or ""] for l in v["host_links"]]), ""]
    lines += ["## Ranks", "", md_table(
        ["rank", "host", "compute us", "compute peers", "inter bw peers", "verdict"],
        [[r["rank"], r["host"], fmt(r["compute"].get("time_us")),
          f"{fmt(r['compute'].get('ratio'), 3)} x ({r['compute'].get('bad')}/{r['compute'].get('of')}) "
          f"{r['compute']['verdict']}", peer_cell(r["bandwidth"]["inter-node"]), r["verdict"]]
         for r in v["ranks"]]), ""]
    header = ["pair", "link", "class", "bw GB/s", "bw peers", "bw threshold", "bw baseline", "lat us",
              "lat peers", "lat threshold", "verdict", "explained by"]
    bad = link_rows(v, True)
    lines += ["## Links that did not pass", "", md_table(header, bad) if bad else "None.", ""]
    lines += ["## Collectives", "", md_table(
        ["collective", "scope", "bytes", "busbw GB/s", "peers", "baseline", "verdict"],
        [[c["collective"], c["scope"], c["bytes"], fmt(c["busbw_gbps"]),
          "-" if c["ratio"] is None else f"{fmt(c['ratio'], 3)} x" + (
              f", again {fmt(c['retest']['ratio'], 3)} x {c['retest']['reference_host']}" if c.get("retest") else ""),
          limit_cell(c["baseline"]), c["verdict"]] for c in v["collectives"]]) if v["collectives"] else "None run.", ""]
    lines += ["## Retests", "", md_table(
        ["pair", "role", "metric", "result", "values", "limit"],
        [[f"{t['pair'][0]}-{t['pair'][1]}", t["role"], t["metric"], t["result"],
          " ".join(fmt(x, 3) for x in t["values"]), fmt(t["limit"])] for t in v["retests"]]) if v["retests"] else "None.", ""]
    lines += ["## Every link", "", md_table(header, link_rows(v, False)), ""]
    return lines


def write_report(path, verdict, layout, pictures, meta):
    v = verdict
    lines = [f"# Acceptance: **{v['verdict'].upper()}**", "",
             f"{meta['when']}, {meta['placement']}, {layout.n} ranks on {len(layout.hosts)} hosts, "
             f"{meta['seconds']:.0f} s, {meta['launches']} launches. Exit code {v['exit_code']}.", ""]
    lines += ["## Blame", ""]
    if v["blame"]:
        lines += [md_table(["kind", "where", "reason"],
                           [[b["kind"], f"**{b['where']}**", b["reason"]] for b in v["blame"]]), ""]
    else:
        lines += ["Nothing to blame." if v["verdict"] == "pass" else
                  "Nothing confirmed; see the inconclusive entries below (retest).", ""]
    lines += ["## Pictures", ""] + [f"![{t}]({n})" for n, t in pictures] + [""]
    if v.get("gpus") is not None:
        lines += gpu_report(v, md_table)
    lines += link_report(v) if v["links"] else ["## Links", "", "Not measured (measure.classes).", ""]
    lines += ["## How it was measured", "", "```", json.dumps(meta["settings"], indent=1), "```", "",
              "Method, statistics and the verdict's fields: acceptance/README.md. Every measurement: "
              "accept.h5 (`scripts/report accept.h5` reads it too).", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
