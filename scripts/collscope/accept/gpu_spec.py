"""The spec's GPU classes: what each GPU model is expected to do (acceptance/README.md,
"GPU nodes"):

    "classes": {
      "gpu_memory":    {"tolerance": 0.2, "models": {"NVIDIA H200":
                            {"bytes": "1G", "d2d": 2.06e12, "reduce": 1.35e12}}},
      "host_device":   {"models": {MODEL: {"bytes": "256M", "h2d": R, "d2h": R, "bidir": R,
                                           "pcie_generation": 5, "pcie_width": 16}}},
      "device_device": {"tolerance": 0.2, "latency_tolerance": 1.0,
                        "models": {MODEL: {"bytes": "64M", "bandwidth": R, "latency": S}}},
      "nccl":          {"models": {MODEL: {"bytes": "256M", "allreduce": R, "alltoall": R}}}
    }

Rates are bytes/s (nccl: busbw), latency seconds (half a round trip), the PCIe link the
least generation and width the link must reach. `bytes` is the size the figures hold at:
where the run measured another size, they are not applied (a note says so). A figure
`null` is not measured yet: nothing is judged against it, and the verdict says so.
Models are matched against the name each rank's GPU reports and must be among those in
acceptance/gpu_models.txt.
"""

import json
import os

from ..paths import ROOT
from .spec import SpecError, no_unknown_keys, number, parse_size

FIGURES = {
    "gpu_memory": ("d2d", "reduce"),
    "host_device": ("h2d", "d2h", "bidir", "pcie_generation", "pcie_width"),
    "device_device": ("bandwidth", "latency"),
    "nccl": ("allreduce", "alltoall"),
}
GPU_CLASSES = tuple(FIGURES)
LINK_FIGURES = ("pcie_generation", "pcie_width")   # the least the link must reach
CLASS_KEYS = {"tolerance", "latency_tolerance", "models"}
DEFAULT_TOLERANCE, DEFAULT_LATENCY_TOLERANCE = 0.2, 1.0


def known_models(path=os.path.join(ROOT, "acceptance", "gpu_models.txt")):
    with open(path) as f:
        lines = [line.strip() for line in f]
    return [line for line in lines if line and not line.startswith("#")]


class GpuClassSpec:
    """A GPU class's expected figures per model, and the tolerances they are held to."""

    def __init__(self, name, tolerance, latency_tolerance, models):
        self.name, self.tolerance, self.latency_tolerance = name, tolerance, latency_tolerance
        self.models = models   # {model: {"bytes": int or None, figure: value or None}}

    def limit(self, model, figure, measured_bytes):
        """(the limit in GB/s, us, or the link's generation or width; None when there is
        none, with a note saying why, or no note where the spec has no such figure)."""
        figures = self.models.get(model)
        if figures is None or figure not in figures:
            return None, None
        value = figures[figure]
        if value is None:
            return None, f"the spec's {self.name}.{figure} for {model} is not measured yet"
        size = figures.get("bytes")
        if size is not None and figure not in LINK_FIGURES and measured_bytes != size:
            return None, (f"the spec's {self.name}.{figure} for {model} holds at {size} B, "
                          f"measured at {measured_bytes} B")
        if figure in LINK_FIGURES:
            return value, None
        if figure == "latency":
            return (1 + self.latency_tolerance) * value * 1e6, None
        return (1 - self.tolerance) * value / 1e9, None

    def describe(self):
        return {"tolerance": self.tolerance, "latency_tolerance": self.latency_tolerance,
                "models": self.models}


def model_figures(cls, raw, where):
    no_unknown_keys(raw, set(FIGURES[cls]) | {"bytes"}, where)
    out = {"bytes": parse_size(raw["bytes"], f"{where}.bytes") if "bytes" in raw else None}
    for figure in FIGURES[cls]:
        if figure not in raw:
            continue
        value = raw[figure]
        if value is None:
            out[figure] = None
        elif figure in LINK_FIGURES:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"{where}.{figure} must be an integer >= 1 or null, got {json.dumps(value)}")
            out[figure] = value
        else:
            out[figure] = number(value, f"{where}.{figure}", above=figure != "latency")
    if len(out) == 1:
        raise SpecError(f"{where} names none of {', '.join(FIGURES[cls])} (null: not measured yet)")
    return out


def gpu_class_spec(cls, raw, where, models=None):
    """The spec's GPU class `cls` (SpecError on anything wrong, an unknown model included)."""
    no_unknown_keys(raw, CLASS_KEYS, where)
    tolerance = number(raw.get("tolerance", DEFAULT_TOLERANCE), f"{where}.tolerance", maximum=0.99)
    latency_tolerance = number(raw.get("latency_tolerance", DEFAULT_LATENCY_TOLERANCE),
                               f"{where}.latency_tolerance")
    if "latency_tolerance" in raw and cls != "device_device":
        raise SpecError(f"{where}: latency_tolerance applies to device_device only")
    raw_models = raw.get("models")
    if not isinstance(raw_models, dict) or not raw_models:
        raise SpecError(f"{where}.models must name at least one GPU model, e.g. {{\"NVIDIA H200\": {{...}}}}")
    known = known_models() if models is None else models
    out = {}
    for model, figures in raw_models.items():
        if model not in known:
            raise SpecError(f"{where}: unknown GPU model '{model}' (acceptance/gpu_models.txt lists "
                            f"the known ones, as the driver spells them)")
        out[model] = model_figures(cls, figures, f"{where}.models.{model}")
    return GpuClassSpec(cls, tolerance, latency_tolerance, out)
