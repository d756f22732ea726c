#!/usr/bin/env python3
"""End-to-end tests of layer_tp_sp_ep (the TP -> SP -> EP flow) through mpirun: every
TP->SP scheme at 1..4 ranks, float32 and bfloat16, forward, backward and both, passing
against the float64 flow; each site's measured bytes equal to its exact theory, and the
dense sites' bytes recomputed here from the ring and pairwise schedules; the MoE's
dispatch and combine moving mirror-image traffic; the all-to-all scheme's transition
moving 1/(2N) of the allreduce scheme's; bad input (exit 2, one line).

usage: tp_sp_ep_test.py BIN_DIR tp_sp_ep [ucx]
"""
from layer_testlib import *  # noqa: F401,F403

PROGRAM = "layer_tp_sp_ep"
SHAPE = {"-S": "12", "-B": "2", "-H": "24", "--heads": "12", "--experts": "12", "--topk": "2"}


def shape(**changes):
    """The test shape as flags, with some values replaced (S="7" replaces -S)."""
    flags = dict(SHAPE)
    for key, value in changes.items():
        flags["-" + key if len(key) == 1 else "--" + key] = value
    return [x for kv in flags.items() for x in kv]
SCHEMES = ["allreduce", "reduce_scatter", "alltoall"]


def dense_site_sent(site, n, pos, t, h, elem):
    """Bytes position `pos` of a TP group of n sends at a dense site (None: not one)."""
    coll, count = site["collective"], site["count"]
    if coll == "alltoall":
        check(count == (t // n) * (h // n), f"all-to-all count per peer (T/N)(H/N) = {count}")
    if coll in ("allreduce", "reduce_scatter", "allgather", "alltoall"):
        return default_sent(coll, count, n, pos, elem)
    return None


def check_volume(what, rec, n):
    t, h = rec["shape"]["T"], rec["shape"]["H"]
    elem = ELEM[rec["dtype"]]
    ok = rec["volume"] == "ok" and rec["sent_bytes"] == rec["theory_sent_bytes"]
    dense_ok = True
    for site in rec["collectives"]:
        ok = ok and site["sent_bytes"] == site["theory_sent_bytes"] and site["volume"] == "ok"
        if site["group"] != "tp" or site["dtype"] == "int64":
            continue
        tp = rec["tp"]
        want = [dense_site_sent(site, tp, r % tp, t, h, elem) for r in range(n)]
        if None not in want:
            dense_ok = dense_ok and site["sent_bytes"] == want
    check(ok, f"{what}: measured == exact theory at every site and rank {rec['sent_bytes']}")
    check(dense_ok, f"{what}: dense sites' bytes == the ring / pairwise formulas")
    # The MoE's token exchanges: every byte sent in the group is received in it.
    a2av = [s for s in rec["collectives"] if s["collective"] == "alltoallv"]
    check(all(sum(s["sent_bytes"]) == sum(s["recv_bytes"]) for s in a2av),
          f"{what}: every all-to-all-v byte sent is received")
    if rec["passes"] != "backward" and len(a2av) >= 2:
        dispatch, combine = a2av[0], a2av[1]
        check(dispatch["sent_bytes"] == combine["recv_bytes"] and
              dispatch["recv_bytes"] == combine["sent_bytes"],
              f"{what}: the combine sends back exactly what the dispatch delivered")


def transition_forward_bytes(rec):
    return sum(sum(s["sent_bytes"]) for s in rec["collectives"]
               if "fwd" in s["site"].split() and s["group"] == "tp")


def test_tp_sp_ep():
    for n in (1, 2, 3, 4):
        for scheme in SCHEMES:
            for dtype in ("float", "bfloat16"):
                for passes in (["both"] if n in (1, 3) else ["both", "forward", "backward"]):
                    what = f"N={n} {scheme} {dtype} {passes}"
                    code, rec, err = run_record(PROGRAM, shape() + ["--scheme", scheme, "-d", dtype,
                                                               "--pass", passes] + QUICK, n)
                    check(code == 0 and rec and rec["pass"],
                          f"{what}: exit 0 and pass (got {code}, {err.strip()[-300:]}, "
                          f"{rec and [(c['tensor'], c['rel_l2_error']) for c in rec['checks']]})")
                    if rec:
                        check_volume(what, rec, n)
    # The same flow under each scheme: the transition's forward bytes, alltoall against
    # allreduce 1/(2N), reduce-scatter 1/2 (T H divisible by N: no uneven blocks).
    for n in (2, 4):
        got = {}
        for scheme in SCHEMES:
            code, rec, _ = run_record(PROGRAM, shape() + ["--scheme", scheme, "--pass", "forward"]
                                      + QUICK, n)
            got[scheme] = rec and transition_forward_bytes(rec)
        check(got["allreduce"] and got["alltoall"] * 2 * n == got["allreduce"] and
              got["reduce_scatter"] * 2 == got["allreduce"],
              f"N={n}: transition forward bytes alltoall = allreduce / 2N, reduce_scatter = "
              f"allreduce / 2 ({got})")
    # TP 2 inside EP 4: two DP replicas of the dense part feeding one expert group.
    code, rec, err = run_record(PROGRAM, shape() + ["--tp", "2", "--ep", "4"] + QUICK, 4)
    check(code == 0 and rec and rec["pass"], f"TP 2, EP 4: pass (got {code}, {err.strip()[-200:]})")
    if rec:
        check_volume("TP 2, EP 4", rec, 4)
    # Skewed routing and a capacity that drops tokens still pass.
    for extra in (["--routing", "skewed"], ["--capacity-factor", "0.5"]):
        code, rec, err = run_record(PROGRAM, shape() + extra + QUICK, 4)
        check(code == 0 and rec and rec["pass"], f"{extra}: pass (got {code}, {err.strip()[-200:]})")
    # The vendor's all-to-all-v: verified, its sites not measured, the others still exact.
    code, rec, _ = run_record(PROGRAM, shape() + ["--alltoallv-alg", "mpi"] + QUICK, 2)
    check(code == 0 and rec and rec["verified"] and rec["volume"] == "n/a" and
          all((s["volume"] == "n/a") == (s["collective"] == "alltoallv") for s in rec["collectives"]),
          f"--alltoallv-alg mpi: verified, only the all-to-all-v sites not measured (got {code})")
    if HAVE_UCX:
        code, rec, err = run_record(PROGRAM, shape() + ["-t", "ucx"] + QUICK, 2)
        check(code == 0 and rec and rec["pass"], f"UCX: pass (got {code}, {err.strip()[-200:]})")
    # Faults the verification must catch: a corrupted element after a site fails the
    # tensors downstream of it, and only those; a skipped call is a volume mismatch.
    # The combine's rows are saved for the router's gradient: a corrupted row reaches Y
    # forward and, through dgate = dY . O, the router and everything upstream backward.
    for fault, failing in (("corrupt:moe fwd combine",
                            {"Y", "dWr (sum over the expert group)", "dX", "dWqkv", "dWo"}),
                           ("corrupt:bwd qkv allreduce", {"dX"}),
                           ("nan:tp->sp fwd", None)):
        code, rec, _ = run_record(PROGRAM, shape() + QUICK, 2,
                                  {"COLLSCOPE_DEBUG_LAYER_FAULT": fault})
        bad = rec and {c["tensor"] for c in rec["checks"] if not c["pass"]}
        check(code == 1 and rec and not rec["pass"] and (failing is None or bad == failing),
              f"{fault}: exit 1, failing {failing or 'something'} (got {code}, {bad})")
    code, rec, _ = run_record(PROGRAM, shape() + QUICK, 2,
                              {"COLLSCOPE_DEBUG_LAYER_FAULT": "skip:moe bwd dispatch"})
    check(code == 1 and rec and rec["volume"] != "ok", "skipped call: exit 1, volume mismatch")
    # Bad input: one line, exit 2.
    for args, np, what in ((shape(S="7"), 2, "divisible"), (shape(experts="6"), 4, "divisible"),
                           (shape() + ["--scheme", "sideways"], 2, "scheme"),
                           (shape(heads="5"), 2, "heads")):
        code, out, err = run(PROGRAM, args + QUICK, np)
        lines = [l for l in err.splitlines() if l.strip()]
        check(code == 2 and len(lines) == 1 and what in lines[0],
              f"{args} at {np} ranks: exit 2, one line naming '{what}' (got {code}, {err!r})")


TESTS = {"tp_sp_ep": test_tp_sp_ep}

if __name__ == "__main__":
    main(TESTS)
