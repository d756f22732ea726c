"""Where the ranks run and how they are started (acceptance/README.md, "Placement"):

- inside a Slurm allocation ($SLURM_JOB_ID): on its nodes, `ntasks` ranks, started with
  mpirun inside the allocation (Open MPI reads it), or with srun when
  COLLSCOPE_LAUNCHER=srun (cluster/README.md: srun --mpi=pmix crashed about one
  multi-node step in 16 here; mpirun did not);
- else with $COLLSCOPE_HOSTFILE (`emulated-cluster up` exports it): on its hosts, as many
  ranks as it has slots, through mpirun --hostfile;
- else `--np N` local ranks.

Every launch starts all ranks in the same order, so rank r is the same process slot on
the same host in every launch; the few launches on one host alone (the collectives
within a host) name it.
"""

import os
import re
import shutil
import subprocess

from .spec import SpecError

FORWARDED = ("COLLSCOPE_DEBUG_SLOW_COMPUTE", "COLLSCOPE_DEBUG_STALL", "COLLSCOPE_DEBUG_CORRUPT",
             "COLLSCOPE_DEVICE_EMULATION", "COLLSCOPE_DEVICE_SLOWDOWN", "COLLSCOPE_NCCL_LIBRARY",
             "NCCL_MULTI_RANK_GPU_ENABLE")


class Placement:
    """kind: slurm, hostfile or local; hosts: [(name, ranks)] in rank order."""

    def __init__(self, kind, hosts, hostfile=None, launcher="mpirun"):
        self.kind, self.hosts, self.hostfile, self.launcher = kind, hosts, hostfile, launcher
        self.nranks = sum(n for _, n in hosts)

    def describe(self):
        return {"kind": self.kind, "hosts": [h for h, _ in self.hosts],
                "ranks_per_host": [n for _, n in self.hosts], "ranks": self.nranks,
                "hostfile": self.hostfile, "launcher": self.launcher}

    def command(self, argv, host=None):
        """The command that runs argv on every rank, or on `host`'s ranks only."""
        if self.launcher == "srun":
            if host is None:
                return ["srun", "--mpi=pmix", "-n", str(self.nranks)] + argv
            return ["srun", "--mpi=pmix", "-N", "1", "-n", str(self.ranks_on(host)), "-w", host] + argv
        cmd = ["mpirun"]
        for name in FORWARDED:
            if name in os.environ:
                cmd += ["-x", name]
        if host is not None:
            where = ["--host", f"{host}:{self.ranks_on(host)}"] if self.kind != "local" else []
            return cmd + ["-np", str(self.ranks_on(host))] + where + argv
        where = ["--hostfile", self.hostfile] if self.kind == "hostfile" else []
        return cmd + ["-np", str(self.nranks)] + where + argv

    def ranks_on(self, host):
        return dict(self.hosts)[host]


def parse_hostfile(path):
    """[(host, slots)] of an Open MPI hostfile (`name slots=N`, `#` comments)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SpecError(f"COLLSCOPE_HOSTFILE '{path}': cannot read: {e.strerror}") from None
    hosts = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"(\S+)(?:\s+slots\s*=\s*(\d+))?(?:\s+max_slots\s*=\s*\d+)?", line)
        if not m or (m.group(2) is not None and int(m.group(2)) < 1):
            raise SpecError(f"COLLSCOPE_HOSTFILE '{path}' line {number}: expected 'HOST slots=N', got '{line}'")
        hosts.append((m.group(1), int(m.group(2) or 1)))
    if not hosts:
        raise SpecError(f"COLLSCOPE_HOSTFILE '{path}' names no host")
    return hosts


def expand_tasks_per_node(text, nodes):
    """SLURM_TASKS_PER_NODE ("2(x3),1") as one count per node."""
    counts = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not m:
            raise SpecError(f"cannot read SLURM_TASKS_PER_NODE '{text}'")
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    if len(counts) != nodes:
        raise SpecError(f"SLURM_TASKS_PER_NODE '{text}' does not match {nodes} nodes")
    return counts


def slurm_placement(env):
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist or not shutil.which("scontrol"):
        raise SpecError("inside a Slurm allocation without SLURM_JOB_NODELIST or scontrol")
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True)
    nodes = out.stdout.split()
    if out.returncode != 0 or not nodes:
        raise SpecError(f"scontrol show hostnames '{nodelist}' failed: {out.stderr.strip()}")
    counts = expand_tasks_per_node(env.get("SLURM_TASKS_PER_NODE", "1"), len(nodes))
    launcher = env.get("COLLSCOPE_LAUNCHER", "mpirun")
    if launcher == "auto":
        launcher = "mpirun"
    if launcher not in ("mpirun", "srun"):
        raise SpecError(f"COLLSCOPE_LAUNCHER must be mpirun or srun here, got '{launcher}'")
    return Placement("slurm", list(zip(nodes, counts)), launcher=launcher)


def find_placement(env, np_local):
    if env.get("SLURM_JOB_ID"):
        return slurm_placement(env)
    if env.get("COLLSCOPE_HOSTFILE"):
        path = env["COLLSCOPE_HOSTFILE"]
        return Placement("hostfile", parse_hostfile(path), hostfile=path)
    return Placement("local", [(os.uname().nodename, np_local)])


class Layout:
    """Which host each rank is on, as the ranks themselves reported it (the compute
    probe's MPI_Get_processor_name), and the link class of every pair."""

    def __init__(self, rank_hosts):
        self.rank_hosts = list(rank_hosts)
        self.n = len(self.rank_hosts)
        self.hosts = list(dict.fromkeys(self.rank_hosts))   # in order of their first rank
        self.node = [self.hosts.index(h) for h in self.rank_hosts]

    def host(self, rank):
        return self.rank_hosts[rank]

    def ranks_of(self, host):
        return [r for r in range(self.n) if self.rank_hosts[r] == host]

    def link_class(self, a, b):
        return "intra-node" if self.rank_hosts[a] == self.rank_hosts[b] else "inter-node"

    def host_link(self, a, b):
        """The link a pair uses: "hA-hB" between hosts (in host order), "hA" within one."""
        return self.link_between(self.rank_hosts[a], self.rank_hosts[b])

    def link_between(self, ha, hb):
        ha, hb = sorted((ha, hb), key=self.hosts.index)
        return ha if ha == hb else f"{ha}-{hb}"

    def pairs(self):
        return [(a, b) for a in range(self.n) for b in range(a + 1, self.n)]
