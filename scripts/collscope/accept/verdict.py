"""verdict.json from the judge's findings (acceptance/README.md, "verdict.json").

What a candidate means once narrowed:
  confirmed, moved (to the unit the retests point at)   -> blamed: what it covers fails
  unconfirmed (no budget, no known-good peer)           -> blamed if the screening failed it,
                                                           inconclusive if it did not
  cleared (the retest found it fine)                    -> pass if the screening was only
                                                           inconclusive, else inconclusive
  unclear                                               -> inconclusive
"""

from .stats import FAIL, INCONCLUSIVE, NOT_JUDGED, PASS, median, worst

SCHEMA, SCHEMA_VERSION = "collscope acceptance verdict", 2
EXIT = {PASS: 0, FAIL: 1, INCONCLUSIVE: 4, NOT_JUDGED: 0}
UNITS = {"bandwidth": "GB/s", "latency": "us"}
STATE_VERDICT = {"blame": FAIL, "inconclusive": INCONCLUSIVE, "pass": PASS}


def rounded(x, digits=6):
    return None if x is None else float(f"{x:.{digits}g}")


def final_state(c):
    if c.outcome in ("confirmed", "moved"):
        return "blame"
    if c.outcome == "unconfirmed":
        return "blame" if c.judged.verdict == FAIL else "inconclusive"
    if c.outcome == "cleared":
        return "pass" if c.judged.verdict == INCONCLUSIVE else "inconclusive"
    return "inconclusive"


def unit_of(c):
    """The candidate as it stands after narrowing (a moved one: where it moved)."""
    return c.moved_to if c.outcome == "moved" else c


class Findings:
    """The candidates after narrowing, and which of them covers a pair, host or rank."""

    def __init__(self, judge):
        self.judge = judge
        self.units = [(unit_of(c), final_state(c), c) for c in judge.candidate_list]

    def covering_pair(self, pair):
        found = []
        for unit, state, origin in self.units:
            if self.judge.explained(pair, [unit]) is not None:
                found.append((unit, state, origin))
        return found

    def of_kind(self, kind, where, cls=None):
        return [(u, s, o) for u, s, o in self.units
                if u.kind == kind and u.where == where and (cls is None or u.cls == cls)]


def blame_name(unit, layout):
    if unit.kind == "pair":
        a, b = unit.where
        return "link", f"ranks {a}-{b} ({layout.host_link(a, b)})"
    if unit.kind in ("rank", "compute"):
        return "rank", f"rank {unit.where}"
    return unit.kind, unit.where


def explanation(unit, layout):
    """What explains a pair's failure, as blame names it: "host h2", "rank 5", "link h1-h2"."""
    kind, where = blame_name(unit, layout)
    return where if kind == "rank" else f"{kind} {where}"


def describe_judged(unit):
    j = unit.judged
    metric = unit.metric.name
    unit_text = UNITS.get(metric, "")
    worse = "slower" if metric == "bandwidth" else "later"
    return (f"{unit.cls} {metric} {j.ratio:.2f} x its peers' median "
            f"({j.value:.4g} against {j.peer_median:.4g} {unit_text}; {j.bad} of {j.total} "
            f"repeats {worse} than the peer tolerance allows)")


def retests_said(finding, label, parts):
    """'; LABEL: part, part[; note]', or '; not retested (note)' where nothing was retested:
    the retests' words of a link's, host's or rank's reason and of a GPU's (gpu_verdict)."""
    if not finding.retests:
        return f"; not retested ({finding.note})" if finding.note else ""
    return f"; {label}: " + ", ".join(parts) + (f"; {finding.note}" if finding.note else "")


def retest_text(origin):
    refs = [t for t in origin.retests if t["result"] == "reference"]
    parts = [f"{t['role']} {t['pair'][0]}-{t['pair'][1]}: {t['result']}" for t in origin.retests
             if t["result"] != "reference"]
    against = f" (beside known-good pair {refs[0]['pair'][0]}-{refs[0]['pair'][1]})" if refs else ""
    return retests_said(origin, f"retest alone{against}", parts)


