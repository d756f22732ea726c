"""What the layer CLI test scripts share: mpirun with the Open MPI variables, the JSON
record of a run, the exact ring allreduce volume written again from the schedule, and
the pass / volume expectations. A script imports it and ends with main(TESTS).

Arguments of every script: BIN_DIR GROUP [ucx].
"""
import json
import os
import re
import subprocess
import sys

from collscope.checks import check, failures
from collscope.runtime_noise import without_runtime_noise

BIN = sys.argv[1] if len(sys.argv) > 1 else ""
GROUP = sys.argv[2] if len(sys.argv) > 2 else ""
HAVE_UCX = len(sys.argv) > 3 and sys.argv[3] == "ucx"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
ELEM = {"float": 4, "bfloat16": 2}
QUICK = ["-n", "2", "-w", "0"]


def run(binary, args, np, env=None):
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np), os.path.join(BIN, binary)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, **(env or {})),
                       timeout=120)
    return p.returncode, p.stdout, without_runtime_noise(p.stderr)


def expect_usage_error(binary, args, np, pattern):
    """A bad input: exit 2, nothing on stdout, one line on stderr, `<binary>: error: ...`
    matching the regex `pattern`."""
    code, out, err = run(binary, args, np)
    lines = [l for l in err.splitlines() if l.strip()]
    check(code == 2 and len(lines) == 1 and lines[0].startswith(binary + ": error: ")
          and re.search(pattern, lines[0]) is not None and out.strip() == "",
          f"{binary} {' '.join(args)} (np {np}): exit 2, one line matching {pattern!r} "
          f"(got {code}, {lines})")


def run_record(binary, args, np, env=None):
    """Runs with --format jsonl; returns (exit code, the record or None, stderr)."""
    code, out, err = run(binary, args + ["--format", "jsonl"], np, env)
    lines = [l for l in out.splitlines() if l.strip()]
    return code, (json.loads(lines[-1]) if lines else None), err


# ---- exact ring allreduce volume, written again from the schedule ----------------------

def block(count, n, i):
    return count // n + (1 if i < count % n else 0)


def ring_sent(count, n, pos, elem):
    """Bytes group position `pos` sends in a ring allreduce of `count` elements at n ranks:
    every block but pos+1 in the reduce-scatter, every block but pos+2 in the allgather."""
    if n == 1:
        return 0
    return sum(block(count, n, b) * elem for b in range(n) if b != (pos + 1) % n) + \
        sum(block(count, n, b) * elem for b in range(n) if b != (pos + 2) % n)


def ring_allgather_sent(count, n, pos, elem):
    """Ring allgather: step s forwards block pos - s; every block but pos + 1's."""
    if n == 1:
        return 0
    return sum(block(count, n, b) * elem for b in range(n) if b != (pos + 1) % n)


def ring_reduce_scatter_sent(count, n, pos, elem):
    """Ring reduce-scatter: every block but its own (which it receives last, reduced)."""
    if n == 1:
        return 0
    return sum(block(count, n, b) * elem for b in range(n) if b != pos)


def pairwise_alltoall_sent(per_peer, n, elem):
    """Pairwise all-to-all: one block of `per_peer` to each of the n - 1 others."""
    return (n - 1) * per_peer * elem


def default_sent(collective, count, n, pos, elem):
    """Bytes group position `pos` sends in one call under the default algorithm (ring;
    pairwise all-to-all, `count` per peer)."""
    if collective == "allreduce":
        return ring_sent(count, n, pos, elem)
    if collective == "reduce_scatter":
        return ring_reduce_scatter_sent(count, n, pos, elem)
    if collective == "allgather":
        return ring_allgather_sent(count, n, pos, elem)
    if collective == "alltoall":
        return pairwise_alltoall_sent(count, n, elem)
    raise ValueError(f"no default formula for {collective}")


def position(rank, kind, tp, world):
    """Megatron dense layout with CP = PP = 1: rank = tp_pos + TP x dp_pos."""
    return (rank % tp, tp) if kind == "tp" else (rank // tp, world // tp)


def expect_volume(what, rec, count_of_site, dtype_of_site=None, sites=None):
    """count_of_site(site) -> elements; dtype_of_site(site) -> the dtype that travels (None:
    the storage dtype); sites: the expected site names in order (None: not checked)."""
    n = rec["nranks"]
    ok = rec["volume"] == "ok" and rec["sent_bytes"] == rec["theory_sent_bytes"] \
        and rec["recv_bytes"] == rec["theory_recv_bytes"] and len(rec["sent_bytes"]) == n
    if sites is not None:
        ok = ok and [s["site"] for s in rec["collectives"]] == sites
    total = [0] * n
    for site in rec["collectives"]:
        count = count_of_site(site["site"])
        dtype = (dtype_of_site and dtype_of_site(site["site"])) or rec["dtype"]
        elem = ELEM[dtype]
        ok = ok and site["dtype"] == dtype and site["bytes"] == count * elem
        want = []
        for r in range(n):
            pos, size = position(r, site["group"], rec["tp"], n)
            want.append(ring_sent(count, size, pos, elem))
        ok = ok and site["count"] == count and site["sent_bytes"] == want \
            and site["theory_sent_bytes"] == want and site["volume"] == "ok"
        total = [t + w for t, w in zip(total, want)]
    check(ok and rec["sent_bytes"] == total,
          f"{what}: measured bytes == exact ring theory per rank and site {rec['sent_bytes']}")


def expect_pass(what, code, rec, tensors):
    check(code == 0 and rec is not None and rec["pass"] and rec["verified"],
          f"{what}: exit 0 and pass (got {code}, "
          f"{rec and [(c['tensor'], c['rel_l2_error'], c['pass']) for c in rec['checks']]})")
    if rec:
        check([c["tensor"] for c in rec["checks"]] == tensors and
              all(c["rel_l2_error"] <= c["tolerance"] for c in rec["checks"]),
              f"{what}: checks {tensors} within tolerance")


PASSES = {"both": (True, True), "forward": (True, False), "backward": (False, True)}


def main(tests):
    """Runs the GROUP named on the command line; exit 1 when any check failed."""
    if GROUP not in tests:
        print(f"unknown group '{GROUP}' (expected one of: {' '.join(tests)})")
        sys.exit(2)
    tests[GROUP]()
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
