"""VL-RewardBench's official accuracies (Li et al., CVPR 2025), as pure functions.

Written from the GitHub repository ``vl-rewardbench/VL_RewardBench`` (``cal.py``, commit
``9b10abd``); none of its code is copied. ``cal.py`` reads a judge's K answers per item and:

* maps an item to its **dataset** by its id's prefix (the text before the first ``_`` or ``-``):
  ``RLAIF`` -> ``rlaif-v``, ``RLHF`` -> ``rlhf-v``, ``mathverse`` and ``mmmu`` ->
  ``reasoning_tasks``, ``wildvision`` -> ``wildvision-battle``, ``hallucination`` -> ``povid``,
  anything else -> ``vlfeedback`` (:func:`dataset_of_id`);
* classes each answer **agree** (it picks the human-preferred response), **reject** (the other) or
  **doesntMatch** (no verdict parsed), and each item by a strict majority of its answers (more
  than half agree: agree; more than half reject: reject; else doesntMatch or other);
* maps datasets to three **groups**: ``vlfeedback`` and ``wildvision-battle`` -> general;
  ``povid``, ``rlhf-v``, ``rlaif-v`` -> hallucination; ``reasoning_tasks`` -> reasoning
  (:data:`GROUP_OF`);
* a group's accuracy is agree / (agree + reject) over its items (items classed neither are left
  out of both), **Overall Accuracy** the same over the three groups' items pooled, and **Macro
  Average Acc** the plain mean of the three groups' accuracies.

A reward model gives one answer per item: agree when the human-preferred response's reward is
strictly higher, reject when strictly lower, and a reward tie is doesntMatch (no verdict), left
out as ``cal.py`` leaves out an unparsed answer (:func:`classify_rewards`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.metric_registry import OfficialColumn, OfficialLayout

VLRB_METRIC = "vl_rewardbench_score"
DATASETS = ("povid", "reasoning_tasks", "rlaif-v", "rlhf-v", "vlfeedback", "wildvision-battle")
GROUP_OF = {"vlfeedback": "general", "wildvision-battle": "general", "povid": "hallucination",
            "rlhf-v": "hallucination", "rlaif-v": "hallucination", "reasoning_tasks": "reasoning"}
"""cal.py's ``group_mapping``: a dataset -> the group its items count in."""
GROUPS = ("general", "hallucination", "reasoning")
_PREFIXES = {"RLAIF": "rlaif-v", "RLHF": "rlhf-v", "mathverse": "reasoning_tasks", "mmmu": "reasoning_tasks",
             "wildvision": "wildvision-battle", "hallucination": "povid"}

AGREE, REJECT, NO_VERDICT = 1, -1, 0
"""An item's class: the human-preferred response picked, the other, or neither."""

VLRB_LAYOUT = OfficialLayout(
    "VL-RewardBench", VLRB_METRIC,
    (OfficialColumn("General", "general"), OfficialColumn("Hallucination", "hallucination"),
     OfficialColumn("Reasoning", "reasoning"), OfficialColumn("Overall Accuracy", None),
     OfficialColumn("Macro Average", "macro")),
    beside=("pairwise_accuracy", "discrimination"),
    provenance="as VL-RewardBench's cal.py scores a judge's answers (a reward tie: no verdict, left out)")
"""cal.py's table (general, hallucination, reasoning, Overall Accuracy, Macro Average Acc) beside
rmbench's pairwise accuracy (a tie 1/2 there) and D."""


def dataset_of_id(item_id: str) -> str:
    """cal.py's ``get_dataset_from_id``: the dataset named by the id's prefix (module doc)."""
    cuts = [i for i in (item_id.find("_"), item_id.find("-")) if i != -1]
    prefix = item_id[:min(cuts)] if cuts else item_id
    return _PREFIXES.get(prefix, "vlfeedback")


def classify_rewards(preferred: ArrayLike, other: ArrayLike) -> IntArray:
    """Each item's class from a reward model: AGREE where r(preferred) > r(other), REJECT where
    lower, NO_VERDICT on a tie."""
    gap = np.asarray(preferred, dtype=np.float64) - np.asarray(other, dtype=np.float64)
    return np.where(gap > 0, AGREE, np.where(gap < 0, REJECT, NO_VERDICT)).astype(np.int64)


def majority(agree: ArrayLike, reject: ArrayLike, answers: ArrayLike) -> IntArray:
    """cal.py's ``classify`` over K answers per item: AGREE where more than half of the item's
    ``answers`` agree, REJECT where more than half reject, else NO_VERDICT."""
    a, r, n = (np.asarray(x, dtype=np.float64) for x in (agree, reject, answers))
    return np.where(a > n / 2, AGREE, np.where(r > n / 2, REJECT, NO_VERDICT)).astype(np.int64)


def scores(classes: ArrayLike, groups: ArrayLike, weights: ArrayLike | None = None) -> FloatArray:
    """[general, hallucination, reasoning, overall, macro] from each item's class and group index
    (into :data:`GROUPS`), each item counted ``weights`` times (a bootstrap draw; default once).
    A group with no agreeing or rejecting item has no accuracy (NaN), and then neither has the
    macro average (cal.py raises ZeroDivisionError there, and already when one *dataset* present
    has no decided item; here such a dataset simply adds nothing to its group)."""
    c = np.asarray(classes, dtype=np.int64)
    g = np.asarray(groups, dtype=np.int64)
    w = np.ones(len(c)) if weights is None else np.asarray(weights, dtype=np.float64)
    agree = np.bincount(g, weights=w * (c == AGREE), minlength=len(GROUPS))
    decided = np.bincount(g, weights=w * (c != NO_VERDICT), minlength=len(GROUPS))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_group = agree / decided
        overall = agree.sum() / decided.sum()
    out: FloatArray = np.concatenate([per_group, [overall, per_group.mean()]])
    return out
