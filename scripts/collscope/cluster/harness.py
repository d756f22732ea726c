"""Helpers for tests on an emulated cluster (scripts/emulated-cluster): bring a cluster up
for the test, run a program on N hosts x M ranks and get its JSON records, and always take
the cluster down again, on a failure, Ctrl-C or SIGTERM too, checking that nothing is left.

    from collscope.cluster import harness as clusterlib
    from collscope.cluster.harness import Cluster, check

    def test(bin_dir):
        with Cluster(bin_dir, hosts=4) as cluster:
            records = cluster.mpirun(["allreduce_ring", "-b", "1K", "-e", "1M"],
                                     hosts=4, ranks_per_host=2)
            check(all(r["wrong"] == 0 for r in records), "results exact")

    if __name__ == "__main__":
        sys.exit(clusterlib.main(test))   # 0 passed, 1 failed, 77 skipped (reason printed)

A test is skipped only where this machine cannot make network namespaces (not root, no
CAP_SYS_ADMIN / CAP_NET_ADMIN) or lacks ip, tc, mpirun (or Slurm, for main(..., slurm=True)).
Every cluster lives in its own temporary directory; the host names h0 .. are the same for
all, so tests on emulated clusters run one at a time (ctest RESOURCE_LOCK). A test that was
killed (SIGKILL, a lost machine) cannot take its cluster down; the next test finds it by the
owner written on the bridge, sees that the test process recorded there is gone, and takes
it down first. A cluster made by `scripts/emulated-cluster up` by hand is never touched.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ..paths import ROOT, SCRIPTS
from . import network   # what is left of a cluster

EMULATED = os.path.join(SCRIPTS, "emulated-cluster")

SKIP = 77
TEST_DIR_PREFIX = "collscope-cluster-test."
OWNER_PID = "test.pid"   # in a test cluster's directory: the pid of the test that made it
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "sinfo")


class Failed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failed(what)
    print(f"ok - {what}", flush=True)


def mpi_env():
    """The environment with scripts/mpi-env sourced (Open MPI as root, oversubscription)."""
    out = subprocess.run(["bash", "-c", f"source {SCRIPTS}/mpi-env && env -0"],
                         capture_output=True, check=True).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


def cannot_run(slurm=False):
    """Why emulated-cluster tests cannot run on this machine, or None."""
    needed = list(network.TOOLS) + ["mpirun"] + (list(SLURM_TOOLS) if slurm else [])
    missing = [tool for tool in needed if not shutil.which(tool)]
    if missing:
        return f"not installed: {' '.join(missing)}"
    probe = subprocess.run(["unshare", "--net", "--mount", "--uts", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return ("cannot create network namespaces here (needs root with CAP_SYS_ADMIN and "
                f"CAP_NET_ADMIN): {probe.stderr.strip()}")
    return None


def parse_exports(text):
    """{NAME: value} from `export NAME=value` lines (values as shlex.quote wrote them)."""
    values = {}
    for line in text.splitlines():
        m = re.fullmatch(r"export (\w+)=(.*)", line.strip())
        if m:
            values[m.group(1)] = shlex.split(m.group(2))[0]
    return values


def slurm_processes(slurm_dir):
    """Pids of processes started by a cluster's Slurm (its marker in their environment)."""
    marker = f"COLLSCOPE_SLURM_CLUSTER={slurm_dir}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


