#!/usr/bin/env python3
"""The layer binaries with -m device on the emulated device (COLLSCOPE_DEVICE_EMULATION=1:
host memory behind the device runtime, OpenBLAS for the GEMMs, the kernels' host loops),
so the device code paths run without a GPU: arrays in device memory, the compute stream
and the executors' streams ordered by events, the kernels' dispatch, the device
executor's ipc and staged paths, the timeline.

The emulated device runs the host's arithmetic, so a run's every error equals the host
run's bit for bit; the one exception is attention's dS, which a device keeps in the
storage dtype (blocks/tp_local.hpp), so under bfloat16 the attention layers' input and
QKV gradients differ within tolerance.

usage: device_test.py BIN_DIR GROUP [ucx]
       GROUP: device_layers | device_paths | device_overlap | device_bad_input |
              device_faults | device_record
"""
import os
import re
import subprocess
import sys
import tempfile

from layer_testlib import *  # noqa: F401,F403 (check, run, run_record, expect_usage_error, ...)

EMULATED = {"COLLSCOPE_DEVICE_EMULATION": "1"}
DEVICE = ["-m", "device", "--path", "ipc"]
QUICK1 = ["-n", "1", "-w", "0"]

# Each layer at a tiny shape (every flag given: -m device's defaults are a GPU's shape).
LAYERS = {
    "layer_tp_mlp": ["-S", "4", "-B", "2", "-H", "8", "-F", "16"],
    "layer_dp_grad": ["-S", "3", "-B", "2", "-H", "7", "-K", "10"],
    "layer_tp_attention": ["-S", "4", "-B", "2", "-H", "12", "--heads", "4"],
    "layer_vocab_parallel": ["-S", "4", "-B", "2", "-H", "8", "-V", "24"],
    "layer_tp_sp": ["-S", "4", "-B", "2", "-H", "8", "--heads", "2", "-F", "16"],
    "layer_tp_to_sp": ["-S", "4", "-B", "2", "-H", "8", "--scheme", "alltoall"],
    "layer_moe": ["-S", "4", "-B", "2", "-H", "8", "--experts", "4", "--capacity-factor", "1"],
    "layer_tp_sp_ep": ["-S", "4", "-B", "2", "-H", "8", "--heads", "2", "--experts", "4"],
}
ATTENTION = {"layer_tp_attention", "layer_tp_sp", "layer_tp_sp_ep"}


def errors(rec):
    return [(c["tensor"], c["rel_l2_error"], c["max_abs_error"]) for c in rec["checks"]] if rec else None


def device_run(binary, args, np, extra=None):
    return run_record(binary, args + QUICK1 + (extra or DEVICE), np, EMULATED)


def expect_device_pass(what, code, rec, path="ipc"):
    check(code == 0 and rec is not None and rec["pass"] and rec["volume"] == "ok",
          f"{what}: exit 0, pass, volume ok (got {code}, {rec and rec['volume_error']}, "
          f"{rec and [(c['tensor'], c['pass']) for c in rec['checks']]})")
    if rec:
        check(rec["memory"] == "device" and rec["path"] == path and
              rec["device_runtime"] == "emulated" and rec["gemm"] == "openblas",
              f"{what}: device memory, path {path}, emulated, OpenBLAS "
              f"({rec['memory']}, {rec['path']}, {rec['device_runtime']}, {rec['gemm']})")


def test_device_layers():
    """Every layer on the emulated device over ipc at 2 ranks: float32 and bfloat16 pass
    with exact bytes, and the errors equal the host run's bit for bit (bfloat16
    attention's gradients excepted, see the header)."""
    for binary, shape in LAYERS.items():
        for d in ("float", "bfloat16"):
            args = shape + ["-d", d]
            what = f"{binary} -m device np 2 {d}"
            code, rec, _ = device_run(binary, args, 2)
            expect_device_pass(what, code, rec)
            if d == "bfloat16" and binary in ATTENTION:
                continue
            hcode, host, _ = run_record(binary, args + QUICK1, 2)
            check(hcode == 0 and rec is not None and errors(rec) == errors(host) and
                  rec["sent_bytes"] == host["sent_bytes"],
                  f"{what}: every error and byte equal to -m host's ({errors(rec)} vs {errors(host)})")


