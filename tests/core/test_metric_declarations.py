"""A new computed metric is one declaration (rmbench.core.metric_declaration.ComputedMetric):
registered, every summary reports it per slice with a CI, by both bootstrap methods, without a
change to the summary code."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from rmbench.core import metric_registry as R
from rmbench.core import pair_columns as C
from rmbench.core.metric_check import MetricCheckError, check_metric
from rmbench.core.metric_declaration import Computation, ComputedMetric
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.types import ComparisonGroup
from rmbench.core.weighted import PairColumn, PairSet
from rmbench.core.weighted_order import ratio
from rmbench.registry import RegistryError
from rmbench.results.statistics.summary import summarize
from tests.core.test_weighted_bootstrap import random_groups

GAP = PairColumn("x", PairSet.DIFF, lambda p, e: p.diff)
MEAN_GAP = ComputedMetric(
    MetricDef("mean_reward_difference", "mean gap", True, False, Counted.DISCRIMINATION_PAIRS,
              "mean_i (r(better_i) - r(worse_i)) over pairs with u(a) > u(b)"),
    pooled=lambda p, k: float(np.mean(p.pairs.diff)) if p.pairs.diff.size else math.nan,
    weighted=lambda b, k: ratio(b.total(GAP), b.total(C.DIFF_PAIRS)),
    columns=(GAP, C.DIFF_PAIRS), shift_gap=True, exact=False)
"""A float mean: equal by both methods to rounding, as reward_margin (so declared not exact); in raw
reward units, unlike reward_margin, so check_metric refuses it."""

AT_LEAST = PairColumn("x >= e", PairSet.DIFF, lambda p, e: p.diff >= e, per_eps=True)
DISCRIMINATION_AT_LEAST = ComputedMetric(
    MetricDef("discrimination_at_least", "D>=", True, True, Counted.DISCRIMINATION_PAIRS,
              "P(r(a) >= r(b) + eps | u(a) > u(b))"),
    pooled=lambda p, k: float(np.count_nonzero(p.pairs.diff >= p.eps[k]) / p.pairs.diff.size)
    if p.pairs.diff.size else math.nan,
    weighted=lambda b, k: ratio(b.total(AT_LEAST, k), b.total(C.DIFF_PAIRS)),
    columns=(AT_LEAST, C.DIFF_PAIRS))
"""A ratio of counts per eps: bit-equal by both methods."""


@pytest.fixture
def declared():
    """MEAN_GAP and DISCRIMINATION_AT_LEAST registered for one test."""
    for m in (MEAN_GAP, DISCRIMINATION_AT_LEAST):
        R.register_metric(m.name, m)
    yield
    for m in (MEAN_GAP, DISCRIMINATION_AT_LEAST):
        R.METRICS.unregister(m.name)


def _by_key(records):
    return {(r.metric, r.subset, r.shift, r.eps): r for r in records}


def test_a_declared_metric_is_summarized_by_both_methods(declared):
    groups, rewards = random_groups(5, 40, shifts=True)
    eps = (0.0, 0.5)
    resample = _by_key(summarize("t", groups, rewards, eps, n_bootstrap=60, seed=2, method="resample"))
    weighted = _by_key(summarize("t", groups, rewards, eps, n_bootstrap=60, seed=2, method="weighted"))
    assert resample.keys() == weighted.keys()
    slices = {(k[1], k[2]) for k in resample if k[0] == "pairwise_accuracy"}
    assert len(slices) > 3  # overall, subsets, shifts
    for subset, shift in slices:
        acc = resample[("pairwise_accuracy", subset, shift, None)]
        mean = resample[("mean_reward_difference", subset, shift, None)]
        assert mean.n == acc.n and mean.estimate.ci_low is not None
        assert mean.estimate.ci_low <= mean.estimate.value <= mean.estimate.ci_high
        w = weighted[("mean_reward_difference", subset, shift, None)].estimate
        for p, q in zip((mean.estimate.value, mean.estimate.ci_low, mean.estimate.ci_high),
                        (w.value, w.ci_low, w.ci_high)):
            assert q == pytest.approx(p, rel=1e-12, abs=1e-15)
        for e in eps:
            d, dw = resample[("discrimination_at_least", subset, shift, e)], weighted[("discrimination_at_least",
                                                                                      subset, shift, e)]
            assert (d.estimate, d.n, d.eps_unit) == (dw.estimate, dw.n, "sigma")
    assert ("mean_reward_difference_shift_gap", None, "paraphrase", None) in weighted


def test_check_metric_passes_a_count_per_eps_and_refuses_a_mean_in_raw_reward_units():
    check_metric(DISCRIMINATION_AT_LEAST)
    with pytest.raises(MetricCheckError, match="'mean_reward_difference' is not invariant to an affine change"):
        check_metric(MEAN_GAP)  # summarized fine by both methods (above), but in the rewards' own unit


def test_its_value_is_its_formula_and_it_comes_after_the_built_in_metrics(declared):
    groups, rewards = random_groups(8, 12, subsets=False)
    records = summarize("t", groups, rewards, (0.0,), n_bootstrap=20, seed=1)
    overall = [r for r in records if r.subset is None and r.shift is None]
    gaps = [rewards[o + b] - rewards[o + w] for g, o in zip(groups, np.cumsum([0] + [len(g.responses)
                                                                                      for g in groups]))
            for b, w in g.discrimination_pairs()]
    mean = next(r for r in overall if r.metric == "mean_reward_difference")
    assert mean.estimate.value == pytest.approx(float(np.mean(gaps)), rel=1e-12)
    names = [r.metric for r in overall]
    assert names.index("mean_reward_difference") > names.index("length_bias_gap")
    assert R.metric_def("mean_reward_difference").n_counts == "discrimination pairs"


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="counts pairs"):
        ComputedMetric(MetricDef("per_group", "pg", True, False, Counted.GROUPS, "..."), MEAN_GAP.pooled,
                       MEAN_GAP.weighted)
    reached = Computation(MEAN_GAP.pooled, MEAN_GAP.weighted)
    with pytest.raises(ValueError, match="per eps"):
        ComputedMetric(DISCRIMINATION_AT_LEAST.definition, MEAN_GAP.pooled, MEAN_GAP.weighted, reached_at=reached)
    reported = MetricDef("reported_pairs", "rp", True, False, Counted.DISCRIMINATION_PAIRS, "a task reports it")
    R.register_metric("reported_pairs", reported)
    try:
        assert R.METRICS.origin("reported_pairs") == "register_metric('reported_pairs')"
        with pytest.raises(ValueError, match="already declared as a task's score"):
            R.register_metric("reported_pairs", ComputedMetric(reported, MEAN_GAP.pooled, MEAN_GAP.weighted))
    finally:
        R.METRICS.unregister("reported_pairs")
    accuracy = R.METRICS.get("pairwise_accuracy")
    with pytest.raises(ValueError, match="already computed differently"):
        R.register_metric("pairwise_accuracy", ComputedMetric(accuracy.definition, MEAN_GAP.pooled, MEAN_GAP.weighted))
    R.register_metric("pairwise_accuracy", accuracy.definition)  # the same declaration again: a no-op
    assert R.METRICS.get("pairwise_accuracy") is accuracy and R.METRICS.origin("pairwise_accuracy") == "built-in"
    with pytest.raises(RegistryError, match="metric 'x' from register_metric.'x'. is not a ComputedMetric or "
                                            "MetricDef named 'x'"):
        R.register_metric("x", accuracy)  # the name is the declaration's


def test_the_older_one_argument_form_takes_the_name_from_the_declaration():
    reported = MetricDef("older_form", "of", True, False, Counted.DISCRIMINATION_PAIRS, "a task reports it")
    with pytest.warns(DeprecationWarning, match=r"register_metric\(value\) is the older form of "
                                                r"register_metric\('older_form', value\)"):
        R.register_metric(reported)
    try:
        assert R.metric_def("older_form") == reported
    finally:
        R.METRICS.unregister("older_form")


def test_what_n_counts_is_words_and_a_count_kind():
    plugin = MetricDef("my_score", "mine", True, False, "groups", "a plugin's score")
    assert plugin.counted is Counted.GROUPS and type(plugin.n_counts) is str and plugin.n_counts == "groups"
    own = MetricDef("x", "x", True, False, "rows", "own words")
    assert own.n_counts == "rows" and own.counted is None
    assert {d.counted for d in R.computed_metrics()} <= set(Counted)


def test_pair_columns_belong_to_the_metrics_that_declare_them():
    """A plugin's column named like a built-in one (``x > 0``: DIFF_POSITIVE's name, another value)
    is its own column: neither metric reads the other's sums, whatever the names."""
    at_least_zero = PairColumn(C.DIFF_POSITIVE.name, PairSet.DIFF, lambda p, e: p.diff >= 0)
    not_below = ComputedMetric(
        MetricDef("not_below", "x>=0", True, False, Counted.DISCRIMINATION_PAIRS, "P(r(a) >= r(b) | u(a) > u(b))"),
        pooled=lambda p, k: float(np.mean(p.pairs.diff >= 0)) if p.pairs.diff.size else math.nan,
        weighted=lambda b, k: ratio(b.total(at_least_zero), b.total(C.DIFF_PAIRS)),
        columns=(at_least_zero, C.DIFF_PAIRS))
    R.register_metric("not_below", not_below)
    try:
        groups, rewards = random_groups(6, 30)
        for method in ("resample", "weighted"):
            records = {(r.metric, r.subset): r for r in summarize("t", groups, rewards, (0.0,), n_bootstrap=30, seed=4,
                                                                  method=method) if r.shift is None}
            gaps = np.concatenate([[rewards[o + b] - rewards[o + w] for b, w in g.discrimination_pairs()]
                                   for g, o in zip(groups, np.cumsum([0] + [len(g.responses) for g in groups]))])
            assert records[("not_below", None)].estimate.value == pytest.approx(np.mean(gaps >= 0), abs=1e-15)
            accuracy = np.mean((gaps > 0) + 0.5 * (gaps == 0))
            assert records[("pairwise_accuracy", None)].estimate.value == pytest.approx(accuracy, abs=1e-15)
            assert np.mean(gaps >= 0) != accuracy  # ties: the two columns differ
    finally:
        R.METRICS.unregister("not_below")


