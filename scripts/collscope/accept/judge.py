"""Pass, fail or inconclusive for every link, host and rank, and who is to blame
(acceptance/README.md, "Method").

Pure: the figures come in (layout, screening, collectives, spec, baseline), retests go
out through a callback, and the verdict comes back as a dict; so the tests can feed it
figures made up to the microsecond.

The steps:
 1. observations: per (pattern, repeat) one bandwidth per rank pair (rounds and ring
    scaled by how many flows of the same step share the pair's hosts), per repeat one
    latency;
 2. screening against peers, per class, median and MAD: ranks' compute time; hosts,
    ranks and host links by the median of their pairs; then the pairs left;
 3. suspects become candidates, the largest unit that explains them first (a host whose
    ranks are all slow, else those ranks; host links not touching them; pairs left);
 4. every candidate is retested against known-good peers, which confirms it, moves it
    (a link whose one end is slow with everyone is that host or rank) or clears it;
 5. thresholds (spec) and the baseline, per link and host; what fails there and is not
    explained yet is blamed per host link (or per host, within a node).
"""

from collections import Counter, defaultdict

from .stats import FAIL, INCONCLUSIVE, NOT_JUDGED, PASS, Outlier, decide, median, worst

MIN_PEERS = 3      # fewer peers than this: no peer judgement (a median of 2 is no centre)


# ---- 1. observations -------------------------------------------------------------------

def rounds_shares(layout, rounds):
    """{pair: how many pairs of its round use the same hosts (itself included)}; `rounds`
    as pingpong ran them (Screening.rounds, from `pingpong --print-rounds N`)."""
    shares = {}
    for rd in rounds:
        counts = Counter(layout.host_link(a, b) for a, b in rd)
        for a, b in rd:
            shares[(a, b)] = counts[layout.host_link(a, b)]
    return shares


def ring_share(layout, a, b):
    """How many flows of ring shift k = b - a go from a's host to b's (a -> b included)."""
    k, n = (b - a) % layout.n, layout.n
    return sum(1 for r in range(n)
               if layout.host(r) == layout.host(a) and layout.host((r + k) % n) == layout.host(b))


def pattern_values(layout, pattern, matrix, rounds=None):
    """{(a, b): GB/s} for one pattern's bandwidth matrix. A flow that shares its hosts
    with k - 1 others of the same step counts k times its rate, so that every link is
    compared at its full load; ring: the mean of the two directions."""
    pairs = layout.pairs()
    if pattern == "pairs":
        return {p: matrix[p[0]][p[1]] for p in pairs}
    if pattern == "rounds":
        shares = rounds_shares(layout, rounds)
        return {p: matrix[p[0]][p[1]] * shares[p] for p in pairs}
    return {(a, b): (matrix[a][b] * ring_share(layout, a, b) + matrix[b][a] * ring_share(layout, b, a)) / 2
            for a, b in pairs}


def bandwidth_table(layout, screening):
    return {(pattern, i): pattern_values(layout, pattern, m, screening.rounds)
            for pattern, mats in screening.bandwidth.items() for i, m in enumerate(mats)}


def latency_table(layout, screening):
    return {("latency", i): {(a, b): m[a][b] for a, b in layout.pairs()}
            for i, m in enumerate(screening.latency)}


class Metric:
    """Bandwidth (bad when low) or latency (bad when high), with its observations."""

    def __init__(self, name, table, worse, tolerance, size, iters, floor=0.0):
        self.name, self.table, self.worse = name, table, worse
        self.tolerance, self.size, self.iters, self.floor = tolerance, size, iters, floor

    def from_half_rtt(self, us):
        """A retest's half round trip as this metric's value."""
        return self.size / (us * 1e3) if self.name == "bandwidth" else us


# ---- 2. screening against peers ------------------------------------------------------------

class Judged:
    """An entity's observations against its peers: per key the Outlier, and the verdict."""

    def __init__(self, outliers):
        self.outliers = outliers            # [(key, Outlier)]
        bad = sum(1 for _, o in outliers if o.bad)
        self.bad, self.total = bad, len(outliers)
        self.verdict = decide(bad, len(outliers))
        self.ratio = median([o.ratio for _, o in outliers]) if outliers else None
        self.value = median([o.value for _, o in outliers]) if outliers else None
        self.peer_median = median([o.median for _, o in outliers]) if outliers else None

    def summary(self):
        return {"ratio": rounded(self.ratio), "bad": self.bad, "of": self.total,
                "peer_median": rounded(self.peer_median), "verdict": self.verdict}


