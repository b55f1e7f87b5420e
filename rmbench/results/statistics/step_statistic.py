"""The metrics of a slice of a step-level task (ProcessBench, PRMBench) from its solutions'
counted specificity pairs (:class:`rmbench.core.step_slice.StepSlice`): the entries,
``n`` and bootstrap of :func:`~rmbench.results.statistics.slice_statistic.slice_statistic`,
without listing the k(k-1)/2 pairs of a solution's k correct steps.

Every value equals the pair loop's bit for bit (the weighted forms read the same integer
counts; the point estimate of an ``exact=False`` metric, reward_margin, is its pooled form on
the listed discrimination pairs, as there), but length_correlation, a rank correlation over
every specificity pair, which is nan here. :func:`counts_steps` says when a summary takes this
path: a step-level task, every computed metric a built-in one, and a solution of at least
:data:`COUNT_STEPS_FROM` specificity pairs (below it the pair loop costs little, and gives
length_correlation too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rmbench.core import metrics as M
from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.choices import EpsUnit
from rmbench.core.metric_def import Counted
from rmbench.core.metric_registry import computed_metrics
from rmbench.core.pairs import Pairs, PooledPairs, count_pairs
from rmbench.core.step_groups import StepGroup
from rmbench.core.step_slice import StepSlice, counts_columns, discrimination_index, slice_steps
from rmbench.core.types import ComparisonGroup, PairIndex, segment_gather, segment_starts
from rmbench.results.statistics.slice_statistic import SliceStatistic, _layout, _weighted_batch
from rmbench.tasks.base import ExtraMetric, TaskScores, as_task_scores

COUNT_STEPS_FROM = 20_000
"""A step-level task whose largest solution has this many specificity pairs (about 200 correct
steps before its first error) is summarized from counts (:func:`counts_steps`)."""


def counts_steps(groups: Sequence[ComparisonGroup], count_from: int | None = COUNT_STEPS_FROM) -> bool:
    """Whether :func:`summarize` takes the counted path for ``groups``: every group a
    :class:`StepGroup` (none shifted), every computed metric's columns countable
    (:func:`~rmbench.core.step_slice.counts_columns`, so no plugin metric), and some solution
    with at least ``count_from`` specificity pairs (None: never)."""
    if count_from is None or not groups or not all(isinstance(g, StepGroup) and g.shift is None for g in groups):
        return False
    declared = [d for d in computed_metrics() if not d.needs_forms]
    if not counts_columns([c for d in declared for c in d.columns]):
        return False
    return max(g.pair_counts()[1] for g in groups) >= count_from


def step_slice_statistic(groups: Sequence[StepGroup], rewards: FloatArray, eps: Sequence[float],
                         eps_unit: EpsUnit, group_units: IntArray | None,
                         extra_metrics: TaskScores | Mapping[str, ExtraMetric] | None,
                         group_ids: IntArray | None = None, index: PairIndex | None = None) -> SliceStatistic:
    """:func:`~rmbench.results.statistics.slice_statistic.slice_statistic` of step-level
    ``groups`` from counts (the groups ``group_ids``, default all); ``index``: their
    discrimination pairs (:func:`~rmbench.core.step_slice.discrimination_index`, built when not given)."""
    index = index or discrimination_index(groups)
    group_ids = np.arange(len(groups)) if group_ids is None else group_ids
    rewards = np.asarray(rewards, dtype=np.float64)
    sigma = M.reward_sigma(rewards)
    eps_raw = [M.raw_eps(e, eps_unit, sigma) for e in eps]
    group_ids = np.asarray(group_ids, dtype=np.int64)
    units_all = np.arange(len(groups)) if group_units is None else np.asarray(group_units, dtype=np.int64)
    uniq, slice_units = np.unique(units_all[group_ids], return_inverse=True)
    by_unit, unit_sizes = np.argsort(slice_units, kind="stable"), np.bincount(slice_units)
    unit_starts = segment_starts(unit_sizes)
    extras = as_task_scores(extra_metrics, len(groups))
    declared = [d for d in computed_metrics() if not d.needs_forms]
    whole = index.select_groups(group_ids)
    pairs = Pairs.of(whole, rewards, False)
    ws = StepSlice(slice_units, len(uniq), pairs, slice_steps(groups, rewards, group_ids), eps_raw, sigma,
                   [c for d in declared for c in d.columns])
    n_eq = int(ws.solutions.pairs.sum())
    counts = count_pairs(whole)
    counts[Counted.SPECIFICITY_PAIRS] = n_eq
    counts[Counted.ALL_PAIRS] = counts[Counted.DISCRIMINATION_PAIRS] + n_eq
    layout = _layout(declared, eps, counts, extras, len(group_ids))
    batch = _weighted_batch(ws, layout, uniq, extras)
    inexact = [j for j, (d, _) in enumerate(layout.computed) if not d.exact]

    def statistic(units: IntArray) -> FloatArray:
        row: FloatArray = np.asarray(batch(np.asarray(units, dtype=np.int64)[None, :])[0], dtype=np.float64)
        if inexact:  # reward_margin: pooled on the resample's discrimination gaps, as the pair loop's
            gids = group_ids[by_unit[segment_gather(unit_sizes, units, unit_starts)[0]]]
            view = PooledPairs(Pairs.of(index.select_groups(gids), rewards, False), eps_raw, sigma)
            for j in inexact:
                d, k = layout.computed[j]
                row[j] = d.pooled(view, k)
        return row

    n_diff = len(pairs.diff)
    cells = int(np.minimum(ws.solutions.pairs, 2 * n_diff + 2).sum())
    return SliceStatistic(layout.entries, statistic, len(uniq), batch,
                          max(1, min(256, 2_000_000 // max(1, 4 * n_diff + cells + len(uniq)))))
