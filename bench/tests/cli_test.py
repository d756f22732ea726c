#!/usr/bin/env python3
"""End-to-end tests of the benchmark binaries through mpirun: bad input (exit code 2,
one line naming the problem, from every rank alike; bad --model and -O files), JSON-lines
records (every field, measured bytes equal to theory), the watchdog (exit code 3 naming
rank and peer).

usage: cli_test.py BIN_DIR GROUP   (GROUP: bad_input | jsonl | timeout | table | catalogue |
                                          catalogue_bad_input | ucx | device | device_ucx | gpu)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from collscope.checks import check, failures
from collscope.runtime_noise import without_runtime_noise

BIN = sys.argv[1]
SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")


def run(binary, args, np=2, env=None, timeout=120):
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np), os.path.join(BIN, binary)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, **(env or {})),
                       timeout=timeout)
    return p.returncode, p.stdout, without_runtime_noise(p.stderr)


BAD_INPUT = [  # (binary, args, message pattern)
    ("allreduce_ring", ["--bogus"], r"--bogus"),
    ("allreduce_ring", ["-d", "float128"], r"unknown dtype 'float128'"),
    ("allreduce_ring", ["-o", "xor"], r"unknown op 'xor'"),
    ("allreduce_ring", ["-b", "12Q"], r"bad size '12Q' for --min-bytes"),
    ("allreduce_ring", ["-b", "-5"], r"-b|--min-bytes|-5"),
    ("allreduce_ring", ["-e", "99999999999999999999999"], r"bad size"),
    ("allreduce_ring", ["-b", "1M", "-e", "1K"], r"larger than --max-bytes"),
    ("allreduce_ring", ["-n", "0"], r"--iters must be at least 1"),
    ("allreduce_ring", ["-n", "-3"], r"--iters must be at least 1"),
    ("allreduce_ring", ["-w", "-1"], r"--warmup must be at least 0"),
    ("allreduce_ring", ["-f", "1", "-b", "1", "-e", "8"], r"--step-factor"),
    ("allreduce_ring", ["-d", "int32", "-o", "avg"], r"op 'avg' is not defined for dtype 'int32'"),
    ("allreduce_ring", ["-c", "2"], r"--check must be 0 or 1"),
    ("allreduce_ring", ["--format", "xml"], r"--format must be table or jsonl"),
    ("allreduce_ring", ["--timing", "graph"], r"--timing must be call or loop, got 'graph'"),
    ("allreduce_mpi", ["--ranks", "median"], r"--ranks must be max, avg or min, got 'median'"),
    ("allreduce_ring", ["-t", "carrier-pigeon"], r"unknown transport"),
    ("allreduce_ring", ["-m", "gpu"], r"--memory must be host or device"),
    ("allreduce_ring", ["--segment", "0"], r"--segment must be at least 1"),
    ("allreduce_ring", ["--stage-chunk", "64K"], r"--stage-chunk applies to the staged path"),
    ("allreduce_mpi", ["-t", "ucx"], r"allreduce_mpi runs the MPI library's own allreduce: -t ucx does not apply"),
    # (N-1) x 1 MiB of scratch: nothing at 1 rank, so only at 3.
    ("allreduce_direct", ["-b", "1M", "-e", "1M", "--max-scratch", "1K"],
     r"allreduce/direct needs 2097152 B of scratch per rank at 3 ranks", (3,)),
]


# Without a GPU (and without the emulated device), device memory and NCCL say so.
NO_GPU_INPUT = [
    ("allreduce_ring", ["-m", "device"], r"no usable CUDA device"),
    ("allreduce_nccl", [], r"no usable CUDA device"),
    ("alltoall_nccl", ["--in-place"], r"ncclAlltoAll has no in-place form: drop --in-place"),
    ("allreduce_ring", ["-t", "nccl"], r"-t nccl moves GPU memory: it needs -m device"),
    ("allreduce_ring", ["--path", "staged"], r"--path and --device-map apply to -m device"),
]

DEVICE_BAD_INPUT = [  # under the emulated device (COLLSCOPE_DEVICE_EMULATION=1)
    ("allreduce_ring", ["-m", "device", "--path", "nvlink"], r"--path must be"),
    ("allreduce_ring", ["-m", "device", "--path", "cuda_aware"], r"not CUDA-aware"),
    ("allreduce_ring", ["-m", "device", "-t", "nccl"], r"-t nccl needs a real GPU"),
    ("allreduce_ring", ["-m", "device", "--device-map", "0,x"], r"--device-map"),
    ("allreduce_ring", ["-m", "device", "--device-map", "5"], r"GPU 5"),
    ("allreduce_ring", ["-m", "device", "--stage-chunk", "0"], r"--stage-chunk"),
    ("allreduce_ring", ["-m", "device", "--path", "ipc", "--stage-chunk", "4K"],
     r"--stage-chunk applies to the staged path"),
    ("allreduce_mpi", ["-m", "device"], r"cuda_aware"),
]


def has_gpu():
    return os.path.exists("/dev/nvidiactl")


SPLIT_BAD = {  # file contents -> message pattern, at 3 ranks
    "1 2 3\n4 5 6\n": r"has 2 rows; 3 ranks need a 3 x 3 matrix",
    "1 2 3\n4 5\n7 8 9\n": r"line 2 has 2 entries; 3 ranks need 3",
    "1 2 3\n4 -5 6\n7 8 9\n": r"line 2: '-5' is not a non-negative integer",
    "1 2 3\n4 x 6\n7 8 9\n": r"line 2: 'x' is not a non-negative integer",
    "1 2 3\n4 5 6\n7 8 9\n1 1 1\n": r"has 4 rows; 3 ranks need",
    "": r"has 0 rows",
}

CATALOGUE_BAD = [  # rooted, in-place and split checks, at 3 ranks
    ("broadcast_binomial", ["-r", "3"], r"--root 3 is out of range for 3 ranks"),
    ("gather_linear", ["-r", "7"], r"--root 7 is out of range for 3 ranks"),
    ("reduce_binomial", ["-r", "-1"], r"--root must be at least 0"),
    ("alltoallv_pairwise", ["--in-place"], r"alltoallv has no in-place form"),
    ("alltoallv_pairwise", ["--split", "zipf"], r"--split must be uniform, random or skewed"),
    ("allgather_ring", ["--split", "random"], r"--split and --split-file apply to alltoallv only"),
    ("alltoallv_pairwise", ["--split-file", "/nonexistent/splits.txt"],
     r"cannot read split file '/nonexistent/splits.txt'"),
    ("allreduce_ring", ["--vendor-volume", "-t", "ucx"],
     r"--vendor-volume witnesses what the MPI library sends: it needs -t mpi on host memory"),
    ("allreduce_ring", ["--vendor-volume", "-m", "device"],
     r"--vendor-volume witnesses what the MPI library sends: it needs -t mpi on host memory"),
]


def test_catalogue_bad_input():
    cases = list(CATALOGUE_BAD)
    with tempfile.TemporaryDirectory() as d:
        for i, (text, pattern) in enumerate(SPLIT_BAD.items()):
            path = os.path.join(d, f"bad{i}.txt")
            open(path, "w").write(text)
            cases.append(("alltoallv_pairwise", ["--split-file", path], pattern))
        for binary, args, pattern in cases:
            code, out, err = run(binary, args, np=3)
            lines = [l for l in err.splitlines() if l.strip()]
            what = f"{binary} {' '.join(args)} (np 3)"
            check(code == 2 and len(lines) == 1 and lines[0].startswith(binary + ": error: ")
                  and re.search(pattern, lines[0]) is not None and out.strip() == "",
                  f"{what}: exit 2, one line matching {pattern!r} (got {code}, {lines})")


def test_bad_input():
    cases = [(c, None) for c in BAD_INPUT + ([] if has_gpu() else NO_GPU_INPUT)]
    cases += [(c, {"COLLSCOPE_DEVICE_EMULATION": "1"}) for c in DEVICE_BAD_INPUT]
    for (binary, args, pattern, *nps), env in cases:
        for np in (nps[0] if nps else (1, 3)):
            code, out, err = run(binary, args, np=np, env=env)
            lines = [l for l in err.splitlines() if l.strip()]
            what = f"{binary} {' '.join(args)} (np {np})"
            check(code == 2, f"{what}: exit code 2 (got {code})")
            check(len(lines) == 1 and lines[0].startswith(binary + ": error: ")
                  and re.search(pattern, lines[0]) is not None,
                  f"{what}: one error line matching {pattern!r} (got {lines})")
            check(out.strip() == "", f"{what}: nothing on stdout")
    code, _, err = run("allreduce_ring", ["-b", "8", "-e", "8", "-J", "/nonexistent/dir/x.jsonl"])
    check(code == 3 and "cannot write the JSON file '/nonexistent/dir/x.jsonl'" in err,
          f"unwritable -J path: exit code 3 and one line (got {code}, {err!r})")
    check_model_and_output_files()
    code, out, _ = run("allreduce_ring", ["--help"], np=1)
    check(code == 0 and "--min-bytes" in out, "--help prints the options and exits 0")


def check_model_and_output_files():
    """--model and -O: every bad file is one line and a documented code; nothing clobbered."""
    example = json.load(open(os.path.join(SOURCE_DIR, "collectives/model/example.json")))
    with tempfile.TemporaryDirectory() as d:
        def model_file(name, edit):
            m = json.loads(json.dumps(example))
            edit(m)
            path = os.path.join(d, name)
            json.dump(m, open(path, "w"))
            return path
        negative = model_file("neg.json", lambda m: m["intra_node"].update(bandwidth=-1))
        missing = model_file("miss.json", lambda m: m["inter_node"].pop("link_delay"))
        truncated = os.path.join(d, "trunc.json")
        open(truncated, "w").write('{"intra_node": ')
        foreign = os.path.join(d, "foreign.h5")
        open(foreign, "w").write("a text file\n")
        cases = [
            (["--model", os.path.join(d, "none.json")], 2, r"model file '.*none.json': cannot be read"),
            (["--model", negative], 2, r"intra_node.bandwidth must be positive, got -1"),
            (["--model", missing], 2, r"missing parameter inter_node.link_delay"),
            (["--model", truncated], 2, r"not valid JSON"),
            (["-O", "/nonexistent/dir/x.h5"], 3, r"cannot create the results file '/nonexistent/dir/x.h5'"),
            (["-O", foreign], 2, r"is not an HDF5 file: refusing to overwrite it"),
        ]
        for args, want, pattern in cases:
            code, out, err = run("allreduce_ring", ["-b", "8", "-e", "8"] + args, np=2)
            lines = [l for l in err.splitlines() if l.strip()]
            check(code == want and len(lines) == 1 and re.search(pattern, lines[0]) is not None,
                  f"allreduce_ring {' '.join(args)}: exit {want}, one line matching {pattern!r} "
                  f"(got {code}, {lines})")
        check(open(foreign).read() == "a text file\n", "-O left the foreign file untouched")


FIELDS = ["collective", "algorithm", "transport", "memory", "dtype", "op", "root", "nranks",
          "count", "bytes", "iters", "time_us", "time_us_min", "time_us_max", "algbw_gbps",
          "busbw_gbps", "sent_bytes", "recv_bytes", "theory_sent_bytes", "theory_recv_bytes",
          "wrong"]


def vendor_volume_ok(r):
    """A vendor row's volume as the MPI library counted it: per-rank arrays whose traffic
    matrix adds up, and the hand-written algorithm(s) it identifies (or the closest)."""
    n = r["nranks"]
    if r["volume"] != "measured" or r["volume_source"] != "mpi_t:pml_monitoring":
        return False
    if r["theory_sent_bytes"] is not None or len(r["sent_bytes"]) != n or len(r["traffic_bytes"]) != n * n:
        return False
    rows = [sum(r["traffic_bytes"][i * n:(i + 1) * n]) for i in range(n)]
    cols = [sum(r["traffic_bytes"][i::n]) for i in range(n)]
    identified = r["vendor_algorithm"] != "" and (r["vendor_algorithm"] != "unmatched" or
                                                  r["vendor_algorithm_off_bytes"] + r["vendor_algorithm_off_msgs"] > 0)
    return rows == r["sent_bytes"] and cols == r["recv_bytes"] and \
        sum(r["sent_msgs"]) == sum(r["recv_msgs"]) and identified


def test_jsonl():
    with tempfile.TemporaryDirectory() as d:
        for algo in ("ring", "direct", "tree", "dbt", "halving_doubling", "mpi"):
            path = os.path.join(d, algo + ".jsonl")
            counted = ["--vendor-volume"] if algo == "mpi" else []  # the library counts
            code, out, err = run("allreduce_" + algo, ["-b", "0", "-e", "4K", "-f", "8", "-d", "all",
                                                       "-o", "all", "-n", "3", "-w", "1", "-J", path]
                                 + counted, np=3)
            check(code == 0, f"{algo}: exit 0 (got {code}: {err.strip()})")
            check(not os.path.exists(path + ".tmp"), f"{algo}: no .tmp file left behind")
            rows = [json.loads(l) for l in open(path)]
            stdout_rows = [l for l in out.splitlines() if l.strip() and not l.startswith("#")]
            # sizes 0, 1, 8, 64, 512, 4096 x (8 dtypes x 5 ops - 4 integer avg)
            check(len(rows) == 6 * 36 == len(stdout_rows), f"{algo}: {len(rows)} rows == 216 == table rows")
            for r in rows:
                missing = [f for f in FIELDS if f not in r]
                if missing:
                    check(False, f"{algo}: fields missing {missing}")
                    break
                n = r["nranks"]
                ok = (r["wrong"] == 0 and len(r["times_us"]) == 3 and r["iters"] == 3
                      and r["bytes"] == r["count"] * {"int8": 1, "uint8": 1, "half": 2, "bfloat16": 2,
                                                      "int32": 4, "float": 4, "int64": 8,
                                                      "double": 8}[r["dtype"]])
                if algo == "mpi":
                    ok = ok and vendor_volume_ok(r)
                else:
                    ok = ok and r["volume"] == "ok" and len(r["sent_bytes"]) == n \
                        and r["volume_source"] == "counted" and r["vendor_algorithm"] == "" \
                        and r["sent_bytes"] == r["theory_sent_bytes"] \
                        and r["recv_bytes"] == r["theory_recv_bytes"] \
                        and len(r["traffic_bytes"]) == n * n \
                        and sum(r["traffic_bytes"]) == sum(r["sent_bytes"])
                if not ok:
                    check(False, f"{algo}: bad row {r}")
                    break
            else:
                check(True, f"{algo}: every row exact, volume equal to theory, per-rank arrays")
        code, out, _ = run("allreduce_ring", ["-b", "1K", "-e", "1K", "--format", "jsonl"], np=2)
        row = json.loads(out.splitlines()[0]) if code == 0 else {}
        check(row.get("busbw_gbps", -1) >= 0, "--format jsonl prints JSON lines on stdout")
        check(row.get("timing") == "call" and row.get("ranks") == "max",
              f"the defaults recorded: timing call, ranks max ({row.get('timing')}, {row.get('ranks')})")
        for how in ("avg", "min"):
            code, out, _ = run("allreduce_mpi", ["-b", "1K", "-e", "1K", "-n", "4", "--timing", "loop",
                                                 "--ranks", how, "--format", "jsonl"], np=2)
            row = json.loads(out.splitlines()[0]) if code == 0 else {}
            check(row.get("ranks") == how and row.get("timing") == "loop"
                  and len(row.get("times_us", [])) == 1,
                  f"--timing loop --ranks {how}: recorded, one timed value ({code}, {row.get('ranks')})")
        code, out, _ = run("allreduce_mpi", ["-b", "1K", "-e", "1K", "--format", "jsonl"], np=2)
        r = json.loads(out.splitlines()[0]) if code == 0 else {}
        check(r.get("volume") == "n/a" and r.get("sent_bytes", 0) is None
              and "--vendor-volume" in r.get("volume_source", "")
              and r.get("volume_source", "").startswith("n/a: ") and r.get("vendor_algorithm") == "",
              f"without --vendor-volume a vendor row has no volume and says why "
              f"({r.get('volume_source')})")


ELEM = {"int8": 1, "uint8": 1, "half": 2, "bfloat16": 2, "int32": 4, "float": 4, "int64": 8,
        "double": 8}


CATALOGUE = ("reduce_scatter", "allgather", "broadcast", "reduce", "gather", "scatter",
             "alltoall", "alltoallv", "barrier")


def catalogue_binaries():
    """<collective>_<algorithm> binaries of every collective but allreduce (jsonl group)."""
    return sorted(b for b in os.listdir(BIN) if not b.endswith(("_test", "_nccl"))
                  and any(b.startswith(c + "_") for c in CATALOGUE)
                  and os.access(os.path.join(BIN, b), os.X_OK))


def check_rows(name, rows, expect_rows, per_peer=False, vendor=False):
    check(len(rows) == expect_rows, f"{name}: {len(rows)} rows, expected {expect_rows}")
    for r in rows:
        n, elem = r["nranks"], ELEM[r["dtype"]]
        want_bytes = r["count"] * elem * (n if per_peer else 1)
        ok = r["wrong"] == 0 and (r["bytes"] == want_bytes or r["collective"] in ("alltoallv", "barrier"))
        if vendor:
            ok = ok and vendor_volume_ok(r)
        else:
            ok = ok and r["volume"] == "ok" and r["sent_bytes"] == r["theory_sent_bytes"] \
                and r["recv_msgs"] == r["theory_recv_msgs"] and len(r["sent_bytes"]) == n
        if not ok:
            check(False, f"{name}: bad row {json.dumps(r)[:400]}")
            return
    check(True, f"{name}: every row exact, bytes column right, volume equal to theory")


def test_catalogue():
    """Every catalogue binary end to end at 3 ranks: sizes 0..64K over two dtypes, every
    root of the rooted ones, in place where it exists, each all-to-all-v split."""
    bins = catalogue_binaries()
    check(len(bins) >= 20, f"catalogue: {len(bins)} binaries found")
    with tempfile.TemporaryDirectory() as d:
        for b in bins:
            coll = b.rsplit("_", 1)[0] if not b.startswith(("reduce_scatter", "alltoallv")) else \
                "_".join(b.split("_")[:2]) if b.startswith("reduce_scatter") else "alltoallv"
            vendor = b.endswith("_mpi")
            path = os.path.join(d, b + ".jsonl")
            sweep = ["-b", "0", "-e", "64K", "-f", "16", "-n", "2", "-w", "1", "-J", path]
            if vendor:
                sweep.append("--vendor-volume")  # the library counts its own collective
            runs = [sweep + ["-d", "int8"]]
            if coll in ("broadcast", "reduce", "gather", "scatter"):
                runs = [sweep + ["-d", "int8", "-r", str(root)] for root in (0, 1, 2)]
            if coll not in ("alltoallv", "barrier"):
                runs.append(sweep + ["--in-place", "-d", "half"])
            if coll == "alltoallv":
                runs = [sweep + ["-d", "int8", "--split", p] for p in ("uniform", "random", "skewed")]
                split = os.path.join(d, "splits.txt")
                open(split, "w").write("# from\\to 0 1 2\n0 5 100\n7 0 3\n1000 1 0\n")
                runs.append(["-n", "2", "-J", path, "--split-file", split] +
                            (["--vendor-volume"] if vendor else []))
            for args in runs:
                code, _, err = run(b, args, np=3)
                rows = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
                if code != 0:
                    check(False, f"{b} {' '.join(args)}: exit {code}: {err.strip()[:300]}")
                    continue
                expect = 1 if coll == "barrier" or "--split-file" in args else 6  # 0 1 16 256 4K 64K
                check_rows(f"{b} {' '.join(args[-2:])}", rows, expect, coll == "alltoall", vendor)
                if "--split-file" in args and rows:
                    check(rows[0]["splits"] == [0, 5, 100, 7, 0, 3, 1000, 1, 0]
                          and rows[0]["bytes"] == (1116 // 3) * 4,  # float
                          f"{b}: the split file's matrix is used and reported")


def test_ucx():
    """The UCX transport end to end: rows say transport ucx and record UCX_* settings,
    volume equals theory, nothing on stderr (no UCX warnings at exit), and a UCX that
    cannot start is one line and exit code 3."""
    with tempfile.TemporaryDirectory() as d:
        for tls in ("", "tcp,self"):
            path = os.path.join(d, "ucx.jsonl")
            env = {"UCX_TLS": tls} if tls else {}
            args = ["-t", "ucx", "-b", "0", "-e", "64K", "-f", "16", "-n", "3", "-w", "1", "-J", path]
            if tls:
                args = ["-x", "UCX_TLS"] + args  # not an option of ours: goes to mpirun below
            code, out, err = run_mpirun_args("allreduce_ring", args, np=3, env=env)
            what = f"allreduce_ring -t ucx (UCX_TLS={tls or 'default'})"
            check(code == 0 and err.strip() == "", f"{what}: exit 0, nothing on stderr ({code}, {err.strip()[:200]!r})")
            rows = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
            check(len(rows) == 6 and all(r["transport"] == "ucx" and r["volume"] == "ok" and r["wrong"] == 0
                                         for r in rows), f"{what}: 6 rows, transport ucx, exact, volume ok")
            if tls:
                check(all(f"UCX_TLS={tls}" in r["transport_env"] for r in rows),
                      f"{what}: UCX_TLS recorded in transport_env")
        code, out, err = run_mpirun_args("pingpong", ["-x", "UCX_TLS", "-t", "ucx", "-b", "8", "-e", "4K", "-n", "3"],
                                         np=2, env={"UCX_TLS": "tcp,self"})
        check(code == 0 and "# rows" in out, f"pingpong -t ucx over tcp: exit 0 ({code}, {err.strip()[:200]!r})")
    code, out, err = run_mpirun_args("allreduce_ring", ["-x", "UCX_TLS", "-t", "ucx", "-b", "8", "-e", "8"],
                                     np=2, env={"UCX_TLS": "no-such-transport"})
    ours = [l for l in err.splitlines() if l.startswith("allreduce_ring:")]
    check(code == 3 and len(ours) == 1 and "ucx transport: ucp_init failed" in ours[0],
          f"UCX that cannot start: exit 3, one line of ours ({code}, {ours})")


def hand_written_binaries():
    """Every hand-written algorithm's binary (vendors' own collectives left out)."""
    return sorted(b for b in os.listdir(BIN) if not b.endswith(("_test", "_nccl", "_mpi"))
                  and b.split("_")[0] in ("allreduce", "reduce", "allgather", "broadcast", "gather",
                                          "scatter", "alltoall", "alltoallv", "barrier")
                  and os.access(os.path.join(BIN, b), os.X_OK))


def check_device_rows(name, rows, path):
    """Exact, volume equal to theory, and the copies between memories equal to theirs."""
    copies = ("copy_to_host_bytes", "copy_to_device_bytes", "copy_from_peer_bytes",
              "reduced_from_peer_bytes")
    bad = [r for r in rows if r["wrong"] != 0 or r["volume"] != "ok" or r["path"] != path
           or r["memory"] != "device" or any(r[k] != r["theory_" + k] for k in copies)]
    moved = sum(sum(r[k]) for r in rows for k in copies)
    check(rows and not bad, f"{name}: {len(rows)} rows exact, volume and copies equal to theory"
          + (f" (bad: {json.dumps(bad[0])[:400]})" if bad else ""))
    check(moved > 0 or name.startswith("barrier"), f"{name}: copies counted ({moved} B)")


def test_gpu():
    """The device tests on a real GPU: every hand-written algorithm at N = 1..4 ranks on
    one GPU over staged MPI and ipc (staged UCX: the device_ucx group's binaries), exact,
    volume and copies equal to theory. Skipped (exit 77) without a GPU."""
    if not has_gpu():
        print("SKIP: no GPU (/dev/nvidiactl absent)")
        sys.exit(77)
    for np in (1, 2, 3, 4):
        test_device("mpi", np, emulated=False)
        test_device("ucx", np, emulated=False)
    test_nccl()


def gpu_count():
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return len([l for l in p.stdout.splitlines() if l.startswith("GPU ")]) if p.returncode == 0 else 1


def test_nccl():
    """-t nccl on every hand-written algorithm and NCCL's own collectives at N = 1 (and
    N = 2..min(8, GPUs) where the node has several): exact, volume equal to theory (the
    vendors' volume is n/a); at N = 2 on one GPU, the one-line refusal before NCCL starts."""
    with tempfile.TemporaryDirectory() as d:
        nccl_bins = sorted(b for b in os.listdir(BIN) if b.endswith("_nccl"))
        check(len(nccl_bins) == 8, f"nccl: {len(nccl_bins)} baselines")
        gpus = gpu_count()
        for np in [1] + list(range(2, min(8, gpus) + 1)):
            for b in hand_written_binaries() + nccl_bins:
                out = os.path.join(d, f"{b}.nccl{np}.jsonl")
                args = ["-t", "nccl", "-m", "device", "-b", "0", "-e", "1M", "-f", "32", "-n", "2", "-w", "1", "-J", out]
                code, _, err = run(b, args, np=np)
                if code != 0:
                    check(False, f"{b} -t nccl at {np}: exit {code}: {err.strip()[:300]}")
                    continue
                rows = [json.loads(l) for l in open(out)]
                bad = [r for r in rows if r["wrong"] != 0 or r["volume"] not in ("ok", "n/a", "measured")
                       or r["path"] != "nccl" or not r.get("nccl_version")]
                check(rows and not bad, f"{b} -t nccl at {np}: {len(rows)} rows exact, volume equal to theory"
                      + (f" (bad: {json.dumps(bad[0])[:300]})" if bad else ""))
        if gpus == 1:
            code, _, err = run("allreduce_ring", ["-t", "nccl", "-m", "device", "-b", "8", "-e", "8"], np=2)
            lines = [l for l in err.splitlines() if l.strip()]
            check(code == 2 and len(lines) == 1 and "share GPU" in lines[0],
                  f"-t nccl, 2 ranks on one GPU: exit 2, one line naming the rule ({code}, {lines})")


def test_device(transport="mpi", np=3, emulated=True):
    """Every hand-written algorithm on the emulated device (host memory behind the device
    runtime's interface, IPC through shared memory) over both of collscope's own paths:
    staged (device to pinned host, the transport, host to device) and ipc (one copy from
    the peer's mapped buffer)."""
    env = {"COLLSCOPE_DEVICE_EMULATION": "1"} if emulated else {}
    bins = hand_written_binaries() if transport == "mpi" or not emulated else ["allreduce_ring", "alltoall_pairwise"]
    check(len(bins) >= 20 or transport != "mpi", f"device: {len(bins)} binaries")
    with tempfile.TemporaryDirectory() as d:
        for b in bins:
            for path in ("staged", "ipc"):
                out = os.path.join(d, f"{b}.{path}.jsonl")
                args = ["-m", "device", "--path", path, "-t", transport, "-b", "0", "-e", "256K",
                        "-f", "64", "-n", "2", "-w", "1", "-J", out]
                if b.startswith(("broadcast", "reduce_", "gather", "scatter")) and not b.startswith("reduce_scatter"):
                    args += ["-r", "1"]
                code, _, err = run(b, args, np=np, env=env)
                if code != 0:
                    check(False, f"{b} {path}: exit {code}: {err.strip()[:300]}")
                    continue
                rows = [json.loads(l) for l in open(out)]
                check_device_rows(f"{b} {path} -t {transport}", rows, path)
        if transport == "mpi" and emulated:
            check_device_results_files(d, env)
        check_device_pingpong(d, env, transport, np)


def check_device_pingpong(d, env, transport, np):
    """pingpong -m device over each path: every pair's payload exact, its bytes equal to
    theory, the rows say device memory."""
    for path in ("staged", "ipc"):
        for pattern in ("pairs", "ring"):
            out = os.path.join(d, f"pingpong.{path}.{pattern}.jsonl")
            args = ["-m", "device", "--path", path, "-t", transport, "--pattern", pattern,
                    "-b", "8", "-e", "1M", "-f", "64", "-n", "2", "-w", "1", "-J", out]
            code, _, err = run("pingpong", args, np=max(np, 2), env=env)
            rows = [json.loads(l) for l in open(out)] if code == 0 else []
            check(code == 0 and len(rows) == 4 and all(r["memory"] == "device" and r["wrong"] == 0
                                                       and r["volume"] == "ok" for r in rows),
                  f"pingpong -m device --path {path} --pattern {pattern} -t {transport}: 4 rows exact, "
                  f"volume ok ({code}, {err.strip()[:200]})")


def check_device_results_files(d, env):
    """-O on device memory: /runs says which runtime, /run_gpus holds every rank's GPU, and
    scripts/merge carries /run_gpus over with the runs renumbered."""
    import h5py
    files = []
    for np in (2, 3):
        path = os.path.join(d, f"gpus{np}.h5")
        code, _, err = run("allreduce_ring", ["-m", "device", "-b", "1K", "-e", "1K", "-n", "2", "-O", path],
                           np=np, env=env)
        check(code == 0, f"-O on device memory at {np} ranks: exit 0 ({err.strip()[:200]})")
        files.append(path)
    merged = os.path.join(d, "merged.h5")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "merge")
    p = subprocess.run([sys.executable, script, merged, *files], capture_output=True, text=True)
    check(p.returncode == 0, f"scripts/merge of two device runs: exit 0 ({p.stderr.strip()[:200]})")
    with h5py.File(files[1]) as f:
        gpus, runs = f["run_gpus"][:], f["runs"][:]
        check(list(gpus["rank"]) == [0, 1, 2] and all(gpus["emulated"]) and list(gpus["run_id"]) == [0] * 3
              and runs["device_runtime"][0] == b"emulated",
              f"/run_gpus: one record per rank, emulated, /runs device_runtime emulated ({gpus})")
    with h5py.File(merged) as f:
        gpus = f["run_gpus"][:]
        check(list(gpus["run_id"]) == [0, 0, 1, 1, 1] and list(gpus["rank"]) == [0, 1, 0, 1, 2],
              f"merged /run_gpus: 5 records, runs renumbered ({list(gpus['run_id'])})")


