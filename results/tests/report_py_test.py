#!/usr/bin/python3
"""scripts/report end to end, on results files the real binaries write (results/SCHEMA.md):

  tables     allreduce, allgather, scatter and barrier at 2 and 3 ranks (uneven blocks,
             a non-power of two, a rooted collective, vendor baselines) with --model: every
             table holds one line per row with the figures this test reads itself from
             the file with h5py, the advisor's winners are the fastest measured, every
             PNG that should exist exists, is a valid PNG, and no other does
  mismatch   one rank's sent_bytes and another row's theory_recv_msgs edited with h5py:
             exit 4, those two rows MISMATCH (table and stderr), everything still written
  bad_input  no such file, a directory, not HDF5 (text, empty), HDF5 but not a results
             file, a future schema version, a table missing, --out a file or under a file, bad
             usage: exit 2, one line on stderr, nothing written
  empty      a results file without rows (and one whose rows are all unfinished):
             report.md alone, saying so, exit 0
  planted    allreduce_direct slowed 20x through COLLSCOPE_DEBUG_SLOWDOWN beside ring, two
             rounds: the advisor disagrees at every size, each interval above 1
  gpu_sharing  allreduce ring and direct on the emulated device over ipc at 1 rank (exclusive),
             at 2 ranks without MPS (time-sliced) and as clients of a stand-in MPS daemon (its
             control pipe): the rows' and /run_gpus' gpu_sharing and mps_client, kept by
             scripts/merge, and the report's groups apart, each labelled
  pingpong   pingpong --pairs all -O (results_tool's sample rows where pingpong has no -O
             yet): the bandwidth and latency heatmaps, the ping-pong volume rows
  samples    results_tool's odd sample rows (1 rank, no iterations, ucx, all-to-all-v,
             traffic matrices that do not add up): exit 4 exactly for the rows that are
             inconsistent

report_py_test.py GROUP --bin DIR --source DIR --tool results_tool [--mpiexec mpirun]
"""

import argparse
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import h5py
import numpy as np

from collscope.checks import check, failures

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
SWEEP = ["-b", "1K", "-e", "64K", "-f", "8", "-n", "3", "-w", "1"]
VENDOR = {"mpi", "nccl"}
ARGS = None


# ---- making files ------------------------------------------------------------------------


def mpirun(np_, binary, args, env=None):
    cmd = [ARGS.mpiexec or "mpirun", "-q", "--oversubscribe", "-np", str(np_),
           os.path.join(ARGS.bin, binary)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(MPI_ENV, **(env or {})),
                       timeout=120)
    if p.returncode != 0:
        sys.exit(f"setup failed: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")


def sweep(h5, runs, model=True):
    """runs: [(ranks, binary)], each appended to h5 with the sweep's sizes."""
    model_file = os.path.join(ARGS.source, "collectives/model/example.json")
    extra = ["--model", model_file] if model else []
    for np_, binary in runs:
        counted = ["--vendor-volume"] if binary.endswith("_mpi") else []  # the library counts
        mpirun(np_, binary, SWEEP + ["-O", h5] + extra + counted)


