"""A step-level slice's pairs counted, not listed: the specificity pairs of a solution (every
two of its correct steps before the first error, k(k-1)/2 of them) as counts from its sorted
step rewards, so that a solution of n steps costs O(n log n) time and O(n) memory in D,
Spec, accuracy and sign accuracy, and the bootstrap resamples solutions with their counts.

Notation: a solution's correct steps before its first error have rewards sorted ascending
``s``; a specificity pair is a < b (sorted positions) with gap y = fl(s_b - s_a) >= 0, which is
|r(a) - r(b)| of the pair loop bit for bit (IEEE subtraction rounds -(s_b - s_a) to the negation
of fl(s_b - s_a), and fl(s_b - s_a) is non-decreasing in s_b). So:

    #(y > e)  = sum_a (n - first_a(y > e)),   first_a = the first b > a with fl(s_b - s_a) > e
    #(y = 0)  = #(y <= 0),                    #pairs = n(n - 1) / 2

each ``first_a`` a binary search on ``s`` with the exact test fl(s_b - s_a) > e at its edge
(:func:`first_past`). The discrimination pairs (each correct step before the first error with
the first wrong step) are k per solution: they stay a list.

The order metrics (ds_auc, balanced_best) compare every discrimination gap x of the slice
with every |y|. Their counts need |y| only in the cells between the slice's distinct x values
v_1 < ... < v_m: cell 2j = {y = v_j}, cell 2j + 1 = {v_j < y < v_{j+1}} (v_0 = -inf,
v_{m+1} = inf), so per resample

    ds_auc numerator = sum_j #w(x = v_j) (#w(y < v_j) + 0.5 [v_j > 0] #w(y = v_j)),

and balanced_best needs its score only at 0 and at the largest |y| of each interval
[v_j, v_{j+1}) (:class:`rmbench.core.step_slice.StepOrder`). The short solutions of a slice
(:data:`SMALL`) have their gaps listed together; a long one's cells come from its gaps a block
of rows at a time, each placed by a table lookup (:class:`Intervals`: O(pairs) time, O(n + m)
memory), or, when it has many more pairs than steps x values, from two searches per (step, x
value) (:func:`solution_cells`). Counting pairs at thresholds that are themselves gaps of the
solution is 3SUM-like, so these two are quadratic in time in the worst case (a long solution
whose first error is its last step); D, Spec and the rest are not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.core.arrays import FloatArray, IntArray

BLOCK = 1 << 20
"""Most (pair or step x value) entries held at once while counting a long solution."""


def first_past(s: FloatArray, a: IntArray, t: FloatArray, strict: bool, start: IntArray | None = None) -> IntArray:
    """For each i: the first b > a[i] with fl(s[b] - s[a[i]]) > t[i] (``strict``) or >= t[i]
    (else), len(s) if none; ``s`` sorted ascending. A search on s + t (or from ``start``, a
    guess), corrected at its edge with the exact test, a run of equal values at a time (the
    test is the same on a run)."""
    n = len(s)
    sa = s[a]
    guess = np.searchsorted(s, sa + t, side="right" if strict else "left") if start is None else start
    j = np.clip(guess, a + 1, n)

    def passes(i: IntArray, b: IntArray) -> np.ndarray:
        d = s[b] - sa[i]
        return d > t[i] if strict else d >= t[i]

    todo = np.flatnonzero(j - 1 > a)  # down while the step before passes too
    while todo.size:
        b = j[todo] - 1
        move = passes(todo, b)
        todo, b = todo[move], b[move]
        j[todo] = np.maximum(np.searchsorted(s, s[b], side="left"), a[todo] + 1)
        todo = todo[j[todo] - 1 > a[todo]]
    todo = np.flatnonzero(j < n)  # up while this step fails
    while todo.size:
        b = j[todo]
        stay = ~passes(todo, b)
        todo, b = todo[stay], b[stay]
        j[todo] = np.searchsorted(s, s[b], side="right")
        todo = todo[j[todo] < n]
    return j


def pairs_at_most(s: FloatArray, t: float) -> int:
    """#(pairs a < b of sorted ``s`` with fl(s_b - s_a) <= t)."""
    n = len(s)
    if n < 2:
        return 0
    a = np.arange(n, dtype=np.int64)
    return int((first_past(s, a, np.full(n, float(t)), strict=True) - a - 1).sum())


@dataclass(frozen=True)
class SolutionCounts:
    """One solution's specificity pairs counted: ``pairs``, ``zero`` (y = 0), ``above[k]``
    (y > the run's k-th raw eps)."""

    pairs: int
    zero: int
    above: tuple[int, ...]

    @classmethod
    def of(cls, s: FloatArray, eps_raw: Sequence[float]) -> SolutionCounts:
        """The counts of the correct-step rewards ``s`` (sorted ascending)."""
        n = len(s)
        pairs = n * (n - 1) // 2
        return cls(pairs, pairs_at_most(s, 0.0), tuple(pairs - pairs_at_most(s, e) for e in eps_raw))


