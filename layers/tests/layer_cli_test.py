#!/usr/bin/env python3
"""End-to-end tests of the layer binaries through mpirun: every layer at 1..4 ranks in
float32 and bfloat16, forward, backward and both, passing against its float64 reference
with measured bytes equal to the exact ring theory (recomputed here, independently, from
the uneven-block rule and Megatron's rank layout); bad input and layout violations (exit
2, one line); injected faults the verification must catch (exit 1); every allreduce
algorithm and the vendor's; the JSON-lines record's fields.

usage: layer_cli_test.py BIN_DIR GROUP [ucx]
       GROUP: tp_mlp | dp_grad | tp_attention | vocab_parallel | bad_input | faults |
              algorithms | record
"""
import json
import os
import tempfile

from layer_testlib import *  # noqa: F401,F403 (check, run, run_record, ring_sent, ...)

# ---- the layers, end to end ----------------------------------------------------------

def run_layer(binary, np, tp, d, p, shape):
    """One run of a layer at np ranks, TP tp, storage dtype d, passes p, with its shape
    flags ({"-S": 5, ...}): its exit code, record, stderr, and whether forward and
    backward ran."""
    args = QUICK + [str(x) for flag in shape.items() for x in flag]
    code, rec, err = run_record(binary, args + ["-d", d, "--pass", p, "--tp", str(tp)], np)
    return (code, rec, err) + tuple(PASSES[p])


def test_tp_mlp():
    cases = [(np, tp, d, "both") for np in (1, 2, 3, 4) for tp in (np,) for d in ELEM]
    cases += [(np, np, d, p) for np in (2, 3) for d in ELEM for p in ("forward", "backward")]
    cases += [(4, 2, d, "both") for d in ELEM]  # two replicas of a TP-2 group
    S, B, H = 5, 1, 7  # T x H = 35 elements: uneven blocks at 2, 3 and 4 ranks
    for np, tp, d, p in cases:
        F = 12 * tp
        what = f"layer_tp_mlp np {np} TP {tp} {d} {p}"
        code, rec, err, fwd, bwd = run_layer("layer_tp_mlp", np, tp, d, p,
                                             {"-S": S, "-B": B, "-H": H, "-F": F})
        expect_pass(what, code, rec, (["Y"] if fwd else []) + (["dX", "dW1", "dW2"] if bwd else []))
        if rec:
            expect_volume(what, rec, lambda site: S * B * H)
            check(rec["tp"] == tp and rec["dp"] == np // tp and rec["passes"] == p,
                  f"{what}: layout and passes recorded")


