"""Readers of the per-item score files other benchmarks publish, one per source, into one typed
record (:class:`PublishedScores`) that :mod:`rmbench.models.published` replays as rewards.

Each reader knows one file layout, as the publishing tool's own code writes it, and the group
ids and response order rmbench's task for that benchmark gives its items:

* ``rewardbench2``: RewardBench 2's ``eval-set-scores/{org}/{model}.json`` (dataset
  ``allenai/reward-bench-2-results``), the columnar ``Dataset.to_dict()`` that
  ``scripts/run_v2.py`` and ``scripts/run_generative_v2.py`` (allenai/reward-bench at 05a9005)
  write through ``rewardbench.utils.save_to_hub`` (``json.dumps(..., indent=4, sort_keys=True)``):
  columns ``id``, ``subset``, ``num_correct``, ``scores`` (per row, one score per completion in
  the order ``chosen + rejected``: ``load_bon_dataset_v2`` unrolls ``row["chosen"]`` extended by
  ``row["rejected"]`` and ``reroll_and_score_dataset`` folds them back in that order; a score may
  be a one-element list, which ``process_single_model`` reads as its element), ``results``,
  ``text``..., and the scalars ``model``, ``model_type``, ``chat_template``. A generative judge's
  file (``run_generative_v2.py``) has ``scores`` only on Ties rows (its ratings) and per other row
  only ``results``: 1 (chosen won), 1/k (chosen among k tied winners), 0. Such a row replays as
  *verdict rewards* (:func:`verdict_rewards`) that give the same official credit. Group id: ``id``.
* ``judgebench``: a JudgeBench output file (``outputs/*.jsonl`` of ScalerLab/JudgeBench, one line
  per pair as ``run_judge.py`` writes it: the pair's fields and ``judgments``, one per game, each
  ``{"judgment": {...}, "decision": "A>B" | "B>A" | "A=B" | null}`` or null; the repository's own
  files hold ``judgments`` as a JSON list, and a string holding the list's Python ``repr`` is read
  too, with :func:`ast.literal_eval`). The pair's combined verdict is JudgeBench's ``compute_final_metrics``
  rule (:mod:`rmbench.core.judgebench`): one game, its decision; two games,
  sign(v1 - v2) with v2 the reversed game's decision. Rewards: a reward model's recorded scores
  of the first game ``judgment.scores = [r(A), r(B)]`` when every pair records them and they give
  every pair its recorded verdict by JudgeBench's reward-model rule
  (:func:`rmbench.core.judgebench.reward_model_verdicts`: one game, A>B iff r(A) > r(B), else
  B>A, so a tie is B>A; two games, sign(r(A) - r(B)), so a tie is 0): they reproduce JudgeBench's
  number exactly, a tie stays a tie, and the task scores them with the file's games
  (:attr:`PublishedScores.single_game`). Else the file holds verdicts only (a judge's decisions,
  or decisions its scores do not give), replayed as verdict rewards (winner 1, loser 0, a tie or
  no decision 0 and 0), scored by the combined verdict. Group id: ``pair_id``.
* ``rmb``: an RMB result file (``eval/result/{model}_result.json`` of
  Zhou-Zoey/RMB-Reward-Model-Benchmark, as ``eval/scripts/my_run_rm.py`` writes it with
  ``json.dump``): a JSON array of pairwise items ``pair_uid``, ``category_path``,
  ``chosen_reward``, ``reject_reward``, ``is_correct``. Group id ``pairwise:<pair_uid>``, rewards
  (chosen, reject). RMB publishes no Best-of-N result layout, so BoN items cannot be replayed.

What each item says of its group (:class:`PublishedItem`) is checked against the task's data
when the rewards bind (:func:`rmbench.models.published.bind_rewards`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

import numpy as np

from rmbench.core.judgebench import (
    A_BETTER,
    B_BETTER,
    LABELS,
    TIE,
    decision_verdict,
    judgebench_category,
    reward_model_verdicts,
)
from rmbench.errors import DataError
from rmbench.registry import Registry

RewardsKind = Literal["scores", "verdicts", "mixed"]
"""What a file's rewards are: the tool's recorded scores, rewards made from its verdicts (winner
1, others 0: they reproduce the official score, but D and Spec then describe verdicts), or both."""


@dataclass(frozen=True)
class PublishedItem:
    """One item of a published file: its rewards in the task's response order, or the official
    credit they must give (``credit``: a RewardBench 2 generative row), and what it says of its
    group: the utilities of its responses, its subset, its responses' texts (None: not recorded)."""

    rewards: tuple[float, ...] | None
    utilities: tuple[int, ...] | None = None
    subset: str | None = None
    responses: tuple[str, ...] | None = None
    credit: float | None = None


