"""Published files are streamed (issue 53, item 8): a first pass checks every row and holds only
each row's id and place, the items are read back for the groups a run scores, and the memory
is that of the rows read, not of the file. No timing: memory is traced (deterministic), and
what is held is counted."""

from __future__ import annotations

import json
import os
import pickle
import random
import tracemalloc

import pytest

from rmbench.errors import DataError
from rmbench.models import published_stream
from rmbench.models.published_files import read_published
from rmbench.models.published_items import RowItems
from rmbench.models.published_stream import JsonReader, Source

TEXT = "ünïcödé ✓ 😀 \"quoted\" \\ back\nslash "  # multi-byte characters: byte spans are not char spans


def _judgebench(path, n, chars):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            game = {"judgment": {"scores": [float(i % 3), 1.0]}, "decision": "A>B" if i % 3 > 1 else "B>A"}
            f.write(json.dumps({"pair_id": f"p{i}", "label": "A>B" if i % 2 else "B>A", "source": "livebench-math",
                                "response_A": TEXT * (chars // 40) + str(i), "response_B": str(i),
                                "judgments": [game]}, ensure_ascii=i % 2 == 0) + "\n")


def _rmb(path, n, chars, bom=False):
    items = [{"pair_uid": f"u{i}", "category_path": TEXT * (chars // 40) + str(i), "chosen_reward": i / 7,
              "reject_reward": -i, "is_correct": 1} for i in range(n)]
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + json.dumps(items, indent=2, ensure_ascii=False).encode())
    return items


def _rb2(path, n, chars):
    ids = [f"id{i}" for i in range(n)]
    answer = TEXT * (chars // 120)
    doc = {"id": ids, "model": "org/m", "num_correct": [1] * n, "subset": ["Math"] * n,
           "scores": [[i / 3, 0.5, 0.25] if i % 4 else None for i in range(n)],
           "results": [1 / (1 + i % 3) for i in range(n)],
           "text": [[[{"role": "user", "content": "q"}, {"role": "assistant", "content": answer + str(j)}]
                     for j in range(3)] for _ in range(n)]}
    path.write_text(json.dumps(doc, indent=4, sort_keys=True, ensure_ascii=False), encoding="utf-8")
    return doc


@pytest.mark.parametrize("source, make", [("judgebench", _judgebench), ("rmb", _rmb), ("rewardbench2", _rb2)])
def test_reading_a_file_holds_its_rows_places_not_its_rows(tmp_path, monkeypatch, source, make):
    """An 8 MB file read with a 64 kB window: the first pass's traced peak is under a quarter of
    the file, no item is built until asked for, and asking for 3 builds 3 (in file order, kept)."""
    monkeypatch.setattr(published_stream, "CHUNK", 1 << 16)
    path = tmp_path / "big.json"
    make(path, 200, 40_000)
    size = path.stat().st_size
    assert size > 8_000_000
    tracemalloc.start()
    try:
        published = read_published(source, path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 4, (peak, size)  # read whole, the peak was above the size of the file
    items = published.items
    assert isinstance(items, RowItems) and len(items) == 200 and items.held == 0
    key = {"judgebench": "p{}", "rmb": "pairwise:u{}", "rewardbench2": "id{}"}[source].format
    got = published.select([key(150), key(3), "not in the file", key(77)])
    assert list(got) == [key(150), key(3), key(77)] and items.held == 3
    assert published.select([key(3)])[key(3)] is got[key(3)]  # read once
    again = pickle.loads(pickle.dumps(published))  # a model sent to another process keeps its file's places
    assert again.select([key(150)]) == {key(150): got[key(150)]}


def test_items_read_back_are_the_documents_items_at_any_window(tmp_path, monkeypatch):
    """The byte spans of the first pass are right whatever the window (one byte to 1 MB), with a
    byte order mark and multi-byte characters: every item equals the one json.loads gives."""
    path = tmp_path / "M_result.json"
    items = _rmb(path, 30, 100, bom=True)
    rng = random.Random(0)
    for chunk in (1, 3, 7, 64, 1 << 20):
        monkeypatch.setattr(published_stream, "CHUNK", chunk)
        published = read_published("rmb", path)
        keys = [f"pairwise:{it['pair_uid']}" for it in items]
        rng.shuffle(keys)
        got = published.select(keys)
        for it in items:
            item = got[f"pairwise:{it['pair_uid']}"]
            assert item.rewards == (it["chosen_reward"], float(it["reject_reward"]))
            assert item.subset == it["category_path"]


def test_a_rewardbench2_file_reads_its_rows_from_its_columns(tmp_path, monkeypatch):
    """RewardBench 2's columns are streamed apart and a row is put together from them: scores,
    utilities, responses, a verdict row's credit; the mixed reading counts without reading."""
    monkeypatch.setattr(published_stream, "CHUNK", 5)
    path = tmp_path / "rb2.json"
    doc = _rb2(path, 12, 130)
    published = read_published("rewardbench2", path)
    assert published.rewards_are == "mixed" and "on 3 of its 12 items" in published.reading
    assert published.items.held == 0  # type: ignore[attr-defined]
    row = published.select(["id5"])["id5"]
    assert row.rewards == tuple(doc["scores"][5]) and row.utilities == (1, 0, 0) and row.subset == "Math"
    assert row.responses == tuple(c[-1]["content"] for c in doc["text"][5])
    verdict = published.select(["id4"])["id4"]
    assert verdict.rewards is None and verdict.credit == doc["results"][4]


def test_a_file_changed_after_its_first_pass_is_one_line(tmp_path):
    path = tmp_path / "out.jsonl"
    _judgebench(path, 5, 100)
    published = read_published("judgebench", path)
    with open(path, "a") as f:
        f.write("\n")
    with pytest.raises(DataError, match="changed while it was read") as info:
        published.select(["p1"])
    assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("text, says", [
    ('[1, 2', "Expecting ',' delimiter: line 1 column 6 (char 5)"),
    ('[1, 2]\n  x', "Extra data: line 2 column 3 (char 9)"),
    ('{"a": 1 "b"}', "Expecting ',' delimiter: line 1 column 9 (char 8)"),
    ('{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"),
    ('{1: 2}', "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ('[\n"ü", "unterminated]', "Unterminated string starting at: line 2 column 6 (char 7)"),
])
def test_a_syntax_error_names_its_place_in_the_whole_document_as_json_does(tmp_path, monkeypatch, text, says):
    """The reader's window is invisible in its errors: the message is json.loads's, positions in
    the whole document, at any window size."""
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    assert str(expected.value) == says
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    for chunk in (1, 2, 1 << 20):
        monkeypatch.setattr(published_stream, "CHUNK", chunk)
        with Source(path, str(path)) as src:
            reader = JsonReader(src)
            with pytest.raises(DataError) as info:
                reader.skip()
                reader.end()
        assert str(info.value) == f"{path}: not JSON: {says}", chunk


def test_the_source_hashes_every_byte_even_when_the_pass_stops_early(tmp_path):
    import hashlib

    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(3 << 20))
    with Source(path, str(path)) as src:
        src.read(10)
        assert src.sha256() == hashlib.sha256(path.read_bytes()).hexdigest()
