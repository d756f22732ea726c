#!/usr/bin/env python3
"""scripts/gpu-bundle end to end: builds a bundle from the build's binaries and checks that
it is at most 60 MiB, holds no CUDA/NCCL library, and runs on its own: in a clean
environment (env -i) plus `. env.sh`, every packed ELF file resolves each library to the
bundle or to glibc; the bundled mpirun runs allreduce_ring on 2 ranks, and every object
mpirun and the ranks load (LD_DEBUG=files) comes from the bundle or glibc (Open MPI's
components and help files found through OPAL_PREFIX); in a mount namespace where the
system's copies of everything packed (libraries, Open MPI, PMIx, UCX) are hidden, that
run still succeeds (skipped where unshare -m is not allowed); run-gpu-tests exits 77
saying "no GPU" on a machine without one; and bad input: an --out that cannot be
written is one line and exit 3, a --bin-dir without binaries one line and exit 2, a
bundle over the size limit (lowered by COLLSCOPE_GPU_BUNDLE_MAX_MIB) one line and exit 1.

usage: gpu_bundle_test.py BIN_DIR
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from collscope.checks import check, failures

BIN = os.path.abspath(sys.argv[1])
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu-bundle")
LIMIT = 60 * 1024 * 1024
BASE = re.compile(r"^(linux-vdso|ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|"
                  r"libanl|libnsl|libBrokenLocale|libnss_[a-z]+|libthread_db)\.so(\.|$)")
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")
GPU = re.compile(r"(^|/)lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-[^/]*|nvrtc|cufft|curand|cusparse|cusolver)"
                 r"[._-][^/]*$")


def clean_sh(bundle, script, timeout=120, extra_env=None):
    """Runs bash -c SCRIPT in a clean environment with the bundle's env.sh sourced."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    env.update(extra_env or {})
    return subprocess.run(["env", "-i", *[f"{k}={v}" for k, v in env.items()], "bash", "-c",
                           f'. "{bundle}/env.sh" || exit 99\n{script}'],
                          capture_output=True, text=True, timeout=timeout)


def allowed(soname, path, root):
    """A library may resolve to the bundle, or to glibc in the system's directories."""
    real = os.path.realpath(path)
    if real.startswith(root + "/"):
        return True
    return bool(BASE.match(soname)) and path.startswith(SYSTEM_DIRS)


def test_bad_input(d):
    p = subprocess.run([SCRIPT, "--out", "/nonexistent/x", "--bin-dir", BIN], capture_output=True, text=True)
    check(p.returncode == 3 and len(p.stderr.strip().splitlines()) == 1 and "cannot write" in p.stderr
          and not p.stdout, f"--out /nonexistent/x: exit 3, one line ({p.returncode}, {p.stderr.strip()!r})")
    check(not os.path.exists("/nonexistent"), "--out /nonexistent/x created nothing")
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    p = subprocess.run([SCRIPT, "--out", os.path.join(d, "b"), "--bin-dir", empty], capture_output=True, text=True)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "no collscope binaries" in p.stderr,
          f"--bin-dir without binaries: exit 2, one line ({p.returncode}, {p.stderr.strip()!r})")
    check(not os.path.exists(os.path.join(d, "b")), "... and no bundle written")
    p = subprocess.run([SCRIPT, "--bogus"], capture_output=True, text=True)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--bogus" in p.stderr,
          f"unknown option: exit 2, one line ({p.returncode}, {p.stderr.strip()!r})")
    # Over the size limit (lowered to 1 MiB for the test): one line, exit 1, nothing left.
    small = os.path.join(d, "small")
    p = subprocess.run([SCRIPT, "--out", small, "--bin-dir", BIN], capture_output=True, text=True, timeout=240,
                       env=dict(os.environ, COLLSCOPE_GPU_BUNDLE_MAX_MIB="1"))
    check(p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "over the 1 MiB limit" in p.stderr
          and not os.path.exists(small) and not glob.glob(os.path.join(d, ".gpu-bundle-*")),
          f"bundle over the limit: exit 1, one line, nothing left ({p.returncode}, {p.stderr.strip()!r})")
    other = os.path.join(d, "other")
    os.mkdir(other)
    open(os.path.join(other, "precious.txt"), "w").write("keep me\n")
    p = subprocess.run([SCRIPT, "--out", other, "--bin-dir", BIN], capture_output=True, text=True)
    check(p.returncode == 3 and len(p.stderr.strip().splitlines()) == 1
          and os.path.exists(os.path.join(other, "precious.txt")),
          f"--out on a folder that is not a bundle: refused, exit 3 ({p.returncode}, {p.stderr.strip()!r})")


