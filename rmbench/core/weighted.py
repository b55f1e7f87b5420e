"""The group bootstrap from resample weights: every pair metric of a slice for a block of
resamples at once, in time linear in the pairs per resample and with no sort.

A bootstrap resample draws ``n_units`` units with replacement (the very draws of
:func:`rmbench.core.metrics.bootstrap_ci`); unit u drawn c_u times puts every pair of its groups
c_u times into the resample's pair list. So each metric is a function of the integer weights
``w_g = c_unit(g)``: the count metrics (accuracies, D, Spec, flips) are ratios of weighted
counts ``sum_g w_g n_g`` of per-group counts ``n_g`` (one matrix product per block, over the
per-pair columns the metrics declare: :class:`PairColumn`), the order metrics (ds_auc, balanced_best,
length_correlation) come from prefix sums over pairs sorted once
(:mod:`rmbench.core.weighted_order`).

Exactness: every count is an integer held exactly in float64 (below 2**53), and the final float
operations are those of the plain functions on their integer counts, so pairwise_accuracy,
sign_accuracy, D and Spec at every eps, the length accuracies and their gap, the rewrite
metrics, ds_auc and balanced_best (score and eps) are bit-equal to the plain functions on the
resampled pairs, and so is length_correlation up to about 180,000 specificity pairs in a
resample (:func:`rmbench.core.weighted_order.spearman`; beyond, both round). The one
exception is reward_margin, a mean of float gaps: here ``sum_u c_u S_u / N`` with S_u the
unit's sum of |gap| (summed per group, then per unit), there numpy's pairwise sum over the
resample's gaps in draw order; the two differ by float rounding only (relative ~1e-15).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import numpy as np

from rmbench.core.arrays import AnyArray, FloatArray, IntArray
from rmbench.core.pairs import Pairs, Shared
from rmbench.core.weighted_order import OrderStats

__all__ = ["PairColumn", "PairSet", "WeightedBlock", "WeightedSlice", "group_sums", "unit_counts"]


def unit_counts(draws: IntArray, n_units: int) -> IntArray:
    """c[b, u] = number of times unit u occurs in resample b (row b of ``draws``), int64."""
    b = draws.shape[0]
    flat = (draws + (np.arange(b, dtype=np.int64) * n_units)[:, None]).reshape(-1)
    return np.bincount(flat, minlength=b * n_units).reshape(b, n_units)


def group_sums(groups: IntArray, n_groups: int, columns: Sequence[AnyArray]) -> FloatArray:
    """M[g, k] = sum over the pairs i of group g of columns[k][i] (a pair indicator or a value)."""
    if not columns:
        return np.zeros((n_groups, 0))
    return np.stack([np.bincount(groups, weights=np.asarray(c, dtype=np.float64), minlength=n_groups)
                     for c in columns], axis=1)


class PairSet(Enum):
    """The pairs a :class:`PairColumn` runs over."""

    DIFF = "discrimination pairs"
    EQ = "specificity pairs"
    FLIP = "flip pairs (rewritten pairs beside their originals)"


@dataclass(frozen=True)
class PairColumn:
    """A per-pair value whose weighted sum a metric's weighted form reads
    (:meth:`WeightedBlock.total`): ``value(pairs, eps)`` gives one entry per pair of ``over``
    (an indicator, or a float such as |gap|); ``per_eps``: one column per eps of the run
    (``eps`` in raw reward units; otherwise ``value`` gets 0.0 and ignores it).

    A column is known by its declaration (this object, which the metrics that read it list in
    their ``columns``), never by its ``name`` alone: ``name`` labels it, and the columns of one
    name declared by two metrics (a built-in's and a plugin's ``"x"``) are two columns, each
    summed for and read by the metrics that list it. A column over ``FLIP`` (or one that reads
    ``pairs.rewrites``) belongs to metrics that need rewrites.
    """

    name: str
    over: PairSet
    value: Callable[[Pairs, float], AnyArray]
    per_eps: bool = False


class WeightedSlice:
    """All pair metrics of one slice as functions of unit counts ``C`` (resamples x units).

    ``pairs``: the slice's gaps, their groups numbered 0..n_groups-1; ``group_unit``: each
    group's unit (0..n_units-1), so a resample's group weights are ``W = C[:, group_unit]``;
    ``eps_raw``: eps in raw units; ``sigma``: the reward_margin unit; ``columns``: the per-pair
    values the metrics' weighted forms sum (each summed once per group and unit, here).
    :meth:`block` gives the view of a block of resamples that the weighted forms read.
    """

    def __init__(self, group_unit: IntArray, n_units: int, pairs: Pairs, eps_raw: Sequence[float], sigma: float,
                 columns: Sequence[PairColumn]) -> None:
        n_groups = len(group_unit)
        self.group_unit, self.identity = group_unit, bool(np.array_equal(group_unit, np.arange(n_units)))
        self.pairs, self.n_groups, self.eps, self.sigma = pairs, n_groups, tuple(eps_raw), float(sigma)
        self.position: dict[tuple[PairColumn, int], int] = {}
        by_group = []
        for over, groups in ((PairSet.DIFF, pairs.diff_group), (PairSet.EQ, pairs.eq_group),
                             (PairSet.FLIP, pairs.rewrites.group if pairs.forms is not None else None)):
            values = self._columns([c for c in columns if c.over is over])
            if values and groups is None:
                raise ValueError("a column over the flip pairs needs rewrites: declare its metric needs_forms")
            by_group.append(group_sums(groups, n_groups, values) if groups is not None and values
                            else np.zeros((n_groups, 0)))
        # Per unit: sum over its groups (exact for the integer columns), so T = C @ counts.
        per_group = np.concatenate(by_group, axis=1)
        self.counts = (np.stack([np.bincount(group_unit, weights=col, minlength=n_units) for col in per_group.T],
                                axis=1) if per_group.shape[1] else np.zeros((n_units, 0)))

    def _columns(self, columns: Sequence[PairColumn]) -> list[AnyArray]:
        """The values of ``columns`` (each declaration once, however many metrics list it; per eps
        for ``per_eps``), their places noted under the declaration itself, not its name."""
        out: list[AnyArray] = []
        for c in columns:
            if (c, 0) in self.position:
                continue
            for k, e in enumerate(self.eps if c.per_eps else (0.0,)):
                self.position[(c, k)] = len(self.position)
                out.append(c.value(self.pairs, e))
        return out

    @cached_property
    def order(self) -> OrderStats:
        """The slice's pairs sorted once, for the order metrics (built on first use)."""
        p = self.pairs
        return OrderStats(p.diff, p.diff_group, p.eq, p.eq_group, p.eq_len, self.n_groups)

    def block(self, C: IntArray) -> WeightedBlock:
        """The view of the resamples with unit counts ``C`` (resamples x units)."""
        return WeightedBlock(self, C)


