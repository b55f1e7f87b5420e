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
from rmbench.core.step_counts import SliceCounts, correct_steps, slice_cells
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import PairIndex, group_slices
from rmbench.core.weighted import PairColumn, PairSet, WeightedSlice, group_sums
from rmbench.core.weighted_order import balanced_best, ratio

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
    :class:`StepOrder`."""

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
        """The slice's order statistics (:class:`StepOrder`), built on first use."""
        p = self.pairs
        return StepOrder(p.diff, p.diff_group, np.unique(p.diff), self.steps, self.solutions.zero,
                         self.solutions.pairs)


def slice_steps(groups: Sequence[StepGroup], rewards: FloatArray, group_ids: IntArray) -> list[FloatArray]:
    """:func:`~rmbench.core.step_counts.correct_steps` of each group of ``group_ids``."""
    where = group_slices(groups)
    return [correct_steps(groups[i].utilities, rewards[where[i]]) for i in group_ids]


class StepOrder:
    """ds_auc and balanced_best (score and eps) of a step-level slice as functions of group
    weights ``W`` (resamples x groups), from its discrimination gaps ``x`` (groups ``gx``) and
    each group's sorted correct-step rewards ``steps`` (their cells: :func:`slice_cells`), its
    ``zero`` and ``pairs`` counts; the same integers, and the same float
    operations on them, as :class:`rmbench.core.weighted_order.OrderStats`, so bit-equal.
    length_correlation, a rank correlation over every pair, is not computed here (nan).

    balanced_best: on an interval [v_j, v_{j+1}) D is constant and Spec grows with eps, so
    the largest |y| of the interval scores at least as well as any other eps in it; its
    candidates are 0 and those (the first maximum and its eps are the pair loop's).
    """

    def __init__(self, x: FloatArray, gx: IntArray, v: FloatArray, steps: Sequence[FloatArray], zero: IntArray,
                 pairs: IntArray) -> None:
        self.m = len(v)
        jx = np.searchsorted(v, x)
        self.x = _Entries(gx, jx, np.ones(len(x), dtype=np.int64), self.m)
        gy, cy, ny, top = slice_cells(steps, v)
        self.y = _Entries(gy, cy, ny, 2 * self.m + 2)
        self.zero, self.pairs = zero.astype(np.float64), pairs.astype(np.float64)
        self.x_per_group = np.bincount(gx, minlength=len(steps)).astype(np.float64)
        self.positive = np.flatnonzero(v > 0)
        self.cand = np.unique(np.concatenate([[0.0], top[np.isfinite(top)]]))
        self.cand_interval = np.searchsorted(v, self.cand, side="right")  # #(v <= c)
        self.active = len(x) > 0 and int(self.pairs.sum()) > 0

    def values(self, W: np.ndarray) -> dict[str, FloatArray]:
        """ds_auc, balanced_best, balanced_eps and length_correlation (nan) of each row of ``W``."""
        b = W.shape[0]
        nan = np.full(b, np.nan)
        out = {"ds_auc": nan, "balanced_best": nan, "balanced_eps": nan, "length_correlation": nan}
        if not self.active:
            return out
        xw, cells = self.x.weighted(W), self.y.weighted(W)
        W = W.astype(np.float64)
        nx, ny = W @ self.x_per_group, W @ self.pairs
        cum_y = np.cumsum(cells, axis=1)
        y_lt = cum_y[:, 1:2 * self.m:2]  # #w(y < v_j), j = 1..m
        below = np.einsum("ij,ij->i", xw, y_lt)
        p = self.positive
        ties = np.einsum("ij,ij->i", xw[:, p], cells[:, 2 * p + 2])
        out["ds_auc"] = ratio(below + 0.5 * ties, nx * ny)
        cum_x = np.concatenate([np.zeros((b, 1)), np.cumsum(xw, axis=1)], axis=1)
        x_le = cum_x[:, self.cand_interval]
        y_le = cum_y[:, 2 * self.cand_interval + 1]
        y_le[:, self.cand == 0] = (W @ self.zero)[:, None]
        out["balanced_best"], out["balanced_eps"] = balanced_best(x_le, y_le, self.cand, nx, ny)
        return out


class _Entries:
    """Counts ``count`` of groups ``group`` at columns ``column`` (0..width-1): weighted per
    resample as sum_e W[:, group_e] count_e by column, summed in integers (int32 where no sum
    can reach 2**31: a third of the time of float64), given as float64 (exact)."""

    def __init__(self, group: IntArray, column: IntArray, count: IntArray, width: int) -> None:
        order = np.argsort(column, kind="stable")
        self.group, self.count = group[order], count[order].astype(np.int64)
        self.ones, self.total = bool(np.all(self.count == 1)), int(self.count.sum())
        col = column[order]
        self.starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]]) if len(col) else np.zeros(0, np.int64)
        self.columns, self.width = col[self.starts], width

    def weighted(self, W: np.ndarray) -> FloatArray:
        out = np.zeros((W.shape[0], self.width))
        if len(self.group):
            top = int(np.max(W)) if W.size else 0
            gathered = np.take(np.asarray(W).astype(np.int32 if top * max(self.total, 1) < 2**31 else np.int64),
                               self.group, axis=1)
            if not self.ones:
                gathered = gathered * self.count
            out[:, self.columns] = np.add.reduceat(gathered, self.starts, axis=1)
        return out
