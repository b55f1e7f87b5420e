"""Metrics declared by their columns (ComputedMetric.of_columns / difference) and the public check
of a declaration (rmbench.plugins.check_metric): every built-in passes it, and each property it
checks catches the metric that breaks it (a raw-units metric above all)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rmbench.core import pair_columns as C
from rmbench.core.computed_metrics import BUILTIN
from rmbench.core.metric_check import MetricCheckError, check_metric, random_groups
from rmbench.core.metric_declaration import ComputedMetric, Ratio
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.pairs import Pairs, PooledPairs
from rmbench.core.types import ComparisonGroup, PairIndex
from rmbench.core.weighted import PairColumn, PairSet, WeightedSlice, unit_counts
from rmbench.core.weighted_order import ratio

DIFF = Counted.DISCRIMINATION_PAIRS
ORDER_STATISTICS = {"ds_auc", "balanced_best", "length_correlation"}


def _def(name: str, eps_dependent: bool = False) -> MetricDef:
    return MetricDef(name, name, True, eps_dependent, DIFF, f"{name}, for a test")


@pytest.mark.parametrize("metric", BUILTIN, ids=[m.name for m in BUILTIN])
def test_every_built_in_metric_passes_check_metric(metric):
    check_metric(metric)


def test_all_but_the_order_statistics_are_declared_by_their_columns():
    by_columns = {m.name for m in BUILTIN if m.formula is not None}
    assert len(by_columns) == 13 and by_columns == {m.name for m in BUILTIN} - ORDER_STATISTICS
    for m in BUILTIN:
        if m.formula is not None:  # the forms, and the columns the weighted form sums, come from the formula
            assert m.columns == m.formula.columns
            assert m.pooled == m.formula.pooled and m.weighted == m.formula.weighted


def test_a_ratio_of_columns_by_hand():
    """Three preference pairs with gaps x = 1.0, 0.0, -0.5: accuracy (1 + 0.5) / 3, margin mean |x| /
    sigma, D(0.75) = 1 / 3, 1 - D and a difference, pooled and weighted (a resample by hand)."""
    groups = [ComparisonGroup("a", "q", ("x", "yy"), (1, 0)), ComparisonGroup("b", "q", ("x", "yy"), (1, 0)),
              ComparisonGroup("c", "q", ("x", "yy"), (1, 0))]
    rewards = np.array([2.0, 1.0, 0.5, 0.5, 0.0, 0.5])  # gaps 1.0, 0.0, -0.5
    sigma = float(np.std(rewards, ddof=1))
    acc = ComputedMetric.of_columns(_def("acc"), (C.DIFF_POSITIVE, (0.5, C.DIFF_ZERO)), C.DIFF_PAIRS)
    margin = ComputedMetric.of_columns(_def("margin"), C.ABS_GAP, C.DIFF_PAIRS, per_sigma=True)
    d = ComputedMetric.of_columns(_def("d", True), C.DIFF_ABOVE, C.DIFF_PAIRS)
    not_d = ComputedMetric.of_columns(_def("not_d", True), C.DIFF_ABOVE, C.DIFF_PAIRS, complement=True)
    gap = ComputedMetric.difference(_def("gap", True), d, not_d)
    index = PairIndex.from_groups(groups)
    eps = [0.0, 0.75]
    view = PooledPairs(Pairs.of(index, rewards, False), eps, sigma)
    assert acc.pooled(view, 0) == 1.5 / 3
    assert margin.pooled(view, 0) == 1.5 / 3 / sigma and not margin.exact and acc.exact
    assert [d.pooled(view, k) for k in (0, 1)] == [1 / 3, 1 / 3]
    assert not_d.pooled(view, 1) == 1.0 - 1 / 3 and gap.pooled(view, 1) == 1 / 3 - (1.0 - 1 / 3)
    # weighted: group 0 twice, group 2 once: gaps 1.0, 1.0, -0.5
    ws = WeightedSlice(np.arange(3), 3, Pairs.of(index, rewards, False), eps, sigma,
                       acc.columns + margin.columns + d.columns)
    block = ws.block(unit_counts(np.array([[0, 0, 2], [1, 1, 1]]), 3))
    assert list(acc.weighted(block, 0)) == [2 / 3, 0.5]
    assert list(d.weighted(block, 1)) == [2 / 3, 0.0]
    assert list(margin.weighted(block, 0)) == [2.5 / 3 / sigma, 0.0]
    # every reward equal: sigma 0, the margin 0 (nan without pairs)
    flat = PooledPairs(Pairs.of(index, np.zeros(6), False), eps, 0.0)
    assert margin.pooled(flat, 0) == 0.0
    none = PooledPairs(Pairs.of(PairIndex.from_groups([ComparisonGroup("t", "q", ("x", "y"), (1, 1))]),
                                np.zeros(2), False), eps, 0.0)
    assert math.isnan(margin.pooled(none, 0)) and math.isnan(acc.pooled(none, 0))


def test_of_columns_refuses_what_it_cannot_derive():
    with pytest.raises(ValueError, match="is not declared eps-dependent, but its columns \\['x > e'\\] depend on eps"):
        ComputedMetric.of_columns(_def("d"), C.DIFF_ABOVE, C.DIFF_PAIRS)
    with pytest.raises(ValueError, match="is declared eps-dependent, but none of its columns depend on eps"):
        ComputedMetric.of_columns(_def("acc", True), C.DIFF_POSITIVE, C.DIFF_PAIRS)
    with pytest.raises(ValueError, match="reads the flip pairs .* declare it needs_forms=True"):
        ComputedMetric.of_columns(MetricDef("f", "f", False, False, Counted.REWRITTEN_DISCRIMINATION_PAIRS, "f"),
                                  C.FLIPPED, C.FLIP_PAIRS)
    with pytest.raises(ValueError, match="complement or per_sigma, not both"):
        Ratio.of(C.ABS_GAP, C.DIFF_PAIRS, complement=True, per_sigma=True)
    with pytest.raises(TypeError, match="the numerator of a ratio is a PairColumn"):
        ComputedMetric.of_columns(_def("x"), ("x > 0", C.DIFF_PAIRS), C.DIFF_PAIRS)
    with pytest.raises(ValueError, match="the denominator of a ratio names no column"):
        ComputedMetric.of_columns(_def("x"), C.DIFF_POSITIVE, ())
    by_hand = next(m for m in BUILTIN if m.name == "ds_auc")
    with pytest.raises(ValueError, match="'ds_auc' is not a single ratio of columns"):
        ComputedMetric.difference(_def("x"), by_hand, by_hand)


def test_check_metric_catches_a_metric_in_raw_reward_units():
    """The mean gap without sigma: its two forms agree, but it follows the rewards' scale."""
    raw = ComputedMetric.of_columns(_def("raw_margin"), C.ABS_GAP, C.DIFF_PAIRS, exact=False)
    with pytest.raises(MetricCheckError, match="metric 'raw_margin' is not invariant to an affine change of the "
                                               "rewards: r -> 3.0 r \\+ 1.5 turns its value .* divide a column in "
                                               "reward units by sigma"):
        check_metric(raw)
    above_half = PairColumn("x > 0.5", PairSet.DIFF, lambda p, e: p.diff > 0.5)  # a fixed raw threshold
    with pytest.raises(MetricCheckError, match="'fixed_threshold' is not invariant to an affine change"):
        check_metric(ComputedMetric.of_columns(_def("fixed_threshold"), above_half, C.DIFF_PAIRS))
    check_metric(ComputedMetric.of_columns(_def("margin"), C.ABS_GAP, C.DIFF_PAIRS, per_sigma=True))  # in sigma


