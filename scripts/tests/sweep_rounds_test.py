#!/usr/bin/python3
"""scripts/sweep --rounds R (--dry-run: no Slurm needed): the task list holds every task R
times, round by round, the order reversed in odd rounds, each task with --round K where
the binaries take it; bad values of R (0, a word, in a file too) and a --round of one's
own in --args are refused with one line and exit 2.

usage: sweep_rounds_test.py BIN_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

from collscope.checks import check, failures

sys.dont_write_bytecode = True
BIN = os.path.abspath(sys.argv[1])
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sweep")
TASK = re.compile(r"^#\s+(\d+): 1 2 (\S+) (.*)$")


def sweep(*args):
    return subprocess.run([sys.executable, SCRIPT, "--bin-dir", BIN, *args], capture_output=True,
                          text=True, timeout=120)


def expect_refused(args, words):
    p = sweep(*args)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith("sweep: error: ")
          and all(w in lines[0] for w in words),
          f"{' '.join(args)}: exit 2, one line naming {words} ({p.returncode}: {p.stderr.strip()})")


def takes_round():
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run([os.path.join(BIN, "allreduce_ring"), "--help"], capture_output=True,
                       text=True, timeout=60, env=env)
    return re.search(r"--round\b(?!s)", p.stdout) is not None


def main():
    base = ["--dry-run", "--collectives", "allreduce", "--algorithms", "ring,direct,mpi"]
    with tempfile.TemporaryDirectory() as tmp:
        expect_refused(base + ["--rounds", "0", "--results-dir", tmp], ["--rounds", "'0'"])
        expect_refused(base + ["--rounds", "two", "--results-dir", tmp], ["--rounds", "'two'"])
        conf = os.path.join(tmp, "bad.conf")
        with open(conf, "w") as f:
            f.write("collectives = allreduce\nrounds = -1\n")
        expect_refused(["--dry-run", "--file", conf, "--results-dir", tmp], ["--rounds", "'-1'"])
        expect_refused(base + ["--rounds", "2", "--args=--round=5", "--results-dir", tmp],
                       ["--round"])
        p = sweep(*base, "--rounds", "3", "--results-dir", os.path.join(tmp, "r"))
    tasks = [TASK.match(line) for line in p.stdout.splitlines() if TASK.match(line)]
    programs = [t.group(2) for t in tasks]
    one = ["allreduce_ring", "allreduce_direct", "allreduce_mpi"]
    check(p.returncode == 0 and programs == one + one[::-1] + one,
          f"3 rounds: every task once per round, reversed in the odd one ({programs}; {p.stderr})")
    flags = [re.search(r"--round (\d+)", t.group(3)) for t in tasks]
    if takes_round():
        check([int(f.group(1)) if f else None for f in flags] == [0] * 3 + [1] * 3 + [2] * 3,
              "each task carries its round (--round K)")
    else:
        check(not any(flags) and "take no --round" in p.stdout,
              "a build without --round: no flag, and a note says so")
    p = sweep(*base, "--results-dir", os.path.join(tempfile.gettempdir(), "collscope-one-round"))
    check(p.returncode == 0 and "--round" not in p.stdout and len(
        [l for l in p.stdout.splitlines() if TASK.match(l)]) == 3,
          "one round (the default): the task list as before, no --round")
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
