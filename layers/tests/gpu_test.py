#!/usr/bin/env python3
"""The layer binaries on a real GPU (not the emulated device): every layer at 1 and 2 ranks
over --path ipc and at 1 rank with -t nccl, small shapes, with cuBLAS and the CUDA
kernels; and collscope_gemm_rate. Where there is no GPU (no nvidia-smi or no
/dev/nvidiactl) it prints why and exits 77, which ctest reports as skipped, never passed.

usage: gpu_test.py BIN_DIR gpu
"""
import os
import shutil
import subprocess
import sys

from layer_testlib import *  # noqa: F401,F403 (check, run_record, BIN, main)

SMALL = {  # every shape flag given (-m device's defaults are the GPU's full shape)
    "layer_tp_mlp": ["-S", "256", "-B", "2", "-H", "256", "-F", "1024"],
    "layer_dp_grad": ["-S", "256", "-B", "2", "-H", "256", "-K", "512", "--buckets", "2"],
    "layer_tp_attention": ["-S", "256", "-B", "2", "-H", "256", "--heads", "4"],
    "layer_vocab_parallel": ["-S", "256", "-B", "2", "-H", "256", "-V", "1024"],
    "layer_tp_sp": ["-S", "256", "-B", "2", "-H", "256", "--heads", "4", "-F", "1024"],
    "layer_tp_to_sp": ["-S", "256", "-B", "2", "-H", "256", "--scheme", "alltoall"],
    "layer_moe": ["-S", "256", "-B", "2", "-H", "256", "--experts", "4", "--chunks", "2"],
    "layer_tp_sp_ep": ["-S", "256", "-B", "2", "-H", "256", "--heads", "4", "--experts", "4"],
}


def have_gpu():
    return shutil.which("nvidia-smi") is not None and os.path.exists("/dev/nvidiactl")


def test_gpu():
    if os.environ.get("COLLSCOPE_DEVICE_EMULATION") == "1" or not have_gpu():
        print("no GPU (nvidia-smi or /dev/nvidiactl missing, or the emulated device asked for): skipped")
        sys.exit(77)
    for binary, shape in SMALL.items():
        for np, backend in ((1, ["--path", "ipc"]), (2, ["--path", "ipc", "--overlap"]),
                            (1, ["-t", "nccl"])):
            what = f"{binary} -m device {' '.join(backend)} np {np}"
            code, rec, err = run_record(binary, shape + ["-m", "device", "-n", "2", "-w", "1"] + backend, np)
            check(code == 0 and rec is not None and rec["pass"] and rec["volume"] in ("ok", "n/a") and
                  rec["device_runtime"] == "cuda" and rec["gemm"].startswith("cublas"),
                  f"{what}: pass on the GPU with cuBLAS (got {code}, {err.strip()[-300:]})")
    p = subprocess.run([os.path.join(BIN, "collscope_gemm_rate"), "-M", "1024", "-N", "1024", "-K",
                        "1024", "--format", "jsonl"], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0 and '"tflops"' in p.stdout, f"collscope_gemm_rate: a rate ({p.stdout.strip()})")


if __name__ == "__main__":
    main({"gpu": test_gpu})