@dataclass(frozen=True)
class PublishedScores:
    """A published file, read: its items by the task's group id, and where it came from."""

    source: str
    items: Mapping[str, PublishedItem]
    rewards_are: RewardsKind
    sha256: str
    location: str
    model: str | None = None
    games: int | None = None  # JudgeBench: games per pair
    why_verdicts: str | None = None
    """Why a file that records scores is read as verdicts (its scores do not give its decisions)."""

    @property
    def reading(self) -> str:
        """Which reading of the file gives the rewards, in words (the run's note says it)."""
        what = f"the published {self.source} file {Path(self.location).name}"
        if self.rewards_are == "scores":
            return f"{what} replays its recorded scores as rewards"
        verdicts = ("its verdicts as rewards (winner 1, the others 0): they give the official score, but D and Spec "
                    "describe verdicts, not scores")
        if self.rewards_are == "mixed":
            n = sum(item.rewards is None for item in self.items.values())
            return (f"{what} replays its recorded scores as rewards where it has them, and on {n} of its "
                    f"{len(self.items)} items {verdicts}")
        return f"{what} replays {verdicts}" + (f" ({self.why_verdicts})" if self.why_verdicts else "")

    @property
    def single_game(self) -> bool:
        """A JudgeBench file of one game read as scores: the judgebench task scores its rewards by
        one game's rule (``single_game: true``, a tie is B>A). Every other JudgeBench file is
        scored by the combined verdict of its games (``single_game: false``)."""
        return self.source == "judgebench" and self.games == 1 and self.rewards_are == "scores"


def verdict_rewards(credit: float, n_correct: int, n: int) -> tuple[float, ...]:
    """Rewards of ``n`` responses (the first ``n_correct`` correct) that earn RewardBench 2's
    best-of-n credit ``credit`` (1/#top if the first is at the top, else 0): credit 1/k puts the
    first response and the next k - 1 at 1, the rest at 0; credit 0 puts response 1 alone at 1.
    Which responses shared the top is not recorded, so D and Spec on these are of the verdicts."""
    if credit == 0:
        return tuple(1.0 if i == 1 else 0.0 for i in range(n))
    k = 1.0 / credit
    if not math.isfinite(k) or abs(k - round(k)) > 1e-9 or not 1 <= round(k) <= n:
        raise ValueError(f"result {credit!r} is not 1/k for k in 1..{n} (the official best-of-n credit)")
    return tuple(1.0 if i < round(k) else 0.0 for i in range(n))


# --- RewardBench 2 ----------------------------------------------------------------------------

