"""Best-of-K by exact enumeration over ranks: the expected correctness of the answer a reward
model ranks first among K answers drawn without replacement from a prompt's n answers.

PPE's correctness sets (Frick et al. 2024, "How to Evaluate Reward Models for RLHF",
arXiv 2410.14872) give each prompt n = 32 sampled answers, each correct (1) or not (0). For
K = 1..n, draw a uniformly random subset S of K answers (all C(n, K) subsets equally likely)
and let the reward model pick the answer of S with the highest reward. Its *best-of-K value* is
E[correct(pick)]; the curve over K is computed here exactly, never by sampling.

**Reward ties.** When several answers of S share the highest reward, the pick is uniformly
random among them (the rule of RewardBench 2's best-of-n, 1/k credit each). Then, with
``above_i`` = #answers whose reward is strictly higher than answer i's and ``m_i`` = #answers
whose reward equals it (i included), answer i is the pick with probability

    P(i | K) = [C(n - above_i, K) - C(n - above_i - m_i, K)] / (m_i C(n, K)):

the subsets whose top reward is i's block of ties avoid the ``above_i`` higher answers and hold
at least one of the ``m_i`` tied ones (the bracket, over C(n, K)), and given that, the ``m_i``
members are exchangeable, so each is the pick with 1/m_i of it. The curve is
sum_i P(i | K) c_i. At K = 1 it is the mean correctness; a reward model that gives every answer
the same reward stays at the mean for every K.

**The oracle** ranks by correctness itself: its pick is correct whenever S holds a correct
answer, so its curve is 1 - C(n - n_correct, K) / C(n, K) (pass@K without replacement), the
highest any reward model reaches at every K (:func:`oracle_curves`).

Binomial ratios C(t, K) / C(n, K) are products of K factors (t - j) / (n - j), so nothing
overflows and every n works; each value is exact to float rounding (relative ~1e-15).

Everything here takes flat per-answer arrays plus group ``sizes`` (answers per prompt, in
order), and is vectorised over prompts of one size. Pure numpy; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray, IntArray

CHUNK = 4096
"""Prompts per block in :func:`best_of_k_curves` (memory: CHUNK x n x K floats)."""


def ratio_table(n: int, k_max: int) -> FloatArray:
    """R[t, K] = C(t, K) / C(n, K) for t = 0..n and K = 0..k_max (0 where t < K; R[t, 0] = 1).

    Built as R[t, K] = R[t, K - 1] * (t - K + 1) / (n - K + 1), a product of K ratios, which
    neither overflows nor loses more than float rounding."""
    if n < 0 or k_max < 0 or k_max > n:
        raise ValueError(f"need 0 <= k_max <= n, got n={n}, k_max={k_max}")
    t = np.arange(n + 1, dtype=np.float64)
    out = np.zeros((n + 1, k_max + 1))
    out[:, 0] = 1.0
    for k in range(1, k_max + 1):
        out[:, k] = out[:, k - 1] * np.maximum(t - k + 1, 0.0) / (n - k + 1)
    return out


def tie_counts(rewards: ArrayLike) -> tuple[IntArray, IntArray]:
    """For a (prompts x n) array of rewards: ``above[g, i]`` = #answers of prompt g whose
    reward is > answer i's, ``at_or_above[g, i]`` = #answers whose reward is >= it (i included)."""
    r = np.asarray(rewards, dtype=np.float64)
    if np.isnan(r).any():
        raise ValueError("rewards hold NaN: leave unscored answers out first")
    higher = r[:, None, :] > r[:, :, None]  # [g, i, j]: r_j > r_i
    same_or_higher = r[:, None, :] >= r[:, :, None]
    return higher.sum(axis=2), same_or_higher.sum(axis=2)


def pick_probabilities(rewards: ArrayLike, k_max: int | None = None) -> FloatArray:
    """P[g, i, K - 1]: the probability that answer i of prompt g is the reward model's pick
    among K answers drawn without replacement, ties broken uniformly (module doc), for K =
    1..k_max (default n). ``rewards``: prompts x n. Each P[g, :, K - 1] sums to 1."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rewards must be prompts x answers, got shape {r.shape}")
    n = r.shape[1]
    k_max = n if k_max is None else int(k_max)
    table = ratio_table(n, k_max)[:, 1:]  # [t, K - 1]
    above, ge = tie_counts(r)
    block = (ge - above).astype(np.float64)
    probabilities: FloatArray = (table[n - above] - table[n - ge]) / block[:, :, None]
    return probabilities


def _check(values: ArrayLike, sizes: ArrayLike) -> tuple[FloatArray, IntArray]:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    s = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if (s < 1).any():
        raise ValueError("every prompt needs at least one answer")
    if int(s.sum()) != v.size:
        raise ValueError(f"sizes add up to {int(s.sum())} answers, but {v.size} values were given")
    return v, s


def _by_size(sizes: IntArray) -> Iterator[tuple[int, IntArray, IntArray]]:
    """(size, prompt numbers of that size, flat index of their answers as prompts x size)."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    for n in np.unique(sizes):
        which = np.flatnonzero(sizes == n)
        yield int(n), which, starts[which][:, None] + np.arange(n)[None, :]


