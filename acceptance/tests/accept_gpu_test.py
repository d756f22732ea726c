#!/usr/bin/python3
"""scripts/accept on GPU classes, end to end on the emulated device (local ranks, each its
own emulated GPU; collscope/accept/gpu_cases.py has the cases and their settings):

  memory     4 ranks, rank 2's device copies 4 x slower (COLLSCOPE_DEVICE_SLOWDOWN=2:4:memory):
             exit 1, blame exactly rank 2's GPU (gpu_memory), NCCL "not measured: <why>";
             the outputs: verdict.json's GPU fields, accept.h5 /acceptance/gpu, report.md's
             GPU sections and the GPU-to-GPU heatmap
  pcie       rank 2's host-device copies 4 x slower: its GPU, class host_device
  peer       rank 2's copies from peers 4 x slower: its GPU, class device_device, not its paths
  threshold  a spec asking 1000 x the emulated d2d rate: every GPU fails the threshold, none is
             a peer outlier
  bad_input  an unknown GPU model or class in the spec, a malformed COLLSCOPE_DEVICE_SLOWDOWN,
             --memory device without device memory: exit 2, one line, nothing written
  hook       gpu_probe on 2 ranks: COLLSCOPE_DEVICE_SLOWDOWN=1:8:memory slows rank 1's
             device-to-device copies and nothing else, :pcie its host-device copies and
             nothing else (each rank's best call: load on a shared machine only adds to a
             call); a malformed value: exit 2, one line

usage: accept_gpu_test.py BIN_DIR GROUP
"""

import json
import os
import re
import subprocess
import sys
import tempfile

from collscope.accept import gpu_cases
from collscope.checks import check, failures

BIN = os.path.abspath(sys.argv[1])


def run(name, attempts=2):
    """One case: its checks, and the verdict and output directory to look at further.

    Four ranks share two cores here, so a burst of other work can make one emulated ipc
    pair an outlier in all three repeats: a run whose verdict misses the expectation is
    run once more, said so, and the second run is judged (scripts/accept-repeat counts
    how often a single run is right)."""
    for attempt in range(1, attempts + 1):
        out = tempfile.mkdtemp(prefix=f"accept-gpu-{name}.")
        code, verdict, seconds, err = gpu_cases.run_case(name, BIN, out)
        print(f"# {name}: scripts/accept took {seconds:.1f}s (exit {code})", flush=True)
        if verdict is None:
            check(False, f"{name}: a verdict (exit {code}: {err.strip()[-400:]})")
            return None, out
        results = gpu_cases.CASES[name]["expect"](code, verdict)
        if all(ok for ok, _ in results) or attempt == attempts:
            break
        print(f"# {name}: run {attempt} missed ({[w for ok, w in results if not ok]}); "
              f"its output is kept in {out}; running it once more", flush=True)
    for ok, what in results:
        check(ok, f"{name}: {what}")
    return verdict, out


def test_memory():
    v, out = run("gpu_memory_4")
    if v is None:
        return
    host = v["run"]["rank_hosts"][2]
    check(v["blame"][0]["where"] == f"{host}:0 (emulated-{host}-2)" if v["blame"] else False,
          "the emulated GPU of rank 2 is named host:0 (emulated-<host>-2)")
    check(v["memory"]["kind"] == "device" and v["memory"]["runtime"] == "emulated" and len(v["gpus"]) == 4
          and all(g["model"] == gpu_cases.EMULATED_MODEL and len(g["ranks"]) == 1 for g in v["gpus"]),
          "memory device (emulated): 4 GPUs, one rank each, of the emulated model")
    nccl = v["classes"]["nccl"]
    check(nccl["measured"] is False and nccl["note"].startswith("not measured: ") and "emulated" in nccl["note"],
          f"nccl: not measured, with the program's reason ({nccl})")
    check(len(v["device_pairs"]) == 6 and v["classes"]["device_device"]["measured"],
          "device_device: the 6 ipc pairs measured")
    check(v["links"] == [] and v["classes"]["inter-node"]["measured"] is False,
          "the links not measured (measure.classes without links)")
    files = set(os.listdir(out))
    check(files == {"accept.h5", "report.md", "verdict.json", "gpus_ipc.png", "gpus_ipc_latency.png"},
          f"the outputs: verdict, accept.h5, report.md, the GPU heatmaps, nothing left aside ({sorted(files)})")
    report = open(os.path.join(out, "report.md")).read()
    check("## GPUs" in report and "](gpus_ipc.png)" in report and "## NCCL" in report
          and v["blame"][0]["where"] in report, "report.md: the GPU table, the heatmap, NCCL, the blamed GPU")
    import h5py
    with h5py.File(os.path.join(out, "accept.h5"), "r") as f:
        g = f["acceptance/gpu"]
        check(g["figures_gbps/d2d"].shape == (3, 4) and g["calls_gbps/d2d"].shape == (3, 4, 5)
              and g["ipc_bw_gbps/pairs"].shape == (3, 4, 4) and g["ipc_latency_us"].shape == (3, 4, 4),
              "accept.h5 /acceptance/gpu: figures [repeat][rank], calls, ipc matrices [repeat][a][b]")
        check(json.loads(f["acceptance"].attrs["verdict_json"]) == v, "accept.h5 holds the same verdict")
        d2d = g["figures_gbps/d2d"][:]
        check(all(d2d[i][2] < 0.5 * sorted(d2d[i])[2] for i in range(3)),
              f"rank 2's d2d well below the others in every repeat ({d2d.tolist()})")


