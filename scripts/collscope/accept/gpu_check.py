"""The GPU classes of scripts/accept checked on one GPU node (acceptance/README.md, "On a
GPU"): 4 ranks on the node's GPUs as the benchmarks place them (on a one-GPU node, all
four on it), against the reference spec.

    scripts/accept-gpu-check [--out DIR] [--bin-dir DIR] [--repeat-runs N] [--emulated]

Steps, each timed, its outcome checked (scripts/collscope/accept/gpu_cases.py):
  1. collscope_device_rate at 1 GiB: the GPU's own d2d copy and reduce kernel rates
     (OUT/device_rate.jsonl), to set beside gpu_probe's;
  2. gpu_none_4: nothing planted: accept passes (exit 0, nothing blamed)   -> OUT/none
  3. gpu_memory_4: COLLSCOPE_DEVICE_SLOWDOWN=2:4:memory: rank 2's GPU blamed, gpu_memory
  4. gpu_pcie_4:   COLLSCOPE_DEVICE_SLOWDOWN=2:4:pcie: rank 2's GPU blamed, host_device
  5. scripts/accept-reference OUT/none: the reference figures of this GPU's model
     (OUT/reference-gpu-spec.json; its stderr lists them);
  6. with --repeat-runs N: scripts/accept-repeat --runs N --cases gpu_memory_4,gpu_none_4.
--emulated runs it all on the emulated device with the tests' small sizes (a check of this
script where there is no GPU; step 5 then refuses, as it must).
Prints one line per step; exit 0 when every step came out right, 1 otherwise.
Run it where `mpirun` and python3 with numpy, h5py and matplotlib are found (a GPU node
without MPI: `source build/gpu-bundle/env.sh` first, --bin-dir build/gpu-bundle/root/bin).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from collscope.accept import gpu_cases
from collscope.paths import ROOT, SCRIPTS   # SCRIPTS: python/ in a GPU bundle


def step(name, fn):
    start = time.time()
    ok, what = fn()
    print(f"{name:14s} {'right' if ok else 'WRONG'} {time.time() - start:6.1f}s  {what}", flush=True)
    return ok


def device_rate(args):
    env = dict(os.environ, **({"COLLSCOPE_DEVICE_EMULATION": "1"} if args.emulated else {}))
    size = "8M" if args.emulated else "1G"
    p = subprocess.run([os.path.join(args.bin_dir, "collscope_device_rate"), "--min-bytes", size, "--max-bytes", size],
                       capture_output=True, text=True, env=env, timeout=600)
    with open(os.path.join(args.out, "device_rate.jsonl"), "w") as f:
        f.write(p.stdout)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    figures = ", ".join(f"{r['kind']} {r['dtype']} {r['gbps']:.1f} GB/s".replace("  ", " ") for r in rows)
    return p.returncode == 0 and bool(rows), figures or p.stderr.strip()[-300:]


def accept_case(args, name):
    def run():
        out = os.path.join(args.out, name.split("_")[1])
        os.makedirs(out, exist_ok=True)
        code, verdict, _, err = gpu_cases.run_case(name, args.bin_dir, out, real=not args.emulated)
        if verdict is None:
            return False, f"no verdict (exit {code}: {err.strip()[-300:]})"
        checks = gpu_cases.CASES[name]["expect"](code, verdict)
        bad = [what for ok, what in checks if not ok]
        told = "; ".join(f"{b['where']}: {b['reason'][:160]}" for b in verdict["blame"]) or "nothing blamed"
        return not bad, ("; ".join(bad) if bad else told) + f" ({verdict['run']['seconds']} s)"
    return run


def reference(args):
    out = os.path.join(args.out, "reference-gpu-spec.json")
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "accept-reference"), os.path.join(args.out, "none")],
                       capture_output=True, text=True)
    if p.returncode == 0:
        with open(out, "w") as f:
            f.write(p.stdout)
    lines = " | ".join(line.replace("accept-reference: ", "") for line in p.stderr.splitlines())
    if args.emulated:   # an emulated run's figures are no model's: refused
        return p.returncode == 2 and "measured no real GPU" in p.stderr, lines
    return p.returncode == 0, lines


def repeat(args):
    cmd = [sys.executable, os.path.join(SCRIPTS, "accept-repeat"), "--runs", str(args.repeat_runs),
           "--cases", "gpu_memory_4,gpu_none_4", "--bin-dir", args.bin_dir] + ([] if args.emulated else ["--real-gpu"])
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(args.out, "accept-repeat.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    table = [line for line in p.stdout.splitlines() if line.startswith("gpu_")]
    return p.returncode == 0, " | ".join(" ".join(line.split()[:6]) for line in table)


def main():
    p = argparse.ArgumentParser(prog="scripts/accept-gpu-check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "output", "accept-gpu-check"))
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--repeat-runs", type=int, default=0)
    p.add_argument("--emulated", action="store_true")
    args = p.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    os.makedirs(args.out, exist_ok=True)
    steps = [("device_rate", lambda: device_rate(args)), ("gpu_none_4", accept_case(args, "gpu_none_4")),
             ("gpu_memory_4", accept_case(args, "gpu_memory_4")), ("gpu_pcie_4", accept_case(args, "gpu_pcie_4")),
             ("reference", lambda: reference(args))]
    if args.repeat_runs > 0:
        steps.append(("accept-repeat", lambda: repeat(args)))
    results = [step(name, fn) for name, fn in steps]
    return 0 if all(results) else 1