def best_of_k_curves(rewards: ArrayLike, correct: ArrayLike, sizes: ArrayLike,
                     k_max: int | None = None) -> FloatArray:
    """The best-of-K value of every prompt for K = 1..k_max (prompts x k_max; default k_max =
    the largest prompt), exactly (module doc). ``rewards`` and ``correct`` (0/1, or any
    utility whose expectation is wanted) are flat over the prompts' answers, in order;
    ``sizes[g]`` = answers of prompt g. NaN where K exceeds the prompt's answers."""
    r, s = _check(rewards, sizes)
    c, _ = _check(correct, s)
    k_max = int(s.max()) if k_max is None else int(k_max)
    out = np.full((len(s), k_max), np.nan)
    for n, which, flat in _by_size(s):
        k = min(n, k_max)
        for lo in range(0, len(which), CHUNK):
            idx = flat[lo:lo + CHUNK]
            p = pick_probabilities(r[idx], k)
            out[which[lo:lo + CHUNK], :k] = np.einsum("gik,gi->gk", p, c[idx])
    return out


def oracle_curves(correct: ArrayLike, sizes: ArrayLike, k_max: int | None = None) -> FloatArray:
    """The oracle's best-of-K value per prompt (prompts x k_max): 1 - C(n - n_correct, K) / C(n, K)
    for 0/1 correctness, the chance that K answers drawn without replacement hold a correct one.
    NaN where K exceeds the prompt's answers. (For graded utilities use :func:`best_of_k_curves`
    with the utilities as rewards.)"""
    c, s = _check(correct, sizes)
    if not np.isin(c, (0.0, 1.0)).all():
        raise ValueError("oracle_curves takes 0/1 correctness")
    k_max = int(s.max()) if k_max is None else int(k_max)
    out = np.full((len(s), k_max), np.nan)
    for n, which, flat in _by_size(s):
        k = min(n, k_max)
        wrong = (n - c[flat].sum(axis=1)).astype(np.int64)
        out[which, :k] = 1.0 - ratio_table(n, k)[wrong, 1:]
    return out


def conflict_pair_counts(rewards: ArrayLike, correct: ArrayLike,
                         sizes: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per prompt, over every pair (correct answer, incorrect answer): how many the reward model
    orders right (r(correct) > r(incorrect)), how many it ties, and how many pairs there are
    (n_correct x n_incorrect). Arrays of length prompts."""
    r, s = _check(rewards, sizes)
    c, _ = _check(correct, s)
    wins, ties, total = np.zeros(len(s)), np.zeros(len(s)), np.zeros(len(s))
    for _, which, flat in _by_size(s):
        rr, cc = r[flat], c[flat] > 0
        conflict = cc[:, :, None] & ~cc[:, None, :]  # [g, i, j]: i correct, j not
        wins[which] = (conflict & (rr[:, :, None] > rr[:, None, :])).sum(axis=(1, 2))
        ties[which] = (conflict & (rr[:, :, None] == rr[:, None, :])).sum(axis=(1, 2))
        total[which] = conflict.sum(axis=(1, 2))
    return wins, ties, total


def curve_gap(model_curve: ArrayLike, oracle_curve: ArrayLike) -> FloatArray | np.float64:
    """The area between the oracle's best-of-K curve and the model's, normalised by the number
    of K: mean over K = 1..k_max of (oracle(K) - model(K)), along the last axis (curves of one
    or many prompts or resamples). 0: the model picks as well as the oracle at every K; its
    largest value is the mean over K of oracle(K) - 0. In correctness units, so 0.05 means the
    model's pick is correct 5 points less often than the oracle's, averaged over K."""
    gaps = np.asarray(oracle_curve, dtype=np.float64) - np.asarray(model_curve, dtype=np.float64)
    gap: FloatArray | np.float64 = np.mean(gaps, axis=-1)
    return gap
