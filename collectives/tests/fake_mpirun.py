#!/usr/bin/env python3
"""A stand-in for mpirun that runs nothing: it answers scripts/fit-model's probes with the
JSON lines the real binaries print, as they would come from an imagined cluster whose
costs are known exactly (TRUTH), so model_fit_py_test.py can check that the fit finds
them, pair classes and placements included.

    fake_mpirun.py [launcher flags] [--map-by ppr:K:node] -np N BINARY [flags]

The cluster: FAKE_NODES nodes of FAKE_SLOTS slots (default 2 x 2); rank i runs on node
i // K with --map-by ppr:K:node, else i // FAKE_SLOTS (by slot). FAKE_LOG: a file that
gets one line per launch (its arguments, JSON). FAKE_FAIL=BINARY: that binary exits 1.
The second pingpong launch reports its 1 MiB size 4x too slow: an outlier the fit must
drop. Every time carries a deterministic jitter of at most 0.3%.

Where a message's bytes sit sets its bandwidth, as on shared memory: the caller's input
(`one_way_input`, `both_ways_input`) is faster than bytes written earlier in the call
(`one_way`, `both_ways`), so a fit that mixes them up is caught. The probes:
pingpong's half round trip is half of each (ping from the payload, pong from where it
landed); broadcast_binomial on 2 ranks sends input one way; alltoall_pairwise copies its
own block (at the copy rate), then sends input both ways; allgather_recursive_doubling
copies its own block, then sends the written copy both ways.
"""
import json
import math
import os
import sys
import zlib

INF = math.inf
# Per link class: wire latency, per-message overhead, start_lat + sync_lat of a call,
# and bandwidth (bytes/s) by message size: [(below this size, bandwidth), ...], for
# bytes written in the call (one_way, both_ways) and for the caller's input (*_input).
TRUTH = {
    "intra_node": {"link_delay": 0.3e-6, "overhead": 0.1e-6, "per_call": 1.0e-6,
                   "one_way": [(1 << 20, 10e9), (INF, 5e9)],
                   "one_way_input": [(1 << 20, 16e9), (INF, 9e9)],
                   "both_ways": [(1 << 20, 8e9), (INF, 4e9)],
                   "both_ways_input": [(1 << 20, 12e9), (INF, 7e9)]},
    "inter_node": {"link_delay": 2.0e-6, "overhead": 0.5e-6, "per_call": 3.0e-6,
                   "one_way": [(INF, 1e9)], "both_ways": [(INF, 0.9e9)]},
    "reduce": [(1 << 20, 20e9), (INF, 8e9)],
    "copy": [(INF, 30e9)],
    "barrier": 1.5e-6,
}
SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def rate(table, nbytes):
    return next(bw for below, bw in table if nbytes < below)


def port(cls, direction, nbytes):
    """A class without input tables (inter_node: a network) costs the same either way."""
    table = TRUTH[cls].get(direction) or TRUTH[cls][direction.removesuffix("_input")]
    return nbytes / rate(table, nbytes)


def fixed(cls):
    t = TRUTH[cls]
    return 2 * t["overhead"] + t["link_delay"]


def size(text):
    t = text.upper()
    return int(t[:-1]) * SUFFIX[t[-1]] if t[-1] in SUFFIX else int(t)


def sweep(flags):
    b, e, f = size(flags["-b"]), size(flags["-e"]), int(flags["-f"])
    while b <= e:
        yield b
        b *= f


def jitter(*key):
    return 1 + 0.001 * (zlib.crc32(repr(key).encode()) % 7 - 3)


def placement(argv, np_):
    per_node = int(os.environ.get("FAKE_SLOTS", "2"))
    if "--map-by" in argv:
        per_node = int(argv[argv.index("--map-by") + 1].split(":")[1])
    nodes = [i // per_node for i in range(np_)]
    if max(nodes) >= int(os.environ.get("FAKE_NODES", "2")):
        sys.exit("fake_mpirun: not enough slots")
    return nodes


def launch_number(binary):
    """How many times `binary` was launched before (counted in FAKE_LOG)."""
    log = os.environ.get("FAKE_LOG")
    if not log or not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f if os.path.basename(json.loads(line)[-1]) == binary) - 1


