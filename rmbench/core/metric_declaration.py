"""A metric the summary computes from pairs, declared once: what it is (:class:`MetricDef`) and
how it is computed, in both forms of the bootstrap.

* pooled (the reference, ``summarize(method="resample")``): a plain function of
  :mod:`rmbench.core.metrics` on one resample's gaps, read from a
  :class:`rmbench.core.pairs.PooledPairs`;
* weighted (``method="weighted"``): the same number for a block of resamples at once, from the
  weighted sums of per-pair columns (:class:`rmbench.core.weighted.PairColumn`, which the
  declaration lists) and the order statistics of a :class:`rmbench.core.weighted.WeightedBlock`.

Both forms take the view and ``k``, the index of the run's eps (in ``view.eps``, raw reward
units) for an eps-dependent metric, 0 otherwise; they must give the same number (bit-equal
where the weighted sums are integer counts). ``rmbench.core.computed_metrics`` declares the
built-in ones; ``register_metric`` adds one (:mod:`rmbench.core.metric_registry`), and every
summary then reports it per slice, with its CI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rmbench.core.arrays import FloatArray
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.pairs import PAIR_COUNTS, PooledPairs
from rmbench.core.weighted import PairColumn, WeightedBlock

Pooled = Callable[[PooledPairs, int], float]
"""The pooled form: (one resample's pairs, eps index) -> the value."""
Weighted = Callable[[WeightedBlock, int], FloatArray]
"""The weighted form: (a block of resamples, eps index) -> the value of each resample."""


@dataclass(frozen=True)
class Computation:
    """A number computed both ways (pooled and weighted), e.g. a metric's companion output."""

    pooled: Pooled
    """The pooled form: (one resample's pairs, eps index) -> the value."""
    weighted: Weighted
    """The weighted form: (a block of resamples, eps index) -> one value per resample."""


@dataclass(frozen=True)
class ComputedMetric:
    """A metric computed from a slice's pairs: its :class:`MetricDef` (name, label, direction,
    eps dependence, ``n_counts``: a pair kind of :class:`Counted`, formula) and its two forms.

    ``columns``: the per-pair values the weighted form sums (:meth:`WeightedBlock.total`).
    ``needs_forms``: computed only on tasks with rewrites (:attr:`ComparisonGroup.forms`).
    ``shift_gap``: also reported as ``NAME_shift_gap``, shifted groups minus their originals.
    ``reached_at``: the raw eps where the value is reached (balanced_best), reported as the
    record's eps in the run's eps unit.
    ``exact``: the weighted form is bit-equal to the pooled one (ratios of integer counts, order
    statistics); False for a mean of float values (reward_margin), which the two forms sum in
    another order and so agree to float rounding only (relative ~1e-15). Its ``NAME_shift_gap``
    is exact when it is. ``tests/test_weighted_bootstrap.py`` reads it.
    """

    definition: MetricDef
    """What the metric is: name, label, direction, eps dependence, what ``n`` counts, formula."""
    pooled: Pooled
    """The pooled form: (one resample's pairs, eps index) -> the value."""
    weighted: Weighted
    """The weighted form: (a block of resamples, eps index) -> one value per resample; equal to the
    pooled form on each resample."""
    columns: tuple[PairColumn, ...] = ()
    needs_forms: bool = False
    shift_gap: bool = False
    reached_at: Computation | None = None
    exact: bool = True

    def __post_init__(self) -> None:
        d = self.definition
        if d.counted is None or d.counted not in PAIR_COUNTS:
            raise ValueError(f"computed metric {d.name!r} counts {d.n_counts!r}: a computed metric's n counts "
                             f"pairs, one of {sorted(c.value for c in PAIR_COUNTS)}")
        if self.reached_at is not None and d.eps_dependent:
            raise ValueError(f"metric {d.name!r} is reported per eps: it cannot also report the eps it is reached at")

    @property
    def name(self) -> str:
        """The metric's registered name (``definition.name``)."""
        return self.definition.name

    @property
    def eps_dependent(self) -> bool:
        """Whether it is reported once per eps of the run (``definition.eps_dependent``)."""
        return self.definition.eps_dependent

    @property
    def counted(self) -> Counted:
        """What its records' ``n`` counts (a pair kind: checked when declared)."""
        counted = self.definition.counted
        assert counted is not None
        return counted