def tool(*args):
    p = subprocess.run([ARGS.tool] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        sys.exit(f"setup failed: results_tool {args}: {p.stderr.strip()}")


def report(h5, out=None, extra=()):
    cmd = [sys.executable, os.path.join(ARGS.source, "scripts/report"), h5]
    cmd += (["--out", out] if out else []) + list(extra)
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
    print(f"     report {os.path.basename(h5)}: exit {p.returncode}, "
          f"{time.monotonic() - start:.1f} s", flush=True)
    return p


# ---- reading the file on our own (SCHEMA.md), independently of scripts/report -------------


def read_rows(h5, group="collective"):
    """Finished rows as dicts with their per-rank records and pools."""
    with h5py.File(h5, "r") as f:
        rows, ranks = f[group + "/rows"][:], f[group + "/ranks"][:]
        pools = {k: f[f"{group}/{k}"][:] for k in f[group].keys() if k not in ("rows", "ranks")}
    out = []
    for i, r in enumerate(rows):
        if r["run_id"] < 0:
            continue
        d = {k: (r[k].decode() if isinstance(r[k], bytes) else r[k].item()) for k in r.dtype.names}
        d["index"] = i
        d["ranks"] = ranks[r["ranks_offset"]:][: r["ranks_count"]]
        n = d["nranks"]
        for pool, values in pools.items():
            o = d[pool + "_offset"]
            d[pool] = None if o < 0 else values[o:o + d[pool + "_count"]]
            if d[pool] is not None and pool != "times_us":
                d[pool] = d[pool].reshape(n, n)
        out.append(d)
    return out


def key_of(row):
    return (row["collective"], row["algorithm"], row["nranks"], row["bytes"])


# ---- reading the report ------------------------------------------------------------------


def split_cells(line):
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def md_tables(path):
    """[(heading, header, rows)] for every Markdown table in the file; rows as dicts."""
    tables, heading, block = [], None, []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n") + [""]
    for line in lines:
        if line.startswith("|"):
            block.append(split_cells(line))
            continue
        if block:
            header = block[0]
            tables.append((heading, header, [dict(zip(header, r)) for r in block[2:]]))
            block = []
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
    return tables


def table_under(path, heading_start):
    found = [t for t in md_tables(path) if t[0] and t[0].startswith(heading_start)]
    return found[0] if found else (None, [], [])


def png_ok(path):
    """A PNG: the signature, an IHDR with a size, every chunk's CRC right, IEND last."""
    try:
        data = open(path, "rb").read()
    except OSError:
        return False
    if len(data) < 57 or data[:8] != b"\x89PNG\r\n\x1a\n":
        return False
    pos, kinds = 8, []
    while pos + 12 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            return False
        kinds.append(kind)
        if kind == b"IHDR" and min(struct.unpack(">II", body[:8])) == 0:
            return False
        pos += 12 + length
    return kinds[:1] == [b"IHDR"] and kinds[-1:] == [b"IEND"] and pos == len(data)


def close(a, b, rel=1e-2, abs_=1e-9):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def expected_pngs(rows, pingpong_rows):
    names = set()
    for r in rows:
        if r["bytes"] > 0:  # the barrier (size 0) has no plot against size
            path = r.get("path") or ""  # device rows have plots of their own
            device = r.get("memory") == "device" and path and r["transport"] != "nccl"
            transport = r["transport"] + ("_" + path if device else "")
            sharing = {"mps": "_mps", "time_sliced": "_time_sliced_gpu"}.get(
                r.get("gpu_sharing") or "", "") if r.get("memory") == "device" else ""
            transport += sharing
            names.add(f"busbw_{r['collective']}_np{r['nranks']}_{transport}.png")
            names.add(f"time_{r['collective']}_np{r['nranks']}_{transport}.png")
        if r["traffic_bytes"] is not None:
            names.add(f"traffic_{r['collective']}_{r['algorithm']}_np{r['nranks']}.png")
    for r in pingpong_rows:
        if r["bw_gbps_matrix"] is not None:
            names.add(f"pingpong_bw_np{r['nranks']}.png")
            names.add(f"pingpong_latency_np{r['nranks']}.png")
    return names


def check_pngs(out, rows, pingpong_rows):
    want = expected_pngs(rows, pingpong_rows)
    have = {n for n in os.listdir(out) if n.endswith(".png")}
    check(have == want, f"the PNGs are exactly the expected {len(want)} "
                        f"(missing {sorted(want - have)}, extra {sorted(have - want)})")
    bad = [n for n in sorted(have) if not png_ok(os.path.join(out, n))]
    check(not bad, f"every PNG is a valid PNG (bad: {bad})")
    report_md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    unlinked = [n for n in sorted(have) if f"]({n})" not in report_md]
    check(not unlinked, f"report.md shows every PNG (not: {unlinked})")


# ---- group: tables -----------------------------------------------------------------------

TABLE_RUNS = [(2, "allreduce_ring"), (2, "allreduce_direct"), (2, "allreduce_mpi"),
              (2, "allgather_ring"), (2, "allgather_bruck"), (2, "allgather_mpi"),
              (3, "allreduce_ring"), (3, "allreduce_halving_doubling"),
              (3, "allgather_recursive_doubling"), (3, "scatter_binomial"),
              (3, "barrier_dissemination")]


def check_volume_table(path, rows):
    _, _, lines = table_under(path, "Collectives")
    check(len(lines) == len(rows), f"volume.md: {len(lines)} rows for the file's {len(rows)}")
    by_index = {int(l["#"]): l for l in lines}
    for r in rows:
        line = by_index.get(r["index"])
        if not check(line is not None, f"volume.md has row {r['index']}"):
            continue
        shown = (line["collective"], line["algorithm"].replace(" (vendor)", ""), int(line["N"]),
                 int(line["bytes"]))
        check(shown == key_of(r), f"volume.md row {r['index']} is {key_of(r)}")
        if not r["measured_known"]:
            check(line["volume"] == "n/a (vendor)",
                  f"row {r['index']} ({r['algorithm']}) n/a (vendor)")
            continue
        k = r["ranks"]
        if r["algorithm"] in VENDOR:  # counted by the library: no theory, what it identifies
            check(line["volume"] == "measured" and line["sent Σ theory"] == "—"
                  and int(line["sent Σ measured"]) == int(k["sent_bytes"].sum())
                  and int(line["recv Σ measured"]) == int(k["recv_bytes"].sum())
                  and r["vendor_algorithm"].split("|")[0] in line["per rank"],
                  f"row {r['index']} {key_of(r)}: measured by the library, "
                  f"{r['vendor_algorithm']} ({line['per rank']})")
            continue
        want = [int(k["sent_bytes"].sum()), int(k["theory_sent_bytes"].sum()),
                int(k["recv_bytes"].sum()), int(k["theory_recv_bytes"].sum())]
        got = [int(line[c]) for c in ("sent Σ measured", "sent Σ theory", "recv Σ measured",
                                      "recv Σ theory")]
        check(got == want, f"row {r['index']} {key_of(r)}: sums {got} == {want}")
        msgs = f"{int(k['sent_msgs'].sum())} / {int(k['theory_sent_msgs'].sum())}"
        check(line["msgs sent Σ (m / t)"] == msgs, f"row {r['index']}: messages sent {msgs}")
        check(line["volume"] == "ok", f"row {r['index']} {key_of(r)}: volume ok")


def check_vendor_matrices(path, rows):
    """Each vendor row the library counted has its N x N matrix, as in the file."""
    tables = md_tables(path)
    for r in rows:
        if r["algorithm"] not in VENDOR or r["traffic_bytes"] is None:
            continue
        found = [t for t in tables if t[0] and t[0].startswith(f"#{r['index']} ")]
        if not check(len(found) == 1, f"volume.md: the matrix of vendor row {r['index']}"):
            continue
        _, header, lines = found[0]
        shown = [[int(l[c]) for c in header[1:]] for l in lines]
        check(shown == r["traffic_bytes"].astype(int).tolist(),
              f"vendor row {r['index']}: the matrix is the file's {r['traffic_bytes'].tolist()}")


def check_library_ran(path, rows):
    """'What the library ran': every vendor row's identified algorithm, in its size range."""
    _, _, lines = table_under(path, "What the library ran")
    for r in rows:
        if r["algorithm"] not in VENDOR or not r["vendor_algorithm"]:
            continue
        want = r["vendor_algorithm"].replace("|", " or ")
        hits = [l for l in lines if l["collective"] == r["collective"] and int(l["N"]) == r["nranks"]
                and want in l["library ran"]]
        check(hits, f"advisor: {r['collective']} N={r['nranks']} {r['bytes']} B: the library ran {want}")
        check(all("(monitored)" in l["library ÷ fastest hand-written"] for l in hits),
              f"advisor: {r['collective']} N={r['nranks']}: the library's time is marked as "
              "taken with its monitoring on (the file has no other)")


def described_ranks(r):
    """The theory's bytes sent by the ranks the formula describes: the root's alone for a
    formula marked "(root)", else every rank's."""
    t = r["ranks"]["theory_sent_bytes"]
    return t[r["root"]:r["root"] + 1] if r["textbook_formula"].endswith("(root)") else t


def expected_reasons(r):
    """Words the 'why' column must hold, from the row's own numbers."""
    t = described_ranks(r).astype(np.float64)
    figure, n = r["textbook_sent_bytes"], r["nranks"]
    if np.all(np.abs(t - figure) < 1e-6):
        return ["exact"]
    words = []
    if "/N" in r["textbook_formula"] and r["algorithm"] != "halving_doubling" and r["count"] % n:
        words.append("uneven blocks")
    if n & (n - 1) and r["algorithm"] in ("halving_doubling", "recursive_doubling"):
        words.append("non-power-of-two N")
    if t.min() != t.max():
        words.append("ranks differ")
    if r["collective"] == "allreduce" and r["algorithm"] in ("direct", "tree", "dbt"):
        words.append("sent + received")
    return words


def check_textbook_table(path, rows):
    _, _, lines = md_tables(path)[0]
    check(len(lines) == len(rows), f"textbook_vs_theory.md: {len(lines)} rows for {len(rows)}")
    by_index = {int(l["#"]): l for l in lines}
    seen = set()
    for r in rows:
        line = by_index.get(r["index"])
        if not check(line is not None, f"textbook_vs_theory.md has row {r['index']}"):
            continue
        if not r["textbook_formula"]:
            check("no textbook formula" in line["why"],
                  f"row {r['index']} {key_of(r)}: no textbook formula")
            continue
        t = described_ranks(r)
        check(close(float(line["formula (B)"]), r["textbook_sent_bytes"], 1e-6, 0.006) and
              int(line["theory max (B)"]) == int(t.max()) and
              close(float(line["theory mean (B)"]), float(t.mean()), 1e-6, 0.006),
              f"row {r['index']} {key_of(r)}: formula {r['textbook_sent_bytes']}, max {int(t.max())}")
        diff = r["textbook_sent_bytes"] - int(t.max())
        check(close(float(line["formula − max (B)"]), diff, 1e-6, 0.006),
              f"row {r['index']}: difference formula - max")
        for word in expected_reasons(r):
            seen.add(word)
            check(word in line["why"], f"row {r['index']} {key_of(r)}: why says '{word}' "
                                       f"({line['why']})")
        if expected_reasons(r) != ["exact"]:
            check(line["why"] != "exact", f"row {r['index']}: not 'exact'")
    # the runs are chosen so that each reason appears at least once
    for word in ("exact", "uneven blocks", "non-power-of-two N", "ranks differ", "sent + received"):
        check(word in seen, f"the test file exercises '{word}'")


def check_time_model(path, rows):
    modelled = [r for r in rows if not math.isnan(r["predicted_us"])]
    check(len(modelled) == sum(r["algorithm"] not in VENDOR for r in rows),
          f"every hand-written row has a prediction ({len(modelled)})")
    _, _, per_row = table_under(path, "Per row")
    check(len(per_row) == len(modelled), f"time_model.md: {len(per_row)} rows for {len(modelled)}")
    by_index = {int(l["#"]): l for l in per_row}
    for r in modelled:
        line = by_index.get(r["index"], {})
        ratio = r["predicted_us"] / r["time_us"]
        check(line and close(float(line["predicted / measured"]), ratio),
              f"row {r['index']} {key_of(r)}: predicted/measured {ratio:.3g}")
    _, _, summary = table_under(path, "Per (collective, algorithm)")
    groups = {}
    for r in modelled:
        groups.setdefault((r["collective"], r["algorithm"]), []).append(
            r["predicted_us"] / r["time_us"])
    got = {(l["collective"], l["algorithm"]): l for l in summary}
    check(set(got) == set(groups), f"time_model.md summarises {sorted(groups)}")
    for k, v in groups.items():
        line = got.get(k, {})
        check(line and int(line["rows"]) == len(v) and
              close(float(line["median predicted / measured"]), statistics.median(v)) and
              close(float(line["min"]), min(v)) and close(float(line["max"]), max(v)),
              f"{k}: median {statistics.median(v):.3g}, min, max over {len(v)} rows")


def noise_verdict(interval):
    """What the advisor must say where its pick is not the fastest: disagree when the
    interval of pick / fastest ('[1.02, 1.3]') lies above 1, else a tie (within noise)."""
    low = float(interval.strip("[]").split(",")[0])
    return "disagree" if low > 1 else "tie (within noise)"


# N <= 8 on one node (docs/selection-rules.md)
RULE_PICKS = {"allreduce": "direct", "allgather": "ring"}


def check_advisor(path, rows):
    _, _, summary = md_tables(path)[0]
    groups = {}
    for r in rows:
        groups.setdefault((r["collective"], r["transport"], r["nranks"]), []).append(r)
    entries = {(l["collective"], l["transport"], int(l["N"])) for l in summary}
    check(entries == set(groups), f"advisor.md has an entry per (collective, transport, N): "
                                  f"{sorted(groups)}")
    for l in summary:
        pick = RULE_PICKS.get(l["collective"])
        measured = {r["algorithm"] for r in groups.get((l["collective"], l["transport"],
                                                        int(l["N"])), [])}
        if pick is None:
            check(l["verdict"] == "no rule" and l["rules pick"] == "—",
                  f"advisor: {l['collective']} N={l['N']}: no rule")
            continue
        check(l["rules pick"] == pick,
              f"advisor: {l['collective']} N={l['N']} the rules pick {pick}")
        hand = l["fastest hand-written"]
        if pick not in measured:
            check("not measured" in l["verdict"], f"advisor: {l['collective']} N={l['N']}: "
                                                  f"the rules' pick {pick} not measured")
            continue
        check(l["verdict"] == "agree" if hand == pick else
              l["verdict"] == noise_verdict(l["95% interval"]),
              f"advisor: {l['collective']} N={l['N']} {l['sizes']}: verdict {l['verdict']} "
              f"with {hand} fastest, interval {l['95% interval']}")
    for (coll, transport, n), g in groups.items():
        _, header, lines = table_under(path, f"{coll}, {transport}, N = {n}")
        sizes = sorted({r["bytes"] for r in g})
        check([int(l["bytes"]) for l in lines] == sizes,
              f"advisor detail {coll} N={n}: sizes {sizes}")
        for line in lines:
            b = int(line["bytes"])
            times = {r["algorithm"]: r["time_us"] for r in g if r["bytes"] == b}
            best = min(times.values())
            winners = {a for a, t in times.items() if t == best}
            hand_times = {a: t for a, t in times.items() if a not in VENDOR}
            hand_winners = {a for a, t in hand_times.items() if t == min(hand_times.values())}
            check(line["fastest"].replace(" (vendor)", "") in winners,
                  f"advisor {coll} N={n} {b} B: fastest {line['fastest']} in {sorted(winners)} "
                  f"({times})")
            check(line["fastest hand-written"] in hand_winners,
                  f"advisor {coll} N={n} {b} B: fastest hand-written "
                  f"{line['fastest hand-written']}")
            vendor = [a for a in times if a in VENDOR]
            check(all(f"{a} (vendor)" in header for a in vendor), "the vendor is marked")


def group_tables(tmp):
    h5 = os.path.join(tmp, "sweep.h5")
    start = time.monotonic()
    sweep(h5, TABLE_RUNS)
    print(f"     {len(TABLE_RUNS)} runs: {time.monotonic() - start:.1f} s", flush=True)
    out = os.path.join(tmp, "out")
    p = report(h5, out)
    check(p.returncode == 0, f"report exits 0 ({p.returncode}: {p.stderr.strip()})")
    check("report:" not in p.stderr and "Traceback" not in p.stderr,
          f"nothing from report on stderr ({p.stderr.strip()})")
    check(os.path.join(out, "report.md") in p.stdout, "stdout names report.md")
    names = ["report.md", "volume.md", "textbook_vs_theory.md", "time_model.md", "advisor.md"]
    for name in names:
        check(os.path.isfile(os.path.join(out, name)), f"{name} written")
    if failures:
        return
    rows = read_rows(h5)
    check(len(rows) == 3 * (len(TABLE_RUNS) - 1) + 1, f"the file holds {len(rows)} rows")
    for name in names:
        check("MISMATCH" not in open(os.path.join(out, name), encoding="utf-8").read(),
              f"{name}: no MISMATCH in real data")
    check_volume_table(os.path.join(out, "volume.md"), rows)
    check_textbook_table(os.path.join(out, "textbook_vs_theory.md"), rows)
    check_time_model(os.path.join(out, "time_model.md"), rows)
    check_advisor(os.path.join(out, "advisor.md"), rows)
    report_md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    for name in names[1:]:
        check(f"]({name})" in report_md, f"report.md links {name}")
    check_pngs(out, rows, [])
    check(any(n.startswith("traffic_") and "_mpi_" in n for n in os.listdir(out)),
          "a traffic heatmap for a vendor collective the library counted")
    check_vendor_matrices(os.path.join(out, "volume.md"), rows)
    check_library_ran(os.path.join(out, "advisor.md"), rows)
    # the default --out (next to the file, .h5 replaced by _report); run through its shebang
    script = os.path.join(ARGS.source, "scripts/report")
    check(os.access(script, os.X_OK), "scripts/report is executable")
    p = subprocess.run([script, h5], capture_output=True, text=True, timeout=150)
    check(p.returncode == 0 and os.path.isfile(os.path.join(tmp, "sweep_report", "report.md")),
          f"without --out: sweep.h5 -> sweep_report/report.md ({p.returncode})")


# ---- group: mismatch ---------------------------------------------------------------------


def edit_rank(h5, row_index, rank, column, delta):
    with h5py.File(h5, "r+") as f:
        row = f["collective/rows"][row_index]
        ranks = f["collective/ranks"]
        i = int(row["ranks_offset"]) + rank
        rec = ranks[i]
        rec[column] = rec[column] + delta
        ranks[i] = rec


def group_mismatch(tmp):
    good = os.path.join(tmp, "good.h5")
    sweep(good, [(2, "allreduce_ring"), (2, "allreduce_mpi")], model=False)
    p = report(good, os.path.join(tmp, "good_out"))
    check(p.returncode == 0, f"the unedited file: exit 0 ({p.returncode})")
    time_md = open(os.path.join(tmp, "good_out", "time_model.md"), encoding="utf-8").read()
    check("No model in this file, run with --model FILE" in time_md,
          "time_model.md without a model says so")
    bad = os.path.join(tmp, "bad.h5")
    shutil.copyfile(good, bad)
    rows = read_rows(bad)
    ring = [r for r in rows if r["algorithm"] == "ring"]
    a, b = ring[0]["index"], ring[-1]["index"]
    edit_rank(bad, a, 1, "sent_bytes", 4)
    edit_rank(bad, b, 0, "theory_recv_msgs", 1)
    out = os.path.join(tmp, "bad_out")
    p = report(bad, out)
    check(p.returncode == 4, f"an edited sent_bytes: exit 4 ({p.returncode})")
    err = p.stderr.strip().split("\n")
    check(any(f"(row {a})" in l and "MISMATCH" in l and "rank 1 sent_bytes" in l for l in err),
          f"stderr names row {a} rank 1 sent_bytes")
    check(any(f"(row {b})" in l and "theory" in l for l in err), f"stderr names row {b}")
    for name in ("report.md", "volume.md", "textbook_vs_theory.md", "time_model.md", "advisor.md"):
        check(os.path.isfile(os.path.join(out, name)), f"{name} written despite the mismatch")
    check(any(n.endswith(".png") for n in os.listdir(out)), "plots written despite the mismatch")
    _, _, lines = table_under(os.path.join(out, "volume.md"), "Collectives")
    marked = {int(l["#"]) for l in lines if "MISMATCH" in l["volume"]}
    check(marked == {a, b}, f"volume.md marks exactly rows {a} and {b} MISMATCH ({marked})")
    line = {int(l["#"]): l for l in lines}[a]
    got = int(line["sent Σ measured"]) - int(line["sent Σ theory"])
    check(got == 4 and "rank 1 sent_bytes" in line["per rank"],
          f"row {a}: measured sum 4 above theory, rank 1 named ({line['per rank']})")
    check("MISMATCH" in open(os.path.join(out, "report.md"), encoding="utf-8").read(),
          "report.md says MISMATCH")


# ---- group: bad_input --------------------------------------------------------------------


def snapshot(directory):
    out = {}
    for root, dirs, files in os.walk(directory):
        for n in dirs + files:
            p = os.path.join(root, n)
            out[p] = open(p, "rb").read() if os.path.isfile(p) else None
    return out


def expect_refused(tmp, what, args):
    before = snapshot(tmp)
    p = subprocess.run([sys.executable, os.path.join(ARGS.source, "scripts/report")] + args,
                       capture_output=True, text=True, timeout=60)
    lines = p.stderr.strip().split("\n")
    check(p.returncode == 2, f"{what}: exit 2 ({p.returncode})")
    check(len(lines) == 1 and lines[0].startswith("report: "),
          f"{what}: one line on stderr ({p.stderr.strip()!r})")
    check(p.stdout == "", f"{what}: nothing on stdout")
    check(snapshot(tmp) == before, f"{what}: nothing written")


def group_bad_input(tmp):
    base = os.path.join(tmp, "inputs")
    os.mkdir(base)
    good = os.path.join(base, "good.h5")
    tool("write", good, "sample", 0, 3)
    out = os.path.join(tmp, "out")

    def path(name):
        return os.path.join(base, name)

    with open(path("text.h5"), "w") as f:
        f.write("not HDF5 at all\n")
    open(path("empty.h5"), "w").close()
    with h5py.File(path("other.h5"), "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(path("wrong_format.h5"), "w") as f:
        f.attrs["collscope_format"] = "something else"
        f.attrs["collscope_schema_version"] = np.int32(1)
    shutil.copyfile(good, path("future.h5"))
    with h5py.File(path("future.h5"), "r+") as f:  # a version this build does not know
        f.attrs["collscope_schema_version"] = np.int32(99)
    shutil.copyfile(good, path("no_ranks.h5"))
    with h5py.File(path("no_ranks.h5"), "r+") as f:
        del f["collective/ranks"]
    os.mkdir(path("dir.h5"))
    cases = [("no such file", path("missing.h5")), ("a directory", path("dir.h5")),
             ("a text file", path("text.h5")), ("an empty file", path("empty.h5")),
             ("HDF5 without collscope_format", path("other.h5")),
             ("another collscope_format", path("wrong_format.h5")),
             ("a later schema version", path("future.h5")), ("a table missing", path("no_ranks.h5"))]
    for what, f in cases:
        expect_refused(tmp, what + " (--out)", [f, "--out", out])
        expect_refused(tmp, what + " (default --out)", [f])
    with open(path("a_file"), "w") as f:
        f.write("keep me\n")
    expect_refused(tmp, "--out is a regular file", [good, "--out", path("a_file")])
    expect_refused(tmp, "--out under a regular file", [good, "--out", path("a_file") + "/sub/dir"])
    if os.path.isdir("/proc/self"):  # refuses new directories, even to root
        expect_refused(tmp, "--out in /proc", [good, "--out", f"/proc/report_test_{os.getpid()}"])
    if os.geteuid() != 0:  # root writes anywhere else
        ro = path("read_only")
        os.mkdir(ro, 0o555)
        expect_refused(tmp, "--out in a read-only directory", [good, "--out", ro + "/out"])
    expect_refused(tmp, "no arguments", [])
    expect_refused(tmp, "an unknown option", [good, "--bogus"])
    p = subprocess.run([sys.executable, os.path.join(ARGS.source, "scripts/report"), "--help"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and all(w in p.stdout for w in ("0 ", "2 ", "4 ", "MISMATCH")),
          "--help documents the exit codes")


# ---- group: empty ------------------------------------------------------------------------


def expect_empty_report(h5, what):
    out = h5 + "_out"
    p = report(h5, out)
    check(p.returncode == 0, f"{what}: exit 0 ({p.returncode}: {p.stderr.strip()})")
    check(os.path.isdir(out) and os.listdir(out) == ["report.md"], f"{what}: report.md alone")
    if os.path.isfile(os.path.join(out, "report.md")):
        text = open(os.path.join(out, "report.md"), encoding="utf-8").read()
        check("no finished rows" in text, f"{what}: report.md says there are no rows")


def group_empty(tmp):
    empty = os.path.join(tmp, "empty.h5")
    tool("write", empty, "nothing", 0, 0)
    expect_empty_report(empty, "no rows")
    unfinished = os.path.join(tmp, "unfinished.h5")
    tool("write", unfinished, "sample", 0, 3)
    with h5py.File(unfinished, "r+") as f:
        for group in ("collective", "pingpong", "layer"):  # the sample has layer rows too
            rows = f[group + "/rows"]
            values = rows[:]
            values["run_id"] = -1
            rows[:] = values
    expect_empty_report(unfinished, "every row unfinished")


# ---- group: pingpong ---------------------------------------------------------------------


def pingpong_has_output():
    p = subprocess.run([os.path.join(ARGS.bin, "pingpong"), "--help"], capture_output=True,
                       text=True, env=MPI_ENV, timeout=60)
    return "-O" in p.stdout


def group_pingpong(tmp):
    h5 = os.path.join(tmp, "pingpong.h5")
    real = pingpong_has_output()
    if real:
        mpirun(3, "pingpong", ["--pairs", "all", "-b", "8", "-e", "64K", "-f", "64", "-n", "3",
                               "-w", "1", "-O", h5])
        mpirun(2, "pingpong", ["-b", "8", "-e", "1K", "-f", "8", "-n", "3", "-w", "1", "-O", h5])
    else:
        print("     pingpong has no -O yet: results_tool's sample rows instead", flush=True)
        tool("write", h5, "pingpong", 0, 6)
    out = os.path.join(tmp, "out")
    p = report(h5, out)
    first_error = p.stderr.strip().split("\n")[0]
    check(p.returncode == 0 if real else p.returncode in (0, 4),
          f"report exits {'0' if real else '0 or 4'} ({p.returncode}: {first_error})")
    pp = read_rows(h5, "pingpong")
    rows = read_rows(h5)
    check(any(r["bw_gbps_matrix"] is not None for r in pp), "the file has --pairs all rows")
    check_pngs(out, rows, pp)
    _, _, lines = table_under(os.path.join(out, "volume.md"), "Ping-pong")
    check(sorted(int(l["#"]) for l in lines) == [r["index"] for r in pp],
          f"volume.md lists the {len(pp)} ping-pong rows")
    if real:
        check(all(l["volume"] == "ok" for l in lines), "every ping-pong row's volume ok")
        advisor = open(os.path.join(out, "advisor.md"), encoding="utf-8").read()
        check("No collective rows" in advisor, "advisor.md: no collective rows")


# ---- group: samples ----------------------------------------------------------------------


def inconsistent(r):
    k = r["ranks"]
    if r["volume"] == "MISMATCH":
        return True
    if not r["measured_known"]:
        return False
    m = r["traffic_bytes"]
    adds_up = m is None or (np.all(m.sum(1) == k["sent_bytes"]) and
                            np.all(m.sum(0) == k["recv_bytes"]))
    if not r["theory_known"]:  # a vendor row the library counted: its matrix must add up
        return not adds_up
    for c in ("sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs"):
        if np.any(k[c] != k["theory_" + c]):
            return True
    return not adds_up


def group_samples(tmp):
    h5 = os.path.join(tmp, "samples.h5")
    tool("write", h5, "samples", 0, 25)
    out = os.path.join(tmp, "out")
    p = report(h5, out)
    rows, pp = read_rows(h5), read_rows(h5, "pingpong")
    want = {("Collectives", r["index"]) for r in rows if inconsistent(r)}
    want |= {("Ping-pong", r["index"]) for r in pp if inconsistent(r)}
    check(p.returncode == (4 if want else 0), f"exit {4 if want else 0} ({p.returncode})")
    got = set()
    for heading in ("Collectives", "Ping-pong"):
        _, _, lines = table_under(os.path.join(out, "volume.md"), heading)
        got |= {(heading, int(l["#"])) for l in lines if "MISMATCH" in l["volume"]}
        check(len(lines) == len(rows if heading == "Collectives" else pp),
              f"volume.md {heading}: one line per row")
    check(got == want, f"MISMATCH exactly on the {len(want)} inconsistent rows")
    check(len([l for l in p.stderr.split("\n") if "volume MISMATCH:" in l]) == min(len(want), 20),
          "stderr names each (up to 20)")
    for name in ("textbook_vs_theory.md", "time_model.md", "advisor.md"):
        check(os.path.isfile(os.path.join(out, name)), f"{name} written")
    check_pngs(out, rows, pp)


def group_planted(tmp):
    """allreduce_direct (the rules' pick at N = 2) slowed 20x through the binaries' test
    hook (COLLSCOPE_DEBUG_SLOWDOWN), beside allreduce_ring, in two rounds at 2 ranks: the
    advisor must find the pick slower beyond the noise at every size, each interval above
    1 (docs/statistics.md); rows carry their round, noise.md names the rounds. 20x, not
    less: a verdict of two rounds needs each round to find the difference, and beside other
    work (ctest runs two tests at once) a whole run of the other binary can fall on the
    machine's slow state, 2-4x slower (5x failed 1 in 3 at a load average of 10); ctest runs it
    alone (RUN_SERIAL) for the same reason."""
    h5 = os.path.join(tmp, "planted.h5")
    sizes = ["-b", "1K", "-e", "64K", "-f", "8", "-n", "10", "-w", "2"]
    for k in range(2):
        for binary in (("allreduce_ring", "allreduce_direct") if k == 0 else
                       ("allreduce_direct", "allreduce_ring")):
            env = {"COLLSCOPE_DEBUG_SLOWDOWN": "20"} if binary == "allreduce_direct" else {}
            mpirun(2, binary, sizes + ["--round", str(k), "-O", h5], env)
    rows = read_rows(h5)
    check(sorted({r["round"] for r in rows}) == [0, 1], "the rows carry their round")
    out = os.path.join(tmp, "out")
    p = report(h5, out)
    check(p.returncode == 0, f"report exits 0 ({p.returncode}: {p.stderr.strip()})")
    _, _, summary = md_tables(os.path.join(out, "advisor.md"))[0]
    mine = [l for l in summary if l["collective"] == "allreduce"]
    check(mine and all(l["verdict"] == "disagree" for l in mine),
          f"the planted 20x: disagree at every size ({[(l['sizes'], l['verdict']) for l in mine]})")
    check(mine and all(float(l["95% interval"].strip("[]").split(",")[0]) > 1 for l in mine),
          f"each interval above 1 ({[l['95% interval'] for l in mine]})")
    noise_md = open(os.path.join(out, "noise.md"), encoding="utf-8").read()
    check("2 rounds (0, 1)" in noise_md, "noise.md: the two rounds")


def group_gpu_sharing(tmp):
    """How ranks shared the (emulated) GPU, from the JSON lines to HDF5, merge and report."""
    h5, merged = os.path.join(tmp, "sharing.h5"), os.path.join(tmp, "merged.h5")
    pipe = os.path.join(tmp, "mps")  # a stand-in MPS daemon: its control pipe, nothing else
    os.mkdir(pipe)
    os.mkfifo(os.path.join(pipe, "control"))
    device = ["-m", "device", "--path", "ipc", "-b", "1K", "-e", "4K", "-f", "4", "-n", "5", "-w", "1",
              "-O", h5]
    emulated = {"COLLSCOPE_DEVICE_EMULATION": "1"}
    for binary in ("allreduce_ring", "allreduce_direct"):
        mpirun(1, binary, device, emulated)
        mpirun(2, binary, device, emulated)
        mpirun(2, binary, device,
               dict(emulated, CUDA_MPS_PIPE_DIRECTORY=pipe))
    want = ["exclusive", "time_sliced", "mps"] * 2
    runs = [sorted({r["gpu_sharing"] for r in read_rows(h5) if r["run_id"] == i}) for i in range(6)]
    check(runs == [[w] for w in want], f"each run's rows: {want} ({runs})")
    with h5py.File(h5, "r") as f:
        gpus = f["run_gpus"][:]
    per_rank = [(int(g["run_id"]), g["gpu_sharing"].decode(), bool(g["mps_client"])) for g in gpus]
    check(per_rank[:5] == [(0, "exclusive", False), (1, "time_sliced", False), (1, "time_sliced", False),
                           (2, "mps", True), (2, "mps", True)],
          f"/run_gpus: each rank's sharing and MPS flag ({per_rank[:5]})")
    p = subprocess.run([sys.executable, os.path.join(ARGS.source, "scripts/merge"), merged, h5],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"merge: exit 0 ({p.stderr.strip()})")
    check([r["gpu_sharing"] for r in read_rows(merged)] == [r["gpu_sharing"] for r in read_rows(h5)],
          "merge keeps every row's gpu_sharing")
    out = os.path.join(tmp, "out")
    p = report(merged, out)
    check(p.returncode == 0, f"report exits 0 ({p.returncode}: {p.stderr.strip()})")
    _, _, summary = md_tables(os.path.join(out, "advisor.md"))[0]
    # a medium may have several lines (one per band of sizes with its own pick)
    media = sorted({l["transport"] for l in summary if l["collective"] == "allreduce"})
    check(media == ["mpi/ipc", "mpi/ipc, MPS", "mpi/ipc, time-sliced GPU"],
          f"advisor: the three sharings advised apart, each labelled ({media})")


GROUPS = {"tables": group_tables, "mismatch": group_mismatch, "bad_input": group_bad_input,
          "empty": group_empty, "pingpong": group_pingpong, "samples": group_samples,
          "planted": group_planted, "gpu_sharing": group_gpu_sharing}


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("group", choices=sorted(GROUPS))
    p.add_argument("--bin", required=True, help="the benchmarks' directory (build/bin)")
    p.add_argument("--source", required=True, help="the source tree (scripts/report)")
    p.add_argument("--tool", required=True, help="results_tool")
    p.add_argument("--mpiexec", default="mpirun")
    ARGS = p.parse_args()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="report_test_") as tmp:
        GROUPS[ARGS.group](tmp)
    print(f"{ARGS.group}: {len(failures)} failures, {time.monotonic() - start:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