def pingpong(flags, nodes, launch):
    n = len(nodes)
    for b in sweep(flags):
        m = [[0.0] * n for _ in range(n)]
        for x in range(n):
            for y in range(n):
                if x != y:
                    cls = "intra_node" if nodes[x] == nodes[y] else "inter_node"
                    t = fixed(cls) + (port(cls, "one_way_input", b) + port(cls, "one_way", b)) / 2
                    if launch == 1 and b == 1 << 20:
                        t *= 4  # the outlier
                    m[x][y] = t * jitter("pp", b, x * n + y, launch) * 1e6
        yield {"collective": "pingpong", "bytes": b, "nranks": n, "node_of_rank": nodes,
               "pairs": "all", "latency_us_matrix": m,
               "time_us": sorted(v for row in m for v in row if v)[0]}


def pair_class(nodes):
    return "intra_node" if nodes[0] == nodes[1] else "inter_node"


def out_of_place_only(flags):
    """The exchanges answer only as fit-model runs them (not in place): run otherwise,
    their bytes would sit elsewhere than TRUTH says."""
    if "--in-place" in flags:
        sys.exit("fake_mpirun: this probe runs out of place")


def broadcast(flags, nodes, launch):
    """broadcast_binomial on 2 ranks: the root's input, one way."""
    cls = pair_class(nodes)
    for b in sweep(flags):
        t = TRUTH[cls]["per_call"] + fixed(cls) + port(cls, "one_way_input", b)
        yield {"collective": "broadcast", "algorithm": "binomial", "bytes": b, "nranks": 2,
               "node_of_rank": nodes, "sent_bytes": [b, 0],
               "time_us": t * jitter("bc", b, launch) * 1e6}


def exchange(flags, nodes, launch, way, collective, algorithm):
    """A 2-rank exchange as fit-model runs it (out of place): the own block's copy, then
    one message each way at the `way` bandwidth."""
    out_of_place_only(flags)
    cls = pair_class(nodes)
    for d in sweep(flags):
        b = d // 2
        t = TRUTH[cls]["per_call"] + fixed(cls) + b / rate(TRUTH["copy"], b) + port(cls, way, b)
        yield {"collective": collective, "algorithm": algorithm, "bytes": d, "nranks": 2,
               "node_of_rank": nodes, "sent_bytes": [b, b],
               "time_us": t * jitter(algorithm, d, launch) * 1e6}


def pairwise(flags, nodes, launch):
    """alltoall_pairwise: it sends from the send buffer (input)."""
    return exchange(flags, nodes, launch, "both_ways_input", "alltoall", "pairwise")


def recursive_doubling(flags, nodes, launch):
    """allgather_recursive_doubling: it sends the copy it has just made (written)."""
    return exchange(flags, nodes, launch, "both_ways", "allgather", "recursive_doubling")


def chain(flags, nodes, launch):
    cls = pair_class(nodes)
    for d in sweep(flags):
        k = d // int(flags["--segment"])
        t = TRUTH[cls]["per_call"] + fixed(cls) + (k - 1) * TRUTH[cls]["overhead"]
        yield {"collective": "broadcast", "algorithm": "chain", "bytes": d, "nranks": 2,
               "node_of_rank": nodes, "time_us": t * jitter("ch", d, launch) * 1e6}


def barrier(flags, nodes, launch):
    yield {"collective": "barrier", "algorithm": "mpi", "bytes": 0, "nranks": len(nodes),
           "node_of_rank": nodes, "time_us": TRUTH["barrier"] * 1e6}


def reduce_rate(flags, nodes, launch):
    b = int(flags["--min-bytes"])
    while b <= int(flags["--max-bytes"]):
        for kind in ("reduce", "copy"):
            yield {"kind": kind, "bytes": b,
                   "seconds": b / rate(TRUTH[kind], b) * jitter(kind, b, launch)}
        b *= int(float(flags["--factor"]))


PROBES = {"pingpong": pingpong, "broadcast_binomial": broadcast, "alltoall_pairwise": pairwise,
          "allgather_recursive_doubling": recursive_doubling, "broadcast_chain": chain,
          "barrier_mpi": barrier, "collscope_reduce_rate": reduce_rate}


def flags_of(args):
    out = {}
    for i, a in enumerate(args):
        if a.startswith("-"):
            out[a] = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else ""
    return out


def main(argv):
    log = os.environ.get("FAKE_LOG")
    np_at = argv.index("-np")
    binary_path = argv[np_at + 2]
    binary = os.path.basename(binary_path)
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(argv[:np_at + 3]) + "\n")
    if os.environ.get("FAKE_FAIL") == binary:
        sys.exit(f"fake_mpirun: {binary} failed on purpose")
    nodes = placement(argv[:np_at], int(argv[np_at + 1]))
    flags = flags_of(argv[np_at + 3:])
    for record in PROBES[binary](flags, nodes, launch_number(binary)):
        print(json.dumps(record))


if __name__ == "__main__":
    main(sys.argv[1:])
