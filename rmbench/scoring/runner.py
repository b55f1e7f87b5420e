"""``evaluate``: one model on a list of tasks, from specs to a written run record.

The CLI's ``rmbench eval`` is a thin wrapper around :func:`evaluate`; tests call it directly.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from rmbench import __version__
from rmbench.catalog import Catalog, load_catalog
from rmbench.core.metrics import METRIC_VERSION, reward_sigma
from rmbench.core.unscored import drop_unscored
from rmbench.errors import ConfigError, DataError, ModelError, RMBenchError, did_you_mean
from rmbench.core.splits import LIMIT_SAMPLING
from rmbench.models import Runtime, Truncation, build_model, gives_pair_verdicts
from rmbench.models.base import CallingModel, RewardModel, close_parts, parts, tokenized_parts
from rmbench.models.names import resolve_model
from rmbench.models.threads import check_threads, prepare_threads
from rmbench.results.storage.environment import current_environment
from rmbench.results.storage.folder import RewardRow, check_destination, write_run
from rmbench.results.storage.folder_lock import run_folders_locked
from rmbench.scoring.backends import ENGINES, is_main_process, make_backend
from rmbench.scoring.cache import ScoreCache, request_key
from rmbench.scoring.calls import CallCache
from rmbench.scoring.engine import model_requests, requests_for, score_groups
from rmbench.scoring.timeout import BatchDeadline, check_score_timeout
from rmbench.results.storage.record import (Counts, Execution, ModelIdentity, RunConfig, RunIdentity, RunRecord, SkippedRow,
                                SkippedRows, TaskKeyParts, TaskResult, finite_or_none)
from rmbench.core.types import ComparisonGroup, ModelSpec, TaskSpec, data_fingerprint, split_by_group
from rmbench.results.statistics.summary import summarize
from rmbench.tasks.base import Task
from rmbench.models.trained import trained_split
from rmbench.tasks.loading import (DataOverride, held_out_spec, load_task, split_task_args, task_spec_for_verdicts,
                                   task_spec_with_args, task_spec_with_files)

ProgressFactory = Callable[[str, int], Callable[[int], None]]
"""``factory(description, total)`` returns a callback that advances by the count it is given."""

DEFAULT_EPS = (0.0, 0.1)
DEFAULT_MODEL = "smollm2-135m"
REPORTED_BAD_ROWS = 5
"""How many skipped rows' errors a run record quotes (it always counts them all)."""


@dataclass(frozen=True)
class EvalConfig:
    """Everything that defines a run. ``data``: local files that replace tasks' own data
    sources (:class:`DataOverride`, or ``(task, path)`` pairs); ``eps`` is in ``eps_unit``
    (``sigma`` or ``raw``)."""

    model: str = DEFAULT_MODEL
    tasks: tuple[str, ...] = ("ties_sample",)
    data: tuple[DataOverride, ...] = ()
    eps: tuple[float, ...] = DEFAULT_EPS
    eps_unit: str = "sigma"
    limit: int | None = None
    include: tuple[str, ...] = ()
    n_bootstrap: int = 1000
    seed: int = 0
    model_args: tuple[tuple[str, Any], ...] = ()
    task_args: tuple[tuple[str, Any], ...] = ()
    """``--task-arg [TASK.]KEY=VALUE``: ``(KEY, value)`` sets an argument of every task of the run,
    ``(TASK.KEY, value)`` of that task only (:func:`rmbench.tasks.loading.task_spec_with_args`)."""
    runtime: Runtime = field(default_factory=Runtime)
    cache_dir: str | None = None
    use_cache: bool = True
    skip_bad_rows: bool = False
    max_length: int | None = None
    truncation: str = "left"
    engine: str = "local"
    workers: int = 2
    ray_address: str | None = None
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    name: str | None = None
    """``--name``: the model's display name (tables, records) and its run folder's name; default
    the ``--model`` text (and a short folder name, :func:`rmbench.scoring.suite.short_model_name`)."""
    score_timeout: float | None = None
    """``--score-timeout``: seconds one batch may take on the local engine (None: no limit;
    :mod:`rmbench.scoring.timeout`)."""

    def __post_init__(self) -> None:
        data = tuple(d if isinstance(d, DataOverride) else DataOverride(*d) for d in self.data)
        object.__setattr__(self, "data", data)
        if len(set(data)) != len(data):
            raise ConfigError("--data gives one file of a task twice")
        if not self.tasks:
            raise ConfigError("no tasks given")
        if len(set(self.tasks)) != len(self.tasks):
            raise ConfigError(f"--tasks names a task twice: {', '.join(self.tasks)}")
        if self.eps_unit not in ("sigma", "raw"):
            raise ConfigError(f"--eps-unit must be 'sigma' or 'raw', got {self.eps_unit!r}")
        if not self.eps or any(not math.isfinite(e) or e < 0 for e in self.eps):
            raise ConfigError(f"--eps must be a non-empty list of finite numbers >= 0, got {list(self.eps)}")
        # One record per eps, in order: a repeated eps would double every eps-dependent record.
        object.__setattr__(self, "eps", tuple(sorted({float(e) for e in self.eps})))
        if isinstance(self.n_bootstrap, bool) or not isinstance(self.n_bootstrap, int) or self.n_bootstrap < 0:
            raise ConfigError(f"--bootstrap must be a whole number >= 0 (0: no CIs), got {self.n_bootstrap!r}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")
        if self.max_length is not None and (isinstance(self.max_length, bool) or not isinstance(self.max_length, int)
                                            or self.max_length < 1):
            raise ConfigError(f"--max-length must be a positive integer, got {self.max_length!r}")
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.truncation not in ("left", "right"):
            raise ConfigError(f"--truncation must be 'left' (keep the response) or 'right', got {self.truncation!r}")
        check_threads(self.runtime.threads)
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ConfigError(f"--name must be a non-empty name, got {self.name!r}")
        check_score_timeout(self.score_timeout)
        if self.score_timeout is not None and self.engine != "local":
            raise ConfigError(f"--score-timeout works with --engine local only, not {self.engine!r} (it interrupts "
                              f"a batch through a signal in this process)")


