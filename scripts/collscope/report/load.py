"""Reading a results file for scripts/report: the file as per-row dicts and numpy arrays
(read_results), each collective row's medium (medium_of, file_slug), the rows timed under
the MPI library's monitoring (monitored), and the two errors every page may raise
(BadInput: exit 2, IOFailure: exit 3). It writes no page; every page module takes its rows
from here."""

import json
import math
import re

import numpy as np

from collscope import noise           # each row's spread, the rounds, the machine: noise.md
from collscope import results as cr   # the results layout, shared with merge and sweep

VOLUME_KEYS = cr.VOLUME_KEYS
VENDOR_ALGORITHMS = cr.VENDOR_ALGORITHMS


class BadInput(Exception):
    """The input file or the arguments are not usable: exit 2, nothing written."""


class IOFailure(Exception):
    """A file could not be read or written: exit 3."""


# ---- reader: the file as per-row dicts and numpy arrays -------------------------------


text = cr.text


def plain(value):
    """One compound-record field as a Python value."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def open_results_file(path):
    """Opens FILE read-only after checking it is a collscope results file this build reads."""
    try:
        return cr.open_results_file(path)
    except cr.NotResults as e:
        raise BadInput(str(e)) from None
    except cr.Unreadable as e:
        raise IOFailure(str(e)) from None


def pool_values(pool, offset, count, what):
    """pool[offset : offset + count], or None for offset -1 (no such array)."""
    if offset < 0:
        return None
    if offset + count > len(pool):
        raise BadInput(f"{what} points past the end of its pool (damaged file)")
    return pool[offset:offset + count]


def square(values, n, what):
    if values is None:
        return None
    if len(values) != n * n:
        raise BadInput(f"{what} holds {len(values)} values, not {n} x {n}")
    return values.reshape(n, n)


def read_row(rec, index, group, ranks, pools, runs, version):
    """One row of <group>/rows as a dict with this version's names: plain values, None for
    SCHEMA.md's missing ones, per-rank groups as dicts of numpy arrays (None when *_known
    is false), pools sliced."""
    row = cr.current_names({name: plain(rec[name]) for name in rec.dtype.names}, group, version)
    for name in cr.MISSING_TEXT & row.keys():
        row[name] = row[name] or None
    for name in cr.MISSING_FLOAT & row.keys():
        row[name] = None if math.isnan(row[name]) else row[name]
    for name in cr.MISSING_INT & row.keys():
        row[name] = None if row[name] == -1 else row[name]
    for pair in ("pair", "slowest_pair", "first_bad_pair"):
        if pair + "_a" in row:
            a, b = row.pop(pair + "_a"), row.pop(pair + "_b")
            row[pair] = None if a == -1 else (a, b)
    what = f"/{group}/rows[{index}]"
    n = row["nranks"]
    row["index"] = index
    row["run"] = runs[row["run_id"]] if row["run_id"] < len(runs) else None
    per_rank = pool_values(ranks, row["ranks_offset"], row["ranks_count"], what + " ranks")
    if per_rank is None or len(per_rank) != n:
        raise BadInput(f"{what} has {row['ranks_count']} rank records for {n} ranks")
    row["measured"] = ({k: per_rank[k] for k in VOLUME_KEYS} if row["measured_known"] else None)
    row["theory"] = ({k: per_rank["theory_" + k] for k in VOLUME_KEYS}
                     if row["theory_known"] else None)
    row["nodes"] = per_rank["node"] if row["nodes_known"] else None
    arrays = {p: pool_values(pools[p], row[p + "_offset"], row[p + "_count"], f"{what} {p}")
              for p in cr.row_tables(version)[group]}
    times = arrays["times_us"]
    row["times_us"] = times if times is not None else np.zeros(0)
    row["traffic"] = square(arrays["traffic_bytes"], n, what + " traffic_bytes")
    if group == "collective":
        row["splits"] = square(arrays["splits"], n, what + " splits")
        row["theory_traffic"] = square(arrays.get("theory_traffic_bytes"), n,
                                       what + " theory_traffic_bytes")
    else:
        row["latency_matrix"] = square(arrays["latency_us_matrix"], n, what + " latency")
        row["bw_matrix"] = square(arrays["bw_gbps_matrix"], n, what + " bandwidth")
    row["vendor"] = row["algorithm"] in VENDOR_ALGORITHMS or not (
        row["measured_known"] or row["theory_known"])
    return row


def read_table(f, group, runs, version):
    rows = f[group + "/rows"][:]
    ranks = f[group + "/ranks"][:]
    pools = {p: f[f"{group}/{p}"][:] for p in cr.row_tables(version)[group]}
    return [read_row(rec, i, group, ranks, pools, runs, version)
            for i, rec in enumerate(rows) if rec["run_id"] >= 0]  # -1: unfinished row


def read_layer_rows(f, version):
    """The /layer rows (none in a file without /layer) as dicts with this version's names;
    shape as a dict; a version-1 or -2 row lacks the device and time columns."""
    if cr.LAYER not in f:
        return []
    out = []
    times = f[cr.LAYER + "/times_us"][:]
    for i, rec in enumerate(f[cr.LAYER + "/rows"][:]):
        if rec["run_id"] < 0:
            continue
        row = cr.current_names({n: plain(rec[n]) for n in rec.dtype.names}, cr.LAYER, version)
        row["index"] = i
        row["times_us"] = pool_values(times, row["times_us_offset"], row["times_us_count"],
                                      f"/layer/rows[{i}] times_us")
        try:
            row["shape"] = json.loads(row["shape"])
        except ValueError:
            raise BadInput(f"/layer/rows[{i}] shape is not JSON") from None
        out.append(row)
    return out


def read_results(path):
    """Everything the report needs: {path, attrs, runs, collective, pingpong, layer}."""
    f = open_results_file(path)
    version = cr.schema_version(f)
    try:
        with f:
            attrs = {k: text(v) for k, v in f.attrs.items()}
            runs = [{k: plain(r[k]) for k in r.dtype.names} for r in f["runs"][:]]
            collective = read_table(f, "collective", runs, version)
            pingpong = read_table(f, "pingpong", runs, version)
            layer = read_layer_rows(f, version)
        for r in collective:
            r["medium"] = medium_of(r)
        computed = sum(noise.annotate(rows) for rows in (collective, pingpong, layer))
        noise.infer_rounds(collective, excluded=monitored)
    except (KeyError, ValueError) as e:
        raise BadInput(f"'{path}' does not have schema {version}'s tables: {e}") from None
    except OSError as e:
        raise IOFailure(f"cannot read '{path}': {e}") from None
    return {"path": path, "attrs": attrs, "runs": runs, "collective": collective,
            "pingpong": pingpong, "layer": layer, "spread_computed": computed}


# How ranks shared a GPU, where it changes what a device time means (gpu_sharing, schema 5).
SHARING_LABELS = {"time_sliced": "time-sliced GPU", "mps": "MPS"}


def medium_of(row):
    """Where a row's bytes live and how they move, for grouping: host rows by transport
    ("mpi"), device rows apart ("mpi/staged", "ucx/ipc", "nccl"), and apart again by how
    their ranks shared a GPU ("mpi/ipc, MPS", "mpi/ipc, time-sliced GPU"): a GPU's curve is
    never drawn, ranked or advised beside a host one, nor a time-sliced one beside one
    under MPS (the first measures the GPU's context switches)."""
    if row.get("memory", "host") != "device":
        return row["transport"]
    path = row.get("path") or ""
    medium = row["transport"] if row["transport"] == "nccl" or not path else f"{row['transport']}/{path}"
    sharing = SHARING_LABELS.get(row.get("gpu_sharing") or "")
    return f"{medium}, {sharing}" if sharing else medium


def file_slug(medium):
    """A medium as a file name's part: "mpi/ipc, time-sliced GPU" -> "mpi_ipc_time_sliced_gpu"."""
    return re.sub(r"[^a-z0-9]+", "_", medium.lower()).strip("_")


def nnodes_of(row):
    """Distinct nodes of a row's ranks (its node map, else its run's attribute)."""
    if row["nodes"] is not None:
        return len(set(int(n) for n in row["nodes"]))
    return int(row["run"]["nnodes"]) if row["run"] else 1


# ---- rows timed under the library's monitoring (--vendor-volume) -------------------------


MONITORED = "mpi_t:pml_monitoring"


def monitored(row):
    """A row run with --vendor-volume: its time carries the MPI library's monitoring."""
    return MONITORED in (row.get("volume_source") or "", row.get("volume_witness") or "")


def without_monitored_twins(rows):
    """The rows, less those timed under the library's monitoring where the same cell
    (collective, algorithm, N, medium, size) also has rows timed without it: a separate
    --vendor-volume pass (scripts/quickstart's) counts, it does not time."""
    plain = {(r["collective"], r["algorithm"], r["nranks"], r["medium"], r["bytes"])
             for r in rows if not monitored(r)}
    return [r for r in rows if not monitored(r) or
            (r["collective"], r["algorithm"], r["nranks"], r["medium"], r["bytes"]) not in plain]
