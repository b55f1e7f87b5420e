"""From a scored task (groups + one reward per response) to metric records with bootstrap CIs.

Rewards are pooled over all pairs of the task, and again per subset (when a task has more
than one) and per shift (when any group is shifted; unshifted groups form the ``none`` slice).
sigma, the unit of sigma-scaled eps, is the sample standard deviation (ddof=1) of all rewards
the model gave in the task; the bootstrap resamples units (groups, or the task's clusters of
groups) and holds sigma at that value, so every slice and resample shares one eps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from rmbench.core import metrics as M
from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.choices import EpsUnit
from rmbench.core.metric_registry import GAP_SUFFIX
from rmbench.core.step_groups import StepGroup
from rmbench.core.step_slice import discrimination_index
from rmbench.core.types import ComparisonGroup, PairIndex
from rmbench.results.statistics.slice_statistic import SliceStatistic, slice_statistic
from rmbench.results.statistics.step_statistic import COUNT_STEPS_FROM, counts_steps, step_slice_statistic
from rmbench.results.storage.record import Estimate, MetricRecord
from rmbench.tasks.base import ExtraMetric, TaskScores, as_task_scores

__all__ = ["SliceStatistic", "paired_diff", "slice_statistic", "summarize"]


@dataclass(frozen=True)
class _Slice:
    subset: str | None
    shift: str | None
    group_ids: IntArray


def _slices(groups: Sequence[ComparisonGroup]) -> list[_Slice]:
    out = [_Slice(None, None, np.arange(len(groups)))]
    subsets = sorted({g.subset for g in groups if g.subset is not None})
    if len(subsets) > 1:
        for s in subsets:
            out.append(_Slice(s, None, np.array([i for i, g in enumerate(groups) if g.subset == s])))
    if any(g.shift is not None for g in groups):
        for sh in sorted({g.shift or "none" for g in groups}):
            out.append(_Slice(None, sh, np.array([i for i, g in enumerate(groups) if (g.shift or "none") == sh])))
    return out


def summarize(task_name: str, groups: Sequence[ComparisonGroup], rewards: FloatArray, eps: Sequence[float],
              eps_unit: EpsUnit = "sigma", group_units: IntArray | None = None,
              extra_metrics: TaskScores | Mapping[str, ExtraMetric] | None = None,
              n_bootstrap: int = 1000, seed: int = 0, method: str = "weighted",
              progress: Callable[[int], Callable[[int], None]] | None = None,
              count_steps_from: int | None = COUNT_STEPS_FROM) -> list[MetricRecord]:
    """Every metric of the task, overall and per slice, with percentile bootstrap 95% CIs: per
    slice one record per entry of its statistic (:mod:`rmbench.results.statistics.slice_statistic`:
    every declared computed metric, per eps for D and Spec, and on the overall slice the task's
    own scores), then the shift gaps.

    ``method``: ``"weighted"`` computes each block of resamples from weights over pairs sorted
    once (:mod:`rmbench.core.weighted`); ``"resample"`` gathers every resample's pairs and calls
    the plain metric functions on them (the reference). Same draws, same records: bit-equal,
    but for reward_margin (and its shift gap), equal to float rounding (relative 1e-13).

    ``group_units``: bootstrap unit of each group (default: each group its own unit).
    ``extra_metrics``: task-level statistics of resampled units (e.g. ``ties_score``, or an
    official score with its subset scores), reported on the overall slice only.
    ``progress(total)``: called once with the resamples to run (``n_bootstrap`` x slices, the
    weighted method), it returns a callback advanced by each block's resamples.
    ``count_steps_from``: a step-level task with a solution of at least this many specificity
    pairs is summarized from counted pairs (:mod:`rmbench.results.statistics.step_statistic`:
    the same records, but length_correlation nan; None: always from the listed pairs).
    """
    rewards = M.check_reward_range(rewards)  # finite, and near enough for every gap to be finite
    sigma = M.reward_sigma(rewards)
    counted = counts_steps(groups, count_steps_from)
    index = discrimination_index(cast(Sequence[StepGroup], groups)) if counted else PairIndex.from_groups(groups)
    records: list[MetricRecord] = []
    extra_metrics = as_task_scores(extra_metrics, len(groups))
    slices = _slices(groups)
    advance = (progress(n_bootstrap * len(slices)) if progress is not None and n_bootstrap > 0 and _weighted(method)
               else None)
    for sl in slices:
        extras = extra_metrics if sl.subset is None and sl.shift is None else None
        stat = (step_slice_statistic(cast(Sequence[StepGroup], groups), rewards, eps, eps_unit, group_units, extras,
                                     sl.group_ids, index) if counted
                else slice_statistic(groups, rewards, eps, eps_unit, group_units, extras, sl.group_ids, index))
        point = stat.statistic(np.arange(stat.n_units))
        low, high = _ci(stat, n_bootstrap, seed, method, advance)
        if low.size == 0:
            low = high = np.full(point.size, np.nan)
        for j, entry in enumerate(stat.entries):
            e, unit = entry.eps, eps_unit if entry.eps is not None else None
            if entry.reached_at is not None:
                e, unit = _reached_eps(stat.reached_eps(point, entry), eps_unit, sigma), eps_unit
            ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
            # A task score (on the overall slice only) names its own subset; a computed metric takes its slice's.
            subset = entry.subset if entry.subset is not None else sl.subset
            records.append(MetricRecord(task_name, subset, sl.shift, entry.metric, e, unit,
                                        Estimate(float(point[j]), *ci), entry.n))
    records += _shift_gaps(task_name, groups, rewards, eps, eps_unit, index, n_bootstrap, seed, method)
    return records


def task_score_records(task_name: str, scores: TaskScores, units: IntArray, n_bootstrap: int = 1000,
                       seed: int = 0) -> list[MetricRecord]:
    """A task's own scores alone, with percentile bootstrap 95% CIs over its ``units`` (the unit
    of each group the scores were computed on): the records :func:`summarize` gives them on the
    overall slice, for scores over other groups than the pairs' (a step-level task counts a
    solution its judge named no step of, which the pairs leave out)."""
    uniq = np.unique(units)

    def statistic(drawn: IntArray) -> FloatArray:
        return np.asarray(scores.statistic(uniq[drawn]), dtype=np.float64)

    point = statistic(np.arange(len(uniq)))
    low, high = M.bootstrap_ci(statistic, len(uniq), n_bootstrap, seed)
    counts = scores.counts or (len(units),) * len(scores.labels)
    records = []
    for j, ((metric, subset), n) in enumerate(zip(scores.labels, counts)):
        ci = (None, None) if low.size == 0 or math.isnan(low[j]) else (float(low[j]), float(high[j]))
        records.append(MetricRecord(task_name, subset, None, metric, None, None, Estimate(float(point[j]), *ci), n))
    return records


def _weighted(method: str) -> bool:
    """Whether ``method`` (see :func:`summarize`) is the weighted bootstrap; an unknown one is an error."""
    if method not in ("weighted", "resample"):
        raise ValueError(f"unknown bootstrap method {method!r}: use 'weighted' or 'resample'")
    return method == "weighted"


def _ci(stat: SliceStatistic, n_bootstrap: int, seed: int, method: str,
        advance: Callable[[int], None] | None = None) -> tuple[FloatArray, FloatArray]:
    """The percentile bootstrap CI of every entry of ``stat``, by ``method`` (see :func:`summarize`):
    per entry j, the 2.5% and 97.5% quantiles of statistic_j over the resamples where it is not nan."""
    if _weighted(method):
        return M.bootstrap_ci_batched(stat.batch, stat.n_units, n_bootstrap, seed, block=stat.block, advance=advance)
    return M.bootstrap_ci(stat.statistic, stat.n_units, n_bootstrap, seed)


def _shift_gaps(task_name: str, groups: Sequence[ComparisonGroup], rewards: FloatArray, eps: Sequence[float],
                eps_unit: EpsUnit, index: PairIndex, n_bootstrap: int, seed: int,
                method: str = "weighted") -> list[MetricRecord]:
    """``METRIC_shift_gap`` for each metric declared with ``shift_gap``: metric on the shifted
    groups minus on their originals (``source_id``), with a paired bootstrap CI: each draw
    resamples originals and takes their shifted copies along."""
    position = {g.id: i for i, g in enumerate(groups)}
    origin = {i: position[g.source_id] for i, g in enumerate(groups)
              if g.shift is not None and g.source_id is not None and g.source_id in position}
    records = []
    for shift in sorted({s for i in origin if (s := groups[i].shift) is not None}):
        shifted = [i for i in origin if groups[i].shift == shift]
        units = np.zeros(len(groups), dtype=np.int64)
        originals: dict[int, int] = {}
        for i in shifted:
            o = origin[i]
            units[i] = units[o] = originals.setdefault(o, len(originals))
        a = slice_statistic(groups, rewards, eps, eps_unit, units, None, np.array(shifted), index)
        b = slice_statistic(groups, rewards, eps, eps_unit, units, None, np.array(sorted(originals)), index)
        diff, low, high = paired_diff(a, b, n_bootstrap, seed, method)
        for j, entry in enumerate(a.entries):
            if not entry.shift_gap:
                continue
            ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
            records.append(MetricRecord(task_name, None, shift, f"{entry.metric}{GAP_SUFFIX}", entry.eps,
                                        eps_unit if entry.eps is not None else None, Estimate(float(diff[j]), *ci),
                                        a.n_units))
    return records


def paired_diff(a: SliceStatistic, b: SliceStatistic, n_bootstrap: int, seed: int,
                method: str = "weighted") -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`rmbench.core.metrics.paired_bootstrap_diff` of two slice statistics on the same
    units, by ``method`` (see :func:`summarize`): diff = a(all units) - b(all units), CI the
    percentiles of a(draw) - b(draw) over the same draws."""
    batches = (a.batch, b.batch) if _weighted(method) else None
    diff, low, high = M.paired_bootstrap_diff(a.statistic, b.statistic, a.n_units, n_bootstrap, seed, batches=batches,
                                              block=min(a.block, b.block))
    return np.asarray(diff, dtype=np.float64), np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _reached_eps(raw: float | None, eps_unit: EpsUnit, sigma: float) -> float | None:
    """The raw eps a metric's value is reached at (balanced_best's) in the run's eps unit."""
    if raw is None or math.isnan(raw):
        return None
    if eps_unit == "sigma":
        return float(raw / sigma) if sigma > 0 else 0.0
    return float(raw)
