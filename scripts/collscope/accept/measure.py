"""What scripts/accept runs (acceptance/README.md, "What it runs"), launch by launch.

Screening, repeated `repeats` times, each repeat in this order so that slow drifts of the
machine spread over every measurement alike:
  1. compute_probe: the host reducer's time on each rank, one rank at a time;
  2. pingpong --pairs all at the latency size;
  3. pingpong at the bandwidth size for each pattern: pairs (each pair alone), rounds
     (disjoint pairs at once), ring (every rank to r+k at once).
Then the collectives (allreduce, alltoall) over all hosts and within each host, and the
retests the judge asks for (one pair alone). On GPU nodes each repeat goes on with the GPU
classes' launches (gpu_measure.py). Every collscope launch writes its rows with
-O into the work directory; they are merged into accept.h5 at the end.
"""

import json
import os
import signal
import subprocess
import time


def group_alive(pgid):
    """Whether a live (not zombie) process of process group pgid exists."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def error_line(err, program):
    """The program's own last line on stderr ("PROGRAM: error: ..."), else the last line
    that is not mpirun's banner of dashes."""
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    mine = [line for line in lines if line.startswith(program + ":")]
    if mine:
        return mine[-1]
    return next((line for line in reversed(lines) if not set(line) <= set("-=* ")), "")


class RuntimeFailure(Exception):
    """A launch failed or ran out of time: exit code 3, one line."""


class Runner:
    def __init__(self, placement, bin_dir, workdir, settings, log):
        self.placement, self.bin_dir, self.workdir = placement, bin_dir, workdir
        self.settings, self.log = settings, log
        self.launches = []       # what ran: name, command, seconds, exit status, results file
        self.problems = []       # payloads that arrived changed, volumes that differ from theory
        self.process = None

    # ---- one launch ----------------------------------------------------------------------

    def launch(self, name, program, args, host=None, results=True, quiet_ok=(0,)):
        """Runs PROGRAM ARGS on every rank (or on `host`'s) and returns its JSON records.
        Exit status 1 (a wrong payload or volume) keeps the records and notes the problem;
        anything else not in quiet_ok is a RuntimeFailure."""
        index = len(self.launches)
        h5 = os.path.join(self.workdir, f"{index:03d}_{name}.h5") if results else None
        argv = [os.path.join(self.bin_dir, program)] + args
        if results:
            argv += ["--format", "jsonl", "-O", h5]
        cmd = self.placement.command(argv, host)
        start = time.monotonic()
        code, out, err = self.run_process(cmd, name)
        seconds = time.monotonic() - start
        self.launches.append({"name": name, "program": program, "command": cmd, "host": host,
                              "seconds": round(seconds, 3), "exit": code,
                              "results": os.path.basename(h5) if h5 else None})
        records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        line = error_line(err, program)
        if code != 0 and line:
            self.launches[-1]["error"] = line   # a refusal's one line (quiet_ok), or the failure's
        if code not in quiet_ok and not (code == 1 and records):
            raise RuntimeFailure(f"{name}: {program} exited {code}" + (f": {line}" if line else ""))
        self.log(f"{name}: {seconds:.1f}s")
        return records

    def run_process(self, cmd, name):
        limit = max(600.0, 20 * self.settings["timeout"])
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True)
        try:
            out, err = self.process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeFailure(f"{name}: still running after {limit:.0f}s, stopped") from None
        except BaseException:   # a signal (Interrupted) or Ctrl-C: the launch must not outlive us
            self.stop()
            raise
        finally:
            code = self.process.returncode
            self.process = None
        return code, out, err

    def stop(self):
        """Ends the launch in progress (its own process group: mpirun and the ranks it
        started here), on a timeout or a signal; returns once no process of the group is
        left (the ranks can outlive mpirun by a moment)."""
        p = self.process
        if p is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.time() + 5
            while time.time() < deadline and group_alive(p.pid):
                p.poll()   # reaps mpirun once it exits (a zombie still counts as the group's)
                time.sleep(0.05)
            if not group_alive(p.pid):
                return

    # ---- the measurements ----------------------------------------------------------------

    def note_problems(self, what, record):
        if record.get("wrong") or record.get("volume") not in ("ok", "n/a", None):
            self.problems.append({"what": what, "bytes": record.get("bytes"),
                                  "wrong": record.get("wrong"), "volume": record.get("volume"),
                                  "first_bad_pair": record.get("first_bad_pair"),
                                  "first_bad_rank": record.get("first_bad_rank")})

    def compute_probe(self, repeat):
        s = self.settings
        records = self.launch(f"compute-r{repeat}", "compute_probe",
                              ["-b", str(s["compute_bytes"]), "-n", str(s["compute_iters"]), "-w", "2"],
                              results=False)
        if len(records) != 1 or records[0].get("probe") != "compute":
            raise RuntimeFailure(f"compute-r{repeat}: compute_probe printed no record")
        if any(records[0]["wrong"]):
            raise RuntimeFailure(f"compute-r{repeat}: the host reducer computed wrong sums "
                                 f"(wrong elements per rank {records[0]['wrong']})")
        return records[0]

    def pingpong(self, name, args, size, host=None):
        s = self.settings
        records = self.launch(name, "pingpong", args + ["-b", str(size), "-e", str(size),
                                                        "--timeout", str(s["timeout"])], host=host)
        if len(records) != 1:
            raise RuntimeFailure(f"{name}: pingpong printed {len(records)} records, expected 1")
        self.note_problems(name, records[0])
        return records[0]

    def latency_matrix(self, repeat):
        s = self.settings
        return self.pingpong(f"latency-r{repeat}", ["--pairs", "all", "-n", str(s["latency_iters"]), "-w", "2"],
                             s["latency_bytes"])

    def bandwidth_matrix(self, pattern, repeat):
        s = self.settings
        args = ["--pairs", "all"] if pattern == "pairs" else ["--pattern", pattern]
        return self.pingpong(f"{pattern}-r{repeat}", args + ["-n", str(s["iters"]), "-w", str(s["warmup"])],
                             s["bandwidth_bytes"])

    def collective(self, program, host=None):
        s = self.settings
        name = f"{program}-{host or 'all'}"
        records = self.launch(name, program,
                              ["-b", str(s["collective_min_bytes"]),
                               "-e", str(s["collective_max_bytes"]), "-f", "4",
                               "-n", str(s["collective_iters"]), "-w", str(s["warmup"]),
                               "--timeout", str(s["timeout"])], host=host)
        for r in records:
            self.note_problems(name, r)
        return records

    def tournament_rounds(self):
        """--pattern rounds' rounds at this placement's N, from pingpong itself (`pingpong
        --print-rounds N`, answered without MPI on this host): [[(a, b), ...], ...]."""
        n = self.placement.nranks
        argv = [os.path.join(self.bin_dir, "pingpong"), "--print-rounds", str(n)]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeFailure(f"pingpong --print-rounds {n} exited {p.returncode}: "
                                 f"{error_line(p.stderr, 'pingpong')}")
        return [[tuple(pair) for pair in rd] for rd in json.loads(p.stdout)]

    def retest(self, a, b, size, iters):
        """The pair alone: its per-iteration half round trips (us)."""
        r = self.pingpong(f"retest-{a}-{b}-{size}B",
                          ["--pairs", f"{a},{b}", "-n", str(iters), "-w", str(self.settings["warmup"])], size)
        return r["times_us"]


