#!/usr/bin/env python3
"""scripts/tune-mpi (docs/tuning.md), in three groups:

  rules      the decision file without MPI: render and parse agree, Open MPI's lookups
             (communicator size, message band), the bands from decisions (geometric
             middles, the default at every N not measured), what check refuses (with its
             line), the twins' confirmation of forced rows (a fallback is not credited).
  bad_input  one line and exit 2 for an unknown collective, a malformed or out-of-range
             decision file, an MPI that is not Open MPI (a stand-in mpirun), a directory
             without a sweep; exit 2 naming the missing tasks of an unmerged Slurm sweep;
             and Open MPI applies a file collscope wrote (the traffic shows the rule's ring
             where its fixed decision runs recursive doubling).
  planted    a deliberately slow algorithm (allreduce segmented_ring with 256-byte
             segments at 256 KiB and 1 MiB, 1000 and 4000 segments a call) among the
             candidates at N = 2: the decision never picks it, and a decision file that forces
             it is found slower by the validation, its rule dropped (exit 1: no rule held).

usage: tune_mpi_test.py BIN_DIR GROUP
"""
import json
import os
import subprocess
import sys
import tempfile

from collscope.checks import check, failures
from collscope.tune_mpi import decide as dc
from collscope.tune_mpi import openmpi
from collscope.tune_mpi import rules as rl

sys.dont_write_bytecode = True
BIN = os.path.abspath(sys.argv[1])
GROUP = sys.argv[2] if len(sys.argv) > 2 else "rules"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tune-mpi")
ALGS = {"allreduce": {1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring",
                      5: "segmented_ring", 6: "rabenseifner"},
        "bcast": {k: f"b{k}" for k in range(1, 10)}}


def run(*args, env=None, timeout=900):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def expect_usage(args, words, env=None, code=2):
    p = run(*args, env=env, timeout=120)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == code and len(lines) == 1 and lines[0].startswith("tune-mpi: error: ")
          and all(w in lines[0] for w in words),
          f"{' '.join(args)}: exit {code}, one line naming {words} ({p.returncode}: {p.stderr.strip()})")


# ---- rules ---------------------------------------------------------------------------------

def refused(text, words):
    try:
        rl.parse(text, ALGS)
    except rl.Malformed as e:
        check(all(w in str(e) for w in words), f"refused naming {words}: {e}")
        return
    check(False, f"accepted what should be refused ({words}): {text!r}")


def test_rules():
    rules = {"allreduce": {1: [rl.Band(0, 0)], 4: [rl.Band(0, 3, evidence=["why"]), rl.Band(4097, 6)]},
             "bcast": {2: [rl.Band(0, 2, 1, 65536)]}}
    text = rl.render(rules, ["head"])
    back = rl.parse(text, ALGS)
    check({c: {n: [b.numbers() for b in bs] for n, bs in s.items()} for c, s in back.items()}
          == {c: {n: [b.numbers() for b in bs] for n, bs in s.items()} for c, s in rules.items()},
          "render then parse gives the rules back")
    check(text.splitlines()[1].startswith("2 ") and "# why" in text, "header, count, evidence")
    four = rl.rules_for(back["allreduce"], 4)
    check(rl.band_for(four, 4096).algorithm == 3 and rl.band_for(four, 4097).algorithm == 6,
          "a call takes the band of the largest message size <= its bytes")
    check(rl.rules_for(back["allreduce"], 3)[0].algorithm == 0
          and rl.rules_for(back["allreduce"], 9)[1].algorithm == 6
          and rl.rules_for(back["bcast"], 1)[0].algorithm == 2,
          "a communicator takes the largest size <= N, else the first (Open MPI's lookup)")
    refused("1\n2\n1\n4\n1\n0 9 0 0\n", ["line 6", "no algorithm 9"])
    refused("1\n2\n1\n4\n1\n8 3 0 0\n", ["line 6", "message size 0"])
    refused("1\n2\n1\n4\n2\n0 3 0 0\n0 4 0 0\n", ["line 7", "not above"])
    refused("1\n99\n", ["line 2", "collective id 99"])
    refused("1\n2\n2\n4\n1\n0 3 0 0\n4\n1\n0 3 0 0\n", ["communicator size 4"])
    refused("1\n2\n1\n4\n1\n0 3 0 010\n", ["leading 0", "octal"])
    refused("1\n2\n1\n4\nx\n", ["'x'"])
    refused("1\n2\n1\n4\n1\n0 3 0\n", ["ends where"])
    refused("1\n2\n1\n4\n1\n0 3 0 0\n7\n", ["after the last"])
    check(dc.band_starts([64, 1024, 16384]) == [0, 257, 4097], "bands start at geometric middles")
    decisions = [dc.Decision("allreduce", 4, 64, "x", (3, 0, 0)), dc.Decision("allreduce", 4, 1024, "x")]
    made = dc.rules_of(decisions, ALGS)["allreduce"]
    check(sorted(made) == [1, 4, 5] and [b.numbers() for b in made[4]] == [[0, 3, 0, 0], [257, 0, 0, 0]]
          and made[1][0].algorithm == 0 and made[5][0].algorithm == 0,
          "the measured N's bands; the default below it and just above it")
    check(dc.rules_of([dc.Decision("allreduce", 2, 64, "x")], ALGS) == {}, "no rule: no collective")
    check(openmpi.confirm("allreduce", 4, 4, "recursive_doubling") == ("fell back", "recursive_doubling"),
          "the ring that ran recursive doubling is a fallback")
    check(openmpi.confirm("allreduce", 4, 4, "ring|segmented_ring")[0] == "ran", "the ring ran")
    check(openmpi.confirm("allgather", 1, 4, "unmatched")[0] == "ran"
          and openmpi.confirm("allgather", 1, 4, "ring")[0] == "unconfirmed",
          "a twin-less algorithm: unmatched traffic is its own; a twin's traffic is no fallback")
    check(openmpi.confirm("allreduce", 6, 4, "unmatched")[0] == "fell back"
          and openmpi.confirm("allreduce", 2, 4, "unmatched")[0] == "unconfirmed",
          "Rabenseifner's basic-linear fallback shows; nonoverlapping's inner choices do not")
    check(openmpi.twin("alltoall", 5, 4) is None and openmpi.twin("alltoall", 5, 2) == "pairwise",
          "two_proc at N = 2 only")
    table = openmpi.parse_algorithms("mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:0:ignore\n"
                                     "mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:4:ring\n")
    check(table == {"allreduce": {4: "ring"}}, f"ompi_info's parsable algorithms ({table})")


