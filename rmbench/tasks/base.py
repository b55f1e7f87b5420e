"""The task interface: a task yields comparison groups; everything else is optional.

Reading rows lives beside it: :mod:`rmbench.tasks.rows` (``RowReader``, bad-row skipping) and
:mod:`rmbench.tasks.formats` (JSON Lines, CSV, parquet, arrow files).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.items import item_correct
from rmbench.core.metric_def import MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE, OfficialLayout
from rmbench.core.specs import TaskSpec
from rmbench.core.splits import slice_label
from rmbench.core.types import ComparisonGroup, PairIndex, data_fingerprint, with_score_args
from rmbench.tasks.schemas import RowSchema

if TYPE_CHECKING:
    from rmbench.registry import PluginSource

ExtraMetric = Callable[[np.ndarray], float]
"""A task-specific statistic of the resampling units (see :meth:`Task.bootstrap_units`)."""


@dataclass(frozen=True)
class TaskScores:
    """Task-level statistics computed together from one resample of units.

    ``labels[j]`` = (metric, subset or None) of entry j of ``statistic(units)``, where ``units``
    are the task's own unit numbers (:meth:`Task.bootstrap_units`), drawn with replacement.
    ``counts[j]``: the record's ``n`` (groups behind entry j). An official score with its
    subset scores is one of these, so each resample computes them all in one go.
    """

    labels: tuple[tuple[str, str | None], ...]
    """(metric, subset or None) of each entry of ``statistic``'s result; subset None: the task as a
    whole."""
    statistic: Callable[[np.ndarray], np.ndarray]
    """One resample's unit numbers -> one value per label (a resample of the task's own units, drawn
    with replacement)."""
    counts: tuple[int, ...] | None = None
    """Each entry's record ``n`` (the groups behind it); None: the task's group count for every entry."""


def as_task_scores(extras: TaskScores | Mapping[str, ExtraMetric] | None, n_groups: int) -> TaskScores | None:
    """A task's :meth:`Task.extra_metrics` (a TaskScores, or a plain dict of name -> function of
    units, the plugin form) as one :class:`TaskScores`."""
    if extras is None or isinstance(extras, TaskScores):
        return extras
    if not extras:
        return None
    fns = list(extras.values())
    return TaskScores(tuple((str(name), None) for name in extras),
                      lambda units: np.array([fn(units) for fn in fns], dtype=np.float64),
                      tuple(n_groups for _ in fns))


class Task(ABC):
    """A benchmark task. Subclasses implement :meth:`groups`; the rest has sensible defaults.

    Declarations (class attributes): ``headline``, the metrics a leaderboard shows for the task
    (registered names, :mod:`rmbench.core.metric_registry`; a task entry's ``headline:`` and
    ``--metrics`` change it per task and per run); ``official``, the benchmark's official table
    when it has one (RewardBench 1/2, Ties); ``scores``, the declarations of the task's own scores
    (what :meth:`extra_metrics` reports: a :class:`~rmbench.core.metric_def.MetricDef` each);
    ``row_schemas``, the row formats it reads (:class:`~rmbench.tasks.schemas.RowSchema`). The
    kind's one registration (:func:`rmbench.tasks.register_task_kind`, or an entry point when
    the kind is loaded) registers ``scores`` as metrics and ``row_schemas`` for the hint a row of
    another format gets.
    """

    spec: TaskSpec
    """What the task was built from: its name and its entry's arguments (data path, hub dataset, ...)."""
    description: str = ""
    """What the task measures, in one line (empty: nothing said)."""
    headline: tuple[str, ...] = DEFAULT_HEADLINE
    official: OfficialLayout | None = None
    scores: tuple[MetricDef, ...] = ()
    row_schemas: tuple[RowSchema, ...] = ()
    plugin: PluginSource | None = None
    """The installed distribution whose entry point registered this task's kind (set by
    :func:`~rmbench.tasks.build_task`); None for a built-in kind or one registered in code."""
    score_args: tuple[str, ...] = ()
    """Arguments that change the task's scores but not its groups (ProcessBench's and PRMBench's
    ``threshold``): their values (the task's attributes of those names, :func:`task_score_args`)
    are recorded beside its data fingerprint and are part of its task key, so runs made with
    other values are never compared nor shown in one column (and a note says ``threshold 0.5 vs
    0.3``, not that their data differ)."""
    steps: bool = False
    """A step-level task: its groups are :class:`~rmbench.core.step_groups.StepGroup` solutions whose
    steps a process reward model (:class:`~rmbench.models.step_model.StepScoringModel`) scores, one
    reward per step, as P(step correct) (a logit-scale model's scores pass through the sigmoid)."""
    reads_folder: bool = False
    """Its ``--data`` may be a folder (PPE's correctness sets, a file each; RMB's tree of scenario
    files; a multimodal benchmark's data file beside its images): the task is given the folder's
    absolute path, else one file (:func:`rmbench.tasks.loading.task_spec_with_data`)."""
    no_source: str | None = None
    """A task with no data of its own (no hub copy, nothing generated): how to get its data, as
    ``rmbench tasks show`` says it (None: its entry names its source, or it makes its rows)."""

    @property
    def counts_unscored(self) -> bool:
        """Its own scores (:meth:`extra_metrics`) read every group, one with a response the model
        gave no reward (NaN: a judge's unparsed answer) too, as its benchmark counts such an item
        (Multimodal RewardBench decides it by a coin); the pairs leave that group out. True for a
        step-level task (a solution its judge named no step of is a miss); a task class sets
        ``counts_unscored = True`` to say so."""
        return self.steps

    verdict_args: Mapping[str, Any] = {}
    """Arguments the task takes when the model gives pair verdicts (a
    :class:`~rmbench.models.base.PairVerdictModel`: a pairwise LLM judge, whose reward gap is its
    verdict in {+1, 0, -1}; a published JudgeBench file) and ``--task-arg`` does not set them:
    JudgeBench scores a judge's two games by their combined verdict (``single_game: false``). They
    change the task's scores, never its groups: the groups read for any model are scored with them
    (:func:`rmbench.scoring.planning.tasks_for_model`), never read again."""

    @abstractmethod
    def groups(self) -> Iterator[ComparisonGroup]:
        """The task's comparison groups, in a fixed order."""

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        """Unit number of each group for the bootstrap (default: every group is its own unit).

        Groups that must be resampled together (e.g. RewardBench 2's ``tied:k`` and ``ref:k``)
        share a unit.
        """
        return np.arange(len(groups))

    def limit_slice(self, group: ComparisonGroup) -> str:
        """The reported slice ``group`` falls in, of which ``--limit N`` keeps at least one unit when
        N allows (:func:`rmbench.core.splits.limit_sample`): the official table's column whose subset
        is the group's subset or a folder above it (RMB's ``BoN_set/Helpfulness``), else the group's
        subset and shift (:func:`rmbench.core.splits.slice_label`)."""
        subset = group.subset or ""
        for column in (self.official.columns if self.official is not None else ()):
            if column.subset and (subset == column.subset or subset.startswith(column.subset + "/")):
                return column.subset
        return slice_label(group)

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray
                      ) -> TaskScores | dict[str, ExtraMetric]:
        """Task-specific metrics of resampled unit numbers: a :class:`TaskScores`, or a dict of
        name -> function of units (one number each, reported for the whole task)."""
        return {}

    def item_correct(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> np.ndarray:
        """Whether each group (an item) is correct under ``rewards``: 1.0, 0.0, or nan where the
        task has no notion of it for that group. Default: every discrimination pair ordered right,
        strictly (:func:`rmbench.core.items.item_correct`), which is RewardBench 1's and 2's (a
        best-of-n row: the chosen answer outscores every rejected one) and Ties' ``accurate``."""
        return item_correct(PairIndex.from_groups(groups), rewards)


def task_score_args(task: Task) -> dict[str, Any]:
    """The values of the task's :attr:`Task.score_args` (its attributes of those names), by name:
    what its results rest on besides its groups, recorded apart from its data fingerprint."""
    return {name: getattr(task, name) for name in task.score_args}


def task_fingerprint(task: Task, groups: Sequence[ComparisonGroup]) -> str:
    """What a task's results rest on, as one hash: :func:`task_data_fingerprint` and, for a task
    that declares :attr:`Task.score_args`, their values (:func:`~rmbench.core.types.with_score_args`);
    a run records the two apart."""
    return with_score_args(task_data_fingerprint(task, groups), task_score_args(task))


def task_data_fingerprint(task: Task, groups: Sequence[ComparisonGroup]) -> str:
    """The data a task's results rest on: its groups' :func:`~rmbench.core.types.data_fingerprint`;
    for a task kind an installed package registered, with its :attr:`Task.plugin` folded in (a new
    version of the plugin, or an edit to an editable install's module, is other data: another
    task key)."""
    fingerprint = data_fingerprint(groups)
    if task.plugin is None:
        return fingerprint
    return sha256_hex(canonical_json({"data": fingerprint, "plugin": task.plugin.to_json()}))


def units_by_source(groups: Sequence[ComparisonGroup]) -> np.ndarray:
    """Bootstrap units that keep each original with its shifted copies (``source_id``)."""
    keys = [g.source_id or g.id for g in groups]
    unit_of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return np.array([unit_of[k] for k in keys], dtype=np.int64)

