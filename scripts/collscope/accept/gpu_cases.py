"""The GPU acceptance cases: local ranks with device memory, one GPU planted slow with the
device runtime's test hook (COLLSCOPE_DEVICE_SLOWDOWN, collectives/device/slowdown.hpp) or
none, each with what a right outcome is. accept_gpu_test.py runs some once (ctest);
scripts/accept-repeat runs them many times and counts how often the outcome was right.

On the emulated device (COLLSCOPE_DEVICE_EMULATION=1, the default here) every rank is its
own emulated GPU, and the sizes are small (EMULATED settings); with real=True the ranks
run on the node's GPUs as the benchmarks place them (several ranks to a GPU where there
are fewer GPUs), at the default sizes, against the reference spec (REAL settings).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from ..paths import ROOT, SCRIPTS

ACCEPT = os.path.join(SCRIPTS, "accept")
REFERENCE_SPEC = os.path.join(ROOT, "acceptance", "reference-gpu-spec.json")
EMULATED_MODEL = "emulated device (host memory, for tests)"
GPU_CLASSES = "gpu_memory,host_device,device_device,nccl"
EMULATED = ["--memory", "device", "--classes", GPU_CLASSES, "--repeats", "3", "--patterns", "pairs,ring",
            "--gpu-bytes", "8M", "--pcie-bytes", "8M", "--gpu-iters", "5", "--device-bandwidth-bytes", "2M",
            "--iters", "3", "--warmup", "1", "--latency-iters", "10", "--device-wait", "yield",
            "--timeout", "60", "--quiet"]
REAL = ["--memory", "device", "--classes", GPU_CLASSES, "--repeats", "3", "--timeout", "60", "--quiet"]
ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1"}
CLEARED = ("COLLSCOPE_HOSTFILE", "SLURM_JOB_ID", "COLLSCOPE_DEBUG_SLOW_COMPUTE", "COLLSCOPE_DEVICE_SLOWDOWN",
           "COLLSCOPE_DEVICE_EMULATION")


def blame_of(v):
    return sorted((b["kind"], b["where"]) for b in v["blame"])


def gpu_of(v, rank):
    return next(g for g in v["gpus"] if rank in g["ranks"])


def expect_blamed(cls):
    def expect(code, v):
        want = gpu_of(v, 2)["where"]
        return [(code == 1, f"exit 1 (got {code})"),
                (blame_of(v) == [("gpu", want)], f"blame is exactly rank 2's GPU {want} (got {blame_of(v)})"),
                (cls in {b["class"] for b in v["blame"]}, f"for {cls} (got {[b['class'] for b in v['blame']]})")]
    return expect


def expect_pass(code, v):
    return [(code == 0, f"exit 0 (got {code})"), (v["blame"] == [], f"nothing blamed (got {blame_of(v)})")]


def expect_threshold(code, v):
    d2d = [g["gpu_memory"]["d2d"] for g in v["gpus"]]
    return [(code == 1, f"exit 1 (got {code})"),
            (all(p["threshold"]["verdict"] == "fail" for p in d2d), "every GPU fails the d2d threshold"),
            (all(p["peers"]["verdict"] == "pass" for p in d2d),
             f"no GPU is a peer outlier ({[p['peers'] for p in d2d if p['peers']['verdict'] != 'pass']})"),
            ({k for k, _ in blame_of(v)} == {"gpu"} and len(v["blame"]) == len(v["gpus"]),
             f"each GPU blamed for the threshold, nothing else ({blame_of(v)})")]


THRESHOLD_SPEC = {"description": "a d2d copy 1000 x what the emulated device does",
                  "classes": {"gpu_memory": {"models": {EMULATED_MODEL: {"d2d": 1.0e15}}}}}


def case(np_, plant, expect, what, spec=None, classes=None, real=True):
    """real: whether the case holds on real GPUs too (against the reference spec)."""
    return {"np": np_, "plant": plant, "expect": expect, "what": what, "spec": spec, "classes": classes,
            "real": real}


CASES = {
    "gpu_memory_4": case(4, "2:4:memory", expect_blamed("gpu_memory"), "4 ranks, rank 2's device copies 4 x slower"),
    "gpu_none_4": case(4, None, expect_pass, "4 ranks, nothing planted"),
    "gpu_memory_8": case(8, "2:4:memory", expect_blamed("gpu_memory"), "8 ranks, rank 2's device copies 4 x slower"),
    "gpu_none_8": case(8, None, expect_pass, "8 ranks, nothing planted"),
    "gpu_pcie_4": case(4, "2:4:pcie", expect_blamed("host_device"), "4 ranks, rank 2's host-device copies 4 x slower",
                       classes="host_device"),
    "gpu_peer_4": case(4, "2:4:peer", expect_blamed("device_device"), "4 ranks, rank 2's copies from peers 4 x slower",
                       classes="device_device"),
    "gpu_threshold_4": case(4, None, expect_threshold, "4 ranks, a spec asking 1000 x the emulated d2d rate",
                            spec=THRESHOLD_SPEC, classes="gpu_memory", real=False),
}


def settings(c, real):
    args = list(REAL if real else EMULATED)
    if c["classes"]:
        args[args.index("--classes") + 1] = c["classes"]
    return args


def run_case(name, bin_dir, out_dir, real=False):
    """scripts/accept on local ranks; returns (exit code, verdict or None, seconds, stderr)."""
    c = CASES[name]
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(ENV)
    if not real:
        env["COLLSCOPE_DEVICE_EMULATION"] = "1"
    if c["plant"]:
        env["COLLSCOPE_DEVICE_SLOWDOWN"] = c["plant"]
    # this Python (with h5py, numpy, matplotlib), whatever the script's first line names
    args = [sys.executable, ACCEPT, "--out", out_dir, "--bin-dir", bin_dir, "--np", str(c["np"])] + settings(c, real)
    with tempfile.NamedTemporaryFile("w", suffix=".spec.json") as spec:
        if real:
            args += ["--spec", REFERENCE_SPEC]
        elif c["spec"]:
            json.dump(c["spec"], spec)
            spec.flush()
            args += ["--spec", spec.name]
        start = time.time()
        try:
            p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1200)
            code, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            code, err = None, "scripts/accept still running after 1200 s"
        seconds = time.time() - start
    path = os.path.join(out_dir, "verdict.json")
    verdict = json.load(open(path)) if os.path.exists(path) else None
    return code, verdict, seconds, err


def one_case(name, bin_dir, keep=None, real=False):
    """([(ok, what)], seconds of the accept run, its directory)."""
    out = tempfile.mkdtemp(prefix=f"accept-{name}.", dir=keep)
    code, verdict, seconds, err = run_case(name, bin_dir, out, real)
    if verdict is None:
        return [(False, f"no verdict.json (exit {code}: {err.strip()[-300:]})")], seconds, out
    return CASES[name]["expect"](code, verdict), seconds, out