def test_bundle(d):
    bundle = os.path.join(d, "bundle")
    p = subprocess.run([SCRIPT, "--out", bundle, "--bin-dir", BIN], capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, f"gpu-bundle: exit 0 ({p.returncode}, {p.stderr.strip()[:300]}) {p.stdout.strip()}")
    if p.returncode != 0:
        return
    size = int(subprocess.run(["du", "-s", "-B1", bundle], capture_output=True, text=True).stdout.split()[0])
    check(size <= LIMIT, f"bundle size {size / 2**20:.1f} MiB <= 60 MiB")
    for f in ("env.sh", "run-gpu-tests", "payload.tar.xz", "MANIFEST.txt", "README.txt", "tools/xz"):
        check(os.path.exists(os.path.join(bundle, f)), f"bundle holds {f}")
    packed = subprocess.run(["tar", "-tJf", os.path.join(bundle, "payload.tar.xz")],
                            capture_output=True, text=True).stdout.split()
    loose = [os.path.relpath(os.path.join(p_, f), bundle) for p_, _, fs in os.walk(bundle) for f in fs]
    gpu = [f for f in packed + loose if GPU.search(f)]
    check(packed and not gpu, f"no CUDA/NCCL/libcuda library in the bundle ({len(packed)} packed files; {gpu[:5]})")
    for want in ("./bin/pingpong", "./bin/allreduce_ring", "./bin/allreduce_nccl", "./ompi/bin/orterun",
                 "./ompi/bin/orted", "./lib/libmpi.so.40", "./lib/libopen-rte.so.40", "./lib/libopen-pal.so.40",
                 "./lib/libucp.so.0", "./lib/libhdf5_serial.so.103", "./lib/libstdc++.so.6", "./lib/libgcc_s.so.1",
                 "./lib/libopenblas.so.0", "./lib/libpmix.so.2", "./ompi/share/openmpi/help-mpi-runtime.txt",
                 "./ompi/etc/openmpi-mca-params.conf"):
        check(want in packed, f"payload holds {want}")
    check(any(f.startswith("./ompi/lib/openmpi3/mca_") for f in packed), "payload holds Open MPI's MCA components")
    check(any(f.startswith("./lib/ucx/libuct_") for f in packed), "payload holds UCX's modules")
    check(not any(f.endswith("_test") for f in packed), "unit tests (*_test) left out")
    check(not any(BASE.match(os.path.basename(f)) for f in packed), "no glibc library packed")

    # Clean environment: env.sh unpacks and sets everything up.
    p = clean_sh(bundle, 'echo "ROOT=$COLLSCOPE_BUNDLE_ROOT"; echo "OPAL=$OPAL_PREFIX"; command -v mpirun', timeout=180)
    check(p.returncode == 0 and "ROOT=" in p.stdout, f"env -i + . env.sh: exit 0 ({p.returncode}, {p.stderr.strip()[:300]})")
    root = os.path.join(bundle, "root")
    check(f"ROOT={root}\n" in p.stdout and f"OPAL={root}/ompi\n" in p.stdout
          and f"{root}/bin/mpirun" in p.stdout, f"env.sh: root/ unpacked, OPAL_PREFIX and PATH set ({p.stdout.strip()!r})")
    if p.returncode != 0:
        return

    # ldd of every packed ELF file, with only env.sh's variables.
    elves = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    elves.append(path)
    script = "for f in \"$@\"; do echo \"== $f\"; ldd \"$f\"; done"
    p = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={os.environ.get('HOME', '/root')}", "bash", "-c",
                        f'. "{bundle}/env.sh" || exit 99\n{script}', "ldd-all", *elves],
                       capture_output=True, text=True, timeout=240)
    bad, current = [], None
    for line in p.stdout.splitlines():
        if line.startswith("== "):
            current = os.path.relpath(line[3:], root)
            continue
        m = re.match(r"\s*(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?$", line)
        if m:
            soname, where = m.group(1), m.group(2).strip()
            if where == "not found" or not allowed(soname, where, root):
                bad.append(f"{current}: {soname} => {where}")
        elif line.strip().startswith("/") and "ld-linux" not in line:
            bad.append(f"{current}: {line.strip()}")
    check(len(elves) > 150 and not bad,
          f"ldd of {len(elves)} packed ELF files: every library from the bundle or glibc ({bad[:5]})")

    # The bundled mpirun runs ranks; every object loaded by mpirun and the ranks (their
    # dlopen'ed MCA components included) comes from the bundle or glibc.
    trace = os.path.join(d, "lddebug")
    os.mkdir(trace)
    # (the real orterun, not the bin/mpirun wrapper: the wrapper's own id and dirname would
    # be traced too)
    p = clean_sh(bundle, f'export LD_DEBUG=files LD_DEBUG_OUTPUT="{trace}/t"\n'
                         '"$COLLSCOPE_BUNDLE_ROOT/ompi/bin/orterun" -np 2 allreduce_ring -b 1K -e 1K -n 2')
    check(p.returncode == 0 and "wrong elements: 0 OK" in p.stdout,
          f"bundled mpirun -np 2 allreduce_ring -b 1K -e 1K -n 2: exit 0 ({p.returncode}, {p.stderr.strip()[:300]})")
    loaded = {}
    for t in glob.glob(os.path.join(trace, "t.*")):
        for m in re.finditer(r"calling init: (\S+)", open(t, errors="replace").read()):
            loaded.setdefault(m.group(1), t)
    outside = sorted(f for f in loaded if not allowed(os.path.basename(f), f, root))
    libmpi = [f for f in loaded if os.path.basename(f) == "libmpi.so.40"]
    mca = [f for f in loaded if "/mca_" in f]
    check(len(glob.glob(os.path.join(trace, "t.*"))) >= 3 and libmpi
          and all(f.startswith(root + "/lib/") for f in libmpi),
          f"libmpi loaded from the bundle ({sorted(set(libmpi))})")
    check(mca and all(f.startswith(root + "/ompi/lib/openmpi3/") or f.startswith(root + "/pmix/") for f in mca),
          f"Open MPI's components loaded from the bundle ({len(mca)} loads)")
    check(loaded and not outside, f"every object loaded by mpirun and the ranks from the bundle or glibc "
                                  f"({len(loaded)} objects; outside: {outside[:5]})")

    test_hidden_system(d, bundle)

    # Sourced from dash (no BASH_SOURCE): from the bundle's folder it finds itself.
    p = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "sh", "-c",
                        f'cd "{bundle}" && . ./env.sh && mpirun -np 2 allreduce_ring -b 1K -e 1K -n 1'],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0 and "wrong elements: 0 OK" in p.stdout,
          f"env.sh sourced from sh in the bundle's folder: runs ({p.returncode}, {p.stderr.strip()[:200]})")

    # run-gpu-tests: smoke checks pass, then "no GPU" and 77 here.
    has_gpu = shutil.which("nvidia-smi") and os.path.exists("/dev/nvidiactl")
    if has_gpu:
        print("skip run-gpu-tests exit 77: this machine has a GPU (run it by hand: bundle/run-gpu-tests)")
        return
    out = os.path.join(d, "gpu-results")
    p = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={os.environ.get('HOME', '/root')}",
                        os.path.join(bundle, "run-gpu-tests"), "--out", out],
                       capture_output=True, text=True, timeout=180)
    check(p.returncode == 77 and "no GPU" in p.stdout,
          f"run-gpu-tests without a GPU: exit 77, says no GPU ({p.returncode}, {p.stdout.strip()[-300:]!r} "
          f"{p.stderr.strip()[:200]!r})")
    log = open(os.path.join(out, "run-gpu-tests.log")).read() if os.path.exists(os.path.join(out, "run-gpu-tests.log")) else ""
    m = re.search(r"passed (\d+) failed (\d+) skipped (\d+)", log)
    check(m and int(m.group(1)) == 2 and int(m.group(2)) == 0 and int(m.group(3)) > 100
          and re.search(r"^\$ .*mpirun -q -np 2 allreduce_ring .*\n-> exit 0", log, re.M),
          f"run-gpu-tests.log: the commands, their exit status, the summary ({m.group(0) if m else log[-300:]!r})")
    test_emulated_matrix(d, bundle)


