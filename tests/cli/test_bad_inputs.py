"""Bad data, bad rewards and long inputs: every user mistake is one clear error (file, line,
field; or group and response), exit code 2, no traceback and no run folder; --skip-bad-rows
leaves bad rows out and says so; truncation is explicit and counted."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import shutil
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from rmbench.catalog import load_catalog
from rmbench.cli.app import app
from rmbench.core import metrics as M
from rmbench.core.types import data_fingerprint
from rmbench.errors import ConfigError, DataError, ModelError, RMBenchError
from rmbench.results.storage.folder import RESULTS_FILE
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.loading import load_groups, load_groups_skipping

runner = CliRunner()

GOOD = [{"id": "g1", "prompt": "2+2?", "responses": ["4", "five"], "utilities": [1, 0]},
        {"id": "g3", "prompt": "Capital of France?", "responses": ["Paris", "Lyon", "Paris."], "utilities": [1, 0, 1]}]


def _j(row) -> bytes:
    return json.dumps(row).encode()


def _row(**changes) -> dict:
    """A third, otherwise valid group ("g2") with some fields changed (None: removed)."""
    row = {"id": "g2", "prompt": "q", "responses": ["a", "bb"], "utilities": [1, 0]}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


G1, G3 = _j(GOOD[0]), _j(GOOD[1])

# (case, lines of the file, line of the bad row, field named, words of the message)
JSONL_CASES = [
    ("invalid_json", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"],', G3], 2, None, "not valid JSON"),
    ("trailing_comma", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"], "utilities": [1, 0],}', G3],
     2, None, "not valid JSON"),
    ("truncated_last_line", [G1, G3, b'{"id": "g2", "prompt": "q", "resp'], 3, None, "not valid JSON"),
    ("cut_mid_string", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b', G3], 2, None,
     "not valid JSON (Unterminated string starting at column 48)"),
    ("array_row", [G1, b'[{"id": "g2"}]', G3], 2, None, "expected a JSON object, got an array"),
    ("string_row", [G1, b'"g2"', G3], 2, None, "expected a JSON object, got a string"),
    ("deeply_nested", [G1, b'{"id": "g2", "meta": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", G3], 2, None,
     "nested too deeply"),
    ("nested_too_deep", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"], "utilities": [1, 0], "meta": '
                         + b'{"a": ' * 500 + b"1" + b"}" * 501, G3], 2, "meta", "nested more than 64 levels deep"),
    ("missing_field", [G1, _j(_row(utilities=None)), G3], 2, "utilities", "missing"),
    ("null_field", [G1, _j({**_row(), "prompt": None}), G3], 2, "prompt", "missing"),
    ("missing_id", [G1, _j(_row(id=None)), G3], 2, "id", "missing"),
    ("prompt_wrong_type", [G1, _j(_row(prompt=5)), G3], 2, "prompt", "must be a string or a non-empty list"),
    ("empty_chat_prompt", [G1, _j(_row(prompt=[])), G3], 2, "prompt", "non-empty list of chat messages"),
    ("bad_chat_message", [G1, _j(_row(prompt=[{"role": "user"}])), G3], 2, "prompt", "message 0"),
    ("responses_wrong_type", [G1, _j(_row(responses="a")), G3], 2, "responses",
     "expected a list of strings, got a string"),
    ("response_item_wrong_type", [G1, _j(_row(responses=["a", 3])), G3], 2, "responses", "item 1 is a number"),
    ("empty_responses", [G1, _j(_row(responses=[], utilities=[])), G3], 2, "responses", "is empty"),
    ("single_response", [G1, _j(_row(responses=["a"], utilities=[1])), G3], 2, "responses", "at least 2"),
    ("utilities_too_short", [G1, _j(_row(responses=["a", "b", "c"])), G3], 2, "utilities",
     "2 utilities for 3 responses"),
    ("utilities_too_long", [G1, _j(_row(utilities=[1, 0, 0])), G3], 2, "utilities", "3 utilities for 2 responses"),
    ("utility_float", [G1, _j(_row(utilities=[1.5, 0])), G3], 2, "utilities", "item 0 is 1.5"),
    ("utility_bool", [G1, _j(_row(utilities=[True, False])), G3], 2, "utilities", "item 0 is True"),
    ("utility_string", [G1, _j(_row(utilities=["1", "0"])), G3], 2, "utilities", "item 0 is '1'"),
    ("utility_nan", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"], "utilities": [NaN, 0]}', G3],
     2, "utilities", "nan is not a valid value"),
    ("utility_infinity", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"], "utilities": [1, -Infinity]}',
                          G3], 2, "utilities", "-inf is not a valid value"),
    ("utility_overflow", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"], "utilities": [1e999, 0]}', G3],
     2, "utilities", "inf is not a valid value"),
    ("meta_nan", [G1, b'{"id": "g2", "prompt": "q", "responses": ["a", "b"], "utilities": [1, 0], '
                      b'"meta": {"score": NaN}}', G3], 2, "meta", "nan is not a valid value"),
    ("meta_not_object", [G1, _j(_row(meta=[1])), G3], 2, "meta", "expected an object"),
    ("equivalence_levels_wrong", [G1, _j(_row(equivalence_levels="1")), G3], 2, "equivalence_levels",
     "expected a list of integers"),
    ("subset_wrong_type", [G1, _j(_row(subset=3)), G3], 2, "subset", "expected a string"),
    ("duplicate_id", [G1, _j({**GOOD[0], "prompt": "again"}), G3], 2, "id", "duplicate group id 'g1'"),
    ("non_utf8_bytes", [G1, b'{"id": "g2", "prompt": "caf\xe9", "responses": ["a", "b"], "utilities": [1, 0]}', G3],
     2, None, "not valid UTF-8"),
]

# Data other kinds read: preference pairs and RewardBench 2 Ties rows.
PAIR = {"id": "p1", "prompt": "q", "chosen": "good", "rejected": "bad"}
TIES = {"id": "tied:0", "prompt": "q", "chosen": ["a", "b"], "rejected": ["c"]}
OTHER_KIND_CASES = [
    ("preference", "pref_missing_rejected", [_j(PAIR), _j({"id": "p2", "prompt": "q", "chosen": "x"})], 2,
     "rejected", "missing"),
    ("preference", "pref_chosen_wrong_type", [_j(PAIR), _j({"id": "p2", "prompt": "q", "chosen": 1, "rejected": "x"})],
     2, "chosen", "expected a string or a list of chat messages"),
    ("preference", "pref_duplicate_id", [_j(PAIR), _j(PAIR)], 2, "id", "duplicate group id 'p1'"),
    ("rb2_ties", "ties_num_correct_wrong", [_j(TIES), _j({**TIES, "id": "ref:0", "num_correct": 1})], 2,
     "num_correct", "is 1 but 'chosen' has 2"),
    ("rb2_ties", "ties_num_correct_type", [_j(TIES), _j({**TIES, "id": "ref:0", "num_correct": "2"})], 2,
     "num_correct", "expected an integer"),
    ("rb2_ties", "ties_bad_id", [_j(TIES), _j({**TIES, "id": "other:0"})], 2, "id", "other:0"),
]


def _csv_text(rows, header=("id", "prompt", "responses", "utilities")) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([json.dumps(r[h]) if isinstance(r[h], list) else r[h] for h in header])
    return buf.getvalue()


CSV_GOOD = _csv_text(GOOD[:1])  # header (line 1) and g1 (line 2); the bad row is line 3, then g3
CSV_G3 = _csv_text(GOOD[1:]).split("\n", 1)[1]
CSV_CASES = [
    ("csv_missing_cell", 'g2,q,"[""a"", ""b""]",\n', 3, "utilities", "missing"),
    ("csv_not_json_cell", "g2,q,a;b,\"[1, 0]\"\n", 3, "responses", "a list of strings written as JSON in the cell"),
    ("csv_wrong_length", 'g2,q,"[""a"", ""b"", ""c""]","[1, 0]"\n', 3, "utilities", "2 utilities for 3 responses"),
    ("csv_utility_nan", 'g2,q,"[""a"", ""b""]","[NaN, 0]"\n', 3, "utilities", "item 0 is nan"),
    ("csv_utility_text", 'g2,q,"[""a"", ""b""]","[""1"", 0]"\n', 3, "utilities", "item 0 is '1'"),
    ("csv_extra_cells", 'g2,q,"[""a"", ""b""]","[1, 0]",extra\n', 3, None, "has 5 cells, but the header has 4"),
    ("csv_too_few_cells", 'g2,q\n', 3, None, "has 2 cells, but the header has 4"),
    ("csv_duplicate_id", 'g1,again,"[""a"", ""b""]","[1, 0]"\n', 3, "id", "duplicate group id 'g1'"),
    ("csv_non_utf8", 'g2,caf\udce9,"[""a"", ""b""]","[1, 0]"\n', 3, "prompt", "not valid UTF-8"),
    ("csv_single_response", 'g2,q,"[""a""]","[1]"\n', 3, "responses", "at least 2"),
]


def _parquet(path, rows, schema) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(schema)), path)


def _pq_schema(utilities="int64", prompt="string", responses="list_string", meta=False):
    import pyarrow as pa

    types = {"int64": pa.list_(pa.int64()), "float64": pa.list_(pa.float64()), "string": pa.string(),
             "binary": pa.binary(), "list_string": pa.list_(pa.string())}
    schema = [("id", pa.string()), ("prompt", types[prompt]), ("responses", types[responses]),
              ("utilities", types[utilities])]
    if meta:
        schema.append(("meta", pa.struct([("score", pa.float64())])))
    return schema


# (case, rows, schema options, row number of the bad row, field, words; every row is bad where
# a whole column has the wrong type, so --skip-bad-rows leaves nothing to score)
PARQUET_CASES = [
    ("pq_null_field", [GOOD[0], _row(utilities=None), GOOD[1]], {}, 2, "utilities", "missing"),
    ("pq_empty_responses", [GOOD[0], _row(responses=[], utilities=[]), GOOD[1]], {}, 2, "responses", "is empty"),
    ("pq_wrong_length", [GOOD[0], _row(utilities=[1, 0, 1]), GOOD[1]], {}, 2, "utilities",
     "3 utilities for 2 responses"),
    ("pq_duplicate_id", [GOOD[0], {**GOOD[0], "prompt": "again"}, GOOD[1]], {}, 2, "id", "duplicate group id 'g1'"),
    ("pq_nan_meta", [{**GOOD[0], "meta": {"score": 1.0}}, _row(meta={"score": math.nan}),
                     {**GOOD[1], "meta": None}], {"meta": True}, 2, "meta", "nan is not a valid value"),
    ("pq_float_utilities", [{**g, "utilities": [float(u) for u in g["utilities"]]} for g in GOOD],
     {"utilities": "float64"}, 1, "utilities", "item 0 is 1.0"),
    ("pq_binary_prompt", [{**g, "prompt": g["prompt"].encode() + b"\xff"} for g in GOOD], {"prompt": "binary"}, 1,
     "prompt", "got bytes"),
    ("pq_responses_wrong_type", [{**g, "responses": "|".join(g["responses"])} for g in GOOD],
     {"responses": "string"}, 1, "responses", "expected a list of strings, got a string"),
]
COLUMN_WIDE = {"pq_float_utilities", "pq_binary_prompt", "pq_responses_wrong_type"}


def _write_case(folder, fmt: str, content, kind: str = "groups"):
    """The bad file and a task entry "bad" of ``kind`` that reads it; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path = folder / "bad.jsonl"
        path.write_bytes(b"\n".join(content) + b"\n")
    elif fmt == "csv":
        path = folder / "bad.csv"
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    else:
        path = folder / "bad.parquet"
        rows, options = content
        _parquet(path, rows, _pq_schema(**options))
    (folder / "bad.yaml").write_text(f"name: bad\nkind: {kind}\nversion: 1\nargs:\n  path: {path.name}\n")
    return path


