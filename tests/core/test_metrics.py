import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rmbench.core import metrics as M
from tests.support import rb_official

CASES = json.loads((Path(__file__).with_name("metric_cases.json")).read_text())["cases"]


def _compute(name: str, case: dict):
    d, e = case["diff_gaps"], case["eq_gaps"]
    metric, _, eps = name.partition("@")
    if metric == "discrimination":
        return M.discrimination(d, float(eps))
    if metric == "specificity":
        return M.specificity(e, float(eps))
    if metric == "pairwise_accuracy":
        return M.pairwise_accuracy(d)
    if metric == "sign_accuracy":
        return M.sign_accuracy(d, e)
    if metric == "ds_auc":
        return M.ds_auc(d, e)
    if metric == "balanced_best":
        return M.balanced_best(d, e)
    if metric == "reward_margin":
        return M.reward_margin(d, case["sigma"])
    raise AssertionError(name)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_hand_computed_cases(case):
    for name, expected in case["expected"].items():
        got = _compute(name, case)
        for g, x in zip(np.atleast_1d(got), np.atleast_1d(np.array(expected, dtype=float))):
            if math.isnan(x):
                assert math.isnan(g), (name, got)
            else:
                assert g == pytest.approx(x, abs=case["tol"]), (case["name"], name, got, expected)


def test_sigma_is_sample_std_and_eps_units():
    r = [1.0, 2.0, 3.0, 4.0]
    assert M.reward_sigma(r) == pytest.approx(math.sqrt(5 / 3))
    assert M.reward_sigma([7.0]) == 0.0
    assert M.raw_eps(0.5, "sigma", 4.0) == 2.0
    assert M.raw_eps(0.5, "raw", 4.0) == 0.5
    with pytest.raises(ValueError):
        M.raw_eps(0.5, "percent", 1.0)


gaps = st.lists(st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 1)), min_size=1, max_size=25)


@settings(max_examples=200, deadline=None)
@given(gaps, gaps)
def test_prop_2_1_identity(d, e):
    """sign_accuracy = Spec(0) * P(equal) + D(0) * P(different) (arXiv 2606.21795, Prop. 2.1)."""
    p_eq = len(e) / (len(d) + len(e))
    expected = M.specificity(e, 0.0) * p_eq + M.discrimination(d, 0.0) * (1 - p_eq)
    assert M.sign_accuracy(d, e) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(gaps, gaps)
def test_ds_auc_equals_brute_force_pair_count(d, e):
    x, y = np.array(d), np.abs(np.array(e))
    wins = sum(1.0 if xi > yj else (0.5 if xi == yj and xi > 0 else 0.0) for xi in x for yj in y)
    assert M.ds_auc(d, e) == pytest.approx(wins / (len(x) * len(y)), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(gaps, gaps)
def test_ds_auc_is_the_area_under_the_spec_d_curve(d, e):
    """Trace (Spec(eps), D(eps)) over eps in [0, inf) and integrate with trapezoids, starting from
    the flat extension to Spec = 0 at height D(0)."""
    x, y = np.array(d), np.abs(np.array(e))
    breaks = np.unique(np.concatenate([[0.0], x[x > 0], y]))
    pts = [(0.0, M.discrimination(d, 0.0))]
    for b in breaks:
        # just below b (if b > 0) and at b: D is right-continuous, Spec jumps at b
        if b > 0:
            below = np.nextafter(b, -np.inf)
            pts.append((M.specificity(e, below), M.discrimination(d, below)))
        pts.append((M.specificity(e, b), M.discrimination(d, b)))
    pts.append((1.0, 0.0))
    area = sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(pts, pts[1:]))
    assert M.ds_auc(d, e) == pytest.approx(area, abs=1e-9)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(gaps, gaps)
def test_balanced_best_is_the_max_over_a_dense_eps_grid(d, e):
    value, eps = M.balanced_best(d, e)
    grid = np.unique(np.concatenate([np.linspace(0, 6, 601), np.abs(e)]))
    best = max((M.discrimination(d, g) + M.specificity(e, g)) / 2 for g in grid)
    assert value == pytest.approx(best, abs=1e-12)
    assert (M.discrimination(d, eps) + M.specificity(e, eps)) / 2 == pytest.approx(value, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=4, max_size=30), st.integers(1, 64), st.integers(-100, 100),
       st.floats(0, 2))