def rounded(x, digits=6):
    return None if x is None else float(f"{x:.{digits}g}")


def score_table(table, groups):
    """{key: {entity: median of its pairs' values}}; groups: {entity: [pairs]}."""
    out = {}
    for key, values in table.items():
        row = {}
        for entity, pairs in groups.items():
            vals = [values[p] for p in pairs if p in values]
            if vals:
                row[entity] = median(vals)
        out[key] = row
    return out


def judge_against_peers(table, peers, metric, peer_tolerance, z_limit):
    """{entity: Judged}: each entity's value per key against the median and MAD of the
    `peers` (entities) that have a value for that key."""
    per_entity = defaultdict(list)
    for key, values in table.items():
        peer_values = [values[e] for e in peers if e in values]
        if len(peer_values) < MIN_PEERS:
            continue
        for entity, value in values.items():
            per_entity[entity].append((key, Outlier(value, peer_values, metric.worse,
                                                    peer_tolerance, z_limit, metric.floor)))
    return {e: Judged(o) for e, o in per_entity.items()}


def suspect(judged):
    return judged is not None and judged.verdict in (FAIL, INCONCLUSIVE)


# ---- candidates and their narrowing -------------------------------------------------------

class Candidate:
    """Something that may be to blame: kind host | rank | link | pair | compute, `where`
    (a host, a rank, a host link "hA-hB", or a pair (a, b)), in a class, on a metric."""

    def __init__(self, kind, where, cls, metric, judged):
        self.kind, self.where, self.cls, self.metric, self.judged = kind, where, cls, metric, judged
        self.every_class = False  # a rank slow within its host too: covers all its pairs
        self.outcome = None       # confirmed | cleared | unclear | moved | unconfirmed
        self.retests = []         # [(pair, role, values, verdict)]
        self.moved_to = None
        self.note = ""

    def name(self):
        if self.kind in ("rank", "compute"):
            return f"rank {self.where}"
        if self.kind == "pair":
            return f"ranks {self.where[0]}-{self.where[1]}"
        return self.where


