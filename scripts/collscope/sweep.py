"""Runs a collscope sweep on a Slurm cluster: one job array per node count over
(collective, algorithm, transport) tasks, then a merge job into one results file.

    scripts/sweep [--file SWEEP.conf] [options] [--dry-run | --resume]
    scripts/sweep --check RESULTS_DIR      which tasks have their rows (exit 0 all, 1 not)
    scripts/sweep --collect RESULTS_DIR    check and merge (what slurm/merge.sbatch runs)

A sweep is described by options or by a file of `key = value` lines (`#` comments; the keys
are the long options with `_` for `-`; options given on the command line win), e.g.

    name = nightly
    collectives = allreduce, allgather
    algorithms = ring, mpi, allreduce:dbt     # `all`; `C:A` applies to collective C only
    transports = mpi
    min_bytes = 8
    max_bytes = 64M
    step_factor = 4
    rounds = 3                                # every task 3 times, the order alternating
    nodes = 1, 2, 4
    ntasks_per_node = 8
    partition = gpu
    time = 00:30:00

Every (collective, algorithm) must exist as BIN_DIR/<collective>_<algorithm>; the vendor
baselines (`<collective>_mpi`) run with `-t mpi` only. With `rounds = R` (2 or more) every
task is made R times, round k's tasks after round k-1's, in the list's order in even rounds
and reversed in odd ones, each with `--round k` so that its rows carry the round
(scripts/report compares algorithms round by round: docs/statistics.md); the pingpong job
runs once. The results directory receives
sweep.conf (the resolved description), sweep.tasks (the task list: line i is array task
i: `nodes ntasks_per_node program args...`), sweep.jobs (submitted job ids), logs/,
each task's `<array job>_<task>.h5` (pingpong: `<job>_pingpong.h5`), and from the merge
job `<name>.h5`, or `<name>.incomplete.h5` plus `<name>.missing` naming every task
without its rows.

Exit status: 0 submitted (printed, with --dry-run; complete, with --check/--collect);
1 sbatch refused a job (its message is printed; jobs this run had submitted are
cancelled), or --check/--collect found tasks without their rows; 2 bad description
(unknown collective or algorithm, bad size, a results directory holding another sweep,
jobs of the sweep still queued on --resume); 3 no sbatch on PATH, or a file that could
not be read or written.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import h5py

from collscope import algorithms
from collscope import results as cr   # the results layout, shared with report and merge
from collscope.paths import ROOT
from collscope import sizes

TRANSPORTS = ("mpi", "ucx", "nccl")
DEFAULTS = {
    "name": "sweep", "collectives": "", "algorithms": "all", "transports": "mpi",
    "min_bytes": "64", "max_bytes": "16M", "step_factor": "2", "iters": "20", "warmup": "5",
    "args": "", "memory": "host", "path": "", "nodes": "1", "ntasks_per_node": "2", "gpus_per_node": "", "partition": "",
    "account": "", "time": "", "pingpong": "no", "launcher": "auto", "mpi_env": "no",
    "max_parallel": "", "results_dir": "", "bin_dir": os.path.join(ROOT, "build", "bin"),
    "rounds": "1",
    # scripts/tune-mpi's sweeps (collscope/tune_mpi/plan.py): "sweep" (every forced Open MPI
    # algorithm) or "validate" (the default decision against decision_file)
    "tune_mpi": "", "tune_segments": "0", "decision_file": "",
}


class Refused(Exception):
    """A wrong description or state: exit 2."""


class NoSbatch(Exception):
    """Slurm's sbatch is not on PATH: exit 3."""


# ---- the description --------------------------------------------------------------------

def read_conf(path):
    values = {}
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError as e:
        raise Refused(f"cannot read '{path}': {e.strerror}") from None
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, eq, value = line.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or (key not in DEFAULTS and key != "root"):
            raise Refused(f"{path}:{number}: expected one of `{' '.join(DEFAULTS)}` = value")
        values[key] = value.strip()
    return values


def split_list(text):
    return [item for item in re.split(r"[,\s]+", text.strip()) if item]


def parse_size(text, what):
    try:
        return sizes.parse_size(text)
    except sizes.SizeRefused:
        raise Refused(f"bad size '{text}' for {what} (expected e.g. 64, 1K, 16M, 1G)") from None


