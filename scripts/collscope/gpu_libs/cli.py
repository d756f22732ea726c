"""scripts/gpu-libs: the GPU libraries a bare GPU node lacks, built once and cached outside
the work tree (docs/gpu-libs.md). Nothing here is needed by the default build, the tests
or CI; scripts/gpu-bundle carries what the cache holds.

    scripts/gpu-libs openmpi [--source DIR|TARBALL] [--cuda DIR] [--jobs N]
        a CUDA-aware Open MPI: Debian's source of its Open MPI (apt-get source with a
        private deb-src line; the default) or an Open MPI release tarball or tree
    scripts/gpu-libs ucx [--wheel FILE | --prefix DIR]
        UCX with CUDA: PyPI's libucx-cu13 wheel (downloaded; the default), a wheel file,
        or a UCX build's install prefix
    scripts/gpu-libs nccl --source DIR [--arch sm_90[,sm_100...]] [--cuda DIR] [--jobs N]
        NCCL 2.30 or later from its source tree (git clone of NVIDIA/nccl), for the
        architectures named (default sm_90), stripped
    scripts/gpu-libs all [--nccl-source DIR] [--cuda DIR] [--jobs N]
        the three, each with its default (NCCL only with --nccl-source)
    scripts/gpu-libs list
        what the cache holds: name, version, size, where from

The cache is $COLLSCOPE_GPU_LIBS, or ~/.cache/collscope/gpu-libs; each library is a prefix
there (openmpi/, ucx/, nccl/) with collscope-lib.json, and logs/NAME.log holds its last
build's output. A library appears only when its step succeeded (built in a staging folder,
then renamed); a failed step leaves the previous one, or none.

Exit status: 0 done; 1 a step failed (a download, configure, make, a build without CUDA
support: the log named); 2 bad usage or bad input (a folder that is not Open MPI or NCCL,
an NCCL older than 2.30, a wheel that is not UCX with CUDA, an unknown architecture, no
CUDA toolkit); 3 the cache cannot be written. Every error is one line.
"""
import argparse
import os
import signal
import sys

from collscope.gpu_libs import cache, nccl, openmpi, ucx
from collscope.gpu_libs.cache import Failed

DEFAULT_CUDA = "/usr/local/cuda"


class Parser(argparse.ArgumentParser):
    def error(self, message):   # one line, exit 2
        raise Failed(2, f"{message} (see scripts/gpu-libs --help)")


def jobs(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--jobs needs a whole number of at least 1, got '{text}'")
    return int(text)


def parser():
    p = Parser(prog="scripts/gpu-libs", description=__doc__.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    sub = p.add_subparsers(dest="what", required=True, parser_class=Parser)
    common = Parser(add_help=False)
    common.add_argument("--cuda", default=os.environ.get("CUDA_HOME") or DEFAULT_CUDA,
                        help="the CUDA toolkit (default $CUDA_HOME or /usr/local/cuda)")
    common.add_argument("--jobs", type=jobs, default=os.cpu_count() or 1, help="make -j (default: the cores)")
    o = sub.add_parser("openmpi", parents=[common], help="a CUDA-aware Open MPI")
    o.add_argument("--source", help="an Open MPI release tarball or source tree (default: Debian's source)")
    u = sub.add_parser("ucx", help="UCX with CUDA")
    which = u.add_mutually_exclusive_group()
    which.add_argument("--wheel", help="a libucx-cu13 wheel file (default: downloaded from PyPI)")
    which.add_argument("--prefix", help="a UCX build's install prefix")
    n = sub.add_parser("nccl", parents=[common], help="NCCL 2.30 or later from source")
    n.add_argument("--source", required=True, help="NCCL's source tree")
    n.add_argument("--arch", default="sm_90", help="architectures, comma-separated (default sm_90)")
    a = sub.add_parser("all", parents=[common], help="the three")
    a.add_argument("--nccl-source", help="NCCL's source tree (without it NCCL is not built)")
    a.add_argument("--arch", default="sm_90")
    sub.add_parser("list", help="what the cache holds")
    return p


def list_cache():
    print(f"# {cache.cache_dir()}")
    for name in cache.NAMES:
        m = cache.load(name)
        if not m:
            print(f"{name:8} -")
            continue
        extra = {"openmpi": lambda: "CUDA-aware" if m.get("cuda_aware") else "not CUDA-aware",
                 "ucx": lambda: ", ".join(x for x in m.get("modules", []) if "cuda" in x),
                 "nccl": lambda: ", ".join(m.get("archs", []))}[name]()
        print(f"{name:8} {m.get('version', '?'):8} {cache.mib(m.get('bytes', 0)):>10}  {extra}  <- {m.get('source')}")


def terminated(signum, frame):
    raise KeyboardInterrupt   # SIGTERM (timeout, a batch system) cleans up as Ctrl-C does


def main(argv=None):
    signal.signal(signal.SIGTERM, terminated)
    try:
        args = parser().parse_args(argv)
        if args.what == "list":
            list_cache()
        if args.what in ("openmpi", "all"):
            openmpi.build(args.source if args.what == "openmpi" else None, args.cuda, args.jobs)
        if args.what in ("ucx", "all"):
            ucx.install(getattr(args, "wheel", None), getattr(args, "prefix", None))
        if args.what == "nccl" or (args.what == "all" and args.nccl_source):
            nccl.build(args.source if args.what == "nccl" else args.nccl_source, nccl.parse_archs(args.arch),
                       args.cuda, args.jobs)
    except Failed as e:
        print(f"gpu-libs: error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("gpu-libs: error: interrupted (nothing half-installed is left in the cache)", file=sys.stderr)
        return 1
    return 0