def test_device_paths():
    """The device executor's paths under the layers: ipc and staged at 1 and 3 ranks,
    the vocabulary layer's float32 statistics beside bfloat16 activations, the MoE's
    ETP groups (two executors, two streams)."""
    mlp = LAYERS["layer_tp_mlp"][:-1] + ["24"]  # F divisible by 1 and 3
    for path in ("ipc", "staged"):
        for np in (1, 3):
            code, rec, _ = device_run("layer_tp_mlp", mlp, np, ["-m", "device", "--path", path])
            expect_device_pass(f"layer_tp_mlp --path {path} np {np}", code, rec, path)
            if rec:
                expect_volume(f"layer_tp_mlp --path {path} np {np}", rec, lambda site: 4 * 2 * 8)
    code, rec, _ = device_run("layer_vocab_parallel", LAYERS["layer_vocab_parallel"] + ["-d", "bfloat16"],
                              3, ["-m", "device", "--path", "staged"])
    expect_device_pass("layer_vocab_parallel bfloat16 --path staged np 3", code, rec, "staged")
    if rec:
        check([c["dtype"] for c in rec["collectives"]] == ["bfloat16", "float", "float", "float"],
              "vocab: the embedding in bfloat16, the cross-entropy statistics in float32")
    for scheme in ("allgather", "scatter_gather"):
        code, rec, _ = device_run("layer_moe", LAYERS["layer_moe"] + ["--ep", "2", "--etp", "2",
                                                                      "--etp-scheme", scheme], 4)
        expect_device_pass(f"layer_moe --ep 2 --etp 2 --etp-scheme {scheme} np 4", code, rec)


def same_but_overlap(what, binary, args, np):
    """A layer with and without --overlap: the same errors and bytes, the record saying
    so, and its communication split into exposed + hidden."""
    code, plain, _ = device_run(binary, args, np)
    ocode, over, _ = device_run(binary, args + ["--overlap"], np)
    expect_device_pass(f"{what} --overlap", ocode, over)
    check(code == 0 and ocode == 0 and errors(plain) == errors(over) and
          plain["sent_bytes"] == over["sent_bytes"],
          f"{what}: --overlap changes no error and no byte ({errors(plain)} vs {errors(over)})")
    if over:
        check(over["overlap"] is True and plain["overlap"] is False and over["hidden_comm_us"] >= 0 and
              abs(over["exposed_comm_us"] + over["hidden_comm_us"] - over["comm_us"]) <= 1e-6 * max(1, over["comm_us"]),
              f"{what}: overlap recorded, comm = exposed + hidden ({over['comm_us']} = "
              f"{over['exposed_comm_us']} + {over['hidden_comm_us']})")
        check(all(s["time_us"] is not None and s["exposed_us"] is not None and
                  0 <= s["exposed_us"] <= s["time_us"] + 1e-9 for s in over["collectives"]),
              f"{what}: every site's time and exposed part recorded")
    return over


def test_device_overlap():
    """--overlap: the TP blocks' input-gradient collective beside the weight gradients, DP
    buckets, MoE chunks; the same bits as without it."""
    for binary in ("layer_tp_mlp", "layer_tp_attention", "layer_tp_sp", "layer_tp_sp_ep"):
        same_but_overlap(binary, binary, LAYERS[binary], 2)
    dp = LAYERS["layer_dp_grad"] + ["--buckets", "3"]
    rec = same_but_overlap("layer_dp_grad --buckets 3", "layer_dp_grad", dp, 3)
    if rec:
        sites = [s["site"] for s in rec["collectives"]]
        check(sites == [f"bwd dW allreduce dW bucket {b}/3 [H/N,O/TP]" for b in range(3)] and
              [s["count"] for s in rec["collectives"]] == [3 * 10, 2 * 10, 2 * 10],
              f"dp_grad: one allreduce per bucket, rows 3, 2, 2 of H = 7 ({sites})")
    moe = LAYERS["layer_moe"] + ["--chunks", "3", "--routing", "uniform"]
    rec = same_but_overlap("layer_moe --chunks 3", "layer_moe", moe, 2)
    if rec:
        dispatch = [s["site"] for s in rec["collectives"] if "fwd dispatch" in s["site"]]
        check(dispatch == [f"fwd dispatch alltoallv X rows chunk {c}/3" for c in range(3)] and
              rec["shape"]["chunks"] == 3,
              f"moe --chunks 3: a dispatch per chunk ({dispatch})")
        code, one, _ = device_run("layer_moe", LAYERS["layer_moe"] + ["--routing", "uniform"], 2)
        check(code == 0 and one is not None and
              all(site_sent(rec, w) == site_sent(one, w) for w in ("fwd dispatch", "fwd combine",
                                                                  "bwd dispatch", "bwd combine")),
              "moe --chunks 3: the chunks' dispatches and combines move the rows one call moves")


