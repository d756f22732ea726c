"""The GPU classes in verdict.json (acceptance/README.md, "GPU nodes"): the per-GPU table
(`gpus`), the ipc paths (`device_pairs`), NCCL (`nccl`), the GPU retests, the classes'
summaries, and the blame: a GPU as `{kind: gpu, where: "host:index (UUID)", reason,
class}`, one ipc path as a link, a host whose NCCL is slow as a host.
"""

from .stats import FAIL, INCONCLUSIVE, NOT_JUDGED, PASS, median, worst
from .verdict import EXIT, STATE_VERDICT, BlameList, final_state, retests_said, rounded

UNITS = {"bandwidth": "GB/s", "latency": "us"}
WHAT = {"d2d": "device-to-device copy", "reduce": "reduce kernel", "h2d": "host-to-device copy",
        "d2h": "device-to-host copy", "bidir": "copies both ways at once",
        "bandwidth": "ipc bandwidth", "latency": "ipc latency"}
CLASS_FIGURES = {"gpu_memory": ("d2d", "reduce"), "host_device": ("h2d", "d2h", "bidir"),
                 "device_device": ("bandwidth", "latency")}


def unit(metric):
    return UNITS.get(metric, "GB/s")


# ---- the suspects as they stand ---------------------------------------------------------

class GpuFindings:
    """Every suspect with its final state, and which covers a rank or pair on a metric."""

    def __init__(self, gj):
        self.gj = gj
        self.states = [(s, final_state(s)) for s in gj.suspect_list]

    def of_rank(self, r, metric):
        return [(s, st) for s, st in self.states if s.kind == "gpu" and s.where == r and s.metric.name == metric]

    def of_pair(self, pair, metric):
        return [(s, st) for s, st in self.states if s.metric.name == metric and
                ((s.kind == "path" and s.where == pair) or (s.kind == "gpu" and s.where in pair))]


def peer_verdict(judged, covering):
    """A rank's or pair's peer verdict after the retests: its suspects' final state, or
    pass where the screening left it unsuspected."""
    if judged is None:
        return {"verdict": NOT_JUDGED}
    out = judged.summary()
    if covering:
        states = [st for _, st in covering]
        out["verdict"] = STATE_VERDICT["blame" if "blame" in states else
                                       "inconclusive" if "inconclusive" in states else "pass"]
    elif out["verdict"] != NOT_JUDGED:
        out["verdict"] = PASS
    return out


# ---- blame ----------------------------------------------------------------------------------

def describe(s):
    j = s.judged
    worse = "later" if s.metric.name == "latency" else "slower"
    whose = f"rank {s.where}'s" if s.kind == "gpu" else f"ranks {s.where[0]}-{s.where[1]}'s"
    return (f"{whose} {WHAT[s.metric.name]} {j.ratio:.2f} x its peers' median ({j.value:.4g} against "
            f"{j.peer_median:.4g} {unit(s.metric.name)}; {j.bad} of {j.total} repeats {worse} than the peer "
            f"tolerance allows)")


def retest_text(s):
    return retests_said(s, "retest", [f"{t['role']}: {t['result']}" for t in s.retests])


def mates_text(gj, r, metric):
    """Where several ranks share the GPU: how the others did on the same metric."""
    key = gj.g.key(r)
    others = [x for x in gj.g.ranks_of(key) if x != r]
    if not others:
        return ""
    judged = gj.figure_judged.get(metric) or gj.device_judged.get(metric, {}).get("ranks", {})
    verdicts = [(x, judged[x].verdict if x in judged else NOT_JUDGED) for x in others]
    return "; the other ranks on this GPU: " + ", ".join(f"rank {x} {v}" for x, v in verdicts)


def suspect_blames(gj, findings, blame):
    for s, state in findings.states:
        if state != "blame":
            continue
        if s.kind == "gpu":
            reason = f"{s.cls}: {describe(s)}{retest_text(s)}{mates_text(gj, s.where, s.metric.name)}"
            blame.add("gpu", gj.g.where(s.where), reason, s.metric.name, s.cls)
        else:
            a, b = s.where
            blame.add("link", f"ranks {a}-{b} ({gj.g.short(gj.g.key(a))}-{gj.g.short(gj.g.key(b))}, ipc)",
                      f"device_device: {describe(s)}{retest_text(s)}", s.metric.name, "device_device")


