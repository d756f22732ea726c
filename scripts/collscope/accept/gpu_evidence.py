"""The GPU classes' evidence (acceptance/README.md, "GPU nodes"): their datasets in
accept.h5 (/acceptance/gpu), the GPU-to-GPU heatmap, and report.md's GPU sections.
"""

import json
import os

import numpy as np

FIGURES = ("d2d", "reduce", "h2d", "d2h", "bidir")
PCIE_FIELDS = ("generation", "max_generation", "width", "max_width")


# ---- accept.h5 --------------------------------------------------------------------------------

def probe_arrays(screening, n):
    """Per figure [repeat][rank] medians and [repeat][rank][call] values; the PCIe
    readings [repeat][rank][generation, max, width, max] (NaN where not measured)."""
    reps = len(screening.probes)
    calls = max([len(v[f]) for rec in screening.probes for v in rec["ranks"] if v for f in FIGURES] or [0])
    medians = {f: np.full((reps, n), np.nan) for f in FIGURES}
    each = {f: np.full((reps, n, calls), np.nan) for f in FIGURES}
    pcie = np.full((reps, n, len(PCIE_FIELDS)), np.nan)
    for i, rec in enumerate(screening.probes):
        for r, v in enumerate(rec["ranks"]):
            if not v:
                continue
            for f in FIGURES:
                medians[f][i][r] = np.median(v[f])
                each[f][i][r][:len(v[f])] = v[f]
            if v.get("pcie", {}).get("known"):
                pcie[i][r] = [v["pcie"][k] for k in PCIE_FIELDS]
    return medians, each, pcie


def ipc_array(per_host, ranks_of, n):
    """[repeat][a][b] over the run's ranks from the hosts' own matrices (NaN between hosts)."""
    reps = max((len(m) for m in per_host.values()), default=0)
    out = np.full((reps, n, n), np.nan)
    for host, mats in per_host.items():
        ranks = ranks_of[host]
        for i, m in enumerate(mats):
            for x, a in enumerate(ranks):
                for y, b in enumerate(ranks):
                    out[i][a][b] = m[x][y]
    return out


def write_gpu_h5(group, glayout, screening):
    g = group.create_group("gpu")
    g.attrs["gpus_json"] = json.dumps([{"rank": r, "host": glayout.rank_hosts[r], "where": glayout.where(r),
                                        "model": glayout.model(r), **glayout.info[r]} for r in range(glayout.n)])
    if screening.probes:
        medians, each, pcie = probe_arrays(screening, glayout.n)
        for f in FIGURES:
            g.create_dataset(f"figures_gbps/{f}", data=medians[f])   # [repeat][rank]
            g.create_dataset(f"calls_gbps/{f}", data=each[f])        # [repeat][rank][call]
        g.create_dataset("pcie", data=pcie)                          # [repeat][rank][4]
        g.attrs["pcie_fields"] = ",".join(PCIE_FIELDS)
    for pattern, hosts in screening.bandwidth.items():
        g.create_dataset(f"ipc_bw_gbps/{pattern}", data=ipc_array(hosts, screening.ranks, glayout.n))
    if screening.latency:
        g.create_dataset("ipc_latency_us", data=ipc_array(screening.latency, screening.ranks, glayout.n))
    g.attrs["nccl_json"] = json.dumps({f"{p} {s}": r for (p, s), r in screening.nccl.items()})


# ---- the heatmap ------------------------------------------------------------------------------

def gpu_matrix(verdict, glayout, metric):
    """GPU x GPU: the median ipc bandwidth or latency (each pair alone) of the rank pairs
    between two GPUs; the diagonal: between ranks sharing a GPU."""
    keys = glayout.keys
    where = [glayout.where_of(k) for k in keys]
    values = {}
    for p in verdict["device_pairs"]:
        v = p[metric]["alone_median"]
        if v is not None:
            i, j = sorted((where.index(p["gpus"][0]), where.index(p["gpus"][1])))
            values.setdefault((i, j), []).append(v)
    m = np.full((len(keys), len(keys)), np.nan)
    for (i, j), vals in values.items():
        m[i][j] = m[j][i] = float(np.median(vals))
    return m, where


def blamed_cells(verdict, where):
    cells = set()
    for b in verdict["blame"]:
        if b["kind"] == "gpu" and b["where"] in where:
            i = where.index(b["where"])
            cells |= {(i, j) for j in range(len(where))} | {(j, i) for j in range(len(where))}
    return cells


PICTURES = {  # metric: (file, title, colour map, colour bar)
    "bandwidth": ("gpus_ipc.png", "GB/s GPU to GPU over ipc (median pair alone)", "viridis", "GB/s (log scale)"),
    "latency": ("gpus_ipc_latency.png", "us GPU to GPU over ipc (median half round trip)", "viridis_r",
                "us (log scale)"),
}


