"""Made-up GPU nodes for the GPU judge's tests: what gpu_probe and the ipc ping-pong would
have reported on hosts h0 .. with `ranks_per_host` ranks each, `share` ranks to a GPU,
from a rate per figure and rank, a rate per ipc pair and a PCIe link per rank, with a
little seeded noise; and a retest callback that measures the same made-up GPUs again.
"""

import os
import random

from collscope.accept.gpu_judge import GpuJudge
from collscope.accept.gpu_measure import GpuScreening
from collscope.accept.gpus import GpuLayout
from collscope.accept.judge import Judge
from collscope.accept.measure import Screening
from collscope.accept.placement import Layout
from collscope.accept.spec import MEASURE_DEFAULTS, PEER_DEFAULTS, Spec
from collscope.accept import gpu_verdict

HERE = os.path.dirname(os.path.abspath(__file__))
FIGURES_GBPS = {"d2d": 2000.0, "reduce": 1350.0, "h2d": 50.0, "d2h": 50.0, "bidir": 90.0}
IPC_GBPS = {True: 900.0, False: 300.0}   # ranks on one GPU, on two
IPC_US = 12.0
CALLS = 5
H200 = "NVIDIA H200"


class GpuWorld:
    def __init__(self, hosts=1, ranks_per_host=4, share=1, noise=0.03, seed=1, models=None):
        self.hosts = [f"h{h}" for h in range(hosts) for _ in range(ranks_per_host)]
        self.n = len(self.hosts)
        self.gpus = []
        for r in range(self.n):
            local = r % ranks_per_host
            model = models[r] if models else H200
            self.gpus.append({"index": local // share, "name": model, "uuid": f"GPU-{self.hosts[r]}-{local // share}",
                              "pci_bus_id": f"0000:{local // share:02x}:00.0", "emulated": False})
        self.rng, self.noise = random.Random(seed), noise
        self.figure_factor = {}     # (rank, figure) -> factor on its rate
        self.pair_factor = {}       # (a, b) -> factor on the pair's ipc rate
        self.pcie = {}              # rank -> (generation, max, width, max)
        self.retest_world = None    # another set of figure factors for the retests (None: the same)
        self.retest_pair_factor = {}   # (a, b) -> a factor on the pair's ipc rate in the retests only
        self.probes, self.pair_retests = [], []

    # ---- faults ------------------------------------------------------------------------------

    def slow_gpu(self, r, factor, figures=("d2d",)):
        for f in figures:
            self.figure_factor[(r, f)] = factor
        return self

    def slow_paths(self, r, factor):
        for other in range(self.n):
            if other != r and self.hosts[other] == self.hosts[r]:
                self.pair_factor[tuple(sorted((r, other)))] = factor
        return self

    # ---- what gpu_probe and pingpong would have said ---------------------------------------

    def jitter(self):
        return 1 + self.rng.uniform(-self.noise, self.noise)

    def layout(self):
        return GpuLayout(self.hosts, self.gpus)

    def probe(self, ranks=None, factors=None):
        factors = self.figure_factor if factors is None else factors
        ranks = list(range(self.n)) if ranks is None else ranks
        out = []
        for r in range(self.n):
            if r not in ranks:
                out.append(None)
                continue
            v = {f: [base * factors.get((r, f), 1.0) * self.jitter() for _ in range(CALLS)]
                 for f, base in FIGURES_GBPS.items()}
            gen = self.pcie.get(r, (5, 5, 16, 16))
            v["pcie"] = {"known": True, "generation": gen[0], "max_generation": gen[1], "width": gen[2],
                         "max_width": gen[3]}
            v["wrong"] = 0
            out.append(v)
        return {"probe": "gpu", "hosts": self.hosts, "gpus": self.gpus, "ranks": out}

    def ipc_rate(self, a, b):
        same = self.gpus[a]["uuid"] == self.gpus[b]["uuid"] and self.hosts[a] == self.hosts[b]
        return IPC_GBPS[same] * self.pair_factor.get(tuple(sorted((a, b))), 1.0)

    def host_matrix(self, ranks, value):
        return [[0.0 if a == b else value(a, b) * self.jitter() for b in ranks] for a in ranks]

    def screening(self, repeats=3, patterns=("pairs", "rounds", "ring")):
        s = GpuScreening()
        for _ in range(repeats):
            s.probes.append(self.probe())
            for h in dict.fromkeys(self.hosts):
                ranks = [r for r in range(self.n) if self.hosts[r] == h]
                key = None if len(set(self.hosts)) == 1 else h
                s.ranks[key] = ranks
                s.latency.setdefault(key, []).append(self.host_matrix(ranks, lambda a, b: IPC_US))
                for p in patterns:
                    s.bandwidth.setdefault(p, {}).setdefault(key, []).append(self.host_matrix(ranks, self.ipc_rate))
        return s

    # ---- retests -------------------------------------------------------------------------

    def retest_probe(self, ranks):
        self.probes.append(list(ranks))
        return self.probe(ranks, self.retest_world)

    def pair(self, a, b, size, iters):
        self.pair_retests.append((a, b, size))
        if size == LAT_SIZE:
            return [IPC_US * self.jitter() for _ in range(iters)]
        rate = self.ipc_rate(a, b) * self.retest_pair_factor.get((a, b), 1.0)
        return [size / (rate * 1e3) * self.jitter() for _ in range(iters)]


LAT_SIZE, BW_SIZE = 8, 64 << 20


class Retests:
    def __init__(self, world):
        self.world = world

    def probe(self, ranks):
        return self.world.retest_probe(ranks)

    def pair(self, a, b, size, iters):
        return self.world.pair(a, b, size, iters)


def spec(gpu_classes=None, **measure):
    settings = dict(MEASURE_DEFAULTS, latency_bytes=LAT_SIZE, device_bandwidth_bytes=BW_SIZE, **measure)
    return Spec(measure=settings, peers=dict(PEER_DEFAULTS), gpu_classes=gpu_classes or {})


def judge(world, spec_=None, nccl=None, repeats=3, classes=("gpu_memory", "host_device", "device_device", "nccl")):
    """The whole verdict of a run that measured the GPU classes alone."""
    s = spec_ or spec()
    layout = Layout(world.hosts)
    screening = world.screening(repeats)
    screening.nccl = nccl or {}
    verdict = Judge(layout, Screening(), {}, s, None, None, (), links=False).run()
    gj = GpuJudge(world.layout(), screening, s, Retests(world)).run(layout)
    gpu_verdict.extend(verdict, gj, list(classes), "made up")
    return verdict


def blame_of(verdict):
    return sorted((b["kind"], b["where"]) for b in verdict["blame"])
