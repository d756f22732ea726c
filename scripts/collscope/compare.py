"""Runs two benchmark binaries alternately, several times in one go, and prints the
ratio of their median busbw (or time) per size: A / B. Example:

    scripts/compare allreduce_ring allreduce_mpi -b 16M -e 64M -f 4
    scripts/compare --np 2 --repeats 7 allreduce_dbt allreduce_mpi -b 1K -e 1K
    scripts/compare "allreduce_ring -t ucx" "allreduce_ring -t mpi" -b 1K -e 64M -f 1024
    scripts/compare --metric time "pingpong -t ucx" pingpong -b 8 -e 8

A name may carry its own arguments (quoted, after the binary). Options before the two
names: --np N (ranks, 2), --repeats R (5), --bin DIR (build/bin), --metric busbw|time
(busbw: higher is better; time: the median time_us, lower is better). Everything after
the two names goes to both binaries. Exit code: 0, or 2 on bad usage, 3 when a run fails.
"""
import json
import os
import statistics
import subprocess
import sys

from collscope.paths import ROOT


def usage(msg):
    print(f"compare: error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse(argv):
    opts = {"np": 2, "repeats": 5, "bin": os.path.join(ROOT, "build", "bin"), "metric": "busbw"}
    while argv and argv[0] in ("--np", "--repeats", "--bin", "--metric"):
        if len(argv) < 2:
            usage(f"{argv[0]} needs a value")
        key, value = argv[0][2:], argv[1]
        if key == "metric" and value not in ("busbw", "time"):
            usage(f"--metric must be busbw or time, got '{value}'")
        elif key not in ("bin", "metric"):
            if not value.isdigit() or int(value) < 1:
                usage(f"--{key} must be a positive integer, got '{value}'")
            value = int(value)
        opts[key] = value
        argv = argv[2:]
    if len(argv) < 2:
        usage("need two benchmark names, e.g. allreduce_ring allreduce_mpi")
    for name in argv[:2]:
        binary = name.split()[0] if name.split() else ""
        if not binary or not os.access(os.path.join(opts["bin"], binary), os.X_OK):
            usage(f"no benchmark binary '{binary}' in {opts['bin']}")
    return opts, argv[0], argv[1], argv[2:]


def run_once(opts, name, args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    binary, *own_args = name.split()
    cmd = ["mpirun", "-q", "-np", str(opts["np"]), os.path.join(opts["bin"], binary),
           "--format", "jsonl", *own_args, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print(f"compare: error: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}",
              file=sys.stderr)
        sys.exit(3)
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def main():
    opts, a, b, args = parse(sys.argv[1:])
    field = "busbw_gbps" if opts["metric"] == "busbw" else "time_us"
    busbw = {a: {}, b: {}}
    for _ in range(opts["repeats"]):
        for name in (a, b):  # alternate, so drift in the machine hits both alike
            for r in run_once(opts, name, args):
                key = (r["bytes"], r.get("dtype", "-"), r.get("op", "-"))
                busbw[name].setdefault(key, []).append(r[field])
    unit = "busbw (GB/s)" if field == "busbw_gbps" else "time (us)"
    print(f"# {a} vs {b}: {opts['np']} ranks, {opts['repeats']} alternating runs each, "
          f"median {unit}; ratio = {a} / {b}")
    print(f"# {'bytes':>12} {'dtype':>8} {'op':>5} {a[:22]:>22} {b[:22]:>22} {'ratio':>7}")
    for key in sorted(busbw[a]):
        if key not in busbw[b]:
            continue
        ma, mb = statistics.median(busbw[a][key]), statistics.median(busbw[b][key])
        ratio = ma / mb if mb > 0 else float("nan")
        print(f"  {key[0]:>12} {key[1]:>8} {key[2]:>5} {ma:>22.3f} {mb:>22.3f} {ratio:>7.3f}")
