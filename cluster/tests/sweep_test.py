#!/usr/bin/python3
"""scripts/sweep --nodes 2,4 on an emulated 4-host cluster with Slurm (ctest cluster_sweep).

  - `up` brings up one slurmd per host: sinfo shows h0 .. h3 idle;
  - a sweep of allreduce ring and mpi, 2 ranks per node, on 2 and 4 nodes (two job arrays
    and a merge job) completes; the merged file holds 4 runs;
  - each run's ranks landed on as many different hosts as it had nodes (2 or 4 of h0 .. h3,
    the hosts of its Slurm node list; jobs get whole hosts, so two 2-node jobs run side by
    side on h0,h1 and h2,h3), 2 ranks per node, and /collective/ranks gives each node 2 ranks;
  - the jobs' ranks were started by mpirun inside the allocation (COLLSCOPE_LAUNCHER);
  - the ring's results are exact with inter-node bytes, and they crossed the shaped links
    (tc's byte counters grew by at least the ring's inter-node payload);
  - `down` cancels nothing left, stops every daemon, leaves nothing.
"""

import os
import re
import sys
import time

import h5py

from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, check

SWEEP = os.path.join(clusterlib.ROOT, "scripts", "sweep")
ITERS, WARMUP = 3, 1
SIZES = ["-b", "1K", "-e", "64K", "-f", "8", "-n", str(ITERS), "-w", str(WARMUP)]
ALL_HOSTS = ["h0", "h1", "h2", "h3"]


def wait_for_jobs(cluster, jobs, limit=120):
    """{job: (state, exit code)} once none of them is pending or running."""
    deadline = time.time() + limit
    while True:
        states = {}
        for job in jobs:
            out = cluster.run(["scontrol", "show", "job", job]).stdout
            state, code = re.search(r"JobState=(\S+)", out), re.search(r"ExitCode=(\S+)", out)
            states[job] = (state.group(1) if state else "UNKNOWN", code.group(1) if code else "")
        if all(s not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") for s, _ in states.values()):
            return states
        if time.time() > deadline:
            raise clusterlib.Failed(f"jobs not finished after {limit}s: {states}")
        time.sleep(1)


def hosts_of(cluster, nodelist):
    """The host names of a Slurm node list such as h[2-3]."""
    return cluster.run(["scontrol", "show", "hostnames", nodelist]).stdout.split()


def check_runs(cluster, path):
    with h5py.File(path, "r") as f:
        runs, rows, ranks = f["runs"][:], f["collective/rows"][:], f["collective/ranks"][:]
    check(len(runs) == 4, f"merged file: 4 runs (ring and mpi on 2 and 4 nodes), got {len(runs)}")
    for run in runs:
        nodes = int(run["nnodes"])
        program = run["program"].decode()
        hosts = run["hosts"].decode().split(",")
        allocated = hosts_of(cluster, run["slurm_nodelist"].decode())
        check(nodes in (2, 4) and len(set(hosts)) == nodes and set(hosts) <= set(ALL_HOSTS)
              and sorted(hosts) == sorted(allocated) and run["ranks_per_node"] == 2
              and run["world_size"] == 2 * nodes,
              f"{program} on {nodes} nodes: ranks on hosts {','.join(hosts)} (allocated "
              f"{run['slurm_nodelist'].decode()}), 2 per node")
        mine = rows[rows["run_id"] == run["run_id"]]
        for row_index in [i for i, r in enumerate(rows) if r["run_id"] == run["run_id"]]:
            node_ranks = ranks[ranks["row"] == row_index]["node"].tolist()
            check(sorted(node_ranks) == sorted(list(range(nodes)) * 2),
                  f"{program} on {nodes} nodes, row {row_index}: 2 ranks on each of {nodes} nodes")
        check(all(w == 0 for w in mine["wrong"]), f"{program} on {nodes} nodes: every result exact")
    ring = [i for i, r in enumerate(rows) if runs[runs["run_id"] == r["run_id"]][0]["program"] == b"allreduce_ring"]
    inter = sum(int(ranks[ranks["row"] == i]["sent_inter_node_bytes"].sum()) for i in ring)
    check(inter > 0 and all(rows[i]["volume"] == b"ok" for i in ring),
          f"allreduce_ring: volume ok, {inter} B sent between nodes per call of each size")
    return inter


def test(bin_dir):
    with Cluster(bin_dir, 4, slurm=True) as cluster:
        sinfo = cluster.run(["sinfo", "-h", "-N", "-o", "%N %T"]).stdout.split("\n")
        check(sorted(line for line in sinfo if line) == [f"h{k} idle" for k in range(4)],
              "sinfo: nodes h0 .. h3, idle")
        before = cluster.shaped_bytes()
        results = os.path.join(cluster.directory, "results")
        r = cluster.run([SWEEP, "--name", "multi", "--collectives", "allreduce", "--algorithms", "ring,mpi",
                         "--nodes", "2,4", "--ntasks-per-node", "2", "--mpi-env", "--bin-dir", bin_dir,
                         "--results-dir", results] + SIZES)
        jobs = re.findall(r"^(?:array|merge) (\d+):", r.stdout, re.M)
        check(r.returncode == 0 and len(jobs) == 3, f"sweep submitted 2 arrays and a merge job: {r.stdout.strip()}")
        states = wait_for_jobs(cluster, jobs)
        check(states[jobs[-1]] == ("COMPLETED", "0:0"), f"merge job completed: {states}")
        inter = check_runs(cluster, os.path.join(results, "multi.h5"))
        launched = [line for name in sorted(os.listdir(os.path.join(results, "logs")))
                    for line in open(os.path.join(results, "logs", name)) if line.startswith("launch: ")]
        check(len(launched) == 4 and all(line.startswith("launch: mpirun -np ") for line in launched),
              "the 4 tasks' ranks were started by mpirun inside their allocations")
        calls = 1 + WARMUP + ITERS
        shaped = cluster.shaped_bytes() - before
        check(shaped >= inter * calls, f"tc counted {shaped} B on the shaped links >= {inter * calls} B "
                                       "of the ring's inter-node payload")


if __name__ == "__main__":
    sys.exit(clusterlib.main(test, slurm=True))
