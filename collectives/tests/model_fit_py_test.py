#!/usr/bin/python3
"""The time model's Python side: scripts/collscope/model/fit.py and accuracy.py on
synthetic numbers, scripts/fit-model against fake_mpirun.py (an imagined cluster with
known costs), and both scripts' command lines.

  unit   robust statistics, isotonic fit, slopes, pair classes, bands, the written
         one-way leg derived from the ping-pong and the input leg, accuracy bands
  fake   fit-model on 2 nodes x 2 slots through fake_mpirun (hostfile passthrough, pair
         placement, intra / inter classes, an outlier dropped; every fitted parameter,
         written and input bandwidths, against the truth), on one node (inter = intra,
         the probes named, the recursive doubling's copy subtracted), a misplaced pair and
         a failing run (exit 3, nothing written)
  cli    bad usage of fit-model and model-check (exit 2, one line, nothing written); with
         --bin: a short real fit on 2 ranks whose file the binaries load, a short
         model-check with it, and scripts/report's band table and model's pick

model_fit_py_test.py GROUP [--bin DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(ROOT, "scripts")

import fake_mpirun
from collscope.checks import check, failures
from collscope.model import accuracy as acc
from collscope.model import fit

ARGS = None


def near(got, want, rel, what):
    ok = got is not None and want != 0 and abs(got - want) <= rel * abs(want)
    return check(ok, f"{what}: {got!r} within {rel * 100:g}% of {want!r}")


# ---- unit -------------------------------------------------------------------------------


def unit_robust():
    est, spread, kept, dropped = fit.robust([10.0, 10.2, 9.8, 10.1, 30.0])
    check(dropped == [30.0] and len(kept) == 4, f"robust drops the outlier: {dropped}")
    near(est, 10.05, 1e-9, "robust estimate: the median of the rest")
    check(0 < spread < 0.03, f"robust spread is relative: {spread}")
    est, spread, kept, dropped = fit.robust([5.0, 5.0, 20.0])  # MAD 0: a 1% floor
    check(dropped == [20.0] and est == 5.0, "MAD 0: the odd one out is dropped")
    check(fit.robust([3.0])[:2] == (3.0, 0.0), "one value: itself, spread 0")
    check(fit.robust([1.0, 3.0])[3] == [], "two values: none dropped")


def unit_shapes():
    check(fit.isotonic([1, 3, 2, 4]) == [1, 2.5, 2.5, 4], "isotonic pools a dip")
    check(fit.isotonic([5, 1, 1]) == [7 / 3] * 3, "isotonic pools a falling start")
    check(fit.isotonic([1, 2, 3]) == [1, 2, 3], "isotonic keeps a rising curve")
    near(fit.theil_sen([1, 2, 3, 4, 5], [2, 4, 6, 8, 100]), 2.0, 1e-9,
         "theil_sen ignores one wild point")


def unit_classes():
    pairs = fit.classify_pairs([0, 0, 1, 1])
    check(pairs["intra_node"] == [(0, 1), (2, 3)], f"intra pairs: {pairs['intra_node']}")
    check(pairs["inter_node"] == [(0, 2), (0, 3), (1, 2), (1, 3)], "inter pairs")
    m = [[0, 1, 5, 7], [1, 0, 6, 5], [5, 6, 0, 3], [7, 5, 3, 0]]
    t = fit.pingpong_times({"node_of_rank": [0, 0, 1, 1], "latency_us_matrix": m})
    near(t["intra_node"], 2e-6, 1e-9, "intra: the median of pairs (0,1) and (2,3)")
    near(t["inter_node"], 5.5e-6, 1e-9, "inter: the median of the four cross pairs")
    t = fit.pingpong_times({"node_of_rank": [0, 1], "pair": [0, 1], "time_us": 4})
    check(list(t) == ["inter_node"], "one pair without a matrix: classed by its nodes")
    check(fit.call_class({"node_of_rank": [3, 3]}) == "intra_node", "a call on one node")
    check(fit.spans_nodes([0, 1]) and not fit.spans_nodes([2, 2]), "spans_nodes")


def unit_bands():
    # fixed 1 us, 1e9 B/s; the 1 MiB repeats hold an outlier
    one = {b: [1e-6 + b / 1e9] * 3 for b in (8, 16, 32, 1024, 65536, 1 << 20)}
    one[1 << 20] = [1e-6 + (1 << 20) / 1e9, 1e-6 + (1 << 20) / 1e9, 1.0]
    fixed, _ = fit.fixed_part(one)
    near(fixed, 1e-6 + 16 / 1e9, 1e-9, "fixed part: the median of the 3 smallest sizes")
    ports = dict(fit.port_times(one, fixed))
    near(ports[65536], 65536 / 1e9 - 16 / 1e9, 1e-9, "port time at 64 KiB")
    near(ports[1 << 20], (1 << 20) / 1e9 - 16 / 1e9, 1e-9, "the outlier does not move 1 MiB")
    check(ports[8] > 0, "below the noise, port time is floored at bytes / peak")
    bands = fit.link_bands({"one_way": fit.curve(one, fixed)})
    check([b["bytes"] for b in bands] == sorted(one), "one band per size")
    check("both_ways" not in bands[0] and bands[0]["points"]["one_way"][0] == [8, one[8][0]],
          "bands keep their points; no both-ways band without both-ways data")
    # Below n_1/2 (port time < fixed part) noise of +-40 ns must not climb like a
    # staircase: those sizes share one bandwidth, the least-squares slope (1e9 B/s).
    noise = [0, 40e-9, -30e-9, 35e-9, -40e-9, 30e-9, -20e-9, 10e-9, 0, 0, 0, 0, 0, 0]
    sizes = [8 << k for k in range(len(noise))]
    noisy = {b: [1e-6 + b / 1e9 + n] * 3 for b, n in zip(sizes, noise)}
    ports = fit.port_times(noisy, fit.fixed_part(noisy)[0])
    small = [b / p for b, p in ports if b < 1000]
    near(max(small) / min(small), 1.0, 1e-9, f"one bandwidth below n_1/2 ({len(small)} sizes)")
    near(small[0], 1e9, 0.1, "the small sizes' bandwidth: the least-squares slope")
    near(dict(ports)[65536], 65536e-9, 0.01, "above n_1/2: each size its own")
    rates = fit.rate_bands({1000: [1e-7, 1e-7], 4000: [3e-7, 3.2e-7]})
    near(rates[0]["rate"], 1e10, 1e-9, "rate band: bytes / time")
    check(rates[1]["spread"] > 0, "rate band spread")
    lat = fit.latencies(2e-6, 5e-6, 0.5e-6, 4e-6, 1)
    near(lat[0], 1e-6, 1e-9, "link_delay = fixed - 2 o")
    near(lat[1] + lat[2], 3e-6, 1e-9, "start_lat + sync_lat = exchange - ping-pong")
    near(lat[2], 2e-6, 1e-9, "sync_lat: the barrier less its message")
    o, _ = fit.overhead_from_chain([[(16, 3e-6), (64, 8e-6), (256, 27e-6)]], 1.0)
    check(abs(o - (27e-6 - 3e-6) / 240) < 1e-9 or abs(o - 5e-6 / 48) < 1e-9,
          f"overhead: a Theil-Sen slope of time against messages ({o})")
    try:
        fit.port_times({8: [1e-6], 16: [1e-6], 32: [1e-6]}, 1e-6)
        check(False, "flat times cannot give a bandwidth")
    except fit.FitError:
        check(True, "flat times cannot give a bandwidth (FitError)")


def pp_and_input(sizes, input_bw, written_bw):
    """Synthetic ping-pong (half input, half written; fixed 1 us) and broadcast (fixed
    3 us) times, 3 equal repeats per size."""
    pp = {b: [1e-6 + (b / input_bw + b / written_bw) / 2] * 3 for b in sizes}
    return pp, {b: [3e-6 + b / input_bw] * 3 for b in sizes}


def unit_written():
    """The written one-way leg: 2 x the ping-pong's port time less the input leg's."""
    check(fit.written_ports({1024: 3.0, 2048: 1.0}, {1024: 2.0, 2048: 1.8}) ==
          {1024: 4.0, 2048: 0.5}, "written = 2 pp - input, floored at half the ping-pong's")
    sizes = [8 << k for k in range(14)]  # 8 B to 64 KiB
    pp, bc = pp_and_input(sizes, 2e9, 1e9)
    m = {"one_way": pp, "one_way_input": bc, "both_ways": {}, "both_ways_input": {},
         "chains": [[(16, 1e-6), (64, 2e-6)]], "barrier": None}
    link = fit.link_class(m)
    band = band_at(link, 65536)
    # each port time is beyond its probe's 16 B time: pp (b - 16) x 0.75 ns, bc (b - 16) x
    # 0.5 ns, so 2 pp - bc = (b - 16) x 1 ns, the written 1 GB/s
    near(band["one_way"], 65536 / (65520 / 1e9), 1e-9, "one_way: the written leg, derived")
    near(band["one_way_input"], 65536 / (65520 / 2e9), 1e-9, "one_way_input: the broadcast's")
    check(band["points"]["one_way"] == fit.points_of(pp, 65536) and
          band["points"]["one_way_input"] == fit.points_of(bc, 65536) and
          band["spread"]["one_way"] == fit.robust(pp[65536])[1],
          "the written leg keeps the ping-pong's points and spread")
    check(all("one_way_input" in b for b in link["bands"]) and
          not any("both_ways" in b or "both_ways_input" in b for b in link["bands"]),
          "one_way_input in every band; no both-ways keys unmeasured")
    row = next(line for line in fit.describe_link(link) if line.split()[0] == "65536")
    check("1.000/2.000" in row, f"describe_link shows written/input: {row.strip()}")
    # below the ping-pong's n_1/2 (port time under its 1 us fixed part: up to 1 KiB here)
    # both legs are the ping-pong's own; from 2 KiB up they differ
    small, large = band_at(link, 1024), band_at(link, 2048)
    check(small["one_way"] == small["one_way_input"] and
          large["one_way"] < large["one_way_input"] / 1.5,
          f"below n_1/2 written = input = the ping-pong's: {small['one_way']:.4g} "
          f"{small['one_way_input']:.4g}; above they differ: {large['one_way']:.4g} "
          f"{large['one_way_input']:.4g}")
    near(small["one_way"], band_at(fit.link_class(dict(m, one_way_input={})), 1024)["one_way"],
         1e-12, "and the ping-pong's own bandwidth there")
    plain = fit.link_class(dict(m, one_way_input={}))
    near(band_at(plain, 65536)["one_way"], 65536 / (65520 * 0.75e-9), 1e-9,
         "no input leg measured: one_way is the ping-pong's own")
    check(not any("one_way_input" in b for b in plain["bands"]), "and no one_way_input key")
    slow = pp_and_input(sizes, 0.5e9, 1e9)[1]  # input port 2 ns/B > 1.5 x pp's 0.75 ns/B
    near(band_at(fit.link_class(dict(m, one_way_input=slow)), 65536)["one_way"],
         65536 / (0.5 * 65520 * 0.75e-9), 1e-9, "2 pp - input below half pp: the floor")
    try:
        fit.link_class(dict(m, one_way_input={b: v for b, v in bc.items() if b != 1024}))
        check(False, "an input probe missing a ping-pong size is refused")
    except fit.FitError as e:
        check("1024" in str(e), f"an input probe missing a ping-pong size: FitError ({e})")
    both = {b: [9e-6 + b / 1e9] * 3 for b in sizes}
    both_in = {b: [4e-6 + b / 2e9] * 3 for b in sizes}
    link = fit.link_class(dict(m, both_ways=both, both_ways_input=both_in))
    near(link["start_lat"] + link["sync_lat"],
         fit.fixed_part(both_in)[0] - fit.fixed_part(pp)[0], 1e-9,
         "start + sync: the input exchange's fixed part (no copy in it) less the ping-pong's")
    band = band_at(link, 65536)
    near(band["both_ways"], 65536 / (65520 / 1e9), 1e-9, "both_ways from its own probe")
    near(band["both_ways_input"], 65536 / (65520 / 2e9), 1e-9, "both_ways_input from its own")


def unit_accuracy():
    check([acc.band_of(b) for b in (0, 65535, 65536, 1 << 20, 16 << 20, 1 << 30)] ==
          [0, 0, 1, 2, 3, 3], "band edges at 64 KiB, 1 MiB, 16 MiB")
    check(acc.farthest_from_one([0.5, 1.9, 1.1]) == 0.5, "0.5 is farther from 1 than 1.9")
    rows = [{"collective": "allreduce", "algorithm": "ring", "bytes": b, "ratio": r}
            for b, r in ((1024, 1.2), (4096, 1.4), (16384, 0.9), (1 << 20, 1.2), (4 << 20, 1.0))]
    s = acc.band_summary(rows)[("allreduce", "ring")]
    near(s[0]["median"], 1.2, 1e-12, "band median")
    check(s[0]["worst"] == 1.4 and s[0]["rows"] == 3 and s[0]["ok"], "band worst, rows, ok")
    check(not acc.within(2, 1.16) and acc.within(2, 1.1) and acc.within(0, 0.71),
          "targets: 15% from 64 KiB, 30% below")
    near(s[2]["median"], 1.1, 1e-12, "1-16 MiB median")
    check(acc.worst_row(rows)["bytes"] == 4096, "worst row overall")
    header, body = acc.table(acc.band_summary(rows))
    check(header[2:] == ["< 64 KiB", "1 - 16 MiB"] and body[0][2] == "1.20 (1.40)",
          f"table: {header} {body}")
    check(acc.misses(acc.band_summary(rows + [{**rows[3], "ratio": 2.0, "bytes": 2 << 20}]))
          == [("allreduce", "ring", "1 - 16 MiB", 1.2)], "misses")


# ---- fake cluster -----------------------------------------------------------------------


def fit_model(tmp, *extra, env=None):
    out = os.path.join(tmp, "model.json")
    cmd = [sys.executable, os.path.join(SCRIPTS, "fit-model"), "--out", out, "--bin", tmp,
           "--mpirun", f"{sys.executable} {os.path.join(HERE, 'fake_mpirun.py')}", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, FAKE_LOG=os.path.join(tmp, "log"), **(env or {})))
    return p, out


def fake_bin(tmp):
    for name in ("pingpong", "broadcast_binomial", "alltoall_pairwise",
                 "allgather_recursive_doubling", "broadcast_chain", "barrier_mpi",
                 "collscope_reduce_rate"):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(path, 0o755)


def band_at(link, nbytes):
    return next(b for b in link["bands"] if b["bytes"] == nbytes)


def truth_port(cls, way, size):
    """A probe's port time as the fit measures it: beyond the smallest sizes' time (the
    fixed part holds 16 B's port time), so 16 B's port less."""
    return fake_mpirun.port(cls, way, size) - fake_mpirun.port(cls, way, 16)


def check_link(link, cls):
    t = fake_mpirun.TRUTH[cls]
    near(link["link_delay"], t["link_delay"], 0.03, f"{cls} link_delay")
    near(link["overhead"], t["overhead"], 0.02, f"{cls} overhead")
    near(link["start_lat"] + link["sync_lat"], t["per_call"], 0.02, f"{cls} start + sync")
    placed = cls == "intra_node"  # fit-model's PLACED
    for size in (64 << 10, 512 << 10, 1 << 20, 16 << 20):
        band = band_at(link, size)
        want = {way: size / truth_port(cls, way, size) for way in ("one_way", "both_ways")}
        if placed:
            # The ping-pong's half round trip is half input, half written; beyond its own
            # 16 B time its port time is (in + wr) / 2 less (in_16 + wr_16) / 2, the
            # broadcast's in - in_16, so 2 pp - bc = wr - wr_16: the written leg.
            pp = (truth_port(cls, "one_way_input", size) + truth_port(cls, "one_way", size)) / 2
            want["one_way"] = size / (2 * pp - truth_port(cls, "one_way_input", size))
            for way in ("one_way_input", "both_ways_input"):
                want[way] = size / truth_port(cls, way, size)
            check(band["one_way_input"] > 1.1 * band["one_way"] and
                  band["both_ways_input"] > 1.1 * band["both_ways"],
                  f"{cls} at {size} B: input and written told apart")
        else:
            check("one_way_input" not in band and "both_ways_input" not in band,
                  f"{cls} at {size} B: one curve per direction, no placements")
        for way, bw in want.items():
            near(band[way], bw, 0.01, f"{cls} {way} bandwidth at {size} B")
        check(band["spread"]["one_way"] < 0.01, f"{cls} spread at {size} B is small")


def fake_two_nodes():
    with tempfile.TemporaryDirectory() as tmp:
        fake_bin(tmp)
        p, out = fit_model(tmp, "--np", "4", "--repeats", "3", "--iters", "2",
                           "--mpirun-args", "--hostfile /nowhere/hosts --mca btl self,tcp",
                           "--inter-moved-by", "network", "--inter-links", "per_node_pair")
        if not check(p.returncode == 0, f"fit-model on a fake 2 x 2 cluster exits 0 ({p.stderr})"):
            return
        model = json.load(open(out))
        check(model["version"] == 2 and "2 nodes" in model["source"], f"source: {model['source']}")
        check(model["fitted_on"]["node_of_rank"] == [0, 0, 1, 1], "node_of_rank kept")
        check(model["intra_node"]["moved_by"] == "receiver" and
              model["inter_node"]["moved_by"] == "network", "moved_by per class, as given")
        check(model["inter_node"].get("links") == "per_node_pair" and
              "links" not in model["intra_node"], "--inter-links reaches inter_node only")
        check_link(model["intra_node"], "intra_node")
        check_link(model["inter_node"], "inter_node")
        near(band_at(model["intra_node"], 1 << 20)["one_way"],
             (1 << 20) / ((1 << 20) / 5e9 - 16 / 10e9), 0.01,
             "the injected 1 MiB outlier is dropped")
        dropped = model["fitted_on"]["outliers_dropped"]
        check(dropped["intra_node.one_way"] >= 1 and dropped["inter_node.one_way"] >= 1,
              f"outliers counted: {dropped}")
        check(all(f"intra_node.{k}" in dropped
                  for k in ("one_way_input", "both_ways", "both_ways_input")) and
              "inter_node.both_ways" in dropped and "inter_node.one_way_input" not in dropped,
              "outliers counted for every probe")
        reduce = {b["bytes"]: b["rate"] for b in model["reduce_rate"]["bands"]}
        near(reduce[64 << 10], 20e9, 0.01, "reduce rate in cache")
        near(reduce[16 << 20], 8e9, 0.01, "reduce rate from memory")
        near(model["copy_rate"]["bands"][-1]["rate"], 30e9, 0.01, "copy rate")
        launches = [json.loads(line) for line in open(os.path.join(tmp, "log"))]
        check(all("--hostfile" in a and "/nowhere/hosts" in a for a in launches),
              "--mpirun-args reaches every launch")
        pairs = [a for a in launches if a[-1].endswith(
            ("broadcast_binomial", "alltoall_pairwise", "allgather_recursive_doubling",
             "broadcast_chain"))]
        check(sum("ppr:2:node" in a for a in pairs) == 12 and
              sum("ppr:1:node" in a for a in pairs) == 9,
              "the 2-rank probes run 3 times on one node (4 of them) and 3 times across two "
              "(3: no broadcast, inter_node has no placements)")
        inter = [a for a in pairs if "ppr:1:node" in a]
        check(sum(a[-1].endswith("alltoall_pairwise") for a in inter) ==
              sum(a[-1].endswith("allgather_recursive_doubling") for a in inter) == 3,
              "across nodes both exchanges still run, as repeats of one curve")
        check(not os.path.exists(out + ".tmp"), "no FILE.tmp left")


def fake_one_node():
    with tempfile.TemporaryDirectory() as tmp:
        fake_bin(tmp)
        p, out = fit_model(tmp, "--np", "2", "--repeats", "3", env={"FAKE_NODES": "1"})
        if not check(p.returncode == 0, f"fit-model on one fake node exits 0 ({p.stderr})"):
            return
        model = json.load(open(out))
        check_link(model["intra_node"], "intra_node")
        probes = model["fitted_on"].get("probes", {})
        check(set(probes) == {"one_way", "one_way_input", "both_ways", "both_ways_input"} and
              "pingpong" in probes["one_way"] and
              "broadcast_binomial" in probes["one_way_input"] and
              "allgather_recursive_doubling" in probes["both_ways"] and
              "alltoall_pairwise" in probes["both_ways_input"] and
              "both_ways_probe" not in model["fitted_on"], f"fitted_on.probes names them: {probes}")
        check(model["fitted_on"].get("placed_classes") == ["intra_node"],
              "fitted_on.placed_classes says which classes have curves per placement")
        # Both exchanges copy their own block (at the 30 GB/s copy rate) first; left in,
        # the copy would take the both-ways bandwidths far from the truth.
        size, t = 16 << 20, fake_mpirun.TRUTH
        copy = size / fake_mpirun.rate(t["copy"], size) - 16 / fake_mpirun.rate(t["copy"], 16)
        for way, probe in (("both_ways", "recursive doubling"), ("both_ways_input", "all-to-all")):
            want = size / truth_port("intra_node", way, size)
            with_copy = size / (truth_port("intra_node", way, size) + copy)
            got = band_at(model["intra_node"], size)[way]
            check(abs(with_copy - want) > 0.05 * want and abs(got - want) <= 0.01 * want,
                  f"the {probe}'s copy is subtracted ({got:.4g}, not {with_copy:.4g})")
        launches = [json.loads(line) for line in open(os.path.join(tmp, "log"))]
        check(model["inter_node"] == model["intra_node"], "one node: inter_node = intra_node")
        check("copy of intra_node" in model["source"], f"source says so: {model['source']}")
        check(not any("--map-by" in a for a in launches), "one node: no placement flags")
        # (fake_mpirun refuses an exchange run in place, so the fit above would fail)
        check(not any(a[-1].endswith("allgather_ring") for a in launches),
              "the in-place all-gather probe is gone")


def fake_failures():
    with tempfile.TemporaryDirectory() as tmp:
        fake_bin(tmp)
        p, out = fit_model(tmp, "--np", "4", "--repeats", "1",
                           "--inter-pair-args", "--map-by ppr:2:node")
        check(p.returncode == 3 and "inter_node probe" in p.stderr and "[0, 0]" in p.stderr,
              f"a misplaced inter-node pair: exit 3 ({p.stderr.strip()})")
        check(not os.path.exists(out), "nothing written")
        p, out = fit_model(tmp, "--np", "2", "--repeats", "1", env={"FAKE_FAIL": "pingpong"})
        check(p.returncode == 3 and "exited 1" in p.stderr and len(p.stderr.splitlines()) == 1,
              f"a failing run: exit 3, one line ({p.stderr.strip()})")
        check(not os.path.exists(out) and not os.path.exists(out + ".tmp"), "nothing written")


# ---- command lines -----------------------------------------------------------------------


def expect_usage(script, args, pattern, what):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.json")
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args, "--out", out],
                           capture_output=True, text=True)
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        check(p.returncode == 2 and pattern in p.stderr and not os.listdir(tmp),
              f"{script} {what}: exit 2, '{pattern}', nothing written ({p.returncode}: "
              f"{lines[-1] if lines else ''})")


def cli_usage():
    bin_dir = ARGS.bin or "/nonexistent"
    expect_usage("fit-model", ["--np", "1"], "--np must be at least 2", "--np 1")
    expect_usage("fit-model", ["--repeats", "0"], "--repeats must be at least 1", "--repeats 0")
    expect_usage("fit-model", ["--max-bytes", "3K"], "power of two", "--max-bytes 3K")
    expect_usage("fit-model", ["--bin", "/nonexistent"], "no binary 'pingpong'", "no binaries")
    expect_usage("fit-model", ["--bogus"], "unrecognized arguments", "an unknown flag")
    expect_usage("fit-model", ["--both-ways-probe", "allgather_ring"], "unrecognized arguments",
                 "the removed --both-ways-probe")
    expect_usage("model-check", ["--bin", bin_dir, "--model", "/nonexistent.json"],
                 "no model file", "a missing model file")
    expect_usage("model-check", ["--iters", "0"], "--iters must be at least 1", "--iters 0")
    if ARGS.bin:  # an algorithm is looked for among the binaries, which must exist
        expect_usage("model-check", ["--bin", bin_dir, "--algorithms", "allreduce_nope"],
                     "allreduce_nope", "an unknown algorithm")
        # vendor binaries are no hand-written algorithms (reduce_scatter_mpi!)
        for vendor in ("reduce_scatter_mpi", "allreduce_mpi"):
            expect_usage("model-check", ["--bin", bin_dir, "--algorithms", vendor],
                         f"no hand-written algorithm binary '{vendor}'", f"--algorithms {vendor}")


def mpirun_json(binary, args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
    p = subprocess.run(["mpirun", "-q", "-np", "2", os.path.join(ARGS.bin, binary), *args,
                        "--format", "jsonl"], capture_output=True, text=True, env=env, timeout=120)
    return p, [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def cli_real():
    """A short real fit (seconds) whose file the binaries load, and a short model-check."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.json")
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "fit-model"), "--np", "2",
                            "--out", out, "--bin", ARGS.bin, "--repeats", "2", "--iters", "3",
                            "--max-bytes", "64K", "--mpirun-args", "--oversubscribe"],
                           capture_output=True, text=True, timeout=300)
        if not check(p.returncode == 0, f"a short real fit exits 0 ({p.stderr.strip()[-300:]})"):
            return
        model = json.load(open(out))
        check(model["version"] == 2 and model["intra_node"]["bands"][-1]["bytes"] == 65536,
              "the fit's bands reach --max-bytes")
        check(all(b["one_way"] > 0 for b in model["intra_node"]["bands"]), "bandwidths positive")
        check(all(b.get(k, 0) > 0 for b in model["intra_node"]["bands"]
                  for k in ("one_way_input", "both_ways", "both_ways_input")),
              "every band has the written and input bandwidths both ways")
        p, rows = mpirun_json("allreduce_ring", ["-b", "1K", "-e", "64K", "-f", "8", "-n", "2",
                                                 "-w", "0", "--model", out])
        check(p.returncode == 0 and rows and all(r["predicted_us"] > 0 for r in rows),
              "allreduce_ring loads the fitted file and predicts every row")
        # A second model 100 times too slow in every bandwidth and rate: every cell misses.
        slow = os.path.join(tmp, "slow.json")
        for link in (model["intra_node"], model["inter_node"]):
            for band in link["bands"]:
                for key in ("one_way", "both_ways", "one_way_input", "both_ways_input"):
                    if key in band:
                        band[key] /= 100
        for kind in ("reduce_rate", "copy_rate"):
            for band in model[kind]["bands"]:
                band["rate"] /= 100
        with open(slow, "w") as f:
            json.dump(model, f)
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "model-check"), "--model", out,
                            "--model", slow,
                            "--bin", ARGS.bin, "--algorithms", "allreduce_ring,broadcast_chain",
                            "--sizes", "-b 1K -e 64K -f 8", "--repeats", "1", "--iters", "2",
                            "--json", os.path.join(tmp, "check.json")],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0 and "worst row:" in p.stdout and "64 KiB - 1 MiB" in p.stdout,
              f"model-check prints the bands and the worst row ({p.stderr.strip()[-300:]})")
        result = json.load(open(os.path.join(tmp, "check.json")))
        check({(r["collective"], r["algorithm"]) for r in result["rows"]} ==
              {("allreduce", "ring"), ("broadcast", "chain")} and len(result["rows"]) == 6,
              "model-check's JSON holds one row per algorithm and size")
        each = result.get("accuracy_per_model", {})
        check(set(each) == {out, slow} and each[slow]["outside"] == each[slow]["cells"] > 0 and
              each[out]["cells"] == each[slow]["cells"] and
              f"{slow}: {each[slow]['outside']} of" in p.stdout,
              f"every model's accuracy against the same runs: {each}")