def site_sent(rec, word):
    """Bytes every rank sent at the sites whose name holds `word`."""
    return sum(sum(s["sent_bytes"]) for s in rec["collectives"] if word in s["site"])


BAD = [  # (binary, np, args, env, pattern)
    ("layer_tp_mlp", 2, ["-m", "device"], {}, r"no usable CUDA device|cannot load cuBLAS"),
    ("layer_tp_mlp", 1, ["-m", "device", "-t", "nccl", "-S", "2", "-H", "4"], EMULATED,
     r"emulated device has no NCCL"),
    ("layer_tp_mlp", 1, ["--overlap"], {}, r"--overlap needs -m device"),
    ("layer_tp_mlp", 1, ["--path", "ipc"], {}, r"--path and --device-map apply to -m device"),
    ("layer_tp_mlp", 1, ["-m", "tpu"], {}, r"--memory must be host or device, got 'tpu'"),
    ("layer_tp_mlp", 1, ["-m", "device", "--device-map", "x"], EMULATED, r"bad --device-map 'x'"),
    ("layer_tp_mlp", 1, ["-m", "device", "--allreduce-alg", "mpi"], EMULATED,
     r"--allreduce-alg mpi runs the MPI library's own collective"),
    ("layer_dp_grad", 1, ["--buckets", "0"], {}, r"--buckets must be at least 1, got 0"),
    ("layer_dp_grad", 1, ["-H", "4", "--buckets", "5"], {}, r"--buckets 5 is more than the 4 rows"),
    ("layer_moe", 1, ["--chunks", "0"], {}, r"--chunks must be at least 1, got 0"),
    ("layer_moe", 4, ["--etp", "2", "--chunks", "2"], {}, r"--chunks 2 needs ETP 1 \(got ETP 2\)"),
    ("layer_moe", 1, ["-S", "2", "-B", "1", "--chunks", "3"], {}, r"--chunks 3 is more than the 2 tokens"),
]


def test_device_bad_input():
    for binary, np, args, env, pattern in BAD:
        code, out, err = run(binary, args, np, env)
        lines = [l for l in err.splitlines() if l.strip()]
        check(code == 2 and len(lines) == 1 and lines[0].startswith(binary + ": error: ")
              and re.search(pattern, lines[0]) is not None and out.strip() == "",
              f"{binary} {' '.join(args)} (np {np}): exit 2, one line matching {pattern!r} "
              f"(got {code}, {lines})")


def failed(rec):
    return [c["tensor"] for c in rec["checks"] if not c["pass"]] if rec else None


