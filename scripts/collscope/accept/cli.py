"""scripts/accept: acceptance testing of nodes and fabrics in one command.

    scripts/accept [--spec SPEC] --out DIR [--baseline OLD_DIR] [settings...]

Loads every link (ping-pong of every pair alone, disjoint pairs at once, every rank to
r+k at once; allreduce and alltoall within each host and over all hosts; a compute probe
per rank), repeated; where the ranks have device memory (--memory device, or auto: every
rank sees a GPU) also every GPU (its memory, its PCIe link, its ipc paths to the GPUs of
its node, NCCL); judges every link, host, rank and GPU against its class's threshold
(SPEC) and against its peers (median and MAD); retests what looks wrong against
known-good peers to name the one link, host, rank or GPU to blame; writes
DIR/verdict.json, DIR/accept.h5 and DIR/report.md with its PNGs. acceptance/README.md has
the method, the formats and the exit codes:

  0 pass, 1 fail, 4 inconclusive (retest), 2 bad spec or usage (one line), 3 runtime
  failure (a launch failed, or a signal): one line, and no verdict written.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import time

from ..paths import ROOT
from . import gpu_verdict
from .evidence import EvidenceError, make_pictures, write_h5, write_report
from .gpu_judge import GpuJudge
from .gpu_measure import (GpuRetester, GpuScreening, check_slowdown, identify,
                         memory_kind, nccl_runs, screen_gpus)
from .gpus import GpuLayout
from .judge import Judge
from .measure import RuntimeFailure, Runner, collectives, screen
from .placement import Layout, find_placement
from .spec import (COUNT_KEYS, GPU_CLASSES, MEASURE_DEFAULTS, ZERO_OK, SpecError,
                  load_spec, setting)

EXIT_USAGE, EXIT_RUNTIME = 2, 3
OUTPUTS = ("accept.h5", "report.md")   # verdict.json is renamed last, on its own


class Usage(argparse.ArgumentParser):
    def error(self, message):   # one line, exit 2
        raise SpecError(message)


class Interrupted(Exception):
    pass


def parse_args(argv):
    p = Usage(prog="scripts/accept", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", help="the link classes' expectations (JSON; none: peers only)")
    p.add_argument("--out", required=True, help="directory for verdict.json, accept.h5, report.md")
    p.add_argument("--baseline", help="an earlier run's --out: a regression beyond tolerance fails")
    p.add_argument("--np", type=int, default=4, help="local ranks, without a hostfile or Slurm (4)")
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"), help="collscope's binaries")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    for key in MEASURE_DEFAULTS:   # every measurement setting, over the spec's
        p.add_argument("--" + key.replace("_", "-"), dest=key, metavar="VALUE",
                       help=f"measure.{key} (default {MEASURE_DEFAULTS[key]})")
    return p.parse_args(argv)


def settings_of(args, spec):
    out = dict(spec.measure)
    for key in MEASURE_DEFAULTS:
        value = getattr(args, key)
        if value is None:
            continue
        if key in COUNT_KEYS | ZERO_OK:
            if not value.isdigit():
                low = 0 if key == "warmup" else 1
                raise SpecError(f"--{key.replace('_', '-')} must be an integer >= {low}, got '{value}'")
            value = int(value)
        elif key == "timeout":
            try:
                value = float(value)
            except ValueError:
                raise SpecError(f"--timeout must be a number of seconds, got '{value}'") from None
        out[key] = setting(key, value, "--" + key.replace("_", "-"))
    if out["collective_min_bytes"] > out["collective_max_bytes"]:
        raise SpecError("collective_min_bytes is larger than collective_max_bytes")
    return out


def load_baseline(path):
    if path is None:
        return None
    file = os.path.join(path, "verdict.json")
    if not os.path.isdir(path):
        raise SpecError(f"baseline '{path}' is not a directory")
    try:
        with open(file) as f:
            old = json.load(f)
    except FileNotFoundError:
        raise SpecError(f"baseline '{path}' has no verdict.json (not an acceptance run's --out)") from None
    except (OSError, ValueError) as e:
        raise SpecError(f"baseline '{file}' cannot be read: {e}") from None
    if not isinstance(old, dict) or old.get("schema") != "collscope acceptance verdict":
        raise SpecError(f"baseline '{file}' is not an acceptance verdict")
    if old.get("schema_version") not in (1, 2):
        raise SpecError(f"baseline '{file}': schema version {old.get('schema_version')} is not supported (1, 2)")
    return old


def gpu_classes(settings):
    """The GPU classes to measure, where the ranks turn out to have device memory."""
    if settings["memory"] == "host":
        return []
    return [c for c in settings["classes"].split(",") if c in GPU_CLASSES]


def check_inputs(args, settings):
    if args.np < 2:
        raise SpecError(f"--np must be at least 2, got {args.np}")
    links = "links" in settings["classes"].split(",")
    needed = ["pingpong"] + (["compute_probe"] + [c for c in settings["collectives"].split(",") if c]
                             if links else [])
    if settings["memory"] == "device":
        needed += ["gpu_probe"] + (["allreduce_nccl", "alltoall_nccl"] if "nccl" in gpu_classes(settings) else [])
    missing = [b for b in needed if not os.access(os.path.join(args.bin_dir, b), os.X_OK)]
    if missing:
        raise SpecError(f"{', '.join(missing)} not found in {args.bin_dir} (build first: scripts/bootstrap)")
    check_slowdown(os.environ)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise SpecError(f"--out '{args.out}' exists and is not a directory")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise SpecError(f"--out '{args.out}': cannot create: {e.strerror}") from None
    if not os.access(args.out, os.W_OK):
        raise SpecError(f"--out '{args.out}' is not writable")


class Retester:
    """What the judge may ask for after screening: a pair alone, more compute probes, a
    host's collective again."""

    def __init__(self, runner):
        self.runner, self.extra = runner, 0

    def __call__(self, a, b, size, iters):
        return self.runner.retest(a, b, size, iters)

    def probe(self):
        self.extra += 1
        return self.runner.compute_probe(f"extra{self.extra}")

    def collective(self, program, host):
        return self.runner.collective(program, host)


