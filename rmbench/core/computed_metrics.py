"""The built-in metrics computed from pairs, each declared once with its formula and both forms
(:class:`rmbench.core.metric_declaration.ComputedMetric`), in the order of a slice's records.

Pooled forms call :mod:`rmbench.core.metrics` / :mod:`rmbench.core.metrics_bias` on one
resample's gaps; weighted forms divide weighted pair counts (:mod:`rmbench.core.pair_columns`)
or read the order statistics, with the same float operations on the same integer counts. With
#w the count over a resample's pairs (each pair as often as its group is drawn), x a
discrimination gap, y = |specificity gap|, L the length difference:

    acc = (#w(x > 0) + 0.5 #w(x = 0)) / #w,   sign acc = (#w(x > 0) + #w(y = 0)) / (#w + #w_eq),
    margin = sum_w |x| / #w / sigma,   D(eps) = #w(x > eps) / #w,   Spec(eps) = 1 - #w(y > eps) / #w_eq,

the length accuracies as acc over the pairs with L > 0 / L < 0, the rewrite metrics as D and
Spec over the pairs within / across forms, flips = #w(sign change) / #w(flip pairs); ds_auc,
balanced_best and length_correlation from :class:`rmbench.core.weighted_order.OrderStats`.
"""

from __future__ import annotations

import numpy as np

from rmbench.core import metrics as M
from rmbench.core import metrics_bias as MB
from rmbench.core import pair_columns as C
from rmbench.core.arrays import FloatArray
from rmbench.core.metric_declaration import Computation, ComputedMetric
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.pairs import PooledPairs
from rmbench.core.weighted import WeightedBlock, accuracy
from rmbench.core.weighted_order import ratio

LENGTH_CORRELATION_READING = (
    "length_correlation ranges over [-1, 1] and 0 is ideal (the reward difference of two equally good answers "
    "does not follow their length difference); > 0: longer answers get more reward, < 0: shorter ones. Both "
    "signs are a bias: it is marked lower-is-better only because the typical bias is positive; read |value|")
LENGTH_GAP_READING = (
    "length_bias_gap = acc when the better answer is longer - acc when it is shorter, over [-1, 1]; 0 is ideal, "
    "> 0 favours length, < 0 brevity. Both signs are a bias: marked lower-is-better only because the typical "
    "bias is positive; read |value|")

DIFF, EQ, ALL = Counted.DISCRIMINATION_PAIRS, Counted.SPECIFICITY_PAIRS, Counted.ALL_PAIRS


# --- intermediates that several metrics share, computed once per view ---------------------

def _balanced_best(p: PooledPairs) -> tuple[float, float]:
    return M.balanced_best(p.pairs.diff, p.pairs.eq)


def _by_length(p: PooledPairs) -> tuple[float, float]:
    return MB.accuracy_by_length(p.pairs.diff, p.pairs.diff_len)


def _cross_eq(p: PooledPairs) -> FloatArray:
    return p.pairs.eq[p.pairs.rewrites.eq_cross]


def _cross_diff(p: PooledPairs) -> FloatArray:
    return p.pairs.diff[p.pairs.rewrites.diff_cross]


def _within_diff(p: PooledPairs) -> FloatArray:
    return p.pairs.diff[~p.pairs.rewrites.diff_cross]


# --- weighted forms of more than a line -------------------------------------------------

def _margin(b: WeightedBlock, k: int) -> FloatArray:
    n = b.total(C.DIFF_PAIRS)
    return ratio(b.total(C.ABS_GAP), n) / b.sigma if b.sigma > 0 else np.where(n > 0, 0.0, np.nan)


def _longer(b: WeightedBlock, k: int) -> FloatArray:
    return accuracy(b.total(C.LONGER), b.total(C.LONGER_POSITIVE), b.total(C.LONGER_ZERO))


def _shorter(b: WeightedBlock, k: int) -> FloatArray:
    return accuracy(b.total(C.SHORTER), b.total(C.SHORTER_POSITIVE), b.total(C.SHORTER_ZERO))


def _cross(b: WeightedBlock, k: int) -> FloatArray:
    return ratio(b.total(C.CROSS_ABOVE, k), b.total(C.CROSS))


