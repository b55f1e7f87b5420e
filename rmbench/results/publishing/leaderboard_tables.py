"""A leaderboard's tables (:class:`Column`, :class:`Table`), and how they stay readable over many
runs: one table per task, identical rows folded.

A runs folder of a few models on several tasks makes one table of every task's metrics side by
side: dozens of columns, most cells empty (a run has only its own tasks), and a row per rerun of
one model even when the numbers are the same. :func:`split_by_task` makes one table per task
column group (``ties``, ``ties#2``, titled by what differs: ``ties (limit 10)``) with only the
rows that ran it and only the columns some row fills; :func:`fold_rows` merges rows of one model
identity whose cells are all equal into one row that counts them and names their folders.

A run whose task failed is no row of empty cells: it is a :class:`FailedRun`, one line under its
task's table (:meth:`Table.failed_lines`); a table whose every run failed is those lines alone.

:func:`sections`: the tables of a leaderboard in the one order every format renders them, with
the one caption rule.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from rmbench.results.storage.record import Estimate


@dataclass(frozen=True)
class Column:
    """A leaderboard column: records of ``metric`` on ``task`` (at ``eps``; of ``subset``);
    ``higher_is_better``: the metric's direction, as the run recorded its declaration (None: the
    registry's, :func:`rmbench.core.metric_registry.metric_def`)."""

    task: str
    """The task's column group (``ties``; ``ties#2`` for a second task key of that name)."""
    metric: str
    header: str
    """The column's heading, as the table shows it."""
    eps: float | None = None
    eps_unit: str | None = None
    """How eps is measured (``sigma`` or ``raw``); None: the metric does not depend on eps."""
    subset: str | None = None
    higher_is_better: bool | None = None


@dataclass(frozen=True)
class FailedRun:
    """A run whose task failed (its status is not ``success``): a line under the task's table."""

    model: str
    folder: str | None
    """The run folder's name (None for a record)."""
    task: str
    """The task's column group (:attr:`Column.task`: ``ties``, ``ties#2``)."""
    task_name: str
    """What the column group is called in headings (``ties (limit 10)``)."""
    error: str

    def line(self, with_task: bool = False) -> str:
        """``MODEL (run folder F): failed: ERROR``; ``with_task``: ``... on TASK: failed: ...``."""
        who = self.model + (f" (run folder {self.folder})" if self.folder else "")
        return f"{who}{f' on {self.task_name}' if with_task else ''}: failed: {' '.join(self.error.split())}"


@dataclass(frozen=True)
class Table:
    """Rows of cells under ``columns``; ``keys`` name each row (model, or model/task/shift);
    ``failed``: the runs of its tasks that failed, each a line under it (never a row)."""

    title: str
    """The table's title (shown as a heading unless it is the lone headline table)."""
    key_headers: tuple[str, ...]
    """The headings of the key cells that name each row (``model``; ``model``, ``task``, ``shift``)."""
    columns: tuple[Column, ...]
    rows: tuple[tuple[tuple[str, ...], tuple[Estimate | None, ...]], ...]
    """(keys, one estimate per column: None where the run has no such record) for each row."""
    caption: str = ""
    """What the cells are (the CIs, the eps unit); "" where nothing needs saying."""
    failed: tuple[FailedRun, ...] = ()

    def failed_lines(self) -> list[str]:
        """A line per failed run, naming its task where the table holds several."""
        tasks = {c.task for c in self.columns} | {f.task for f in self.failed}
        return [f.line(with_task=len(tasks) > 1) for f in self.failed]


MAX_ONE_TABLE_COLUMNS = 10
"""``auto`` layout: more metric columns than this (over more than one task) make one table per task."""
FOLDERS_SHOWN = 3
"""A folded row names this many folders, then how many more."""


@dataclass(frozen=True)
class RowSource:
    """Where a row of a table comes from: the model's display name, what makes its numbers what
    they are (model identity: kind and arguments), and the run folder's name (None for a record)."""

    model: str
    identity: Hashable
    folder: str | None


def defined_cell(cell: Estimate | None) -> bool:
    """Whether a table cell holds a defined estimate."""
    return cell is not None and cell.defined