@dataclass(frozen=True)
class Cells:
    """A solution's specificity pairs by cell of the slice's x values ``v`` (module docstring):
    ``cell`` (nonempty cells) with their ``count``; ``top``: the largest |y| in [v_j, v_{j+1})
    for each nonempty such interval j (0..m) of ``interval``."""

    cell: IntArray
    count: IntArray
    interval: IntArray
    top: FloatArray


class Intervals:
    """The interval j = #(v <= y) of many values y among sorted distinct ``v``, and whether
    y = v_j, exact: a table lookup instead of a binary search. Bucket b(y) = floor((y - v_1) *
    scale) + 1, clipped to 0..B (about 4 buckets per value), is non-decreasing in y (each float
    operation is), so every v of a lower bucket is below y and every v of a higher one above;
    j = #(v in lower buckets) + #(v in y's bucket that are <= y), the last a comparison with the
    one v there (a binary search where a bucket holds several)."""

    def __init__(self, v: FloatArray) -> None:
        self.v, m = v, len(v)
        span = float(v[-1] - v[0]) if m > 1 else 0.0
        self.buckets = 4 * m
        self.scale = self.buckets / span if 0 < span < np.inf and np.isfinite(self.buckets / span) else 0.0
        self.padded = np.append(v, np.inf)
        if self.scale:
            per = np.bincount(self._bucket(v), minlength=self.buckets + 2)
            self.before = np.concatenate([[0], np.cumsum(per)[:-1]])
            self.shared = per > 1

    def _bucket(self, y: FloatArray) -> IntArray:
        with np.errstate(over="ignore"):  # a gap far past the values: clipped to the last bucket
            b = (y - self.v[0]) * self.scale
        np.clip(b, -1.0, float(self.buckets), out=b)
        out: IntArray = np.floor(b).astype(np.int64) + 1
        return out

    def place(self, y: FloatArray) -> tuple[IntArray, np.ndarray]:
        """(j, y == v_j) for each y (never equal at j = 0)."""
        if not self.scale:
            j = np.searchsorted(self.v, y, side="right")
            return j, np.append(np.nan, self.v)[j] == y
        b = self._bucket(y)
        base = self.before[b]
        first = self.padded[base]
        j = base + (first <= y)
        equal = first == y
        shared = np.flatnonzero(self.shared[b].ravel())
        if shared.size:
            flat_j, flat_y, flat_eq = j.reshape(-1), y.reshape(-1), equal.reshape(-1)
            flat_j[shared] = np.searchsorted(self.v, flat_y[shared], side="right")
            flat_eq[shared] = np.append(np.nan, self.v)[flat_j[shared]] == flat_y[shared]
        return j, equal


def _cells_from_rows(block: FloatArray, v: Intervals, counts: np.ndarray, top: FloatArray, none: int) -> None:
    """Add the gaps of ``block`` (rows sorted ascending; -inf: no pair, ``none`` of them) to the
    per-cell ``counts`` and the per-interval maxima ``top`` (in place); a row's largest gap in
    an interval is the last of its run there."""
    j, equal = v.place(block)
    cell = 2 * j + 1
    cell -= equal  # y = v_j
    counts += np.bincount(cell.ravel(), minlength=len(counts))
    counts[1] -= none  # -inf: interval 0, not equal
    last = np.ones(block.shape, dtype=bool)
    np.not_equal(j[:, :-1], j[:, 1:], out=last[:, :-1])
    np.maximum.at(top, j[last], block[last])


