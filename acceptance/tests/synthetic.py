"""A made-up cluster for the judge's tests: the figures a screening would have measured on
hosts h0 .. with `ranks_per_host` ranks each, from a rate per pair, a latency per pair and
a compute time per rank, with a little seeded noise; and a retest callback that measures
the same made-up links again.
"""

import os
import random

from collscope.accept.judge import Judge, ring_share, rounds_shares
from collscope.accept.measure import Screening
from collscope.accept.placement import Layout
from collscope.accept.spec import Spec, MEASURE_DEFAULTS

HERE = os.path.dirname(os.path.abspath(__file__))
INTER_GBPS, INTRA_GBPS = 0.025, 5.0
INTER_US, INTRA_US = 40.0, 2.0
COMPUTE_US = 150.0
SIZE, LAT_SIZE = 256 << 10, 8


def made_up_rounds(n):
    """A round-robin tournament for the made-up screening (the circle method, as pingpong's
    --pattern rounds; the judge takes whatever rounds the screening ran)."""
    m = n + n % 2
    rounds = []
    for r in range(m - 1):
        pairs = [(m - 1, r)] + [((r + i) % (m - 1), (r - i) % (m - 1)) for i in range(1, m // 2)]
        rounds.append([tuple(sorted(p)) for p in pairs if max(p) < n])
    return rounds


class Cluster:
    def __init__(self, hosts=4, ranks_per_host=2, noise=0.03, seed=1):
        self.layout = Layout([f"h{h}" for h in range(hosts) for _ in range(ranks_per_host)])
        self.rng = random.Random(seed)
        self.noise = noise
        self.rate_factor = {}      # (a, b) -> factor on the pair's rate
        self.latency_factor = {}   # (a, b) -> factor on the pair's latency
        self.compute_factor = {}   # rank -> factor on its compute time
        self.retest_rate_factor = None   # a different world for the retests (None: the same)
        self.retest_script = {}          # (a, b) -> factors for its successive retests
        self.retests = []
        self.collective_factor = {}      # host -> factor on its collectives' busbw
        self.collective_retest_factor = None   # every host's during the retests (None: as above)
        self.collective_launches = []

    # ---- faults --------------------------------------------------------------------------

    def slow_pairs(self, pairs, factor, latency=False):
        table = self.latency_factor if latency else self.rate_factor
        for a, b in pairs:
            table[tuple(sorted((a, b)))] = factor
        return self

    def slow_link(self, ha, hb, factor):
        L = self.layout
        return self.slow_pairs([(a, b) for a in L.ranks_of(ha) for b in L.ranks_of(hb)], factor)

    def slow_host(self, h, factor):
        L = self.layout
        return self.slow_pairs([p for p in L.pairs() if L.link_class(*p) == "inter-node"
                                and h in (L.host(p[0]), L.host(p[1]))], factor)

    def slow_rank(self, r, factor):
        return self.slow_pairs([p for p in self.layout.pairs() if r in p], factor)

    # ---- what a screening would have measured -------------------------------------------

    def jitter(self):
        return 1 + self.rng.uniform(-self.noise, self.noise)

    def rate(self, a, b, factors=None):
        base = INTRA_GBPS if self.layout.link_class(a, b) == "intra-node" else INTER_GBPS
        factors = self.rate_factor if factors is None else factors
        return base * factors.get(tuple(sorted((a, b))), 1.0)

    def latency(self, a, b):
        base = INTRA_US if self.layout.link_class(a, b) == "intra-node" else INTER_US
        return base * self.latency_factor.get(tuple(sorted((a, b))), 1.0)

    def matrix(self, value):
        n = self.layout.n
        return [[0.0 if a == b else value(a, b) * self.jitter() for b in range(n)] for a in range(n)]

    def screening(self, repeats=3, patterns=("pairs", "rounds", "ring")):
        s, L = Screening(), self.layout
        s.rounds = made_up_rounds(L.n)
        shares = rounds_shares(L, s.rounds)
        for _ in range(repeats):
            s.probes.append({"time_us": [COMPUTE_US * self.compute_factor.get(r, 1.0) * self.jitter()
                                         for r in range(L.n)], "hosts": L.rank_hosts})
            s.latency.append(self.matrix(self.latency))
            for p in patterns:
                if p == "pairs":
                    m = self.matrix(self.rate)
                elif p == "rounds":
                    m = self.matrix(lambda a, b: self.rate(a, b) / shares[tuple(sorted((a, b)))])
                else:
                    m = self.matrix(lambda a, b: self.rate(a, b) / ring_share(L, a, b))
                s.bandwidth.setdefault(p, []).append(m)
        return s

    # ---- retests ---------------------------------------------------------------------------

    def retest(self, a, b, size, iters):
        """Half round trips (us) of the pair alone."""
        self.retests.append((a, b, size))
        if size == LAT_SIZE:
            return [self.latency(a, b) * self.jitter() for _ in range(iters)]
        rate = self.rate(a, b, self.retest_rate_factor)
        script = self.retest_script.get((a, b))
        if script:
            rate *= script.pop(0)
        return [size / (rate * 1e3) * self.jitter() for _ in range(iters)]

    # ---- collectives within each host and over all ---------------------------------------

    def collective_record(self, program, scope, factors):
        busbw = 4.0 * factors.get(scope, 1.0)
        times = [SIZE / (busbw * 1e3) * self.jitter() for _ in range(5)]
        return {"collective": program, "bytes": SIZE, "busbw_gbps": busbw, "time_us": SIZE / (busbw * 1e3),
                "times_us": times, "volume": "ok", "wrong": 0}

    def collectives(self, programs=("allreduce_ring",)):
        out = {}
        for p in programs:
            for scope in ["all"] + self.layout.hosts:
                out[(p, scope)] = [self.collective_record(p, scope, self.collective_factor)]
        return out

    def collective(self, program, host):
        self.collective_launches.append(host)
        factors = self.collective_factor
        if self.collective_retest_factor is not None:   # the retests' world: every host alike
            factors = {h: self.collective_retest_factor for h in self.layout.hosts}
        return [self.collective_record(program, host, factors)]


class Retests:
    """What accept's Retester does, on the made-up cluster: pairs, collectives, probes."""

    def __init__(self, cluster):
        self.cluster = cluster

    def __call__(self, a, b, size, iters):
        return self.cluster.retest(a, b, size, iters)

    def collective(self, program, host):
        return self.cluster.collective(program, host)


def spec(classes=None, baseline=None, **measure):
    settings = dict(MEASURE_DEFAULTS, bandwidth_bytes=SIZE, latency_bytes=LAT_SIZE, **measure)
    return Spec(classes=classes or {}, measure=settings)


def judge(cluster, spec_=None, baseline=None, collectives=None, repeats=3, problems=()):
    s = cluster.screening(repeats)
    return Judge(cluster.layout, s, collectives or {}, spec_ or spec(), baseline, Retests(cluster),
                 problems).run()


def blame_of(verdict):
    return sorted((b["kind"], b["where"]) for b in verdict["blame"])