def pcie_blames(gj, blame):
    for key, link in gj.pcie.items():
        if link["verdict"] != FAIL:
            continue
        want = ""
        if link.get("spec_generation") or link.get("spec_width"):
            want = f", the spec's least gen{link.get('spec_generation') or '-'} x{link.get('spec_width') or '-'}"
        blame.add("gpu", gj.g.where_of(key),
                  f"host_device: PCIe link at gen{link['generation']} x{link['width']}, its maximum "
                  f"gen{link['max_generation']} x{link['max_width']}{want} ({link['bad']} of {link['of']} "
                  f"readings while busy below)", "pcie", "host_device")


def wrong_blames(gj, blame):
    for r, wrong in sorted(gj.wrong.items()):
        blame.add("gpu", gj.g.where(r), f"gpu_memory: {wrong} checks of rank {r}'s results failed "
                  "(the sum, or a copy there and back)", "result", "gpu_memory")


def threshold_blames(gj, blame):
    """Ranks below their model's figure that no blame explains yet: their GPU, with the
    figures (a spec above what the model does fails every GPU of it this way)."""
    failing = {}
    for (r, figure), t in sorted(gj.thresholds.items()):
        if t.get("verdict") == FAIL:
            failing.setdefault(gj.g.key(r), []).append((r, figure, t))
    for key, items in failing.items():
        where = gj.g.where_of(key)
        parts = []
        for r, figure, t in items:
            values = [row[r] for m in gj.figures if m.name == figure for row in m.table.values() if r in row]
            cls = gj.class_of(next(m for m in gj.figures if m.name == figure))
            parts.append(f"{cls}: rank {r}'s {WHAT[figure]} {median(values):.4g} GB/s, at least {t['limit']:.4g} "
                         f"expected for {gj.g.model(r)} ({t['bad']} of {t['of']} repeats below)")
        first_cls = gj.class_of(next(m for m in gj.figures if m.name == items[0][1]))
        blame.add("gpu", where, "beyond the spec's threshold: " + "; ".join(parts), items[0][1], first_cls)


def nccl_blames(gj, blame):
    for e in gj.nccl:
        if e["scope"] == "all" or e["verdict"] != FAIL:
            continue
        mine = [k for k in gj.g.keys if k[0] == e["scope"]]
        if any(blame.covers("gpu", gj.g.where_of(k)) for k in mine):
            continue
        detail = (f"busbw {e['ratio']:.2f} x the other hosts' median ({e['busbw_gbps']:.4g} against "
                  f"{e['peer_median']:.4g} GB/s)" if e.get("peers") == FAIL else
                  f"busbw {e['busbw_gbps']:.4g} GB/s, at least {e['threshold']['limit']:.4g} expected")
        blame.add("host", e["scope"], f"nccl: {e['collective']} within the host, {e['bytes']} B: {detail}",
                  "busbw", "nccl")


# ---- the tables ---------------------------------------------------------------------------------

def rank_median(metric, r):
    values = [row[r] for row in metric.table.values() if r in row]
    return median(values) if values else None


def figure_part(gj, findings, key, metric):
    """One figure of a GPU: the median of its ranks', each rank's, the worst rank's peer
    and threshold verdicts."""
    ranks = gj.g.ranks_of(key)
    per_rank = {r: rank_median(metric, r) for r in ranks}
    values = [v for v in per_rank.values() if v is not None]
    peers = {r: peer_verdict(gj.figure_judged[metric.name].get(r), findings.of_rank(r, metric.name)) for r in ranks}
    order = [FAIL, INCONCLUSIVE, PASS, NOT_JUDGED]
    worst_rank = min(ranks, key=lambda r: order.index(peers[r]["verdict"]))
    thresholds = {r: gj.thresholds.get((r, metric.name)) for r in ranks}
    judged_t = [t for t in thresholds.values() if t and "verdict" in t]
    threshold = (min(judged_t, key=lambda t: order.index(t["verdict"])) if judged_t
                 else next((t for t in thresholds.values() if t), None))
    return {"unit": "GB/s", "value": rounded(median(values)) if values else None,
            "ranks": {str(r): rounded(v) for r, v in per_rank.items()},
            "peers": dict(peers[worst_rank], rank=worst_rank), "threshold": threshold}


