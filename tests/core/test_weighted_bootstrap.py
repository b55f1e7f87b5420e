"""The weighted bootstrap (rmbench.core.weighted) against the reference that gathers every
resample's pairs (summarize(method="resample")): same draws, so the same records: bit-equal
values and CIs, except the metrics whose declaration says their bootstrap is not exact
(``ComputedMetric.exact``: reward_margin, a float mean summed in another order), to rtol 1e-12."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core import metrics as M
from rmbench.core import weighted as W
from rmbench.core import weighted_order
from rmbench.core.metric_registry import GAP_SUFFIX, computed_metrics
from rmbench.core.types import ORIGINAL, ComparisonGroup
from rmbench.core.weighted_order import Cumulative
from rmbench.results.statistics.summary import summarize
from rmbench.tasks.base import TaskScores


def rounded(metric: str) -> bool:
    """Whether ``metric`` (or the metric ``metric`` is the shift gap of) declares an inexact
    weighted bootstrap (equal to float rounding only)."""
    base = metric.removesuffix(GAP_SUFFIX)
    return any(m.name == base and not m.exact for m in computed_metrics())


def random_groups(seed: int, n_groups: int, forms: bool = False, shifts: bool = False, subsets: bool = True,
                  step: float = 0.5) -> tuple[list[ComparisonGroup], np.ndarray]:
    """Groups of 2-7 responses on 1-3 utility levels (some levels not equivalence classes),
    rewards on a grid of ``step`` (many ties, zeros included), lengths with ties."""
    rng = np.random.default_rng(seed)
    groups, rewards = [], []
    for i in range(n_groups):
        n = int(rng.integers(2, 8))
        u = [int(v) for v in rng.integers(0, 3, n)]
        kw = {"subset": ("a", "b", "c")[i % 3] if subsets else None}
        if rng.random() < 0.3:
            kw["equivalence_levels"] = (max(u),)
        if forms and n >= 3:
            k = n // 2  # responses k.. rewrite the originals 0..k-1
            src = [j for j in range(k)] + [int(rng.integers(0, k)) for _ in range(n - k)]
            u = [u[s] for s in src]
            kw["forms"] = tuple(ORIGINAL if j < k else ("para", "short")[j % 2] for j in range(n))
            kw["rewrite_of"] = tuple(src)
        if shifts and i % 4 == 3:
            kw.update(shift="paraphrase", source_id=f"g{i - 1}")
        resp = ["x" * int(rng.integers(1, 6)) for _ in range(n)]
        groups.append(ComparisonGroup(f"g{i}", "p", resp, u, **kw))
        rewards += list(np.round(rng.normal(size=n) / step) * step)
    return groups, np.array(rewards, dtype=np.float64)


def unit_scores(n_units: int, seed: int) -> TaskScores:
    """A task score of drawn unit numbers whose float sum depends on their order."""
    v = np.random.default_rng(seed).normal(size=n_units)
    return TaskScores((("own_score", None), ("own_score", "half")),
                      lambda u: np.array([v[u].mean(), float(np.sum(v[u] > 0)) / len(u)]), (n_units, n_units))


def assert_same(a, b) -> None:
    """Every record equal: same key, same n; value and CI bit-equal (rtol 1e-12 where not exact)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.task, x.metric, x.eps, x.subset, x.shift, x.n, x.eps_unit) == \
               (y.task, y.metric, y.eps, y.subset, y.shift, y.n, y.eps_unit)
        for p, q in ((x.estimate.value, y.estimate.value), (x.estimate.ci_low, y.estimate.ci_low),
                     (x.estimate.ci_high, y.estimate.ci_high)):
            if p is None or q is None or (isinstance(p, float) and math.isnan(p)):
                assert (p is None and q is None) or (math.isnan(p) and math.isnan(q)), (x, y)
            elif rounded(x.metric):
                assert q == pytest.approx(p, rel=1e-12, abs=1e-15), (x, y)
            else:
                assert p == q, (x.metric, x.subset, x.shift, x.eps, p, q)


def both(groups, rewards, eps=(0.0, 0.25, 1.0), **kw):
    return (summarize("t", groups, rewards, eps, method="resample", **kw),
            summarize("t", groups, rewards, eps, method="weighted", **kw))


@pytest.mark.parametrize("forms", [False, True])
@pytest.mark.parametrize("shifts", [False, True])
def test_weighted_equals_resampled(forms, shifts):
    groups, rewards = random_groups(7, 40, forms=forms, shifts=shifts)
    assert_same(*both(groups, rewards, n_bootstrap=80, seed=3))


def test_units_grouping_groups_and_task_scores():
    """Bootstrap units of three groups each, and a task score that receives the drawn units."""
    groups, rewards = random_groups(11, 45, forms=True, shifts=True)
    units = np.arange(len(groups)) // 3
    assert_same(*both(groups, rewards, n_bootstrap=60, seed=5, group_units=units,
                      extra_metrics=unit_scores(int(units.max()) + 1, 2)))


def test_raw_eps_continuous_rewards_and_two_answer_groups():
    rng = np.random.default_rng(4)
    groups = [ComparisonGroup.preference_pair(f"p{i}", "q", "a" * (i % 5 + 1), "b" * (i % 3 + 1))
              for i in range(50)]
    rewards = rng.normal(size=100)
    assert_same(*both(groups, rewards, eps=(0.0, 0.3), eps_unit="raw", n_bootstrap=50, seed=1))
    more, r2 = random_groups(9, 30, subsets=False, step=1e-9)  # continuous: few ties
    assert_same(*both(more, r2, n_bootstrap=50, seed=2))


