#!/usr/bin/python3
"""Slurm sweeps end to end on a real one-node cluster (slurm/local-cluster).

    slurm_test.py [--bin-dir DIR]

Brings up a private cluster in a temporary directory, then:
  - scripts/sweep's refusals: unknown collective / algorithm (2), no sbatch on PATH (3),
    a node count the partition cannot give (sbatch's message, non-zero, nothing queued);
  - --dry-run prints the task list and the sbatch commands and writes nothing;
  - a good sweep (allreduce ring + mpi, 2 ranks each, 3 sizes, and a pingpong matrix job)
    and a sweep with one failing task (broadcast --root 99 exits 2) run at the same time;
    the first merges into a complete file whose runs carry the array's Slurm ids, the
    second's merge job fails and leaves only <name>.incomplete.h5 and <name>.missing;
  - after one task file is deleted, --resume (dry run, then real) submits only that task,
    and the merged file is complete again;
and always takes the cluster down, checking that none of its processes is left.
Exit 0 passed, 1 failed, 77 skipped (Slurm or munge not installed: scripts/bootstrap
installs them).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py

from collscope.cluster.harness import Failed, check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(ROOT, "scripts", "sweep")
CLUSTER = os.path.join(ROOT, "slurm", "local-cluster")
SKIP = 77
SIZES = ["-b", "1K", "-e", "16K", "-f", "4", "-n", "3", "-w", "1"]
SIZE_BYTES = [1024, 4096, 16384]
NEEDED = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo", "srun"]


def run(argv, env, timeout=60):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


# ---- the cluster ----------------------------------------------------------------------

def cluster(command, env):
    result = run([CLUSTER, command], env, timeout=120)
    if result.returncode != 0 and command != "status":
        print(result.stdout + result.stderr, file=sys.stderr)
    return result


def our_processes(cluster_dir):
    """Every process of the test cluster: daemons, slurmstepd, jobs (by dir and environment)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        marked = (f"COLLSCOPE_SLURM_CLUSTER={cluster_dir}".encode() in environ
                  or (f"SLURM_CONF={cluster_dir}/etc/slurm.conf".encode() in environ
                      and any(e.startswith(b"SLURM_JOB_ID=") for e in environ)))
        daemon = re.match(r"(munged|slurmctld|slurmd|slurmstepd)", cmd) and (
            cluster_dir in cmd or cwd.startswith(cluster_dir))
        if (marked or daemon) and int(pid) != os.getpid():
            found.append(f"{pid} {cmd.strip()}")
    return found