def positive(text, what, minimum=1):
    if not re.fullmatch(r"\d+", str(text)) or int(text) < minimum:
        raise Refused(f"{what} must be an integer >= {minimum}, got '{text}'")
    return int(text)


def yes(text):
    if text.lower() in ("yes", "true", "1", "on"):
        return True
    if text.lower() in ("no", "false", "0", "off", ""):
        return False
    raise Refused(f"expected yes or no, got '{text}'")


def sweep_sizes(lo, hi, factor):
    """The sizes a binary measures for -b lo -e hi -f factor (bench/options.cpp)."""
    sizes, s = [], lo
    while s < hi:
        sizes.append(s)
        if s == 0:
            s = 1
        elif s > hi // factor:
            break
        else:
            s *= factor
    return sizes + [hi]


@dataclass
class Sweep:
    conf: dict
    name: str
    results_dir: str
    bin_dir: str
    nodes: list
    ntasks_per_node: int
    size_flags: list
    pingpong: bool
    tasks: list = field(default_factory=list)      # array tasks, index = position
    notes: list = field(default_factory=list)


@dataclass
class Task:
    index: int            # array task id; -1: a pingpong job of its own
    nodes: int
    ntasks_per_node: int
    program: str
    args: list

    @property
    def ranks(self):
        return self.nodes * self.ntasks_per_node

    @property
    def line(self):
        return " ".join([str(self.nodes), str(self.ntasks_per_node), self.program] + self.args)

    @property
    def label(self):
        where = f"task {self.index}" if self.index >= 0 else "pingpong job"
        return f"{where} ({self.program}, {self.ranks} ranks on {self.nodes} node(s))"

    def expected_rows_per_group(self, size_count):
        if self.program.startswith("barrier_") or "--split-file" in self.args:
            return 1
        return self.own_size_count() or size_count

    def own_size_count(self):
        """The sizes its own -b/-e/-f give (tune-mpi's tasks differ in sizes), else 0."""
        flags = dict(zip(self.args, self.args[1:]))
        if "-b" not in flags or "-e" not in flags:
            return 0
        return len(sweep_sizes(parse_size(flags["-b"], "-b"), parse_size(flags["-e"], "-e"),
                               int(flags.get("-f", "2"))))


def installed_binaries(bin_dir):
    """{collective: {algorithm, ...}}: the catalogue's (collscope/algorithms.py) whose
    binary <collective>_<algorithm> is in BIN_DIR."""
    if not os.path.isdir(bin_dir):
        raise Refused(f"no binaries in '{bin_dir}' (build first, or give --bin-dir)")
    try:
        catalogue = algorithms.load(bin_dir)
    except algorithms.Missing as e:
        raise Refused(str(e))
    table = {}
    for e in catalogue.algorithms():
        if os.access(os.path.join(bin_dir, f"{e['collective']}_{e['algorithm']}"), os.X_OK):
            table.setdefault(e["collective"], set()).add(e["algorithm"])
    return table


def choose_algorithms(collectives, requested, table, bin_dir, transports=("mpi",)):
    """[(collective, algorithm)] in the order asked; unknown ones are refused. `all` leaves
    NCCL's own collectives out unless nccl is among the transports (they need GPUs)."""
    known = " ".join(sorted(table))
    for c in collectives:
        if c not in table:
            raise Refused(f"unknown collective '{c}' (in {bin_dir}: {known})")
    plain = [a for a in requested if ":" not in a]
    pairs = []
    for item in requested:
        if ":" in item:
            c, a = item.split(":", 1)
            if c not in collectives:
                raise Refused(f"'{item}': collective '{c}' is not among --collectives")
    for c in collectives:
        wanted = [a for a in plain if a != "all"]
        if "all" in plain:
            wanted = sorted(a for a in table[c] if a != "nccl" or "nccl" in transports)
        wanted += [i.split(":", 1)[1] for i in requested if i.startswith(c + ":")]
        for a in wanted:
            if a not in table[c]:
                have = " ".join(sorted(table[c]))
                raise Refused(f"unknown algorithm '{a}' for {c}: no {c}_{a} in {bin_dir} ({c} has: {have})")
            if (c, a) not in pairs:
                pairs.append((c, a))
    return pairs


