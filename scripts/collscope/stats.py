"""The statistics behind every comparison of times in collscope: a row's spread, and
whether one time differs from another beyond the noise (docs/statistics.md says which
test, why, its level and its limits). scripts/compare, scripts/compare-tools,
scripts/report (the advisor, the time model) and scripts/model-check use it; plain
Python (no numpy), so scripts/compare runs with any Python 3.

    from collscope import stats
    stats.quartiles(times)                 # (p25, median, p75), numpy.percentile's way
    stats.relative_spread(times)           # (p75 - p25) / median; None under 5 samples
    v = stats.compare_rounds(a, b)         # a, b: {round: [times]}; a / b
    v.word                                 # "faster", "slower" or "tie"
    v.text()                               # "1.31x [1.22, 1.40] slower (test ...)"

The two tests, both distribution-free and exact for small samples:
  - Mann-Whitney (Hodges-Lehmann) interval of the ratio a / b from two independent
    samples (the iterations of one run each): the interval of the shift of log times.
  - Wilcoxon signed-rank interval of the ratio from paired figures (round k's median of
    a over round k's median of b, the two runs made one after the other).
compare_rounds chooses between them by the number of rounds (paired_min_rounds).
"""
import functools
import math
import statistics
from dataclasses import dataclass

LEVEL = 0.95                # the nominal level of every interval
NOISE_THRESHOLD = 0.2       # a row is noisy above this relative spread (the binaries' default)
SPREAD_MIN_SAMPLES = 5      # fewer samples: no spread (quartiles of 4 values say little)
PAIRED_MIN_ROUNDS = 6       # the fewest pairs whose signed-rank test can reach 95 %
                            # (paired_min_rounds(level) for another level)
EXACT_MAX_PAIRS = 2500      # Mann-Whitney: the exact distribution up to m x n pairs

MANN_WHITNEY = "Mann-Whitney interval of the ratio (iterations)"
SIGNED_RANK = "Wilcoxon signed-rank interval of the ratio (rounds)"


# ---- one sample ---------------------------------------------------------------------------

def quantile(values, q):
    """The q-quantile (0 <= q <= 1) by linear interpolation between order statistics,
    as numpy.percentile's default ("linear", Hyndman and Fan's type 7)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("quantile of no values")
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def quartiles(values):
    """(p25, median, p75) of values."""
    return quantile(values, 0.25), quantile(values, 0.5), quantile(values, 0.75)


def relative_spread(values):
    """(p75 - p25) / median, or None with fewer than SPREAD_MIN_SAMPLES values or a
    median of 0."""
    if len(values) < SPREAD_MIN_SAMPLES:
        return None
    p25, med, p75 = quartiles(values)
    return (p75 - p25) / med if med > 0 else None


def is_noisy(values, threshold=NOISE_THRESHOLD):
    spread = relative_spread(values)
    return spread is not None and spread > threshold


def check_threshold(text):
    """A --noise-threshold value: a number in (0, 10]; ValueError with a reason else."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"the noise threshold must be a number in (0, 10], got '{text}'") from None
    if not 0 < value <= 10 or math.isnan(value):
        raise ValueError(f"the noise threshold must be in (0, 10], got '{text}'")
    return value


# ---- the null distributions of the two rank statistics --------------------------------------

@functools.lru_cache(maxsize=256)
def mann_whitney_counts(m, n):
    """[number of orderings of m + n values with U = u, for u = 0 .. m n]: the
    coefficients of the Gaussian binomial [m + n choose m] in q."""
    counts = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        # multiply by (1 - q^(n+i)) / (1 - q^i); the division is a running sum with stride i
        for u in range(m * n, n + i - 1, -1):
            counts[u] -= counts[u - n - i]
        for u in range(i, m * n + 1):
            counts[u] += counts[u - i]
    return counts


