"""Pass, fail or inconclusive for every GPU, and which GPU to blame (acceptance/README.md,
"GPU nodes"). Pure, like judge.py: the figures come in, retests go out through a
callback, and the findings come back for gpu_verdict.py to write.

Every figure is measured per rank, a rank's view of its GPU; the peers of a rank are the
ranks whose GPU is the same model. The steps:
 1. observations: per repeat each rank's median of each gpu_probe figure (d2d, reduce:
    gpu_memory; h2d, d2h, bidir: host_device); per (pattern, repeat) each ipc pair's
    bandwidth and per repeat its latency (device_device);
 2. against peers, median and MAD as for links: each figure of each rank; for
    device_device each rank by the median of its pairs, then each pair against the pairs
    that no suspect rank touches;
 3. retests against a known-good peer: a suspect rank's GPU measured again right after
    the rank nearest its model's median (gpu_probe --ranks REF,SUSPECT, in turns of one
    call); a suspect rank's paths as one pair with a good rank of its host, between two
    runs of a good pair; a strong suspicion is settled by one retest, a weak one must be
    confirmed by two (as links);
 4. thresholds: each rank's figures against its model's in the spec; the PCIe link
    against its own maximum and the spec's;
 5. NCCL: busbw within each host against the other hosts' and the spec's.
A suspect rank blames its GPU ("host:index (UUID)"), never the paths it touches.
"""

from collections import defaultdict

from .judge import MIN_PEERS, Metric, judge_against_peers, rounded, score_table, suspect
from .stats import FAIL, INCONCLUSIVE, NOT_JUDGED, PASS, decide, median, worst

PROBE_FIGURES = {   # gpu_probe's figures: (class, what they are)
    "d2d": ("gpu_memory", "device-to-device copy"),
    "reduce": ("gpu_memory", "reduce kernel"),
    "h2d": ("host_device", "host-to-device copy"),
    "d2h": ("host_device", "device-to-host copy"),
    "bidir": ("host_device", "copies both ways at once"),
}
RESULT = {PASS: "ok", FAIL: "slow", INCONCLUSIVE: "unclear"}


def suspect_ranks(suspects, metric=None):
    """The ranks some suspect touches (on `metric`, or on any)."""
    out = set()
    for x in suspects:
        if metric is None or x.metric is metric:
            out |= {x.where} if x.kind == "gpu" else set(x.where)
    return out


class GpuSuspect:
    """A rank whose GPU may be to blame (kind "gpu", where: the rank), or one ipc path
    (kind "path", where: the pair), in a GPU class, on one metric."""

    def __init__(self, kind, where, cls, metric, judged):
        self.kind, self.where, self.cls, self.metric, self.judged = kind, where, cls, metric, judged
        self.outcome = None   # confirmed | cleared | unclear | unconfirmed (as judge.Candidate)
        self.moved_to = None
        self.retests = []
        self.note = ""

    def name(self):
        return f"rank {self.where}" if self.kind == "gpu" else f"ranks {self.where[0]}-{self.where[1]}"


# ---- 1. observations ---------------------------------------------------------------------

def probe_table(screening, figure):
    """{("probe", repeat): {rank: median GB/s}} for one gpu_probe figure."""
    out = {}
    for i, rec in enumerate(screening.probes):
        out[("probe", i)] = {r: median(v[figure]) for r, v in enumerate(rec["ranks"]) if v and v.get(figure)}
    return out


def global_pairs(ranks, matrix, symmetric_mean):
    """{(a, b): value} in the run's rank numbers from a host's matrix."""
    out = {}
    for i in range(len(ranks)):
        for j in range(i + 1, len(ranks)):
            v = (matrix[i][j] + matrix[j][i]) / 2 if symmetric_mean else matrix[i][j]
            out[(ranks[i], ranks[j])] = v
    return out


def device_tables(screening):
    """The ipc bandwidth {(pattern, repeat): {pair: GB/s}} (ring: the mean of the two
    directions) and latency {("latency", repeat): {pair: us}}."""
    bw, lat = defaultdict(dict), defaultdict(dict)
    for pattern, hosts in screening.bandwidth.items():
        for host, mats in hosts.items():
            for i, m in enumerate(mats):
                bw[(pattern, i)].update(global_pairs(screening.ranks[host], m, pattern == "ring"))
    for host, mats in screening.latency.items():
        for i, m in enumerate(mats):
            lat[("latency", i)].update(global_pairs(screening.ranks[host], m, False))
    return dict(bw), dict(lat)


