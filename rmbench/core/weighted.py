"""The group bootstrap from resample weights: every pair metric of a slice for a block of
resamples at once, in time linear in the pairs per resample and with no sort.

A bootstrap resample draws ``n_units`` units with replacement (the very draws of
:func:`rmbench.core.metrics.bootstrap_ci`); unit u drawn c_u times puts every pair of its groups
c_u times into the resample's pair list. So each metric is a function of the integer weights
``w_g = c_unit(g)``: the count metrics (accuracies, D, Spec, flips) are ratios of weighted
counts ``sum_g w_g n_g`` of per-group counts ``n_g`` (one matrix product per block), the order
metrics (ds_auc, balanced_best, length_correlation) come from prefix sums over pairs sorted
once (:mod:`rmbench.core.weighted_order`).

Exactness: every count is an integer held exactly in float64 (below 2**53), and the final float
operations are those of the plain functions on their integer counts, so pairwise_accuracy,
sign_accuracy, D and Spec at every eps, the length accuracies and their gap, the rewrite
metrics, ds_auc and balanced_best (score and eps) are bit-equal to the plain functions on the
resampled pairs, and so is length_correlation up to about 180,000 specificity pairs in a
resample (:func:`rmbench.core.weighted_order.spearman`; beyond, both round). The one
exception is reward_margin, a mean of float gaps: here ``sum_u c_u S_u / N`` with S_u the
unit's sum of |gap| (summed per group, then per unit), there numpy's pairwise sum over the
resample's gaps in draw order; the two differ by float rounding only (relative ~1e-15).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rmbench.core.weighted_order import OrderStats, ratio


def unit_counts(draws: np.ndarray, n_units: int) -> np.ndarray:
    """c[b, u] = number of times unit u occurs in resample b (row b of ``draws``), int64."""
    b = draws.shape[0]
    flat = (draws + (np.arange(b, dtype=np.int64) * n_units)[:, None]).reshape(-1)
    return np.bincount(flat, minlength=b * n_units).reshape(b, n_units)


def group_sums(groups: np.ndarray, n_groups: int, columns: Sequence[np.ndarray]) -> np.ndarray:
    """M[g, k] = sum over the pairs i of group g of columns[k][i] (a pair indicator or a value)."""
    if not columns:
        return np.zeros((n_groups, 0))
    return np.stack([np.bincount(groups, weights=np.asarray(c, dtype=np.float64), minlength=n_groups)
                     for c in columns], axis=1)


@dataclass(frozen=True)
class FormPairs:
    """The rewrite pairs of a slice: which discrimination / specificity pairs join two forms, and
    the flip pairs' rewritten gaps ``new``, original gaps ``old`` and group numbers ``group``."""

    diff_cross: np.ndarray
    eq_cross: np.ndarray
    new: np.ndarray
    old: np.ndarray
    group: np.ndarray


