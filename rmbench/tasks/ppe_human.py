"""PPE's human preference set (Preference Proxy Evaluations, arXiv 2410.14872; lmarena):
Chatbot Arena battles with the human verdict, ties included.

Data, as published: ``lmarena-ai/PPE-Human-Preference-V1`` on the hub, split ``test``, 16,038
rows in 121 languages (dataset card at ``main``). A row: ``question_id``, ``model_a``,
``model_b``, ``winner`` (``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)``), ``prompt``,
``response_1`` (model_a's answer), ``response_2`` (model_b's), ``language``, the category flags
``hard_prompt``, ``easy_prompt``, ``if_prompt``, ``math_prompt``, ``is_code`` (booleans), and
metadata (``conv_metadata`` with ``turns``, ``category_tag``, lengths...), kept as meta where
named here.

Each row is one group [response_1, response_2]: a winner gives utilities (1, 0) or (0, 1), a tie
(0, 0), so a tied battle is a specificity pair (the humans found the two answers equally good)
and a won battle a discrimination pair. ``tie (bothbad)`` (both answers equally bad) is, by
default, a tie like ``tie``: equal utility is what Spec asks about, bad or good;
``--task-arg bothbad=exclude`` leaves those rows out. Conversations stay conversations: a
``prompt`` that is a list of chat messages (or a string holding one as JSON) is the conversation
before the compared replies, and two responses given as each side's messages are split into
the conversation they share and their last replies (a row whose sides differ before the last
reply, a multi-turn battle with different earlier answers, is refused: a group compares replies
to one conversation).

``ppe_human_accuracy`` (the official layout's metric): over the battles with a winner, the share
where the winner's answer gets the higher reward, a reward tie 1/2 (rmbench's pairwise accuracy
on the same pairs, PPE's accuracy on human preference with ties in the labels left out); overall,
per category (subsets ``hard``, ``easy``, ``if``, ``math``, ``code``: the rows whose flag is
true; a row can be in several) and per language (subsets ``lang:LANGUAGE``). Spec over the tied
battles is rmbench's ``specificity`` beside it. Each battle is its own bootstrap unit. The
reward-tie rule (1/2) is rmbench's; PPE's own code was not at hand to check it.

Arguments: ``path`` (a local file in the hub schema: what ``--data ppe_human=FILE`` sets),
``dataset``, ``revision``, ``split``, ``bothbad`` (``tie`` or ``exclude``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE, OfficialColumn, OfficialLayout
from rmbench.core.types import ComparisonGroup, Prompt, prompt_from_json
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import PPE_HUMAN
from rmbench.tasks.sources import iter_rows

HUMAN_ACCURACY = "ppe_human_accuracy"
PPE_HUMAN_DATASET = "lmarena-ai/PPE-Human-Preference-V1"
WINNERS = {"model_a": (1, 0), "model_b": (0, 1), "tie": (0, 0), "tie (bothbad)": (0, 0)}
CATEGORIES = (("hard", "hard_prompt", "Hard"), ("easy", "easy_prompt", "Easy"), ("if", "if_prompt", "IF"),
              ("math", "math_prompt", "Math"), ("code", "is_code", "Coding"))
"""(subset, the row's flag, the table's column) for PPE's human preference categories."""
BOTHBAD = ("tie", "exclude")
LANGUAGE_PREFIX = "lang:"

PPE_HUMAN_LAYOUT = OfficialLayout(
    "PPE human preference", HUMAN_ACCURACY,
    (OfficialColumn("Overall", None),) + tuple(OfficialColumn(label, key) for key, _, label in CATEGORIES),
    beside=("specificity", "discrimination", "ds_auc"),
    provenance="computed as the PPE paper and dataset card define them (PPE's code could not be read)")
"""Accuracy overall and per category, beside Spec over the tied battles, D and ds_auc."""


def _messages(r: RowReader, field: str, value: Any) -> list[dict] | None:
    """A list of chat messages (``role``, ``content``), or None when ``value`` is no such list."""
    if not (isinstance(value, list) and value and all(isinstance(m, dict) for m in value)):
        return None
    try:
        prompt_from_json(value)
    except ValueError as exc:
        raise r.error(field, str(exc)) from None
    return [{"role": m["role"], "content": m["content"]} for m in value]


def _prompt(r: RowReader) -> Prompt:
    """``prompt``: text, a list of chat messages, or text holding such a list as JSON."""
    value = r.get("prompt")
    if isinstance(value, str) and value.lstrip().startswith("[{"):
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            parsed = None
        if parsed is not None and _messages(r, "prompt", parsed) is not None:
            return prompt_from_json(parsed)
    return r.prompt("prompt")


def _sides(r: RowReader) -> tuple[Prompt, str, str]:
    """The conversation and the two replies (module doc)."""
    a, b = r.get("response_1"), r.get("response_2")
    if isinstance(a, str) and isinstance(b, str):
        return _prompt(r), a, b
    read = [_messages(r, f, v) for f, v in (("response_1", a), ("response_2", b))]
    sides: list[list[dict]] = []
    for field, side, value in zip(("response_1", "response_2"), read, (a, b)):
        if side is None:
            raise r.schema_error(field, f"expected a string or a list of chat messages, got {type(value).__name__}")
        if side[-1]["role"] != "assistant":
            raise r.error(field, f"the last message is the {side[-1]['role']}'s; it must be the assistant's reply")
        sides.append(side)
    (ctx_a, ctx_b) = (side[:-1] for side in sides)
    if ctx_a != ctx_b:
        raise r.error("response_2", "the two sides' conversations differ before their last reply (a multi-turn "
                                    "battle whose earlier answers differ); a group compares two replies to one "
                                    "conversation")
    prompt = prompt_from_json(ctx_a) if ctx_a else _prompt(r)
    return prompt, sides[0][-1]["content"], sides[1][-1]["content"]