def layout_checker(state):
    """Checks that every launch put the ranks where the first compute probe found them."""
    def check(value, what):
        if state.get("layout") is None:
            if not all(isinstance(h, str) for h in value):
                raise RuntimeFailure(f"{what}: no host names")
            state["layout"] = Layout(value)
            return
        layout = state["layout"]
        seen = value if all(isinstance(v, int) for v in value) else Layout(value).node
        if list(seen) != layout.node:
            raise RuntimeFailure(f"{what}: ranks landed on other hosts than in the first launch "
                                 f"({seen} against {layout.node})")
    return check


def gpu_plan(runner, settings, check):
    """Whether the GPU classes are measured: (GpuLayout or None, why). --memory auto
    measures them where every rank has device memory (gpu_probe --identify)."""
    if not gpu_classes(settings):
        return None, "--memory host" if settings["memory"] == "host" else "no GPU class in measure.classes"
    if not os.access(os.path.join(runner.bin_dir, "gpu_probe"), os.X_OK):   # auto (device checked it)
        return None, f"gpu_probe not found in {runner.bin_dir}"
    ident = identify(runner)
    check(ident["hosts"], "gpu-identify")
    kind, why = memory_kind(settings["memory"], ident)
    return (GpuLayout(ident["hosts"], ident["gpus"]) if kind == "device" else None), why


class Measured:
    """What a run measured: the links' screening and the GPU classes' (where measured)."""

    def __init__(self):
        self.screening, self.layout = None, None
        self.gpus, self.gpu_screening = None, GpuScreening()


def measure_and_judge(args, spec, settings, baseline, placement, work, log):
    runner = Runner(placement, args.bin_dir, work, settings, log)
    state = {}   # the layout, once the first launch has found it
    got = Measured()
    try:
        patterns = settings["patterns"].split(",")
        links = "links" in settings["classes"].split(",")
        check = layout_checker(state)
        got.gpus, why = gpu_plan(runner, settings, check)
        if not links and got.gpus is None:
            raise SpecError(f"measure.classes names only GPU classes, and they cannot be measured here ({why})")
        classes = gpu_classes(settings) if got.gpus else []

        def gpu_repeat(i):
            screen_gpus(runner, got.gpu_screening, state["layout"], classes, patterns, i)

        got.screening = screen(runner, patterns, settings["repeats"], check, links, gpu_repeat if classes else None)
        got.layout = layout = state["layout"]
        colls = collectives(runner, [c for c in settings["collectives"].split(",") if c], layout) if links else {}
        if "nccl" in classes:
            nccl_runs(runner, got.gpu_screening, layout)
        verdict = Judge(layout, got.screening, colls, spec, baseline, Retester(runner), runner.problems,
                        links).run()
        if got.gpus:
            gj = GpuJudge(got.gpus, got.gpu_screening, spec, GpuRetester(runner, layout)).run(layout)
            gpu_verdict.extend(verdict, gj, classes, why)
        else:
            gpu_verdict.not_measured(verdict, why)
    finally:
        runner.stop()
    return runner, got, verdict


