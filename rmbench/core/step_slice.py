"""The weighted bootstrap view of a step-level slice (:class:`StepSlice`), its specificity
pairs counted per solution (:mod:`rmbench.core.step_counts`) instead of listed: the
:class:`~rmbench.core.weighted.WeightedSlice` every built-in metric's weighted form reads, with
the same per-unit column sums and order statistics, in O(n log n) per solution of n steps for
the count columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from rmbench.core import pair_columns as C
from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.pairs import Pairs
from rmbench.core.step_counts import SliceCounts, StepOrder, correct_steps
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import PairIndex, group_slices
from rmbench.core.weighted import PairColumn, PairSet, WeightedSlice, group_sums

COUNTED_COLUMNS = (C.EQ_PAIRS, C.EQ_ZERO, C.EQ_ABOVE)
"""The columns over specificity pairs that counting gives (every built-in one of a task without rewrites)."""


def counts_columns(columns: Sequence[PairColumn]) -> bool:
    """Whether :class:`StepSlice` gives every one of ``columns``: any over discrimination
    pairs (listed), over specificity pairs only :data:`COUNTED_COLUMNS`."""
    return all(c.over is PairSet.DIFF or c in COUNTED_COLUMNS for c in columns)


def discrimination_index(groups: Sequence[StepGroup]) -> PairIndex:
    """A :class:`PairIndex` of the discrimination pairs of step-level ``groups`` (the pair
    loop's, in its order: each correct step before the first error with that error), and no
    specificity pairs: O(steps)."""
    better, worse, group = [], [], []
    for gi, (g, where) in enumerate(zip(groups, group_slices(groups))):
        k = g.first_error
        if k > 0:
            better.append(np.arange(k, dtype=np.int64) + where.start)
            worse.append(np.full(k, where.start + k, dtype=np.int64))
            group.append(np.full(k, gi, dtype=np.int64))

    def joined(parts: list[IntArray]) -> IntArray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    empty, no = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    db = joined(better)
    sizes = [len(g.responses) for g in groups]
    lengths = np.asarray([len(r) for g in groups for r in g.responses], dtype=np.float64)
    return PairIndex(np.repeat(np.arange(len(groups), dtype=np.int64), sizes), db, joined(worse), joined(group),
                     empty, empty, empty, lengths, np.zeros(len(db), dtype=bool), no, empty, empty, empty, empty,
                     empty)


class StepSlice(WeightedSlice):
    """:class:`~rmbench.core.weighted.WeightedSlice` of step-level groups: ``pairs`` the
    slice's discrimination pairs (listed, its groups numbered 0..n_groups-1), ``steps`` each
    group's correct-step rewards sorted (:func:`~rmbench.core.step_counts.correct_steps`).
    Columns over discrimination pairs are summed per group as there; the specificity columns
    (:data:`COUNTED_COLUMNS` only) are each group's :class:`~rmbench.core.step_counts.SliceCounts`; ``order`` is
    :class:`~rmbench.core.step_counts.StepOrder`."""

    def __init__(self, group_unit: IntArray, n_units: int, pairs: Pairs, steps: Sequence[FloatArray],
                 eps_raw: Sequence[float], sigma: float, columns: Sequence[PairColumn]) -> None:
        n_groups = len(group_unit)
        self.group_unit, self.identity = group_unit, bool(np.array_equal(group_unit, np.arange(n_units)))
        self.pairs, self.n_groups, self.eps, self.sigma = pairs, n_groups, tuple(eps_raw), float(sigma)
        self.steps = steps
        self.solutions = SliceCounts.of(steps, self.eps)
        self.position: dict[tuple[PairColumn, int], int] = {}
        if not counts_columns(columns):
            raise ValueError("a step-level slice counts only the built-in specificity columns")
        diff = self._columns([c for c in columns if c.over is PairSet.DIFF])
        by_group = [group_sums(pairs.diff_group, n_groups, diff) if diff else np.zeros((n_groups, 0))]
        eq = self._counted([c for c in columns if c.over is PairSet.EQ])
        by_group.append(np.stack(eq, axis=1) if eq else np.zeros((n_groups, 0)))
        per_group = np.concatenate(by_group, axis=1)
        self.counts = (np.stack([np.bincount(group_unit, weights=col, minlength=n_units) for col in per_group.T],
                                axis=1) if per_group.shape[1] else np.zeros((n_units, 0)))

    def _counted(self, columns: Sequence[PairColumn]) -> list[FloatArray]:
        """Per group, the counted specificity columns (each declaration once, per eps where it is)."""
        out: list[FloatArray] = []
        for c in columns:
            if (c, 0) in self.position:
                continue
            for k in range(len(self.eps) if c.per_eps else 1):
                self.position[(c, k)] = len(self.position)
                sol = self.solutions
                values = sol.pairs if c is C.EQ_PAIRS else sol.zero if c is C.EQ_ZERO else sol.above[k]
                out.append(values.astype(np.float64))
        return out

    @cached_property
    def order(self) -> StepOrder:  # type: ignore[override]
        """The slice's order statistics (:class:`~rmbench.core.step_counts.StepOrder`), built on first use."""
        p = self.pairs
        return StepOrder(p.diff, p.diff_group, np.unique(p.diff), self.steps, self.solutions.zero,
                         self.solutions.pairs)


def slice_steps(groups: Sequence[StepGroup], rewards: FloatArray, group_ids: IntArray) -> list[FloatArray]:
    """:func:`~rmbench.core.step_counts.correct_steps` of each group of ``group_ids``."""
    where = group_slices(groups)
    return [correct_steps(groups[i].utilities, rewards[where[i]]) for i in group_ids]
