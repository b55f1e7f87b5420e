"""Paired comparison of two runs on the same task: A - B for every metric, with a paired
bootstrap CI (both models see the same resampled groups, so shared item difficulty cancels).

Rewards come from each run's rewards.jsonl; the groups are reloaded from the task spec the run
recorded and checked against its data fingerprint (:mod:`rmbench.results.storage.reload`), so no model is
needed. Runs with different eps lists are compared at the eps values both have.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from rmbench.core import metrics as M
from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.choices import EpsUnit
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import PairIndex
from rmbench.errors import ConfigError
from rmbench.results.statistics.slice_statistic import SliceStatistic, slice_statistic
from rmbench.results.statistics.step_statistic import counts_steps, step_slice_statistic
from rmbench.results.statistics.summary import paired_diff
from rmbench.results.storage.folder import RewardRow, RunFolder
from rmbench.results.storage.record import Estimate, eps_text
from rmbench.results.storage.reload import TaskData, aligned_rewards, reload_task, scored_as_recorded
from rmbench.tasks.loading import DataOverride


@dataclass(frozen=True)
class Comparison:
    task: str
    metric: str
    subset: str | None
    eps: float | None
    eps_unit: EpsUnit | None
    value_a: float
    value_b: float
    difference: Estimate
    n_units: int
    shift: str | None = None
    """The shift slice (``none``: the originals, or a domain shift's in-domain set); None: the
    whole task. Metric ``..._shift_gap``: the slice's value minus the originals', per run."""

    @property
    def diff(self) -> float:
        return self.difference.value

    @property
    def ci_low(self) -> float:
        return math.nan if self.difference.ci_low is None else self.difference.ci_low

    @property
    def ci_high(self) -> float:
        return math.nan if self.difference.ci_high is None else self.difference.ci_high


def shared_eps(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    return tuple(e for e in a if any(math.isclose(e, f, abs_tol=1e-12) for f in b))


def compare_runs(run_a: RunFolder, run_b: RunFolder, tasks: Sequence[str] = (),
                 data: Mapping[str, DataOverride | str] | None = None, n_bootstrap: int = 1000,
                 seed: int = 0) -> list[Comparison]:
    """A - B for every pooled metric of every task both runs share (or of ``tasks``)."""
    check_bootstrap(n_bootstrap)
    a, b = run_a.record, run_b.record
    names = list(tasks) or [n for n in a.task_names if b.has_task(n)]
    if not names:
        raise ConfigError(f"{run_a.path} ({', '.join(a.task_names)}) and {run_b.path} ({', '.join(b.task_names)}) "
                          f"share no task")
    rewards_a, rewards_b = run_a.rewards(), run_b.rewards()
    out: list[Comparison] = []
    for name in names:
        out += compare_task(paired_task(run_a, run_b, name, data, (rewards_a, rewards_b)), n_bootstrap, seed)
    return out


def check_bootstrap(n_bootstrap: int) -> None:
    if n_bootstrap < 0:
        raise ConfigError(f"--bootstrap must be a whole number >= 0 (0: no CIs), got {n_bootstrap}")


@dataclass(frozen=True)
class PairedTask:
    """One task of two runs, as both runs' metrics saw it: the reloaded groups (without the
    responses either run gave no reward) and each run's rewards for them, in group order."""

    name: str
    data: TaskData
    rewards_a: FloatArray
    rewards_b: FloatArray
    eps: tuple[float, ...]
    """The eps both runs have."""


def paired_task(run_a: RunFolder, run_b: RunFolder, name: str, data: Mapping[str, DataOverride | str] | None = None,
                rows: tuple[Sequence[RewardRow], Sequence[RewardRow]] | None = None) -> PairedTask:
    """Task ``name`` of both runs, checked comparable (same task key, an eps in common) and reloaded
    once from A's record (``data``: files moved since; ``rows``: both runs' reward rows, if read)."""
    a, b = run_a.record, run_b.record
    if not (a.has_task(name) and b.has_task(name)):
        raise ConfigError(f"task {name!r} is not in both runs")
    ta, tb = a.task(name), b.task(name)
    if ta.task_key != tb.task_key:
        raise ConfigError(f"task {name!r}: the runs are not comparable ({'; '.join(ta.differences(tb))}); "
                          f"rerun them on the same task version and data")
    eps = shared_eps(ta.eps, tb.eps)
    if not eps:
        raise ConfigError(f"task {name!r}: the runs share no eps (A: {eps_text(ta.eps)}, B: {eps_text(tb.eps)}); "
                          f"rerun one with --eps {eps_text(ta.eps)}")
    rows_a, rows_b = rows if rows is not None else (run_a.rewards(), run_b.rewards())
    td = reload_task(ta, a.config.limit, data, a.config.limit_sampling)
    rewards = [aligned_rewards(folder, name, td.groups, r) for folder, r in ((run_a, rows_a), (run_b, rows_b))]
    # A response either run's judge gave no reward (an unparsed answer) is left out of both.
    scored = scored_as_recorded([ta, tb], td.groups, rewards[0] + 0 * rewards[1])
    td = dataclasses.replace(td, groups=scored.groups)
    return PairedTask(name, td, rewards[0][scored.kept], rewards[1][scored.kept], eps)


