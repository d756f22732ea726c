"""Runs acceptance cases many times and prints how often each outcome was right
(acceptance/README.md, "How reliable it is").

    scripts/accept-repeat [--runs 10] [--cases links|gpu|NAME,...] [--real-gpu]
                          [--bin-dir build/bin] [--keep DIR]

Two families of cases:
  links  (the default) slow_link, all_equal, slow_host, threshold: each run brings up an
         emulated cluster of 4 hosts x 2 ranks (scripts/collscope/accept/cases.py), runs
         scripts/accept, checks the outcome and takes the cluster down. Needs root.
  gpu    gpu_memory_4, gpu_none_4, gpu_memory_8, gpu_none_8, gpu_pcie_4, gpu_peer_4,
         gpu_threshold_4: local ranks with device memory, rank 2's GPU planted slow by
         COLLSCOPE_DEVICE_SLOWDOWN or nothing planted (scripts/collscope/accept/gpu_cases.py); on the
         emulated device, or with --real-gpu on the node's GPUs against the reference spec
         (the cases that hold there).
The cases interleave (run 1 of every case, then run 2, ...) so that the machine's load
spreads over them alike. Prints one line per run, then per case: right in k of n runs,
and the time of one scripts/accept run (median, min, max).
--keep DIR keeps every run's output directory there (default: only the wrong ones, in /tmp).

Exit status: 0 every case right in at least 9 of 10 runs (the same share of other
counts); 1 not; 2 usage; 77 this machine cannot make the emulated cluster (links cases).
"""

import argparse
import os
import shutil
import signal
import statistics
import sys
import time

from collscope.accept import cases, gpu_cases
from collscope.cluster import harness as clusterlib
from collscope.paths import ROOT

TARGET = 0.9


def parse_args():
    p = argparse.ArgumentParser(prog="scripts/accept-repeat", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--cases", default="links")
    p.add_argument("--real-gpu", action="store_true", help="the gpu cases on the node's GPUs, not emulated")
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--keep", help="keep every run's output directory here")
    args = p.parse_args()
    groups = {"links": list(cases.CASES), "gpu": [n for n, c in gpu_cases.CASES.items()
                                                   if c["real"] or not args.real_gpu]}
    names = [n for c in args.cases.split(",") if c.strip() for n in groups.get(c.strip(), [c.strip()])]
    known = list(cases.CASES) + list(gpu_cases.CASES)
    unknown = [c for c in names if c not in known]
    if unknown or not names or args.runs < 1:
        p.error(f"--cases: links, gpu or names from {', '.join(known)}; --runs >= 1 (got {args.cases!r}, {args.runs})")
    if args.real_gpu and any(n in cases.CASES or not gpu_cases.CASES[n]["real"] for n in names):
        p.error("--real-gpu runs gpu cases that hold on real GPUs only (not the links cases, not gpu_threshold_4)")
    return args, names


def what(name):
    return (cases.CASES.get(name) or gpu_cases.CASES[name])["what"]


def one_case(name, args):
    if name in gpu_cases.CASES:
        return gpu_cases.one_case(name, os.path.abspath(args.bin_dir), args.keep, args.real_gpu)
    return cases.one_case(name, os.path.abspath(args.bin_dir), args.keep)


def main():
    args, names = parse_args()
    reason = clusterlib.cannot_run() if any(n in cases.CASES for n in names) else None
    if reason:
        print(f"SKIP: {reason}")
        return 77
    for sig in (signal.SIGTERM, signal.SIGHUP):   # so that `with Cluster` takes it down
        signal.signal(sig, clusterlib.interrupted)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    right = {n: 0 for n in names}
    seconds = {n: [] for n in names}
    start = time.time()
    for run in range(1, args.runs + 1):
        for name in names:
            try:
                checks, took, out = one_case(name, args)
            except (clusterlib.Failed, OSError) as e:
                checks, took, out = [(False, f"cluster: {e}")], 0, None
            ok = all(good for good, _ in checks)
            right[name] += ok
            if took:
                seconds[name].append(took)
            wrong = "; ".join(what for good, what in checks if not good)
            print(f"run {run:2d} {name:15s} {'right' if ok else 'WRONG'} {took:6.1f}s"
                  + (f"  {wrong} (kept {out})" if not ok else ""), flush=True)
            if ok and out and not args.keep:
                shutil.rmtree(out, ignore_errors=True)
    print(f"\n{'case':15s} {'right':>9s} {'rate':>6s}   accept run time: median (min - max)")
    for name in names:
        s = seconds[name] or [0]
        print(f"{name:15s} {right[name]:3d} of {args.runs:<3d} {right[name] / args.runs:6.0%}   "
              f"{statistics.median(s):5.1f}s ({min(s):.1f} - {max(s):.1f})  {what(name)}")
    print(f"all runs: {time.time() - start:.0f}s")
    return 0 if all(right[n] >= TARGET * args.runs for n in names) else 1


def run():
    """The program, as scripts/accept-repeat runs it."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:   # the cluster of the run in progress was taken down
        print("accept-repeat: interrupted", file=sys.stderr)
        sys.exit(130)
