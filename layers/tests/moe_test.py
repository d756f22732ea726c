#!/usr/bin/env python3
"""layer_moe end to end (moe_block.cpp, moe_routing.hpp).

  moe:           EP 1, 2, 3, 4; float32 and bfloat16; forward, backward, both; both router
                 orders; learned, uniform, skewed routing; a dropped-token case; the
                 identity-expert round trip (Y == X and dX == dY exactly). Volume: every
                 site's measured bytes == the driver's exact theory per rank; the split-size
                 allgather recomputed here (ring, E int64 per rank); each rank's dispatch
                 sends what its combine receives back (and the backward's likewise); with
                 uniform routing (T k divisible by E) the exact all-to-all-v bytes
                 (EP-1)/EP x T k H x elem per rank, and with the capacity drop the kept rows
                 only; skewed routing is uneven (EP rank 0 owns the hot experts).
  moe_etp:       EP x ETP = 4 in both ETP schemes, and ETP 2 x EP 1: pass and volume ok;
                 uniform routing: the allgather-v / reduce-scatter-v send (ETP-1) R H elem
                 per rank (R = T k rows each), the scatter_gather rebalance sends nothing
                 (balanced rows), the replicated experts' gradient allreduce is a ring
                 allreduce of local x 2 H F elements. Injected faults in the ETP sites
                 must fail the verification.
                 Injected faults (dispatch, combine, both ways) must fail the verification.
  moe_bad_input: experts not divisible by EP, topk > E, bad --routing, bad --router-order,
                 bad --etp-scheme, world not divisible by ETP x EP, FFN not divisible by ETP:
                 exit 2, one line each.
"""

from layer_testlib import *

BIN_NAME = "layer_moe"
SHAPE = QUICK + ["-S", "8", "-B", "2", "-H", "16"]  # T = 16
T, H = 16, 16


def site(rec, name):
    for s in rec["collectives"]:
        if s["site"] == name:
            return s
    return None


