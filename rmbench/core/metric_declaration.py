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

A metric that is a ratio of column sums (a share of pairs, a mean per pair), or the difference
of two such, is declared by its columns alone (:meth:`ComputedMetric.of_columns`,
:meth:`ComputedMetric.difference`): both forms are derived from one :class:`ColumnFormula`,
the pooled one from the resample's column sums (:meth:`PooledPairs.total`), the weighted one
from the weighted sums (:meth:`WeightedBlock.total`), with the same float operations. Only
order statistics (ds_auc, balanced_best, length_correlation) write their two forms by hand.
:func:`rmbench.core.metric_check.check_metric` checks a declaration's two forms against each
other, and its invariances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np

from rmbench.core.arrays import FloatArray
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.pairs import PAIR_COUNTS, PooledPairs
from rmbench.core.weighted import PairColumn, PairSet, WeightedBlock
from rmbench.core.weighted_order import ratio

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


Term = PairColumn | tuple[float, PairColumn]
"""A column's sum, or ``(c, column)``: c times it."""
Terms = Term | Sequence[Term]
"""A sum of :data:`Term`: one, or several (``(C.DIFF_POSITIVE, (0.5, C.DIFF_ZERO))``)."""


def _is_term(x: object) -> bool:
    """Whether ``x`` is one ``(coefficient, column)``."""
    return (isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], Real) and not isinstance(x[0], bool)
            and isinstance(x[1], PairColumn))


def _terms(terms: Terms, what: str) -> tuple[tuple[float, PairColumn], ...]:
    """``terms`` as (coefficient, column) pairs."""
    items: Sequence[object] = (terms,) if isinstance(terms, PairColumn) or _is_term(terms) else tuple(terms)
    out: list[tuple[float, PairColumn]] = []
    for t in items:
        if isinstance(t, PairColumn):
            out.append((1.0, t))
        elif isinstance(t, tuple) and _is_term(t):
            out.append((float(t[0]), t[1]))
        else:
            raise TypeError(f"the {what} of a ratio is a PairColumn, a (coefficient, PairColumn) or a sequence of "
                            f"them, not {t!r}")
    if not out:
        raise ValueError(f"the {what} of a ratio names no column")
    return tuple(out)


def _sum(view: PooledPairs | WeightedBlock, terms: tuple[tuple[float, PairColumn], ...], k: int) -> FloatArray:
    """sum_i c_i total(column_i) in ``view`` (in the order given: exact for integer counts)."""
    out: FloatArray | None = None
    for c, column in terms:
        t = np.asarray(view.total(column, k), dtype=np.float64)
        t = t if c == 1.0 else c * t
        out = t if out is None else out + t
    assert out is not None
    return out


@dataclass(frozen=True)
class Ratio:
    """N / D of two sums of column totals, N = sum_i c_i #w(column_i) and D likewise (a
    share of pairs: an indicator over the pairs counted; a mean per pair: a value over pairs);
    nan where D = 0. ``complement``: 1 - N / D (Spec from the pairs above eps);
    ``per_sigma``: (N / D) / sigma, for a column in reward units (|gap|): 0 where sigma = 0
    (every reward equal) and D > 0. Build one with :meth:`of`."""

    numerator: tuple[tuple[float, PairColumn], ...]
    denominator: tuple[tuple[float, PairColumn], ...]
    complement: bool = False
    per_sigma: bool = False

    @classmethod
    def of(cls, numerator: Terms, denominator: Terms, complement: bool = False, per_sigma: bool = False) -> Ratio:
        """The ratio of ``numerator`` to ``denominator`` (each a :data:`Terms`)."""
        if complement and per_sigma:
            raise ValueError("1 - N / D is a share, in no reward unit: a ratio is complement or per_sigma, not both")
        return cls(_terms(numerator, "numerator"), _terms(denominator, "denominator"), complement, per_sigma)

    @property
    def columns(self) -> tuple[PairColumn, ...]:
        """Its columns, each once, numerator's first."""
        return tuple(dict.fromkeys(c for _, c in self.numerator + self.denominator))

    def value(self, view: PooledPairs | WeightedBlock, k: int) -> FloatArray:
        """The ratio in ``view`` at the run's k-th eps: a 0-d array for a pooled view, one value per
        resample for a weighted block."""
        den = _sum(view, self.denominator, k)
        v = ratio(_sum(view, self.numerator, k), den)
        if self.complement:
            v = 1.0 - v
        if self.per_sigma:
            v = v / view.sigma if view.sigma > 0 else np.where(den > 0, 0.0, np.nan)
        return v


@dataclass(frozen=True)
class ColumnFormula:
    """A metric from column sums: ``ratio``, minus ``minus`` (of the same resample) when given.
    Its two forms (:meth:`pooled`, :meth:`weighted`) are one computation on either view."""

    ratio: Ratio
    minus: Ratio | None = None

    @property
    def columns(self) -> tuple[PairColumn, ...]:
        """Its columns, each once."""
        return tuple(dict.fromkeys(self.ratio.columns + (self.minus.columns if self.minus is not None else ())))

    def value(self, view: PooledPairs | WeightedBlock, k: int) -> FloatArray:
        """The value in ``view`` (:meth:`Ratio.value`)."""
        v = self.ratio.value(view, k)
        return v if self.minus is None else v - self.minus.value(view, k)

    def pooled(self, p: PooledPairs, k: int) -> float:
        """The pooled form: the value on one resample's pairs."""
        return float(self.value(p, k))

    def weighted(self, b: WeightedBlock, k: int) -> FloatArray:
        """The weighted form: the value of each resample of a block."""
        return self.value(b, k)


