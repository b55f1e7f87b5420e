"""A computed metric: how often an RM gives the better and the worse response the same reward."""

import math

import numpy as np

from rmbench.plugins import ComputedMetric, Counted, MetricDef, PairColumn, PairSet, ratio

PAIRS = PairColumn("pairs", PairSet.DIFF, lambda p, e: np.ones_like(p.diff))
TIED = PairColumn("x = 0", PairSet.DIFF, lambda p, e: p.diff == 0)


def pooled(p, k):  # one resample's pairs (their gaps x = r(better) - r(worse)) -> the value
    diff = p.pairs.diff
    return float(np.count_nonzero(diff == 0) / diff.size) if diff.size else math.nan


TIE_RATE = ComputedMetric(
    MetricDef("tie_rate", "tie rate", False, False, Counted.DISCRIMINATION_PAIRS,
              "P(r(a) = r(b) | u(a) > u(b)): the share of pairs whose rewards are equal"),
    pooled,
    lambda b, k: ratio(b.total(TIED), b.total(PAIRS)),  # weighted: every resample of a block at once
    (PAIRS, TIED))