def read_rewardbench2(data: bytes, location: str) -> PublishedScores:
    """RewardBench 2's ``eval-set-scores`` file (module doc)."""
    doc = _json(data, location)
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), list):
        raise DataError("not a RewardBench 2 eval-set-scores file: expected a JSON object of columns with an 'id' "
                        "list (the to_dict() of run_v2.py's scored dataset)", path=location)
    ids = doc["id"]
    n = len(ids)
    columns = {}
    for name in ("subset", "num_correct", "scores", "results"):
        column = doc.get(name)
        if column is not None and (not isinstance(column, list) or len(column) != n):
            raise DataError(f"column {name!r} is not a list of {n} values (one per id)", path=location, field=name)
        columns[name] = column
    if columns["scores"] is None and columns["results"] is None:
        raise DataError("has neither 'scores' nor 'results': nothing to replay", path=location)
    items: dict[str, PublishedItem] = {}
    kinds = set()
    for i, raw_id in enumerate(ids):
        row = f"row {i} (id {raw_id!r})"
        subset = _opt_str(columns["subset"], i)
        n_correct = columns["num_correct"][i] if columns["num_correct"] is not None else None
        if n_correct is not None and (isinstance(n_correct, bool) or not isinstance(n_correct, int)):
            raise DataError(f"{row}: num_correct is {n_correct!r}, not an integer", path=location, field="num_correct")
        scores = columns["scores"][i] if columns["scores"] is not None else None
        if scores is not None:
            rewards = _rb2_scores(scores, f"{location}: {row}")
            utilities = None if n_correct is None else tuple(int(j < n_correct) for j in range(len(rewards)))
            item = PublishedItem(rewards, utilities, subset, _rb2_responses(doc.get("text"), i, n))
            kinds.add("scores")
        else:
            credit = columns["results"][i] if columns["results"] is not None else None
            if not _is_number(credit):
                raise DataError(f"{row}: no scores and no numeric result", path=location, field="results")
            item = PublishedItem(None, None, subset, credit=float(credit))
            kinds.add("verdicts")
        key = str(raw_id)
        if key in items:
            raise DataError(f"{row}: id {key!r} appears twice", path=location, field="id")
        items[key] = item
    model = doc.get("model") if isinstance(doc.get("model"), str) else None
    return PublishedScores("rewardbench2", items, _kind(kinds), _sha256(data), location, model)


def _rb2_responses(texts: Any, i: int, n: int) -> tuple[str, ...] | None:
    """The responses row ``i`` of the ``text`` column records, where it holds them as chat
    messages (custom dialogue formatting: user turn, then the assistant's response); None where
    it holds chat-template strings (the template may have changed the response's whitespace)."""
    if not isinstance(texts, list) or len(texts) != n or not isinstance(texts[i], list):
        return None
    out = []
    for conversation in texts[i]:
        last = conversation[-1] if isinstance(conversation, list) and conversation else None
        if not isinstance(last, dict) or last.get("role") != "assistant" or not isinstance(last.get("content"), str):
            return None
        out.append(last["content"])
    return tuple(out)


def _rb2_scores(scores: Any, where: str) -> tuple[float, ...]:
    if not isinstance(scores, list) or not scores:
        raise DataError(f"{where}: scores is {str(scores)[:60]!r}, not a list of numbers", field="scores")
    out = []
    for s in scores:
        value = s[0] if isinstance(s, list) and len(s) == 1 else s  # process_single_model: raw_score[0] of a list
        if not _is_number(value) or not math.isfinite(value):
            raise DataError(f"{where}: score {str(s)[:40]!r} is not a finite number", field="scores")
        out.append(float(value))
    return tuple(out)


# --- JudgeBench -------------------------------------------------------------------------------

