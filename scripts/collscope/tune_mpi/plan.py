"""The runs of a tuning sweep and of a validation, as scripts/sweep's tasks (so that they run
locally or as Slurm job arrays, and `scripts/sweep --check/--collect` say which are
missing).

A sweep.conf with `tune_mpi = sweep` runs, for each collective of `collectives` (Open
MPI's names) on N ranks, Open MPI's fixed decision ("default") and every coll_tuned
algorithm forced, each segmented algorithm once per `tune_segments` size; `tune_mpi =
validate` runs the default and `decision_file`. Each variant has
  - one probe run with --vendor-volume, one timed call per size: its traffic names what
    Open MPI really ran (a forced algorithm it silently replaced is not credited);
  - `rounds` timed runs without the monitoring (whose layer would tax every message),
    the variants' order alternating from round to round (scripts/sweep's rounds).
The variant is on the binary's command line (`--mca NAME=VALUE`), so every row records it
(`mpi_coll_params`).
"""
from collscope import sweep as sw
from collscope.tune_mpi import openmpi

PROBE_FLAGS = ["--vendor-volume", "-n", "1", "-w", "0"]


def mca(name, value):
    return ["--mca", f"{name}={value}"]


def forced_flags(collective, algorithm, segsize):
    """The command line that forces one coll_tuned algorithm (and its segment size)."""
    flags = mca("coll_tuned_use_dynamic_rules", 1) + mca(f"coll_tuned_{collective}_algorithm", algorithm)
    if segsize:
        flags += mca(f"coll_tuned_{collective}_algorithm_segmentsize", segsize) + ["--segment", str(segsize)]
    if (collective, algorithm) in openmpi.CHAINS:   # one chain: the twin's, and the file's fan-out 1
        flags += mca(f"coll_tuned_{collective}_algorithm_chain_fanout", 1)
    return flags


def file_flags(path):
    return mca("coll_tuned_use_dynamic_rules", 1) + mca("coll_tuned_dynamic_rules_filename", path)


def segment_sizes(conf):
    return sorted({sw.parse_size(s, "tune_segments") for s in sw.split_list(conf["tune_segments"]) or ["0"]})


def variants(collective, nranks, algorithms, segments):
    """[flags] for the default and every algorithm Open MPI has at nranks."""
    out = [[]]
    for number in sorted(algorithms.get(collective, {})):
        if openmpi.twin(collective, number, nranks) is None:
            continue      # not at this N (two_proc)
        segs = segments if number in openmpi.SEGMENTED.get(collective, ()) else [0]
        out.extend(forced_flags(collective, number, s) for s in segs)
    return out


def size_runs(collective, size_flags):
    """[size flags] of one variant: the sweep's sizes, or for MPI_Reduce_scatter one run per
    size with one float more, so that N does not divide the count (uneven blocks)."""
    if not openmpi.COLLECTIVES[collective].uneven:
        return [size_flags]
    flags = dict(zip(size_flags[::2], size_flags[1::2]))
    sizes = sw.sweep_sizes(sw.parse_size(flags["-b"], "-b"), sw.parse_size(flags["-e"], "-e"),
                           int(flags["-f"]))
    rest = ["-n", flags["-n"], "-w", flags["-w"]]
    return [["-b", str(s + 4), "-e", str(s + 4), "-d", "float"] + rest for s in sizes]


def without_timing(size_flags):
    flags = dict(zip(size_flags[::2], size_flags[1::2]))
    return [w for k in ("-b", "-e", "-f", "-d") if k in flags for w in (k, flags[k])]


def runs(conf, sweep, nranks, size_flags, rounds):
    """[(program, args)] on nranks: the probes, then the timed rounds."""
    collectives = check_collectives(sw.split_list(conf["collectives"]))
    if conf["tune_mpi"] == "sweep":
        algorithms = openmpi.installed_algorithms()
        segments = segment_sizes(conf)
        chosen = {c: variants(c, nranks, algorithms, segments) for c in collectives}
    elif conf["tune_mpi"] == "validate":
        if not conf["decision_file"]:
            raise sw.Refused("tune_mpi = validate needs decision_file")
        chosen = {c: [[], file_flags(conf["decision_file"])] for c in collectives}
    else:
        raise sw.Refused(f"tune_mpi must be sweep or validate, got '{conf['tune_mpi']}'")
    timed, probes = [], []
    for c in collectives:
        program = openmpi.COLLECTIVES[c].binary
        for flags in chosen[c]:
            for sizes in size_runs(c, size_flags):
                timed.append((program, sizes + ["-t", "mpi"] + flags))
                probes.append((program, without_timing(sizes) + ["-t", "mpi"] + flags + PROBE_FLAGS))
    return probes + [run for _, run in sw.rounds_of(timed, rounds, sweep)]


def check_collectives(names):
    if not names:
        raise sw.Refused("nothing to tune: give --collectives (Open MPI's names, or all)")
    if names == ["all"]:
        return list(openmpi.COLLECTIVES)
    for n in names:
        if n not in openmpi.COLLECTIVES:
            raise sw.Refused(f"unknown collective '{n}' (Open MPI's coll_tuned names: "
                             f"{', '.join(openmpi.COLLECTIVES)}, or all)")
    return names