def device_part(gj, findings, key, metric):
    """The GPU's ipc paths on one metric: its ranks' scores (median of their pairs)."""
    ranks = gj.g.ranks_of(key)
    judged = gj.device_judged[metric.name]["ranks"]
    peers = {r: peer_verdict(judged.get(r), findings.of_rank(r, metric.name)) for r in ranks}
    order = [FAIL, INCONCLUSIVE, PASS, NOT_JUDGED]
    worst_rank = min(ranks, key=lambda r: order.index(peers[r]["verdict"]))
    values = [judged[r].value for r in ranks if r in judged]
    return {"unit": unit(metric.name), "value": rounded(median(values)) if values else None,
            "peers": dict(peers[worst_rank], rank=worst_rank)}


def part_verdicts(part):
    out = [part["peers"]["verdict"]]
    if part.get("threshold") and "verdict" in part["threshold"]:
        out.append(part["threshold"]["verdict"])
    return out


def gpu_entry(gj, findings, blame, key):
    g = gj.g
    first = g.ranks_of(key)[0]
    entry = {"where": g.where_of(key), "host": key[0], "index": g.info[first]["index"], "uuid": key[1],
             "model": g.model_of(key), "ranks": g.ranks_of(key), "emulated": bool(g.info[first].get("emulated")),
             "pci_bus_id": g.info[first].get("pci_bus_id")}
    verdicts = []
    for cls, figures in CLASS_FIGURES.items():
        metrics = gj.figures if cls != "device_device" else gj.device
        make = figure_part if cls != "device_device" else device_part
        part, mine = {}, []
        for m in metrics:
            if m.name in figures and m.table:
                part[m.name] = make(gj, findings, key, m)
                mine += part_verdicts(part[m.name])
        if cls == "host_device":
            part["pcie"] = gj.pcie[key]
            mine.append(gj.pcie[key]["verdict"])
        part["verdict"] = worst(mine)
        entry[cls] = part
        verdicts += mine
    blamed = blame.covers("gpu", entry["where"])
    entry["verdict"] = FAIL if blamed else worst(verdicts)
    entry["explained_by"] = f"gpu {entry['where']}" if blamed else None
    return entry


def pair_entry(gj, findings, blame, pair):
    g, (a, b) = gj.g, pair
    entry = {"ranks": [a, b], "gpus": [g.where(a), g.where(b)], "same_gpu": g.same_gpu(a, b),
             "host": g.rank_hosts[a]}
    verdicts = []
    for m in gj.device:
        keys = sorted(k for k in m.table if pair in m.table[k])
        by_pattern = {}
        for pattern, _ in keys:
            by_pattern.setdefault(pattern, [])
        for k in keys:
            by_pattern[k[0]].append(rounded(m.table[k][pair]))
        alone = [m.table[k][pair] for k in keys if k[0] in ("pairs", "latency")]
        peers = peer_verdict(gj.device_judged[m.name]["pairs"].get(pair), findings.of_pair(pair, m.name))
        threshold = gj.pair_limits.get((pair, m.name))
        entry[m.name] = {"unit": unit(m.name), "alone_median": rounded(median(alone)) if alone else None,
                         "by_pattern": by_pattern, "peers": peers, "threshold": threshold}
        verdicts += [peers["verdict"]] + ([threshold["verdict"]] if threshold and "verdict" in threshold else [])
    entry["verdict"] = worst(verdicts)
    ends = [w for w in entry["gpus"] if blame.covers("gpu", w)]
    entry["explained_by"] = f"gpu {ends[0]}" if entry["verdict"] == FAIL and ends else None
    return entry


# ---- the classes --------------------------------------------------------------------------------

