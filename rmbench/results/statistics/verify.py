"""Does a run reproduce a reference? Item by item and score by score, with a verdict.

For each task of the run, against the same task of the reference (another run of the same task
key: same task version, data and metric version):

* **items** (comparison groups): how many have the same correctness under both
  (:meth:`rmbench.tasks.base.Task.item_correct`: every discrimination pair ordered right, which is
  RewardBench 2's "the chosen answer outscores every rejected one"), how many order their
  responses alike (a rank check, blind to the two models' reward scales), and the items whose
  rewards differ most: max over the item's responses of |r_run - r_ref|, in **raw** reward units
  (two different reward models' scales may differ, so read it beside the rank and correctness
  agreement);
* **scores**: run - reference on each slice of the task's official score (RewardBench 2: the
  score and its six subsets; a task without an official score: pairwise accuracy, overall and per
  shift slice), with a paired bootstrap 95% CI over the task's units
  (:func:`rmbench.results.statistics.compare.compare_task`, the same numbers ``rmbench compare``
  prints);
* a **verdict**: ``equal`` when every item's correctness agrees and every reward is equal within
  the tolerance (|a - b| <= tol * max(1, |a|, |b|)); else ``within noise`` when every score
  difference's CI covers 0 (a difference within the tolerance counts as 0: a continuous score
  such as Ties' moves with any change of the rewards; without CIs, ``--bootstrap 0``, any other
  difference does not cover 0); else ``different``. The run's verdict is its tasks' worst.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rmbench.core.arrays import FloatArray
from rmbench.core.items import item_max_abs_diff, item_order_agrees
from rmbench.core.metric_registry import OfficialLayout
from rmbench.errors import ConfigError
from rmbench.results.statistics.compare import Comparison, PairedTask, check_bootstrap, compare_task, paired_task
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import finite_or_none
from rmbench.tasks.loading import DataOverride

Verdict = Literal["equal", "within noise", "different"]
VERDICTS: tuple[Verdict, ...] = ("equal", "within noise", "different")
"""From best to worst: a run's verdict is the worst of its tasks'."""
DEFAULT_TOLERANCE = 1e-6
FALLBACK_METRIC = "pairwise_accuracy"
"""The score compared on a task without an official score."""


@dataclass(frozen=True)
class ItemDifference:
    """One item (comparison group) of a task under both reward vectors."""

    item: str
    subset: str | None
    shift: str | None
    max_abs_diff: float
    """max over the item's responses of |r_run - r_ref|, raw reward units."""
    correct_run: bool | None
    correct_reference: bool | None
    """None: the task has no notion of correctness for this item (no discrimination pair)."""
    order_agrees: bool

    @property
    def correctness_agrees(self) -> bool:
        return self.correct_run == self.correct_reference

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "subset": self.subset, "shift": self.shift,
                "max_abs_diff": finite_or_none(self.max_abs_diff), "correct_run": self.correct_run,
                "correct_reference": self.correct_reference, "order_agrees": self.order_agrees}


@dataclass(frozen=True)
class ScoreDifference:
    """Run - reference on one slice of the task's official score, with its paired bootstrap CI."""

    comparison: Comparison
    tolerance: float = 0.0

    @property
    def covers_zero(self) -> bool:
        """Whether the difference is within noise: its CI covers 0, or it is undefined or 0 itself
        (within the tolerance: |diff| <= tol * max(1, |run|, |ref|))."""
        c = self.comparison
        if math.isnan(c.diff) or abs(c.diff) <= self.tolerance * max(1.0, abs(c.value_a), abs(c.value_b)):
            return True
        return c.difference.has_ci and c.ci_low <= 0.0 <= c.ci_high

    @property
    def slice_name(self) -> str:
        c = self.comparison
        return " / ".join(p for p in (c.shift, c.subset) if p) or "all"

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {"metric": c.metric, "subset": c.subset, "shift": c.shift, "run": finite_or_none(c.value_a),
                "reference": finite_or_none(c.value_b), "difference": finite_or_none(c.diff),
                "ci_low": finite_or_none(c.difference.ci_low), "ci_high": finite_or_none(c.difference.ci_high),
                "n_units": c.n_units, "covers_zero": self.covers_zero}


