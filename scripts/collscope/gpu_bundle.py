"""Packs collscope for a GPU node that has no MPI, HDF5, build tools or network: one
self-contained folder (at most 60 MiB) to copy there, source and run.

usage: scripts/gpu-bundle [--out DIR] [--bin-dir DIR] [--with-tests]

  --out DIR      the folder to write (default: build/gpu-bundle). Its parent must exist;
                 a previous bundle there is replaced, anything else is refused.
  --bin-dir DIR  the built binaries (default: build/bin)
  --with-tests   also pack the *_test unit tests (left out by default: they test the
                 build, not the node; ~40 MB unpacked, ~4 MiB more in the bundle)

exit status: 0 written; 1 it could not be made (a library that does not resolve, a tool
that failed, the bundle over 60 MiB, or over COLLSCOPE_GPU_BUNDLE_MAX_MIB when set); 2 bad usage (unknown option, a --bin-dir without
collscope's binaries); 3 the output cannot be written (its parent is missing or not
writable, or it is something other than a previous bundle). Every error is one line.

What the folder holds (README.txt in it says the same to whoever unpacks it):

  env.sh          `source` it: unpacks the payload the first time (into root/ beside it,
                  or $TMPDIR/collscope-bundle-UID-ID when the folder is read-only, or
                  $COLLSCOPE_BUNDLE_UNPACK_DIR), then sets PATH, LD_LIBRARY_PATH, the
                  relocation variables of Open MPI (OPAL_PREFIX, OPAL_*DIR) and of PMIx
                  (PMIX_*), UCX_MODULE_DIR, HWLOC_PLUGINS_PATH, and the Open MPI settings
                  of scripts/mpi-env (run as root, oversubscribe, yield when idle).
  run-gpu-tests   the GPU test matrix and a short sweep (see its header).
  payload.tar.xz  everything below root/, compressed: the binaries share most of their
                  code (CUDA runtime linked statically), so one xz stream with a 32 MiB
                  dictionary packs ~190 MB of them into ~3.5 MB.
  tools/xz        the decompressor, with its liblzma: the node needs only sh and tar.
  MANIFEST.txt    every packed file and where it came from.
  python/         report, merge, fit-model, model-check and bench-figures, beside the
                  package they import (python/collscope: scripts/collscope here).

  root/bin              collscope binaries; mpirun, mpiexec, orterun and ompi_info as
                        wrappers that set the variables and exec the real ones
  root/lib              every shared library the binaries, Open MPI and its plugins need,
                        by soname, except the node's own: glibc (libc, libm, libpthread,
                        libdl, librt, libutil, libresolv, ld-linux, ...) and the GPU stack
                        (libcuda, libcudart, cuBLAS, NCCL, libnvidia-*: the binaries link
                        the CUDA runtime statically and dlopen NCCL, cuBLAS and libcuda). libstdc++
                        and libgcc_s ARE packed: a node may have older ones.
  root/lib/ucx          UCX's transport modules (UCX_MODULE_DIR)
  root/lib/hwloc        hwloc's PCI plugin (HWLOC_PLUGINS_PATH: so a node's hwloc plugins
                        of another version are not loaded)
  root/ompi/bin         orterun (mpirun), orted, ompi_info
  root/ompi/lib/openmpi3  Open MPI's MCA components (OPAL_PKGLIBDIR)
  root/ompi/share/openmpi Open MPI's help files (OPAL_PKGDATADIR)
  root/ompi/etc         openmpi-mca-params.conf (OPAL_SYSCONFDIR; Debian's defaults)
  root/pmix/...         PMIx's components, help files and params (PMIX_*)
  root/etc/collscope-env.sh  the variables (env.sh and the wrappers source it)
  root/share/collscope/algorithms.json  the catalogue of algorithms (scripts/collscope/algorithms.py)

Open MPI 4.1 relocation: the installdirs "env" component reads OPAL_PREFIX and every
OPAL_<DIR> variable and overrides the compiled-in paths (/usr, /usr/lib/x86_64-linux-
gnu/openmpi/lib/openmpi3, /usr/share/openmpi, /etc/openmpi); PMIx does the same with
PMIX_PREFIX and PMIX_<DIR>, and its params file names its component path, so the packed
copy is rewritten and PMIX_MCA_mca_base_component_path set too. LD_LIBRARY_PATH comes
before the binaries' RUNPATH (/usr/lib/x86_64-linux-gnu/openmpi/lib:...hdf5/serial).

Not relocated: libibverbs looks for its providers in /usr/lib/x86_64-linux-gnu/libibverbs
only; none are packed (one node needs none; Debian's Open MPI defaults leave openib, uct,
ofi and pml ucx off). The packed libraries need the glibc version recorded in
root/etc/glibc-min (env.sh warns when the node's is older).
"""
import glob
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

