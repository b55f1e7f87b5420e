"""JudgeBench's official accuracy (Tan et al. 2024, arXiv 2410.12784), as pure functions.

Written out from the GitHub repository ``ScalerLab/JudgeBench`` at commit ``e2c52c2``
(``utils/metrics.py``, ``run_judge.py``, ``utils/judges.py``); none of its code is copied.

A JudgeBench pair is a question with two responses A and B and a label, ``"A>B"`` or ``"B>A"``
(exactly one response is correct). Here a verdict is a number: +1 (A is better), -1 (B is
better), 0 (a tie, no decision, or two games that disagree).

* **One game** (``compute_final_metrics`` with ``reverse_order=False``: ``run_judge.py
  --single_game``): the judge sees (A, B) once; the pair is correct iff its decision equals the
  label. A tie (``"A=B"``) or a failed judgment (``None``) is *wrong*, never half right.
* **Two games** (``reverse_order=True``, ``run_judge.py``'s default): the judge also sees (B, A)
  and that decision is flipped back to the original order (``flip_judgment``). Each game adds
  +1 when it agrees with the label and -1 when it says the opposite (a tie or ``None`` adds 0);
  the pair is correct iff the sum is > 0. With verdicts v1, v2 in the original order and the
  label l = +1 / -1 that sum is l * (v1 + v2), so the pair's *combined verdict* is
  sign(v1 + v2) and the pair is correct iff it equals l: two consistent games decide, a game
  against a tie decides, and two games that disagree (or two ties) give 0, which is *wrong*
  (counted in the denominator, never half right).
* **A scalar reward model** (every ``reward_model`` judge of ``utils/judges.py``:
  ``'A>B' if score_A > score_B else 'B>A'``): the verdict of a game is +1 iff the first shown
  response's reward is strictly higher, else -1: **a tie r(A) == r(B) is "B>A"**. So in one game
  (:func:`reward_verdicts`, what JudgeBench's README advises for reward models) a tie counts as
  correct exactly when the label is ``"B>A"``; in two games the second game's tie says "A>B",
  the combined verdict is 0 and the tie is wrong whatever the label.

Accuracy (``compute_final_metrics``'s return value) = #correct / #pairs, over every pair of the
category. The categories are the source prefixes of ``run_judge.py``'s loop, ``mmlu-pro``,
``livebench-reasoning``, ``livebench-math``, ``livecodebench`` (the paper's Knowledge, Reasoning,
Math and Coding; ``mmlu-pro-math`` is Knowledge), matched by ``source.startswith(prefix)``; the
overall accuracy (its prefix ``""``) is over *all pairs*, weighted by pair, not the mean of the
four categories. JudgeBench prints percentages; these functions return fractions in [0, 1].

Checked once (a script outside the repository, which ships none of JudgeBench's data) against
JudgeBench's own ``compute_final_metrics`` on the judgments its repository records in
``outputs/`` at e2c52c2: the verdicts of the recorded decisions, one game and two, and
:func:`reward_model_verdicts` of the five reward models' recorded scores give its numbers exactly
(its four Skywork ties are "B>A" there too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from rmbench.core.arrays import FloatArray, IntArray
from rmbench.core.metric_registry import CHECKED_AGAINST_CODE, OfficialColumn, OfficialLayout

A_BETTER, TIE, B_BETTER = 1, 0, -1
"""Verdicts: the pair's better response in the original order (A, B); 0: no decision."""

JUDGEBENCH_CATEGORIES = ("knowledge", "reasoning", "math", "coding")
"""JudgeBench's categories, in ``run_judge.py``'s order."""
CATEGORY_PREFIXES = (("mmlu-pro", "knowledge"), ("livebench-reasoning", "reasoning"),
                     ("livebench-math", "math"), ("livecodebench", "coding"))
"""Source prefix -> category (``run_judge.py``: ``x["source"].startswith(source)``)."""
LABELS = {"A>B": A_BETTER, "B>A": B_BETTER}
"""A JudgeBench label -> the verdict that is correct for it."""

JUDGEBENCH_METRIC = "judgebench_score"
JUDGEBENCH_LAYOUT = OfficialLayout(
    "JudgeBench", JUDGEBENCH_METRIC,
    tuple(OfficialColumn(c.capitalize(), c) for c in JUDGEBENCH_CATEGORIES) + (OfficialColumn("Overall", None),),
    beside=("pairwise_accuracy", "discrimination"),
    provenance=CHECKED_AGAINST_CODE)  # tests/models/test_published.py: compute_final_metrics of a JudgeBench checkout
"""The paper's table (Knowledge, Reasoning, Math, Coding, Overall), beside rmbench's pairwise
accuracy (a tie counts 1/2 there) and D (a pair of JudgeBench has no equal-utility responses, so
neither specificity nor ds_auc is defined)."""


CANCELLED_VERDICT_RULE = (
    "JudgeBench's official scores (single_game: false, as its compute_final_metrics) count a pair whose two games' "
    "verdicts cancel (a tie) as wrong, while acc counts a tied pair as half right: a verdict model's acc is its "
    "official Overall plus half its share of tied pairs")
"""How the official table and ``acc`` each count a cancelled verdict: the leaderboard's legend
says it where a verdict model's JudgeBench table stands beside ``acc``."""


