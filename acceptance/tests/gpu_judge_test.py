#!/usr/bin/python3
"""The GPU judge on made-up GPU nodes (no MPI, no GPU): every GPU class's blame, the
retests that confirm or clear a suspect, thresholds per model, the PCIe link, NCCL, and
the spec's GPU classes, and scripts/accept-reference filling a spec from a run.

usage: gpu_judge_test.py GROUP   (GROUP: blame | limits | spec | reference)
"""

import json
import os
import sys
import tempfile

import synthetic_gpu as sg
from synthetic_gpu import GpuWorld, blame_of, judge

from collscope.accept.gpu_spec import GpuClassSpec, gpu_class_spec, known_models
from collscope.accept.spec import SpecError, load_spec
from collscope.checks import check, failures


def gpu_blame(world, r):
    return ("gpu", world.layout().where(r))


# ---- blame ----------------------------------------------------------------------------------

def test_blame():
    w = GpuWorld()
    v = judge(w)
    check(v["verdict"] == "pass" and v["blame"] == [] and v["gpu_retests"] == [] and len(v["gpus"]) == 4
          and len(v["device_pairs"]) == 6, f"4 GPUs alike: pass, nothing blamed or retested ({blame_of(v)})")

    w = GpuWorld().slow_gpu(2, 0.25)
    v = judge(w)
    b = v["blame"]
    check(blame_of(v) == [gpu_blame(w, 2)] and b[0]["class"] == "gpu_memory"
          and "rank 2's device-to-device copy 0.25 x" in b[0]["reason"] and b[0]["where"] == "h0:2 (GPU-h0-2)",
          f"rank 2's copies at a quarter: its GPU blamed, gpu_memory ({b})")
    check(w.probes == [[1, 2]] or w.probes == [[0, 2]] or w.probes == [[3, 2]],
          f"... retested once, right after a known-good rank of the model ({w.probes})")
    g2 = [g for g in v["gpus"] if g["ranks"] == [2]][0]
    check(g2["verdict"] == "fail" and g2["gpu_memory"]["d2d"]["peers"]["verdict"] == "fail"
          and g2["gpu_memory"]["reduce"]["peers"]["verdict"] == "pass"
          and all(g["verdict"] == "pass" for g in v["gpus"] if g["ranks"] != [2]),
          "... the GPU table: its d2d fails, its reduce and the other GPUs pass")

    w = GpuWorld().slow_gpu(1, 0.3, ("h2d", "d2h", "bidir"))
    v = judge(w)
    check(blame_of(v) == [gpu_blame(w, 1)] and v["blame"][0]["class"] == "host_device",
          f"rank 1's host-device copies slow: its GPU blamed, host_device ({v['blame']})")

    w = GpuWorld().slow_paths(2, 0.4)
    v = judge(w)
    check(blame_of(v) == [gpu_blame(w, 2)] and v["blame"][0]["class"] == "device_device",
          f"every ipc path of rank 2 slow: its GPU blamed, not its 3 paths ({v['blame']})")
    mine = [p for p in v["device_pairs"] if 2 in p["ranks"]]
    check(all(p["verdict"] == "fail" and p["explained_by"] == f"gpu {w.layout().where(2)}" for p in mine)
          and all(p["verdict"] == "pass" for p in v["device_pairs"] if 2 not in p["ranks"]),
          "... its 3 paths fail, explained by the GPU; the others pass")

    w = GpuWorld(ranks_per_host=6)
    w.pair_factor[(0, 3)] = 0.3
    v = judge(w)
    check(blame_of(v) == [("link", "ranks 0-3 (h0:0-h0:3, ipc)")],
          f"one slow path among 15: that path, not a GPU ({blame_of(v)})")

    w = GpuWorld()
    w.pcie[1] = (4, 5, 16, 16)
    v = judge(w)
    check(blame_of(v) == [gpu_blame(w, 1)] and "PCIe link at gen4 x16, its maximum gen5 x16" in v["blame"][0]["reason"]
          and v["blame"][0]["class"] == "host_device", f"a link trained at gen4 of gen5: its GPU, host_device ({v['blame']})")

    w = GpuWorld(share=4).slow_gpu(2, 0.25)
    v = judge(w)
    check(blame_of(v) == [("gpu", "h0:0 (GPU-h0-0)")] and "the other ranks on this GPU: rank 0 pass" in v["blame"][0]["reason"]
          and len(v["gpus"]) == 1 and v["gpus"][0]["ranks"] == [0, 1, 2, 3],
          f"4 ranks on one GPU, rank 2's copies slow: that GPU, grouped by UUID, the others named ({v['blame']})")
    check(all(p["same_gpu"] for p in v["device_pairs"]), "... its 6 pairs are pairs on one GPU")

    w = GpuWorld().slow_gpu(2, 0.25)
    w.retest_world = {}   # fine when measured again: a burst of load during the screening
    v = judge(w)
    check(v["verdict"] == "inconclusive" and v["blame"] == [] and v["exit_code"] == 4,
          f"slow in every repeat, fine when retested: inconclusive, nothing blamed ({blame_of(v)})")

    w = GpuWorld(seed=5)
    s = w.screening()
    s.probes[1]["ranks"][3]["d2d"] = [x * 0.25 for x in s.probes[1]["ranks"][3]["d2d"]]
    v = judge_screening(w, s)
    check(v["verdict"] == "pass" and [t["result"] for t in v["gpu_retests"]] == ["reference", "ok"],
          f"slow in 1 repeat of 3: retested, fine: pass ({[(t['ranks'], t['result']) for t in v['gpu_retests']]})")

    w = GpuWorld(ranks_per_host=6, seed=3)
    s = slow_rank_in(w.screening(), 0, [("pairs", 0), ("pairs", 1), ("rounds", 0), ("ring", 2)])
    w.retest_pair_factor = {(0, b): 0.3 for b in range(1, 6)}
    v = judge_screening(w, s)
    check(blame_of(v) == [("gpu", w.layout().where(0))] and len({p[1] for p in w.pair_retests if p[0] == 0}) == 2,
          f"rank 0's paths slow in 4 of 9 observations, then with two partners in a row: blamed "
          f"({blame_of(v)}, {w.pair_retests})")
    w = GpuWorld(ranks_per_host=6, seed=3)
    s = slow_rank_in(w.screening(), 0, [("pairs", 0), ("pairs", 1), ("rounds", 0), ("ring", 2)])
    partners = []

    def crowded(a, b, size, iters, measure=w.pair):   # slow with rank 0's first partner only
        if a == 0 and not partners:
            partners.append(b)
        factor = 0.3 if partners and (a, b) == (0, partners[0]) else 1.0
        return [t / factor for t in measure(a, b, size, iters)]
    w.pair = crowded
    v = judge_screening(w, s)
    check(v["blame"] == [] and v["verdict"] == "inconclusive",
          f"... slow with one partner, fine with the next (two processes crowded onto one core): not blamed, "
          f"inconclusive ({blame_of(v)}, {v['verdict']})")

    w = GpuWorld(hosts=2, ranks_per_host=4).slow_gpu(5, 0.25)
    v = judge(w)
    check(blame_of(v) == [gpu_blame(w, 5)] and len(v["device_pairs"]) == 12,
          f"2 hosts x 4 GPUs, rank 5's copies slow: its GPU; ipc pairs within each host only ({blame_of(v)})")

    models = ["NVIDIA H200"] * 4 + ["NVIDIA H100 80GB HBM3"] * 4
    w = GpuWorld(ranks_per_host=8, models=models)
    for r in range(4, 8):
        w.slow_gpu(r, 0.6, ("d2d", "reduce"))   # a slower model, not slower GPUs
    v = judge(w)
    check(v["verdict"] == "pass", f"two models, the slower one 0.6 x: each judged against its own ({blame_of(v)})")

    v = judge(GpuWorld(), nccl={("allreduce_nccl", "all"): {"not_measured": "allreduce_nccl: no libnccl"}})
    check(v["verdict"] == "pass" and v["classes"]["nccl"] == {"measured": False,
                                                               "note": "not measured: allreduce_nccl: no libnccl"},
          f"NCCL that cannot run: 'not measured: <reason>', no failure ({v['classes']['nccl']})")
    hosts = GpuWorld(hosts=3, ranks_per_host=2)
    record = {"bytes": 1 << 28, "busbw_gbps": 300.0}
    nccl = {("allreduce_nccl", h): {"records": [dict(record, busbw_gbps=100.0 if h == "h1" else 300.0)]}
            for h in ("h0", "h1", "h2")}
    v = judge(hosts, nccl=nccl)
    check(blame_of(v) == [("host", "h1")] and v["blame"][0]["class"] == "nccl",
          f"NCCL within h1 a third of the others': host h1 blamed, class nccl ({v['blame']})")