def test_device_faults():
    """Faults injected into device memory after a call: the verification catches them."""
    for fault, tensors in (("corrupt:bwd", ["dX"]), ("nan:fwd", ["Y"])):
        code, rec, _ = run_record("layer_tp_mlp", LAYERS["layer_tp_mlp"] + QUICK1 + DEVICE, 2,
                                  dict(EMULATED, COLLSCOPE_DEBUG_LAYER_FAULT=fault))
        check(code == 1 and rec and failed(rec) == tensors and rec["volume"] == "ok",
              f"layer_tp_mlp -m device {fault}: exit 1, only {tensors} fails (got {code}, {failed(rec)})")
    code, rec, _ = run_record("layer_tp_mlp", LAYERS["layer_tp_mlp"] + QUICK1 + DEVICE + ["--overlap"], 2,
                              dict(EMULATED, COLLSCOPE_DEBUG_LAYER_FAULT="corrupt:bwd"))
    check(code == 1 and rec and failed(rec) == ["dX"],
          f"layer_tp_mlp -m device --overlap corrupt:bwd: dX fails (got {code}, {failed(rec)})")
    code, rec, _ = run_record("layer_moe", LAYERS["layer_moe"] + QUICK1 + DEVICE, 2,
                              dict(EMULATED, COLLSCOPE_DEBUG_LAYER_FAULT="corrupt:fwd combine"))
    check(code == 1 and rec and "Y" in failed(rec),
          f"layer_moe -m device corrupt:fwd combine: Y fails (got {code}, {failed(rec)})")


def test_device_record():
    """The record of a device run, and its HDF5 row (results/SCHEMA.md version 3)."""
    import h5py  # Debian's python3-h5py
    with tempfile.TemporaryDirectory() as d:
        h5 = os.path.join(d, "device.h5")
        code, rec, err = run_record("layer_tp_mlp", LAYERS["layer_tp_mlp"] + QUICK1 + DEVICE +
                                    ["--overlap", "-O", h5], 2, EMULATED)
        expect_device_pass("layer_tp_mlp -O", code, rec)
        if not rec:
            return
        check(rec["wait"] == "spin" and rec["gpu"].startswith("emulated device") and
              rec["gemm_flop"] > 0 and rec["gemm_us"] > 0 and rec["gemm_tflops"] > 0,
              f"record: wait, gpu, the GEMMs' flops, time and rate ({rec['gemm_flop']}, {rec['gemm_tflops']})")
        # The MLP's GEMMs per iteration: 2 forward, 4 backward, each 2 T H F/N
        T, H, F = 8, 8, 16
        check(rec["gemm_flop"] == 6 * 2 * T * H * (F // 2),
              f"record: gemm_flop = 6 GEMMs x 2 T H F/N ({rec['gemm_flop']})")
        with h5py.File(h5, "r") as f:
            row, sites = f["layer/rows"][0], f["layer/sites"][:]
            check(row["memory"].decode() == "device" and row["path"].decode() == "ipc" and
                  bool(row["overlap"]) and row["exposed_comm_us"] == rec["exposed_comm_us"] and
                  row["gemm_tflops"] == rec["gemm_tflops"],
                  "-O: the device columns equal the record's")
            check([s["time_us"] for s in sites] == [s["time_us"] for s in rec["collectives"]],
                  "-O: each site's time equals the record's")
        # scripts/report's layers page: the schemes side by side, --overlap beside the plain run
        run_record("layer_tp_mlp", LAYERS["layer_tp_mlp"] + QUICK1 + DEVICE + ["-O", h5], 2, EMULATED)
        for scheme in ("allreduce", "reduce_scatter", "alltoall"):
            args = LAYERS["layer_tp_to_sp"][:-1] + [scheme]
            run_record("layer_tp_to_sp", args + QUICK1 + DEVICE + ["-O", h5], 2, EMULATED)
        out = os.path.join(d, "report")
        p = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "..", "..", "scripts", "report"), h5, "--out", out],
                           capture_output=True, text=True, timeout=120)
        page = open(os.path.join(out, "layers.md")).read() if os.path.exists(os.path.join(out, "layers.md")) else ""
        check(p.returncode == 0 and "TP -> SP switch: allreduce, reduce_scatter, alltoall: N 2" in page and
              page.count("(fastest)") >= 1 and "### --overlap: the same layer with and without it" in page and
              "](layers.md)" in open(os.path.join(out, "report.md")).read(),
              f"scripts/report: layers.md compares the three switches and the overlap "
              f"({p.returncode}, {p.stderr.strip()[-200:]})")


TESTS = {"device_layers": test_device_layers, "device_paths": test_device_paths,
         "device_overlap": test_device_overlap, "device_bad_input": test_device_bad_input,
         "device_faults": test_device_faults, "device_record": test_device_record}

if __name__ == "__main__":
    main(TESTS)
