"""Measures this machine (or the nodes a hostfile names) and writes a time-model file,
version 2 (collectives/model/MODEL.md, "The model file" and "Fitting").

    scripts/fit-model [--np 2] [--out FILE] [--bin DIR] [--iters 30] [--repeats 5]
                      [--max-bytes 64M] [--mpirun "mpirun -q"] [--mpirun-args "ARGS"]
                      [--intra-pair-args ARGS] [--inter-pair-args ARGS]
                      [--intra-moved-by receiver] [--inter-moved-by receiver|network]
                      [--inter-links per_rank|per_node_pair]

Every probe runs --repeats times, interleaved (a burst of load from elsewhere hits one
repeat of each probe, not every repeat of one); collscope/model/fit.py turns the repeats into
robust estimates (outliers dropped by median/MAD) and reports their spread.

On shared memory a message's port time depends on where its bytes sit: bytes the sender
wrote earlier in the call (received, copied or reduced: dirty in the sender's core's
cache, pulled across cores by the receiver) cost differently from the caller's unchanged
input (clean, and already in the receiving core's cache from the previous iteration);
which is faster depends on the cache topology. So each direction is measured for both
placements: `one_way` and `both_ways` for written bytes, `one_way_input` and
`both_ways_input` for input (MODEL.md, "Fitting"):

- one way, per link class: `pingpong --pairs all` on --np ranks, 8 B to --max-bytes
  (factor 2); each pair is classed by `node_of_rank` (same node: intra_node). Its half
  round trip is half input (the ping leaves the payload buffer, never written) and half
  written (the pong leaves where the ping landed);
- one way, input: `broadcast_binomial` on 2 ranks, the same sizes: the root sends its
  unchanged buffer;
- one way, written: derived, 2 x the ping-pong's port time less the input leg's. Bytes
  get written in a call by arriving or by a local copy. Arriving bytes sent on alone, one
  way, take a relay: on 2 ranks that is the pong itself (the ping-pong), and a longer
  chain or tree adds hops and a third rank. A copy first would put its time, to be
  subtracted, into every one-way size. The pong is the written leg with nothing else in
  it, once the ping's input leg is taken out: 2 x half round trip = input + written;
- both ways, input: `alltoall_pairwise` on 2 ranks, each rank sending the other one
  message at once, for the same message sizes: it copies its own block into place, then
  sends the other block straight from the send buffer, never written in the call;
- both ways, written: `allgather_recursive_doubling` on 2 ranks: it copies its own
  block into the receive buffer, then sends that copy;
  in both the copy's fitted time (copy_rate below) is subtracted. (An in-place exchange,
  sending from the buffer it receives into, was up to 1.5x slower than the all-to-all's
  on the development VM: the hand-written algorithms are measured out of place, as here);
- overhead (per message, on the rank's clock): `broadcast_chain --segment 64` on 2 ranks,
  16 to 1024 messages: the slope of its time against its messages;
- sync_lat's share: `barrier_mpi` on 2 ranks;
- reduce and copy: `collscope_reduce_rate` on --np processes at once, 1 KiB to
  --max-bytes (factor 2).
Curves per placement are fitted for intra_node only (PLACED: shared memory, where the
receiver reads the sender's buffer through the caches); inter_node gets one curve per
direction: the ping-pong one way, both exchanges' repeats together both ways (no
broadcast probe across nodes).
The 2-rank probes run once per link class: on one node with --intra-pair-args, across two
with --inter-pair-args (Open MPI's mapping; the default places 2 ranks on the first node,
or 1 on each of the first two). Their records' node_of_rank must say so. When the --np
ranks are all on one node, inter_node is written equal to intra_node and `source` says so.

Who moves the bytes of a link class (`moved_by`) is not measured: it is how the
transport works. Shared memory (Open MPI's single copy, CMA) and TCP move them with the
receiving rank's CPU (the default, `receiver`); give --inter-moved-by network for an
RDMA network, whose NIC moves them while the ranks compute. Nor is what a message
between nodes queues on (`links`): a port per rank (`per_rank`, the default: a NIC per
rank) or one link per ordered pair of nodes, shared by their ranks (`per_node_pair`:
host-to-host links shaped one by one, as on the emulated cluster).

--mpirun-args is passed to every launch (a hostfile, MCA parameters), e.g.
    scripts/fit-model --np 16 --mpirun-args "--hostfile hosts --mca btl tcp,self"
Writes FILE.tmp, then renames it. Exit code: 0; 2 on bad usage or missing binaries; 3 when
a run fails or the measurements cannot be fitted.
"""
import argparse
import datetime
import json
import os
import platform
import socket
import sys

from collscope.command_line import join_command_line_values, launch, split_words
from collscope.model import fit
from collscope.paths import ROOT
from collscope import sizes

