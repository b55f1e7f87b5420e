"""PRMBench's official scores (Song et al. 2025, arXiv 2501.03124), as pure functions.

Written out from the GitHub repository ``ssmisya/PRMBench`` at commit ``a1ae4ea``
(``mr_eval/tasks/prmtest_classified/task.py``: ``load_data_function``, ``evaluate_function``,
``eval_on_hallucination_step``; ``mr_visualize/eval_res_view/draw_tabs/form_latex_strs.ipynb``:
``get_prmscore_from_current_res_dict``, ``get_avg_prmscore_from_current_res_dict``, the paper's
table; Apache-2.0). ``tests/tasks/test_prmbench.py`` runs those functions, copied with their source
named, on the same predictions.

**Predictions.** A process reward model's score s of a step (here P(step correct)) is a
prediction "correct" iff s > threshold (strictly; ``mr_eval/models/*.py``:
``step_level_validity_labels = [item > self.validity_threshold ...]``, 0.5 by default).

**Confusion counts** (``eval_on_hallucination_step``), with the *correct* step the positive
class: a step outside the process's ``error_steps`` (1-based) predicted correct is a TP, predicted
wrong an FN; an error step predicted correct is an FP, predicted wrong a TN. Every scored step
counts (not only those up to the first error); an error step number beyond the process's steps
labels nothing.

**F1** over the pooled counts of a set of processes (``evaluate_function``), with PRMBench's
sentinels: P = TP / (TP + FP), R = TP / (TP + FN), each -1 when its denominator is 0, and
F1 = 2 P R / (P + R), -1 when P + R = 0. So F1 = 2TP / (2TP + FP + FN) when TP > 0, and without a
true positive it is -1 (FP and FN both 0, or both > 0) or 0. **Negative F1** is the same with the
wrong step as the positive class (TN for TP, FN for FP, FP for FN).

**PRMScore** (``get_prmscore_from_current_res_dict``) = 0.5 F1 + 0.5 negative F1, set to 0 where
that is not > 0; for ``multi_solutions`` (processes without an error) F1 alone. *Overall* it is
computed from the counts pooled over every process with an error type (the original,
``correct`` processes are scored but counted only in their own class), not the mean of the types.
A *category* (simplicity, soundness, sensitivity: :data:`CATEGORIES`) is the plain mean of its
types' PRMScores (``get_avg_prmscore_from_current_res_dict``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray
from rmbench.core.metric_registry import CHECKED_AGAINST_CODE, OfficialColumn, OfficialLayout

CORRECT = "correct"
"""The class of an original (unmodified) process: all steps correct, not in the overall scores."""
F1_ONLY = ("multi_solutions",)
"""Types whose PRMScore is F1 alone (their processes have no error step)."""
CATEGORIES = (
    ("simplicity", (("redundency", "NR."), ("circular", "NCL."))),
    ("soundness", (("counterfactual", "ES."), ("step_contradiction", "SC."), ("domain_inconsistency", "DC."),
                   ("confidence", "CI."))),
    ("sensitivity", (("missing_condition", "PS."), ("deception", "DR."), ("multi_solutions", "MS."))),
)
"""PRMBench's categories and their error types (the data's ``classification`` names, spelt as
they are, with the paper's abbreviations), in the paper's order."""
ERROR_TYPES = tuple(t for _, types in CATEGORIES for t, _ in types)
CATEGORY_OF = {t: c for c, types in CATEGORIES for t, _ in types}

PRMBENCH_SCORE, PRMBENCH_F1, PRMBENCH_NEGATIVE_F1 = "prmbench_score", "prmbench_f1", "prmbench_negative_f1"
_COLUMNS = tuple(col for category, types in CATEGORIES
                 for col in (*(OfficialColumn(abbr, t) for t, abbr in types),
                             OfficialColumn(f"{category.capitalize()} Avg.", category)))
PRMBENCH_LAYOUT = OfficialLayout("PRMBench", PRMBENCH_SCORE, (OfficialColumn("Overall", None), *_COLUMNS),
                                 provenance=CHECKED_AGAINST_CODE)  # tests/support/prmbench_official.py: PRMBench's code
"""The paper's table (Overall; NR., NCL., Avg.; ES., SC., DC., CI., Avg.; PS., DR., MS., Avg.),
beside D, Spec and ds_auc over the steps up to each solution's first error."""


def step_confusion(correct: ArrayLike, scores: ArrayLike, threshold: float) -> FloatArray:
    """[TP, FP, TN, FN] of one process: ``correct`` each step's label (1 correct, 0 an error
    step), ``scores`` its step scores, predicted correct iff score > ``threshold``."""
    u = np.asarray(correct, dtype=np.float64) > 0
    predicted = np.asarray(scores, dtype=np.float64) > threshold
    return np.array([np.sum(predicted & u), np.sum(predicted & ~u), np.sum(~predicted & ~u),
                     np.sum(~predicted & u)], dtype=np.float64)


def official_f1(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> FloatArray:
    """PRMBench's F1 of pooled counts, elementwise, with its -1 sentinels (module doc)."""
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(tp + fp != 0, tp / np.where(tp + fp != 0, tp + fp, 1), -1.0)
        r = np.where(tp + fn != 0, tp / np.where(tp + fn != 0, tp + fn, 1), -1.0)
        f1: FloatArray = np.where(p + r != 0, 2 * p * r / np.where(p + r != 0, p + r, 1), -1.0)
    return f1 + 0.0  # PRMBench's -0.0 (P = -1, R = 0) reads 0.0


def f1_pair(counts: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """(F1, negative F1) of pooled [TP, FP, TN, FN] counts (shape (..., 4))."""
    c = np.asarray(counts, dtype=np.float64)
    tp, fp, tn, fn = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
    return official_f1(tp, fp, fn), official_f1(tn, fn, fp)


def prm_score(f1: ArrayLike, negative_f1: ArrayLike, f1_only: ArrayLike = False) -> FloatArray:
    """PRMScore = 0.5 F1 + 0.5 negative F1 (F1 alone where ``f1_only``), 0 where not > 0; NaN
    stays NaN (no process)."""
    f, n = np.asarray(f1, dtype=np.float64), np.asarray(negative_f1, dtype=np.float64)
    s = np.where(np.asarray(f1_only, dtype=bool), f, 0.5 * f + 0.5 * n)
    out: FloatArray = np.where(np.isnan(s), np.nan, np.where(s > 0, s, 0.0))
    return out