def device_flags(conf, transport):
    """--memory and --path for a task: NCCL moves GPU memory only (its tasks run on device
    memory whatever --memory says) and takes no --path (it moves the bytes itself)."""
    memory = "device" if transport == "nccl" else conf["memory"]
    if memory == "host":
        return []
    return ["-m", "device"] + (["--path", conf["path"]] if conf["path"] and transport != "nccl" else [])


def build_sweep(conf):
    name = conf["name"]
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9._-]*", name):
        raise Refused(f"--name must start with a letter, then letters, digits, '.', '_' or '-', got '{name}'")
    lo = parse_size(conf["min_bytes"], "--min-bytes")
    hi = parse_size(conf["max_bytes"], "--max-bytes")
    factor = positive(conf["step_factor"], "--step-factor")
    if lo > hi:
        raise Refused(f"--min-bytes ({lo}) is larger than --max-bytes ({hi})")
    if factor < 2 and lo != hi:
        raise Refused("--step-factor must be at least 2")
    iters = positive(conf["iters"], "--iters")
    warmup = positive(conf["warmup"], "--warmup", 0)
    rounds = positive(conf["rounds"], "--rounds")
    size_flags = ["-b", conf["min_bytes"], "-e", conf["max_bytes"], "-f", str(factor),
                  "-n", str(iters), "-w", str(warmup)]
    nodes = [positive(n, "--nodes") for n in split_list(conf["nodes"])] or [1]
    per_node = positive(conf["ntasks_per_node"], "--ntasks-per-node")
    if conf["gpus_per_node"]:
        positive(conf["gpus_per_node"], "--gpus-per-node", 0)
    if conf["max_parallel"]:
        positive(conf["max_parallel"], "--max-parallel")
    if conf["launcher"] not in ("auto", "srun", "mpirun"):
        raise Refused(f"--launcher must be auto, srun or mpirun, got '{conf['launcher']}'")
    yes(conf["mpi_env"])
    bin_dir = os.path.abspath(conf["bin_dir"])
    results_dir = os.path.abspath(conf["results_dir"] or os.path.join(ROOT, "output", name))
    sweep = Sweep(conf, name, results_dir, bin_dir, nodes, per_node, size_flags, yes(conf["pingpong"]))
    if conf["tune_mpi"]:
        from collscope.tune_mpi import plan   # imports this module: imported when used
        for n in nodes:
            for program, args in plan.runs(conf, sweep, n * per_node, size_flags, rounds):
                sweep.tasks.append(Task(len(sweep.tasks), n, per_node, program, args))
        return sweep

    collectives = split_list(conf["collectives"])
    if not collectives and not sweep.pingpong:
        raise Refused("nothing to run: give --collectives (and/or --pingpong)")
    transports = split_list(conf["transports"]) or ["mpi"]
    for t in transports:
        if t not in TRANSPORTS:
            raise Refused(f"unknown transport '{t}' (expected {', '.join(TRANSPORTS)})")
    table = installed_binaries(bin_dir)
    pairs = choose_algorithms(collectives, split_list(conf["algorithms"]) or ["all"], table, bin_dir,
                              transports)
    if sweep.pingpong and not os.access(os.path.join(bin_dir, "pingpong"), os.X_OK):
        raise Refused(f"no pingpong in '{bin_dir}'")
    extra = shlex.split(conf["args"])
    owned = {"-b", "--min-bytes", "-e", "--max-bytes", "-f", "--step-factor", "-n", "--iters",
             "-w", "--warmup", "-t", "--transport", "-O", "--output", "-m", "--memory", "--path",
             "--round"}
    for word in extra:
        if word.split("=", 1)[0] in owned:
            raise Refused(f"--args '{word}': the sweep sets that flag itself (sizes, iterations, "
                          "--transports, --memory, --path, --round, -O)")
    if conf["memory"] not in ("host", "device"):
        raise Refused(f"--memory must be host or device, got '{conf['memory']}'")
    if conf["path"] not in ("", "cuda_aware", "staged", "ipc"):
        raise Refused(f"--path must be cuda_aware, staged or ipc, got '{conf['path']}'")
    if conf["path"] and conf["memory"] != "device":
        raise Refused("--path applies to --memory device")
    runs = vendor_and_own_runs(conf, sweep, pairs, transports, size_flags, extra)
    for n in nodes:
        for k, (program, args) in rounds_of(runs, rounds, sweep):
            sweep.tasks.append(Task(len(sweep.tasks), n, per_node, program, args))
    return sweep


