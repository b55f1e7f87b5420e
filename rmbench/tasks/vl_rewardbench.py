"""VL-RewardBench (Li et al., CVPR 2025; github ``vl-rewardbench/VL_RewardBench``): a vision-language
reward benchmark of 1,250 items, each an image, a question about it and two responses ranked by
humans.

Data: ``--data vl_rewardbench=FOLDER`` where FOLDER holds ``data.jsonl`` and the images at
``FOLDER/<image_path>`` (as the official client joins them), or ``=FILE`` (a ``data.jsonl`` whose
images lie relative to its folder); or the hub's ``MMInstruction/VL-RewardBench`` (split ``test``,
parquet with the image's bytes in its ``image`` column). A row: ``id``, ``query``, ``response``
(two texts), ``human_ranking`` (each response's rank, 0 the best), ``image_path`` (or ``image``),
and optionally ``query_source``, ``models``, ``meta``.

Each row is one group: the prompt a user message holding the query and the image, the two
responses with utilities from the ranking (the better-ranked response 1, the other 0; an equal
ranking a tie, a specificity pair, which VL-RewardBench's own scoring cannot read and so leaves
out of the official score). The subset is the row's dataset (:func:`~rmbench.core.vl_rewardbench.
dataset_of_id`), the official score's groups general / hallucination / reasoning as
:mod:`rmbench.core.vl_rewardbench` describes, each item its own bootstrap unit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.images import Image
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE
from rmbench.core.prompts import Message
from rmbench.core.types import ComparisonGroup
from rmbench.core.vl_rewardbench import GROUP_OF, GROUPS, VLRB_LAYOUT, VLRB_METRIC, classify_rewards, dataset_of_id
from rmbench.core.vl_rewardbench import scores as official_scores
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import VL_REWARDBENCH
from rmbench.tasks.sources import iter_rows

VLRB_DATASET = "MMInstruction/VL-RewardBench"
DATA_FILE = "data.jsonl"

VLRB_SCORE = MetricDef(
    VLRB_METRIC, "VL-RewardBench", True, False, Counted.GROUPS,
    "VL-RewardBench's accuracy as its cal.py computes it: agree / (agree + reject) over items, a "
    "reward tie no verdict (left out); subset records: general, hallucination, reasoning, and "
    "macro (their plain mean); the record with no subset is the Overall Accuracy", official=True)


class VLRewardBenchTask(Task):
    """VL-RewardBench: an image, a question and two human-ranked responses per item (module doc)."""

    description = "VL-RewardBench: image + question, two human-ranked responses; official accuracy per group"
    headline = (VLRB_METRIC,) + DEFAULT_HEADLINE
    official = VLRB_LAYOUT
    scores = (VLRB_SCORE,)
    row_schemas = (VL_REWARDBENCH,)
    reads_folder = True
    version = 1

    def __init__(self, path: str | None = None, dataset: str | None = VLRB_DATASET, revision: str | None = None,
                 split: str = "test") -> None:
        if path is None and dataset is None:
            raise ValueError(f"give a local folder or file (path) or a hub dataset ({VLRB_DATASET})")
        if path is not None and Path(path).expanduser().is_dir():
            path = str(Path(path).expanduser() / DATA_FILE)
        self.source: dict[str, Any] = (dict(path=path) if path is not None
                                       else dict(dataset=dataset, revision=revision, split=split))

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line, VL_REWARDBENCH)
            with r.skippable():
                item = r.string("id")
                if item in seen:
                    raise r.error("id", f"duplicate id {item!r}")
                responses = r.strings("response")
                if len(responses) != 2:
                    raise r.error("response", f"has {len(responses)} responses; a VL-RewardBench item has 2")
                ranking = r.integers("human_ranking")
                if len(ranking) != 2:
                    raise r.error("human_ranking", f"has {len(ranking)} ranks for 2 responses")
                image = self._image(r)
                prompt = (Message("user", r.string("query"), (image,)),)
                worst = max(ranking)
                dataset = dataset_of_id(item)
                group = r.group(id=item, prompt=prompt, responses=tuple(responses),
                                utilities=tuple(worst - k for k in ranking), subset=dataset,
                                meta={"dataset": dataset, "group": GROUP_OF[dataset],
                                      "query_source": r.string("query_source", None),
                                      "human_ranking": list(ranking)})
                seen.add(item)
                yield group

    @staticmethod
    def _image(r: RowReader) -> Image:
        """The row's image: ``image_path`` (relative to the data file's folder) or the hub's
        ``image`` column (its bytes)."""
        field = "image_path" if r.get("image_path", None) is not None else "image"
        value = r.get(field, None)
        if value is None:
            raise r.schema_error("image_path", "missing: a VL-RewardBench row names its image (image_path or image)")
        try:
            return Image.from_ref(value, r.folder())
        except ValueError as exc:
            raise r.error(field, str(exc)) from None

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """The official accuracies (general, hallucination, reasoning, overall, macro) from one
        resample of items; an item whose humans ranked its responses equal is left out."""
        r = np.asarray(rewards, dtype=np.float64).reshape(-1, 2)
        u = np.array([g.utilities for g in groups], dtype=np.int64).reshape(-1, 2)
        ranked = u[:, 0] != u[:, 1]
        first_better = u[:, 0] > u[:, 1]
        preferred = np.where(first_better, r[:, 0], r[:, 1])
        other = np.where(first_better, r[:, 1], r[:, 0])
        classes = classify_rewards(preferred, other)
        group = np.array([GROUPS.index(g.meta_dict["group"]) for g in groups], dtype=np.int64)
        n = len(groups)

        def score(units: np.ndarray) -> np.ndarray:
            w = np.bincount(units, minlength=n).astype(np.float64) * ranked
            return official_scores(classes, group, w)

        labels = tuple((VLRB_METRIC, key) for key in (*GROUPS, None, "macro"))
        decided = ranked & (classes != 0)
        counts = tuple(int((decided & (group == k)).sum()) for k in range(len(GROUPS))) + (int(decided.sum()),) * 2
        return TaskScores(labels, score, counts)
