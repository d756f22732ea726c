"""Packs collscope for a GPU node that has no MPI, HDF5, build tools or network: one
self-contained folder (at most 60 MiB) to copy there, source and run.

usage: scripts/gpu-bundle [--out DIR] [--bin-dir DIR] [--with-tests]
                          [--cuda-mpi] [--ucx] [--nccl] [--gpu-libs]

  --out DIR      the folder to write (default: build/gpu-bundle). Its parent must exist;
                 a previous bundle there is replaced, anything else is refused.
  --bin-dir DIR  the built binaries (default: build/bin)
  --with-tests   also pack the *_test unit tests (left out by default: they test the
                 build, not the node; ~40 MB unpacked, ~4 MiB more in the bundle)
  --cuda-mpi     carry the CUDA-aware Open MPI of the GPU library cache (scripts/gpu-libs
                 openmpi) instead of Debian's: same sonames, so the binaries run on it
  --ucx          carry UCX with CUDA from the cache (scripts/gpu-libs ucx) instead of
                 Debian's UCX 1.13, and its ucx_info and ucx_perftest
  --nccl         carry the cache's NCCL (scripts/gpu-libs nccl): root/lib/libnccl.so.2,
                 which the binaries then open (COLLSCOPE_NCCL_LIBRARY) before the node's
  --gpu-libs     the three
                 The cache is $COLLSCOPE_GPU_LIBS or ~/.cache/collscope/gpu-libs. What is
                 carried is listed in root/etc/bundle-libs (cuda-mpi, ucx-cuda, nccl), which
                 env.sh exports as COLLSCOPE_BUNDLE_LIBS for run-gpu-tests. When the
                 bundle would be over the limit, NCCL goes in a second part, DIR.part2
                 (payload-nccl.tar.xz): env.sh unpacks it from beside DIR, from DIR.part2,
                 or from $COLLSCOPE_BUNDLE_PART2; each part is at most the limit.

exit status: 0 written; 1 it could not be made (a library that does not resolve, a tool
that failed, the bundle over 60 MiB, or over COLLSCOPE_GPU_BUNDLE_MAX_MIB when set, in one
part or in two); 2 bad usage (unknown option, a --bin-dir without collscope's binaries, a
--cuda-mpi, --ucx or --nccl the cache does not hold); 3 the output cannot be written (its parent is missing or not
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
  root/share/collscope/schema.json  the results schema (scripts/collscope/results.py)

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
from collscope.gpu_libs import cache as gpu_libs_cache
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


USAGE = "gpu-bundle [--out DIR] [--bin-dir DIR] [--with-tests] [--cuda-mpi] [--ucx] [--nccl] [--gpu-libs]"
# The flags that carry a library of the GPU library cache: (cache name, word in bundle-libs).
CARRY_FLAGS = {"--cuda-mpi": ("openmpi", "cuda-mpi"), "--ucx": ("ucx", "ucx-cuda"), "--nccl": ("nccl", "nccl")}


def usage_error(msg):
    raise Fail(2, f"{msg} (usage: {USAGE})")


def parse_args(argv):
    opts = {"out": os.path.join(ROOT, "build", "gpu-bundle"), "bin_dir": os.path.join(ROOT, "build", "bin"),
            "with_tests": False, "carry": set()}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1])
            sys.exit(0)
        if a == "--with-tests":
            opts["with_tests"] = True
        elif a in CARRY_FLAGS:
            opts["carry"].add(a)
        elif a == "--gpu-libs":
            opts["carry"].update(CARRY_FLAGS)
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


class Carried:
    """The GPU libraries the bundle carries from the cache (scripts/gpu-libs): their prefixes
    by cache name, and where Open MPI's and UCX's files come from (the cache's, or Debian's)."""

    def __init__(self, flags):
        self.prefix, self.words = {}, []
        for flag in sorted(flags, key=list(CARRY_FLAGS).index):
            name, word = CARRY_FLAGS[flag]
            meta = gpu_libs_cache.load(name)
            if not meta or (name == "openmpi" and not meta.get("cuda_aware")):
                raise Fail(2, f"{flag}: the GPU library cache ({gpu_libs_cache.cache_dir()}) holds no "
                              f"{'CUDA-aware Open MPI' if name == 'openmpi' else name}: build it with "
                              f"scripts/gpu-libs {name}")
            self.prefix[name] = gpu_libs_cache.prefix(name)
            self.words.append(word)

    def lib_path(self):
        """LD_LIBRARY_PATH under which ldd resolves the binaries to the carried libraries."""
        return ":".join(os.path.join(self.prefix[n], "lib") for n in ("openmpi", "ucx") if n in self.prefix)

    def inside(self, path):
        real = os.path.realpath(path)
        return any(real.startswith(os.path.realpath(p) + "/") for p in self.prefix.values())

    def ompi_bins(self):
        d = os.path.join(self.prefix["openmpi"], "bin") if "openmpi" in self.prefix else "/usr/bin:/usr/local/bin"
        return d, OMPI_BINS

    def plugin_dirs(self):
        dirs = list(PLUGIN_DIRS)
        if "openmpi" in self.prefix:
            dirs[0] = (os.path.join(self.prefix["openmpi"], "lib", "openmpi"), "ompi/lib/openmpi3", "*.so")
        if "ucx" in self.prefix:
            dirs[2] = (os.path.join(self.prefix["ucx"], "lib", "ucx"), "lib/ucx", "*.so.0")
        return dirs

    def data_dirs(self):
        dirs = list(DATA_DIRS)
        if "openmpi" in self.prefix:
            ompi = self.prefix["openmpi"]
            dirs[0:2] = [(os.path.join(ompi, "share", "openmpi"), "ompi/share/openmpi"), (os.path.join(ompi, "etc"),
                                                                                          "ompi/etc")]
        return dirs

    def tools(self):
        """(source, name in root/bin) of the carried libraries' own tools."""
        if "ucx" not in self.prefix:
            return []
        return [(os.path.join(self.prefix["ucx"], "bin", t), t) for t in ("ucx_info", "ucx_perftest")
                if os.path.exists(os.path.join(self.prefix["ucx"], "bin", t))]

    def nccl_library(self):
        return os.path.realpath(os.path.join(self.prefix["nccl"], "lib", "libnccl.so.2")) if "nccl" in self.prefix \
            else None


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