class Judge:
    def __init__(self, layout, screening, collectives, spec, baseline, retest, problems=(), links=True):
        self.layout, self.screening, self.collectives = layout, screening, collectives
        self.links_measured = links   # false: the GPU classes alone (measure.classes)
        self.spec, self.baseline, self.retest_fn = spec, baseline, retest
        self.problems = list(problems)
        m, p = spec.measure, spec.peers
        self.z = p["z"]
        self.metrics = [
            Metric("bandwidth", bandwidth_table(layout, screening), "low", p["bandwidth_tolerance"],
                   m["bandwidth_bytes"], m["retest_iters"]),
            Metric("latency", latency_table(layout, screening), "high", p["latency_tolerance"],
                   m["latency_bytes"], m["latency_iters"], p["latency_floor_us"])]
        self.retests_left = m["max_retests"]
        self.retest_log = []
        self.classes = {c: [pr for pr in layout.pairs() if layout.link_class(*pr) == c]
                        for c in ("intra-node", "inter-node")}

    # ---- helpers -------------------------------------------------------------------------

    def class_table(self, metric, cls):
        pairs = set(self.classes[cls])
        return {k: {p: v for p, v in row.items() if p in pairs} for k, row in metric.table.items()}

    def host_groups(self, cls):
        groups = defaultdict(list)
        for a, b in self.classes[cls]:
            for h in {self.layout.host(a), self.layout.host(b)}:
                groups[h].append((a, b))
        return dict(groups)

    def rank_groups(self, cls):
        groups = defaultdict(list)
        for a, b in self.classes[cls]:
            groups[a].append((a, b))
            groups[b].append((a, b))
        return dict(groups)

    def link_groups(self, exclude_hosts, exclude_ranks):
        groups = defaultdict(list)
        for a, b in self.classes["inter-node"]:
            if {self.layout.host(a), self.layout.host(b)} & exclude_hosts or {a, b} & exclude_ranks:
                continue
            groups[self.layout.host_link(a, b)].append((a, b))
        return dict(groups)

    def judge_groups(self, metric, cls, groups):
        table = score_table(self.class_table(metric, cls), groups)
        return judge_against_peers(table, list(groups), metric, metric.tolerance, self.z)

    # ---- 2 and 3: screening, candidates --------------------------------------------------

    def screen_compute(self):
        table = {("probe", i): dict(enumerate(p["time_us"])) for i, p in enumerate(self.screening.probes)}
        tol = self.spec.peers["compute_tolerance"]
        metric = Metric("compute", table, "high", tol, 0, 0)
        return judge_against_peers(table, list(range(self.layout.n)), metric, tol, self.z)

    def hosts_and_ranks(self, metric, cls):
        """Hosts whose ranks are all suspect are host candidates; other suspect ranks are
        rank candidates (a host with one slow rank of two is not a slow host)."""
        hosts = self.judge_groups(metric, cls, self.host_groups(cls))
        ranks = self.judge_groups(metric, cls, self.rank_groups(cls))
        out = []
        for h in self.layout.hosts:
            mine = self.layout.ranks_of(h)
            if suspect(hosts.get(h)) and all(suspect(ranks.get(r)) for r in mine):
                out.append(Candidate("host", h, cls, metric, hosts[h]))
        taken = {r for c in out for r in self.layout.ranks_of(c.where)}
        for r in range(self.layout.n):
            if r not in taken and suspect(ranks.get(r)):
                out.append(Candidate("rank", r, cls, metric, ranks[r]))
        return out, hosts, ranks

    def links(self, metric, hosts_out, ranks_out):
        groups = self.link_groups(hosts_out, ranks_out)
        judged = self.judge_groups(metric, "inter-node", groups)
        return [Candidate("link", name, "inter-node", metric, j) for name, j in judged.items()
                if suspect(j)], judged

    def explained(self, pair, candidates):
        a, b = pair
        for c in candidates:
            if (c.kind == "host" and c.where in (self.layout.host(a), self.layout.host(b))
                    and c.cls == self.layout.link_class(a, b)):
                return c
            if c.kind == "rank" and c.where in (a, b) and (c.every_class or c.cls == self.layout.link_class(a, b)):
                return c
            if c.kind == "link" and c.where == self.layout.host_link(a, b):
                return c
            if c.kind == "pair" and c.where == pair:
                return c
        return None

    def merge_rank_candidates(self, found):
        """A rank slow with its peers between hosts and within its host is one slow rank
        (its process, its CPU), not that rank plus its host's memory: an intra-node host
        or rank candidate whose pairs all involve one inter-node rank candidate goes into
        it, which then covers every pair of the rank (every_class)."""
        inter_ranks = {c.where: c for c in found if c.kind == "rank" and c.cls == "inter-node"}
        out = []
        for c in found:
            if c.cls != "intra-node" or c.kind not in ("host", "rank"):
                out.append(c)
                continue
            host = c.where if c.kind == "host" else self.layout.host(c.where)
            pairs = [p for p in self.classes["intra-node"] if self.layout.host(p[0]) == host]
            common = set.intersection(*(set(p) for p in pairs)) & set(inter_ranks) if pairs else set()
            if common:
                inter_ranks[min(common)].every_class = True
            else:
                out.append(c)
        return out

    def pair_judgements(self, metric, cls, candidates):
        """Every pair of the class against the pairs no candidate touches."""
        good = [p for p in self.classes[cls] if self.explained(p, candidates) is None]
        table = self.class_table(metric, cls)
        return judge_against_peers(table, good, metric, metric.tolerance, self.z)

    def candidates(self, metric):
        """The screening's candidates for one metric, largest unit first."""
        found, judged = [], {}
        for cls in ("inter-node", "intra-node"):
            cands, hosts, ranks = self.hosts_and_ranks(metric, cls)
            found += cands
            judged[("hosts", cls)], judged[("ranks", cls)] = hosts, ranks
        found = self.merge_rank_candidates(found)
        hosts_out = {c.where for c in found if c.kind == "host" and c.cls == "inter-node"}
        ranks_out = {c.where for c in found if c.kind == "rank" and c.cls == "inter-node"}
        link_cands, judged[("links", "inter-node")] = self.links(metric, hosts_out, ranks_out)
        found += link_cands
        for cls in ("inter-node", "intra-node"):
            pairs = self.pair_judgements(metric, cls, found)
            judged[("pairs", cls)] = pairs
            for p, j in pairs.items():
                if suspect(j) and self.explained(p, found) is None:
                    found.append(Candidate("pair", p, cls, metric, j))
        return found, judged

    # ---- 4. retests ----------------------------------------------------------------------

    def reference(self, metric, cls, candidates):
        """The level a retested pair is held to: the median, over repeats, of the class's
        median pair that no candidate touches, alone (pairs pattern, or latency)."""
        good = {p for p in self.classes[cls] if self.explained(p, candidates) is None}
        keys = [k for k in metric.table if k[0] in ("pairs", "latency")]
        per_key = [median([metric.table[k][p] for p in good if p in metric.table[k]])
                   for k in keys if any(p in metric.table[k] for p in good)]
        return median(per_key) if per_key else None

    def retest_values(self, pair, metric, role):
        """A pair alone, as the metric's values, logged (a reference: no verdict)."""
        self.retests_left -= 1
        a, b = sorted(pair)
        values = [metric.from_half_rtt(t) for t in self.retest_fn(a, b, metric.size, metric.iters)]
        self.retest_log.append({"pair": [a, b], "role": role, "metric": metric.name, "bytes": metric.size,
                                "values": [rounded(v) for v in values], "reference": None,
                                "limit": None, "result": "reference"})
        return values

    def retest(self, pair, metric, ref, role, limit=None):
        """One pair alone, per iteration against `ref` (with the metric's peer tolerance)
        or against an absolute `limit`: 'slow', 'ok' or 'unclear'. None: no budget left."""
        if self.retests_left <= 0:
            return None
        self.retests_left -= 1
        a, b = sorted(pair)
        values = [metric.from_half_rtt(t) for t in self.retest_fn(a, b, metric.size, metric.iters)]
        if limit is None:
            limit = ((1 - metric.tolerance) * ref if metric.worse == "low"
                     else max((1 + metric.tolerance) * ref, ref + metric.floor))
        bad = [(v < limit) if metric.worse == "low" else (v > limit) for v in values]
        verdict = {PASS: "ok", FAIL: "slow", INCONCLUSIVE: "unclear"}[decide(sum(bad), len(bad))]
        self.retest_log.append({"pair": [a, b], "role": role, "metric": metric.name, "bytes": metric.size,
                                "values": [rounded(v) for v in values], "reference": rounded(ref),
                                "limit": rounded(limit), "result": verdict})
        return verdict

    def good_ranks(self, candidates, avoid_hosts, count):
        """Up to `count` ranks, one per host, on hosts that no candidate touches and whose
        links to the hosts in `avoid_hosts` are not suspect either."""
        bad_hosts = {c.where for c in candidates if c.kind == "host"}
        bad_links = {c.where for c in candidates if c.kind == "link"}
        bad_ranks = {c.where for c in candidates if c.kind == "rank"}
        out = []
        for h in self.layout.hosts:
            if h in avoid_hosts or h in bad_hosts:
                continue
            if any(self.layout.link_between(h, x) in bad_links for x in avoid_hosts):
                continue
            ranks = [r for r in self.layout.ranks_of(h) if r not in bad_ranks]
            if ranks:
                out.append(ranks[0])
            if len(out) == count:
                break
        return out

    def sibling(self, rank):
        others = [r for r in self.layout.ranks_of(self.layout.host(rank)) if r != rank]
        return others[0] if others else None

    def narrow(self, c, candidates):
        """Retests one candidate against known-good peers (acceptance/README.md, "Blame").
        A strong suspicion (the screening failed it) is settled by one retest; a weak one
        (its repeats disagreed) must be confirmed by two retests in a row, and a retest
        that does not confirm it clears it: load on a shared machine comes in bursts of
        seconds, enough to spoil a repeat and a retest, rarely two retests apart."""
        ref = self.reference(c.metric, c.cls, candidates)
        if ref is None:
            c.outcome, c.note = "unconfirmed", "no known-good peer to compare with"
            return
        if c.judged.verdict != INCONCLUSIVE:
            return self.narrow_once(c, candidates, ref)
        self.narrow_once(c, candidates, ref)
        if c.outcome in ("cleared", "unclear"):
            c.outcome, c.note = "cleared", "a retest did not confirm the screening's few bad repeats"
        if c.outcome not in ("confirmed", "moved"):
            return
        first = (c.outcome, c.moved_to.kind if c.moved_to else None, c.moved_to.where if c.moved_to else None)
        moved = c.moved_to
        c.outcome, c.moved_to = None, None
        self.narrow_once(c, candidates, ref)
        second = (c.outcome, c.moved_to.kind if c.moved_to else None, c.moved_to.where if c.moved_to else None)
        if second != first:
            c.outcome, c.moved_to = ("unconfirmed" if c.outcome == "unconfirmed" else "unclear"), moved
            c.note = "confirmed by one retest, not by the next"

    def narrow_once(self, c, candidates, ref):
        if c.kind == "pair" and c.judged.verdict == INCONCLUSIVE:
            return self.narrow_pair_alone(c, ref, candidates)
        if c.cls == "intra-node":
            return self.narrow_intra(c, candidates, ref)
        if c.kind in ("link", "pair"):
            return self.narrow_link(c, candidates, ref)
        return self.narrow_host_or_rank(c, candidates, ref)

    def reference_pair(self, cls, candidates, avoid):
        """A known-good pair of the class, retested beside the suspects so that they are
        held to what a good pair does alone now (a fresh launch, the machine's load now):
        the one no candidate touches, away from the ranks in `avoid`, whose screening
        bandwidth is nearest the class's median."""
        metric = self.metrics[0]
        good = [p for p in self.classes[cls] if self.explained(p, candidates) is None and not set(p) & avoid]
        if not good:
            return None
        level = {p: median(self.alone_values(metric, p)) for p in good}
        centre = median(level.values())
        return min(good, key=lambda p: (abs(level[p] - centre), p))

    def run_retests(self, c, tests, ref, candidates=()):
        """Retests `tests` [(role, pair)], after a known-good reference pair of the class
        measured the same way. The suspects are held to the more lenient of the two
        levels, the screening's and the reference's now, so that neither a glitch in the
        reference nor a change of load since the screening condemns a good pair."""
        results = {}
        avoid = {r for _, pair in tests for r in pair}
        refpair = self.reference_pair(c.cls, candidates, avoid)
        if refpair is not None and self.retests_left > len(tests):
            now = median(self.retest_values(refpair, c.metric, f"{c.name()}: reference"))
            c.retests.append({"role": "known-good reference", "pair": list(refpair), "result": "reference"})
            ref = min(ref, now) if c.metric.worse == "low" else max(ref, now)
        for role, pair in tests:
            r = self.retest(pair, c.metric, ref, f"{c.name()}: {role}")
            if r is None:
                c.outcome, c.note = "unconfirmed", "retest budget spent (measure.max_retests)"
                return None
            results[role] = r
            c.retests.append({"role": role, "pair": list(pair), "result": r})
        return results

    def narrow_pair_alone(self, c, ref, candidates):
        """A pair the screening left inconclusive: the pair alone, beside a reference."""
        r = self.run_retests(c, [("the pair alone", c.where)], ref, candidates)
        if r is not None:
            c.outcome = {"slow": "confirmed", "ok": "cleared", "unclear": "unclear"}[r["the pair alone"]]

    def narrow_link(self, c, candidates, ref):
        if c.kind == "pair":
            a, b = c.where
        else:
            ha, hb = c.where.split("-")
            a, b = self.layout.ranks_of(ha)[0], self.layout.ranks_of(hb)[0]
        good = self.good_ranks(candidates, {self.layout.host(a), self.layout.host(b)}, 1)
        if not good:
            c.outcome, c.note = "unconfirmed", "no third host with good links to retest against"
            return
        g = good[0]
        r = self.run_retests(c, [("suspect", (a, b)), (f"rank {a} with good rank {g}", (a, g)),
                                 (f"rank {b} with good rank {g}", (b, g))], ref, candidates)
        if r is None:
            return
        ab, ag, bg = r["suspect"], r[f"rank {a} with good rank {g}"], r[f"rank {b} with good rank {g}"]
        if ab == "ok":
            c.outcome = "cleared"
        elif ab == "unclear" or (ag != "ok" and bg != "ok"):
            c.outcome = "unclear"
        elif ag == "ok" and bg == "ok":
            c.outcome = "confirmed"
        else:   # one end is slow with a good peer too: that end's host or rank
            self.move_to_end(c, a if ag != "ok" else b, g, candidates, ref)

    def move_to_end(self, c, end, good, candidates, ref):
        sib = self.sibling(end)
        kind, where = "host", self.layout.host(end)
        if sib is not None:
            r = self.run_retests(c, [(f"rank {sib} (same host as {end}) with good rank {good}", (sib, good))],
                                 ref, candidates)
            if r is None:
                return
            if list(r.values())[0] == "ok":
                kind, where = "rank", end
        c.outcome = "moved"
        c.moved_to = Candidate(kind, where, c.cls, c.metric, c.judged)
        c.moved_to.outcome = "confirmed"
        c.note = f"rank {end} is slow with a known-good peer too"

    def narrow_host_or_rank(self, c, candidates, ref):
        first = self.layout.ranks_of(c.where)[0] if c.kind == "host" else c.where
        sib = self.sibling(first)
        good = self.good_ranks(candidates, {self.layout.host(first)}, 2)
        if not good:
            c.outcome, c.note = "unconfirmed", "no other host with good links to retest against"
            return
        tests = [("suspect with a good rank", (first, good[0]))]
        if sib is not None:
            tests.append(("its host's other rank with the good rank", (sib, good[0])))
        if len(good) > 1:
            tests.append(("two good ranks (reference)", (good[0], good[1])))
        r = self.run_retests(c, tests, ref, candidates)
        if r is None:
            return
        if r.get("two good ranks (reference)", "ok") != "ok":
            c.outcome, c.note = "unclear", "the known-good reference pair was not good in the retest"
            return
        mine, other = r["suspect with a good rank"], r.get("its host's other rank with the good rank")
        if mine == "ok" and other in (None, "ok"):
            c.outcome = "cleared"
        elif mine == "slow" and other in (None, "slow"):
            self.settle(c, "host", self.layout.host(first))
        elif mine == "slow" and other == "ok":
            self.settle(c, "rank", first)
        elif mine == "ok" and other == "slow":
            self.settle(c, "rank", sib)
        else:
            c.outcome = "unclear"

    def settle(self, c, kind, where):
        if (kind, where) == (c.kind, c.where):
            c.outcome = "confirmed"
            return
        c.outcome, c.moved_to = "moved", Candidate(kind, where, c.cls, c.metric, c.judged)
        c.moved_to.outcome = "confirmed"

    def narrow_intra(self, c, candidates, ref):
        host = c.where if c.kind == "host" else self.layout.host(c.where if c.kind == "rank" else c.where[0])
        mine = c.where if c.kind == "pair" else tuple(self.layout.ranks_of(host)[:2])
        others = [h for h in self.layout.hosts if h != host and len(self.layout.ranks_of(h)) >= 2
                  and not any(x.kind == "host" and x.where == h for x in candidates)]
        tests = [("suspect", mine)]
        if others:
            tests.append(("good host's own pair (reference)", tuple(self.layout.ranks_of(others[0])[:2])))
        r = self.run_retests(c, tests, ref, candidates)
        if r is None:
            return
        if r.get("good host's own pair (reference)", "ok") != "ok":
            c.outcome = "unclear"
        else:
            c.outcome = {"slow": "confirmed", "ok": "cleared", "unclear": "unclear"}[r["suspect"]]
            if c.outcome == "confirmed" and c.kind != "host" and len(self.layout.ranks_of(host)) == 2:
                self.settle(c, "host", host)   # two ranks: the pair is the host's only one

    # ---- 5. thresholds and the baseline ---------------------------------------------------

    def threshold_of(self, cls, metric):
        c = self.spec.classes.get(cls)
        if c is None:
            return None
        return c.min_bandwidth_gbps(metric.size) if metric.name == "bandwidth" else c.max_latency_us(metric.size)

    def alone_values(self, metric, pair):
        keys = [k for k in metric.table if k[0] in ("pairs", "latency")]
        return [metric.table[k][pair] for k in keys if pair in metric.table[k]]

    def threshold_verdict(self, metric, values, limit):
        if limit is None or not values:
            return None
        bad = sum(1 for v in values if (v < limit if metric.worse == "low" else v > limit))
        return {"limit": rounded(limit), "bad": bad, "of": len(values), "verdict": decide(bad, len(values))}

    def baseline_verdict(self, metric, values, old):
        if old is None or not values:
            return None
        tol = self.spec.baseline[f"{metric.name}_tolerance"]
        limit = old * (1 - tol) if metric.worse == "low" else old * (1 + tol)
        bad = sum(1 for v in values if (v < limit if metric.worse == "low" else v > limit))
        return {"baseline": rounded(old), "limit": rounded(limit), "bad": bad, "of": len(values),
                "verdict": decide(bad, len(values))}

    def judge_thresholds(self):
        """{pair: {metric: threshold verdict}} for the pairs whose class the spec names;
        a pair the repeats leave inconclusive is retested alone against the limit."""
        out = {}
        for pair in self.layout.pairs():
            cls = self.layout.link_class(*pair)
            for metric in self.metrics:
                limit = self.threshold_of(cls, metric)
                tv = self.threshold_verdict(metric, self.alone_values(metric, pair), limit)
                if tv is None:
                    continue
                if tv["verdict"] == INCONCLUSIVE:
                    r = self.retest(pair, metric, None, f"ranks {pair[0]}-{pair[1]}: threshold", limit)
                    if r is not None:
                        tv["retest"] = r
                        tv["verdict"] = {"ok": PASS, "slow": FAIL, "unclear": INCONCLUSIVE}[r]
                out.setdefault(pair, {})[metric.name] = tv
        return out

    def host_values(self, metric, host, cls):
        """Per repeat, the median of the host's pairs of the class, alone."""
        pairs = self.host_groups(cls).get(host, [])
        keys = [k for k in metric.table if k[0] in ("pairs", "latency")]
        return [median([metric.table[k][p] for p in pairs]) for k in keys if pairs]

    def judge_host_limits(self):
        """{(host, cls): {metric: {"threshold": ..., "baseline": ...}}}."""
        out = {}
        old_hosts = {h["host"]: h for h in (self.baseline or {}).get("hosts", [])}
        for host in self.layout.hosts:
            for cls in ("inter-node", "intra-node"):
                for metric in self.metrics:
                    values = self.host_values(metric, host, cls)
                    entry = {"threshold": self.threshold_verdict(metric, values, self.threshold_of(cls, metric)),
                             "baseline": None}
                    old = old_hosts.get(host, {}).get(cls, {}).get(metric.name, {}).get("value")
                    if old:
                        entry["baseline"] = self.baseline_verdict(metric, values, old)
                    out.setdefault((host, cls), {})[metric.name] = entry
        return out

    def pair_key(self, a, b):
        """A pair's name that survives renumbering: host#local-index of both ends."""
        def end(r):
            h = self.layout.host(r)
            return f"{h}#{self.layout.ranks_of(h).index(r)}"
        return f"{end(a)}-{end(b)}"

    def judge_baselines(self):
        """{pair: {metric: baseline verdict}} for the pairs the baseline run measured."""
        if not self.baseline:
            return {}
        old = {l["key"]: l for l in self.baseline.get("links", []) if "key" in l}
        out = {}
        for pair in self.layout.pairs():
            then = old.get(self.pair_key(*pair))
            if then is None:
                continue
            for metric in self.metrics:
                value = (then.get(f"{metric.name}") or {}).get("alone_median")
                bv = self.baseline_verdict(metric, self.alone_values(metric, pair), value) if value else None
                if bv:
                    out.setdefault(pair, {})[metric.name] = bv
        return out

    # ---- collectives -----------------------------------------------------------------------

    def judge_collectives(self):
        """Within each host: busbw per iteration against the other hosts' medians, per
        program and size (a failing host's launch is run once more); over all hosts:
        against the baseline."""
        out = []
        old = {(c["collective"], c["scope"], c["bytes"]): c
               for c in (self.baseline or {}).get("collectives", [])}
        programs = sorted({p for p, _ in self.collectives})
        for program in programs:
            scopes = [s for p, s in self.collectives if p == program]
            for size in sorted({r["bytes"] for s in scopes for r in self.collectives[(program, s)]}):
                out += self.judge_collective_size(program, size, scopes, old)
        return out

    def collective_entry(self, program, scope, record):
        times = record.get("times_us") or [record["time_us"]]
        per_iter = [record["busbw_gbps"] * record["time_us"] / t for t in times if t > 0]
        return {"collective": program, "scope": scope, "bytes": record["bytes"],
                "busbw_gbps": rounded(record["busbw_gbps"]), "iterations": [rounded(v) for v in per_iter],
                "volume": record.get("volume"), "wrong": record.get("wrong"),
                "peer_median": None, "ratio": None, "baseline": None, "verdict": NOT_JUDGED,
                "retested": False}

    def judge_collective_size(self, program, size, scopes, old):
        entries = {}
        for scope in scopes:
            rec = next((r for r in self.collectives[(program, scope)] if r["bytes"] == size), None)
            if rec is not None:
                entries[scope] = self.collective_entry(program, scope, rec)
        hosts = [s for s in entries if s != "all"]
        medians = {h: entries[h]["busbw_gbps"] for h in hosts}
        tol = self.spec.peers["bandwidth_tolerance"]
        for h in hosts:
            self.judge_one_collective(entries[h], list(medians.values()), tol)
            if entries[h]["verdict"] not in (PASS, NOT_JUDGED):
                self.retest_collective(program, size, h, entries[h], medians, tol)
        for scope, e in entries.items():
            then = old.get((program, scope, size))
            if then and then.get("busbw_gbps"):
                busbw = Metric("bandwidth", {}, "low", 0, 0, 0)   # held to the bandwidth tolerance
                e["baseline"] = self.baseline_verdict(busbw, [e["busbw_gbps"]], then["busbw_gbps"])
                if scope == "all":
                    e["verdict"] = e["baseline"]["verdict"]
        return list(entries.values())

    def retest_collective(self, program, size, host, entry, medians, tol):
        """A host whose collective looked slow runs it again between two runs of a
        reference host's (the one nearest the others' median): slow only when beyond
        tolerance of both, so that a burst of load lasting seconds, which slows every host
        it meets, does not condemn one. The retest decides."""
        run = getattr(self.retest_fn, "collective", None)
        others = [h for h in medians if h != host]
        if run is None or not others:
            return
        centre = median([medians[h] for h in others])
        ref = min(others, key=lambda h: (abs(medians[h] - centre), h))

        def iterations(h):
            rec = next((r for r in run(program, h) if r["bytes"] == size), None)
            return self.collective_entry(program, h, rec)["iterations"] if rec else []

        before, mine, after = iterations(ref), iterations(host), iterations(ref)
        if not (before and mine and after):
            return
        level = min(median(before), median(after))
        ratio = median(mine) / level
        entry["retested"] = True
        entry["retest"] = {"reference_host": ref, "reference_busbw_gbps": [rounded(median(before)),
                                                                           rounded(median(after))],
                           "busbw_gbps": rounded(median(mine)), "ratio": rounded(ratio),
                           "iterations": [rounded(v) for v in mine]}
        entry["verdict"] = FAIL if ratio < 1 - tol else PASS

    def judge_one_collective(self, entry, medians, tol):
        """A launch's median busbw against the other hosts' medians. Not per iteration: a
        collective within a host takes tens of microseconds, and on a shared machine one
        context switch makes one iteration ten times slower; the median of a launch is
        the repeat here, and the retest (another launch, beside references) the next."""
        if len(medians) < MIN_PEERS:
            return
        o = Outlier(entry["busbw_gbps"], medians, "low", tol, self.z)
        entry["peer_median"], entry["ratio"] = rounded(o.median), rounded(o.ratio)
        entry["verdict"] = FAIL if o.bad else PASS

    # ---- the whole judgement --------------------------------------------------------------

    def run(self):
        self.compute = self.recheck_compute(self.screen_compute())
        self.candidate_list, self.judged = [], {}
        for metric in self.metrics:
            cands, self.judged[metric.name] = self.candidates(metric)
            for c in cands:
                self.narrow(c, cands)
            self.candidate_list += cands
        self.thresholds = self.judge_thresholds()
        self.baselines = self.judge_baselines()
        self.host_limits = self.judge_host_limits()
        self.collective_results = self.judge_collectives()
        from .verdict import build   # the dict and its wording live apart from the statistics
        return build(self)

    def recheck_compute(self, compute):
        """Ranks whose compute repeats disagree get two more probes (when the caller can)."""
        if not any(j.verdict == INCONCLUSIVE for j in compute.values()):
            return compute
        extra = getattr(self.retest_fn, "probe", None)
        if extra is None:
            return compute
        for _ in range(2):
            self.screening.probes.append(extra())
        return self.screen_compute()