PROGRAM = "fit-model"
BINARIES = ("pingpong", "broadcast_binomial", "alltoall_pairwise", "allgather_recursive_doubling",
            "broadcast_chain", "barrier_mpi", "collscope_reduce_rate")
# What measures each band key (fitted_on.probes): a file says how it was fitted.
PROBES = {
    "one_way": "pingpong --pairs all (half round trip, half input and half written; the "
               "written leg is derived: 2 x its port time less one_way_input's)",
    "one_way_input": "broadcast_binomial on 2 ranks",
    "both_ways": "allgather_recursive_doubling on 2 ranks, less its own block's copy",
    "both_ways_input": "alltoall_pairwise on 2 ranks, less its own block's copy",
}
# The 2-rank exchanges and the measurement each fills: both copy their own block into
# place, then send one message each way at once; the all-to-all sends from the caller's
# send buffer, the recursive doubling the copy it has just written.
EXCHANGES = (("alltoall_pairwise", "both_ways_input"),
             ("allgather_recursive_doubling", "both_ways"))
# The link classes fitted per placement: on shared memory the receiver's CPU reads the
# sender's buffer through the caches. Between nodes the bytes cross a network whose rate
# dwarfs that (and TCP copies them through socket buffers), so the probes of the two
# placements measure one thing twice: inter_node gets one curve per direction, from the
# ping-pong and both exchanges together (on the emulated cluster each exchange ran at
# the link's full rate in some repeats and at half in others, independently: a curve per
# probe would have split those modes between two curves).
PLACED = ("intra_node",)
CHAIN_SEGMENT = 64           # bytes per message of the message-rate probe
CHAIN_SIZES = ("1K", "64K")  # 16 to 1024 messages of CHAIN_SEGMENT bytes
RUN_TIMEOUT_S = 900


def fail(msg, code):
    print(f"{PROGRAM}: error: {msg}", file=sys.stderr)
    sys.exit(code)


def size_arg(text):
    """64, 64K, 16M, 1G -> bytes (a power of two from 1 KiB)."""
    try:
        n = sizes.parse_size(text)
    except sizes.SizeRefused:
        raise argparse.ArgumentTypeError(f"not a size: '{text}' (64K, 16M, 1G)") from None
    if n < 1024 or n & (n - 1):
        raise argparse.ArgumentTypeError(f"must be a power of two from 1K, got '{text}'")
    return n


# Options whose value is itself a command line (command_line.join_command_line_values).
COMMAND_LINE_OPTIONS = ("--mpirun", "--mpirun-args", "--intra-pair-args", "--inter-pair-args")


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROGRAM, description="Fit a time model of this machine.")
    p.add_argument("--np", type=int, default=2, help="ranks of the ping-pong matrix (>= 2)")
    p.add_argument("--out", default=None,
                   help="model file to write (default output/models/<host>.json)")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="binaries")
    p.add_argument("--iters", type=int, default=30, help="timed iterations per size and run")
    p.add_argument("--repeats", type=int, default=5, help="runs of every probe")
    p.add_argument("--max-bytes", type=size_arg, default=64 << 20,
                   help="largest message and reduction (power of two, default 64M)")
    p.add_argument("--mpirun", default="mpirun -q", help="the launcher")
    p.add_argument("--mpirun-args", default="", help="passed to every launch")
    p.add_argument("--intra-pair-args", default="--map-by ppr:2:node",
                   help="places the 2-rank probes on one node (several nodes only)")
    p.add_argument("--inter-pair-args", default="--map-by ppr:1:node",
                   help="places the 2-rank probes on two nodes (several nodes only)")
    for cls in ("intra", "inter"):
        p.add_argument(f"--{cls}-moved-by", choices=("receiver", "network"), default="receiver",
                       help=f"who moves {cls}_node bytes: the receiving rank's CPU (shared "
                            "memory, TCP) or the network (RDMA); default receiver")
    p.add_argument("--inter-links", choices=("per_rank", "per_node_pair"), default="per_rank",
                   help="what a message between nodes queues on: its ranks' ports (a NIC per "
                        "rank) or the link between the two nodes; default per_rank")
    argv = sys.argv[1:] if argv is None else argv
    a = p.parse_args(join_command_line_values(argv, COMMAND_LINE_OPTIONS))
    # (argparse exits 2 on bad usage)
    if a.np < 2:
        fail(f"--np must be at least 2, got {a.np}", 2)
    if a.iters < 1:
        fail(f"--iters must be at least 1, got {a.iters}", 2)
    if a.repeats < 1:
        fail(f"--repeats must be at least 1, got {a.repeats}", 2)
    if a.max_bytes < 64 * 1024:
        fail("--max-bytes must be at least 64K (the bandwidth needs large messages)", 2)
    for name in BINARIES:
        if not os.access(os.path.join(a.bin, name), os.X_OK):
            fail(f"no binary '{name}' in {a.bin} (build first, or pass --bin)", 2)
    words = split_words(a, ("mpirun", "mpirun_args", "intra_pair_args", "inter_pair_args"), fail,
                        "the launcher's arguments")
    a.launcher = words["mpirun"] + words["mpirun_args"]
    a.intra, a.inter = words["intra_pair_args"], words["inter_pair_args"]
    if not a.launcher:
        fail("--mpirun is empty", 2)
    if a.out is None:
        a.out = os.path.join(ROOT, "output", "models", socket.gethostname() + ".json")
    return a