@functools.lru_cache(maxsize=256)
def signed_rank_counts(n):
    """[number of sign patterns with W+ = w, for w = 0 .. n (n + 1) / 2]."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for r in range(1, n + 1):
        for w in range(len(counts) - 1, r - 1, -1):
            counts[w] += counts[w - r]
    return counts


def order_index(counts, level):
    """The largest k with P(statistic <= k - 1) <= (1 - level) / 2 under the exact
    distribution `counts`: the interval runs from the k-th smallest to the k-th largest
    of the sorted estimates. 0: no interval at this level (too few values)."""
    total, tail, k = sum(counts), 0, 0
    for u, c in enumerate(counts):
        tail += c
        if tail / total > (1 - level) / 2:
            break
        k = u + 1
    return k


def normal_order_index(mean, variance, level):
    """order_index for large samples: the statistic taken as normal."""
    z = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)
    return max(0, math.floor(mean - z * math.sqrt(variance)))


# ---- two samples: intervals of a ratio ------------------------------------------------------

@dataclass
class Interval:
    """An estimate of a / b and its interval at `level` by `test`; low 0 and high inf
    when the samples are too few for any interval."""
    estimate: float
    low: float
    high: float
    level: float
    test: str
    samples: str           # what the test counted, e.g. "10 + 10 iterations"

    @property
    def holds_one(self):
        return self.low <= 1 <= self.high

    def text(self):
        return f"{self.estimate:.3g}x [{bound(self.low)}, {bound(self.high)}]"


def percent(level):
    """0.95 -> '95%', 0.98333 -> '98.3%'."""
    return f"{level * 100:.3g}%"


def bound(x):
    return "inf" if math.isinf(x) else f"{x:.3g}"


def logs(values):
    return [math.log(v) for v in values if v > 0 and math.isfinite(v)]


def ratio_interval(a, b, level=LEVEL):
    """Interval of a / b from two independent samples of positive times: the
    Hodges-Lehmann shift of log a against log b and its Mann-Whitney interval (exact up
    to EXACT_MAX_PAIRS pairs, the normal approximation beyond). Assumes the two samples
    differ by a factor only (the same shape on a log scale): then it holds the ratio of
    the medians, and of every quantile, at `level`. None when a side is empty."""
    la, lb = logs(a), logs(b)
    if not la or not lb:
        return None
    m, n = len(la), len(lb)
    diffs = sorted(x - y for x in la for y in lb)
    if m * n <= EXACT_MAX_PAIRS:
        k = order_index(mann_whitney_counts(m, n), level)
    else:
        k = normal_order_index(m * n / 2, m * n * (m + n + 1) / 12, level)
    return interval_from(diffs, k, level, MANN_WHITNEY, f"{m} + {n} iterations")


def paired_ratio_interval(pairs, level=LEVEL):
    """Interval of the ratio from paired figures [(a_k, b_k)]: the Hodges-Lehmann centre
    of log(a_k / b_k) (the median of the Walsh averages) and its Wilcoxon signed-rank
    interval. Assumes the log ratios are symmetric about their centre: as they are for
    two identical programs run in an order that alternates. None without pairs."""
    d = [math.log(x / y) for x, y in pairs if x > 0 and y > 0]
    if not d:
        return None
    n = len(d)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    k = order_index(signed_rank_counts(n), level)
    return interval_from(walsh, k, level, SIGNED_RANK, f"{n} rounds")


def interval_from(sorted_logs, k, level, test, samples):
    estimate = math.exp(statistics.median(sorted_logs))
    if k < 1:
        return Interval(estimate, 0.0, math.inf, level, test, samples)
    low, high = sorted_logs[k - 1], sorted_logs[len(sorted_logs) - k]
    return Interval(estimate, math.exp(low), math.exp(high), level, test, samples)


@functools.lru_cache(maxsize=256)
def paired_min_rounds(level=LEVEL):
    """The fewest pairs whose signed-rank interval can be bounded at `level`: the most
    extreme outcome, all signs alike, has probability 2 / 2^n."""
    n = 1
    while 2 / 2 ** n > 1 - level:
        n += 1
    return n


def family_level(count, level=LEVEL):
    """Each of `count` comparisons at this level holds the whole family at `level`
    (Bonferroni): 0.95 over 3 sizes -> 0.9833 each."""
    return 1 - (1 - level) / max(1, count)


@functools.lru_cache(maxsize=256)
def binomial_counts(n):
    """[C(n, j) for j = 0 .. n]: the sign test's distribution."""
    return [math.comb(n, j) for j in range(n + 1)]