@dataclass(frozen=True)
class ComputedMetric:
    """A metric computed from a slice's pairs: its :class:`MetricDef` (name, label, direction,
    eps dependence, ``n_counts``: a pair kind of :class:`Counted`, formula) and its two forms.
    A ratio of column sums is declared by its columns (:meth:`of_columns`, :meth:`difference`),
    which give both forms; an order statistic passes its two forms here by hand. Either way
    :func:`rmbench.core.metric_check.check_metric` is its test.

    ``columns``: the per-pair values the weighted form sums (:meth:`WeightedBlock.total`).
    ``needs_forms``: computed only on tasks with rewrites (:attr:`ComparisonGroup.forms`).
    ``shift_gap``: also reported as ``NAME_shift_gap``, shifted groups minus their originals.
    ``reached_at``: the raw eps where the value is reached (balanced_best), reported as the
    record's eps in the run's eps unit.
    ``exact``: the weighted form is bit-equal to the pooled one (ratios of integer counts, order
    statistics); False for a mean of float values (reward_margin), which the two forms sum in
    another order and so agree to float rounding only (relative ~1e-15). Its ``NAME_shift_gap``
    is exact when it is. ``tests/core/test_weighted_bootstrap.py`` reads it.
    ``formula``: the column formula both forms come from (:meth:`of_columns`,
    :meth:`difference`); None for a metric whose forms are written by hand (order statistics).
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
    formula: ColumnFormula | None = None

    def __post_init__(self) -> None:
        d = self.definition
        if d.counted is None or d.counted not in PAIR_COUNTS:
            raise ValueError(f"computed metric {d.name!r} counts {d.n_counts!r}: a computed metric's n counts "
                             f"pairs, one of {sorted(c.value for c in PAIR_COUNTS)}")
        if self.reached_at is not None and d.eps_dependent:
            raise ValueError(f"metric {d.name!r} is reported per eps: it cannot also report the eps it is reached at")
        if self.formula is not None:
            per_eps = [c.name for c in self.formula.columns if c.per_eps]
            if d.eps_dependent != bool(per_eps):
                raise ValueError(f"metric {d.name!r} is {'' if d.eps_dependent else 'not '}declared eps-dependent, "
                                 f"but {'its columns ' + repr(per_eps) if per_eps else 'none of its columns'} "
                                 f"depend on eps (PairColumn.per_eps)")
            flips = [c.name for c in self.formula.columns if c.over is PairSet.FLIP]
            if flips and not self.needs_forms:
                raise ValueError(f"metric {d.name!r} reads the flip pairs ({flips}): declare it needs_forms=True")

    @classmethod
    def of_columns(cls, definition: MetricDef, numerator: Terms, denominator: Terms, *, complement: bool = False,
                   per_sigma: bool = False, needs_forms: bool = False, shift_gap: bool = False,
                   exact: bool | None = None) -> ComputedMetric:
        """The metric N / D of its column sums (:class:`Ratio`: ``complement`` for 1 - N / D,
        ``per_sigma`` for a numerator in reward units, divided by sigma), both forms derived:

            ComputedMetric.of_columns(MetricDef("discrimination", ...), C.DIFF_ABOVE, C.DIFF_PAIRS)

        ``exact`` (bit-equal forms) defaults to True but for ``per_sigma``: a float column's
        sums are taken in another order by the two forms; pass False for another float column.
        """
        formula = ColumnFormula(Ratio.of(numerator, denominator, complement, per_sigma))
        return cls.of_formula(definition, formula, needs_forms=needs_forms, shift_gap=shift_gap,
                              exact=not per_sigma if exact is None else exact)

    @classmethod
    def difference(cls, definition: MetricDef, first: ComputedMetric, second: ComputedMetric, *,
                   shift_gap: bool = False) -> ComputedMetric:
        """``first - second`` on the same resample (a paired CI), both metrics a single ratio of
        columns (:meth:`of_columns`); it needs rewrites when either does, exact when both are."""
        parts = []
        for m in (first, second):
            if m.formula is None or m.formula.minus is not None:
                raise ValueError(f"metric {definition.name!r}: {m.name!r} is not a single ratio of columns "
                                 f"(ComputedMetric.of_columns), so it has no column formula to subtract")
            parts.append(m.formula.ratio)
        return cls.of_formula(definition, ColumnFormula(parts[0], parts[1]),
                              needs_forms=first.needs_forms or second.needs_forms, shift_gap=shift_gap,
                              exact=first.exact and second.exact)

    @classmethod
    def of_formula(cls, definition: MetricDef, formula: ColumnFormula, *, needs_forms: bool = False,
                   shift_gap: bool = False, exact: bool = True) -> ComputedMetric:
        """The metric of a :class:`ColumnFormula`: its forms, columns and ``formula`` from it."""
        return cls(definition, formula.pooled, formula.weighted, formula.columns, needs_forms=needs_forms,
                   shift_gap=shift_gap, exact=exact, formula=formula)

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
