"""A run's plan: everything checked and read before any scoring.

:func:`plan_run` resolves the model (its adapter built without weights, so a bad argument
fails here), decides the thread policy (an in-process engine: before anything imports torch)
and reads and checks every task (a bad data row fails here); :mod:`rmbench.scoring.runner` then
scores the :class:`RunPlan`. A run's identity (which folder it may replace) and its tasks'
comparability keys come from what it measures (:class:`~rmbench.scoring.config.RunSpec`) only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

from rmbench.catalog import Catalog, load_catalog
from rmbench.core.metric_registry import METRICS, is_declared, load_plugin_metrics
from rmbench.core.metrics import METRIC_VERSION
from rmbench.core.specs import ModelSpec, TaskSpec
from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, DataError, did_you_mean
from rmbench.models import Runtime, Truncation, build_model, gives_pair_verdicts
from rmbench.models.base import CallingModel, RewardModel
from rmbench.models.names import resolve_model
from rmbench.models.step_model import StepScoringModel
from rmbench.models.threads import ThreadGovernor, prepare_threads
from rmbench.models.trained import trained_split
from rmbench.results.storage.record import RunIdentity, TaskKeyParts
from rmbench.scoring.config import EvalConfig, RunSpec
from rmbench.tasks.base import Task, task_fingerprint
from rmbench.tasks.loading import (
    DataOverride,
    held_out_spec,
    load_task,
    split_task_args,
    task_spec_for_verdicts,
    task_spec_with_args,
    task_spec_with_files,
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
    """of the groups kept (:func:`rmbench.core.types.data_fingerprint`)"""
    headline: tuple[str, ...] | None = None
    """The metrics the task shows (its entry's ``headline:``, else its kind's), then ``--metrics``
    (:func:`shown_metrics`); None: the kind's."""

    @property
    def n_responses(self) -> int:
        return sum(len(g.responses) for g in self.groups)

    def key_parts(self, measured: RunSpec) -> TaskKeyParts:
        return TaskKeyParts(self.spec.name, self.spec.version or 0, self.fingerprint, METRIC_VERSION,
                            tuple(measured.eps), measured.eps_unit)


def resolve_model_spec(measured: RunSpec, catalog: Catalog) -> ModelSpec:
    """``measured.model`` through the one name resolver (:mod:`rmbench.models.names`), with
    ``--model-arg`` overrides applied before its nested references (``inner``) are resolved, so
    an override may itself name any model the catalog knows."""
    spec = resolve_model(measured.model, catalog.models, overrides=dict(measured.model_args))
    if measured.name is not None:  # the display name only: a model's identity never holds its name
        spec = ModelSpec.make(measured.name.strip(), spec.kind, spec.args, spec.version)
    return spec


def load_tasks(config: RunSpec, catalog: Catalog, warn: Callable[[str], None], verdicts: bool = False,
               trained_on: dict[str, Any] | None | EllipsisType = ...) -> list[LoadedTask]:
    """Every task's groups, read and checked before anything is scored (a bad row fails here).
    ``verdicts``: the model gives pair verdicts, so tasks take their ``verdict_args``;
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
        if verdicts:
            spec = task_spec_for_verdicts(spec, task_args.get(name) or {})
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
        loaded.append(LoadedTask(spec, task, groups, bad, task_fingerprint(task, groups), headline))
    return loaded


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
    model: RewardModel | None = field(default=None, compare=False, repr=False)
    """The adapter the plan built to check the model's arguments (no weights yet); scoring uses it."""
    threads: ThreadGovernor | None = field(default=None, compare=False, repr=False)
    """The thread policy, decided before the adapter was built (an in-process engine's only)."""

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

    ``tasks``: the tasks of another plan whose config reads the same data (another model of one
    ``rmbench eval``), taken as they are instead of being read again; ``trained_on``: as
    :func:`load_tasks` takes it.
    """
    warn = warn or (lambda message: warnings.warn(message, stacklevel=3))
    measured, execution = config.measured, config.execution
    load_plugin_metrics()  # every summary computes an installed package's metrics: one that fails to load fails here
    catalog = catalog or load_catalog(measured.include)
    spec = resolve_model_spec(measured, catalog)
    threads = prepare_threads(execution.runtime.threads) if execution.engine_kind.in_process else None
    model = check_model(spec, config)  # a published file says, once read, whether it gives pair verdicts
    verdicts = gives_pair_verdicts(spec, model)  # its tasks may take other arguments: read for it alone
    loaded = (tuple(tasks) if tasks is not None and not verdicts
              else tuple(load_tasks(measured, catalog, warn, verdicts, trained_on)))
    check_step_tasks(spec, model, loaded, execution.engine_kind.in_process)
    return RunPlan(config, spec, loaded, model, threads)


def check_step_tasks(spec: ModelSpec, model: RewardModel, loaded: Sequence[LoadedTask], in_process: bool) -> None:
    """A step-level task (``Task.steps``) needs a model that scores steps, in this process."""
    step_tasks = [t.spec.name for t in loaded if t.task.steps]
    if not step_tasks:
        return
    if not isinstance(model, StepScoringModel):
        raise ConfigError(f"task {step_tasks[0]!r} scores each step of a solution, and model {spec.name!r} scores "
                          f"whole responses; use a process reward model: prm:CHECKPOINT, python-prm:FILE:FN, or "
                          f"judge:MODEL with --model-arg mode=steps or mode=critic")
    if not in_process:
        raise ConfigError(f"task {step_tasks[0]!r} scores steps, which only --engine local does yet")