def median_interval(values, level=LEVEL):
    """Interval of the median of one sample from its order statistics (the sign test's:
    distribution-free, exact): (median, low, high), low 0 and high inf when the sample
    is too small for `level`; None for no values."""
    xs = sorted(v for v in values if math.isfinite(v))
    if not xs:
        return None
    k = order_index(binomial_counts(len(xs)), level)
    med = statistics.median(xs)
    if k < 1:
        return med, 0.0, math.inf
    return med, xs[k - 1], xs[len(xs) - k]


def median_interval_rounds(rounds, level=LEVEL):
    """median_interval over rounds ({round: [times]}): the rounds' medians as the sample
    with paired_min_rounds(level) rounds or more, else the hull of each round's interval from
    its iterations. None without times."""
    kept = {k: v for k, v in rounds.items() if v}
    if not kept:
        return None
    if len(kept) >= paired_min_rounds(level):
        return median_interval([statistics.median(v) for v in kept.values()], level)
    each = [median_interval(v, level) for v in kept.values()]
    return (statistics.median(m for m, _, _ in each), min(lo for _, lo, _ in each),
            max(hi for _, _, hi in each))


# ---- the verdict ------------------------------------------------------------------------------

TIE = "tie"


@dataclass
class Verdict:
    """a against b: "faster" (a takes less time beyond the noise), "slower", or "tie"
    (within noise); the interval of time(a) / time(b) and why."""
    word: str
    interval: Interval
    how: str = ""          # how the rounds were combined, where they were

    def text(self):
        what = "tie (within noise)" if self.word == TIE else self.word
        return f"{self.interval.text()} {what}"

    def method(self):
        return f"{self.interval.test}, {self.interval.samples}, {percent(self.interval.level)}" + \
            (f"; {self.how}" if self.how else "")


def word_of(interval):
    if interval is None or interval.holds_one:
        return TIE
    return "slower" if interval.low > 1 else "faster"


def hull(intervals):
    """The smallest interval holding every one of `intervals`, its estimate the median
    of theirs: a difference survives only where every round finds it, on the same side."""
    inner = intervals[0]
    return Interval(statistics.median(i.estimate for i in intervals),
                    min(i.low for i in intervals), max(i.high for i in intervals),
                    inner.level, inner.test,
                    f"{len(intervals)} rounds of {inner.samples}")


def compare_rounds(a, b, level=LEVEL):
    """The Verdict of a against b, given as {round: [times of that round's run]} each.

    With paired_min_rounds(level) rounds in common or more (6 at 95 %), the round is the
    unit: the medians
    of round k's two runs make a pair, and the signed-rank interval over the pairs
    decides (a slow spell of the machine within one run cannot pass for a difference).
    With fewer, each round's iterations give a Mann-Whitney interval and a difference
    is declared only where every round's interval finds it on the same side (the
    interval shown is their hull). Rounds only one side has are left out. None when
    no round has times on both sides."""
    common = sorted(k for k in a if k in b and logs(a[k]) and logs(b[k]))
    if not common:
        return None
    if len(common) >= paired_min_rounds(level):
        pairs = [(statistics.median(a[k]), statistics.median(b[k])) for k in common]
        interval = paired_ratio_interval(pairs, level)
        return Verdict(word_of(interval), interval, "one pair of run medians per round")
    per_round = [ratio_interval(a[k], b[k], level) for k in common]
    if len(per_round) == 1:
        return Verdict(word_of(per_round[0]), per_round[0], "one round")
    combined = hull(per_round)
    return Verdict(word_of(combined), combined,
                   f"{len(per_round)} rounds: a difference only where every round finds it")


def compare_samples(a, b, level=LEVEL):
    """compare_rounds for two plain samples (one run each)."""
    return compare_rounds({0: list(a)}, {0: list(b)}, level)