def _flag(r: RowReader, field: str) -> bool:
    """A category flag: a boolean (``true``/``false`` in a CSV cell); missing or null: false."""
    value = r.get(field, False)
    if r.textual and isinstance(value, str) and value.strip().lower() in ("true", "false", ""):
        return value.strip().lower() == "true"
    if not isinstance(value, (bool, np.bool_)):
        raise r.error(field, f"expected true or false, got {value!r}"[:120])
    return bool(value)


PPE_HUMAN_ACCURACY = MetricDef(
    "ppe_human_accuracy", "PPE human acc", True, False, Counted.GROUPS,
    "PPE human preference accuracy: over Chatbot Arena battles with a winner (human ties left out), the "
    "share where the winner's answer gets the higher reward, a reward tie 1/2; subset records: the "
    "categories hard, easy, if, math, code (rows flagged so) and lang:LANGUAGE", official=True)


class PPEHumanTask(Task):
    """PPE's Chatbot Arena battles with human verdicts, ties as specificity pairs (module doc)."""

    description = "PPE human preference: Chatbot Arena pairs with human verdicts (ties kept), 121 languages"
    headline = (HUMAN_ACCURACY,) + DEFAULT_HEADLINE
    official = PPE_HUMAN_LAYOUT
    scores = (PPE_HUMAN_ACCURACY,)
    row_schemas = (PPE_HUMAN,)
    version = 1

    def __init__(self, path: str | None = None, dataset: str | None = PPE_HUMAN_DATASET, revision: str | None = None,
                 split: str = "test", bothbad: str = "tie") -> None:
        if bothbad not in BOTHBAD:
            raise ValueError(f"bothbad must be tie (a tie (bothbad) verdict is a tie) or exclude, got {bothbad!r}")
        if path is None and dataset is None:
            raise ValueError(f"give a local file (path) or a hub dataset ({PPE_HUMAN_DATASET})")
        self.bothbad = bothbad
        self.source = dict(path=path) if path is not None else dict(dataset=dataset, revision=revision, split=split)

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line, PPE_HUMAN)
            with r.skippable():
                qid = r.get("question_id")
                if isinstance(qid, bool) or not isinstance(qid, (str, int)):
                    raise r.error("question_id", f"expected a string or a number, got {qid!r}"[:120])
                qid = str(qid)
                winner = r.string("winner")
                if winner not in WINNERS:
                    raise r.error("winner", f"is {winner!r}; a PPE verdict is {', '.join(WINNERS)}")
                if winner == "tie (bothbad)" and self.bothbad == "exclude":
                    continue
                prompt, reply_a, reply_b = _sides(r)
                language = r.string("language", None)
                categories = [key for key, flag, _ in CATEGORIES if _flag(r, flag)]
                conv = r.get("conv_metadata", None)
                turns = conv.get("turns") if isinstance(conv, dict) else None
                if qid in seen:
                    raise r.error("question_id", f"duplicate question_id {qid!r}")
                group = r.group(id=qid, prompt=prompt, responses=(reply_a, reply_b), utilities=WINNERS[winner],
                                meta={"question_id": qid, "model_a": r.string("model_a", None),
                                      "model_b": r.string("model_b", None), "winner": winner, "language": language,
                                      "categories": categories, "turns": turns})
                seen.add(qid)
                yield group

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``ppe_human_accuracy`` overall, per category and per language present, from one
        resample of battles (each its own unit): weighted credit over weighted battles."""
        r = np.asarray(rewards, dtype=np.float64).reshape(-1, 2)  # every group: response_1, then response_2
        u = np.array([g.utilities for g in groups], dtype=np.int64).reshape(-1, 2)
        won = u[:, 0] != u[:, 1]
        gap = np.where(u[:, 0] > u[:, 1], r[:, 0] - r[:, 1], r[:, 1] - r[:, 0])
        credit = np.where(won, (gap > 0) + 0.5 * (gap == 0), 0.0)
        metas = [g.meta_dict for g in groups]
        cats = [key for key, _, _ in CATEGORIES if any(key in m.get("categories", ()) for m in metas)]
        member = np.array([[key in m.get("categories", ()) for key in cats] for m in metas], dtype=np.float64)
        member = member.reshape(len(groups), len(cats))
        languages = sorted({m["language"] for m, w in zip(metas, won) if w and m.get("language") is not None})
        lang_of = np.array([languages.index(m["language"]) if m.get("language") in languages else len(languages)
                            for m in metas], dtype=np.int64)
        n = len(groups)

        def score(units: np.ndarray) -> np.ndarray:
            w = np.bincount(units, minlength=n).astype(np.float64)
            hit, tot = w * credit, w * won
            with np.errstate(invalid="ignore", divide="ignore"):
                overall = hit.sum() / tot.sum()
                by_cat = (hit @ member) / (tot @ member)
                by_lang = (np.bincount(lang_of, weights=hit, minlength=len(languages) + 1)
                           / np.bincount(lang_of, weights=tot, minlength=len(languages) + 1))[:len(languages)]
            return np.concatenate([[overall], by_cat, by_lang])

        labels = ((HUMAN_ACCURACY, None),) + tuple((HUMAN_ACCURACY, c) for c in cats) + tuple(
            (HUMAN_ACCURACY, LANGUAGE_PREFIX + lang) for lang in languages)
        counts = ((int(won.sum()),) + tuple(int((member[:, j] > 0)[won].sum()) for j in range(len(cats)))
                  + tuple(int((lang_of == i)[won].sum()) for i in range(len(languages))))
        return TaskScores(labels, score, counts)