@dataclass(frozen=True)
class TaskVerification:
    """One task's agreement, score differences and verdict (the module's doc)."""

    task: str
    n_items: int
    n_judged: int
    """Items the task has a notion of correctness for (the others count in neither)."""
    correctness_agrees: int
    order_agrees: int
    n_responses: int
    rewards_equal: int
    """Responses whose two rewards are equal within the tolerance."""
    max_abs_diff: float
    n_disagreeing: int
    disagreeing: tuple[ItemDifference, ...]
    """The items whose correctness disagrees, largest reward difference first (the first ``top``)."""
    largest: tuple[ItemDifference, ...]
    """The items whose rewards differ most (the first ``top``)."""
    scores: tuple[ScoreDifference, ...]
    verdict: Verdict

    @property
    def summary(self) -> str:
        """The verdict in one line, with why."""
        agree = f"{self.correctness_agrees} of {self.n_judged} items' correctness agrees"
        if self.verdict == "equal":
            return f"equal: {agree}, all {self.n_responses} rewards equal within the tolerance"
        diff = f"max |Δr| {self.max_abs_diff:.4g}"
        if self.verdict == "within noise":
            return f"within noise: {agree}, {diff}; every score difference's 95% CI covers 0"
        out = [f"{s.comparison.metric} ({s.slice_name}) {s.comparison.difference.format(4)}"
               for s in self.scores if not s.covers_zero]
        return f"different: {agree}, {diff}; excludes 0: {', '.join(out)}"

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "verdict": self.verdict, "summary": self.summary,
                "items": {"total": self.n_items, "judged": self.n_judged,
                          "correctness_agrees": self.correctness_agrees, "order_agrees": self.order_agrees,
                          "disagreeing": self.n_disagreeing},
                "responses": {"total": self.n_responses, "rewards_equal": self.rewards_equal,
                              "max_abs_diff": finite_or_none(self.max_abs_diff)},
                "disagreeing_items": [i.to_json() for i in self.disagreeing],
                "largest_differences": [i.to_json() for i in self.largest],
                "scores": [s.to_json() for s in self.scores]}


@dataclass(frozen=True)
class Verification:
    """A run verified against a reference run: per task, then the worst verdict."""

    run: str
    reference: str
    model_run: str
    model_reference: str
    tolerance: float
    n_bootstrap: int
    seed: int
    tasks: tuple[TaskVerification, ...]
    plugins: tuple[str, ...] = ()
    """The plugin distributions both runs used in other versions or module code (one line each)."""

    @property
    def verdict(self) -> Verdict:
        return max((t.verdict for t in self.tasks), key=VERDICTS.index, default="equal")

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "reference": self.reference, "model_run": self.model_run,
                "model_reference": self.model_reference, "verdict": self.verdict, "tolerance": self.tolerance,
                "n_bootstrap": self.n_bootstrap, "seed": self.seed, "ci_level": 0.95,
                "plugins": list(self.plugins), "tasks": [t.to_json() for t in self.tasks]}


