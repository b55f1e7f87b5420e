"""The per-pair columns the built-in metrics' weighted forms sum (:class:`PairColumn`): pair
indicators (whose weighted sums are exact integer counts) and |gap|. A new metric reuses these
or declares its own.

Notation as in :mod:`rmbench.core.metrics`: x = r(better) - r(worse) of a discrimination pair,
y = |r(a) - r(b)| of a specificity pair, L = len(better) - len(worse), e = an eps of the run
(raw units); ``cross``: the pair joins two surface forms.
"""

from __future__ import annotations

import numpy as np

from rmbench.core.arrays import AnyArray, FloatArray
from rmbench.core.pairs import Pairs
from rmbench.core.weighted import PairColumn, PairSet

DIFF, EQ, FLIP = PairSet.DIFF, PairSet.EQ, PairSet.FLIP


def _y(p: Pairs) -> FloatArray:
    return np.abs(p.eq)


def _longer(p: Pairs) -> AnyArray:
    return p.diff_len > 0


def _shorter(p: Pairs) -> AnyArray:
    return p.diff_len < 0


DIFF_PAIRS = PairColumn("discrimination pairs", DIFF, lambda p, e: np.ones_like(p.diff))
DIFF_POSITIVE = PairColumn("x > 0", DIFF, lambda p, e: p.diff > 0)
DIFF_ZERO = PairColumn("x = 0", DIFF, lambda p, e: p.diff == 0)
DIFF_ABOVE = PairColumn("x > e", DIFF, lambda p, e: p.diff > e, per_eps=True)
ABS_GAP = PairColumn("|x|", DIFF, lambda p, e: np.abs(p.diff))
LONGER = PairColumn("L > 0", DIFF, lambda p, e: _longer(p))
LONGER_POSITIVE = PairColumn("L > 0, x > 0", DIFF, lambda p, e: _longer(p) & (p.diff > 0))
LONGER_ZERO = PairColumn("L > 0, x = 0", DIFF, lambda p, e: _longer(p) & (p.diff == 0))
SHORTER = PairColumn("L < 0", DIFF, lambda p, e: _shorter(p))
SHORTER_POSITIVE = PairColumn("L < 0, x > 0", DIFF, lambda p, e: _shorter(p) & (p.diff > 0))
SHORTER_ZERO = PairColumn("L < 0, x = 0", DIFF, lambda p, e: _shorter(p) & (p.diff == 0))
CROSS = PairColumn("cross", DIFF, lambda p, e: p.rewrites.diff_cross)
WITHIN = PairColumn("within", DIFF, lambda p, e: ~p.rewrites.diff_cross)
CROSS_ABOVE = PairColumn("cross, x > e", DIFF, lambda p, e: p.rewrites.diff_cross & (p.diff > e), per_eps=True)
WITHIN_ABOVE = PairColumn("within, x > e", DIFF, lambda p, e: ~p.rewrites.diff_cross & (p.diff > e), per_eps=True)

EQ_PAIRS = PairColumn("specificity pairs", EQ, lambda p, e: np.ones_like(_y(p)))
EQ_ZERO = PairColumn("y = 0", EQ, lambda p, e: _y(p) == 0)
EQ_ABOVE = PairColumn("y > e", EQ, lambda p, e: _y(p) > e, per_eps=True)
EQ_CROSS = PairColumn("cross specificity pairs", EQ, lambda p, e: p.rewrites.eq_cross)
EQ_CROSS_ABOVE = PairColumn("cross, y > e", EQ, lambda p, e: p.rewrites.eq_cross & (_y(p) > e), per_eps=True)

FLIP_PAIRS = PairColumn("flip pairs", FLIP, lambda p, e: np.ones_like(p.rewrites.new))
FLIPPED = PairColumn("sign(new) != sign(old)", FLIP, lambda p, e: np.sign(p.rewrites.new) != np.sign(p.rewrites.old))
