#!/usr/bin/python3
"""scripts/accept on an emulated cluster of 4 hosts x 2 ranks, one case (collscope/accept/cases.py):

  slow_link  one inter-host link at a quarter of the others' rate: exit 1, blame is exactly
             that link
  all_equal  every link alike: exit 0, nothing blamed
  slow_host  every link of one host at a quarter rate: the host blamed, not its links
  threshold  a spec expecting twice what the links can do between hosts: every inter-node
             pair fails the threshold, none is a peer outlier

usage: cluster_test.py CASE [--bin-dir DIR]   exit 0 passed, 1 failed, 77 skipped
"""
import json
import os
import shutil
import sys

from collscope.accept import cases
from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Failed


def verdict_of(out):
    """The verdict the run in `out` wrote ("pass", "fail", "inconclusive"), or None where it
    wrote none (an internal error or a refusal: never retested)."""
    try:
        with open(os.path.join(out, "verdict.json")) as f:
            return json.load(f).get("verdict")
    except (OSError, TypeError, ValueError, AttributeError):
        return None


def main():
    name = sys.argv.pop(1) if len(sys.argv) > 1 else ""
    if name not in cases.CASES:
        print(f"usage: cluster_test.py {'|'.join(cases.CASES)} [--bin-dir DIR]", file=sys.stderr)
        return 2

    def test(bin_dir):
        print(f"# {name}: {cases.CASES[name]['what']}", flush=True)
        checks, seconds, out = cases.one_case(name, bin_dir)
        if verdict_of(out) is not None and not all(ok for ok, _ in checks):
            # exit 4 means "retest" (acceptance/README.md); and eight ranks on a 2-core
            # machine, shaped links and all, can leave a host slow for as long as its own
            # retest lasts. A run that ended with a verdict is retested once; a wrong
            # outcome twice, or a run without verdict.json (an internal error), fails.
            for ok, what in checks:
                print(("ok - " if ok else "FAIL - ") + what, flush=True)
            print(f"# run 1 ended {verdict_of(out)} with a wrong outcome (kept in {out}): "
                  f"retested once", flush=True)
            checks, seconds, out = cases.one_case(name, bin_dir)
        for ok, what in checks:
            print(("ok - " if ok else "FAIL - ") + what, flush=True)
        print(f"# scripts/accept took {seconds:.1f}s", flush=True)
        if not checks or not all(ok for ok, _ in checks):   # no check made is a failure too
            raise Failed(f"{name}: wrong outcome; the run's files are in {out}")
        shutil.rmtree(out, ignore_errors=True)

    return clusterlib.main(test)


if __name__ == "__main__":
    sys.exit(main())
