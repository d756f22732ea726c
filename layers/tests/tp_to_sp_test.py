#!/usr/bin/env python3
"""End-to-end tests of layer_tp_to_sp (the TP -> SP output projection) through
mpirun.

tp_to_sp: each --scheme (allreduce, reduce_scatter, alltoall) at TP 1..4 (and two
  replicas of a TP-2 group), float32 and bfloat16, forward, backward and both: passes
  against the float64 reference, and every call site's bytes per rank equal the volume
  written again here from the schedules (ring allreduce / reduce-scatter / allgather,
  pairwise all-to-all) and the shapes, with the site names and counts in plan order.
tp_to_sp_schemes: the three schemes on one seed and shape (K = H, T H divisible by N^2)
  pass against the same reference, and their forward bytes per rank satisfy exactly
  alltoall x 2N == allreduce and reduce_scatter x 2 == allreduce (the textbook figures
  say alltoall = allreduce / N: docs/textbook-formulas.md, tp-to-sp); the textbook figure and its ratio; faults
  injected at each site fail the right tensors; bad --scheme, S or K not divisible by TP:
  exit 2 with one line.

usage: tp_to_sp_test.py BIN_DIR GROUP [ucx]     GROUP: tp_to_sp | tp_to_sp_schemes
"""

from layer_testlib import *  # noqa: F401,F403 (check, run, run_record, block, ...)

BINARY = "layer_tp_to_sp"
SCHEMES = ("allreduce", "reduce_scatter", "alltoall")


# ---- the planned sites, in order (their bytes: layer_testlib.default_sent) -----------

