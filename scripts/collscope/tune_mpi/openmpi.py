"""What collscope knows about Open MPI's coll_tuned component (4.1), in one place: the
collectives it tunes, their ids in a decision file, the collscope binary that calls each,
the algorithms by number (read from ompi_info, so that the table is the installed
library's), and each algorithm's hand-written twin (docs/vendor-volume.md, "The twins"):
the algorithm whose exact traffic a row's `vendor_algorithm` must name when Open MPI
really ran the forced one.
"""
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass


class NotOpenMpi(Exception):
    """The MPI library is not Open MPI, or has no coll_tuned: exit 2."""


@dataclass(frozen=True)
class Collective:
    name: str          # Open MPI's (coll_tuned_<name>_algorithm)
    coll_id: int       # its COLLTYPE (ompi/mca/coll/base/coll_base_functions.h)
    binary: str        # the collscope binary whose call reaches it
    uneven: bool       # reached with uneven blocks only (MPI_Reduce_scatter)
    rooted: bool


# COLLTYPE in Open MPI 4.1 and 5.0: ALLGATHER 0, ALLGATHERV 1, ALLREDUCE 2, ALLTOALL 3,
# ALLTOALLV 4, ALLTOALLW 5, BARRIER 6, BCAST 7, EXSCAN 8, GATHER 9, GATHERV 10, REDUCE 11,
# REDUCESCATTER 12, REDUCESCATTERBLOCK 13, SCAN 14, SCATTER 15, SCATTERV 16, ...; 22 in all.
COLLECTIVE_COUNT = 22
COLLECTIVES = {c.name: c for c in (
    Collective("allreduce", 2, "allreduce_mpi", False, False),
    Collective("bcast", 7, "broadcast_mpi", False, True),
    Collective("reduce", 11, "reduce_mpi", False, True),
    Collective("allgather", 0, "allgather_mpi", False, False),
    Collective("alltoall", 3, "alltoall_mpi", False, False),
    # collscope's reduce_scatter_mpi calls MPI_Reduce_scatter_block when N divides the
    # count and MPI_Reduce_scatter otherwise: two decisions, reached by even and uneven sizes
    Collective("reduce_scatter", 12, "reduce_scatter_mpi", True, False),
    Collective("reduce_scatter_block", 13, "reduce_scatter_mpi", False, False),
    Collective("gather", 9, "gather_mpi", False, True),
    Collective("scatter", 15, "scatter_mpi", False, True),
    Collective("barrier", 6, "barrier_mpi", False, False),
)}
BY_ID = {c.coll_id: c for c in COLLECTIVES.values()}

# Algorithms that take a segment size (coll_tuned_<collective>_algorithm_segmentsize), by
# number: allreduce segmented_ring; bcast chain .. binomial; reduce chain .. in-order binary.
SEGMENTED = {"allreduce": {5}, "bcast": {2, 3, 4, 5, 6}, "reduce": {2, 3, 4, 5, 6}}
# The chains take a fan-out; 1 is one chain (the hand-written twin's, and the fixed
# decision's 0).
CHAINS = {("bcast", 2), ("reduce", 2)}

UNMATCHED = "unmatched"


def _pow2(n):
    return n & (n - 1) == 0


# Per collective, per algorithm number (from 1): the twin its traffic must match at N ranks
# (a name, or a function of N), where no fallback applies; UNMATCHED: no twin (its traffic
# matches nothing of collscope's); None: Open MPI has no such algorithm at this N
# (two_proc: N = 2 only). Fallbacks (ring with fewer elements than ranks, ...) then show as
# the wrong name, which is the point.
TWINS = {
    "allreduce": [
        lambda n: "nonoverlapping" if n <= 3 else UNMATCHED,  # 1: linear reduce + bcast
        "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"],
    "allgather": [
        UNMATCHED,  # 1: gather + bcast
        "bruck", lambda n: "recursive_doubling" if _pow2(n) else "bruck", "ring",
        "neighbor_exchange", lambda n: "ring" if n == 2 else None],
    "bcast": [
        "linear", "chain", "chain", "split_binary_tree", "binary_tree", "binomial_strided",
        "knomial", lambda n: UNMATCHED if n > 2 else None, "scatter_allgather"],
    "reduce": [
        "linear", "chain", "chain", "binary_tree", "binomial",
        lambda n: UNMATCHED if n > 3 else None, UNMATCHED],
    "reduce_scatter_block": [UNMATCHED, UNMATCHED, "halving", UNMATCHED],
    "reduce_scatter": [UNMATCHED, "halving", "ring", UNMATCHED],
    "alltoall": [
        "pairwise", "pairwise", "bruck", "pairwise", lambda n: "pairwise" if n == 2 else None],
}
# Algorithms that exist at N = 2 only (Open MPI falls back to its fixed decision elsewhere).
TWO_PROC = {("allgather", 6), ("alltoall", 5), ("barrier", 5)}


