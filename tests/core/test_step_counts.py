"""Step-level pairs counted, not listed (rmbench.core.step_counts, issue 52): the counts against
brute force over the listed pairs, and ``summarize`` from counts against the pair loop
(``count_steps_from=None``): the same records, values and bootstrap CIs bit for bit, but
length_correlation (nan from counts)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core import step_counts as SC
from rmbench.core.step_groups import StepGroup
from rmbench.results.statistics.slice_statistic import slice_statistic
from rmbench.results.statistics.step_statistic import counts_steps, step_slice_statistic
from rmbench.results.statistics.summary import paired_diff, summarize
from rmbench.tasks.base import TaskScores

GRID = st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0, 1e-17, 0.30000000000000004])
REWARD = st.one_of(GRID, st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=True))


def gaps(s: np.ndarray) -> np.ndarray:
    """|y| of every pair of ``s`` as the pair loop computes it: |r(a) - r(b)|, a < b in step order."""
    a, b = np.triu_indices(len(s), 1)
    return np.abs(s[a] - s[b])


@settings(max_examples=300, deadline=None)
@given(st.lists(REWARD, min_size=0, max_size=12), st.lists(REWARD, min_size=1, max_size=6))
def test_counts_equal_the_listed_pairs(steps, thresholds):
    r = np.array(steps)
    s, y = np.sort(r), gaps(r)
    for t in thresholds:
        assert SC.pairs_at_most(s, t) == int((y <= t).sum())
    counts = SC.SolutionCounts.of(s, thresholds)
    assert counts.pairs == len(y) and counts.zero == int((y == 0).sum())
    assert counts.above == tuple(int((y > e).sum()) for e in thresholds)


@settings(max_examples=300, deadline=None)
@given(st.lists(REWARD, min_size=0, max_size=12), st.lists(REWARD, min_size=0, max_size=6),
       st.sampled_from([None, True, False]), st.sampled_from([SC.BLOCK, 3]))
def test_cells_equal_the_listed_pairs(steps, xs, listed, block):
    r, v = np.array(steps), np.unique(np.array(xs, dtype=np.float64))
    y = gaps(r)
    old, SC.BLOCK = SC.BLOCK, block  # small blocks: rows and x values counted a few at a time
    try:
        cells = SC.solution_cells(np.sort(r), v, listed)
    finally:
        SC.BLOCK = old
    counts = dict(zip(cells.cell.tolist(), cells.count.tolist()))
    top = dict(zip(cells.interval.tolist(), cells.top.tolist()))
    edges = np.concatenate([[-np.inf], v, [np.inf]])
    for j in range(len(v) + 1):
        inside = y[(y > edges[j]) & (y < edges[j + 1])]
        assert counts.pop(2 * j + 1, 0) == len(inside)
        if j:
            assert counts.pop(2 * j, 0) == int((y == v[j - 1]).sum())
        interval = y[(y >= edges[j]) & (y < edges[j + 1])]
        assert top.get(j) == (interval.max() if interval.size else None)
    assert not counts


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(REWARD, st.floats(-1e300, 1e300), st.sampled_from([5e-324, -5e-324, 1e-300])),
                max_size=12),
       st.lists(st.one_of(REWARD, st.floats(-1e300, 1e300), st.just(-np.inf)), min_size=1, max_size=30))
def test_interval_lookup_equals_a_binary_search(xs, ys):
    v, y = np.unique(np.array(xs, dtype=np.float64)), np.array(ys)
    j, equal = SC.Intervals(v).place(y)
    want = np.searchsorted(v, y, side="right")
    assert j.tolist() == want.tolist()
    assert equal.tolist() == [bool(k > 0 and v[k - 1] == x) for k, x in zip(want, y)]


def step_groups(draw_rewards: list[list[float]], labels: list[int], subsets: bool) -> list[StepGroup]:
    out = []
    for i, (rs, k) in enumerate(zip(draw_rewards, labels)):
        n = len(rs)
        k = k % (n + 1) - 1  # -1: no wrong step
        u = [1] * n if k < 0 else [1] * k + [0] * (n - k)
        out.append(StepGroup(id=f"s{i}", prompt="p", responses=tuple("x" * (1 + (i + j) % 4) for j in range(n)),
                             utilities=tuple(u), subset=("gsm8k", "math")[i % 2] if subsets else None))
    return out


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def assert_same_records(groups, rewards, **kwargs):
    """summarize from counts equals the pair loop's: every record, value and CI bit for bit
    (nan where nan), but length_correlation (nan from counts)."""
    pairs = summarize("t", groups, rewards, count_steps_from=None, **kwargs)
    counted = summarize("t", groups, rewards, count_steps_from=0, **kwargs)
    key = [(r.task, r.subset, r.shift, r.metric, r.eps, r.eps_unit, r.n) for r in pairs]
    assert key == [(r.task, r.subset, r.shift, r.metric, r.eps, r.eps_unit, r.n) for r in counted]
    for a, b in zip(pairs, counted):
        x, y = a.estimate, b.estimate
        if a.metric == "length_correlation":
            assert math.isnan(y.value) and y.ci_low is None
            continue
        assert same(x.value, y.value) and same(x.ci_low, y.ci_low) and same(x.ci_high, y.ci_high), (a, b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(REWARD, min_size=1, max_size=7), min_size=1, max_size=8),
       st.lists(st.integers(0, 10), min_size=8, max_size=8), st.booleans(),
       st.sampled_from([((0.0, 0.1, 0.5), "sigma"), ((0.0, 0.05, 0.25), "raw"), ((0.3,), "raw")]),
       st.sampled_from([0, 25]), st.integers(0, 3))
def test_summary_from_counts_equals_the_pair_loop(rewards, labels, subsets, eps, n_bootstrap, seed):
    groups = step_groups(rewards, labels, subsets)
    assert_same_records(groups, np.concatenate([np.array(r) for r in rewards]), eps=eps[0], eps_unit=eps[1],
                        n_bootstrap=n_bootstrap, seed=seed)


@pytest.mark.parametrize("small", [SC.SMALL, 10, 0])
def test_summary_from_counts_with_units_task_scores_and_many_steps(monkeypatch, small):
    """Solutions of up to 39 steps, with bootstrap units of three solutions and a task score;
    ``small``: solutions of more pairs are counted one by one, the others listed together."""
    monkeypatch.setattr(SC, "SMALL", small)
    rng = np.random.default_rng(4)
    rewards = [np.round(rng.random(int(n)), 1) for n in rng.integers(1, 40, 30)]
    groups = step_groups([list(r) for r in rewards], [int(k) for k in rng.integers(0, 40, 30)], True)
    units = np.arange(30) // 3
    scores = TaskScores((("own", None),), lambda u: np.array([np.mean(u)]), (30,))
    assert_same_records(groups, np.concatenate(rewards), eps=(0.0, 0.1), group_units=units, extra_metrics=scores,
                        n_bootstrap=200)


def test_a_hand_computed_solution():
    """Steps 0.75, 0.5, 0.5 correct, then 0.25 wrong: x = 0.5, 0.25, 0.25 and |y| = 0.25, 0.25, 0.
    D(0) = 3/3, D(0.25) = 1/3, Spec(0) = 1 - 2/3, Spec(0.25) = 1, sign acc = (3 + 1) / 6,
    ds_auc = (x = 0.5: 3 below; each x = 0.25: 1 below + 2 ties at half) / 9 = 7/9."""
    s = np.array([0.5, 0.5, 0.75])
    assert SC.SolutionCounts.of(s, (0.0, 0.25)) == SC.SolutionCounts(3, 1, (2, 0))
    cells = SC.solution_cells(s, np.array([0.25, 0.5]))
    assert cells.cell.tolist() == [1, 2] and cells.count.tolist() == [1, 2]  # y < 0.25: one; y = 0.25: two
    assert cells.interval.tolist() == [0, 1] and cells.top.tolist() == [0.0, 0.25]
    g = StepGroup(id="s", prompt="p", responses=("a", "b", "c", "d", "e"), utilities=(1, 1, 1, 0, 1))
    assert g.pair_counts() == (3, 3)
    records = summarize("t", [g], np.array([0.75, 0.5, 0.5, 0.25, 0.9]), (0.0, 0.25), "raw", n_bootstrap=0,
                        count_steps_from=0)
    value = {(r.metric, r.eps): (r.value, r.n) for r in records}
    assert value["discrimination", 0.0] == (1.0, 3) and value["discrimination", 0.25] == (1 / 3, 3)
    assert value["specificity", 0.0] == (1 - 2 / 3, 3) and value["specificity", 0.25] == (1.0, 3)
    assert value["sign_accuracy", None] == (4 / 6, 6) and value["ds_auc", None] == (7 / 9, 6)


def test_the_counted_path_is_taken_for_long_solutions_only():
    short = StepGroup(id="a", prompt="p", responses=("x",) * 5, utilities=(1, 1, 1, 1, 0))
    long = StepGroup(id="b", prompt="p", responses=("x",) * 300, utilities=(1,) * 300)
    assert not counts_steps([short]) and counts_steps([short, long]) and not counts_steps([short, long], None)
    assert long.pair_counts() == (0, 300 * 299 // 2) and short.pair_counts() == (4, 6)


@pytest.mark.parametrize("k", [-1, 0, 1, 6])
def test_pair_counts_are_the_listed_pairs(k):
    n = 7
    u = [1] * n if k < 0 else [1] * k + [0] * (n - k)
    g = StepGroup(id="s", prompt="p", responses=("x",) * n, utilities=tuple(u))
    better, _, a, _ = g.pair_arrays()
    assert g.pair_counts() == (len(better), len(a))


def test_paired_differences_from_counts_equal_the_pair_loop():
    """rmbench compare's paired bootstrap (paired_diff) of two models on a step-level task."""
    rng = np.random.default_rng(7)
    rewards = [np.round(rng.random(int(n)), 1) for n in rng.integers(1, 12, 20)]
    groups = step_groups([list(r) for r in rewards], [int(k) for k in rng.integers(0, 12, 20)], False)
    a, b = np.concatenate(rewards), np.round(rng.random(sum(len(r) for r in rewards)), 1)
    listed = [slice_statistic(groups, r, (0.0, 0.1), "raw") for r in (a, b)]
    counted = [step_slice_statistic(groups, r, (0.0, 0.1), "raw", None, None) for r in (a, b)]
    assert listed[0].labels == counted[0].labels
    keep = [j for j, (metric, _, _) in enumerate(listed[0].labels) if metric != "length_correlation"]
    for x, y in zip(paired_diff(*listed, 200, 1), paired_diff(*counted, 200, 1)):
        np.testing.assert_array_equal(x[keep], y[keep])