def _good_fingerprint(tmp_path, rows) -> str:
    path = tmp_path / "good" / "good.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path.parent / "good.yaml").write_text("name: good\nkind: groups\nargs:\n  path: good.jsonl\n")
    return data_fingerprint(load_groups(load_catalog([path.parent]).task_spec("good"))[1])


def _cli_eval(folder, *extra, model="length"):
    out = folder / "run"
    result = runner.invoke(app, ["eval", "--include", str(folder), "--tasks", "bad", "--model", model,
                                 "--bootstrap", "0", "--out", str(out), *extra], env={"COLUMNS": "300"})
    return result, out


def _assert_one_clear_error(result, out, *fragments):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.output.count("error:") == 1, result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert not out.exists(), "a failed run must write nothing"


def _check_bad_row(tmp_path, path, line, field, words, column_wide=False, good_rows=None):
    folder = path.parent
    spec = load_catalog([folder]).task_spec("bad")
    # 1. the library: one DataError that names file, line and field
    with pytest.raises(DataError) as info:
        load_groups(spec)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field), str(err)
    assert words in str(err)
    where = f"{path}, line {line}" + (f", field '{field}'" if field else "")
    assert str(err).startswith(where + ":"), str(err)
    # 2. the CLI: exit 2, that one message, no traceback, nothing written
    result, out = _cli_eval(folder)
    _assert_one_clear_error(result, out, where, words)
    # 3. --skip-bad-rows: the row is left out, counted, quoted and warned about
    result, out = _cli_eval(folder, "--skip-bad-rows")
    if column_wide:
        _assert_one_clear_error(result, out, "has no comparison groups", "rows were bad and skipped")
        return
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "skipped 1 bad row" in result.output
    doc = json.loads((out / RESULTS_FILE).read_text())
    task = doc["tasks"][0]
    assert doc["config"]["skip_bad_rows"] is True
    assert task["skipped_rows"]["count"] == 1
    first = task["skipped_rows"]["first"][0]
    assert (first["path"], first["line"], first["field"]) == (str(path), line, field)
    assert words in first["error"]
    # The fingerprint (and so the comparability key) is that of the rows kept.
    assert task["data_fingerprint"] == _good_fingerprint(tmp_path, good_rows or GOOD)
    assert "bad data row skipped" in (out / "leaderboard.md").read_text()