def read_judgebench(data: bytes, location: str) -> PublishedScores:
    """A JudgeBench ``outputs/*.jsonl`` file (module doc)."""
    pairs: list[tuple[str, PublishedItem, int, tuple[float, float] | None]] = []
    games = set()
    for line_no, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"not JSON: {exc.msg}", path=location, line=line_no) from None
        except RecursionError:
            raise DataError(TOO_DEEP, path=location, line=line_no) from None
        pair_id, label, verdict, scores, n_games = _judgebench_row(row, location, line_no)
        games.add(n_games)
        utilities = (1, 0) if LABELS[label] == A_BETTER else (0, 1)
        responses = (row.get("response_A"), row.get("response_B"))
        texts = responses if all(isinstance(t, str) for t in responses) else None
        category = judgebench_category(str(row.get("source", "")))
        pairs.append((pair_id, PublishedItem(None, utilities, category, texts), verdict, scores))
    if not pairs:
        raise DataError("holds no pairs", path=location)
    if len(games) != 1:
        raise DataError(f"mixes pairs judged in {' and '.join(map(str, sorted(games)))} games", path=location)
    n_games = games.pop()
    why = _scores_do_not_give_verdicts(pairs, n_games)  # None: the recorded scores replay (module doc)
    use_scores = why is None
    items: dict[str, PublishedItem] = {}
    for pair_id, item, verdict, scores in pairs:
        if pair_id in items:
            raise DataError(f"pair_id {pair_id!r} appears twice", path=location, field="pair_id")
        rewards = scores if use_scores and scores is not None else (float(verdict == A_BETTER),
                                                                    float(verdict == B_BETTER))
        items[pair_id] = PublishedItem(rewards, item.utilities, item.subset, item.responses)
    recorded = any(s is not None for *_, s in pairs)  # a file without scores needs no reason to be verdicts
    return PublishedScores("judgebench", items, "scores" if use_scores else "verdicts", _sha256(data), location,
                           _judgebench_model(data, location), n_games, why if recorded else None)


def _judgebench_model(data: bytes, location: str) -> str | None:
    """The judge a JudgeBench file records: its first pair's ``judge_model`` (a field of the row,
    or of its first game's ``judgment`` as ``run_judge.py`` writes it), else the ``judge_model=``
    part of ``run_judge.py``'s file name; None when neither says."""
    line = next((x for x in data.decode("utf-8", errors="replace").splitlines() if x.strip()), "")
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        row = None
    if isinstance(row, dict):
        if isinstance(row.get("judge_model"), str) and row["judge_model"].strip():
            return str(row["judge_model"]).strip()
        judgments = row.get("judgments")
        if isinstance(judgments, str):
            try:
                judgments = ast.literal_eval(judgments)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                judgments = None
        first = judgments[0] if isinstance(judgments, list) and judgments else None
        judgment = first.get("judgment") if isinstance(first, dict) else None
        judge = judgment.get("judge_model") if isinstance(judgment, dict) else None
        if isinstance(judge, str) and judge.strip():
            return judge.strip()
    name = Path(location).name
    return name.rpartition("judge_model=")[2].removesuffix(".jsonl") or None if "judge_model=" in name else None


def _scores_do_not_give_verdicts(pairs: list[tuple[str, PublishedItem, int, tuple[float, float] | None]],
                                 games: int) -> str | None:
    """None when every pair records its first game's scores and they give the pair's recorded
    verdict by JudgeBench's reward-model rule in ``games`` games; else why not (the first pair)."""
    missing = next((pair_id for pair_id, _, _, s in pairs if s is None), None)
    if missing is not None:
        return f"pair {missing} records no scores"
    a = np.array([s[0] for *_, s in pairs if s is not None])
    b = np.array([s[1] for *_, s in pairs if s is not None])
    given = reward_model_verdicts(a, b, single_game=games == 1)
    recorded = np.array([v for _, _, v, _ in pairs])
    off = np.flatnonzero(given != recorded)
    if off.size:
        pair_id = pairs[int(off[0])][0]
        return (f"the scores of {off.size} of its {len(pairs)} pairs do not give their recorded decisions, the "
                f"first pair {pair_id}")
    return None