def split_by_task(table: Table, names: Mapping[str, str] | None = None) -> tuple[Table, ...]:
    """One table per task of ``table`` (in column order): its columns, headers without the task
    prefix, the rows with a cell in them, no column that is empty in every row, and the runs of
    the task that failed. ``names``: a column group's title (and header prefix) by its key,
    ``ties#2`` -> ``ties (limit 10)``; a key not in it is its own title."""
    names = names or {}
    tasks = list(dict.fromkeys([c.task for c in table.columns] + [f.task for f in table.failed]))
    out = []
    for task in tasks:
        title = names.get(task, task)
        index = [j for j, c in enumerate(table.columns) if c.task == task]
        rows = [(keys, tuple(cells[j] for j in index)) for keys, cells in table.rows
                if any(cells[j] is not None for j in index)]
        filled = [k for k in range(len(index)) if any(defined_cell(cells[k]) for _, cells in rows)]
        columns = tuple(_unprefixed(table.columns[index[k]], title) for k in filled)
        rows = [(keys, tuple(cells[k] for k in filled)) for keys, cells in rows]
        out.append(Table(title, table.key_headers, columns if rows else (), tuple(rows), table.caption,
                         tuple(f for f in table.failed if f.task == task)))
    return tuple(out)


def without_empty_columns(table: Table) -> Table:
    """``table`` without the columns that no row fills (a notes line says why they are empty)."""
    keep = [j for j in range(len(table.columns)) if any(defined_cell(c[j]) for _, c in table.rows)]
    return replace(table, columns=tuple(table.columns[j] for j in keep),
                   rows=tuple((keys, tuple(cells[j] for j in keep)) for keys, cells in table.rows))


def _unprefixed(col: Column, title: str) -> Column:
    return replace(col, header=col.header.removeprefix(f"{title} "))


def fold_rows(table: Table, sources: Mapping[str, RowSource]) -> Table:
    """``table`` with the rows of one model identity whose other keys and cells are all equal
    merged into the first of them, labelled ``MODEL (N runs: folder, folder, ...)``."""
    groups: dict[tuple, list[str]] = {}
    first: dict[tuple, tuple] = {}
    for keys, cells in table.rows:
        source = sources[keys[0]]
        fold = (source.model, source.identity, keys[1:], tuple(_same(c) for c in cells))
        groups.setdefault(fold, []).append(keys[0])
        first.setdefault(fold, (keys, cells))
    rows = []
    for fold, labels in groups.items():
        keys, cells = first[fold]
        if len(labels) > 1:
            keys = (folded_label(fold[0], [sources[label].folder or label for label in labels]),) + keys[1:]
        rows.append((keys, cells))
    return replace(table, rows=tuple(rows))


def _same(cell: Estimate | None) -> tuple | None:
    """What two cells share when they are the same number (nan is not equal to itself)."""
    return None if cell is None else (cell.value if cell.defined else None, cell.ci_low, cell.ci_high)


def folded_label(model: str, folders: list[str]) -> str:
    """``length (3 runs: a, b, c)``; past :data:`FOLDERS_SHOWN` folders, ``... and N more``."""
    shown = ", ".join(folders[:FOLDERS_SHOWN])
    more = f" and {len(folders) - FOLDERS_SHOWN} more" if len(folders) > FOLDERS_SHOWN else ""
    return f"{model} ({len(folders)} runs: {shown}{more})"


class _Tables(Protocol):
    """What :func:`sections` reads of a :class:`~rmbench.results.publishing.leaderboard.Leaderboard`."""

    @property
    def main(self) -> Table: ...
    @property
    def more(self) -> tuple[Table, ...]: ...
    @property
    def headline(self) -> tuple[Table, ...]: ...
    @property
    def tables(self) -> tuple[Table, ...]: ...


@dataclass(frozen=True)
class Section:
    """One table of a leaderboard as every format shows it."""

    table: Table
    """The table shown."""
    heading: bool
    """Show the table's title: every table but a lone headline table (the document's own)."""
    caption: str
    """What the table's cells are; "" where that was said already (see :func:`sections`)."""
    notes_after: bool
    """The legend (what each task name is) and the notes come right after this table: the last
    headline table, before the official layouts and the shifts table."""


def sections(lb: _Tables, said: str = "") -> tuple[Section, ...]:
    """The tables of ``lb`` in the one order (headline tables, official layouts, original vs
    shifted). The caption rule: a table's caption is shown once, under the first table with rows,
    then only where it says something else than the first's; a table of failed runs alone (no
    cells) has none; ``said``: a caption the document has already given (a page's introduction),
    which no table then repeats."""
    out = []
    main_said = False
    for i, table in enumerate(lb.tables):
        shown = (bool(table.rows) and bool(table.caption) and table.caption != said
                 and not (main_said and table.caption == lb.main.caption))
        main_said = main_said or (shown and table.caption == lb.main.caption)
        out.append(Section(table, heading=i > 0 or bool(lb.more), caption=table.caption if shown else "",
                           notes_after=i == len(lb.headline) - 1))
    return tuple(out)