@pytest.mark.parametrize("case, lines, line, field, words", JSONL_CASES, ids=[c[0] for c in JSONL_CASES])
def test_bad_jsonl_row(tmp_path, case, lines, line, field, words):
    path = _write_case(tmp_path / "data", "jsonl", lines)
    _check_bad_row(tmp_path, path, line, field, words)


@pytest.mark.parametrize("kind, case, lines, line, field, words", OTHER_KIND_CASES,
                         ids=[c[1] for c in OTHER_KIND_CASES])
def test_bad_row_of_other_kinds(tmp_path, kind, case, lines, line, field, words):
    path = _write_case(tmp_path / "data", "jsonl", lines, kind=kind)
    spec = load_catalog([path.parent]).task_spec("bad")
    with pytest.raises(DataError) as info:
        load_groups(spec)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field), str(info.value)
    assert words in str(info.value)
    result, out = _cli_eval(path.parent)
    _assert_one_clear_error(result, out, f"{path}, line {line}, field '{field}'", words)
    _, groups, bad = load_groups_skipping(spec)
    assert len(groups) == 1 and [(e.line, e.field) for e in bad] == [(line, field)]


@pytest.mark.parametrize("case, bad_line, line, field, words", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_bad_csv_row(tmp_path, case, bad_line, line, field, words):
    path = _write_case(tmp_path / "data", "csv", CSV_GOOD + bad_line + CSV_G3)
    _check_bad_row(tmp_path, path, line, field, words)


def test_csv_line_numbers_count_multiline_cells(tmp_path):
    """A quoted cell over three lines: the bad record after it is reported at its own first line."""
    text = CSV_GOOD + 'g3,"line one\nline two\nline three","[""a"", ""b""]","[1, 0]"\n' + 'g2,q,"[""a""]",\n'
    path = _write_case(tmp_path / "data", "csv", text)
    with pytest.raises(DataError) as info:
        load_groups(load_catalog([path.parent]).task_spec("bad"))
    assert (info.value.line, info.value.field) == (6, "utilities")


@pytest.mark.parametrize("case, rows, options, line, field, words", PARQUET_CASES, ids=[c[0] for c in PARQUET_CASES])
def test_bad_parquet_row(tmp_path, case, rows, options, line, field, words):
    pytest.importorskip("pyarrow")
    path = _write_case(tmp_path / "data", "parquet", (rows, options))
    good_rows = [{k: v for k, v in r.items() if k != "meta" or v is not None} for r in (rows[0], rows[2])] \
        if case not in COLUMN_WIDE else None
    _check_bad_row(tmp_path, path, line, field, words, column_wide=case in COLUMN_WIDE, good_rows=good_rows)


# --- whole-file errors: fail even with --skip-bad-rows -------------------------------------------

def _gzip(data: bytes) -> bytes:
    return gzip.compress(data)


WHOLE_FILE_CASES = [
    ("empty", "bad.jsonl", b"", "the file is empty"),
    ("only_blank_lines", "bad.jsonl", b"\n  \n\t\n", "the file is empty"),
    ("gzip", "bad.jsonl", _gzip(G1 + b"\n"), "it is gzip-compressed"),
    ("utf16", "bad.jsonl", (G1 + b"\n").decode().encode("utf-16"), "UTF-16"),
    ("utf16_no_bom", "bad.jsonl", (G1 + b"\n").decode().encode("utf-16-le"), "NUL bytes"),
    ("parquet_named_jsonl", "bad.jsonl", b"PAR1\x00\x00", "it is a parquet file"),
    ("latin1_everywhere", "bad.jsonl", '{"id": "g1", "prompt": "caf\u00e9", "responses": ["\u00e0", "b"], '
                                       '"utilities": [1, 0]}\n'.encode("latin-1"), "UTF-8"),
    ("csv_empty", "bad.csv", b"", "the file is empty"),
    ("csv_header_only", "bad.csv", b"id,prompt,responses,utilities\n", "has a header but no rows"),
    ("csv_duplicate_column", "bad.csv", b"id,prompt,prompt,utilities\ng1,a,b,c\n", "names column 'prompt' twice"),
    ("csv_gzip", "bad.csv", _gzip(b"id,prompt\n"), "gzip-compressed"),
    ("parquet_garbage", "bad.parquet", b"this is not parquet at all", "not a readable parquet file"),
]


@pytest.mark.parametrize("case, name, data, words", WHOLE_FILE_CASES, ids=[c[0] for c in WHOLE_FILE_CASES])
def test_whole_file_errors_always_fail(tmp_path, case, name, data, words):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / name).write_bytes(data)
    (folder / "bad.yaml").write_text(f"name: bad\nkind: groups\nargs:\n  path: {name}\n")
    for extra in ([], ["--skip-bad-rows"]):
        result, out = _cli_eval(folder, *extra)
        _assert_one_clear_error(result, out, str(folder / name), words)