from collscope import algorithms
from collscope.paths import PACKAGE, ROOT, SCRIPTS

MAX_MIB = float(os.environ.get("COLLSCOPE_GPU_BUNDLE_MAX_MIB") or 60)
FILES = os.path.join(SCRIPTS, "gpu-bundle-files")
ARCH_LIB = "/usr/lib/x86_64-linux-gnu"

# The node's own: glibc's libraries (never packed: they must match the node's ld.so) ...
BASE_LIBS = re.compile(r"^(linux-vdso|linux-gate|ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|"
                       r"librt|libutil|libresolv|libanl|libnsl|libBrokenLocale|libnss_[a-z]+|"
                       r"libthread_db|libcidn|libmemusage|libpcprofile|libc_malloc_debug)\.so(\.|$)")
# ... and the GPU stack, which comes with the node's driver and CUDA.
GPU_LIBS = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-[^.]*|nvrtc|nvrtc-builtins|cufft|"
                      r"curand|cusparse|cusolver|nvToolsExt|nvJitLink|cupti|nvperf[^.]*|OpenCL|GL|EGL|GLX)"
                      r"(\.so|[-_.])")

# Open MPI (Debian's layout) and its plugin directories: (source, destination in root/).
OMPI_BINS = ["orterun", "orted", "ompi_info"]
PLUGIN_DIRS = [
    (f"{ARCH_LIB}/openmpi/lib/openmpi3", "ompi/lib/openmpi3", "*.so"),
    (f"{ARCH_LIB}/pmix2/lib/pmix", "pmix/lib/pmix", "*.so"),
    (f"{ARCH_LIB}/ucx", "lib/ucx", "*.so.0"),
    (f"{ARCH_LIB}/hwloc", "lib/hwloc", "hwloc_pci.so"),
]
DATA_DIRS = [
    ("/usr/share/openmpi", "ompi/share/openmpi"),
    ("/etc/openmpi", "ompi/etc"),
    (f"{ARCH_LIB}/pmix2/share/pmix", "pmix/share/pmix"),
]


class Fail(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def usage_error(msg):
    raise Fail(2, msg + " (usage: gpu-bundle [--out DIR] [--bin-dir DIR] [--with-tests])")


def parse_args(argv):
    opts = {"out": os.path.join(ROOT, "build", "gpu-bundle"), "bin_dir": os.path.join(ROOT, "build", "bin"),
            "with_tests": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1])
            sys.exit(0)
        if a == "--with-tests":
            opts["with_tests"] = True
        elif a in ("--out", "--bin-dir") or a.startswith(("--out=", "--bin-dir=")):
            key, _, val = a.partition("=")
            if not _:
                if i + 1 >= len(argv):
                    usage_error(f"{a} needs a value")
                i += 1
                val = argv[i]
            if not val:
                usage_error(f"{key} needs a value")
            opts[key[2:].replace("-", "_")] = val
        else:
            usage_error(f"unknown argument '{a}'")
        i += 1
    return opts


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def pick_binaries(bin_dir, with_tests):
    """The collscope binaries in bin_dir: executables that are ELF files."""
    if not os.path.isdir(bin_dir):
        raise Fail(2, f"--bin-dir {bin_dir}: no such directory")
    names = sorted(n for n in os.listdir(bin_dir)
                   if os.path.isfile(os.path.join(bin_dir, n)) and os.access(os.path.join(bin_dir, n), os.X_OK)
                   and is_elf(os.path.join(bin_dir, n)))
    if not with_tests:
        names = [n for n in names if not n.endswith("_test")]
    missing = [n for n in ("pingpong", "allreduce_ring") if n not in names]
    benches = []
    if not missing:
        known = catalogue(bin_dir)
        benches = [n for n in names if known.split(n)]
    if missing or not benches:
        raise Fail(2, f"--bin-dir {bin_dir}: no collscope binaries there (missing {', '.join(missing) or 'benchmarks'})")
    return names


