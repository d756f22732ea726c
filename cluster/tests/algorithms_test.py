#!/usr/bin/python3
"""Every hand-written algorithm across 4 emulated hosts x 2 ranks (ctest cluster_algorithms).

The algorithms are the COLLSCOPE_ALGORITHM lines of collectives/include/collscope/
algorithms.def (not the vendor baselines, COLLSCOPE_VENDOR; nothing ending in _nccl, which
needs a GPU). Each one's benchmark binary build/bin/<collective>_<algorithm> runs once by
mpirun on 8 ranks (ranks 2K and 2K+1 on host hK, links at 1gbit so that it is quick) at
1 KiB and 64 KiB (a barrier: one record, 0 B), and for every record:
  - every result exact (`wrong` 0) and the volume check passed (`volume` ok);
  - `node_of_rank` is [0,0,1,1,2,2,3,3]: MPI_COMM_TYPE_SHARED sees the 4 hosts;
  - on every rank, the bytes the executor counted sent to ranks on the same host and
    on other hosts are exactly the theory's (`sent_intra_node_bytes` ==
    `theory_sent_intra_node_bytes`, `sent_inter_node_bytes` ==
    `theory_sent_inter_node_bytes`: the traffic matrix split by the node map);
  - where the theory sends bytes between hosts, the measured inter-node bytes are not 0.
One `ok` line per algorithm; every algorithm runs even after one failed, and the failure
lists them all.
"""

import os
import re
import sys

from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, Failed, check

HOSTS, RANKS_PER_HOST = 4, 2
ROOT = clusterlib.ROOT
ALGORITHMS_DEF = os.path.join(ROOT, "collectives", "include", "collscope", "algorithms.def")
ARGS = ["-b", "1K", "-e", "64K", "-f", "64", "-n", "2", "-w", "1"]
SIZES = [1024, 65536]
NODES = [k // RANKS_PER_HOST for k in range(HOSTS * RANKS_PER_HOST)]


def hand_written():
    """The binaries of the hand-written algorithms, <collective>_<algorithm>, in order."""
    names = []
    with open(ALGORITHMS_DEF) as f:
        for line in f:
            m = re.match(r"COLLSCOPE_ALGORITHM\((\w+), (\w+),", line)
            if m and not m.group(2).endswith("nccl"):
                names.append(f"{m.group(1)}_{m.group(2)}")
    return names


def problems_of(r):
    """What is wrong with one record ([] if nothing)."""
    size, found = r["bytes"], []
    if r["wrong"] != 0:
        found.append(f"{size} B: wrong {r['wrong']} (first bad rank {r['first_bad_rank']}, "
                     f"index {r['first_bad_index']})")
    if r["volume"] != "ok":
        found.append(f"{size} B: volume {r['volume']}")
    if r["node_of_rank"] != NODES:
        found.append(f"{size} B: node_of_rank {r['node_of_rank']}, not {NODES}")
    for where in ("intra", "inter"):
        measured = r[f"sent_{where}_node_bytes"]
        theory = r[f"theory_sent_{where}_node_bytes"]
        if measured is None or theory is None:
            found.append(f"{size} B: sent_{where}_node_bytes {measured}, theory {theory} (unknown)")
        elif measured != theory:
            ranks = [k for k in range(len(theory)) if k >= len(measured) or measured[k] != theory[k]]
            found.append(f"{size} B: sent_{where}_node_bytes {measured} != theory {theory} "
                         f"(ranks {ranks})")
    theory_inter = r["theory_sent_inter_node_bytes"] or []
    if sum(theory_inter) > 0 and sum(r["sent_inter_node_bytes"] or []) == 0:
        found.append(f"{size} B: no inter-node bytes measured, theory {theory_inter}")
    return found


def summary(records):
    """Per size: inter-node and intra-node bytes of all ranks in one call."""
    return ", ".join(f"{r['bytes']} B: {sum(r['sent_inter_node_bytes'])} inter / "
                     f"{sum(r['sent_intra_node_bytes'])} intra" for r in records)


def test(bin_dir):
    binaries = hand_written()
    check(len(binaries) >= 20, f"{len(binaries)} hand-written algorithms in algorithms.def")
    missing = [b for b in binaries if not os.path.exists(os.path.join(bin_dir, b))]
    check(not missing, f"every one's binary in {bin_dir} (missing: {missing or 'none'})")
    failures = []
    with Cluster(bin_dir, HOSTS, ["--rate", "1gbit"]) as cluster:
        for binary in binaries:
            try:
                records = cluster.mpirun([binary, *ARGS], HOSTS, RANKS_PER_HOST)
            except Failed as e:
                failures.append(f"{binary}: {e}")
                print(f"not ok - {binary}: {e}", flush=True)
                continue
            found = []
            sizes = [0] if binary.startswith("barrier_") else SIZES   # a barrier has no size
            if [r["bytes"] for r in records] != sizes or any(r["nranks"] != 8 for r in records):
                found.append(f"records of sizes {[r['bytes'] for r in records]}, not {sizes} on 8 ranks")
            for r in records:
                found += problems_of(r)
            if found:
                failures += [f"{binary}: {p}" for p in found]
                print(f"not ok - {binary}: " + "; ".join(found), flush=True)
            else:
                print(f"ok - {binary}: exact, every rank's intra-/inter-node bytes as theory "
                      f"({summary(records)})", flush=True)
    if failures:
        raise Failed(f"{len(failures)} problems:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    sys.exit(clusterlib.main(test))
