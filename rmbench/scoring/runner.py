"""``evaluate``: one model on a list of tasks, from specs to a written run record.

The CLI's ``rmbench eval`` is a thin wrapper around :func:`evaluate`; tests call it directly.
A run is planned first (:func:`~rmbench.scoring.planning.plan_run`: the model resolved and its
adapter built without weights, every task read and checked, the thread policy decided), then
its folder is locked and checked once (:func:`~rmbench.results.storage.folder.check_destination`),
then it is scored and written (:func:`run_plan`). The configuration (:class:`EvalConfig`: what is measured and how it
runs) is in :mod:`rmbench.scoring.config`.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rmbench import __version__
from rmbench.catalog import Catalog
from rmbench.core.choices import TaskStatus
from rmbench.core.judge_replies import JudgeReplies
from rmbench.core.metric_registry import METRICS, MetricSpec, OfficialLayout, metric_def
from rmbench.core.metrics import METRIC_VERSION, reward_sigma
from rmbench.core.splits import LIMIT_SAMPLING
from rmbench.core.types import ComparisonGroup, split_by_group
from rmbench.core.unscored import drop_unscored
from rmbench.errors import ConfigError, ModelError, RMBenchError
from rmbench.models.base import CallingModel, RewardModel, close_parts, parts, tokenized_parts
from rmbench.models.threads import ThreadGovernor
from rmbench.registry import PluginSource
from rmbench.results.statistics.summary import summarize, task_score_records
from rmbench.results.storage.engine_stats import EngineStats
from rmbench.results.storage.environment import current_environment
from rmbench.results.storage.folder import Destination, RewardRow, check_destination, write_run
from rmbench.results.storage.folder_lock import run_folders_locked
from rmbench.results.storage.record import (
    Counts,
    Execution,
    MetricRecord,
    ModelIdentity,
    RunConfig,
    RunRecord,
    SkippedRow,
    SkippedRows,
    TaskResult,
    finite_or_none,
)
from rmbench.scoring.cache import ScoreCache, request_key
from rmbench.scoring.calls import CallCache
from rmbench.scoring.config import EvalConfig, RunSpec
from rmbench.scoring.engine import model_requests, requests_for, score_groups
from rmbench.scoring.engines import Backend, make_backend, recorded_backend
from rmbench.scoring.planning import LoadedTask, ModelFactory, RunPlan, plan_run
from rmbench.scoring.plugins_used import run_plugins
from rmbench.scoring.steps import StepCache, step_task_rewards
from rmbench.scoring.timeout import BatchDeadline
from rmbench.tasks.base import as_task_scores

__all__ = ["EvalConfig", "evaluate", "parse_eps", "run_plan"]
"""``EvalConfig`` is re-exported: scripts build it beside :func:`evaluate`."""

ProgressFactory = Callable[..., Callable[[int], None]]
"""``factory(description, total)`` returns a callback that advances by the count it is given;
a factory that also takes ``unit=`` (the CLI's) is told what a bar counts when it is not
responses (:func:`_progress_bar`)."""

BOOTSTRAP_BAR_FROM = 500_000_000
"""A task's bootstrap gets a progress bar from this many pairs x resamples (about 3 s here)."""

REPORTED_BAD_ROWS = 5
"""How many skipped rows' errors a run record quotes (it always counts them all)."""


def _check_lengths(model_name: str, model: RewardModel, loaded: Sequence[LoadedTask], config: RunSpec,
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


def _progress_bar(progress: ProgressFactory, description: str, total: int, unit: str) -> Callable[[int], None]:
    """``progress(description, total, unit=unit)``, or without ``unit`` for a factory that takes none."""
    try:
        parameters = list(inspect.signature(progress).parameters.values())
    except (TypeError, ValueError):  # a callable without a signature: call it plainly
        parameters = []
    if any(p.name == "unit" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return progress(description, total, unit=unit)
    return progress(description, total)


def _pair_counts(groups: Sequence[ComparisonGroup]) -> tuple[int, int]:
    """How many discrimination and specificity pairs ``groups`` hold."""
    counts = [g.pair_counts() for g in groups]
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def _task_result(t: LoadedTask, rewards: np.ndarray, n_truncated: int | None, config: RunSpec,
                 may_abstain: bool = False, progress: ProgressFactory | None = None,
                 model_name: str = "", replies: Callable[[int], JudgeReplies | None] | None = None) -> TaskResult:
    """Metrics of one task; an error in them fails this task only, with the error recorded.
    Responses without a reward (NaN: a judge's unparsed answer) are left out of the pairs and
    the official scores (:func:`~rmbench.core.unscored.drop_unscored`) and counted; ``replies``
    gives a judge's reply counts from the number left out. A large
    task's bootstrap (:data:`BOOTSTRAP_BAR_FROM`) shows a bar of resamples through ``progress``."""
    groups, parts = t.groups, t.key_parts(config)
    pair_counts = _pair_counts(groups)
    bar = None
    if progress is not None and sum(pair_counts) * config.n_bootstrap >= BOOTSTRAP_BAR_FROM:
        def bar(total: int) -> Callable[[int], None]:
            return _progress_bar(progress, f"{model_name} on {t.spec.name}: 95% CIs", total, "resamples")
    scored = drop_unscored(groups, rewards)
    status: TaskStatus = "success"
    error: str | None = None
    records: tuple[MetricRecord, ...] = ()
    try:
        if not scored.groups:
            raise ModelError(f"the model gave no reward to {scored.unscored_responses} responses, which leaves no "
                             f"pair to score")
        # A task's own scores that count every group (Task.counts_unscored: a step-level task's
        # solution its judge named no step of, Multimodal RewardBench's coin); the pairs leave it out.
        whole = t.task.counts_unscored and scored.dropped_groups > 0
        own = (t.task.extra_metrics(groups, rewards) if whole
               else t.task.extra_metrics(scored.groups, scored.rewards))
        records = tuple(summarize(t.spec.name, scored.groups, scored.rewards, config.eps, config.eps_unit,
                                  group_units=t.task.bootstrap_units(scored.groups),
                                  extra_metrics=None if whole else own,
                                  n_bootstrap=config.n_bootstrap, seed=config.seed, progress=bar))
        if whole:
            scores = as_task_scores(own, len(groups))
            if scores is not None:
                records += tuple(task_score_records(t.spec.name, scores, t.task.bootstrap_units(groups),
                                                    config.n_bootstrap, config.seed))
    except (RMBenchError, ValueError) as exc:  # a task's own scores that these rewards cannot give: this task fails
        status, error = "error", f"{type(exc).__name__}: {exc}"
    # --metrics adds a column where the task reports the metric (a rewrite metric: tasks with rewrites)
    shown = t.headline if t.headline is not None else tuple(t.task.headline)
    reported = {r.metric for r in records}
    headline = tuple(m for m in shown if m in t.task.headline or m in reported or m not in config.metrics)
    judged = replies(scored.unscored_responses) if replies is not None else None
    unparsed = scored.unscored_responses if may_abstain else None
    if judged is not None:  # responses with a reply of no verdict, whether left out or scored officially
        unparsed = max(judged.responses_no_verdict, scored.unscored_responses)
    return TaskResult(
        name=t.spec.name, kind=t.spec.kind, version=t.spec.version or 0, args=t.spec.args_dict,
        data_fingerprint=parts.data_fingerprint, score_args=dict(parts.score_args), metric_version=METRIC_VERSION,
        eps=tuple(config.eps),
        eps_unit=config.eps_unit,
        counts=Counts(len(groups), t.n_responses, *pair_counts),
        sigma=finite_or_none(reward_sigma(scored.rewards)) if len(scored.rewards) else None, metrics=records,
        skipped_rows=SkippedRows(len(t.bad_rows), tuple(SkippedRow(e.path, e.line, e.field, str(e))
                                                        for e in t.bad_rows[:REPORTED_BAD_ROWS])),
        truncated_texts=n_truncated, headline=headline, official=t.task.official,
        metric_specs=metric_specs(headline, records, t.task.official),
        status=status, error=error, unparsed=unparsed, judge_replies=judged)


def metric_specs(headline: Sequence[str], records: Sequence[MetricRecord],
                 official: OfficialLayout | None) -> tuple[MetricSpec, ...]:
    """The declaration of every metric a task shows or reports, as this process knows it (its
    plugins loaded), for the run record (:attr:`TaskResult.metric_specs`); a plugin's metric with
    the distribution that declared it."""
    names = [*headline, *(r.metric for r in records)]
    if official is not None:
        names += [*official.metrics, *official.beside]
    return tuple(MetricSpec.of(metric_def(n), METRICS.source(n)) for n in dict.fromkeys(names))


def _reward_rows(t: LoadedTask, rewards: np.ndarray) -> list[RewardRow]:
    rows = []
    for g, r in zip(t.groups, split_by_group(t.groups, rewards)):
        rows += [RewardRow(t.spec.name, g.id, i, u, float(r[i])) for i, u in enumerate(g.utilities)]
    return rows


def evaluate(config: EvalConfig, out_dir: str | Path | None = None, progress: ProgressFactory | None = None,
             catalog: Catalog | None = None, warn: Callable[[str], None] | None = None,
             overwrite: bool = False, plan: RunPlan | None = None) -> RunRecord:
    """Score ``config``'s model on every task, compute all metrics, and write the run if ``out_dir``.

    Plan (load and check every task and the model's arguments; or take ``plan``), take the run
    folder's lock (:mod:`rmbench.results.storage.folder_lock`: another process writing ``out_dir`` is
    refused here) and check it once, then :func:`run_plan`, still holding the lock. A bad data
    row fails before any scoring and nothing is written (with ``skip_bad_rows`` bad rows are
    left out, counted in the record and reported through ``warn``; default: ``warnings.warn``).
    ``out_dir`` holding a different run is refused before scoring unless ``overwrite``.
    """
    warn = warn or (lambda message: warnings.warn(message, stacklevel=2))
    plan = plan or plan_run(config, catalog, warn)
    writes = out_dir is not None and plan.config.execution.engine_kind.is_main()  # accelerate: rank 0 alone writes
    with run_folders_locked([out_dir] if out_dir is not None and writes else []):
        destination = check_destination(out_dir, plan.identity, overwrite) if out_dir is not None else None
        return run_plan(plan, destination if writes else None, progress, warn)


def run_plan(plan: RunPlan, destination: Destination | None, progress: ProgressFactory | None = None,
             warn: Callable[[str], None] | None = None) -> RunRecord:
    """Load the plan's model, score every response once, assemble the :class:`RunRecord` and
    write it to ``destination`` (checked for this plan, its lock held by the caller; None: write
    nothing)."""
    warn = warn or (lambda message: warnings.warn(message, stacklevel=2))
    record, rows, judgments = _score(plan, progress, warn)
    if destination is not None:
        write_run(destination, record, rows, judgments=judgments)
    return record


def _backend(plan: RunPlan) -> Backend:
    """The run's backend, with the plan's thread policy (its counts started afresh for this run)
    and the ``--score-timeout`` deadline where the engine scores in this process."""
    execution, name = plan.config.execution, plan.model_spec.name
    threads = plan.threads.start_run(execution.runtime.threads) if plan.threads is not None else None
    deadline = BatchDeadline(execution.score_timeout, name) if execution.score_timeout is not None else None
    return make_backend(execution.engine, execution.backend_options(threads=threads, deadline=deadline))


def limit_note(limit: int | None, loaded: Sequence[LoadedTask]) -> str:
    """What a run scores under ``--limit``, for its progress line: `` (--limit 1: 2 groups, paired
    groups kept together; 5 responses)``; empty without a limit. Counts are over all its tasks."""
    if limit is None:
        return ""
    n_groups, n_responses = sum(len(t.groups) for t in loaded), sum(t.n_responses for t in loaded)
    paired = any(len(t.groups) > limit for t in loaded)
    per_task = " per task" if len(loaded) > 1 else ""
    return (f" (--limit {limit}{per_task}: {n_groups} group{'s' * (n_groups != 1)}"
            f"{', paired groups kept together' if paired else ''}; {n_responses} responses)")


def _score(plan: RunPlan, progress: ProgressFactory | None, warn: Callable[[str], None]
           ) -> tuple[RunRecord, list[RewardRow], list[dict] | None]:
    """Score the plan's model on its tasks: the run record, its reward rows and a judge's
    judgments (None for a model that calls no server)."""
    measured, execution = plan.config.measured, plan.config.execution
    model_spec, loaded = plan.model_spec, list(plan.tasks)
    backend = _backend(plan)
    runtime = execution.runtime
    if backend.device is not None and runtime.device == "auto":  # accelerate: this rank's device
        runtime = dataclasses.replace(runtime, device=backend.device)
    factory = ModelFactory(model_spec, runtime, measured.truncation_policy)
    # The plan's adapter (no weights yet: they load when a batch needs them), unless this rank's
    # device changed the runtime; workers build their own from the factory.
    model = plan.model if plan.model is not None and runtime == execution.runtime else factory()

    # All tasks are scored in one pass, so a response that several tasks share is scored once;
    # the steps of step-level tasks in another, through the same engine and backend (rmbench.scoring.steps).
    response_tasks = [t for t in loaded if not t.task.steps]
    all_groups = [g for t in response_tasks for g in t.groups]
    calls = isinstance(model, CallingModel)  # a judge keeps its calls, not scores (rmbench.scoring.calls)
    use_cache = execution.use_cache
    cache = ScoreCache(model.fingerprint(), execution.cache_dir, warn) if use_cache and not calls else None
    call_cache = None
    if use_cache and isinstance(model, CallingModel):
        call_cache = CallCache(model.call_fingerprint(), execution.cache_dir, warn)
        model.use_call_store(call_cache)
    try:
        checked = iter(_check_lengths(model_spec.name, model, response_tasks, measured, cache, warn))
        truncated = [None if t.task.steps else next(checked) for t in loaded]
        advance = progress(f"{model_spec.name} on {', '.join(t.spec.name for t in response_tasks)}"
                           f"{limit_note(measured.limit, response_tasks)}",
                           sum(t.n_responses for t in response_tasks)) if progress and response_tasks else None
        all_rewards, stats = score_groups(model, all_groups, runtime, advance, cache, backend, factory,
                                          name=model_spec.name)
        step_tasks = [t for t in loaded if t.task.steps]
        step_bar = None
        if progress and step_tasks:
            step_bar = _progress_bar(progress, f"{model_spec.name} on {', '.join(t.spec.name for t in step_tasks)}"
                                               f"{limit_note(measured.limit, step_tasks)}",
                                     sum(len(t.groups) for t in step_tasks), "solutions")
        step_rewards, step_stats = step_task_rewards(
            model, step_tasks, runtime, StepCache(use_cache and not calls, execution.cache_dir, warn), step_bar,
            model_spec.name, backend, factory)
        stats = stats.plus(step_stats)
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

    bounds = np.cumsum([0] + [t.n_responses for t in response_tasks])
    by_response = iter(np.asarray(all_rewards[a:b], dtype=np.float64) for a, b in zip(bounds[:-1], bounds[1:]))
    by_step = iter(step_rewards)
    per_task = [next(by_step) if t.task.steps else next(by_response) for t in loaded]
    tasks = tuple(_task_result(t, r, n, measured, model.may_abstain, progress, model_spec.name,
                               _replies_of(model, judgments, t.spec.name))
                  for t, r, n in zip(loaded, per_task, truncated))
    execution_record = Execution(runtime={**dataclasses.asdict(execution.runtime),
                                          "score_timeout": execution.score_timeout},
                                 model=model.describe(), backend=recorded_backend(backend, execution.engine_options()),
                                 stats=_stats(stats, plan.threads, model),
                                 cache=str(cache.path) if cache is not None else None)
    plugins = run_plugins(model, loaded, execution.engine, (m.metric for t in tasks for m in t.metrics))
    record = _record(plan, model.fingerprint(), tasks, execution_record, plugins)
    return record, [row for t, r in zip(loaded, per_task) for row in _reward_rows(t, r)], judgments


def _record(plan: RunPlan, fingerprint: str, tasks: tuple[TaskResult, ...], execution: Execution,
            plugins: Sequence[PluginSource] = ()) -> RunRecord:
    """The run record of the plan's scored ``tasks``: what was measured (from the plan), how, and
    the ``plugins`` that computed it."""
    config, spec = plan.config.measured, plan.model_spec
    failed = sum(t.status != "success" for t in tasks)
    return RunRecord(
        rmbench_version=__version__, created=datetime.now(UTC).isoformat(timespec="seconds"),
        model=ModelIdentity(spec.name, spec.to_json(), fingerprint), tasks=tasks,
        config=RunConfig(eps=tuple(config.eps), eps_unit=config.eps_unit, limit=config.limit,
                         skip_bad_rows=config.skip_bad_rows, max_length=config.max_length,
                         truncation=config.truncation, n_bootstrap=config.n_bootstrap, seed=config.seed,
                         metric_version=METRIC_VERSION, ci_level=0.95,
                         data={task: "; ".join(d.source_text() for d in config.data if d.task == task)
                               for task in dict.fromkeys(d.task for d in config.data)},
                         limit_sampling=LIMIT_SAMPLING if config.limit is not None else None),
        execution=execution, environment=current_environment(plugins=plugins),
        status="success" if not failed else ("error" if failed == len(tasks) else "partial"))


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


def _replies_of(model: RewardModel, judgments: list[dict] | None, task: str
                ) -> Callable[[int], JudgeReplies | None] | None:
    """A judge's reply counts on ``task`` (from its judgment rows), given the responses left out."""
    if judgments is None or not isinstance(model, CallingModel):
        return None
    rows = [j for j in judgments if j["task"] == task]
    return lambda left_out: model.reply_counts(rows, left_out)


def _stats(stats: EngineStats, threads: ThreadGovernor | None, model: RewardModel) -> EngineStats:
    """The engine's counters, how the model ran (``ran_with``: the GPU, the attention kernels;
    none when nothing was scored) and, on an in-process engine, what the thread policy saw and
    did: all say how this run went on this machine (a warm cache or a busy machine changes them),
    so they sit apart from the settings, and the same command gives the same record otherwise."""
    ran = next((facts for part in parts(model) if (facts := part.ran_with())), None)
    return dataclasses.replace(stats, ran_with=ran or None,
                               threads=threads.describe() if threads is not None else None)


def parse_eps(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--eps {text!r}: expected comma-separated numbers like 0,0.1") from None
    return values