class GpuJudge:
    def __init__(self, glayout, screening, spec, retest):
        self.g, self.screening, self.spec, self.retest_fn = glayout, screening, spec, retest
        m, p = spec.measure, spec.peers
        self.z, self.tolerance = p["z"], p["gpu_tolerance"]
        self.figures = [Metric(f, probe_table(screening, f), "low", self.tolerance, m["gpu_bytes"]
                               if PROBE_FIGURES[f][0] == "gpu_memory" else m["pcie_bytes"], m["gpu_iters"])
                        for f in PROBE_FIGURES]
        bw, lat = device_tables(screening)
        self.device = [Metric("bandwidth", bw, "low", self.tolerance, m["device_bandwidth_bytes"], m["retest_iters"]),
                       Metric("latency", lat, "high", p["latency_tolerance"], m["latency_bytes"],
                              m["latency_iters"], p["latency_floor_us"])]
        self.pairs = sorted({p for t in (bw, lat) for row in t.values() for p in row})
        self.retests_left = m["max_retests"]
        self.log = []

    def class_of(self, metric):
        return PROBE_FIGURES[metric.name][0] if metric.name in PROBE_FIGURES else "device_device"

    # ---- 2. against peers --------------------------------------------------------------

    def by_model(self, ranks):
        groups = defaultdict(list)
        for r in ranks:
            groups[self.g.model(r)].append(r)
        return groups

    def judge_ranks(self, metric):
        """{rank: Judged}: each rank's figure against the ranks of its GPU's model."""
        out = {}
        for ranks in self.by_model(range(self.g.n)).values():
            table = {k: {r: v for r, v in row.items() if r in ranks} for k, row in metric.table.items()}
            out.update(judge_against_peers(table, ranks, metric, metric.tolerance, self.z))
        return out

    def pair_group(self, pair):
        a, b = pair
        return (self.g.same_gpu(a, b), tuple(sorted({self.g.model(a), self.g.model(b)})))

    def pair_groups(self):
        groups = defaultdict(list)
        for p in self.pairs:
            groups[self.pair_group(p)].append(p)
        return groups

    def judge_device_ranks(self, metric):
        """{rank: Judged}: each rank by the median of its pairs of one kind (on one GPU, or
        between two), against the other ranks with pairs of that kind."""
        out = {}
        for pairs in self.pair_groups().values():
            groups = defaultdict(list)
            for a, b in pairs:
                groups[a].append((a, b))
                groups[b].append((a, b))
            table = score_table({k: {p: v for p, v in row.items() if p in pairs} for k, row in metric.table.items()},
                                groups)
            for r, j in judge_against_peers(table, list(groups), metric, metric.tolerance, self.z).items():
                if r not in out or (suspect(j) and not suspect(out[r])):
                    out[r] = j
        return out

    def judge_device_pairs(self, metric, bad_ranks):
        """{pair: Judged}: each pair against the pairs of its kind no suspect rank touches."""
        out = {}
        for pairs in self.pair_groups().values():
            good = [p for p in pairs if not set(p) & bad_ranks]
            table = {k: {p: v for p, v in row.items() if p in pairs} for k, row in metric.table.items()}
            out.update(judge_against_peers(table, good, metric, metric.tolerance, self.z))
        return out

    def suspects(self):
        found = []
        self.figure_judged = {m.name: self.judge_ranks(m) for m in self.figures}
        for m in self.figures:
            found += [GpuSuspect("gpu", r, self.class_of(m), m, j)
                      for r, j in sorted(self.figure_judged[m.name].items()) if suspect(j)]
        self.device_judged = {}
        for m in self.device:
            ranks = self.judge_device_ranks(m)
            bad = {r for r, j in ranks.items() if suspect(j)}
            pairs = self.judge_device_pairs(m, bad)
            self.device_judged[m.name] = {"ranks": ranks, "pairs": pairs}
            found += [GpuSuspect("gpu", r, "device_device", m, ranks[r]) for r in sorted(bad)]
            found += [GpuSuspect("path", p, "device_device", m, j) for p, j in sorted(pairs.items())
                      if suspect(j) and not set(p) & bad]
        return found

    # ---- 3. retests ----------------------------------------------------------------------

    def screening_level(self, s):
        """The level a suspect is held to: its peers' median in the screening."""
        return s.judged.peer_median

    def hold(self, metric, values, level):
        """'slow', 'ok' or 'unclear': a retest's values against the level, with the
        metric's peer tolerance (and floor)."""
        if metric.worse == "low":
            limit = (1 - metric.tolerance) * level
            bad = [v < limit for v in values]
        else:
            limit = max((1 + metric.tolerance) * level, level + metric.floor)
            bad = [v > limit for v in values]
        return RESULT[decide(sum(bad), len(bad))], limit

    def log_retest(self, s, role, ranks, values, level, limit, result):
        self.log.append({"gpu": self.g.where(ranks[0]) if s.kind == "gpu" else None, "ranks": list(ranks),
                         "role": f"{s.name()}: {role}", "class": s.cls, "metric": s.metric.name,
                         "values": [rounded(v) for v in values], "reference": rounded(level),
                         "limit": rounded(limit), "result": result})

    def reference_rank(self, s, suspects):
        """The rank of the suspect's model whose screening figure is nearest the model's
        median, among the ranks no suspicion touches (else those not suspect on this
        metric)."""
        judged = self.figure_judged[s.metric.name]
        mine = [r for r in judged if self.g.model(r) == self.g.model(s.where) and r != s.where]
        clean = [r for r in mine if r not in suspect_ranks(suspects)]
        good = clean or [r for r in mine if r not in suspect_ranks(suspects, s.metric)]
        if not good:
            return None
        centre = median([judged[r].value for r in good])
        return min(good, key=lambda r: (abs(judged[r].value - centre), r))

    def retest_figure(self, s, suspects):
        """The suspect's GPU measured again right after a known-good rank's."""
        ref = self.reference_rank(s, suspects)
        if ref is None:
            return None, "no known-good rank of its model to compare with"
        if self.retests_left <= 0:
            return None, "retest budget spent (measure.max_retests)"
        self.retests_left -= 1
        rec = self.retest_fn.probe([ref, s.where])
        ref_values, values = rec["ranks"][ref][s.metric.name], rec["ranks"][s.where][s.metric.name]
        now = median(ref_values)
        level = min(self.screening_level(s), now)
        self.log_retest(s, f"reference rank {ref}", [ref], ref_values, None, None, "reference")
        result, limit = self.hold(s.metric, values, level)
        self.log_retest(s, "again, alone", [s.where], values, level, limit, result)
        s.retests.append({"role": f"again after reference rank {ref}", "ranks": [s.where], "result": result})
        return result, ""

    def good_device_ranks(self, s, suspects):
        """Ranks of the suspect's host that no suspicion touches (of any class: a GPU
        with slow memory may slow its paths too), nearest the median."""
        bad = suspect_ranks(suspects)
        host = self.g.rank_hosts[s.where if s.kind == "gpu" else s.where[0]]
        ranks = self.device_judged[s.metric.name]["ranks"]
        good = [r for r in ranks if r not in bad and self.g.rank_hosts[r] == host
                and r not in (s.where if s.kind == "path" else (s.where,))]
        if not good:
            return []
        centre = median([ranks[r].value for r in good])
        return sorted(good, key=lambda r: (abs(ranks[r].value - centre), r))

    def pair_values(self, metric, a, b):
        self.retests_left -= 1
        return [metric.from_half_rtt(t) for t in self.retest_fn.pair(a, b, metric.size, metric.iters)]

    def lenient(self, metric, level, values):
        """The more lenient of a level and a reference measured now."""
        now = median(values)
        return min(level, now) if metric.worse == "low" else max(level, now)

    def reference_pair(self, s, ref, role):
        values = self.pair_values(s.metric, *sorted(ref))
        self.log_retest(s, f"reference pair {min(ref)}-{max(ref)} {role}", sorted(ref), values, None, None,
                        "reference")
        return values

    def retest_path(self, s, suspects):
        """A suspect rank with a good rank of its host (or a suspect pair alone), between
        two runs of a good pair of that host: held to the most lenient of the screening's
        level and the two references', so that a burst of load lasting seconds, which
        slows every pair it meets, does not condemn one (as the collectives' retests).
        A second retest takes the next good rank as the partner: a GPU's slow paths are
        slow with any partner, while two processes crowded onto one core of a shared
        machine are slow together only."""
        good = self.good_device_ranks(s, suspects)
        if s.kind == "path":
            pair = s.where
        elif good:
            partner = good[len(s.retests) % len(good)]
            pair, good = (s.where, partner), [g for g in good if g != partner]
        else:
            return None, "no other rank of its host with good paths to retest against"
        ref = tuple(good[:2]) if len(good) >= 2 and self.retests_left >= 3 else None
        if self.retests_left <= 0:
            return None, "retest budget spent (measure.max_retests)"
        level = self.screening_level(s)
        if ref:
            level = self.lenient(s.metric, level, self.reference_pair(s, ref, "before"))
        values = self.pair_values(s.metric, *sorted(pair))
        if ref:
            level = self.lenient(s.metric, level, self.reference_pair(s, ref, "after"))
        result, limit = self.hold(s.metric, values, level)
        self.log_retest(s, f"pair {min(pair)}-{max(pair)} alone", sorted(pair), values, level, limit, result)
        s.retests.append({"role": f"pair {min(pair)}-{max(pair)} alone", "ranks": sorted(pair), "result": result})
        return result, ""

    def retest_once(self, s, suspects):
        result, why = (self.retest_figure(s, suspects) if s.cls != "device_device"
                       else self.retest_path(s, suspects))
        if result is None:
            s.outcome, s.note = "unconfirmed", why
            return
        s.outcome = {"slow": "confirmed", "ok": "cleared", "unclear": "unclear"}[result]

    def narrow(self, s, suspects):
        """As links (judge.Judge.narrow): strong, one retest; weak, two in a row."""
        self.retest_once(s, suspects)
        if s.judged.verdict != INCONCLUSIVE:
            return
        if s.outcome in ("cleared", "unclear"):
            s.outcome, s.note = "cleared", "a retest did not confirm the screening's few bad repeats"
        if s.outcome != "confirmed":
            return
        self.retest_once(s, suspects)
        if s.outcome != "confirmed":
            s.outcome = "unconfirmed" if s.outcome == "unconfirmed" else "unclear"
            s.note = "confirmed by one retest, not by the next"

    # ---- 4. thresholds and the PCIe link ------------------------------------------------

    def spec_limit(self, cls, model, figure, size):
        c = self.spec.gpu_classes.get(cls)
        return c.limit(model, figure, size) if c else (None, None)

    def figure_thresholds(self):
        """{(rank, figure): {"limit", "bad", "of", "verdict"} or {"note"}}."""
        out = {}
        for m in self.figures:
            for r in range(self.g.n):
                limit, note = self.spec_limit(self.class_of(m), self.g.model(r), m.name, m.size)
                values = [row[r] for row in m.table.values() if r in row]
                if limit is None:
                    if note:
                        out[(r, m.name)] = {"note": note}
                    continue
                bad = sum(1 for v in values if v < limit)
                entry = {"limit": rounded(limit), "bad": bad, "of": len(values), "verdict": decide(bad, len(values))}
                if entry["verdict"] == INCONCLUSIVE:
                    self.retest_threshold(r, m, limit, entry)
                out[(r, m.name)] = entry
        return out

    def retest_threshold(self, r, metric, limit, entry):
        """A rank the repeats leave inconclusive against the spec: measured again alone,
        its calls against the limit."""
        if self.retests_left <= 0:
            return
        self.retests_left -= 1
        values = self.retest_fn.probe([r])["ranks"][r][metric.name]
        bad = sum(1 for v in values if v < limit)
        entry["retest"] = RESULT[decide(bad, len(values))]
        entry["verdict"] = decide(bad, len(values))
        self.log.append({"gpu": self.g.where(r), "ranks": [r], "role": f"rank {r}: threshold",
                         "class": self.class_of(metric), "metric": metric.name,
                         "values": [rounded(v) for v in values], "reference": None, "limit": rounded(limit),
                         "result": entry["retest"]})

    def pair_thresholds(self):
        """{(pair, metric): threshold} for ipc pairs between two GPUs of one model."""
        out = {}
        for m in self.device:
            for a, b in self.pairs:
                if self.g.same_gpu(a, b) or self.g.model(a) != self.g.model(b):
                    continue
                limit, note = self.spec_limit("device_device", self.g.model(a), m.name, m.size)
                values = [row[(a, b)] for k, row in m.table.items() if k[0] in ("pairs", "latency") and (a, b) in row]
                if limit is None:
                    if note:
                        out[((a, b), m.name)] = {"note": note}
                    continue
                bad = sum(1 for v in values if (v < limit if m.worse == "low" else v > limit))
                out[((a, b), m.name)] = {"limit": rounded(limit), "bad": bad, "of": len(values),
                                         "verdict": decide(bad, len(values))}
        return out

    def pcie_readings(self, key):
        return [rec["ranks"][r]["pcie"] for rec in self.screening.probes for r in self.g.ranks_of(key)
                if rec["ranks"][r] and rec["ranks"][r].get("pcie", {}).get("known")]

    def pcie_link(self, key):
        """The GPU's PCIe link: current against its maximum (and the spec's least), per
        reading; a link below in at least 3/4 of its readings fails."""
        readings = self.pcie_readings(key)
        if not readings:
            whys = [rec["ranks"][r]["pcie"].get("why") for rec in self.screening.probes for r in self.g.ranks_of(key)
                    if rec["ranks"][r] and "pcie" in rec["ranks"][r]]
            return {"known": False, "why": whys[0] if whys else "not measured", "verdict": NOT_JUDGED}
        model = self.g.model_of(key)
        want_gen = self.spec_limit("host_device", model, "pcie_generation", None)[0] or 0
        want_width = self.spec_limit("host_device", model, "pcie_width", None)[0] or 0

        def low(x):
            return (x["generation"] < max(x["max_generation"], want_gen)
                    or x["width"] < max(x["max_width"], want_width))

        bad = [x for x in readings if low(x)]
        worst = min(readings, key=lambda x: (x["generation"], x["width"]))
        return {"known": True, "generation": worst["generation"], "max_generation": worst["max_generation"],
                "width": worst["width"], "max_width": worst["max_width"],
                "spec_generation": want_gen or None, "spec_width": want_width or None,
                "bad": len(bad), "of": len(readings), "verdict": decide(len(bad), len(readings))}

    def wrong_results(self):
        """{rank: failed checks} over every probe, screening and retests alike."""
        out = defaultdict(int)
        for rec in self.screening.probes:
            for r, v in enumerate(rec["ranks"]):
                if v and v.get("wrong"):
                    out[r] += v["wrong"]
        return dict(out)

    # ---- 5. NCCL -------------------------------------------------------------------------

    def nccl_entry(self, program, scope, result, ranks):
        entry = {"collective": program, "scope": scope, "measured": "records" in result}
        if not entry["measured"]:
            entry.update(note=f"not measured: {result['not_measured']}", verdict=NOT_JUDGED)
            return entry
        rec = result["records"][-1] if result["records"] else {}
        entry.update(bytes=rec.get("bytes"), busbw_gbps=rounded(rec.get("busbw_gbps")), peer_median=None,
                     ratio=None, peers=NOT_JUDGED, threshold=None, verdict=NOT_JUDGED)
        models = {self.g.model(r) for r in ranks}
        if len(models) == 1 and rec.get("busbw_gbps") is not None:
            figure = program.split("_")[0]
            limit, note = self.spec_limit("nccl", models.pop(), figure, rec.get("bytes"))
            if limit is not None:
                ok = rec["busbw_gbps"] >= limit
                entry["threshold"] = {"limit": rounded(limit), "verdict": PASS if ok else FAIL}
                entry["verdict"] = entry["threshold"]["verdict"]
            elif note:
                entry["threshold"] = {"note": note}
        return entry

    def judge_nccl(self, layout):
        out = []
        for program in sorted({p for p, _ in self.screening.nccl}):
            entries = []
            for (p, scope), result in self.screening.nccl.items():
                if p == program:
                    ranks = range(self.g.n) if scope == "all" else layout.ranks_of(scope)
                    entries.append(self.nccl_entry(program, scope, result, ranks))
            self.nccl_peers([e for e in entries if e["scope"] != "all" and e["measured"]])
            out += entries
        return out

    def nccl_peers(self, hosts):
        """Each host's busbw against the other hosts' (3 hosts at least): beyond the peer
        bandwidth tolerance of their median fails."""
        values = [e["busbw_gbps"] for e in hosts if e["busbw_gbps"] is not None]
        if len(values) < MIN_PEERS:
            return
        centre = median(values)
        for e in hosts:
            e["peer_median"], e["ratio"] = rounded(centre), rounded(e["busbw_gbps"] / centre)
            e["peers"] = FAIL if e["ratio"] < 1 - self.spec.peers["bandwidth_tolerance"] else PASS
            e["verdict"] = worst([e["peers"], e["verdict"]])

    # ---- the whole -------------------------------------------------------------------------

    def run(self, layout):
        self.suspect_list = self.suspects()
        for s in self.suspect_list:
            self.narrow(s, self.suspect_list)
        self.thresholds = self.figure_thresholds()
        self.pair_limits = self.pair_thresholds()
        self.pcie = {key: self.pcie_link(key) for key in self.g.keys}
        self.wrong = self.wrong_results()
        self.nccl = self.judge_nccl(layout)
        return self
