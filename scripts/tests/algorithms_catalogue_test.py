#!/usr/bin/env python3
"""The catalogue of algorithms the Python tools read (collscope.algorithms): the file cmake
writes beside the binaries holds every line of algorithms.def, in its order, and nothing
else; every entry's binary is beside it; a binary's name splits into its collective and
algorithm by the longest collective that fits; a bin directory without the file is refused.

    algorithms_catalogue_test.py SOURCE_DIR BIN_DIR   exit 0 passed, 1 failed
"""
import os
import re
import sys
import tempfile

from collscope import algorithms
from collscope.checks import check, failures


def def_lines(source):
    """[(collective, algorithm, kind)] of algorithms.def, read here on its own."""
    with open(os.path.join(source, "collectives", "include", "collscope", "algorithms.def")) as f:
        found = re.findall(r"^COLLSCOPE_(ALGORITHM|VENDOR)\((\w+), *(\w+),", f.read(), re.M)
    return [(c, a, kind.lower()) for kind, c, a in found]


def main(source, bin_dir):
    catalogue = algorithms.load(bin_dir)
    want = def_lines(source)
    got = [(e["collective"], e["algorithm"], e["kind"]) for e in catalogue.entries]
    check(got == want and len(want) > 40, f"the catalogue is algorithms.def's {len(want)} entries, in order")
    check(catalogue.collectives()[:2] == ["allreduce", "reduce_scatter"] and len(catalogue.collectives()) == 10,
          f"ten collectives, reduce_scatter among them ({catalogue.collectives()})")
    missing = [f"{c}_{a}" for c, a, _ in got if not os.access(os.path.join(bin_dir, f"{c}_{a}"), os.X_OK)]
    check(not missing, f"every entry's binary is in {bin_dir} (missing: {missing or 'none'})")
    splits = {"reduce_scatter_ring": ("reduce_scatter", "ring"), "reduce_binomial": ("reduce", "binomial"),
              "alltoallv_pairwise": ("alltoallv", "pairwise"), "alltoall_bruck": ("alltoall", "bruck"),
              "pingpong": None}
    check(all(catalogue.split(name) == pair for name, pair in splits.items()),
          "binary names split by the longest collective that fits")
    check(catalogue.hand_written().get("reduce_scatter") == ["ring", "halving"],
          "hand_written: the schedules written here, not the vendors'")
    with tempfile.TemporaryDirectory() as d:
        try:
            algorithms.load(os.path.join(d, "bin"))
            refused = ""
        except algorithms.Missing as e:
            refused = str(e)
        check("no catalogue of algorithms" in refused, f"a bin directory without it is refused ({refused})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
