"""The proof: Open MPI's default decision against the decision file, run alternately, per
(collective, N, size); a rule whose cells are not faster beyond the noise is dropped. The
same table is scripts/report's tuning page (what the default ran, what the file picks, the
measured gain)."""
import copy
from dataclasses import dataclass

from collscope import stats
from collscope.tune_mpi import decide as dc
from collscope.tune_mpi import openmpi
from collscope.tune_mpi import rules as rl


@dataclass
class Check:
    collective: str
    nranks: int
    nbytes: int
    default_ran: str
    file_ran: str
    band: object          # the file's rules.Band for this cell (None: no rule for it)
    verdict: object       # stats.Verdict of time(file) / time(default), or None

    @property
    def ruled(self):
        return self.band is not None and self.band.algorithm != 0

    @property
    def applied(self):
        """What the file side's probe traffic says of the rule: "ran" (Open MPI read the file
        and ran the rule's algorithm), "fell back", "unconfirmed"; "" without a rule. Open
        MPI says nothing when it ignores a file (a release build prints no rule messages,
        even at coll_base_verbose 100): the traffic is the witness."""
        if not self.ruled:
            return ""
        return openmpi.confirm(self.collective, self.band.algorithm, self.nranks, self.file_ran,
                               self.band.segsize)[0]

    @property
    def holds(self):
        return self.verdict is not None and self.verdict.word == "faster"


def checks_of(rows, rules=None, level=stats.LEVEL):
    """[Check] for every cell with default and file rows. `rules` (rules.parse's) places each
    cell in its band; without them every cell has band None."""
    cells = dc.cells_of(rows)
    out = []
    for (c, n, nbytes), sides in sorted(cells.items()):
        default, file = sides.get(("default", dc.DEFAULT)), sides.get(("file", dc.DEFAULT))
        if not default or not file or not default.rounds or not file.rounds:
            continue
        band = None
        if rules and c in rules:
            bands = rl.rules_for(rules[c], n)
            band = rl.band_for(bands, nbytes) if bands else None
        verdict = stats.compare_rounds(file.rounds, default.rounds, level)
        out.append(Check(c, n, nbytes, default.ran, file.ran, band, verdict))
    return out


def kept_rules(rules, checks):
    """(the rules less every band with a measured cell that does not hold, [dropped Band])."""
    dropped = {id(k.band) for k in checks if k.ruled and not k.holds}
    kept = copy.deepcopy(rules)
    gone = []
    for c, sizes in rules.items():
        for n, bands in sizes.items():
            for i, band in enumerate(bands):
                if id(band) in dropped:
                    gone.append((c, n, band))
                    kept[c][n][i].algorithm = kept[c][n][i].faninout = kept[c][n][i].segsize = 0
                    kept[c][n][i].evidence.append("dropped: the validation did not find it faster")
    for c in list(kept):
        for n in kept[c]:
            kept[c][n] = merged(kept[c][n])
        if all(b.algorithm == 0 for bands in kept[c].values() for b in bands):
            del kept[c]
    return kept, gone


def merged(bands):
    out = []
    for b in bands:
        if out and out[-1].numbers()[1:] == b.numbers()[1:]:
            out[-1].evidence.extend(b.evidence)
            continue
        out.append(b)
    return out


def cell(text):
    """A table cell's text: `a|b` (several twins) escaped, or it would split the cell."""
    return text.replace("|", "\\|")


def gain_text(v):
    if v is None:
        return "-"
    i = v.interval
    return f"{1 / i.estimate:.3g}x [{stats.bound(1 / i.high)}, {stats.bound(1 / i.low)}]"


def markdown(checks):
    """The table: a row per cell (gain = time(default) / time(file) with its interval)."""
    lines = ["| collective | N | size (B) | default ran | file ran | rule | gain (default / file) | verdict |",
             "|---|--:|--:|---|---|---|---|---|"]
    for k in checks:
        rule = "-" if not k.ruled else f"alg {k.band.algorithm}" + (
            f", seg {k.band.segsize}" if k.band.segsize else "")
        verdict = k.verdict.word if k.verdict else "no data"
        if k.ruled:
            verdict += " (kept)" if k.holds else " (rule dropped)"
        ran = (k.file_ran or "?") + (f" ({k.applied})" if k.applied else "")
        lines.append(f"| {k.collective} | {k.nranks} | {k.nbytes} | {cell(k.default_ran or '?')} | "
                     f"{cell(ran)} | {rule} | {gain_text(k.verdict)} | {verdict} |")
    return lines


def summary(checks):
    """Counts for the page's first lines."""
    ruled = [k for k in checks if k.ruled]
    faster = [k for k in checks if k.verdict and k.verdict.word == "faster"]
    slower = [k for k in checks if k.verdict and k.verdict.word == "slower"]
    applied = sum(k.applied == "ran" for k in ruled)
    return (f"{len(checks)} cells: {len(ruled)} under a rule (its algorithm seen in the traffic in "
            f"{applied}; {sum(k.holds for k in ruled)} held, "
            f"{len(ruled) - sum(k.holds for k in ruled)} dropped); the file faster beyond the noise "
            f"in {len(faster)}, slower in {len(slower)}, a tie in {len(checks) - len(faster) - len(slower)}")
