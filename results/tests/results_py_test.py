#!/usr/bin/python3
"""Results files from the outside (results/SCHEMA.md):

  h5py    h5py reads back, by SCHEMA.md's rules alone, every field the C++ reader sees
  h5dump  h5dump reads the whole file
  crash   a writer killed with SIGKILL, again and again, leaves a file that h5py, h5dump
          and the C++ reader open, with every row it finished; a new run appends after
  merge   scripts/merge joins files, keeps every run and row, refuses what it must

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

SCALARS = {  # column -> how the JSON says "no value": None (never), "null" or "absent"
    "collective": {"collective": None, "algorithm": None, "transport": None, "memory": None,
                   "dtype": None, "op": None, "root": None, "nranks": None, "count": None,
                   "bytes": None, "in_place": None, "split": "absent", "iters": None,
                   "warmup": None, "time_us": None, "time_us_min": None, "time_us_max": None,
                   "algbw_gbps": None, "busbw_gbps": None, "volume": None, "wrong": "null",
                   "first_bad_rank": None, "first_bad_index": None, "predicted_us": "null",
                   "model": None, "seed_sent_bytes": "null", "seed_formula": None},
    "pingpong": {"collective": None, "algorithm": None, "transport": None, "memory": None,
                 "nranks": None, "bytes": None, "iters": None, "warmup": None,
                 "pairs": "absent", "time_us": None, "time_us_min": None, "time_us_max": None,
                 "slowest_rank": "absent", "algbw_gbps": None, "busbw_gbps": None,
                 "volume": None, "wrong": "null"},
}
PAIRS = {"collective": {}, "pingpong": {"pair": "null", "slowest_pair": "absent",
                                        "first_bad_pair": "null"}}
RANK_GROUPS = {  # known flag -> (JSON key, ranks column) ...
    "measured_known": [(k, k) for k in ("sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs")],
    "theory_known": [("theory_" + k, "theory_" + k)
                     for k in ("sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs")],
    "traffic_known": [(k, k) for k in ("sent_intra_node_bytes", "sent_inter_node_bytes")],
    "nodes_known": [("node_of_rank", "node")],
}
POOLS = {  # pool -> (missing, N x N nested in JSON)
    "collective": {"times_us": (None, False), "traffic_bytes": ("null", False),
                   "splits": ("absent", False)},
    "pingpong": {"times_us": ("absent", False), "traffic_bytes": (None, False),
                 "latency_us_matrix": ("absent", True), "bw_gbps_matrix": ("absent", True)},
}


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
    for group in ("collective", "pingpong"):
        for i, (w, g) in enumerate(zip(want[group], got[group])):
            expect(w == g, f"{group} row {i}: C++ reads\n{w}\nh5py reads\n{g}")
    expect(len(got["runs"]) == 2, "two runs")
    for w, g in zip(want["runs"], got["runs"]):
        g = dict(g, hosts=g["hosts"].split(",") if g["hosts"] else [])
        expect(w == g, f"run attributes: C++ reads\n{w}\nh5py reads\n{g}")
    expect(got["runs"][1]["program"] == "pingpong", "the second run's program")
    lines = [l for l in run_schema_example(path) if l.startswith(("allreduce_ring ", "pingpong "))]
    expect(len(lines) == 17 and lines[0].startswith("allreduce_ring 1000 "), f"SCHEMA.md's example: {lines[:2]}")
    print(f"h5py: {len(got['collective'])} + {len(got['pingpong'])} rows, 2 runs, every field")


def run_schema_example(path):
    """Runs the h5py example of SCHEMA.md on `path`; returns what it prints."""
    schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "SCHEMA.md")
    text = open(schema).read()
    code = text.split("## Reading with h5py", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code.replace('"sweep.h5"', repr(path)), {})
    return out.getvalue().splitlines()


def test_h5dump(env):
    path = env.path("dump.h5")
    env.run(env.tool, "write", path, "allreduce_ring", 0, 4)
    out = env.run(env.h5dump, path).stdout
    for text in ('"collscope results"', 'DATASET "rows"', 'DATASET "runs"', '"allreduce_ring"',
                 '"ring"', '"UCX_TLS=shm,self'):
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
        for group in ("collective", "pingpong"):
            expect(finished <= counts[group] <= finished + k + 1,
                   f"kill {k}: {counts[group]} {group} rows, {finished} finished")
        read_everything(path)
        env.run(env.h5dump, "-H", path)
    env.run(env.h5dump, path)
    env.run(env.tool, "write", path, "after", 10**7, 3)
    counts = env.check(path)
    expect(counts["runs"] == kills + 1, "the run after the kills")
    print(f"crash: {kills} kills, {finished} finished rows kept, {counts}")


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
    for group in ("collective", "pingpong"):
        want = da[group] + [{"run_id": r["run_id"] + runs_a, "fields": r["fields"]} for r in db[group]]
        expect(dm[group] == want, f"{group} rows differ after the merge")
    expect(read_with_h5py(m)["collective"] == dm["collective"], "h5py reads the merged file")
    env.run(env.h5dump, "-H", m)

    before = open(m, "rb").read()
    p = env.merge(m, a, b, expect=2)
    expect("--force" in p.stderr and open(m, "rb").read() == before, "OUT exists: refused, unchanged")
    env.merge("--force", m, b)
    expect(len(env.dump(m)["runs"]) == len(db["runs"]), "--force replaces OUT")

    p = env.merge(env.path("twice.h5"), a, a, expect=2)
    expect("in both" in p.stderr, f"one run twice: {p.stderr}")

    v2 = env.path("v2.h5")
    shutil.copy(b, v2)
    with h5py.File(v2, "r+") as f:
        f.attrs["collscope_schema_version"] = np.int32(2)
    saved = open(v2, "rb").read()
    for inputs in ((a, v2), (v2,)):
        p = env.merge(env.path("mixed.h5"), *inputs, expect=2)
        expect("schema version" in p.stderr, f"mixed versions: {p.stderr}")
    expect(open(v2, "rb").read() == saved, "the other version's file is untouched")

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
    print(f"merge: {len(dm['runs'])} runs, {len(dm['collective'])} + {len(dm['pingpong'])} rows")


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
