#!/usr/bin/env python3
"""End-to-end tests of layer_tp_sp (Megatron TP + sequence parallelism, one transformer
layer) through mpirun.

  tp_sp            TP 1..4 (S = 12 divisible by each), float32 and bfloat16, forward,
                   backward and both, DP 2 at 4 ranks: passes against the float64 layer
                   (Y, dX, the LayerNorm and GEMM weight gradients), the call sites in
                   order, and each site's bytes per rank (sent and received) equal to the
                   ring allgather / reduce-scatter / allreduce schedules recomputed here
                   from the uneven-block rule; the textbook figure's numbers; and SP's bytes
                   equal to plain TP's (layer_tp_attention + layer_tp_mlp, same shape).
  tp_sp_bad_input  S not divisible by TP, heads, FFN, flags: exit 2 with one line; faults
                   injected into a forward and a backward site: exit 1.

usage: tp_sp_test.py BIN_DIR GROUP [ucx]
"""

from layer_testlib import *  # noqa: F401,F403 (check, run, run_record, block, ...)

PROGRAM = "layer_tp_sp"
FWD_SITES = ["fwd attn allgather LN1(X) [T,H]", "fwd attn reduce-scatter Y [T,H]",
             "fwd mlp allgather LN2(X2) [T,H]", "fwd mlp reduce-scatter Y [T,H]"]
BWD_SITES = ["bwd mlp allgather dY [T,H]", "bwd mlp reduce-scatter dLN2 [T,H]",
             "bwd attn allgather dX2 [T,H]", "bwd attn reduce-scatter dLN1 [T,H]",
             "bwd LN allreduce dgamma,dbeta [4H]"]
FWD_TENSORS = ["Y"]
BWD_TENSORS = ["dX", "dgamma1", "dbeta1", "dgamma2", "dbeta2", "dWqkv", "dWo", "dW1", "dW2"]


# ---- exact ring volume per rank, from the schedules (collectives/*/ring.cpp) -----------

def blocks_except(count, n, skip, elem):
    return sum(block(count, n, b) * elem for b in range(n) if b != skip % n)


def allgather_volume(count, n, pos, elem):
    """(sent, received): every block but pos+1 out, every block but its own in."""
    if n == 1:
        return 0, 0
    return blocks_except(count, n, pos + 1, elem), blocks_except(count, n, pos, elem)


def reduce_scatter_volume(count, n, pos, elem):
    """(sent, received): every block but its own out, every block but pos-1 in."""
    if n == 1:
        return 0, 0
    return blocks_except(count, n, pos, elem), blocks_except(count, n, pos - 1, elem)


def allreduce_volume(count, n, pos, elem):
    """Reduce-scatter then allgather, each shifted one block (testlib's ring_sent); what a
    ring rank sends its successor receives, and every rank plays every role once."""
    return ring_sent(count, n, pos, elem), ring_sent(count, n, (pos - 1) % n, elem)


def site_plan(site, T, H):
    """(collective, count, volume function) of a site, from its name."""
    if "LN allreduce" in site:
        return "allreduce", 4 * H, allreduce_volume
    if "allgather" in site:
        return "allgather", T * H, allgather_volume
    return "reduce_scatter", T * H, reduce_scatter_volume


def expect_sp_volume(what, rec, T, H, sites):
    n, tp = rec["nranks"], rec["tp"]
    elem = ELEM[rec["dtype"]]
    got_sites = [s["site"] for s in rec["collectives"]]
    check(got_sites == sites, f"{what}: call sites in order ({got_sites})")
    total_sent, total_recv, ok = [0] * n, [0] * n, rec["volume"] == "ok"
    for site in rec["collectives"]:
        coll, count, volume = site_plan(site["site"], T, H)
        want = [volume(count, tp, r % tp, elem) for r in range(n)]  # rank = tp_pos + TP dp_pos
        sent, recv = [w[0] for w in want], [w[1] for w in want]
        ok = ok and site["collective"] == coll and site["count"] == count \
            and site["group"] == "tp" and site["bytes"] == count * elem \
            and site["sent_bytes"] == sent and site["recv_bytes"] == recv \
            and site["theory_sent_bytes"] == sent and site["volume"] == "ok"
        total_sent = [a + b for a, b in zip(total_sent, sent)]
        total_recv = [a + b for a, b in zip(total_recv, recv)]
    check(ok and rec["sent_bytes"] == total_sent and rec["recv_bytes"] == total_recv,
          f"{what}: measured bytes == ring allgather/reduce-scatter/allreduce per rank and "
          f"site (sent {rec['sent_bytes']}, want {total_sent})")
    return total_sent


