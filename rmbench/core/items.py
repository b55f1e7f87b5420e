"""Per-item views of a task's rewards: whether each item (comparison group) is correct, and how
two reward vectors for the same items agree, item by item.

An item is **correct** when every discrimination pair of its group is ordered right, strictly:

    correct(g) = all over (a, b) in D(g) of [r(a) > r(b)]        (D(g): the pairs with u(a) > u(b))

undefined (nan) for a group with no discrimination pair. For a preference pair it is
r(chosen) > r(rejected) (RewardBench's accuracy); for a RewardBench 2 best-of-n row, the chosen
answer outscores every rejected one (a tie at the top is not correct); for a Ties row, the worst
correct answer outscores the best incorrect one (the official ``accurate``).

Two reward vectors **order an item alike** when every pair of its responses compares the same
way under both (sign(r1_i - r1_j) = sign(r2_i - r2_j) for all i < j): a check on ranks that holds
whatever the two models' reward scales.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rmbench.core.arrays import BoolArray, FloatArray
from rmbench.core.types import ComparisonGroup, PairIndex, group_slices


def item_correct(index: PairIndex, rewards: FloatArray) -> FloatArray:
    """1.0 where the group's discrimination pairs are all ordered right, 0.0 where one is not, nan
    where the group has none (the module's formula), one entry per group of ``index``."""
    r = np.asarray(rewards, dtype=np.float64)
    n = index.n_groups
    wrong = ~(r[index.diff_better] > r[index.diff_worse])  # nan compares False: a pair not ordered right
    n_wrong = np.bincount(index.diff_group, weights=wrong.astype(np.float64), minlength=n)
    n_pairs = np.bincount(index.diff_group, minlength=n)
    return np.where(n_pairs > 0, (n_wrong == 0).astype(np.float64), np.nan)


def item_order_agrees(groups: Sequence[ComparisonGroup], rewards_a: FloatArray, rewards_b: FloatArray) -> BoolArray:
    """Per group: whether ``rewards_a`` and ``rewards_b`` order every pair of its responses alike
    (ties included: a tie under one and not the other disagrees)."""
    a, b = np.asarray(rewards_a, dtype=np.float64), np.asarray(rewards_b, dtype=np.float64)
    out = np.empty(len(groups), dtype=np.bool_)
    for k, where in enumerate(group_slices(groups)):
        ga, gb = a[where], b[where]
        out[k] = bool(np.array_equal(np.sign(ga[:, None] - ga[None, :]), np.sign(gb[:, None] - gb[None, :])))
    return out


def item_max_abs_diff(groups: Sequence[ComparisonGroup], rewards_a: FloatArray, rewards_b: FloatArray) -> FloatArray:
    """Per group: max over its responses of |r_a - r_b| (raw reward units; nan where any is nan)."""
    d = np.abs(np.asarray(rewards_a, dtype=np.float64) - np.asarray(rewards_b, dtype=np.float64))
    return np.array([float(np.max(d[where])) for where in group_slices(groups)], dtype=np.float64)