def solution_cells(s: FloatArray, v: FloatArray, listed: bool | None = None) -> Cells:
    """:class:`Cells` of the correct-step rewards ``s`` (sorted ascending) against the slice's
    sorted distinct x values ``v``: from the pairs in blocks of rows (``listed``), or from the
    counts #(y < v_j), #(y <= v_j) and the largest y < v_j (None: the first unless there are
    more than twice as many pairs as steps x values)."""
    n, m = len(s), len(v)
    counts = np.zeros(2 * m + 2, dtype=np.int64)
    top = np.full(m + 1, -np.inf)
    pairs = n * (n - 1) // 2
    if listed is None:
        listed = pairs <= 2 * n * m or m == 0
    if pairs == 0:
        pass
    elif listed or m == 0:
        rows, intervals = max(1, BLOCK // n), Intervals(v)
        for a0 in range(0, n - 1, rows):
            a = np.arange(a0, min(a0 + rows, n - 1))
            block = s[None, a0 + 1:] - s[a, None]  # row a: b = a0 + 1 ..., those b <= a no pair
            block[np.arange(a0 + 1, n)[None, :] <= a[:, None]] = -np.inf
            _cells_from_rows(block, intervals, counts, top, len(a) * (len(a) - 1) // 2)
    else:
        lt, le, below = _threshold_counts(s, v)
        counts[2:2 * m + 1:2] = le - lt  # y = v_j
        counts[1::2] = np.append(lt, pairs) - np.append(0, le)  # v_j < y < v_{j+1}
        top[:m] = np.where(counts[1:2 * m:2] + np.append(0, counts[2:2 * m:2]) > 0, below, -np.inf)
        top[m] = s[-1] - s[0] if counts[2 * m] + counts[2 * m + 1] > 0 else -np.inf
    cell, interval = np.flatnonzero(counts), np.flatnonzero(np.isfinite(top))
    return Cells(cell, counts[cell], interval, top[interval])


def _threshold_counts(s: FloatArray, v: FloatArray) -> tuple[IntArray, IntArray, FloatArray]:
    """Per x value v_j: #(y < v_j), #(y <= v_j) and the largest y < v_j (-inf when none)."""
    n, m = len(s), len(v)
    lt, le, below = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), np.full(m, -np.inf)
    per = max(1, BLOCK // (4 * n))  # a dozen arrays of n x per entries
    steps = np.arange(n, dtype=np.int64)
    for j0 in range(0, m, per):
        t = v[j0:j0 + per]
        a = np.repeat(steps, len(t))
        tt = np.tile(t, n)
        ge = first_past(s, a, tt, strict=False)
        gt = first_past(s, a, tt, strict=True, start=ge)  # the same but past the gaps equal to v_j
        lt[j0:j0 + per] = (ge - a - 1).reshape(n, len(t)).sum(axis=0)
        le[j0:j0 + per] = (gt - a - 1).reshape(n, len(t)).sum(axis=0)
        b = ge - 1
        gap = np.where(b > a, s[b] - s[a], -np.inf)
        below[j0:j0 + per] = gap.reshape(n, len(t)).max(axis=0)
    return lt, le, below


SMALL = 2048
"""A solution of at most this many specificity pairs has them listed, with every such solution
of the slice at once (one array operation for all, instead of a few per solution)."""

_PAIRS: dict[int, tuple[IntArray, IntArray]] = {}


def listed_gaps(steps: Sequence[FloatArray], which: IntArray) -> tuple[FloatArray, IntArray]:
    """The gaps y = fl(s_b - s_a), a < b, of the solutions ``which`` (positions in ``steps``,
    each sorted ascending), and the position of each gap's solution."""
    gaps, groups = [np.zeros(0)], [np.zeros(0, dtype=np.int64)]
    for i in which:
        s = steps[i]
        if len(s) not in _PAIRS:
            _PAIRS[len(s)] = np.triu_indices(len(s), 1)
        a, b = _PAIRS[len(s)]
        gaps.append(s[b] - s[a])
        groups.append(np.full(len(a), i, dtype=np.int64))
    return np.concatenate(gaps), np.concatenate(groups)


@dataclass(frozen=True)
class SliceCounts:
    """:class:`SolutionCounts` of every solution of a slice, as arrays: ``pairs``, ``zero`` (one
    entry per solution) and ``above`` (eps x solutions)."""

    pairs: IntArray
    zero: IntArray
    above: IntArray

    @classmethod
    def of(cls, steps: Sequence[FloatArray], eps_raw: Sequence[float]) -> SliceCounts:
        n = np.array([len(s) for s in steps], dtype=np.int64)
        pairs = n * (n - 1) // 2
        y, g = listed_gaps(steps, np.flatnonzero(pairs <= SMALL))
        zero = np.bincount(g[y == 0], minlength=len(steps))
        above = np.array([np.bincount(g[y > e], minlength=len(steps)) for e in eps_raw],
                         dtype=np.int64).reshape(len(eps_raw), len(steps))
        for i in np.flatnonzero(pairs > SMALL).tolist():
            c = SolutionCounts.of(steps[i], eps_raw)
            zero[i], above[:, i] = c.zero, c.above
        return cls(pairs, zero, above)


def slice_cells(steps: Sequence[FloatArray], v: FloatArray) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
    """Every nonempty (solution, cell) of a slice's specificity pairs against its x values ``v``
    (solution, cell, count), and the slice's largest |y| per interval (-inf: none)."""
    m = len(v)
    width = 2 * m + 2
    n = np.array([len(s) for s in steps], dtype=np.int64)
    pairs = n * (n - 1) // 2
    y, g = listed_gaps(steps, np.flatnonzero(pairs <= SMALL))
    j = np.searchsorted(v, y, side="right")
    key, count = np.unique(g * width + 2 * j + 1 - (np.append(-np.inf, v)[j] == y), return_counts=True)
    top = np.full(m + 1, -np.inf)
    np.maximum.at(top, j, y)
    groups, cells, counts = [key // width], [key % width], [count]
    for i in np.flatnonzero(pairs > SMALL).tolist():
        c = solution_cells(steps[i], v)
        groups.append(np.full(len(c.cell), i, dtype=np.int64))
        cells.append(c.cell)
        counts.append(c.count)
        np.maximum.at(top, c.interval, c.top)
    return np.concatenate(groups), np.concatenate(cells), np.concatenate(counts), top


def correct_steps(utilities: Sequence[int], rewards: FloatArray) -> FloatArray:
    """The rewards of a solution's correct steps before its first error (all, when none is
    wrong), sorted ascending: the steps of its specificity pairs."""
    k = list(utilities).index(0) if 0 in utilities else len(utilities)
    return np.sort(np.asarray(rewards[:k], dtype=np.float64))