def test_sigma_unit_metrics_are_invariant_to_affine_maps(rewards, a4, b, eps):
    """D, Spec (eps in sigma units), ds_auc, balanced_best and reward_margin under r -> a r + b, a > 0.

    Integer rewards with a = k/4 and integer b keep a r + b exact in float64, so equal gaps stay
    equal; only eps * sigma can round, so gaps within rounding of that threshold are skipped.
    """
    r, a = np.array(rewards, dtype=float), a4 / 4
    s = M.reward_sigma(r)
    assume(s > 0)
    n = len(r)
    better, worse = np.arange(0, n - 1, 2), np.arange(1, n, 2)
    eq_a, eq_b = np.arange(0, n - 2), np.arange(2, n)
    d, q = r[better] - r[worse], r[eq_a] - r[eq_b]
    assume(np.min(np.abs(np.concatenate([np.abs(q), d]) - eps * s)) > 1e-9)

    def all_metrics(rr):
        s = M.reward_sigma(rr)
        d, q = rr[better] - rr[worse], rr[eq_a] - rr[eq_b]
        bb, bb_eps = M.balanced_best(d, q)
        return [M.discrimination(d, M.raw_eps(eps, "sigma", s)), M.specificity(q, M.raw_eps(eps, "sigma", s)),
                M.ds_auc(d, q), bb, M.pairwise_accuracy(d), M.sign_accuracy(d, q), bb_eps / s,
                M.reward_margin(d, s)]

    base, moved = all_metrics(r), all_metrics(a * r + b)
    assert moved[:6] == base[:6]
    assert moved[6:] == pytest.approx(base[6:], rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(gaps, gaps)
def test_metric_ranges(d, e):
    for v in (M.pairwise_accuracy(d), M.discrimination(d, 0.1), M.specificity(e, 0.1), M.sign_accuracy(d, e),
              M.ds_auc(d, e), M.balanced_best(d, e)[0]):
        assert 0.0 <= v <= 1.0
    assert M.discrimination(d, 0.0) <= M.pairwise_accuracy(d)
    assert M.balanced_best(d, e)[0] >= 0.5 * (M.discrimination(d, 0) + M.specificity(e, 0)) - 1e-12


def test_empty_inputs_are_nan():
    assert math.isnan(M.pairwise_accuracy([]))
    assert math.isnan(M.discrimination([], 0.1))
    assert math.isnan(M.specificity([], 0.1))
    assert math.isnan(M.ds_auc([1.0], []))
    assert math.isnan(M.sign_accuracy([], []))
    assert math.isnan(M.reward_margin([], 1.0))


# --- Ties ------------------------------------------------------------------------------------

def test_ties_score_hand_computed():
    rows = [("tied:0", [3.0, 2.0], [1.0, 0.0]), ("ref:0", [2.5], [3.0])]
    # tied: accurate, dcm = 1, cim = 1; ref: inaccurate, cim = -0.5
    expected = 0.3 * 1 + 0.3 * 0 + 0.2 * 0 + 0.2 * 0 + 0.01 * math.tanh(-0.5 / 1 - 1)
    assert M.ties_score(rows) == pytest.approx(expected, abs=1e-12)
    stats = M.ties_prompt_stats([3.0, 2.0], [1.0, 0.0])
    assert stats == M.TiesPromptStats(True, 1.0, 1.0)


def _random_ties(rng, n_prompts, discrete):
    rows, official = [], []
    for k in range(n_prompts):
        for kind, n_correct in (("tied", int(rng.integers(2, 6))), ("ref", 1)):
            if kind == "ref" and rng.random() < 0.15:
                continue  # some prompt ids lack their ref row
            n_wrong = int(rng.integers(1, 6))
            scores = (rng.integers(0, 4, n_correct + n_wrong).astype(float) if discrete
                      else rng.normal(size=n_correct + n_wrong) + np.r_[np.ones(n_correct), np.zeros(n_wrong)])
            rows.append((f"{kind}:{k}", scores[:n_correct], scores[n_correct:]))
            official.append({"id": f"{kind}:{k}", "scores": list(scores), "num_correct": n_correct})
    return rows, official


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("discrete", [False, True])
def test_ties_score_matches_official_code(seed, discrete):
    """Against RewardBench's own ``process_single_model`` (rewardbench 0.1.4). Discrete scores
    make equal margins and zero different_correct_margin (the paths where terms are left out)."""
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    rng = np.random.default_rng(seed)
    rows, official = _random_ties(rng, int(rng.integers(1, 30)), discrete)
    assert M.ties_score(rows) == pytest.approx(rb_official.ties_official(official), abs=1e-9)


def test_ties_row_ids_are_checked():
    with pytest.raises(ValueError, match="tied:K"):
        M.ties_score([("prompt-3", [1.0], [0.0])])
    assert M.ties_row_key("tied:007") == ("tied", "7")


# --- Bootstrap -------------------------------------------------------------------------------

def test_bootstrap_is_seeded_and_brackets_the_estimate():
    x = np.random.default_rng(1).normal(size=200)
    stat = lambda u: np.array([x[u].mean()])  # noqa: E731
    low1, high1 = M.bootstrap_ci(stat, len(x), 500, seed=3)
    low2, high2 = M.bootstrap_ci(stat, len(x), 500, seed=3)
    assert low1 == low2 and high1 == high2
    assert low1[0] < x.mean() < high1[0]
    # the 95% CI of a mean is about +-1.96 standard errors
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert (high1[0] - low1[0]) == pytest.approx(2 * 1.96 * se, rel=0.2)


def test_paired_bootstrap_cancels_shared_item_variation():
    rng = np.random.default_rng(0)
    difficulty = rng.normal(size=300) * 5  # large shared variation
    a, b = difficulty + 0.3 + rng.normal(size=300) * 0.1, difficulty
    diff, low, high = M.paired_bootstrap_diff(lambda u: a[u].mean(), lambda u: b[u].mean(), 300, 500, seed=0)
    assert diff == pytest.approx(0.3, abs=0.03)
    assert 0.25 < low < diff < high < 0.35
