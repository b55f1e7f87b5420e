"""Pure metric functions: arrays in, numbers out. No I/O, no model, no task.

Notation (arXiv 2606.21795, "Discretizing Reward Models"): for a discrimination pair (a, b)
with u(a) > u(b) the *gap* is ``r(a) - r(b)``; for a specificity pair (u(a) = u(b)) the gap is
``r(a) - r(b)`` in either order (only ``|gap|`` matters). ``eps`` here is always in raw reward
units; :func:`raw_eps` converts from sigma units.

Every function returns ``nan`` when the pairs it conditions on are absent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray, IntArray
from rmbench.errors import ModelError

METRIC_VERSION = 2
"""Bumped whenever any formula here changes the value it returns; part of the comparability key."""


def _arr(x: ArrayLike) -> FloatArray:
    """Rewards or gaps as a flat float array; NaN or infinity is refused, never counted as a loss
    (a NaN gap is neither > 0 nor == 0, so it would silently turn into a wrong pair)."""
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if not np.isfinite(a).all():
        bad = np.flatnonzero(~np.isfinite(a))
        raise ModelError(f"rewards must be finite numbers, but {bad.size} of {a.size} values are NaN or infinite "
                         f"(the first at position {int(bad[0])}: {a[bad[0]]})")
    return a


def reward_sigma(rewards: ArrayLike) -> float:
    """sigma = sample standard deviation (ddof = 1) of all rewards; 0.0 for fewer than 2 rewards.

    Rewards so large that their squares overflow (|r| above about 1e154) still have a finite sigma:
    it is computed on the rewards divided by the largest |r|, then scaled back (``inf`` only where
    :func:`check_reward_range` refuses the rewards)."""
    r = _arr(rewards)
    if r.size < 2:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        sigma = float(np.std(r, ddof=1))
        if not math.isfinite(sigma):  # the squares overflowed, not the rewards: the same sigma, scaled
            scale = float(np.max(np.abs(r)))
            sigma = float(np.std(r / scale, ddof=1)) * scale
    return sigma


def check_reward_range(rewards: ArrayLike) -> FloatArray:
    """``rewards`` as an array, refused (:class:`ModelError`) when they are not finite or are so far
    apart that a difference between two of them overflows (``max - min`` beyond the largest float,
    about 1.8e308: no pair's gap could be computed). The metrics of a slice start here, so such
    rewards are one error saying so, never "infinite" rewards."""
    r = _arr(rewards)
    if r.size >= 2:
        low, high = float(np.min(r)), float(np.max(r))
        if not math.isfinite(high - low):
            raise ModelError(f"rewards range from {low:.6g} to {high:.6g}: a difference between two of them is "
                             f"beyond the largest float ({np.finfo(np.float64).max:.4g}), so the gaps of the pairs "
                             f"cannot be computed; scale the rewards down")
    return r


def raw_eps(eps: float, unit: str, sigma: float) -> float:
    """eps in raw reward units: ``eps * sigma`` for ``unit == "sigma"``, ``eps`` for ``"raw"``."""
    if unit == "sigma":
        return float(eps) * float(sigma)
    if unit == "raw":
        return float(eps)
    raise ValueError(f"unknown eps unit {unit!r}: use 'sigma' or 'raw'")


def pairwise_accuracy(diff_gaps: ArrayLike) -> float:
    """Pairwise accuracy over discrimination pairs.

    acc = mean_i ( 1[gap_i > 0] + 0.5 * 1[gap_i = 0] ),  gap_i = r(better_i) - r(worse_i).
    """
    g = _arr(diff_gaps)
    if g.size == 0:
        return math.nan
    return float((np.count_nonzero(g > 0) + 0.5 * np.count_nonzero(g == 0)) / g.size)


def discrimination(diff_gaps: ArrayLike, eps: float = 0.0) -> float:
    """D(eps) = P(r(a) > r(b) + eps | u(a) > u(b)) = mean_i 1[gap_i > eps]."""
    g = _arr(diff_gaps)
    if g.size == 0:
        return math.nan
    return float(np.count_nonzero(g > eps) / g.size)


def specificity(eq_gaps: ArrayLike, eps: float = 0.0) -> float:
    """Spec(eps) = 1 - P(|r(a) - r(b)| > eps | u(a) = u(b)) = mean_j 1[|gap_j| <= eps]."""
    g = np.abs(_arr(eq_gaps))
    if g.size == 0:
        return math.nan
    return float(1.0 - np.count_nonzero(g > eps) / g.size)


def sign_accuracy(diff_gaps: ArrayLike, eq_gaps: ArrayLike) -> float:
    """Sign agreement over all pairs: mean of 1[sign(r(a) - r(b)) = sign(u(a) - u(b))].

    A discrimination pair agrees when its gap is > 0, a specificity pair when its gap is exactly 0.
    Proposition 2.1 of arXiv 2606.21795 follows directly:
    sign_accuracy = Spec(0) * P(equal) + D(0) * P(different),
    with P(equal) = n_eq / (n_eq + n_diff) and P(different) = n_diff / (n_eq + n_diff).
    """
    d, e = _arr(diff_gaps), _arr(eq_gaps)
    n = d.size + e.size
    if n == 0:
        return math.nan
    return float((np.count_nonzero(d > 0) + np.count_nonzero(e == 0)) / n)


def ds_auc(diff_gaps: ArrayLike, eq_gaps: ArrayLike) -> float:
    """Threshold-free area under the (Spec(eps), D(eps)) curve as eps sweeps 0 -> inf.

    With X = a discrimination gap and Y = |a specificity gap|, drawn independently:

        ds_auc = P(X > Y) + 0.5 * P(X = Y > 0).

    This is the ROC area of X against Y where the curve starts at eps = 0: its left end is
    extended flat to Spec = 0 at height D(0), and points between thresholds are joined by
    straight lines (so ties X = Y at a positive gap earn half). A tie at X = Y = 0 earns nothing,
    because no eps >= 0 separates it; hence constant rewards give 0 and the oracle gives 1.
    Invariant to r -> a * r + b for a > 0. Exact, O((n + m) log m).
    """
    x, y = _arr(diff_gaps), np.sort(np.abs(_arr(eq_gaps)))
    if x.size == 0 or y.size == 0:
        return math.nan
    below = np.searchsorted(y, x, side="left")  # number of y < x
    at_or_below = np.searchsorted(y, x, side="right")  # number of y <= x
    ties = np.where(x > 0, at_or_below - below, 0)
    return float((below.sum() + 0.5 * ties.sum()) / (x.size * y.size))


def balanced_best(diff_gaps: ArrayLike, eq_gaps: ArrayLike) -> tuple[float, float]:
    """max over eps >= 0 of (D(eps) + Spec(eps)) / 2, and the smallest raw eps that reaches it.

    D is non-increasing and Spec non-decreasing and both are right-continuous in eps, so the
    maximum lies at eps = 0 or at one of the |specificity gaps|; only those are checked.
    """
    x, y = np.sort(_arr(diff_gaps)), np.sort(np.abs(_arr(eq_gaps)))
    if x.size == 0 or y.size == 0:
        return math.nan, math.nan
    cand = np.unique(np.concatenate([[0.0], y]))
    d = 1.0 - np.searchsorted(x, cand, side="right") / x.size
    s = np.searchsorted(y, cand, side="right") / y.size
    score = (d + s) / 2.0
    best = int(np.argmax(score))  # first maximum = smallest eps
    return float(score[best]), float(cand[best])


def reward_margin(diff_gaps: ArrayLike, sigma: float) -> float:
    """Normalised absolute reward margin (arXiv 2507.07981): mean_i |gap_i| / sigma.

    With sigma = 0 every reward is equal, every gap is 0, and the margin is 0.
    """
    g = np.abs(_arr(diff_gaps))
    if g.size == 0:
        return math.nan
    if sigma == 0:
        return 0.0
    return float(g.mean() / sigma)


# --- RewardBench 2 Ties -----------------------------------------------------------------

@dataclass(frozen=True)
class TiesPromptStats:
    """Per row of the Ties subset (RewardBench 2, ``_compute_prompt_stats``).

    accurate = worst_correct - best_incorrect > 0
    different_correct_margin = best_correct - worst_correct (nan with a single correct answer)
    correct_incorrect_margin = worst_correct - best_incorrect
    """

    accurate: bool
    different_correct_margin: float
    correct_incorrect_margin: float


def ties_prompt_stats(correct_scores: ArrayLike, incorrect_scores: ArrayLike) -> TiesPromptStats:
    c, i = _arr(correct_scores), _arr(incorrect_scores)
    if c.size == 0 or i.size == 0:
        raise ValueError("a Ties row needs at least one correct and one incorrect answer")
    with np.errstate(over="ignore"):  # rewards too far apart: refused by check_reward_range, not warned of here
        cim = float(c.min() - i.max())
        dcm = float(c.max() - c.min()) if c.size > 1 else math.nan
    return TiesPromptStats(cim > 0, dcm, cim)


def ties_row_key(row_id: str) -> tuple[str, str]:
    """``"tied:7"`` -> ``("tied", "7")``; the official code keys prompts by ``int(K)``."""
    kind, sep, k = str(row_id).partition(":")
    if not sep or kind not in ("tied", "ref") or not k:
        raise ValueError(f"Ties row id {row_id!r} must look like 'tied:K' or 'ref:K'")
    return kind, str(int(k)) if k.strip().lstrip("-").isdigit() else k


@dataclass(frozen=True)
class TiesTerms:
    """The Ties score split into per-prompt-id terms, so that it can be bootstrapped over ids.

    Index k runs over prompt ids. ``tied_acc``/``ref_acc``: accuracy of the tied:k / ref:k row
    (nan where that row is absent). ``preferred``, ``preferred_hard``, ``margin``: the three
    margin terms, nan unless k has both rows.
    """

    ids: tuple[str, ...]
    tied_acc: np.ndarray
    ref_acc: np.ndarray
    preferred: np.ndarray
    preferred_hard: np.ndarray
    margin: np.ndarray
    both: np.ndarray


def ties_terms(rows: Sequence[tuple[str, Sequence[float], Sequence[float]]]) -> TiesTerms:
    """Per-prompt-id terms from rows ``(id, correct_scores, incorrect_scores)``, id ``tied:k`` or ``ref:k``."""
    tied: dict[str, TiesPromptStats] = {}
    ref: dict[str, TiesPromptStats] = {}
    for row_id, correct, incorrect in rows:
        kind, k = ties_row_key(row_id)
        (ref if kind == "ref" else tied)[k] = ties_prompt_stats(correct, incorrect)
    ids = tuple(sorted(set(tied) | set(ref)))
    nan = math.nan
    tied_acc = np.array([float(tied[k].accurate) if k in tied else nan for k in ids])
    ref_acc = np.array([float(ref[k].accurate) if k in ref else nan for k in ids])
    both = np.array([k in tied and k in ref for k in ids], dtype=bool)
    pref, hard, margin = [], [], []
    for k in ids:
        dcm = tied[k].different_correct_margin if k in tied else nan
        if k in tied and k in ref and not math.isnan(dcm):
            ci_t, ci_r = tied[k].correct_incorrect_margin, ref[k].correct_incorrect_margin
            low = min(ci_r, ci_t)
            pref.append(float(ci_t > dcm))
            hard.append(float(low > dcm))
            # Official (0.1.4): the margin term averages over ids with dcm > 0 only.
            margin.append(math.tanh(low / dcm - 1.0) if dcm > 0 else nan)
        else:  # no pair, or a tied row with a single correct answer: left out of these means
            for terms in (pref, hard, margin):
                terms.append(nan)
    return TiesTerms(ids, tied_acc, ref_acc, np.array(pref), np.array(hard), np.array(margin), both)


def _nanmean_or(x: np.ndarray, default: float) -> float:
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else default


def ties_score_from_terms(terms: TiesTerms, units: np.ndarray | None = None) -> float:
    """RewardBench 2's official Ties score over the prompt ids ``units`` (all ids by default),
    as ``process_single_model`` in ``rewardbench`` 0.1.4 computes it.

    score = 0.30 * tied_accuracy + 0.30 * ref_accuracy
          + 0.20 * mean_P(corr_incorrect_tied > diff_corr_margin)
          + 0.20 * mean_P(min(corr_incorrect_ref, corr_incorrect_tied) > diff_corr_margin)
          + 0.01 * mean_M(tanh(min(corr_incorrect_ref, corr_incorrect_tied) / diff_corr_margin - 1))

    tied_accuracy / ref_accuracy average ``accurate`` over all tied / ref rows (0 when there are
    none). P: ids with both rows whose tied row has >= 2 correct answers (the mean of an empty P
    is nan, as numpy's); M: those of P with diff_corr_margin > 0 (empty: 0). With no id that has
    both rows, the three terms are 0. ``units`` may repeat ids (a bootstrap resample).
    """
    idx = np.arange(len(terms.ids)) if units is None else np.asarray(units, dtype=np.int64)
    score = 0.30 * _nanmean_or(terms.tied_acc[idx], 0.0) + 0.30 * _nanmean_or(terms.ref_acc[idx], 0.0)
    if not terms.both[idx].any():
        return score
    return (score + 0.20 * _nanmean_or(terms.preferred[idx], math.nan)
            + 0.20 * _nanmean_or(terms.preferred_hard[idx], math.nan)
            + 0.01 * _nanmean_or(terms.margin[idx], 0.0))


def ties_score(rows: Sequence[tuple[str, Sequence[float], Sequence[float]]]) -> float:
    """RewardBench 2's official Ties score from rows ``(id, correct_scores, incorrect_scores)``.

    See :func:`ties_score_from_terms` for the formula.
    """
    return ties_score_from_terms(ties_terms(rows))


# --- Bootstrap -------------------------------------------------------------------------

def bootstrap_ci(statistic: Callable[[IntArray], ArrayLike], n_units: int, n_resamples: int = 1000,
                 seed: int = 0, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
    """Percentile bootstrap CI of a vector statistic, resampling units (groups) with replacement.

    ``statistic(units)`` receives an int array of ``n_units`` unit indices drawn with replacement
    and returns a 1-d array of values. Resamples where a value is nan are left out of its
    interval. Seeded: the same seed gives the same intervals.
    """
    if n_units == 0 or n_resamples <= 0:
        return np.array([]), np.array([])
    draws = np.stack([np.asarray(statistic(units), dtype=np.float64)
                      for block in bootstrap_draws(n_units, n_resamples, seed, 64) for units in block])
    return percentile_ci(draws, level)


def bootstrap_draws(n_units: int, n_resamples: int, seed: int, block: int) -> Iterator[IntArray]:
    """The unit draws of :func:`bootstrap_ci` in blocks (arrays of <= ``block`` resamples x
    ``n_units``): row k is the k-th ``rng.integers(0, n_units, n_units)`` of the same rng, one call
    per resample as there (a single call of all sizes would give other numbers)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, block):
        yield np.stack([rng.integers(0, n_units, n_units) for _ in range(min(block, n_resamples - start))])


def bootstrap_ci_batched(batch: Callable[[IntArray], ArrayLike], n_units: int, n_resamples: int = 1000,
                         seed: int = 0, level: float = 0.95, block: int = 64,
                         advance: Callable[[int], None] | None = None) -> tuple[FloatArray, FloatArray]:
    """:func:`bootstrap_ci` with a statistic of a block of resamples: ``batch(draws)`` takes the
    draws (resamples x ``n_units``) and returns resamples x values. Same draws, same seed: equal
    to ``bootstrap_ci`` with a statistic whose rows are those of ``batch``. ``advance(k)`` is
    called after each block of k resamples (a progress bar's)."""
    if n_units == 0 or n_resamples <= 0:
        return np.array([]), np.array([])
    values = []
    for d in bootstrap_draws(n_units, n_resamples, seed, max(1, block)):
        values.append(np.asarray(batch(d), dtype=np.float64))
        if advance is not None:
            advance(len(d))
    return percentile_ci(np.concatenate(values), level)


def percentile_ci(draws: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """Per column j of ``draws`` (resamples x values): the (1 - level) / 2 and (1 + level) / 2
    quantiles (numpy's linear interpolation) of its non-nan values; nan for a column of nans."""
    alpha = (1.0 - level) / 2.0
    low, high = np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    for j in range(draws.shape[1]):
        col = draws[:, j][~np.isnan(draws[:, j])]
        if col.size:
            low[j], high[j] = np.quantile(col, [alpha, 1.0 - alpha])
    return low, high


def paired_bootstrap_diff(stat_a: Callable[[IntArray], ArrayLike], stat_b: Callable[[IntArray], ArrayLike],
                          n_units: int, n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
                          batches: tuple[Callable[[IntArray], FloatArray], Callable[[IntArray], FloatArray]]
                          | None = None, block: int = 64) -> tuple[float, float, float] | tuple[FloatArray, ...]:
    """Difference ``stat_a - stat_b`` of two models on the same units, with a paired bootstrap CI.

    Both statistics see the same resampled units in every draw, so the variation shared through
    the task's items cancels. Returns (difference on the full sample, ci_low, ci_high): floats
    for scalar statistics, arrays for vector ones. ``batches``: the two statistics as functions
    of a block of draws (:func:`bootstrap_ci_batched`); the CI is then of their row differences.
    """
    full = np.arange(n_units)
    diff = np.asarray(stat_a(full), dtype=np.float64) - np.asarray(stat_b(full), dtype=np.float64)
    if batches is not None:
        batch_a, batch_b = batches
        low, high = bootstrap_ci_batched(lambda d: batch_a(d) - batch_b(d), n_units, n_resamples, seed, level, block)
    else:
        low, high = bootstrap_ci(lambda u: np.atleast_1d(np.asarray(stat_a(u), dtype=np.float64)
                                                         - np.asarray(stat_b(u), dtype=np.float64)),
                                 n_units, n_resamples, seed, level)
    if low.size == 0:
        low = high = np.full(np.atleast_1d(diff).shape, np.nan)
    if diff.ndim == 0:
        return float(diff), float(low[0]), float(high[0])
    return diff, low, high