def candidate_reason(unit, origin):
    what = {"host": "every rank of the host", "rank": "the rank's pairs",
            "link": "the pairs over this link", "pair": "this pair"}[unit.kind]
    if unit.kind == "rank" and unit.every_class:
        what = "every pair of the rank, within its host too (its process or CPU, not a network link)"
    text = f"{what}: {describe_judged(origin)}"
    if unit is not origin:
        text = f"screened as {origin.kind} {origin.name()}: {describe_judged(origin)}"
    return text + retest_text(origin)


class BlameList:
    def __init__(self):
        self.entries = {}

    def add(self, kind, where, reason, metric=None, cls=None):
        key = (kind, where)
        if key in self.entries:
            e = self.entries[key]
            if reason not in e["reason"]:
                e["reason"] += "; " + reason
            e["metrics"] = sorted(set(e["metrics"]) | ({metric} if metric else set()))
            return
        self.entries[key] = {"kind": kind, "where": where, "reason": reason,
                             "metrics": [metric] if metric else [], "class": cls}

    def covers(self, kind, where):
        return (kind, where) in self.entries

    def list(self):
        order = {"host": 0, "rank": 1, "link": 2, "gpu": 3}
        return sorted(self.entries.values(), key=lambda e: (order[e["kind"]], e["where"]))


# ---- per pair -----------------------------------------------------------------------------

def pair_figures(judge, pair, metric):
    keys = sorted(k for k in metric.table if pair in metric.table[k])
    by_pattern = {}
    for pattern, repeat in keys:
        by_pattern.setdefault(pattern, []).append(rounded(metric.table[(pattern, repeat)][pair]))
    alone = judge.alone_values(metric, pair)
    return {"unit": UNITS[metric.name], "alone_median": rounded(median(alone)) if alone else None,
            "by_pattern": by_pattern}


def pair_entry(judge, findings, pair):
    layout = judge.layout
    a, b = pair
    cls = layout.link_class(a, b)
    entry = {"ranks": [a, b], "hosts": [layout.host(a), layout.host(b)], "link": layout.host_link(a, b),
             "class": cls, "key": judge.pair_key(a, b)}
    verdicts, explained = [], None
    for metric in judge.metrics:
        fig = pair_figures(judge, pair, metric)
        j = judge.judged[metric.name].get(("pairs", cls), {}).get(pair)
        peer = j.summary() if j else {"verdict": NOT_JUDGED}
        covering = [(u, s, o) for u, s, o in findings.covering_pair(pair) if u.metric is metric]
        if covering:
            unit, state, origin = max(covering, key=lambda x: ["pass", "inconclusive", "blame"].index(x[1]))
            peer["verdict"] = STATE_VERDICT[state]
            if state == "blame" and unit.kind != "pair":
                explained = explanation(unit, layout)
        elif peer["verdict"] != NOT_JUDGED:
            peer["verdict"] = PASS   # every suspect pair is some candidate's
        fig["peers"] = peer
        fig["threshold"] = judge.thresholds.get(pair, {}).get(metric.name)
        fig["baseline"] = judge.baselines.get(pair, {}).get(metric.name)
        entry[metric.name] = fig
        verdicts += [peer["verdict"]] + [x["verdict"] for x in (fig["threshold"], fig["baseline"]) if x]
    for p in judge.problems:
        if p.get("first_bad_pair") and sorted(p["first_bad_pair"]) == [a, b]:
            verdicts.append(FAIL)
            entry["payload"] = "arrived changed"
    entry["verdict"] = worst(verdicts)
    entry["explained_by"] = explained
    return entry


# ---- blame ----------------------------------------------------------------------------------

def candidate_blames(judge, findings, blame):
    for unit, state, origin in findings.units:
        if state != "blame":
            continue
        kind, where = blame_name(unit, judge.layout)
        blame.add(kind, where, candidate_reason(unit, origin), unit.metric.name, unit.cls)


