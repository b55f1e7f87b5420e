"""The pairs of a slice, or of one bootstrap resample, as reward gaps: what every computed metric
reads, in its pooled form (:class:`PooledPairs`: one resample's gaps, for the plain functions of
:mod:`rmbench.core.metrics`) and its weighted form (:mod:`rmbench.core.weighted`: per-group sums
of the slice's gaps, weighted per resample).

A view computes an intermediate that several metrics share once (:meth:`Shared.shared`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, Self, TypeVar, cast

import numpy as np

from rmbench.core.arrays import AnyArray, BoolArray, FloatArray, IntArray
from rmbench.core.metric_def import Counted
from rmbench.core.types import PairIndex

__all__ = ["PAIR_COUNTS", "BoolArray", "Column", "FloatArray", "FormPairs", "IntArray", "Pairs", "PooledPairs",
           "Shared", "count_pairs"]

T = TypeVar("T")


@dataclass(frozen=True)
class FormPairs:
    """The rewrite pairs of a slice: which discrimination / specificity pairs join two forms, and
    the flip pairs' rewritten gaps ``new``, original gaps ``old`` and group numbers ``group``."""

    diff_cross: BoolArray
    eq_cross: BoolArray
    new: FloatArray
    old: FloatArray
    group: IntArray


@dataclass(frozen=True)
class Pairs:
    """Gaps of the pairs of some groups, each pair with its group number (0..groups-1).

    ``diff``: r(better) - r(worse) of the discrimination pairs (u(a) > u(b)), ``diff_len``:
    len(better) - len(worse) in characters; ``eq``, ``eq_len``: r(a) - r(b) and len(a) - len(b)
    of the specificity pairs (u(a) = u(b)); ``forms``: the rewrite pairs (None: the task has
    no rewrites, so no rewrite metric is computed).
    """

    diff: FloatArray
    diff_group: IntArray
    diff_len: FloatArray
    eq: FloatArray
    eq_group: IntArray
    eq_len: FloatArray
    forms: FormPairs | None

    @classmethod
    def of(cls, index: PairIndex, rewards: FloatArray, forms: bool) -> Pairs:
        """The gaps of ``index``'s pairs (a selection: its responses index ``rewards`` through
        ``response_source``); ``forms``: whether to take the rewrite pairs too."""
        src = index.response_source
        r: FloatArray = rewards if src is None else rewards[src]
        length: FloatArray = index.response_length
        form_pairs = None
        if forms:
            form_pairs = FormPairs(index.diff_cross, index.eq_cross, r[index.flip_a] - r[index.flip_b],
                                   r[index.flip_oa] - r[index.flip_ob], index.flip_group)
        return cls(r[index.diff_better] - r[index.diff_worse], index.diff_group,
                   length[index.diff_better] - length[index.diff_worse], r[index.eq_a] - r[index.eq_b],
                   index.eq_group, length[index.eq_a] - length[index.eq_b], form_pairs)

    @property
    def rewrites(self) -> FormPairs:
        """``forms``, for a metric that declares it needs rewrites (never None there)."""
        if self.forms is None:
            raise ValueError("these pairs hold no rewrites: only a metric with needs_forms reads them")
        return self.forms


def count_pairs(index: PairIndex) -> dict[Counted, int]:
    """The ``n`` of a slice's records by what they count (the pair kinds of :class:`Counted`)."""
    n_diff, n_eq = len(index.diff_better), len(index.eq_a)
    cross = int(index.diff_cross.sum())
    return {Counted.DISCRIMINATION_PAIRS: n_diff, Counted.SPECIFICITY_PAIRS: n_eq, Counted.ALL_PAIRS: n_diff + n_eq,
            Counted.CROSS_FORM_SPECIFICITY_PAIRS: int(index.eq_cross.sum()),
            Counted.WITHIN_FORM_DISCRIMINATION_PAIRS: n_diff - cross,
            Counted.CROSS_FORM_DISCRIMINATION_PAIRS: cross,
            Counted.REWRITTEN_DISCRIMINATION_PAIRS: len(index.flip_a)}


PAIR_COUNTS = frozenset(Counted) - {Counted.GROUPS, Counted.ORIGINAL_GROUPS, Counted.RESAMPLING_UNITS}
"""What a computed metric's ``n`` may count: the keys of :func:`count_pairs`."""


class Shared:
    """Intermediates that several metrics of one view read, computed once per view."""

    def __init__(self) -> None:
        self._shared: dict[object, object] = {}

    def shared(self, fn: Callable[[Self], T]) -> T:
        """``fn(self)``, computed on the first call with ``fn`` and kept (``fn``: a module-level
        function, so that every metric that reads the intermediate names the same one)."""
        if fn not in self._shared:
            self._shared[fn] = fn(self)
        return cast(T, self._shared[fn])


class Column(Protocol):
    """What :meth:`PooledPairs.total` reads of a per-pair column
    (:class:`rmbench.core.weighted.PairColumn`, whose module imports this one)."""

    @property
    def per_eps(self) -> bool: ...

    @property
    def value(self) -> Callable[[Pairs, float], AnyArray]: ...


class PooledPairs(Shared):
    """One bootstrap resample's pairs (every pair of a group drawn c times, c times), as the
    pooled form of a metric reads them: ``pairs``, the run's ``eps`` in raw reward units, and
    ``sigma`` (the task's reward standard deviation)."""

    def __init__(self, pairs: Pairs, eps: Sequence[float], sigma: float) -> None:
        super().__init__()
        self.pairs, self.eps, self.sigma = pairs, tuple(eps), sigma
        self._totals: dict[tuple[Column, int], float] = {}

    def total(self, column: Column, k: int = 0) -> float:
        """The sum of ``column`` over these pairs (at the run's k-th eps for a ``per_eps`` one):
        the pooled twin of :meth:`rmbench.core.weighted.WeightedBlock.total` (numpy's sum of the
        float64 values; an exact integer for an indicator), computed once per view."""
        key = (column, k if column.per_eps else 0)
        if key not in self._totals:
            values = column.value(self.pairs, self.eps[k] if column.per_eps else 0.0)
            self._totals[key] = float(np.sum(np.asarray(values, dtype=np.float64)))
        return self._totals[key]