@dataclass(frozen=True)
class ModelFactory:
    """Builds the run's model with the run's truncation policy: in this process, and again in
    each worker of a distributed engine (it pickles: a spec, a runtime and two settings)."""

    spec: ModelSpec
    runtime: Runtime
    max_length: int | None = None
    truncation: str = "left"

    def __call__(self):
        policy = None
        if self.max_length is not None or self.truncation != "left":
            policy = Truncation(self.max_length, self.truncation)
        return build_model(self.spec, self.runtime, policy)


@dataclass(frozen=True)
class LoadedTask:
    spec: TaskSpec
    task: Task
    groups: list[ComparisonGroup]
    bad_rows: list[DataError]
    fingerprint: str
    """of the groups kept (:func:`rmbench.core.types.data_fingerprint`)"""

    @property
    def n_responses(self) -> int:
        return sum(len(g.responses) for g in self.groups)

    def key_parts(self, config: EvalConfig) -> TaskKeyParts:
        return TaskKeyParts(self.spec.name, self.spec.version or 0, self.fingerprint, METRIC_VERSION,
                            tuple(config.eps), config.eps_unit)


def resolve_model_spec(config: EvalConfig, catalog: Catalog) -> ModelSpec:
    """``config.model`` through the one name resolver (:mod:`rmbench.models.names`), with
    ``--model-arg`` overrides applied before its nested references (``inner``) are resolved, so
    an override may itself name any model the catalog knows."""
    spec = resolve_model(config.model, catalog.models, overrides=dict(config.model_args))
    if config.name is not None:  # the display name only: a model's identity never holds its name
        spec = ModelSpec.make(config.name.strip(), spec.kind, spec.args, spec.version)
    return spec


def load_tasks(config: EvalConfig, catalog: Catalog, warn: Callable[[str], None],
               verdicts: bool = False) -> list[LoadedTask]:
    """Every task's groups, read and checked before anything is scored (a bad row fails here).
    ``verdicts``: the model gives pair verdicts, so tasks take their ``verdict_args``."""
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
        spec = held_out_spec(spec, trained_on, config.model, name in overrides, warn)  # never score a model on its training rows
        task, groups, bad = load_task(spec, config.limit, config.skip_bad_rows)
        if bad:
            where = "; ".join(str(e) for e in bad[:3])
            warn(f"task {name!r}: skipped {len(bad)} bad row{'s' * (len(bad) != 1)} (--skip-bad-rows), "
                 f"scoring {len(groups)} groups; {'first: ' if len(bad) > 3 else ''}{where}")
        loaded.append(LoadedTask(spec, task, groups, bad, data_fingerprint(groups)))
    return loaded


