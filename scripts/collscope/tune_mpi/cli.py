"""scripts/tune-mpi: Open MPI's coll_tuned decision file from collscope's own measurements,
and the proof that it is faster (docs/tuning.md).

    scripts/tune-mpi run      [sweep options] DIR       sweep, decide and validate, here
    scripts/tune-mpi sweep    [sweep options] DIR       every forced algorithm (--slurm: job arrays)
    scripts/tune-mpi decide   DIR                       DIR/decision.candidate.conf, DIR/decision.md
    scripts/tune-mpi validate [--rounds R] [--slurm] DIR   default against the file; DIR/decision.conf
    scripts/tune-mpi check    FILE                      a decision file Open MPI would read as meant?

Sweep options: --np 2,4 (local; one sweep per N) or --slurm --nodes 1,2 --ntasks-per-node 8;
--collectives all or Open MPI's names (allreduce, bcast, reduce, allgather, alltoall,
reduce_scatter, reduce_scatter_block, gather, scatter, barrier); -b -e -f -n -w as the
binaries'; --rounds (10: the run-level test of the best of 14 candidates at 95%);
--segments (0,64K: the segment sizes tried for segmented algorithms).

Exit status: 0 done (check: the file is well formed); 1 tasks without their rows (named, as
scripts/sweep --collect names them), or a validation that dropped every rule; 2 bad input
(an unknown collective, an algorithm number Open MPI does not have, a malformed decision
file, an MPI that is not Open MPI, a directory without the step before); 3 no sbatch for
--slurm, or a file that could not be read or written.
"""
import argparse
import math
import os
import shutil
import sys

from collscope import stats
from collscope import sweep as sw
from collscope.report import load
from collscope.tune_mpi import decide as dc
from collscope.tune_mpi import execute, openmpi
from collscope.tune_mpi import rules as rl
from collscope.tune_mpi import validate as vl

CANDIDATE = "decision.candidate.conf"
FINAL = "decision.conf"


class Usage(Exception):
    """Bad input: exit 2."""


def sweep_conf(args, kind, results_dir, nranks=None):
    conf = {"name": f"tune-{kind}", "collectives": args.collectives, "algorithms": "mpi",
            "min_bytes": args.min_bytes, "max_bytes": args.max_bytes, "step_factor": args.step_factor,
            "iters": args.iters, "warmup": args.warmup, "rounds": str(args.rounds),
            "tune_mpi": kind, "tune_segments": args.segments, "results_dir": results_dir,
            "bin_dir": args.bin_dir}
    if nranks:
        conf.update(nodes="1", ntasks_per_node=str(nranks))
    else:
        conf.update(nodes=args.nodes, ntasks_per_node=args.ntasks_per_node, partition=args.partition,
                    time=args.time, account=args.account, mpi_env="yes" if args.mpi_env else "no")
    return conf


def sweep_dirs(args, kind):
    """[(results dir, conf)]: one per N locally, one for the Slurm sweep."""
    base = os.path.join(os.path.abspath(args.dir), kind)
    if args.slurm:
        return [(base, sweep_conf(args, kind, base))]
    nps = [sw.positive(n, "--np") for n in sw.split_list(args.np or "2")]
    return [(f"{base}-np{n}", sweep_conf(args, kind, f"{base}-np{n}", n)) for n in nps]


def run_sweeps(args, kind, extra=None):
    """The merged files of the sweeps of `kind`, run here or (--slurm) submitted."""
    if args.slurm and not shutil.which("sbatch") and not args.dry_run:
        raise sw.NoSbatch("--slurm needs sbatch on PATH (a Slurm login node, or slurm/local-cluster)")
    merged, missing = [], 0
    for results_dir, conf in sweep_dirs(args, kind):
        conf.update(extra or {})
        sweep = execute.make_sweep(conf)
        if args.slurm:
            return slurm_sweep(sweep, args.dry_run)
        if args.dry_run:
            sw.print_plan(sweep, [], sweep.tasks)
            continue
        path = execute.run_local(sweep)
        if path:
            merged.append(path)
        else:
            missing += 1
    return merged, 1 if missing else 0


def slurm_sweep(sweep, dry_run):
    """Submits the sweep; where it was submitted before, its merge ([file], 0) once the
    merge job has made it."""
    merged = os.path.join(sweep.results_dir, f"{sweep.name}.h5")
    if os.path.exists(os.path.join(sweep.results_dir, "sweep.tasks")) and not dry_run:
        if os.path.exists(merged):
            return [merged], 0
        raise Usage(f"the Slurm sweep in {sweep.results_dir} is not merged yet: scripts/sweep "
                    f"--check {sweep.results_dir} names the tasks without their rows")
    return None, execute.submit_slurm(sweep, dry_run)