# ---- bad input -----------------------------------------------------------------------------

def test_bad_input():
    tmp = tempfile.mkdtemp(prefix="collscope-tune-")
    expect_usage(["sweep", f"{tmp}/a", "--collectives", "allreduc", "--dry-run", "--bin-dir", BIN],
                 ["unknown collective 'allreduc'"])
    expect_usage(["sweep", f"{tmp}/a", "--rounds", "0", "--dry-run"], ["--rounds"])
    expect_usage(["frobnicate"], ["invalid choice"])
    bad = os.path.join(tmp, "bad.conf")
    for content, words in (("1\n2\n1\n2\n1\n0 42 0 0\n", ["no algorithm 42", "line 6"]),
                           ("1\n2\n1\n2\n1\n16 4 0 0\n", ["message size 0"]),
                           ("1\n55\n", ["collective id 55"])):
        with open(bad, "w") as f:
            f.write(content)
        expect_usage(["check", bad], words)
    expect_usage(["check", os.path.join(tmp, "absent.conf")], ["cannot read"], code=3)
    fake = os.path.join(tmp, "bin")
    os.makedirs(fake)
    with open(os.path.join(fake, "mpirun"), "w") as f:
        f.write("#!/bin/sh\necho 'HYDRA build details:'\n")
    os.chmod(os.path.join(fake, "mpirun"), 0o755)
    expect_usage(["sweep", f"{tmp}/b", "--dry-run"], ["not Open MPI", "HYDRA"],
                 env={"PATH": fake + os.pathsep + os.environ["PATH"]})
    expect_usage(["decide", f"{tmp}/nothing"], ["holds no complete sweep"])
    expect_usage(["validate", f"{tmp}/nothing"], ["no decision.candidate.conf", "decide"])
    slurm_dir = os.path.join(tmp, "s")
    p = run("sweep", slurm_dir, "--slurm", "--dry-run", "--collectives", "barrier", "--rounds", "1",
            "--bin-dir", BIN, env={"PATH": fake + os.pathsep + os.environ["PATH"]})
    check(p.returncode == 2, "--slurm with a stand-in MPI refuses too")
    sweep_dir = os.path.join(slurm_dir, "sweep")
    from collscope.tune_mpi import execute
    conf = {"name": "tune-sweep", "collectives": "barrier", "algorithms": "mpi", "tune_mpi": "sweep",
            "rounds": "1", "results_dir": sweep_dir, "bin_dir": BIN, "nodes": "1", "ntasks_per_node": "2"}
    execute.describe(execute.make_sweep(conf))   # what a submission leaves before its jobs ran
    p = run("decide", slurm_dir)
    check(p.returncode == 2 and "MISSING" in p.stderr and "task 0 (barrier_mpi" in p.stderr
          and "holds no complete sweep" in p.stderr,
          f"an unmerged Slurm sweep: its missing tasks named, exit 2 ({p.returncode}: {p.stderr[-300:]})")


