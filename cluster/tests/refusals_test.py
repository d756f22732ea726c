#!/usr/bin/python3
"""scripts/emulated-cluster's refusals (ctest cluster_refusals): each is one line on stderr,
the documented exit status, and nothing built.

  2 usage: no command, no --hosts, --hosts 0 / 65 / x, bad rate (100mbps, fast, 0mbit),
    bad delay (2, 1ks), unknown host in --link / --host, malformed --link / --host, a link
    from a host to itself, a link given twice, an unknown flag;
  3 this machine cannot: ip/tc missing from PATH; Slurm missing (without --no-slurm); no
    permission to create namespaces (capabilities dropped with setpriv); --delay without
    the kernel's netem qdisc (where it lacks it);
  1 conflicts: a namespace h1 that is not the cluster's (left alone), an address of
    198.18.0.0/24 already on a link of the root namespace.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, check

USAGE = [
    ([], "arguments are required"),
    (["up"], "--hosts"),
    (["up", "--hosts", "0"], "--hosts must be 1 .. 64"),
    (["up", "--hosts", "65"], "--hosts must be 1 .. 64"),
    (["up", "--hosts", "x"], "invalid int value"),
    (["up", "--hosts", "4", "--rate", "100mbps"], "bad rate '100mbps'"),
    (["up", "--hosts", "4", "--rate", "fast"], "bad rate 'fast'"),
    (["up", "--hosts", "4", "--rate", "0mbit"], "out of range"),
    (["up", "--hosts", "4", "--delay", "2"], "bad delay '2'"),
    (["up", "--hosts", "4", "--delay", "1ks"], "bad delay '1ks'"),
    (["up", "--hosts", "4", "--link", "h1-h9:10mbit"], "unknown host 'h9'"),
    (["up", "--hosts", "4", "--host", "h4:10mbit"], "unknown host 'h4'"),
    (["up", "--hosts", "4", "--link", "h1:10mbit"], "bad --link 'h1:10mbit'"),
    (["up", "--hosts", "4", "--link", "h1-x2:10mbit"], "bad host 'x2'"),
    (["up", "--hosts", "4", "--host", "h1"], "bad --host 'h1'"),
    (["up", "--hosts", "4", "--host", "h1:10"], "bad rate '10'"),
    (["up", "--hosts", "4", "--link", "h2-h2:10mbit"], "joins a host to itself"),
    (["up", "--hosts", "4", "--link", "h1-h2:10mbit", "--link", "h2-h1:20mbit"], "given twice"),
    (["up", "--hosts", "4", "--bogus"], "unrecognized arguments: --bogus"),
    (["frobnicate"], "invalid choice"),
]


def one_line(result, status, phrase):
    lines = result.stderr.strip().splitlines()
    return result.returncode == status and len(lines) == 1 and phrase in lines[0] and not result.stdout


def nothing_built(cluster):
    left = clusterlib.network.leftovers(cluster.names())
    return not left and not os.path.exists(os.path.join(cluster.directory, "cluster.json"))


def path_without(tools, directory):
    """A PATH directory of links to every program on PATH but `tools`."""
    os.makedirs(directory, exist_ok=True)
    for folder in os.environ["PATH"].split(":"):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target = os.path.join(directory, name)
            if name not in tools and not os.path.exists(target):
                os.symlink(os.path.join(folder, name), target)
    return directory


def test_usage(cluster):
    for args, phrase in USAGE:
        r = cluster.command(*args)
        check(one_line(r, 2, phrase), f"{' '.join(args) or '(nothing)'}: exit 2, one line with '{phrase}'"
                                      f" ({r.returncode}: {r.stderr.strip()})")
    check(nothing_built(cluster), "usage errors built nothing")


def test_unsupported(cluster, scratch):
    env = dict(cluster.base_env, PATH=path_without({"ip", "tc"}, os.path.join(scratch, "no-ip")))
    r = cluster.command("up", "--hosts", "2", "--no-slurm", env=env)
    check(one_line(r, 3, "not installed: ip tc"), f"no ip, tc: exit 3, one line ({r.stderr.strip()})")
    env = dict(cluster.base_env, PATH=path_without({"slurmd", "slurmctld", "munged"}, os.path.join(scratch, "no-slurm")))
    r = cluster.command("up", "--hosts", "2", env=env)
    check(one_line(r, 3, "--no-slurm"), f"no Slurm: exit 3, one line naming --no-slurm ({r.stderr.strip()})")
    r = subprocess.run(["setpriv", "--inh-caps=-all", "--bounding-set=-sys_admin,-net_admin",
                        clusterlib.EMULATED, "up", "--hosts", "2", "--no-slurm"],
                       env=cluster.base_env, capture_output=True, text=True)
    check(one_line(r, 3, "cannot create network namespaces"),
          f"no CAP_SYS_ADMIN/CAP_NET_ADMIN: exit 3, one line ({r.stderr.strip()})")
    r = cluster.command("up", "--hosts", "2", "--no-slurm", "--delay", "1ms")
    if r.returncode == 3:
        check(one_line(r, 3, "netem"), f"--delay without netem: exit 3, one line ({r.stderr.strip()})")
    else:
        check(r.returncode == 0, "--delay with netem: up works (shaping_test.py measures it)")
        cluster.command("down")
    check(nothing_built(cluster), "refused ups built nothing")


def test_conflicts(cluster):
    subprocess.run(["ip", "netns", "add", "h1"], check=True)
    try:
        r = cluster.command("up", "--hosts", "4", "--no-slurm")
        check(one_line(r, 1, "h1 already exist"), f"a namespace h1 not ours: exit 1, one line ({r.stderr.strip()})")
        check("h1" in clusterlib.network.namespaces(), "the foreign namespace h1 is left alone")
    finally:
        subprocess.run(["ip", "netns", "del", "h1"], check=True)
    check(nothing_built(cluster), "the conflict built nothing")
    subprocess.run(["ip", "link", "add", "cst-a", "type", "veth", "peer", "name", "cst-b"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", "198.18.0.200/24", "dev", "cst-a"], check=True)
        r = cluster.command("up", "--hosts", "2", "--no-slurm")
        check(one_line(r, 1, "overlaps the cluster's subnet"),
              f"198.18.0.200/24 already in use: exit 1, one line ({r.stderr.strip()})")
    finally:
        subprocess.run(["ip", "link", "del", "cst-a"], check=True)
    check(nothing_built(cluster), "the address conflict built nothing")


def test(bin_dir):
    cluster = Cluster(bin_dir, 4)   # not brought up: only its directory and environment
    scratch = tempfile.mkdtemp(prefix="collscope-cluster-refusals.")
    try:
        test_usage(cluster)
        test_unsupported(cluster, scratch)
        test_conflicts(cluster)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(cluster.directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(clusterlib.main(test))
