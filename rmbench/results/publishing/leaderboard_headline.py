"""A leaderboard's headline tables: per column group, the metrics its tasks declare as their
headline (and ``--metrics``), one row per run, best first; one table, or one per task.

A run whose task failed is no row of empty cells but a
:class:`~rmbench.results.publishing.leaderboard_tables.FailedRun` line under the table, and a
column group whose every run failed has no columns, only those lines. Rows of one model identity
with the same numbers are folded (:func:`~rmbench.results.publishing.leaderboard_tables.fold_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rmbench.errors import ConfigError, did_you_mean
from rmbench.results.publishing.leaderboard_groups import (
    ColumnGroup,
    RunEntry,
    cell,
    ci_caption,
    column,
    row_sources,
    sorted_rows,
)
from rmbench.results.publishing.leaderboard_tables import (
    MAX_ONE_TABLE_COLUMNS,
    Column,
    FailedRun,
    Table,
    fold_rows,
    split_by_task,
)
from rmbench.results.storage.record import TaskResult

LAYOUTS = ("auto", "one", "per-task")
"""``one``: a single main table of every task's metrics; ``per-task``: a table per task (column
group); ``auto``: per task when the single table would have more than
:data:`~rmbench.results.publishing.leaderboard_tables.MAX_ONE_TABLE_COLUMNS` metric columns over several tasks."""
TITLE = "rmbench leaderboard"


@dataclass(frozen=True)
class Headline:
    """The headline tables and what the other parts read of them."""

    tables: tuple[Table, ...]
    """The table (layout ``one``), or one per column group; rows folded."""
    columns: tuple[Column, ...]
    """Every headline column, a column group whose every run failed included (it has no column
    in the tables, only lines)."""
    shown: tuple[Column, ...]
    """The columns the tables show: those of the column groups where a run scored."""
    order: tuple[RunEntry, ...]
    """The runs in the rows' order: best first on the first shown column."""


def _reports(t: TaskResult, metric: str) -> bool:
    return any(m.metric == metric for m in t.metrics)


def extra_metrics(entries: Sequence[RunEntry], metrics: Sequence[str]) -> list[str]:
    """``--metrics``, each once; a name that no run reports for any task is refused, with the
    nearest reported names."""
    wanted = list(dict.fromkeys(m.strip() for m in metrics if m.strip()))
    reported = {m.metric for e in entries for t in e.tasks.values() for m in t.metrics}
    for m in wanted:
        if m not in reported:
            raise ConfigError(f"--metrics: no run reports a metric {m!r}{did_you_mean(m, reported)}")
    return wanted


def headline_columns(groups: Sequence[ColumnGroup], extra: Sequence[str]) -> list[Column]:
    """Per group, its runs' headline metrics, then each of ``extra`` that a run of it reports;
    headed ``GROUP HEADER`` (``ties (limit 10) acc``)."""
    columns: list[Column] = []
    for g in groups:
        shown = list(dict.fromkeys(m for _, t in g.runs for m in t.headline))
        shown += [m for m in extra if m not in shown and any(_reports(t, m) for _, t in g.runs)]
        columns += [column(g, m, f"{g.heading} ") for m in shown]
    return columns


def build_headline(entries: Sequence[RunEntry], groups: Sequence[ColumnGroup], layout: str = "auto",
                   metrics: Sequence[str] = ()) -> Headline:
    """The headline tables of ``entries`` under ``groups``; ``layout``: one of :data:`LAYOUTS`;
    ``metrics``: more columns (:func:`extra_metrics`)."""
    columns = headline_columns(groups, extra_metrics(entries, metrics))
    scored = {g.key for g in groups if g.scored}
    keep = [j for j, c in enumerate(columns) if c.task in scored]  # a group whose every run failed: lines only
    by_label = {e.label: e for e in entries}
    rows = [((e.label,), tuple(cell(e, c) for c in columns)) for e in entries]
    rows = sorted_rows(rows, columns[keep[0]].higher_is_better is not False if keep else True, keep[0] if keep else 0)
    order = tuple(by_label[keys[0]] for keys, _ in rows)
    failed = tuple(FailedRun(e.record.model.name, e.folder, g.key, g.heading, t.error or "(no error)")
                   for g in groups for e in order if (t := e.tasks.get(g.key)) is not None and t.status != "success")
    caption = ci_caption(entries)
    one = Table(TITLE, ("model",), tuple(columns[j] for j in keep),
                tuple((k, tuple(cells[j] for j in keep)) for k, cells in rows
                      if any(cells[j] is not None for j in keep)
                      or all(t.status == "success" for t in by_label[k[0]].tasks.values())), caption, failed)
    per_task = layout == "per-task" or (layout == "auto" and len(groups) > 1 and len(keep) > MAX_ONE_TABLE_COLUMNS)
    full = Table(TITLE, ("model",), tuple(columns), tuple(rows), caption, failed)
    tables = split_by_task(full, {g.key: g.heading for g in groups}) if per_task and columns else (one,)
    sources = row_sources(entries)
    return Headline(tuple(fold_rows(t, sources) for t in tables), tuple(columns), one.columns, order)
