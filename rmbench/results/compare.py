"""Paired comparison of two runs on the same task: A - B for every metric, with a paired
bootstrap CI (both models see the same resampled groups, so shared item difficulty cancels).

Rewards come from each run's rewards.jsonl; the groups are reloaded from the task spec the run
recorded and checked against its data fingerprint (:mod:`rmbench.results.reload`), so no model is
needed. Runs with different eps lists are compared at the eps values both have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from rmbench.errors import ConfigError
from rmbench.results.folder import RunFolder
from rmbench.results.record import Estimate, eps_text
from rmbench.results.reload import aligned_rewards, reload_task
from rmbench.results.summary import paired_diff, slice_statistic
from rmbench.tasks.loading import DataOverride


@dataclass(frozen=True)
class Comparison:
    task: str
    metric: str
    subset: str | None
    eps: float | None
    eps_unit: str | None
    value_a: float
    value_b: float
    difference: Estimate
    n_units: int

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
    if n_bootstrap < 0:
        raise ConfigError(f"--bootstrap must be a whole number >= 0 (0: no CIs), got {n_bootstrap}")
    a, b = run_a.record, run_b.record
    names = list(tasks) or [n for n in a.task_names if b.has_task(n)]
    if not names:
        raise ConfigError(f"{run_a.path} ({', '.join(a.task_names)}) and {run_b.path} ({', '.join(b.task_names)}) "
                          f"share no task")
    rewards_a, rewards_b = run_a.rewards(), run_b.rewards()
    out: list[Comparison] = []
    for name in names:
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
        td = reload_task(ta, a.config.limit, data, a.config.limit_sampling)
        units = td.task.bootstrap_units(td.groups)
        stats = []
        for folder, rows in ((run_a, rewards_a), (run_b, rewards_b)):
            rewards = aligned_rewards(folder, name, td.groups, rows)
            stats.append(slice_statistic(td.groups, rewards, eps, ta.eps_unit, units,
                                         td.task.extra_metrics(td.groups, rewards)))
        sa, sb = stats
        full = np.arange(sa.n_units)
        va, vb = sa.statistic(full), sb.statistic(full)
        diff, low, high = paired_diff(sa, sb, n_bootstrap, seed)
        for j, (metric, e, subset) in enumerate(sa.labels):
            ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
            out.append(Comparison(name, metric, subset, e, ta.eps_unit if e is not None else None, float(va[j]),
                                  float(vb[j]), Estimate(float(diff[j]), *ci), sa.n_units))
    return out
