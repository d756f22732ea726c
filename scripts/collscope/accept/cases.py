"""The acceptance cases on an emulated cluster of 4 hosts x 2 ranks, each with what a
right outcome is; the ctest cases (cluster_test.py) run each once, scripts/accept-repeat
runs them many times and counts how often the outcome was right.

Every case: `scripts/accept` with SETTINGS (a quarter-megabyte message and few repeats,
so one run takes about a minute on 2 cores), on a cluster made with its `flags`.
"""

import json
import os
import subprocess
import tempfile
import time

from ..paths import ROOT, SCRIPTS  # noqa: F401 (ROOT: for the tests)

ACCEPT = os.path.join(SCRIPTS, "accept")

HOSTS, RANKS_PER_HOST = 4, 2
SETTINGS = ["--repeats", "3", "--bandwidth-bytes", "256K", "--iters", "3", "--warmup", "0",
            "--collective-min-bytes", "256K", "--collective-max-bytes", "256K",
            "--compute-bytes", "1M", "--timeout", "30", "--quiet"]
HOST_LINKS = [f"h{a}-h{b}" for a in range(HOSTS) for b in range(a + 1, HOSTS)]


def blame_of(v):
    return sorted((b["kind"], b["where"]) for b in v["blame"])


def expect_slow_link(code, v):
    return [(code == 1, f"exit 1 (got {code})"),
            (blame_of(v) == [("link", "h1-h2")], f"blame is exactly link h1-h2 (got {blame_of(v)})"),
            (all(l["verdict"] == "fail" for l in v["links"] if l["link"] == "h1-h2"),
             "the 4 pairs over h1-h2 fail"),
            (all(h["verdict"] == "pass" for h in v["hosts"]), "every host passes")]


def expect_all_equal(code, v):
    return [(code == 0, f"exit 0 (got {code})"), (v["verdict"] == "pass", f"verdict pass (got {v['verdict']})"),
            (v["blame"] == [], f"nothing blamed (got {blame_of(v)})")]


def expect_slow_host(code, v):
    return [(code == 1, f"exit 1 (got {code})"),
            (blame_of(v) == [("host", "h2")], f"blame is exactly host h2 (got {blame_of(v)})"),
            (all(l["explained_by"] == "host h2" for l in v["links"]
                 if l["class"] == "inter-node" and "h2" in l["hosts"]), "h2's 12 pairs are explained by it")]


def expect_threshold(code, v):
    inter = [l for l in v["links"] if l["class"] == "inter-node"]
    intra = [l for l in v["links"] if l["class"] == "intra-node"]
    kinds = {k for k, _ in blame_of(v)}
    return [(code == 1, f"exit 1 (got {code})"),
            (len(inter) == 24 and all(l["bandwidth"]["threshold"]["verdict"] == "fail" for l in inter),
             "all 24 inter-node pairs fail the threshold"),
            (all(l["bandwidth"]["peers"]["verdict"] == "pass" for l in inter),
             f"no inter-node pair is a peer outlier ({[l['ranks'] for l in inter if l['bandwidth']['peers']['verdict'] != 'pass']})"),
            (kinds <= {"link"} and {w for _, w in blame_of(v)} == set(HOST_LINKS),
             f"blame: each of the 6 host links, nothing else (got {blame_of(v)})"),
            (all(l["bandwidth"]["threshold"]["verdict"] == "pass" for l in intra),
             "intra-node pairs pass their (achievable) threshold")]


THRESHOLD_SPEC = {"description": "inter-node 2 x what a 200 Mbit/s link can do; intra-node achievable",
                  "classes": {"inter-node": {"bandwidth": 5.0e7, "bandwidth_tolerance": 0.2},
                              "intra-node": {"bandwidth": 1.0e8}}}

CASES = {
    "slow_link": {"flags": ["--rate", "200mbit", "--link", "h1-h2:50mbit"], "spec": None,
                  "expect": expect_slow_link, "what": "one link at a quarter of the others' rate"},
    "all_equal": {"flags": ["--rate", "200mbit"], "spec": None, "expect": expect_all_equal,
                  "what": "every link at 200 Mbit/s"},
    "slow_host": {"flags": ["--rate", "200mbit", "--host", "h2:50mbit"], "spec": None,
                  "expect": expect_slow_host, "what": "every link of h2 at a quarter rate"},
    "threshold": {"flags": ["--rate", "200mbit"], "spec": THRESHOLD_SPEC, "expect": expect_threshold,
                  "what": "a spec expecting 400 Mbit/s between hosts"},
}


def wait_for_free_names(limit_s=900):
    """The hosts' names are global: wait while another cluster (another worktree's test)
    holds them, rather than fail to build ours or break theirs."""
    start = time.time()
    while time.time() - start < limit_s:
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        if "h0" not in names:
            return True
        time.sleep(5)
    return False


def run_case(name, bin_dir, cluster, out_dir):
    """scripts/accept on an up cluster; returns (exit code, verdict or None, seconds, stderr)."""
    case = CASES[name]
    args = [ACCEPT, "--out", out_dir, "--bin-dir", bin_dir] + SETTINGS
    with tempfile.NamedTemporaryFile("w", suffix=".spec.json") as spec:
        if case["spec"]:
            json.dump(case["spec"], spec)
            spec.flush()
            args += ["--spec", spec.name]
        start = time.time()
        result = cluster.run(args, timeout=600)
        seconds = time.time() - start
    verdict_path = os.path.join(out_dir, "verdict.json")
    verdict = json.load(open(verdict_path)) if os.path.exists(verdict_path) else None
    return result.returncode, verdict, seconds, result.stderr


def evaluate(name, code, verdict):
    if verdict is None:
        return [(False, f"no verdict.json (exit {code})")]
    return CASES[name]["expect"](code, verdict)


def one_case(name, bin_dir, keep=None):
    """Up, accept, down: ([(ok, what)], seconds of the accept run, its directory)."""
    from ..cluster.harness import Cluster
    if not wait_for_free_names():
        return [(False, "the hosts' names stayed taken by another cluster for 15 minutes")], 0, None
    out = tempfile.mkdtemp(prefix=f"accept-{name}.", dir=keep)
    with Cluster(bin_dir, HOSTS, CASES[name]["flags"]) as cluster:   # 2 slots per host
        code, verdict, seconds, err = run_case(name, bin_dir, cluster, out)
    checks = evaluate(name, code, verdict)
    if code not in (0, 1, 4):
        checks.append((False, f"accept failed: {err.strip()[-500:]}"))
    return checks, seconds, out
