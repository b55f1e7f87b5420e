"""The order statistics of a bootstrap from resample weights: ds_auc, balanced_best and
length_correlation, each computed from prefix sums of weights over pairs sorted once.

A resample of the bootstrap repeats each pair ``w_i`` times (``w_i`` = how often its group
was drawn). Every statistic here is what :mod:`rmbench.core.metrics` and
:mod:`rmbench.core.metrics_bias` return on the resample's pair list, computed instead from the
weights over a fixed sort order, so that a resample costs O(pairs) and no sort. Rows of the
weight matrices are resamples; every count is an exact integer (int64), and the float
operations on them are the ones the plain functions do on their integer counts, so the values
are bit-equal (see each function for the one condition on size).
"""

from __future__ import annotations

import numpy as np


def prefix(w: np.ndarray) -> np.ndarray:
    """Row-wise prefix sums with a leading 0: ``c[:, k] = sum_{j<k} w[:, j]``."""
    c = np.zeros((w.shape[0], w.shape[1] + 1), dtype=np.int64)
    np.cumsum(w, axis=1, out=c[:, 1:])
    return c


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den elementwise (float64, correctly rounded as Python's int / int), nan where den = 0."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


class OrderStats:
    """Discrimination gaps ``x`` (groups ``gx``) and specificity gaps ``y`` (groups ``gy``, with
    length differences ``ly``) of one slice, sorted once; group numbers index the columns of
    the weight matrix ``W`` (resamples x groups) given to :meth:`values`."""

    def __init__(self, x: np.ndarray, gx: np.ndarray, y: np.ndarray, gy: np.ndarray, ly: np.ndarray):
        ox = np.argsort(x, kind="stable")
        self.xs, self.gx = x[ox], gx[ox]
        ya = np.abs(y)
        oy = np.argsort(ya, kind="stable")
        self.ys, self.gy = ya[oy], gy[oy]
        # ds_auc: #y < x and #y <= x for each sorted x; ties counted only where x > 0 and some y = x.
        self.lo = np.searchsorted(self.ys, self.xs, side="left")
        hi = np.searchsorted(self.ys, self.xs, side="right")
        self.tie = np.flatnonzero((self.xs > 0) & (hi > self.lo))
        self.tie_lo, self.tie_hi = self.lo[self.tie], hi[self.tie]
        # balanced_best: the candidates of the plain function over the whole slice.
        self.cand = np.unique(np.concatenate([[0.0], self.ys]))
        self.x_le = np.searchsorted(self.xs, self.cand, side="right")
        self.y_le = np.searchsorted(self.ys, self.cand, side="right")
        # length_correlation: for each y (in |y| order) its run of equal |y| and the run of its |length|.
        self.sx = np.sign(y[oy]).astype(np.int64)
        self.rx_lo, self.rx_hi = self.lo_hi(self.ys)
        la = np.abs(ly[oy])
        ol = np.argsort(la, kind="stable")
        ls = la[ol]
        self.gl = self.gy[ol]
        self.sl = np.sign(ly[oy]).astype(np.int64)
        self.rl_lo, self.rl_hi = np.searchsorted(ls, la, side="left"), np.searchsorted(ls, la, side="right")

    @staticmethod
    def lo_hi(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each sorted value, where its run of equal values starts and ends."""
        return (np.searchsorted(sorted_values, sorted_values, side="left"),
                np.searchsorted(sorted_values, sorted_values, side="right"))

    def values(self, W: np.ndarray) -> dict[str, np.ndarray]:
        """ds_auc, balanced_best (score and eps) and length_correlation of each resample (row of ``W``)."""
        wx, wy = W[:, self.gx], W[:, self.gy]
        cx, cy = prefix(wx), prefix(wy)
        nx, ny = cx[:, -1], cy[:, -1]
        out = {"ds_auc": ds_auc(wx, cy, self.lo, self.tie, self.tie_lo, self.tie_hi, nx, ny)}
        out["balanced_best"], out["balanced_eps"] = balanced_best(cx, cy, self.cand, self.x_le, self.y_le, nx, ny)
        rl = self.sl * _mid_ranks(prefix(W[:, self.gl]), self.rl_lo, self.rl_hi)
        out["length_correlation"] = spearman(wy, self.sx * _mid_ranks(cy, self.rx_lo, self.rx_hi), rl, ny)
        return out


def ds_auc(wx, cy, lo, tie, tie_lo, tie_hi, nx, ny) -> np.ndarray:
    """Weighted :func:`rmbench.core.metrics.ds_auc`, x sorted, weights ``wx``; ``cy`` prefix
    sums of the sorted |y| weights:

        ds_auc = ( sum_i w_i C(<x_i) + 0.5 * sum_{i: x_i > 0} w_i C(=x_i) ) / (N_x N_y),

    C(<t) = weighted count of |y| < t = ``cy[lo]``. The two sums are the integers the plain
    function sums (below.sum(), ties.sum()); exact while N_x N_y < 2**63, and the float result
    is the plain one's while the sums stay below 2**53.
    """
    below = np.einsum("ij,ij->i", wx, np.take(cy, lo, axis=1))
    ties = np.einsum("ij,ij->i", wx[:, tie], np.take(cy, tie_hi, axis=1) - np.take(cy, tie_lo, axis=1))
    num = below.astype(np.float64) + 0.5 * ties.astype(np.float64)
    return ratio(num, nx.astype(np.float64) * ny.astype(np.float64))


def balanced_best(cx, cy, cand, x_le, y_le, nx, ny) -> tuple[np.ndarray, np.ndarray]:
    """Weighted :func:`rmbench.core.metrics.balanced_best` over the slice's candidates c (0 and
    every |y| of the slice):

        score(c) = ( (1 - #w(x <= c) / N_x) + #w(|y| <= c) / N_y ) / 2,  best = first argmax.

    A candidate absent from a resample (weight 0) has that resample's Spec of the largest
    present candidate below it and a D no higher, so it never beats it; the first maximum,
    and its eps, are those of the plain function on the resample's own candidates.
    """
    nxf, nyf = nx.astype(np.float64)[:, None], ny.astype(np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = 1.0 - np.take(cx, x_le, axis=1) / nxf
        s = np.take(cy, y_le, axis=1) / nyf
    score = (d + s) / 2.0
    best = np.argmax(score, axis=1)
    ok = (nx > 0) & (ny > 0)
    rows = np.arange(score.shape[0])
    return np.where(ok, score[rows, best], np.nan), np.where(ok, cand[best], np.nan)


def _mid_ranks(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """2 R(v) for |v| of each item: ``2 * #w(|v'| < |v|) + #w(|v'| = |v|)`` = ``c[lo] + c[hi]``.

    Among the 2N values {v_j} + {-v_j} (each pair w_j times), the average rank of v > 0 minus
    (2N + 1) / 2 is #w(|v'| < v) + #w(|v'| = v) / 2, and R(-v) = -R(v); the caller multiplies by
    sign(v), which also gives R(0) = 0.
    """
    return np.take(c, lo, axis=1) + np.take(c, hi, axis=1)


def spearman(w: np.ndarray, r2x: np.ndarray, r2y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Weighted :func:`rmbench.core.metrics_bias.length_correlation` from doubled ranks 2R:

        rho = S_xy / sqrt(S_xx S_yy),  S_xy = sum_i w_i R(x_i) R(y_i) = (sum_i w_i 2R_x 2R_y) / 4,

    clipped to [-1, 1]; nan for N < 2 or S_xx = 0 or S_yy = 0. The sums are exact int64; the
    plain function's float dot products of half-integers are exact too while every partial sum
    stays below 2**51 (about N < 180,000 specificity pairs in a resample), so the two agree bit
    for bit up to that size and to rounding beyond.
    """
    wx = w * r2x
    sxy = np.einsum("ij,ij->i", wx, r2y).astype(np.float64) / 4.0
    sxx = np.einsum("ij,ij->i", wx, r2x).astype(np.float64) / 4.0
    syy = np.einsum("ij,ij->i", w * r2y, r2y).astype(np.float64) / 4.0
    ok = (n >= 2) & (sxx != 0.0) & (syy != 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
    return np.where(ok, rho, np.nan)
