"""Paired comparison of two runs on the same task: A - B for every metric, with a paired
bootstrap CI (both models see the same resampled groups, so shared item difficulty cancels).

Rewards come from each run's rewards.jsonl; the groups are reloaded from the task spec the run
recorded and checked against its data fingerprint, so no model is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from rmbench import metrics as M
from rmbench.catalog import load_catalog
from rmbench.errors import ConfigError, DataError
from rmbench.record import LoadedRun, load_rewards
from rmbench.runner import load_groups, load_groups_skipping, task_spec_with_data
from rmbench.summary import slice_statistic
from rmbench.types import Spec, data_fingerprint


@dataclass(frozen=True)
class Comparison:
    task: str
    metric: str
    eps: float | None
    eps_unit: str | None
    value_a: float
    value_b: float
    diff: float
    ci_low: float
    ci_high: float
    n_units: int


def _aligned_rewards(run: LoadedRun, task: str, groups) -> np.ndarray:
    by_key = {(r.group_id, r.response_index): r.reward for r in load_rewards(run.path.parent) if r.task == task}
    try:
        return np.array([by_key[(g.id, i)] for g in groups for i in range(len(g.responses))])
    except KeyError as exc:
        raise DataError(f"{run.path.parent}/rewards.jsonl has no reward for task {task!r}, group/response {exc}") from None


def compare_runs(run_a: LoadedRun, run_b: LoadedRun, tasks: Sequence[str] = (), data: Mapping[str, str] | None = None,
                 n_bootstrap: int = 1000, seed: int = 0) -> list[Comparison]:
    """A - B for every pooled metric of every task both runs share (or of ``tasks``)."""
    data = dict(data or {})
    names_a = [t["name"] for t in run_a.results["tasks"]]
    names = list(tasks) or [n for n in names_a if run_b.task(n) is not None]
    if not names:
        raise ConfigError(f"{run_a.path} and {run_b.path} share no task")
    out: list[Comparison] = []
    for name in names:
        ta, tb = run_a.task(name), run_b.task(name)
        if ta is None or tb is None:
            raise ConfigError(f"task {name!r} is not in both runs")
        if ta["comparability_key"] != tb["comparability_key"]:
            raise ConfigError(f"task {name!r}: the runs are not comparable (different task version, data, "
                              f"metric version or eps); rerun them with the same settings")
        spec = Spec.make(name, ta["kind"], ta["args"], ta["version"])
        if name in data:
            spec = task_spec_with_data(spec, data[name])
        limit = run_a.results["config"].get("limit")
        # A run that left out bad rows (--skip-bad-rows) is reloaded the same way; the
        # fingerprint check below makes sure the same rows were left out.
        skip = bool((ta.get("skipped_rows") or {}).get("count"))
        load = (lambda s, n: load_groups_skipping(s, n)[:2]) if skip else load_groups
        try:
            task, groups = load(spec, limit)
        except DataError:
            catalog = load_catalog()
            if name in data or name not in catalog.tasks:
                raise
            # A built-in task recorded with another install's path: use this install's copy
            # (the fingerprint check below makes sure it is the same data).
            spec = catalog.task_spec(name)
            task, groups = load(spec, limit)
        if data_fingerprint(groups) != ta["data_fingerprint"]:
            raise DataError(f"task {name!r}: the data at {spec.args_dict.get('path') or spec.args_dict.get('dataset')} "
                            f"is not the data the runs used (fingerprint differs); pass that file with --data {name}=PATH")
        cfg = run_a.results["config"]
        units = task.bootstrap_units(groups)
        stats = []
        for run in (run_a, run_b):
            rewards = _aligned_rewards(run, name, groups)
            stats.append(slice_statistic(groups, rewards, cfg["eps"], cfg["eps_unit"], units,
                                         task.extra_metrics(groups, rewards)))
        sa, sb = stats
        full = np.arange(sa.n_units)
        va, vb = sa.statistic(full), sb.statistic(full)
        diff, low, high = M.paired_bootstrap_diff(sa.statistic, sb.statistic, sa.n_units, n_bootstrap, seed)
        for j, (metric, e) in enumerate(sa.labels):
            out.append(Comparison(name, metric, e, cfg["eps_unit"] if e is not None else None, float(va[j]),
                                  float(vb[j]), float(diff[j]), float(low[j]), float(high[j]), sa.n_units))
    return out
