"""ProcessBench's official scores (Zheng et al., ACL 2025, arXiv 2412.06559), as pure functions.

Written out from the evaluation scripts of the GitHub repositories ``QwenLM/ProcessBench`` at
commit ``e802463`` (``code/run_eval.py``: critic models; ``code/run_eval_prm_rlhflow.py``: a PRM
that answers ``+`` / ``-`` per step) and ``huggingface/ProcessBench`` at ``79916a4``
(``code/run_eval_prm_trl.py``: PRMs trained with TRL, a token classifier); none of their code is
copied here (``tests/tasks/test_processbench_task.py`` runs their metric lines beside these).

A ProcessBench row is one solution: a ``problem``, its ``steps`` and ``label``, the index of the
first wrong step (-1 when every step is right).

* **The prediction** is the index of the first step the model judges wrong, -1 when it judges
  none wrong. A process reward model judges a step by its P(step correct) ``p``: the step is
  judged right iff ``p > threshold`` (default 0.5), so a score *at* the threshold is wrong. That
  is ``run_eval_prm_trl.py``'s ``get_prediction_index``: the step's label is the argmax of the
  classifier's two classes (``LABEL_1`` = right), and at a tie numpy's argmax takes the first,
  ``LABEL_0`` (wrong). The RLHFlow script judges a step right iff the PRM's greedy next token is
  ``+`` (the same rule where P(correct) is the ``+`` token's share of ``+`` and ``-``); a critic
  model (``run_eval.py``) writes the index itself.
* **Per split** (``gsm8k``, ``math``, ``olympiadbench``, ``omnimath``; the scripts loop over
  them): a row matches iff prediction == label;

      error acc   = mean(match) over the rows with label != -1    (erroneous solutions)
      correct acc = mean(match) over the rows with label == -1    (correct solutions)
      F1          = 2 * error_acc * correct_acc / (error_acc + correct_acc)

  the harmonic mean of the two. The scripts print these in percent with one decimal; here they
  are fractions in [0, 1] (F1 scales with its arguments, so F1 here = the scripts' F1 / 100).
  Where the scripts divide 0 by 0 (both accuracies 0) F1 is 0 here, its limit; where a split has
  no erroneous (or no correct) rows its accuracy and F1 are NaN, as ``np.mean([])`` gives there.
* **The headline** is the mean of the four splits' F1 (the paper's "Avg. F1", Table 3; its code
  prints the splits only). Here: the mean F1 over the splits read (NaN where one is NaN); the
  same mean of the splits' error and correct accuracies is reported beside it.
  ``run_eval_prm_trl.py``'s "Weighted Averages" (weights = split sizes) is not the paper's
  number and is not computed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.metric_registry import CHECKED_AGAINST_CODE, OfficialColumn, OfficialLayout

PROCESSBENCH_SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")
"""The hub dataset's splits, in the scripts' order."""
SPLIT_LABELS = {"gsm8k": "GSM8K", "math": "MATH", "olympiadbench": "OlympiadBench", "omnimath": "Omni-MATH"}
"""Each split's name in the paper's tables."""
NO_ERROR = -1
"""The label (and prediction) of a solution with no wrong step."""
NO_PREDICTION = -2
"""The prediction of a solution whose steps all have no score (a critic's answer naming no step):
it matches no label, as ``run_eval.py``'s ``None`` prediction."""
DEFAULT_THRESHOLD = 0.5

PROCESSBENCH_F1 = "processbench_f1"
PROCESSBENCH_ERROR_ACC = "processbench_error_acc"
PROCESSBENCH_CORRECT_ACC = "processbench_correct_acc"


def processbench_layout(splits: Sequence[str] = PROCESSBENCH_SPLITS) -> OfficialLayout:
    """The paper's Table 3 for ``splits``: per split the error and correct accuracies and their
    F1, then the mean F1; beside it step-level D and Spec (the discrimination pairs of a
    solution: each correct step before the first error against that error; the specificity
    pairs: two of those correct steps)."""
    columns: list[OfficialColumn] = []
    for s in splits:
        label = SPLIT_LABELS[s]
        columns += [OfficialColumn(f"{label} error", s, PROCESSBENCH_ERROR_ACC),
                    OfficialColumn(f"{label} correct", s, PROCESSBENCH_CORRECT_ACC),
                    OfficialColumn(f"{label} F1", s)]
    return OfficialLayout("ProcessBench", PROCESSBENCH_F1, tuple(columns) + (OfficialColumn("Avg F1", None),),
                          beside=("discrimination", "specificity"),
                          provenance=CHECKED_AGAINST_CODE)  # tests/tasks/test_processbench_task.py: run_eval.py's lines


def first_error_prediction(p_correct: ArrayLike, threshold: float = DEFAULT_THRESHOLD) -> int:
    """The index of the first step whose P(correct) is not above ``threshold`` (judged wrong),
    -1 when every step's is (module doc); :data:`NO_PREDICTION` when no step has a score (all
    NaN). A NaN among scores is not above the threshold: that step is judged wrong, as the
    RLHFlow script reads a reply that is not ``+``."""
    p = np.asarray(p_correct, dtype=np.float64).reshape(-1)
    if p.size and np.isnan(p).all():
        return NO_PREDICTION
    wrong = np.flatnonzero(~(p > threshold))  # nan is not above: judged wrong
    return int(wrong[0]) if wrong.size else NO_ERROR


def harmonic_f1(error_acc: ArrayLike, correct_acc: ArrayLike) -> FloatArray:
    """2ab / (a + b) elementwise; 0 where a + b == 0 (the scripts' 0/0), NaN where either is NaN."""
    a, b = np.asarray(error_acc, dtype=np.float64), np.asarray(correct_acc, dtype=np.float64)
    total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(total > 0, 2 * a * b / np.where(total > 0, total, 1.0),
                                   np.where(np.isnan(total), np.nan, 0.0))
    return out


def split_accuracies(match: ArrayLike, labels: ArrayLike, split_of: ArrayLike, n_splits: int,
                     weights: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
    """(error acc, correct acc) of each split 0..n_splits-1: the weighted mean of ``match``
    (0/1 per row) over the split's rows with ``labels`` != -1, and over those with -1;
    ``weights``: how often each row counts (a bootstrap resample's multiplicities; default
    once). NaN where a split has no such row."""
    m = np.asarray(match, dtype=np.float64).reshape(-1)
    erroneous = np.asarray(labels, dtype=np.int64).reshape(-1) != NO_ERROR
    split = np.asarray(split_of, dtype=np.int64).reshape(-1)
    w = np.ones_like(m) if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)

    def acc(rows: np.ndarray) -> FloatArray:
        hits = np.bincount(split[rows], weights=(w * m)[rows], minlength=n_splits)[:n_splits]
        sizes = np.bincount(split[rows], weights=w[rows], minlength=n_splits)[:n_splits]
        with np.errstate(invalid="ignore", divide="ignore"):
            out: FloatArray = np.where(sizes > 0, hits / np.where(sizes > 0, sizes, 1.0), np.nan)
        return out

    return acc(erroneous), acc(~erroneous)


def processbench_scores(predictions: ArrayLike, labels: ArrayLike,
                        splits: Sequence[str]) -> dict[str, dict[str, float]]:
    """ProcessBench's report for rows with ``predictions``, ``labels`` and each row's split
    name: split -> {"error_acc", "correct_acc", "f1"} (the splits present, in the scripts'
    order) and ``"average"`` -> {"f1": mean F1}; fractions, not percentages."""
    names = [s for s in PROCESSBENCH_SPLITS if s in set(splits)]
    split_of: IntArray = np.array([names.index(s) for s in splits], dtype=np.int64)
    match = np.asarray(predictions, dtype=np.int64) == np.asarray(labels, dtype=np.int64)
    err, cor = split_accuracies(match, labels, split_of, len(names))
    f1 = harmonic_f1(err, cor)
    out = {s: {"error_acc": float(err[i]), "correct_acc": float(cor[i]), "f1": float(f1[i])}
           for i, s in enumerate(names)}
    out["average"] = {"f1": float(np.mean(f1)) if len(names) else float("nan")}
    return out
