"""A leaderboard's official tables: per column group whose task has an official layout
(:class:`~rmbench.core.metric_registry.OfficialLayout`: RewardBench 2's Factuality ... Ties and
its score, beside D, Spec and ds_auc), the benchmark's own table, one row per run that scored.

A one-number layout has no table of its own (its number is in the headline table), and a layout
that no run fills is not shown (never headers alone).
"""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.core.metric_registry import OfficialLayout
from rmbench.results.publishing.leaderboard_groups import ColumnGroup, cell, ci_caption, column, possessive, sorted_rows
from rmbench.results.publishing.leaderboard_tables import Table


def official_table(group: ColumnGroup, layout: OfficialLayout) -> Table:
    """The official layout of ``group``, a row per run of it that scored, in the group's order of
    runs, sorted on the layout's score (a run whose task failed is a line under the headline table)."""
    task = group.first
    cols = [column(group, layout.metric_of(c), "", c.subset, c.label) for c in layout.columns]
    cols += [column(group, m) for m in layout.beside]
    rows = [((e.label,), tuple(cell(e, c) for c in cols)) for e, t in group.runs if t.status == "success"]
    total = next((i for i, c in enumerate(layout.columns) if c.subset is None and c.metric is None), 0)
    rows = sorted_rows(rows, task.metric_def(layout.metric).higher_is_better, total)
    strict = [e.label for e, t in group.runs if (r := t.judge_replies) is not None and r.fidelity == "strict"]
    reading = (f"; the judge replies of {', '.join(strict)} are read strictly (fidelity=strict), not as the official "
               f"client reads them" if strict else "")
    provenance = f", {layout.provenance}" if layout.provenance else ""
    return Table(f"{layout.title} ({', '.join(filter(None, (task.name, group.qualifier)))}): official layout",
                 ("model",), tuple(cols), tuple(rows),
                 f"{possessive(layout.title)} own scores{provenance}{reading}; "
                 + ci_caption([e for e, _ in group.runs], "95% bootstrap CIs"))


def official_tables(groups: Sequence[ColumnGroup]) -> tuple[tuple[ColumnGroup, Table], ...]:
    """Each group's official table, where its task has a layout of more than one number and a run
    fills a cell of it; rows not folded (the notes read one row per run)."""
    out = []
    for group in groups:
        layout = group.first.official
        if layout is None or len(layout.columns) <= 1:  # a one-number layout is in the main table
            continue
        table = official_table(group, layout)
        if any(any(c is not None for c in cells) for _, cells in table.rows):  # never headers alone
            out.append((group, table))
    return tuple(out)
