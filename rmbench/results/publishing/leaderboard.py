"""Leaderboards: run records -> tables (rows = runs, columns = declared metrics) -> every format of
:mod:`rmbench.results.publishing.formats`.

A leaderboard has a main table (per task, the metrics the task declares as its headline), one
table per official layout (RewardBench 2: Factuality ... Ties and the score, beside D, Spec and
ds_auc), and an original-vs-shifted table for shift tasks. Every number carries its 95% CI.

Comparability is per cell: a cell is (task key, metric, eps), where the task key covers task
version, data fingerprint, metric version and eps unit but not the eps list. Runs with
different eps lists share the D/Spec columns at an eps they all have (a note names a run that
lacks it); runs whose task keys differ cannot share the task's cells: each key's columns are
shown apart (column group ``TASK#2`` inside), headed by what differs in the runs' settings,
``TASK (limit 10)``, ``TASK (data: mine.jsonl)`` (:mod:`~rmbench.results.publishing.leaderboard_variants`),
and a note names what differs in the task keys, with both values.

A run whose task failed is no row of empty cells: it is one line under its task's table
(``MODEL (run folder F): failed: ERROR``), and a table whose every run failed is those lines
alone. A column empty in every row has a note with the true reason
(:func:`~rmbench.results.publishing.leaderboard_notes.undefined_notes`).

Built from small parts, each its own module: the rows and column groups
(:mod:`~rmbench.results.publishing.leaderboard_groups`), the headline tables
(:mod:`~rmbench.results.publishing.leaderboard_headline`), the official tables
(:mod:`~rmbench.results.publishing.leaderboard_official`), the shifts table
(:mod:`~rmbench.results.publishing.leaderboard_shifts`), the notes
(:mod:`~rmbench.results.publishing.leaderboard_notes`) and the legend
(:mod:`~rmbench.results.publishing.leaderboard_legend`); :func:`build_leaderboard` puts them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rmbench.errors import ConfigError
from rmbench.results.publishing.leaderboard_groups import (
    CAPTION,
    RunLike,
    column_groups,
    model_label,
    possessive,
    row_sources,
)
from rmbench.results.publishing.leaderboard_headline import LAYOUTS, build_headline
from rmbench.results.publishing.leaderboard_legend import build_legend
from rmbench.results.publishing.leaderboard_notes import build_notes, run_notes
from rmbench.results.publishing.leaderboard_official import official_tables
from rmbench.results.publishing.leaderboard_shifts import shift_table
from rmbench.results.publishing.leaderboard_tables import (
    Column,
    Section,
    Table,
    fold_rows,
    sections,
    without_empty_columns,
)

__all__ = ["CAPTION", "LAYOUTS", "Column", "Leaderboard", "RunLike", "Section", "Table", "build_leaderboard",
           "model_label", "possessive", "run_notes"]


@dataclass(frozen=True, kw_only=True)
class Leaderboard:
    """A built leaderboard, ready for a format to render: its tables in order
    (:meth:`sections`), each a :class:`~rmbench.results.publishing.leaderboard_tables.Table`, and
    what the runs have in common. Built by keyword: ``Leaderboard(main=table, notes=(...))``."""

    main: Table
    """The single table, or (per-task layout) the first task's table."""
    official: tuple[Table, ...] = ()
    """The benchmarks' official tables (:class:`~rmbench.core.metric_registry.OfficialLayout`), one per
    task that has one."""
    shifts: Table | None = None
    """Original against shifted, per task and shift; None: no run measured a shift."""
    eps: dict[str, tuple[float, str]] = field(default_factory=dict)
    """task -> (eps, unit) of its D/Spec columns."""
    keys: dict[str, str] = field(default_factory=dict)
    """task -> task key (comparability without the eps list)."""
    notes: tuple[str, ...] = ()
    """Lines under the headline tables: what differs between the runs, what a number does not mean."""
    more: tuple[Table, ...] = ()
    """Per-task layout: the other tasks' tables, after ``main``."""
    legend: tuple[str, ...] = ()
    """What each task (column group) of the tables is: kind, version, data, metric version, key."""
    names: dict[str, str] = field(default_factory=dict)
    """task (column group, as in ``eps`` and ``keys``) -> its name in headings: ``ties#2`` ->
    ``ties (limit 10)``; the task's name where its runs share one task key."""

    @property
    def headline(self) -> tuple[Table, ...]:
        """The tables of the tasks' headline metrics: ``main``, then ``more``."""
        return (self.main,) + self.more

    @property
    def tables(self) -> tuple[Table, ...]:
        """Every table: the headline ones, the official ones, then the shifts table."""
        return self.headline + self.official + ((self.shifts,) if self.shifts is not None else ())

    def sections(self, said: str = "") -> tuple[Section, ...]:
        """The tables in the order every format renders them, with the one caption rule (:func:`sections`)."""
        return sections(self, said)


def build_leaderboard(runs: Sequence[RunLike], eps: float | None = None, layout: str = "auto",
                      metrics: Sequence[str] = ()) -> Leaderboard:
    """One leaderboard over ``runs`` (records, or folders read by :func:`rmbench.results.storage.folder.load_run`);
    ``layout``: one of :data:`~rmbench.results.publishing.leaderboard_headline.LAYOUTS`. Rows of one
    model identity with the same numbers are folded; a run whose task failed is a line under the
    task's table, never a row of empty cells. ``metrics`` (``--metrics``): more columns, each
    task's after its headline's, where a run reports the metric for the task; a name no run
    reports is an error. Labels, directions and eps dependence come from the runs' records of the
    metrics' declarations."""
    if not runs:
        raise ConfigError("no runs given")
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown leaderboard layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    entries, groups = column_groups(runs, eps)
    headline = build_headline(entries, groups, layout, metrics)
    in_rows = [g.in_order(headline.order) for g in groups]
    official = official_tables(in_rows)
    shifts = shift_table(in_rows, headline.order)
    sources = row_sources(entries)
    return Leaderboard(
        main=headline.tables[0], more=headline.tables[1:],
        official=tuple(fold_rows(table, sources) for _, table in official),
        shifts=None if shifts is None else fold_rows(without_empty_columns(shifts), sources),
        eps={g.key: (g.eps, g.eps_unit) for g in groups}, keys={g.key: g.first.task_key for g in groups},
        names={g.key: g.heading for g in groups}, notes=build_notes(groups, headline, official),
        legend=build_legend(groups, {g.key for g, _ in official}))