def slow_rank_in(screening, rank, keys, factor=0.3):
    """The ipc bandwidth of every pair of `rank` times `factor` in the observations `keys`
    ((pattern, repeat)); the made-up world has one host."""
    for pattern, i in keys:
        m = screening.bandwidth[pattern][None][i]
        for other in range(len(m)):
            if other != rank:
                m[rank][other] *= factor
                m[other][rank] *= factor
    return screening


def judge_screening(world, screening):
    from collscope.accept.gpu_judge import GpuJudge
    from collscope.accept.judge import Judge
    from collscope.accept.measure import Screening
    from collscope.accept.placement import Layout
    from collscope.accept import gpu_verdict
    s = sg.spec()
    layout = Layout(world.hosts)
    verdict = Judge(layout, Screening(), {}, s, None, None, (), links=False).run()
    gj = GpuJudge(world.layout(), screening, s, sg.Retests(world)).run(layout)
    gpu_verdict.extend(verdict, gj, ["gpu_memory", "host_device", "device_device", "nccl"], "made up")
    return verdict


# ---- thresholds ------------------------------------------------------------------------------

def memory_spec(d2d, bytes_=None):
    figures = {"d2d": d2d, "reduce": None}
    if bytes_:
        figures["bytes"] = bytes_
    return {"gpu_memory": GpuClassSpec("gpu_memory", 0.2, 1.0, {sg.H200: figures})}