def expect_textbook_figure(what, rec, T, H, passes, busiest):
    tp, elem = rec["tp"], ELEM[rec["dtype"]]
    fig = rec["textbook_figure"]
    want = 2 * (tp - 1) / tp * T * H * passes
    check(abs(fig["elements"] - want) < 1e-9 and abs(fig["bytes"] - want * elem) < 1e-9
          and fig["exact_sent_bytes"] == busiest and "tp-sp" in fig["source"],
          f"{what}: textbook figure (tp-sp) 2 (TP-1)/TP B S H per pass = {want} elements, "
          f"exact {fig['exact_sent_bytes']} B")


def shape_for(tp, heads_per_rank=2, head_dim=3):
    heads = heads_per_rank * tp if tp < 3 else tp  # heads divisible by TP
    return heads, heads * head_dim


def test_tp_sp():
    S, B = 12, 2  # S divisible by 1, 2, 3, 4; two sequences exercise the per-sequence softmax
    T = S * B
    cases = [(np, np, d, "both", 1, 0) for np in (1, 2, 3, 4) for d in ELEM]
    cases += [(np, np, d, p, 1, 0) for np in (2, 3) for d in ELEM for p in ("forward", "backward")]
    cases += [(4, 2, d, "both", 1, 0) for d in ELEM]        # two replicas of a TP-2 group
    cases += [(2, 2, "float", "both", 0, 0)]                 # full (non-causal) attention
    cases += [(3, 3, "bfloat16", "both", 1, 15)]             # -F given, 5 FFN columns per rank
    for np, tp, d, p, causal, F in cases:
        heads, H = shape_for(tp)
        args = QUICK + ["-S", str(S), "-B", str(B), "-H", str(H), "--heads", str(heads),
                        "--causal", str(causal), "-d", d, "--pass", p, "--tp", str(tp)]
        if F:
            args += ["-F", str(F)]
        what = f"{PROGRAM} np {np} TP {tp} {d} {p} causal {causal} F {F or 4 * H}"
        code, rec, err = run_record(PROGRAM, args, np)
        fwd, bwd = PASSES[p]
        expect_pass(what, code, rec, (FWD_TENSORS if fwd else []) + (BWD_TENSORS if bwd else []))
        if not rec:
            continue
        sites = (FWD_SITES if fwd else []) + (BWD_SITES if bwd else [])
        sent = expect_sp_volume(what, rec, T, H, sites)
        expect_textbook_figure(what, rec, T, H, fwd + bwd, max(sent))
        check(rec["tp"] == tp and rec["dp"] == np // tp and rec["sp"] is True
              and rec["shape"]["F"] == (F or 4 * H) and rec["shape"]["causal"] == bool(causal),
              f"{what}: layout, SP and shape recorded")
        if fwd and not bwd and tp > 1:  # forward: 4 (N-1)/N T H elem = twice the figure's pair
            check(sent[0] == 4 * (tp - 1) * T * H // tp * ELEM[d]
                  and abs(rec["textbook_figure"]["exact_over_formula"] - 2.0) < 1e-12,
                  f"{what}: forward sends 4 (N-1)/N T H elem = 2 x the textbook figure")
    test_same_bytes_as_plain_tp(S, B)