def test_emulated_matrix(d, bundle):
    """run-gpu-tests --emulated: the matrix on the emulated device, two tests at a time,
    with a budget too small for all of it: what ran passed, what did not start is listed
    as not run (never as passed), the summary table counts both, and the exit is 1."""
    out = os.path.join(d, "emulated-results")
    p = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={os.environ.get('HOME', '/root')}",
                        os.path.join(bundle, "run-gpu-tests"), "--out", out, "--emulated", "--ranks", "2",
                        "--jobs", "2", "--budget", "6"], capture_output=True, text=True, timeout=300)
    m = re.search(r"passed (\d+) failed (\d+) skipped (\d+) not-run (\d+)", p.stdout)
    check(p.returncode == 1 and m and int(m.group(1)) >= 3 and int(m.group(2)) == 0 and int(m.group(4)) > 0,
          f"run-gpu-tests --emulated with a small budget: some passed, none failed, the rest not run, exit 1 "
          f"({p.returncode}, {m.group(0) if m else p.stdout[-300:]!r})")
    verdicts = os.path.join(out, "verdicts")
    names = os.listdir(verdicts) if os.path.isdir(verdicts) else []
    first = {n: open(os.path.join(verdicts, n)).readline().split()[0] for n in names}
    ran = [n for n, v in first.items() if v == "ok"]
    # (the fault's run ends by its watchdog, before any row: its verdict is its exit and stderr)
    check(all(os.path.exists(os.path.join(out, "json", n + ".jsonl")) for n in ran
              if ".np0" not in n and ".fault-" not in n),
          f"every test counted as passed ran and left its rows ({len(ran)})")
    summary = open(os.path.join(out, "summary.md")).read() if os.path.exists(os.path.join(out, "summary.md")) else ""
    check(re.search(r"^\| ipc \| 2 \|", summary, re.M) and re.search(r"^\| staged-mpi \| 2 \|", summary, re.M)
          and int(m.group(4) if m else 0) == sum(v == "notrun" for v in first.values()),
          f"summary.md: a line per path and rank count, the not-run ones counted ({summary[:300]!r})")