def test_a_long_solution_through_the_cli_is_counted(tmp_path):
    """ProcessBench with a 250-step solution (31,000 specificity pairs: the counted path) through
    `rmbench eval`: the run's D, Spec and ds_auc records are the pair loop's on the same groups;
    length_correlation has no value."""
    from rmbench import read_run
    from rmbench.cli.app import app
    from tests.tasks.test_processbench_task import PRM, ROWS, load, row, runner, write_lines

    ps = [round(0.5 + 0.4 * ((7 * i) % 11) / 11, 3) for i in range(249)] + [0.1]
    rows = [*ROWS, row("math-9", ps, 249)]
    (tmp_path / "prm.py").write_text(PRM)
    data = write_lines(tmp_path / "pb.jsonl", rows)
    result = runner.invoke(app, ["eval", "--model", f"python-prm:{tmp_path / 'prm.py'}:score", "--tasks",
                                 "processbench", "--data", f"processbench={data}", "--bootstrap", "20",
                                 "--out", str(tmp_path / "run")], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    record = read_run(tmp_path / "run")
    _, groups, rewards = load(tmp_path, rows)
    assert counts_steps(groups)
    listed = {(r.metric, r.subset, r.eps): r for r in summarize("processbench", groups, rewards, record.config.eps,
                                                                n_bootstrap=20, count_steps_from=None)}
    for metric in ("discrimination", "specificity", "ds_auc", "sign_accuracy"):
        for r in record.task("processbench").metrics:
            if r.metric == metric:
                want = listed[r.metric, r.subset, r.eps]
                assert (r.n, r.estimate) == (want.n, want.estimate), r
    corr = record.metric("processbench", "length_correlation")
    assert corr.n == listed["length_correlation", None, None].n and math.isnan(corr.value)