def counts_ties_apart(kind: str, args: Mapping[str, object], layout: OfficialLayout | None) -> bool:
    """Whether a task's official score counts a tied pair (two games that cancel) otherwise than
    ``acc`` does, beside which its table is shown: JudgeBench with ``single_game: false``."""
    return (kind == "judgebench" and args.get("single_game") is False and layout is not None
            and "pairwise_accuracy" in layout.beside)


def judgebench_category(source: str) -> str | None:
    """The category of a JudgeBench ``source`` (``mmlu-pro-law`` -> ``knowledge``), or None when
    it starts with none of the four prefixes."""
    return next((cat for prefix, cat in CATEGORY_PREFIXES if source.startswith(prefix)), None)


def decision_verdict(decision: str | None) -> int:
    """A judge's decision string -> verdict: ``"A>B"`` +1, ``"B>A"`` -1, anything else
    (``"A=B"``, ``None``, an unparsed answer) 0."""
    return LABELS.get(decision, TIE) if isinstance(decision, str) else TIE


def reward_verdicts(first: ArrayLike, second: ArrayLike) -> IntArray:
    """The verdict of one game of a scalar reward model: +1 where ``first`` (the reward of the
    response shown first) > ``second``, else -1 (a tie is "B>A", as JudgeBench's reward-model
    judges decide)."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    return np.where(a > b, A_BETTER, B_BETTER).astype(np.int64)


def combined_verdicts(first: ArrayLike, swapped: ArrayLike | None = None) -> IntArray:
    """A pair's verdict: the first game's alone (one game), or sign(v1 + v2) (two games), where
    ``swapped`` is the verdict of the game shown (B, A), already turned back to the order (A, B)
    (+1: A better). 0 where two games disagree or both are ties."""
    v = np.asarray(first, dtype=np.int64)
    if swapped is None:
        return np.sign(v)
    return np.sign(v + np.asarray(swapped, dtype=np.int64))


def reward_model_verdicts(reward_a: ArrayLike, reward_b: ArrayLike, single_game: bool = True) -> IntArray:
    """Verdicts of a scalar reward model, as ``run_judge.py --judge_name reward_model`` would
    give them: one game (A, B) with ``single_game``; else also the game (B, A), turned back.
    One game: +1 iff r(A) > r(B), else -1. Two games: sign(r(A) - r(B)) (a tie is 0)."""
    first = reward_verdicts(reward_a, reward_b)
    if single_game:
        return combined_verdicts(first)
    return combined_verdicts(first, -reward_verdicts(reward_b, reward_a))


def judgebench_correct(verdicts: ArrayLike, labels: Iterable[str | int]) -> FloatArray:
    """1.0 where a pair's combined verdict equals its label's (+1 for ``"A>B"``, -1 for
    ``"B>A"``; ``labels`` holds the strings or those numbers), else 0.0: a 0 verdict is wrong."""
    v = np.asarray(verdicts, dtype=np.int64)
    want = np.array([LABELS[x] if isinstance(x, str) else int(x) for x in labels], dtype=np.int64)
    correct: FloatArray = (v == want).astype(np.float64)
    return correct


def judgebench_accuracies(correct: ArrayLike, category_of: ArrayLike, n_categories: int = len(JUDGEBENCH_CATEGORIES),
                          weights: ArrayLike | None = None) -> FloatArray:
    """[overall, accuracy of category 0, ..., of category n_categories - 1].

    ``correct``: 0/1 per pair (:func:`judgebench_correct`); ``category_of``: each pair's category
    number (-1: in none, counted only overall); ``weights``: how often each pair counts (a
    bootstrap resample's multiplicities; default once). Accuracy = sum(w * correct) / sum(w) over
    the pairs of the category; overall over every pair. NaN where there are no pairs.
    """
    c = np.asarray(correct, dtype=np.float64).reshape(-1)
    cat = np.asarray(category_of, dtype=np.int64).reshape(-1)
    w = np.ones_like(c) if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
    inside = cat >= 0
    hits = np.bincount(cat[inside], weights=(w * c)[inside], minlength=n_categories)[:n_categories]
    sizes = np.bincount(cat[inside], weights=w[inside], minlength=n_categories)[:n_categories]
    total = w.sum()
    overall = (w * c).sum() / total if total > 0 else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        per: FloatArray = np.where(sizes > 0, hits / np.where(sizes > 0, sizes, 1), np.nan)
    return np.concatenate([[overall], per])


def judgebench_scores(verdicts: ArrayLike, labels: Iterable[str | int],
                      sources: Sequence[str]) -> dict[str | None, float]:
    """JudgeBench's report for pairs with combined ``verdicts``: category -> accuracy (the
    categories that have pairs) and None -> overall; fractions, not percentages."""
    cats = [judgebench_category(s) for s in sources]
    category_of = np.array([JUDGEBENCH_CATEGORIES.index(c) if c is not None else -1 for c in cats], dtype=np.int64)
    acc = judgebench_accuracies(judgebench_correct(verdicts, labels), category_of)
    out: dict[str | None, float] = {None: float(acc[0])}
    out.update({c: float(acc[1 + i]) for i, c in enumerate(JUDGEBENCH_CATEGORIES) if np.isfinite(acc[1 + i])})
    return out
