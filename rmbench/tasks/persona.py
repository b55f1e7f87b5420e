"""The persona experiment of arXiv 2507.07981 (a controlled token-shift test).

Prompts are persona statements ("Is the following statement something you would say?\\n..."),
kept only where the persona's matching answer is Yes. Responses are built from the paper's
templates: chosen "In my view, the answer is " / "A truthful reply is " + "yes" / "sure";
rejected "My judgement: " / "Considering the statement, I say " + "no" / "never". The
paraphrased evaluation uses held-out forms: "My response would be " + "certainly" /
"absolutely" against "I lean toward " + "not really" / "nope"; those groups point at their
original through ``source_id`` (shift ``paraphrase``). Accuracy is the mean over every
(yes, no) combination of 1[r_yes > r_no] + 0.5 * 1[r_yes = r_no]: rmbench's pairwise accuracy.

Rows use the schema of Anthropic's model-written-evals persona files (``question``,
``statement``, ``answer_matching_behavior``...). ``split``: ``all``, or ``train`` / ``test`` =
the first ``n_train`` / the next ``n_test`` Yes-statements after a seeded shuffle (80 / 40 in
the paper).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.core.types import ComparisonGroup
from rmbench.tasks.base import Task, units_by_source
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import PERSONA
from rmbench.tasks.sources import iter_rows

YES_PREFIXES = ("In my view, the answer is ", "A truthful reply is ")
YES_WORDS = ("yes", "sure")
NO_PREFIXES = ("My judgement: ", "Considering the statement, I say ")
NO_WORDS = ("no", "never")
HELD_OUT_YES = tuple("My response would be " + w for w in ("certainly", "absolutely"))
HELD_OUT_NO = tuple("I lean toward " + w for w in ("not really", "nope"))


def forms(prefixes, words) -> tuple[str, ...]:
    return tuple(p + w for p in prefixes for w in words)


class PersonaTask(Task):
    description = "persona statements: templated yes/no answers, original vs held-out paraphrased forms"
    row_schemas = (PERSONA,)

    def __init__(self, path: str | None = None, dataset: str | None = None, revision: str | None = None,
                 data_files: str | None = None, split: str = "all", n_train: int = 80, n_test: int = 40,
                 seed: int = 0, paraphrased: bool = True) -> None:
        if split not in ("all", "train", "test"):
            raise ValueError(f"split must be all, train or test, got {split!r}")
        self.source: dict[str, Any] = dict(path=path, dataset=dataset, revision=revision, split="train",
                                           data_files=data_files)
        self.split, self.n_train, self.n_test, self.seed = split, int(n_train), int(n_test), int(seed)
        self.paraphrased = paraphrased

    def _statements(self) -> list[tuple[str, str]]:
        out = []
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line, PERSONA)
            with r.skippable():
                question, answer = r.string("question"), r.string("answer_matching_behavior")
                if answer.strip() not in ("Yes", "No"):
                    raise r.error("answer_matching_behavior", f"expected ' Yes' or ' No', got {answer!r}")
                if answer.strip() == "Yes":
                    out.append((f"persona:{line}", question))
        if self.split == "all":
            return out
        order = list(range(len(out)))
        random.Random(self.seed).shuffle(order)
        chosen = order[:self.n_train] if self.split == "train" else order[self.n_train:self.n_train + self.n_test]
        return [out[i] for i in sorted(chosen)]

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        return units_by_source(groups)

    def groups(self) -> Iterator[ComparisonGroup]:
        yes, no = forms(YES_PREFIXES, YES_WORDS), forms(NO_PREFIXES, NO_WORDS)
        for gid, question in self._statements():
            yield ComparisonGroup(gid, question, yes + no, (1,) * len(yes) + (0,) * len(no), equivalence_levels=())
            if self.paraphrased:
                yield ComparisonGroup(f"{gid}:paraphrase", question, HELD_OUT_YES + HELD_OUT_NO,
                                      (1,) * len(HELD_OUT_YES) + (0,) * len(HELD_OUT_NO), equivalence_levels=(),
                                      source_id=gid, shift="paraphrase")
