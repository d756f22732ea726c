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

ARGS = None
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")


def pow2(n):
    return n & (n - 1) == 0


UNMATCHED = "unmatched"

# Open MPI 4.1 (coll_tuned, coll_base): per (collective, algorithm number) the twin that
# must be named, as a function of N (and of the count where Open MPI falls back); None:
# Open MPI has no such algorithm at this N (skipped); UNMATCHED: no twin (negative control).
EXPECTED = {
    ("allreduce", 1): lambda n: "nonoverlapping" if n <= 3 else UNMATCHED,  # linear reduce + bcast
    ("allreduce", 2): lambda n: "nonoverlapping",  # with its reduce and bcast forced binomial
    ("allreduce", 3): lambda n: "recursive_doubling",
    ("allreduce", 4): lambda n: "ring",            # count >= N here (else recursive doubling)
    ("allreduce", 5): lambda n: "segmented_ring",  # segment 1 KiB on both sides
    ("allreduce", 6): lambda n: "rabenseifner",    # count >= p here (else basic linear)
    ("allgather", 1): lambda n: UNMATCHED,         # gather + bcast
    ("allgather", 2): lambda n: "bruck",
    ("allgather", 3): lambda n: "recursive_doubling" if pow2(n) else "bruck",  # else its bruck
    ("allgather", 4): lambda n: "ring",
    ("allgather", 5): lambda n: "neighbor_exchange",  # odd N: Open MPI's ring, as the twin
    ("allgather", 6): lambda n: "ring" if n == 2 else None,  # two_proc: N = 2 only
    ("bcast", 1): lambda n: "linear",
    ("bcast", 2): lambda n: "chain",               # with chain_fanout 1
    ("bcast", 3): lambda n: "chain",               # pipeline: one chain
    ("bcast", 4): lambda n: "split_binary_tree",
    ("bcast", 5): lambda n: "binary_tree",
    ("bcast", 6): lambda n: "binomial_strided",
    ("bcast", 7): lambda n: "knomial",
    ("bcast", 8): lambda n: UNMATCHED if n > 2 else None,  # scatter + recursive-doubling allgather
    ("bcast", 9): lambda n: "scatter_allgather",   # count % N == 0 here (Open MPI's ceil blocks)
    ("reduce", 1): lambda n: "linear",
    ("reduce", 2): lambda n: "chain",              # with chain_fanout 1
    ("reduce", 3): lambda n: "chain",
    ("reduce", 4): lambda n: "binary_tree",
    ("reduce", 5): lambda n: "binomial",
    ("reduce", 6): lambda n: UNMATCHED if n > 3 else None,  # in-order binary tree
    ("reduce_scatter_block", 1): lambda n: UNMATCHED,  # reduce + scatter
    ("reduce_scatter_block", 3): lambda n: "halving",
    ("reduce_scatter", 2): lambda n: "halving",
    ("reduce_scatter", 3): lambda n: "ring",
    ("alltoall", 1): lambda n: "pairwise",         # linear: the same bytes and messages
    ("alltoall", 2): lambda n: "pairwise",
    ("alltoall", 3): lambda n: "bruck",            # modified Bruck
    ("alltoall", 4): lambda n: "pairwise",         # linear with sync: the same traffic
    ("alltoall", 5): lambda n: "pairwise" if n == 2 else None,  # two_proc
}

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
    for (coll, alg), expect in EXPECTED.items():
        want = expect(n)
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
