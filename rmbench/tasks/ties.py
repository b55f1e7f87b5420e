"""RewardBench 2's Ties subset (``allenai/reward-bench-2``, rows with ``subset == "Ties"``).

Each ``tied:K`` row (several equally correct answers) and ``ref:K`` row (a narrower question
with one correct answer) is a group: correct answers get utility 1, incorrect ones 0. Only the
correct level is an equivalence class: two different wrong answers are not a tie.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE, TIES_LAYOUT, TIES_READING
from rmbench.core.metrics import ties_row_key, ties_score_from_terms, ties_terms
from rmbench.core.types import ComparisonGroup, split_by_group
from rmbench.errors import DataError
from rmbench.tasks.base import ExtraMetric, Task
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import RB2, kinds_reading, looks_like
from rmbench.tasks.sources import iter_rows

RB2_DATASET = "allenai/reward-bench-2"


TIES_SCORE = MetricDef(
    "ties_score", "ties_score", True, False, Counted.GROUPS, "RewardBench 2's official Ties score",
    official=True, reading=TIES_READING)


class TiesTask(Task):
    """RewardBench 2 Ties from a local file in the RB2 schema or from the hub dataset.

    Row schema: ``id`` (``tied:K`` / ``ref:K``), ``prompt``, ``chosen`` (list of correct
    answers), ``rejected`` (list of incorrect answers), optional ``num_correct`` (must equal
    ``len(chosen)``) and ``subset`` (rows of other subsets are skipped).
    """

    description = "RewardBench 2 Ties: several equally correct answers vs. wrong ones"
    headline = DEFAULT_HEADLINE + ("ties_score",)
    official = TIES_LAYOUT
    scores = (TIES_SCORE,)
    row_schemas = (RB2,)

    def __init__(self, path: str | None = None, dataset: str | None = None, revision: str | None = None,
                 split: str = "test") -> None:
        self.source: dict[str, Any] = dict(path=path, dataset=dataset, revision=revision,
                                           split=split)  # iter_rows keywords

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        other: dict[str, int] = {}  # rows of other subsets, by subset
        where = None
        for location, line, row in iter_rows(**self.source):
            where = location
            r = RowReader(row, location, line, RB2)
            subset = r.get("subset", "Ties")
            if subset != "Ties":
                other[str(subset)] = other.get(str(subset), 0) + 1
                continue
            with r.skippable():
                raw = row.get("id") if isinstance(row, dict) else None
                gid = str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else r.string("id")
                try:
                    kind, _ = ties_row_key(gid)
                except ValueError as exc:
                    raise r.error("id", f"{exc}: this is no RewardBench 2 Ties row{_what_it_looks_like(row)}") from None
                if gid in seen:
                    raise r.error("id", f"duplicate row id {gid!r}")
                chosen, rejected = r.strings("chosen"), r.strings("rejected")
                num_correct = r.integer("num_correct", len(chosen))
                if num_correct != len(chosen):
                    raise r.error("num_correct", f"is {num_correct} but 'chosen' has {len(chosen)} answers")
                group = r.group(id=gid, prompt=r.prompt(), responses=chosen + rejected,
                                utilities=[1] * len(chosen) + [0] * len(rejected), subset=kind,
                                equivalence_levels=(1,))
                seen.add(gid)
                yield group
        if not seen and other:
            counts = ", ".join(f"{k} ({n})" for k, n in sorted(other.items(), key=lambda kv: -kv[1])[:5])
            raise DataError(f"none of its {sum(other.values())} rows is a Ties row (subset 'Ties'); its subsets: "
                            f"{counts}. The ties task reads RewardBench 2's Ties rows; the rewardbench2 task reads "
                            f"every subset", path=str(where))

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        # tied:K and ref:K are resampled together: the Ties score pairs them.
        keys = [ties_row_key(g.id)[1] for g in groups]
        unit_of = {k: i for i, k in enumerate(sorted(set(keys)))}
        return np.array([unit_of[k] for k in keys], dtype=np.int64)

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> dict[str, ExtraMetric]:
        rows = []
        for g, r in zip(groups, split_by_group(groups, rewards)):
            u = np.asarray(g.utilities)
            rows.append((g.id, r[u == 1], r[u == 0]))
        terms = ties_terms(rows)  # terms.ids is sorted like bootstrap_units' unit numbers
        return {"ties_score": lambda units: ties_score_from_terms(terms, units)}


def _what_it_looks_like(row: dict) -> str:
    """A hint naming the task kind whose row format ``row`` fits (:func:`rmbench.tasks.schemas.looks_like`)."""
    others = [s for s in (looks_like(row) if isinstance(row, dict) else ()) if s != RB2 and kinds_reading(s)]
    if not others:  # RewardBench 2's own schema (an RM-Bench row fits it too: its other reader is named)
        return " (ids must look like 'tied:K' / 'ref:K')"
    kind = kinds_reading(others[0])[0]
    return f" (it looks like {others[0].name}: read it with --tasks {kind} --data {kind}=FILE)"
