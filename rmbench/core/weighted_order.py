"""The order statistics of a bootstrap from resample weights: ds_auc, balanced_best and
length_correlation, each computed from prefix sums of weights over pairs sorted once.

A resample of the bootstrap repeats each pair ``w_i`` times (``w_i`` = how often its group
was drawn). Every statistic here is what :mod:`rmbench.core.metrics` and
:mod:`rmbench.core.metrics_bias` return on the resample's pair list, computed instead from the
weights over a fixed sort order, so that a resample costs O(pairs) and no sort. Rows of the
weight matrices are resamples; every count is an integer held exactly in float64 (sums below
2**53), and the float operations on them are the ones the plain functions do on their integer
counts, so the values are bit-equal (see each function for the one condition on size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rmbench.core.arrays import AnyArray, FloatArray, IntArray


def ratio(num: AnyArray, den: AnyArray) -> FloatArray:
    """num / den elementwise (float64, correctly rounded as Python's int / int), nan where den = 0."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


class Scratch:
    """Work arrays kept between calls, by name: a block of resamples of a large slice fills a
    dozen arrays as long as its pairs, and fresh ones would each come as new zeroed pages from
    the system (page faults: at 1.27M pairs a third of the time); these are reused instead."""

    def __init__(self) -> None:
        self._arrays: dict[str, AnyArray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: np.dtype[Any] | type) -> AnyArray:
        """The array ``name`` of this shape and dtype (its contents whatever the last call left)."""
        a = self._arrays.get(name)
        if a is None or a.shape != shape or a.dtype != np.dtype(dtype):
            a = self._arrays[name] = np.empty(shape, dtype=dtype)
        return a


class OrderStats:
    """Discrimination gaps ``x`` (groups ``gx``) and specificity gaps ``y`` (groups ``gy``, with
    length differences ``ly``) of one slice, sorted once; group numbers index the columns of
    the weight matrix ``W`` (resamples x groups) given to :meth:`values`.

    Everything is evaluated on the candidates c_k of balanced_best (0 and each distinct |y|):
    X_le[k] = #w(x <= c_k), Y_le[k] = #w(|y| <= c_k) and Y_k = #w(|y| = c_k) per resample.
    """

    def __init__(self, x: FloatArray, gx: IntArray, y: FloatArray, gy: IntArray, ly: FloatArray,
                 n_groups: int) -> None:
        # A single specificity pair drawn twice is already a Spearman sample of two.
        self.active_pairs, self.active_rank = len(x) > 0 and len(y) > 0, len(y) > 0
        ox, oy = np.argsort(x, kind="stable"), np.argsort(np.abs(y), kind="stable")
        xs, ys = x[ox], np.abs(y)[oy]
        self.gx, self.gy = gx[ox], gy[oy]
        self.cand = np.unique(np.concatenate([[0.0], ys]))
        self.x_le, self.y_le = (np.searchsorted(xs, self.cand, side="right"),
                                np.searchsorted(ys, self.cand, side="right"))
        x_lt = np.searchsorted(xs, self.cand, side="left")
        self.tie = np.flatnonzero((self.cand > 0) & (self.x_le > x_lt))  # candidates some x equals
        self.tie_lt = x_lt[self.tie]
        # length_correlation, per y in |y| order: its candidate, and sign(y) * sign(length difference).
        run = np.searchsorted(self.cand, ys)
        la = np.abs(ly[oy])
        ol = np.argsort(la, kind="stable")
        self.gl, self.lcand = self.gy[ol], np.unique(la)
        self.l_le, lrun = np.searchsorted(la[ol], self.lcand, side="right"), np.searchsorted(self.lcand, la)
        self.sign = (np.sign(y[oy]) * np.sign(ly[oy])).astype(np.float64)
        self.x_cum = Cumulative(self.gx, (self.x_le, self.tie_lt), n_groups)
        self.y_cum, self.l_cum = (Cumulative(self.gy, (self.y_le,), n_groups),
                                  Cumulative(self.gl, (self.l_le,), n_groups))
        self.x_per_group = np.bincount(gx, minlength=n_groups).astype(np.float64)
        self.run, self.lrun = contiguous(run), contiguous(lrun)
        self.zero, self.lzero = np.flatnonzero(self.cand == 0), np.flatnonzero(self.lcand == 0)
        self.scratch = Scratch()

    def values(self, W: AnyArray) -> dict[str, FloatArray]:
        """ds_auc, balanced_best (score and eps) and length_correlation of each resample (row of
        ``W``, integer weights), in float64: every count and sum is an integer, exact below 2**53.

        From X_le, Y_le, Y_k (and L_le, L_k over |length difference|): :func:`ds_auc`,
        :func:`balanced_best`, and :func:`spearman` of the doubled ranks :func:`mid_ranks`,
        S_xy = sum_i w_i sign(x_i) sign(l_i) 2R(|x_i|) 2R(|l_i|), S_xx = sum_k Y_k 2R(c_k)^2.
        """
        nan = np.full(W.shape[0], np.nan)
        out = {"ds_auc": nan, "balanced_best": nan, "balanced_eps": nan, "length_correlation": nan}
        if not (self.active_pairs or self.active_rank):
            return out
        W, Wi = W.astype(np.float64), integer_weights(W, len(self.gx) + len(self.gy))
        sc, b = self.scratch, W.shape[0]
        (y_le,) = self.y_cum.values(W, Wi, sc, "y")
        y_k, ny = runs(y_le, sc.get("y_k", y_le.shape, np.float64)), y_le[:, -1].copy()
        if self.active_pairs:
            x_le, x_lt = self.x_cum.values(W, Wi, sc, "x")
            nx = W @ self.x_per_group
            out["ds_auc"] = ds_auc(x_le, y_k, x_le[:, self.tie] - x_lt, y_k[:, self.tie], nx, ny)
            out["balanced_best"], out["balanced_eps"] = balanced_best(x_le, y_le, self.cand, nx, ny, sc)
        if self.active_rank:
            (l_le,) = self.l_cum.values(W, Wi, sc, "l")
            l_k = runs(l_le, sc.get("l_k", l_le.shape, np.float64))
            rx = mid_ranks(y_le, self.zero, sc.get("rx", y_le.shape, np.float64))
            ry = mid_ranks(l_le, self.lzero, sc.get("ry", l_le.shape, np.float64))
            wy = np.take(W, self.gy, axis=1, out=sc.get("wy", (b, len(self.gy)), np.float64), mode="clip")
            wy *= self.sign
            sxy = np.einsum("ij,ij,ij->i", wy, columns(rx, self.run, sc, "rx_run"),
                            columns(ry, self.lrun, sc, "ry_run"))
            sxx, syy = np.einsum("ij,ij,ij->i", y_k, rx, rx), np.einsum("ij,ij,ij->i", l_k, ry, ry)
            out["length_correlation"] = spearman(sxy, sxx, syy, ny)
        return out


class Cumulative:
    """Weighted counts of sorted items before each cut: ``C[:, k] = sum_{i < cuts[k]} W[:, g_i]``
    (items i in sorted order, ``g_i`` their groups, each array of ``cuts`` non-decreasing).

    Two exact ways, the cheaper chosen once per cut array: with few cuts (rewards with few
    distinct values, lengths), a groups x bins count matrix H (bin of item i = #cuts <= i) and
    C = cumsum(W @ H) over the bins; else the items' weights gathered in sorted order, their
    prefix sums (shared by the cut arrays), and the columns at the cuts. A matrix product costs
    about groups x cuts / 8 ns per resample, the prefix sums about 4 ns per item.
    """

    MATRIX_LIMIT = 4_000_000
    """Largest groups x cuts matrix (float64 entries) of the first way."""
    PER_ITEM = 16
    """... and at most this many groups x cuts entries per item (where it is the cheaper way)."""

    def __init__(self, groups_sorted: IntArray, cuts: tuple[IntArray, ...], n_groups: int) -> None:
        self.groups, self.cuts = groups_sorted, [contiguous(c) for c in cuts]
        self.H: list[FloatArray | None] = []
        n = len(groups_sorted)
        for c in cuts:
            m = len(c)
            if m == 0 or n_groups * m > min(self.MATRIX_LIMIT, self.PER_ITEM * n):
                self.H.append(None)
                continue
            bins = np.searchsorted(c, np.arange(n), side="right")
            keep = bins < m
            flat = np.bincount(groups_sorted[keep] * m + bins[keep], minlength=n_groups * m)
            self.H.append(flat.reshape(n_groups, m).astype(np.float64))

    def values(self, W: FloatArray, Wi: IntArray, scratch: Scratch | None = None, key: str = "") -> list[FloatArray]:
        """C[:, k] = sum_{i < cuts[k]} W[:, g_i] (resamples x cuts) for each cut array, for group
        weights ``W`` (float64 integers) and ``Wi`` (the same, :func:`integer_weights`):
        cumsum(W @ H), or prefix sums at the cuts. The prefix sums run on the integers (an
        integer add does not wait on the one before as a float add does: twice as fast, and
        half the bytes in int32), converted to float64 at the cuts: the same integers. With
        ``scratch``, the work arrays and results are its arrays ``key``... (valid until its next use)."""
        sc = scratch or Scratch()
        out: list[FloatArray] = []
        c: AnyArray | None = None
        b = W.shape[0]
        for j, (H, cut) in enumerate(zip(self.H, self.cuts)):
            if H is not None:
                out.append(np.cumsum(W @ H, axis=1))
                continue
            if c is None:
                into = sc.get(f"{key}gathered", (b, len(self.groups)), Wi.dtype)
                gathered = np.take(Wi, self.groups, axis=1, out=into, mode="clip")
                c = prefix(gathered, sc.get(f"{key}prefix", (b, len(self.groups) + 1), Wi.dtype))
            at = columns(c, cut, sc, f"{key}cut{j}")
            exact = sc.get(f"{key}float{j}", at.shape, np.float64)
            np.copyto(exact, at)
            out.append(exact)
        return out


def integer_weights(W: AnyArray, n_items: int) -> AnyArray:
    """The group weights ``W`` (integers) as int32 where no prefix sum over ``n_items`` items can
    reach 2**31, else int64."""
    top = int(np.max(W)) if W.size else 0
    return np.asarray(W).astype(np.int32 if top * max(n_items, 1) < 2**31 else np.int64)


def contiguous(index: IntArray) -> IntArray | slice:
    """``index`` as a slice when it is a run of consecutive integers (no ties: each candidate
    its own run), so that taking those columns is a view; else ``index`` itself."""
    if len(index) and index[-1] - index[0] == len(index) - 1 and bool(np.all(np.diff(index) == 1)):
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


def columns(c: AnyArray, index: IntArray | slice, scratch: Scratch | None = None, name: str = "") -> AnyArray:
    """out[:, j] = c[:, index[j]]: a view for a slice, a gather otherwise (into ``scratch``'s array ``name``)."""
    if isinstance(index, slice):
        return c[:, index]
    if scratch is None:
        return np.take(c, index, axis=1)
    return np.take(c, index, axis=1, out=scratch.get(name, (c.shape[0], len(index)), c.dtype), mode="clip")


def prefix(w: AnyArray, out: AnyArray | None = None) -> AnyArray:
    """Row-wise prefix sums with a leading 0, in ``w``'s dtype: ``c[:, k] = sum_{j<k} w[:, j]``
    (into ``out``, of shape rows x (columns + 1), where given)."""
    c = np.empty((w.shape[0], w.shape[1] + 1), dtype=w.dtype) if out is None else out
    c[:, 0] = 0
    np.cumsum(w, axis=1, out=c[:, 1:])
    return c


def runs(le: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """Counts at each candidate from counts at or below it: ``k[:, j] = le[:, j] - le[:, j - 1]``
    (into ``out`` where given)."""
    k = np.empty_like(le) if out is None else out
    k[:, :1] = le[:, :1]
    np.subtract(le[:, 1:], le[:, :-1], out=k[:, 1:])
    return k


def ds_auc(x_le: FloatArray, y_k: FloatArray, x_eq: FloatArray, y_tie: FloatArray, nx: FloatArray,
           ny: FloatArray) -> FloatArray:
    """Weighted :func:`rmbench.core.metrics.ds_auc` from counts at the candidates c_k:

        ds_auc = ( sum_k Y_k (N_x - X_le[k]) + 0.5 * sum_{k: c_k > 0} Y_k #w(x = c_k) ) / (N_x N_y),

    the first sum being #w pairs with |y| < x, the second the ties at a positive gap: the
    integers the plain function sums (below.sum(), ties.sum()). Float sums of integers, exact
    while N_x N_y < 2**53 (where the plain function's float conversion is exact too).
    """
    below = nx * ny - np.einsum("ij,ij->i", y_k, x_le)
    ties = np.einsum("ij,ij->i", y_tie, x_eq)
    return ratio(below + 0.5 * ties, nx * ny)


def balanced_best(x_le: FloatArray, y_le: FloatArray, cand: FloatArray, nx: FloatArray,
                  ny: FloatArray, scratch: Scratch | None = None) -> tuple[FloatArray, FloatArray]:
    """Weighted :func:`rmbench.core.metrics.balanced_best` over the slice's candidates c (0 and
    every |y| of the slice):

        score(c) = ( (1 - #w(x <= c) / N_x) + #w(|y| <= c) / N_y ) / 2,  best = first argmax.

    A candidate absent from a resample (weight 0) has that resample's Spec of the largest
    present candidate below it and a D no higher, so it never beats it; the first maximum,
    and its eps, are those of the plain function on the resample's own candidates. Work
    arrays from ``scratch`` where given.
    """
    sc = scratch or Scratch()
    with np.errstate(divide="ignore", invalid="ignore"):  # the float steps of the plain function, in place
        score = np.divide(x_le, nx[:, None], out=sc.get("score", x_le.shape, np.float64))
        np.subtract(1.0, score, out=score)
        score += np.divide(y_le, ny[:, None], out=sc.get("spec", y_le.shape, np.float64))
    best = np.argmax(score, axis=1)  # halving, exact, keeps the order: done on the maxima only
    ok = (nx > 0) & (ny > 0)
    rows = np.arange(score.shape[0])
    return np.where(ok, score[rows, best] / 2.0, np.nan), np.where(ok, cand[best], np.nan)


def mid_ranks(le: FloatArray, zero: IntArray, out: FloatArray | None = None) -> FloatArray:
    """2 R(c) at each candidate c = |v| > 0: ``2 #w(|v'| < c) + #w(|v'| = c)`` = le[c] + le[c-],
    ``le[c-]`` the count at or below the candidate before c; 0 at c = 0 (the candidates ``zero``).

    Among the 2N values {v_j} + {-v_j} (each pair w_j times), the average rank of v > 0 minus
    (2N + 1) / 2 is #w(|v'| < v) + #w(|v'| = v) / 2, and R(-v) = -R(v), R(0) = 0; the caller
    multiplies by sign(v). Into ``out`` where given.
    """
    r = np.empty_like(le) if out is None else out
    r[:, :1] = le[:, :1]
    np.add(le[:, 1:], le[:, :-1], out=r[:, 1:])
    r[:, zero] = 0.0
    return r


def spearman(sxy: FloatArray, sxx: FloatArray, syy: FloatArray, n: FloatArray) -> FloatArray:
    """Weighted :func:`rmbench.core.metrics_bias.length_correlation` from sums of doubled ranks
    (``sxy`` = sum_i w_i 2R(x_i) 2R(y_i), ``sxx``, ``syy`` likewise):

        rho = S_xy / sqrt(S_xx S_yy),  S = (sum of doubled-rank products) / 4,

    clipped to [-1, 1]; nan for N < 2 or S_xx = 0 or S_yy = 0. The doubled ranks are integers;
    their float sums are exact while every partial sum stays below 2**53, exactly when the
    plain function's float dot products of half-integer ranks are exact (about N < 180,000
    specificity pairs in a resample): bit-equal up to that size, equal to rounding beyond.
    """
    sxy, sxx, syy = sxy / 4.0, sxx / 4.0, syy / 4.0
    ok = (n >= 2) & (sxx != 0.0) & (syy != 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
    return np.where(ok, rho, np.nan)