# --- a package's metrics: the rmbench.metrics entry points ---------------------------------------

PLUGIN_PKG = Path(__file__).parents[1] / "plugin_pkg"
"""The plugin package of tests/plugins/test_plugins.py, whose ``tie_rate`` is declared here through a faked entry
point."""


@pytest.fixture
def metric_entry_points(monkeypatch, tmp_path):
    """The metric registry as a process that has these entry points installed sees it (restored after)."""
    from importlib.metadata import EntryPoint

    from rmbench import registry

    monkeypatch.syspath_prepend(str(PLUGIN_PKG))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(R.METRICS, "_entries", dict(R.METRICS._entries))  # restored after
    monkeypatch.setattr(R.METRICS, "_entry_points_loaded", False)
    points: list[EntryPoint] = []
    real = registry.entry_points
    monkeypatch.setattr(registry, "entry_points",
                        lambda group: list(points) if group == R.ENTRY_POINT_GROUP else real(group=group))
    monkeypatch.setenv(registry.PLUGINS_VARIABLE, "all")  # the suite runs with none (tests/conftest.py)
    yield lambda name, value: points.append(EntryPoint(name, value, R.ENTRY_POINT_GROUP))
    for module in ("rmbench_plugin_example.metric", "rmbench_plugin_example", "clashing_metric"):
        sys.modules.pop(module, None)