def vendor_and_own_runs(conf, sweep, pairs, transports, size_flags, extra):
    """[(program, args)] of one round: every (collective, algorithm) on every transport it
    takes."""
    runs = []
    for c, a in pairs:
        for t in transports:
            if a in ("mpi", "nccl") and t != a:
                note = f"{c}_{a} runs with -t {a} only (the vendor collective has no transport of ours)"
                if note not in sweep.notes:
                    sweep.notes.append(note)
                continue
            if a == "mpi" and conf["memory"] == "device" and conf["path"] not in ("", "cuda_aware"):
                note = f"{c}_mpi takes device buffers on the cuda_aware path only: left out"
                if note not in sweep.notes:
                    sweep.notes.append(note)
                continue
            runs.append((f"{c}_{a}", size_flags + ["-t", t] + device_flags(conf, t) + extra))
    return runs


def rounds_of(runs, rounds, sweep):
    """[(round, (program, args))]: every run once per round, in the list's order in even
    rounds and reversed in odd ones, so that a slow spell of the machine falls on every
    binary alike and none always follows the same one. With two rounds or more each run
    gets --round K (its rows carry K), where the binaries take it."""
    if rounds == 1:
        return [(0, run) for run in runs]
    out = []
    for k in range(rounds):
        for program, args in (runs if k % 2 == 0 else runs[::-1]):
            flag = ["--round", str(k)] if takes_round(sweep.bin_dir, program) else []
            out.append((k, (program, args + flag)))
    if runs and not takes_round(sweep.bin_dir, runs[0][0]):
        note = ("this build's binaries take no --round: the rows of the rounds carry no round "
                "(the tasks still run in rounds)")
        if note not in sweep.notes:
            sweep.notes.append(note)
    return out


ROUND_SUPPORT = {}


def takes_round(bin_dir, program):
    """Whether BIN_DIR/program has the --round flag (its --help names it); builds made
    before rows had a round do not."""
    key = os.path.join(bin_dir, program)
    if key not in ROUND_SUPPORT:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        try:
            p = subprocess.run([key, "--help"], capture_output=True, text=True, timeout=60, env=env)
            ROUND_SUPPORT[key] = re.search(r"--round\b(?!s)", p.stdout) is not None
        except (OSError, subprocess.TimeoutExpired):
            ROUND_SUPPORT[key] = False
    return ROUND_SUPPORT[key]


def pingpong_tasks(sweep):
    if not sweep.pingpong:
        return []
    return [Task(-1, n, sweep.ntasks_per_node, "pingpong", ["--pairs", "all"] + sweep.size_flags)
            for n in sweep.nodes]


def resolved_conf(sweep):
    conf = dict(sweep.conf, results_dir=sweep.results_dir, bin_dir=sweep.bin_dir, root=ROOT)
    return "".join(f"{k} = {v}\n" for k, v in conf.items())


def task_file_text(sweep):
    head = (f"# collscope sweep '{sweep.name}': line i (from 0, comments excluded) is array task i\n"
            "# nodes ntasks_per_node program args...\n")
    return head + "".join(t.line + "\n" for t in sweep.tasks)


# ---- which tasks have their rows ---------------------------------------------------------

text = cr.text


def run_args(command_line):
    """The arguments of a recorded command line, without argv[0] and the final `-O FILE`."""
    words = text(command_line).split(" ")[1:]
    if len(words) >= 2 and words[-2] == "-O":
        words = words[:-2]
    return " ".join(words)


def inspect_file(task, path, size_count):
    """(rows found, complete?, why not) for the task's run in one results file."""
    try:
        with cr.open_results_file(path) as f:
            runs = f["runs"][:]
            table = "pingpong" if task.program == "pingpong" else "collective"
            rows = f[f"{table}/rows"][:]
    except cr.NotResults as e:
        return 0, False, str(e)
    except (cr.Unreadable, OSError, KeyError) as e:
        return 0, False, f"{path}: unreadable ({e})"
    wanted = " ".join(task.args)
    best = (0, False, f"{path}: no run of {task.program} {wanted} on {task.ranks} ranks")
    for run in runs[runs["run_id"] >= 0]:
        if (text(run["program"]) != task.program or run_args(run["command_line"]) != wanted
                or int(run["world_size"]) != task.ranks
                or (task.index >= 0   # a task run outside Slurm (tune-mpi's local runs) has none
                    and text(run["slurm_array_task_id"]) not in ("", str(task.index)))):
            continue
        mine = rows[rows["run_id"] == run["run_id"]]
        if table == "collective":
            keys = [(text(d), text(o)) for d, o in zip(mine["dtype"], mine["op"])]
        else:
            keys = [()] * len(mine)
        counts = {k: keys.count(k) for k in set(keys)}
        expected = task.expected_rows_per_group(size_count)
        complete = bool(counts) and all(c == expected for c in counts.values())
        why = "" if complete else (f"{path}: {len(mine)} rows, expected {expected} per dtype/op"
                                   if len(mine) else f"{path}: the run left no rows")
        if complete or len(mine) > best[0]:
            best = (len(mine), complete, why)
        if complete:
            break
    return best


