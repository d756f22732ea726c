"""The one catalogue of algorithms for Python: collectives/include/collscope/algorithms.def
as the build wrote it, <build>/share/collscope/algorithms.json (collectives/CMakeLists.txt),
beside the binaries it describes: <bin>/../share/collscope/algorithms.json (a GPU bundle
packs it at the same place under its root/).

    from collscope import algorithms
    catalogue = algorithms.load(bin_dir)        # algorithms.Missing when not built
    catalogue.algorithms()                      # the collectives' entries, in order
    catalogue.collectives()                     # in the list's order
    catalogue.hand_written()                    # {collective: [algorithm, ...]}
    catalogue.split("reduce_scatter_ring")      # ("reduce_scatter", "ring")
    catalogue.patterns()                        # pingpong's --pattern: ["pairs", ...]

From a shell (scripts/quickstart): `PYTHONPATH=scripts python3 -m collscope.algorithms
[BIN_DIR]` prints the collectives, in the list's order, on one line.
"""
import json
import os
import sys

from .paths import ROOT

CATALOGUE = os.path.join("share", "collscope", "algorithms.json")


class Missing(Exception):
    pass


def default_bin_dir():
    """build/bin, or $COLLSCOPE_BUILD/bin."""
    return os.path.join(os.environ.get("COLLSCOPE_BUILD") or os.path.join(ROOT, "build"), "bin")


def catalogue_path(bin_dir):
    return os.path.join(os.path.dirname(os.path.abspath(bin_dir)), CATALOGUE)


class Catalogue:
    def __init__(self, entries):
        # [{"collective", "algorithm", "kind": "algorithm" | "vendor"}], and the
        # point-to-point patterns: {"pattern", "kind": "p2p", "binary": "pingpong"}
        self.entries = entries

    def algorithms(self):
        """The collectives' entries, hand-written and vendor, in the list's order."""
        return [e for e in self.entries if e["kind"] != "p2p"]

    def collectives(self):
        return list(dict.fromkeys(e["collective"] for e in self.algorithms()))

    def patterns(self):
        """The point-to-point patterns, pingpong's --pattern, in the list's order."""
        return [e["pattern"] for e in self.entries if e["kind"] == "p2p"]

    def hand_written(self):
        """{collective: [algorithm, ...]}: the schedules written here, not the vendors'."""
        out = {}
        for e in self.algorithms():
            if e["kind"] == "algorithm":
                out.setdefault(e["collective"], []).append(e["algorithm"])
        return out

    def split(self, binary):
        """(collective, algorithm) of a binary <collective>_<algorithm>, the longest
        collective that fits deciding (reduce_scatter_ring is not reduce's scatter_ring);
        None when no collective fits."""
        owners = [c for c in self.collectives() if binary.startswith(c + "_")]
        if not owners:
            return None
        c = max(owners, key=len)
        return c, binary[len(c) + 1:]


def load(bin_dir=None):
    path = catalogue_path(bin_dir or default_bin_dir())
    try:
        with open(path) as f:
            return Catalogue(json.load(f))
    except (OSError, ValueError) as e:
        raise Missing(f"no catalogue of algorithms at {path} (cmake writes it; build first): "
                      f"{getattr(e, 'strerror', None) or e}")


def main(argv):
    try:
        print(" ".join(load(argv[0] if argv else None).collectives()))
    except Missing as e:
        print(f"collscope.algorithms: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
