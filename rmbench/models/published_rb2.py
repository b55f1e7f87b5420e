"""The reader of RewardBench 2's ``eval-set-scores`` files (the layout: :mod:`rmbench.models.published_files`),
streamed: the ``id`` column is held, every other column's elements are checked in a first pass
and read back only for the rows a run scores."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmbench.errors import DataError
from rmbench.models.published_items import PublishedItem, PublishedScores, RowItems, is_int, is_number, rewards_kind
from rmbench.models.published_stream import JsonReader, Source, Stamp, read_spans

_RB2_COLUMNS = ("subset", "num_correct", "scores", "results", "text")
"""The columns an item is made of (read back per row); ``id`` is held, the others are skipped."""


class _Column:
    """One column of a RewardBench 2 file as the first pass saw it: a list (each element's byte
    span, and the first row its own check fails on) or another value (``value``; None: absent)."""

    def __init__(self, name: str, reader: JsonReader, location: str) -> None:
        self.name, self.is_list, self.value = name, reader.peek() == "[", None
        self.starts, self.ends = array("q"), array("q")
        self.bad: int | None = None
        self.flags = bytearray()  # scores: 1 where null; results: 1 where a number
        if not self.is_list:
            self.value = reader.value()[0]
            return
        for i in reader.elements():
            element, start, end = reader.value()
            self.starts.append(start)
            self.ends.append(end)
            if name == "num_correct" and element is not None and not is_int(element) and self.bad is None:
                self.bad = i
            elif name == "scores":
                self.flags.append(element is None)
                if element is not None and self.bad is None and not _valid(_rb2_scores, element, location):
                    self.bad = i
            elif name == "results":
                self.flags.append(is_number(element))

    @property
    def present(self) -> bool:
        """Whether the file has the column (a null one is absent, as ``doc.get(name)`` reads it)."""
        return self.is_list or self.value is not None

    def __len__(self) -> int:
        return len(self.starts)


def read_rewardbench2(path: Path | str, location: str) -> PublishedScores:
    """RewardBench 2's ``eval-set-scores`` file (module doc), streamed: the ``id`` column is held,
    every other column's elements are checked and left in the file."""
    with Source(path, location) as src:
        reader = JsonReader(src)
        ids, columns, model, is_object = None, {}, None, reader.peek() == "{"
        if is_object:
            for key in reader.members():
                if key == "id":
                    ids = [reader.value()[0] for _ in reader.elements()] if reader.peek() == "[" else None
                    if ids is None:
                        reader.value()
                elif key in _RB2_COLUMNS:
                    columns[key] = _Column(key, reader, location)
                elif key == "model":
                    model = reader.value()[0]
                else:
                    reader.skip()
        else:
            reader.skip()
        reader.end()
        sha256, stamp = src.sha256(), src.stamp
    if ids is None:
        raise DataError("not a RewardBench 2 eval-set-scores file: expected a JSON object of columns with an 'id' "
                        "list (the to_dict() of run_v2.py's scored dataset)", path=location)
    n = len(ids)
    cols = {name: columns.get(name) for name in _RB2_COLUMNS}
    cols = {name: c if c is not None and c.present else None for name, c in cols.items()}
    for name in ("subset", "num_correct", "scores", "results"):
        column = cols[name]
        if column is not None and (not column.is_list or len(column) != n):
            raise DataError(f"column {name!r} is not a list of {n} values (one per id)", path=location, field=name)
    if cols["scores"] is None and cols["results"] is None:
        raise DataError("has neither 'scores' nor 'results': nothing to replay", path=location)
    rows = _Rb2Rows(path, location, stamp, ids, cols)
    places: dict[str, int] = {}
    twice = None
    for i, raw_id in enumerate(ids):
        if str(raw_id) in places:
            twice = i if twice is None else twice
        else:
            places[str(raw_id)] = i
    verdict = rows.verdict_rows()
    first = min((i for i in (rows.first_bad(), twice) if i is not None), default=None)
    if first is not None:
        rows.items([first])  # the first row's error, as reading the rows in order meets it
        raise DataError(f"row {first} (id {ids[first]!r}): id {str(ids[first])!r} appears twice", path=location,
                        field="id")
    kinds = ({"scores"} if verdict < n else set()) | ({"verdicts"} if verdict else set())
    return PublishedScores("rewardbench2", RowItems(places, rows.items), rewards_kind(kinds), sha256, location,
                           model if isinstance(model, str) else None, verdict_items=verdict)


