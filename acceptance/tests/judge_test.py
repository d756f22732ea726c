#!/usr/bin/python3
"""The judge on made-up clusters (no MPI): the statistics, every kind of blame, the
retests that confirm, move or clear a suspect, thresholds, the baseline, and the spec and
model-file readers.

usage: judge_test.py GROUP   (GROUP: stats | blame | limits | spec)
"""

import copy
import json
import math
import os
import sys
import tempfile

import synthetic
from synthetic import Cluster, blame_of, judge, spec

from collscope.accept.evidence import link_report
from collscope.accept.spec import ClassSpec, SpecError, load_model, load_spec, port_time
from collscope.accept.stats import Outlier, decide, mad, median, robust_z
from collscope.checks import check, failures


def inter_links(v):
    return [l for l in v["links"] if l["class"] == "inter-node"]


# ---- stats ----------------------------------------------------------------------------------

def test_stats():
    check(median([3, 1, 2]) == 2 and median([4, 1, 3, 2]) == 2.5, "median of odd and even counts")
    check(mad([1, 2, 3, 4, 100]) == 1, "MAD ignores the one far value (1 2 3 4 100: 1)")
    check(robust_z(5, 5, 0) == 0 and robust_z(4, 5, 0) == -math.inf, "no spread: any difference is infinite")
    check(math.isclose(robust_z(8, 5, 2), 3 / (1.4826 * 2)), "robust z = (x - median) / (1.4826 MAD)")
    peers = [1.0, 1.01, 0.99, 1.02, 0.98, 0.25]
    check(Outlier(0.25, peers, "low", 0.4, 3.5).bad and not Outlier(0.99, peers, "low", 0.4, 3.5).bad,
          "a quarter-rate link is a low outlier, a 1% slower one is not")
    check(not Outlier(0.7, [1.0, 1.0, 1.0, 0.7], "low", 0.4, 3.5).bad,
          "0.7 x the median is within a 0.4 tolerance even with no spread at all")
    check(not Outlier(0.5, [1.0, 0.5, 1.5, 0.6, 1.4], "low", 0.4, 3.5).bad,
          "0.5 x the median of a noisy class is no outlier (robust z small)")
    check(Outlier(130, [40, 42, 38, 41, 130], "high", 2.0, 3.5).bad, "a 3.2 x latency is a high outlier")
    table = [(decide(k, 3), k) for k in range(4)]
    check([v for v, _ in table] == ["pass", "inconclusive", "inconclusive", "fail"],
          f"3 repeats: 0 pass, 1-2 inconclusive, 3 fail ({table})")
    nine = [decide(k, 9) for k in range(10)]
    check(nine == ["pass"] * 3 + ["inconclusive"] * 4 + ["fail"] * 3, f"9 repeats: 0-2, 3-6, 7-9 ({nine})")
    check(decide(0, 0) == "not judged", "no repeats: not judged")


# ---- blame ----------------------------------------------------------------------------------

