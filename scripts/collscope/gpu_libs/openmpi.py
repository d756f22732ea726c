"""A CUDA-aware Open MPI: Debian's source of its own Open MPI (apt-get source, through a
private apt configuration that adds the deb-src line for the archive this machine already
uses), or a release tarball or unpacked tree the user names. Configured with --with-cuda
(libcuda is opened at run time, so it builds without a GPU), Debian's PMIx, hwloc and
libevent (those the bundle already carries), no Fortran, no UCX (device memory between
ranks of one node goes by CUDA IPC in the smcuda transport), installed in the cache."""
import glob
import os
import re
import shutil
import subprocess

from collscope.gpu_libs import cache
from collscope.gpu_libs.cache import Failed, say

ARCHIVE = "http://deb.debian.org/debian"
PMIX = "/usr/lib/x86_64-linux-gnu/pmix2"
TARBALLS = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")


def suite_of_machine():
    """The Debian release this machine uses (bookworm), from /etc/os-release."""
    try:
        text = open("/etc/os-release").read()
    except OSError:
        text = ""
    m = re.search(r"^VERSION_CODENAME=(\w+)", text, re.M)
    return m.group(1) if m else "bookworm"


def debian_source(work, log):
    """Downloads Debian's source package of openmpi into WORK; the upstream tarball."""
    apt = os.path.join(work, "apt")
    os.makedirs(os.path.join(apt, "lists", "partial"))
    with open(os.path.join(apt, "sources.list"), "w") as f:
        f.write(f"deb-src {ARCHIVE} {suite_of_machine()} main\n")
    opts = ["-o", f"Dir::Etc::SourceList={apt}/sources.list", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={apt}/lists", "-o", "APT::Sandbox::User=root"]
    cache.run_step("apt-get update (deb-src only, private lists)", ["apt-get", *opts, "update"], log)
    cache.run_step("apt-get source openmpi", ["apt-get", *opts, "source", "--download-only", "openmpi"], log,
                   cwd=work)
    found = glob.glob(os.path.join(work, "openmpi_*.orig.tar.*"))
    if not found:
        raise Failed(1, f"apt-get source openmpi gave no upstream tarball; see {log}")
    return found[0]


def unpack(source, work):
    """The source tree: SOURCE itself (a folder) or SOURCE unpacked into WORK (a tarball)."""
    if os.path.isdir(source):
        return os.path.abspath(source)
    if not source.endswith(TARBALLS) or not os.path.isfile(source):
        raise Failed(2, f"--source {source}: neither a folder nor a tarball (.tar.gz, .tar.bz2, .tar.xz)")
    os.makedirs(os.path.join(work, "src"))
    p = subprocess.run(["tar", "-xf", source, "-C", os.path.join(work, "src")], capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["tar failed"])[-1]
        raise Failed(2, f"--source {source}: cannot unpack it ({last})")
    tops = os.listdir(os.path.join(work, "src"))
    if len(tops) != 1:
        raise Failed(2, f"--source {source}: not one folder inside, so not an Open MPI release tarball")
    return os.path.join(work, "src", tops[0])


def version_of(tree):
    """Open MPI's version from the tree's VERSION file; Failed(2) when it is not Open MPI."""
    try:
        text = open(os.path.join(tree, "VERSION")).read()
    except OSError:
        text = ""
    fields = dict(re.findall(r"^(major|minor|release)=(\d+)", text, re.M))
    if len(fields) != 3 or not os.path.exists(os.path.join(tree, "ompi", "include", "mpi.h.in")):
        raise Failed(2, f"{tree}: not an Open MPI source tree (no VERSION with major/minor/release, "
                        f"no ompi/include/mpi.h.in)")
    if not os.access(os.path.join(tree, "configure"), os.X_OK):
        raise Failed(2, f"{tree}: no configure script (a git checkout needs ./autogen.pl first)")
    return f"{fields['major']}.{fields['minor']}.{fields['release']}"


def configure_args(final, cuda, version):
    args = [f"--prefix={final}", f"--with-cuda={cuda}", "--disable-mpi-fortran", "--disable-oshmem",
            "--without-ucx", "--without-verbs", "--without-ofi", "--without-psm2", "--with-slurm",
            "--without-tm", "--with-libevent=external", "--with-hwloc=external", "--disable-silent-rules"]
    if os.path.isdir(PMIX):
        args.append(f"--with-pmix={PMIX}")
    if int(version.split(".")[0]) >= 5:   # 5.x links libcuda at build time: the stub will do
        args.append(f"--with-cuda-libdir={cuda}/lib64/stubs")
    else:
        args.append("--enable-mpi-cxx")
    return args


def cuda_support(prefix):
    """Whether ompi_info says the build has CUDA support (mpi_built_with_cuda_support)."""
    info = os.path.join(prefix, "bin", "ompi_info")
    env = dict(os.environ, OPAL_PREFIX=prefix, LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    try:
        p = subprocess.run([info, "--parsable", "--all"], capture_output=True, text=True, env=env, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "mca:mpi:base:param:mpi_built_with_cuda_support:value:true" in p.stdout


def build(source, cuda, jobs):
    """Builds and installs it into the cache; returns its description."""
    if not os.path.exists(os.path.join(cuda, "include", "cuda.h")):
        raise Failed(2, f"--cuda {cuda}: no include/cuda.h there (name the CUDA toolkit's folder)")
    log = cache.log_path("openmpi")
    open(log, "w").close()
    final = cache.prefix("openmpi")
    with cache.staging("openmpi") as work:
        tarball = source or debian_source(work, log)
        origin = os.path.abspath(tarball) if source else f"Debian's source package ({os.path.basename(tarball)})"
        tree = unpack(tarball, work)
        version = version_of(tree)
        say(f"Open MPI {version} from {origin}")
        build_dir = os.path.join(work, "build")
        os.makedirs(build_dir)
        seconds = cache.run_step("configure", [os.path.join(tree, "configure"),
                                               *configure_args(final, cuda, version)], log, cwd=build_dir)
        seconds += cache.run_step(f"make -j{jobs}", ["make", f"-j{jobs}"], log, cwd=build_dir)
        dest = os.path.join(work, "dest")
        seconds += cache.run_step("make install", ["make", "install", f"DESTDIR={dest}"], log, cwd=build_dir)
        staged = dest + final
        for extra in ("share/man", "share/doc"):   # 5 MiB of manual pages no node needs
            shutil.rmtree(os.path.join(staged, extra), ignore_errors=True)
        if not cuda_support(staged):
            raise Failed(1, f"the build's ompi_info does not report CUDA support; see {log}")
        meta = cache.install("openmpi", staged, {
            "version": version, "source": origin, "cuda": cuda, "build_seconds": round(seconds),
            "cuda_aware": True, "configure": configure_args(final, cuda, version)})
    say(f"Open MPI {version} in {final}: {cache.mib(meta['bytes'])}, built in {seconds:.0f} s, "
        f"CUDA support: yes (ompi_info)")
    return meta
