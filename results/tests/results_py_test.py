#!/usr/bin/python3
"""Results files from the outside (results/SCHEMA.md):

  h5py    h5py reads back, by SCHEMA.md's rules alone, every field the C++ reader sees
  h5dump  h5dump reads the whole file
  crash   a writer killed with SIGKILL, again and again, leaves a file that h5py, h5dump
          and the C++ reader open, with every row it finished; a new run appends after
  merge   scripts/merge joins files, keeps every run and row, refuses what it must; files
          with and without /layer

results_py_test.py GROUP --tool results_tool --merge scripts/merge --h5dump h5dump
"""

import argparse
import contextlib
import io
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

# ---- SCHEMA.md, as a reader would apply it ----------------------------------------------

# Version 5, every timed table: the iteration times' spread, the round, the GPUs' sharing.
SPREAD = {"time_us_p25": None, "time_us_p75": None, "time_spread": "null", "noise_threshold": None,
          "noisy": None, "round": None, "gpu_sharing": None}
SCALARS = {  # column -> how the JSON says "no value": None (never), "null" or "absent"
    "collective": {"collective": None, "algorithm": None, "transport": None, "memory": None,
                   "dtype": None, "op": None, "root": None, "nranks": None, "count": None,
                   "bytes": None, "in_place": None, "split": "absent", "iters": None,
                   "warmup": None, "time_us": None, "time_us_min": None, "time_us_max": None,
                   "algbw_gbps": None, "busbw_gbps": None, "volume": None, "wrong": "null",
                   "first_bad_rank": None, "first_bad_index": None, "predicted_us": "null",
                   "model": None, "textbook_sent_bytes": "null", "textbook_formula": None,
                   "segment_bytes": None, "seed": None, "max_scratch_bytes": None,
                   "path": None, "timing": None, "graph_calls": None, "blocking": None,
                   "vendor_call": None, "nccl_version": "absent", "wait": None, "ranks": None,
                   "volume_source": None,
                   "volume_witness": None, "vendor_algorithm": None,
                   "vendor_algorithm_closest": None, "vendor_algorithm_off_bytes": "null",
                   "vendor_algorithm_off_msgs": "null",
                   # version 5
                   **SPREAD, "mpi_coll_params": None},
    "pingpong": {"collective": None, "algorithm": None, "transport": None, "memory": None,
                 "nranks": None, "bytes": None, "iters": None, "warmup": None,
                 "pairs": "absent", "time_us": None, "time_us_min": None, "time_us_max": None,
                 "slowest_rank": "absent", "algbw_gbps": None, "busbw_gbps": None,
                 "volume": None, "wrong": "null", **SPREAD},
}
PAIRS = {"collective": {}, "pingpong": {"pair": "null", "slowest_pair": "absent",
                                        "first_bad_pair": "null"}}
RANK_GROUPS = {  # known flag -> (JSON key, ranks column) ...
    "measured_known": [(k, k) for k in ("sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs")],
    "theory_known": [("theory_" + k, "theory_" + k)
                     for k in ("sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs")],
    "traffic_known": [(k, k) for k in ("sent_intra_node_bytes", "sent_inter_node_bytes")],
    "theory_traffic_known": [(k, k) for k in ("theory_sent_intra_node_bytes",
                                              "theory_sent_inter_node_bytes")],
    "nodes_known": [("node_of_rank", "node")],
    "copies_known": [(k, k) for k in ("copy_to_host_bytes", "copy_to_device_bytes",
                                      "copy_from_peer_bytes", "reduced_from_peer_bytes")],
    "theory_copies_known": [("theory_" + k, "theory_" + k)
                            for k in ("copy_to_host_bytes", "copy_to_device_bytes",
                                      "copy_from_peer_bytes", "reduced_from_peer_bytes")],
}
POOLS = {  # pool -> (missing, N x N nested in JSON)
    "collective": {"times_us": (None, False), "traffic_bytes": ("null", False),
                   "splits": ("absent", False), "theory_traffic_bytes": ("null", False)},
    "pingpong": {"times_us": ("absent", False), "traffic_bytes": (None, False),
                 "latency_us_matrix": ("absent", True), "bw_gbps_matrix": ("absent", True)},
}
LAYER_SCALARS = {  # /layer/rows
    **{c: None for c in ("layer", "program", "scheme", "transport", "nranks", "tp", "cp", "pp",
                         "dp", "ep", "etp", "sp", "dtype", "passes", "shape", "seed",
                         "algorithms", "iters", "warmup", "time_us", "time_us_min",
                         "time_us_max", "compute_us", "comm_us", "pass", "verified", "volume",
                         "volume_error", "textbook_source", "textbook_formula", "textbook_elements",
                         "textbook_bytes", "textbook_explanation",
                         # version 4
                         "memory", "path", "wait", "device_runtime", "gemm", "gpu", "overlap",
                         "exposed_comm_us", "hidden_comm_us", "gemm_us", "gemm_flop")},
    "rel_l2_error": "null", "max_abs_error": "null", "tolerance": "null",
    "textbook_exact_sent_bytes": "null", "textbook_exact_over_formula": "null",
    "gemm_tflops": "null",
    **SPREAD,  # version 5
}
FIGURE_KEYS = ("source", "formula", "elements", "bytes", "explanation", "exact_sent_bytes",
             "exact_over_formula")
