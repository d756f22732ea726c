"""The acceptance spec: what each link class and GPU model is expected to do, and how hard
to look.

JSON (acceptance/README.md, "The spec"):

    {
      "model": "collectives/model/example.json",
      "classes": {
        "inter-node": {"bandwidth": 2.4e7, "latency": 60e-6,
                       "bandwidth_tolerance": 0.2, "latency_tolerance": 1.0},
        "intra-node": {"model": true},
        "gpu_memory": {"models": {"NVIDIA H200": {"d2d": 2.06e12, ...}}}
      },
      "peers": {"bandwidth_tolerance": 0.4, "latency_tolerance": 2.0,
                "latency_floor_us": 2.0, "compute_tolerance": 1.0, "z": 3.5,
                "gpu_tolerance": 0.25},
      "baseline": {"bandwidth_tolerance": 0.2, "latency_tolerance": 1.0},
      "measure": {"repeats": 3, "bandwidth_bytes": "4M", ...}
    }

Every section is optional. Rates are bytes/s and times seconds, as in the time model's
file. A class is written by hand (`bandwidth`, `latency`: at least one) or taken from the
model file (`"model": true`), whose version 1 and 2 are read. The GPU classes
(gpu_memory, host_device, device_device, nccl) give figures per GPU model (gpu_spec.py).
Anything wrong is a SpecError: one line, exit code 2.
"""

import json
import math
import os

from collscope import sizes

LINK_CLASSES = ("intra-node", "inter-node")
GPU_CLASSES = ("gpu_memory", "host_device", "device_device", "nccl")   # gpu_spec.py
CLASSES = LINK_CLASSES + GPU_CLASSES
RENAMED = {"host-device": "host_device", "device-device": "device_device"}
MODEL_CLASS = {"intra-node": "intra_node", "inter-node": "inter_node"}
TOP_KEYS = {"model", "classes", "peers", "baseline", "measure", "description"}
CLASS_KEYS = {"bandwidth", "latency", "bandwidth_tolerance", "latency_tolerance", "model"}

PEER_DEFAULTS = {"bandwidth_tolerance": 0.4, "latency_tolerance": 2.0, "latency_floor_us": 2.0,
                 "compute_tolerance": 1.0, "z": 3.5, "gpu_tolerance": 0.25}
BASELINE_DEFAULTS = {"bandwidth_tolerance": 0.2, "latency_tolerance": 1.0}
CLASS_DEFAULTS = {"bandwidth_tolerance": 0.2, "latency_tolerance": 1.0}
MEASURE_DEFAULTS = {
    "repeats": 3,                 # screening repeats (each: probe, latency, every pattern)
    "patterns": "pairs,rounds,ring",
    "bandwidth_bytes": 4 << 20,   # the size bandwidth is judged at
    "latency_bytes": 8,           # the size latency is judged at
    "iters": 5,                   # timed round trips per pair at the bandwidth size
    "warmup": 1,                  # untimed ones before them (after the untimed probe)
    "latency_iters": 20,
    "collectives": "allreduce_ring,alltoall_pairwise",
    "collective_min_bytes": 1 << 20,
    "collective_max_bytes": 16 << 20,
    "collective_iters": 5,
    "retest_iters": 5,            # round trips of a retested pair
    "max_retests": 24,            # pingpong launches the narrowing may spend
    "compute_bytes": 4 << 20,
    "compute_iters": 10,
    "timeout": 120.0,             # seconds a round trip or call may take (pingpong --timeout)
    # GPU nodes (acceptance/README.md, "GPU nodes")
    "memory": "auto",             # host, device, or auto: device where every rank sees a GPU
    "classes": "links,gpu_memory,host_device,device_device,nccl",   # what to measure
    "gpu_bytes": 1 << 30,         # each buffer of the device copy and the reduce kernel
    "pcie_bytes": 256 << 20,      # each host-device copy
    "gpu_iters": 10,              # timed calls per GPU figure
    "device_bandwidth_bytes": 64 << 20,   # the ipc ping-pong's bandwidth size (GPU to GPU)
    "device_wait": "spin",        # how the device ping-pong's host waits (pingpong --wait)
    "nccl_bytes": 256 << 20,
    "nccl_iters": 20,
}
SIZE_KEYS = {"bandwidth_bytes", "latency_bytes", "collective_min_bytes", "collective_max_bytes",
             "compute_bytes", "gpu_bytes", "pcie_bytes", "device_bandwidth_bytes", "nccl_bytes"}
COUNT_KEYS = {"repeats", "iters", "latency_iters", "collective_iters", "retest_iters",
              "max_retests", "compute_iters", "gpu_iters", "nccl_iters"}