def test_blame():
    v = judge(Cluster())
    check(v["verdict"] == "pass" and v["exit_code"] == 0 and v["blame"] == [] and v["retests"] == [],
          f"all links equal: pass, nothing blamed, nothing retested ({blame_of(v)})")
    check(all(l["verdict"] == "pass" for l in v["links"]) and len(v["links"]) == 28
          and all(h["verdict"] == "pass" for h in v["hosts"]), "all equal: 28 pairs and 4 hosts pass")

    c = Cluster().slow_link("h1", "h2", 0.25)
    v = judge(c)
    check(v["verdict"] == "fail" and v["exit_code"] == 1 and blame_of(v) == [("link", "h1-h2")],
          f"slow link h1-h2: exactly link h1-h2 blamed ({blame_of(v)})")
    over = [l for l in v["links"] if l["link"] == "h1-h2"]
    check(len(over) == 4 and all(l["verdict"] == "fail" and l["explained_by"] == "link h1-h2" for l in over),
          "slow link: its 4 pairs fail, explained by the link")
    check(all(l["verdict"] == "pass" for l in v["links"] if l["link"] != "h1-h2"), "slow link: every other pair passes")
    check(all(h["verdict"] == "pass" for h in v["hosts"]), "slow link: every host passes (h1, h2 too)")
    roles = [(t["pair"], t["result"]) for t in v["retests"]]
    check(roles == [([1, 7], "reference"), ([2, 4], "slow"), ([0, 2], "ok"), ([0, 4], "ok")],
          f"slow link: a known-good reference pair, then the link alone, each end against a good "
          f"rank of h0 ({roles})")
    hl = {l["link"]: l["verdict"] for l in v["host_links"]}
    check(hl["h1-h2"] == "fail" and sum(x == "fail" for x in hl.values()) == 1, f"host links: h1-h2 alone fails ({hl})")

    v = judge(Cluster().slow_host("h2", 0.25))
    check(blame_of(v) == [("host", "h2")], f"slow host h2: the host blamed, not its 12 pairs ({blame_of(v)})")
    h2 = [l for l in inter_links(v) if "h2" in l["hosts"]]
    check(len(h2) == 12 and all(l["explained_by"] == "host h2" for l in h2), "slow host: its 12 pairs explained by it")
    intra = [l for l in v["links"] if l["link"] == "h2"][0]
    check(intra["verdict"] == "pass", "slow host: its intra-node pair passes (the host's network, not its memory)")
    check([h["host"] for h in v["hosts"] if h["verdict"] == "fail"] == ["h2"], "slow host: only h2 fails")

    # the report renders a peer judgement that a retest alone decided ({"verdict"} only)
    v["links"][0]["bandwidth"]["peers"] = {"verdict": "fail"}
    rows = link_report(v)
    check(any("fail (retest)" in row for row in rows), "report: a retest-only judgement reads 'fail (retest)'")

    v = judge(Cluster().slow_rank(5, 0.25))
    check(blame_of(v) == [("rank", "rank 5")], f"slow rank 5 (every pair of it): rank 5 blamed ({blame_of(v)})")
    check([r["rank"] for r in v["ranks"] if r["verdict"] == "fail"] == [5], "slow rank: only rank 5 fails")
    pair45 = [l for l in v["links"] if l["ranks"] == [4, 5]][0]
    check(pair45["explained_by"] == "rank 5" and "within its host too" in v["blame"][0]["reason"],
          f"slow rank: its intra-node pair too is explained by it, not by its host ({pair45['explained_by']})")

    c = Cluster()
    c.compute_factor[3] = 4.0
    v = judge(c)
    check(blame_of(v) == [("rank", "rank 3")] and "slow to compute, not a slow link" in v["blame"][0]["reason"],
          f"rank 3 slow to compute: rank 3 blamed, its links pass ({v['blame']})")
    check(all(l["verdict"] == "pass" for l in v["links"]), "slow compute: every link passes")

    c = Cluster().slow_link("h1", "h2", 0.25)
    c.retest_rate_factor = {}   # the retest finds the link fine: a transient
    v = judge(c)
    check(v["verdict"] == "inconclusive" and v["exit_code"] == 4 and v["blame"] == [],
          f"slow in screening, fine when retested: inconclusive, nothing blamed ({blame_of(v)})")

    c = Cluster().slow_pairs([(0, 6)], 0.25)
    v = judge(c)
    check(blame_of(v) == [("link", "ranks 0-6 (h0-h3)")],
          f"one slow pair among the 4 over h0-h3: that pair is blamed ({blame_of(v)})")

    c = Cluster().slow_link("h1", "h2", 0.25)
    c.retest_rate_factor = dict(c.rate_factor)
    c.retest_rate_factor.update({(2, 6): 0.25, (2, 7): 0.25, (0, 2): 0.25, (1, 2): 0.25, (2, 3): 0.25})
    v = judge(c)
    check(blame_of(v) == [("rank", "rank 2")],
          f"the link's end is slow with a good peer too, its host's other rank is not: rank 2 ({blame_of(v)})")

    c = Cluster().slow_pairs([(2, 3)], 0.2)
    v = judge(c)
    check(blame_of(v) == [("host", "h1")], f"slow intra-node pair of a 2-rank host: host h1 ({blame_of(v)})")

    c = Cluster().slow_pairs([(1, 5)], 4.0, latency=True)
    v = judge(c)
    check(blame_of(v) == [("link", "ranks 1-5 (h0-h2)")] and v["blame"][0]["metrics"] == ["latency"],
          f"one pair 4 x later: blamed on latency ({v['blame']})")

    c = Cluster(noise=0.03, seed=7)
    s = c.screening()
    for i in range(2):   # one pair low in 2 of 9 observations: noise, not a fault
        s.bandwidth["rounds"][i][0][4] *= 0.3
        s.bandwidth["rounds"][i][4][0] *= 0.3
    from collscope.accept.judge import Judge
    v = Judge(c.layout, s, {}, spec(), None, synthetic.Retests(c)).run()
    check(v["verdict"] == "pass" and not v["retests"], f"2 low observations of 9: pass without retest ({blame_of(v)})")
    s = c.screening()
    for p in ("rounds", "ring"):
        for i in range(2):
            s.bandwidth[p][i][0][4] *= 0.3
            s.bandwidth[p][i][4][0] *= 0.3
    v = Judge(c.layout, s, {}, spec(), None, synthetic.Retests(c)).run()
    pair = [l for l in v["links"] if l["ranks"] == [0, 4]][0]
    check(v["verdict"] == "pass" and [t["pair"] for t in v["retests"]][1:] == [[0, 4]]
          and pair["bandwidth"]["peers"]["verdict"] == "pass",
          f"4 low observations of 9: inconclusive, retested alone, fine: pass ({v['retests']})")

    c = Cluster(noise=0.03, seed=7)
    s = c.screening()
    for p in ("rounds", "ring"):
        for i in range(2):
            s.bandwidth[p][i][0][4] *= 0.3
            s.bandwidth[p][i][4][0] *= 0.3
    c.retest_script[(0, 4)] = [0.3, 1.0]   # slow in its first retest (a burst), fine in the second
    v = Judge(c.layout, s, {}, spec(), None, synthetic.Retests(c)).run()
    mine = [t["result"] for t in v["retests"] if t["pair"] == [0, 4]]
    check(v["verdict"] == "inconclusive" and v["blame"] == [] and mine == ["slow", "ok"],
          f"inconclusive screening, slow in one retest and fine in the next: inconclusive, not blamed ({mine})")
    s = c.screening()
    for p in ("rounds", "ring"):
        for i in range(2):
            s.bandwidth[p][i][0][4] *= 0.3
            s.bandwidth[p][i][4][0] *= 0.3
    c.retest_script[(0, 4)] = [0.3, 0.3]
    v = Judge(c.layout, s, {}, spec(), None, synthetic.Retests(c)).run()
    check(blame_of(v) == [("link", "ranks 0-4 (h0-h2)")],
          f"inconclusive screening, slow in two retests: blamed ({blame_of(v)})")

    c = Cluster(seed=3)
    s = c.screening()
    s.latency[2][0][1] *= 6   # h0's intra-node pair 6 x later in one repeat of 3 (a burst)
    s.latency[2][1][0] *= 6
    v = Judge(c.layout, s, {}, spec(), None, synthetic.Retests(c)).run()
    check(v["verdict"] == "pass" and [0, 1] in [t["pair"] for t in v["retests"]],
          f"an intra-node pair late in 1 repeat of 3, fine when retested: pass ({blame_of(v)}, "
          f"{[(t['pair'], t['result']) for t in v['retests']]})")

    c = Cluster()
    c.collective_factor["h1"] = 0.4    # a burst of load during h1's launch only
    c.collective_retest_factor = 0.5   # and another, slowing every host alike, during the retests
    v = judge(c, collectives=c.collectives())
    h1 = [x for x in v["collectives"] if x["scope"] == "h1"][0]
    check(v["verdict"] == "pass" and h1["retested"] and h1["verdict"] == "pass"
          and c.collective_launches[:3] == ["h0", "h1", "h0"],
          f"a host's collective slow, then run between two runs of a reference host during a burst "
          f"that slows all: cleared ({h1.get('retest')}, {c.collective_launches})")
    c = Cluster()
    c.collective_factor["h1"] = 0.4
    v = judge(c, collectives=c.collectives())
    check(blame_of(v) == [("host", "h1")] and "run again between two runs of h0's" in v["blame"][0]["reason"],
          f"a host's collective slow, also beside a reference host: the host blamed ({v['blame']})")
    c = Cluster()
    c.compute_factor[3] = 4.0
    c.collective_factor["h1"] = 0.4
    v = judge(c, collectives=c.collectives())
    check(blame_of(v) == [("rank", "rank 3")], f"a slow collective on the host of a rank slow to compute: "
          f"the rank, not the host ({blame_of(v)})")
    v = judge(Cluster(), problems=[{"what": "allreduce_ring-all", "bytes": 1024, "wrong": 12, "volume": "ok",
                                    "first_bad_pair": None, "first_bad_rank": 6}])
    check(blame_of(v) == [("rank", "rank 6")] and v["verdict"] == "fail",
          f"a collective's wrong result: the rank of the first wrong element ({blame_of(v)})")
    v = judge(Cluster(), problems=[{"what": "pairs-r0", "bytes": 1024, "wrong": 0, "volume": "MISMATCH",
                                    "first_bad_pair": None, "first_bad_rank": None}])
    check(v["verdict"] == "fail" and v["blame"] == [], "a volume mismatch without a culprit still fails")

    big = Cluster(hosts=8, ranks_per_host=4).slow_link("h3", "h6", 0.5)
    v = judge(big)
    check(blame_of(v) == [("link", "h3-h6")], f"8 hosts x 4 ranks, one link at half rate: that link ({blame_of(v)})")

    two = Cluster(hosts=2, ranks_per_host=2)
    v = judge(two)
    check(v["verdict"] == "pass" and all(h["inter-node"]["bandwidth"]["peers"]["verdict"] == "not judged"
                                         for h in v["hosts"]), "2 hosts: hosts are not judged against peers")