LAYER_RANK_GROUPS = {"measured_known": ("sent_bytes", "recv_bytes"),
                     "theory_known": ("theory_sent_bytes", "theory_recv_bytes")}
SITE_SCALARS = {**{c: None for c in ("site", "collective", "algorithm", "group", "group_size",
                                     "count", "dtype", "bytes", "closed_form", "volume")},
                "op": "absent", "closed_form_sent_bytes": "null",
                "time_us": "null", "exposed_us": "null"}  # version 4
CHECK_SCALARS = {**{c: None for c in ("tensor", "tolerance", "reduction_length", "finite",
                                      "pass")},
                 "rel_l2_error": "null", "max_abs_error": "null", "max_abs_tolerance": "null"}


def plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    return float(value)


def is_missing(v):
    """-1 (integers), NaN (doubles) or "" (text) stand for a missing value."""
    if isinstance(v, str):
        return v == ""
    if isinstance(v, float):
        return math.isnan(v)
    return not isinstance(v, bool) and v == -1


def scalar(row, column, missing):
    v = plain(row[column])
    return missing if missing and is_missing(v) else v


def put(out, key, value, missing):
    if value == "absent":
        return
    out[key] = None if value == "null" else value


def decode(f, group, row):
    out = {}
    for column, missing in SCALARS[group].items():
        put(out, column, scalar(row, column, missing), missing)
    for key, missing in PAIRS[group].items():
        a, b = int(row[key + "_a"]), int(row[key + "_b"])
        put(out, key, missing if (a, b) == (-1, -1) else [a, b], missing)
    env = plain(row["transport_env"])
    out["transport_env"] = env.split("\n") if env else []
    ranks = f[f"{group}/ranks"][row["ranks_offset"]:row["ranks_offset"] + row["ranks_count"]]
    for known, columns in RANK_GROUPS.items():
        if known not in row.dtype.names:
            continue
        for key, column in columns:
            if row[known]:
                out[key] = [int(v) for v in ranks[column]]
            else:
                out[key] = [] if known == "nodes_known" else None
    n = int(row["nranks"])
    for pool, (missing, square) in POOLS[group].items():
        offset, count = int(row[pool + "_offset"]), int(row[pool + "_count"])
        if offset < 0:
            put(out, pool, missing, missing)
            continue
        values = [plain(v) for v in f[f"{group}/{pool}"][offset:offset + count]]
        out[pool] = [values[i * n:(i + 1) * n] for i in range(n)] if square else values
    return out


def scalars(row, columns):
    out = {}
    for column, missing in columns.items():
        put(out, column, scalar(row, column, missing), missing)
    return out


def rank_groups(row, ranks):
    out = {}
    for known, keys in LAYER_RANK_GROUPS.items():
        for key in keys:
            out[key] = [int(v) for v in ranks[key]] if row[known] else None
    return out