class WeightedSlice:
    """All pair metrics of one slice as functions of unit counts ``C`` (resamples x units).

    ``diff``/``eq``: discrimination and specificity gaps r(a) - r(b), with their groups
    (0..n_groups-1) and length differences; ``group_unit``: each group's unit (0..n_units-1),
    so a resample's group weights are ``W = C[:, group_unit]``; ``eps_raw``: eps in raw units;
    ``sigma``: the reward_margin unit. :meth:`values` returns the columns in the order of the
    plain statistic: PAIR_METRICS, D and Spec per eps, the length metrics, the form metrics,
    then balanced_best's eps.
    """

    def __init__(self, group_unit: np.ndarray, n_units: int, diff: np.ndarray, diff_group: np.ndarray,
                 diff_len: np.ndarray, eq: np.ndarray, eq_group: np.ndarray, eq_len: np.ndarray,
                 eps_raw: Sequence[float], sigma: float, forms: FormPairs | None = None):
        n_groups = len(group_unit)
        self.group_unit, self.identity = group_unit, bool(np.array_equal(group_unit, np.arange(n_units)))
        self.n_eps, self.sigma, self.forms = len(eps_raw), float(sigma), forms is not None
        x, y, L = diff, np.abs(eq), diff_len
        dcol = [np.ones_like(x), x > 0, x == 0, (L > 0), (L > 0) & (x > 0), (L > 0) & (x == 0),
                (L < 0), (L < 0) & (x > 0), (L < 0) & (x == 0)] + [x > e for e in eps_raw]
        ecol = [np.ones_like(y), y == 0] + [y > e for e in eps_raw]
        fcol: list[np.ndarray] = []
        if forms is not None:
            c = forms.diff_cross
            dcol += [c, ~c] + [c & (x > e) for e in eps_raw] + [~c & (x > e) for e in eps_raw]
            ecol += [forms.eq_cross] + [forms.eq_cross & (y > e) for e in eps_raw]
            fcol = [np.ones_like(forms.new), np.sign(forms.new) != np.sign(forms.old)]
        by_group = np.concatenate([group_sums(diff_group, n_groups, dcol + [np.abs(x)]),
                                   group_sums(eq_group, n_groups, ecol),
                                   group_sums(forms.group, n_groups, fcol) if forms is not None
                                   else np.zeros((n_groups, 0))], axis=1)
        # Per unit: sum over its groups (exact for the integer columns), so T = C @ counts.
        self.counts = np.stack([np.bincount(group_unit, weights=col, minlength=n_units) for col in by_group.T],
                               axis=1)
        self.nd, self.ne = len(dcol), len(ecol)
        self.order = OrderStats(diff, diff_group, eq, eq_group, eq_len, n_groups)

    def values(self, C: np.ndarray) -> np.ndarray:
        """The metric columns (resamples x metrics) of the resamples with unit counts ``C``.

        T = C @ counts (per-unit pair counts): T_n, T_pos, T_zero over discrimination pairs,
        T_eq, T_eq0 over specificity pairs, T_{gap > eps}, T_{|gap| > eps}; then
        acc = (T_pos + 0.5 T_zero) / T_n, sign = (T_pos + T_eq0) / (T_n + T_eq),
        margin = T_|gap| / T_n / sigma, D(eps) = T_{gap > eps} / T_n,
        Spec(eps) = 1 - T_{|gap| > eps} / T_eq, the length accuracies likewise over the pairs with
        the better answer longer / shorter, and the order metrics of :class:`OrderStats` on
        the group weights W = C[:, group_unit].
        """
        T = C.astype(np.float64) @ self.counts  # weighted counts: exact integers (and the |gap| sums)
        nd, ne, k = self.nd, self.ne, self.n_eps
        d, abs_sum, e, f = T[:, :nd], T[:, nd], T[:, nd + 1: nd + 1 + ne], T[:, nd + 1 + ne:]
        order = self.order.values(C if self.identity else C[:, self.group_unit])
        n = d[:, 0]
        margin = ratio(abs_sum, n) / self.sigma if self.sigma > 0 else np.where(n > 0, 0.0, np.nan)
        cols = [accuracy(n, d[:, 1], d[:, 2]), ratio(d[:, 1] + e[:, 1], n + e[:, 0]), order["ds_auc"],
                order["balanced_best"], margin]
        cols += [ratio(d[:, 9 + j], n) for j in range(k)] + [1.0 - ratio(e[:, 2 + j], e[:, 0]) for j in range(k)]
        longer, shorter = accuracy(d[:, 3], d[:, 4], d[:, 5]), accuracy(d[:, 6], d[:, 7], d[:, 8])
        cols += [order["length_correlation"], longer, shorter, longer - shorter]
        if self.forms:
            cols += self._form_columns(d[:, 9 + k:], e[:, 2 + k:], f)
        return np.column_stack(cols + [order["balanced_eps"]])

    def _form_columns(self, d: np.ndarray, e: np.ndarray, f: np.ndarray) -> list[np.ndarray]:
        """Per eps: Spec over cross-form specificity pairs, D within a form and across forms,
        cross - within; then the flip rate = #w(sign(new) != sign(old)) / #w(flip pairs)."""
        k = self.n_eps
        spec = [1.0 - ratio(e[:, 1 + j], e[:, 0]) for j in range(k)]
        cross = [ratio(d[:, 2 + j], d[:, 0]) for j in range(k)]
        within = [ratio(d[:, 2 + k + j], d[:, 1]) for j in range(k)]
        return spec + within + cross + [c - w for c, w in zip(cross, within)] + [ratio(f[:, 1], f[:, 0])]


def accuracy(n: np.ndarray, n_pos: np.ndarray, n_zero: np.ndarray) -> np.ndarray:
    """Weighted pairwise accuracy: (#w(gap > 0) + 0.5 * #w(gap = 0)) / #w(pairs), nan for no pairs."""
    return ratio(n_pos + 0.5 * n_zero, n)