def compute_blames(judge, blame, links):
    for r, j in sorted(judge.compute.items()):
        if j.verdict != FAIL:
            continue
        mine = [l for l in links if r in l["ranks"]]
        slow_links = [l for l in mine if l["verdict"] == FAIL]
        tail = ("its links pass: slow to compute, not a slow link" if not slow_links
                else f"{len(slow_links)} of its {len(mine)} links fail too")
        blame.add("rank", f"rank {r}",
                  f"compute probe {j.ratio:.2f} x the median rank ({j.value:.4g} against "
                  f"{j.peer_median:.4g} us, {j.bad} of {j.total} repeats); {tail}", "compute")


def limit_blames(judge, blame, links, part, what):
    """Pairs failing a threshold or the baseline that no blame explains yet: blamed per
    host link (between hosts) or per host (within one)."""
    groups = {}
    for l in links:
        if l["explained_by"]:
            continue
        failing = [m for m in ("bandwidth", "latency") if (l[m].get(part) or {}).get("verdict") == FAIL]
        if failing:
            groups.setdefault(l["link"], []).append((l, failing))
    for link, items in sorted(groups.items()):
        kind = "link" if "-" in link else "host"
        if blame.covers(kind, link):
            continue
        total = sum(1 for l in links if l["link"] == link)
        metrics = sorted({m for _, ms in items for m in ms})
        detail = "; ".join(limit_detail(items, m, part) for m in metrics)
        blame.add(kind, link, f"{len(items)} of its {total} pairs {what}: {detail}", metrics[0],
                  items[0][0]["class"])


def limit_detail(items, metric, part):
    vals = [l[metric]["alone_median"] for l, ms in items if metric in ms]
    limit = items[0][0][metric][part]["limit"]
    word = "at least" if metric == "bandwidth" else "at most"
    return (f"{metric} median {median(vals):.4g} {UNITS[metric]}, {word} {limit:.4g} "
            f"{UNITS[metric]} expected")


def problem_blames(judge, blame):
    """A payload that arrived changed names its pair (pingpong) or its rank (a
    collective's first wrong element); a volume that differs from theory without one is
    a failure without a culprit (overall_verdict)."""
    for p in judge.problems:
        pair, rank = p.get("first_bad_pair"), p.get("first_bad_rank")
        if pair:
            a, b = sorted(pair)
            blame.add("link", f"ranks {a}-{b} ({judge.layout.host_link(a, b)})",
                      f"{p['what']}: {p['wrong']} bytes arrived changed", "payload")
        elif rank is not None and rank >= 0 and p.get("wrong"):
            blame.add("rank", f"rank {rank}", f"{p['what']}: {p['wrong']} elements wrong, the first on "
                      f"rank {rank}", "payload")


def collective_blames(judge, blame):
    for c in judge.collective_results:
        if c["scope"] == "all" or c["verdict"] != FAIL:
            continue
        ranks = judge.layout.ranks_of(c["scope"])
        if blame.covers("host", c["scope"]) or any(blame.covers("rank", f"rank {r}") for r in ranks):
            continue
        again = c.get("retest")
        tail = (f"; run again between two runs of {again['reference_host']}'s: {again['busbw_gbps']:.4g} "
                f"against {'/'.join(f'{x:.4g}' for x in again['reference_busbw_gbps'])} GB/s "
                f"({again['ratio']:.2f} x the lower)" if again else "")
        blame.add("host", c["scope"], f"{c['collective']} within the host, {c['bytes']} B: busbw "
                  f"{c['ratio']:.2f} x the other hosts' median ({c['busbw_gbps']:.4g} against "
                  f"{c['peer_median']:.4g} GB/s){tail}", "collective", "intra-node")


# ---- hosts, ranks, host links -----------------------------------------------------------------