def test_a_package_s_metric_is_declared_by_its_entry_point_and_computed_both_ways(metric_entry_points):
    metric_entry_points("tie_rate", "rmbench_plugin_example.metric:TIE_RATE")
    assert "rmbench_plugin_example.metric" not in sys.modules  # loaded when a declaration is asked for
    assert R.is_declared("tie_rate") and R.metric_def("tie_rate").label == "tie rate"
    assert R.computed_metrics()[-1].name == "tie_rate"  # after the built-in ones
    # by hand, the pairs (better, worse) by their rewards: (1, 1) a tie; (2, 1); a group of 3 levels rewarded
    # 1, 1, 0: (1, 1) a tie, (1, 0), (1, 0). 2 ties of 5 pairs
    groups = [ComparisonGroup("a", "q", ("x", "y"), (1, 0)), ComparisonGroup("b", "q", ("x", "y"), (1, 0)),
              ComparisonGroup("c", "q", ("x", "y", "z"), (2, 1, 0))]
    rewards = np.array([1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 0.0])
    for method in ("resample", "weighted"):
        overall = _by_key(summarize("t", groups, rewards, (0.0,), n_bootstrap=20, seed=1, method=method))
        assert overall[("tie_rate", None, None, None)].estimate.value == 2 / 5
        assert overall[("tie_rate", None, None, None)].n == 5
    groups, rewards = random_groups(5, 40, shifts=True)  # many ties: rewards on a grid
    resample = _by_key(summarize("t", groups, rewards, (0.0,), n_bootstrap=60, seed=2, method="resample"))
    weighted = _by_key(summarize("t", groups, rewards, (0.0,), n_bootstrap=60, seed=2, method="weighted"))
    ties = [k for k in resample if k[0] == "tie_rate"]
    assert len(ties) > 3 and all(resample[k].estimate == weighted[k].estimate for k in ties)  # exact: bit-equal
    check_metric(R.METRICS.get("tie_rate"))  # the package's test: its two forms agree, and it is invariant


def test_a_broken_metric_entry_point_fails_loudly_every_time_it_is_asked(metric_entry_points):
    from rmbench.registry import RegistryError

    metric_entry_points("ties_rate", "rmbench_plugin_example.metric:TIE_RATE")
    for _ in range(2):  # asked again, it fails again: never a registry silently without it
        with pytest.raises(RegistryError, match="metric 'ties_rate' from entry point 'ties_rate' of an installed "
                                                "package is not a ComputedMetric or MetricDef named 'ties_rate'"):
            R.is_declared("pairwise_accuracy")


def test_a_metric_entry_point_that_redeclares_a_metric_is_refused(metric_entry_points, tmp_path):
    from rmbench.registry import RegistryError

    (tmp_path / "clashing_metric.py").write_text(
        "from rmbench.plugins import MetricDef\n"
        "ACCURACY = MetricDef('pairwise_accuracy', 'acc', False, False, 'groups', 'lower is better?')\n")
    metric_entry_points("pairwise_accuracy", "clashing_metric:ACCURACY")
    for _ in range(2):  # asked again, it fails again
        with pytest.raises(RegistryError, match="duplicate metric name 'pairwise_accuracy': defined by built-in and "
                                                "by entry point 'pairwise_accuracy' of an installed package"):
            R.computed_metrics()