# ---- running the probes --------------------------------------------------------------


def run(args, np, binary, flags, placement=()):
    """Runs `binary` on `np` ranks; returns its JSON lines."""
    cmd = [*args.launcher, *placement, "-np", str(np), os.path.join(args.bin, binary), *flags]
    p = launch(cmd, fail, RUN_TIMEOUT_S)
    try:
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    except ValueError as e:
        fail(f"{' '.join(cmd)} printed a line that is not JSON: {e}", 3)
    if not rows:
        fail(f"{' '.join(cmd)} reported nothing", 3)
    return rows


def timing_flags(args):
    return ["-n", str(args.iters), "-w", "3", "-c", "0", "--format", "jsonl"]


def new_class():
    return {"one_way": {}, "one_way_input": {}, "both_ways": {}, "both_ways_input": {},
            "chains": [], "barrier": None, "barrier_messages": 1}


def measure_one_way(args, classes):
    """pingpong over every pair; returns node_of_rank."""
    rows = run(args, args.np, "pingpong",
               ["--pairs", "all", "-b", "8", "-e", str(args.max_bytes), "-f", "2",
                *timing_flags(args)])
    for r in rows:
        for cls, seconds in fit.pingpong_times(r).items():
            classes[cls]["one_way"].setdefault(r["bytes"], []).append(seconds)
    return rows[0].get("node_of_rank") or [0] * args.np


def checked_class(rows, cls, binary):
    got = fit.call_class(rows[0])
    if got != cls:
        flag = "--intra-pair-args" if cls == "intra_node" else "--inter-pair-args"
        fail(f"the {cls} probe ({binary}) ran on nodes {rows[0].get('node_of_rank')}: "
             f"check {flag}", 3)
    return rows


def run_pair(args, cls, placement, binary, flags):
    """Runs a 2-rank probe placed for link class `cls`; its records must say it ran there."""
    return checked_class(run(args, 2, binary, flags, placement), cls, binary)


def measure_input_leg(args, cls, placement, m):
    """One way from the caller's input: the 2-rank broadcast's root sends its buffer."""
    rows = run_pair(args, cls, placement, "broadcast_binomial",
                    ["-b", "8", "-e", str(args.max_bytes), "-f", "2", *timing_flags(args)])
    for r in rows:
        m["one_way_input"].setdefault(r["bytes"], []).append(r["time_us"] * 1e-6)


def measure_exchanges(args, cls, placement, m):
    """Both ways, each exchange into its placement's key; in a class without placements
    the two are repeats of one both-ways measurement."""
    for binary, key in EXCHANGES:
        into = key if cls in PLACED else "both_ways"
        rows = run_pair(args, cls, placement, binary,
                        ["-b", "16", "-e", str(2 * args.max_bytes), "-f", "2",
                         *timing_flags(args)])
        for r in rows:
            message = r["sent_bytes"][0] if r.get("sent_bytes") else r["bytes"] // 2
            m[into].setdefault(message, []).append(r["time_us"] * 1e-6)