def host_entry(judge, findings, blame, host, links):
    entry = {"host": host, "ranks": judge.layout.ranks_of(host)}
    verdicts = []
    for cls in ("inter-node", "intra-node"):
        part = {}
        for metric in judge.metrics:
            j = judge.judged[metric.name].get(("hosts", cls), {}).get(host)
            limits = judge.host_limits.get((host, cls), {}).get(metric.name, {})
            peer = j.summary() if j else {"verdict": NOT_JUDGED}
            mine = findings.of_kind("host", host, cls)
            mine = [(u, s, o) for u, s, o in mine if u.metric is metric]
            if mine:
                peer["verdict"] = STATE_VERDICT[mine[0][1]]
            elif peer["verdict"] != NOT_JUDGED:
                peer["verdict"] = PASS
            values = judge.host_values(metric, host, cls)
            part[metric.name] = {"unit": UNITS[metric.name],
                                 "value": rounded(median(values)) if values else None,
                                 "peers": peer, "threshold": limits.get("threshold"),
                                 "baseline": limits.get("baseline")}
            verdicts += [peer["verdict"]] + [x["verdict"] for x in (limits.get("threshold"),
                                                                    limits.get("baseline")) if x]
        if cls == "intra-node":
            part["collectives"] = [c for c in judge.collective_results if c["scope"] == host]
            verdicts += [c["verdict"] for c in part["collectives"]]
        entry[cls] = part
    entry["verdict"] = FAIL if blame.covers("host", host) else worst(verdicts)
    entry["explained_by"] = host_explanation(blame, host) if entry["verdict"] == FAIL else None
    return entry


def host_explanation(blame, host):
    """What a failing host's failure is down to: itself, or a blamed link or rank of it."""
    if blame.covers("host", host):
        return "host " + host
    for e in blame.list():
        names = e["where"].split(" (")[-1].rstrip(")").split("-")
        if e["kind"] == "link" and host in names:
            return "link " + e["where"]
    return None


def explain_by_limits(links, blame):
    """Pairs that fail through a threshold or the baseline, once those are blamed per host
    link or host: that blame explains them."""
    for l in links:
        if l["verdict"] != FAIL or l["explained_by"]:
            continue
        kind = "link" if "-" in l["link"] else "host"
        if blame.covers(kind, l["link"]):
            l["explained_by"] = f"{kind} {l['link']}"


def rank_entry(judge, findings, blame, r):
    j = judge.compute.get(r)
    entry = {"rank": r, "host": judge.layout.host(r),
             "compute": ({"time_us": rounded(j.value), "peer_median_us": rounded(j.peer_median),
                          "ratio": rounded(j.ratio), "bad": j.bad, "of": j.total, "verdict": j.verdict}
                         if j else {"verdict": NOT_JUDGED})}
    verdicts = [entry["compute"]["verdict"]]
    for metric in judge.metrics:
        part = {}
        for cls in ("inter-node", "intra-node"):
            jr = judge.judged[metric.name].get(("ranks", cls), {}).get(r)
            peer = jr.summary() if jr else {"verdict": NOT_JUDGED}
            mine = [(u, s, o) for u, s, o in findings.of_kind("rank", r, cls) if u.metric is metric]
            if mine:
                peer["verdict"] = STATE_VERDICT[mine[0][1]]
            elif peer["verdict"] != NOT_JUDGED:
                peer["verdict"] = PASS
            part[cls] = peer
            verdicts.append(peer["verdict"])
        entry[metric.name] = part
    entry["verdict"] = FAIL if blame.covers("rank", f"rank {r}") else worst(verdicts)
    host = judge.layout.host(r)
    entry["explained_by"] = ("rank " + str(r) if blame.covers("rank", f"rank {r}")
                             else "host " + host if blame.covers("host", host) else None)
    return entry