def merged_files(directory, kind):
    """The merged results of DIR's sweeps of `kind`; Usage when there are none, with the
    incomplete ones named."""
    found, incomplete = [], []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        sub = os.path.join(directory, name)
        if name == kind or name.startswith(kind + "-np"):
            path = os.path.join(sub, f"tune-{kind}.h5")
            if os.path.exists(path):
                found.append(path)
            else:
                incomplete.append(sub)
    for sub in incomplete:
        print(f"tune-mpi: warning: {sub} has no complete merge; its tasks without rows:",
              file=sys.stderr)
        try:
            states = sw.all_states(sw.load_sweep(sub))
        except sw.Refused as e:
            print(f"  {e}", file=sys.stderr)
            continue
        for s in states:
            if not s.complete:
                print(f"  MISSING {s.task.label}: {s.why}", file=sys.stderr)
    if not found:
        raise Usage(f"'{directory}' holds no complete {kind} (run `scripts/tune-mpi {kind}` first)")
    return found


def cmd_decide(args):
    algorithms = openmpi.installed_algorithms()
    decisions = dc.decide(dc.read_rows(merged_files(args.dir, "sweep")), args.level)
    rules = dc.rules_of(decisions, algorithms)
    header = ["collscope tune-mpi: candidate rules (each band's evidence above it);",
              "validate before use: scripts/tune-mpi validate DIR"]
    write(os.path.join(args.dir, CANDIDATE), rl.render(rules, header))
    write(os.path.join(args.dir, "decision.md"), decision_markdown(decisions, algorithms))
    ruled = sum(d.choice != dc.DEFAULT for d in decisions)
    print(f"tune-mpi: {len(decisions)} cells, {ruled} with an algorithm faster than the default "
          f"beyond the noise -> {os.path.join(args.dir, CANDIDATE)}")
    return 0


def decision_markdown(decisions, algorithms):
    lines = ["# Open MPI tuning: what each cell's fastest forced algorithm gains", "",
             "| collective | N | size (B) | default ran | default (us) | pick | pick (us) | time ratio | candidates |",
             "|---|--:|--:|---|--:|---|--:|---|---|"]
    for d in decisions:
        ratio = d.verdict.text() if d.verdict else "-"
        fell = sum(1 for _, v, note in d.candidates if note.startswith("fell back"))
        cands = f"{len(d.candidates)}" + (f" ({fell} fell back)" if fell else "")
        chosen = "-" if math.isnan(d.chosen_us) else f"{d.chosen_us:.4g}"
        lines.append(f"| {d.collective} | {d.nranks} | {d.nbytes} | {vl.cell(d.default_ran or '?')} | "
                     f"{d.default_us:.4g} | {dc.choice_name(d.collective, d.choice, algorithms)} | "
                     f"{chosen} | {ratio} | {cands} |")
    return "\n".join(lines) + "\n"


def cmd_validate(args):
    candidate = os.path.abspath(args.file or os.path.join(args.dir, CANDIDATE))
    if not args.file and not os.path.exists(candidate):
        raise Usage(f"'{args.dir}' has no {CANDIDATE}: run `scripts/tune-mpi decide {args.dir}` first")
    rules = read_rules(candidate)
    if not rules:
        write(os.path.join(args.dir, FINAL), rl.render({}, [
            "collscope tune-mpi: no rule: no algorithm beat Open MPI's default beyond the noise",
            "in any measured cell; this file leaves every decision to Open MPI's fixed one"]))
        print(f"tune-mpi: no candidate rule to validate: Open MPI's default was not beaten beyond "
              f"the noise; {os.path.join(args.dir, FINAL)} holds no rules")
        return 0
    args.collectives = ",".join(rules)
    if not args.np:     # the communicator sizes the file has rules for
        ruled = {n for sizes in rules.values() for n, bands in sizes.items()
                 if any(b.algorithm for b in bands)}
        args.np = ",".join(str(n) for n in sorted(ruled))
    files, status = run_sweeps(args, "validate", {"decision_file": candidate})
    if files is None or status:
        return status
    return finish_validation(args, rules, files)


