"""Sets collscope's figures beside those of the Intel MPI Benchmarks (IMB) and the OSU
micro-benchmarks (OMB): builds them from source folders you point at (never downloads
anything), runs them alternating with collscope's vendor baselines (<collective>_mpi),
and prints one table per collective the tools share:

    scripts/compare-tools --imb ~/src/mpi-benchmarks --osu ~/src/osu-micro-benchmarks
    scripts/compare-tools --osu DIR --collectives allreduce,broadcast --sizes 8,1K,1M
    scripts/compare-tools --imb DIR --osu DIR --collectives all --repeats 9 --nice -15

The columns (medians over the runs, each with +- half its spread in % of the median; a
ratio is the median of each round's ratio, as the machine's speed may drift between
rounds, with its 95 % interval over the rounds and "tie" where that holds 1, else
"faster" or "slower": docs/statistics.md):
IMB's t_avg, OSU's average latency, collscope --timing loop and --timing call (both with
--ranks as given, avg by default: IMB and OSU average over ranks), and the ratios
loop/IMB and loop/OSU. docs/timing.md says what each tool times and why they differ.

Options:
  --imb DIR           IMB's source folder (IMB-MPI1 is built with its own Makefile)
  --osu DIR           OMB's source folder (configure, after autoreconf where it has none)
  --work DIR          where the copies are built and the logs go (output/compare-tools);
                      a build is reused while its source folder stays the same
  --rebuild           build again even so
  --collectives LIST  allreduce (default), or a comma list of allreduce reduce
                      reduce_scatter allgather alltoall broadcast gather scatter barrier,
                      or all
  --sizes LIST        collscope's bytes (README: the larger buffer), powers of two
                      (default 8,1K,32K,64K,128K,1M,16M); IMB and OSU run the same call at
                      their own size (bytes / N for per-rank sizes: allgather, alltoall,
                      gather, scatter; IMB's reduce_scatter too)
  --np N (2)  --repeats R (7)  --iters N (200)  --warmup W (20)
  --ranks max|avg|min how collscope combines the ranks' times (avg)
  --nice N            run every measured job at this niceness, in a session of its own
                      (its own autogroup: the only way to outrank other sessions' jobs on
                      Linux); below 0 needs root
  --bin DIR           collscope's binaries (build/bin)
  --raw FILE          also write every run's figures as JSON lines
Exit code: 0; 2 on bad input (one line); 3 when a source folder does not build or a run
fails (one line naming the log).
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

from collscope import stats
from collscope.paths import ROOT
from collscope import sizes

PROG = "compare-tools"

# collective -> IMB benchmark, OSU program, dtype of collscope's run, whether IMB's and
# OSU's sizes are per rank (collscope's bytes / N). None: the tool has no such benchmark.
COLLECTIVES = {
    "allreduce": {"imb": "Allreduce", "osu": "osu_allreduce", "dtype": "float", "imb_per_rank": False, "osu_per_rank": False},
    "reduce": {"imb": "Reduce", "osu": "osu_reduce", "dtype": "float", "imb_per_rank": False, "osu_per_rank": False},
    "reduce_scatter": {"imb": "Reduce_scatter", "osu": "osu_reduce_scatter", "dtype": "float", "imb_per_rank": True, "osu_per_rank": False},
    "allgather": {"imb": "Allgather", "osu": "osu_allgather", "dtype": "int8", "imb_per_rank": True, "osu_per_rank": True},
    "alltoall": {"imb": "Alltoall", "osu": "osu_alltoall", "dtype": "int8", "imb_per_rank": True, "osu_per_rank": True},
    "broadcast": {"imb": "Bcast", "osu": "osu_bcast", "dtype": "int8", "imb_per_rank": False, "osu_per_rank": False},
    "gather": {"imb": "Gather", "osu": "osu_gather", "dtype": "int8", "imb_per_rank": True, "osu_per_rank": True},
    "scatter": {"imb": "Scatter", "osu": "osu_scatter", "dtype": "int8", "imb_per_rank": True, "osu_per_rank": True},
    "barrier": {"imb": "Barrier", "osu": "osu_barrier", "dtype": None, "imb_per_rank": False, "osu_per_rank": False},
}
DEFAULT_SIZES = "8,1K,32K,64K,128K,1M,16M"


class Failure(Exception):
    """A one-line error and its exit code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def usage(message):
    raise Failure(2, message)


