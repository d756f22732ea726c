#!/usr/bin/env python3
"""MPS for ranks that share a GPU, where there is no GPU: scripts/mps and run-gpu-tests
--mps against a stand-in control program (scripts/tests/data/mps/nvidia-cuda-mps-control,
first on PATH; COLLSCOPE_MPS_STANDIN makes it answer, hang or fail), and bench-figures'
tables.

    mps_test.py BIN_DIR standin|bench_figures|run_gpu_tests|signals

standin        scripts/mps run / start / status / stop in every mode of the stand-in: a
               daemon that answers is started, used and quit; one that hangs, does not
               start, fails or makes no control pipe is refused with one line and exit 3,
               within its limit; no program: exit 2; bad usage: exit 2; `mps run`
               passes the command's exit status on, and after SIGTERM ends the command and
               quits the daemon (exit 3). After each: no daemon process, no folder.
bench_figures  bench-figures on rows made here: MPS beside time-sliced, the targets judged
               on the MPS value, a row whose gpu_sharing differs from its file shown as what
               it says, the "scheduler-bound (time-sliced)" marks, MPS that did not run.
run_gpu_tests  run-gpu-tests --emulated from a bundle's layout over BIN_DIR (its scripts,
               the build's binaries): bad --mps words and --mps on without the program
               (exit 2, one line, nothing started); --list (every hand-written algorithm of
               the catalogue x staged MPI, staged UCX, ipc x N = 1..4, the layers at 1, 2, 4;
               the carried libraries' rows only where COLLSCOPE_BUNDLE_LIBS lists them);
               --mps on (the daemon up for the runs; rows say gpu_sharing "mps" where the
               build records the field), the fault (exit 3, step and peer named, nothing
               left); --mps auto with a daemon that hangs (goes on time-sliced, says why);
               --mps on with one that fails (exit 3); --mps off; a run that fails (the
               daemon quit all the same); the figures on the emulated device.
signals        run-gpu-tests --mps on stopped by SIGTERM and by SIGINT mid-matrix: exit 3,
               one line, the summary written, no rank, daemon or folder left; and
               whole-gpu-check: its few files in OUT, and after its KILL (no trap runs)
               the daemon quit and every process of the call ended all the same.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from collscope.checks import check, failures

BIN = os.path.abspath(sys.argv[1])
GROUP = sys.argv[2]
SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = os.path.join(SCRIPTS, "gpu-bundle-files")
STANDIN = os.path.join(SCRIPTS, "tests", "data", "mps")
MPS = os.path.join(SCRIPTS, "mps")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}


def env_with(tmp, standin=True, **extra):
    """A clean environment: the stand-in first on PATH (or no control program at all),
    TMPDIR a folder of this test (every daemon folder is made there: its marker)."""
    path = (STANDIN + ":" if standin else "") + "/usr/bin:/bin"
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "TMPDIR": tmp, **MPI_ENV}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def started_here(tmp):
    """Live processes started with this test's TMPDIR in their environment (everything the
    scripts under test started: ranks, mpirun, the stand-in's daemon), or its folder in
    their command line."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        if not zombie and (f"TMPDIR={tmp}".encode() in environ or tmp.encode() in cmdline):
            found.add(pid)
    return sorted(found)


def leftovers(tmp):
    """Processes the scripts under test started that are still alive, and daemon folders
    left in TMPDIR."""
    procs = started_here(tmp)
    dirs = [d for d in os.listdir(tmp) if d.startswith("collscope-")]   # mps., run., no-mps., gpu-check.
    return procs, dirs


def check_clean(tmp, what):
    procs, dirs = leftovers(tmp)
    check(not procs and not dirs, f"{what}: nothing left (processes {procs}, folders {dirs})")
    for pid in procs:  # a failed check must not leave them for the next one
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    for d in dirs:
        shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)


def one_line(err):
    return len([line for line in err.strip().splitlines() if line.strip()]) == 1