def compare_task(paired: PairedTask, n_bootstrap: int = 1000, seed: int = 0) -> list[Comparison]:
    """A - B for every pooled metric of one paired task (whole task, then each shift slice)."""
    td, name, eps, eps_unit = paired.data, paired.name, paired.eps, paired.data.result.eps_unit
    rewards = [paired.rewards_a, paired.rewards_b]
    units = td.task.bootstrap_units(td.groups)
    if counts_steps(td.groups):  # a long solution's step pairs counted, as its run's summary did
        steps = cast(Sequence[StepGroup], td.groups)
        stats = [step_slice_statistic(steps, r, eps, eps_unit, units, td.task.extra_metrics(td.groups, r))
                 for r in rewards]
        return _rows(name, None, stats[0], stats[1], eps_unit, n_bootstrap, seed)
    index = PairIndex.from_groups(td.groups)  # one index for the whole task and every slice
    stats = [slice_statistic(td.groups, r, eps, eps_unit, units, td.task.extra_metrics(td.groups, r),
                             index=index) for r in rewards]
    return (_rows(name, None, stats[0], stats[1], eps_unit, n_bootstrap, seed)
            + _shift_rows(name, td, units, index, rewards, eps, eps_unit, n_bootstrap, seed))


SLICE_METRICS = ("pairwise_accuracy", "discrimination", "specificity", "reward_margin")
"""What ``compare`` reports for each shift slice (the whole task reports every metric)."""


def _rows(name: str, shift: str | None, sa: SliceStatistic, sb: SliceStatistic, eps_unit: EpsUnit, n_bootstrap: int,
          seed: int,
          only: Sequence[str] | None = None) -> list[Comparison]:
    full = np.arange(sa.n_units)
    va, vb = sa.statistic(full), sb.statistic(full)
    diff, low, high = paired_diff(sa, sb, n_bootstrap, seed)
    out = []
    for j, (metric, e, subset) in enumerate(sa.labels):
        if only is not None and (metric not in only or subset is not None):
            continue
        ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
        out.append(Comparison(name, metric, subset, e, eps_unit if e is not None else None, float(va[j]),
                              float(vb[j]), Estimate(float(diff[j]), *ci), sa.n_units, shift))
    return out


def _shift_rows(name: str, td: TaskData, units: IntArray, index: PairIndex, rewards: list[FloatArray],
                eps: Sequence[float], eps_unit: EpsUnit, n_bootstrap: int, seed: int) -> list[Comparison]:
    """A - B on each shift slice of the task (sigma pooled over the whole task, as the run's own
    slices), and, where a slice's groups pair one to one with the originals' (the same
    bootstrap units: a paraphrase or a translation of each), A's gap minus B's gap, the slice's
    pairwise accuracy minus the originals', with a paired CI over the same draws."""
    shifts = {g.shift for g in td.groups}
    if shifts == {None}:
        return []
    domain = td.result.kind == "domain_shift"
    out: list[Comparison] = []
    slices = {}
    for shift in sorted(shifts, key=lambda s: (s is not None, s or "")):
        ids = np.array([i for i, g in enumerate(td.groups) if g.shift == shift], dtype=np.int64)
        label = "none" if shift is None else shift
        if domain and shift is None:
            label = f"in-domain ({td.result.args.get('in_domain', 'chat')})"
        stats = [slice_statistic(td.groups, r, eps, eps_unit, units, group_ids=ids, index=index) for r in rewards]
        slices[shift] = (np.unique(units[ids]), stats)
        out += _rows(name, label, stats[0], stats[1], eps_unit, n_bootstrap, seed, SLICE_METRICS)
    if domain or None not in slices:
        return out
    base_units, base = slices[None]
    acc = next(j for j, (m, _, s) in enumerate(base[0].labels) if m == "pairwise_accuracy" and s is None)
    for shift, (shift_units, stats) in slices.items():
        if shift is None or not np.array_equal(shift_units, base_units):
            continue
        gaps = [_GapStatistic(stats[k], base[k], acc) for k in (0, 1)]
        batched = all(g.shifted.batch is not None and g.original.batch is not None for g in gaps)
        diff, low, high = (np.atleast_1d(v) for v in M.paired_bootstrap_diff(
            gaps[0], gaps[1], base[0].n_units, n_bootstrap, seed,
            batches=(gaps[0].batch, gaps[1].batch) if batched else None, block=min(base[0].block, stats[0].block)))
        full = np.arange(base[0].n_units)
        ci = (None, None) if math.isnan(low[0]) else (float(low[0]), float(high[0]))
        out.append(Comparison(name, "pairwise_accuracy_shift_gap", None, None, None, float(gaps[0](full)[0]),
                              float(gaps[1](full)[0]), Estimate(float(diff[0]), *ci), base[0].n_units, shift))
    return out


class _GapStatistic:
    """A run's paired gap as a function of unit draws: the slice's accuracy minus the originals'."""

    def __init__(self, shifted: SliceStatistic, original: SliceStatistic, j: int) -> None:
        self.shifted, self.original, self.j = shifted, original, j

    def __call__(self, units: IntArray) -> FloatArray:
        return np.array([self.shifted.statistic(units)[self.j] - self.original.statistic(units)[self.j]])

    def batch(self, draws: IntArray) -> FloatArray:
        """The gap for a block of draws (resamples x units) -> resamples x 1."""
        return (self.shifted.batch(draws)[:, self.j] - self.original.batch(draws)[:, self.j])[:, None]