class Cluster:
    """An emulated cluster for the time of a `with` block (see the module's comment)."""

    def __init__(self, bin_dir, hosts, flags=(), slurm=False):
        self.bin_dir, self.hosts = bin_dir, hosts
        self.flags = ["--hosts", str(hosts), *flags] + ([] if slurm else ["--no-slurm"])
        self.directory = tempfile.mkdtemp(prefix=TEST_DIR_PREFIX)
        os.chmod(self.directory, 0o755)   # munged wants the path to its socket searchable by all
        with open(os.path.join(self.directory, OWNER_PID), "w") as f:
            f.write(f"{os.getpid()}\n")
        self.base_env = dict(mpi_env(), COLLSCOPE_CLUSTER_DIR=self.directory)
        self.env = dict(self.base_env)
        self.exports = {}
        self.up_seconds = self.down_seconds = None

    def names(self):
        return [f"h{k}" for k in range(self.hosts)]

    def command(self, *args, env=None, timeout=120):
        """scripts/emulated-cluster ARGS... on this cluster's directory."""
        return subprocess.run([EMULATED, *args], env=env or self.base_env, capture_output=True,
                              text=True, timeout=timeout)

    def __enter__(self):
        start = time.time()
        result = self.command("up", *self.flags)
        self.up_seconds = time.time() - start
        if result.returncode != 0:
            self.take_down()
            raise Failed(f"emulated-cluster up {' '.join(self.flags)}: exit {result.returncode}: "
                         f"{result.stderr.strip()}")
        self.exports = parse_exports(result.stdout)
        self.env = dict(self.base_env, **self.exports)
        print(f"# up {' '.join(self.flags)} in {self.up_seconds:.1f}s", flush=True)
        return self

    def __exit__(self, kind, value, traceback):
        left = self.take_down()
        if left and kind is None:
            raise Failed(f"left after down: {', '.join(left)}")
        if left:
            print(f"# left after down: {', '.join(left)}", file=sys.stderr)
        if not left and kind is None:
            shutil.rmtree(self.directory, ignore_errors=True)
        else:
            print(f"# kept {self.directory} (the cluster's logs)", file=sys.stderr)
        return False

    def take_down(self):
        """`down`, then what is left of the cluster (namespaces, links, processes)."""
        start = time.time()
        result = self.command("down")
        self.down_seconds = time.time() - start
        left = self.leftovers()
        if result.returncode != 0:
            left.append(f"down exited {result.returncode}: {result.stderr.strip()}")
        return left

    def leftovers(self):
        slurm_dir = os.path.join(self.directory, "slurm")
        return (network.leftovers(self.names())
                + [f"Slurm process {p}" for p in slurm_processes(slurm_dir)])

    def run(self, argv, timeout=180):
        """A command in the cluster's environment (the exports of `up`)."""
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)

    def mpirun(self, program_args, hosts, ranks_per_host, timeout=180):
        """Runs BIN_DIR/PROGRAM ARGS... --format jsonl as hosts x ranks_per_host ranks (ranks
        0 .. M-1 on h0, M .. 2M-1 on h1, ...) and returns its JSON records."""
        hostfile = os.path.join(self.directory, f"hostfile.{hosts}x{ranks_per_host}")
        with open(hostfile, "w") as f:
            f.writelines(f"h{k} slots={ranks_per_host}\n" for k in range(hosts))
        program, *args = program_args
        argv = ["mpirun", "-np", str(hosts * ranks_per_host), "--hostfile", hostfile,
                os.path.join(self.bin_dir, program), *args, "--format", "jsonl"]
        result = self.run(argv, timeout)
        if result.returncode != 0:
            raise Failed(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()[-2000:]}")
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def shaped_bytes(self):
        """Bytes every host sent through its shaped classes (to the other hosts), in all."""
        return sum(sent for k in range(self.hosts)
                   for _, sent in network.class_stats(network.HOST_DEVICE, f"h{k}").values())


def abandoned_test_cluster():
    """The directory of a test cluster that is up although the test that made it is gone,
    or None. Only clusters in a test directory count; one without a pid file is from a test
    killed before it wrote one (or an older suite), never from `up` by hand."""
    owner = network.bridge_owner()
    if not owner or not os.path.basename(owner).startswith(TEST_DIR_PREFIX):
        return None
    try:
        with open(os.path.join(owner, OWNER_PID)) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return owner
    return None if network.alive(pid) else owner


def take_down_abandoned():
    owner = abandoned_test_cluster()
    if owner is None:
        return
    print(f"# taking down the cluster of {owner}, whose test is gone", flush=True)
    env = dict(mpi_env(), COLLSCOPE_CLUSTER_DIR=owner)
    result = subprocess.run([EMULATED, "down"], env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise Failed(f"cannot take down the abandoned cluster of {owner}: {result.stderr.strip()}")


def interrupted(_number, _frame):
    raise KeyboardInterrupt   # so that `with Cluster(...)` takes the cluster down


def main(test, slurm=False):
    """Runs test(bin_dir); exit status 0 passed, 1 failed, 77 skipped."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()
    reason = cannot_run(slurm)
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    start = time.time()
    try:
        take_down_abandoned()
        test(os.path.abspath(args.bin_dir))
    except (Failed, subprocess.TimeoutExpired) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        print(f"FAILED in {time.time() - start:.0f}s")
        return 1
    print(f"passed in {time.time() - start:.0f}s")
    return 0
