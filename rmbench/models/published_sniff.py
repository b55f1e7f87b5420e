"""Which published format a file is, in words (:func:`sniff_format`): the error for a file given
as another source's names the format it is (``an RMB result file, not JudgeBench outputs``)."""

from __future__ import annotations

import json
from pathlib import Path

from rmbench.errors import DataError
from rmbench.models.published_stream import JsonReader, Source, lines

FORMAT_NAMES = {"rewardbench2": "a RewardBench 2 eval-set-scores file", "judgebench": "JudgeBench outputs",
                "rmb": "an RMB result file"}
"""Each source's file format, in words (the error for a file of another format names both)."""


def sniff_format(path: Path | str) -> str | None:
    """What a published file looks like, in words: one of :data:`FORMAT_NAMES`' values, or
    another format rmbench knows of (RewardBench 2's eval-set summary, JudgeBench's data without
    judgments); None when it is none of them (its reader then says what is wrong). Streamed: an
    array's first element and an object's member names are what it looks at."""
    try:
        with Source(path, str(path)) as src:
            return _sniff_document(JsonReader(src))
    except DataError:  # not one JSON document: JSON Lines, perhaps
        pass
    try:
        with Source(path, str(path)) as src:
            text = next((t for t in (x.decode("utf-8") for _, _, x in lines(src)) if t.strip()), "")
        row = json.loads(text)
    except (DataError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return _sniff_pair(set(row)) if isinstance(row, dict) else None


def _sniff_document(reader: JsonReader) -> str | None:
    """:func:`sniff_format` of a file that is one JSON document (a :class:`DataError` when it is not)."""
    c = reader.peek()
    if c == "[":
        first = None
        for i in reader.elements():
            if i == 0:
                first = reader.value()[0]
            else:
                reader.skip()
        reader.end()
        if isinstance(first, dict) and ("pair_uid" in first or "bon_uid" in first or "chosen_reward" in first):
            return FORMAT_NAMES["rmb"]
        return None
    if c != "{":
        reader.skip()
        reader.end()
        return None
    keys: set[str] = set()
    id_is_list = False
    for key in reader.members():
        keys.add(key)
        if key == "id":
            id_is_list = reader.peek() == "["
        reader.skip()
    reader.end()
    if id_is_list and ("scores" in keys or "results" in keys):
        return FORMAT_NAMES["rewardbench2"]
    if "model" in keys and "chat_template" in keys and "id" not in keys:
        return "a RewardBench 2 eval-set summary (per-subset scores, no per-item scores)"
    return _sniff_pair(keys)


def _sniff_pair(keys: set[str]) -> str | None:
    """A JudgeBench line by its fields (``pair_id``; ``judgments`` if it is an output)."""
    if "pair_id" in keys:
        return FORMAT_NAMES["judgebench"] if "judgments" in keys else "JudgeBench data (pairs without judgments)"
    return None


def own_format(source: str, path: Path | str) -> None:
    """One :class:`DataError` when the file is recognisably another format than ``source``'s:
    ``an RMB result file, not JudgeBench outputs``."""
    seen = sniff_format(path)
    if seen is not None and seen != FORMAT_NAMES[source]:
        raise DataError(f"{seen}, not {FORMAT_NAMES[source]} (published:{source} reads {FORMAT_NAMES[source]})",
                        path=str(path))



__all__ = ["FORMAT_NAMES", "own_format", "sniff_format"]
