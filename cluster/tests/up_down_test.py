#!/usr/bin/python3
"""scripts/emulated-cluster up / status / env / down on 4 hosts (ctest cluster_up_down).

With --rate 400mbit --link h0-h3:100mbit (no Slurm: sweep_test.py has it):
  - `up` prints the export lines: the hostfile (h0 .. h3, 2 slots each) and Open MPI's
    settings (rsh agent, ob1, TCP on 198.18.0.0/24);
  - each host is a namespace with 198.18.0.{K+1}/24 on eth0, calls itself hK and sees only
    its own interfaces in /sys/class/net;
  - every link is shaped at both ends of both directions: hK's eth0 has one HTB class per
    other host at the link's rate, and so has the bridge's port cs-hK; `status` shows them;
  - `up` again with the same settings prints the same exports (0), with others refuses (1,
    one line) and changes nothing; `env` prints the exports;
  - `down` kills a process left running on a host and leaves no namespace, link, qdisc or
    process; `down` again says there is nothing (0); `status` is then 1.
"""

import os
import re
import subprocess
import sys
import time

from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, check

HOSTS = 4
FLAGS = ["--rate", "400mbit", "--link", "h0-h3:100mbit"]


def expected_rate(a, b):
    return "100Mbit" if {a, b} == {0, 3} else "400Mbit"


def htb_rates(device, namespace=None):
    """{class id: rate} of the HTB classes on a device."""
    argv = ["tc"] + (["-n", namespace] if namespace else []) + ["class", "show", "dev", device]
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    return dict(re.findall(r"class htb (\S+) .*? rate (\S+)", out))


def check_exports(cluster):
    ex = cluster.exports
    with open(ex["COLLSCOPE_HOSTFILE"]) as f:
        hosts = [line.split() for line in f if line.strip() and not line.startswith("#")]
    check(hosts == [[f"h{k}", "slots=2"] for k in range(HOSTS)], "hostfile: h0 .. h3, 2 slots each")
    check(ex["OMPI_MCA_plm_rsh_agent"].endswith("cluster/rsh-agent") and ex["OMPI_MCA_pml"] == "ob1"
          and ex["OMPI_MCA_btl_tcp_if_include"] == "198.18.0.0/24"
          and ex["OMPI_MCA_oob_tcp_if_include"] == "198.18.0.0/24" and "SLURM_CONF" not in ex
          and ex["OMPI_MCA_hwloc_base_binding_policy"] == "none"
          and ex["OMPI_MCA_mpi_yield_when_idle"] == "1",
          "exports: rsh agent, pml ob1, TCP and OOB on 198.18.0.0/24, no Slurm with --no-slurm")


def check_hosts(cluster):
    for k in range(HOSTS):
        out = subprocess.run(["ip", "-n", f"h{k}", "-o", "-4", "addr", "show", "dev", "eth0"],
                             capture_output=True, text=True).stdout
        check(f"inet 198.18.0.{k + 1}/24" in out, f"h{k}: eth0 has 198.18.0.{k + 1}/24")
        seen = cluster.run([os.path.join(clusterlib.ROOT, "cluster", "host-exec"), f"h{k}",
                            "sh", "-c", "hostname; ls /sys/class/net"]).stdout.split()
        check(seen == [f"h{k}", "eth0", "lo"], f"h{k}: calls itself h{k}, sees eth0 and lo only ({seen})")


def check_shaping():
    for k in range(HOSTS):
        sent, received = htb_rates("eth0", f"h{k}"), htb_rates(f"cs-h{k}")
        want = {f"1:{peer + 1:x}": expected_rate(k, peer) for peer in range(HOSTS) if peer != k}
        check(sent == want, f"h{k}'s eth0: a class per destination at its link's rate {sent}")
        check(received == want, f"bridge port cs-h{k}: a class per source at its link's rate {received}")


def check_status(cluster):
    r = cluster.command("status")
    check(r.returncode == 0, "status: exit 0 while up")
    for k in range(HOSTS):
        check(re.search(rf"^\s+h{k}\s+198\.18\.0\.{k + 1}/24", r.stdout, re.M), f"status lists h{k} and its address")
    for a, b in [(a, b) for a in range(HOSTS) for b in range(a + 1, HOSTS)]:
        rate = expected_rate(a, b)
        both = f"{rate}|{rate}"
        check(re.search(rf"h{a}-h{b}\s+{rate.lower()}\s+{re.escape(both)}\s+{re.escape(both)}\s", r.stdout),
              f"status: link h{a}-h{b} at {rate}, shaped at both ends both ways")


def check_up_again(cluster):
    r = cluster.command("up", *cluster.flags)
    check(r.returncode == 0 and clusterlib.parse_exports(r.stdout) == cluster.exports,
          "up again with the same settings: exit 0, the same exports")
    r = cluster.command("up", "--hosts", "3", "--no-slurm")
    check(r.returncode == 1 and "already up" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"up with other settings: one line, exit 1: {r.stderr.strip()}")
    check(htb_rates("eth0", "h3") and cluster.command("status").returncode == 0,
          "the refused up changed nothing (h3 still there, status 0)")
    r = cluster.command("env")
    check(r.returncode == 0 and clusterlib.parse_exports(r.stdout) == cluster.exports, "env: the same exports")


def check_gone(cluster, sleeper):
    check(not clusterlib.network.leftovers(cluster.names()), "after down: no namespace, link or process")
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    check("cs-" not in qdiscs, "after down: no qdisc on a cs- device in the root namespace")
    sleeper.wait(timeout=10)
    check(sleeper.returncode is not None, f"after down: the process left on h2 was killed ({sleeper.returncode})")
    r = cluster.command("down")
    check(r.returncode == 0 and "nothing to take down" in r.stderr, "down again: exit 0, nothing to take down")
    check(cluster.command("status").returncode == 1, "status after down: exit 1")
    check(not os.path.exists(os.path.join(cluster.directory, "cluster.json")), "after down: no cluster.json")


def check_abandoned_reclaimed(bin_dir):
    """A test killed while its cluster was up: the next test takes that cluster down; a
    cluster whose test still runs (this one) is left alone."""
    cluster = Cluster(bin_dir, 2)
    with cluster:
        check(clusterlib.abandoned_test_cluster() is None, "a cluster whose test runs is not abandoned")
        dead = subprocess.Popen(["true"])
        dead.wait()
        with open(os.path.join(cluster.directory, clusterlib.OWNER_PID), "w") as f:
            f.write(f"{dead.pid}\n")
        check(clusterlib.abandoned_test_cluster() == cluster.directory,
              "a cluster whose test is gone is abandoned")
        clusterlib.take_down_abandoned()
        check(not clusterlib.network.leftovers(cluster.names()), "the abandoned cluster is taken down")


def test(bin_dir):
    check_abandoned_reclaimed(bin_dir)
    cluster = Cluster(bin_dir, HOSTS, FLAGS)
    with cluster:
        check(cluster.up_seconds < 10, f"up took {cluster.up_seconds:.1f}s")
        check_exports(cluster)
        check_hosts(cluster)
        check_shaping()
        check_status(cluster)
        check_up_again(cluster)
        sleeper = subprocess.Popen([os.path.join(clusterlib.ROOT, "cluster", "host-exec"), "h2", "sleep", "600"])
        time.sleep(0.3)
        check(sleeper.pid in clusterlib.network.processes_in("h2"), f"a process runs on h2 ({sleeper.pid})")
    print(f"# down took {cluster.down_seconds:.1f}s")
    check_gone(cluster, sleeper)


if __name__ == "__main__":
    sys.exit(clusterlib.main(test))