def class_summary(gj, gpus, cls):
    mine = [g[cls] for g in gpus]
    out = {"measured": True, "gpus": len(gpus),
           "verdicts": {v: sum(1 for p in mine if p["verdict"] == v) for v in (PASS, FAIL, INCONCLUSIVE)}}
    for figure in CLASS_FIGURES[cls]:
        parts = [p[figure] for p in mine if figure in p]
        if not parts:
            continue
        values = [p["value"] for p in parts if p["value"] is not None]
        below = [p for p in parts if (p.get("threshold") or {}).get("verdict") == FAIL]
        outliers = [p for p in parts if p["peers"]["verdict"] == FAIL]
        out[figure] = {"unit": parts[0]["unit"], "median": rounded(median(values)) if values else None,
                       "failing_limit": len(below), "peer_outliers": len(outliers)}
        notes = {p["threshold"]["note"] for p in parts if p.get("threshold") and "note" in p["threshold"]}
        if notes:
            out[figure]["threshold_note"] = "; ".join(sorted(notes))
        if below and len(below) == len(parts) and not outliers:
            out[figure]["note"] = ("every GPU is beyond the spec's figure and none is an outlier among its "
                                   "peers: the model as a whole misses the spec (or the spec asks too much)")
    return out


def classes(gj, gpus, measured):
    out = {}
    for cls in ("gpu_memory", "host_device", "device_device"):
        if cls not in measured:
            out[cls] = {"measured": False, "note": "not measured: not in measure.classes"}
        elif cls == "device_device" and not gj.pairs:
            out[cls] = {"measured": False, "note": "not measured: no host has two ranks"}
        else:
            out[cls] = class_summary(gj, gpus, cls)
    done = [e for e in gj.nccl if e["measured"]]
    if "nccl" not in measured:
        out["nccl"] = {"measured": False, "note": "not measured: not in measure.classes"}
    elif not done:
        notes = sorted({e["note"] for e in gj.nccl}) or ["not measured: no launch"]
        out["nccl"] = {"measured": False, "note": "; ".join(notes)}
    else:
        out["nccl"] = {"measured": True, "runs": len(done),
                       "verdicts": {v: sum(1 for e in done if e["verdict"] == v) for v in (PASS, FAIL, INCONCLUSIVE)}}
    return out


def not_measured(verdict, why):
    """The GPU classes of a run that measured none of them (host memory)."""
    for cls in ("gpu_memory", "host_device", "device_device", "nccl"):
        verdict["classes"][cls] = {"measured": False, "note": f"not measured: {why}"}
    verdict.update(memory={"kind": "host", "why": why}, gpus=[], device_pairs=[], nccl=[], gpu_retests=[])


# ---- into the verdict ---------------------------------------------------------------------------

def extend(verdict, gj, measured, memory_note):
    """Adds the GPU classes' findings to the links' verdict, its blame and its outcome."""
    findings = GpuFindings(gj)
    blame = BlameList()
    for b in verdict["blame"]:
        blame.entries[(b["kind"], b["where"])] = b
    wrong_blames(gj, blame)
    suspect_blames(gj, findings, blame)
    pcie_blames(gj, blame)
    threshold_blames(gj, blame)
    nccl_blames(gj, blame)
    gpus = [gpu_entry(gj, findings, blame, key) for key in gj.g.keys]
    pairs = [pair_entry(gj, findings, blame, p) for p in gj.pairs]
    verdict.update(blame=blame.list(), gpus=gpus, device_pairs=pairs, nccl=gj.nccl, gpu_retests=gj.log)
    verdict["classes"].update(classes(gj, gpus, measured))
    verdict["memory"] = {"kind": "device", "why": memory_note, "runtime": "emulated" if gj.g.emulated else "cuda",
                         "shared_gpus": [gj.g.where_of(k) for k in gj.g.shared()]}
    if verdict["blame"]:
        overall = FAIL
    else:
        overall = worst([verdict["verdict"]] + [g["verdict"] for g in gpus] + [p["verdict"] for p in pairs]
                        + [e["verdict"] for e in gj.nccl])
        overall = PASS if overall == NOT_JUDGED else overall
    verdict["verdict"], verdict["exit_code"] = overall, EXIT[overall]
