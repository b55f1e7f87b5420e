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

A file is streamed, never held (:mod:`rmbench.models.published_stream`): a first pass reads it
row by row (a line, an array element, a column's element), checks every row, hashes its bytes
and keeps each item's place in the file and what the whole file decides (JudgeBench's scores or
verdicts reading, RewardBench 2's kinds of rows); the items themselves are read back only for
the groups a run scores (:class:`RowItems`), so the memory is the rows read, not the file.
"""

from __future__ import annotations

import ast
import json
import math
from array import array
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

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
from rmbench.models.published_items import (
    PublishedItem,
    PublishedScores,
    RewardsKind,
    RowItems,
    is_number,
    verdict_rewards,
)
from rmbench.models.published_rb2 import read_rewardbench2
from rmbench.models.published_sniff import FORMAT_NAMES, own_format, sniff_format
from rmbench.models.published_stream import (
    TOO_DEEP,
    JsonReader,
    Source,
    Stamp,
    decode_line,
    lines,
    parse_line,
    read_spans,
)
from rmbench.registry import Registry

# --- JudgeBench -------------------------------------------------------------------------------

def read_judgebench(path: Path | str, location: str) -> PublishedScores:
    """A JudgeBench ``outputs/*.jsonl`` file (module doc), streamed line by line: each pair is
    checked, and its verdict and first game's scores kept (the reading is the whole file's)."""
    places: dict[str, int] = {}  # pair_id -> its line's number among the spans
    starts, ends = array("q"), array("q")
    order: list[str] = []
    verdicts, score_a, score_b = array("b"), array("d"), array("d")
    games: set[int] = set()
    missing = twice = None
    recorded, head = False, b""
    with Source(path, location) as src:
        for line_no, start, raw in lines(src):
            text = decode_line(raw, location, line_no)
            if not text.strip():
                continue
            head = head or raw
            pair_id, _, verdict, scores, n_games = _judgebench_row(parse_line(text, location, line_no), location,
                                                                   line_no)
            games.add(n_games)
            order.append(pair_id)
            verdicts.append(verdict)
            score_a.append(scores[0] if scores is not None else 0.0)
            score_b.append(scores[1] if scores is not None else 0.0)
            recorded = recorded or scores is not None
            if scores is None and missing is None:
                missing = pair_id
            if pair_id in places:
                twice = pair_id if twice is None else twice
            else:
                places[pair_id] = len(starts)
                starts.append(start)
                ends.append(src.offset)
        sha256, stamp = src.sha256(), src.stamp
    if not order:
        raise DataError("holds no pairs", path=location)
    if len(games) != 1:
        raise DataError(f"mixes pairs judged in {' and '.join(map(str, sorted(games)))} games", path=location)
    n_games = games.pop()
    why = f"pair {missing} records no scores" if missing is not None else \
        _scores_do_not_give_verdicts(order, verdicts, score_a, score_b, n_games)
    if twice is not None:
        raise DataError(f"pair_id {twice!r} appears twice", path=location, field="pair_id")
    use_scores = why is None  # None: the recorded scores replay (module doc)

    load = partial(_judgebench_items, path, location, stamp, starts, ends, use_scores)
    return PublishedScores("judgebench", RowItems(places, load), "scores" if use_scores else "verdicts", sha256,
                           location, _judgebench_model(head, location), n_games, why if recorded else None)


def _judgebench_items(path: Path | str, location: str, stamp: Stamp, starts: array, ends: array, use_scores: bool,
                      rows: list[int]) -> list[PublishedItem]:
    """The items of lines ``rows`` (their numbers among the spans ``starts``/``ends``), read back."""
    spans = [(starts[i], ends[i]) for i in rows]
    return [_judgebench_item(row, location, use_scores) for row in read_spans(path, location, stamp, spans)]


def _judgebench_item(row: Any, location: str, use_scores: bool) -> PublishedItem:
    """One pair's item: its recorded scores (``use_scores``: the file reads as scores) or its
    verdict's rewards, its utilities by its label, its category and its responses' texts."""
    _, label, verdict, scores, _ = _judgebench_row(row, location, 0)
    rewards = scores if use_scores and scores is not None else (float(verdict == A_BETTER), float(verdict == B_BETTER))
    utilities = (1, 0) if LABELS[label] == A_BETTER else (0, 1)
    responses = (row.get("response_A"), row.get("response_B"))
    texts = responses if all(isinstance(t, str) for t in responses) else None
    return PublishedItem(rewards, utilities, judgebench_category(str(row.get("source", ""))), texts)


def _judgebench_model(head: bytes, location: str) -> str | None:
    """The judge a JudgeBench file records (``head``: its first line that is not blank): that
    pair's ``judge_model`` (a field of the row, or of its first game's ``judgment`` as
    ``run_judge.py`` writes it), else the ``judge_model=`` part of ``run_judge.py``'s file name;
    None when neither says."""
    line = next((x for x in head.decode("utf-8", errors="replace").splitlines() if x.strip()), "")
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


def _scores_do_not_give_verdicts(order: list[str], verdicts: array, a: array, b: array, games: int) -> str | None:
    """None when every pair's first-game scores (``a``, ``b``; every pair records them) give its
    recorded verdict by JudgeBench's reward-model rule in ``games`` games; else why not."""
    given = reward_model_verdicts(np.frombuffer(a, dtype=np.float64), np.frombuffer(b, dtype=np.float64),
                                  single_game=games == 1)
    off = np.flatnonzero(given != np.frombuffer(verdicts, dtype=np.int8))
    if off.size:
        return (f"the scores of {off.size} of its {len(order)} pairs do not give their recorded decisions, the "
                f"first pair {order[int(off[0])]}")
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
    if isinstance(raw, list) and len(raw) == 2 and all(is_number(s) and math.isfinite(s) for s in raw):
        scores = (float(raw[0]), float(raw[1]))
    return pair_id, label, verdict, scores, len(judgments)



# --- RMB --------------------------------------------------------------------------------------

def read_rmb(path: Path | str, location: str) -> PublishedScores:
    """An RMB ``eval/result/*_result.json`` file (module doc), streamed item by item."""
    places: dict[str, int] = {}  # group id -> its item's number among the spans
    starts, ends = array("q"), array("q")
    problem: DataError | None = None  # the first item's error, raised once the whole file is known to be JSON
    with Source(path, location) as src:
        reader = JsonReader(src)
        is_array = reader.peek() == "["
        if is_array:
            for i in reader.elements():
                row, start, end = reader.value()
                if problem is None:
                    try:
                        key = _rmb_key(row, i, location)
                    except DataError as exc:
                        problem = exc
                        continue
                    if key in places:
                        problem = DataError(f"item {i}: pair_uid {row['pair_uid']!r} appears twice", path=location,
                                            field="pair_uid")
                    else:
                        places[key] = len(starts)
                        starts.append(start)
                        ends.append(end)
        else:
            reader.skip()
        reader.end()
        sha256, stamp = src.sha256(), src.stamp
    if not is_array:
        raise DataError("not an RMB result file: expected a JSON array of items (my_run_rm.py's output)",
                        path=location)
    if problem is not None:
        raise problem
    if not places:
        raise DataError("holds no items", path=location)

    load = partial(_rmb_items, path, location, stamp, starts, ends)
    return PublishedScores("rmb", RowItems(places, load), "scores", sha256, location, _rmb_model(location))


def _rmb_items(path: Path | str, location: str, stamp: Stamp, starts: array, ends: array,
               rows: list[int]) -> list[PublishedItem]:
    """The items of RMB items ``rows`` (their numbers among the spans ``starts``/``ends``), read back."""
    spans = [(starts[i], ends[i]) for i in rows]
    return [PublishedItem((float(row["chosen_reward"]), float(row["reject_reward"])), (1, 0),
                          _opt_str([row.get("category_path")], 0))
            for row in read_spans(path, location, stamp, spans)]


def _rmb_key(row: Any, i: int, location: str) -> str:
    """The group id of RMB item ``i``; one :class:`DataError` when it is not a pairwise item with finite rewards."""
    where = f"item {i}"
    if not isinstance(row, dict) or "pair_uid" not in row:
        kind = "a Best-of-N item (bon_uid), which RMB publishes no result layout for" \
            if isinstance(row, dict) and "bon_uid" in row else "not a pairwise item with a pair_uid"
        raise DataError(f"{where} is {kind}", path=location)
    chosen, reject = row.get("chosen_reward"), row.get("reject_reward")
    if not (is_number(chosen) and is_number(reject) and math.isfinite(chosen) and math.isfinite(reject)):
        raise DataError(f"{where}: chosen_reward and reject_reward must be finite numbers", path=location,
                        field="chosen_reward")
    return f"pairwise:{row['pair_uid']}"


def _rmb_model(location: str) -> str | None:
    """The model an RMB result file is of: ``my_run_rm.py`` names it ``{model}_result.json``."""
    stem = Path(location).name.removesuffix(".json")
    return stem.removesuffix("_result") if stem.endswith("_result") and stem != "_result" else None


READERS: Registry[Callable[[Path | str, str], PublishedScores]] = Registry("published source")
"""Each published source and its file reader ``read(path, location) -> PublishedScores`` (the file's
path, and its location in messages), described by the format it reads (:data:`FORMAT_NAMES`)."""
for _source, _reader in (("rewardbench2", read_rewardbench2), ("judgebench", read_judgebench), ("rmb", read_rmb)):
    READERS.register(_source, _reader, description=FORMAT_NAMES[_source])


def recorded_model(source: str, path: Path | str) -> str | None:
    """The model a published file says it is of, read cheaply (a label before the file is read):
    JudgeBench's ``judge_model``, RewardBench 2's ``model``, RMB's file name; None when the file
    says none or cannot be read (reading it as the model then says why)."""
    if source == "rmb":
        return _rmb_model(str(path))
    try:
        with Source(path, str(path)) as src:
            if source == "judgebench":
                head = next((raw for _, _, raw in lines(src) if raw.strip()), b"")
                return _judgebench_model(head, str(path))
            model = _rb2_model(JsonReader(src))
    except DataError:
        return None
    return model.strip() if isinstance(model, str) and model.strip() else None


def _rb2_model(reader: JsonReader) -> Any:
    """The ``model`` member of a JSON object (None if it is not one), the rest skipped."""
    model = None
    if reader.peek() != "{":
        reader.skip()
    else:
        for key in reader.members():
            if key == "model":
                model = reader.value()[0]
            else:
                reader.skip()
    reader.end()
    return model


def read_published(source: str, path: Path | str) -> PublishedScores:
    """The published file at ``path`` read as ``source``'s layout; a missing or unreadable file,
    or one not in that layout, is one :class:`DataError` naming it (a file of another published
    format names the format it is: :func:`sniff_format`). The file is streamed (module doc)."""
    try:
        return READERS.get(source)(path, str(path))
    except DataError:  # a file of another format: named as such, not by the first thing its reader tripped on
        own_format(source, path)
        raise


# --- helpers ----------------------------------------------------------------------------------

def _opt_str(column: list | None, i: int) -> str | None:
    value = column[i] if column is not None else None
    return value if isinstance(value, str) else None


def _sign(x: float) -> int:
    return A_BETTER if x > 0 else B_BETTER if x < 0 else TIE


__all__ = ["FORMAT_NAMES", "READERS", "TOO_DEEP", "PublishedItem", "PublishedScores", "RewardsKind", "RowItems",
           "read_published", "read_rewardbench2", "recorded_model", "sniff_format", "verdict_rewards"]