def test_limits():
    size = sg.spec().measure["gpu_bytes"]
    v = judge(GpuWorld(), sg.spec(memory_spec(8e12)))   # 4 x what the made-up GPUs copy
    d2d = [g["gpu_memory"]["d2d"] for g in v["gpus"]]
    check(v["verdict"] == "fail" and all(p["threshold"]["verdict"] == "fail" for p in d2d),
          "a d2d figure 4 x above the GPUs: every GPU fails the threshold")
    check(all(p["peers"]["verdict"] == "pass" for p in d2d), "... and the peer comparison finds no outlier")
    check(len(v["blame"]) == 4 and all(b["kind"] == "gpu" and "beyond the spec's threshold" in b["reason"]
                                       for b in v["blame"]), f"... every GPU blamed for the threshold ({v['blame']})")
    check("none is an outlier" in v["classes"]["gpu_memory"]["d2d"].get("note", ""),
          "... the class summary says the model as a whole misses the spec")
    check("not measured yet" in v["classes"]["gpu_memory"]["reduce"].get("threshold_note", ""),
          "... a null figure (reduce) is not judged: not measured yet")

    v = judge(GpuWorld(), sg.spec(memory_spec(2.06e12)))
    check(v["verdict"] == "pass", "the H200's 2.06 TB/s d2d (a tolerance of 0.2) passes GPUs doing 2.0 TB/s")
    v = judge(GpuWorld().slow_gpu(2, 0.25), sg.spec(memory_spec(2.06e12)))
    check(blame_of(v) == [("gpu", "h0:2 (GPU-h0-2)")], f"a slow GPU with a spec: blamed once ({blame_of(v)})")
    v = judge(GpuWorld(), sg.spec(memory_spec(8e12, size // 2)))
    notes = v["classes"]["gpu_memory"]["d2d"].get("threshold_note", "")
    check(v["verdict"] == "pass" and f"measured at {size} B" in notes,
          f"a figure for another size is not applied, and a note says so ({notes})")
    hd = {"host_device": GpuClassSpec("host_device", 0.2, 1.0, {sg.H200: {"bytes": None, "pcie_generation": 6}})}
    v = judge(GpuWorld(), sg.spec(hd))
    check(len(v["blame"]) == 4 and all("the spec's least gen6" in b["reason"] for b in v["blame"]),
          f"a spec asking PCIe gen6 of gen5 links: every GPU's link found short ({v['blame'][:1]})")


# ---- the spec's GPU classes --------------------------------------------------------------------

def write(d, name, obj):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(json.dumps(obj))
    return path


def refused(path, pattern):
    try:
        load_spec(path)
    except SpecError as e:
        check(pattern in str(e) and "\n" not in str(e), f"refused in one line with '{pattern}' ({e})")
        return
    check(False, f"{path} should be refused with '{pattern}'")


def test_spec():
    root = os.path.dirname(os.path.dirname(sg.HERE))
    ref = load_spec(os.path.join(root, "acceptance", "reference-gpu-spec.json"))
    h200 = ref.gpu_classes["gpu_memory"].models["NVIDIA H200"]
    check(h200["d2d"] == 2.06e12 and h200["reduce"] == 1.35e12 and h200["bytes"] == 1 << 30,
          "the reference spec: the H200's d2d 2.06 TB/s and reduce 1.35 TB/s at 1 GiB")
    link = ref.gpu_classes["host_device"].models["NVIDIA H200"]
    check((link["h2d"], link["d2h"], link["bidir"], link["pcie_generation"], link["pcie_width"]) ==
          (5.519e10, 5.507e10, 9.719e10, 5, 16),
          "... and its PCIe figures, measured on one H200 by scripts/accept-reference")
    h100 = ref.gpu_classes["gpu_memory"].models["NVIDIA H100 80GB HBM3"]
    check(h100["d2d"] is None and h100["reduce"] is None,
          "... the H100's figures null (not measured yet), never made up")
    check("NVIDIA H200" in known_models() and "emulated device (host memory, for tests)" in known_models(),
          "acceptance/gpu_models.txt lists the H200 and the emulated device")
    c = gpu_class_spec("device_device", {"latency_tolerance": 0.5, "models": {sg.H200: {"latency": 2e-6}}}, "x")
    check(c.limit(sg.H200, "latency", 8) == (1.5 * 2e-6 * 1e6, None) and c.limit("NVIDIA L4", "latency", 8) == (None, None),
          "device_device latency limit: (1 + latency_tolerance) x the figure; another model: none")
    with tempfile.TemporaryDirectory() as d:
        for bad, pattern in [
                ({"classes": {"gpu_memory": {"models": {"NVIDIA H2OO": {"d2d": 1e12}}}}}, "unknown GPU model 'NVIDIA H2OO'"),
                ({"classes": {"gpu_mem": {}}}, "unknown class 'gpu_mem'"),
                ({"classes": {"device-device": {"bandwidth": 1}}}, "is now 'device_device'"),
                ({"classes": {"gpu_memory": {"models": {}}}}, "must name at least one GPU model"),
                ({"classes": {"gpu_memory": {"models": {sg.H200: {"d2d": -1}}}}}, "d2d must be positive"),
                ({"classes": {"gpu_memory": {"models": {sg.H200: {"h2d": 1}}}}}, "unknown key 'h2d'"),
                ({"classes": {"gpu_memory": {"models": {sg.H200: {}}}}}, "names none of d2d, reduce"),
                ({"classes": {"host_device": {"models": {sg.H200: {"pcie_width": 0}}}}}, "integer >= 1 or null"),
                ({"classes": {"nccl": {"tolerance": 1.5, "models": {sg.H200: {"allreduce": 1}}}}}, "at most 0.99"),
                ({"classes": {"gpu_memory": {"latency_tolerance": 1, "models": {sg.H200: {"d2d": 1}}}}},
                 "latency_tolerance applies to device_device only"),
                ({"measure": {"memory": "gpu"}}, "measure.memory must be one of auto, host, device"),
                ({"measure": {"classes": "links,gpus"}}, "unknown 'gpus'"),
                ({"measure": {"device_wait": "sleep"}}, "must be one of spin, yield, block"),
                ({"peers": {"gpu_tolerance": 1.2}}, "peers.gpu_tolerance must be at most 0.99")]:
            refused(write(d, "bad.json", bad), pattern)


def test_reference():
    """scripts/accept-reference fills the null figures of the models a passing run measured."""
    from collscope.accept import reference
    root = os.path.dirname(os.path.dirname(sg.HERE))
    v = judge(GpuWorld())
    v["memory"]["runtime"] = "cuda"
    v["run"] = {"settings": sg.spec().measure, "started_utc": "2025-01-31T00:00:00Z"}
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run")
        os.mkdir(run)
        with open(os.path.join(run, "verdict.json"), "w") as f:
            json.dump(v, f)
        spec_path = os.path.join(d, "spec.json")
        # The reference spec as it was before its H200 PCIe figures were measured.
        with open(os.path.join(root, "acceptance", "reference-gpu-spec.json")) as f:
            before = json.load(f)
        link = before["classes"]["host_device"]["models"][sg.H200]
        link.update({k: None for k in ("h2d", "d2h", "bidir", "pcie_generation", "pcie_width")})
        with open(spec_path, "w") as g:
            json.dump(before, g)
        code = reference.main([run, "--spec", spec_path, "--write"])
        filled = load_spec(spec_path).gpu_classes
        h200 = {c: filled[c].models[sg.H200] for c in filled}
        check(code == 0 and h200["gpu_memory"]["d2d"] == 2.06e12,
              "accept-reference: a figure measured already is kept (the H200's d2d)")
        check(abs(h200["host_device"]["h2d"] / 50e9 - 1) < 0.05 and h200["host_device"]["pcie_generation"] == 5
              and h200["host_device"]["pcie_width"] == 16 and h200["host_device"]["bytes"] == sg.spec().measure["pcie_bytes"],
              f"... null ones filled from the run: h2d, the PCIe link's maximum ({h200['host_device']})")
        check(abs(h200["device_device"]["bandwidth"] / 300e9 - 1) < 0.05 and h200["nccl"]["allreduce"] is None,
              "... ipc between two GPUs filled; NCCL, not measured, left null")
        check(filled["gpu_memory"].models["NVIDIA H100 80GB HBM3"]["d2d"] is None,
              "... a model the run did not measure is left alone")
        v["memory"]["runtime"] = "emulated"
        with open(os.path.join(run, "verdict.json"), "w") as f:
            json.dump(v, f)
        check(reference.main([run, "--spec", spec_path]) == 2, "... an emulated run is refused (exit 2)")


if __name__ == "__main__":
    {"blame": test_blame, "limits": test_limits, "spec": test_spec, "reference": test_reference}[sys.argv[1]]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
