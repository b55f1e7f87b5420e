"""Pure metrics of bias: length bias (on any task) and rewrite invariance (on groups of
rewrites). Arrays in, numbers out, as in :mod:`rmbench.core.metrics`, which re-exports them."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray
from rmbench.core.metrics import _arr, pairwise_accuracy

# --- Length bias ------------------------------------------------------------------------

def _length_diffs(x: ArrayLike, n: int) -> FloatArray:
    """Length differences as a flat float array aligned with ``n`` pairs (finite, same count)."""
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.size != n:
        raise ValueError(f"{a.size} length differences for {n} reward differences: they must be aligned pairs")
    if not np.isfinite(a).all():
        raise ValueError("length differences must be finite numbers")
    return a


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, ties given the mean of the ranks they span (scipy's ``rankdata``)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.r_[True, xs[1:] != xs[:-1]]
    bounds = np.flatnonzero(np.r_[starts, True])  # sorted positions where each run of equal values starts
    mean_rank = (bounds[:-1] + bounds[1:] + 1) / 2.0  # positions p..q-1 hold ranks p+1..q
    ranks = np.empty(x.size)
    ranks[order] = mean_rank[np.cumsum(starts) - 1]
    return ranks


def _symmetric_ranks(x: np.ndarray) -> np.ndarray:
    """R(x_i): the average rank of x_i among the 2n values {x_j} + {-x_j}, minus their mean rank
    (2n + 1) / 2. Odd, R(-v) = -R(v), exactly (ranks are half-integers); R(0) = 0."""
    return _average_ranks(np.concatenate([x, -x]))[: x.size] - (2 * x.size + 1) / 2.0


def length_correlation(reward_diff: ArrayLike, length_diff: ArrayLike) -> float:
    """Length bias over specificity pairs: Spearman's rho between reward and length differences.

        rho_len = sum_i R(x_i) R(y_i) / sqrt( sum_i R(x_i)^2 * sum_i R(y_i)^2 ),

    x_i = r(a_i) - r(b_i), y_i = len(a_i) - len(b_i) for pairs with u(a_i) = u(b_i), and R(v) =
    (average rank of v among the 2n values x_1..x_n, -x_1..-x_n) - (2n + 1) / 2 (ties share their
    mean rank), likewise for y. This is exactly Spearman's rho (the Pearson correlation of average
    ranks) of the 2n points {(x_i, y_i), (-x_i, -y_i)}: every pair entered in both orientations,
    whose ranks are symmetric about their mean, so they have mean 0 and R(-v) = -R(v).

    0: the reward difference does not follow the length difference (no length bias); > 0: the
    longer answer of a pair gets more reward; < 0: the shorter one does. In [-1, 1].

    Why both orientations: a specificity pair has no better side, so which answer is ``a`` is
    arbitrary, and flipping one pair negates both its differences. Spearman on the raw signed
    differences changes with such a flip (that pair moves in both rankings and the others' ranks
    move with it); here the 2n points are the same set, so the value does not change. Orienting
    every pair longer-first (y_i >= 0) would also remove the arbitrariness, but it measures only
    whether the reward gap grows with |y|, and misses the commonest bias: an RM that gives the
    longer answer a roughly constant bonus has oriented gaps uncorrelated with |y| (rho ~ 0, or
    nan when they are all equal), while here it scores near +1. Equal-length pairs (y_i = 0,
    R = 0) add no evidence either way but count in the reward spread, pulling rho toward 0.

    Invariant to r -> a * r + b for a > 0; length reversal (y -> -y) negates it. nan for fewer
    than 2 pairs, or when every x_i or every y_i is 0 (zero variance of the 2n points).
    """
    x = _arr(reward_diff)
    y = _length_diffs(length_diff, x.size)
    if x.size < 2:
        return math.nan
    rx, ry = _symmetric_ranks(x), _symmetric_ranks(y)
    sxx, syy = float(np.dot(rx, rx)), float(np.dot(ry, ry))
    if sxx == 0.0 or syy == 0.0:
        return math.nan
    return float(min(1.0, max(-1.0, float(np.dot(rx, ry)) / math.sqrt(sxx * syy))))


def accuracy_by_length(diff_gaps: ArrayLike, better_minus_worse_length: ArrayLike) -> tuple[float, float]:
    """Pairwise accuracy over discrimination pairs, split by which answer is longer.

        acc_longer  = pairwise_accuracy({gap_i : L_i > 0}),
        acc_shorter = pairwise_accuracy({gap_i : L_i < 0}),

    gap_i = r(better_i) - r(worse_i) (so each pair counts 1[gap_i > 0] + 0.5 * 1[gap_i = 0]) and
    L_i = len(better_i) - len(worse_i). Pairs of equal length are in neither; an empty side is
    nan. RewardBench's alpacaeval-length idea on any task: a length-biased RM is accurate when the
    better answer is the longer one and inaccurate when it is the shorter one. Returns
    (acc_longer, acc_shorter), each in [0, 1]; invariant to r -> a * r + b for a > 0; length
    reversal (L -> -L) swaps the two.
    """
    g = _arr(diff_gaps)
    length = _length_diffs(better_minus_worse_length, g.size)
    return pairwise_accuracy(g[length > 0]), pairwise_accuracy(g[length < 0])


def length_bias_gap(diff_gaps: ArrayLike, better_minus_worse_length: ArrayLike) -> float:
    """acc_longer - acc_shorter of :func:`accuracy_by_length`, in [-1, 1].

    0: accuracy does not depend on whether the better answer is the longer one; > 0: the RM is
    more often right when the better answer is longer (favours length); < 0: favours brevity.
    nan when either side is empty. Length reversal negates it.
    """
    longer, shorter = accuracy_by_length(diff_gaps, better_minus_worse_length)
    return longer - shorter


# --- Rewrite invariance ------------------------------------------------------------------

def preference_flip_rate(rewritten_gaps: ArrayLike, original_gaps: ArrayLike) -> float:
    """Share of rewritten pairs whose preference differs from their originals'.

    flips = mean_i [ sign(r(a'_i) - r(b'_i)) != sign(r(a_i) - r(b_i)) ]

    over pairs (a', b') of rewrites of one form (a' rewrites the better answer a, b' the worse
    b), ``rewritten_gaps[i]`` = r(a'_i) - r(b'_i), ``original_gaps[i]`` = r(a_i) - r(b_i). A tie
    on one side and a preference on the other counts as a flip (the rewrite made or broke the
    tie). nan with no pairs. Invariant under r -> a r + b with a > 0.
    """
    new, old = _arr(rewritten_gaps), _arr(original_gaps)
    if new.shape != old.shape:
        raise ValueError(f"{new.size} rewritten gaps but {old.size} original gaps")
    if new.size == 0:
        return math.nan
    return float(np.mean(np.sign(new) != np.sign(old)))