def test_check_metric_catches_forms_that_disagree():
    """A hand-written metric whose weighted form counts ties as losses, its pooled form as halves."""
    halves = ComputedMetric(_def("acc"), lambda p, k: float(np.mean((p.pairs.diff > 0) + 0.5 * (p.pairs.diff == 0)))
                            if p.pairs.diff.size else math.nan,
                            lambda b, k: ratio(b.total(C.DIFF_POSITIVE), b.total(C.DIFF_PAIRS)),
                            (C.DIFF_POSITIVE, C.DIFF_PAIRS))
    with pytest.raises(MetricCheckError, match="metric 'acc': its pooled and weighted forms differ on resample 0 "
                                               ".*: value .* pooled, .* weighted \\(declared bit-equal\\)"):
        check_metric(halves)
    exact_mean = ComputedMetric.of_columns(_def("margin"), C.ABS_GAP, C.DIFF_PAIRS, per_sigma=True, exact=True)
    with pytest.raises(MetricCheckError, match="'margin' .* sum float values .* declare it exact=False"):
        check_metric(exact_mean)  # a float sum taken in another order rounds otherwise: not bit-equal
    scalar = ComputedMetric(_def("one"), lambda p, k: 1.0, lambda b, k: np.float64(1.0))
    with pytest.raises(MetricCheckError, match="gave shape \\(\\) for a block of 12 resamples"):
        check_metric(scalar)