def finish_validation(args, rules, files):
    checks = vl.checks_of(dc.read_rows(files), rules, args.level)
    kept, gone = vl.kept_rules(rules, checks)
    header = ["collscope tune-mpi: rules the validation found faster than Open MPI's default",
              f"({vl.summary(checks)})",
              "use: mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename THIS"]
    write(os.path.join(args.dir, FINAL), rl.render(kept, header))
    page = ["# Open MPI tuning: the decision file against the default", "", vl.summary(checks), "",
            *vl.markdown(checks)]
    write(os.path.join(args.dir, "validation.md"), "\n".join(page) + "\n")
    print(f"tune-mpi: {vl.summary(checks)}; {len(gone)} rule(s) dropped -> {os.path.join(args.dir, FINAL)}")
    return 0 if kept else 1


def read_rules(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise load.IOFailure(f"cannot read '{path}': {e.strerror}") from None
    try:
        return rl.parse(text, openmpi.installed_algorithms())
    except rl.Malformed as e:
        raise Usage(f"{path}: {e}") from None


def cmd_check(args):
    openmpi.check_open_mpi()
    rules = read_rules(args.file)
    bands = sum(len(b) for sizes in rules.values() for b in sizes.values())
    print(f"{args.file}: well formed: {len(rules)} collective(s), {bands} band(s)")
    return 0


def write(path, text):
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise load.IOFailure(f"cannot write '{path}': {e.strerror}") from None


def cmd_sweep(args):
    openmpi.check_open_mpi()
    _, status = run_sweeps(args, "sweep")
    return status


def cmd_run(args):
    status = cmd_sweep(args)
    if status or args.dry_run:
        return status
    cmd_decide(args)
    args.rounds, args.file = args.validate_rounds, None
    return cmd_validate(args)


def add_sweep_options(p, rounds):
    p.add_argument("dir", metavar="DIR", help="the tuning's directory (created)")
    p.add_argument("--np", help="local: rank counts, comma-separated (2; validate: the file's)")
    p.add_argument("--collectives", default="all")
    p.add_argument("-b", dest="min_bytes", default="64")
    p.add_argument("-e", dest="max_bytes", default="1M")
    p.add_argument("-f", dest="step_factor", default="16")
    p.add_argument("-n", dest="iters", default="20")
    p.add_argument("-w", dest="warmup", default="3")
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--segments", default="0,64K")
    p.add_argument("--level", type=float, default=stats.LEVEL)
    p.add_argument("--bin-dir", default=sw.DEFAULTS["bin_dir"])
    p.add_argument("--dry-run", action="store_true", help="print the tasks; run nothing")
    s = p.add_argument_group("Slurm")
    s.add_argument("--slurm", action="store_true", help="submit job arrays (scripts/sweep's)")
    s.add_argument("--nodes", default="1")
    s.add_argument("--ntasks-per-node", default="2")
    s.add_argument("--partition", default="")
    s.add_argument("--account", default="")
    s.add_argument("--time", default="")
    s.add_argument("--mpi-env", action="store_true")


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Usage(message)


def parse_args(argv):
    p = Parser(prog="tune-mpi", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_sweep_options(sub.add_parser("sweep"), 10)
    run = sub.add_parser("run")
    add_sweep_options(run, 10)
    run.add_argument("--validate-rounds", type=int, default=6)
    d = sub.add_parser("decide")
    d.add_argument("dir", metavar="DIR")
    d.add_argument("--level", type=float, default=stats.LEVEL)
    v = sub.add_parser("validate")
    add_sweep_options(v, 6)
    v.add_argument("--file", help="the decision file (default DIR/decision.candidate.conf)")
    c = sub.add_parser("check")
    c.add_argument("file", metavar="FILE")
    return p.parse_args(argv)


COMMANDS = {"sweep": cmd_sweep, "run": cmd_run, "decide": cmd_decide, "validate": cmd_validate,
            "check": cmd_check}


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        if getattr(args, "rounds", 1) < 1 or not 0 < getattr(args, "level", 0.5) < 1:
            raise Usage("--rounds must be at least 1 and --level within (0, 1)")
        return COMMANDS[args.command](args)
    except (Usage, sw.Refused, openmpi.NotOpenMpi, load.BadInput) as e:
        print(f"tune-mpi: error: {e}", file=sys.stderr)
        return 2
    except (sw.NoSbatch, load.IOFailure, OSError) as e:
        print(f"tune-mpi: error: {e}", file=sys.stderr)
        return 3
