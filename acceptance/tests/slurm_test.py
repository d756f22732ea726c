#!/usr/bin/python3
"""slurm/accept.sbatch on the emulated cluster with Slurm (4 hosts x 2 ranks, h1-h2 at a
quarter rate): `sbatch --wait` returns accept's exit status 1, the ranks were placed on the
allocation's nodes by Slurm (not by a hostfile), and the blame is exactly link h1-h2.

usage: slurm_test.py [--bin-dir DIR]   exit 0 passed, 1 failed, 77 skipped
"""
import json
import os
import shutil
import sys
import tempfile

from collscope.accept import cases
from collscope.cluster import harness as clusterlib
from collscope.cluster.harness import Cluster, check

SETTINGS = ["--repeats", "2", "--patterns", "pairs,ring", "--bandwidth-bytes", "256K", "--iters", "3",
            "--warmup", "0", "--collectives", "allreduce_ring", "--collective-min-bytes", "256K",
            "--collective-max-bytes", "256K", "--compute-bytes", "1M", "--timeout", "30", "--quiet"]


def test(bin_dir):
    if not cases.wait_for_free_names():
        raise clusterlib.Failed("the hosts' names stayed taken by another cluster")
    out = tempfile.mkdtemp(prefix="accept-slurm.")
    os.chmod(out, 0o755)
    with Cluster(bin_dir, cases.HOSTS, ["--rate", "200mbit", "--link", "h1-h2:50mbit"], slurm=True) as cluster:
        env = dict(cluster.env, COLLSCOPE_MPI_ENV="1", COLLSCOPE_BIN=bin_dir, COLLSCOPE_ROOT=cases.ROOT)
        log = os.path.join(out, "job.log")
        result = clusterlib.subprocess.run(
            ["sbatch", "--wait", "--nodes=4", "--ntasks-per-node=2", f"--output={log}",
             os.path.join(cases.ROOT, "slurm", "accept.sbatch"), os.path.join(out, "run")] + SETTINGS,
            env=env, capture_output=True, text=True, timeout=600, cwd=cases.ROOT)
        job_log = open(log).read() if os.path.exists(log) else ""
        check(result.returncode == 1, f"sbatch --wait returns accept's exit status 1 (got {result.returncode}: "
                                      f"{result.stderr.strip()[-300:]} {job_log[-500:]})")
    v = json.load(open(os.path.join(out, "run", "verdict.json")))
    placement = v["run"]["placement"]
    check(placement["kind"] == "slurm" and placement["hosts"] == ["h0", "h1", "h2", "h3"]
          and placement["ranks_per_host"] == [2, 2, 2, 2] and placement["launcher"] == "mpirun",
          f"placed by the allocation: 4 nodes x 2 tasks, mpirun inside it ({placement})")
    check(v["run"]["rank_hosts"] == [f"h{k}" for k in range(4) for _ in range(2)], "ranks 2K, 2K+1 on hK")
    check(cases.blame_of(v) == [("link", "h1-h2")], f"blame is exactly link h1-h2 ({cases.blame_of(v)})")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(clusterlib.main(test, slurm=True))
