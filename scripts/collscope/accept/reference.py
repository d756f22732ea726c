"""scripts/accept-reference: a spec's GPU figures filled from an acceptance run on GPUs
(acceptance/README.md, "Filling the reference figures").

    scripts/accept-reference RUN_DIR [--spec SPEC] [--write] [--replace]

Reads RUN_DIR/verdict.json, a passing run with device memory on real GPUs, and fills the
figures of SPEC (default acceptance/reference-gpu-spec.json) that are null (with
--replace, every figure) for each GPU model the run measured, from the median of that
model's GPUs that passed:

  gpu_memory   d2d, reduce             each GPU's figure (GB/s x 1e9), bytes: gpu_bytes
  host_device  h2d, d2h, bidir         likewise, bytes: pcie_bytes
               pcie_generation, width  the least maximum the driver reported
  device_device bandwidth, latency     ipc pairs between two GPUs of the model (alone),
                                       bytes: device_bandwidth_bytes
  nccl         allreduce, alltoall     busbw over all ranks (one host) or the hosts'
                                       median, bytes: nccl_bytes

A figure held at another size than the run measured is left alone. The spec comes out on
stdout, or replaces SPEC with --write (checked by the spec reader first). What was filled
goes to stderr. Exit status: 0; 2 bad input (one line).
"""

import argparse
import json
import os
import statistics
import sys

from ..paths import ROOT
from .spec import SpecError, load_spec, parse_size

RUN_SIZE = {"gpu_memory": "gpu_bytes", "host_device": "pcie_bytes", "device_device": "device_bandwidth_bytes",
            "nccl": "nccl_bytes"}


class Usage(argparse.ArgumentParser):
    def error(self, message):
        raise SpecError(message)


def read_run(run_dir):
    path = os.path.join(run_dir, "verdict.json")
    try:
        with open(path) as f:
            v = json.load(f)
    except (OSError, ValueError) as e:
        raise SpecError(f"'{path}' cannot be read: {e}") from None
    if v.get("schema") != "collscope acceptance verdict" or v.get("schema_version") != 2:
        raise SpecError(f"'{path}' is not an acceptance verdict of schema version 2")
    memory = v.get("memory", {})
    if memory.get("kind") != "device" or memory.get("runtime") != "cuda":
        raise SpecError(f"'{path}' measured no real GPU (memory {memory.get('kind')}, "
                        f"runtime {memory.get('runtime')}): its figures are no GPU model's")
    if v["verdict"] != "pass":
        raise SpecError(f"'{path}' did not pass ({v['verdict']}): fill reference figures from a passing run")
    return v


def median_or_none(values):
    values = [x for x in values if x is not None]
    return statistics.median(values) if values else None


def measured(v, model):
    """{class: {figure: value in the spec's units}} of one model in a run."""
    gpus = [g for g in v["gpus"] if g["model"] == model and g["verdict"] == "pass"]

    def of(cls, fig):
        x = median_or_none([(g[cls].get(fig) or {}).get("value") for g in gpus])
        return None if x is None else x * 1e9

    links = [g["host_device"]["pcie"] for g in gpus if g["host_device"]["pcie"].get("known")]
    pairs = [p for p in v["device_pairs"] if not p["same_gpu"] and p["verdict"] == "pass"
             and all(g["model"] == model for g in v["gpus"] if g["where"] in p["gpus"])]
    lat = median_or_none([p["latency"]["alone_median"] for p in pairs])
    out = {"gpu_memory": {"d2d": of("gpu_memory", "d2d"), "reduce": of("gpu_memory", "reduce")},
           "host_device": {f: of("host_device", f) for f in ("h2d", "d2h", "bidir")},
           "device_device": {"bandwidth": median_or_none([p["bandwidth"]["alone_median"] for p in pairs]),
                             "latency": None if lat is None else lat * 1e-6}}
    if out["device_device"]["bandwidth"] is not None:
        out["device_device"]["bandwidth"] *= 1e9
    if links:
        out["host_device"]["pcie_generation"] = min(x["max_generation"] for x in links)
        out["host_device"]["pcie_width"] = min(x["max_width"] for x in links)
    out["nccl"] = nccl_figures(v)
    return out


def nccl_figures(v):
    out = {}
    for name in ("allreduce", "alltoall"):
        runs = [e for e in v["nccl"] if e["collective"] == f"{name}_nccl" and e.get("measured")
                and e["verdict"] != "fail"]
        hosts = [e["busbw_gbps"] for e in runs if e["scope"] != "all"]
        whole = [e["busbw_gbps"] for e in runs if e["scope"] == "all"]
        value = median_or_none(hosts) if hosts else median_or_none(whole)
        out[name] = None if value is None else value * 1e9
    return out


def fill(raw, v, replace):
    """Fills raw["classes"] in place; returns what it filled, as lines."""
    filled = []
    settings = v["run"]["settings"]
    models = sorted({g["model"] for g in v["gpus"]})
    for model in models:
        found = measured(v, model)
        for cls, figures in found.items():
            entry = raw.setdefault("classes", {}).setdefault(cls, {}).setdefault("models", {}).setdefault(model, {})
            size = settings[RUN_SIZE[cls]]
            if entry.get("bytes") is not None and parse_size(entry["bytes"], "bytes") != size:
                filled.append(f"{model} {cls}: left alone (held at {entry['bytes']}, the run measured {size} B)")
                continue
            for fig, value in figures.items():
                if value is None or (entry.get(fig) is not None and not replace):
                    continue
                entry[fig] = value if fig.startswith("pcie") else float(f"{value:.4g}")
                entry.setdefault("bytes", size)
                filled.append(f"{model} {cls}.{fig} = {entry[fig]:g}")
    return filled


def main(argv=None):
    p = Usage(prog="scripts/accept-reference", description=__doc__,
              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir")
    p.add_argument("--spec", default=os.path.join(ROOT, "acceptance", "reference-gpu-spec.json"))
    p.add_argument("--write", action="store_true", help="replace SPEC (else: print the spec)")
    p.add_argument("--replace", action="store_true", help="fill figures that are not null too")
    try:
        args = p.parse_args(argv)
        v = read_run(args.run_dir)
        load_spec(args.spec)   # a spec that is wrong already is refused as such
        with open(args.spec) as f:
            raw = json.load(f)
        filled = fill(raw, v, args.replace)
        raw["description"] = (raw.get("description", "") + f" Filled from {os.path.abspath(args.run_dir)} "
                              f"({v['run']['started_utc']}) by scripts/accept-reference.").strip()
        text = json.dumps(raw, indent=2) + "\n"
        if args.write:
            tmp = args.spec + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            try:
                load_spec(tmp)
            except SpecError:
                os.remove(tmp)
                raise
            os.replace(tmp, args.spec)
        else:
            sys.stdout.write(text)
    except SpecError as e:
        print(f"accept-reference: error: {e}", file=sys.stderr)
        return 2
    for line in filled or ["nothing to fill"]:
        print(f"accept-reference: {line}", file=sys.stderr)
    return 0
