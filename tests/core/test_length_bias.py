"""Length-bias metrics (issue 16): length_correlation over specificity pairs, accuracy_by_length and
length_bias_gap over discrimination pairs. Hand-computed cases, then hypothesis properties."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rmbench.core import metrics as M
from rmbench.core import metrics_bias as MB
from rmbench.core.metric_registry import metric_def
from rmbench.errors import ModelError

# --- hand-computed cases ---------------------------------------------------------------------


def test_length_correlation_hand_case_with_reward_ties():
    """4 pairs (x = reward diff, y = length diff): (2, 10), (-1, -5), (0.5, 3), (1, -2).

    x with its negatives: -2 -1 -1 -0.5 0.5 1 1 2 -> ranks 1, 2.5, 2.5, 4, 5, 6.5, 6.5, 8; minus the
    mean rank 4.5: R(2) = 3.5, R(-1) = -2, R(0.5) = 0.5, R(1) = 2.
    y with its negatives: -10 -5 -3 -2 2 3 5 10 -> R(10) = 3.5, R(-5) = -2.5, R(3) = 1.5, R(-2) = -0.5.
    sum R(x) R(y) = 12.25 + 5 + 0.75 - 1 = 17; sum R(x)^2 = 20.5; sum R(y)^2 = 21.
    """
    got = MB.length_correlation([2, -1, 0.5, 1], [10, -5, 3, -2])
    assert got == pytest.approx(17 / math.sqrt(20.5 * 21), abs=1e-12)
    assert got == pytest.approx(0.8193365776101958, abs=1e-12)


def test_length_correlation_sees_a_constant_bonus_for_the_longer_answer():
    """Pairs (1, 5), (-1, -3), (1, 1): the longer answer always gets +1, whatever the length gap.

    x: -1 -1 -1 1 1 1 -> R(+-1) = +-1.5; y: -5 -3 -1 1 3 5 -> R(5) = 2.5, R(-3) = -1.5, R(1) = 0.5.
    sum R(x) R(y) = 3.75 + 2.25 + 0.75 = 6.75 = sum R(x)^2; sum R(y)^2 = 8.75; rho = sqrt(27 / 35).
    Oriented longer-first the reward gaps would all be 1 (zero variance: no signal at all).
    """
    assert MB.length_correlation([1, -1, 1], [5, -3, 1]) == pytest.approx(math.sqrt(27 / 35), abs=1e-12)


def test_length_correlation_equal_length_pairs_count_only_in_the_spread():
    """Pairs (1, 2), (3, 0), (-2, -4).

    x: -3 -2 -1 1 2 3 -> R(1) = 0.5, R(3) = 2.5, R(-2) = -1.5.
    y: -4 -2 0 0 2 4 -> ranks 1, 2, 3.5, 3.5, 5, 6 -> R(2) = 1.5, R(0) = 0, R(-4) = -2.5.
    sum R(x) R(y) = 0.75 + 0 + 3.75 = 4.5; sum R(x)^2 = 8.75; sum R(y)^2 = 8.5.
    """
    assert MB.length_correlation([1, 3, -2], [2, 0, -4]) == pytest.approx(4.5 / math.sqrt(8.75 * 8.5), abs=1e-12)


def test_length_correlation_nan_and_errors():
    assert math.isnan(MB.length_correlation([], []))
    assert math.isnan(MB.length_correlation([1.0], [3]))  # fewer than 2 pairs
    assert math.isnan(MB.length_correlation([0, 0, 0], [1, -2, 3]))  # no reward difference
    assert math.isnan(MB.length_correlation([1, -2, 3], [0, 0, 0]))  # no length difference
    with pytest.raises(ValueError, match="aligned"):
        MB.length_correlation([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="finite"):
        MB.length_correlation([1, 2], [1, math.nan])
    with pytest.raises(ModelError):
        MB.length_correlation([1, math.inf], [1, 2])


def test_length_correlation_is_plus_minus_one_for_a_pure_length_reward():
    y = np.array([3, -7, 12, 0, 5, -1])
    assert MB.length_correlation(0.01 * y, y) == 1.0
    assert MB.length_correlation(-2.0 * y, y) == -1.0
    assert MB.length_correlation(np.sign(y) * y ** 2, y) == 1.0  # any increasing odd function of y


def test_accuracy_by_length_hand_case():
    """gap: 1 -1 0 2 -3 0.5; L = len(better) - len(worse): 10 5 -4 -2 0 -1.

    Better is longer (L > 0): gaps 1, -1 -> (1 + 0) / 2 = 0.5.
    Better is shorter (L < 0): gaps 0, 2, 0.5 -> (0.5 + 1 + 1) / 3 = 5/6. The pair with L = 0 is in neither.
    """
    longer, shorter = MB.accuracy_by_length([1, -1, 0, 2, -3, 0.5], [10, 5, -4, -2, 0, -1])
    assert longer == pytest.approx(0.5, abs=1e-12)
    assert shorter == pytest.approx(5 / 6, abs=1e-12)
    assert MB.length_bias_gap([1, -1, 0, 2, -3, 0.5], [10, 5, -4, -2, 0, -1]) == pytest.approx(-1 / 3, abs=1e-12)


def test_accuracy_by_length_empty_sides_are_nan():
    longer, shorter = MB.accuracy_by_length([1, 2], [3, 0])
    assert longer == 1.0 and math.isnan(shorter)
    assert all(math.isnan(v) for v in MB.accuracy_by_length([1, 2], [0, 0]))
    assert all(math.isnan(v) for v in MB.accuracy_by_length([], []))
    assert math.isnan(MB.length_bias_gap([1, 2], [3, 0]))
    with pytest.raises(ValueError, match="aligned"):
        MB.accuracy_by_length([1.0], [])
    with pytest.raises(ModelError):
        MB.accuracy_by_length([math.nan], [1])


def test_registry_entries():
    corr = metric_def("length_correlation")
    assert corr.n_counts == "specificity pairs" and not corr.eps_dependent and "0 is ideal" in corr.reading
    for name in ("accuracy_longer_better", "accuracy_shorter_better"):
        d = metric_def(name)
        assert d.n_counts == "discrimination pairs" and d.higher_is_better and not d.eps_dependent
    assert metric_def("length_bias_gap").n_counts == "discrimination pairs"


# --- properties ------------------------------------------------------------------------------

pairs = st.lists(st.tuples(st.integers(-6, 6), st.integers(-40, 40)), min_size=0, max_size=30)


def _split(p):
    x = np.array([a for a, _ in p], dtype=float)
    y = np.array([b for _, b in p], dtype=float)
    return x, y


def _brute_spearman(u: np.ndarray, v: np.ndarray) -> float:
    """Pearson correlation of average ranks, the ranks counted pair by pair (O(n^2))."""
    def ranks(z):
        return np.array([np.sum(z < zi) + (np.sum(z == zi) + 1) / 2 for zi in z])
    ru, rv = ranks(u) - ranks(u).mean(), ranks(v) - ranks(v).mean()
    return float(np.dot(ru, rv) / math.sqrt(np.dot(ru, ru) * np.dot(rv, rv)))


def _defined(x, y) -> bool:
    return x.size >= 2 and np.any(x != 0) and np.any(y != 0)


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_length_correlation_is_spearman_of_both_orientations(p):
    x, y = _split(p)
    got = MB.length_correlation(x, y)
    if not _defined(x, y):
        assert math.isnan(got)
        return
    assert got == pytest.approx(_brute_spearman(np.r_[x, -x], np.r_[y, -y]), abs=1e-12)
    assert -1.0 <= got <= 1.0


@settings(max_examples=100, deadline=None)
@given(pairs)
def test_length_correlation_matches_scipy(p):
    stats = pytest.importorskip("scipy.stats")
    x, y = _split(p)
    assume(_defined(x, y))
    expected = stats.spearmanr(np.r_[x, -x], np.r_[y, -y]).statistic
    assert MB.length_correlation(x, y) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(pairs, st.data())
def test_length_correlation_ignores_pair_orientation(p, data):
    """Swapping a and b in any pair negates both of its differences; the value is unchanged."""
    x, y = _split(p)
    flip = np.array(data.draw(st.lists(st.booleans(), min_size=x.size, max_size=x.size)), dtype=bool)
    s = np.where(flip, -1.0, 1.0)
    base, moved = MB.length_correlation(x, y), MB.length_correlation(s * x, s * y)
    assert (math.isnan(base) and math.isnan(moved)) or base == moved


@settings(max_examples=200, deadline=None)
@given(pairs, st.data())
def test_length_correlation_ignores_pair_order(p, data):
    x, y = _split(p)
    order = np.array(data.draw(st.permutations(range(x.size))), dtype=np.int64)
    base, moved = MB.length_correlation(x, y), MB.length_correlation(x[order], y[order])
    assert (math.isnan(base) and math.isnan(moved)) or base == pytest.approx(moved, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_length_reversal(p):
    """len -> -len: length_correlation changes sign, accuracy_by_length swaps, the gap changes sign."""
    x, y = _split(p)
    base, rev = MB.length_correlation(x, y), MB.length_correlation(x, -y)
    assert (math.isnan(base) and math.isnan(rev)) or rev == -base
    longer, shorter = MB.accuracy_by_length(x, y)
    r_longer, r_shorter = MB.accuracy_by_length(x, -y)
    np.testing.assert_equal([r_longer, r_shorter], [shorter, longer])
    gap, r_gap = MB.length_bias_gap(x, y), MB.length_bias_gap(x, -y)
    assert (math.isnan(gap) and math.isnan(r_gap)) or r_gap == -gap


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=2, max_size=30), st.lists(st.integers(0, 300), min_size=30, max_size=30),
       st.integers(1, 64), st.integers(-100, 100))
def test_invariant_to_affine_rewards(rewards, lengths, a4, b):
    """r -> a r + b, a > 0 (a = k/4, integer b: exact in float64), on pairs built from per-response
    rewards and lengths: every value is unchanged, exactly."""
    r, a = np.array(rewards, dtype=float), a4 / 4
    length = np.array(lengths[: r.size], dtype=float)
    first, second = np.arange(0, r.size - 1), np.arange(1, r.size)

    def values(rr):
        d, ld = rr[first] - rr[second], length[first] - length[second]
        return [MB.length_correlation(d, ld), *MB.accuracy_by_length(d, ld), MB.length_bias_gap(d, ld)]

    np.testing.assert_equal(values(a * r + b), values(r))


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_accuracy_by_length_ranges_and_mixture(p):
    """Each side in [0, 1], the gap in [-1, 1], and the two sides with the equal-length pairs
    make up pairwise_accuracy: n acc = n_longer acc_longer + n_shorter acc_shorter + n_equal acc_equal."""
    x, y = _split(p)
    longer, shorter = MB.accuracy_by_length(x, y)
    gap = MB.length_bias_gap(x, y)
    n_l, n_s, n_0 = int(np.sum(y > 0)), int(np.sum(y < 0)), int(np.sum(y == 0))
    for v, n in ((longer, n_l), (shorter, n_s)):
        assert math.isnan(v) == (n == 0)
        assert math.isnan(v) or 0.0 <= v <= 1.0
    assert math.isnan(gap) == (n_l == 0 or n_s == 0)
    assert math.isnan(gap) or -1.0 <= gap <= 1.0
    if x.size:
        total = (n_l * (longer if n_l else 0.0) + n_s * (shorter if n_s else 0.0)
                 + n_0 * (M.pairwise_accuracy(x[y == 0]) if n_0 else 0.0))
        assert total == pytest.approx(x.size * M.pairwise_accuracy(x), abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-6, 6), st.integers(-40, 40)), min_size=1, max_size=15))
def test_no_length_bias_gives_zero(p):
    """When every pair (x, y) comes with a pair (-x, y) (the reward gap's sign does not depend on
    which answer is longer), the length correlation is 0 (or nan)."""
    x, y = _split(p)
    got = MB.length_correlation(np.r_[x, -x], np.r_[y, y])
    assert math.isnan(got) or got == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=20), st.data())
def test_a_reward_that_always_prefers_the_longer_answer_is_positively_correlated(abs_len, data):
    """Any positive reward gap for the longer answer, any orientation: rho > 0; and acc_longer = 1,
    acc_shorter = 0 over the same gaps read as discrimination pairs."""
    y = np.array(abs_len, dtype=float)
    bonus = np.array(data.draw(st.lists(st.integers(1, 9), min_size=y.size, max_size=y.size)), dtype=float)
    s = np.array(data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=y.size, max_size=y.size)))
    assert MB.length_correlation(s * bonus, s * y) > 0
    longer, shorter = MB.accuracy_by_length(s * bonus, s * y)
    assert (math.isnan(longer) or longer == 1.0) and (math.isnan(shorter) or shorter == 0.0)