def test_pcie():
    run("gpu_pcie_4")


def test_peer():
    v, _ = run("gpu_peer_4")
    if v:
        mine = [p for p in v["device_pairs"] if 2 in p["ranks"]]
        check(all(p["explained_by"] == f"gpu {v['blame'][0]['where']}" for p in mine if p["verdict"] == "fail"),
              "rank 2's failing ipc pairs are explained by its GPU, not blamed apart")


def test_threshold():
    v, _ = run("gpu_threshold_4")
    if v:
        check("none is an outlier" in v["classes"]["gpu_memory"]["d2d"].get("note", ""),
              "the class summary: the model as a whole misses the spec")


def refused(args, env, pattern, what):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        full = dict({k: v for k, v in os.environ.items() if k not in gpu_cases.CLEARED}, **gpu_cases.ENV, **env)
        p = subprocess.run([gpu_cases.ACCEPT, "--bin-dir", BIN, "--out", out, "--np", "2", "--quiet"] + args,
                           capture_output=True, text=True, env=full, timeout=300)
        err = [line for line in p.stderr.splitlines() if line.strip()]
        check(p.returncode == 2 and len(err) == 1 and err[0].startswith("accept: error: ")
              and re.search(pattern, err[0]), f"{what}: exit 2, one line matching {pattern!r} ({p.returncode}, {err})")
        left = os.listdir(out) if os.path.isdir(out) else []
        check(p.stdout == "" and left == [], f"{what}: nothing written ({left})")


def test_bad_input():
    emulated = {"COLLSCOPE_DEVICE_EMULATION": "1"}
    with tempfile.TemporaryDirectory() as d:
        for spec, pattern, what in [
                ({"classes": {"gpu_memory": {"models": {"NVIDIA H100": {"d2d": 3e12}}}}},
                 r"unknown GPU model 'NVIDIA H100'", "a spec naming an unknown GPU model"),
                ({"classes": {"gpu_bandwidth": {"models": {}}}}, r"unknown class 'gpu_bandwidth'",
                 "a spec naming an unknown class")]:
            path = os.path.join(d, "spec.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            refused(["--spec", path], emulated, pattern, what)
    refused([], dict(emulated, COLLSCOPE_DEVICE_SLOWDOWN="2:fast"), r"COLLSCOPE_DEVICE_SLOWDOWN must be RANK:FACTOR",
            "a malformed COLLSCOPE_DEVICE_SLOWDOWN")
    refused(["--memory", "device"], {"CUDA_VISIBLE_DEVICES": ""}, r"--memory device: rank 0 has no device memory",
            "--memory device without device memory")


def probe(env):
    full = dict({k: v for k, v in os.environ.items() if k not in gpu_cases.CLEARED}, **gpu_cases.ENV,
                COLLSCOPE_DEVICE_EMULATION="1", **env)
    p = subprocess.run(["mpirun", "-np", "2", os.path.join(BIN, "gpu_probe"), "-b", "4M", "--pcie-bytes", "4M",
                        "-n", "9"], capture_output=True, text=True, env=full, timeout=120)
    records = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return p.returncode, records[0] if records else None, p.stderr


def ratios(record):
    """Rank 1's best call over rank 0's, per figure."""
    r0, r1 = record["ranks"]
    return {f: round(max(r1[f]) / max(r0[f]), 3) for f in ("d2d", "reduce", "h2d", "d2h", "bidir")}


def test_hook():
    code, rec, err = probe({})
    check(code == 0 and rec and rec["probe"] == "gpu" and rec["runtime"] == ["emulated", "emulated"]
          and all(r["wrong"] == 0 and not r["pcie"]["known"] for r in rec["ranks"]),
          f"gpu_probe on the emulated device: a record, results right, no PCIe link ({code}, {err.strip()[-200:]})")
    code, rec, err = probe({"COLLSCOPE_DEVICE_SLOWDOWN": "1:8:memory"})
    x = ratios(rec) if rec else {}
    check(code == 0 and x and x["d2d"] < 0.3 and min(x["h2d"], x["d2h"], x["bidir"], x["reduce"]) > 0.5,
          f"1:8:memory: rank 1's d2d copies slower, its host-device copies and reduce kernel not ({x})")
    code, rec, err = probe({"COLLSCOPE_DEVICE_SLOWDOWN": "1:8:pcie"})
    x = ratios(rec) if rec else {}
    check(code == 0 and x and max(x["h2d"], x["d2h"], x["bidir"]) < 0.3 and min(x["d2d"], x["reduce"]) > 0.5,
          f"1:8:pcie: rank 1's host-device copies slower, its d2d copies and reduce kernel not ({x})")
    code, rec, err = probe({"COLLSCOPE_DEVICE_SLOWDOWN": "1:0.5"})
    lines = [line for line in err.splitlines() if "COLLSCOPE_DEVICE_SLOWDOWN" in line]
    check(code == 2 and len(lines) == 1 and lines[0].startswith("gpu_probe: error: "),
          f"a factor below 1: exit 2, one line from the program ({code}, {lines})")


if __name__ == "__main__":
    {"memory": test_memory, "pcie": test_pcie, "peer": test_peer, "threshold": test_threshold,
     "bad_input": test_bad_input, "hook": test_hook}[sys.argv[2]]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
