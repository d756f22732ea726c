"""What scripts/accept runs on GPU nodes (acceptance/README.md, "GPU nodes"), launch by
launch, through measure.Runner:

  identify   gpu_probe --identify, once: whether every rank has device memory, and which
             GPU each uses (--memory auto decides by it);
  per repeat, after that repeat's link screening:
    gpu_probe              every rank's GPU memory and PCIe link, one rank at a time;
    pingpong -m device --path ipc  on each host's ranks (the ipc path joins the ranks of
             one node): every pair at latency_bytes, then each pattern at
             device_bandwidth_bytes;
  nccl       allreduce_nccl and alltoall_nccl --timing loop at nccl_bytes, over all hosts
             and within each host; where NCCL cannot run (the program refuses: the
             emulated device, no libnccl, ranks sharing a GPU before NCCL 2.30), the
             refusal's line is kept as the reason it was not measured;
  retests    gpu_probe --ranks REFERENCE,SUSPECT; one pair alone over ipc on its host.
"""

import os
import re

from .measure import RuntimeFailure
from .spec import SpecError

NCCL_PROGRAMS = ("allreduce_nccl", "alltoall_nccl")


class GpuScreening:
    """Every repeat's GPU figures: the probes, and per host the ipc ping-pong matrices
    (in the host's own rank numbers; `ranks[host]` maps them to the run's)."""

    def __init__(self):
        self.probes = []      # gpu_probe records, one per repeat
        self.ranks = {}       # host (None: one launch over every rank) -> the run's ranks
        self.latency = {}     # host -> [matrix (us) per repeat]
        self.bandwidth = {}   # pattern -> host -> [matrix (GB/s) per repeat]
        self.nccl = {}        # (program, scope) -> {"records": [...]} or {"not_measured": why}


def check_slowdown(env):
    """COLLSCOPE_DEVICE_SLOWDOWN, the device runtime's test hook (collectives/device/
    slowdown.hpp): RANK:FACTOR[:memory|pcie|peer], factor 1 to 1000; SpecError else."""
    text = env.get("COLLSCOPE_DEVICE_SLOWDOWN")
    if not text:
        return
    m = re.fullmatch(r"\d{1,7}:(\d+(?:\.\d*)?)(?::(?:memory|pcie|peer))?", text)
    if not m or not 1 <= float(m.group(1)) <= 1000:
        raise SpecError(f"COLLSCOPE_DEVICE_SLOWDOWN must be RANK:FACTOR[:memory|pcie|peer] (factor 1 to 1000), "
                        f"got '{text}'")


def probe_args(settings, ranks=None):
    s = settings
    args = ["-b", str(s["gpu_bytes"]), "--pcie-bytes", str(s["pcie_bytes"]), "-n", str(s["gpu_iters"]),
            "-w", "2"]
    return args + (["--ranks", ",".join(map(str, ranks))] if ranks else [])


def identify(runner):
    records = runner.launch("gpu-identify", "gpu_probe", ["--identify"], results=False)
    if len(records) != 1 or records[0].get("probe") != "gpu":
        raise RuntimeFailure("gpu-identify: gpu_probe printed no record")
    return records[0]


def memory_kind(setting, ident):
    """("device" or "host", why) for measure.memory = auto, host or device."""
    missing = [(r, why) for r, (ok, why) in enumerate(zip(ident["available"], ident["unavailable"])) if not ok]
    if setting == "device" and missing:
        r, why = missing[0]
        raise SpecError(f"--memory device: rank {r} has no device memory: {why}")
    if setting == "host" or missing:
        return "host", (f"rank {missing[0][0]} has no device memory: {missing[0][1]}" if missing
                        else "--memory host")
    return "device", "every rank has device memory" if setting == "auto" else "--memory device"


def gpu_probe(runner, name, ranks=None):
    records = runner.launch(name, "gpu_probe", probe_args(runner.settings, ranks), results=False)
    if len(records) != 1 or records[0].get("probe") != "gpu":
        raise RuntimeFailure(f"{name}: gpu_probe printed no record")
    return records[0]