def decode_layer(f, row, index):
    """/layer/rows[index] back to its JSON record, by SCHEMA.md's "/layer" rules; checks
    that its records name it (`row`, `site`)."""
    out = scalars(row, LAYER_SCALARS)
    out["shape"], out["algorithms"] = json.loads(out["shape"]), json.loads(out["algorithms"])
    out["textbook_figure"] = {k: out.pop("textbook_" + k) for k in FIGURE_KEYS}
    env = plain(row["transport_env"])
    out["transport_env"] = env.split("\n") if env else []
    ranks = f["layer/ranks"][row["ranks_offset"]:][:row["ranks_count"]]
    expect(list(ranks["row"]) == [index] * len(ranks) and list(ranks["rank"]) == list(range(len(ranks))),
           f"layer row {index}: its ranks records")
    out.update(rank_groups(row, ranks))
    out["times_us"] = [float(v) for v in f["layer/times_us"][row["times_us_offset"]:][:row["times_us_count"]]]
    out["collectives"] = []
    for k, site in enumerate(f["layer/sites"][row["sites_offset"]:][:row["sites_count"]]):
        expect(site["row"] == index, f"layer row {index}: its site's row is {site['row']}")
        ranks = f["layer/site_ranks"][site["ranks_offset"]:][:site["ranks_count"]]
        expect(len(ranks) == row["nranks"], "one site rank record per rank")
        expect(list(ranks["site"]) == [row["sites_offset"] + k] * len(ranks), f"layer row {index}: site ranks")
        out["collectives"].append({**scalars(site, SITE_SCALARS), **rank_groups(site, ranks)})
    checks = f["layer/checks"][row["checks_offset"]:][:row["checks_count"]]
    expect(list(checks["row"]) == [index] * len(checks), f"layer row {index}: its checks' row")
    out["checks"] = [scalars(c, CHECK_SCALARS) for c in checks]
    return out


def read_with_h5py(path):
    with h5py.File(path, "r") as f:
        result = {"schema_version": int(f.attrs["collscope_schema_version"]), "runs": []}
        for run in f["runs"][:]:
            if run["run_id"] >= 0:
                result["runs"].append({name: plain(run[name]) for name in run.dtype.names})
        for group in SCALARS:
            rows = f[f"{group}/rows"][:]
            result[group] = [{"run_id": int(r["run_id"]), "fields": decode(f, group, r)}
                             for r in rows if r["run_id"] >= 0]
        rows = f["layer/rows"][:] if "layer" in f else []  # no /layer: no layer rows
        result["layer"] = [{"run_id": int(r["run_id"]), "fields": decode_layer(f, r, i)}
                           for i, r in enumerate(rows) if r["run_id"] >= 0]
        return result


# ---- helpers ------------------------------------------------------------------------------

