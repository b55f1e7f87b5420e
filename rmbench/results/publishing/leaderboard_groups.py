"""A leaderboard's rows and column groups: the runs as rows (:class:`RunEntry`), each task key of a
task as a column group (:class:`ColumnGroup`), and the cells they give.

A column group is one task key of one task: its key (``ties``; ``ties#2`` for a second task key
of that name: what :attr:`~rmbench.results.publishing.leaderboard_tables.Column.task` and the
leaderboard's ``eps``, ``keys`` and ``names`` are keyed by), its heading (``ties (limit 10)``,
:mod:`~rmbench.results.publishing.leaderboard_variants`), the runs that have it, the result that
stands for them (its first that scored) and the eps of its D/Spec columns. Every part of the
leaderboard (headline tables, official tables, the shifts table, notes, legend) is built from
these groups, never from parallel dicts. Shared by those builders: the cells
(:func:`column`, :func:`cell`, :func:`sorted_rows`) and the CI caption (:func:`ci_caption`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath

from rmbench.errors import ConfigError
from rmbench.results.publishing.leaderboard_tables import Column, RowSource
from rmbench.results.publishing.leaderboard_variants import display_name, qualifiers
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import Estimate, RunRecord, TaskResult, eps_text

DEFAULT_EPS = 0.1
"""The eps of the D/Spec columns where every run of a task has it and none is asked for."""

RunLike = RunRecord | RunFolder


@dataclass(frozen=True)
class RunEntry:
    """One run as a leaderboard row: its label (the model, with its run folder where one model has
    several runs) and its tasks under their column groups' keys."""

    label: str
    record: RunRecord
    folder: str | None
    """The run folder's name (None for a record)."""
    tasks: Mapping[str, TaskResult]
    """Column group key (``ties``, ``ties#2``) -> the run's result of that task."""

    @property
    def where(self) -> str:
        """The run as a note names it: its folder, else its model."""
        return self.folder or self.record.model.name

    def has_task(self, key: str) -> bool:
        return key in self.tasks

    def task(self, key: str) -> TaskResult:
        return self.tasks[key]


@dataclass(frozen=True)
class ColumnGroup:
    """One task key of a task: the columns its runs share."""

    key: str
    """``ties`` for the task's first group, ``ties#2``... for the others."""
    task: str
    """The task's name."""
    heading: str
    """Its name in headings, headers, notes and the legend: ``ties (limit 10)``; the task's name
    where nothing needs saying."""
    qualifier: str
    """What the heading says beside the task's name (``limit 10``), or ""."""
    runs: tuple[tuple[RunEntry, TaskResult], ...]
    """Every run of the group with its result: in the order the runs were given, or (after
    :meth:`in_order`) in the rows' order."""
    first: TaskResult
    """The result that stands for the group (its declarations, task key, official layout, legend):
    the first given run's that scored, else the first given run's."""
    first_entry: RunEntry
    """The run of :attr:`first`."""
    eps: float
    """The eps of its D/Spec columns (:func:`pick_eps`)."""

    @property
    def scored(self) -> tuple[tuple[RunEntry, TaskResult], ...]:
        """The runs whose task succeeded."""
        return tuple((e, t) for e, t in self.runs if t.status == "success")

    @property
    def counted(self) -> tuple[tuple[RunEntry, TaskResult], ...]:
        """The runs that stand for the group: those that scored, else (every run failed) all; in
        the order of :attr:`runs`."""
        return self.scored or self.runs

    @property
    def eps_unit(self) -> str:
        return self.first.eps_unit

    @property
    def labelled(self) -> list[tuple[str, TaskResult]]:
        """``(row label, result)`` of each run."""
        return [(e.label, t) for e, t in self.runs]

    def in_order(self, entries: Sequence[RunEntry]) -> ColumnGroup:
        """The group with its runs in the order of ``entries`` (the rows' order)."""
        rank = {e.label: i for i, e in enumerate(entries)}
        return replace(self, runs=tuple(sorted(self.runs, key=lambda run: rank[run[0].label])))