def catalogue(bin_dir):
    """The catalogue of algorithms beside the binaries (collscope/algorithms.py)."""
    try:
        return algorithms.load(bin_dir)
    except algorithms.Missing as e:
        raise Fail(2, f"--bin-dir {bin_dir}: {e}")


def ldd(path):
    """{soname: resolved path or None (not found)} of everything path loads."""
    p = subprocess.run(["ldd", path], capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?$", line)
        if m:
            out[m.group(1)] = None if m.group(2).strip() == "not found" else m.group(2).strip()
    return out


def packable(soname):
    return not BASE_LIBS.match(soname) and not GPU_LIBS.match(soname)


def glibc_needed(paths):
    """The highest GLIBC_x.y symbol version any of the files needs."""
    best = (0, 0)
    for i in range(0, len(paths), 100):
        p = subprocess.run(["readelf", "-V", "-W", *paths[i:i + 100]], capture_output=True, text=True)
        for m in re.finditer(r"Name: GLIBC_(\d+)\.(\d+)", p.stdout):
            best = max(best, (int(m.group(1)), int(m.group(2))))
    return f"{best[0]}.{best[1]}"


def copy(src, dst, manifest, note=None):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy2(os.path.realpath(src), dst)
    manifest.append((dst, os.path.realpath(src) + (f"  ({note})" if note else "")))


# The Python tools that run on the node's python3 (with numpy and h5py), beside the package
# they import (python/collscope: `python3 python/report` finds it there, as scripts/report
# does in the repository): the benchmark figures' table, report, merge, fit-model and
# model-check.
PYTHON_TOOLS = ("report", "merge", "fit-model", "model-check", "accept", "accept-gpu-check", "accept-repeat",
                "accept-reference")
# The data the acceptance tools read beside them (ROOT/acceptance: the bundle's folder).
ACCEPTANCE_DATA = ("reference-gpu-spec.json", "gpu_models.txt")


def copy_python_tools(stage, manifest):
    for name in PYTHON_TOOLS:
        copy(os.path.join(SCRIPTS, name), os.path.join(stage, "python", name), manifest)
    for dirpath, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                src = os.path.join(dirpath, f)
                copy(src, os.path.join(stage, "python", os.path.relpath(src, SCRIPTS)), manifest)
    copy(os.path.join(FILES, "bench-figures"), os.path.join(stage, "python", "bench-figures"), manifest)
    for name in ACCEPTANCE_DATA:
        copy(os.path.join(ROOT, "acceptance", name), os.path.join(stage, "acceptance", name), manifest)


def build(opts, stage):
    """Fills stage/ (the bundle) with stage/root (then packed into the payload)."""
    root = os.path.join(stage, "root")
    manifest = []  # (path in the bundle, source)
    names = pick_binaries(opts["bin_dir"], opts["with_tests"])
    elves = []  # ELF files whose libraries must be packed, and whether a miss is fatal
    for n in names:
        copy(os.path.join(opts["bin_dir"], n), os.path.join(root, "bin", n), manifest)
        elves.append((os.path.join(root, "bin", n), True))
    # The catalogue of algorithms where the Python tools look for it: beside bin/.
    copy(algorithms.catalogue_path(opts["bin_dir"]), os.path.join(root, algorithms.CATALOGUE), manifest)
    for n in OMPI_BINS:
        src = shutil.which(n, path="/usr/bin:/usr/local/bin")
        if not src:
            raise Fail(1, f"Open MPI's {n} not found in /usr/bin (install openmpi-bin)")
        copy(src, os.path.join(root, "ompi", "bin", n), manifest)
        elves.append((os.path.join(root, "ompi", "bin", n), True))
    xz = shutil.which("xz", path="/usr/bin:/bin")
    if not xz:
        raise Fail(1, "xz not found in /usr/bin (install xz-utils)")
    copy(xz, os.path.join(stage, "tools", "xz"), manifest)
    for src_dir, dst_dir, pattern in PLUGIN_DIRS:
        for src in sorted(glob.glob(os.path.join(src_dir, pattern))):
            dst = os.path.join(root, dst_dir, os.path.basename(src))
            copy(src, dst, manifest)
            elves.append((dst, False))
    for src_dir, dst_dir in DATA_DIRS:
        if not os.path.isdir(src_dir):
            raise Fail(1, f"{src_dir} not found (Open MPI's or PMIx's data files)")
        for dirpath, _, files in os.walk(src_dir):
            for f in files:
                src = os.path.join(dirpath, f)
                copy(src, os.path.join(root, dst_dir, os.path.relpath(src, src_dir)), manifest)

    # Every library those load, by soname (ldd gives the whole closure of each file).
    libs, dropped = {}, []
    for path, fatal in elves:
        deps = ldd(path)
        missing = [s for s, where in deps.items() if where is None and packable(s)]
        if missing:
            if fatal:
                raise Fail(1, f"{os.path.basename(path)} needs {', '.join(missing)}, which does not resolve here")
            os.remove(path)  # a plugin this machine cannot load either: leave it out
            manifest[:] = [m for m in manifest if m[0] != path]
            dropped.append(f"{os.path.relpath(path, root)} (needs {', '.join(missing)})")
            continue
        for soname, where in deps.items():
            if where and packable(soname):
                libs.setdefault(soname, where)
    for soname, where in sorted(libs.items()):
        copy(where, os.path.join(root, "lib", soname), manifest)
    # xz's own library beside it, so the unpacking needs nothing from the node but sh and tar.
    for soname, where in ldd(xz).items():
        if where and packable(soname):
            copy(where, os.path.join(stage, "tools", "lib", soname), manifest)

    # PMIx's params file names its component directory: point it at the packed one.
    conf = f"{ARCH_LIB}/pmix2/share/pmix-mca-params.conf"
    os.makedirs(os.path.join(root, "pmix", "etc"), exist_ok=True)
    text = open(conf).read() if os.path.exists(conf) else ""
    text = re.sub(r"(?m)^\s*mca_base_component_path\s*=.*$",
                  "# mca_base_component_path: set by collscope-env.sh (PMIX_MCA_mca_base_component_path)", text)
    with open(os.path.join(root, "pmix", "etc", "pmix-mca-params.conf"), "w") as f:
        f.write(text)

    # The scripts: the variables and the wrappers in root/, env.sh and run-gpu-tests beside it.
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    shutil.copy(os.path.join(FILES, "collscope-env.sh"), os.path.join(root, "etc", "collscope-env.sh"))
    wrapper = os.path.join(FILES, "ompi-wrapper")
    for name, real in (("mpirun", "orterun"), ("mpiexec", "orterun"), ("orterun", "orterun"),
                       ("ompi_info", "ompi_info")):
        text = open(wrapper).read().replace("@REAL@", real)
        with open(os.path.join(root, "bin", name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(root, "bin", name), 0o755)
    for name in ("env.sh", "run-gpu-tests", "mps", "whole-gpu-check", "README.txt"):
        shutil.copy(os.path.join(FILES, name), os.path.join(stage, name))
    os.chmod(os.path.join(stage, "run-gpu-tests"), 0o755)
    copy_python_tools(stage, manifest)
    all_elves = [p for p, _ in elves if os.path.exists(p)] + [os.path.join(root, "lib", s) for s in libs]
    glibc = glibc_needed(all_elves)
    with open(os.path.join(root, "etc", "glibc-min"), "w") as f:
        f.write(glibc + "\n")
    for dirpath, _, files in os.walk(stage):  # owner-writable, so a bundle can be replaced
        for f in files:
            p = os.path.join(dirpath, f)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)

    # One xz stream: a 32 MiB dictionary spans many binaries (their shared code packs once);
    # preset 1's fast match finder keeps it to seconds.
    payload = os.path.join(stage, "payload.tar.xz")
    with open(payload, "wb") as out:
        tar = subprocess.Popen(["tar", "-C", root, "--owner=0", "--group=0", "--sort=name", "-cf", "-", "."],
                               stdout=subprocess.PIPE)
        x = subprocess.run([xz, "-T1", "--lzma2=preset=1,dict=32MiB", "-c"], stdin=tar.stdout, stdout=out)
        tar.stdout.close()
        if tar.wait() != 0 or x.returncode != 0:
            raise Fail(1, "packing the payload failed (tar or xz)")
    digest = hashlib.sha256(open(payload, "rb").read()).hexdigest()[:16]
    with open(os.path.join(stage, "payload.id"), "w") as f:
        f.write(digest + "\n")
    unpacked = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    shutil.rmtree(root)

    with open(os.path.join(stage, "MANIFEST.txt"), "w") as f:
        f.write(f"# collscope GPU bundle {digest}: {len(names)} binaries, {len(libs)} libraries; "
                f"unpacked {unpacked / 2**20:.0f} MiB; needs glibc >= {glibc}\n")
        f.write("# path in the bundle <- source\n")
        for dst, src in sorted(manifest):
            f.write(f"{os.path.relpath(dst, stage)} <- {src}\n")
        for d in dropped:
            f.write(f"# left out, does not load here either: {d}\n")
    return names, libs, dropped


def du_bytes(path):
    """Disk usage as du counts it (blocks), the limit's measure."""
    p = subprocess.run(["du", "-s", "-B1", path], capture_output=True, text=True)
    return int(p.stdout.split()[0])


def main(argv):
    opts = parse_args(argv)
    out = os.path.abspath(opts["out"])
    parent = os.path.dirname(out)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise Fail(3, f"cannot write {out}: {parent} is not a writable directory")
    if os.path.lexists(out) and not (os.path.isdir(out) and (not os.listdir(out) or
                                                             os.path.exists(os.path.join(out, "payload.id")))):
        raise Fail(3, f"cannot write {out}: it exists and is not a collscope GPU bundle")
    pick_binaries(opts["bin_dir"], opts["with_tests"])  # bad input before any work
    stage = tempfile.mkdtemp(prefix=".gpu-bundle-", dir=parent)
    os.chmod(stage, 0o755)
    try:
        names, libs, dropped = build(opts, stage)
        size = du_bytes(stage)
        if size > MAX_MIB * 2**20:
            raise Fail(1, f"the bundle is {size / 2**20:.1f} MiB, over the {MAX_MIB:g} MiB limit")
        if os.path.lexists(out):
            shutil.rmtree(out)
        os.rename(stage, out)
    finally:
        if os.path.exists(stage):
            shutil.rmtree(stage, ignore_errors=True)
    print(f"wrote {out}: {size / 2**20:.1f} MiB, {len(names)} binaries, {len(libs)} libraries"
          + (f", {len(dropped)} plugins left out" if dropped else "")
          + f" (copy it to the node, then: source {os.path.basename(out)}/env.sh; {os.path.basename(out)}/run-gpu-tests)")


def run():
    """The program, as scripts/gpu-bundle runs it."""
    try:
        main(sys.argv[1:])
    except Fail as e:
        print(f"gpu-bundle: error: {e}", file=sys.stderr)
        sys.exit(e.code)
