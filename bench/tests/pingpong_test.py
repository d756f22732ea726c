#!/usr/bin/env python3
"""End-to-end tests of the pingpong binary through mpirun: the N x N matrices of
--pairs all, the exact per-rank volume of one pair, bad input (exit code 2, one line),
the -J and -O files, and the failure paths (a corrupted payload exits 1, a stalled rank exits 3);
the concurrent patterns (--pattern rounds | ring): exact per-pair volume, exact payloads,
their matrices in JSON and HDF5, and their failure paths.

usage: pingpong_test.py BIN_DIR GROUP   (GROUP: matrix | volume | bad_input | json_file | h5_file |
                                          faults | patterns | pattern_faults)
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from collscope.checks import check, failures
from collscope.runtime_noise import without_runtime_noise

BIN = sys.argv[1]
PINGPONG = os.path.join(BIN, "pingpong")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
FAST = ["-n", "3", "-w", "1"]


def run(args, np=2, env=None, timeout=60):
    extra = env or {}
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np)]
    for name in extra:
        cmd += ["-x", name]
    cmd += [os.path.join(BIN, "pingpong")] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, **extra),
                       timeout=timeout)
    return p.returncode, p.stdout, without_runtime_noise(p.stderr)


def json_rows(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def positive_finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def check_matrix(m, n, name):
    check(len(m) == n and all(len(row) == n for row in m), f"{name}: {n} x {n}")
    check(all(m[i][i] == 0 for i in range(n)), f"{name}: diagonal 0 (not measured, self)")
    off = [m[i][j] for i in range(n) for j in range(n) if i != j]
    check(all(positive_finite(x) for x in off), f"{name}: off-diagonal positive and finite {off}")
    check(all(m[i][j] == m[j][i] for i in range(n) for j in range(n)), f"{name}: symmetric")


def test_matrix():
    code, out, err = run(["-b", "1K", "-e", "4K", "-f", "4", "--pairs", "all", "--format", "jsonl"]
                         + FAST, np=4)
    check(code == 0, f"--pairs all: exit 0 (got {code}: {err.strip()})")
    rows = json_rows(out)
    check([r["bytes"] for r in rows] == [1024, 4096], "--pairs all: one record per size")
    for r in rows:
        what = f"--pairs all, {r['bytes']} B"
        check(r["pairs"] == "all" and r["pair"] is None and r["nranks"] == 4, f"{what}: pairs all")
        check_matrix(r["latency_us_matrix"], 4, f"{what}: latency_us_matrix")
        check_matrix(r["bw_gbps_matrix"], 4, f"{what}: bw_gbps_matrix")
        lat = [r["latency_us_matrix"][i][j] for i in range(4) for j in range(4) if i != j]
        check(r["time_us_min"] == min(lat) and r["time_us_max"] == max(lat),
              f"{what}: time_us_min/max are the matrix's extremes")
        a, b = r["slowest_pair"]
        check(r["latency_us_matrix"][a][b] == max(lat), f"{what}: slowest_pair has the highest latency")
        # Every rank is in 3 of the 6 pairs: one probe each way per pair.
        check(r["sent_bytes"] == [3 * r["bytes"]] * 4 == r["theory_sent_bytes"]
              and r["recv_bytes"] == r["theory_recv_bytes"] and r["volume"] == "ok"
              and r["wrong"] == 0, f"{what}: volume of all probes equals theory, nothing wrong")
    code, out, _ = run(["-b", "64", "-e", "64", "--pairs", "all"] + FAST, np=3)
    rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
    check(code == 0 and len(rows) == 1 and rows[0][1] == "3" and rows[0][-1] == "ok",
          f"--pairs all table: one summary row over 3 pairs (got {rows})")


def test_volume():
    code, out, err = run(["-b", "0", "-e", "4K", "-f", "64", "--pairs", "2,1", "--format", "jsonl"]
                         + FAST, np=4)
    check(code == 0, f"--pairs 2,1: exit 0 (got {code}: {err.strip()})")
    rows = json_rows(out)
    check([r["bytes"] for r in rows] == [0, 1, 64, 4096], "--pairs 2,1: sizes 0, 1, 64, 4096")
    for r in rows:
        n, size = r["bytes"], 4
        want = [n if rank in (1, 2) else 0 for rank in range(size)]
        msgs = [1 if rank in (1, 2) else 0 for rank in range(size)]  # 0 B: one empty signal
        traffic = [0] * 16
        traffic[2 * 4 + 1] = traffic[1 * 4 + 2] = n
        what = f"--pairs 2,1, {n} B"
        check(r["pair"] == [2, 1] and r["collective"] == "pingpong" and r["algorithm"] == "pingpong"
              and r["transport"] == "mpi" and r["nranks"] == 4 and r["iters"] == 3
              and len(r["times_us"]) == 3 and len(r["node_of_rank"]) == 4, f"{what}: fields")
        check(r["sent_bytes"] == r["recv_bytes"] == want == r["theory_sent_bytes"]
              == r["theory_recv_bytes"], f"{what}: only ranks 1 and 2 moved {n} B (got {r['sent_bytes']})")
        check(r["sent_msgs"] == r["recv_msgs"] == msgs == r["theory_sent_msgs"],
              f"{what}: one message each way (got {r['sent_msgs']})")
        check(r["traffic_bytes"] == traffic and r["volume"] == "ok" and r["wrong"] == 0,
              f"{what}: traffic only between 1 and 2, volume ok, nothing wrong")
        check(r["time_us_min"] <= r["time_us"] <= r["time_us_max"] and r["time_us_min"] > 0
              and r["busbw_gbps"] == r["algbw_gbps"]
              and (n == 0 or math.isclose(r["algbw_gbps"], n / (r["time_us"] * 1e3))),
              f"{what}: min <= median <= max, bw = bytes / time")
    code, out, _ = run(["-b", "8", "-e", "1K", "-f", "128"] + FAST)
    rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
    check(code == 0 and [r[0] for r in rows] == ["8", "1024"]
          and all(r[1] == "0,1" and r[-2] == "0" and r[-1] == "ok" for r in rows),
          f"default pair 0,1 in the table, #wrong 0, volume ok (got {rows})")


BAD_INPUT = [  # (args, ranks, message pattern)
    (["-t", "nccl"], (2,), r"-t nccl moves GPU memory: it needs -m device"),
    (["-m", "gpu"], (2,), r"--memory must be host or device"),
    (["--path", "ipc"], (2,), r"--path and --device-map apply to -m device"),
    (["--pairs", "0,0"], (2, 3), r"--pairs 0,0: the two ranks must differ"),
    (["--pairs", "0,9"], (2, 3), r"--pairs 0,9: rank 9 is out of range for \d ranks"),
    (["--pairs", "x"], (1, 3), r"bad --pairs 'x'"),
    (["--pairs", "1,"], (3,), r"bad --pairs '1,'"),
    ([], (1,), r"pingpong needs at least 2 ranks, got 1"),
    (["--pairs", "all"], (1,), r"pingpong needs at least 2 ranks, got 1"),
    (["--bogus"], (3,), r"--bogus"),
    (["-b", "12Q"], (3,), r"bad size '12Q' for --min-bytes"),
    (["-b", "1M", "-e", "1K"], (3,), r"larger than --max-bytes"),
    (["-n", "0"], (3,), r"--iters must be at least 1"),
    (["-c", "2"], (3,), r"--check must be 0 or 1"),
    (["-t", "carrier-pigeon"], (3,), r"unknown transport"),
    (["--pattern", "bogus"], (3,), r"bad --pattern 'bogus' \(expected pairs, rounds or ring\)"),
    (["--pattern", "RING"], (3,), r"bad --pattern 'RING'"),
    (["--pattern", ""], (3,), r"bad --pattern ''"),
    (["--pattern", "ring", "--pairs", "0,1"], (3,),
     r"--pattern ring measures every pair: --pairs must be all or left out"),
    (["--pattern", "rounds", "--pairs", "2,1"], (3,),
     r"--pattern rounds measures every pair: --pairs must be all or left out"),
    (["--pattern", "rounds", "--pairs", "x"], (3,), r"bad --pairs 'x'"),
    (["--pattern", "rounds"], (1,), r"pingpong needs at least 2 ranks, got 1"),
    (["--pattern", "ring"], (1,), r"pingpong needs at least 2 ranks, got 1"),
    (["--pattern"], (3,), r"--pattern"),
]


def test_bad_input():
    for args, nps, pattern in BAD_INPUT:
        for np in nps:
            code, out, err = run(args, np=np)
            lines = [l for l in err.splitlines() if l.strip()]
            what = f"pingpong {' '.join(args)} (np {np})"
            check(code == 2, f"{what}: exit code 2 (got {code})")
            check(len(lines) == 1 and lines[0].startswith("pingpong: error: ")
                  and re.search(pattern, lines[0]) is not None,
                  f"{what}: one error line matching {pattern!r} (got {lines})")
            check(out.strip() == "", f"{what}: nothing on stdout")


def test_json_file():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "pp.jsonl")
        code, out, err = run(["-b", "8", "-e", "8K", "-f", "32", "--pairs", "all", "-J", path]
                             + FAST, np=3)
        check(code == 0, f"-J: exit 0 (got {code}: {err.strip()})")
        check(os.path.exists(path) and not os.path.exists(path + ".tmp"),
              "-J: the file is there, no .tmp left behind")
        rows = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
        table = [l for l in out.splitlines() if l.strip() and not l.startswith("#")]
        check([r["bytes"] for r in rows] == [8, 256, 8192] and len(table) == 3,
              f"-J: one complete record per size, as many as table rows ({len(rows)}, {len(table)})")
        check(all(len(r["latency_us_matrix"]) == 3 for r in rows), "-J: 3 x 3 matrices")
    code, _, err = run(["-b", "8", "-e", "8", "-J", "/nonexistent/dir/pp.jsonl"])
    check(code == 3 and "cannot write the JSON file '/nonexistent/dir/pp.jsonl'" in err,
          f"unwritable -J path: exit code 3 (got {code}, {err!r})")


def test_h5_file():
    import h5py  # Debian's python3-h5py (scripts/bootstrap installs it)
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        path, jpath = os.path.join(d, "pp.h5"), os.path.join(d, "pp.jsonl")
        args = ["-b", "8", "-e", "8K", "-f", "32", "--pairs", "all"] + FAST
        for _ in range(2):  # a second run appends to the same file
            code, _, err = run(args + ["-O", path, "-J", jpath], np=3)
            check(code == 0, f"-O: exit 0 (got {code}: {err.strip()})")
        js = [json.loads(l) for l in open(jpath)] if os.path.exists(jpath) else []
        with h5py.File(path, "r") as f:
            rows, runs = f["pingpong/rows"][:], f["runs"][:]
            check(len(runs) == 2 and all(r == b"pingpong" for r in runs["program"]),
                  f"-O: two runs of pingpong ({runs['program'] if len(runs) else []})")
            check(list(rows["bytes"]) == [8, 256, 8192] * 2 and list(rows["run_id"]) == [0] * 3 + [1] * 3,
                  f"-O: one row per size per run ({list(rows['bytes'])})")
            last = rows[-3:]
            for row, rec in zip(last, js):
                o, c = row["bw_gbps_matrix_offset"], row["bw_gbps_matrix_count"]
                m = f["pingpong/bw_gbps_matrix"][o:o + c].reshape(3, 3)
                check(c == 9 and np.array_equal(m, np.array(rec["bw_gbps_matrix"])),
                      f"-O: the {row['bytes']} B bandwidth matrix equals the JSON record's")
                check(row["time_us"] == rec["time_us"] and row["volume"] == rec["volume"].encode(),
                      f"-O: the {row['bytes']} B row's time and volume equal the JSON record's")
        foreign = os.path.join(d, "foreign.txt")
        open(foreign, "w").write("not hdf5\n")
        code, _, err = run(["-b", "8", "-e", "8", "-O", foreign])
        check(code != 0 and open(foreign).read() == "not hdf5\n" and len(err.strip().splitlines()) == 1,
              f"-O on a non-HDF5 file: refused in one line, left untouched (got {code}, {err!r})")
    code, _, err = run(["-b", "8", "-e", "8", "-O", "/nonexistent/dir/pp.h5"])
    check(code == 3 and len(err.strip().splitlines()) == 1 and "/nonexistent/dir/pp.h5" in err,
          f"unwritable -O path: exit code 3, one line naming it (got {code}, {err!r})")


def test_faults():
    code, out, _ = run(["-b", "64", "-e", "64", "--pairs", "all", "--format", "jsonl"] + FAST,
                       np=3, env={"COLLSCOPE_DEBUG_CORRUPT": "2"})
    rows = json_rows(out)
    check(code == 1 and len(rows) == 1 and rows[0]["wrong"] == 2
          and rows[0]["first_bad_pair"] == [0, 2],
          f"a corrupted payload: exit 1, wrong counted, first bad pair named (got {code}, {rows})")
    code, _, err = run(["-b", "8", "-e", "8", "--timeout", "1"], np=3,
                       env={"COLLSCOPE_DEBUG_STALL": "1:30"}, timeout=60)
    check(code == 3, f"stalled rank: exit code 3 (got {code})")
    check(re.search(r"pingpong: timeout: rank 0 stuck for more than 1\.0 s in pingpong/pairs, "
                    r"phase probe step 1, waiting to receive from rank 1", err) is not None,
          f"timeout message names rank, phase and peer: {err!r}")


def check_pattern_record(r, pattern, n, size):
    what = f"--pattern {pattern}, np {n}, {size} B"
    check(r["algorithm"] == pattern and r["collective"] == "pingpong" and r["pairs"] == "all"
          and r["pair"] is None and r["nranks"] == n and r["bytes"] == size,
          f"{what}: algorithm {pattern}, pairs all ({r['algorithm']}, {r['pairs']})")
    # Every ordered pair carries exactly one message of `size` bytes (0 B: one signal):
    # rounds, a round trip per pair; ring, one message per link direction per shift.
    want = [[0 if a == b else size for b in range(n)] for a in range(n)]
    got = [r["traffic_bytes"][a * n:(a + 1) * n] for a in range(n)]
    check(got == want, f"{what}: traffic_bytes[a][b] = {size} for every a != b (got {got})")
    check(r["sent_bytes"] == r["recv_bytes"] == r["theory_sent_bytes"] == r["theory_recv_bytes"]
          == [(n - 1) * size] * n, f"{what}: every rank sent and received (N-1) x {size} B, as theory")
    check(r["sent_msgs"] == r["recv_msgs"] == r["theory_sent_msgs"] == [n - 1] * n,
          f"{what}: N-1 messages per rank each way (got {r['sent_msgs']})")
    check(r["volume"] == "ok" and r["wrong"] == 0 and r["first_bad_pair"] is None,
          f"{what}: volume ok, payloads exact")
    lat, bw = r["latency_us_matrix"], r["bw_gbps_matrix"]
    for name, m in (("latency_us_matrix", lat), ("bw_gbps_matrix", bw)):
        off = [m[a][b] for a in range(n) for b in range(n) if a != b]
        zero_bw = name == "bw_gbps_matrix" and size == 0   # 0 bytes in any time
        check(len(m) == n and all(len(row) == n for row in m) and all(m[a][a] == 0 for a in range(n))
              and all(x == 0 if zero_bw else positive_finite(x) for x in off),
              f"{what}: {name} N x N, diagonal 0, rest {'0' if zero_bw else '> 0'}")
    if pattern == "rounds":
        check(all(lat[a][b] == lat[b][a] for a in range(n) for b in range(n)),
              f"{what}: rounds' latency matrix is symmetric (one round trip per pair)")
    if size > 0:
        check(all(math.isclose(bw[a][b], size / (lat[a][b] * 1e3), rel_tol=1e-9)
                  for a in range(n) for b in range(n) if a != b), f"{what}: bw = bytes / lat per link")
    flat = [lat[a][b] for a in range(n) for b in range(n) if a != b]
    check(r["time_us_min"] == min(flat) and r["time_us_max"] == max(flat),
          f"{what}: time_us_min/max are the matrix's extremes")


def printed_rounds(n):
    """`pingpong --print-rounds N`: the rounds the acceptance judge reads."""
    p = subprocess.run([PINGPONG, "--print-rounds", str(n)], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"--print-rounds {n}: exit 0 (got {p.returncode}: {p.stderr.strip()})")
    return [[tuple(pair) for pair in rd] for rd in json.loads(p.stdout)] if p.returncode == 0 else []


def test_printed_rounds():
    check(printed_rounds(4) == [[(0, 3), (1, 2)], [(1, 3), (0, 2)], [(2, 3), (0, 1)]],
          "--print-rounds 4: the circle method's three rounds")
    for n in range(2, 12):
        rounds = printed_rounds(n)
        pairs = [p for rd in rounds for p in rd]
        check(len(rounds) == n - 1 + n % 2 and sorted(pairs) == [(a, b) for a in range(n) for b in range(a + 1, n)]
              and all(len({x for p in rd for x in p}) == 2 * len(rd) for rd in rounds),
              f"--print-rounds {n}: every two ranks meet once, the pairs of a round disjoint")
    for bad in (["--print-rounds"], ["--print-rounds", "1"], ["--print-rounds", "x"],
                ["--print-rounds", "4", "-b", "8"]):
        p = subprocess.run([PINGPONG] + bad, capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and p.stderr.startswith("pingpong: error: --print-rounds needs")
              and len(p.stderr.splitlines()) == 1 and not p.stdout,
              f"{' '.join(bad)}: one line, exit 2 (got {p.returncode}: {p.stderr.strip()})")


def test_patterns():
    test_printed_rounds()
    for pattern in ("rounds", "ring"):
        for n in (2, 4, 5):
            code, out, err = run(["--pattern", pattern, "-b", "0", "-e", "4K", "-f", "64", "--format",
                                  "jsonl"] + FAST, np=n)
            check(code == 0, f"--pattern {pattern}, np {n}: exit 0 (got {code}: {err.strip()})")
            rows = json_rows(out)
            check([r["bytes"] for r in rows] == [0, 1, 64, 4096], f"--pattern {pattern}: one record per size")
            for r in rows:
                check_pattern_record(r, pattern, n, r["bytes"])
    code, out, _ = run(["--pattern", "ring", "--pairs", "all", "-b", "1K", "-e", "1K"] + FAST, np=3)
    rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
    check(code == 0 and "pattern ring" in out and len(rows) == 1 and rows[0][1] == "6" and rows[0][-1] == "ok",
          f"--pattern ring --pairs all table: one row over the 6 link directions (got {rows})")
    import h5py  # the patterns' records in HDF5: algorithm and the (non-symmetric) matrix
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        path, jpath = os.path.join(d, "pp.h5"), os.path.join(d, "pp.jsonl")
        for pattern in ("pingpong", "rounds", "ring"):
            flag = [] if pattern == "pingpong" else ["--pattern", pattern]
            code, _, err = run(flag + ["-b", "2K", "-e", "2K", "-O", path, "-J", jpath] + FAST, np=3)
            check(code == 0, f"-O --pattern {pattern}: exit 0 ({err.strip()})")
            with h5py.File(path, "r") as f:
                row = f["pingpong/rows"][-1]
                o, c = row["latency_us_matrix_offset"], row["latency_us_matrix_count"]
                m = f["pingpong/latency_us_matrix"][o:o + c].reshape(3, 3) if c else None
            rec = json.loads(open(jpath).read().splitlines()[-1])
            check(row["algorithm"] == pattern.encode() and row["pairs"] == (b"all" if flag else b"")
                  and (m is None if not flag else np.array_equal(m, np.array(rec["latency_us_matrix"]))),
                  f"-O --pattern {pattern}: algorithm and latency matrix as in the JSON record")


def test_pattern_faults():
    for pattern, n, bad in (("ring", 4, [1, 2]), ("rounds", 4, [1, 2]), ("ring", 5, [1, 2])):
        code, out, _ = run(["--pattern", pattern, "-b", "64", "-e", "64", "--format", "jsonl"] + FAST,
                           np=n, env={"COLLSCOPE_DEBUG_CORRUPT": "2"})
        rows = json_rows(out)
        # Rank 2 receives once per shift (ring) or once per round it plays (rounds): N-1 bytes.
        check(code == 1 and len(rows) == 1 and rows[0]["wrong"] == n - 1
              and rows[0]["first_bad_pair"] == bad and rows[0]["volume"] == "ok",
              f"--pattern {pattern}, np {n}, rank 2's payload corrupted: exit 1, {n - 1} bytes wrong, "
              f"first bad pair {bad} (got {code}, {rows})")
    for pattern in ("ring", "rounds"):
        code, _, err = run(["--pattern", pattern, "-b", "8", "-e", "8", "--timeout", "1"] + FAST, np=3,
                           env={"COLLSCOPE_DEBUG_STALL": "1:30"}, timeout=60)
        check(code == 3 and re.search(r"pingpong: timeout: rank 2 stuck for more than 1\.0 s in "
                                      rf"pingpong/{pattern}, phase probe step 0, waiting to receive "
                                      r"from rank 1", err) is not None,
              f"--pattern {pattern}, rank 1 stalled: exit 3, rank 2 named waiting for it ({code}, {err!r})")


if __name__ == "__main__":
    {"matrix": test_matrix, "volume": test_volume, "bad_input": test_bad_input,
     "json_file": test_json_file, "h5_file": test_h5_file, "faults": test_faults,
     "patterns": test_patterns, "pattern_faults": test_pattern_faults}[sys.argv[2]]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