class _Rb2Rows:
    """The rows of a RewardBench 2 file: checked from what the first pass kept, and built into
    items by reading their elements back (:func:`read_spans`)."""

    def __init__(self, path: Path | str, location: str, stamp: Stamp, ids: list, cols: dict[str, _Column | None]):
        self.path, self.location, self.stamp, self.ids, self.cols = path, location, stamp, ids, cols

    def _scoreless(self, i: int) -> bool:
        scores = self.cols["scores"]
        return scores is None or bool(scores.flags[i])

    def verdict_rows(self) -> int:
        """How many rows have no scores (they replay their result)."""
        scores = self.cols["scores"]
        return len(self.ids) if scores is None else sum(scores.flags)

    def first_bad(self) -> int | None:
        """The first row whose own values fail a check (num_correct, scores, or a result where it has no scores)."""
        results = self.cols["results"]
        no_result = next((i for i in range(len(self.ids))
                          if self._scoreless(i) and (results is None or not results.flags[i])), None)
        bad = [c.bad for c in (self.cols["num_correct"], self.cols["scores"]) if c is not None] + [no_result]
        return min((i for i in bad if i is not None), default=None)

    def items(self, rows: list[int]) -> list[PublishedItem]:
        """The items of ``rows``, their elements read from the file in one pass."""
        lists = [name for name, c in self.cols.items() if c is not None and c.is_list and len(c) == len(self.ids)]
        spans = [(self.cols[name].starts[i], self.cols[name].ends[i])  # type: ignore[union-attr]
                 for i in rows for name in lists]
        values = iter(read_spans(self.path, self.location, self.stamp, spans))
        return [self._item(i, {name: next(values) for name in lists}) for i in rows]

    def _item(self, i: int, row: dict[str, Any]) -> PublishedItem:
        """Row ``i`` (its columns' values in ``row``) as an item; the errors of the row, as they were."""
        raw_id, location = self.ids[i], self.location
        where = f"row {i} (id {raw_id!r})"
        subset = row.get("subset") if isinstance(row.get("subset"), str) else None
        n_correct = row.get("num_correct")
        if n_correct is not None and not is_int(n_correct):
            raise DataError(f"{where}: num_correct is {n_correct!r}, not an integer", path=location,
                            field="num_correct")
        scores = row.get("scores")
        if scores is not None:
            rewards = _rb2_scores(scores, f"{location}: {where}")
            utilities = None if n_correct is None else tuple(int(j < n_correct) for j in range(len(rewards)))
            return PublishedItem(rewards, utilities, subset, _rb2_responses(row.get("text", _ABSENT)))
        credit = row.get("results")
        if not is_number(credit):
            raise DataError(f"{where}: no scores and no numeric result", path=location, field="results")
        return PublishedItem(None, None, subset, credit=float(credit))


_ABSENT = object()  # the text column is not a list of one element per id


def _rb2_responses(conversations: Any) -> tuple[str, ...] | None:
    """The responses a row's ``text`` element records, where it holds them as chat messages
    (custom dialogue formatting: user turn, then the assistant's response); None where it holds
    chat-template strings (the template may have changed the response's whitespace)."""
    if not isinstance(conversations, list):
        return None
    out = []
    for conversation in conversations:
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
        if not is_number(value) or not math.isfinite(value):
            raise DataError(f"{where}: score {str(s)[:40]!r} is not a finite number", field="scores")
        out.append(float(value))
    return tuple(out)



def _valid(check: Callable[[Any, str], Any], value: Any, where: str) -> bool:
    try:
        check(value, where)
    except DataError:
        return False
    return True


__all__ = ["read_rewardbench2"]
