#!/usr/bin/python3
"""The vendor's algorithm, named from its traffic: Open MPI is forced to run one algorithm
(coll_tuned_use_dynamic_rules 1, coll_tuned_<collective>_algorithm K), the `*_mpi` binary
counts the call through Open MPI's monitoring (--vendor-volume), and collscope must name
the hand-written twin of that algorithm among the algorithms whose exact theory equals the
traffic (vendor_algorithm). Where Open MPI runs another algorithm instead (its own
fallbacks, below), the twin of that one. Algorithms without a twin are negative controls:
their traffic must match nothing ("unmatched", with a distance above zero).

    vendor_identify_test.py N --bin DIR [--mpiexec mpirun]

Per N: every forced algorithm of allreduce, allgather, broadcast, reduce, reduce_scatter
(MPI_Reduce_scatter_block with even blocks, MPI_Reduce_scatter with uneven ones) and
alltoall, at three sizes (counts 16 N, 128 N, 1024 N elements of float; the rooted ones
with root N-1). Skipped, with the reason, where Open MPI has no such algorithm at this N.
"""

import argparse
import json
import os
import subprocess
import sys

from collscope.checks import check, failures
from collscope.tune_mpi import openmpi

ARGS = None
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")


UNMATCHED = openmpi.UNMATCHED

# Open MPI 4.1's twins (collscope/tune_mpi/openmpi.py states them once, for this test and
# for scripts/tune-mpi): per (collective, algorithm number) the twin that must be named, as a
# function of N; None: no such algorithm at this N (skipped); UNMATCHED: no twin (negative
# control). This test checks these algorithms at sizes where Open MPI does not fall back
# (count >= N for the ring, count >= p for Rabenseifner, count % N == 0 for bcast's
# scatter_allgather_ring; allreduce nonoverlapping with its reduce and bcast forced
# binomial, the chains with fan-out 1, segmented_ring with 1 KiB segments).
TESTED = [("allreduce", 1), ("allreduce", 2), ("allreduce", 3), ("allreduce", 4),
          ("allreduce", 5), ("allreduce", 6), ("allgather", 1), ("allgather", 2),
          ("allgather", 3), ("allgather", 4), ("allgather", 5), ("allgather", 6), ("bcast", 1),
          ("bcast", 2), ("bcast", 3), ("bcast", 4), ("bcast", 5), ("bcast", 6), ("bcast", 7),
          ("bcast", 8), ("bcast", 9), ("reduce", 1), ("reduce", 2), ("reduce", 3),
          ("reduce", 4), ("reduce", 5), ("reduce", 6), ("reduce_scatter_block", 1),
          ("reduce_scatter_block", 3), ("reduce_scatter", 2), ("reduce_scatter", 3),
          ("alltoall", 1), ("alltoall", 2), ("alltoall", 3), ("alltoall", 4), ("alltoall", 5)]

BINARY = {"allreduce": "allreduce_mpi", "allgather": "allgather_mpi", "bcast": "broadcast_mpi",
          "reduce": "reduce_mpi", "reduce_scatter_block": "reduce_scatter_mpi",
          "reduce_scatter": "reduce_scatter_mpi", "alltoall": "alltoall_mpi"}


def command(coll, alg, n):
    mca = ["--mca", "coll_tuned_use_dynamic_rules", "1",
           "--mca", f"coll_tuned_{coll}_algorithm", str(alg)]
    args = ["--vendor-volume", "-n", "1", "-w", "0", "--format", "jsonl"]
    if (coll, alg) == ("allreduce", 2):  # its reduce and bcast, as the twin runs them
        mca += ["--mca", "coll_tuned_reduce_algorithm", "5", "--mca", "coll_tuned_bcast_algorithm", "6"]
    if (coll, alg) == ("allreduce", 5):
        mca += ["--mca", "coll_tuned_allreduce_algorithm_segmentsize", "1024"]
        args += ["--segment", "1024"]
    if coll in ("bcast", "reduce"):
        args += ["-r", str(n - 1)]
        if alg == 2:
            mca += ["--mca", f"coll_tuned_{coll}_algorithm_chain_fanout", "1"]
    if coll == "reduce_scatter":  # uneven blocks: MPI_Reduce_scatter
        size = (64 * n + 1) * 4
        args += ["-b", str(size), "-e", str(size)]
    else:
        args += ["-b", str(64 * n), "-e", str(64 * n * 64), "-f", "8"]
    return [ARGS.mpiexec, "-q", "-np", str(n), *mca, os.path.join(ARGS.bin, BINARY[coll]), *args]


def check_rows(coll, alg, n, want, rows):
    name = f"{coll} algorithm {alg} at N = {n}"
    if not check(len(rows) >= 1, f"{name}: rows"):
        return
    for r in rows:
        got, what = r["vendor_algorithm"], f"{name}, count {r['count']}"
        if r["volume"] != "measured" or r["wrong"] != 0:
            check(False, f"{what}: volume {r['volume']}, wrong {r['wrong']}")
        elif want == UNMATCHED:
            check(got == UNMATCHED and r["vendor_algorithm_off_bytes"] + r["vendor_algorithm_off_msgs"] > 0,
                  f"{what}: no twin, unmatched (got {got}; closest {r['vendor_algorithm_closest']}, "
                  f"off {r['vendor_algorithm_off_bytes']} B, {r['vendor_algorithm_off_msgs']} msgs)")
        else:
            check(want in got.split("|"), f"{what}: names {want} (got {got})")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("nranks", type=int)
    p.add_argument("--bin", required=True)
    p.add_argument("--mpiexec", default="mpirun")
    ARGS = p.parse_args()
    n = ARGS.nranks
    for coll, alg in TESTED:
        want = openmpi.twin(coll, alg, n)
        if want is None:
            print(f"skip {coll} algorithm {alg} at N = {n}: Open MPI has none here")
            continue
        proc = subprocess.run(command(coll, alg, n), capture_output=True, text=True, env=ENV,
                              timeout=300)
        if not check(proc.returncode == 0, f"{coll} algorithm {alg} at N = {n}: exit 0 "
                                           f"({proc.returncode}: {proc.stderr.strip()[-200:]})"):
            continue
        rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        check_rows(coll, alg, n, want, rows)
    print(f"vendor_identify N = {n}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
