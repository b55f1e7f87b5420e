"""RewardBench 2's Ties subset (``allenai/reward-bench-2``, rows with ``subset == "Ties"``).

Each ``tied:K`` row (several equally correct answers) and ``ref:K`` row (a narrower question
with one correct answer) is a group: correct answers get utility 1, incorrect ones 0. Only the
correct level is an equivalence class: two different wrong answers are not a tie.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from rmbench.core.metric_registry import DEFAULT_HEADLINE, TIES_LAYOUT
from rmbench.core.metrics import ties_row_key, ties_score_from_terms, ties_terms
from rmbench.core.types import ComparisonGroup
from rmbench.tasks.base import ExtraMetric, Task
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import RB2
from rmbench.tasks.sources import iter_rows

RB2_DATASET = "allenai/reward-bench-2"


class TiesTask(Task):
    """RewardBench 2 Ties from a local file in the RB2 schema or from the hub dataset.

    Row schema: ``id`` (``tied:K`` / ``ref:K``), ``prompt``, ``chosen`` (list of correct
    answers), ``rejected`` (list of incorrect answers), optional ``num_correct`` (must equal
    ``len(chosen)``) and ``subset`` (rows of other subsets are skipped).
    """

    description = "RewardBench 2 Ties: several equally correct answers vs. wrong ones"
    headline = DEFAULT_HEADLINE + ("ties_score",)
    official = TIES_LAYOUT

    def __init__(self, path: str | None = None, dataset: str | None = None, revision: str | None = None,
                 split: str = "test") -> None:
        self.source = dict(path=path, dataset=dataset, revision=revision, split=split)

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line, RB2)
            if r.get("subset", "Ties") != "Ties":
                continue
            with r.skippable():
                gid = r.string("id")
                try:
                    kind, _ = ties_row_key(gid)
                except ValueError as exc:
                    raise r.error("id", str(exc)) from None
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

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        # tied:K and ref:K are resampled together: the Ties score pairs them.
        keys = [ties_row_key(g.id)[1] for g in groups]
        unit_of = {k: i for i, k in enumerate(sorted(set(keys)))}
        return np.array([unit_of[k] for k in keys], dtype=np.int64)

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> dict[str, ExtraMetric]:
        rows, offset = [], 0
        for g in groups:
            r = rewards[offset: offset + len(g.responses)]
            u = np.asarray(g.utilities)
            rows.append((g.id, r[u == 1], r[u == 0]))
            offset += len(g.responses)
        terms = ties_terms(rows)  # terms.ids is sorted like bootstrap_units' unit numbers
        return {"ties_score": lambda units: ties_score_from_terms(terms, units)}