def ep_of(rank, ep, etp):
    return (rank // etp) % ep


def etp_of(rank, etp):
    return rank % etp


def expect_exact_volume(what, rec, ep, etp, experts):
    """Every site: measured == exact theory per rank; the counts allgather recomputed; the
    all-to-all-v pairs mirror each other."""
    n = rec["nranks"]
    sites = rec["collectives"]
    ok = rec["volume"] == "ok" and all(s["sent_bytes"] == s["theory_sent_bytes"] and
                                       s["recv_bytes"] == s["theory_recv_bytes"] and
                                       s["volume"] == "ok" for s in sites)
    check(ok, f"{what}: every site's measured bytes == exact theory per rank")
    counts = site(rec, "fwd counts allgather tokens_per_expert [EP,E] int64")
    if counts:
        want = [ring_allgather_sent(ep * experts, ep, ep_of(r, ep, etp), 8) for r in range(n)]
        check(counts["dtype"] == "int64" and counts["count"] == ep * experts and
              counts["sent_bytes"] == want,
              f"{what}: split-size allgather int64 {counts['sent_bytes']} == ring {want}")
    pairs = [("fwd dispatch alltoallv X rows", "fwd combine alltoallv O rows"),
             ("bwd combine alltoallv dO rows", "bwd dispatch alltoallv dX rows")]
    for a, b in pairs:
        sa, sb = site(rec, a), site(rec, b)
        if sa and sb:
            check(sa["sent_bytes"] == sb["recv_bytes"] and sa["recv_bytes"] == sb["sent_bytes"] and
                  sum(sa["sent_bytes"]) == sum(sb["recv_bytes"]),
                  f"{what}: '{a}' sends per rank what '{b}' receives back {sa['sent_bytes']}")


def run_moe(what, np, args, checks=None):
    code, rec, err = run_record(BIN_NAME, SHAPE + args, np)
    tensors = None
    if rec:
        tensors = [c["tensor"] for c in rec["checks"]]
    check(code == 0 and rec is not None and rec["pass"] and rec["verified"],
          f"{what}: exit 0 and pass (got {code}, "
          f"{rec and [(c['tensor'], c['rel_l2_error'], c['pass']) for c in rec['checks']]}, "
          f"{err.strip()[-300:] if code else ''})")
    if rec:
        check(all(c["rel_l2_error"] <= c["tolerance"] or c["tensor"].startswith("routing")
                  for c in rec["checks"]) and tensors and tensors[0].startswith("routing"),
              f"{what}: checks {tensors} within tolerance")
    return rec


def parse(args, flag, default):
    return type(default)(args[args.index(flag) + 1]) if flag in args else default


def test_moe():
    cases = []
    for ep, experts in ((1, 4), (2, 4), (3, 6), (4, 8)):
        for dtype in ("float", "bfloat16"):
            cases.append((ep, ["-d", dtype, "--experts", str(experts)]))
    cases += [
        (2, ["--experts", "4", "--pass", "forward"]),
        (2, ["--experts", "4", "--pass", "backward", "-d", "bfloat16"]),
        (4, ["--experts", "4", "--router-order", "topk_softmax", "--routing", "skewed"]),
        (4, ["--experts", "8", "--topk", "3", "--routing", "skewed", "-d", "bfloat16"]),
        (2, ["--experts", "4", "--router-order", "topk_softmax", "--topk", "1"]),
        (4, ["--experts", "4", "--routing", "skewed"]),
        (4, ["--experts", "4", "--capacity-factor", "0.75", "--routing", "skewed"]),
        (4, ["--ep", "2", "--experts", "4", "--routing", "skewed"]),  # EDP 2: two replicas
    ]
    dropless_total = None
    for np, args in cases:
        ep = parse(args, "--ep", np)
        what = f"np {np} EP {ep} {' '.join(args)}"
        rec = run_moe(what, np, args)
        if rec:
            expect_exact_volume(what, rec, ep, 1, parse(args, "--experts", 4))
            d = site(rec, "fwd dispatch alltoallv X rows")
            if args == ["--experts", "4", "--routing", "skewed"]:
                dropless_total = sum(d["sent_bytes"])
            if "--capacity-factor" in args:
                check(dropless_total is not None and sum(d["sent_bytes"]) < dropless_total,
                      f"{what}: the capacity drops tokens: dispatch sends "
                      f"{sum(d['sent_bytes'])} B < dropless {dropless_total} B")
            elif "skewed" in args and ep > 1:
                got = d["recv_bytes"]
                hot = [b for r, b in enumerate(got) if ep_of(r, ep, 1) == 0]
                cold = [b for r, b in enumerate(got) if ep_of(r, ep, 1) != 0]
                check(min(hot) > max(cold),
                      f"{what}: skewed routing is uneven, EP rank 0 (hot experts) receives most "
                      f"{d['recv_bytes']}")
    # Uniform routing: T k divisible by E, so every expert gets T k / E rows from every rank;
    # off-rank rows (EP-1)/EP x T k, x H x elem, per rank and per all-to-all-v; with
    # --capacity-factor C only ceil(C T k / E) rows per expert per rank go.
    for ep, experts, topk, cap, dtype in ((2, 4, 2, 0, "float"), (4, 8, 2, 0, "bfloat16"),
                                          (4, 4, 1, 0, "float"), (2, 4, 2, 0.5, "float"),
                                          (4, 8, 2, 0.5, "bfloat16")):
        args = ["--experts", str(experts), "--topk", str(topk), "--routing", "uniform",
                "--capacity-factor", str(cap), "-d", dtype]
        what = f"EP {ep} {' '.join(args)}"
        rec = run_moe(what, ep, args)
        if not rec:
            continue
        expect_exact_volume(what, rec, ep, 1, experts)
        per_expert = T * topk // experts
        if cap > 0:
            per_expert = min(per_expert, -(-int(cap * T * topk) // experts))
        rows_off = per_expert * (experts // ep) * (ep - 1)
        want = [rows_off * H * ELEM[dtype]] * ep
        for s in rec["collectives"]:
            if s["collective"] == "alltoallv":
                check(s["sent_bytes"] == want and s["recv_bytes"] == want,
                      f"{what}: '{s['site']}' sends (EP-1)/EP x kept rows x H x elem = {want} "
                      f"(got {s['sent_bytes']})")
    # The dropped-token case drops: fewer bytes than dropless.
    # Identity experts, topk 1, topk_softmax: gate exactly 1, Y == X and dX == dY bit for bit.
    for ep, dtype in ((2, "float"), (4, "bfloat16"), (3, "float")):
        args = ["--experts", str(ep * 2), "--topk", "1", "--router-order", "topk_softmax",
                "--identity-experts", "-d", dtype, "--routing", "skewed"]
        what = f"EP {ep} identity round trip {dtype}"
        rec = run_moe(what, ep, args)
        if rec:
            errs = {c["tensor"]: c["max_abs_error"] for c in rec["checks"]}
            check(errs.get("Y") == 0 and errs.get("dX") == 0,
                  f"{what}: dispatch + combine give back X exactly (max_abs_error {errs})")
    test_moe_faults()


def expect_fault_caught(what, np, args, fault, tensor):
    code, rec, _ = run_record(BIN_NAME, SHAPE + args, np,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": fault})
    failed = [c["tensor"] for c in rec["checks"] if not c["pass"]] if rec else None
    check(code == 1 and failed is not None and tensor in failed,
          f"{what}: fault {fault} is caught, {tensor} fails (got {code}, failed {failed})")


def test_moe_faults():
    args = ["--experts", "4", "--routing", "skewed"]
    expect_fault_caught("EP 2", 2, args, "corrupt:fwd dispatch", "Y")
    expect_fault_caught("EP 2", 2, args, "corrupt:fwd combine", "Y")
    expect_fault_caught("EP 2", 2, args, "nan:bwd combine", "dW1")
    expect_fault_caught("EP 2", 2, args, "corrupt:bwd dispatch", "dX")


def test_moe_etp():
    for ep, etp, scheme, routing, dtype in ((2, 2, "allgather", "skewed", "float"),
                                            (2, 2, "scatter_gather", "skewed", "bfloat16"),
                                            (2, 2, "allgather", "learned", "bfloat16"),
                                            (2, 2, "scatter_gather", "learned", "float"),
                                            (1, 2, "allgather", "learned", "float"),
                                            (1, 2, "scatter_gather", "skewed", "float"),
                                            (1, 4, "allgather", "skewed", "float"),
                                            (2, 2, "allgather", "uniform", "float"),
                                            (2, 2, "scatter_gather", "uniform", "float")):
        n = ep * etp
        experts, topk, ffn = 4, 2, 32
        args = ["--ep", str(ep), "--etp", str(etp), "--etp-scheme", scheme, "--routing", routing,
                "-d", dtype, "--experts", str(experts), "--moe-ffn", str(ffn)]
        what = f"EP {ep} x ETP {etp} {scheme} {routing} {dtype}"
        rec = run_moe(what, n, args)
        if not rec:
            continue
        expect_exact_volume(what, rec, ep, etp, experts)
        elem = ELEM[dtype]
        c2 = site(rec, "fwd counts allgather over ETP [ETP,EP,E] int64")
        check(c2 is not None and c2["count"] == etp * ep * experts and
              c2["sent_bytes"] == [ring_allgather_sent(etp * ep * experts, etp, etp_of(r, etp), 8)
                                   for r in range(n)],
              f"{what}: ETP count exchange is a ring allgather of EP x E int64 per rank")
        grads = site(rec, "bwd etp allreduce expert grads [local,2HF]")
        if scheme == "scatter_gather":
            count = experts // ep * 2 * H * ffn
            check(grads is not None and grads["count"] == count and
                  grads["sent_bytes"] == [ring_sent(count, etp, etp_of(r, etp), elem)
                                          for r in range(n)],
                  f"{what}: replicated experts' gradients: ring allreduce of {count} over ETP")
        else:
            check(grads is None, f"{what}: sharded experts need no gradient allreduce")
        if routing == "uniform":
            rows = T * topk  # every rank of an expert group receives T k rows (balanced)
            etp_sites = [s for s in rec["collectives"] if s["group"] == "etp" and
                         s["collective"] == "alltoallv"]
            want = [(etp - 1) * rows * H * elem if scheme == "allgather" else 0] * n
            check(len(etp_sites) == 4 and all(s["sent_bytes"] == want for s in etp_sites),
                  f"{what}: ETP all-to-all-v sites send {want[0]} B per rank "
                  f"(allgather-v / reduce-scatter-v: (ETP-1) x T k x H x elem; scatter_gather: "
                  f"balanced rows, nothing moves) got {[s['sent_bytes'] for s in etp_sites]}")
        elif routing == "skewed" and scheme == "scatter_gather" and ep > 1:
            s = site(rec, "fwd etp scatter rows (alltoallv)")
            check(s is not None and sum(s["sent_bytes"]) > 0,
                  f"{what}: uneven rows: the scatter rebalances {s and s['sent_bytes']}")
    base = ["--ep", "2", "--etp", "2", "--experts", "4", "--routing", "skewed"]
    expect_fault_caught("EP 2 x ETP 2 allgather", 4, base + ["--etp-scheme", "allgather"],
                        "corrupt:fwd etp reduce_scatterv", "Y")
    expect_fault_caught("EP 2 x ETP 2 allgather", 4, base + ["--etp-scheme", "allgather"],
                        "corrupt:bwd etp allgatherv", "dW2")
    expect_fault_caught("EP 2 x ETP 2 scatter_gather", 4, base + ["--etp-scheme", "scatter_gather"],
                        "corrupt:fwd etp scatter", "Y")
    expect_fault_caught("EP 2 x ETP 2 scatter_gather", 4, base + ["--etp-scheme", "scatter_gather"],
                        "corrupt:bwd etp allreduce", "dW1")


BAD_INPUT = [
    (4, ["--experts", "6"], r"experts 6 is not divisible by EP 4"),
    (2, ["--experts", "4", "--topk", "5"], r"--topk must be in 1 \.\. experts \(4\), got 5"),
    (2, ["--routing", "random"], r"--routing must be learned, uniform or skewed, got 'random'"),
    (2, ["--router-order", "sorted"], r"--router-order must be softmax_topk or topk_softmax"),
    (2, ["--etp-scheme", "ring"], r"--etp-scheme must be allgather or scatter_gather, got 'ring'"),
    (4, ["--ep", "3"], r"world size 4 is not divisible by ETP x EP x PP = 3"),
    (2, ["--etp", "2", "--moe-ffn", "33"], r"expert FFN size 33 is not divisible by ETP 2"),
    (2, ["--etp", "2", "--moe-ffn", "33", "--pass", "backward"],
     r"expert FFN size 33 is not divisible by ETP 2"),
    (2, ["--capacity-factor", "-1"], r"--capacity-factor must be at least 0"),
]


def test_moe_bad_input():
    for np, args, pattern in BAD_INPUT:
        expect_usage_error(BIN_NAME, SHAPE + args, np, pattern)


TESTS = {"moe": test_moe, "moe_etp": test_moe_etp, "moe_bad_input": test_moe_bad_input}

if __name__ == "__main__":
    main(TESTS)