def _judgebench_row(row: Any, location: str, line: int) -> tuple[str, str, int, tuple[float, float] | None, int]:
    """(pair_id, label, combined verdict, first game's [r(A), r(B)] or None, games) of one line."""
    if not isinstance(row, dict):
        raise DataError("expected a JSON object (a JudgeBench pair)", path=location, line=line)
    pair_id, label = row.get("pair_id"), row.get("label")
    if not isinstance(pair_id, str):
        raise DataError("no pair_id", path=location, line=line, field="pair_id")
    if label not in LABELS:
        raise DataError(f"label is {label!r}; a JudgeBench label is A>B or B>A", path=location, line=line,
                        field="label")
    judgments = row.get("judgments")
    if isinstance(judgments, str):  # the repository's own files hold the list's Python repr
        try:
            judgments = ast.literal_eval(judgments)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise DataError("judgments is a string that is not a list literal", path=location, line=line,
                            field="judgments") from None
    if not isinstance(judgments, list) or len(judgments) not in (1, 2):
        raise DataError("judgments must be a list of one or two games", path=location, line=line, field="judgments")
    decisions = [j.get("decision") if isinstance(j, dict) else None for j in judgments]
    v = [decision_verdict(d) for d in decisions]
    verdict = v[0] if len(v) == 1 else _sign(v[0] - v[1])  # the reversed game's decision, flipped back
    first = judgments[0].get("judgment") if isinstance(judgments[0], dict) else None
    raw = first.get("scores") if isinstance(first, dict) else None
    scores = None
    if isinstance(raw, list) and len(raw) == 2 and all(_is_number(s) and math.isfinite(s) for s in raw):
        scores = (float(raw[0]), float(raw[1]))
    return pair_id, label, verdict, scores, len(judgments)


# --- RMB --------------------------------------------------------------------------------------

def read_rmb(data: bytes, location: str) -> PublishedScores:
    """An RMB ``eval/result/*_result.json`` file (module doc)."""
    doc = _json(data, location)
    if not isinstance(doc, list):
        raise DataError("not an RMB result file: expected a JSON array of items (my_run_rm.py's output)",
                        path=location)
    items: dict[str, PublishedItem] = {}
    for i, row in enumerate(doc):
        where = f"item {i}"
        if not isinstance(row, dict) or "pair_uid" not in row:
            kind = "a Best-of-N item (bon_uid), which RMB publishes no result layout for" \
                if isinstance(row, dict) and "bon_uid" in row else "not a pairwise item with a pair_uid"
            raise DataError(f"{where} is {kind}", path=location)
        chosen, reject = row.get("chosen_reward"), row.get("reject_reward")
        if not (_is_number(chosen) and _is_number(reject) and math.isfinite(chosen) and math.isfinite(reject)):
            raise DataError(f"{where}: chosen_reward and reject_reward must be finite numbers", path=location,
                            field="chosen_reward")
        key = f"pairwise:{row['pair_uid']}"
        if key in items:
            raise DataError(f"{where}: pair_uid {row['pair_uid']!r} appears twice", path=location, field="pair_uid")
        items[key] = PublishedItem((float(chosen), float(reject)), (1, 0), _opt_str([row.get("category_path")], 0))
    if not items:
        raise DataError("holds no items", path=location)
    return PublishedScores("rmb", items, "scores", _sha256(data), location, _rmb_model(location))


def _rmb_model(location: str) -> str | None:
    """The model an RMB result file is of: ``my_run_rm.py`` names it ``{model}_result.json``."""
    stem = Path(location).name.removesuffix(".json")
    return stem.removesuffix("_result") if stem.endswith("_result") and stem != "_result" else None


# --- which format a file is ---------------------------------------------------------------

FORMAT_NAMES = {"rewardbench2": "a RewardBench 2 eval-set-scores file", "judgebench": "JudgeBench outputs",
                "rmb": "an RMB result file"}
"""Each source's file format, in words (the error for a file of another format names both)."""