def _check_lengths(model_name: str, model: RewardModel, loaded: Sequence[LoadedTask], config: EvalConfig,
                   cache: ScoreCache | None, warn: Callable[[str], None]) -> list[int | None]:
    """Refuse texts longer than the context (among those still to score: cached ones passed
    when they were scored); count (and warn about) texts --max-length cuts."""
    parts = tokenized_parts(model)
    if (config.max_length is not None or config.truncation != "left") and not parts:
        warn(f"--max-length and --truncation do not apply to model {model_name!r}: it reads no tokens")
    if parts:
        todo = model_requests(model, [g for t in loaded for g in t.groups])
        if cache is not None:
            known = cache.get_many([request_key(r, model.uses_utility) for r in todo])
            todo = [r for r in todo if request_key(r, model.uses_utility) not in known]
        for part in parts:  # a text longer than the model's context fails here, before any scoring
            try:
                part.check_context(todo)
            except ConfigError as exc:
                raise ConfigError(f"model {model_name!r}: {exc}") from None
    truncated = [parts[0].truncated(requests_for(t.groups)) if parts else None for t in loaded]
    for t, n in zip(loaded, truncated):
        if n:
            policy = parts[0].truncation
            warn(f"task {t.spec.name!r}: {n} of {t.n_responses} texts are longer than max_length "
                 f"{policy.max_length} tokens and lose tokens on the {policy.side} (--truncation {policy.side})")
    return truncated


def _task_result(t: LoadedTask, rewards: np.ndarray, n_truncated: int | None, config: EvalConfig,
                 may_abstain: bool = False) -> TaskResult:
    """Metrics of one task; an error in them fails this task only, with the error recorded.
    Responses without a reward (NaN: a judge's unparsed answer) are left out of the pairs and
    the official scores (:func:`~rmbench.core.unscored.drop_unscored`) and counted."""
    groups, parts = t.groups, t.key_parts(config)
    scored = drop_unscored(groups, rewards)
    status, error, records = "success", None, ()
    try:
        if not scored.groups:
            raise ModelError(f"the model gave no reward to {scored.unscored_responses} responses, which leaves no "
                             f"pair to score")
        records = tuple(summarize(t.spec.name, scored.groups, scored.rewards, config.eps, config.eps_unit,
                                  group_units=t.task.bootstrap_units(scored.groups),
                                  extra_metrics=t.task.extra_metrics(scored.groups, scored.rewards),
                                  n_bootstrap=config.n_bootstrap, seed=config.seed))
    except (RMBenchError, ValueError) as exc:  # a task's own scores that these rewards cannot give: this task fails
        status, error = "error", f"{type(exc).__name__}: {exc}"
    headline = tuple(t.task.headline)
    return TaskResult(
        name=t.spec.name, kind=t.spec.kind, version=t.spec.version or 0, args=t.spec.args_dict,
        data_fingerprint=parts.data_fingerprint, metric_version=METRIC_VERSION, eps=tuple(config.eps),
        eps_unit=config.eps_unit,
        counts=Counts(len(groups), t.n_responses, sum(len(g.discrimination_pairs()) for g in groups),
                      sum(len(g.specificity_pairs()) for g in groups)),
        sigma=finite_or_none(reward_sigma(scored.rewards)) if len(scored.rewards) else None, metrics=records,
        skipped_rows=SkippedRows(len(t.bad_rows), tuple(SkippedRow(e.path, e.line, e.field, str(e))
                                                        for e in t.bad_rows[:REPORTED_BAD_ROWS])),
        truncated_texts=n_truncated, headline=headline, official=t.task.official,
        status=status, error=error, unparsed=scored.unscored_responses if may_abstain else None)


def _reward_rows(t: LoadedTask, rewards: np.ndarray) -> list[RewardRow]:
    rows = []
    for g, r in zip(t.groups, split_by_group(t.groups, rewards)):
        rows += [RewardRow(t.spec.name, g.id, i, u, float(r[i])) for i, u in enumerate(g.utilities)]
    return rows


@dataclass(frozen=True)
class RunPlan:
    """A run before any scoring: the model's spec and every task's groups, read and checked."""

    config: EvalConfig
    model_spec: ModelSpec
    tasks: tuple[LoadedTask, ...]
    model: RewardModel | None = field(default=None, compare=False, repr=False)
    """The adapter the plan built to check the model's arguments (no weights yet); scoring uses it."""

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(self.model_spec.name, self.model_spec.to_json(),
                           tuple(t.key_parts(self.config) for t in self.tasks))