class Env:
    def __init__(self, args):
        self.tool, self.merge_script, self.h5dump = args.tool, args.merge, args.h5dump
        self.dir = tempfile.mkdtemp(prefix="collscope_results_py_")

    def path(self, name):
        return os.path.join(self.dir, name)

    def run(self, *cmd, expect=0):
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)
        if expect is not None and p.returncode != expect:
            raise AssertionError(f"{' '.join(map(str, cmd))}: exit {p.returncode}, expected {expect}\n"
                                 f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
        return p

    def dump(self, path):
        return json.loads(self.run(self.tool, "dump", path).stdout)

    def check(self, path):
        out = self.run(self.tool, "check", path).stdout.split()
        return {out[i]: int(out[i + 1]) for i in range(0, len(out), 2)}

    def merge(self, *args, expect=0):
        return self.run(sys.executable, self.merge_script, *args, expect=expect)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def read_everything(path):
    """h5py opens the file and reads every dataset whole."""
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                obj[:]
        f.visititems(visit)


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


# ---- the groups ---------------------------------------------------------------------------

def test_h5py(env):
    path = env.path("two_runs.h5")
    env.run(env.tool, "write", path, "allreduce_ring", 0, 10)
    env.run(env.tool, "write", path, "pingpong", 10, 7)
    want = env.dump(path)
    got = read_with_h5py(path)
    expect(len(want["collective"]) == 17 and len(want["pingpong"]) == 17, "rows missing")
    expect(len(want["layer"]) == 17, "layer rows missing")
    for group in ("collective", "pingpong", "layer"):
        for i, (w, g) in enumerate(zip(want[group], got[group])):
            expect(w == g, f"{group} row {i}: C++ reads\n{w}\nh5py reads\n{g}")
    expect(len(got["runs"]) == 2, "two runs")
    for w, g in zip(want["runs"], got["runs"]):
        g = dict(g, hosts=g["hosts"].split(",") if g["hosts"] else [])
        expect(w == g, f"run attributes: C++ reads\n{w}\nh5py reads\n{g}")
    expect(got["runs"][1]["program"] == "pingpong", "the second run's program")
    lines = [l for l in run_schema_example(path) if l.startswith(("allreduce_ring ", "pingpong "))]
    expect(len(lines) == 17 and lines[0].startswith("allreduce_ring 1000 "), f"SCHEMA.md's example: {lines[:2]}")
    lines = run_schema_example(path, 1)
    rows = [l for l in lines if l.startswith(("tp_mlp ", "dp_grad "))]
    sites = sum(len(r["fields"]["collectives"]) for r in got["layer"])
    checks = sum(len(r["fields"]["checks"]) for r in got["layer"])
    expect(len(rows) == 17 and sum(l.startswith("  site ") for l in lines) == sites
           and sum(l.startswith("  check ") for l in lines) == checks and sites and checks,
           f"SCHEMA.md's /layer example: {lines[:4]}")
    expect(rows[0] == "tp_mlp {'B': 2, 'F': 128, 'H': 32, 'S': 8, 'T': 16} True [2] []",
           f"SCHEMA.md's /layer example: {rows[0]}")
    with h5py.File(path, "r") as f:  # the offsets SCHEMA.md promises, checked directly
        rows, sites = f["layer/rows"][:], f["layer/sites"][:]
        expect(list(rows["sites_offset"]) == list(np.cumsum(rows["sites_count"]) - rows["sites_count"]),
               "sites follow their rows")
        expect(all(sites["row"] == np.repeat(np.arange(len(rows)), rows["sites_count"])), "sites' row")
        expect(all(f["layer/site_ranks"][:]["site"] == np.repeat(np.arange(len(sites)), sites["ranks_count"])),
               "site_ranks' site")
    print(f"h5py: {len(got['collective'])} + {len(got['pingpong'])} + {len(got['layer'])} rows, "
          "2 runs, every field")


def run_schema_example(path, which=0):
    """Runs h5py example `which` of SCHEMA.md ("Reading with h5py") on `path`; returns what
    it prints."""
    schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "SCHEMA.md")
    text = open(schema).read()
    code = text.split("## Reading with h5py", 1)[1].split("```python\n")[1 + which].split("```", 1)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code.replace('"sweep.h5"', repr(path)), {})
    return out.getvalue().splitlines()


def test_h5dump(env):
    path = env.path("dump.h5")
    env.run(env.tool, "write", path, "allreduce_ring", 0, 4)
    out = env.run(env.h5dump, path).stdout
    for text in ('"collscope results"', 'DATASET "rows"', 'DATASET "runs"', '"allreduce_ring"',
                 '"ring"', '"UCX_TLS=shm,self', 'GROUP "layer"', 'DATASET "site_ranks"',
                 '"fwd fc2 allreduce Y [T,H] #3"', '"dW1"'):
        expect(text in out, f"h5dump output lacks {text}")
    env.run(env.h5dump, "-H", "-B", path)
    print(f"h5dump: {len(out.splitlines())} lines")