def probe(extra, size="64"):
    from collscope.tune_mpi import execute
    p = subprocess.run(["mpirun", "-np", "4", os.path.join(BIN, "allreduce_mpi"), "-b", size, "-e", size,
                        "-n", "1", "-w", "0", "--vendor-volume", "--format", "jsonl", *extra],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, **execute.LOCAL_ENV))
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return rows[0]["vendor_algorithm"] if rows else f"no row ({p.stderr.strip()[-200:]})"


def test_applied():
    """Open MPI reads a file collscope writes: at N = 4 and 64 B its fixed decision runs
    recursive doubling; a file whose rule says ring (4) makes the traffic the ring's."""
    tmp = tempfile.mkdtemp(prefix="collscope-tune-applied-")
    path = os.path.join(tmp, "ring.conf")
    with open(path, "w") as f:
        f.write(rl.render({"allreduce": {4: [rl.Band(0, 4)]}}, ["every allreduce on 4 ranks: the ring"]))
    check(run("check", path).returncode == 0, "check accepts the file")
    default = probe([])
    ruled = probe(["--mca", "coll_tuned_use_dynamic_rules=1", "--mca", f"coll_tuned_dynamic_rules_filename={path}"])
    check("recursive_doubling" in default.split("|") and "ring" not in default.split("|"),
          f"the default runs recursive doubling ({default})")
    check("ring" in ruled.split("|") and "recursive_doubling" not in ruled.split("|"),
          f"under the file Open MPI runs the rule's ring ({ruled})")
    forced = ["--mca", "coll_tuned_use_dynamic_rules=1", "--mca", "coll_tuned_allreduce_algorithm=4"]
    tiny = probe(forced, "8")       # 2 floats on 4 ranks: Open MPI's ring runs recursive doubling
    check(openmpi.confirm("allreduce", 4, 4, tiny) == ("fell back", "recursive_doubling"),
          f"the forced ring with fewer elements than ranks: a fallback, named ({tiny})")


# ---- planted ---------------------------------------------------------------------------------

SLOW = (5, 0, 256)   # segmented_ring, 256-byte segments


def test_planted():
    tmp = tempfile.mkdtemp(prefix="collscope-tune-planted-")
    common = ["--np", "2", "--collectives", "allreduce", "-b", "256K", "-e", "1M", "-f", "4",
              "-n", "10", "-w", "2", "--bin-dir", BIN]
    p = run("sweep", tmp, *common, "--segments", "0,256", "--rounds", "9")
    check(p.returncode == 0, f"the sweep ran ({p.returncode}: {p.stderr[-400:]})")
    p = run("decide", tmp)
    check(p.returncode == 0, f"decide ({p.returncode}: {p.stderr[-300:]})")
    with open(os.path.join(tmp, "decision.candidate.conf")) as f:
        rules = rl.parse(f.read(), ALGS)
    picked = [b.numbers()[1:] for s in rules.values() for bs in s.values() for b in bs]
    check(list(SLOW) not in picked, f"the slow algorithm is never picked ({picked})")
    with open(os.path.join(tmp, "decision.md")) as f:
        page = f.read()
    rows = [line for line in page.splitlines() if line.startswith("| allreduce | 2 |")]
    check(len(rows) == 2 and all("segments 256 B" not in line.split("|")[6] for line in rows),
          f"decision.md: a row per size, neither picking the slow one ({rows})")
    planted = os.path.join(tmp, "planted.conf")
    with open(planted, "w") as f:
        f.write(rl.render({"allreduce": {1: [rl.Band(0, 0)], 2: [rl.Band(0, *SLOW)], 3: [rl.Band(0, 0)]}}))
    p = run("validate", tmp, *common, "--file", planted, "--rounds", "6")
    with open(os.path.join(tmp, "validation.md")) as f:
        table = [line for line in f if line.startswith("| allreduce | 2 |")]
    check(len(table) == 2 and all("| slower (rule dropped) |" in line for line in table),
          f"the validation finds the forced slow algorithm slower at both sizes: {table}")
    with open(os.path.join(tmp, "decision.conf")) as f:
        final = rl.parse(f.read(), ALGS)
    check(p.returncode == 1 and final == {}, f"its rule dropped, no rule left, exit 1 ({p.returncode})")


GROUPS = {"rules": test_rules, "bad_input": lambda: (test_bad_input(), test_applied()),
          "planted": test_planted}

if __name__ == "__main__":
    GROUPS[GROUP]()
    sys.exit(1 if failures else 0)