def twin(collective, algorithm, nranks):
    """The name the forced algorithm's traffic must carry at nranks; UNMATCHED for no twin;
    None where the algorithm does not exist at nranks; "" where collscope has no table
    entry (gather, scatter, barrier: nothing to confirm)."""
    if (collective, algorithm) in TWO_PROC and nranks != 2:
        return None
    rules = TWINS.get(collective, [])
    if not 1 <= algorithm <= len(rules):
        return ""
    rule = rules[algorithm - 1]
    return rule(nranks) if callable(rule) else rule


def confirm(collective, algorithm, nranks, vendor_algorithm, segsize=0):
    """What a forced row's traffic says: ("ran", "") where it shows the forced algorithm,
    ("fell back", what ran) where it shows another, ("unconfirmed", why) where traffic
    cannot tell. With a segment size, only a match is evidence: most twins are unsegmented
    (bcast's binary and binomial trees, reduce's trees and chain), so other traffic is no
    proof of a fallback."""
    want = twin(collective, algorithm, nranks)
    got = vendor_algorithm or ""
    if not got:
        return "unconfirmed", "no traffic recorded (--vendor-volume off, or not counted)"
    if want == "":
        return "unconfirmed", f"collscope has no twin table for {collective}"
    names = got.split("|")
    if want == UNMATCHED:   # no twin: its traffic may still equal one's (N = 2: one exchange)
        return ("ran", "") if got == UNMATCHED else ("unconfirmed", f"its traffic is {got}'s")
    if want in names:
        return "ran", ""
    if segsize:
        return "unconfirmed", f"{segsize}-byte segments: its traffic is {got}'s"
    if got == UNMATCHED and (collective, algorithm) in INNER_DECISIONS:
        return "unconfirmed", "its inner collectives are Open MPI's decision's"
    return "fell back", got


# Algorithms made of other collectives that Open MPI's decision picks (the twin assumes
# the binomial ones): traffic without a twin does not show a fallback.
INNER_DECISIONS = {("allreduce", 2)}


# ---- the installed library -----------------------------------------------------------------

def check_open_mpi(mpirun="mpirun"):
    """The library's version line; NotOpenMpi where mpirun is not Open MPI's or ompi_info is
    missing (the decision file is Open MPI's coll_tuned's)."""
    if not shutil.which(mpirun):
        raise NotOpenMpi(f"'{mpirun}' is not on PATH")
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NotOpenMpi(f"'{mpirun} --version' failed: {e}") from None
    first = (out.stdout or out.stderr).strip().splitlines()[:1]
    line = first[0] if first else "(no output)"
    if "Open MPI" not in line:
        raise NotOpenMpi(f"Open MPI's coll_tuned reads decision files; this MPI is not Open MPI "
                         f"({line})")
    if not shutil.which("ompi_info"):
        raise NotOpenMpi("ompi_info is not on PATH (it lists coll_tuned's algorithms)")
    return line


PARAM = re.compile(r"mca:coll:tuned:param:coll_tuned_(\w+)_algorithm:enumerator:value:(\d+):(\S+)")


def parse_algorithms(text):
    """{collective: {number: name}} from `ompi_info --parsable --param coll tuned --level 9`
    (0, "ignore", left out: it means "no forced choice")."""
    table = {}
    for m in PARAM.finditer(text):
        number = int(m.group(2))
        if number > 0:
            table.setdefault(m.group(1), {})[number] = m.group(3)
    return table


@functools.lru_cache(maxsize=1)
def installed_algorithms():
    """parse_algorithms of the installed Open MPI (asked once per process: the sweep's
    plan asks per N, the file checks again); NotOpenMpi when it lists none."""
    try:
        out = subprocess.run(["ompi_info", "--parsable", "--param", "coll", "tuned", "--level", "9"],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NotOpenMpi(f"ompi_info failed: {e}") from None
    table = parse_algorithms(out.stdout)
    if not table:
        raise NotOpenMpi("ompi_info lists no coll_tuned algorithms (Open MPI without coll/tuned?)")
    return table