def ldd(path, lib_path=""):
    """{soname: resolved path or None (not found)} of everything path loads (LIB_PATH first)."""
    env = dict(os.environ, LD_LIBRARY_PATH=lib_path) if lib_path else None
    p = subprocess.run(["ldd", path], capture_output=True, text=True, env=env)
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?$", line)
        if m:
            out[m.group(1)] = None if m.group(2).strip() == "not found" else m.group(2).strip()
    return out


# A wheel's private copy of a library (auditwheel names it lib<name>-<8 hex>.so...): no node
# has it, so it is packed even where it is of the GPU stack (UCX's wheel's libcudart).
WHEEL_COPY = re.compile(r"^lib[\w+]+-[0-9a-f]{8}\.so")


def packable(soname):
    if WHEEL_COPY.match(soname):
        return True
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


def stage_programs(opts, carried, root, manifest):
    """The binaries, the catalogue, Open MPI's programs and the carried tools; the ELF files
    whose libraries must be packed, each with whether a miss is fatal."""
    elves = []
    for n in opts["names"]:
        copy(os.path.join(opts["bin_dir"], n), os.path.join(root, "bin", n), manifest)
        elves.append((os.path.join(root, "bin", n), True))
    # The catalogue of algorithms and the results schema (scripts/collscope/results.py)
    # where the Python tools look for them: beside bin/.
    build = os.path.dirname(os.path.abspath(opts["bin_dir"]))
    for rel in (algorithms.CATALOGUE, os.path.join(os.path.dirname(algorithms.CATALOGUE), "schema.json")):
        copy(os.path.join(build, rel), os.path.join(root, rel), manifest)
    ompi_dir, names = carried.ompi_bins()
    for n in names:
        src = shutil.which(n, path=ompi_dir)
        if not src:
            raise Fail(1, f"Open MPI's {n} not found in {ompi_dir} (install openmpi-bin)")
        copy(src, os.path.join(root, "ompi", "bin", n), manifest)
        elves.append((os.path.join(root, "ompi", "bin", n), True))
    for src, name in carried.tools():
        copy(src, os.path.join(root, "bin", name), manifest)
        elves.append((os.path.join(root, "bin", name), True))
    return elves


def stage_plugins_and_data(carried, root, manifest):
    """Open MPI's, PMIx's, UCX's and hwloc's plugins (ELF files, a miss not fatal) and data."""
    elves = []
    for src_dir, dst_dir, pattern in carried.plugin_dirs():
        for src in sorted(glob.glob(os.path.join(src_dir, pattern))):
            dst = os.path.join(root, dst_dir, os.path.basename(src))
            copy(src, dst, manifest)
            elves.append((dst, False))
    for src_dir, dst_dir in carried.data_dirs():
        if not os.path.isdir(src_dir):
            raise Fail(1, f"{src_dir} not found (Open MPI's or PMIx's data files)")
        for dirpath, _, files in os.walk(src_dir):
            for f in files:
                src = os.path.join(dirpath, f)
                copy(src, os.path.join(root, dst_dir, os.path.relpath(src, src_dir)), manifest)
    return elves