def test_empty_parquet_and_missing_file(tmp_path):
    pytest.importorskip("pyarrow")
    folder = tmp_path / "data"
    folder.mkdir()
    _parquet(folder / "bad.parquet", [], _pq_schema())
    (folder / "bad.yaml").write_text("name: bad\nkind: groups\nargs:\n  path: bad.parquet\n")
    for extra in ([], ["--skip-bad-rows"]):
        _assert_one_clear_error(*_cli_eval(folder, *extra), "the file is empty")
    (folder / "bad.parquet").unlink()
    for extra in ([], ["--skip-bad-rows"]):
        _assert_one_clear_error(*_cli_eval(folder, *extra), "no such file")
    result = runner.invoke(app, ["eval", "--model", "length", "--data", f"ties_sample={folder / 'none.jsonl'}",
                                 "--skip-bad-rows", "--out", str(tmp_path / "run")])
    _assert_one_clear_error(result, tmp_path / "run", "none.jsonl: no such file")


def test_a_folder_given_to_data_says_it_is_a_folder_and_what_the_task_reads(tmp_path):
    """Not "no such file": the folder is there, the task wants a file of its rows (issue 44, item 7)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    result = runner.invoke(app, ["eval", "--model", "length", "--data", f"ties_sample={folder}",
                                 "--out", str(tmp_path / "run")], env={"COLUMNS": "300"})
    _assert_one_clear_error(result, tmp_path / "run", f"{folder}: is a folder, but task 'ties_sample'",
                            "reads one file", "--data ties_sample=FILE.jsonl")
    assert "no such file" not in result.output
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "rm_bench",
                                 "--data", f"rm_bench=chat={folder}", "--data", f"rm_bench=code={folder}",
                                 "--out", str(tmp_path / "run")],
                           env={"COLUMNS": "300"})
    _assert_one_clear_error(result, tmp_path / "run", "is a folder", "a file per part", "RM-Bench rows (prompt: text")


def test_every_row_bad_fails_even_when_skipping(tmp_path):
    path = _write_case(tmp_path / "data", "jsonl", [b"{", _j(_row(utilities=None)), b"[]"])
    result, out = _cli_eval(path.parent, "--skip-bad-rows")
    _assert_one_clear_error(result, out, "has no comparison groups: all 3 rows were bad and skipped",
                            f"{path}, line 1: not valid JSON")


def test_many_bad_rows_are_counted_and_the_first_quoted(tmp_path):
    lines = [G1] + [_j(_row(id=f"b{i}", utilities=[1])) for i in range(8)] + [b"oops", G3]
    path = _write_case(tmp_path / "data", "jsonl", lines)
    result, out = _cli_eval(path.parent, "--skip-bad-rows")
    assert result.exit_code == 0, result.output
    skipped = json.loads((out / RESULTS_FILE).read_text())["tasks"][0]["skipped_rows"]
    assert skipped["count"] == 9 and len(skipped["first"]) == 5
    assert [f["line"] for f in skipped["first"]] == [2, 3, 4, 5, 6]
    assert "skipped 9 bad rows" in result.output and "first:" in result.output


def test_compare_reloads_a_run_that_skipped_rows(tmp_path):
    path = _write_case(tmp_path / "data", "jsonl", [G1, b"{", G3])
    for model in ("oracle", "length"):
        result = runner.invoke(app, ["eval", "--include", str(path.parent), "--tasks", "bad", "--model", model,
                                     "--skip-bad-rows", "--bootstrap", "0", "--out", str(tmp_path / model)])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["compare", str(tmp_path / "oracle"), str(tmp_path / "length"), "--bootstrap", "20"])
    assert result.exit_code == 0, result.output


# --- accepted: what is odd but not wrong ----------------------------------------------------------

def test_accepted_variants(tmp_path):
    """Blank lines, CRLF, a UTF-8 BOM, no final newline, integer ids, non-ASCII text: all fine."""
    rows = [_j({**GOOD[0], "id": 1, "prompt": "Qu'est-ce que c'est ? \u00e9\u00e8 \U0001F600"}), b"", b"   ", G3]
    path = tmp_path / "data" / "bad.jsonl"
    _write_case(path.parent, "jsonl", rows)
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(rows))  # BOM, CRLF, no final newline
    _, groups = load_groups(load_catalog([path.parent]).task_spec("bad"))
    assert [g.id for g in groups] == ["1", "g3"]
    result, out = _cli_eval(path.parent)
    assert result.exit_code == 0, result.output
    assert json.loads((out / RESULTS_FILE).read_text())["tasks"][0]["skipped_rows"] == {"count": 0, "first": []}


def test_csv_and_parquet_read_like_jsonl(tmp_path):
    pytest.importorskip("pyarrow")
    expected = _good_fingerprint(tmp_path, GOOD)
    csv_path = _write_case(tmp_path / "csv", "csv", "\ufeff" + _csv_text(GOOD).replace("\n", "\r\n"))
    pq_path = _write_case(tmp_path / "pq", "parquet", (GOOD, {}))
    for path in (csv_path, pq_path):
        _, groups = load_groups(load_catalog([path.parent]).task_spec("bad"))
        assert data_fingerprint(groups) == expected, path
    # Chat prompts in CSV cells are JSON; any other text, even "[1, 2]", is the prompt itself.
    chat = [{"role": "user", "content": "hi"}]
    text = _csv_text([{**GOOD[0], "prompt": json.dumps(chat)}, {**GOOD[1], "prompt": "[1, 2] sorted?"}])
    path = _write_case(tmp_path / "chat", "csv", text)
    _, groups = load_groups(load_catalog([path.parent]).task_spec("bad"))
    assert groups[0].prompt[0].content == "hi" and groups[1].prompt == "[1, 2] sorted?"


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_ten_megabyte_response_is_accepted(tmp_path, fmt):
    """A 10 MB response is data, not an error: it loads in seconds and scores with a model that
    does not tokenise; transformers models must truncate it (--max-length, below)."""
    huge = "x" * 10_000_000
    rows = [GOOD[0], {"id": "big", "prompt": "q", "responses": [huge, "short"], "utilities": [0, 1]}]
    content = [_j(r) for r in rows] if fmt == "jsonl" else _csv_text(rows)
    path = _write_case(tmp_path / "data", fmt, content)
    start = time.perf_counter()
    result, out = _cli_eval(path.parent)
    assert result.exit_code == 0, result.output
    assert time.perf_counter() - start < 60
    rewards = [json.loads(line) for line in (out / "rewards.jsonl").read_text().splitlines()]
    assert max(r["reward"] for r in rewards) == 10_000_000


# --- bad rewards ----------------------------------------------------------------------------------

REWARD_FUNCTIONS = '''
import math

def nan_rm(pairs):
    return [math.nan if r == "five" else 1.0 for _, r in pairs]

def inf_rm(pairs):
    return [-math.inf if r == "Lyon" else 1.0 for _, r in pairs]

def short_rm(pairs):
    return [1.0] * (len(pairs) - 1)

def long_rm(pairs):
    return [1.0] * (len(pairs) + 2)

def string_rm(pairs):
    return ["high" if r == "five" else 1.0 for _, r in pairs]

def numeric_string_rm(pairs):
    return ["0.5" if r == "five" else 1.0 for _, r in pairs]

def none_rm(pairs):
    return [None if r == "five" else 1.0 for _, r in pairs]

def scalar_rm(pairs):
    return 1.0

def raising_rm(pairs):
    raise RuntimeError("boom")


class NanModel:
    def score(self, batch):
        return [math.nan if r.response == "five" else 1.0 for r in batch]
'''

# The engine batches by length, longest first: the first batch holds only "Paris." (g3, response 2).
BAD_REWARD_CASES = [
    ("nan_rm", ["non-finite reward (nan)", "group 'g1', response 1"]),
    ("inf_rm", ["non-finite reward (-inf)", "group 'g3', response 1"]),
    ("short_rm", ["returned 0 rewards for a batch of 1 responses", "group 'g3', response 2"]),
    ("long_rm", ["returned 3 rewards for a batch of 1 responses", "group 'g3', response 2"]),
    ("string_rm", ["not numbers: str 'high'", "group 'g1', response 1"]),
    ("numeric_string_rm", ["not numbers: str '0.5'", "group 'g1', response 1"]),
    ("none_rm", ["not numbers: NoneType", "group 'g1', response 1"]),
    ("scalar_rm", ["returned float, not a list of floats", "group 'g3', response 2"]),
    ("raising_rm", ["RuntimeError: boom", "group 'g3', response 2"]),
]


@pytest.mark.parametrize("func, fragments", BAD_REWARD_CASES, ids=[c[0] for c in BAD_REWARD_CASES])
def test_bad_rewards_are_one_clear_error(tmp_path, func, fragments):
    path = _write_case(tmp_path / "data", "jsonl", [G1, G3])
    (path.parent / "rm.py").write_text(REWARD_FUNCTIONS)
    result, out = _cli_eval(path.parent, "--no-cache", model=f"python:{path.parent / 'rm.py'}:{func}")
    _assert_one_clear_error(result, out, *fragments)


def test_bad_rewards_from_a_plugin_class(tmp_path):
    """An adapter that is not a python: function is checked by the engine, with the same message."""
    path = _write_case(tmp_path / "data", "jsonl", [G1, G3])
    (path.parent / "rm.py").write_text(REWARD_FUNCTIONS)
    (path.parent / "nan.toml").write_text('type = "model"\nname = "nan-model"\nkind = "rm.py:NanModel"\n')
    result, out = _cli_eval(path.parent, "--no-cache", model="nan-model")
    _assert_one_clear_error(result, out, "non-finite reward (nan)", "group 'g1', response 1")


PLUGIN_KIND = """
from rmbench import RewardModel