def gpu_pictures(plt, verdict, glayout, out, heatmap):
    """The GPU-to-GPU heatmaps of ipc bandwidth and latency, where any pair was measured."""
    made = []
    for metric, (name, title, cmap, bar) in PICTURES.items():
        m, where = gpu_matrix(verdict, glayout, metric)
        if not np.isfinite(m).any():
            continue
        heatmap(plt, m, [glayout.short(k) for k in glayout.keys],
                f"{title}\ndiagonal: ranks sharing a GPU; blamed GPU boxed", cmap, None, None,
                blamed_cells(verdict, where), os.path.join(out, name), fmt="{:.3g}", colorbar=bar, log=True)
        made.append((name, f"ipc {metric} GPU to GPU (blamed GPU boxed)"))
    return made


# ---- report.md --------------------------------------------------------------------------------

def fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}g}"


def figure_cell(part):
    """value (x peer median, threshold verdict)."""
    if not part:
        return "-"
    peers = part.get("peers") or {}
    text = fmt(part.get("value"))
    if peers.get("verdict") not in (None, "not judged"):
        text += f" ({fmt(peers.get('ratio'), 3)} x, {peers['verdict']})"
    t = part.get("threshold") or {}
    if "verdict" in t:
        text += f" [spec >= {fmt(t['limit'])}: {t['verdict']}]"
    return text


def pcie_cell(link):
    if not link.get("known"):
        return f"- ({link.get('why', 'not measured')})"
    return (f"gen{link['generation']} x{link['width']} of gen{link['max_generation']} x{link['max_width']}"
            f" ({link['verdict']})")


def gpu_table(v):
    header = ["GPU", "model", "ranks", "d2d GB/s", "reduce GB/s", "h2d GB/s", "d2h GB/s", "both ways GB/s",
              "PCIe link", "ipc GB/s", "ipc us", "verdict"]
    rows = []
    for g in v["gpus"]:
        mem, hd, dd = g["gpu_memory"], g["host_device"], g["device_device"]
        rows.append([g["where"], g["model"], " ".join(map(str, g["ranks"])), figure_cell(mem.get("d2d")),
                     figure_cell(mem.get("reduce")), figure_cell(hd.get("h2d")), figure_cell(hd.get("d2h")),
                     figure_cell(hd.get("bidir")), pcie_cell(hd["pcie"]), figure_cell(dd.get("bandwidth")),
                     figure_cell(dd.get("latency")), f"**{g['verdict']}**" if g["verdict"] != "pass" else "pass"])
    return header, rows


def gpu_report(v, md_table):
    """report.md's GPU sections; md_table: evidence.py's table writer."""
    lines = ["## GPUs", "", f"Memory: {v['memory']['kind']} ({v['memory']['why']}).", ""]
    if not v["gpus"]:
        return lines
    header, rows = gpu_table(v)
    lines += [md_table(header, rows), ""]
    notes = [f"- {cls}: {c['note']}" for cls, c in v["classes"].items()
             if cls in ("gpu_memory", "host_device", "device_device", "nccl") and c.get("note")]
    notes += [f"- {cls}.{f}: {c[f][k]}" for cls, c in v["classes"].items()
              if cls in ("gpu_memory", "host_device", "device_device") for f in c
              if isinstance(c[f], dict) for k in ("note", "threshold_note") if k in c[f]]
    lines += notes + ([""] if notes else [])
    bad = [p for p in v["device_pairs"] if p["verdict"] != "pass"]
    lines += ["## GPU paths that did not pass", "", md_table(
        ["ranks", "GPUs", "ipc GB/s", "peers", "ipc us", "peers", "verdict", "explained by"],
        [[f"{p['ranks'][0]}-{p['ranks'][1]}", " / ".join(p["gpus"]), fmt(p["bandwidth"]["alone_median"]),
          p["bandwidth"]["peers"]["verdict"], fmt(p["latency"]["alone_median"]), p["latency"]["peers"]["verdict"],
          p["verdict"], p["explained_by"] or ""] for p in bad]) if bad else "None.", ""]
    lines += ["## NCCL", "", md_table(
        ["collective", "scope", "bytes", "busbw GB/s", "peers", "threshold", "verdict"],
        [[e["collective"], e["scope"], e.get("bytes") or "-", fmt(e.get("busbw_gbps")),
          "-" if e.get("ratio") is None else f"{fmt(e['ratio'], 3)} x",
          fmt((e.get("threshold") or {}).get("limit")), e.get("note") or e["verdict"]] for e in v["nccl"]])
        if v["nccl"] else "Not run.", ""]
    retests = v.get("gpu_retests") or []
    lines += ["## GPU retests", "", md_table(
        ["ranks", "role", "class", "metric", "result", "values", "limit"],
        [[" ".join(map(str, t["ranks"])), t["role"], t["class"], t["metric"], t["result"],
          " ".join(fmt(x, 3) for x in t["values"]), fmt(t["limit"])] for t in retests]) if retests else "None.", ""]
    return lines