def test_constant_rewards_and_no_pairs_of_a_kind():
    groups, _ = random_groups(3, 20)
    assert_same(*both(groups, np.zeros(sum(len(g.responses) for g in groups)), n_bootstrap=30))
    ties_only = [ComparisonGroup(f"t{i}", "q", ["a", "bb", "c"], [1, 1, 1]) for i in range(15)]
    assert_same(*both(ties_only, np.random.default_rng(0).normal(size=45), n_bootstrap=30))


@pytest.mark.parametrize("way", ["matrix", "prefix"])
def test_both_ways_of_cumulative_counts(monkeypatch, way):
    """Group x bin matrices and prefix sums over the sorted pairs give the same numbers, on
    tie-heavy and on continuous rewards."""
    if way == "matrix":
        monkeypatch.setattr(Cumulative, "PER_ITEM", 10**9)
        monkeypatch.setattr(Cumulative, "MATRIX_LIMIT", 10**9)
    else:
        monkeypatch.setattr(Cumulative, "MATRIX_LIMIT", 0)
    for step in (0.5, 1e-9):
        groups, rewards = random_groups(21, 30, forms=True, shifts=True, step=step)
        assert_same(*both(groups, rewards, n_bootstrap=40, seed=8, group_units=np.arange(len(groups)) // 2))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_prefix_sums_in_every_dtype(monkeypatch, dtype):
    """The prefix sums over sorted pairs give the same numbers on int32 (the default), on int64
    (where int32 could overflow) and on float64 (as before)."""
    monkeypatch.setattr(Cumulative, "MATRIX_LIMIT", 0)
    monkeypatch.setattr(weighted_order, "integer_weights", lambda W, n_items: np.asarray(W).astype(dtype))
    groups, rewards = random_groups(5, 30, forms=True, shifts=True, step=1e-9)
    assert_same(*both(groups, rewards, n_bootstrap=40, seed=3, group_units=np.arange(len(groups)) // 2))


def test_integer_weights_widen_before_int32_overflows():
    W = np.array([[0.0, 3.0, 1.0]])
    assert weighted_order.integer_weights(W, 1000).dtype == np.int32
    assert weighted_order.integer_weights(W, 2**31 // 3 + 1).dtype == np.int64  # 3 x n >= 2**31
    assert weighted_order.integer_weights(W, 2**31 // 3).dtype == np.int32
    assert weighted_order.integer_weights(np.zeros((2, 0)), 5).dtype == np.int32
    assert np.array_equal(weighted_order.integer_weights(W, 10), [[0, 3, 1]])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_groups=st.integers(1, 25), forms=st.booleans(), shifts=st.booleans(),
       step=st.sampled_from([0.5, 1.0, 1e-6]), per_unit=st.integers(1, 3))
def test_weighted_equals_resampled_property(seed, n_groups, forms, shifts, step, per_unit):
    groups, rewards = random_groups(seed, n_groups, forms=forms, shifts=shifts, step=step)
    units = np.arange(len(groups)) // per_unit
    assert_same(*both(groups, rewards, n_bootstrap=25, seed=seed, group_units=units))


def test_draw_blocks_are_the_draws_of_bootstrap_ci():
    seen = []
    M.bootstrap_ci(lambda u: seen.append(u.copy()) or np.zeros(1), 37, 50, seed=9)
    blocks = list(M.bootstrap_draws(37, 50, 9, block=16))
    assert [len(b) for b in blocks] == [16, 16, 16, 2]
    np.testing.assert_array_equal(np.concatenate(blocks), np.stack(seen))
    counts = W.unit_counts(blocks[0], 37)
    np.testing.assert_array_equal(counts[3], np.bincount(blocks[0][3], minlength=37))


def test_paired_bootstrap_batched_equals_plain():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=40), rng.normal(size=40)
    stat_a, stat_b = (lambda u: np.array([a[u].max()])), (lambda u: np.array([b[u].max()]))
    plain = M.paired_bootstrap_diff(stat_a, stat_b, 40, 200, seed=4)
    batched = M.paired_bootstrap_diff(stat_a, stat_b, 40, 200, seed=4, block=7,
                                      batches=(lambda d: a[d].max(axis=1)[:, None],
                                               lambda d: b[d].max(axis=1)[:, None]))
    for p, q in zip(plain, batched):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("step", [0.5, 1e-9])
def test_order_stats_reuse_their_work_arrays_safely(monkeypatch, step):
    """Blocks of resamples of changing sizes through one OrderStats (its work arrays reused) give
    each row what one call over all rows gives, and a result stays as returned after later calls."""
    monkeypatch.setattr(Cumulative, "MATRIX_LIMIT", 0)  # the prefix way: the one with work arrays
    rng = np.random.default_rng(4)
    n_groups = 9
    x, y = np.round(rng.normal(0.3, 1, 60) / step) * step, np.round(rng.normal(0, 1, 50) / step) * step
    gx, gy = rng.integers(0, n_groups, 60), rng.integers(0, n_groups, 50)
    ly = rng.integers(-5, 6, 50).astype(float)
    W = rng.multinomial(n_groups, np.ones(n_groups) / n_groups, size=8).astype(float)
    whole = weighted_order.OrderStats(x, gx, y, gy, ly, n_groups).values(W)
    stats = weighted_order.OrderStats(x, gx, y, gy, ly, n_groups)
    parts, rows = [], 0
    for size in (3, 2, 3):
        parts.append(stats.values(W[rows:rows + size]))
        rows += size
    first = {k: v.copy() for k, v in parts[0].items()}
    for key, value in whole.items():
        assert np.array_equal(np.concatenate([p[key] for p in parts]), value, equal_nan=True), key
        assert np.array_equal(parts[0][key], first[key], equal_nan=True), key