def test_hidden_system(d, bundle):
    """The run again in a mount namespace where the system's copies of everything packed are
    hidden (empty folders over Open MPI's, PMIx's and UCX's, /dev/null over each library):
    a node without them."""
    if not shutil.which("unshare") or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        print("skip hidden-system run: unshare -m is not allowed here")
        return
    hide_files, hide_dirs = set(), []
    for line in open(os.path.join(bundle, "MANIFEST.txt")):
        if line.startswith("#") or " <- " not in line:
            continue
        dst, src = line.rstrip("\n").split(" <- ", 1)
        src = src.split("  (")[0]
        if src.startswith(("/usr/", "/lib", "/etc/")) and os.path.isfile(src) and not dst.startswith("tools/"):
            hide_files.add(src)
    for dirname in ("/usr/lib/x86_64-linux-gnu/openmpi", "/usr/lib/x86_64-linux-gnu/pmix2",
                    "/usr/lib/x86_64-linux-gnu/ucx", "/usr/lib/x86_64-linux-gnu/hwloc",
                    "/usr/lib/x86_64-linux-gnu/hdf5", "/usr/lib/x86_64-linux-gnu/openblas-pthread",
                    "/usr/share/openmpi", "/etc/openmpi"):
        if os.path.isdir(dirname):
            hide_dirs.append(dirname)
            hide_files = {f for f in hide_files if not f.startswith(dirname + "/")}
    empty = os.path.join(d, "empty-dir")
    os.makedirs(empty, exist_ok=True)
    mounts = [f'mount --bind "{empty}" "{x}"' for x in hide_dirs] + \
             [f'mount --bind /dev/null "{x}"' for x in sorted(hide_files)]
    script = "set -e\n" + "\n".join(mounts) + "\nset +e\n" + \
        "env -i PATH=/usr/bin:/bin HOME=/root bash -c '" \
        f". \"{bundle}/env.sh\" && test ! -s /usr/lib/x86_64-linux-gnu/libmpi.so.40 && " \
        "mpirun -np 2 allreduce_ring -b 1K -e 64K -f 8 -n 2 && mpirun -np 2 pingpong -b 8 -e 1K -n 2 && " \
        "mpirun -np 2 allreduce_ring -t ucx -b 1K -e 1K -n 2'\n"
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=180)
    check(p.returncode == 0 and p.stdout.count("wrong elements: 0 OK") == 2,
          f"with the system's {len(hide_files)} packed libraries and {len(hide_dirs)} folders hidden: "
          f"allreduce_ring (mpi, ucx) and pingpong run from the bundle alone ({p.returncode}, {p.stderr.strip()[-400:]!r})")


def main():
    if not os.path.exists(os.path.join(BIN, "allreduce_ring")):
        print(f"SKIP: no allreduce_ring in {BIN}")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-test-") as d:
        test_bad_input(d)
        test_bundle(d)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
