"""A run's plan: everything checked and read before any scoring.

:func:`plan_run` resolves the model (its adapter built without weights, so a bad argument
fails here), decides the thread policy (an in-process engine: before anything imports torch)
and reads and checks every task (a bad data row fails here); :mod:`rmbench.scoring.runner` then
scores the :class:`RunPlan`. A run's identity (which folder it may replace) and its tasks'
comparability keys come from what it measures (:class:`~rmbench.scoring.config.RunSpec`) only.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

from rmbench.catalog import Catalog, load_catalog
from rmbench.core.metric_registry import METRICS, is_declared, load_plugin_metrics
from rmbench.core.metrics import METRIC_VERSION
from rmbench.core.specs import ModelSpec, TaskSpec
from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, DataError, did_you_mean
from rmbench.models import Runtime, Truncation, build_model
from rmbench.models.base import CallingModel, PairVerdictModel, RewardModel
from rmbench.models.names import resolve_model
from rmbench.models.step_model import StepScoringModel
from rmbench.models.threads import ThreadGovernor, prepare_threads
from rmbench.models.trained import trained_split
from rmbench.results.storage.record import RunIdentity, TaskKeyParts
from rmbench.scoring.config import EvalConfig, RunSpec
from rmbench.tasks import build_task
from rmbench.tasks.base import Task, task_data_fingerprint, task_score_args
from rmbench.tasks.loading import (
    DataOverride,
    held_out_spec,
    load_task,
    split_task_args,
    task_spec_for_verdicts,
    task_spec_with_args,
    task_spec_with_files,
    without_part,
)


@dataclass(frozen=True)
class ModelFactory:
    """Builds the run's model with the run's truncation policy: in this process, and again in
    each worker of a distributed engine (it pickles: a spec, a runtime and a policy)."""

    spec: ModelSpec
    runtime: Runtime
    truncation: Truncation | None = None

    def __call__(self) -> RewardModel:
        return build_model(self.spec, self.runtime, self.truncation)


@dataclass(frozen=True)
class LoadedTask:
    spec: TaskSpec
    task: Task
    groups: list[ComparisonGroup]
    bad_rows: list[DataError]
    fingerprint: str
    """of the groups kept (:func:`rmbench.tasks.base.task_data_fingerprint`: a plugin task kind's
    source folded in; the task's score arguments are apart: :attr:`score_args`)"""
    headline: tuple[str, ...] | None = None
    """The metrics the task shows (its entry's ``headline:``, else its kind's), then ``--metrics``
    (:func:`shown_metrics`); None: the kind's."""

    @classmethod
    def read(cls, spec: TaskSpec, task: Task, groups: list[ComparisonGroup], bad_rows: list[DataError],
             headline: tuple[str, ...] | None = None) -> LoadedTask:
        """A task as read from ``spec``, fingerprinted."""
        return cls(spec, task, groups, bad_rows, task_data_fingerprint(task, groups), headline)

    @property
    def n_responses(self) -> int:
        return sum(len(g.responses) for g in self.groups)

    @property
    def score_args(self) -> dict[str, Any]:
        """The values of the task's score arguments (:func:`~rmbench.tasks.base.task_score_args`)."""
        return task_score_args(self.task)

    def key_parts(self, measured: RunSpec) -> TaskKeyParts:
        return TaskKeyParts(self.spec.name, self.spec.version or 0, self.fingerprint, METRIC_VERSION,
                            tuple(measured.eps), measured.eps_unit, self.score_args)

    def for_verdicts(self, given: Mapping[str, Any]) -> LoadedTask:
        """This task as a model that gives pair verdicts (:class:`~rmbench.models.base.PairVerdictModel`)
        is scored on it: its spec with its kind's ``verdict_args`` that ``given`` (``--task-arg``)
        does not set, its :class:`Task` built again from that spec, and its groups as they were
        read (never read again: verdict arguments change scores, never groups)."""
        spec = task_spec_for_verdicts(self.spec, given)
        if spec == self.spec:
            return self
        return dataclasses.replace(self, spec=spec, task=build_task(without_part(spec)[0]))


def resolve_model_spec(measured: RunSpec, catalog: Catalog) -> ModelSpec:
    """``measured.model`` through the one name resolver (:mod:`rmbench.models.names`), with
    ``--model-arg`` overrides applied before its nested references (``inner``) are resolved, so
    an override may itself name any model the catalog knows."""
    spec = resolve_model(measured.model, catalog.models, overrides=dict(measured.model_args))
    if measured.name is not None:  # the display name only: a model's identity never holds its name
        spec = ModelSpec.make(measured.name.strip(), spec.kind, spec.args, spec.version)
    return spec


def load_tasks(config: RunSpec, catalog: Catalog, warn: Callable[[str], None],
               trained_on: dict[str, Any] | None | EllipsisType = ...) -> list[LoadedTask]:
    """Every task's groups, read and checked before anything is scored (a bad row fails here), as
    any model reads them (a model that gives pair verdicts: :func:`tasks_for_model` then);
    ``trained_on``: :func:`~rmbench.models.trained.trained_split` of the model, when the caller
    has it (``...``: found here)."""
    overrides: dict[str, list[DataOverride]] = {}
    for d in config.data:
        overrides.setdefault(d.task, []).append(d)
    task_names = catalog.expand(config.tasks)
    for name in task_names:  # a misspelt task first: its did-you-mean is the fix, not --data's
        catalog.task_spec(name)
    unknown = sorted(set(overrides) - set(task_names))
    if unknown:
        raise ConfigError(f"--data names task {unknown[0]!r}, which is not among the tasks ({', '.join(task_names)})"
                          f"{did_you_mean(unknown[0], task_names)}")
    task_args = split_task_args(config.task_args, task_names)
    if trained_on is ...:
        trained_on = trained_split(config.model)
    loaded = []
    for name in task_names:
        spec = catalog.task_spec(name)
        if name in overrides:
            spec = task_spec_with_files(spec, overrides[name], warn)
        if task_args.get(name):
            spec = task_spec_with_args(spec, task_args[name])
        # never score a model on its training rows
        spec = held_out_spec(spec, trained_on, config.model, name in overrides, warn)
        task, groups, bad = load_task(spec, config.limit, config.skip_bad_rows, warn=warn)
        if bad:
            where = "; ".join(str(e) for e in bad[:3])
            warn(f"task {name!r}: skipped {len(bad)} bad row{'s' * (len(bad) != 1)} (--skip-bad-rows), "
                 f"scoring {len(groups)} groups; {'first: ' if len(bad) > 3 else ''}{where}")
        headline = shown_metrics(catalog.origins.get(("task", name), name), tuple(task.headline),
                                 catalog.headlines.get(name), config.metrics)
        loaded.append(LoadedTask.read(spec, task, groups, bad, headline))
    return loaded


def tasks_for_model(model: RewardModel, tasks: Sequence[LoadedTask], task_args: Sequence[tuple[str, Any]]
                    ) -> tuple[LoadedTask, ...]:
    """``tasks`` (as read for any model) as ``model`` is scored on them: for a model that gives
    pair verdicts, each with its kind's ``verdict_args`` that the run's ``--task-arg``
    (``task_args``) does not set (:meth:`LoadedTask.for_verdicts`); for any other model, as they are."""
    if not isinstance(model, PairVerdictModel) or not model.gives_pair_verdicts():
        return tuple(tasks)
    given = split_task_args(task_args, [t.spec.name for t in tasks])
    return tuple(t.for_verdicts(given[t.spec.name]) for t in tasks)


def shown_metrics(entry_file: str, kinds: tuple[str, ...], entry: tuple[str, ...] | None,
                  extra: tuple[str, ...]) -> tuple[str, ...]:
    """The metrics a task shows: its entry's ``headline:`` (else its kind's, ``kinds``), then the
    ``extra`` (``--metrics``) they lack. A name the entry or ``--metrics`` gives must be a
    declared metric (the task's kind has declared its own scores by now), else one error with a
    did-you-mean naming ``entry_file`` (the task's entry) or ``--metrics``; a kind's own headline
    may name a plugin's undeclared score."""
    wrong = [(m, f"{entry_file}: field 'headline'") for m in entry or ()] + [(m, "--metrics") for m in extra]
    for m, where in wrong:
        if not is_declared(m):
            raise ConfigError(f"{where}: {m!r} is not a declared metric{did_you_mean(m, METRICS)} "
                              f"(docs/reference/metrics.md lists them)")
    headline = entry or kinds
    return headline + tuple(m for m in extra if m not in headline)


@dataclass(frozen=True)
class RunPlan:
    """A run before any scoring: the model's spec and every task's groups, read and checked."""

    config: EvalConfig
    model_spec: ModelSpec
    tasks: tuple[LoadedTask, ...]
    """The tasks as the model is scored on them (:func:`tasks_for_model`)."""
    model: RewardModel | None = field(default=None, compare=False, repr=False)
    """The adapter the plan built to check the model's arguments (no weights yet); scoring uses it."""
    threads: ThreadGovernor | None = field(default=None, compare=False, repr=False)
    """The thread policy, decided before the adapter was built (an in-process engine's only)."""
    read: tuple[LoadedTask, ...] | None = field(default=None, compare=False, repr=False)
    """The tasks as read for any model, before :func:`tasks_for_model` (None: :attr:`tasks`):
    what another model's plan on the same data takes (``plan_run(tasks=...)``)."""

    @property
    def tasks_read(self) -> tuple[LoadedTask, ...]:
        return self.tasks if self.read is None else self.read

    @property
    def identity(self) -> RunIdentity:
        """What makes two runs the same run: from what is measured only."""
        return RunIdentity(self.model_spec.name, self.model_spec.to_json(),
                           tuple(t.key_parts(self.config.measured) for t in self.tasks))


def check_model(spec: ModelSpec, config: EvalConfig) -> RewardModel:
    """Build the run's adapter, without its weights (adapters load them on first use), and
    return it for the scoring: an argument it does not take (``--model-arg``), a bad value or a missing file fails
    here, in the plan, before any run folder is checked and before any model of the command is
    scored. The thread policy must be decided before (building an adapter may import torch,
    which starts OpenMP): :func:`plan_run` does."""
    execution = config.execution
    model = ModelFactory(spec, execution.runtime, config.measured.truncation_policy)()
    if isinstance(model, CallingModel) and not execution.engine_kind.in_process:
        raise ConfigError(f"model {spec.name!r} calls a server, which --engine local does best (its requests are "
                          f"concurrent already, and its calls are cached and written from this process); drop "
                          f"--engine {execution.engine}")
    return model


def plan_run(config: EvalConfig, catalog: Catalog | None = None, warn: Callable[[str], None] | None = None,
             tasks: Sequence[LoadedTask] | None = None,
             trained_on: dict[str, Any] | None | EllipsisType = ...) -> RunPlan:
    """Resolve the model, decide the thread policy (an in-process engine), check that the model's
    adapter can be built (:func:`check_model`) and load every task (a bad data row fails here):
    every check that needs no weights, before any scoring.

    ``tasks``: the tasks as read for any model (:attr:`RunPlan.tasks_read` of another plan whose
    config reads the same data: another model of one ``rmbench eval``; a stored run's tasks,
    reloaded from its record: ``rmbench verify``), taken as they are, never read again, whatever
    the model (one that gives pair verdicts takes its tasks' verdict arguments on these groups:
    :func:`tasks_for_model`); ``trained_on``: as :func:`load_tasks` takes it.
    """
    warn = warn or (lambda message: warnings.warn(message, stacklevel=3))
    measured, execution = config.measured, config.execution
    load_plugin_metrics()  # every summary computes an installed package's metrics: one that fails to load fails here
    catalog = catalog or load_catalog(measured.include)
    spec = resolve_model_spec(measured, catalog)
    read = tuple(tasks) if tasks is not None else tuple(load_tasks(measured, catalog, warn, trained_on))
    threads = prepare_threads(execution.runtime.threads) if execution.engine_kind.in_process else None
    model = check_model(spec, config)
    loaded = tasks_for_model(model, read, measured.task_args)
    check_step_tasks(spec, model, loaded)
    return RunPlan(config, spec, loaded, model, threads, read)


def check_step_tasks(spec: ModelSpec, model: RewardModel, loaded: Sequence[LoadedTask]) -> None:
    """A step-level task (``Task.steps``) needs a model that scores steps (on any engine)."""
    step_tasks = [t.spec.name for t in loaded if t.task.steps]
    if not step_tasks:
        return
    if not isinstance(model, StepScoringModel):
        raise ConfigError(f"task {step_tasks[0]!r} scores each step of a solution, and model {spec.name!r} scores "
                          f"whole responses; use a process reward model: prm:CHECKPOINT, python-prm:FILE:FN, or "
                          f"judge:MODEL with --model-arg mode=steps or mode=critic")
