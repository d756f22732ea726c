"""The layout of collscope results files (results/SCHEMA.md) for Python: `report`, `merge`
and `sweep` import it. The C++ writer states the layout once (results/src/schema.cpp) and
the build exports it as schema.json, which this module reads: it repeats none of it.

    from collscope import results as cr
    f = cr.open_results_file(path)            # cr.NotResults / cr.Unreadable on failure
    version = cr.schema_version(f)
    for group, pools in cr.row_tables(version).items(): ...
    row = cr.current_names(row, group, version)   # version 1's names renamed

Versions: this build writes SCHEMA_VERSION and reads every version in READABLE_VERSIONS.
Version 2 renamed version 1's "seed_*" closed-form columns to "textbook_*" and added the
collective table's segment_bytes, seed, max_scratch_bytes columns, the theory's
intra-/inter-node split per rank and its traffic matrix (pool theory_traffic_bytes).
Version 3 added the collective table's `wait` column and, per rank, the bytes the ipc
path reduced straight from a peer's memory (reduced_from_peer_bytes, with its theory).
Version 4 added the collective table's `ranks`, volume_source, volume_witness and, for vendor
rows, vendor_algorithm, vendor_algorithm_closest and vendor_algorithm_off_bytes/_msgs.
Version 5 added to every timed table the spread of the iteration times (time_us_p25,
time_us_p75, time_spread, noise_threshold, noisy), the sweep round and gpu_sharing; to the
collective table mpi_coll_params; to /runs the machine under the run (host_cores,
oversubscribed, load_avg_1m, cpu_governor, busy_processes, machine_warnings) and what the
MPI library and UCX take (mpi_cuda_aware, ucx_memory_types); to /run_gpus gpu_sharing and
mps_client. Older files have none of these: `has_spread(version)` says whether they do.
"""
import json
import os
import sys

import h5py
import numpy as np

from collscope import algorithms
from collscope.paths import ROOT

# The facts the C++ writer owns (results/src/schema.cpp), as the build exported them:
# <build>/share/collscope/schema.json, beside algorithms.json (a GPU bundle packs it at the
# same place under its root/).
SCHEMA_FILE = os.path.join("share", "collscope", "schema.json")


def schema_path():
    """The build's (build/, or $COLLSCOPE_BUILD), else a GPU bundle's (<bundle>/root/)."""
    build = os.path.join(os.path.dirname(algorithms.default_bin_dir()), SCHEMA_FILE)
    bundle = os.path.join(ROOT, "root", SCHEMA_FILE)
    return bundle if not os.path.exists(build) and os.path.exists(bundle) else build


def _load_schema():
    path = schema_path()
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"collscope: error: no results schema at {path} (the build writes it: run "
                 f"scripts/bootstrap): {getattr(e, 'strerror', None) or e}")


SCHEMA = _load_schema()
FORMAT_NAME = SCHEMA["format"]
SCHEMA_VERSION = SCHEMA["version"]
READABLE_VERSIONS = tuple(SCHEMA["readable_versions"])
VENDOR_ALGORITHMS = set(SCHEMA["vendor_algorithms"])  # the library's own collective: no theory

LAYER = "layer"  # the optional /layer group: rows, ranks, a pool and two child tables
LAYER_POOLS = tuple(SCHEMA["versions"][str(SCHEMA_VERSION)]["layer"]["pools"])
LAYER_DATASETS = ("rows", "ranks", *LAYER_POOLS, "sites", "site_ranks", "checks")

VOLUME_KEYS = ("sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs")


def _missing(kinds):
    """The keys of the collective and pingpong rows that may have no value (schema.cpp's
    Missing markers), among the kinds given."""
    tables = SCHEMA["versions"][str(SCHEMA_VERSION)]["tables"]
    return {key for t in tables.values() for key, m in t["missing"].items() if m["kind"] in kinds}


# SCHEMA.md "Missing values": the value a column takes when the JSON has none. The writer
# always writes `model` and `textbook_formula`, "" when a row has none: read as None too.
MISSING_TEXT = _missing({"text"}) | {"model", "textbook_formula"}
MISSING_FLOAT = _missing({"f64"})
MISSING_INT = _missing({"i32", "i64"})

# Version 1's column names that version 2 renamed, per group.
VERSION1_RENAMES = SCHEMA["version1_renames"]


def has_spread(version):
    """Whether files of `version` record each row's spread and round (version 5 on): older
    ones have only times_us, from which the tools compute it."""
    return version >= 5


class NotResults(Exception):
    """Not a collscope results file this build can read (a usage error: exit 2)."""


class Unreadable(Exception):
    """The file could not be read (exit 3)."""


def row_tables(version=SCHEMA_VERSION):
    """{group: its pools} of the tables every file of `version` has."""
    tables = SCHEMA["versions"][str(version)]["tables"]
    return {group: tuple(t["pools"]) for group, t in tables.items()}


def dataset_paths(version=SCHEMA_VERSION, with_layer=False):
    """Every dataset a file of `version` holds (with /layer's, when it has that group)."""
    yield "runs"
    if version >= 2:
        yield "run_gpus"
    for group, pools in row_tables(version).items():
        for name in ("rows", "ranks", *pools):
            yield f"{group}/{name}"
    if with_layer:
        for name in LAYER_DATASETS:
            yield f"{LAYER}/{name}"


def text(value):
    """An HDF5 string (bytes, str or a one-element array) as str."""
    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else value.tolist()
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def schema_version(f):
    try:
        return int(np.asarray(f.attrs.get("collscope_schema_version", -1)).item())
    except (TypeError, ValueError):
        return -1


def open_results_file(path):
    """Opens PATH read-only after checking it is a collscope results file of a readable
    version with every dataset that version has."""
    if not os.path.exists(path):
        raise NotResults(f"'{path}' does not exist")
    if not os.path.isfile(path):
        raise NotResults(f"'{path}' is not a regular file")
    if not os.access(path, os.R_OK):
        raise Unreadable(f"cannot read '{path}': permission denied")
    if not h5py.is_hdf5(path):
        raise NotResults(f"'{path}' is not an HDF5 file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise Unreadable(f"cannot open '{path}': {e}") from None
    try:
        check_file(f, path)
    except Exception:
        f.close()
        raise
    return f


def check_file(f, path):
    fmt = text(f.attrs.get("collscope_format", ""))
    if fmt != FORMAT_NAME:
        raise NotResults(f"'{path}' is an HDF5 file but not a collscope results file "
                         f"(collscope_format is '{fmt}', not '{FORMAT_NAME}')")
    version = schema_version(f)
    if version not in READABLE_VERSIONS:
        raise NotResults(f"'{path}' has schema version {version}; this build reads versions "
                         f"{', '.join(map(str, READABLE_VERSIONS))}")
    for name in dataset_paths(version, LAYER in f):
        if name not in f or not isinstance(f[name], h5py.Dataset):
            raise NotResults(f"'{path}' claims schema {version} but has no dataset /{name}")


def current_names(row, group, version):
    """A decoded row (dict of column -> value) with version 1's names renamed."""
    if version != 1:
        return row
    renames = VERSION1_RENAMES.get(group, {})
    return {renames.get(k, k): v for k, v in row.items()}