def beyond_noise(line):
    """The advisor's verdict where the model's pick is not the measured winner: disagree
    when the interval of pick / fastest lies above 1, else a tie (docs/statistics.md)."""
    low = float(line["95% interval"].strip("[]").split(",")[0])
    return "disagree" if low > 1 else "tie (within noise)"


def md_table_after(text, heading):
    """The rows (as dicts) of the first Markdown table after a line starting with heading."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    table = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip("|").split("|")])
        elif table:
            break
    return [dict(zip(table[0], row)) for row in table[2:]]


def cli_report():
    """scripts/report's band table and the model's pick, against model_accuracy on the
    same rows (read back from the runs' JSON lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        h5, jsonl = os.path.join(tmp, "r.h5"), os.path.join(tmp, "r.jsonl")
        model = os.path.join(ROOT, "collectives", "model", "example.json")
        for binary in ("allreduce_ring", "allreduce_direct", "allreduce_mpi"):
            p, _ = mpirun_json(binary, ["-b", "1K", "-e", "1M", "-f", "16", "-n", "2", "-w", "0",
                                        "--model", model, "-O", h5, "-J", jsonl + "." + binary])
            check(p.returncode == 0, f"{binary} with --model -O")
        rows = [json.loads(line) for b in ("allreduce_ring", "allreduce_direct", "allreduce_mpi")
                for line in open(jsonl + "." + b)]
        p = subprocess.run([os.path.join(SCRIPTS, "report"), h5, "--out",
                            os.path.join(tmp, "out")], capture_output=True, text=True)
        if not check(p.returncode == 0, f"report exits 0 ({p.stderr.strip()})"):
            return
        time_md = open(os.path.join(tmp, "out", "time_model.md"), encoding="utf-8").read()
        bands = md_table_after(time_md, "### Bands: mpi, N = 2")
        rated = [dict(r, ratio=r["predicted_us"] / r["time_us"]) for r in rows
                 if r.get("predicted_us") is not None]
        _, body = acc.table(acc.band_summary(rated))
        check([[line[k] for k in line] for line in bands] == body,
              f"time_model.md's band table is model_accuracy's ({bands} / {body})")
        advisor = open(os.path.join(tmp, "out", "advisor.md"), encoding="utf-8").read()
        detail = md_table_after(advisor, "### allreduce, mpi, N = 2")
        for line in detail:
            predicted = {r["algorithm"]: r["predicted_us"] for r in rated
                         if r["bytes"] == int(line["bytes"])}
            check(line["model picks"] == min(predicted, key=predicted.get),
                  f"advisor: the model's pick at {line['bytes']} B is the lowest prediction")
        picks = md_table_after(advisor, "## The time model's pick")
        check(picks and all(l["verdict"] == ("agree" if l["model picks"] ==
                                             l["fastest hand-written"] else beyond_noise(l))
                            for l in picks), f"advisor: the model's verdicts ({picks})")


GROUPS = {
    "unit": [unit_robust, unit_shapes, unit_classes, unit_bands, unit_written, unit_accuracy],
    "fake": [fake_two_nodes, fake_one_node, fake_failures],
    "cli": [cli_usage],
}


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("group", choices=sorted(GROUPS))
    p.add_argument("--bin", default=None)
    ARGS = p.parse_args()
    tests = GROUPS[ARGS.group] + ([cli_real, cli_report] if ARGS.group == "cli" and ARGS.bin
                                  else [])
    for t in tests:
        t()
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
