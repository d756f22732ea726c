"""Open MPI's decision file (`coll_tuned_dynamic_rules_filename`), written and checked.

The format Open MPI 4.1 reads (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c): whole
numbers separated by white space, `#` to the end of the line a comment:

    <number of collectives>
    <collective id>                        once per collective (openmpi.COLLECTIVES)
    <number of communicator sizes>
    <communicator size>                    once per communicator size, ascending
    <number of message sizes>
    <message size> <algorithm> <fan in/out> <segment size>    once per band, from 0 up

A communicator of N ranks takes the rules of the largest size <= N (the first when all
are larger); a call of B bytes the band of the largest message size <= B. Algorithm 0
is "no rule": Open MPI's fixed decision. Open MPI reads the numbers with `%li` (a leading
0 means octal: this writer never writes one) and, on any error, silently drops the whole
file for its fixed decision: hence check(), which refuses what Open MPI would drop and
what it would accept but misread.
"""
import re
from dataclasses import dataclass, field

from collscope.tune_mpi import openmpi


class Malformed(Exception):
    """A decision file Open MPI would refuse or misread: exit 2."""


@dataclass
class Band:
    msg_size: int          # from this many bytes up (to the next band's)
    algorithm: int         # 0: Open MPI's fixed decision
    faninout: int = 0
    segsize: int = 0
    evidence: list = field(default_factory=list)   # comment lines written above the band

    def numbers(self):
        return [self.msg_size, self.algorithm, self.faninout, self.segsize]


# {collective name: {communicator size: [Band, ...]}}
Rules = dict


def render(rules, header=()):
    """The file's text: `header` comment lines, then every collective with rules."""
    out = [f"# {line}" if line else "#" for line in header]
    colls = [c for c in sorted(rules, key=lambda c: openmpi.COLLECTIVES[c].coll_id) if rules[c]]
    out.append(f"{len(colls)}   # collectives with rules")
    for name in colls:
        sizes = rules[name]
        out.append(f"{openmpi.COLLECTIVES[name].coll_id}   # {name}")
        out.append(f"{len(sizes)}   # communicator sizes")
        for n in sorted(sizes):
            out.append(f"{n}   # {name} on {n} ranks")
            out.append(f"{len(sizes[n])}   # message sizes")
            for band in sizes[n]:
                out.extend(f"# {line}" for line in band.evidence)
                out.append(" ".join(str(v) for v in band.numbers()))
    return "\n".join(out) + "\n"


TOKEN = re.compile(r"#[^\n]*|\S+")


def tokens(text):
    """[(number, line)] of the file's whole numbers; Malformed on anything else."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for word in TOKEN.findall(line):
            if word.startswith("#"):
                break
            if not re.fullmatch(r"\d+", word):
                raise Malformed(f"line {lineno}: '{word}' is not a whole number "
                                "(comments start with #)")
            if len(word) > 1 and word.startswith("0"):
                raise Malformed(f"line {lineno}: '{word}' has a leading 0, which Open MPI reads "
                                "as octal")
            out.append((int(word), lineno))
    return out


class Reader:
    def __init__(self, text):
        self.words = tokens(text)
        self.at = 0

    def next(self, what):
        if self.at >= len(self.words):
            line = self.words[-1][1] if self.words else 1
            raise Malformed(f"line {line}: the file ends where {what} should be")
        value, line = self.words[self.at]
        self.at += 1
        return value, line


def parse(text, algorithms=None):
    """The file's rules as Rules; Malformed (with the line) where it breaks the format or
    names what Open MPI does not have: an unknown collective id, an algorithm number above
    the installed library's (`algorithms`: openmpi.parse_algorithms's table), communicator
    or message sizes out of order, a first band above 0."""
    r = Reader(text)
    rules = {}
    count, line = r.next("the number of collectives")
    if count > openmpi.COLLECTIVE_COUNT:
        raise Malformed(f"line {line}: {count} collectives; Open MPI has {openmpi.COLLECTIVE_COUNT}")
    for _ in range(count):
        name, sizes = parse_collective(r, algorithms)
        if name in rules:
            raise Malformed(f"collective {name} appears twice")
        rules[name] = sizes
    if r.at < len(r.words):
        raise Malformed(f"line {r.words[r.at][1]}: numbers after the last collective's rules")
    return rules


def parse_collective(r, algorithms):
    coll_id, line = r.next("a collective id")
    if coll_id not in openmpi.BY_ID:
        known = ", ".join(f"{c.coll_id} {c.name}" for c in openmpi.COLLECTIVES.values())
        raise Malformed(f"line {line}: collective id {coll_id} is none collscope tunes ({known})")
    name = openmpi.BY_ID[coll_id].name
    ncs, _ = r.next(f"{name}'s number of communicator sizes")
    sizes, last = {}, 0
    for _ in range(ncs):
        n, line = r.next(f"a communicator size of {name}")
        if n <= last:
            raise Malformed(f"line {line}: {name}'s communicator size {n} is not above the one "
                            f"before ({last})")
        last = n
        sizes[n] = parse_bands(r, name, n, algorithms)
    return name, sizes


def parse_bands(r, name, n, algorithms):
    nms, _ = r.next(f"{name} on {n} ranks: the number of message sizes")
    bands = []
    for k in range(nms):
        msg, line = r.next(f"{name} on {n} ranks: a message size")
        alg, _ = r.next(f"{name} on {n} ranks: an algorithm")
        fan, _ = r.next(f"{name} on {n} ranks: a fan in/out")
        seg, _ = r.next(f"{name} on {n} ranks: a segment size")
        if k == 0 and msg != 0:
            raise Malformed(f"line {line}: {name} on {n} ranks: the first band must start at "
                            f"message size 0, not {msg} (Open MPI drops the whole file)")
        if bands and msg <= bands[-1].msg_size:
            raise Malformed(f"line {line}: {name} on {n} ranks: message size {msg} is not above "
                            f"the band before ({bands[-1].msg_size})")
        check_algorithm(name, alg, line, algorithms)
        bands.append(Band(msg, alg, fan, seg))
    return bands


def check_algorithm(name, alg, line, algorithms):
    if algorithms is None or alg == 0:
        return
    known = algorithms.get(name, {})
    if alg not in known:
        listed = ", ".join(f"{k} {v}" for k, v in sorted(known.items()))
        raise Malformed(f"line {line}: {name} has no algorithm {alg} in this Open MPI "
                        f"(0 = its fixed decision; {listed})")


def band_for(bands, nbytes):
    """The band a call of nbytes falls in (Open MPI's lookup)."""
    chosen = bands[0]
    for band in bands:
        if band.msg_size > nbytes:
            break
        chosen = band
    return chosen


def rules_for(sizes, nranks):
    """The bands Open MPI uses on nranks: the largest communicator size <= nranks, else the
    first (Open MPI's lookup, coll_tuned_dynamic_rules.c)."""
    chosen = None
    for n in sorted(sizes):
        if chosen is None or n <= nranks:
            chosen = n
    return sizes[chosen] if chosen is not None else None
