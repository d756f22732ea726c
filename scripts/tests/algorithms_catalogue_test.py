#!/usr/bin/env python3
"""The catalogue of algorithms the Python tools read (collscope.algorithms): the file cmake
writes beside the binaries holds every line of algorithms.def, in its order, and nothing
else (its point-to-point patterns as pingpong's); every entry's binary is beside it; a
binary's name splits into its collective and algorithm by the longest collective that
fits; a bin directory without the file is refused.

    algorithms_catalogue_test.py SOURCE_DIR BIN_DIR   exit 0 passed, 1 failed
"""
import os
import re
import sys
import tempfile

from collscope import algorithms
from collscope.checks import check, failures


def def_lines(source):
    """[(collective, algorithm, kind)] of algorithms.def, read here on its own; a
    point-to-point pattern as ("pingpong", pattern, "p2p")."""
    with open(os.path.join(source, "collectives", "include", "collscope", "algorithms.def")) as f:
        text = f.read()
    found = re.findall(r"^COLLSCOPE_(?:(ALGORITHM|VENDOR)\((\w+), *(\w+)|P2P\((\w+)),", text, re.M)
    return [(c, a, kind.lower()) if kind else ("pingpong", pattern, "p2p") for kind, c, a, pattern in found]


def as_line(e):
    if e["kind"] == "p2p":
        return e["binary"], e["pattern"], e["kind"]
    return e["collective"], e["algorithm"], e["kind"]


def main(source, bin_dir):
    catalogue = algorithms.load(bin_dir)
    want = def_lines(source)
    got = [as_line(e) for e in catalogue.entries]
    check(got == want and len(want) > 40, f"the catalogue is algorithms.def's {len(want)} entries, in order")
    check(catalogue.patterns() == ["pairs", "rounds", "ring"],
          f"pingpong's three patterns, in order ({catalogue.patterns()})")
    check([as_line(e) for e in catalogue.algorithms()] == [w for w in want if w[2] != "p2p"],
          "algorithms(): the collectives' entries, without the patterns")
    check(catalogue.collectives()[:2] == ["allreduce", "reduce_scatter"] and len(catalogue.collectives()) == 10,
          f"ten collectives, reduce_scatter among them ({catalogue.collectives()})")
    binaries = [c if kind == "p2p" else f"{c}_{a}" for c, a, kind in got]
    missing = [b for b in binaries if not os.access(os.path.join(bin_dir, b), os.X_OK)]
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