def check_model(spec: ModelSpec, config: EvalConfig) -> RewardModel:
    """Build the run's adapter, without its weights (adapters load them on first use), and
    return it for the scoring: an argument it does not take (``--model-arg``), a bad value or a missing file fails
    here, in the plan, before any run folder is checked and before any model of the command is
    scored. The thread policy is decided first, as before any weights load (building an adapter
    may import torch, which starts OpenMP)."""
    if config.engine == "local":
        prepare_threads(config.runtime.threads)
    model = ModelFactory(spec, config.runtime, config.max_length, config.truncation)()
    if isinstance(model, CallingModel) and config.engine != "local":
        raise ConfigError(f"model {spec.name!r} calls a server, which --engine local does best (its requests are "
                          f"concurrent already, and its calls are cached and written from this process); drop "
                          f"--engine {config.engine}")
    return model


def plan_run(config: EvalConfig, catalog: Catalog | None = None, warn: Callable[[str], None] | None = None,
             tasks: Sequence[LoadedTask] | None = None) -> RunPlan:
    """Resolve the model, check that its adapter can be built (:func:`check_model`) and load
    every task (a bad data row fails here): every check that needs no weights, before any scoring.

    ``tasks``: the tasks of another plan whose config reads the same data (another model of one
    ``rmbench eval``), taken as they are instead of being read again.
    """
    warn = warn or (lambda message: warnings.warn(message, stacklevel=3))
    catalog = catalog or load_catalog(config.include)
    spec = resolve_model_spec(config, catalog)
    verdicts = gives_pair_verdicts(spec)  # its tasks may take other arguments: read for it alone
    loaded = tuple(tasks) if tasks is not None and not verdicts else tuple(load_tasks(config, catalog, warn, verdicts))
    return RunPlan(config, spec, loaded, check_model(spec, config))


def evaluate(config: EvalConfig, out_dir: str | Path | None = None, progress: ProgressFactory | None = None,
             catalog: Catalog | None = None, warn: Callable[[str], None] | None = None,
             overwrite: bool = False, plan: RunPlan | None = None) -> RunRecord:
    """Score ``config.model`` on every task, compute all metrics, and write the run if ``out_dir``.

    Plan (load and check every task and the model's arguments; or take ``plan``), take the run
    folder's lock (:mod:`rmbench.results.storage.folder_lock`: another process writing ``out_dir`` is
    refused here), load the model, score every response once, assemble the :class:`RunRecord`
    and write it, still holding the lock. A bad data row fails before any scoring and nothing
    is written (with ``config.skip_bad_rows`` bad rows are left out, counted in the record and
    reported through ``warn``; default: ``warnings.warn``). ``out_dir`` holding a different run
    is refused before scoring unless ``overwrite``.
    """
    warn = warn or (lambda message: warnings.warn(message, stacklevel=2))
    plan = plan or plan_run(config, catalog, warn)
    writes = out_dir is not None and is_main_process(config.engine)  # under accelerate, rank 0 alone writes
    with run_folders_locked([out_dir] if writes else []):
        if out_dir is not None:
            check_destination(out_dir, plan.identity, overwrite)
        record, rows, judgments = _score(plan, progress, warn)
        if writes:
            write_run(out_dir, record, rows, overwrite, judgments)
    return record