def ipc_scopes(layout):
    """{host or None: its ranks}: the launches the ipc ping-pong needs (one per host with
    at least two ranks; None, every rank at once, on one host)."""
    if len(layout.hosts) == 1:
        return {None: list(range(layout.n))}
    return {h: layout.ranks_of(h) for h in layout.hosts if len(layout.ranks_of(h)) >= 2}


def device_args(settings):
    return ["-m", "device", "--path", "ipc", "--wait", settings["device_wait"]]


def device_matrices(runner, screening, layout, patterns, repeat):
    s = runner.settings
    for host, ranks in ipc_scopes(layout).items():
        tag = f"-{host}" if host else ""
        screening.ranks[host] = ranks
        lat = runner.pingpong(f"device-latency{tag}-r{repeat}",
                              device_args(s) + ["--pairs", "all", "-n", str(s["latency_iters"]), "-w", "2"],
                              s["latency_bytes"], host)
        screening.latency.setdefault(host, []).append(lat["latency_us_matrix"])
        for p in patterns:
            args = ["--pairs", "all"] if p == "pairs" else ["--pattern", p]
            bw = runner.pingpong(f"device-{p}{tag}-r{repeat}",
                                 device_args(s) + args + ["-n", str(s["iters"]), "-w", str(s["warmup"])],
                                 s["device_bandwidth_bytes"], host)
            screening.bandwidth.setdefault(p, {}).setdefault(host, []).append(bw["bw_gbps_matrix"])


def screen_gpus(runner, screening, layout, classes, patterns, repeat):
    """One repeat of the GPU classes in `classes`."""
    if {"gpu_memory", "host_device"} & set(classes):
        screening.probes.append(gpu_probe(runner, f"gpu-r{repeat}"))
    if "device_device" in classes and ipc_scopes(layout):
        device_matrices(runner, screening, layout, patterns, repeat)


def nccl_runs(runner, screening, layout):
    """allreduce_nccl and alltoall_nccl over all hosts, then within each host; a program
    that refuses to run over all hosts is not tried within them (the same reason)."""
    s = runner.settings
    args = ["-b", str(s["nccl_bytes"]), "-e", str(s["nccl_bytes"]), "-n", str(s["nccl_iters"]),
            "-w", str(max(1, s["warmup"])), "--timing", "loop", "--timeout", str(s["timeout"])]
    scopes = [None] + ([h for h in layout.hosts if len(layout.ranks_of(h)) >= 2] if len(layout.hosts) > 1 else [])
    for program in NCCL_PROGRAMS:
        if not os.access(os.path.join(runner.bin_dir, program), os.X_OK):
            for h in scopes:
                screening.nccl[(program, h or "all")] = {"not_measured": f"{program} not found in {runner.bin_dir}"}
            continue
        for host in scopes:
            scope = host or "all"
            records = runner.launch(f"{program}-{scope}", program, args, host=host, quiet_ok=(0, 2))
            launch = runner.launches[-1]
            if launch["exit"] == 2:
                why = launch.get("error", f"{program} exited 2")
                for h in scopes:
                    screening.nccl[(program, h or "all")] = {"not_measured": why}
                break
            for r in records:
                runner.note_problems(f"{program}-{scope}", r)
            screening.nccl[(program, scope)] = {"records": records}


class GpuRetester:
    """What the GPU judge may ask for after screening: ranks' GPUs measured again, one
    pair alone over ipc on its host."""

    def __init__(self, runner, layout):
        self.runner, self.layout, self.count = runner, layout, 0

    def probe(self, ranks):
        self.count += 1
        return gpu_probe(self.runner, f"gpu-retest{self.count}-{'-'.join(map(str, ranks))}", ranks)

    def pair(self, a, b, size, iters):
        """Half round trips (us) of ranks a and b alone over ipc."""
        host = None if len(self.layout.hosts) == 1 else self.layout.host(a)
        ranks = ipc_scopes(self.layout)[host]
        la, lb = sorted((ranks.index(a), ranks.index(b)))
        s = self.runner.settings
        r = self.runner.pingpong(f"device-retest-{a}-{b}-{size}B",
                                 device_args(s) + ["--pairs", f"{la},{lb}", "-n", str(iters), "-w", str(s["warmup"])],
                                 size, host)
        return r["times_us"]
