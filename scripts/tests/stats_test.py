#!/usr/bin/env python3
"""scripts/collscope/stats.py (docs/statistics.md): the quartiles against numpy's, the
exact null distributions against enumeration, the intervals' coverage on synthetic
samples from known distributions (fixed seed: within a few points of the nominal 95 %),
and the verdict: a planted factor found, none where there is none, a slow state in one
round of two a tie, the threshold's bad values refused. Seconds long.

usage: stats_test.py
"""
import itertools
import math
import random
import sys

from collscope import stats
from collscope.checks import check, run_tests

sys.dont_write_bytecode = True
SEED = 20240611


def test_quantiles():
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    try:
        import numpy as np
        want = [float(v) for v in np.percentile(xs, [25, 50, 75])]
    except ImportError:   # the same figures, numpy's "linear" method worked by hand
        want = [2.25, 3.5, 4.75]
    check(list(stats.quartiles(xs)) == want, f"quartiles as numpy.percentile ({want})")
    check(stats.relative_spread(xs) == (want[2] - want[0]) / want[1],
          "relative spread: (p75 - p25) / median")
    check(stats.relative_spread([1.0, 2.0, 3.0, 4.0]) is None, "no spread under 5 samples")
    check(stats.is_noisy([1, 1, 1, 2, 3], 0.2) and not stats.is_noisy([1, 1, 1, 1, 1], 0.2),
          "noisy: the spread above the threshold")


def test_threshold():
    check(stats.check_threshold("0.5") == 0.5 and stats.check_threshold("10") == 10,
          "a threshold in (0, 10] is taken")
    for bad in ("0", "-1", "10.5", "word", "nan", ""):
        try:
            stats.check_threshold(bad)
            check(False, f"threshold '{bad}' refused")
        except ValueError as e:
            check("(0, 10]" in str(e), f"threshold '{bad}' refused: {e}")