# ---- thresholds and the baseline ---------------------------------------------------------------

def class_spec(name, gbps, latency_us, bw_tol=0.2, lat_tol=1.0):
    bw, lat = gbps * 1e9, latency_us * 1e-6
    return ClassSpec(name, "spec", lambda s: lat + s / bw, True, True,
                     {"bandwidth_tolerance": bw_tol, "latency_tolerance": lat_tol})


def test_limits():
    too_high = {"inter-node": class_spec("inter-node", 0.1, 1.0)}   # 4 x what the links do
    v = judge(Cluster(), spec(too_high))
    inter = inter_links(v)
    check(v["verdict"] == "fail" and len(inter) == 24
          and all(l["bandwidth"]["threshold"]["verdict"] == "fail" for l in inter),
          "threshold 4 x above the links: every inter-node pair fails it")
    check(all(l["bandwidth"]["peers"]["verdict"] == "pass" for l in inter),
          "... and the peer comparison finds no outlier")
    check(blame_of(v) == sorted(("link", f"h{a}-h{b}") for a in range(4) for b in range(a + 1, 4)),
          f"... every host link blamed, no host or rank ({blame_of(v)})")
    check(all(l["explained_by"] == f"link {l['link']}" for l in inter), "... each pair explained by its host link")
    check("none is an outlier" in v["classes"]["inter-node"]["bandwidth"].get("note", ""),
          "... and the class summary says the class as a whole misses the spec")
    check(all(l["verdict"] == "pass" for l in v["links"] if l["class"] == "intra-node"),
          "... intra-node pairs (not in the spec) pass")

    fine = {"inter-node": class_spec("inter-node", 0.02, 60.0),
            "intra-node": class_spec("intra-node", 2.0, 5.0)}
    v = judge(Cluster(), spec(fine))
    check(v["verdict"] == "pass" and set(v["classes"]) == {"inter-node", "intra-node"},
          "an achievable spec passes")

    v = judge(Cluster().slow_link("h1", "h2", 0.25), spec(fine))
    check(blame_of(v) == [("link", "h1-h2")],
          f"slow link with a spec: the link, blamed once for peers and threshold ({blame_of(v)})")

    base = judge(Cluster())
    faster = copy.deepcopy(base)
    for l in faster["links"]:
        if l["link"] == "h0-h3":
            l["bandwidth"]["alone_median"] *= 2   # the baseline run found h0-h3 twice as fast
    v = judge(Cluster(), spec(), baseline=faster)
    check(blame_of(v) == [("link", "h0-h3")] and "regressed" in v["blame"][0]["reason"],
          f"baseline: h0-h3 halved since: blamed as a regression ({v['blame']})")
    v = judge(Cluster(), spec(), baseline=base)
    check(v["verdict"] == "pass" and all(l["bandwidth"]["baseline"]["verdict"] == "pass" for l in v["links"]),
          "baseline: the same cluster again passes every link against it")


