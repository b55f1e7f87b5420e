"""Multimodal RewardBench (Yasunaga, Zettlemoyer and Ghazvininejad, 2025; github
``facebookresearch/multimodal_rewardbench``): 5,000 items, each an image, a prompt about it and two
responses, one marked better; categories general correctness, general preference, knowledge,
reasoning (math, coding), safety (bias, toxicity) and VQA.

Data: no hub copy of the assembled benchmark is published. Its repository ships
``data/all_data_release.json`` with pointers only, and ``scripts/0_download_data.py`` builds
``data/all_data.json`` and ``data/images/...`` from the eleven third-party datasets it draws on.
Pass that folder: ``--data mm_rewardbench=FOLDER``, where FOLDER holds ``all_data.json`` and the
images at ``FOLDER/<Image>`` (as ``1_run_model_as_judge_gpt4o.py`` joins its ``--image-folder``,
default ``data``, with an item's ``Image``), or ``=FILE`` (a JSON list, or JSON Lines, whose
images lie relative to its folder).

An item (a JSON object): ``ID``, ``Text`` (the prompt), ``Image`` (the image's path),
``Output1``, ``Output2`` (the two responses), ``Better`` (``Output1`` or ``Output2``) and its
``Category``: at the top level (``1_run_model_as_judge_gpt4o.py`` passes the whole item as the
answers' ``Meta``, and ``2_get_accuracy.py`` reads ``Meta.Category``), or under ``Meta``.

Each item is one group, in file order: the prompt a user message holding ``Text`` and the image,
the responses ``[Output1, Output2]`` (assistant A and B of the official judge prompt), the better
one's utility 1 and the other's 0. Its subset is the script's category
(:func:`~rmbench.core.mm_rewardbench.category_of`: safety and reasoning split by the ID's prefix),
its meta the data's ``Category``, the official label (``A``/``B``) and ``Image`` as the data
writes it (relative to the folder: the official client guesses the image's MIME type from its
extension). The official score is :mod:`rmbench.core.mm_rewardbench`'s, each item its own
bootstrap unit; the coin that decides an item without a verdict is drawn once, over the run's
items in file order, as the script draws it, and resamples reuse those verdicts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from rmbench.core.images import Image
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE
from rmbench.core.mm_rewardbench import (
    CATEGORIES,
    MMRB_LAYOUT,
    MMRB_METRIC,
    A,
    B,
    category_of,
    resolve,
    scores,
    verdicts_from_rewards,
)
from rmbench.core.prompts import Message
from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import MM_REWARDBENCH
from rmbench.tasks.sources import iter_rows

DATA_FILE = "all_data.json"
NO_SOURCE = ("build its folder with the benchmark's scripts/0_download_data.py (github "
             "facebookresearch/multimodal_rewardbench) and pass --data mm_rewardbench=FOLDER (all_data.json and its "
             "images)")
BETTER = {"Output1": "A", "Output2": "B"}
"""The data's ``Better`` -> the official judge's label (Output1 is assistant A)."""

MMRB_SCORE = MetricDef(
    MMRB_METRIC, "Multimodal RewardBench", True, False, Counted.GROUPS,
    "Multimodal RewardBench's accuracy as its 2_get_accuracy.py computes it: correct / items, an item "
    "without a verdict (a reward tie) decided by the script's random.seed(123) coin in file order; subset "
    "records: each category (safety and reasoning split by ID prefix); the record with no subset is 'all'",
    official=True)


class MMRewardBenchTask(Task):
    """Multimodal RewardBench: an image, a prompt and two responses, one better, per item (module doc)."""

    description = ("Multimodal RewardBench: image + prompt, two responses, one better; official accuracy per "
                   "category and overall")
    headline = (MMRB_METRIC,) + DEFAULT_HEADLINE
    official = MMRB_LAYOUT
    scores = (MMRB_SCORE,)
    row_schemas = (MM_REWARDBENCH,)
    reads_folder = True
    no_source = NO_SOURCE
    counts_unscored = True
    version = 1

    def __init__(self, path: str | None = None) -> None:
        if path is not None and Path(path).expanduser().is_dir():
            path = str(Path(path).expanduser() / DATA_FILE)
        self.path = path

    def groups(self) -> Iterator[ComparisonGroup]:
        if self.path is None:
            raise DataError(f"Multimodal RewardBench has no hub copy: {NO_SOURCE}")
        seen: set[str] = set()
        for location, line, row in iter_rows(path=self.path):
            r = RowReader(row, location, line, MM_REWARDBENCH)
            with r.skippable():
                item = r.string("ID")
                if item in seen:
                    raise r.error("ID", f"duplicate ID {item!r}")
                better = r.string("Better")
                if better not in BETTER:
                    raise r.error("Better", f"item {item!r}: expected 'Output1' or 'Output2', got {better!r}")
                category = self._category(r, item)
                image = self._image(r, item)
                prompt = (Message("user", r.string("Text"), (image,)),)
                group = r.group(id=item, prompt=prompt, responses=(r.string("Output1"), r.string("Output2")),
                                utilities=(1, 0) if better == "Output1" else (0, 1),
                                subset=category_of(category, item),
                                meta={"category": category, "label": BETTER[better], "image": r.string("Image")})
                seen.add(item)
                yield group

    @staticmethod
    def _category(r: RowReader, item: str) -> str:
        """The item's ``Category``: top-level, else under ``Meta``."""
        if r.get("Category", None) is not None:
            return str(r.string("Category"))
        meta = r.mapping("Meta", None)
        value = None if meta is None else meta.get("Category")
        if not isinstance(value, str):
            raise r.schema_error("Category", f"item {item!r}: missing or not a string (a Multimodal RewardBench "
                                             f"item names its Category, at the top level or under Meta)")
        return value

    @staticmethod
    def _image(r: RowReader, item: str) -> Image:
        """The item's image, ``Image`` relative to the data file's folder."""
        value = r.string("Image")
        try:
            return Image.from_ref(value, r.folder())
        except ValueError as exc:
            raise r.error("Image", f"item {item!r}: {exc}") from None

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """The official accuracies (each category present, then ``all``): the verdicts resolved
        once over ``groups`` in order (a reward tie or a NaN reward drawing the script's coin),
        then counted per resample of items."""
        r = np.asarray(rewards, dtype=np.float64).reshape(-1, 2)
        verdicts = resolve(verdicts_from_rewards(r[:, 0], r[:, 1]))
        labels = np.array([A if g.meta_dict["label"] == "A" else B for g in groups], dtype=np.int64)
        correct = verdicts == labels
        present = [g.subset or "" for g in groups]
        names = [c for c in CATEGORIES if c in present] + [c for c in dict.fromkeys(present) if c not in CATEGORIES]
        index = np.array([names.index(c) for c in present], dtype=np.int64)
        n = len(groups)

        def score(units: np.ndarray) -> np.ndarray:
            return scores(correct, index, len(names), np.bincount(units, minlength=n).astype(np.float64))

        counts = tuple(int((index == k).sum()) for k in range(len(names))) + (n,)
        return TaskScores(tuple((MMRB_METRIC, c) for c in names) + ((MMRB_METRIC, None),), score, counts)