class KeywordRM(RewardModel):
    def __init__(self, keyword="please"):
        self.keyword = keyword

    def score(self, batch):
        return [float(r.response.count(self.keyword)) for r in batch]
"""


def test_a_misspelt_model_arg_is_one_line_naming_the_kind_and_its_keys(tmp_path):
    """Issue 44: for built-in, wrapper and plugin kinds alike, refused before any weights load or
    server is called (no such model folder, no server address: the argument is named first)."""
    (tmp_path / "plug_rm.py").write_text(PLUGIN_KIND)
    (tmp_path / "kw.yaml").write_text("type: model\nname: kw\nkind: plug_rm.py:KeywordRM\n")
    cases = [
        ("judge:x", "concurency=2", "error: model 'judge:x': unknown argument 'concurency' for kind 'judge'; "
                                    "did you mean 'concurrency'? (it takes: model, base_url, api_key_env, "),
        ("implicit:no/such/model", "bta=1", "error: model 'implicit:no/such/model': unknown argument 'bta' for kind "
                                            "'implicit'; did you mean 'beta'? (it takes: model, ref, beta, "),
        ("discretize:length", "TT=8", "error: model 'discretize:length': unknown argument 'TT' for kind "
                                      "'discretize'; did you mean 'T'? (it takes: inner, T, p, "),
        ("discretize:length", "inner={kind: seqcls, args: {model: x, num_label: 2}}",
         "error: model 'discretize:length', argument 'inner': model 'seqcls': unknown argument 'num_label' for "
         "kind 'seqcls'; did you mean 'num_labels'?"),
        ("oracle", "foo=1", "error: model 'oracle': unknown argument 'foo' for kind 'oracle' (it takes no arguments)"),
        ("kw", "keywrod=thanks", f"error: model 'kw': unknown argument 'keywrod' for kind "
                                 f"'{tmp_path / 'plug_rm.py'}:KeywordRM'; did you mean 'keyword'? (it takes: keyword)"),
    ]
    for model, arg, words in cases:
        out = tmp_path / "run"
        result = runner.invoke(app, ["eval", "--include", str(tmp_path), "--model", model, "--model-arg", arg,
                                     "--tasks", "ties_sample", "--out", str(out)], env={"COLUMNS": "60"})
        _assert_one_clear_error(result, out, words)
        assert len(result.output.strip().splitlines()) == 1, result.output  # never wrapped, however narrow


@pytest.mark.parametrize("fn, args", [
    (M.pairwise_accuracy, ([1.0, math.nan],)),
    (M.discrimination, ([1.0, math.nan], 0.1)),
    (M.specificity, ([math.inf, 0.0], 0.1)),
    (M.sign_accuracy, ([1.0], [math.nan])),
    (M.ds_auc, ([math.nan], [0.0])),
    (M.balanced_best, ([1.0], [-math.inf])),
    (M.reward_margin, ([math.nan], 1.0)),
    (M.reward_sigma, ([1.0, math.nan],)),
    (M.ties_prompt_stats, ([1.0, math.nan], [0.0])),
])
def test_metrics_refuse_non_finite_rewards(fn, args):
    with pytest.raises(ModelError, match="must be finite numbers"):
        fn(*args)


def test_summary_refuses_nan_rewards():
    from rmbench.core.types import ComparisonGroup
    from rmbench.results.statistics.summary import summarize

    groups = [ComparisonGroup(id="g", prompt="q", responses=("a", "b"), utilities=(1, 0))]
    with pytest.raises(ModelError, match="1 of 2 values are NaN"):
        summarize("t", groups, np.array([1.0, math.nan]), (0.0,), n_bootstrap=10)


def test_compare_with_a_nan_reward_on_disk_is_a_clear_error(tmp_path):
    for model in ("oracle", "length"):
        assert runner.invoke(app, ["eval", "--model", model, "--bootstrap", "0", "--limit", "5",
                                   "--out", str(tmp_path / model)]).exit_code == 0
    rewards = tmp_path / "length" / "rewards.jsonl"
    lines = rewards.read_text().splitlines()
    row = json.loads(lines[0])
    row["reward"] = math.nan
    rewards.write_text("\n".join([json.dumps(row)] + lines[1:]) + "\n")
    result = runner.invoke(app, ["compare", str(tmp_path / "oracle"), str(tmp_path / "length"), "--bootstrap", "10"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"error: {rewards}, line 1: NaN is not a reward" in result.output  # the file and line (issue 53)


# --- long inputs: truncation is explicit, counted and never silent --------------------------------

LONG_PROMPT = "The capital of France is Paris. London is in England. " * 6


def _long_data(folder, huge: str | None = None):
    rows = [{"id": "short", "prompt": "Pick a number.", "responses": ["7", "red"], "utilities": [1, 0]},
            {"id": "long", "prompt": LONG_PROMPT, "responses": ["Paris", "London"], "utilities": [1, 0]}]
    if huge is not None:
        rows.append({"id": "huge", "prompt": "q", "responses": [huge, "no"], "utilities": [1, 0]})
    return _write_case(folder, "jsonl", [_j(r) for r in rows])


def _tiny_config(model: str, folder, **kwargs) -> EvalConfig:
    from rmbench.models import Runtime

    return EvalConfig(model=model, tasks=("bad",), include=(str(folder),), n_bootstrap=0, use_cache=False,
                      runtime=Runtime(dtype="float32", device="cpu"), **kwargs)


def _lengths(model_spec: str, folder) -> list[int]:
    from rmbench.models import Runtime, build_model, parse_model_spec
    from rmbench.scoring.engine import requests_for

    model = build_model(parse_model_spec(model_spec), Runtime(dtype="float32", device="cpu"))
    groups = load_groups(load_catalog([folder]).task_spec("bad"))[1]
    return model.lengths(requests_for(groups))


@pytest.mark.parametrize("kind", ["implicit", "seqcls"])
def test_truncation_is_counted_recorded_and_footnoted(tmp_path, tiny, kind):
    from rmbench.results.publishing.leaderboard import build_leaderboard
    from rmbench.results.publishing.leaderboard_render import render
    from rmbench.results.storage.folder import load_run

    folder = tmp_path / "data"
    _long_data(folder)
    spec = f"{kind}:{tiny['causal' if kind == 'implicit' else 'seqcls']}"
    lengths = _lengths(spec, folder)
    limit = 40
    expected = sum(n > limit for n in lengths)
    assert 0 < expected < len(lengths), lengths
    warnings = []
    doc = evaluate(_tiny_config(spec, folder, max_length=limit), out_dir=tmp_path / "run", warn=warnings.append)
    assert doc.tasks[0].truncated_texts == expected
    assert doc.config.max_length == limit and doc.config.truncation == "left"
    assert doc.execution.model["max_length"] == limit and doc.execution.model["truncation"] == "left"
    assert any(f"{expected} of {len(lengths)} texts are longer than max_length {limit}" in w for w in warnings)
    board = build_leaderboard([load_run(tmp_path / "run")])
    assert any(f"{expected} of {len(lengths)} texts truncated to {limit} tokens on the left" in n for n in board.notes)
    assert "truncated to 40 tokens" in render(board, "md") and "truncated to 40 tokens" in render(board, "html")
    untruncated = evaluate(_tiny_config(spec, folder))
    assert untruncated.tasks[0].truncated_texts == 0
    assert untruncated.model.fingerprint != doc.model.fingerprint
    if kind == "implicit":
        # Cut on the right, a long prompt leaves the implicit RM no response tokens to score.
        with pytest.raises(RMBenchError, match="group 'long', response 0: the response has no tokens after truncation"):
            evaluate(_tiny_config(spec, folder, max_length=limit, truncation="right"), warn=lambda m: None)
        return
    # Right truncation is another scoring function: another fingerprint and other numbers.
    right = evaluate(_tiny_config(spec, folder, max_length=limit, truncation="right"), warn=lambda m: None)
    assert right.model.fingerprint not in (doc.model.fingerprint, untruncated.model.fingerprint)
    assert right.execution.model["truncation"] == "right"
    assert [m.to_json() for m in right.records()] != [m.to_json() for m in doc.records()]


def test_text_longer_than_the_context_needs_max_length(tmp_path, tiny):
    """No --max-length and a text longer than the model's context: refused before scoring,
    naming group and response and the fix; with --max-length it scores (and counts)."""
    folder = tmp_path / "data"
    _long_data(folder, huge="Paris " * 2000)
    model = f"implicit:{tiny['causal']}"
    with pytest.raises(ConfigError, match=r"group 'huge', response 0 is \d+ tokens, longer than the model's "
                                          r"context of 256; pass --max-length 256"):
        evaluate(_tiny_config(model, folder))
    with pytest.raises(ConfigError, match="--max-length 1000 is longer than the model's context of 256"):
        evaluate(_tiny_config(model, folder, max_length=1000))
    doc = evaluate(_tiny_config(model, folder, max_length=256), warn=lambda m: None)
    assert doc.tasks[0].truncated_texts >= 1
    result, out = _cli_eval(folder, "--no-cache", "--dtype", "float32", model=model)
    _assert_one_clear_error(result, out, "group 'huge', response 0", "--max-length 256")


def test_truncation_options_through_the_cli(tmp_path, tiny):
    folder = tmp_path / "data"
    _long_data(folder)
    model = f"seqcls:{tiny['seqcls']}"
    result, out = _cli_eval(folder, "--no-cache", "--dtype", "float32", "--max-length", "40", "--truncation", "right",
                            model=model)
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "lose tokens on the right" in result.output
    assert "note: " in result.output and "truncated to 40 tokens on the right" in result.output
    doc = json.loads((out / RESULTS_FILE).read_text())
    assert doc["tasks"][0]["truncated_texts"] > 0 and doc["config"]["truncation"] == "right"
    shutil.rmtree(out)
    for extra, words in ((["--truncation", "middle"], "--truncation must be 'left'"),
                         (["--max-length", "0"], "--max-length must be a positive integer"),
                         (["--dtype", "int8"], "--dtype must be one of 'auto', 'float32', 'bfloat16', 'float16', "
                                               "got 'int8'"),
                         (["--device", "tpu"], "--device must be one of 'auto', 'cpu', 'cuda', 'mps', got 'tpu'")):
        _assert_one_clear_error(*_cli_eval(folder, *extra), words)
    # A model that does not tokenise: said, not silently ignored.
    result, out = _cli_eval(folder, "--max-length", "40")
    assert result.exit_code == 0 and "do not apply to model 'length'" in result.output
    assert json.loads((out / RESULTS_FILE).read_text())["tasks"][0]["truncated_texts"] is None


def test_truncation_reaches_inner_and_reference_models(tiny):
    from rmbench.core.specs import ModelSpec
    from rmbench.models import Runtime, Truncation, build_model, parse_model_spec
    from rmbench.models.base import tokenized_parts

    runtime = Runtime(dtype="float32", device="cpu")
    inner = ModelSpec.make("im", "implicit", {"model": str(tiny["causal"]), "ref": str(tiny["causal_ref"])})
    spec = ModelSpec.make("d", "discretize", {"inner": inner.to_json()})
    model = build_model(spec, runtime)
    parts = tokenized_parts(model)  # discretize (batching by its inner model's tokens), inner, reference
    assert len(parts) == 3 and parts[1] is model.inner and parts[2] is parts[1].reference
    truncated = build_model(spec, runtime, Truncation(32, "right"))
    assert all(p.truncation == Truncation(32, "right") for p in tokenized_parts(truncated))
    assert truncated.fingerprint() != model.fingerprint()
    assert tokenized_parts(build_model(parse_model_spec("length"), runtime)) == []


def test_skipping_many_bad_rows_reads_the_file_once(tmp_path, monkeypatch):
    """Built-in loaders skip a rejected row in place: one pass however many rows are bad."""
    import rmbench.tasks.loading as runner_module

    lines = [_j(_row(id=f"r{i}", utilities=None if i % 2 else [1, 0])) for i in range(4000)]
    path = _write_case(tmp_path / "data", "jsonl", lines)
    calls = []
    real = runner_module.build_task
    monkeypatch.setattr(runner_module, "build_task", lambda spec: calls.append(spec) or real(spec))
    _, groups, bad = load_groups_skipping(load_catalog([path.parent]).task_spec("bad"))
    assert len(groups) == 2000 and len(bad) == 2000 and len(calls) == 1
    assert [e.line for e in bad[:3]] == [2, 4, 6] and {e.field for e in bad} == {"utilities"}


PLUGIN_LOADER = '''
from rmbench.tasks.base import Task
from rmbench.tasks.rows import RowReader
from rmbench.tasks.sources import iter_rows


class PairsTask(Task):
    """A plugin loader written without RowReader.skippable()."""

    def __init__(self, path):
        self.path = path

    def groups(self):
        seen = set()
        for location, line, row in iter_rows(path=self.path):
            r = RowReader(row, location, line)
            gid = r.string("id")
            if gid in seen:
                raise r.error("id", "duplicate")
            seen.add(gid)
            yield r.group(id=gid, prompt=r.prompt(), responses=(r.string("chosen"), r.string("rejected")),
                          utilities=(1, 0))
'''


def test_skipping_works_for_plugin_loaders_too(tmp_path):
    """A loader that knows nothing of skipping: the task is read again without each bad row."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "pairs_task.py").write_text(PLUGIN_LOADER)
    rows = [_j(PAIR), _j({"id": "p2", "prompt": "q"}), b"{oops", _j({**PAIR, "id": "p3"}), _j(PAIR),
            _j({**PAIR, "id": "p4", "chosen": 5})]
    (folder / "pairs.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    (folder / "bad.yaml").write_text("name: bad\nkind: pairs_task.py:PairsTask\nargs:\n  path: pairs.jsonl\n")
    spec = load_catalog([folder]).task_spec("bad")
    _, groups, bad = load_groups_skipping(spec)
    assert [g.id for g in groups] == ["p1", "p3"]
    assert [(e.line, e.field) for e in bad] == [(2, "chosen"), (3, None), (5, "id"), (6, "chosen")]
    result, out = _cli_eval(folder, "--skip-bad-rows")
    assert result.exit_code == 0 and "skipped 4 bad rows" in result.output
    shutil.rmtree(out)
    _assert_one_clear_error(*_cli_eval(folder), f"{folder / 'pairs.jsonl'}, line 2, field 'chosen': missing")


def test_a_file_of_another_tasks_schema_names_both_schemas(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "2+2?", "chosen": "4", "rejected": "5"}) + "\n")
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "ties_sample",
                                 "--data", f"ties_sample={pairs}", "--out", str(out)])
    assert result.exit_code == 2, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("error:"))
    assert "pairs.jsonl, line 1, field 'id': missing" in " ".join(result.output.split())
    text = " ".join(result.output.split())
    assert "this task reads RewardBench 2 rows" in text and "looks like preference pairs" in text
    assert "task kind 'preference'" in text and line and "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize("kind, row, expected, looks", [
    ("preference", {"id": "tied:0", "prompt": "q", "chosen": ["a", "b"], "rejected": ["c"]},
     "preference pairs", "RewardBench 2 rows"),
    ("groups", {"prompt": "q", "chosen": "a", "rejected": "b"}, "rmbench groups", "preference pairs"),
    ("rb2_ties", {"question": "Is it?", "answer_matching_behavior": " Yes"}, "RewardBench 2 rows",
     "persona statements"),
])
def test_other_kinds_say_which_schema_a_row_looks_like(tmp_path, kind, row, expected, looks):
    from rmbench.tasks.loading import task_spec_with_data

    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError) as info:
        load_groups(task_spec_with_data(load_catalog().task_spec(kind), str(data)))
    assert f"this task reads {expected}" in str(info.value) and f"looks like {looks}" in str(info.value)


def test_a_row_in_the_expected_schema_gets_no_schema_hint(tmp_path):
    from rmbench.tasks.schemas import PREFERENCE, RB2, schema_hint

    assert schema_hint({"prompt": "q", "chosen": "a", "rejected": "b"}, PREFERENCE) == ""
    assert "the row has prompt, answer" in schema_hint({"prompt": "q", "answer": "a"}, RB2)
