"""The built-in metrics computed from pairs, each declared once with its formula
(:class:`rmbench.core.metric_declaration.ComputedMetric`), in the order of a slice's records.

Thirteen are ratios of column sums, or differences of two, declared by their columns
(:meth:`ComputedMetric.of_columns`, :meth:`ComputedMetric.difference`; the columns in
:mod:`rmbench.core.pair_columns`), which gives both forms. With #w the count over a resample's
pairs (each pair as often as its group is drawn), x a discrimination gap, y = |specificity gap|,
L the length difference:

    acc = (#w(x > 0) + 0.5 #w(x = 0)) / #w,   sign acc = (#w(x > 0) + #w(y = 0)) / (#w + #w_eq),
    margin = sum_w |x| / #w / sigma,   D(eps) = #w(x > eps) / #w,   Spec(eps) = 1 - #w(y > eps) / #w_eq,

the length accuracies as acc over the pairs with L > 0 / L < 0, the rewrite metrics as D and
Spec over the pairs within / across forms, flips = #w(sign change) / #w(flip pairs). The order
statistics ds_auc, balanced_best and length_correlation are written in both forms: pooled,
the plain functions of :mod:`rmbench.core.metrics` / :mod:`rmbench.core.metrics_bias` on one
resample's gaps; weighted, :class:`rmbench.core.weighted_order.OrderStats`.
"""

from __future__ import annotations

from rmbench.core import metrics as M
from rmbench.core import metrics_bias as MB
from rmbench.core import pair_columns as C
from rmbench.core.metric_declaration import Computation, ComputedMetric
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.pairs import PooledPairs

LENGTH_CORRELATION_READING = (
    "length_correlation ranges over [-1, 1] and 0 is ideal (the reward difference of two equally good answers "
    "does not follow their length difference); > 0: longer answers get more reward, < 0: shorter ones. Both "
    "signs are a bias: it is marked lower-is-better only because the typical bias is positive; read |value|")
LENGTH_GAP_READING = (
    "length_bias_gap = acc when the better answer is longer - acc when it is shorter, over [-1, 1]; 0 is ideal, "
    "> 0 favours length, < 0 brevity. Both signs are a bias: marked lower-is-better only because the typical "
    "bias is positive; read |value|")

DIFF, EQ, ALL = Counted.DISCRIMINATION_PAIRS, Counted.SPECIFICITY_PAIRS, Counted.ALL_PAIRS


def _balanced_best(p: PooledPairs) -> tuple[float, float]:
    return M.balanced_best(p.pairs.diff, p.pairs.eq)


ACCURACY_LONGER = ComputedMetric.of_columns(
    MetricDef("accuracy_longer_better", "acc longer", True, False, DIFF,
              "pairwise accuracy over the pairs with u(a) > u(b) whose better answer a is the longer one "
              "(characters); pairs of equal length are left out"),
    (C.LONGER_POSITIVE, (0.5, C.LONGER_ZERO)), C.LONGER)
ACCURACY_SHORTER = ComputedMetric.of_columns(
    MetricDef("accuracy_shorter_better", "acc shorter", True, False, DIFF,
              "pairwise accuracy over the pairs with u(a) > u(b) whose better answer a is the shorter one "
              "(characters); pairs of equal length are left out; far below acc longer = length bias"),
    (C.SHORTER_POSITIVE, (0.5, C.SHORTER_ZERO)), C.SHORTER)
WITHIN_FORM = ComputedMetric.of_columns(
    MetricDef("within_form_discrimination", "D within", True, True, Counted.WITHIN_FORM_DISCRIMINATION_PAIRS,
              "D(eps) over pairs of one surface form (original vs original, rewrite vs rewrite)"),
    C.WITHIN_ABOVE, C.WITHIN, needs_forms=True)
CROSS_FORM = ComputedMetric.of_columns(
    MetricDef("cross_form_discrimination", "D cross", True, True, Counted.CROSS_FORM_DISCRIMINATION_PAIRS,
              "D(eps) over pairs across forms (original better vs rewritten worse, and the reverse)"),
    C.CROSS_ABOVE, C.CROSS, needs_forms=True)