def model_label(name: str) -> str:
    """A model's name as a table shows it: an absolute path (``judge:/srv/models/SmolLM2`` or
    ``/srv/models/rm``, ``published:judgebench:/srv/f.jsonl``) by its last part (``judge:SmolLM2``,
    ``published:judgebench:f.jsonl``), so that published tables never carry
    a machine's folders; hub ids and relative names as they are."""
    if name.startswith(("/", "~")):
        return PurePath(name.rstrip("/")).name if name.rstrip("/") else name
    parts = name.split(":")  # each KIND: (published:judgebench:/srv/f.jsonl) kept, a path after it cut
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith(("/", "~")) and part.rstrip("/"):
            parts[i:] = [PurePath(":".join(parts[i:]).rstrip("/")).name]
            break
    return ":".join(parts)


def _labels(runs: Sequence[tuple[RunRecord, str | None]]) -> list[str]:
    """The model name as label, with the folder name where one model has several runs (every row
    has a label of its own: two runs of one model on different data are two rows, each named by
    its folder, never one)."""
    count: dict[str, int] = {}
    for record, _ in runs:
        count[model_label(record.model.name)] = count.get(model_label(record.model.name), 0) + 1
    labels: list[str] = []
    for record, folder in runs:
        model = label = model_label(record.model.name)
        if count[model] > 1:
            if folder is None:
                raise ConfigError(f"model {model!r} has several runs; give run folders so that their rows "
                                  f"can be told apart")
            label = f"{model} ({folder})"
            if label in labels:
                raise ConfigError(f"two runs of {model!r} on one task are both in folders named {folder!r}")
        labels.append(label)
    return labels


def _task_keys(runs: Sequence[tuple[RunRecord, str | None]]) -> dict[str, list[list[tuple[int, TaskResult]]]]:
    """Task name -> its runs (index in ``runs``, result) by task key, in the order the keys are
    found: tasks that scored before tasks that failed, then in the order of the runs."""
    found: dict[str, list[list[tuple[int, TaskResult]]]] = {}
    every = [(i, t) for i, (record, _) in enumerate(runs) for t in record.tasks]
    for i, t in sorted(every, key=lambda run: run[1].status != "success"):
        groups = found.setdefault(t.name, [])
        group = next((g for g in groups if g[0][1].task_key == t.task_key), None)
        if group is None:
            groups.append([(i, t)])
        else:
            group.append((i, t))
    return found


def column_groups(runs: Sequence[RunLike], eps: float | None = None) -> tuple[list[RunEntry], list[ColumnGroup]]:
    """The rows (in the order of ``runs``) and the column groups, one per task key of a task: the
    group of the task's own data and settings first (its key the task's name), then in the order
    the keys are found (:func:`_task_keys`); each named by what differs (:func:`qualifiers`), its
    eps picked by :func:`pick_eps` (``eps``: the one asked for)."""
    given = [(r.record, r.label) if isinstance(r, RunFolder) else (r, None) for r in runs]
    found = _task_keys(given)
    placed: list[tuple[str, str, str, str]] = []  # (key, task, heading, qualifier), in order
    tasks: list[dict[str, TaskResult]] = [{} for _ in given]
    for task, groups in found.items():
        words = qualifiers(task, [(given[g[0][0]][0].config, g[0][1]) for g in groups])
        order = sorted(range(len(groups)), key=lambda i: (words[i] != "", i))
        for rank, i in enumerate(order):
            key = task if rank == 0 else f"{task}#{rank + 1}"
            placed.append((key, task, display_name(task, words[i]), words[i]))
            for index, t in groups[i]:
                tasks[index][key] = t
    entries = [RunEntry(label, record, folder, tasks[i])
               for i, ((record, folder), label) in enumerate(zip(given, _labels(given)))]
    out = []
    for key, task, heading, qualifier in placed:
        having = tuple((e, e.task(key)) for e in entries if e.has_task(key))
        scored = [run for run in having if run[1].status == "success"]
        first_entry, first = (scored or having)[0]
        group = ColumnGroup(key, task, heading, qualifier, having, first, first_entry, 0.0)
        out.append(replace(group, eps=pick_eps(group, eps)))
    return entries, out


