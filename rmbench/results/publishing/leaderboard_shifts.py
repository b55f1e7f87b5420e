"""A leaderboard's original-vs-shifted table: per column group whose task measured shifts
(``paired_shift``, ``domain_shift``...), a row per run and shift slice with accuracy, D, Spec,
the reward margin and the paired accuracy gap, and a caption saying how the slices pair.
"""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.results.publishing.leaderboard_groups import ColumnGroup, RunEntry, cell, ci_caption, column
from rmbench.results.publishing.leaderboard_tables import Column, Table, defined_cell
from rmbench.results.storage.record import TaskResult

SHIFT_METRICS = ("pairwise_accuracy", "discrimination", "specificity", "reward_margin", "pairwise_accuracy_shift_gap")
DOMAIN_SHIFT_CAPTION = (
    "a domain shift's slices are separate data beside its in-domain set, not paired copies, and its D@eps uses one "
    "sigma pooled over every domain (the same reward difference in every slice), so a domain whose rewards spread "
    "less than the others' shows a lower D at the same eps: compare accuracy across domains, D within one")


def shift_label(task: TaskResult, shift: str) -> str:
    """A shift slice's name in a table: a domain shift's originals are its in-domain set."""
    if shift == "none" and task.kind == "domain_shift":
        return f"in-domain ({task.args.get('in_domain', 'chat')})"
    return shift


def shift_table(groups: Sequence[ColumnGroup], order: Sequence[RunEntry]) -> Table | None:
    """Original against shifted, per group whose task measured shifts and per run of it (in the
    groups' order of runs); None where no run measured a shift. ``order``: the leaderboard's rows,
    whose captions it shares (no CI for runs made with ``--bootstrap 0``)."""
    rows = []
    columns: tuple[Column, ...] = ()
    shifted = [g for g in groups if g.first.shifts]
    for group in shifted:
        cols = tuple(column(group, m) for m in SHIFT_METRICS)
        columns = columns or tuple(Column("", c.metric, c.header.replace(
            "acc gap", "acc gap (shifted - original)"), c.eps, c.eps_unit) for c in cols)
        for e, t in group.runs:
            for shift in t.shifts:
                rows.append(((e.label, group.heading, shift_label(t, shift)), tuple(cell(e, c, shift) for c in cols)))
    if not rows:
        return None
    having = [e for e in order if e.tasks]
    gap = [j for j, c in enumerate(columns) if c.metric.endswith("_shift_gap")]
    paired = any(defined_cell(cells[j]) for _, cells in rows for j in gap)
    kinds = {g.first.kind for g in shifted}
    parts = []
    if kinds - {"domain_shift"}:
        parts.append("shift 'none' = the originals" + ("; the gap pairs each shifted group with its original"
                                                       if paired else ""))
    if "domain_shift" in kinds:
        parts.append(DOMAIN_SHIFT_CAPTION)
    parts.append(ci_caption(having, "paired bootstrap 95% CI") if paired else ci_caption(having))
    return Table("Original vs shifted", ("model", "task", "shift"), columns, tuple(rows), "; ".join(parts))