def verify_runs(run: RunFolder, reference: RunFolder, tasks: Sequence[str] = (),
                data: Mapping[str, DataOverride | str] | None = None, n_bootstrap: int = 1000, seed: int = 0,
                tolerance: float = DEFAULT_TOLERANCE, top: int = 5) -> Verification:
    """Verify every task of ``run`` (or ``tasks``) against the same task of ``reference`` (the module's doc)."""
    check_bootstrap(n_bootstrap)
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise ConfigError(f"--tolerance must be a finite number >= 0, got {tolerance}")
    if top < 0:
        raise ConfigError(f"--top must be >= 0, got {top}")
    names = list(tasks) or list(run.record.task_names)
    for name in names:
        if not run.record.has_task(name):
            raise ConfigError(f"{run.path} has no task {name!r} (it has {', '.join(run.record.task_names)})")
    missing = [n for n in names if not reference.record.has_task(n)]
    if missing:
        raise ConfigError(f"the reference {reference.path} does not cover task{'s' * (len(missing) > 1)} "
                          f"{', '.join(missing)} of {run.path} (it has {', '.join(reference.record.task_names)}); "
                          f"evaluate the reference on {'them' if len(missing) > 1 else 'it'}, or pass --task")
    rows = (run.rewards(), reference.rewards())
    out = [verify_task(paired_task(run, reference, name, data, rows), n_bootstrap, seed, tolerance, top)
           for name in names]
    return Verification(str(run.path), str(reference.path), run.record.model.name, reference.record.model.name,
                        tolerance, n_bootstrap, seed, tuple(out),
                        tuple(run.record.environment.plugin_differences(reference.record.environment)))


def verify_task(paired: PairedTask, n_bootstrap: int = 1000, seed: int = 0, tolerance: float = DEFAULT_TOLERANCE,
                top: int = 5) -> TaskVerification:
    """One task of the run against the reference's (the module's doc)."""
    td, a, b = paired.data, paired.rewards_a, paired.rewards_b
    groups = td.groups
    correct_a, correct_b = (np.asarray(td.task.item_correct(groups, r), dtype=np.float64) for r in (a, b))
    judged = ~(np.isnan(correct_a) & np.isnan(correct_b))
    agrees = (correct_a == correct_b) | ~judged
    order = item_order_agrees(groups, a, b)
    diff = item_max_abs_diff(groups, a, b)
    equal = _equal_within(a, b, tolerance)
    items = [ItemDifference(g.id, g.subset, g.shift, float(diff[k]), _flag(correct_a[k]), _flag(correct_b[k]),
                            bool(order[k])) for k, g in enumerate(groups)]
    by_diff = sorted(range(len(items)), key=lambda k: -np.nan_to_num(diff[k], nan=np.inf))
    disagreeing = [items[k] for k in by_diff if not agrees[k]]
    largest = [items[k] for k in by_diff if not (diff[k] == 0.0)][:top]
    rows = _official_slices(td.result.official, compare_task(paired, n_bootstrap, seed))
    scores = tuple(ScoreDifference(c, tolerance) for c in rows)
    if len(disagreeing) == 0 and bool(equal.all()):
        verdict: Verdict = "equal"
    elif all(s.covers_zero for s in scores):
        verdict = "within noise"
    else:
        verdict = "different"
    return TaskVerification(paired.name, len(groups), int(judged.sum()), int((agrees & judged).sum()),
                            int(order.sum()), len(a), int(equal.sum()), float(np.max(diff)) if len(diff) else 0.0,
                            len(disagreeing), tuple(disagreeing[:top]), tuple(largest), scores, verdict)


def _equal_within(a: FloatArray, b: FloatArray, tolerance: float) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """|a - b| <= tol * max(1, |a|, |b|) per response; two nans (no reward from either) are equal."""
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    with np.errstate(invalid="ignore"):
        close = np.abs(a - b) <= tolerance * scale
    return np.asarray(close | (np.isnan(a) & np.isnan(b)), dtype=np.bool_)


def _flag(x: float) -> bool | None:
    return None if math.isnan(x) else bool(x)


def _official_slices(official: OfficialLayout | None, rows: Sequence[Comparison]) -> list[Comparison]:
    """The rows of the task's official score (every subset it reports), else of pairwise accuracy
    on the whole task and on each shift slice."""
    metric = official.metric if official is not None else FALLBACK_METRIC
    picked = [r for r in rows if r.metric == metric]
    if official is None:
        picked = [r for r in picked if r.subset is None]
    return picked