def test_dp_grad():
    cases = [(np, 1, d, "both") for np in (1, 2, 3, 4) for d in ELEM]
    cases += [(3, 1, d, p) for d in ELEM for p in ("forward", "backward")]
    cases += [(4, 2, d, "both") for d in ELEM]  # strided DP groups [0,2] [1,3]
    S, B, H, O = 3, 2, 7, 10  # dW: 70 elements (35 at TP 2), uneven at DP 2, 3, 4
    for np, tp, d, p in cases:
        what = f"layer_dp_grad np {np} TP {tp} DP {np // tp} {d} {p}"
        code, rec, err, fwd, bwd = run_layer("layer_dp_grad", np, tp, d, p,
                                             {"-S": S, "-B": B, "-H": H, "-K": O})
        expect_pass(what, code, rec, (["Y"] if fwd else []) + (["dW"] if bwd else []))
        if rec:
            expect_volume(what, rec, lambda site: H * O // tp)
            check(len(rec["collectives"]) == (1 if bwd else 0),
                  f"{what}: one allreduce in backward, none in forward")


def test_tp_attention():
    S, B = 5, 2  # two sequences of 5 tokens: the per-sequence softmax is exercised
    cases = [(np, np, d, "both", 1) for np in (1, 2, 3, 4) for d in ELEM]
    cases += [(np, np, d, p, 1) for np in (2, 3) for d in ELEM for p in ("forward", "backward")]
    cases += [(4, 2, d, "both", 1) for d in ELEM]  # two replicas of a TP-2 group
    cases += [(2, 2, "float", "both", 0)]          # full (non-causal) attention
    for np, tp, d, p, causal in cases:
        heads = 2 * tp if tp < 3 else tp  # heads divisible by TP; head dim 3
        H = 3 * heads
        what = f"layer_tp_attention np {np} TP {tp} {d} {p} causal {causal}"
        shape = {"-S": S, "-B": B, "-H": H, "--heads": heads, "--causal": causal}
        code, rec, err, fwd, bwd = run_layer("layer_tp_attention", np, tp, d, p, shape)
        expect_pass(what, code, rec,
                    (["Y"] if fwd else []) + (["dX", "dWqkv", "dWo"] if bwd else []))
        if rec:
            sites = (["fwd out-proj allreduce Y [T,H]"] if fwd else []) + \
                (["bwd qkv allreduce dX [T,H]"] if bwd else [])
            expect_volume(what, rec, lambda site: S * B * H, sites=sites)
            check(rec["tp"] == tp and rec["dp"] == np // tp and rec["shape"]["causal"] == bool(causal),
                  f"{what}: layout and shape recorded")


VOCAB_SITES = ["fwd embedding allreduce Y [T,H]", "fwd CE allreduce max [T]",
               "fwd CE allreduce tgt-logit [T]", "fwd CE allreduce sum-exp [T]"]


def test_vocab_parallel():
    S, B, H, V = 5, 1, 7, 24  # [T,H] = 35 elements and [T] = 5: uneven blocks at 2, 3, 4
    cases = [(np, np, d, "both") for np in (1, 2, 3, 4) for d in ELEM]
    cases += [(np, np, d, p) for np in (2, 3) for d in ELEM for p in ("forward", "backward")]
    cases += [(4, 2, d, "both") for d in ELEM]  # two replicas of a TP-2 group
    for np, tp, d, p in cases:
        what = f"layer_vocab_parallel np {np} TP {tp} {d} {p}"
        code, rec, err, fwd, bwd = run_layer("layer_vocab_parallel", np, tp, d, p,
                                             {"-S": S, "-B": B, "-H": H, "-V": V})
        expect_pass(what, code, rec, (["Y", "loss"] if fwd else []) + (["dE"] if bwd else []))
        if rec:
            # the embedding travels in the storage dtype, the cross-entropy in float32
            expect_volume(what, rec, lambda site: S * B * (H if "embedding" in site else 1),
                          lambda site: None if "embedding" in site else "float",
                          VOCAB_SITES if fwd else [])
            ops = [c["op"] for c in rec["collectives"]]
            check(ops == (["sum", "max", "sum", "sum"] if fwd else []),
                  f"{what}: ops sum, max, sum, sum forward, nothing backward ({ops})")


# ---- bad input: exit 2, one line, nothing on stdout ------------------------------------

BAD_INPUT = [  # (binary, np, args, message pattern)
    ("layer_tp_mlp", 3, [], r"FFN size 128 is not divisible by TP 3$"),
    ("layer_tp_mlp", 2, ["--tp", "3"], r"world size 2 is not divisible by TP x CP x PP = 3 \(TP 3, CP 1, PP 1\)"),
    ("layer_dp_grad", 4, ["--tp", "2", "-K", "31"], r"output features 31 is not divisible by TP 2"),
    ("layer_tp_mlp", 2, ["-d", "int8"], r"--dtype must be float32 \(float\) or bfloat16, got .int8."),
    ("layer_tp_mlp", 2, ["--allreduce-alg", "magic"],
     r"unknown --allreduce-alg 'magic' \(expected one of: ring .*mpi\)"),
    ("layer_dp_grad", 2, ["--ffn", "8"], r"--ffn"),  # a flag of another layer
    ("layer_tp_attention", 4, ["--heads", "6", "-H", "36"],
     r"number of attention heads 6 is not divisible by TP 4$"),
    ("layer_tp_attention", 1, ["--heads", "5"], r"hidden size 32 is not divisible by the number of heads 5$"),
    ("layer_tp_attention", 1, ["--causal", "2"], r"--causal must be 0 or 1, got 2$"),
    ("layer_vocab_parallel", 4, ["-V", "30"], r"vocabulary size 30 is not divisible by TP 4$"),
    ("layer_vocab_parallel", 3, ["--tp", "3", "-V", "0"], r"--vocab must be at least 1, got 0$"),
    ("layer_moe", 2, ["-t", "nccl"], r"host memory: -t must be mpi or ucx$"),
    ("layer_tp_sp_ep", 2, ["-t", "tcp"], r"unknown transport 'tcp' \(expected mpi or ucx\)$"),
]


def test_bad_input():
    for binary, np, args, pattern in BAD_INPUT:
        expect_usage_error(binary, args, np, pattern)
    code, _, err = run("layer_tp_mlp", ["-J", "/nonexistent/dir/x.jsonl"], 2)
    check(code == 3 and "cannot write the JSON file '/nonexistent/dir/x.jsonl'" in err,
          f"unwritable -J path: exit 3 (got {code}, {err!r})")
    code, out, _ = run("layer_tp_mlp", ["--help"], 1)
    check(code == 0 and "--allreduce-alg" in out and "--ffn" in out, "--help: exit 0, flags listed")
    code, _, err = run("layer_tp_mlp", [], 2, env={"COLLSCOPE_DEBUG_LAYER_FAULT": "explode"})
    check(code == 2 and "COLLSCOPE_DEBUG_LAYER_FAULT" in err, f"bad fault spec: exit 2 (got {code})")


# ---- faults the verification must catch ----------------------------------------------

def failed(rec):
    return [c["tensor"] for c in rec["checks"] if not c["pass"]] if rec else None


def test_faults():
    shape = QUICK + ["-S", "4", "-B", "2", "-H", "8"]
    for d in ELEM:
        for fault, tensors in (("corrupt:fwd", ["Y"]), ("corrupt:bwd", ["dX"])):
            code, rec, _ = run_record("layer_tp_mlp", shape + ["-d", d], 2,
                                      env={"COLLSCOPE_DEBUG_LAYER_FAULT": fault})
            check(code == 1 and rec and not rec["pass"] and failed(rec) == tensors
                  and rec["volume"] == "ok",
                  f"tp_mlp {d} {fault}: exit 1, only {tensors} fails, volume still ok "
                  f"(got {code}, {failed(rec)})")
    code, rec, _ = run_record("layer_tp_mlp", shape, 4, env={"COLLSCOPE_DEBUG_LAYER_FAULT": "nan:fwd"})
    y = rec and rec["checks"][0]
    check(code == 1 and y and not y["finite"] and not y["pass"] and y["max_abs_error"] is None,
          f"tp_mlp nan:fwd: exit 1, Y not finite, error null (got {code}, {y})")
    code, rec, _ = run_record("layer_tp_mlp", shape, 2, env={"COLLSCOPE_DEBUG_LAYER_FAULT": "skip:fwd"})
    check(code == 1 and rec and rec["volume"] == "MISMATCH" and failed(rec) == ["Y"],
          f"tp_mlp skip:fwd: exit 1, volume mismatch, Y wrong (got {code}, {rec and rec['volume_error']})")
    small = QUICK + ["-S", "4", "-B", "2", "-H", "8", "--heads", "4"]
    for fault, tensors in (("corrupt:fwd", ["Y"]), ("corrupt:bwd", ["dX"])):
        code, rec, _ = run_record("layer_tp_attention", small + ["-d", "bfloat16"], 2,
                                  env={"COLLSCOPE_DEBUG_LAYER_FAULT": fault})
        check(code == 1 and rec and failed(rec) == tensors and rec["volume"] == "ok",
              f"tp_attention {fault}: exit 1, only {tensors} fails (got {code}, {failed(rec)})")
    vocab = QUICK + ["-S", "4", "-B", "2", "-H", "8", "-V", "36"]
    for d in ELEM:
        # +1 on a sum of about V exponentials moves one token's loss by log(1 + 1/V):
        # below bfloat16's tolerance, so there the sum is poisoned with NaN instead.
        sumexp = "corrupt:sum-exp" if d == "float" else "nan:sum-exp"
        for fault, p, tensors in (("corrupt:embedding", "both", ["Y"]),
                                  ("corrupt:tgt-logit", "both", ["loss"]),  # dE never uses it
                                  (sumexp, "both", ["loss", "dE"]),
                                  ("corrupt:max", "forward", ["loss"])):
            code, rec, _ = run_record("layer_vocab_parallel", vocab + ["-d", d, "--pass", p], 3,
                                      env={"COLLSCOPE_DEBUG_LAYER_FAULT": fault})
            check(code == 1 and rec and failed(rec) == tensors and rec["volume"] == "ok",
                  f"vocab_parallel {d} {fault} {p}: exit 1, only {tensors} fails "
                  f"(got {code}, {failed(rec)})")
    code, rec, _ = run_record("layer_vocab_parallel", vocab, 2,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": "skip:sum-exp"})
    check(code == 1 and rec and rec["volume"] == "MISMATCH" and "loss" in failed(rec),
          f"vocab_parallel skip:sum-exp: exit 1, volume mismatch, loss wrong "
          f"(got {code}, {rec and rec['volume_error']})")
    for d in ELEM:
        code, rec, _ = run_record("layer_dp_grad", QUICK + ["-d", d], 3,
                                  env={"COLLSCOPE_DEBUG_LAYER_FAULT": "corrupt:dW"})
        check(code == 1 and failed(rec) == ["dW"],
              f"dp_grad {d} corrupt:dW: exit 1, dW fails (got {code}, {failed(rec)})")


# ---- every allreduce algorithm, the vendor's, UCX -----------------------------------------

def test_algorithms():
    shape = QUICK + ["-S", "5", "-B", "1", "-H", "7", "-F", "30"]  # 35 elements: uneven at 3
    for alg in ("ring", "direct", "tree", "dbt", "halving_doubling"):
        code, rec, _ = run_record("layer_tp_mlp", shape + ["--allreduce-alg", alg], 3)
        check(code == 0 and rec and rec["pass"] and rec["volume"] == "ok"
              and rec["sent_bytes"] == rec["theory_sent_bytes"] and rec["algorithms"] == {"allreduce": alg},
              f"tp_mlp np 3 --allreduce-alg {alg}: pass, bytes == theory "
              f"({rec and rec['sent_bytes']} vs {rec and rec['theory_sent_bytes']})")
    # bfloat16 and float32 calls, SUM and MAX, in one run: each site's theory in its dtype
    vocab = QUICK + ["-S", "5", "-B", "1", "-H", "7", "-V", "30", "-d", "bfloat16"]
    for alg in ("direct", "tree", "dbt", "halving_doubling"):
        code, rec, _ = run_record("layer_vocab_parallel", vocab + ["--allreduce-alg", alg], 3)
        check(code == 0 and rec and rec["pass"] and rec["volume"] == "ok"
              and rec["sent_bytes"] == rec["theory_sent_bytes"]
              and [c["dtype"] for c in rec["collectives"]] == ["bfloat16"] + ["float"] * 3,
              f"vocab_parallel np 3 bfloat16 --allreduce-alg {alg}: pass, bytes == theory "
              f"({rec and rec['sent_bytes']} vs {rec and rec['theory_sent_bytes']})")
    code, rec, _ = run_record("layer_tp_mlp", shape + ["--allreduce-alg", "mpi", "-d", "bfloat16"], 3)
    check(code == 0 and rec and rec["pass"] and rec["volume"] == "n/a" and rec["sent_bytes"] is None
          and rec["collectives"][0]["sent_bytes"] is None,
          f"tp_mlp --allreduce-alg mpi: pass, bytes not measured (got {code}, {rec and rec['volume']})")
    if HAVE_UCX:
        code, rec, _ = run_record("layer_tp_mlp", shape + ["-t", "ucx"], 3)
        check(code == 0 and rec and rec["pass"] and rec["volume"] == "ok" and rec["transport"] == "ucx",
              f"tp_mlp -t ucx np 3: pass, bytes == theory (got {code})")


# ---- the record ----------------------------------------------------------------------

FIELDS = ["layer", "scheme", "nranks", "tp", "sp", "ep", "etp", "dtype", "pass", "rel_l2_error",
          "max_abs_error", "tolerance", "sent_bytes", "theory_sent_bytes", "collectives",
          "checks", "time_us", "compute_us", "comm_us", "textbook_figure", "volume"]


def test_record():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tp.jsonl")
        code, out, err = run("layer_tp_mlp", QUICK + ["-J", path, "-d", "bfloat16"], 2)
        check(code == 0 and "# result: PASS" in out and "fwd fc2 allreduce Y [T,H]" in out,
              f"table on stdout, PASS (got {code}, {err})")
        rec = json.loads(open(path).read())
        missing = [f for f in FIELDS if f not in rec]
        check(not missing, f"record has every field (missing {missing})")
        check(rec["layer"] == "tp_mlp" and rec["scheme"] == "tp" and rec["pass"] is True
              and rec["sp"] is False and rec["dtype"] == "bfloat16" and rec["shape"]["F"] == 128,
              "record values")
        site = rec["collectives"][0]
        T, H = rec["shape"]["T"], rec["shape"]["H"]
        check(site["bytes"] == T * H * 2 and site["closed_form_sent_bytes"] == 2 * 1 / 2 * T * H * 2,
              f"closed form 2(N-1)/N x D at N 2 ({site['closed_form_sent_bytes']})")
        fig = rec["textbook_figure"]
        check(fig["elements"] == 4 * T * H and fig["exact_over_formula"] == 0.5
              and "tp-mlp" in fig["source"],
              f"the textbook 4 Phi (tp-mlp) beside the exact figure: ratio (TP-1)/TP ({fig})")
        check(rec["time_us"] > 0 and rec["comm_us"] > 0 and rec["compute_us"] > 0
              and len(rec["times_us"]) == 2, "times: total, communication, compute")


def test_results_file():
    """-O appends the record to an HDF5 results file (results/SCHEMA.md, /layer)."""
    import h5py  # Debian's python3-h5py (scripts/bootstrap installs it)
    with tempfile.TemporaryDirectory() as d:
        h5, jl = os.path.join(d, "layers.h5"), os.path.join(d, "r.jsonl")
        records = []
        for binary in ("layer_tp_mlp", "layer_vocab_parallel"):
            code, _, err = run(binary, ["-O", h5, "-J", jl], 2)
            check(code == 0, f"{binary} -O: exit 0 (got {code}, {err.strip()})")
            records.append(json.loads(open(jl).read()))
        with h5py.File(h5, "r") as f:
            rows, sites = f["layer/rows"][:], f["layer/sites"][:]
            check([r.decode() for r in rows["layer"]] == ["tp_mlp", "vocab_parallel"]
                  and list(rows["run_id"]) == [0, 1], f"-O: one row per run ({rows['layer']})")
            for i, (row, rec) in enumerate(zip(rows, records)):
                mine = sites[sites["row"] == i]
                check(row["rel_l2_error"] == rec["rel_l2_error"] and row["nranks"] == rec["nranks"]
                      and len(mine) == len(rec["collectives"]),
                      f"-O: the {rec['layer']} row's error, ranks and call sites equal the JSON record's")
        foreign = os.path.join(d, "foreign.h5")
        open(foreign, "w").write("text\n")
        code, _, err = run("layer_tp_mlp", ["-O", foreign], 2)
        check(code == 2 and open(foreign).read() == "text\n" and len(err.strip().splitlines()) == 1,
              f"-O on a non-HDF5 file: exit 2, one line, file untouched (got {code}, {err!r})")


TESTS = {"tp_mlp": test_tp_mlp, "dp_grad": test_dp_grad, "tp_attention": test_tp_attention,
         "vocab_parallel": test_vocab_parallel, "bad_input": test_bad_input,
         "faults": test_faults, "algorithms": test_algorithms, "record": test_record,
         "results_file": test_results_file}

if __name__ == "__main__":
    main(TESTS)