def stage_libraries(elves, carried, root, manifest):
    """Every library the ELF files load, by soname (ldd gives each file's whole closure);
    a plugin whose library does not resolve here is left out. ({soname: path}, dropped)."""
    libs, dropped = {}, []
    for path, fatal in elves:
        deps = ldd(path, carried.lib_path())
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
    return libs, dropped


def stage_pmix_params(root):
    """PMIx's params file names its component directory: point it at the packed one."""
    conf = f"{ARCH_LIB}/pmix2/share/pmix-mca-params.conf"
    os.makedirs(os.path.join(root, "pmix", "etc"), exist_ok=True)
    text = open(conf).read() if os.path.exists(conf) else ""
    text = re.sub(r"(?m)^\s*mca_base_component_path\s*=.*$",
                  "# mca_base_component_path: set by collscope-env.sh (PMIX_MCA_mca_base_component_path)", text)
    with open(os.path.join(root, "pmix", "etc", "pmix-mca-params.conf"), "w") as f:
        f.write(text)


def stage_scripts(stage, root, carried, manifest):
    """The variables and the wrappers in root/, env.sh and run-gpu-tests beside it, the
    Python tools, and root/etc/bundle-libs (what the bundle carries)."""
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    shutil.copy(os.path.join(FILES, "collscope-env.sh"), os.path.join(root, "etc", "collscope-env.sh"))
    with open(os.path.join(root, "etc", "bundle-libs"), "w") as f:
        f.write(" ".join(carried.words) + "\n")
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


def pack(tree, payload, xz):
    """TREE as one xz stream: a 32 MiB dictionary spans many binaries (their shared code packs
    once); preset 1's fast match finder keeps it to seconds. Returns its id (sha256 prefix)."""
    with open(payload, "wb") as out:
        tar = subprocess.Popen(["tar", "-C", tree, "--owner=0", "--group=0", "--sort=name", "-cf", "-", "."],
                               stdout=subprocess.PIPE)
        x = subprocess.run([xz, "-T1", "--lzma2=preset=1,dict=32MiB", "-c"], stdin=tar.stdout, stdout=out)
        tar.stdout.close()
        if tar.wait() != 0 or x.returncode != 0:
            raise Fail(1, "packing the payload failed (tar or xz)")
    digest = hashlib.sha256(open(payload, "rb").read()).hexdigest()[:16]
    with open(payload.replace(".tar.xz", ".id"), "w") as f:
        f.write(digest + "\n")
    return digest


def stage_nccl(stage, carried, manifest):
    """The carried NCCL as its own payload (payload-nccl.tar.xz, unpacked into root/lib), so it
    can travel as a second part."""
    lib = carried.nccl_library()
    if not lib:
        return None
    tree = os.path.join(stage, "root-nccl")
    copy(lib, os.path.join(tree, "lib", "libnccl.so.2"), manifest, note="NCCL, payload-nccl.tar.xz")
    return tree


def build(opts, carried, stage):
    """Fills stage/ (the bundle) with stage/root (then packed into the payload)."""
    root = os.path.join(stage, "root")
    manifest = []  # (path in the bundle, source)
    elves = stage_programs(opts, carried, root, manifest)
    xz = shutil.which("xz", path="/usr/bin:/bin")
    if not xz:
        raise Fail(1, "xz not found in /usr/bin (install xz-utils)")
    copy(xz, os.path.join(stage, "tools", "xz"), manifest)
    elves += stage_plugins_and_data(carried, root, manifest)
    libs, dropped = stage_libraries(elves, carried, root, manifest)
    # xz's own library beside it, so the unpacking needs nothing from the node but sh and tar.
    for soname, where in ldd(xz).items():
        if where and packable(soname):
            copy(where, os.path.join(stage, "tools", "lib", soname), manifest)
    stage_pmix_params(root)
    stage_scripts(stage, root, carried, manifest)
    nccl_tree = stage_nccl(stage, carried, manifest)
    all_elves = [p for p, _ in elves if os.path.exists(p)] + [os.path.join(root, "lib", s) for s in libs]
    glibc = glibc_needed(all_elves)
    with open(os.path.join(root, "etc", "glibc-min"), "w") as f:
        f.write(glibc + "\n")
    for dirpath, _, files in os.walk(stage):  # owner-writable, so a bundle can be replaced
        for f in files:
            p = os.path.join(dirpath, f)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    digest = pack(root, os.path.join(stage, "payload.tar.xz"), xz)
    if nccl_tree:
        pack(nccl_tree, os.path.join(stage, "payload-nccl.tar.xz"), xz)
    unpacked = sum(os.path.getsize(os.path.join(d, f)) for t in (root, nccl_tree) if t
                   for d, _, fs in os.walk(t) for f in fs)
    shutil.rmtree(root)
    if nccl_tree:
        shutil.rmtree(nccl_tree)
    write_manifest(stage, manifest, dropped, f"# collscope GPU bundle {digest}: {len(opts['names'])} binaries, "
                   f"{len(libs)} libraries; carries {' '.join(carried.words) or 'no GPU libraries'}; unpacked "
                   f"{unpacked / 2**20:.0f} MiB; needs glibc >= {glibc}")
    return libs, dropped