def candidate_files(results_dir, task):
    suffix = "pingpong" if task.index < 0 else str(task.index)
    pattern = re.compile(rf"(\d+)_{suffix}\.h5")
    found = []
    for name in os.listdir(results_dir):
        m = pattern.fullmatch(name)
        if m:
            found.append((int(m.group(1)), os.path.join(results_dir, name)))
    return [path for _, path in sorted(found, reverse=True)]   # newest job first


@dataclass
class TaskState:
    task: Task
    complete: bool = False
    file: str = ""          # the complete file, else the fullest partial one
    rows: int = 0
    why: str = ""


def last_words(results_dir, task):
    """The task's newest log file and its last error line (or last line), for the report."""
    suffix = "pingpong" if task.index < 0 else str(task.index)
    pattern = re.compile(rf"(\d+)_{suffix}\.out")
    logs = os.path.join(results_dir, "logs")
    found = sorted((int(m.group(1)), n) for n in (os.listdir(logs) if os.path.isdir(logs) else [])
                   if (m := pattern.fullmatch(n)))
    if not found:
        return "no log either (did the job start?)"
    path = os.path.join(logs, found[-1][1])
    with open(path, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    own = [line for line in errors if not line.startswith(("srun:", "slurmstepd:"))]
    last = (own or errors or lines or ["(empty)"])[-1]
    return f"log {os.path.relpath(path, results_dir)}: {last}"


def task_state(results_dir, task, size_count):
    state = TaskState(task, why="no file")
    for path in candidate_files(results_dir, task):
        rows, complete, why = inspect_file(task, path, size_count)
        if complete:
            return TaskState(task, True, path, rows, "")
        if rows > state.rows or state.why == "no file":
            state = TaskState(task, False, path if rows else "", rows, why)
    state.why += "; " + last_words(results_dir, task)
    return state


def all_states(sweep):
    count = len(sweep_sizes(parse_size(sweep.conf["min_bytes"], "-b"),
                            parse_size(sweep.conf["max_bytes"], "-e"),
                            int(sweep.conf["step_factor"])))
    return [task_state(sweep.results_dir, t, count) for t in sweep.tasks + pingpong_tasks(sweep)]


def load_sweep(results_dir):
    path = os.path.join(results_dir, "sweep.conf")
    if not os.path.isfile(path):
        raise Refused(f"'{results_dir}' holds no sweep (no sweep.conf)")
    conf = dict(DEFAULTS)
    conf.update(read_conf(path))
    conf.pop("root", None)
    conf["results_dir"] = results_dir        # where it is now, wherever it was made
    sweep = build_sweep(conf)
    stored = read_text(os.path.join(results_dir, "sweep.tasks"))
    if stored != task_file_text(sweep):
        raise Refused(f"{results_dir}/sweep.tasks does not match its sweep.conf")
    return sweep


def print_states(states):
    for s in states:
        status = "ok" if s.complete else "MISSING"
        detail = os.path.basename(s.file) if s.complete else s.why
        print(f"{status:8} {s.task.label}: {s.rows} rows; {detail}")


def cmd_check(results_dir):
    states = all_states(load_sweep(results_dir))
    print_states(states)
    return 0 if all(s.complete for s in states) else 1


def cmd_collect(results_dir):
    sweep = load_sweep(results_dir)
    states = all_states(sweep)
    print_states(states)
    missing = [s for s in states if not s.complete]
    base = os.path.join(sweep.results_dir, sweep.name)
    out = f"{base}.incomplete.h5" if missing else f"{base}.h5"
    inputs = [s.file for s in states if s.file]
    for stale in ([f"{base}.incomplete.h5", f"{base}.missing"] if not missing else [out]):
        if os.path.exists(stale):
            os.unlink(stale)
    if missing:
        report = "".join(f"{s.task.label}: {s.why}\n" for s in missing)
        write_text(f"{base}.missing", f"# tasks of sweep '{sweep.name}' without their rows\n" + report)
    if inputs:
        merge = subprocess.run([os.path.join(ROOT, "scripts", "merge"), "--force", out] + inputs)
        if merge.returncode != 0:
            print(f"sweep: error: scripts/merge failed (exit {merge.returncode})", file=sys.stderr)
            return 3
    if missing and os.path.exists(f"{base}.h5"):
        print(f"sweep: note: {base}.h5 is an earlier complete merge, left as it was", file=sys.stderr)
    if missing:
        print(f"sweep: INCOMPLETE: {len(missing)} of {len(states)} tasks left no rows or too few; "
              f"merged what there is into {out if inputs else '(nothing)'}; list in {base}.missing",
              file=sys.stderr)
        return 1
    print(f"sweep: complete: {len(states)} tasks merged into {out}")
    return 0


# ---- submitting --------------------------------------------------------------------------

def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_text(path, content):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(content)
    os.replace(tmp, path)


def ranges(indices):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'"""
    out, start = [], None
    for i, k in enumerate(indices):
        if start is None:
            start = k
        if i + 1 == len(indices) or indices[i + 1] != k + 1:
            out.append(str(start) if start == k else f"{start}-{k}")
            start = None
    return ",".join(out)


def resource_options(sweep, nodes):
    c = sweep.conf
    opts = [f"--nodes={nodes}", f"--ntasks-per-node={sweep.ntasks_per_node}"]
    for key, flag in (("gpus_per_node", "--gpus-per-node"), ("partition", "--partition"),
                      ("account", "--account"), ("time", "--time")):
        if c[key]:
            opts.append(f"{flag}={c[key]}")
    return opts


def submissions(sweep, todo_tasks, todo_pingpong):
    """[(kind, description, argv)]: the arrays and pingpong jobs; the merge comes after."""
    logs = os.path.join(sweep.results_dir, "logs")
    jobs = []
    for n in sweep.nodes:
        ids = [t.index for t in todo_tasks if t.nodes == n]
        if not ids:
            continue
        spec = ranges(ids) + (f"%{sweep.conf['max_parallel']}" if sweep.conf["max_parallel"] else "")
        argv = (["sbatch", "--parsable", f"--job-name=collscope-{sweep.name}", f"--array={spec}"]
                + resource_options(sweep, n)
                + [f"--output={logs}/%A_%a.out", os.path.join(ROOT, "slurm", "sweep.sbatch"),
                   sweep.results_dir])
        jobs.append(("array", f"{len(ids)} tasks ({ranges(ids)}) on {n} node(s)", argv))
    for t in todo_pingpong:
        argv = (["sbatch", "--parsable", f"--job-name=collscope-{sweep.name}-pingpong"]
                + resource_options(sweep, t.nodes)
                + [f"--output={logs}/%j_pingpong.out", os.path.join(ROOT, "slurm", "pingpong.sbatch"),
                   sweep.results_dir] + t.args[2:])
        jobs.append(("pingpong", f"pingpong --pairs all on {t.nodes} node(s)", argv))
    return jobs


def merge_argv(sweep, dependency):
    c = sweep.conf
    argv = ["sbatch", "--parsable", f"--job-name=collscope-{sweep.name}-merge"]
    if dependency:
        argv.append(f"--dependency=afterany:{dependency}")
    argv += ["--nodes=1", "--ntasks=1"]
    for key, flag in (("partition", "--partition"), ("account", "--account"), ("time", "--time")):
        if c[key]:
            argv.append(f"{flag}={c[key]}")
    return argv + [f"--output={sweep.results_dir}/logs/%j_merge.out",
                   os.path.join(ROOT, "slurm", "merge.sbatch"), sweep.results_dir]


def print_plan(sweep, jobs, todo_tasks):
    print(f"# collscope sweep '{sweep.name}': {len(todo_tasks)} of {len(sweep.tasks)} array tasks"
          f"{', ' + str(len([j for j in jobs if j[0] == 'pingpong'])) + ' pingpong jobs' if sweep.pingpong else ''}"
          f", results in {sweep.results_dir}")
    for note in sweep.notes:
        print(f"# note: {note}")
    print(f"# task list {os.path.join(sweep.results_dir, 'sweep.tasks')} (index: nodes ntasks_per_node program args):")
    todo = {t.index for t in todo_tasks}
    for t in sweep.tasks:
        print(f"#   {t.index}: {t.line}{'' if t.index in todo else '   (done: rows present)'}")
    names = []
    for i, (kind, what, argv) in enumerate(jobs, 1):
        names.append(f"JOB{i}")
        print(f"# {kind}: {what}")
        print(f"JOB{i}=$({shlex.join(argv)})")
    merge = shlex.join(merge_argv(sweep, "DEPENDENCY" if names else ""))
    merge = merge.replace("afterany:DEPENDENCY", "afterany:" + ":".join(f"${n}" for n in names))
    print(f"MERGE=$({merge})")


def sbatch(argv):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
        raise SubmitError(message)
    return result.stdout.strip().split(";")[0]


class SubmitError(Exception):
    """sbatch refused a job: exit 1."""


def still_queued(sweep):
    ids = split_list(read_text(os.path.join(sweep.results_dir, "sweep.jobs")) or "")
    if not ids or not shutil.which("squeue"):
        return []
    result = subprocess.run(["squeue", "-h", "-o", "%A", "-j", ",".join(ids)],
                            capture_output=True, text=True)
    return sorted(set(result.stdout.split())) if result.returncode == 0 else []


def prepare_results_dir(sweep, resume):
    tasks_path = os.path.join(sweep.results_dir, "sweep.tasks")
    stored = read_text(tasks_path)
    if stored is not None and stored != task_file_text(sweep):
        raise Refused(f"'{sweep.results_dir}' holds another sweep (its sweep.tasks differs); "
                      "give another --results-dir")
    if stored is not None and not resume:
        raise Refused(f"'{sweep.results_dir}' already holds this sweep: --resume completes it, "
                      "or give another --results-dir")
    if resume:
        queued = still_queued(sweep)
        if queued:
            raise Refused(f"jobs of this sweep are still queued or running ({' '.join(queued)}): "
                          "wait for them or scancel them, then --resume")


def submit(sweep, jobs, merge_needed):
    os.makedirs(os.path.join(sweep.results_dir, "logs"), exist_ok=True)
    described = [os.path.join(sweep.results_dir, n) for n in ("sweep.conf", "sweep.tasks")]
    new = not os.path.exists(described[1])
    write_text(described[0], resolved_conf(sweep))
    write_text(described[1], task_file_text(sweep))
    submitted = []
    try:
        for kind, what, argv in jobs:
            job = sbatch(argv)
            submitted.append(job)
            record_job(sweep, job)
            print(f"{kind} {job}: {what}")
        if merge_needed:
            job = sbatch(merge_argv(sweep, ":".join(submitted)))
            record_job(sweep, job)
            print(f"merge {job}: after {' '.join(submitted) or 'nothing'} -> "
                  f"{os.path.join(sweep.results_dir, sweep.name)}.h5")
    except SubmitError as e:
        print(f"sweep: error: sbatch refused a job: {e}", file=sys.stderr)
        if submitted:   # all or nothing: a sweep without its merge job would go unnoticed
            subprocess.run(["scancel"] + submitted, capture_output=True)
            print(f"sweep: cancelled the jobs this run had submitted: {' '.join(submitted)}",
                  file=sys.stderr)
        if new:         # leave the directory free for the corrected sweep
            for path in described + [os.path.join(sweep.results_dir, "sweep.jobs")]:
                if os.path.exists(path):
                    os.unlink(path)
        return 1
    return 0


def record_job(sweep, job):
    with open(os.path.join(sweep.results_dir, "sweep.jobs"), "a") as f:
        f.write(job + "\n")


def cmd_sweep(args):
    conf = dict(DEFAULTS)
    if args.file:
        conf.update(read_conf(args.file))
        conf.pop("root", None)
    for key in DEFAULTS:
        value = getattr(args, key, None)
        if value is not None:
            conf[key] = "yes" if value is True else str(value)
    sweep = build_sweep(conf)
    if not args.dry_run and not shutil.which("sbatch"):
        raise NoSbatch("sbatch is not on PATH: run on a Slurm login node, or start the local "
                       "cluster (slurm/local-cluster up) and export its SLURM_CONF")
    prepare_results_dir(sweep, args.resume)   # reads only: a dry run refuses what a real one would
    todo_tasks, todo_pingpong = sweep.tasks, pingpong_tasks(sweep)
    if args.resume and os.path.isdir(sweep.results_dir):
        states = all_states(sweep)
        todo = [s.task for s in states if not s.complete]
        todo_tasks = [t for t in todo if t.index >= 0]
        todo_pingpong = [t for t in todo if t.index < 0]
    jobs = submissions(sweep, todo_tasks, todo_pingpong)
    merged = os.path.join(sweep.results_dir, sweep.name + ".h5")
    merge_needed = bool(jobs) or not os.path.exists(merged)
    if args.dry_run:
        print_plan(sweep, jobs, todo_tasks)
        return 0
    if not jobs:
        print(f"sweep: every task has its rows{'' if merge_needed else ' and ' + merged + ' exists'}")
    return submit(sweep, jobs, merge_needed)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="sweep", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See slurm/README.md and the top of this script.")
    p.add_argument("--dry-run", action="store_true", help="print the task list and the sbatch commands; submit nothing")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="submit only the tasks whose rows are not in the results directory")
    mode.add_argument("--check", metavar="RESULTS_DIR", help="print which tasks have their rows")
    mode.add_argument("--collect", metavar="RESULTS_DIR", help="check and merge (the merge job)")
    p.add_argument("--file", metavar="SWEEP.conf", help="the sweep's description (key = value lines)")
    s = p.add_argument_group("the sweep")
    s.add_argument("--name", help="names the jobs and the merged file (default: sweep)")
    s.add_argument("--collectives", help="comma-separated, e.g. allreduce,allgather")
    s.add_argument("--algorithms", help="comma-separated; all (default); C:A for collective C only")
    s.add_argument("--transports", help="comma-separated: mpi (default), ucx, nccl")
    s.add_argument("-b", "--min-bytes", dest="min_bytes", help="as the binaries' -b (64)")
    s.add_argument("-e", "--max-bytes", dest="max_bytes", help="as the binaries' -e (16M)")
    s.add_argument("-f", "--step-factor", dest="step_factor", help="as the binaries' -f (2)")
    s.add_argument("-n", "--iters", help="timed iterations per size (20)")
    s.add_argument("-w", "--warmup", help="warmup iterations per size (5)")
    s.add_argument("--memory", help="host (default) or device: every rank's buffers on its GPU")
    s.add_argument("--path", help="device memory: cuda_aware, staged or ipc (default: the binaries' choice)")
    s.add_argument("--args", help="more flags for every binary, e.g. --args='-d float -o sum' (no spaces inside one flag)")
    s.add_argument("--pingpong", action="store_true", default=None, help="also a pingpong --pairs all job per node count")
    s.add_argument("--rounds", help="run every task R times, in rounds that alternate the order (1); "
                   "the rows carry their round (--round K)")
    r = p.add_argument_group("Slurm")
    r.add_argument("--nodes", help="node counts, comma-separated: one job array each (1)")
    r.add_argument("--ntasks-per-node", dest="ntasks_per_node", help="ranks per node (2)")
    r.add_argument("--gpus-per-node", dest="gpus_per_node")
    r.add_argument("--partition")
    r.add_argument("--account")
    r.add_argument("--time", help="time limit of each job, sbatch's format (e.g. 00:30:00)")
    r.add_argument("--max-parallel", dest="max_parallel", help="array tasks running at once (sbatch --array=...%%N)")
    r.add_argument("--launcher", help="auto (default), srun or mpirun (slurm/launch)")
    r.add_argument("--mpi-env", dest="mpi_env", action="store_true", default=None,
                   help="source scripts/mpi-env in each job (root, oversubscription: the local test cluster)")
    r.add_argument("--results-dir", dest="results_dir", help="default: output/<name>")
    r.add_argument("--bin-dir", dest="bin_dir", help="the binaries (default: build/bin)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    try:
        if args.check:
            return cmd_check(os.path.abspath(args.check))
        if args.collect:
            return cmd_collect(os.path.abspath(args.collect))
        return cmd_sweep(args)
    except (Refused, NoSbatch, OSError) as e:
        print(f"sweep: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, Refused) else 3