def mps(tmp, *args, mode="answers", standin=True, timeout=60, env_extra=None):
    env = env_with(tmp, standin, COLLSCOPE_MPS_STANDIN=mode, **(env_extra or {}))
    start = time.time()
    p = subprocess.run([MPS, *args], capture_output=True, text=True, env=env, timeout=timeout)
    return p, time.time() - start


# ---- standin ------------------------------------------------------------------------------

def test_standin():
    with tempfile.TemporaryDirectory(prefix="mps-test-") as tmp:
        # A daemon that answers: the command runs as its client, and it is quit after.
        p, _ = mps(tmp, "run", "--", "bash", "-c",
                   'test -p "$CUDA_MPS_PIPE_DIRECTORY/control" && echo get_server_list | nvidia-cuda-mps-control')
        check(p.returncode == 0 and re.fullmatch(r"\d+\n", p.stdout),
              f"mps run: the command a client, get_server_list names the server ({p.returncode}, {p.stdout!r}, "
              f"{p.stderr.strip()!r})")
        check_clean(tmp, "mps run")
        p, _ = mps(tmp, "run", "--", "bash", "-c", "exit 7")
        check(p.returncode == 7, f"mps run passes the command's exit status on (7, got {p.returncode})")
        check_clean(tmp, "mps run (exit 7)")

        # By hand: start prints the variables, status lists the server, stop quits it.
        p, _ = mps(tmp, "start")
        m = re.match(r"export CUDA_MPS_PIPE_DIRECTORY=(\S+) CUDA_MPS_LOG_DIRECTORY=(\S+) COLLSCOPE_MPS_DIR=(\S+)\n$",
                     p.stdout)
        check(p.returncode == 0 and m and os.path.exists(os.path.join(m.group(1), "control")),
              f"mps start: the variables, the control pipe there ({p.returncode}, {p.stdout!r}, {p.stderr!r})")
        if m:
            p, _ = mps(tmp, "status", m.group(3))
            check(p.returncode == 0 and re.search(r"servers \d+", p.stdout), f"mps status: {p.stdout.strip()!r}")
            p, took = mps(tmp, "stop", env_extra={"COLLSCOPE_MPS_DIR": m.group(3),
                                                  "CUDA_MPS_PIPE_DIRECTORY": m.group(1)})
            check(p.returncode == 0 and took < 5 and not os.path.exists(m.group(3)),
                  f"mps stop (from a shell with the variables): exit 0 at once, folder gone "
                  f"({p.returncode}, {took:.1f} s, {p.stderr.strip()!r})")
        check_clean(tmp, "mps start / stop")

        # Daemons that do not work: one line, exit 3, within the limit, nothing left.
        for mode, says in (("hangs", "did not answer within 2 s"), ("hangs-start", "did not return within 2 s"),
                           ("fails", "failed (exit 1"), ("no-client", "made no control pipe")):
            p, took = mps(tmp, "run", "--limit", "2", "--", "true", mode=mode)
            check(p.returncode == 3 and one_line(p.stderr) and says in p.stderr and took < 12,
                  f"mps run, a daemon that {mode}: exit 3, one line '{says}', in {took:.1f} s "
                  f"({p.returncode}, {p.stderr.strip()!r})")
            check_clean(tmp, f"mps run ({mode})")

        # Bad usage and no control program: exit 2, one line.
        for args, says in ((("bogus",), "unknown command"), (("run",), "needs a command"),
                           (("run", "--limit", "x", "--", "true"), "--limit needs"),
                           (("stop", "/nonexistent"), "not a daemon's folder")):
            p, _ = mps(tmp, *args)
            check(p.returncode == 2 and one_line(p.stderr) and says in p.stderr,
                  f"mps {' '.join(args)}: exit 2, one line ({p.returncode}, {p.stderr.strip()!r})")
        p, _ = mps(tmp, "run", "--", "true", standin=False)
        check(p.returncode == 2 and one_line(p.stderr) and "no nvidia-cuda-mps-control" in p.stderr,
              f"mps run without the control program: exit 2, one line ({p.returncode}, {p.stderr.strip()!r})")

        # SIGTERM to `mps run`: the command ends, the daemon is quit, exit 3.
        env = env_with(tmp)
        proc = subprocess.Popen([MPS, "run", "--", "sleep", "300"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        running, _ = leftovers(tmp)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        check(running and proc.returncode == 3 and "interrupted" in err,
              f"mps run stopped by SIGTERM: exit 3, says so ({proc.returncode}, {err.strip()!r}, "
              f"daemon and command were up: {running})")
        check_clean(tmp, "mps run after SIGTERM")


# ---- bench_figures ------------------------------------------------------------------------

def row(**kw):
    base = {"bytes": 8, "iters": 200, "wrong": 0, "volume": "ok"}
    base.update(kw)
    return base


def write(d, label, sharing, rows, cmd=None):
    with open(os.path.join(d, f"{label}.{sharing}.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    with open(os.path.join(d, f"{label}.{sharing}.cmd"), "w") as f:
        f.write((cmd or f"mpirun -q -np 2 {label}") + "\n")


def bench_figures(d):
    p = subprocess.run([sys.executable, os.path.join(FILES, "bench-figures"), d], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def line_of(text, start):
    return next((line for line in text.splitlines() if line.startswith(start)), "")


def test_bench_figures():
    with tempfile.TemporaryDirectory(prefix="bench-figures-test-") as d:
        open(os.path.join(d, "sharing.txt"), "w").write("mps\n")
        times = [10.0 + i * 0.01 for i in range(200)]
        write(d, "pingpong_ipc_8B", "mps", [row(time_us=11.0, times_us=times, gpu_sharing="mps")])
        write(d, "pingpong_ipc_8B", "time_sliced", [row(time_us=150.0, times_us=[150.0] * 200,
                                                         gpu_sharing="time_sliced")])
        # Meant as MPS, but the ranks were no clients: the row says so, shown as such.
        write(d, "ring_ipc_8B_np2", "mps", [row(time_us=300.0, times_us=[300.0] * 200, gpu_sharing="time_sliced")])
        write(d, "ring_ipc_1G_np2", "mps", [row(bytes=1 << 30, time_us=3000.0, busbw_gbps=650.0,
                                                times_us=[3000.0] * 20, gpu_sharing="mps")])
        code, out, err = bench_figures(d)
        pp = line_of(out, "| ipc pingpong, 8 B")
        check(code == 0 and "11.00 us (p10 10.20 - p90 11.79; 200 calls)" in pp and "| met |" in pp,
              f"MPS value with its spread, the target met on it: {pp!r} {err!r}")
        check("150.00 us" in pp and "scheduler-bound (time-sliced)" in pp,
              f"the time-sliced value beside it, marked scheduler-bound: {pp!r}")
        ring = line_of(out, "| allreduce_ring ipc, 8 B, N = 2, call")
        check("(ran time_sliced: not mps)" in ring and "| met |" not in ring and "| missed |" not in ring,
              f"a row that was not MPS is not shown or judged as MPS: {ring!r}")
        big = line_of(out, "| allreduce_ring ipc, 1 GiB, N = 2, busbw |")
        check("650.00 GB/s" in big and "| met |" in big, f"1 GiB ring busbw judged >= 600: {big!r}")
        check(not line_of(out, "| d2d cudaMemcpy"), "device_rate not run: no line of it")

        # MPS did not run: the reason, and every small-message figure marked.
        open(os.path.join(d, "sharing.txt"), "w").write("time_sliced no nvidia-cuda-mps-control on PATH\n")
        for f in os.listdir(d):
            if ".mps." in f:
                os.remove(os.path.join(d, f))
        code, out, _ = bench_figures(d)
        pp = line_of(out, "| ipc pingpong, 8 B")
        check(code == 0 and "MPS did not run (no nvidia-cuda-mps-control on PATH)" in out
              and "not judged: scheduler-bound (time-sliced)" in pp,
              f"without MPS: says why, the small-message targets not judged: {pp!r}")
        code, _, err = bench_figures(os.path.join(d, "nonexistent"))
        check(code == 2 and one_line(err), f"bench-figures on no folder: exit 2, one line ({code}, {err!r})")


# ---- run_gpu_tests ------------------------------------------------------------------------

def fake_bundle(d, root=None, name="bundle"):
    """A bundle's layout over this build: run-gpu-tests, mps and env.sh beside payload.id,
    python/ with the tools, root = the build (bin/, share/collscope/algorithms.json)."""
    b = os.path.join(d, name)
    os.makedirs(os.path.join(b, "python"))
    for name in ("run-gpu-tests", "mps", "whole-gpu-check"):
        shutil.copy(os.path.join(FILES, name), os.path.join(b, name))
    os.makedirs(os.path.join(b, "tools", "lib"))
    os.symlink(shutil.which("xz", path="/usr/bin:/bin"), os.path.join(b, "tools", "xz"))
    os.symlink(os.path.join(FILES, "bench-figures"), os.path.join(b, "python", "bench-figures"))
    for name in ("collscope", "merge", "model-check", "fit-model", "accept-gpu-check", "accept", "accept-repeat",
                 "accept-reference"):
        os.symlink(os.path.join(SCRIPTS, name), os.path.join(b, "python", name))
    os.symlink(os.path.join(os.path.dirname(SCRIPTS), "acceptance"), os.path.join(b, "acceptance"))
    open(os.path.join(b, "payload.id"), "w").write("test\n")
    root = root or os.path.dirname(BIN)
    with open(os.path.join(b, "env.sh"), "w") as f:
        f.write(f'COLLSCOPE_BUNDLE_ROOT="{root}"; export COLLSCOPE_BUNDLE_ROOT\n'
                f'PATH="{root}/bin:$PATH"; export PATH\n')
    return b


def root_where_ipc_fails_under_mps(d):
    """The build's binaries, but allreduce_ring refuses --path ipc in an MPS client (as
    the ipc path's stream memory operations might between real MPS clients)."""
    root = os.path.join(d, "ipc-fails-root")
    os.makedirs(os.path.join(root, "bin"))
    os.symlink(os.path.join(os.path.dirname(BIN), "share"), os.path.join(root, "share"))
    for n in os.listdir(BIN):
        if n != "allreduce_ring":
            os.symlink(os.path.join(BIN, n), os.path.join(root, "bin", n))
    wrapper = os.path.join(root, "bin", "allreduce_ring")
    with open(wrapper, "w") as f:
        f.write("#!/bin/bash\n"
                'case " $* " in *" --path ipc "*)\n'
                '    [ -p "${CUDA_MPS_PIPE_DIRECTORY:-/nonexistent}/control" ] &&\n'
                '        { echo "allreduce_ring: error: ipc refused under MPS (test)" >&2; exit 3; } ;;\n'
                "esac\n"
                f'exec "{BIN}/allreduce_ring" "$@"\n')
    os.chmod(wrapper, 0o755)
    return root


def run_gpu_tests(bundle, tmp, args, mode="answers", standin=True, timeout=600, **extra):
    env = env_with(tmp, standin, COLLSCOPE_MPS_STANDIN=mode, COLLSCOPE_MPS_LIMIT=3, **extra)
    start = time.time()
    p = subprocess.run([os.path.join(bundle, "run-gpu-tests"), *args], capture_output=True, text=True,
                       env=env, timeout=timeout)
    return p, time.time() - start


def verdicts(out):
    d = os.path.join(out, "verdicts")
    return {n: open(os.path.join(d, n)).readline().strip() for n in os.listdir(d)} if os.path.isdir(d) else {}


def totals(text):
    m = re.search(r"passed (\d+) failed (\d+) skipped (\d+) not-run (\d+)", text)
    return tuple(int(x) for x in m.groups()) if m else None


def sharing_of_rows(out, name):
    path = os.path.join(out, "json", name + ".jsonl")
    rows = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
    return {r.get("gpu_sharing", "absent") for r in rows}


def test_list(bundle, tmp):
    p, _ = run_gpu_tests(bundle, tmp, ["--list", "--out", os.path.join(tmp, "list")])
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    catalogue = json.load(open(os.path.join(os.path.dirname(BIN), "share", "collscope", "algorithms.json")))
    hand = [f"{e['collective']}_{e['algorithm']}" for e in catalogue if e["kind"] == "algorithm"]
    want = {f"{a}.{path}.np{n}" for a in hand for path in ("staged-mpi", "staged-ucx", "ipc") for n in (1, 2, 3, 4)}
    missing = sorted(want - set(names))
    check(p.returncode == 0 and len(hand) > 30 and not missing,
          f"--list: all {len(hand)} hand-written algorithms x 3 paths x N = 1..4 ({len(missing)} missing: {missing[:4]})")
    layer_n = {n.rsplit(".np", 1)[1] for n in names if n.startswith("layer_") and ".ipc." in n}
    check(layer_n == {"1", "2", "4"}, f"--list: the layers at N = 1, 2, 4 over ipc (got {sorted(layer_n)})")
    check(not any(".cuda-aware-" in n for n in names) and not any(re.search(r"\.nccl(-baseline)?\.np[234]$", n)
                                                                for n in names),
          "--list without COLLSCOPE_BUNDLE_LIBS: no cuda_aware rows, no NCCL at N > 1")
    check("allreduce_ring.fault-stall-ipc.np4" in names, "--list: the fault")
    p, _ = run_gpu_tests(bundle, tmp, ["--list", "--out", os.path.join(tmp, "list")],
                         COLLSCOPE_BUNDLE_LIBS="cuda-mpi ucx-cuda nccl")
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    want = {f"{a}.{path}.np{n}" for a in hand for path in ("cuda-aware-mpi", "cuda-aware-ucx") for n in (1, 2, 3, 4)}
    want |= {f"{a}.nccl.np{n}" for a in hand for n in (2, 3, 4)}
    want |= {f"allreduce_mpi.cuda-aware-mpi-baseline.np{n}" for n in (1, 2, 3, 4)}
    missing = sorted(want - set(names))
    nccl_line = next((line for line in p.stdout.splitlines() if line.startswith("allreduce_ring.nccl.np2 ")), "")
    check(not missing and "NCCL_MULTI_RANK_GPU_ENABLE=1" in nccl_line,
          f"--list with COLLSCOPE_BUNDLE_LIBS: cuda_aware MPI and UCX, the *_mpi baselines, NCCL at N = 2..4 "
          f"with several ranks a GPU ({len(missing)} missing: {missing[:4]}; {nccl_line!r})")


def test_bad_input(bundle, tmp):
    out = os.path.join(tmp, "bad")
    for args, says in ((["--mps", "maybe"], "--mps takes auto, on or off"), (["--mps"], "--mps takes"),
                       (["--jobs", "x"], "--jobs needs a whole number"), (["--bogus"], "unknown argument"),
                       (["--only", "("], "--only")):
        p, _ = run_gpu_tests(bundle, tmp, ["--out", out, *args])
        check(p.returncode == 2 and one_line(p.stderr) and says in p.stderr and not os.path.exists(out),
              f"run-gpu-tests {' '.join(args)}: exit 2, one line, nothing made ({p.returncode}, {p.stderr.strip()!r})")
    p, _ = run_gpu_tests(bundle, tmp, ["--out", out, "--emulated", "--mps", "on"], standin=False)
    check(p.returncode == 2 and one_line(p.stderr) and "no nvidia-cuda-mps-control" in p.stderr
          and not os.path.exists(out),
          f"--mps on without the control program: exit 2, one line ({p.returncode}, {p.stderr.strip()!r})")
    check_clean(tmp, "bad input")


SMALL = ["--emulated", "--ranks", "1 2", "--jobs", "2"]


def test_mps_on(bundle, tmp):
    """The daemon up for the matrix; the rows' gpu_sharing where the build records it."""
    out = os.path.join(tmp, "on")
    p, took = run_gpu_tests(bundle, tmp, ["--out", out, *SMALL, "--mps", "on", "--only",
                                          r"^allreduce_ring\.(ipc|staged-mpi)\.|^layer_tp_mlp\.ipc\.|fault"])
    v = verdicts(out)
    t = totals(p.stdout)
    check(p.returncode == 0 and t and t[1] == 0 and t[3] == 0 and t[0] >= 8,
          f"--emulated --mps on: exit 0, all passed ({p.returncode}, {t}, {took:.0f} s, {p.stderr.strip()[-300:]!r})")
    check("# MPS: a private daemon in" in p.stdout and "the ipc probe ran as MPS clients" in p.stdout,
          "--mps on: the daemon started, the probe ran as its clients")
    fault = v.get("allreduce_ring.fault-stall-ipc.np4", "")
    check(fault.startswith("ok exit 3") and "nothing left" in fault, f"the fault under MPS: {fault!r}")
    shares = {n: sharing_of_rows(out, n) for n in ("allreduce_ring.ipc.np2", "allreduce_ring.ipc.np1",
                                                    "allreduce_ring.mps-probe-ipc.np2")}
    check(shares["allreduce_ring.ipc.np2"] == {"mps"} and shares["allreduce_ring.mps-probe-ipc.np2"] == {"mps"}
          and shares["allreduce_ring.ipc.np1"] == {"exclusive"},
          f"rows: gpu_sharing mps at 2 ranks, exclusive at 1 ({shares})")
    check(v.get("cleanup.leftovers.np0", "").startswith("ok"), f"cleanup verdict: {v.get('cleanup.leftovers.np0')}")
    check_clean(tmp, "--mps on")


def test_mps_fallbacks(bundle, tmp):
    # auto with a daemon that hangs: time-sliced, one line why, all passed.
    out = os.path.join(tmp, "auto-hangs")
    p, took = run_gpu_tests(bundle, tmp, ["--out", out, *SMALL, "--only", r"^allreduce_ring\.ipc\.np2"],
                            mode="hangs")
    t = totals(p.stdout)
    why = [line for line in p.stdout.splitlines() if line.startswith("# MPS: off")]
    check(p.returncode == 0 and t and t[0] >= 3 and t[1] == 0 and len(why) == 1 and "did not answer" in why[0],
          f"--mps auto, a daemon that hangs: time-sliced, one line why, passed ({p.returncode}, {t}, {why})")
    check(open(os.path.join(out, "bench", "sharing.txt")).read().startswith("time_sliced"),
          "sharing.txt: time_sliced and why")
    s = sharing_of_rows(out, "allreduce_ring.ipc.np2")
    check(s == {"time_sliced"}, f"rows time-sliced: {s}")
    check_clean(tmp, "--mps auto, hangs")
    # on with a daemon that fails or hangs: exit 3, one line, nothing left.
    for mode in ("fails", "hangs"):
        out = os.path.join(tmp, f"on-{mode}")
        p, took = run_gpu_tests(bundle, tmp, ["--out", out, *SMALL, "--mps", "on", "--only", "^none$"], mode=mode)
        errors = [line for line in p.stderr.splitlines() if "error" in line]
        check(p.returncode == 3 and len(errors) == 1 and "--mps on" in errors[0] and took < 60,
              f"--mps on, a daemon that {mode}: exit 3, one line ({p.returncode}, {p.stderr.strip()!r}, {took:.0f} s)")
        check_clean(tmp, f"--mps on, {mode}")
    # off: no daemon at all, the stand-in never asked.
    out = os.path.join(tmp, "off")
    p, _ = run_gpu_tests(bundle, tmp, ["--out", out, *SMALL, "--mps", "off", "--only", r"^allreduce_ring\.ipc\.np2"],
                         mode="fails")
    check(p.returncode == 0 and "# MPS: off (--mps off)" in p.stdout, f"--mps off: exit 0 ({p.returncode})")
    check_clean(tmp, "--mps off")
    # A test that fails (a watchdog of 1 ms): exit 1, the daemon quit all the same.
    out = os.path.join(tmp, "failing")
    p, _ = run_gpu_tests(bundle, tmp, ["--out", out, *SMALL, "--mps", "on", "--timeout", "1", "--only",
                                       r"^allreduce_ring\.ipc\.np2|^layer_moe\.ipc\.np2"])
    t = totals(p.stdout)
    check(p.returncode == 1 and t and t[1] >= 1, f"a failing test under MPS: exit 1 ({p.returncode}, {t})")
    check_clean(tmp, "a failing test under MPS")


def test_ipc_fails_under_mps(tmp):
    """The ipc probe fails under MPS, the staged one passes: MPS is kept, and the matrix's
    ipc runs show the failure."""
    bundle = fake_bundle(tmp, root_where_ipc_fails_under_mps(tmp), "bundle-ipc-fails")
    out = os.path.join(tmp, "ipc-fails")
    p, _ = run_gpu_tests(bundle, tmp, ["--out", out, *SMALL, "--mps", "on", "--only",
                                       r"^allreduce_ring\.(ipc|staged-mpi)\.np2"])
    v = verdicts(out)
    said = [line for line in p.stdout.splitlines() if "the ipc probe failed under MPS" in line]
    check(p.returncode == 1 and len(said) == 1 and "MPS kept" in said[0]
          and v.get("allreduce_ring.mps-probe-staged.np2", "").startswith("ok")
          and v.get("allreduce_ring.ipc.np2", "").startswith("FAIL")
          and v.get("allreduce_ring.staged-mpi.np2", "").startswith("ok"),
          f"ipc failing under MPS: MPS kept on the staged probe, the ipc run failed, exit 1 ({p.returncode}, {said}, "
          f"{ {k: x for k, x in v.items() if 'allreduce_ring' in k} })")
    check_clean(tmp, "ipc failing under MPS")


def test_figures(bundle, tmp):
    out = os.path.join(tmp, "figures")
    p, _ = run_gpu_tests(bundle, tmp, ["--out", out, "--emulated", "--mps", "on", "--bench", "--only",
                                       r"pingpong_ipc_8B|ring_ipc_8B_np2\.|ring_staged_8B_np2"])
    md = open(os.path.join(out, "benchmarks.md")).read() if os.path.exists(os.path.join(out, "benchmarks.md")) else ""
    pp = line_of(md, "| ipc pingpong, 8 B")
    check(p.returncode == 0 and re.search(r"\| \d+\.\d+ us \(p10 .*20 calls\) \| \d+\.\d+ us", pp)
          and "scheduler-bound" in pp and "`mpirun -q -np 2 pingpong -m device --path ipc" in pp,
          f"--bench on the emulated device: MPS and time-sliced side by side, the command ({p.returncode}, {pp!r})")
    check_clean(tmp, "figures")


def test_run_gpu_tests():
    with tempfile.TemporaryDirectory(prefix="mps-rgt-test-") as tmp:
        bundle = fake_bundle(tmp)
        test_list(bundle, tmp)
        test_bad_input(bundle, tmp)
        test_mps_on(bundle, tmp)
        test_mps_fallbacks(bundle, tmp)
        test_ipc_fails_under_mps(tmp)
        test_figures(bundle, tmp)


# ---- signals ------------------------------------------------------------------------------

def test_signals():
    with tempfile.TemporaryDirectory(prefix="mps-sig-test-") as tmp:
        bundle = fake_bundle(tmp)
        for sig in (signal.SIGTERM, signal.SIGINT):
            out = os.path.join(tmp, f"sig{int(sig)}")
            env = env_with(tmp, COLLSCOPE_MPS_LIMIT=3)
            proc = subprocess.Popen([os.path.join(bundle, "run-gpu-tests"), "--out", out, *SMALL, "--mps", "on",
                                     "--only", r"^allreduce_\w+\.(ipc|staged-mpi)\.np2"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            # Mid-matrix: a few tests done (their timings written), others running.
            end = time.time() + 120
            timings = os.path.join(out, "timings.tsv")
            while time.time() < end and proc.poll() is None:
                if os.path.exists(timings) and len(open(timings).readlines()) >= 5:
                    break
                time.sleep(0.2)
            up, _ = leftovers(tmp)
            proc.send_signal(sig)   # to run-gpu-tests alone, not its group
            start = time.time()
            out_text, err = proc.communicate(timeout=120)
            took = time.time() - start
            errors = [line for line in err.splitlines() if "error" in line]
            check(up and proc.returncode == 3 and len(errors) == 1 and "interrupted by SIG" in errors[0] and took < 40,
                  f"{sig.name} mid-matrix: exit 3 in {took:.0f} s, one line ({proc.returncode}, {errors}, "
                  f"daemon was up: {bool(up)})")
            summary = open(os.path.join(out, "summary.md")).read() if os.path.exists(
                os.path.join(out, "summary.md")) else ""
            check("Not run (none counted as passed)" in summary, f"{sig.name}: summary.md lists what did not run")
            time.sleep(1)
            ranks = [pid for pid in started_here(tmp) if b"allreduce_" in open(f"/proc/{pid}/cmdline", "rb").read()]
            check(not ranks, f"{sig.name}: no rank left ({ranks})")
            check_clean(tmp, f"run-gpu-tests after {sig.name}")
        test_whole_check(bundle, tmp)


def test_whole_check(bundle, tmp):
    """whole-gpu-check as a lent node runs it: the files to bring back, then the KILL."""
    only = ["--only", r"^allreduce_ring\.ipc\.np2"]
    out = os.path.join(tmp, "whole")
    env = env_with(tmp, COLLSCOPE_MPS_LIMIT=3)
    p = subprocess.run([os.path.join(bundle, "whole-gpu-check"), out, "60", *SMALL, "--mps", "on", *only],
                       capture_output=True, text=True, env=env, timeout=300)
    files = sorted(os.listdir(out)) if os.path.isdir(out) else []
    listed = subprocess.run(["tar", "-tJf", os.path.join(out, "results.tar.xz")], capture_output=True,
                            text=True).stdout.split()
    must = {"exit.txt", "results.tar.xz", "run-gpu-tests.out", "summary.md"}
    check(p.returncode == 0 and must <= set(files) <= must | {"benchmarks.md"}
          and not any(os.path.isdir(os.path.join(out, f)) for f in files)
          and "results/verdicts/allreduce_ring.ipc.np2" in listed and "results/summary.md" in listed,
          f"whole-gpu-check: exit 0, at most 8 files, no folder, the results packed ({p.returncode}, {files}, "
          f"{len(listed)} packed, {p.stderr.strip()[-200:]!r})")
    check_clean(tmp, "whole-gpu-check")
    # Killed mid-matrix (no budget, 15 s to the KILL, a matrix of minutes): exit 137, what
    # was left ended after.
    out = os.path.join(tmp, "whole-killed")
    env = env_with(tmp, COLLSCOPE_MPS_LIMIT=3, COLLSCOPE_GPU_CHECK_GRACE=15)
    p = subprocess.run([os.path.join(bundle, "whole-gpu-check"), out, "0", "--emulated", "--jobs", "2", "--mps", "on",
                        "--only", r"^(allreduce|allgather)_\w+\.(ipc|staged-mpi)\."], capture_output=True, text=True,
                       env=env, timeout=300)
    said = open(os.path.join(out, "exit.txt")).read() if os.path.exists(os.path.join(out, "exit.txt")) else ""
    check(p.returncode == 137 and "run-gpu-tests exit 137" in said and os.path.exists(os.path.join(out, "results.tar.xz")),
          f"whole-gpu-check killed: exit 137, exit.txt says so, the results so far packed ({p.returncode}, {said!r})")
    check_clean(tmp, "whole-gpu-check after its KILL")


if __name__ == "__main__":
    if not os.path.exists(os.path.join(BIN, "allreduce_ring")) and GROUP in ("run_gpu_tests", "signals"):
        print(f"SKIP: no allreduce_ring in {BIN}")
        sys.exit(77)
    {"standin": test_standin, "bench_figures": test_bench_figures, "run_gpu_tests": test_run_gpu_tests,
     "signals": test_signals}[GROUP]()
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
