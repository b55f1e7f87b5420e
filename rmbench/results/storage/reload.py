"""A stored run's task data without its model: the task's groups, reloaded from the spec the run
recorded and checked against its data fingerprint, and the run's rewards aligned to them.

``compare`` and ``plot`` recompute statistics from these (paired bootstraps, dense D-Spec
curves), so no model is ever loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.catalog import load_catalog
from rmbench.core.specs import TaskSpec
from rmbench.core.splits import LIMIT_FIRST
from rmbench.core.types import ComparisonGroup
from rmbench.core.unscored import Scored, drop_unscored
from rmbench.errors import DataError
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import TaskResult
from rmbench.results.storage.rewards_file import REWARDS_FILE, RewardsFileError
from rmbench.tasks.base import Task, task_data_fingerprint, task_fingerprint
from rmbench.tasks.loading import DataOverride, load_task, task_spec_with_data


@dataclass(frozen=True)
class TaskData:
    task: Task
    result: TaskResult
    groups: list[ComparisonGroup]
    spec: TaskSpec | None = None
    """The spec the groups were read with (None: not given)."""
    bad_rows: tuple[DataError, ...] = ()
    """The rows left out, as the run left them out (``--skip-bad-rows``)."""


def reload_task(result: TaskResult, limit: int | None, data: Mapping[str, DataOverride | str] | None = None,
                sampling: str | None = None) -> TaskData:
    """The groups a run scored on ``result``'s task, reloaded (``data``: files moved since;
    ``sampling``: how the run's ``--limit`` sampled, as its record says; None: the first groups,
    as runs written before the sample existed took them)."""
    sampling = sampling or LIMIT_FIRST
    data = dict(data or {})
    spec = TaskSpec.make(result.name, result.kind, result.args, result.version)
    override = data.get(result.name)
    if override is not None:
        override = override if isinstance(override, DataOverride) else DataOverride(result.name, str(override))
        spec = task_spec_with_data(spec, override.path, override.shift or result.args.get("shift"))
    # A run that left out bad rows (--skip-bad-rows) is reloaded the same way; the fingerprint
    # check below makes sure the same rows were left out.
    skip = result.skipped_rows.count > 0
    recorded = spec
    try:
        task, groups, bad = load_task(spec, limit, skip, sampling)
    except DataError as missing:
        catalog = load_catalog()
        if override is not None or result.name not in catalog.tasks:
            raise
        reason = missing
        # A built-in task recorded with another install's path: use this install's copy
        # (the fingerprint check below makes sure it is the same data).
        spec = catalog.task_spec(result.name)
        task, groups, bad = load_task(spec, limit, skip, sampling)
    if not same_data(task, groups, result):
        where = _source(spec)
        if spec is not recorded:  # the recorded source failed and this install's copy differs
            raise DataError(f"task {result.name!r}: the data the run used ({_source(recorded)}) cannot be read "
                            f"({reason}), and this install's copy at {where} is other data (fingerprint "
                            f"differs); pass that file with --data {result.name}=PATH")
        raise DataError(f"task {result.name!r}: the data at {where} is not the data the run used (fingerprint "
                        f"differs); pass that file with --data {result.name}=PATH")
    return TaskData(task, result, groups, spec, tuple(bad))


def same_data(task: Task, groups: Sequence[ComparisonGroup], result: TaskResult) -> bool:
    """Whether ``groups`` are the data ``result`` was scored on: their data fingerprint, where the
    run records its score arguments apart; else (a file written before, or a task without any)
    with the task's score arguments folded in, as its ``data_fingerprint`` holds them."""
    if result.score_args:
        return task_data_fingerprint(task, groups) == result.data_fingerprint
    return task_fingerprint(task, groups) == result.data_fingerprint


def _source(spec: TaskSpec):
    args = spec.args_dict  # plain values: the message quotes them
    return args.get("path") or args.get("dataset") or args.get("paths")


def aligned_rewards(folder: RunFolder, task: str, groups: list[ComparisonGroup],
                    rows=None) -> np.ndarray:
    """The run's reward of every response of ``groups``, in group order (from rewards.jsonl)."""
    rows = folder.rewards() if rows is None else rows
    by_key = {(r.group_id, r.response_index): r.reward for r in rows if r.task == task}
    try:
        rewards = np.array([by_key[(g.id, i)] for g in groups for i in range(len(g.responses))], dtype=np.float64)
    except KeyError as exc:
        raise DataError(f"{folder.path / REWARDS_FILE} has no reward for task {task!r}, group/response {exc}") from None
    result = folder.record.task(task) if folder.record.has_task(task) else None
    if result is not None and result.status == "success" and result.unparsed is None and np.isnan(rewards).any():
        # null is "no reward" only where a judge's answers could go unparsed (the run counts them)
        k = int(np.flatnonzero(np.isnan(rewards))[0])
        group, response = next((g.id, k - start) for g, start in zip(groups, _starts(groups))
                               if start <= k < start + len(g.responses))
        raise RewardsFileError(f"{folder.path / REWARDS_FILE}: task {task!r}, group {group!r}, response {response}: "
                               f"the reward is null (none), but this run's model gave every response a reward (the "
                               f"run records no unparsed answers), so the file was changed after the run: restore "
                               f"it, or rerun the model")
    return rewards


def _starts(groups: list[ComparisonGroup]) -> list[int]:
    """Where each group's responses begin in the flat reward array."""
    out, at = [], 0
    for g in groups:
        out.append(at)
        at += len(g.responses)
    return out


def task_rewards(folder: RunFolder, task: str, data: Mapping[str, DataOverride | str] | None = None
                 ) -> tuple[TaskData, np.ndarray]:
    """Reloaded groups of ``task`` and the run's rewards for them."""
    td, scored = task_scored(folder, task, data)
    return td, scored.rewards


def task_scored(folder: RunFolder, task: str, data: Mapping[str, DataOverride | str] | None = None
                ) -> tuple[TaskData, Scored]:
    """Reloaded groups of ``task`` as the run's metrics saw them (without the responses the model
    gave no reward: :func:`~rmbench.core.unscored.drop_unscored`), and the run's rewards for them."""
    config = folder.record.config
    td = reload_task(folder.record.task(task), config.limit, data, config.limit_sampling)
    scored = scored_as_recorded([td.result], td.groups, aligned_rewards(folder, task, td.groups))
    return dataclasses.replace(td, groups=scored.groups), scored


def scored_as_recorded(results: Sequence[TaskResult], groups: Sequence[ComparisonGroup], rewards: np.ndarray
                       ) -> Scored:
    """The groups and rewards the metrics of these runs of one task saw: a NaN reward is "no
    reward" (left out, :func:`~rmbench.core.unscored.drop_unscored`) where a run records unparsed
    answers; elsewhere it is damage, kept for the metrics to refuse."""
    if all(r.unparsed is None for r in results):
        return Scored.whole(groups, rewards)
    return drop_unscored(groups, rewards)
