"""The metrics of one slice of a task as a vector-valued function of resampled units, ready to
bootstrap: one entry per declared computed metric (per eps for the eps-dependent ones,
:func:`rmbench.core.metric_registry.computed_metrics`), then the task's own scores, then the
companion outputs the declarations ask for (balanced_best's eps).

Entries, their values in both forms and their ``n`` all come from the declarations in one
loop (:func:`_layout`), so a new computed metric needs no change here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.core import metrics as M
from rmbench.core import weighted as W
from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.choices import EpsUnit
from rmbench.core.metric_declaration import Computation, ComputedMetric
from rmbench.core.metric_def import Counted
from rmbench.core.metric_registry import computed_metrics
from rmbench.core.pairs import Pairs, PooledPairs, count_pairs
from rmbench.core.types import ComparisonGroup, PairIndex, segment_gather, segment_starts
from rmbench.tasks.base import ExtraMetric, TaskScores, as_task_scores

Statistic = Callable[[IntArray], FloatArray]


@dataclass(frozen=True)
class Entry:
    """Entry j of a slice's statistic: a record's ``metric``, its ``eps`` as the run gives it (an
    eps-dependent metric) or None, the ``subset`` a task score names (None for a computed metric:
    it takes its slice's), its ``n``; ``reached_at``: the place, among the companion outputs
    after the entries, of the raw eps at which its value is reached (balanced_best's);
    ``shift_gap``: also reported as ``METRIC_shift_gap``."""

    metric: str
    eps: float | None
    subset: str | None
    n: int
    reached_at: int | None = None
    shift_gap: bool = False


@dataclass(frozen=True)
class SliceStatistic:
    """All metrics of one slice as a vector-valued function of resampled units.

    Entry j of ``statistic(units)`` is ``entries[j]``; after them come the companion outputs
    (:attr:`Entry.reached_at`). ``n_units`` units are drawn by the bootstrap.
    """

    entries: tuple[Entry, ...]
    statistic: Statistic
    n_units: int
    batch: Statistic
    """The same vector for a block of resamples: ``batch(draws)`` (resamples x ``n_units`` unit
    draws) -> resamples x values, computed from resample weights (:mod:`rmbench.core.weighted`)."""
    block: int = 64
    """Resamples per ``batch`` call: resamples x (pairs + units) <= 2,000,000 bounds its memory."""

    @property
    def labels(self) -> tuple[tuple[str, float | None, str | None], ...]:
        """(metric, eps, subset) of each entry."""
        return tuple((e.metric, e.eps, e.subset) for e in self.entries)

    def reached_eps(self, values: FloatArray, entry: Entry) -> float | None:
        """The raw eps ``entry``'s value is reached at, from a vector of ``statistic``; None if it has none."""
        if entry.reached_at is None:
            return None
        return float(values[len(self.entries) + entry.reached_at])


@dataclass(frozen=True)
class _Layout:
    """What a slice's statistic computes, in order: ``computed`` (a declaration and its eps
    index, per entry), the task scores, then ``companions``."""

    entries: tuple[Entry, ...]
    computed: tuple[tuple[ComputedMetric, int], ...]
    companions: tuple[Computation, ...]


def _layout(declared: Sequence[ComputedMetric], eps: Sequence[float], counts: dict[Counted, int],
            extras: TaskScores | None, n_groups: int) -> _Layout:
    """Entries, computations and companions of the declarations, in one loop: per eps for an
    eps-dependent metric; then the task scores (``n``: their counts, or the slice's groups)."""
    entries: list[Entry] = []
    computed: list[tuple[ComputedMetric, int]] = []
    companions: list[Computation] = []
    for d in declared:
        for k in range(len(eps)) if d.eps_dependent else (0,):
            at = None
            if d.reached_at is not None:
                at = len(companions)
                companions.append(d.reached_at)
            entries.append(Entry(d.name, float(eps[k]) if d.eps_dependent else None, None, counts[d.counted], at,
                                 d.shift_gap))
            computed.append((d, k))
    if extras is not None:
        ns = extras.counts or (n_groups,) * len(extras.labels)
        entries += [Entry(name, None, subset, n) for (name, subset), n in zip(extras.labels, ns)]
    return _Layout(tuple(entries), tuple(computed), tuple(companions))


def slice_statistic(groups: Sequence[ComparisonGroup], rewards: FloatArray, eps: Sequence[float],
                    eps_unit: EpsUnit = "sigma", group_units: IntArray | None = None,
                    extra_metrics: TaskScores | Mapping[str, ExtraMetric] | None = None,
                    group_ids: IntArray | None = None, index: PairIndex | None = None) -> SliceStatistic:
    """The metric vector of the groups ``group_ids`` (default: all), ready to bootstrap.

    sigma is taken over all of ``rewards`` (the whole task), whatever the slice. The rewrite
    metrics are computed when the task (not only this slice) has rewrites.
    """
    rewards = M.check_reward_range(rewards)  # finite, and near enough for every gap to be finite
    sigma = M.reward_sigma(rewards)
    eps_raw = [M.raw_eps(e, eps_unit, sigma) for e in eps]
    index = index or PairIndex.from_groups(groups)
    group_ids = np.arange(len(groups)) if group_ids is None else np.asarray(group_ids, dtype=np.int64)
    units_all = np.arange(len(groups)) if group_units is None else np.asarray(group_units, dtype=np.int64)
    # Renumber this slice's units 0..k-1 so that the bootstrap can draw them.
    uniq, slice_units = np.unique(units_all[group_ids], return_inverse=True)
    # Groups sorted by unit, and groups per unit: fixed for the slice, used by every draw.
    by_unit, unit_sizes = np.argsort(slice_units, kind="stable"), np.bincount(slice_units)
    unit_starts = segment_starts(unit_sizes)
    extras = as_task_scores(extra_metrics, len(groups))
    forms = index.has_forms
    declared = [d for d in computed_metrics() if forms or not d.needs_forms]
    whole = index.select_groups(group_ids)
    layout = _layout(declared, eps, count_pairs(whole), extras, len(group_ids))

    def statistic(units: IntArray) -> FloatArray:
        gids = group_ids[by_unit[segment_gather(unit_sizes, units, unit_starts)[0]]]
        view = PooledPairs(Pairs.of(index.select_groups(gids), rewards, forms), eps_raw, sigma)
        values = [d.pooled(view, k) for d, k in layout.computed]
        # Task scores receive the task's own unit numbers of the resampled units.
        extra = list(np.asarray(extras.statistic(uniq[units]), dtype=np.float64)) if extras is not None else []
        return np.array(values + extra + [c.pooled(view, 0) for c in layout.companions], dtype=np.float64)

    ws = W.WeightedSlice(slice_units, len(uniq), Pairs.of(whole, rewards, forms), eps_raw, sigma,
                         [c for d in declared for c in d.columns])
    n_pairs = len(whole.diff_better) + len(whole.eq_a)
    return SliceStatistic(layout.entries, statistic, len(uniq), _weighted_batch(ws, layout, uniq, extras),
                          max(1, min(256, 2_000_000 // max(1, n_pairs + len(uniq)))))


def _weighted_batch(ws: W.WeightedSlice, layout: _Layout, uniq: IntArray, extras: TaskScores | None) -> Statistic:
    """``batch(draws)`` of :class:`SliceStatistic`: the weighted form of every entry, on the view of
    a block (group weights w_g = c_unit(g), c: how often each unit is drawn) of the slice's
    pairs sorted once (:class:`rmbench.core.weighted.WeightedSlice`); task scores still receive
    each resample's drawn units."""
    n_units = len(uniq)

    def batch(draws: IntArray) -> FloatArray:
        block = ws.block(W.unit_counts(draws, n_units))
        cols = [d.weighted(block, k) for d, k in layout.computed]
        if extras is not None:
            cols.append(np.array([np.asarray(extras.statistic(uniq[u]), dtype=np.float64) for u in draws])
                        .reshape(len(draws), -1))
        return np.column_stack(cols + [c.weighted(block, 0) for c in layout.companions])

    return batch
