#!/usr/bin/python3
"""mpirun across 4 emulated hosts x 2 ranks (ctest cluster_mpirun).

allreduce_ring -b 1K -e 1M -f 32 on 8 ranks, ranks 2K and 2K+1 on host hK:
  - every result exact (`wrong` 0) and every rank's bytes as theory says (`volume` ok);
  - `node_of_rank` is [0,0,1,1,2,2,3,3]: MPI_COMM_TYPE_SHARED sees 4 nodes;
  - each rank's sent bytes split into intra- and inter-node bytes that add up, with
    inter-node bytes on every host;
  - the inter-node bytes, and only they, crossed the shaped links: the bytes tc counted in
    the hosts' HTB classes are at least the inter-node payload of every call (probe, warmup
    and timed calls) and at most that plus 15% (TCP/IP headers, acknowledgements) and
    1 MB (connection set-up): the intra-node bytes, as many again, stayed on their host;
  - the results file names the hosts h0 .. h3 (MPI_Get_processor_name).
"""

import os
import sys

import h5py

from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, check

HOSTS, RANKS_PER_HOST = 4, 2
ITERS, WARMUP = 5, 1
SIZES = [1024, 32768, 1048576]


def check_record(r):
    size = r["bytes"]
    check(r["wrong"] == 0 and r["volume"] == "ok", f"{size} B: exact (wrong 0), volume ok")
    check(r["node_of_rank"] == [0, 0, 1, 1, 2, 2, 3, 3], f"{size} B: node_of_rank {r['node_of_rank']}")
    split = [a + b for a, b in zip(r["sent_intra_node_bytes"], r["sent_inter_node_bytes"])]
    check(split == r["sent_bytes"], f"{size} B: intra + inter = sent bytes on every rank")
    inter_by_host = [r["sent_inter_node_bytes"][2 * k] + r["sent_inter_node_bytes"][2 * k + 1]
                     for k in range(HOSTS)]
    check(all(b > 0 for b in inter_by_host), f"{size} B: every host sends inter-node bytes {inter_by_host}")


def check_results_file(path):
    with h5py.File(path, "r") as f:
        runs = f["runs"][:]
    check(len(runs) == 1, "the results file holds one run")
    run = runs[0]
    hosts = run["hosts"].decode()
    check(hosts == "h0,h1,h2,h3" and run["nnodes"] == HOSTS and run["ranks_per_node"] == RANKS_PER_HOST,
          f"results file: hosts {hosts}, {run['nnodes']} nodes, {run['ranks_per_node']} ranks per node")


def test(bin_dir):
    with Cluster(bin_dir, HOSTS) as cluster:
        before = cluster.shaped_bytes()
        h5 = os.path.join(cluster.directory, "allreduce.h5")
        records = cluster.mpirun(["allreduce_ring", "-b", "1K", "-e", "1M", "-f", "32", "-n", str(ITERS),
                                  "-w", str(WARMUP), "-O", h5], HOSTS, RANKS_PER_HOST)
        shaped = cluster.shaped_bytes() - before
        check([r["bytes"] for r in records] == SIZES and all(r["nranks"] == 8 for r in records),
              "allreduce_ring: one record per size (1K, 32K, 1M), 8 ranks")
        for r in records:
            check_record(r)
        calls = 1 + WARMUP + ITERS
        payload = sum(sum(r["sent_inter_node_bytes"]) for r in records) * calls
        intra = sum(sum(r["sent_intra_node_bytes"]) for r in records) * calls
        check(payload <= shaped <= payload * 1.15 + 1e6,
              f"tc counted {shaped} B through the shaped links: {shaped / payload:.3f} x the "
              f"{payload} B of inter-node payload ({calls} calls per size); intra-node: {intra} B")
        check_results_file(h5)


if __name__ == "__main__":
    sys.exit(clusterlib.main(test))
