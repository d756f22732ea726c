"""UCX with its CUDA transports (cuda_copy, cuda_ipc): from PyPI's libucx-cu13 wheel
(downloaded, or a wheel file the user names), or from a UCX build the user names (its
install prefix). Only what runs is kept: the libraries by soname, the transport modules,
ucx_info and ucx_perftest, and the wheel's private copies of the CUDA runtime and libgomp
(libucx_cu13.libs, named with a hash: no node has them), all in lib/ so one
LD_LIBRARY_PATH entry finds every one."""
import glob
import os
import re
import shutil
import subprocess
import zipfile

from collscope.gpu_libs import cache
from collscope.gpu_libs.cache import Failed, say

WHEEL = "libucx-cu13"
CORE = ("libucp.so.0", "libuct.so.0", "libucs.so.0", "libucm.so.0")
TOOLS = ("ucx_info", "ucx_perftest")


def download_wheel(work, log):
    cache.run_step(f"pip download {WHEEL}", ["python3", "-m", "pip", "download", "--no-deps", "--only-binary",
                                             ":all:", "-d", work, WHEEL], log)
    found = glob.glob(os.path.join(work, "libucx_cu13-*.whl"))
    if not found:
        raise Failed(1, f"pip download {WHEEL} gave no wheel; see {log}")
    return found[0]


def wheel_members(wheel):
    """{path in the prefix: member name} of what is kept from the wheel; Failed(2) where it is
    not a UCX wheel with the CUDA transports."""
    try:
        names = zipfile.ZipFile(wheel).namelist()
    except (OSError, zipfile.BadZipFile) as e:
        raise Failed(2, f"--wheel {wheel}: not a wheel (zip): {e}")
    keep = {}
    for n in names:
        if re.fullmatch(r"libucx/lib/lib\w+\.so\.\d+", n):
            keep[f"lib/{os.path.basename(n)}"] = n
        elif re.fullmatch(r"libucx/lib/ucx/lib\w+\.so\.\d+", n):
            keep[f"lib/ucx/{os.path.basename(n)}"] = n
        elif re.fullmatch(r"libucx_cu\d+\.libs/lib[\w.+-]+\.so[.\d]*", n):
            keep[f"lib/{os.path.basename(n)}"] = n
        elif n in (f"libucx/bin/{t}" for t in TOOLS) or n == "libucx/UCX_WHEEL_VERSION.txt":
            keep[n[len("libucx/"):]] = n
    missing = [c for c in CORE if f"lib/{c}" not in keep]
    if missing:
        raise Failed(2, f"--wheel {wheel}: not a UCX wheel (no {', '.join(missing)})")
    if "lib/ucx/libuct_cuda.so.0" not in keep:
        raise Failed(2, f"--wheel {wheel}: a UCX wheel without the CUDA transports (no libuct_cuda; "
                        f"take {WHEEL})")
    return keep


def from_wheel(wheel, staged):
    keep = wheel_members(wheel)
    with zipfile.ZipFile(wheel) as z:
        for dst, member in keep.items():
            path = os.path.join(staged, dst)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(member) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(path, 0o755 if dst.startswith("bin/") or ".so" in dst else 0o644)
    # A library's soname link (.so) for those that build against it.
    for core in CORE:
        os.symlink(core, os.path.join(staged, "lib", core[:-2]))


def from_prefix(src, staged):
    """A UCX installation (PREFIX/lib/libucp.so.0, PREFIX/lib/ucx, PREFIX/bin/ucx_info)."""
    missing = [c for c in CORE if not os.path.exists(os.path.join(src, "lib", c))]
    if missing or not os.path.exists(os.path.join(src, "bin", "ucx_info")):
        raise Failed(2, f"--prefix {src}: not a UCX installation (no lib/{', lib/'.join(missing) or 'ucx'} "
                        f"or bin/ucx_info)")
    if not glob.glob(os.path.join(src, "lib", "ucx", "libuct_cuda.so*")):
        raise Failed(2, f"--prefix {src}: a UCX built without CUDA (no lib/ucx/libuct_cuda.so)")
    shutil.copytree(os.path.join(src, "lib"), os.path.join(staged, "lib"), symlinks=True,
                    ignore=shutil.ignore_patterns("*.a", "*.la", "cmake", "pkgconfig"))
    os.makedirs(os.path.join(staged, "bin"))
    for t in TOOLS:
        if os.path.exists(os.path.join(src, "bin", t)):
            shutil.copy2(os.path.join(src, "bin", t), os.path.join(staged, "bin", t))


def tool_env(prefix):
    lib = os.path.join(prefix, "lib")
    return dict(os.environ, LD_LIBRARY_PATH=lib + (":" + os.environ["LD_LIBRARY_PATH"]
                                                   if os.environ.get("LD_LIBRARY_PATH") else ""),
                UCX_MODULE_DIR=os.path.join(lib, "ucx"))


def describe(prefix):
    """{version, transports built}: ucx_info -v and -b of PREFIX (no GPU needed)."""
    info = os.path.join(prefix, "bin", "ucx_info")
    out = {}
    for flag in ("-v", "-b"):
        try:
            p = subprocess.run([info, flag], capture_output=True, text=True, env=tool_env(prefix), timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise Failed(1, f"{info} {flag} does not run: {e}")
        if p.returncode != 0:
            raise Failed(1, f"{info} {flag} exited {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1]}")
        out[flag] = p.stdout
    version = re.search(r"Library version: (\S+)", out["-v"])
    cuda = re.search(r"^#define HAVE_CUDA\s+1\s*$", out["-b"], re.M) is not None
    return {"version": version.group(1) if version else "unknown", "built_with_cuda": cuda,
            "modules": sorted(os.path.basename(m) for m in glob.glob(os.path.join(prefix, "lib", "ucx", "*.so*")))}


def install(wheel=None, src_prefix=None):
    log = cache.log_path("ucx")
    open(log, "w").close()
    with cache.staging("ucx") as work:
        staged = os.path.join(work, "ucx")
        os.makedirs(staged)
        if src_prefix:
            from_prefix(os.path.abspath(src_prefix), staged)
            source = os.path.abspath(src_prefix)
        else:
            wheel = wheel or download_wheel(work, log)
            if not os.path.isfile(wheel):
                raise Failed(2, f"--wheel {wheel}: no such file")
            from_wheel(wheel, staged)
            source = os.path.abspath(wheel)
        facts = describe(staged)
        if not facts["built_with_cuda"]:
            raise Failed(2, f"{source}: ucx_info -b says it was built without CUDA (no HAVE_CUDA)")
        meta = cache.install("ucx", staged, dict(facts, source=source))
    say(f"UCX {meta['version']} in {cache.prefix('ucx')}: {cache.mib(meta['bytes'])}, CUDA transports "
        f"built ({', '.join(m for m in meta['modules'] if 'cuda' in m)})")
    return meta