def write_manifest(stage, manifest, dropped, title):
    with open(os.path.join(stage, "MANIFEST.txt"), "w") as f:
        f.write(title + "\n# path in the bundle <- source\n")
        for dst, src in sorted(manifest):
            f.write(f"{os.path.relpath(dst, stage)} <- {src}\n")
        for d in dropped:
            f.write(f"# left out, does not load here either: {d}\n")


def du_bytes(path):
    """Disk usage as du counts it (blocks), the limit's measure."""
    p = subprocess.run(["du", "-s", "-B1", path], capture_output=True, text=True)
    return int(p.stdout.split()[0])


def split_parts(stage, part2):
    """The sizes of the one or two parts: where the whole is over the limit, NCCL's payload
    moves to PART2 (a folder beside the bundle). Fail(1) where a part is still over it."""
    limit = MAX_MIB * 2**20
    size = du_bytes(stage)
    nccl = os.path.join(stage, "payload-nccl.tar.xz")
    if size <= limit or not os.path.exists(nccl):
        if size > limit:
            raise Fail(1, f"the bundle is {size / 2**20:.1f} MiB, over the {MAX_MIB:g} MiB limit")
        return [size]
    os.mkdir(part2)
    for f in ("payload-nccl.tar.xz", "payload-nccl.id"):
        os.rename(os.path.join(stage, f), os.path.join(part2, f))
    sizes = [du_bytes(stage), du_bytes(part2)]
    if max(sizes) > limit:
        raise Fail(1, f"the bundle is {sizes[0] / 2**20:.1f} + {sizes[1] / 2**20:.1f} MiB in two parts, "
                      f"a part over the {MAX_MIB:g} MiB limit")
    return sizes


def replace(stage, out):
    if os.path.lexists(out):
        shutil.rmtree(out)
    os.rename(stage, out)


def main(argv):
    opts = parse_args(argv)
    out = os.path.abspath(opts["out"])
    parent = os.path.dirname(out)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise Fail(3, f"cannot write {out}: {parent} is not a writable directory")
    for target, marker in ((out, "payload.id"), (out + ".part2", "payload-nccl.id")):
        if os.path.lexists(target) and not (os.path.isdir(target) and (
                not os.listdir(target) or os.path.exists(os.path.join(target, marker)))):
            raise Fail(3, f"cannot write {target}: it exists and is not a collscope GPU bundle")
    opts["names"] = pick_binaries(opts["bin_dir"], opts["with_tests"])  # bad input before any work
    carried = Carried(opts["carry"])   # a library the cache lacks: refused before any work
    stage = tempfile.mkdtemp(prefix=".gpu-bundle-", dir=parent)
    part2 = stage + ".part2"
    os.chmod(stage, 0o755)
    try:
        libs, dropped = build(opts, carried, stage)
        sizes = split_parts(stage, part2)
        if len(sizes) == 2:
            replace(part2, out + ".part2")
        elif os.path.lexists(out + ".part2"):
            shutil.rmtree(out + ".part2")   # a second part of an earlier bundle would not match
        replace(stage, out)
    finally:
        for d in (stage, part2):
            if os.path.exists(d):
                shutil.rmtree(d, ignore_errors=True)
    parts = " + ".join(f"{x / 2**20:.1f} MiB" for x in sizes) + (" (two parts: also copy "
                                                                 f"{os.path.basename(out)}.part2)" if len(sizes) == 2 else "")
    print(f"wrote {out}: {parts}, {len(opts['names'])} binaries, {len(libs)} libraries"
          + (f", carrying {' '.join(carried.words)}" if carried.words else "")
          + (f", {len(dropped)} plugins left out" if dropped else "")
          + f" (copy it to the node, then: source {os.path.basename(out)}/env.sh; {os.path.basename(out)}/run-gpu-tests)")


def run():
    """The program, as scripts/gpu-bundle runs it."""
    try:
        main(sys.argv[1:])
    except Fail as e:
        print(f"gpu-bundle: error: {e}", file=sys.stderr)
        sys.exit(e.code)