def kill_after(env, path, rows, first):
    """Starts a writer that appends forever, SIGKILLs it once it has finished `rows`
    rows plus a random moment (often inside an HDF5 call); returns the rows it finished."""
    p = subprocess.Popen([env.tool, "forever", path, str(first)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    done = 0
    for line in p.stdout:
        done += line.startswith("done")
        if done >= rows:
            break
    time.sleep(random.uniform(0, 0.003))
    p.kill()
    rest, err = p.stdout.read(), p.stderr.read()  # through the same buffers as above
    p.wait()
    expect(err == "", f"the writer failed: {err}")
    return done + rest.count("done")


def referenced(length, offsets, counts):
    mask = np.zeros(length, dtype=bool)
    for o, c in zip(offsets, counts):
        mask[o:o + c] = True
    return mask


def check_layer_orphans(path):
    """Every /layer record a finished row refers to names it; every other one is marked
    -1 (what a killed writer left, marked by the next one)."""
    with h5py.File(path, "r") as f:
        rows = f["layer/rows"][:]
        rows = rows[rows["run_id"] >= 0]
        sites = f["layer/sites"][:]
        used_sites = referenced(len(sites), rows["sites_offset"], rows["sites_count"])
        site_ranks = f["layer/site_ranks"][:]
        used = {"sites": (sites["row"], used_sites),
                "checks": (f["layer/checks"][:]["row"],
                           referenced(len(f["layer/checks"]), rows["checks_offset"], rows["checks_count"])),
                "ranks": (f["layer/ranks"][:]["row"],
                          referenced(len(f["layer/ranks"]), rows["ranks_offset"], rows["ranks_count"])),
                "site_ranks": (site_ranks["site"],
                               referenced(len(site_ranks), sites["ranks_offset"][used_sites],
                                          sites["ranks_count"][used_sites]))}
        for name, (parent, mask) in used.items():
            expect((parent[mask] >= 0).all(), f"/layer/{name}: a used record marked -1")
            expect((parent[~mask] == -1).all(), f"/layer/{name}: {int((parent[~mask] != -1).sum())} "
                   "unused records not marked -1")
        return {name: int((~mask).sum()) for name, (_, mask) in used.items()}


def test_crash(env):
    random.seed(int(os.environ.get("COLLSCOPE_TEST_SEED", time.time())))
    path = env.path("killed.h5")
    finished = 0
    kills = int(os.environ.get("COLLSCOPE_CRASH_KILLS", "25"))
    for k in range(kills):
        done = kill_after(env, path, random.randint(0, 150), k * 100000)
        finished += done
        counts = env.check(path)  # every row equals the one written, run ids valid
        expect(counts["runs"] == k + 1, f"kill {k}: {counts['runs']} runs")
        expect(counts["bad"] == 0, f"kill {k}: {counts}")
        for group in ("collective", "pingpong", "layer"):
            expect(finished <= counts[group] <= finished + k + 1,
                   f"kill {k}: {counts[group]} {group} rows, {finished} finished")
        read_everything(path)
        env.run(env.h5dump, "-H", path)
    env.run(env.h5dump, path)
    env.run(env.tool, "write", path, "after", 10**7, 3)
    counts = env.check(path)
    expect(counts["runs"] == kills + 1, "the run after the kills")
    expect(len(read_with_h5py(path)["layer"]) == counts["layer"], "h5py reads every layer row")
    orphans = check_layer_orphans(path)
    print(f"crash: {kills} kills, {finished} finished rows kept, {counts}, /layer records left "
          f"unused (marked -1): {orphans}")


def test_merge(env):
    a, b, m = env.path("a.h5"), env.path("b.h5"), env.path("m.h5")
    env.run(env.tool, "write", a, "allreduce_ring", 0, 5)
    env.run(env.tool, "write", a, "alltoallv_pairwise", 5, 3)
    env.run(env.tool, "write", b, "pingpong", 100, 4)
    kill_after(env, b, 20, 200)  # a killed run too: its orphans stay behind
    da, db = env.dump(a), env.dump(b)
    env.merge(m, a, b)
    dm = env.dump(m)
    runs_a = len(da["runs"])
    expect([r["run_uuid"] for r in dm["runs"]] == [r["run_uuid"] for r in da["runs"] + db["runs"]],
           "every run, in order")
    for r_m, r_in in zip(dm["runs"], da["runs"] + db["runs"]):
        expect({**r_m, "run_id": 0} == {**r_in, "run_id": 0}, f"run attributes changed: {r_in}")
    for group in ("collective", "pingpong", "layer"):
        want = da[group] + [{"run_id": r["run_id"] + runs_a, "fields": r["fields"]} for r in db[group]]
        expect(dm[group] == want, f"{group} rows differ after the merge")
    expect(len(dm["layer"]) > 8, "layer rows merged")
    hm = read_with_h5py(m)
    expect(hm["collective"] == dm["collective"] and hm["layer"] == dm["layer"], "h5py reads the merged file")
    env.run(env.h5dump, "-H", m)

    before = open(m, "rb").read()
    p = env.merge(m, a, b, expect=2)
    expect("--force" in p.stderr and open(m, "rb").read() == before, "OUT exists: refused, unchanged")
    env.merge("--force", m, b)
    expect(len(env.dump(m)["runs"]) == len(db["runs"]), "--force replaces OUT")

    p = env.merge(env.path("twice.h5"), a, a, expect=2)
    expect("in both" in p.stderr, f"one run twice: {p.stderr}")

    future = env.path("future.h5")
    shutil.copy(b, future)
    with h5py.File(future, "r+") as f:
        f.attrs["collscope_schema_version"] = np.int32(99)  # a version no build reads yet
    saved = open(future, "rb").read()
    for inputs in ((a, future), (future,)):
        p = env.merge(env.path("mixed.h5"), *inputs, expect=2)
        expect("schema version" in p.stderr, f"mixed versions: {p.stderr}")
    expect(open(future, "rb").read() == saved, "the other version's file is untouched")

    text = env.path("notes.h5")
    with open(text, "w") as f:
        f.write("not HDF5\n")
    p = env.merge(env.path("bad.h5"), a, text, expect=2)
    expect("not an HDF5 file" in p.stderr, p.stderr)
    p = env.merge(env.path("no/dir/out.h5"), a, expect=3)
    expect(p.stderr.count("\n") == 1, f"one line: {p.stderr}")
    leftovers = [n for n in os.listdir(env.dir) if n.startswith(("mixed", "bad", "twice")) or ".tmp" in n]
    expect(not leftovers, f"nothing left behind: {leftovers}")

    env.run(env.tool, "write", m, "after_merge", 500, 2)  # the writer appends to a merged file
    counts = env.check(m)
    expect(counts["runs"] == len(db["runs"]) + 1 and counts["bad"] == 0, f"append after merge: {counts}")
    layers = merge_with_and_without_layer(env)
    print(f"merge: {len(dm['runs'])} runs, {len(dm['collective'])} + {len(dm['pingpong'])} + "
          f"{len(dm['layer'])} rows; {layers}")


def remove_layer(path):
    """Makes `path` a file from before /layer (schema 1 all the same)."""
    with h5py.File(path, "r+", libver=("earliest", "v108")) as f:
        del f["layer"]


def merge_with_and_without_layer(env):
    old, new, killed = env.path("old.h5"), env.path("new.h5"), env.path("killed.h5")
    env.run(env.tool, "write", old, "before_layer", 1000, 3)
    remove_layer(old)
    env.run(env.tool, "write", new, "layer_tp_mlp", 2000, 4)
    kill_after(env, killed, 5, 3000)  # orphaned sites, site ranks and checks to drop
    do, dn, dk = env.dump(old), env.dump(new), env.dump(killed)
    expect(do["layer"] == [] and len(dn["layer"]) == 4 and len(dk["layer"]) >= 5, "the inputs")
    for order in ((old, new, killed), (new, old, killed)):
        out = env.path("layered.h5")
        env.merge("--force", out, *order)
        got, offset, want = env.dump(out), 0, {"collective": [], "layer": []}
        for d in ({old: do, new: dn, killed: dk}[p] for p in order):
            for group in want:
                want[group] += [{"run_id": r["run_id"] + offset, "fields": r["fields"]} for r in d[group]]
            offset += len(d["runs"])
        for group in want:
            expect(got[group] == want[group], f"{group} rows after merging {order}")
        expect(read_with_h5py(out)["layer"] == got["layer"], "h5py reads the merged layer rows")
        counts = env.check(out)
        expect(counts["layer"] == len(want["layer"]) and counts["bad"] == 0, f"merged: {counts}")
    only_old = env.path("only_old.h5")
    env.merge(only_old, old)
    with h5py.File(only_old, "r") as f:
        expect("layer" not in f, "no input has /layer: nor has OUT")
    expect(read_with_h5py(only_old)["layer"] == [], "no /layer: no layer rows")
    env.run(env.tool, "write", only_old, "first_layer_rows", 4000, 2)  # /layer made now
    counts = env.check(only_old)
    expect(counts["layer"] == 2 and counts["bad"] == 0, f"layer rows appended: {counts}")
    env.run(env.h5dump, only_old)
    return f"with and without /layer: {counts}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("group", choices=["h5py", "h5dump", "crash", "merge"])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--merge", required=True)
    parser.add_argument("--h5dump", required=True)
    args = parser.parse_args()
    env = Env(args)
    try:
        {"h5py": test_h5py, "h5dump": test_h5dump, "crash": test_crash, "merge": test_merge}[args.group](env)
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        print(f"(files kept in {env.dir})", file=sys.stderr)
        return 1
    shutil.rmtree(env.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
