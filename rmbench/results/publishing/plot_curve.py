"""The D(eps)-Spec(eps) curve of a stored run on a task, as numbers (no matplotlib).

The curve is the one of arXiv 2606.21795 ("Discretizing Reward Models"): as eps grows from 0
the reward model calls more pairs "equal", so specificity Spec(eps) rises and discrimination
D(eps) falls. It is recomputed densely from the run's rewards over the task's pairs (the task's
data is reloaded, no model is loaded; see :mod:`rmbench.results.storage.reload`), on a grid that
holds the eps the run recorded, so it passes exactly through its recorded points
(:func:`recorded_points`). When the data can no longer be reloaded, the curve is only the
recorded points, with a note saying so. :mod:`rmbench.results.publishing.plot` draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.errors import ConfigError, DataError
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import TaskResult

GRID_POINTS = 200
"""Points of the eps grid: this many evenly spaced, and as many at quantiles of the |gaps|."""


@dataclass(frozen=True, eq=False)
class CurveData:
    """One run's D-Spec curve on one task.

    ``eps`` is in the run's ``eps_unit`` (sigma or raw), sorted ascending; ``spec[i]`` and
    ``d[i]`` are Spec and D at ``eps[i]``. ``recorded``: ``(eps, spec, d)`` of every eps the run
    reported both metrics at, taken from its metric records. ``note``: why the curve is not the
    dense one (data not reloadable) or not defined (no pairs of a kind), else None. ``dense``:
    False when the curve is only the recorded points joined up.
    """

    label: str
    task: str
    eps_unit: str
    eps: np.ndarray
    spec: np.ndarray
    d: np.ndarray
    recorded: tuple[tuple[float, float, float], ...]
    note: str | None = None
    dense: bool = True

    @property
    def defined(self) -> bool:
        """Whether any point of the curve has both a Spec and a D value."""
        return bool(np.any(~np.isnan(self.spec) & ~np.isnan(self.d)))


def recorded_points(result: TaskResult) -> tuple[tuple[float, float, float], ...]:
    """(eps, Spec, D) from the run's overall D and Spec records at each of its eps."""
    out = []
    for e in sorted(result.eps):
        s, d = result.metric("specificity", eps=e), result.metric("discrimination", eps=e)
        if s is not None and d is not None and s.estimate.defined and d.estimate.defined:
            out.append((float(e), s.value, d.value))
    return tuple(out)


def _eps_grid(diff: np.ndarray, eq_abs: np.ndarray, unit: str, sigma: float,
              recorded_eps: Sequence[float]) -> np.ndarray:
    """eps values (run unit) from 0 to past the largest |gap|, so that D reaches 0 and Spec 1."""
    gaps = np.concatenate([diff[diff > 0], eq_abs[eq_abs > 0]])
    scale = sigma if unit == "sigma" else 1.0
    parts = [np.array([0.0]), np.asarray(recorded_eps, dtype=np.float64)]
    if gaps.size and scale > 0:
        top = float(gaps.max()) / scale
        # Evenly spaced, plus at quantiles of the gaps (dense where the curve moves), plus a
        # point just past the largest gap (its rounding in the unit must not leave one pair out).
        parts += [np.linspace(0.0, top, GRID_POINTS), np.quantile(gaps / scale, np.linspace(0, 1, GRID_POINTS)),
                  np.array([np.nextafter(top, np.inf) * (1 + 1e-9)])]
    return np.unique(np.concatenate(parts))


def _dense_curve(diff: np.ndarray, eq: np.ndarray, grid: np.ndarray, unit: str,
                 sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Spec and D at every eps of ``grid``, with the arithmetic of :mod:`rmbench.core.metrics`
    (D = #(gap > eps) / n, Spec = 1 - #(|gap| > eps) / m, eps raw = eps * sigma), so the
    curve passes exactly through the recorded points."""
    raw = grid * float(sigma) if unit == "sigma" else grid.astype(np.float64)
    d_sorted, e_sorted = np.sort(diff), np.sort(np.abs(eq))
    if d_sorted.size:
        d = (d_sorted.size - np.searchsorted(d_sorted, raw, side="right")) / d_sorted.size
    else:
        d = np.full(grid.size, np.nan)
    if e_sorted.size:
        spec = 1.0 - (e_sorted.size - np.searchsorted(e_sorted, raw, side="right")) / e_sorted.size
    else:
        spec = np.full(grid.size, np.nan)
    return spec.astype(np.float64), d.astype(np.float64)


def curve_data(folder: RunFolder, task: str, label: str | None = None) -> CurveData:
    """The D-Spec curve of ``folder``'s run on ``task`` (``label``: default the model name).

    Dense when the task's data reloads (rmbench.results.storage.reload.task_rewards): eps on a grid in the
    run's eps unit from 0 to past the largest |gap|, the recorded eps included. Otherwise
    (DataError/ConfigError) only the recorded points, with a note saying why.
    """
    from rmbench.core import metrics as M
    from rmbench.core.types import PairIndex
    from rmbench.results.storage.reload import task_rewards
    from rmbench.results.storage.rewards_file import RewardsFileError

    result = folder.record.task(task)
    label = label or folder.record.model_name
    recorded = recorded_points(result)
    try:
        td, rewards = task_rewards(folder, task)
    except RewardsFileError:  # a damaged rewards.jsonl is refused, never drawn around
        raise
    except (DataError, ConfigError) as exc:
        eps = np.array([p[0] for p in recorded], dtype=np.float64)
        spec = np.array([p[1] for p in recorded], dtype=np.float64)
        d = np.array([p[2] for p in recorded], dtype=np.float64)
        why = f"{label}: only the recorded points (the task's data could not be reloaded: {exc})"
        return CurveData(label, task, result.eps_unit, eps, spec, d, recorded, why, dense=False)
    rewards = M.check_reward_range(rewards)
    index = PairIndex.from_groups(td.groups)
    diff = rewards[index.diff_better] - rewards[index.diff_worse]
    eq = rewards[index.eq_a] - rewards[index.eq_b]
    sigma = M.reward_sigma(rewards)
    grid = _eps_grid(diff, np.abs(eq), result.eps_unit, sigma, result.eps)
    spec, d = _dense_curve(diff, eq, grid, result.eps_unit, sigma)
    note = None
    if diff.size == 0 or eq.size == 0:
        kind = "discrimination" if diff.size == 0 else "specificity"
        note = f"{label}: the task has no {kind} pairs, so the D-Spec curve is not defined"
    return CurveData(label, task, result.eps_unit, grid, spec, d, recorded, note)