def publish(work, out, names):
    """Moves the finished files into place; verdict.json last, after removing the old
    one, so a verdict.json is never half written and never older than its evidence."""
    old = os.path.join(out, "verdict.json")
    if os.path.exists(old):
        os.remove(old)
    for name in names:
        os.replace(os.path.join(work, name), os.path.join(out, name))
    os.replace(os.path.join(work, "verdict.json"), old)


def write_outputs(work, verdict, got, runner, settings, meta):
    results = [os.path.join(work, l["results"]) for l in runner.launches if l["results"]]
    write_h5(os.path.join(work, "accept.h5"), results, verdict, got, runner, settings)
    pictures = make_pictures(verdict, got, work)
    write_report(os.path.join(work, "report.md"), verdict, got.layout, pictures, meta)
    with open(os.path.join(work, "verdict.json"), "w") as f:
        json.dump(verdict, f, indent=1)
        f.write("\n")
    return list(OUTPUTS) + [name for name, _ in pictures]


def summary_lines(verdict):
    lines = [f"accept: {verdict['verdict'].upper()} (exit {verdict['exit_code']})"]
    for b in verdict["blame"]:
        lines.append(f"  blame {b['kind']} {b['where']}: {b['reason']}")
    if verdict["verdict"] == "inconclusive":
        bad = [f"{l['ranks'][0]}-{l['ranks'][1]}" for l in verdict["links"] if l["verdict"] == "inconclusive"]
        gpus = [g["where"] for g in verdict.get("gpus", []) if g["verdict"] == "inconclusive"]
        lines.append(f"  inconclusive pairs (retest): {' '.join(bad) or 'none'}")
        if gpus:
            lines.append(f"  inconclusive GPUs (retest): {', '.join(gpus)}")
    return lines


def on_signal(number, _frame):
    raise Interrupted(signal.Signals(number).name)


def run(args):
    spec = load_spec(args.spec)
    settings = settings_of(args, spec)
    spec.measure = settings
    baseline = load_baseline(args.baseline)
    check_inputs(args, settings)
    placement = find_placement(os.environ, args.np)
    log = (lambda text: None) if args.quiet else (lambda text: print(f"accept: {text}", file=sys.stderr, flush=True))
    started, t0 = datetime.datetime.now(datetime.timezone.utc), time.monotonic()
    work = tempfile.mkdtemp(prefix=".accept-tmp-", dir=args.out)
    try:
        log(f"{placement.nranks} ranks ({placement.kind}: "
            f"{', '.join(f'{h} x{n}' for h, n in placement.hosts)}), results in {args.out}")
        runner, got, verdict = measure_and_judge(args, spec, settings, baseline, placement, work, log)
        layout = got.layout
        meta = {"when": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "placement": placement.kind,
                "seconds": time.monotonic() - t0, "launches": len(runner.launches), "settings": settings}
        verdict["run"] = {"started_utc": meta["when"], "seconds": round(meta["seconds"], 1),
                          "command_line": " ".join(sys.argv), "placement": placement.describe(),
                          "rank_hosts": layout.rank_hosts, "settings": settings, "spec": spec.describe(),
                          "baseline": args.baseline, "launches": runner.launches}
        names = write_outputs(work, verdict, got, runner, settings, meta)
        publish(work, args.out, names)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in summary_lines(verdict):
        print(line, flush=True)
    return verdict["exit_code"]


def main(argv=None):
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        return run(args)
    except SpecError as e:
        print(f"accept: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (RuntimeFailure, EvidenceError) as e:
        print(f"accept: runtime failure: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    except Interrupted as e:
        print(f"accept: interrupted by {e}; nothing written", file=sys.stderr)
        return EXIT_RUNTIME
    except OSError as e:
        print(f"accept: runtime failure: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    except Exception as e:  # a bug: one line, no verdict (the traceback with ACCEPT_DEBUG=1)
        if os.environ.get("ACCEPT_DEBUG"):
            raise
        print(f"accept: internal error: {type(e).__name__}: {e} (ACCEPT_DEBUG=1 shows where)", file=sys.stderr)
        return EXIT_RUNTIME
