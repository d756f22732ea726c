"""The cache: one prefix per library under $COLLSCOPE_GPU_LIBS (default
~/.cache/collscope/gpu-libs), each with collscope-lib.json saying what it is. A library is
built or unpacked in a staging folder beside its prefix and renamed into place only when
it is whole, so an interrupted or failed step leaves nothing that looks installed."""
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time

NAMES = ("openmpi", "ucx", "nccl")
META = "collscope-lib.json"


class Failed(Exception):
    """A step that could not be done: one line, and the exit status to leave with."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def cache_dir():
    return os.path.abspath(os.environ.get("COLLSCOPE_GPU_LIBS")
                           or os.path.join(os.path.expanduser("~"), ".cache", "collscope", "gpu-libs"))


def prefix(name):
    return os.path.join(cache_dir(), name)


def load(name, where=None):
    """The description of an installed library (its collscope-lib.json), or None."""
    try:
        with open(os.path.join(where or prefix(name), META)) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("name") == name else None


def writable_cache():
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise Failed(3, f"cannot create the cache {d}: {e.strerror}")
    if not os.access(d, os.W_OK):
        raise Failed(3, f"cannot write the cache {d}")
    return d


@contextlib.contextmanager
def staging(name):
    """A fresh folder in the cache to build NAME in; removed afterwards, whatever happens
    (install() has moved what it keeps out of it)."""
    d = tempfile.mkdtemp(prefix=f".staging-{name}-", dir=writable_cache())
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def tree_bytes(path):
    """Bytes of the regular files under path (links not followed)."""
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def install(name, staged, meta):
    """Moves the finished prefix STAGED into the cache as NAME, with META written in it;
    a previous NAME is replaced only once the new one is in place beside it."""
    meta = dict(meta, name=name, bytes=tree_bytes(staged), installed_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                         time.gmtime()))
    with open(os.path.join(staged, META), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    final = prefix(name)
    old = None
    if os.path.lexists(final):
        old = tempfile.mkdtemp(prefix=f".old-{name}-", dir=cache_dir())
        os.rename(final, os.path.join(old, name))
    os.rename(staged, final)
    if old:
        shutil.rmtree(old, ignore_errors=True)
    return meta


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def log_path(name):
    d = os.path.join(writable_cache(), "logs")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, f"{name}.log")


def say(text):
    print(f"gpu-libs: {text}", flush=True)


def run_step(what, cmd, log, cwd=None, env=None):
    """Runs CMD with its output appended to LOG; says how long it took. A tool that does
    not start or exits non-zero is Failed(1), the log named."""
    start = time.monotonic()
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        try:
            p = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
        except OSError as e:
            raise Failed(1, f"{what}: cannot run {cmd[0]}: {e.strerror}")
    seconds = time.monotonic() - start
    if p.returncode != 0:
        raise Failed(1, f"{what} failed (exit {p.returncode}) after {seconds:.0f} s; see {log}")
    say(f"{what}: {seconds:.0f} s")
    return seconds