def pick_eps(group: ColumnGroup, wanted: float | None) -> float:
    """The eps of a group's D/Spec columns: ``wanted``, else 0.1, else the smallest non-zero eps
    every run that stands for it has (:attr:`ColumnGroup.counted`), else the first run's smallest
    non-zero eps (a note names each run that lacks it: :func:`eps_notes`)."""
    lists = [t.eps for _, t in group.counted]
    common = [e for e in lists[0] if all(any(math.isclose(e, f, abs_tol=1e-12) for f in other) for other in lists)]
    if wanted is not None:
        if not any(t.has_eps(wanted) for _, t in group.counted):
            raise ConfigError(f"task {group.heading!r}: no run has D/Spec at eps={wanted:g} (they have "
                              f"{'; '.join(sorted({eps_text(x) for x in lists}))})")
        return wanted
    if any(math.isclose(DEFAULT_EPS, e) for e in common):
        return DEFAULT_EPS
    if common:
        return ([e for e in sorted(common) if e > 0] or sorted(common))[0]
    return ([e for e in sorted(lists[0]) if e > 0] or sorted(lists[0]))[0]


def eps_notes(group: ColumnGroup) -> list[str]:
    """A note for each run (of those that stand for the group) that lacks the group's eps."""
    return [f"{e.label} on {group.heading}: no D/Spec at eps={group.eps:g} (its eps: {eps_text(t.eps)}); those "
            f"cells are empty" for e, t in group.counted if not t.has_eps(group.eps)]


def eps_header(label: str, eps: float, unit: str) -> str:
    """``D@0.1σ``; ``D@0.1`` in raw reward units."""
    return f"{label}@{eps:g}{'σ' if unit == 'sigma' else ''}"


def column(group: ColumnGroup, metric: str, prefix: str = "", subset: str | None = None,
           header: str | None = None) -> Column:
    """The column of ``metric`` (of ``subset``) in ``group``: headed ``prefix`` + ``header`` (or the
    metric's label, with its eps where the metric depends on eps), as the group's first result
    declares the metric."""
    task = group.first
    d = task.metric_def(metric)
    if d.eps_dependent:
        return Column(group.key, metric, prefix + eps_header(d.label, group.eps, task.eps_unit), group.eps,
                      task.eps_unit, subset, d.higher_is_better)
    return Column(group.key, metric, prefix + (header or d.label), None, None, subset, d.higher_is_better)


def cell(entry: RunEntry, col: Column, shift: str | None = None) -> Estimate | None:
    """``entry``'s estimate under ``col`` (of ``shift``); None where the run has no such record."""
    if not entry.has_task(col.task):
        return None
    m = entry.task(col.task).metric(col.metric, col.eps, col.subset, shift)
    return None if m is None else m.estimate


def sorted_rows(rows: list, higher_is_better: bool, column: int = 0) -> list:
    """Best first on ``column``; missing or undefined cells last."""
    def key(row):
        cell = row[1][column] if row[1] else None
        missing = cell is None or not cell.defined
        return (missing, 0.0 if missing else (-cell.value if higher_is_better else cell.value))
    return sorted(rows, key=key)


CAPTION = "value [95% bootstrap CI over groups]"


def ci_caption(entries: Sequence[RunEntry], what: str = CAPTION) -> str:
    """``what``, unless runs were made with ``--bootstrap 0`` (they have no CIs): then say so."""
    without = [e.label for e in entries if e.record.config.n_bootstrap == 0]
    if not without:
        return what
    if len(without) == len(entries):
        none = "no CIs: the runs used --bootstrap 0"
        return f"value ({none})" if what.startswith("value") else none
    return f"{what}; no CI for {', '.join(without)} (--bootstrap 0)"


def possessive(name: str) -> str:
    """``name``'s, or ``name``' for a name that ends in s ("Topic pairs' own scores", "RewardBench's")."""
    return f"{name}'" if name.endswith(("s", "S")) else f"{name}'s"


def row_sources(entries: Sequence[RunEntry]) -> dict[str, RowSource]:
    """Where each row comes from (model, identity, folder), by label: what
    :func:`~rmbench.results.publishing.leaderboard_tables.fold_rows` folds by."""
    return {e.label: RowSource(e.record.model.name, json.dumps(e.record.model.spec, sort_keys=True, default=str),
                               e.folder) for e in entries}