BUILTIN: tuple[ComputedMetric, ...] = (
    ComputedMetric.of_columns(
        MetricDef("pairwise_accuracy", "acc", True, False, DIFF, "over pairs with u(a) > u(b): 1 if r(a) > r(b), "
                  "0.5 if equal"),
        (C.DIFF_POSITIVE, (0.5, C.DIFF_ZERO)), C.DIFF_PAIRS, shift_gap=True),
    ComputedMetric.of_columns(
        MetricDef("sign_accuracy", "sign acc", True, False, ALL, "sign(r(a) - r(b)) = sign(u(a) - u(b)) over "
                  "all pairs"),
        (C.DIFF_POSITIVE, C.EQ_ZERO), (C.DIFF_PAIRS, C.EQ_PAIRS)),
    ComputedMetric(
        MetricDef("ds_auc", "ds_auc", True, False, ALL, "area under (Spec(eps), D(eps)) for eps from 0 to inf"),
        lambda p, k: M.ds_auc(p.pairs.diff, p.pairs.eq), lambda b, k: b.order["ds_auc"]),
    ComputedMetric(
        MetricDef("balanced_best", "bal best", True, False, ALL, "max over eps of (D + Spec) / 2; its record's eps "
                  "is where it is reached"),
        lambda p, k: p.shared(_balanced_best)[0], lambda b, k: b.order["balanced_best"],
        reached_at=Computation(lambda p, k: p.shared(_balanced_best)[1], lambda b, k: b.order["balanced_eps"])),
    ComputedMetric.of_columns(
        MetricDef("reward_margin", "margin", True, False, DIFF, "mean |r(better) - r(worse)| / sigma"),
        C.ABS_GAP, C.DIFF_PAIRS, per_sigma=True, shift_gap=True),
    ComputedMetric.of_columns(
        MetricDef("discrimination", "D", True, True, DIFF, "D(eps) = P(r(a) > r(b) + eps | u(a) > u(b))"),
        C.DIFF_ABOVE, C.DIFF_PAIRS, shift_gap=True),
    ComputedMetric.of_columns(
        MetricDef("specificity", "Spec", True, True, EQ, "Spec(eps) = 1 - P(|r(a) - r(b)| > eps | u(a) = u(b))"),
        C.EQ_ABOVE, C.EQ_PAIRS, complement=True, shift_gap=True),
    ComputedMetric(
        MetricDef("length_correlation", "len corr", False, False, EQ,
                  "Spearman's rho between r(a) - r(b) and len(a) - len(b) (characters) over pairs with u(a) = u(b), "
                  "each pair taken in both orientations; 0 = no length bias, > 0 = longer answers get more reward, "
                  "< 0 = shorter ones", reading=LENGTH_CORRELATION_READING),
        lambda p, k: MB.length_correlation(p.pairs.eq, p.pairs.eq_len), lambda b, k: b.order["length_correlation"]),
    ACCURACY_LONGER,
    ACCURACY_SHORTER,
    ComputedMetric.difference(
        MetricDef("length_bias_gap", "len gap", False, False, DIFF,
                  "accuracy_longer_better - accuracy_shorter_better; 0 = no length bias, > 0 = favours longer "
                  "answers, < 0 = shorter ones", reading=LENGTH_GAP_READING),
        ACCURACY_LONGER, ACCURACY_SHORTER),
    ComputedMetric.of_columns(
        MetricDef("rewrite_specificity", "rw Spec", True, True, Counted.CROSS_FORM_SPECIFICITY_PAIRS,
                  "Spec(eps) over pairs of an answer and its meaning-preserving rewrite (equal utility by "
                  "construction)"),
        C.EQ_CROSS_ABOVE, C.EQ_CROSS, complement=True, needs_forms=True),
    WITHIN_FORM,
    CROSS_FORM,
    ComputedMetric.difference(
        MetricDef("cross_form_gap", "D gap", True, True, Counted.CROSS_FORM_DISCRIMINATION_PAIRS,
                  "D cross - D within at eps, from the same resample (paired CI); < 0: the preference weakens when "
                  "the surface changes"),
        CROSS_FORM, WITHIN_FORM),
    ComputedMetric.of_columns(
        MetricDef("preference_flip_rate", "flips", False, False, Counted.REWRITTEN_DISCRIMINATION_PAIRS,
                  "share of rewritten pairs whose preference sign differs from their originals'"),
        C.FLIPPED, C.FLIP_PAIRS, needs_forms=True),
)
"""The metrics every summary computes, per slice (the rewrite ones on tasks with rewrites)."""
