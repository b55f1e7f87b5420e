"""A public check of a computed metric's declaration (:func:`check_metric`), for the built-in
ones' tests and a plugin's own: on random groups, its two forms agree, and its value does not
change under the changes of rewards and order that must not change it.

The properties, each failing with a :class:`MetricCheckError` that names it:

* **forms**: the weighted form of a block of resamples equals the pooled form of each resample
  (bit-equal for an ``exact`` declaration, to relative 1e-12 otherwise), at every eps, and so
  does the eps it reports it is reached at (``reached_at``);
* **affine invariance**: r -> a r + b (a > 0) leaves the value unchanged (relative 1e-9), eps
  being in sigma units (raw eps = eps x sigma); a reported raw eps scales by a. A metric in
  raw reward units (a mean gap not divided by sigma, a fixed raw threshold) fails it;
* **group order**: the groups given in another order give the same value (bit-equal for an
  ``exact`` declaration).

The random groups hold 2-7 responses on 1-3 utility levels, rewards on a grid of 1/4 (ties and
zero gaps; on every other pair of trials continuous ones, whose sums round), lengths with ties,
and on every other trial rewrites of their answers (every trial for a metric that needs them),
so that every kind of pair is met.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from rmbench.core import metrics as M
from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.metric_declaration import ComputedMetric
from rmbench.core.pairs import Pairs, PooledPairs
from rmbench.core.types import ORIGINAL, ComparisonGroup, PairIndex
from rmbench.core.weighted import WeightedSlice, unit_counts
from rmbench.errors import RMBenchError

__all__ = ["AFFINE", "EPS", "MetricCheckError", "check_metric", "random_groups"]

T = TypeVar("T")

EPS = (0.0, 0.37, 1.3)
"""The eps (sigma units) an eps-dependent metric is checked at: 0 and two that no gap of the
grid meets exactly."""
AFFINE = ((3.0, 1.5), (0.25, -2.0))
"""The (a, b) of the affine changes r -> a r + b checked (exact on the rewards' grid)."""


class MetricCheckError(RMBenchError):
    """A computed metric failed a property of :func:`check_metric`; the message says which."""


def check_metric(metric: ComputedMetric, trials: int = 12, resamples: int = 12, seed: int = 0) -> None:
    """Check ``metric`` on ``trials`` sets of random groups (module docstring): its pooled form
    against its weighted form on ``resamples`` resamples (the first the groups themselves),
    invariance to affine reward changes r -> a r + b (a > 0, eps in sigma units) and to the
    order of the groups. Raises :class:`MetricCheckError` naming the property that failed, the
    values and the trial; returns None when all hold. Seeded: the same call checks the same groups.

    A plugin's test calls it on each of its metrics::

        from rmbench.plugins import check_metric
        def test_tie_rate():
            check_metric(TIE_RATE)
    """
    if not isinstance(metric, ComputedMetric):
        raise TypeError(f"check_metric checks a ComputedMetric, not {type(metric).__name__}")
    for trial in range(trials):
        rng = np.random.default_rng([seed, trial])
        groups, rewards = random_groups(rng, forms=metric.needs_forms or trial % 2 == 1, grid=trial % 4 < 2)
        where = f"(trial {trial} of check_metric(seed={seed}): {len(groups)} random groups)"
        full = _values(metric, groups, rewards, where)
        _check_affine(metric, groups, rewards, full, where)
        _check_order(metric, groups, rewards, full, rng, where)
        _check_forms(metric, groups, rewards, rng, resamples, where)


def _check_affine(metric: ComputedMetric, groups: Sequence[ComparisonGroup], rewards: FloatArray,
                  full: list[tuple[str, float]], where: str) -> None:
    """The values after each change r -> a r + b of :data:`AFFINE` against ``full``, before it."""
    for a, b in AFFINE:
        moved = _values(metric, groups, a * rewards + b, where)
        for (what, v), (_, w) in zip(full, moved):
            expected = a * v if what.startswith("reached") else v
            if not _close(expected, w, 1e-9):
                raise MetricCheckError(
                    f"metric {metric.name!r} is not invariant to an affine change of the rewards: r -> {a} r + {b} "
                    f"turns its {what} {v!r} into {w!r} (expected {expected!r}) {where}. A metric must not depend on "
                    f"the rewards' unit or offset: divide a column in reward units by sigma "
                    f"(ComputedMetric.of_columns(..., per_sigma=True)) and compare gaps with eps only (its raw value "
                    f"is eps x sigma), never with a fixed number")


def _check_order(metric: ComputedMetric, groups: Sequence[ComparisonGroup], rewards: FloatArray,
                 full: list[tuple[str, float]], rng: np.random.Generator, where: str) -> None:
    """The values of the groups in a random order against ``full``, in the given one."""
    perm = rng.permutation(len(groups))
    starts = np.cumsum([0] + [len(g.responses) for g in groups])
    shuffled = np.concatenate([rewards[starts[i]:starts[i + 1]] for i in perm])
    for (what, v), (_, w) in zip(full, _values(metric, [groups[i] for i in perm], shuffled, where)):
        if not (_same(v, w) if metric.exact else _close(v, w, 1e-12)):
            raise MetricCheckError(
                f"metric {metric.name!r} depends on the order of the groups: its {what} is {v!r}, and {w!r} with "
                f"the same groups in another order {where}"
                f"{_EXACT_HINT if metric.exact and _close(v, w, 1e-12) else ''}")


_EXACT_HINT = (". A metric whose two forms sum float values (not counts) sums them in another order: declare "
               "it exact=False")


def random_groups(rng: np.random.Generator, forms: bool, n_groups: int | None = None, grid: bool = True
                  ) -> tuple[list[ComparisonGroup], FloatArray]:
    """Random groups and their rewards (module docstring); ``forms``: each group of 3 or more
    responses (all, then) has rewrites of its first half; ``grid``: rewards on a grid of 1/4,
    else normal (continuous: no ties, float sums that round)."""
    n_groups = int(rng.integers(4, 16)) if n_groups is None else n_groups
    groups, rewards = [], []
    for i in range(n_groups):
        n = int(rng.integers(3 if forms else 2, 8))
        u = [int(v) for v in rng.integers(0, 3, n)]
        levels = (max(u),) if rng.random() < 0.3 else None
        kinds: tuple[str, ...] | None = None
        sources: tuple[int, ...] | None = None
        if forms:
            k = n // 2  # responses k.. rewrite the originals 0..k-1
            sources = tuple(range(k)) + tuple(int(rng.integers(0, k)) for _ in range(n - k))
            u = [u[j] for j in sources]
            kinds = tuple(ORIGINAL if j < k else ("para", "short")[j % 2] for j in range(n))
        responses = ["x" * int(rng.integers(1, 6)) for _ in range(n)]
        groups.append(ComparisonGroup(f"g{i}", "p", tuple(responses), tuple(u), equivalence_levels=levels,
                                      forms=kinds, rewrite_of=sources))
        rewards.append(rng.integers(-6, 7, n) / 4.0 if grid else rng.normal(size=n))
    return groups, np.concatenate(rewards).astype(np.float64)


def _views(groups: Sequence[ComparisonGroup], rewards: FloatArray) -> tuple[PairIndex, list[float], float, bool]:
    index = PairIndex.from_groups(groups)
    sigma = M.reward_sigma(rewards)
    return index, [M.raw_eps(e, "sigma", sigma) for e in EPS], sigma, index.has_forms


def _eps_indices(metric: ComputedMetric) -> range:
    return range(len(EPS)) if metric.eps_dependent else range(1)


def _run(form: str, metric: ComputedMetric, where: str, fn: Callable[[], T]) -> T:
    """``fn()``, its failure turned into a :class:`MetricCheckError` that says which form failed."""
    try:
        return fn()
    except MetricCheckError:
        raise
    except Exception as exc:
        hint = ""
        if "rewrites" in str(exc) and not metric.needs_forms:
            hint = ": a metric that reads the rewrite pairs must be declared needs_forms=True"
        elif isinstance(exc, KeyError):
            hint = ": every column the weighted form reads must be among the declaration's columns"
        raise MetricCheckError(f"metric {metric.name!r}: its {form} form failed {where}: "
                               f"{type(exc).__name__}: {exc}{hint}") from exc


def _values(metric: ComputedMetric, groups: Sequence[ComparisonGroup], rewards: FloatArray,
            where: str) -> list[tuple[str, float]]:
    """The pooled form on all of ``groups``: (what, value) per eps, then the eps it is reached at."""
    index, eps_raw, sigma, forms = _views(groups, rewards)
    view = PooledPairs(Pairs.of(index, rewards, forms), eps_raw, sigma)
    computations = [(metric.pooled, k, f"value at eps {EPS[k]} sigma" if metric.eps_dependent else "value")
                    for k in _eps_indices(metric)]
    if metric.reached_at is not None:
        computations.append((metric.reached_at.pooled, 0, "reached-at eps"))
    out = []
    for pooled, k, what in computations:
        out.append((what, float(_run("pooled", metric, where, lambda: pooled(view, k)))))  # noqa: B023 (called here)
    return out


def _check_forms(metric: ComputedMetric, groups: Sequence[ComparisonGroup], rewards: FloatArray,
                 rng: np.random.Generator, resamples: int, where: str) -> None:
    """The weighted form of a block of resamples against the pooled form of each."""
    index, eps_raw, sigma, forms = _views(groups, rewards)
    n = len(groups)
    draws: IntArray = np.vstack([np.arange(n)[None, :], rng.integers(0, n, (max(0, resamples - 1), n))])
    ws = _run("weighted", metric, where,
              lambda: WeightedSlice(np.arange(n), n, Pairs.of(index, rewards, forms), eps_raw, sigma, metric.columns))
    block = ws.block(unit_counts(draws, n))
    views = [PooledPairs(Pairs.of(index.select_groups(d), rewards, forms), eps_raw, sigma) for d in draws]
    pairs = [(metric.pooled, metric.weighted, k, f"value at eps {EPS[k]} sigma" if metric.eps_dependent else "value")
             for k in _eps_indices(metric)]
    if metric.reached_at is not None:
        pairs.append((metric.reached_at.pooled, metric.reached_at.weighted, 0, "reached-at eps"))
    for pooled, weighted, k, what in pairs:
        w = np.asarray(_run("weighted", metric, where, lambda: weighted(block, k)),  # noqa: B023 (called here)
                       dtype=np.float64)
        if w.shape != (len(draws),):
            raise MetricCheckError(f"metric {metric.name!r}: its weighted form gave shape {w.shape} for a block of "
                                   f"{len(draws)} resamples {where}: it must give one value per resample")
        for i, view in enumerate(views):
            p = float(_run("pooled", metric, where, lambda: pooled(view, k)))  # noqa: B023 (called here)
            if not (_same(p, float(w[i])) if metric.exact else _close(p, float(w[i]), 1e-12)):
                kind = "bit-equal" if metric.exact else "equal to relative 1e-12"
                raise MetricCheckError(
                    f"metric {metric.name!r}: its pooled and weighted forms differ on resample {i} {where}: {what} "
                    f"{p!r} pooled, {float(w[i])!r} weighted (declared {kind})"
                    f"{_EXACT_HINT if metric.exact and _close(p, float(w[i]), 1e-12) else ''}")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _close(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)