# ---- spec and model files ------------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(synthetic.HERE))
V1 = {  # a model file of version 1 (no "version" key): one bandwidth per class
    "reduce_rate": 1.0e12, "copy_rate": 2.0e12,
    "intra_node": {"bandwidth": 3.0e11, "bwurate": 0.9, "link_delay": 1.0e-6,
                   "start_lat": 5.0e-6, "sync_lat": 2.0e-6},
    "inter_node": {"bandwidth": 5.0e10, "bwurate": 0.85, "link_delay": 2.8e-6,
                   "start_lat": 5.0e-6, "sync_lat": 5.0e-6},
}

V2 = {"version": 2, "source": "test",
      "intra_node": {"link_delay": 1e-6, "overhead": 0.5e-6, "start_lat": 0, "sync_lat": 0,
                     "bands": [{"bytes": 1024, "one_way": 1e9}, {"bytes": 1048576, "one_way": 1e10}]},
      "inter_node": {"link_delay": 2e-6, "start_lat": 0, "sync_lat": 0, "bandwidth": 1e9, "bwurate": 0.5},
      "reduce_rate": 1e10}


def write(d, name, obj):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def refused(path, pattern):
    try:
        load_spec(path)
    except SpecError as e:
        ok = pattern in str(e) and "\n" not in str(e)
        check(ok, f"refused in one line with '{pattern}' ({e})")
        return
    check(False, f"{path} should be refused with '{pattern}'")


