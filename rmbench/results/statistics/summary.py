"""From a scored task (groups + one reward per response) to metric records with bootstrap CIs.

Rewards are pooled over all pairs of the task, and again per subset (when a task has more
than one) and per shift (when any group is shifted; unshifted groups form the ``none`` slice).
sigma, the unit of sigma-scaled eps, is the sample standard deviation (ddof=1) of all rewards
the model gave in the task; the bootstrap resamples units (groups, or the task's clusters of
groups) and holds sigma at that value, so every slice and resample shares one eps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from rmbench.core import metrics as M
from rmbench.core import metrics_bias as MB
from rmbench.core import weighted as W
from rmbench.core.choices import EpsUnit
from rmbench.core.metric_registry import metric_def
from rmbench.core.types import ComparisonGroup, PairIndex, segment_gather, segment_starts
from rmbench.results.storage.record import Estimate, MetricRecord
from rmbench.tasks.base import TaskScores, as_task_scores

PAIR_METRICS = ("pairwise_accuracy", "sign_accuracy", "ds_auc", "balanced_best", "reward_margin")
EPS_METRICS = ("discrimination", "specificity")
LENGTH_METRICS = ("length_correlation", "accuracy_longer_better", "accuracy_shorter_better", "length_bias_gap")
"""Length bias, on every task: reward vs length over specificity pairs, accuracy by which answer is longer."""
FORM_EPS_METRICS = ("rewrite_specificity", "within_form_discrimination", "cross_form_discrimination",
                    "cross_form_gap")
"""On tasks whose groups hold rewrites (:attr:`ComparisonGroup.forms`), at every eps."""
FORM_METRICS = ("preference_flip_rate",)
COMPUTED = PAIR_METRICS + EPS_METRICS + LENGTH_METRICS + FORM_EPS_METRICS + FORM_METRICS
"""Metrics the summary computes from pairs (the rest are a task's own scores)."""
GAP_METRICS = ("pairwise_accuracy", "discrimination", "specificity", "reward_margin")


@dataclass(frozen=True)
class _Slice:
    subset: str | None
    shift: str | None
    group_ids: np.ndarray


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


@dataclass(frozen=True)
class SliceStatistic:
    """All metrics of one slice as a vector-valued function of resampled units.

    ``labels[j]`` = (metric, eps as given or None, subset of a task score or None) for entry j
    of ``statistic(units)``; the last entry is balanced_best's raw eps. ``n_units`` units are
    drawn by the bootstrap. ``extra_counts``: the ``n`` of each task score.
    """

    labels: tuple[tuple[str, float | None, str | None], ...]
    statistic: Callable[[np.ndarray], np.ndarray]
    n_units: int
    n_diff: int
    n_eq: int
    extra_counts: tuple[int, ...] = ()
    pair_counts: tuple[tuple[str, int], ...] = ()
    """``n`` by what a metric counts (``metric_def(m).n_counts`` with ``_`` for spaces)."""
    batch: Callable[[np.ndarray], np.ndarray] | None = None
    """The same vector for a block of resamples: ``batch(draws)`` (resamples x ``n_units`` unit
    draws) -> resamples x values, computed from resample weights (:mod:`rmbench.core.weighted`)."""
    block: int = 64
    """Resamples per ``batch`` call: resamples x (pairs + units) <= 2,000,000 bounds its memory."""


def _pair_counts(whole: PairIndex) -> tuple[tuple[str, int], ...]:
    n_diff, n_eq = len(whole.diff_better), len(whole.eq_a)
    cross, n_cross_eq = int(whole.diff_cross.sum()), int(whole.eq_cross.sum())
    return (("discrimination_pairs", n_diff), ("specificity_pairs", n_eq), ("all_pairs", n_diff + n_eq),
            ("cross-form_specificity_pairs", n_cross_eq), ("within-form_discrimination_pairs", n_diff - cross),
            ("cross-form_discrimination_pairs", cross), ("rewritten_discrimination_pairs", len(whole.flip_a)))


def _length_values(sub: PairIndex, diff: np.ndarray, eq: np.ndarray) -> list[float]:
    """length_correlation, accuracy_longer_better, accuracy_shorter_better, length_bias_gap of one resample."""
    length = sub.response_length
    longer, shorter = MB.accuracy_by_length(diff, length[sub.diff_better] - length[sub.diff_worse])
    return [MB.length_correlation(eq, length[sub.eq_a] - length[sub.eq_b]), longer, shorter, longer - shorter]


def _form_values(r: np.ndarray, sub: PairIndex, diff: np.ndarray, eq: np.ndarray,
                 eps_raw: Sequence[float]) -> list[float]:
    """The rewrite metrics of one resample: per eps Spec over (answer, its rewrite) pairs, D
    within a form and across forms and their gap (cross - within); then the flip rate."""
    eq_cross, d_cross, d_within = eq[sub.eq_cross], diff[sub.diff_cross], diff[~sub.diff_cross]
    spec = [M.specificity(eq_cross, e) for e in eps_raw]
    within = [M.discrimination(d_within, e) for e in eps_raw]
    cross = [M.discrimination(d_cross, e) for e in eps_raw]
    flips = MB.preference_flip_rate(r[sub.flip_a] - r[sub.flip_b], r[sub.flip_oa] - r[sub.flip_ob])
    return spec + within + cross + [c - w for c, w in zip(cross, within)] + [flips]


def slice_statistic(groups: Sequence[ComparisonGroup], rewards: np.ndarray, eps: Sequence[float],
                    eps_unit: EpsUnit = "sigma", group_units: np.ndarray | None = None,
                    extra_metrics: TaskScores | None = None,
                    group_ids: np.ndarray | None = None, index: PairIndex | None = None) -> SliceStatistic:
    """The metric vector of the groups ``group_ids`` (default: all), ready to bootstrap.

    sigma is taken over all of ``rewards`` (the whole task), whatever the slice.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
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

    def statistic(units: np.ndarray) -> np.ndarray:
        gids = group_ids[by_unit[segment_gather(unit_sizes, units, unit_starts)[0]]]
        sub = index.select_groups(gids)
        r = rewards[sub.response_source]
        diff = r[sub.diff_better] - r[sub.diff_worse]
        eq = r[sub.eq_a] - r[sub.eq_b]
        bb, bb_eps = M.balanced_best(diff, eq)
        values = [M.pairwise_accuracy(diff), M.sign_accuracy(diff, eq), M.ds_auc(diff, eq), bb,
                  M.reward_margin(diff, sigma)]
        values += [M.discrimination(diff, e) for e in eps_raw] + [M.specificity(eq, e) for e in eps_raw]
        values += _length_values(sub, diff, eq) + (_form_values(r, sub, diff, eq, eps_raw) if forms else [])
        # Task scores receive the task's own unit numbers of the resampled units.
        extra = list(np.asarray(extras.statistic(uniq[units]), dtype=np.float64)) if extras is not None else []
        return np.array(values + extra + [bb_eps], dtype=np.float64)

    whole = index.select_groups(group_ids)
    batch = _weighted_batch(whole, rewards, eps_raw, sigma, slice_units, uniq, extras, forms)
    labels = ([(m, None, None) for m in PAIR_METRICS] + [("discrimination", float(e), None) for e in eps]
              + [("specificity", float(e), None) for e in eps] + [(m, None, None) for m in LENGTH_METRICS]
              + ([(m, float(e), None) for m in FORM_EPS_METRICS for e in eps] + [(m, None, None) for m in FORM_METRICS]
                 if forms else [])
              + [(name, None, subset) for name, subset in (extras.labels if extras is not None else ())])
    counts = tuple(extras.counts or (len(group_ids),) * len(extras.labels)) if extras is not None else ()
    n_pairs = len(whole.diff_better) + len(whole.eq_a)
    return SliceStatistic(tuple(labels), statistic, len(uniq), len(whole.diff_better), len(whole.eq_a), counts,
                          _pair_counts(whole), batch, max(1, min(256, 2_000_000 // max(1, n_pairs + len(uniq)))))


def _weighted_batch(whole: PairIndex, rewards: np.ndarray, eps_raw: Sequence[float], sigma: float,
                    slice_units: np.ndarray, uniq: np.ndarray, extras: TaskScores | None, forms: bool):
    """``batch(draws)`` of :class:`SliceStatistic`: group weights w_g = c_unit(g) (c: how often each
    unit is drawn) into :class:`rmbench.core.weighted.WeightedSlice`, whose pairs are this
    slice's (``whole``) sorted once; task scores still receive each resample's drawn units.
    ``forms``: whether the task (not only this slice) has rewrites, as in the plain statistic."""
    r = rewards[whole.response_source]
    length = whole.response_length
    form_pairs = None
    if forms:
        form_pairs = W.FormPairs(whole.diff_cross, whole.eq_cross, r[whole.flip_a] - r[whole.flip_b],
                                 r[whole.flip_oa] - r[whole.flip_ob], whole.flip_group)
    ws = W.WeightedSlice(slice_units, len(uniq), r[whole.diff_better] - r[whole.diff_worse], whole.diff_group,
                         length[whole.diff_better] - length[whole.diff_worse], r[whole.eq_a] - r[whole.eq_b],
                         whole.eq_group, length[whole.eq_a] - length[whole.eq_b], eps_raw, sigma, form_pairs)
    n_units = len(uniq)

    def batch(draws: np.ndarray) -> np.ndarray:
        values = ws.values(W.unit_counts(draws, n_units))
        cols = [values[:, :-1]]
        if extras is not None:
            cols.append(np.array([np.asarray(extras.statistic(uniq[u]), dtype=np.float64) for u in draws])
                        .reshape(len(draws), -1))
        return np.concatenate(cols + [values[:, -1:]], axis=1)

    return batch


def summarize(task_name: str, groups: Sequence[ComparisonGroup], rewards: np.ndarray, eps: Sequence[float],
              eps_unit: EpsUnit = "sigma", group_units: np.ndarray | None = None,
              extra_metrics: TaskScores | None = None,
              n_bootstrap: int = 1000, seed: int = 0, method: str = "weighted") -> list[MetricRecord]:
    """Every metric of the task, overall and per slice, with percentile bootstrap 95% CIs.

    ``method``: ``"weighted"`` computes each block of resamples from weights over pairs sorted
    once (:mod:`rmbench.core.weighted`); ``"resample"`` gathers every resample's pairs and calls
    the plain metric functions on them (the reference). Same draws, same records: bit-equal,
    but for reward_margin (and its shift gap), equal to float rounding (relative 1e-13).

    ``group_units``: bootstrap unit of each group (default: each group its own unit).
    ``extra_metrics``: task-level statistics of resampled units (e.g. ``ties_score``, or an
    official score with its subset scores), reported on the overall slice only.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    sigma = M.reward_sigma(rewards)
    index = PairIndex.from_groups(groups)
    records: list[MetricRecord] = []
    extra_metrics = as_task_scores(extra_metrics, len(groups))
    for sl in _slices(groups):
        extras = extra_metrics if sl.subset is None and sl.shift is None else None
        stat = slice_statistic(groups, rewards, eps, eps_unit, group_units, extras, sl.group_ids, index)
        point = stat.statistic(np.arange(stat.n_units))
        low, high = _ci(stat, n_bootstrap, seed, method)
        if low.size == 0:
            low = high = np.full(point.size, np.nan)
        n_pairs = dict(stat.pair_counts)
        n_extra = iter(stat.extra_counts)
        for j, (metric, e, subset) in enumerate(stat.labels):
            unit = eps_unit if e is not None else None
            if metric == "balanced_best":
                e, unit = _balanced_eps(point[-1], eps_unit, sigma), eps_unit
            counted = metric_def(metric).n_counts.replace(" ", "_")
            is_extra = metric not in COMPUTED
            n = next(n_extra) if is_extra else n_pairs.get(counted, len(sl.group_ids))
            ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
            records.append(MetricRecord(task_name, subset if is_extra else sl.subset, sl.shift, metric, e, unit,
                                        Estimate(float(point[j]), *ci), n))
    records += _shift_gaps(task_name, groups, rewards, eps, eps_unit, index, n_bootstrap, seed, method)
    return records


def _weighted(method: str) -> bool:
    """Whether ``method`` (see :func:`summarize`) is the weighted bootstrap; an unknown one is an error."""
    if method not in ("weighted", "resample"):
        raise ValueError(f"unknown bootstrap method {method!r}: use 'weighted' or 'resample'")
    return method == "weighted"


def _ci(stat: SliceStatistic, n_bootstrap: int, seed: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """The percentile bootstrap CI of every entry of ``stat``, by ``method`` (see :func:`summarize`):
    per entry j, the 2.5% and 97.5% quantiles of statistic_j over the resamples where it is not nan."""
    if _weighted(method):
        return M.bootstrap_ci_batched(stat.batch, stat.n_units, n_bootstrap, seed, block=stat.block)
    return M.bootstrap_ci(stat.statistic, stat.n_units, n_bootstrap, seed)


def _shift_gaps(task_name: str, groups: Sequence[ComparisonGroup], rewards: np.ndarray, eps: Sequence[float],
                eps_unit: EpsUnit, index: PairIndex, n_bootstrap: int, seed: int,
                method: str = "weighted") -> list[MetricRecord]:
    """``METRIC_shift_gap``: metric on the shifted groups minus on their originals (``source_id``),
    with a paired bootstrap CI: each draw resamples originals and takes their shifted copies along."""
    position = {g.id: i for i, g in enumerate(groups)}
    records = []
    for shift in sorted({g.shift for g in groups if g.shift is not None and g.source_id in position}):
        shifted = [i for i, g in enumerate(groups) if g.shift == shift and g.source_id in position]
        units = np.zeros(len(groups), dtype=np.int64)
        originals: dict[int, int] = {}
        for i in shifted:
            o = position[groups[i].source_id]
            units[i] = units[o] = originals.setdefault(o, len(originals))
        a = slice_statistic(groups, rewards, eps, eps_unit, units, None, np.array(shifted), index)
        b = slice_statistic(groups, rewards, eps, eps_unit, units, None, np.array(sorted(originals)), index)
        diff, low, high = paired_diff(a, b, n_bootstrap, seed, method)
        for j, (metric, e, _) in enumerate(a.labels):
            if metric not in GAP_METRICS:
                continue
            ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
            records.append(MetricRecord(task_name, None, shift, f"{metric}_shift_gap", e,
                                        eps_unit if e is not None else None, Estimate(float(diff[j]), *ci),
                                        a.n_units))
    return records


def paired_diff(a: SliceStatistic, b: SliceStatistic, n_bootstrap: int, seed: int, method: str = "weighted"):
    """:func:`rmbench.core.metrics.paired_bootstrap_diff` of two slice statistics on the same
    units, by ``method`` (see :func:`summarize`): diff = a(all units) - b(all units), CI the
    percentiles of a(draw) - b(draw) over the same draws."""
    batches = (a.batch, b.batch) if _weighted(method) else None
    return M.paired_bootstrap_diff(a.statistic, b.statistic, a.n_units, n_bootstrap, seed, batches=batches,
                                   block=min(a.block, b.block))


def _balanced_eps(raw: float, eps_unit: EpsUnit, sigma: float) -> float | None:
    """balanced_best's raw eps expressed in the run's eps unit."""
    if math.isnan(raw):
        return None
    if eps_unit == "sigma":
        return float(raw / sigma) if sigma > 0 else 0.0
    return float(raw)
