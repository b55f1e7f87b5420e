"""The common task score in one call: a per-group credit (1 correct, 0 wrong, 0.5 a tie...),
reported per category and in total, as inspect_ai's ``grouped(metric, "category")`` does.

:func:`grouped` gives the :class:`~rmbench.tasks.base.TaskScores` a task's
:meth:`~rmbench.tasks.base.Task.extra_metrics` returns: record ``(metric, None)`` is the total,
``(metric, CATEGORY)`` each category present. With ``w_g`` the number of times a resample draws
group g (its unit), ``c_g`` its credit and ``k_g`` whether it counts (default 1):

    acc(category) = sum_{g in category} w_g c_g / sum_{g in category} w_g k_g
    total "pooled" = sum_g w_g c_g / sum_g w_g k_g          (over every group, uncategorised ones too)
    total "mean"   = mean of acc(category) over the categories drawn in the resample

NaN where a denominator is 0. JudgeBench's accuracy is the pooled form (its ``compute_final_metrics``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from rmbench.tasks.base import TaskScores

Total = Literal["pooled", "mean"]
TOTALS: tuple[Total, ...] = ("pooled", "mean")


def grouped(metric: str, credit: ArrayLike, categories: Sequence[str | None], *, order: Sequence[str] = (),
            total: Total = "pooled", counted: ArrayLike | None = None) -> TaskScores:
    """``metric`` per category and in total (the module's formula), one entry per group.

    ``credit``: each group's credit; ``categories``: each group's category (None: in the total
    only); ``order``: the categories' order in the records (those present; any other after
    them, in order of first appearance); ``counted``: whether each group counts in the
    denominators (default all: a human tie that no answer can win counts 0). A record's ``n``
    is the number of groups that count in it.
    """
    if total not in TOTALS:
        raise ValueError(f"total {total!r}: use pooled or mean")
    c = np.asarray(credit, dtype=np.float64).reshape(-1)
    n = len(c)
    if len(categories) != n:
        raise ValueError(f"{len(categories)} categories for {n} groups' credit")
    k = None if counted is None else np.asarray(counted, dtype=np.float64).reshape(-1)
    seen = [x for x in dict.fromkeys(categories) if x is not None]
    names = [x for x in order if x in seen] + [x for x in seen if x not in order]
    index = {x: i for i, x in enumerate(names)}
    category_of = np.array([index.get(x, -1) if x is not None else -1 for x in categories], dtype=np.int64)
    inside = category_of >= 0
    n_cat = len(names)
    counts_of = np.ones(n) if k is None else (k > 0)
    counts = (int(np.sum(counts_of)),) + tuple(int(np.sum(counts_of[category_of == i])) for i in range(n_cat))

    def score(units: np.ndarray) -> np.ndarray:
        w = np.bincount(units, minlength=n).astype(np.float64)
        hit = w * c
        weight = w if k is None else w * k
        hits = np.bincount(category_of[inside], weights=hit[inside], minlength=n_cat)[:n_cat]
        sizes = np.bincount(category_of[inside], weights=weight[inside], minlength=n_cat)[:n_cat]
        with np.errstate(invalid="ignore", divide="ignore"):
            per = np.where(sizes > 0, hits / np.where(sizes > 0, sizes, 1), np.nan)
            if total == "pooled":
                denominator = weight.sum()
                overall = hit.sum() / denominator if denominator > 0 else np.nan
            else:
                drawn = per[sizes > 0]
                overall = drawn.mean() if drawn.size else np.nan
        return np.concatenate([[overall], per])

    labels = ((metric, None),) + tuple((metric, x) for x in names)
    return TaskScores(labels, score, counts)
