"""A leaderboard's legend: a line per column group saying what its name in the tables stands
for (kind, version, data, score arguments, metric version, eps, task key), and how a verdict
model's ties are counted where its official table is shown beside ``acc``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rmbench.results.publishing.leaderboard_groups import ColumnGroup
from rmbench.results.storage.record import RunRecord, TaskResult, score_args_text


def task_legend(name: str, task: TaskResult, eps: float) -> str:
    """What a column group's name (``ties``, ``ties (limit 10)``) stands for: kind, version, data,
    score arguments, metric version, eps and task key."""
    unit = "σ" if task.eps_unit == "sigma" else " (raw reward units)"
    what = f"{task.kind} task v{task.version}" + (f" {task.name!r}" if not name.startswith(task.name) else "")
    scored_by = f", {score_args_text(task.score_args)}" if task.score_args else ""
    return (f"{name}: {what}, data {task.data_fingerprint[:12]} "
            f"({task.counts.groups} groups){scored_by}, metric version {task.metric_version}, "
            f"D/Spec at eps {eps:g}{unit}; "
            f"task key {task.task_key[:12]}")


def gives_verdicts(record: RunRecord) -> bool:
    """Whether a run's rewards are verdicts: a judge's (``model.verdicts``), or a published file
    read as verdicts (``execution.model.rewards``)."""
    return record.model.verdicts is not None or (
        record.model.kind == "published" and record.execution.model.get("rewards") in ("verdicts", "mixed"))


def _tie_rule(group: ColumnGroup, official_shown: bool) -> str:
    """``; {how the official table and acc each count a cancelled verdict}`` for a group whose
    official table is shown beside ``acc`` for a verdict model and counts a tie otherwise
    (:func:`rmbench.core.judgebench.counts_ties_apart`), else empty."""
    from rmbench.core.judgebench import CANCELLED_VERDICT_RULE, counts_ties_apart

    verdict_runs = [t for e, t in group.runs if t.status == "success" and gives_verdicts(e.record)
                    and counts_ties_apart(t.kind, t.args, t.official)]
    return f"; {CANCELLED_VERDICT_RULE}" if official_shown and verdict_runs else ""


def build_legend(groups: Sequence[ColumnGroup], official: Collection[str]) -> tuple[str, ...]:
    """A line per column group, in order; ``official``: the keys of the groups whose official
    table is shown."""
    return tuple(task_legend(g.heading, g.first, g.eps) + _tie_rule(g, g.key in official) for g in groups)
