"""A computed metric: how often an RM gives the better and the worse response the same reward.

Its columns (one value per discrimination pair, whose gap is x = r(better) - r(worse)) and one
line: ``ComputedMetric.of_columns`` derives both forms of the bootstrap from their sums. Its test
is ``rmbench.plugins.check_metric(TIE_RATE)``.
"""

import numpy as np

from rmbench.plugins import ComputedMetric, Counted, MetricDef, PairColumn, PairSet

PAIRS = PairColumn("pairs", PairSet.DIFF, lambda p, e: np.ones_like(p.diff))
TIED = PairColumn("x = 0", PairSet.DIFF, lambda p, e: p.diff == 0)

TIE_RATE = ComputedMetric.of_columns(
    MetricDef("tie_rate", "tie rate", False, False, Counted.DISCRIMINATION_PAIRS,
              "P(r(a) = r(b) | u(a) > u(b)): the share of pairs whose rewards are equal"),
    TIED, PAIRS)  # numerator, denominator: #(x = 0) / #pairs