def _score(plan: RunPlan, progress: ProgressFactory | None, warn: Callable[[str], None]
           ) -> tuple[RunRecord, list[RewardRow], list[dict] | None]:
    """Score the plan's model on its tasks: the run record, its reward rows and a judge's
    judgments (None for a model that calls no server)."""
    config, model_spec, loaded = plan.config, plan.model_spec, list(plan.tasks)
    threads = prepare_threads(config.runtime.threads) if config.engine == "local" else None
    deadline = BatchDeadline(config.score_timeout, model_spec.name) if config.score_timeout is not None else None
    backend = make_backend(config.engine, workers=config.workers, ray_address=config.ray_address,
                           worker_cpus=config.worker_cpus, worker_gpus=config.worker_gpus, threads=threads,
                           deadline=deadline)
    runtime = config.runtime
    if backend.device is not None and runtime.device == "auto":  # accelerate: this rank's device
        runtime = dataclasses.replace(runtime, device=backend.device)
    factory = ModelFactory(model_spec, runtime, config.max_length, config.truncation)
    # The plan's adapter (no weights yet: they load when a batch needs them), unless this rank's
    # device changed the runtime; workers build their own from the factory.
    model = plan.model if plan.model is not None and runtime == config.runtime else factory()

    # All tasks are scored in one pass, so a response that several tasks share is scored once.
    all_groups = [g for t in loaded for g in t.groups]
    calls = isinstance(model, CallingModel)  # a judge keeps its calls, not scores (rmbench.scoring.calls)
    cache = ScoreCache(model.fingerprint(), config.cache_dir, warn) if config.use_cache and not calls else None
    call_cache = CallCache(model.call_fingerprint(), config.cache_dir, warn) if config.use_cache and calls else None
    if call_cache is not None:
        model.use_call_store(call_cache)
    try:
        truncated = _check_lengths(model_spec.name, model, loaded, config, cache, warn)
        advance = progress(f"{model_spec.name} on {', '.join(t.spec.name for t in loaded)}",
                           sum(t.n_responses for t in loaded)) if progress else None
        all_rewards, stats = score_groups(model, all_groups, runtime, advance, cache, backend, factory,
                                          name=model_spec.name)
        judgments = _judgments(model, loaded) if calls else None
    finally:
        for store in (cache, call_cache):
            if store is not None:
                store.close()
        close_parts(model)  # an engine's processes stop here, not at interpreter exit
    if backend.memory.splits:
        warn(f"model {model_spec.name!r} ran out of memory and scored {backend.memory.splits} "
             f"batch{'es' * (backend.memory.splits != 1)} again in halves (first: {backend.memory.first}); the rewards "
             f"match whole batches' (to float rounding in torch), but a smaller --token-budget spares the retries")

    bounds = np.cumsum([0] + [t.n_responses for t in loaded])
    per_task = [np.asarray(all_rewards[a:b], dtype=np.float64) for a, b in zip(bounds[:-1], bounds[1:])]
    tasks = tuple(_task_result(t, r, n, config, model.may_abstain) for t, r, n in zip(loaded, per_task, truncated))
    failed = sum(t.status != "success" for t in tasks)
    record = RunRecord(
        rmbench_version=__version__, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        model=ModelIdentity(model_spec.name, model_spec.to_json(), model.fingerprint()), tasks=tasks,
        config=RunConfig(eps=tuple(config.eps), eps_unit=config.eps_unit, limit=config.limit,
                         skip_bad_rows=config.skip_bad_rows, max_length=config.max_length,
                         truncation=config.truncation, n_bootstrap=config.n_bootstrap, seed=config.seed,
                         metric_version=METRIC_VERSION, ci_level=0.95,
                         data={task: "; ".join(d.source_text() for d in config.data if d.task == task)
                               for task in dict.fromkeys(d.task for d in config.data)},
                         limit_sampling=LIMIT_SAMPLING if config.limit is not None else None),
        execution=Execution(runtime={**dataclasses.asdict(config.runtime), "score_timeout": config.score_timeout},
                            model=model.describe(),
                            backend=backend.describe(), stats=_stats_json(stats, threads, model),
                            cache=str(cache.path) if cache is not None else None),
        environment=current_environment(),
        status="success" if not failed else ("error" if failed == len(tasks) else "partial"))
    return record, [row for t, r in zip(loaded, per_task) for row in _reward_rows(t, r)], judgments


def _judgments(model: RewardModel, loaded: Sequence[LoadedTask]) -> list[dict]:
    """The judge's calls behind every task's rewards, one row per call, with the task and the
    response's utility (a response shared by tasks is listed under each)."""
    assert isinstance(model, CallingModel)
    rows: list[dict] = []
    for t in loaded:
        utility = {(g.id, i): u for g in t.groups for i, u in enumerate(g.utilities)}
        for row in model.judgments(model_requests(model, t.groups)):
            rows.append({"task": t.spec.name, **row, "utility": utility[(row["group_id"], row["response_index"])]})
    return rows


def _stats_json(stats, threads, model: RewardModel) -> dict:
    """The engine's counters, how the model ran (``ran_with``: the GPU, the attention kernels;
    empty when nothing was scored) and, on the local engine, what the thread policy saw and did:
    all say how this run went on this machine (a warm cache or a busy machine changes them), so
    they sit apart from the settings, and the same command gives the same record otherwise."""
    out = stats.to_json()
    ran = next((facts for part in parts(model) if (facts := part.ran_with())), None)
    if ran:
        out["ran_with"] = ran
    if threads is not None:
        out["threads"] = threads.describe()
    return out


def parse_eps(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--eps {text!r}: expected comma-separated numbers like 0,0.1") from None
    return values
