"""JudgeBench (Tan et al. 2024, arXiv 2410.12784; ``ScalerLab/JudgeBench``) with its official accuracy.

Data, as published: two response sets, ``gpt`` (350 pairs, responses by GPT-4o,
``gpt-4o-2024-05-13``) and ``claude`` (270 pairs, Claude-3.5-Sonnet,
``claude-3-5-sonnet-20240620``): the splits of the hub dataset ``ScalerLab/JudgeBench``, or the
files ``data/dataset=judgebench,response_model=MODEL.jsonl`` of the GitHub repository
``ScalerLab/JudgeBench`` (:data:`JUDGEBENCH_FILES`: pinned at commit ``e2c52c2`` with their
sha256, so ``RMBENCH_MIRROR`` and the download cache serve them). A row: ``pair_id`` (unique),
``original_id`` (the question's id in its source; a number or null), ``source``
(``mmlu-pro-<category>``, ``livebench-reasoning``, ``livebench-math``, ``livecodebench``),
``question``, ``response_model``, ``response_A``, ``response_B`` and ``label`` (``"A>B"`` or
``"B>A"``: exactly one response is correct).

Each row is one group ``[response_A, response_B]`` with utilities (1, 0) for ``A>B`` and (0, 1)
for ``B>A``, id ``pair_id``, subset = the source's category (``knowledge`` for ``mmlu-pro-*``,
``mmlu-pro-math`` included; ``reasoning``, ``math``, ``coding``:
:func:`rmbench.core.judgebench.judgebench_category`), meta ``pair_id``, ``original_id``,
``source`` and ``response_model``. Both responses stay in the order A, B: JudgeBench's verdict
depends on it (a reward tie is "B>A"). A row whose two responses are the same text is kept
(the ``claude`` set has one, labelled ``B>A``: JudgeBench's rule counts it correct for every
reward model).

The official score (``judgebench_score``) is JudgeBench's ``compute_final_metrics`` for a
reward model (:mod:`rmbench.core.judgebench`): per pair the verdict of ``run_judge.py
--judge_name reward_model --single_game`` (A>B iff r(A) > r(B), else B>A: a tie is B>A), correct
iff it equals the label; accuracy per category and over all pairs. ``single_game: false`` runs
both orders as ``run_judge.py`` does by default: then a tie is an inconsistent pair, wrong
whatever the label. rmbench's own ``pairwise_accuracy`` beside it counts a tie 1/2.

Arguments: ``split`` (``gpt`` | ``claude``: the response set, default ``gpt``), ``source``
(``hub``: the hub dataset ``dataset`` at ``revision``, the default; ``github``: the pinned file of
the split, ``paths[split]``, downloaded once and verified), ``path`` (a local JudgeBench-format
file or ``URL#sha256=HEX``: what ``--data judgebench=FILE`` sets; it replaces both sources, and a
row whose ``response_model`` is the other set's model is refused, so that the recorded ``split``
says what was read), ``single_game``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rmbench.core.judgebench import (
    JUDGEBENCH_CATEGORIES,
    JUDGEBENCH_LAYOUT,
    LABELS,
    judgebench_category,
    judgebench_correct,
    reward_model_verdicts,
)
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE
from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.grouped import grouped
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import JUDGEBENCH
from rmbench.tasks.sources import iter_rows

JUDGEBENCH_DATASET = "ScalerLab/JudgeBench"
JUDGEBENCH_COMMIT = "e2c52c284e735e139b3daa61c206ee208f36c461"
RESPONSE_MODELS = {"gpt": "gpt-4o-2024-05-13", "claude": "claude-3-5-sonnet-20240620"}
"""Each response set (the hub's split names) and the model that wrote its responses."""
_RAW = f"https://raw.githubusercontent.com/ScalerLab/JudgeBench/{JUDGEBENCH_COMMIT}/data/dataset=judgebench,response_model="
JUDGEBENCH_FILES = {
    "gpt": f"{_RAW}gpt-4o-2024-05-13.jsonl#sha256=d5106306b38dead1b2e964ecf5534a3e7b2fc4b8d3b8da327599edfcebd76042",
    "claude": f"{_RAW}claude-3-5-sonnet-20240620.jsonl"
              "#sha256=3b70504588e400613bf5744a20a345da8701b7150be9a30c9db0e6f3d7b70a62",
}
"""The GitHub repository's two data files at commit e2c52c2, by URL and sha256 (350 and 270 rows)."""
SOURCES = ("hub", "github")


JUDGEBENCH_SCORE = MetricDef(
    "judgebench_score", "JudgeBench", True, False, Counted.GROUPS,
    "JudgeBench's official accuracy (its utils/metrics.py compute_final_metrics, one game as run_judge.py "
    "--single_game with a reward_model judge): a pair is correct iff its verdict (A>B iff r(A) > r(B), "
    "else B>A: a tie is B>A) equals the label; subset records: the categories knowledge (mmlu-pro-*), "
    "reasoning, math, coding; the total = over all pairs. With the task's single_game: false both orders are "
    "played, as run_judge.py by default, and a tie is inconsistent, so wrong", official=True)


class JudgeBenchTask(Task):
    """JudgeBench pairs (``pair_id``, ``source``, ``question``, ``response_A``, ``response_B``,
    ``label``) with JudgeBench's official accuracy per category (module doc)."""

    description = "JudgeBench: GPT-4o or Claude-3.5-Sonnet response pairs, one correct; official accuracy per category"
    headline = (JUDGEBENCH_LAYOUT.metric,) + DEFAULT_HEADLINE
    official = JUDGEBENCH_LAYOUT
    scores = (JUDGEBENCH_SCORE,)
    row_schemas = (JUDGEBENCH,)
    version = 1
    verdict_args = {"single_game": False}  # a pairwise judge's reward gap is its two games' combined verdict

    def __init__(self, split: str = "gpt", source: str = "hub", path: str | None = None,
                 dataset: str | None = JUDGEBENCH_DATASET, revision: str | None = None,
                 paths: Mapping[str, str] | None = None, single_game: bool = True) -> None:
        if split not in RESPONSE_MODELS:
            raise ValueError(f"split {split!r}: JudgeBench's response sets are {' and '.join(RESPONSE_MODELS)}")
        if source not in SOURCES:
            raise ValueError(f"source {source!r}: use hub (the dataset {JUDGEBENCH_DATASET}) or github (its "
                             f"repository's pinned files, which RMBENCH_MIRROR can serve)")
        if not isinstance(single_game, bool):
            raise ValueError(f"single_game must be true or false, got {single_game!r}")
        self.split, self.single_game = split, single_game
        files = dict(JUDGEBENCH_FILES if paths is None else paths)
        self.source: dict[str, Any]  # iter_rows's keywords
        if path is not None:
            self.source = dict(path=path)
        elif source == "github":
            if split not in files:
                raise ValueError(f"paths gives no file for the split {split!r} (it gives {', '.join(files) or 'none'})")
            self.source = dict(path=files[split])
        else:
            if dataset is None:
                raise ValueError("source hub needs a dataset (the hub id, ScalerLab/JudgeBench)")
            self.source = dict(dataset=dataset, revision=revision, split=split)

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        other = {model: name for name, model in RESPONSE_MODELS.items() if name != self.split}
        for location, line, row in self._rows():
            r = RowReader(row, location, line, JUDGEBENCH)
            with r.skippable():
                pair_id = r.string("pair_id")
                source = r.string("source")
                category = judgebench_category(source)
                if category is None:
                    raise r.error("source", f"is {source!r}, which starts with none of JudgeBench's sources "
                                            f"(mmlu-pro-*, livebench-reasoning, livebench-math, livecodebench)")
                label = r.string("label")
                if label not in LABELS:
                    raise r.error("label", f"is {label!r}; a JudgeBench label is A>B or B>A")
                model = r.string("response_model", None)
                if model in other:
                    raise r.error("response_model", f"is {model}, whose responses are JudgeBench's {other[model]} "
                                                    f"set, but the task reads split {self.split}; pass "
                                                    f"--task-arg split={other[model]}")
                original_id = r.get("original_id", None)
                if original_id is not None and (isinstance(original_id, bool)
                                                or not isinstance(original_id, (str, int))):
                    raise r.error("original_id", f"expected a number, a string or null, got {original_id!r}"[:120])
                if pair_id in seen:
                    raise r.error("pair_id", f"duplicate pair_id {pair_id!r}")
                group = r.group(id=pair_id, prompt=r.prompt("question"),
                                responses=(r.string("response_A"), r.string("response_B")),
                                utilities=(1, 0) if label == "A>B" else (0, 1), subset=category,
                                meta={"pair_id": pair_id, "original_id": original_id, "source": source,
                                      "response_model": model})
                seen.add(pair_id)
                yield group

    def _rows(self) -> Iterator[tuple[str, int, dict]]:
        """The rows of the source; a hub dataset that cannot be had says how to read the
        repository's pinned files instead."""
        try:
            yield from iter_rows(**self.source)
        except DataError as exc:
            if self.source.get("dataset") is None or exc.line is not None:
                raise
            raise DataError(f"{exc}, or read the GitHub repository's pinned files with --task-arg source=github "
                            f"(RMBENCH_MIRROR=PREFIX serves them to an offline machine)") from None

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``judgebench_score``: overall (subset None, pooled over the pairs) and per category
        present, from one resample of pairs (:func:`rmbench.tasks.grouped.grouped`, the formula of
        :func:`rmbench.core.judgebench.judgebench_accuracies`)."""
        r = np.asarray(rewards, dtype=np.float64).reshape(-1, 2)  # every group: response A, then B
        verdicts = reward_model_verdicts(r[:, 0], r[:, 1], single_game=self.single_game)
        labels = [1 if g.utilities[0] > g.utilities[1] else -1 for g in groups]  # A>B: +1
        correct = judgebench_correct(verdicts, labels)
        return grouped(JUDGEBENCH_LAYOUT.metric, correct, [g.subset for g in groups], order=JUDGEBENCH_CATEGORIES)