def _within(b: WeightedBlock, k: int) -> FloatArray:
    return ratio(b.total(C.WITHIN_ABOVE, k), b.total(C.WITHIN))


def _pooled_cross(p: PooledPairs, k: int) -> float:
    return M.discrimination(p.shared(_cross_diff), p.eps[k])


def _pooled_within(p: PooledPairs, k: int) -> float:
    return M.discrimination(p.shared(_within_diff), p.eps[k])


_ACCURACY = (C.DIFF_PAIRS, C.DIFF_POSITIVE, C.DIFF_ZERO)
_BY_LENGTH = (C.LONGER, C.LONGER_POSITIVE, C.LONGER_ZERO, C.SHORTER, C.SHORTER_POSITIVE, C.SHORTER_ZERO)
_CROSS_WITHIN = (C.CROSS, C.WITHIN, C.CROSS_ABOVE, C.WITHIN_ABOVE)

BUILTIN: tuple[ComputedMetric, ...] = (
    ComputedMetric(
        MetricDef("pairwise_accuracy", "acc", True, False, DIFF, "over pairs with u(a) > u(b): 1 if r(a) > r(b), "
                  "0.5 if equal"),
        lambda p, k: M.pairwise_accuracy(p.pairs.diff),
        lambda b, k: accuracy(b.total(C.DIFF_PAIRS), b.total(C.DIFF_POSITIVE), b.total(C.DIFF_ZERO)),
        _ACCURACY, shift_gap=True),
    ComputedMetric(
        MetricDef("sign_accuracy", "sign acc", True, False, ALL, "sign(r(a) - r(b)) = sign(u(a) - u(b)) over "
                  "all pairs"),
        lambda p, k: M.sign_accuracy(p.pairs.diff, p.pairs.eq),
        lambda b, k: ratio(b.total(C.DIFF_POSITIVE) + b.total(C.EQ_ZERO), b.total(C.DIFF_PAIRS) + b.total(C.EQ_PAIRS)),
        (C.DIFF_PAIRS, C.DIFF_POSITIVE, C.EQ_PAIRS, C.EQ_ZERO)),
    ComputedMetric(
        MetricDef("ds_auc", "ds_auc", True, False, ALL, "area under (Spec(eps), D(eps)) for eps from 0 to inf"),
        lambda p, k: M.ds_auc(p.pairs.diff, p.pairs.eq), lambda b, k: b.order["ds_auc"]),
    ComputedMetric(
        MetricDef("balanced_best", "bal best", True, False, ALL, "max over eps of (D + Spec) / 2; its record's eps "
                  "is where it is reached"),
        lambda p, k: p.shared(_balanced_best)[0], lambda b, k: b.order["balanced_best"],
        reached_at=Computation(lambda p, k: p.shared(_balanced_best)[1], lambda b, k: b.order["balanced_eps"])),
    ComputedMetric(
        MetricDef("reward_margin", "margin", True, False, DIFF, "mean |r(better) - r(worse)| / sigma"),
        lambda p, k: M.reward_margin(p.pairs.diff, p.sigma), _margin, (C.DIFF_PAIRS, C.ABS_GAP), shift_gap=True,
        exact=False),
    ComputedMetric(
        MetricDef("discrimination", "D", True, True, DIFF, "D(eps) = P(r(a) > r(b) + eps | u(a) > u(b))"),
        lambda p, k: M.discrimination(p.pairs.diff, p.eps[k]),
        lambda b, k: ratio(b.total(C.DIFF_ABOVE, k), b.total(C.DIFF_PAIRS)), (C.DIFF_PAIRS, C.DIFF_ABOVE),
        shift_gap=True),
    ComputedMetric(
        MetricDef("specificity", "Spec", True, True, EQ, "Spec(eps) = 1 - P(|r(a) - r(b)| > eps | u(a) = u(b))"),
        lambda p, k: M.specificity(p.pairs.eq, p.eps[k]),
        lambda b, k: 1.0 - ratio(b.total(C.EQ_ABOVE, k), b.total(C.EQ_PAIRS)), (C.EQ_PAIRS, C.EQ_ABOVE),
        shift_gap=True),
    ComputedMetric(
        MetricDef("length_correlation", "len corr", False, False, EQ,
                  "Spearman's rho between r(a) - r(b) and len(a) - len(b) (characters) over pairs with u(a) = u(b), "
                  "each pair taken in both orientations; 0 = no length bias, > 0 = longer answers get more reward, "
                  "< 0 = shorter ones", reading=LENGTH_CORRELATION_READING),
        lambda p, k: MB.length_correlation(p.pairs.eq, p.pairs.eq_len), lambda b, k: b.order["length_correlation"]),
    ComputedMetric(
        MetricDef("accuracy_longer_better", "acc longer", True, False, DIFF,
                  "pairwise accuracy over the pairs with u(a) > u(b) whose better answer a is the longer one "
                  "(characters); pairs of equal length are left out"),
        lambda p, k: p.shared(_by_length)[0], _longer, _BY_LENGTH),
    ComputedMetric(
        MetricDef("accuracy_shorter_better", "acc shorter", True, False, DIFF,
                  "pairwise accuracy over the pairs with u(a) > u(b) whose better answer a is the shorter one "
                  "(characters); pairs of equal length are left out; far below acc longer = length bias"),
        lambda p, k: p.shared(_by_length)[1], _shorter, _BY_LENGTH),
    ComputedMetric(
        MetricDef("length_bias_gap", "len gap", False, False, DIFF,
                  "accuracy_longer_better - accuracy_shorter_better; 0 = no length bias, > 0 = favours longer "
                  "answers, < 0 = shorter ones", reading=LENGTH_GAP_READING),
        lambda p, k: p.shared(_by_length)[0] - p.shared(_by_length)[1], lambda b, k: _longer(b, k) - _shorter(b, k),
        _BY_LENGTH),
    ComputedMetric(
        MetricDef("rewrite_specificity", "rw Spec", True, True, Counted.CROSS_FORM_SPECIFICITY_PAIRS,
                  "Spec(eps) over pairs of an answer and its meaning-preserving rewrite (equal utility by "
                  "construction)"),
        lambda p, k: M.specificity(p.shared(_cross_eq), p.eps[k]),
        lambda b, k: 1.0 - ratio(b.total(C.EQ_CROSS_ABOVE, k), b.total(C.EQ_CROSS)), (C.EQ_CROSS, C.EQ_CROSS_ABOVE),
        needs_forms=True),
    ComputedMetric(
        MetricDef("within_form_discrimination", "D within", True, True, Counted.WITHIN_FORM_DISCRIMINATION_PAIRS,
                  "D(eps) over pairs of one surface form (original vs original, rewrite vs rewrite)"),
        _pooled_within, _within, _CROSS_WITHIN, needs_forms=True),
    ComputedMetric(
        MetricDef("cross_form_discrimination", "D cross", True, True, Counted.CROSS_FORM_DISCRIMINATION_PAIRS,
                  "D(eps) over pairs across forms (original better vs rewritten worse, and the reverse)"),
        _pooled_cross, _cross, _CROSS_WITHIN, needs_forms=True),
    ComputedMetric(
        MetricDef("cross_form_gap", "D gap", True, True, Counted.CROSS_FORM_DISCRIMINATION_PAIRS,
                  "D cross - D within at eps, from the same resample (paired CI); < 0: the preference weakens when "
                  "the surface changes"),
        lambda p, k: _pooled_cross(p, k) - _pooled_within(p, k), lambda b, k: _cross(b, k) - _within(b, k),
        _CROSS_WITHIN, needs_forms=True),
    ComputedMetric(
        MetricDef("preference_flip_rate", "flips", False, False, Counted.REWRITTEN_DISCRIMINATION_PAIRS,
                  "share of rewritten pairs whose preference sign differs from their originals'"),
        lambda p, k: MB.preference_flip_rate(p.pairs.rewrites.new, p.pairs.rewrites.old),
        lambda b, k: ratio(b.total(C.FLIPPED), b.total(C.FLIP_PAIRS)), (C.FLIP_PAIRS, C.FLIPPED), needs_forms=True),
)
"""The metrics every summary computes, per slice (the rewrite ones on tasks with rewrites)."""