def enumerated_u(m, n):
    """The Mann-Whitney U of every arrangement of m a's among m + n ranks."""
    counts = [0] * (m * n + 1)
    for ranks in itertools.combinations(range(m + n), m):
        counts[sum(ranks) - m * (m - 1) // 2] += 1
    return counts


def enumerated_w(n):
    counts = [0] * (n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(r + 1 for r, s in enumerate(signs) if s)] += 1
    return counts


def test_distributions():
    for m, n in ((1, 1), (3, 4), (5, 5), (6, 3)):
        check(stats.mann_whitney_counts(m, n) == enumerated_u(m, n),
              f"Mann-Whitney U distribution exact for {m} + {n}")
    for n in (1, 4, 7):
        check(stats.signed_rank_counts(n) == enumerated_w(n),
              f"signed-rank distribution exact for {n}")
    check(stats.order_index(stats.signed_rank_counts(5), 0.95) == 0,
          "5 pairs cannot reach 95 % (no interval)")
    check(stats.order_index(stats.signed_rank_counts(6), 0.95) == 1, "6 pairs can")
    for count, rounds in ((1, 6), (3, 7), (10, 9), (20, 10)):
        level = stats.family_level(count)
        n = stats.paired_min_rounds(level)
        check(n == rounds and stats.order_index(stats.signed_rank_counts(n), level) == 1
              and stats.order_index(stats.signed_rank_counts(n - 1), level) == 0,
              f"{count} comparisons at {level:.4f} each: {rounds} rounds are the fewest ({n})")


# ---- coverage ---------------------------------------------------------------------------------

def lognormal(rng, n):
    return [rng.lognormvariate(0.0, 0.4) for _ in range(n)]


def gamma(rng, n):
    return [rng.gammavariate(2.0, 1.0) + 0.1 for _ in range(n)]


def two_state(rng, n):
    """A sample whose values come from a fast and a 3x slower state (30 %)."""
    return [(3.0 if rng.random() < 0.3 else 1.0) * rng.lognormvariate(0.0, 0.1) for _ in range(n)]


def coverage_two_sample(rng, draw, m, n, ratio, trials):
    hits = 0
    for _ in range(trials):
        a = [ratio * x for x in draw(rng, m)]
        i = stats.ratio_interval(a, draw(rng, n))
        hits += i.low <= ratio <= i.high
    return hits / trials


def coverage_paired(rng, draw, rounds, ratio, trials):
    hits = 0
    for _ in range(trials):
        pairs = list(zip((ratio * x for x in draw(rng, rounds)), draw(rng, rounds)))
        i = stats.paired_ratio_interval(pairs)
        hits += i.low <= ratio <= i.high
    return hits / trials


def test_coverage():
    rng = random.Random(SEED)
    trials = 400     # standard error of a 95 % coverage: 1.1 points
    for name, draw in (("log-normal", lognormal), ("gamma", gamma), ("two-state", two_state)):
        for m, n in ((10, 10), (7, 12), (40, 40)):
            c = coverage_two_sample(rng, draw, m, n, 1.3, trials)
            check(0.92 <= c <= 0.985, f"Mann-Whitney coverage, {name}, {m} + {n}: {c:.3f} "
                  "(nominal 0.95)")
        for rounds in (6, 10, 20):
            c = coverage_paired(rng, draw, rounds, 1.3, trials)
            check(0.92 <= c <= 0.99, f"signed-rank coverage, {name}, {rounds} rounds: {c:.3f} "
                  "(nominal 0.95)")


# ---- verdicts ---------------------------------------------------------------------------------

def test_verdicts():
    rng = random.Random(SEED + 1)
    tight = lambda f: [f * rng.lognormvariate(0, 0.05) for _ in range(20)]
    v = stats.compare_samples(tight(1.3), tight(1.0))
    check(v.word == "slower" and v.interval.low > 1 and 1.2 < v.interval.estimate < 1.4,
          f"a planted 1.3x is found, its interval above 1 ({v.text()})")
    v = stats.compare_samples(tight(1.0), tight(1.3))
    check(v.word == "faster" and v.interval.high < 1, f"and from the other side ({v.text()})")
    ties = sum(stats.compare_samples(tight(1.0), tight(1.0)).word == stats.TIE for _ in range(100))
    check(ties >= 90, f"identical samples: a tie in {ties} of 100 (95 % nominal)")
    small = stats.compare_samples([1.0, 1.05, 1.1], [1.06, 1.11, 1.16])
    check(small.word == stats.TIE, f"6 % apart in 3 + 3 iterations: a tie ({small.text()})")
    # One round of two in a slow state for a alone: the machine, not a; a tie.
    v = stats.compare_rounds({0: tight(2.5), 1: tight(1.0)}, {0: tight(1.0), 1: tight(1.0)})
    check(v.word == stats.TIE and v.interval.holds_one,
          f"a slow state in one round of two is a tie ({v.text()}; {v.method()})")
    v = stats.compare_rounds({0: tight(1.3), 1: tight(1.3)}, {0: tight(1.0), 1: tight(1.0)})
    check(v.word == "slower", f"a difference every round finds stands ({v.text()})")
    rounds_a = {k: tight(1.3) for k in range(8)}
    rounds_b = {k: tight(1.0) for k in range(8)}
    rounds_b[9] = tight(1.0)   # a round only one side has: left out
    v = stats.compare_rounds(rounds_a, rounds_b)
    check(v.word == "slower" and v.interval.test == stats.SIGNED_RANK,
          f"8 rounds: the signed-rank test over the rounds ({v.method()})")
    check(v.interval.samples == "8 rounds", f"only the rounds both sides have ({v.interval.samples})")
    check(stats.compare_rounds({0: [1.0]}, {1: [1.0]}) is None, "no round in common: no verdict")


def test_median_interval():
    rng = random.Random(SEED + 2)
    hits, trials = 0, 400
    for _ in range(trials):
        xs = lognormal(rng, 15)
        med, lo, hi = stats.median_interval(xs)
        hits += lo <= 1.0 <= hi      # the log-normal's median is exp(0) = 1
    check(0.93 <= hits / trials <= 0.995,
          f"sign-test interval of a median: coverage {hits / trials:.3f} (nominal 0.95)")
    check(stats.median_interval([1.0, 2.0, 3.0])[1:] == (0.0, math.inf),
          "3 values: too few for a 95 % interval of the median")


def main():
    run_tests(test_quantiles, test_threshold, test_distributions, test_coverage,
              test_verdicts, test_median_interval)


if __name__ == "__main__":
    main()
