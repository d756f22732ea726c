"""NCCL from a source tree the user names (git clone of NVIDIA/nccl at v2.30 or later: the
first with NCCL_MULTI_RANK_GPU_ENABLE, several ranks on one GPU), built for the
architectures asked (default sm_90: the H200), its debug information stripped: about
40 MB where PyPI's wheel of every architecture is 344 MB."""
import glob
import os
import re
import shutil
import subprocess

from collscope.gpu_libs import cache
from collscope.gpu_libs.cache import Failed, say

MIN_VERSION = (2, 30)   # NCCL_MULTI_RANK_GPU_ENABLE first appears in 2.30.3


def version_of(tree):
    """(major, minor, patch) from makefiles/version.mk; Failed(2) when TREE is not NCCL."""
    try:
        text = open(os.path.join(tree, "makefiles", "version.mk")).read()
    except OSError:
        text = ""
    fields = dict(re.findall(r"^NCCL_(MAJOR|MINOR|PATCH)\s*:?=\s*(\d+)", text, re.M))
    if len(fields) != 3 or not os.path.isdir(os.path.join(tree, "src")):
        raise Failed(2, f"--source {tree}: not an NCCL source tree (no makefiles/version.mk with "
                        f"NCCL_MAJOR/MINOR/PATCH, or no src/)")
    v = (int(fields["MAJOR"]), int(fields["MINOR"]), int(fields["PATCH"]))
    if v[:2] < MIN_VERSION:
        raise Failed(2, f"--source {tree}: NCCL {'.'.join(map(str, v))} is older than 2.30, which first "
                        f"runs several ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE)")
    return v


def parse_archs(text):
    """["90", ...] from "sm_90,sm_100"; Failed(2) on anything else."""
    archs = []
    for word in text.split(","):
        m = re.fullmatch(r"sm_(\d{2,3})a?", word.strip())
        if not m:
            raise Failed(2, f"--arch {text}: '{word}' is not an architecture like sm_90")
        archs.append(m.group(1))
    return archs


def gencode(archs):
    return " ".join(f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs)


def toolkit_without_nccl(cuda, work):
    """CUDA_HOME for the build: CUDA 13's toolkit ships NCCL's own headers (nccl.h,
    nccl_device/, of 2.28) in its include/, where the compiler finds them before the tree's
    and the build fails on names 2.28 lacks. A folder of links to the toolkit with those
    left out of include/ takes its place."""
    if not any(n.startswith("nccl") for n in os.listdir(os.path.join(cuda, "include"))):
        return cuda
    view = os.path.join(work, "cuda")
    os.makedirs(os.path.join(view, "include"))
    for n in os.listdir(cuda):
        if n != "include":
            os.symlink(os.path.join(os.path.realpath(cuda), n), os.path.join(view, n))
    for n in os.listdir(os.path.join(cuda, "include")):
        if not n.startswith("nccl"):
            os.symlink(os.path.join(os.path.realpath(cuda), "include", n), os.path.join(view, "include", n))
    return view


def build(tree, archs, cuda, jobs):
    tree = os.path.abspath(tree)
    version = version_of(tree)
    if not os.path.exists(os.path.join(cuda, "bin", "nvcc")):
        raise Failed(2, f"--cuda {cuda}: no bin/nvcc there (name the CUDA toolkit's folder)")
    log = cache.log_path("nccl")
    open(log, "w").close()
    with cache.staging("nccl") as work:
        build_dir = os.path.join(work, "build")
        cuda = toolkit_without_nccl(cuda, work)
        say(f"NCCL {'.'.join(map(str, version))} from {tree} for {', '.join('sm_' + a for a in archs)}")
        seconds = cache.run_step(f"make -j{jobs} src.build", [
            "make", "-C", tree, f"-j{jobs}", "src.build", f"BUILDDIR={build_dir}", f"CUDA_HOME={cuda}",
            f"NVCC_GENCODE={gencode(archs)}"], log)
        staged = os.path.join(work, "nccl")
        lib = install_files(build_dir, staged)
        cache.run_step("strip --strip-debug", ["strip", "--strip-debug", lib], log)
        meta = cache.install("nccl", staged, {
            "version": ".".join(map(str, version)), "source": tree, "archs": ["sm_" + a for a in archs],
            "build_seconds": round(seconds), "git_revision": git_revision(tree)})
    say(f"NCCL {meta['version']} in {cache.prefix('nccl')}: {cache.mib(meta['bytes'])}, built in {seconds:.0f} s")
    return meta


def install_files(build_dir, staged):
    """lib/libnccl.so.X.Y.Z with its links, include/nccl.h; the library's path."""
    libs = [p for p in glob.glob(os.path.join(build_dir, "lib", "libnccl.so.*")) if not os.path.islink(p)]
    if len(libs) != 1:
        raise Failed(1, f"the NCCL build left {len(libs)} libnccl.so.* files in {build_dir}/lib, not one")
    os.makedirs(os.path.join(staged, "lib"))
    name = os.path.basename(libs[0])
    shutil.copy2(libs[0], os.path.join(staged, "lib", name))
    os.symlink(name, os.path.join(staged, "lib", "libnccl.so.2"))
    os.symlink("libnccl.so.2", os.path.join(staged, "lib", "libnccl.so"))
    shutil.copytree(os.path.join(build_dir, "include"), os.path.join(staged, "include"))
    return os.path.join(staged, "lib", name)


def git_revision(tree):
    try:
        p = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""