def wait_for_jobs(job_ids, env, limit=90):
    """{job id: (state, exit code)} once none of them is pending or running."""
    deadline = time.time() + limit
    while True:
        states = {}
        for job in job_ids:
            out = run(["scontrol", "show", "job", job], env).stdout
            state = re.search(r"JobState=(\S+)", out)
            code = re.search(r"ExitCode=(\S+)", out)
            states[job] = (state.group(1) if state else "UNKNOWN", code.group(1) if code else "")
        if all(s not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") for s, _ in states.values()):
            return states
        if time.time() > deadline:
            raise Failed(f"jobs still not finished after {limit}s: {states}")
        time.sleep(1)


def submitted(output):
    """{kind: [ids]} from scripts/sweep's `array 12: ...` / `merge 13: ...` lines."""
    jobs = {}
    for kind, job in re.findall(r"^(array|pingpong|merge) (\d+):", output, re.M):
        jobs.setdefault(kind, []).append(job)
    return jobs


# ---- the checks ------------------------------------------------------------------------

def sweep(args, env, timeout=60):
    return run([SWEEP] + args, env, timeout)


def test_refusals(tmp, env, common):
    r = sweep(["--collectives", "allreduce,nosuch", "--results-dir", f"{tmp}/x"] + common, env)
    check(r.returncode == 2 and "unknown collective 'nosuch'" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1, "unknown collective: one line, exit 2")
    r = sweep(["--collectives", "allreduce", "--algorithms", "ring,nosuch",
               "--results-dir", f"{tmp}/x"] + common, env)
    check(r.returncode == 2 and "unknown algorithm 'nosuch'" in r.stderr, "unknown algorithm: exit 2")
    empty = os.path.join(tmp, "empty-bin")
    os.makedirs(empty, exist_ok=True)
    r = sweep(["--collectives", "allreduce", "--algorithms", "ring", "--results-dir", f"{tmp}/x"]
              + common, dict(env, PATH=empty))
    check(r.returncode == 3 and "sbatch is not on PATH" in r.stderr, "no sbatch on PATH: exit 3")
    r = sweep(["--collectives", "allreduce", "--algorithms", "ring", "--nodes", "1,2",
               "--results-dir", f"{tmp}/toobig"] + common, env)
    queued = run(["squeue", "-h"], env).stdout.strip()
    check(r.returncode == 1 and "sbatch" in r.stderr and "Node count" in r.stderr and not queued
          and not os.path.exists(f"{tmp}/toobig/sweep.tasks"),
          "2 nodes on a 1-node partition: sbatch's refusal passed through, exit 1, nothing left queued")
    check(not os.path.exists(f"{tmp}/x"), "refused sweeps wrote nothing")


def test_dry_run(tmp, env, common):
    r = sweep(["--dry-run", "--name", "dry", "--collectives", "allreduce", "--algorithms", "ring,mpi",
               "--partition", "debug", "--time", "00:05:00", "--results-dir", f"{tmp}/dry"] + common, env)
    out = r.stdout
    check(r.returncode == 0, "--dry-run exits 0")
    check("#   0: 1 2 allreduce_ring -b 1K -e 16K -f 4 -n 3 -w 1 -t mpi" in out
          and "#   1: 1 2 allreduce_mpi -b 1K -e 16K -f 4 -n 3 -w 1 -t mpi" in out,
          "--dry-run prints the task list")
    array = [line for line in out.splitlines() if line.startswith("JOB1=$(sbatch ")]
    merge = [line for line in out.splitlines() if line.startswith("MERGE=$(sbatch ")]
    check(len(array) == 1 and all(o in array[0] for o in (
        "--array=0-1", "--nodes=1", "--ntasks-per-node=2", "--partition=debug", "--time=00:05:00",
        "slurm/sweep.sbatch")), "--dry-run prints the array's sbatch command")
    check(len(merge) == 1 and "--dependency=afterany:$JOB1" in merge[0] and "slurm/merge.sbatch" in merge[0],
          "--dry-run prints the merge job's sbatch command, after the array")
    check(not os.path.exists(f"{tmp}/dry"), "--dry-run writes nothing")


def read_merged(path):
    with h5py.File(path, "r") as f:
        runs = f["runs"][:]
        rows = f["collective/rows"][:]
        ping = f["pingpong/rows"][:]
    return runs, rows[rows["run_id"] >= 0], ping[ping["run_id"] >= 0]


def check_good_sweep(res, jobs, states):
    array, ping, merge = jobs["array"][0], jobs["pingpong"][0], jobs["merge"][0]
    check(states[merge] == ("COMPLETED", "0:0"), f"good sweep: merge job {merge} completed, exit 0")
    check(os.path.isfile(f"{res}/a.h5") and not os.path.exists(f"{res}/a.incomplete.h5")
          and not os.path.exists(f"{res}/a.missing"), "good sweep: a.h5, nothing marked incomplete")
    runs, rows, ping_rows = read_merged(f"{res}/a.h5")
    by_task = {text(r["slurm_array_task_id"]): r for r in runs if text(r["slurm_array_job_id"])}
    check(sorted(by_task) == ["0", "1"] and all(text(r["slurm_array_job_id"]) == array for r in by_task.values()),
          f"good sweep: /runs has array {array}'s tasks 0 and 1")
    check(text(by_task["0"]["program"]) == "allreduce_ring" and text(by_task["1"]["program"]) == "allreduce_mpi",
          "good sweep: task 0 ran allreduce_ring, task 1 allreduce_mpi (the task list's order)")
    for r in by_task.values():
        mine = rows[rows["run_id"] == r["run_id"]]
        check(sorted(int(b) for b in mine["bytes"]) == SIZE_BYTES and set(mine["nranks"]) == {2},
              f"good sweep: {text(r['program'])}'s rows (1K, 4K, 16K on 2 ranks) refer to its run")
    pp = [r for r in runs if text(r["program"]) == "pingpong"]
    check(len(pp) == 1 and text(pp[0]["slurm_job_id"]) == ping
          and sorted(int(b) for b in ping_rows[ping_rows["run_id"] == pp[0]["run_id"]]["bytes"]) == SIZE_BYTES,
          f"good sweep: pingpong job {ping}'s matrix rows are merged too")
    return by_task


def check_failing_sweep(res, jobs, states):
    merge = jobs["merge"][0]
    check(states[merge][0] == "FAILED" and states[merge][1].startswith("1:"),
          f"failing sweep: merge job {merge} failed (exit 1)")
    check(not os.path.exists(f"{res}/b.h5") and os.path.isfile(f"{res}/b.incomplete.h5"),
          "failing sweep: no b.h5, only b.incomplete.h5")
    with open(f"{res}/b.missing") as f:
        report = f.read()
    check("task 1 (broadcast_binomial" in report and "--root 99" in report and "task 0" not in report,
          "failing sweep: b.missing names the failed task and why")
    runs, rows, _ = read_merged(f"{res}/b.incomplete.h5")
    check([text(p) for p in runs["program"]] == ["allreduce_ring"] and len(rows) == 3,
          "failing sweep: the incomplete file holds the good task's rows only")


def test_resume(res, env, args, old_by_task):
    old_array = text(old_by_task["0"]["slurm_array_job_id"])
    os.unlink(f"{res}/{old_array}_1.h5")
    r = sweep(args + ["--resume", "--dry-run"], env)
    check(r.returncode == 0 and "--array=1 " in r.stdout and "--array=0" not in r.stdout
          and "(done: rows present)" in r.stdout, "--resume --dry-run: only task 1 is to run")
    r = sweep(args + ["--resume"], env)
    jobs = submitted(r.stdout)
    check(r.returncode == 0 and len(jobs.get("array", [])) == 1 and "1 tasks (1)" in r.stdout
          and "pingpong" not in jobs, f"--resume submitted task 1 only: {r.stdout.strip()}")
    states = wait_for_jobs(jobs["array"] + jobs["merge"], env)
    check(states[jobs["merge"][0]] == ("COMPLETED", "0:0"), "--resume: the merge job completed")
    runs, rows, _ = read_merged(f"{res}/a.h5")
    ids = {text(r["slurm_array_task_id"]): text(r["slurm_array_job_id"]) for r in runs
           if text(r["slurm_array_job_id"])}
    check(ids == {"0": old_array, "1": jobs["array"][0]} and len(rows) == 6,
          "--resume: a.h5 again complete: task 0 from the first array, task 1 from the new one")
    r = sweep(args + ["--resume"], env)
    check(r.returncode == 0 and not submitted(r.stdout) and "every task has its rows" in r.stdout,
          "--resume with nothing missing submits nothing")


def run_tests(tmp, env, bin_dir):
    common = SIZES + ["--ntasks-per-node", "2", "--mpi-env", "--bin-dir", bin_dir]
    test_refusals(tmp, env, common)
    test_dry_run(tmp, env, common)

    good = ["--name", "a", "--collectives", "allreduce", "--algorithms", "ring,mpi", "--pingpong",
            "--results-dir", f"{tmp}/a"] + common
    bad = ["--name", "b", "--collectives", "allreduce,broadcast", "--algorithms",
           "allreduce:ring,broadcast:binomial", "--args", "--root 99", "--results-dir", f"{tmp}/b"] + common
    r_good, r_bad = sweep(good, env), sweep(bad, env)
    jobs_good, jobs_bad = submitted(r_good.stdout), submitted(r_bad.stdout)
    check(r_good.returncode == 0 and set(jobs_good) == {"array", "pingpong", "merge"},
          f"good sweep submitted: {r_good.stdout.strip()} {r_good.stderr.strip()}")
    check(r_bad.returncode == 0 and set(jobs_bad) == {"array", "merge"},
          f"failing sweep submitted: {r_bad.stdout.strip()} {r_bad.stderr.strip()}")
    states = wait_for_jobs([j for js in list(jobs_good.values()) + list(jobs_bad.values()) for j in js], env)
    by_task = check_good_sweep(f"{tmp}/a", jobs_good, states)
    check_failing_sweep(f"{tmp}/b", jobs_bad, states)
    test_resume(f"{tmp}/a", env, good, by_task)


def show_logs(tmp):
    for base, _, files in os.walk(tmp):
        for name in sorted(files):
            if name.endswith((".log", ".out", ".missing")):
                path = os.path.join(base, name)
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-15:]
                print(f"---- {path}\n{''.join(tail)}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()
    missing = [c for c in NEEDED if not shutil.which(c)]
    if missing:
        print(f"SKIP: Slurm/munge not installed ({' '.join(missing)}); scripts/bootstrap installs "
              "slurmctld slurmd slurm-client munge")
        return SKIP
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):   # still take the cluster down
        signal.signal(sig, lambda number, _: sys.exit(128 + number))
    tmp = tempfile.mkdtemp(prefix="collscope-slurm-test.")
    os.chmod(tmp, 0o755)   # munged wants the path to its socket searchable by all
    cluster_dir = os.path.join(tmp, "cluster")
    env = dict(os.environ, COLLSCOPE_SLURM_DIR=cluster_dir, SLURM_CONF=f"{cluster_dir}/etc/slurm.conf")
    env.pop("COLLSCOPE_LAUNCHER", None)
    start, ok = time.time(), False
    try:
        r = cluster("up", env)
        check(r.returncode == 0 and r.stdout.strip() == f"export SLURM_CONF={cluster_dir}/etc/slurm.conf",
              "local-cluster up prints the SLURM_CONF line")
        r = cluster("status", env)
        check(r.returncode == 0 and re.search(r"node: +\S+ idle", r.stdout), "local-cluster status: node idle")
        run_tests(tmp, env, os.path.abspath(args.bin_dir))
        ok = True
    except (Failed, subprocess.TimeoutExpired) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        show_logs(tmp)
    finally:
        r = cluster("down", env)
        left = our_processes(cluster_dir)
        try:
            check(r.returncode == 0 and not left, "local-cluster down: no process of the cluster is left")
            check(cluster("status", env).returncode == 1, "local-cluster status after down: exit 1")
        except Failed as e:
            print(f"FAILED: {e}: {left}", file=sys.stderr)
            ok = False
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"(kept {tmp})", file=sys.stderr)
    print(f"{'passed' if ok else 'FAILED'} in {time.time() - start:.0f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