def host_link_entries(judge, findings, links):
    out = []
    names = sorted({judge.layout.host_link(a, b) for a, b in judge.classes["inter-node"]},
                   key=lambda n: [judge.layout.hosts.index(h) for h in n.split("-")])
    for name in names:
        entry = {"link": name, "hosts": name.split("-"),
                 "pairs": [[a, b] for a, b in judge.classes["inter-node"] if judge.layout.host_link(a, b) == name]}
        verdicts = []
        for metric in judge.metrics:
            j = judge.judged[metric.name].get(("links", "inter-node"), {}).get(name)
            peer = j.summary() if j else {"verdict": NOT_JUDGED}
            mine = [(u, s, o) for u, s, o in findings.of_kind("link", name) if u.metric is metric]
            if mine:
                peer["verdict"] = STATE_VERDICT[mine[0][1]]
            elif peer["verdict"] != NOT_JUDGED:
                peer["verdict"] = PASS
            entry[metric.name] = peer
            verdicts.append(peer["verdict"])
        entry["verdict"] = worst(verdicts)
        entry["explained_by"] = None
        mine = [l for l in links if l["link"] == name]
        if mine and all(l["verdict"] == FAIL for l in mine):
            entry["verdict"] = FAIL
            causes = {l["explained_by"] for l in mine}
            entry["explained_by"] = causes.pop() if len(causes) == 1 else None
        out.append(entry)
    return out


def class_summaries(judge, links):
    out = {}
    for cls in ("intra-node", "inter-node"):
        if not judge.links_measured:
            out[cls] = {"measured": False, "note": "not measured: not in measure.classes"}
            continue
        mine = [l for l in links if l["class"] == cls]
        if not mine:
            continue
        summary = {"measured": True, "pairs": len(mine),
                   "verdicts": {v: sum(1 for l in mine if l["verdict"] == v) for v in (PASS, FAIL, INCONCLUSIVE)}}
        for metric in judge.metrics:
            vals = [l[metric.name]["alone_median"] for l in mine if l[metric.name]["alone_median"] is not None]
            limit = judge.threshold_of(cls, metric)
            below = [l for l in mine if (l[metric.name]["threshold"] or {}).get("verdict") == FAIL]
            peer_bad = [l for l in mine if l[metric.name]["peers"]["verdict"] == FAIL]
            summary[metric.name] = {"unit": UNITS[metric.name], "median": rounded(median(vals)) if vals else None,
                                    "limit": rounded(limit), "failing_limit": len(below),
                                    "peer_outliers": len(peer_bad)}
            if limit is not None and len(below) == len(mine) and not peer_bad:
                summary[metric.name]["note"] = ("every pair is beyond the limit and none is an outlier "
                                                "among its peers: the class as a whole misses the spec")
        out[cls] = summary
    return out


# ---- the whole ------------------------------------------------------------------------------

def build(judge):
    layout = judge.layout
    findings = Findings(judge)
    blame = BlameList()
    problem_blames(judge, blame)
    candidate_blames(judge, findings, blame)
    links = [pair_entry(judge, findings, p) for p in layout.pairs()] if judge.links_measured else []
    compute_blames(judge, blame, links)
    limit_blames(judge, blame, links, "threshold", "are beyond the class's threshold")
    limit_blames(judge, blame, links, "baseline", "regressed beyond tolerance since the baseline")
    collective_blames(judge, blame)
    explain_by_limits(links, blame)
    hosts = [host_entry(judge, findings, blame, h, links) for h in layout.hosts]
    ranks = [rank_entry(judge, findings, blame, r) for r in range(layout.n)]
    overall = overall_verdict(blame, links, hosts, ranks, judge)
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "verdict": overall,
            "exit_code": EXIT[overall], "blame": blame.list(), "links": links, "hosts": hosts,
            "ranks": ranks, "host_links": host_link_entries(judge, findings, links) if links else [],
            "collectives": judge.collective_results, "classes": class_summaries(judge, links),
            "retests": judge.retest_log, "problems": judge.problems}


def overall_verdict(blame, links, hosts, ranks, judge):
    if blame.entries or judge.problems:
        return FAIL
    everything = ([l["verdict"] for l in links] + [h["verdict"] for h in hosts] +
                  [r["verdict"] for r in ranks] + [c["verdict"] for c in judge.collective_results])
    v = worst(everything)
    return PASS if v == NOT_JUDGED else v