def measure_pair(args, cls, placement, m):
    """The 2-rank probes of link class `cls`, placed for it: the input one-way leg
    (PLACED classes), both exchanges and the message rate."""
    if cls in PLACED:
        measure_input_leg(args, cls, placement, m)
    measure_exchanges(args, cls, placement, m)
    rows = run_pair(args, cls, placement, "broadcast_chain",
                    ["--segment", str(CHAIN_SEGMENT), "-b", CHAIN_SIZES[0], "-e", CHAIN_SIZES[1],
                     "-f", "4", *timing_flags(args)])
    m["chains"].append([(r["bytes"] // CHAIN_SEGMENT, r["time_us"] * 1e-6) for r in rows])


def measure_barrier(args, placement, m):
    rows = run(args, 2, "barrier_mpi", ["-n", "2000", "-w", "100", "--format", "jsonl"], placement)
    m["barrier"] = rows[0]["time_us"] * 1e-6


def measure_rates(args, rates):
    rows = run(args, args.np, "collscope_reduce_rate",
               ["--min-bytes", "1024", "--max-bytes", str(args.max_bytes), "--factor", "2",
                "--seconds", "0.05"])
    for r in rows:
        if r.get("kind") in rates:
            rates[r["kind"]].setdefault(r["bytes"], []).append(r["seconds"])


def placements(args, several_nodes):
    if not several_nodes:
        return {"intra_node": []}
    return {"intra_node": args.intra, "inter_node": args.inter}


def measure(args):
    """Every probe, --repeats times, interleaved. Returns (classes, rates, node_of_rank)."""
    classes = {"intra_node": new_class(), "inter_node": new_class()}
    rates = {"reduce": {}, "copy": {}}
    nodes = None
    for repeat in range(args.repeats):
        print(f"{PROGRAM}: repeat {repeat + 1} of {args.repeats}", flush=True)
        nodes = measure_one_way(args, classes)
        for cls, placement in placements(args, fit.spans_nodes(nodes)).items():
            measure_pair(args, cls, placement, classes[cls])
        measure_rates(args, rates)
    for cls, placement in placements(args, fit.spans_nodes(nodes)).items():
        measure_barrier(args, placement, classes[cls])
    return classes, rates, nodes


# ---- the model file ------------------------------------------------------------------


def dump_json(value, indent=0):
    """JSON with one key per line, but lists of numbers (and of [bytes, seconds] pairs) on
    one line: a model file stays readable with its points in it."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f'{pad}  {json.dumps(k)}: {dump_json(v, indent + 1)}' for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        items = [pad + "  " + dump_json(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value)


def write_atomically(path, model):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            f.write(dump_json(model) + "\n")
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail(f"cannot write '{path}': {e}", 3)


def outliers(classes, rates):
    """How many repeats the robust estimates dropped, per probe."""
    count = {}
    for cls, m in classes.items():
        for probe in ("one_way", "one_way_input", "both_ways", "both_ways_input"):
            dropped = sum(len(fit.robust(v)[3]) for v in m[probe].values())
            if m[probe]:
                count[f"{cls}.{probe}"] = dropped
    for kind, samples in rates.items():
        count[kind] = sum(len(fit.robust(v)[3]) for v in samples.values())
    return count


def build_model(args, classes, rates, nodes):
    several = fit.spans_nodes(nodes)
    links = {}
    copy_bands = fit.rate_bands(rates["copy"])
    for cls in ("intra_node", "inter_node") if several else ("intra_node",):
        m = classes[cls]
        if not m["one_way"]:
            raise fit.FitError(f"no pair of the ping-pong is {cls}")
        # both exchanges come after their own block's copy
        links[cls] = fit.link_class(dict(m, **{key: fit.less_local_work(m[key], copy_bands)
                                               for _, key in EXCHANGES}))
        links[cls]["moved_by"] = getattr(args, cls.replace("_node", "") + "_moved_by")
    if several and args.inter_links != "per_rank":
        links["inter_node"]["links"] = args.inter_links
    host = socket.gethostname()
    if several:
        source = (f"fitted by scripts/fit-model on {len(set(nodes))} nodes ({args.np} ranks): "
                  "intra_node from pairs on one node, inter_node from pairs across nodes")
    else:
        source = (f"fitted by scripts/fit-model on {host} at {args.np} ranks; one node, so "
                  "inter_node is a copy of intra_node (not measured)")
        links["inter_node"] = links["intra_node"]
    return {
        "version": 2,
        "source": source,
        "fitted_on": {
            "host": host,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "np": args.np,
            "node_of_rank": nodes,
            "machine": platform.machine(),
            "launcher": " ".join(args.launcher),
            "repeats": args.repeats,
            "iters": args.iters,
            "outliers_dropped": outliers(classes, rates),
            "probes": PROBES,
            # the other classes: one_way from the ping-pong, both_ways from both exchanges
            "placed_classes": list(PLACED),
            "barrier_mpi_s": {c: classes[c]["barrier"] for c in links if classes[c]["barrier"]},
        },
        "intra_node": links["intra_node"],
        "inter_node": links["inter_node"],
        "reduce_rate": {"bands": fit.rate_bands(rates["reduce"])},
        "copy_rate": {"bands": copy_bands},
    }


def summary(model):
    lines = []
    for cls in ("intra_node", "inter_node"):
        lines.append(f"{cls}:")
        lines += fit.describe_link(model[cls])
    for kind in ("reduce_rate", "copy_rate"):
        bands = model[kind]["bands"]
        shown = ", ".join(f"{b['bytes']}: {b['rate'] / 1e9:.1f} (±{b['spread'] * 100:.0f}%)"
                          for b in bands[::4] + ([bands[-1]] if len(bands) % 4 != 1 else []))
        lines.append(f"{kind} GB/s by size: {shown}")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    classes, rates, nodes = measure(args)
    try:
        model = build_model(args, classes, rates, nodes)
    except fit.FitError as e:
        fail(str(e), 3)
    write_atomically(args.out, model)
    print(summary(model))
    print(f"{PROGRAM}: wrote {args.out}")
