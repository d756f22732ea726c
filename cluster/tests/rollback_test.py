#!/usr/bin/python3
"""A failed or interrupted `up` leaves no half-built cluster (ctest cluster_rollback).

The network is built first, then Slurm; a stand-in `slurmd` early on PATH makes the Slurm
step fail or hang at will:
  - a slurmd that exits 1: `up` exits 1 and takes down the hosts it had made;
  - a slurmd that starts but never registers (so `up` waits for the nodes): Ctrl-C (SIGINT)
    and SIGTERM to `up` while it waits; it exits 130 and takes everything down, the
    stand-ins running on the hosts included;
  - after each: no namespace, link, Slurm daemon or process on a host is left, no
    cluster.json, and a normal `up` / `down` works again;
  - the cluster's directory deleted while it is up: `down` still finds and removes
    everything (the hosts from the bridge's ports, the Slurm daemons by their environment).
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, check

FAILING_SLURMD = "#!/bin/sh\necho 'stand-in slurmd: failing' >&2\nexit 1\n"
# Starts like the real one (detaches, the starter returns) but never talks to slurmctld.
HANGING_SLURMD = """#!/bin/sh
(exec sleep 600) </dev/null >/dev/null 2>&1 &
touch "$STAND_IN_MARKS/$(hostname)"
"""


def stand_in(scratch, text):
    """A directory holding a `slurmd` script, to put first on PATH."""
    folder = tempfile.mkdtemp(dir=scratch)
    path = os.path.join(folder, "slurmd")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return folder


def check_clean(cluster, what):
    left = cluster.leftovers()
    check(not left, f"{what}: nothing left ({left})")
    check(not os.path.exists(os.path.join(cluster.directory, "cluster.json")), f"{what}: no cluster.json")


def test_failing_slurmd(cluster, scratch):
    env = dict(cluster.base_env, PATH=stand_in(scratch, FAILING_SLURMD) + ":" + os.environ["PATH"])
    r = cluster.command("up", "--hosts", "3", env=env)
    check(r.returncode == 1 and "did not come up" in r.stderr and "taking down what was built" in r.stderr,
          f"slurmd fails: up exits 1 and takes down what it built ({r.returncode})")
    check_clean(cluster, "slurmd fails")


def test_interrupted(cluster, scratch, sig):
    marks = tempfile.mkdtemp(dir=scratch)
    env = dict(cluster.base_env, PATH=stand_in(scratch, HANGING_SLURMD) + ":" + os.environ["PATH"],
               STAND_IN_MARKS=marks, COLLSCOPE_SLURM_WAIT="60")
    up = subprocess.Popen([clusterlib.EMULATED, "up", "--hosts", "3"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while len(os.listdir(marks)) < 3 and time.time() < deadline and up.poll() is None:
        time.sleep(0.05)
    check(sorted(os.listdir(marks)) == ["h0", "h1", "h2"] and up.poll() is None,
          f"the stand-in slurmd runs on h0 .. h2 and up waits for the nodes")
    start = time.time()
    up.send_signal(sig)
    _, err = up.communicate(timeout=60)
    name = signal.Signals(sig).name
    check(up.returncode == 130 and "taking down what was built" in err,
          f"{name} during up: exit 130, takes down what it built, in {time.time() - start:.1f}s")
    check_clean(cluster, f"{name} during up")


def test_directory_deleted(cluster):
    r = cluster.command("up", "--hosts", "3")
    check(r.returncode == 0, f"up ({r.returncode})")
    shutil.rmtree(cluster.directory)
    r = cluster.command("down")
    check(r.returncode == 0, f"down with the directory deleted: exit 0 ({r.stderr.strip()[-300:]})")
    check_clean(cluster, "down with the directory deleted")
    os.makedirs(cluster.directory)


def test(bin_dir):
    cluster = Cluster(bin_dir, 3, slurm=True)   # its directory and environment; `up` by hand
    scratch = tempfile.mkdtemp(prefix="collscope-cluster-rollback.")
    try:
        test_failing_slurmd(cluster, scratch)
        test_interrupted(cluster, scratch, signal.SIGINT)
        test_interrupted(cluster, scratch, signal.SIGTERM)
        test_directory_deleted(cluster)
        with cluster:
            check(cluster.command("status").returncode == 0, "afterwards a normal up works")
        check_clean(cluster, "afterwards down")
    finally:
        cluster.take_down()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(clusterlib.main(test, slurm=True))