def test_check_metric_catches_a_dependence_on_group_order():
    first = ComputedMetric(_def("first_pair"), lambda p, k: float(p.pairs.diff[0] > 0),
                           lambda b, k: ratio(b.total(C.DIFF_POSITIVE), b.total(C.DIFF_PAIRS)),
                           (C.DIFF_POSITIVE, C.DIFF_PAIRS))
    with pytest.raises(MetricCheckError, match="metric 'first_pair' depends on the order of the groups"):
        check_metric(first)


def test_check_metric_names_the_declaration_a_metric_lacks():
    cross = ComputedMetric.of_columns(_def("cross", True), C.CROSS_ABOVE, C.CROSS)  # rewrites, not declared
    with pytest.raises(MetricCheckError, match="its pooled form failed .* must be declared needs_forms=True"):
        check_metric(cross)
    check_metric(ComputedMetric.of_columns(MetricDef("cross", "c", True, True, Counted.CROSS_FORM_DISCRIMINATION_PAIRS,
                                                     "c"), C.CROSS_ABOVE, C.CROSS, needs_forms=True))
    unlisted = ComputedMetric(_def("acc"), lambda p, k: p.total(C.DIFF_POSITIVE) / p.total(C.DIFF_PAIRS)
                              if p.pairs.diff.size else math.nan,
                              lambda b, k: ratio(b.total(C.DIFF_POSITIVE), b.total(C.DIFF_PAIRS)), (C.DIFF_PAIRS,))
    with pytest.raises(MetricCheckError, match="its weighted form failed .* KeyError: .* must be among the "
                                               "declaration's columns"):
        check_metric(unlisted)
    with pytest.raises(TypeError, match="checks a ComputedMetric, not MetricDef"):
        check_metric(_def("acc"))  # type: ignore[arg-type]


def test_random_groups_meet_every_kind_of_pair():
    rng = np.random.default_rng(1)
    groups, rewards = random_groups(rng, forms=True, n_groups=30)
    index = PairIndex.from_groups(groups)
    pairs = Pairs.of(index, rewards, True)
    assert len(rewards) == sum(len(g.responses) for g in groups) and np.all(rewards * 4 == np.round(rewards * 4))
    assert (pairs.diff == 0).any() and (pairs.diff > 0).any() and (pairs.diff < 0).any() and (pairs.eq == 0).any()
    assert pairs.rewrites.diff_cross.any() and (~pairs.rewrites.diff_cross).any() and pairs.rewrites.eq_cross.any()
    assert len(pairs.rewrites.new) > 0 and (pairs.diff_len > 0).any() and (pairs.diff_len < 0).any()