class Screening:
    """Every repeat's figures: compute probes, latency matrices, bandwidth matrices per
    pattern (N x N, GB/s, as pingpong reported them), and --pattern rounds' rounds (which
    pairs ran at once; None when rounds did not run)."""

    def __init__(self):
        self.probes, self.latency, self.bandwidth = [], [], {}
        self.rounds = None


def screen(runner, patterns, repeats, check_layout, links=True, after_repeat=None):
    """The screening's repeats: the links' launches (unless `links` is false), then
    `after_repeat(i)` (the GPU classes' launches of the same repeat)."""
    out = Screening()
    for i in range(repeats):
        if links:
            screen_links(runner, out, patterns, i, check_layout)
        if after_repeat:
            after_repeat(i)
    return out


def screen_links(runner, out, patterns, i, check_layout):
    probe = runner.compute_probe(i)
    check_layout(probe["hosts"], f"compute-r{i}")
    out.probes.append(probe)
    lat = runner.latency_matrix(i)
    check_layout(lat["node_of_rank"], f"latency-r{i}")
    out.latency.append(lat["latency_us_matrix"])
    for p in patterns:
        if p == "rounds" and out.rounds is None:
            out.rounds = runner.tournament_rounds()
        bw = runner.bandwidth_matrix(p, i)
        check_layout(bw["node_of_rank"], f"{p}-r{i}")
        out.bandwidth.setdefault(p, []).append(bw["bw_gbps_matrix"])


def collectives(runner, programs, layout):
    """{(program, scope): [records]}: scope "all" (every host), or a host name (its ranks
    alone, where it has at least 2)."""
    out = {}
    for program in programs:
        out[(program, "all")] = runner.collective(program)
        if len(layout.hosts) == 1:
            continue
        for host in layout.hosts:
            if len(layout.ranks_of(host)) >= 2:
                out[(program, host)] = runner.collective(program, host)
    return out