def test_same_bytes_as_plain_tp(S, B):
    """SP replaces each block's allreduce by a reduce-scatter + allgather pair: the same
    bytes per rank as layer_tp_attention + layer_tp_mlp at the same shape, measured."""
    for tp in (2, 4):
        heads, H = shape_for(tp)
        common = QUICK + ["-S", str(S), "-B", str(B), "-H", str(H), "--tp", str(tp)]
        attn = ["--heads", str(heads)]
        _, sp, _ = run_record(PROGRAM, common + attn + ["--pass", "forward"], tp)
        _, at, _ = run_record("layer_tp_attention", common + attn + ["--pass", "forward"], tp)
        _, ml, _ = run_record("layer_tp_mlp", common + ["--pass", "forward"], tp)
        ok = sp and at and ml
        plain = ok and [a + m for a, m in zip(at["sent_bytes"], ml["sent_bytes"])]
        check(ok and sp["sent_bytes"] == plain,
              f"TP {tp} forward: SP sends the bytes of plain TP per rank "
              f"({sp and sp['sent_bytes']} vs {plain})")


# ---- bad input: exit 2, one line, nothing on stdout; faults: exit 1 ------------------

BAD_INPUT = [  # (np, args, message pattern)
    (4, ["-S", "10", "--heads", "4"],
     r"sequence length 10 is not divisible by TP 4 \(sequence parallelism\)$"),
    (2, ["-S", "7", "-B", "3"],
     r"sequence length 7 is not divisible by TP 2 \(sequence parallelism\)$"),
    (4, ["-S", "12", "--heads", "6", "-H", "36"],
     r"number of attention heads 6 is not divisible by TP 4$"),
    (3, ["-S", "12", "--heads", "3", "-H", "24", "-F", "16"], r"FFN size 16 is not divisible by TP 3$"),
    (1, ["--heads", "5"], r"hidden size 32 is not divisible by the number of heads 5$"),
    (2, ["--causal", "2"], r"--causal must be 0 or 1, got 2$"),
    (2, ["-F", "-4"], r"--ffn must be at least 0, got -4$"),
    (2, ["-S", "0"], r"--seq must be at least 1, got 0$"),
    (2, ["--vocab", "8"], r"--vocab"),  # a flag of another layer
    (4, ["--tp", "3", "-S", "12"], r"world size 4 is not divisible by TP x CP x PP = 3"),
]


def failed(rec):
    return [c["tensor"] for c in rec["checks"] if not c["pass"]] if rec else None


def test_bad_input():
    for np, args, pattern in BAD_INPUT:
        expect_usage_error(PROGRAM, args, np, pattern)
    shape = QUICK + ["-S", "8", "-B", "2", "-H", "8", "--heads", "4"]
    # the forward attention output's reduce-scatter: Y wrong (and what backward derives)
    code, rec, _ = run_record(PROGRAM, shape, 2,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": "corrupt:fwd attn reduce-scatter"})
    check(code == 1 and rec and "Y" in failed(rec) and rec["volume"] == "ok",
          f"corrupt:fwd attn reduce-scatter: exit 1, Y fails, volume ok (got {code}, {failed(rec)})")
    # element 0 of the packed LayerNorm gradients is dgamma1[0]: only dgamma1 fails
    code, rec, _ = run_record(PROGRAM, shape, 2,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": "corrupt:bwd LN allreduce"})
    check(code == 1 and rec and failed(rec) == ["dgamma1"] and rec["volume"] == "ok",
          f"corrupt:bwd LN allreduce: exit 1, only dgamma1 fails (got {code}, {failed(rec)})")
    # the backward gradient allgather of the attention block: dX and its weights wrong
    code, rec, _ = run_record(PROGRAM, shape + ["-d", "bfloat16"], 4,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": "corrupt:bwd attn allgather"})
    # (the MLP block's backward ran before it: Y, dW1, dW2, dgamma2, dbeta2 stay right)
    attn_bwd = ["dX", "dgamma1", "dbeta1", "dWqkv", "dWo"]
    check(code == 1 and rec and failed(rec) == attn_bwd,
          f"bfloat16 corrupt:bwd attn allgather: exit 1, only {attn_bwd} fail (got {code}, {failed(rec)})")
    # a skipped call: the volume no longer matches the plan
    code, rec, _ = run_record(PROGRAM, shape, 2,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": "skip:fwd mlp allgather"})
    check(code == 1 and rec and rec["volume"] == "MISMATCH",
          f"skip:fwd mlp allgather: exit 1, volume mismatch (got {code}, {rec and rec['volume_error']})")


TESTS = {"tp_sp": test_tp_sp, "tp_sp_bad_input": test_bad_input}

if __name__ == "__main__":
    main(TESTS)
