"""The statistics of acceptance testing (acceptance/README.md, "Method"): medians and
median absolute deviations rather than means and standard deviations, so that one bad
link among many moves neither its peers' centre nor their spread; and a verdict from
repeats that says "inconclusive" when the repeats disagree.
"""

import math

# A normal sample's standard deviation is 1.4826 x its MAD (Rousseeuw and Croux, 1993).
MAD_TO_SIGMA = 1.4826


def median(values):
    xs = sorted(values)
    if not xs:
        raise ValueError("median of nothing")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def mad(values, centre=None):
    """Median absolute deviation from `centre` (default: the median)."""
    centre = median(values) if centre is None else centre
    return median(abs(v - centre) for v in values)


def robust_z(value, centre, spread):
    """How many robust standard deviations `value` lies from `centre` (Iglewicz and
    Hoaglin's modified z-score); with no spread at all, any difference is infinite."""
    if spread > 0:
        return (value - centre) / (MAD_TO_SIGMA * spread)
    if value == centre:
        return 0.0
    return math.copysign(math.inf, value - centre)


class Outlier:
    """One value against its peers: the peers' median, the ratio to it, the robust z, and
    whether it is an outlier on the bad side. `worse` is "low" (bandwidth: bad when
    lower) or "high" (latency, compute time: bad when higher). An outlier must be far in
    relative terms (beyond `tolerance` of the median), far in robust z (beyond `z_limit`)
    and, where a `floor` is given, at least that far in absolute terms: the first keeps
    tiny differences between nearly identical links from counting, the second a noisy
    class's ordinary spread, the third differences below what the clock and the
    scheduler can tell apart (a microsecond of latency on a shared machine)."""

    def __init__(self, value, peers, worse, tolerance, z_limit, floor=0.0):
        self.value, self.median = value, median(peers)
        self.spread = mad(peers, self.median)
        self.ratio = value / self.median if self.median > 0 else 1.0
        self.z = robust_z(value, self.median, self.spread)
        far = abs(value - self.median) >= floor   # an absolute floor (latency: timer noise)
        if worse == "low":
            self.bad = self.ratio < 1 - tolerance and self.z < -z_limit and far
        else:
            self.bad = self.ratio > 1 + tolerance and self.z > z_limit and far


PASS, FAIL, INCONCLUSIVE, NOT_JUDGED = "pass", "fail", "inconclusive", "not judged"


def decide(bad, total):
    """The verdict of `total` repeats of which `bad` say "bad": fail when at least three
    quarters do, pass when at most a quarter do, inconclusive in between (retest).
    With 3 repeats: 0 pass, 1 or 2 inconclusive, 3 fail; with 9: 0-2, 3-6, 7-9."""
    if total == 0:
        return NOT_JUDGED
    if 4 * bad >= 3 * total:
        return FAIL
    if 4 * bad <= total:
        return PASS
    return INCONCLUSIVE


def worst(verdicts):
    """fail over inconclusive over pass; "not judged" counts for nothing."""
    judged = [v for v in verdicts if v != NOT_JUDGED]
    if not judged:
        return NOT_JUDGED
    for v in (FAIL, INCONCLUSIVE):
        if v in judged:
            return v
    return PASS