def test_spec():
    example = load_spec(os.path.join(ROOT, "acceptance", "example-spec.json"))
    check(set(example.classes) == {"inter-node", "intra-node"} and example.measure["bandwidth_bytes"] == 256 << 10
          and math.isclose(example.classes["inter-node"].min_bandwidth_gbps(256 << 10),
                           0.8 * (256 << 10) / (2e-4 + (256 << 10) / 2.3e7) / 1e9),
          "acceptance/example-spec.json loads: two classes, its measure settings, the limit it implies")
    with tempfile.TemporaryDirectory() as d:
        v1 = load_model(write(d, "v1.json", V1))
    want = 2.8e-6 + 1e6 / (5e10 * 0.85)
    check(math.isclose(v1["inter-node"].half_round_trip(1e6), want),
          "model version 1: link_delay + bytes / (bandwidth x bwurate)")
    bands = [(1024, 1e9), (1048576, 1e10)]
    check(math.isclose(port_time(bands, 512), 512 / 1e9) and math.isclose(port_time(bands, 4 << 20), (4 << 20) / 1e10)
          and math.isclose(port_time(bands, (1024 + 1048576) / 2), (1024 / 1e9 + 1048576 / 1e10) / 2),
          "version 2 bands: proportional beyond the ends, linear in between")
    with tempfile.TemporaryDirectory() as d:
        m2 = load_model(write(d, "v2.json", V2))
        check(math.isclose(m2["intra-node"].half_round_trip(1024), 2 * 0.5e-6 + 1e-6 + 1024 / 1e9)
              and math.isclose(m2["inter-node"].half_round_trip(1000), 2e-6 + 1000 / 5e8),
              "model version 2: 2 x overhead + link_delay + port time; bandwidth x bwurate")
        s = load_spec(write(d, "s.json", {"model": "v2.json", "classes": {
            "inter-node": {"model": True, "bandwidth_tolerance": 0.5}, "intra-node": {"bandwidth": 1e9}}}))
        c = s.classes["inter-node"]
        check(math.isclose(c.min_bandwidth_gbps(1000), 0.5 * 1000 / (2e-6 + 1000 / 5e8) / 1e9)
              and s.classes["intra-node"].max_latency_us(8) is None,
              "spec: a class from the model (relative to the spec) and one by hand without latency")
        for bad, pattern in [
                ({"classes": {"inter_node": {"bandwidth": 1}}}, "unknown class 'inter_node'"),
                ({"classes": {"inter-node": {"bandwidth": -1}}}, "classes.inter-node.bandwidth must be positive, got -1"),
                ({"classes": {"inter-node": {"latency": -2e-6}}}, "latency must be at least 0.0"),
                ({"classes": {"inter-node": {"bandwidth": "fast"}}}, "must be a number"),
                ({"classes": {"inter-node": {"bandwidht": 1}}}, "unknown key 'bandwidht'"),
                ({"classes": {"inter-node": {}}}, "needs bandwidth or latency"),
                ({"classez": {}}, "unknown key 'classez'"),
                ({"classes": {"inter-node": {"model": True}}}, "needs the spec's \"model\" file"),
                ({"model": "missing.json"}, "does not exist"),
                ({"model": "v3.json"}, "version 3 is not supported"),
                ({"peers": {"z": -1}}, "peers.z must be at least 0.0"),
                ({"measure": {"repeats": 0}}, "measure.repeats must be an integer >= 1"),
                ({"measure": {"bandwidth_bytes": "12Q"}}, "must be a size"),
                ({"measure": {"patterns": "pairs,star"}}, "unknown 'star'"),
                ({"classes": {"inter-node": {"bandwidth": 1, "bandwidth_tolerance": 1.5}}}, "at most 0.99")]:
            write(d, "v3.json", dict(V2, version=3))
            refused(write(d, "bad.json", bad), pattern)
        refused(write(d, "notjson.json", "{\"classes\": "), "is not valid JSON")
        refused(os.path.join(d, "absent.json"), "does not exist")
        write(d, "v1bad.json", {"intra_node": {"bandwidth": 1, "bwurate": 2, "link_delay": 0},
                                "inter_node": {"bandwidth": 1, "bwurate": 1, "link_delay": 0}})
        refused(write(d, "s1.json", {"model": "v1bad.json"}), "bwurate must be at most 1.0")


if __name__ == "__main__":
    {"stats": test_stats, "blame": test_blame, "limits": test_limits, "spec": test_spec}[sys.argv[1]]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
