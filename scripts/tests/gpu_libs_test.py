#!/usr/bin/env python3
"""scripts/gpu-libs and what scripts/gpu-bundle makes of it (docs/gpu-libs.md).

  bad_input  (always) a folder that is not Open MPI or NCCL, a tarball that is none, an
             NCCL older than 2.30, an unknown architecture, a zip that is not a UCX wheel,
             a UCX wheel without CUDA, a build that fails (a fake Open MPI tree whose
             configure exits 1), a cache that cannot be written: one line, the documented
             exit status, and nothing half-installed (no staging folder left, an earlier
             library kept); gpu-bundle --nccl with an empty cache: one line, exit 2
  parts      (always) the second part, on a stand-in NCCL and a lowered limit: split, each
             part within the limit, found beside the bundle or through
             COLLSCOPE_BUNDLE_PART2; without it one line, and nccl not claimed
  openmpi    (the cache's CUDA-aware Open MPI, else skipped) ompi_info reports CUDA support;
             allreduce_ring, allreduce_mpi and pingpong on host memory at 2 and 4 ranks run
             on it (its libmpi, its mpirun) and pass their checks; the row names its MPI
  ucx        (the cache's UCX, else skipped) ucx_info -b: built with CUDA, the cuda module
             present and needing only the driver's libraries; -t ucx on host memory passes
             over it and the row records its version
  nccl       (the cache's NCCL, else skipped) libnccl.so.2 exports ncclGetVersion and says
             its version; allreduce_nccl opens it and refuses cleanly without a GPU
  bundle     (Open MPI and UCX, else skipped; NCCL where cached) gpu-bundle --gpu-libs (or
             --cuda-mpi --ucx): at most two parts, each
             within the limit; with the cache and the build tree hidden (a mount
             namespace), env.sh unpacks the parts, COLLSCOPE_BUNDLE_LIBS says what
             is carried ("cuda-mpi ucx-cuda nccl"), the carried ompi_info reports CUDA support,
             ucx_info is the carried one, and allreduce_ring runs over MPI and UCX, and
             over --path cuda_aware -t mpi on the emulated device (Debian's MPI refuses it)

usage: gpu_libs_test.py GROUP BIN_DIR   exit 0 passed, 1 failed, 77 skipped
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

from collscope.checks import check, failures
from collscope.command_line import MPI_ENV
from collscope.gpu_libs import cache

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_LIBS = os.path.join(HERE, "..", "gpu-libs")
GPU_BUNDLE = os.path.join(HERE, "..", "gpu-bundle")
SKIP = 77


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def one_line_exit(p, code, pattern, what):
    lines = p.stderr.strip().splitlines()
    check(p.returncode == code and len(lines) == 1 and re.search(pattern, p.stderr),
          f"{what}: exit {code}, one line matching '{pattern}' ({p.returncode}, {p.stderr.strip()!r})")


def fake_openmpi(d, configure_body):
    tree = os.path.join(d, "openmpi-9.9.9")
    os.makedirs(os.path.join(tree, "ompi", "include"))
    open(os.path.join(tree, "VERSION"), "w").write("major=9\nminor=9\nrelease=9\n")
    open(os.path.join(tree, "ompi", "include", "mpi.h.in"), "w").write("/* */\n")
    with open(os.path.join(tree, "configure"), "w") as f:
        f.write("#!/bin/sh\n" + configure_body + "\n")
    os.chmod(os.path.join(tree, "configure"), 0o755)
    return tree


def fake_nccl(d, minor):
    tree = os.path.join(d, f"nccl-2.{minor}")
    os.makedirs(os.path.join(tree, "makefiles"))
    os.makedirs(os.path.join(tree, "src"))
    open(os.path.join(tree, "makefiles", "version.mk"), "w").write(
        f"NCCL_MAJOR   := 2\nNCCL_MINOR   := {minor}\nNCCL_PATCH   := 9\n")
    return tree


def zip_with(path, names):
    with zipfile.ZipFile(path, "w") as z:
        for n in names:
            z.writestr(n, "x")
    return path


def test_bad_input(bin_dir):
    with tempfile.TemporaryDirectory(prefix="gpu-libs-test-") as d:
        env = dict(os.environ, COLLSCOPE_GPU_LIBS=os.path.join(d, "cache"))
        lib = os.path.join(d, "cache")

        def gl(*args):
            return run([GPU_LIBS, *args], env=env)

        one_line_exit(gl("openmpi", "--source", d), 2, "not an Open MPI source tree", "openmpi --source (not Open MPI)")
        bogus = os.path.join(d, "x.tar.gz")
        open(bogus, "w").write("not a tarball\n")
        one_line_exit(gl("openmpi", "--source", bogus), 2, "cannot unpack", "openmpi --source (a broken tarball)")
        one_line_exit(gl("openmpi", "--cuda", d), 2, "no include/cuda.h", "openmpi --cuda (not a toolkit)")
        one_line_exit(gl("nccl", "--source", d), 2, "not an NCCL source tree", "nccl --source (not NCCL)")
        one_line_exit(gl("nccl", "--source", fake_nccl(d, 28)), 2, "older than 2.30", "nccl --source (NCCL 2.28)")
        one_line_exit(gl("nccl", "--source", fake_nccl(d, 30), "--arch", "hopper"), 2, "not an architecture",
                      "nccl --arch hopper")
        one_line_exit(gl("ucx", "--wheel", zip_with(os.path.join(d, "w.whl"), ["other/lib.so"])), 2,
                      "not a UCX wheel", "ucx --wheel (a wheel of another kind)")
        nocuda = zip_with(os.path.join(d, "u.whl"), [f"libucx/lib/{c}" for c in
                                                      ("libucp.so.0", "libuct.so.0", "libucs.so.0", "libucm.so.0")])
        one_line_exit(gl("ucx", "--wheel", nocuda), 2, "without the CUDA transports", "ucx --wheel (no CUDA)")
        one_line_exit(gl("ucx", "--wheel", os.path.join(d, "missing.whl")), 2, "no such file|not a wheel",
                      "ucx --wheel (missing)")
        one_line_exit(gl("frobnicate"), 2, "invalid choice", "an unknown step")
        # A build that fails: one line naming the log; an earlier library stays as it was.
        os.makedirs(os.path.join(lib, "openmpi"))
        open(os.path.join(lib, "openmpi", cache.META), "w").write('{"name": "openmpi", "version": "earlier"}\n')
        p = gl("openmpi", "--source", fake_openmpi(d, "echo configure: error: no C compiler >&2; exit 1"))
        one_line_exit(p, 1, r"configure failed .*see .*openmpi\.log", "openmpi: configure fails")
        log = os.path.join(lib, "logs", "openmpi.log")
        check(os.path.exists(log) and "no C compiler" in open(log).read(), "... its output is in logs/openmpi.log")
        left = [n for n in os.listdir(lib) if n.startswith(".")]
        check(not left and json.load(open(os.path.join(lib, "openmpi", cache.META)))["version"] == "earlier",
              f"... no staging folder left, the earlier openmpi kept ({left})")
        os.chmod(lib, 0o500)
        try:
            if not os.access(lib, os.W_OK):   # root may write anyway
                one_line_exit(gl("ucx", "--wheel", nocuda), 3, "cannot write the cache", "a read-only cache")
        finally:
            os.chmod(lib, 0o700)
        empty = dict(env, COLLSCOPE_GPU_LIBS=os.path.join(d, "empty-cache"))
        p = run([GPU_BUNDLE, "--out", os.path.join(d, "b"), "--bin-dir", bin_dir, "--nccl"], env=empty)
        one_line_exit(p, 2, r"--nccl: the GPU library cache .* holds no nccl: build it with scripts/gpu-libs nccl",
                      "gpu-bundle --nccl without one in the cache")
        check(not os.path.exists(os.path.join(d, "b")), "... and no bundle written")


def test_parts(bin_dir):
    """The second part, on a stand-in NCCL (20 MiB that xz cannot shrink) and a limit lowered to
    35 MiB: the bundle splits, each part within the limit; env.sh finds the part beside the
    bundle (DIR.part2) or through COLLSCOPE_BUNDLE_PART2, and without it says so in one line
    and leaves nccl out of COLLSCOPE_BUNDLE_LIBS."""
    with tempfile.TemporaryDirectory(prefix="gpu-libs-parts-") as d:
        lib = os.path.join(d, "cache", "nccl", "lib")
        os.makedirs(lib)
        payload = os.urandom(20 * 2**20)
        open(os.path.join(lib, "libnccl.so.2.30.7"), "wb").write(payload)
        os.symlink("libnccl.so.2.30.7", os.path.join(lib, "libnccl.so.2"))
        json.dump({"name": "nccl", "version": "2.30.7"}, open(os.path.join(d, "cache", "nccl", cache.META), "w"))
        env = dict(os.environ, COLLSCOPE_GPU_LIBS=os.path.join(d, "cache"), COLLSCOPE_GPU_BUNDLE_MAX_MIB="35")
        out = os.path.join(d, "b")
        p = run([GPU_BUNDLE, "--out", out, "--bin-dir", bin_dir, "--nccl"], env=env, timeout=600)
        check(p.returncode == 0 and "two parts" in p.stdout, f"--nccl over the limit: two parts ({p.returncode}, "
                                                             f"{p.stderr.strip()!r}) {p.stdout.strip()}")
        sizes = [int(run(["du", "-s", "-B1", x]).stdout.split()[0]) for x in (out, out + ".part2") if os.path.isdir(x)]
        check(len(sizes) == 2 and max(sizes) <= 35 * 2**20 and os.path.exists(os.path.join(out + ".part2",
                                                                                              "payload-nccl.tar.xz")),
              f"... each part within 35 MiB, NCCL in the second ({[round(x / 2**20, 1) for x in sizes]} MiB)")
        show = 'echo "LIBS=$COLLSCOPE_BUNDLE_LIBS"; echo "NCCL=$COLLSCOPE_NCCL_LIBRARY"; ' \
               'cmp -s "$COLLSCOPE_NCCL_LIBRARY" "$1" && echo SAME; true'

        def source(bundle, extra=""):
            return run(["env", "-i", "PATH=/usr/bin:/bin", "HOME=/root", *([extra] if extra else []), "bash", "-c",
                        f'. "{bundle}/env.sh" || exit 99\n{show}', "sh", os.path.join(lib, "libnccl.so.2")])
        p = source(out)
        check(p.returncode == 0 and "LIBS=nccl\n" in p.stdout and "SAME" in p.stdout,
              f"DIR.part2 beside the bundle: unpacked, the carried NCCL opened first ({p.stdout!r}, {p.stderr!r})")
        moved = os.path.join(d, "node")
        os.makedirs(moved)
        shutil.copytree(out, os.path.join(moved, "b"), ignore=shutil.ignore_patterns("root"))  # as packed
        p = source(os.path.join(moved, "b"))
        lines = p.stderr.strip().splitlines()
        check(p.returncode == 0 and "LIBS=\n" in p.stdout and "NCCL=\n" in p.stdout and len(lines) == 1
              and "NCCL's part" in p.stderr, f"without the part: one line, nccl not claimed ({p.stdout!r}, {p.stderr!r})")
        shutil.copytree(out + ".part2", os.path.join(d, "elsewhere"))
        p = source(os.path.join(moved, "b"), f"COLLSCOPE_BUNDLE_PART2={os.path.join(d, 'elsewhere')}")
        check(p.returncode == 0 and "LIBS=nccl\n" in p.stdout and "SAME" in p.stdout,
              f"the part named by COLLSCOPE_BUNDLE_PART2: unpacked later too ({p.stdout!r}, {p.stderr!r})")


def need(*names):
    missing = [n for n in names if not cache.load(n)]
    if missing:
        print(f"SKIP: the GPU library cache ({cache.cache_dir()}) has no {', '.join(missing)} "
              f"(scripts/gpu-libs {missing[0]} builds it)")
        sys.exit(SKIP)
    return [cache.prefix(n) for n in names]


def mpi_env(ompi=None, ucx=None):
    """The environment of a run on the cached libraries (their lib/ first)."""
    libs = [os.path.join(p, "lib") for p in (ompi, ucx) if p]
    env = dict(os.environ, **MPI_ENV)
    env["LD_LIBRARY_PATH"] = ":".join(libs + [x for x in [os.environ.get("LD_LIBRARY_PATH")] if x])
    if ompi:
        env.update(OPAL_PREFIX=ompi, PATH=os.path.join(ompi, "bin") + ":" + os.environ["PATH"])
        # No driver here: its CUDA support finds no libcuda.so.1 and would say so in a
        # 12-line help message on every run (Open MPI's own switch for that message).
        env["OMPI_MCA_opal_warn_on_missing_libcuda"] = "0"
    return env


def rows_of(out):
    return [json.loads(line) for line in open(out) if line.strip().startswith("{")]


def run_record(h5):
    """The first /runs record of a results file: {field: text}."""
    import h5py
    with h5py.File(h5, "r") as f:
        r = f["runs"][0]
        return {k: (r[k].decode() if isinstance(r[k], bytes) else r[k]) for k in r.dtype.names}


def test_openmpi(bin_dir):
    (ompi,) = need("openmpi")
    env = mpi_env(ompi)
    p = run([os.path.join(ompi, "bin", "ompi_info"), "--parsable", "--all"], env=env)
    check("mpi_built_with_cuda_support:value:true" in p.stdout, "ompi_info: built with CUDA support")
    ldd = run(["ldd", os.path.join(bin_dir, "allreduce_ring")], env=env).stdout
    check(f"{ompi}/lib/libmpi.so.40" in ldd, "allreduce_ring resolves libmpi.so.40 to the cache's")
    with tempfile.TemporaryDirectory(prefix="gpu-libs-ompi-") as d:
        for n in (2, 4):
            for prog, extra in (("allreduce_ring", ["-b", "8", "-e", "64K", "-f", "8"]),
                                ("allreduce_mpi", ["-b", "8", "-e", "64K", "-f", "8"]),
                                ("pingpong", ["-b", "8", "-e", "64K", "-f", "8"])):
                out = os.path.join(d, f"{prog}{n}.jsonl")
                h5 = os.path.join(d, f"{prog}{n}.h5")
                p = run([os.path.join(ompi, "bin", "mpirun"), "-np", str(n), os.path.join(bin_dir, prog), *extra,
                         "-n", "2", "--json", out, "-O", h5], env=env)
                rows = rows_of(out) if os.path.exists(out) else []
                ok = p.returncode == 0 and rows and all(r.get("wrong", 0) == 0 for r in rows) and not p.stderr.strip()
                check(ok, f"{prog} at {n} ranks on the cached Open MPI: exit 0, no wrong element, stderr empty "
                          f"({p.returncode}, {len(rows)} rows, {p.stderr.strip()[-200:]!r})")
                if prog == "allreduce_ring" and n == 2 and os.path.exists(h5):
                    rec = run_record(h5)
                    check("Open MPI v4" in rec["mpi_library"] and rec["mpi_cuda_aware"] in ("yes", "no"),
                          f"... the run records its MPI and whether it took device memory "
                          f"({rec['mpi_library']!r}, cuda-aware {rec['mpi_cuda_aware']!r})")


def test_ucx(bin_dir):
    (ucx,) = need("ucx")
    env = mpi_env(ucx=ucx)
    env["UCX_MODULE_DIR"] = os.path.join(ucx, "lib", "ucx")
    p = run([os.path.join(ucx, "bin", "ucx_info"), "-b"], env=env)
    check(re.search(r"^#define HAVE_CUDA\s+1", p.stdout, re.M) and re.search(r'uct_MODULES\s+".*:cuda', p.stdout),
          "ucx_info -b: built with CUDA, the uct cuda module among its modules")
    module = os.path.join(ucx, "lib", "ucx", "libuct_cuda.so.0")
    missing = re.findall(r"(\S+) => not found", run(["ldd", module], env=env).stdout)
    check(os.path.exists(module) and set(missing) <= {"libcuda.so.1", "libnvidia-ml.so.1"},
          f"libuct_cuda.so.0 needs nothing but the driver's libraries beyond the cache ({missing})")
    # A binary holding a copy of UCX data (a copy relocation) would read it at the size of the
    # UCX it was built on: ucs_memory_type_names grew between 1.13 and 1.22.
    copies = re.findall(r"R_X86_64_COPY\s+\S+\s+(uc[mpst]_\w+)", run(["readelf", "-rW", os.path.join(
        bin_dir, "allreduce_ring")]).stdout)
    check(not copies, f"allreduce_ring copies no UCX data symbol into itself ({copies})")
    with tempfile.TemporaryDirectory(prefix="gpu-libs-ucx-") as d:
        out = os.path.join(d, "ucx.jsonl")
        h5 = os.path.join(d, "ucx.h5")
        p = run(["mpirun", "-np", "2", os.path.join(bin_dir, "allreduce_ring"), "-t", "ucx", "-b", "8", "-e", "1M",
                 "-f", "16", "-n", "2", "--json", out, "-O", h5], env=env)
        rows = rows_of(out) if os.path.exists(out) else []
        check(p.returncode == 0 and rows and all(r.get("wrong", 0) == 0 for r in rows) and not p.stderr.strip(),
              f"allreduce_ring -t ucx over the cached UCX: exit 0, right, nothing on stderr ({p.returncode}, "
              f"{p.stderr.strip()[-200:]!r})")
        version = cache.load("ucx")["version"]
        rec = run_record(h5) if os.path.exists(h5) else {}
        check(rec.get("ucx_version") == version and "host" in rec.get("ucx_memory_types", ""),
              f"... the run records UCX {version} and its memory types ({rec.get('ucx_version')!r}, "
              f"{rec.get('ucx_memory_types')!r})")


def test_nccl(bin_dir):
    (nccl,) = need("nccl")
    lib = os.path.join(nccl, "lib", "libnccl.so.2")
    symbols = run(["nm", "-D", "--defined-only", lib]).stdout
    check(" ncclGetVersion" in symbols and " ncclSend" in symbols, "libnccl.so.2 exports ncclGetVersion, ncclSend")
    env = dict(os.environ, **MPI_ENV, COLLSCOPE_NCCL_LIBRARY=lib)
    env.pop("COLLSCOPE_DEVICE_EMULATION", None)
    p = run(["mpirun", "-np", "1", os.path.join(bin_dir, "allreduce_nccl"), "-b", "8", "-e", "8", "-n", "1"], env=env,
            timeout=120)
    lines = [l for l in p.stderr.strip().splitlines() if "allreduce_nccl" in l or "error" in l]
    check(p.returncode not in (0, 124) and p.returncode < 128 and len(lines) >= 1 and "Traceback" not in p.stderr,
          f"allreduce_nccl opens the cached NCCL and refuses cleanly without a GPU ({p.returncode}, "
          f"{p.stderr.strip()[-300:]!r})")
    check("cannot open" not in p.stderr, "... the library itself opened (the refusal is the missing GPU)")


def test_bundle(bin_dir):
    need("openmpi", "ucx")
    flags = ["--gpu-libs"] if cache.load("nccl") else ["--cuda-mpi", "--ucx"]
    words = "cuda-mpi ucx-cuda nccl" if cache.load("nccl") else "cuda-mpi ucx-cuda"
    with tempfile.TemporaryDirectory(prefix="gpu-libs-bundle-") as d:
        out = os.path.join(d, "bundle")
        p = run([GPU_BUNDLE, "--out", out, "--bin-dir", bin_dir, *flags], timeout=600)
        check(p.returncode == 0, f"gpu-bundle {' '.join(flags)}: exit 0 ({p.returncode}, {p.stderr.strip()!r}) {p.stdout.strip()}")
        if p.returncode != 0:
            return
        parts = [x for x in (out, out + ".part2") if os.path.isdir(x)]
        sizes = [int(run(["du", "-s", "-B1", x]).stdout.split()[0]) for x in parts]
        check(1 <= len(parts) <= 2 and max(sizes) <= 60 * 2**20,
              f"at most two parts, each within 60 MiB ({[round(s / 2**20, 1) for s in sizes]} MiB)")
        node = os.path.join(d, "node")   # the parts copied elsewhere, as to a node
        os.makedirs(node)
        for x in parts:
            shutil.copytree(x, os.path.join(node, os.path.basename(x)))
        script = (f'. "{node}/bundle/env.sh" || exit 99\n'
                  'echo "LIBS=$COLLSCOPE_BUNDLE_LIBS"; echo "NCCL=$COLLSCOPE_NCCL_LIBRARY"\n'
                  'ompi_info --parsable --all | grep -c "mpi_built_with_cuda_support:value:true"\n'
                  'ucx_info -v | head -1\n'
                  'mpirun -np 2 allreduce_ring -b 8 -e 64K -f 8 -n 2 && '
                  'mpirun -np 2 allreduce_ring -t ucx -b 8 -e 64K -f 8 -n 2 && '
                  # the path Debian's Open MPI refuses (not CUDA-aware), on the emulated device
                  'COLLSCOPE_DEVICE_EMULATION=1 mpirun -np 3 allreduce_ring -m device --path cuda_aware -t mpi '
                  '-b 8 -e 64K -f 8 -n 2\n')
        hide = [cache.cache_dir(), os.path.dirname(os.path.abspath(bin_dir))]
        mounts = "".join(f'mount -t tmpfs none "{h}"\n' for h in hide)
        inner = f"env -i PATH=/usr/bin:/bin HOME=/root bash -c {shlex.quote(script)}"
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0:
            p = run(["unshare", "-m", "--propagation", "private", "sh", "-c", "set -e\n" + mounts + inner],
                    timeout=300)
            where = "with the cache and the build tree hidden"
        else:
            p = run(["sh", "-c", inner], timeout=300)
            where = "(unshare -m not allowed: the cache and build tree not hidden)"
        o = p.stdout
        check(p.returncode == 0 and o.count("wrong elements: 0 OK") == 3,
              f"{where}: the bundle's mpirun runs allreduce_ring over MPI and UCX, and over --path "
              f"cuda_aware -t mpi on the emulated device ({p.returncode}, "
              f"{p.stderr.strip()[-300:]!r})")
        check(f"LIBS={words}\n" in o and (("/lib/libnccl.so.2\n" in o) == ("nccl" in words)),
              f"env.sh: COLLSCOPE_BUNDLE_LIBS and COLLSCOPE_NCCL_LIBRARY say what is carried ({o[:200]!r})")
        check(re.search(r"^1$", o, re.M) and f"Library version: {cache.load('ucx')['version']}" in o,
              "the carried ompi_info reports CUDA support, ucx_info is the carried UCX")


GROUPS = {"bad_input": test_bad_input, "parts": test_parts, "openmpi": test_openmpi, "ucx": test_ucx, "nccl": test_nccl,
          "bundle": test_bundle}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in GROUPS:
        print(f"usage: gpu_libs_test.py {'|'.join(GROUPS)} BIN_DIR", file=sys.stderr)
        return 2
    GROUPS[sys.argv[1]](os.path.abspath(sys.argv[2]))
    if failures:
        print(f"FAILED: {len(failures)} check(s)")
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