def run_mpirun_args(binary, args, np, env):
    """Like run(), but leading ["-x", VAR] pairs go to mpirun (to pass VAR to every rank)."""
    pre = []
    while args and args[0] == "-x":
        pre += args[:2]
        args = args[2:]
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np)] + pre + [os.path.join(BIN, binary)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, **env), timeout=120)
    return p.returncode, p.stdout, without_runtime_noise(p.stderr)


def test_table():
    code, out, _ = run("allreduce_ring", ["-b", "1K", "-e", "64K", "-f", "4", "--in-place"], np=4)
    rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
    check(code == 0 and len(rows) == 4, f"table: 4 rows (exit {code})")
    check(all(r[2] == "float" and r[3] == "sum" and r[5] == "mpi" and r[12] == "0" and r[15] == "ok"
              and r[13] == r[14]
              for r in rows), "table: dtype, op, #wrong 0, sent == theory, volume ok")
    check(all(re.fullmatch(r"\d+%!?|-", r[9]) for r in rows), "table: the spread column (e.g. 7% or 31%!)")
    check("in-place" in out and "# Avg bus bandwidth" in out, "table: header and footer")


def test_timeout():
    code, _, err = run("allreduce_ring", ["-b", "1K", "-e", "1K", "--timeout", "1"], np=3,
                       env={"COLLSCOPE_DEBUG_STALL": "1:30"}, timeout=60)
    check(code == 3, f"stalled rank: exit code 3 (got {code})")
    check(re.search(r"allreduce_ring: timeout: rank [02] stuck for more than 1\.0 s in "
                    r"allreduce/ring, phase reduce-scatter step 0, waiting to receive from rank [01]",
                    err) is not None, f"timeout message names rank, algorithm, step, peer: {err!r}")
    # On the ipc path the ranks wait for each other's flags (the emulated device: the host
    # stands for the stream), and the report still names the step and the peer.
    code, _, err = run("allreduce_ring", ["-b", "1K", "-e", "1K", "--timeout", "1", "-m", "device",
                                          "--path", "ipc", "--wait", "yield"], np=3,
                       env={"COLLSCOPE_DEBUG_STALL": "1:30", "COLLSCOPE_DEVICE_EMULATION": "1"},
                       timeout=60)
    check(code == 3, f"stalled rank on the ipc path: exit code 3 (got {code})")
    check(re.search(r"allreduce_ring: timeout: rank [02] stuck for more than 1\.0 s in "
                    r"allreduce/ring, phase reduce-scatter step 0, waiting to receive from rank [01]",
                    err) is not None, f"ipc timeout message names rank, algorithm, step, peer: {err!r}")


if __name__ == "__main__":
    {"bad_input": test_bad_input, "jsonl": test_jsonl, "table": test_table,
     "timeout": test_timeout, "catalogue": test_catalogue,
     "catalogue_bad_input": test_catalogue_bad_input, "ucx": test_ucx,
     "device": test_device, "device_ucx": lambda: test_device("ucx"), "gpu": test_gpu}[sys.argv[2]]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
