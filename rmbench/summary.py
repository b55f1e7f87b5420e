"""From a scored task (groups + one reward per response) to metric records with bootstrap CIs.

Rewards are pooled over all pairs of the task, and again per subset (when a task has more
than one) and per shift (when any group is shifted; unshifted groups form the ``none`` slice).
sigma, the unit of sigma-scaled eps, is the sample standard deviation (ddof=1) of all rewards
the model gave in the task; the bootstrap resamples units (groups, or the task's clusters of
groups) and holds sigma at that value, so every slice and resample shares one eps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np

from rmbench import metrics as M
from rmbench.types import ComparisonGroup, PairIndex

PAIR_METRICS = ("pairwise_accuracy", "sign_accuracy", "ds_auc", "balanced_best", "reward_margin")
EPS_METRICS = ("discrimination", "specificity")


@dataclass(frozen=True)
class MetricRecord:
    """One reported number; the ``metrics`` list of results.json holds these."""

    task: str
    subset: str | None
    shift: str | None
    metric: str
    eps: float | None
    eps_unit: str | None
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_json(self) -> dict:
        out = asdict(self)
        for k in ("value", "ci_low", "ci_high"):
            if out[k] is not None and not math.isfinite(out[k]):
                out[k] = None  # JSON has no nan; null means "not defined here"
        return out

    @classmethod
    def from_json(cls, d: dict) -> "MetricRecord":
        value = d["value"]
        return cls(d["task"], d["subset"], d["shift"], d["metric"], d["eps"], d["eps_unit"],
                   math.nan if value is None else float(value), d["ci_low"], d["ci_high"], int(d["n"]))


def _expand_units(units: np.ndarray, group_unit: np.ndarray) -> np.ndarray:
    """Group numbers of the given (possibly repeated) units, unit by unit."""
    order = np.argsort(group_unit, kind="stable")
    counts = np.bincount(group_unit, minlength=int(group_unit.max()) + 1 if group_unit.size else 0)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    c = counts[units]
    within = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
    return order[np.repeat(starts[units], c) + within]


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


def summarize(task_name: str, groups: Sequence[ComparisonGroup], rewards: np.ndarray, eps: Sequence[float],
              eps_unit: str = "sigma", group_units: np.ndarray | None = None,
              extra_metrics: dict[str, Callable[[np.ndarray], float]] | None = None,
              n_bootstrap: int = 1000, seed: int = 0) -> list[MetricRecord]:
    """Every metric of the task, overall and per slice, with percentile bootstrap 95% CIs.

    ``group_units``: bootstrap unit of each group (default: each group its own unit).
    ``extra_metrics``: task-level statistics of resampled units (e.g. ``ties_score``),
    reported on the overall slice only.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    sigma = M.reward_sigma(rewards)
    eps_raw = [M.raw_eps(e, eps_unit, sigma) for e in eps]
    units_all = np.arange(len(groups)) if group_units is None else np.asarray(group_units, dtype=np.int64)
    extra_metrics = extra_metrics or {}
    index = PairIndex.from_groups(groups)
    records: list[MetricRecord] = []

    for sl in _slices(groups):
        # Renumber this slice's units 0..k-1 so that the bootstrap can draw them.
        slice_units_raw = units_all[sl.group_ids]
        uniq, slice_units = np.unique(slice_units_raw, return_inverse=True)
        extras = extra_metrics if sl.subset is None and sl.shift is None else {}

        def statistic(units: np.ndarray, sl=sl, slice_units=slice_units, extras=extras) -> np.ndarray:
            gids = sl.group_ids[_expand_units(units, slice_units)]
            sub = index.select_groups(gids)
            r = index.gather_rewards(rewards, gids)
            diff = r[sub.diff_better] - r[sub.diff_worse]
            eq = r[sub.eq_a] - r[sub.eq_b]
            bb, bb_eps = M.balanced_best(diff, eq)
            values = [M.pairwise_accuracy(diff), M.sign_accuracy(diff, eq), M.ds_auc(diff, eq), bb,
                      M.reward_margin(diff, sigma)]
            values += [M.discrimination(diff, e) for e in eps_raw] + [M.specificity(eq, e) for e in eps_raw]
            # Extra metrics receive the original unit numbers of the resampled units.
            values += [fn(uniq[units]) for fn in extras.values()]
            return np.array(values + [bb_eps], dtype=np.float64)

        point = statistic(np.arange(len(uniq)))
        low, high = M.bootstrap_ci(statistic, len(uniq), n_bootstrap, seed)
        if low.size == 0:
            low = high = np.full(point.size, np.nan)
        sub = index.select_groups(sl.group_ids)
        n_diff, n_eq = len(sub.diff_better), len(sub.eq_a)
        n_rows = {"pairwise_accuracy": n_diff, "sign_accuracy": n_diff + n_eq, "ds_auc": n_diff + n_eq,
                  "balanced_best": n_diff + n_eq, "reward_margin": n_diff}

        def add(j: int, metric: str, e: float | None, unit: str | None, n: int) -> None:
            ci = (None, None) if math.isnan(low[j]) else (float(low[j]), float(high[j]))
            records.append(MetricRecord(task_name, sl.subset, sl.shift, metric, e, unit, float(point[j]), *ci, n))

        j = 0
        for metric in PAIR_METRICS:
            if metric == "balanced_best":
                bb_eps_raw = point[-1]
                if math.isnan(bb_eps_raw):
                    bb_eps = None
                elif eps_unit == "sigma":
                    bb_eps = float(bb_eps_raw / sigma) if sigma > 0 else 0.0
                else:
                    bb_eps = float(bb_eps_raw)
                add(j, metric, bb_eps, eps_unit, n_rows[metric])
            else:
                add(j, metric, None, None, n_rows[metric])
            j += 1
        for metric, n in (("discrimination", n_diff), ("specificity", n_eq)):
            for e in eps:
                add(j, metric, float(e), eps_unit, n)
                j += 1
        for name in extras:
            add(j, name, None, None, len(sl.group_ids))
            j += 1
    return records
