"""ProcessBench (Zheng et al., ACL 2025, arXiv 2412.06559; ``Qwen/ProcessBench``): find the first
wrong step of a math solution, with its official error/correct accuracy and F1 per split.

Data, as published: the hub dataset ``Qwen/ProcessBench``, four splits of its default config,
``gsm8k`` (400 solutions), ``math`` (1,000), ``olympiadbench`` (1,000) and ``omnimath`` (1,000),
read as the official scripts read them (``load_dataset('Qwen/ProcessBench', split=config)``). A
row: ``id`` (``gsm8k-0``: the split, a dash, a number), ``generator`` (the model that wrote the
solution), ``problem``, ``steps`` (the solution's paragraphs), ``final_answer_correct`` and
``label``, the index of the first wrong step (-1: none is wrong).

Each row is one :class:`~rmbench.core.step_groups.StepGroup`: prompt = ``problem``, responses = all of
its ``steps`` (a process reward model scores the whole solution, as the official scripts send
it), utilities 1 for the steps before ``label`` and 0 from ``label`` on (the steps after the
first error are not labelled: 0, and in no pair), id ``id``, subset = the split, meta
``generator``, ``label`` and ``final_answer_correct``. So the step-level **D** asks whether the
first wrong step is scored below the correct steps before it, and **Spec** whether a solution's
correct steps (those before its first error, or all of a correct solution's) are scored alike.

The official scores (:mod:`rmbench.core.processbench`): the prediction of a solution is its
first step whose P(correct) is not above ``threshold`` (-1 when none); per split the accuracy on
the erroneous solutions (``processbench_error_acc``), on the correct ones
(``processbench_correct_acc``) and their harmonic mean (``processbench_f1``); the total record of
each = the mean over the splits read (of F1: the paper's Avg. F1). A solution is correct as an
item (``rmbench verify``, per-item results) iff its prediction equals its label. A solution none of
whose steps has a score (an LLM critic's answer naming no step: every step NaN) predicts nothing
and matches no label, as ``run_eval.py``'s ``None``: the official scores count it wrong, over
every solution; the pairs (step-level D/Spec) leave it out, and results.json counts it
(``unparsed``, a note under the leaderboard).

Arguments: ``split`` (one of the four, or ``all``, the default), ``path`` (a local file, or
``URL#sha256=HEX``, of rows in that schema: what ``--data processbench=FILE`` sets; it replaces
the hub; with ``split: all`` each row's split is its id's prefix), ``dataset`` and ``revision``
(the hub dataset), ``threshold`` (default 0.5).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.core.canonical import canonical_json
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.processbench import (
    DEFAULT_THRESHOLD,
    NO_ERROR,
    PROCESSBENCH_CORRECT_ACC,
    PROCESSBENCH_ERROR_ACC,
    PROCESSBENCH_F1,
    PROCESSBENCH_SPLITS,
    first_error_prediction,
    harmonic_f1,
    processbench_layout,
    split_accuracies,
)
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import ComparisonGroup, split_by_group
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import PROCESSBENCH
from rmbench.tasks.sources import iter_rows

PROCESSBENCH_DATASET = "Qwen/ProcessBench"
ALL = "all"
_ID_SPLIT = re.compile(rf"^({'|'.join(PROCESSBENCH_SPLITS)})-")

_PREDICTION = ("the prediction is a solution's first step whose P(correct) is not above the threshold "
               "(default 0.5; -1 when none), as run_eval_prm_trl.py's argmax")
PROCESSBENCH_F1_DEF = MetricDef(
    PROCESSBENCH_F1, "ProcessBench F1", True, False, Counted.GROUPS,
    "ProcessBench's official F1 (code/run_eval.py of QwenLM/ProcessBench): per split 2 * error_acc * correct_acc / "
    "(error_acc + correct_acc), the harmonic mean of the accuracy on erroneous and on correct solutions (0 where "
    f"both are 0); {_PREDICTION}; the total = the mean F1 of the splits read (the paper's Avg. F1)", official=True)
PROCESSBENCH_ERROR_ACC_DEF = MetricDef(
    PROCESSBENCH_ERROR_ACC, "error acc", True, False, Counted.GROUPS,
    "ProcessBench's accuracy on erroneous solutions (label != -1): the fraction whose prediction equals the label, "
    f"the index of the first wrong step; {_PREDICTION}; per split, the total = the mean over the splits read",
    official=True)
PROCESSBENCH_CORRECT_ACC_DEF = MetricDef(
    PROCESSBENCH_CORRECT_ACC, "correct acc", True, False, Counted.GROUPS,
    "ProcessBench's accuracy on correct solutions (label -1): the fraction for which no step is judged wrong; "
    f"{_PREDICTION}; per split, the total = the mean over the splits read", official=True)


class ProcessBenchTask(Task):
    """ProcessBench solutions (``id``, ``problem``, ``steps``, ``label``), one step-level group
    each, with the official error/correct accuracy and F1 per split (module doc)."""

    description = "ProcessBench: math solutions, find the first wrong step; official F1 per split and mean F1"
    headline = (PROCESSBENCH_F1, "discrimination", "specificity", "ds_auc")
    official = processbench_layout()
    scores = (PROCESSBENCH_F1_DEF, PROCESSBENCH_ERROR_ACC_DEF, PROCESSBENCH_CORRECT_ACC_DEF)
    score_args = ("threshold",)
    row_schemas = (PROCESSBENCH,)
    steps = True
    version = 1

    def __init__(self, split: str = ALL, path: str | None = None, dataset: str | None = PROCESSBENCH_DATASET,
                 revision: str | None = None, threshold: float = DEFAULT_THRESHOLD) -> None:
        if split != ALL and split not in PROCESSBENCH_SPLITS:
            raise ValueError(f"split {split!r}: ProcessBench's splits are {', '.join(PROCESSBENCH_SPLITS)}, or all")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a number in [0, 1] (a step is judged wrong when its P(correct) is "
                             f"not above it), got {threshold!r}")
        if path is None and dataset is None:
            raise ValueError(f"without a path the task needs a dataset (the hub id, {PROCESSBENCH_DATASET})")
        self.split, self.path, self.dataset, self.revision = split, path, dataset, revision
        self.threshold = float(threshold)
        self.splits = PROCESSBENCH_SPLITS if split == ALL else (split,)
        self.official = processbench_layout(self.splits)

    def _sources(self) -> Iterator[tuple[str | None, dict[str, Any]]]:
        """(the split of every row, or None: each row's id says it; iter_rows's keywords)."""
        if self.path is not None:
            yield (None if self.split == ALL else self.split), dict(path=self.path)
            return
        for s in self.splits:
            yield s, dict(dataset=self.dataset, revision=self.revision, split=s)

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for fixed, source in self._sources():
            for location, line, row in iter_rows(**source):
                r = RowReader(row, location, line, PROCESSBENCH)
                with r.skippable():
                    group = self._group(r, fixed)
                    if group.id in seen:
                        raise r.error("id", f"duplicate id {group.id!r}")
                    seen.add(group.id)
                    yield group

    def _group(self, r: RowReader, fixed: str | None) -> StepGroup:
        """One row's solution (module doc); every error names the row's file, line and field."""
        row_id = r.string("id")
        named = _ID_SPLIT.match(row_id)
        split = named.group(1) if named else None
        if fixed is None and split is None:
            raise r.error("id", f"is {row_id!r}, which names none of ProcessBench's splits (gsm8k-N, math-N, ...), "
                                f"so its split is unknown; pass --task-arg split=SPLIT")
        if fixed is not None and split is not None and split != fixed:
            raise r.error("id", f"is {row_id!r}, a row of ProcessBench's {split} split, but the task reads split "
                                f"{fixed}; pass --task-arg split={split} or split=all")
        problem = r.string("problem")
        steps = r.strings("steps")
        label = r.integer("label")
        if label != NO_ERROR and not 0 <= label < len(steps):
            raise r.error("label", f"is {label}; the index of the first wrong step is in 0..{len(steps) - 1} "
                                   f"({len(steps)} step{'s' * (len(steps) != 1)}), or -1 when none is wrong")
        final = r.get("final_answer_correct", None)
        if r.textual and isinstance(final, str):  # a CSV cell
            final = {"true": True, "false": False}.get(final.strip().lower(), final)
        if final is not None and not isinstance(final, bool):
            raise r.error("final_answer_correct", f"expected true, false or null, got {final!r}"[:120])
        utilities = [1] * len(steps) if label == NO_ERROR else [1] * label + [0] * (len(steps) - label)
        try:
            return StepGroup(id=row_id, prompt=problem, responses=tuple(steps), utilities=tuple(utilities),
                             subset=fixed or split,
                             meta=canonical_json({"generator": r.string("generator", None), "label": label,
                                                  "final_answer_correct": final}))
        except ValueError as exc:
            raise r.error(None, str(exc)) from None

    def limit_slice(self, group: ComparisonGroup) -> str:
        """The official column a solution counts in: its split's erroneous or correct solutions,
        so ``--limit 8`` keeps one of each per split and every accuracy and F1 is defined."""
        return f"{group.subset}/{'correct' if _label(group) == NO_ERROR else 'erroneous'}"

    # --- scores ---------------------------------------------------------------------------------

    def predictions(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> np.ndarray:
        """Each solution's predicted first wrong step (-1: none) from its steps' P(correct)."""
        return np.array([first_error_prediction(r, self.threshold) for r in split_by_group(groups, rewards)],
                        dtype=np.int64)

    def item_correct(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> np.ndarray:
        """1.0 where a solution's prediction equals its label (the first wrong step, -1: none), else 0.0."""
        labels = np.array([_label(g) for g in groups], dtype=np.int64)
        return (self.predictions(groups, rewards) == labels).astype(np.float64)

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """The official records (:mod:`rmbench.core.processbench`): ``processbench_f1``,
        ``processbench_error_acc`` and ``processbench_correct_acc`` in total (the mean over the
        splits present) and per split, all from one resample of solutions."""
        labels = np.array([_label(g) for g in groups], dtype=np.int64)
        match = self.item_correct(groups, rewards)
        names = [s for s in PROCESSBENCH_SPLITS if any(g.subset == s for g in groups)]
        split_of = np.array([names.index(str(g.subset)) for g in groups], dtype=np.int64)
        n, k = len(groups), len(names)
        erroneous = labels != NO_ERROR

        def statistic(units: np.ndarray) -> np.ndarray:
            w = np.bincount(units, minlength=n).astype(np.float64)
            err, cor = split_accuracies(match, labels, split_of, k, w)
            f1 = harmonic_f1(err, cor)
            return np.concatenate([[_mean(f1)], f1, [_mean(err)], err, [_mean(cor)], cor])

        def counts(rows: np.ndarray) -> tuple[int, ...]:
            return (int(rows.sum()),) + tuple(int((rows & (split_of == i)).sum()) for i in range(k))

        every = np.ones(n, dtype=bool)
        label_list = tuple((metric, subset) for metric in (PROCESSBENCH_F1, PROCESSBENCH_ERROR_ACC,
                                                           PROCESSBENCH_CORRECT_ACC)
                           for subset in (None, *names))
        return TaskScores(label_list, statistic, counts(every) + counts(erroneous) + counts(~erroneous))


def _label(group: ComparisonGroup) -> int:
    """A solution's label: the index of its first wrong step, -1 when none."""
    assert isinstance(group, StepGroup)  # the task yields only these
    return group.first_error


def _mean(values: np.ndarray) -> float:
    """The mean over the splits (NaN where one is NaN, or none is read)."""
    return float(np.mean(values)) if len(values) else math.nan
