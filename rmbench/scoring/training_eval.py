"""Evaluation during training: rmbench tasks scored with the model being trained, a run folder per
evaluation.

:class:`TrainingEval` holds what to measure (the tasks, ``limit``, eps, the bootstrap) and where
the run folders go: ``OUT/step-000050`` for the evaluation at step 50, each one the folder
``rmbench eval`` writes (results.json, rewards.jsonl), so ``rmbench leaderboard``, ``report``,
``compare`` and ``plot`` read them (``rmbench plot OUT`` draws one D-Spec curve per step). The
tasks are read once, at the first evaluation. :meth:`TrainingEval.run` scores an adapter around
the live weights (:mod:`rmbench.models.live`) through the planner's :class:`RunPlan` and the
runner of ``rmbench eval``, with no score cache (the weights change between steps; a label,
not their content, names them). The TRL callback (:mod:`rmbench.integrations.trl`) and ``rmbench
train --eval-every`` (:mod:`rmbench.cli.train`) both evaluate through it.

:func:`logged_values` flattens a run's whole-task metric records into the ``{name: value}`` a
trainer's loggers take: ``rmbench/TASK/METRIC``, ``rmbench/TASK/METRIC@0.1sigma`` for an
eps-dependent metric, ``rmbench/TASK/SHIFT/METRIC`` for a shift slice (subsets are left to the
run folder).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmbench.catalog import load_catalog
from rmbench.core.metric_registry import metric_def
from rmbench.core.specs import ModelSpec
from rmbench.errors import ConfigError
from rmbench.models.base import RewardModel
from rmbench.models.live import evaluating
from rmbench.results.storage.folder import RESULTS_FILE
from rmbench.results.storage.record import RunRecord
from rmbench.scoring.config import DEFAULT_EPS, EvalConfig
from rmbench.scoring.planning import LoadedTask, RunPlan, load_tasks
from rmbench.scoring.runner import evaluate

STEP_FOLDER = "step-{step:06d}"
"""The run folder of the evaluation at a step, under the evaluation's ``out``."""


def step_folder(out: Path, step: int) -> Path:
    return Path(out) / STEP_FOLDER.format(step=step)


def step_name(name: str, step: int) -> str:
    """The model's display name at a step (tables, plot legends): ``NAME@step-000050``."""
    return f"{name}@{STEP_FOLDER.format(step=step)}"


def metric_key(task: str, metric: str, eps: float | None, eps_unit: str | None, shift: str | None) -> str:
    """The logged name of a metric record (the module docstring)."""
    where = f"{task}/{shift}" if shift else task
    at = "" if eps is None else f"@{eps:g}{eps_unit or ''}"
    return f"rmbench/{where}/{metric}{at}"


def logged_values(record: RunRecord) -> dict[str, float]:
    """Every whole-task metric record of ``record`` (each shift slice's too) by :func:`metric_key`;
    the eps is part of the name of an eps-dependent metric only (balanced_best's eps is where
    its value was reached, which moves from step to step)."""
    out: dict[str, float] = {}
    for task in record.tasks:
        for m in task.metrics:
            if m.subset is None:
                eps = m.eps if metric_def(m.metric).eps_dependent else None
                out[metric_key(task.name, m.metric, eps, m.eps_unit, m.shift)] = float(m.value)
    return out


@dataclass(frozen=True)
class StepResult:
    """One evaluation: its step, the run record, the run folder (None: not written) and the logged values."""

    step: int
    record: RunRecord
    folder: Path | None
    values: Mapping[str, float]


@dataclass
class TrainingEval:
    """What to evaluate during training and where (the module docstring).

    ``out``: the folder of the step folders (None: nothing written, values only);
    ``overwrite``: replace step folders of another run there (default: refused before training,
    :meth:`check_out`); ``trained_on``: the split record of the training data (``rmbench train``),
    so a task that is the training data is scored on its held-out part, as ``rmbench eval`` of
    the saved model does."""

    tasks: tuple[str, ...]
    out: Path | None = None
    limit: int | None = None
    eps: tuple[float, ...] = DEFAULT_EPS
    n_bootstrap: int = 1000
    seed: int = 0
    include: tuple[str, ...] = ()
    overwrite: bool = False
    trained_on: Mapping[str, Any] | None = None
    warn: Callable[[str], None] | None = None
    _tasks: tuple[LoadedTask, ...] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tasks = tuple(self.tasks)
        if not self.tasks:
            raise ConfigError("evaluation during training needs at least one task")
        self.out = None if self.out is None else Path(self.out)
        self._config("check")  # RunSpec checks limit, eps, bootstrap here, before any training

    def _config(self, name: str, model: RewardModel | None = None) -> EvalConfig:
        runtime = {"runtime": model.runtime} if model is not None and hasattr(model, "runtime") else {}
        return EvalConfig(model=name, tasks=self.tasks, limit=self.limit, eps=tuple(self.eps),
                          n_bootstrap=self.n_bootstrap, seed=self.seed, include=tuple(self.include),
                          use_cache=False, **runtime)

    def _warn(self, message: str) -> None:
        (self.warn or (lambda m: warnings.warn(m, stacklevel=3)))(message)

    def check_out(self) -> None:
        """Before training: refuse an ``out`` that holds another run's step folders (a new run
        would replace them one by one), unless ``overwrite``."""
        if self.out is None or self.overwrite or not self.out.is_dir():
            return
        old = sorted(p.parent.name for p in self.out.glob(f"step-*/{RESULTS_FILE}"))
        if old:
            raise ConfigError(f"{self.out} holds evaluations of another training run ({', '.join(old[:3])}"
                              f"{' ...' * (len(old) > 3)}); choose another folder, or pass overwrite=True "
                              f"(--eval-overwrite) to replace them")

    def loaded_tasks(self) -> tuple[LoadedTask, ...]:
        """Every task's groups, read and checked once (a bad row fails at the first evaluation)."""
        if self._tasks is None:
            config = self._config("check")
            self._tasks = tuple(load_tasks(config.measured, load_catalog(self.include), self._warn,
                                           trained_on=dict(self.trained_on) if self.trained_on else None))
        return self._tasks

    def writing_to(self, out: Path, overwrite: bool | None = None) -> TrainingEval:
        """The same evaluation writing its step folders to ``out``, its tasks read once for both."""
        other = dataclasses.replace(self, out=Path(out), overwrite=self.overwrite if overwrite is None else overwrite)
        other._tasks = self._tasks
        return other

    def run(self, model: RewardModel, spec: ModelSpec, step: int, modules: Sequence[Any] = ()) -> StepResult:
        """Score ``model`` (an adapter around live weights) on the tasks as of ``step``, with
        ``modules`` (the live torch modules) in evaluation mode meanwhile; write
        ``out/step-NNNNNN`` and return the record and the values to log."""
        config = self._config(spec.name, model)
        plan = RunPlan(config, spec, self.loaded_tasks(), model=model)
        folder = step_folder(self.out, step) if self.out is not None else None
        with evaluating(*modules):
            record = evaluate(config, folder, warn=self._warn, overwrite=self.overwrite, plan=plan)
        return StepResult(step, record, folder, logged_values(record))


__all__ = ["STEP_FOLDER", "StepResult", "TrainingEval", "logged_values", "metric_key", "step_folder", "step_name"]