def sniff_format(data: bytes) -> str | None:
    """What a published file looks like, in words: one of :data:`FORMAT_NAMES`' values, or
    another format rmbench knows of (RewardBench 2's eval-set summary, JudgeBench's data without
    judgments); None when it is none of them (its reader then says what is wrong)."""
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        doc = None
    if isinstance(doc, list):
        first = doc[0] if doc else None
        if isinstance(first, dict) and ("pair_uid" in first or "bon_uid" in first or "chosen_reward" in first):
            return FORMAT_NAMES["rmb"]
        return None
    if isinstance(doc, dict):
        if isinstance(doc.get("id"), list) and ("scores" in doc or "results" in doc):
            return FORMAT_NAMES["rewardbench2"]
        if "model" in doc and "chat_template" in doc and "id" not in doc:
            return "a RewardBench 2 eval-set summary (per-subset scores, no per-item scores)"
        if "pair_id" in doc:  # one JudgeBench line alone
            return FORMAT_NAMES["judgebench"] if "judgments" in doc else "JudgeBench data (pairs without judgments)"
        return None
    try:
        line = next((x for x in data.decode("utf-8").splitlines() if x.strip()), "")
        row = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if isinstance(row, dict) and "pair_id" in row:
        return FORMAT_NAMES["judgebench"] if "judgments" in row else "JudgeBench data (pairs without judgments)"
    return None


def _own_format(source: str, data: bytes, location: str) -> None:
    """One :class:`DataError` when the file is recognisably another format than ``source``'s:
    ``an RMB result file, not JudgeBench outputs``."""
    seen = sniff_format(data)
    if seen is not None and seen != FORMAT_NAMES[source]:
        raise DataError(f"{seen}, not {FORMAT_NAMES[source]} (published:{source} reads {FORMAT_NAMES[source]})",
                        path=location)


READERS: Registry[Callable[[bytes, str], PublishedScores]] = Registry("published source")
"""Each published source and its file reader ``read(data, location) -> PublishedScores``, described
by the format it reads (:data:`FORMAT_NAMES`)."""
for _source, _reader in (("rewardbench2", read_rewardbench2), ("judgebench", read_judgebench), ("rmb", read_rmb)):
    READERS.register(_source, _reader, description=FORMAT_NAMES[_source])


def recorded_model(source: str, path: Path | str) -> str | None:
    """The model a published file says it is of, read cheaply (a label before the file is read
    whole): JudgeBench's ``judge_model``, RewardBench 2's ``model``, RMB's file name; None when
    the file says none or cannot be read (reading it as the model then says why)."""
    try:
        if source == "judgebench":
            with open(path, "rb") as f:
                head = f.readline()
                while head and not head.strip():
                    head = f.readline()
            return _judgebench_model(head, str(path))
        if source == "rmb":
            return _rmb_model(str(path))
        doc = json.loads(Path(path).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model.strip() if isinstance(model, str) and model.strip() else None


def read_published(source: str, path: Path | str) -> PublishedScores:
    """The published file at ``path`` read as ``source``'s layout; a missing or unreadable file,
    or one not in that layout, is one :class:`DataError` naming it (a file of another published
    format names the format it is: :func:`sniff_format`)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the published file: {exc.strerror or exc}", path=str(path)) from None
    try:
        return READERS.get(source)(data, str(path))
    except DataError:  # a file of another format: named as such, not by the first thing its reader tripped on
        _own_format(source, data, str(path))
        raise


# --- helpers ----------------------------------------------------------------------------------

TOO_DEEP = "JSON nested deeper than Python's parser goes (no published format nests more than a few levels)"

def _json(data: bytes, location: str) -> Any:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"not JSON: {exc}", path=location) from None
    except RecursionError:
        raise DataError(TOO_DEEP, path=location) from None


def _is_number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _opt_str(column: list | None, i: int) -> str | None:
    value = column[i] if column is not None else None
    return value if isinstance(value, str) else None


def _sign(x: float) -> int:
    return A_BETTER if x > 0 else B_BETTER if x < 0 else TIE


def _kind(kinds: set[str]) -> RewardsKind:
    return "mixed" if len(kinds) > 1 else "verdicts" if kinds == {"verdicts"} else "scores"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


__all__ = ["FORMAT_NAMES", "READERS", "PublishedItem", "PublishedScores", "RewardsKind", "read_published",
           "recorded_model", "sniff_format", "verdict_rewards"]