# ---- the command line --------------------------------------------------------------------

def parse_size(text):
    try:
        value = sizes.parse_size(text)
    except sizes.SizeRefused:
        usage(f"bad size '{text}' (expected e.g. 8, 1K, 16M)")
    if value < 1 or value & (value - 1):
        usage(f"size '{text}' is not a power of two (OSU's sizes double from the smallest)")
    return value


def positive(flag, text):
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        usage(f"{flag} must be a positive integer, got '{text}'")
    return int(text)


def parse_args(argv):
    opts = {"imb": None, "osu": None, "work": os.path.join(ROOT, "output", "compare-tools"),
            "rebuild": False, "collectives": ["allreduce"], "sizes": None, "np": 2,
            "repeats": 7, "iters": 200, "warmup": 20, "ranks": "avg", "nice": None,
            "bin": os.path.join(ROOT, "build", "bin"), "raw": None}
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag == "--rebuild":
            opts["rebuild"] = True
            i += 1
            continue
        if flag not in ("--imb", "--osu", "--work", "--collectives", "--sizes", "--np", "--repeats",
                        "--iters", "--warmup", "--ranks", "--nice", "--bin", "--raw"):
            usage(f"unknown argument '{flag}' (see the top of {PROG} for its options)")
        if i + 1 >= len(argv):
            usage(f"{flag} needs a value")
        value = argv[i + 1]
        key = flag[2:]
        if key in ("np", "repeats", "iters"):
            opts[key] = positive(flag, value)
        elif key == "warmup":
            if not re.fullmatch(r"\d+", value):
                usage(f"--warmup must be a non-negative integer, got '{value}'")
            opts[key] = int(value)
        elif key == "ranks":
            if value not in ("max", "avg", "min"):
                usage(f"--ranks must be max, avg or min, got '{value}'")
            opts[key] = value
        elif key == "nice":
            if not re.fullmatch(r"-?\d+", value) or not -20 <= int(value) <= 19:
                usage(f"--nice must be an integer from -20 to 19, got '{value}'")
            if int(value) < 0 and os.geteuid() != 0:
                usage(f"--nice {value} needs root (a negative niceness)")
            opts[key] = int(value)
        elif key == "collectives":
            names = list(COLLECTIVES) if value == "all" else [c for c in value.split(",") if c]
            for c in names:
                if c not in COLLECTIVES:
                    usage(f"unknown collective '{c}' (expected {' '.join(COLLECTIVES)} or all)")
            if not names:
                usage("--collectives needs at least one name")
            opts[key] = names
        elif key == "sizes":
            opts[key] = sorted({parse_size(s) for s in value.split(",") if s.strip()})
            if not opts[key]:
                usage("--sizes needs at least one size")
        else:
            opts[key] = value
        i += 2
    if opts["sizes"] is None:
        opts["sizes"] = sorted(parse_size(s) for s in DEFAULT_SIZES.split(","))
    if not opts["imb"] and not opts["osu"]:
        usage("give at least one source folder: --imb DIR and/or --osu DIR")
    for key in ("imb", "osu"):
        if opts[key] and not os.path.isdir(opts[key]):
            usage(f"--{key} '{opts[key]}' is not a folder")
    for c in opts["collectives"]:
        binary = os.path.join(opts["bin"], c + "_mpi")
        if not os.access(binary, os.X_OK):
            usage(f"no collscope binary {binary} (build collscope first, or give --bin)")
        if COLLECTIVES[c]["dtype"] == "float" and opts["sizes"][0] < 4:
            usage(f"{c} reduces floats: sizes must be at least 4 B")
        per_rank = COLLECTIVES[c]["imb_per_rank"] or COLLECTIVES[c]["osu_per_rank"]
        if per_rank and c != "barrier":
            for s in opts["sizes"]:
                if s % opts["np"] or (COLLECTIVES[c]["dtype"] == "float" and (s // opts["np"]) % 4):
                    usage(f"{c} at {opts['np']} ranks: size {s} does not split into "
                          f"{opts['np']} equal blocks for IMB and OSU")
    return opts


# ---- building the tools --------------------------------------------------------------------

def run_logged(cmd, cwd, log, env=None):
    """Runs a build step, appending its output to `log`; True if it exited 0."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env)
    return p.returncode == 0


def fresh_copy(source, work, name, rebuild):
    """The source's copy in `work` (timestamps kept, so make sees what configure made),
    and whether a previous build of the same source may be reused."""
    copy = os.path.join(work, name + "-src")
    stamp = os.path.join(work, name + ".source")
    source = os.path.realpath(source)
    same = os.path.exists(stamp) and open(stamp).read() == source and os.path.isdir(copy)
    if same and not rebuild:
        return copy, True
    shutil.rmtree(copy, ignore_errors=True)
    if os.path.exists(stamp):
        os.remove(stamp)
    shutil.copytree(source, copy, symlinks=True)
    return copy, False


def built(work, name, source, binaries):
    """Records that `binaries` of `source` were built."""
    missing = [b for b in binaries if not os.access(b, os.X_OK)]
    if missing:
        return missing
    with open(os.path.join(work, name + ".source"), "w") as f:
        f.write(os.path.realpath(source))
    return []


def build_imb(source, work, rebuild):
    """IMB-MPI1, built by IMB's own Makefile with MPI's compiler wrappers."""
    copy, reuse = fresh_copy(source, work, "imb", rebuild)
    binary = os.path.join(copy, "IMB-MPI1")
    log = os.path.join(work, "imb-build.log")
    if reuse and os.access(binary, os.X_OK):
        return binary
    open(log, "w").close()
    # OMPI_SKIP_MPICXX: Open MPI's C++ bindings do not compile under IMB's -Werror.
    ok = run_logged(["make", "IMB-MPI1", "CC=mpicc", "CXX=mpicxx",
                     "CPPFLAGS=-DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"], copy, log)
    if not ok or built(work, "imb", source, [binary]):
        raise Failure(3, f"IMB in {source} did not build (log: {log})")
    return binary


def osu_programs_dir(copy):
    """The folder of OMB's blocking collectives: the one holding osu_allreduce.c."""
    for folder, _, files in sorted(os.walk(copy)):
        if "osu_allreduce.c" in files:
            return folder
    return None


def build_osu(source, work, rebuild):
    """OMB's collective programs: configure (made by autoreconf where the source has
    none), then make in the collectives' folder. make is told not to regenerate the
    autotools files, whose timestamps a checkout does not keep in order."""
    copy, reuse = fresh_copy(source, work, "osu", rebuild)
    log = os.path.join(work, "osu-build.log")
    folder = osu_programs_dir(copy)
    if reuse and folder and os.access(os.path.join(folder, "osu_allreduce"), os.X_OK):
        return folder
    open(log, "w").close()
    fail = Failure(3, f"OSU in {source} did not build (log: {log})")
    if folder is None:
        raise fail
    if not os.path.exists(os.path.join(copy, "configure")):
        if not shutil.which("autoreconf"):
            raise Failure(3, f"OSU in {source} has no configure script and autoreconf is not "
                             f"installed (autoconf, automake, libtool)")
        if not run_logged(["autoreconf", "-fi"], copy, log):
            raise fail
    if not run_logged(["./configure", "CC=mpicc", "CXX=mpicxx"], copy, log):
        raise fail
    no_regeneration = ["ACLOCAL=true", "AUTOCONF=true", "AUTOMAKE=true", "AUTOHEADER=true"]
    if not run_logged(["make", *no_regeneration], folder, log):
        raise fail
    programs = [os.path.join(folder, c["osu"]) for c in COLLECTIVES.values()]
    if built(work, "osu", source, programs[:1]):
        raise fail
    return folder


# ---- parsing the tools' outputs ----------------------------------------------------------

def parse_imb(text, benchmark):
    """{bytes: t_avg in us} of one IMB benchmark's table (Barrier: {0: t_avg}), and the
    repetitions IMB reports for each."""
    times, reps = {}, {}
    inside = False
    for line in text.splitlines():
        if line.startswith("# Benchmarking "):
            inside = line.split()[2] == benchmark
            continue
        if not inside:
            continue
        fields = line.split()
        if not fields or not re.fullmatch(r"\d+", fields[0]):
            continue
        numbers = [float(x) for x in fields]
        if len(numbers) == 5:  # #bytes #repetitions t_min t_max t_avg
            times[int(numbers[0])], reps[int(numbers[0])] = numbers[4], int(numbers[1])
        elif len(numbers) == 4:  # Barrier: #repetitions t_min t_max t_avg
            times[0], reps[0] = numbers[3], int(numbers[0])
    return times, reps


def parse_osu(text):
    """{size: average latency in us} of an OSU collective's table (barrier: {0: avg})."""
    times = {}
    sized = None
    for line in text.splitlines():
        if line.startswith("#"):
            if "Latency" in line:
                sized = "Size" in line
            continue
        fields = line.split()
        if sized is None or not fields:
            continue
        try:
            numbers = [float(x) for x in fields]
        except ValueError:
            continue
        if sized and len(numbers) >= 2:
            times[int(numbers[0])] = numbers[1]
        elif not sized:
            times[0] = numbers[0]
    return times


def parse_collscope(text):
    """{bytes: time_us} of collscope's JSON lines."""
    rows = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    return {int(r["bytes"]): float(r["time_us"]) for r in rows}


# ---- running --------------------------------------------------------------------------------

def environment():
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1")


def at_priority(niceness):
    """A preexec function: a new session (so a new autogroup, which the scheduler weighs
    against other sessions' groups) at `niceness`, the processes too."""
    if niceness is None:
        return None

    def lift():
        os.setsid()
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(niceness))
        except OSError:
            pass  # no autogroups: the processes' niceness alone
        os.nice(niceness - os.nice(0))
    return lift


def mpirun(opts, program, args, what):
    cmd = ["mpirun", "-q", "-np", str(opts["np"]), program, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=environment(),
                       preexec_fn=at_priority(opts["nice"]))
    if p.returncode != 0:
        log = os.path.join(opts["work"], "failed-run.log")
        with open(log, "w") as f:
            f.write("$ " + " ".join(cmd) + f"\nexit {p.returncode}\n{p.stdout}\n{p.stderr}")
        raise Failure(3, f"{what} failed with exit {p.returncode} (log: {log})")
    return p.stdout


def tool_sizes(opts, per_rank):
    return [s // opts["np"] if per_rank else s for s in opts["sizes"]]


def run_imb(opts, imb, coll):
    spec = COLLECTIVES[coll]
    args = [spec["imb"], "-npmin", str(opts["np"]), "-iter", str(opts["iters"]),
            "-iter_policy", "off", "-time", "100000"]
    sizes = tool_sizes(opts, spec["imb_per_rank"])
    if coll != "barrier":
        lengths = os.path.join(opts["work"], "imb-lengths.txt")
        with open(lengths, "w") as f:
            f.write("".join(f"{s}\n" for s in sizes))
        # IMB cuts the lengths of -msglen down to 2^22 unless -msglog raises its largest.
        args += ["-msglen", lengths, "-msglog", str(max(22, sizes[-1].bit_length() - 1))]
    times, reps = parse_imb(mpirun(opts, imb, args, f"IMB-MPI1 {spec['imb']}"), spec["imb"])
    missing = [s for s in (sizes if coll != "barrier" else [0]) if s not in times]
    short = [s for s, r in reps.items() if r != opts["iters"]]
    if missing or short:
        what = f"no row for {missing[0]} B" if missing else \
            f"fewer than {opts['iters']} repetitions at {short[0]} B"
        raise Failure(3, f"IMB-MPI1 {spec['imb']} gave {what}")
    return by_bytes(opts, times, sizes, coll)


def run_osu(opts, folder, coll):
    spec = COLLECTIVES[coll]
    args = ["-i", str(opts["iters"]), "-x", str(opts["warmup"]), "-f"]
    sizes = tool_sizes(opts, spec["osu_per_rank"])
    if coll != "barrier":
        args = ["-m", f"{sizes[0]}:{sizes[-1]}", *args]
    times = parse_osu(mpirun(opts, os.path.join(folder, spec["osu"]), args, spec["osu"]))
    missing = [s for s in (sizes if coll != "barrier" else [0]) if s not in times]
    if missing:
        raise Failure(3, f"{spec['osu']} gave no row for {missing[0]} B")
    return by_bytes(opts, times, sizes, coll)


def run_collscope(opts, coll, timing):
    spec = COLLECTIVES[coll]
    args = ["-n", str(opts["iters"]), "-w", str(opts["warmup"]), "-c", "0", "--timing", timing,
            "--ranks", opts["ranks"], "--format", "jsonl"]
    if coll != "barrier":
        args += ["-b", str(opts["sizes"][0]), "-e", str(opts["sizes"][-1]), "-f", "2",
                 "-d", spec["dtype"]]
    if coll == "broadcast":
        # IMB and OSU broadcast one buffer; out of place, collscope's root would first copy
        # its send buffer into its receive buffer, in every call (docs/timing.md).
        args.append("--in-place")
    times = parse_collscope(mpirun(opts, os.path.join(opts["bin"], coll + "_mpi"), args,
                                   f"{coll}_mpi --timing {timing}"))
    return {0: times[0]} if coll == "barrier" else {s: times[s] for s in opts["sizes"] if s in times}


def by_bytes(opts, times, tool_sizes_run, coll):
    """A tool's {its size: time} keyed by collscope's bytes (the same call)."""
    if coll == "barrier":
        return {0: times[0]} if 0 in times else {}
    return {b: times[t] for b, t in zip(opts["sizes"], tool_sizes_run) if t in times}


# ---- the table --------------------------------------------------------------------------------

def summary(values):
    """(median, +- half the spread in % of the median) of one cell's runs, or None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    m = statistics.median(values)
    return m, (max(values) - min(values)) / 2 / m * 100 if m > 0 else 0.0


def cell(values):
    s = summary(values)
    return f"{'-':>16}" if s is None else f"{s[0]:>10.3f} ±{s[1]:>3.0f}%"


def paired_ratio(a, b):
    """The median over the rounds of a / b, each round's two figures taken minutes apart
    at most: steadier than a ratio of medians on a machine whose speed drifts."""
    pairs = [x / y for x, y in zip(a, b) if x is not None and y is not None and y > 0]
    return statistics.median(pairs) if pairs else None


def ratio_verdict(a, b):
    """(the median of each round's a / b, its stats.Interval over the rounds: Wilcoxon
    signed-rank, docs/statistics.md), or None."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None and y > 0]
    if not pairs:
        return None
    return paired_ratio(a, b), stats.paired_ratio_interval(pairs)


RATIO_WIDTH = 27


def ratio_cell(a, b):
    """'0.987 [0.95, 1.02] tie': the ratio, its interval and whether a is faster or
    slower than b beyond the noise (the interval above or below 1), or a tie."""
    v = ratio_verdict(a, b)
    if v is None:
        return f"{'-':>{RATIO_WIDTH}}"
    r, interval = v
    word = {"tie": "tie", "faster": "faster", "slower": "slower"}[stats.word_of(interval)]
    shown = f"{r:.3f} [{stats.bound(interval.low)}, {stats.bound(interval.high)}] {word}"
    return f"{shown:>{RATIO_WIDTH}}"


def print_table(opts, coll, samples):
    spec = COLLECTIVES[coll]
    ranks = opts["ranks"]
    print(f"# {coll}: {opts['np']} ranks, {opts['iters']} iterations; medians of "
          f"{opts['repeats']} alternating runs, ± half their spread; ratios: the median of "
          f"each round's ratio, its {stats.LEVEL:.0%} interval over the rounds (Wilcoxon "
          f"signed-rank, docs/statistics.md; {stats.PAIRED_MIN_ROUNDS} rounds or more for a "
          "bounded one) and 'tie' where it holds 1")
    print(f"#   IMB {spec['imb']} -iter {opts['iters']} -iter_policy off: t_avg;  OSU "
          f"{spec['osu']} -i {opts['iters']} -x {opts['warmup']}: average;  collscope "
          f"{coll}_mpi -n {opts['iters']} -w {opts['warmup']} --ranks {ranks}")
    if coll != "barrier" and (spec["imb_per_rank"] or spec["osu_per_rank"]):
        who = " and ".join(t for t, key in (("IMB", "imb_per_rank"), ("OSU", "osu_per_rank"))
                           if spec[key])
        print(f"#   size: collscope's bytes; {who} ran the same call at size / {opts['np']}")
    print(f"# {'size':>9} {'IMB t_avg':>16} {'OSU avg':>16} {'loop (' + ranks + ')':>16} "
          f"{'loop/IMB':>{RATIO_WIDTH}} {'loop/OSU':>{RATIO_WIDTH}} {'call (' + ranks + ')':>16}")
    keys = [0] if coll == "barrier" else opts["sizes"]
    for b in keys:
        col = {name: [t.get(b) for t in samples[name]] for name in ("imb", "osu", "loop", "call")}
        print(f"  {b:>9} {cell(col['imb'])} {cell(col['osu'])} {cell(col['loop'])} "
              f"{ratio_cell(col['loop'], col['imb'])} {ratio_cell(col['loop'], col['osu'])} "
              f"{cell(col['call'])}")
    print()


# ---- main ------------------------------------------------------------------------------------

def measure(opts, built_tools, coll, raw):
    """`repeats` rounds; in each, every tool once, in an order that turns each round so
    no tool always follows the same one."""
    runners = []
    if "imb" in built_tools:
        runners.append(("imb", lambda: run_imb(opts, built_tools["imb"], coll)))
    if "osu" in built_tools:
        runners.append(("osu", lambda: run_osu(opts, built_tools["osu"], coll)))
    runners.append(("loop", lambda: run_collscope(opts, coll, "loop")))
    runners.append(("call", lambda: run_collscope(opts, coll, "call")))
    samples = {name: [{} for _ in range(opts["repeats"])] for name in ("imb", "osu", "loop", "call")}
    for r in range(opts["repeats"]):
        turn = r % len(runners)
        for name, run in runners[turn:] + runners[:turn]:
            times = run()
            samples[name][r] = times
            if raw:
                raw.write(json.dumps({"collective": coll, "round": r, "tool": name,
                                      "times_us": {str(b): t for b, t in times.items()}}) + "\n")
    return samples


def main(argv):
    opts = parse_args(argv)
    os.makedirs(opts["work"], exist_ok=True)
    opts["work"] = os.path.abspath(opts["work"])
    tools = {}
    if opts["imb"]:
        tools["imb"] = build_imb(opts["imb"], opts["work"], opts["rebuild"])
    if opts["osu"]:
        tools["osu"] = build_osu(opts["osu"], opts["work"], opts["rebuild"])
    raw = open(opts["raw"], "w") if opts["raw"] else None
    try:
        for coll in opts["collectives"]:
            print_table(opts, coll, measure(opts, tools, coll, raw))
            sys.stdout.flush()
    finally:
        if raw:
            raw.close()
    return 0


def run():
    """The program, as scripts/compare-tools runs it."""
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(e.code)