class WeightedBlock(Shared):
    """A block of resamples of a slice, as the weighted form of a metric reads it.

    T = C @ counts: per resample, the weighted sum of every declared column (:meth:`total`):
    exact integers for indicators (and float sums for values such as |gap|); ``order``: the
    order statistics of :class:`rmbench.core.weighted_order.OrderStats` on the group weights
    ``W = C[:, group_unit]``, computed once per block; ``eps`` and ``sigma`` as the slice's.
    """

    def __init__(self, ws: WeightedSlice, C: IntArray) -> None:
        super().__init__()
        self.slice, self.C, self.eps, self.sigma = ws, C, ws.eps, ws.sigma
        # Weighted counts: exact integers (and the float sums of value columns).
        self.T: FloatArray = C.astype(np.float64) @ ws.counts

    def total(self, column: PairColumn, k: int = 0) -> FloatArray:
        """The weighted sum of ``column`` (at the run's k-th eps for a ``per_eps`` one; ``k`` is
        ignored for another), per resample."""
        place = self.slice.position.get((column, k if column.per_eps else 0))
        if place is None:
            raise KeyError(f"pair column {column.name!r} is not declared by any metric of this slice: "
                           f"add this very column to the columns of the metric that reads it")
        return self.T[:, place]

    @cached_property
    def order(self) -> dict[str, FloatArray]:
        """ds_auc, balanced_best, balanced_eps and length_correlation of each resample."""
        ws = self.slice
        return ws.order.values(self.C if ws.identity else self.C[:, ws.group_unit])