ZERO_OK = {"warmup"}
PATTERNS = ("pairs", "rounds", "ring")
MEMORY = ("auto", "host", "device")
MEASURED = ("links",) + GPU_CLASSES   # measure.classes: links = intra-node and inter-node
WAITS = ("spin", "yield", "block")
COLLECTIVES = ("allreduce_ring", "alltoall_pairwise", "allreduce_mpi", "alltoall_mpi",
               "allreduce_halving_doubling", "allreduce_dbt", "alltoall_bruck")


class SpecError(Exception):
    """A bad spec, model file or setting: one line, exit code 2."""


# ---- small parsers ---------------------------------------------------------------------



def parse_size(value, what):
    """64, "1K", "16M", "1G" (x1024) as bytes, like the binaries' -b/-e."""
    if isinstance(value, bool):
        raise SpecError(f"{what} must be a size such as 256K, got {json.dumps(value)}")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise SpecError(f"{what} must be a size such as 256K, got {json.dumps(value)}")
    try:
        return sizes.parse_size(text)
    except sizes.SizeRefused:
        raise SpecError(f"{what} must be a size such as 256K, got {json.dumps(value)}") from None


def number(value, what, minimum=0.0, above=False, maximum=None):
    """A JSON number >= minimum (> minimum when `above`), <= maximum."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(f"{what} must be a number, got {json.dumps(value)}")
    if value < minimum or (above and value == minimum):
        rule = "positive" if above and minimum == 0 else f"at least {minimum}"
        raise SpecError(f"{what} must be {rule}, got {value}")
    if maximum is not None and value > maximum:
        raise SpecError(f"{what} must be at most {maximum}, got {value}")
    return float(value)


def count(value, what, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"{what} must be an integer >= {minimum}, got {json.dumps(value)}")
    return value


def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise SpecError(f"{what} '{path}' does not exist") from None
    except IsADirectoryError:
        raise SpecError(f"{what} '{path}' is a directory") from None
    except OSError as e:
        raise SpecError(f"{what} '{path}': cannot read: {e.strerror}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise SpecError(f"{what} '{path}' is not valid JSON: {e}") from None


def no_unknown_keys(obj, allowed, where):
    if not isinstance(obj, dict):
        raise SpecError(f"{where} must be a JSON object, got {json.dumps(obj)[:60]}")
    for key in obj:
        if key not in allowed:
            raise SpecError(f"{where}: unknown key '{key}' (known: {', '.join(sorted(allowed))})")


# ---- the time model's file (collectives/model/MODEL.md), versions 1 and 2 ----------------

class ModelClass:
    """One link class of a model file as a ping-pong would see it: the time of half a
    round trip of `size` bytes (seconds)."""

    def __init__(self, link_delay, overhead, rate_at):
        self.link_delay, self.overhead, self.rate_at = link_delay, overhead, rate_at

    def half_round_trip(self, size):
        # Version 2: a tiny message's half round trip is overhead + link_delay + overhead.
        return 2 * self.overhead + self.link_delay + port_time(self.rate_at, size)


def port_time(bands, size):
    """MODEL.md "Costs by size": linear in the size between the two nearest bands,
    proportional to it beyond the first and the last. `bands`: [(bytes, rate)]."""
    if size <= bands[0][0]:
        return size / bands[0][1]
    if size >= bands[-1][0]:
        return size / bands[-1][1]
    for (b0, r0), (b1, r1) in zip(bands, bands[1:]):
        if b0 <= size <= b1:
            t0, t1 = b0 / r0, b1 / r1
            return t0 + (t1 - t0) * (size - b0) / (b1 - b0)
    raise AssertionError("unreachable: bands are increasing")


def model_class_v1(c, where):
    for key in ("bandwidth", "bwurate", "link_delay"):
        if key not in c:
            raise SpecError(f"{where}.{key} is missing")
    bandwidth = number(c["bandwidth"], f"{where}.bandwidth", above=True)
    bwurate = number(c["bwurate"], f"{where}.bwurate", above=True, maximum=1.0)
    delay = number(c["link_delay"], f"{where}.link_delay")
    return ModelClass(delay, 0.0, [(1, bandwidth * bwurate)])


def model_bands(c, where, bwurate):
    if ("bands" in c) == ("bandwidth" in c):
        raise SpecError(f"{where} needs exactly one of bandwidth and bands")
    if "bandwidth" in c:
        return [(1, number(c["bandwidth"], f"{where}.bandwidth", above=True) * bwurate)]
    bands = c["bands"]
    if not isinstance(bands, list) or not bands:
        raise SpecError(f"{where}.bands must be a non-empty list")
    out = []
    for i, band in enumerate(bands):
        w = f"{where}.bands[{i}]"
        if not isinstance(band, dict) or "bytes" not in band or "one_way" not in band:
            raise SpecError(f"{w} needs bytes and one_way")
        size = number(band["bytes"], f"{w}.bytes", above=True)
        if out and size <= out[-1][0]:
            raise SpecError(f"{w}.bytes must be above the band before ({out[-1][0]:g}), got {size:g}")
        out.append((size, number(band["one_way"], f"{w}.one_way", above=True) * bwurate))
    return out


def model_class_v2(c, where):
    if "link_delay" not in c:
        raise SpecError(f"{where}.link_delay is missing")
    delay = number(c["link_delay"], f"{where}.link_delay")
    overhead = number(c.get("overhead", 0.0), f"{where}.overhead")
    bwurate = number(c.get("bwurate", 1.0), f"{where}.bwurate", above=True, maximum=1.0)
    return ModelClass(delay, overhead, model_bands(c, where, bwurate))


def load_model(path):
    """{class name: ModelClass} for intra-node and inter-node. Keys this reader does not
    use (start_lat, sync_lat, spreads, points, reduce_rate ...) are left to the model's own
    loader; the version must be one this reader knows."""
    m = read_json(path, "model file")
    if not isinstance(m, dict):
        raise SpecError(f"model file '{path}' must hold a JSON object")
    version = m.get("version", 1)
    if version not in (1, 2) or isinstance(version, bool):
        raise SpecError(f"model file '{path}': version {json.dumps(version)} is not supported "
                        "(this reader knows versions 1 and 2)")
    out = {}
    for name, key in MODEL_CLASS.items():
        c = m.get(key)
        where = f"model file '{path}': {key}"
        if not isinstance(c, dict):
            raise SpecError(f"{where} is missing or not an object")
        out[name] = model_class_v1(c, where) if version == 1 else model_class_v2(c, where)
    return out


# ---- the spec -----------------------------------------------------------------------------

class ClassSpec:
    """A link class's expectation: half a round trip of `size` bytes takes `time(size)`
    seconds; bandwidth is judged when the class says how fast (by hand or by the model),
    latency when it says how soon."""

    def __init__(self, name, source, time, judge_bandwidth, judge_latency, tolerances):
        self.name, self.source, self.time = name, source, time
        self.judge_bandwidth, self.judge_latency = judge_bandwidth, judge_latency
        self.bandwidth_tolerance = tolerances["bandwidth_tolerance"]
        self.latency_tolerance = tolerances["latency_tolerance"]

    def min_bandwidth_gbps(self, size):
        """The lowest acceptable ping-pong bandwidth at `size` (GB/s), or None."""
        if not self.judge_bandwidth or size == 0:
            return None
        return (1 - self.bandwidth_tolerance) * size / self.time(size) / 1e9

    def max_latency_us(self, size):
        """The highest acceptable half round trip at `size` (us), or None."""
        if not self.judge_latency:
            return None
        return (1 + self.latency_tolerance) * self.time(size) * 1e6

    def describe(self):
        return {"source": self.source, "bandwidth_tolerance": self.bandwidth_tolerance,
                "latency_tolerance": self.latency_tolerance}


def hand_written_class(name, c, where, tolerances):
    if "bandwidth" not in c and "latency" not in c:
        raise SpecError(f"{where} needs bandwidth or latency (or \"model\": true)")
    bandwidth = number(c["bandwidth"], f"{where}.bandwidth", above=True) if "bandwidth" in c else None
    latency = number(c["latency"], f"{where}.latency") if "latency" in c else None

    def time(size):
        return (latency or 0.0) + (size / bandwidth if bandwidth else 0.0)

    return ClassSpec(name, "spec", time, bandwidth is not None, latency is not None, tolerances)


def class_spec(name, c, where, model, model_path):
    no_unknown_keys(c, CLASS_KEYS, where)
    tolerances = dict(CLASS_DEFAULTS)
    if "bandwidth_tolerance" in c:
        tolerances["bandwidth_tolerance"] = number(c["bandwidth_tolerance"],
                                                   f"{where}.bandwidth_tolerance", maximum=0.99)
    if "latency_tolerance" in c:
        tolerances["latency_tolerance"] = number(c["latency_tolerance"], f"{where}.latency_tolerance")
    from_model = c.get("model", False)
    if not isinstance(from_model, bool):
        raise SpecError(f"{where}.model must be true or false, got {json.dumps(from_model)}")
    if not from_model:
        return hand_written_class(name, c, where, tolerances)
    if "bandwidth" in c or "latency" in c:
        raise SpecError(f"{where}: \"model\": true and hand-written bandwidth/latency exclude each other")
    if model is None:
        raise SpecError(f"{where}: \"model\": true needs the spec's \"model\" file")
    if name not in model:
        raise SpecError(f"{where}: the model file has no {name} class (it has intra_node and inter_node)")
    return ClassSpec(name, f"model {model_path}", model[name].half_round_trip, True, True, tolerances)


def tolerance_section(raw, defaults, where, maxima):
    no_unknown_keys(raw, set(defaults), where)
    out = dict(defaults)
    for key, value in raw.items():
        out[key] = number(value, f"{where}.{key}", maximum=maxima.get(key))
    return out


def measure_settings(raw, where="measure"):
    no_unknown_keys(raw, set(MEASURE_DEFAULTS), where)
    out = dict(MEASURE_DEFAULTS)
    for key, value in raw.items():
        out[key] = setting(key, value, f"{where}.{key}")
    return out


def setting(key, value, what):
    """One measurement setting, checked (also for the command line's overrides)."""
    if key in SIZE_KEYS:
        return parse_size(value, what)
    if key in COUNT_KEYS:
        return count(value, what)
    if key in ZERO_OK:
        return count(value, what, minimum=0)
    if key == "timeout":
        return number(value, what, above=True)
    if key == "patterns":
        return names_list(value, what, PATTERNS)
    if key == "collectives":
        return names_list(value, what, COLLECTIVES, allow_empty=True)
    if key == "classes":
        return names_list(value, what, MEASURED)
    if key in ("memory", "device_wait"):
        return one_of(value, what, MEMORY if key == "memory" else WAITS)
    raise SpecError(f"unknown setting {what}")


def one_of(value, what, known):
    if value not in known:
        raise SpecError(f"{what} must be one of {', '.join(known)}, got {json.dumps(value)}")
    return value


def names_list(value, what, known, allow_empty=False):
    if not isinstance(value, str):
        raise SpecError(f"{what} must be a comma-separated string, got {json.dumps(value)}")
    names = [n.strip() for n in value.split(",") if n.strip()]
    for n in names:
        if n not in known:
            raise SpecError(f"{what}: unknown '{n}' (known: {', '.join(known)})")
    if not names and not allow_empty:
        raise SpecError(f"{what} must name at least one of {', '.join(known)}")
    return ",".join(names)


class Spec:
    def __init__(self, path=None, classes=None, peers=None, baseline=None, measure=None,
                 model_path=None, gpu_classes=None):
        self.path, self.model_path = path, model_path
        self.classes = classes or {}            # link classes: ClassSpec
        self.gpu_classes = gpu_classes or {}    # GPU classes: gpu_spec.GpuClassSpec
        self.peers = peers or dict(PEER_DEFAULTS)
        self.baseline = baseline or dict(BASELINE_DEFAULTS)
        self.measure = measure or dict(MEASURE_DEFAULTS)

    def describe(self):
        return {"path": self.path, "model": self.model_path,
                "classes": {n: c.describe() for n, c in self.classes.items()},
                "gpu_classes": {n: c.describe() for n, c in self.gpu_classes.items()},
                "peers": self.peers, "baseline": self.baseline}


def load_spec(path):
    """The spec in FILE, checked in full (SpecError on anything wrong); None: no spec,
    links judged against their peers only."""
    if path is None:
        return Spec()
    raw = read_json(path, "spec")
    no_unknown_keys(raw, TOP_KEYS, f"spec '{path}'")
    where = f"spec '{path}'"
    model, model_path = None, None
    if "model" in raw:
        if not isinstance(raw["model"], str) or not raw["model"]:
            raise SpecError(f"{where}: model must be a file name, got {json.dumps(raw['model'])}")
        model_path = raw["model"]
        if not os.path.isabs(model_path) and not os.path.exists(model_path):
            model_path = os.path.join(os.path.dirname(os.path.abspath(path)), model_path)
        model = load_model(model_path)
    from .gpu_spec import gpu_class_spec   # here: gpu_spec uses this module's readers
    classes, gpu_classes = {}, {}
    raw_classes = raw.get("classes", {})
    if not isinstance(raw_classes, dict):
        raise SpecError(f"{where}: classes must be a JSON object")
    for name, c in raw_classes.items():
        if name in RENAMED:
            raise SpecError(f"{where}: class '{name}' is now '{RENAMED[name]}', with figures per GPU model")
        if name not in CLASSES:
            raise SpecError(f"{where}: unknown class '{name}' (known: {', '.join(CLASSES)})")
        if name in GPU_CLASSES:
            gpu_classes[name] = gpu_class_spec(name, c, f"{where}: classes.{name}")
        else:
            classes[name] = class_spec(name, c, f"{where}: classes.{name}", model, model_path)
    peers = tolerance_section(raw.get("peers", {}), PEER_DEFAULTS, f"{where}: peers",
                              {"bandwidth_tolerance": 0.99, "gpu_tolerance": 0.99})
    baseline = tolerance_section(raw.get("baseline", {}), BASELINE_DEFAULTS, f"{where}: baseline",
                                 {"bandwidth_tolerance": 0.99})
    measure = measure_settings(raw.get("measure", {}), f"{where}: measure")
    return Spec(path, classes, peers, baseline, measure, model_path, gpu_classes)