def expected_sites(scheme, T, K, H, n, fwd, bwd):
    """(site, collective, count) in plan order."""
    per_peer = (T // n) * (K // n)
    p = "out_linear "
    sites = []
    if fwd:
        sites.append({"allreduce": (p + "fwd allreduce Z partial [T,H]", "allreduce", T * H),
                      "reduce_scatter": (p + "fwd reduce_scatter Z partial [T,H]", "reduce_scatter", T * H),
                      "alltoall": (p + "fwd alltoall Y [T,K/N]->[T/N,K]", "alltoall", per_peer)}[scheme])
    if bwd and scheme == "alltoall":
        sites += [(p + "bwd alltoall dY [T/N,K]->[T,K/N]", "alltoall", per_peer),
                  (p + "bwd allreduce dW [K,H]", "allreduce", K * H)]
    elif bwd:
        sites.append((p + "bwd allgather dZ [T,H]", "allgather", T * H))
    return sites


def expect_sites(what, rec, scheme, T, K, H, fwd, bwd):
    n, tp = rec["nranks"], rec["tp"]
    elem = ELEM[rec["dtype"]]
    want_sites = expected_sites(scheme, T, K, H, tp, fwd, bwd)
    got = [(s["site"], s["collective"], s["count"]) for s in rec["collectives"]]
    check(got == want_sites, f"{what}: sites, collectives, counts {got}")
    ok = rec["volume"] == "ok" and rec["sent_bytes"] == rec["theory_sent_bytes"] \
        and rec["recv_bytes"] == rec["theory_recv_bytes"]
    total = [0] * n
    for s, (_, coll, count) in zip(rec["collectives"], want_sites):
        want = [default_sent(coll, count, tp, r % tp, elem) for r in range(n)]
        ok = ok and s["group"] == "tp" and s["dtype"] == rec["dtype"] and \
            s["sent_bytes"] == want and s["theory_sent_bytes"] == want and s["volume"] == "ok"
        total = [t + w for t, w in zip(total, want)]
    check(ok and rec["sent_bytes"] == total,
          f"{what}: measured bytes per rank and site == the schedules' {rec['sent_bytes']}")


def closed_forms(scheme, T, K, H, n, elem):
    """The header's formulas (T, K divisible by n): forward and backward bytes per rank."""
    D = T * H * elem
    if scheme == "allreduce":
        return 2 * (n - 1) * D // n, (n - 1) * D // n
    if scheme == "reduce_scatter":
        return (n - 1) * D // n, (n - 1) * D // n
    a2a = (n - 1) * (T // n) * (K // n) * elem
    return a2a, a2a + 2 * (n - 1) * K * H * elem // n


def args_of(S, B, K, H, scheme, d, p, tp):
    return QUICK + ["-S", str(S), "-B", str(B), "-K", str(K), "-H", str(H), "--scheme", scheme,
                    "-d", d, "--pass", p, "--tp", str(tp)]


def tensors_of(fwd, bwd):
    return (["Z"] if fwd else []) + (["dY", "dW"] if bwd else [])


# ---- tp_to_sp ------------------------------------------------------------------------

def test_tp_to_sp():
    S, B, K, H = 12, 2, 12, 5  # T = 24; K != H; S and K divisible by 1, 2, 3, 4
    T = S * B
    cases = [(np, np, d, "both") for np in (1, 2, 3, 4) for d in ELEM]
    cases += [(3, 3, d, p) for d in ELEM for p in ("forward", "backward")]
    cases += [(4, 2, "float", "both")]  # two replicas of a TP-2 group
    for scheme in SCHEMES:
        for np, tp, d, p in cases:
            what = f"{BINARY} {scheme} np {np} TP {tp} {d} {p}"
            code, rec, err = run_record(BINARY, args_of(S, B, K, H, scheme, d, p, tp), np)
            fwd, bwd = PASSES[p]
            expect_pass(what, code, rec, tensors_of(fwd, bwd))
            if not rec:
                continue
            expect_sites(what, rec, scheme, T, K, H, fwd, bwd)
            f, b = closed_forms(scheme, T, K, H, tp, ELEM[d])
            want = (f if fwd else 0) + (b if bwd else 0)
            check(rec["sent_bytes"] == [want] * np,
                  f"{what}: every rank sends the closed form {want} B ({rec['sent_bytes']})")
            check(rec["scheme"] == scheme and rec["tp"] == tp and rec["dp"] == np // tp and
                  rec["sp"] and rec["shape"]["K"] == K and rec["shape"]["T"] == T,
                  f"{what}: scheme, layout, shape recorded")


# ---- tp_to_sp_schemes ----------------------------------------------------------------

def forward_bytes(rec):
    return rec["sent_bytes"]


def test_same_output_and_ratios():
    S, B, H = 8, 2, 8  # K = H = 8, T = 16: T H = 128 divisible by N^2 at N = 2 and 4
    T = S * B
    for np in (2, 4):
        for d in ELEM:
            recs = {}
            for scheme in SCHEMES:
                what = f"{BINARY} {scheme} np {np} {d} forward (K = H = {H}, seed 7)"
                code, rec, _ = run_record(BINARY, args_of(S, B, H, H, scheme, d, "forward", np)
                                          + ["--seed", "7"], np)
                expect_pass(what, code, rec, ["Z"])
                recs[scheme] = rec
            if not all(recs.values()):
                continue
            ar, rs, a2a = (forward_bytes(recs[s]) for s in SCHEMES)
            elem = ELEM[d]
            check(ar == [2 * (np - 1) * T * H * elem // np] * np,
                  f"np {np} {d}: allreduce forward sends 2(N-1)/N T H e per rank ({ar})")
            check(all(x * 2 * np == y for x, y in zip(a2a, ar)),
                  f"np {np} {d}: alltoall forward == allreduce / (2N) exactly ({a2a} vs {ar})")
            check(all(x * np == y for x, y in zip(a2a, rs)),
                  f"np {np} {d}: alltoall forward == reduce_scatter / N exactly ({a2a} vs {rs})")
            check(all(x * 2 == y for x, y in zip(rs, ar)),
                  f"np {np} {d}: reduce_scatter forward == allreduce / 2 exactly ({rs} vs {ar})")
            check(all(x * np != y for x, y in zip(a2a, ar)),
                  f"np {np} {d}: alltoall forward != allreduce / N (the figures' V2 = V1/N)")
            expect_textbook_figure(recs, np, T, H, elem)


def expect_textbook_figure(recs, n, T, H, elem):
    """docs/textbook-formulas.md, tp-to-sp (send + receive): V1 = 2(N-1)/N T H e,
    V2 = 2(N-1)/N^2 T H e."""
    v1, v2 = 2 * (n - 1) / n * T * H * elem, 2 * (n - 1) / n ** 2 * T * H * elem
    for scheme, want, ratio in (("allreduce", v1, 1.0), ("reduce_scatter", v1, 0.5),
                                ("alltoall", v2, 0.5)):
        sf = recs[scheme]["textbook_figure"]
        check(abs(sf["bytes"] - want) < 1e-6 * want and abs(sf["exact_over_formula"] - ratio) < 1e-12
              and "docs/textbook-formulas.md, tp-to-sp" in sf["explanation"] and "tp-to-sp" in sf["source"],
              f"np {n} {scheme}: textbook figure {sf['bytes']} B (want {want}), exact / figure "
              f"{sf['exact_over_formula']} (want {ratio}), explanation cites docs/textbook-formulas.md, tp-to-sp")


def failed(rec):
    return [c["tensor"] for c in rec["checks"] if not c["pass"]] if rec else None


def test_faults():
    """The group's last rank corrupts element 0 of a call's result (collective_calls.hpp)."""
    shape = ["-S", "6", "-B", "2", "-H", "6"]  # S and K = H divisible by 1, 2, 3
    cases = [("allreduce", 1, "fwd", "forward", ["Z"]),  # TP 1: the last rank keeps row 0
             ("allreduce", 2, "fwd", "forward", []),     # TP 2: it slices row 0 away
             ("reduce_scatter", 2, "fwd", "forward", ["Z"]),
             ("alltoall", 2, "fwd", "forward", ["Z"])]
    cases += [(s, 2, "bwd allgather dZ", "backward", ["dY", "dW"]) for s in SCHEMES[:2]]
    cases += [("alltoall", 2, "bwd alltoall dY", "backward", ["dY"]),
              ("alltoall", 3, "bwd allreduce dW", "backward", ["dW"])]  # one rank's copy
    for scheme, np, site, p, tensors in cases:
        code, rec, _ = run_record(BINARY, QUICK + shape + ["--scheme", scheme, "--pass", p], np,
                                  env={"COLLSCOPE_DEBUG_LAYER_FAULT": "corrupt:" + site})
        check(code == (1 if tensors else 0) and rec and rec["volume"] == "ok"
              and failed(rec) == tensors,
              f"{scheme} np {np} corrupt:{site}: exit {1 if tensors else 0}, failing {tensors} "
              f"(got {code}, {failed(rec)})")
    code, rec, _ = run_record(BINARY, QUICK + shape + ["--scheme", "alltoall"], 2,
                              env={"COLLSCOPE_DEBUG_LAYER_FAULT": "skip:bwd allreduce dW"})
    check(code == 1 and rec and rec["volume"] == "MISMATCH" and failed(rec) == ["dW"],
          f"alltoall skip:bwd allreduce dW: exit 1, volume mismatch, dW wrong "
          f"(got {code}, {rec and rec['volume_error']})")


BAD_INPUT = [  # (np, args, message pattern)
    (2, ["--scheme", "ring"],
     r"--scheme must be allreduce, reduce_scatter or alltoall, got 'ring'$"),
    (2, ["-S", "5"], r"sequence length 5 is not divisible by TP 2 \(sequence parallelism\)$"),
    (4, ["-S", "6", "--tp", "4", "--scheme", "alltoall"],
     r"sequence length 6 is not divisible by TP 4"),
    (3, ["-S", "6", "-K", "8", "--scheme", "alltoall"],
     r"input width K 8 \(--k\) is not divisible by TP 3"),
    (2, ["-S", "4", "-K", "7"], r"input width K 7 \(--k\) is not divisible by TP 2"),
    (2, ["-K", "-1"], r"--k must be at least 0, got -1$"),
]


def test_bad_input():
    for np, args, pattern in BAD_INPUT:
        expect_usage_error(BINARY, args, np, pattern)
    code, out, _ = run(BINARY, ["--help"], 1)
    check(code == 0 and all(f in out for f in ("--scheme", "--k", "--allreduce-alg",
                                                "--reduce-scatter-alg", "--allgather-alg",
                                                "--alltoall-alg")),
          "--help: exit 0, --scheme, --k and the four --<coll>-alg flags listed")


def test_schemes():
    test_same_output_and_ratios()
    test_faults()
    test_bad_input()


TESTS = {"tp_to_sp": test_tp_to_sp, "tp_to_sp_schemes": test_schemes}

if __name__ == "__main__":
    main(TESTS)
