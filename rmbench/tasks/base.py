"""The task interface: a task yields comparison groups; everything else is optional."""

from __future__ import annotations

import codecs
import csv
import json
import math
import re
from abc import ABC, abstractmethod
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from rmbench.core.metric_registry import DEFAULT_HEADLINE, OfficialLayout
from rmbench.core.types import ComparisonGroup, TaskSpec, prompt_from_json
from rmbench.errors import DataError
from rmbench.files import json_error_text

ExtraMetric = Callable[[np.ndarray], float]
"""A task-specific statistic of the resampling units (see :meth:`Task.bootstrap_units`)."""


@dataclass(frozen=True)
class TaskScores:
    """Task-level statistics computed together from one resample of units.

    ``labels[j]`` = (metric, subset or None) of entry j of ``statistic(units)``, where ``units``
    are the task's own unit numbers (:meth:`Task.bootstrap_units`), drawn with replacement.
    ``counts[j]``: the record's ``n`` (groups behind entry j). An official score with its
    subset scores is one of these, so each resample computes them all in one go.
    """

    labels: tuple[tuple[str, str | None], ...]
    statistic: Callable[[np.ndarray], np.ndarray]
    counts: tuple[int, ...] | None = None


def as_task_scores(extras: "TaskScores | Mapping[str, ExtraMetric] | None", n_groups: int) -> TaskScores | None:
    """A task's :meth:`Task.extra_metrics` (a TaskScores, or a plain dict of name -> function of
    units, the plugin form) as one :class:`TaskScores`."""
    if extras is None or isinstance(extras, TaskScores):
        return extras
    if not extras:
        return None
    fns = list(extras.values())
    return TaskScores(tuple((str(name), None) for name in extras),
                      lambda units: np.array([fn(units) for fn in fns], dtype=np.float64),
                      tuple(n_groups for _ in fns))


class Task(ABC):
    """A benchmark task. Subclasses implement :meth:`groups`; the rest has sensible defaults.

    Declarations (class attributes): ``headline``, the metrics a leaderboard shows for the task
    (registered names, :mod:`rmbench.core.metric_registry`); ``official``, the benchmark's official
    table when it has one (RewardBench 1/2, Ties).
    """

    spec: TaskSpec
    description: str = ""
    headline: tuple[str, ...] = DEFAULT_HEADLINE
    official: OfficialLayout | None = None

    @abstractmethod
    def groups(self) -> Iterator[ComparisonGroup]:
        """The task's comparison groups, in a fixed order."""

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        """Unit number of each group for the bootstrap (default: every group is its own unit).

        Groups that must be resampled together (e.g. RewardBench 2's ``tied:k`` and ``ref:k``)
        share a unit.
        """
        return np.arange(len(groups))

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray
                      ) -> "TaskScores | dict[str, ExtraMetric]":
        """Task-specific metrics of resampled unit numbers: a :class:`TaskScores`, or a dict of
        name -> function of units (one number each, reported for the whole task)."""
        return {}


def units_by_source(groups: Sequence[ComparisonGroup]) -> np.ndarray:
    """Bootstrap units that keep each original with its shifted copies (``source_id``)."""
    keys = [g.source_id or g.id for g in groups]
    unit_of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return np.array([unit_of[k] for k in keys], dtype=np.int64)


# --- helpers for loaders: every error names file, line and field ------------------------------

class BadRows:
    """The rows left out under ``--skip-bad-rows``: their errors, and where they are."""

    def __init__(self) -> None:
        self.errors: list[DataError] = []
        self.excluded: set[tuple[str, int]] = set()

    def add(self, error: DataError) -> None:
        key = (str(error.path), int(error.line))
        if key not in self.excluded:
            self.excluded.add(key)
            self.errors.append(error)


_BAD_ROWS: ContextVar[BadRows | None] = ContextVar("rmbench_bad_rows", default=None)


@contextmanager
def skipping_bad_rows() -> Iterator[BadRows]:
    """Within this block, readers leave out rows they cannot read (recording why) instead of
    raising; :func:`row_excluded` also leaves out rows a loader rejected (see
    :func:`rmbench.scoring.runner.load_groups`). Errors without a line (a missing or empty file) still raise."""
    token = _BAD_ROWS.set(BadRows())
    try:
        yield _BAD_ROWS.get()
    finally:
        _BAD_ROWS.reset(token)


def bad_row(error: DataError) -> None:
    """A row that cannot be read: raise its error, or record it when skipping bad rows."""
    log = _BAD_ROWS.get()
    if log is None or error.line is None or error.path is None:
        raise error
    log.add(error)


def row_excluded(location: str, line: int) -> bool:
    """True for a row that an earlier pass rejected while skipping bad rows."""
    log = _BAD_ROWS.get()
    return log is not None and (str(location), int(line)) in log.excluded


MAX_DEPTH = 64
"""Deepest nesting of lists and objects a row may have (fingerprints serialise rows recursively)."""


def _value_problem(value: Any) -> str | None:
    """What is wrong with a field's value, if anything: NaN or +-Infinity anywhere inside it
    (JSON has neither; Python's json module accepts them, and they would poison fingerprints and
    metrics), or nesting deeper than :data:`MAX_DEPTH`."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return f"{v} is not a valid value (JSON has no NaN or Infinity)"
        elif isinstance(v, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep"
            stack += [(x, depth + 1) for x in (v.values() if isinstance(v, dict) else v)]
    return None


def check_row_values(row: dict, path: str, line: int) -> bool:
    """False (after :func:`bad_row`) when a field holds NaN or infinity, or nests too deeply."""
    for key, value in row.items():
        problem = _value_problem(value)
        if problem is not None:
            bad_row(DataError(problem, path=path, line=line, field=str(key)))
            return False
    return True


_BINARY_MAGIC = {b"\x1f\x8b": "gzip-compressed", b"PAR1": "a parquet file", b"PK\x03\x04": "a zip archive",
                 b"\xff\xfe": "UTF-16 text", b"\xfe\xff": "UTF-16 text", b"BZh": "bzip2-compressed",
                 b"\xfd7zXZ": "xz-compressed", b"\x28\xb5\x2f\xfd": "zstd-compressed"}


def check_text_file(path: Path, what: str) -> None:
    """Whole-file problems, raised even when skipping bad rows: not a file, not text at all."""
    if not path.is_file():
        raise DataError("no such file", path=str(path))
    with path.open("rb") as f:
        head = f.read(8192)
    for magic, kind in _BINARY_MAGIC.items():
        if head.startswith(magic):
            raise DataError(f"not {what}: it is {kind}; {what} must be plain UTF-8 text", path=str(path))
    if b"\x00" in head:
        raise DataError(f"not {what}: it holds NUL bytes (UTF-16 or binary?); save it as UTF-8 text",
                        path=str(path))


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line of a JSON Lines file.

    A row that is not UTF-8, not JSON, not an object or holds NaN is a :class:`DataError` naming
    the file and line (skipped and recorded under :func:`skipping_bad_rows`); a missing, empty,
    binary or wholly non-UTF-8 file always fails.
    """
    path = Path(path)
    check_text_file(path, "a JSON Lines file")
    location = str(path)
    rows = undecodable = 0
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]  # Windows editors write one; it is not data
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                undecodable += 1
                bad_row(DataError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}); "
                                  f"save the file as UTF-8", path=location, line=lineno))
                continue
            if not line.strip():
                continue
            rows += 1
            try:
                # without its newline, a line cut mid-string reads as unterminated, not "a control character"
                obj = json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                hint = ("; rmbench reads JSON Lines: one object per line, not a JSON array"
                        if line.lstrip().startswith("[") else "")
                bad_row(DataError(f"not valid JSON ({json_error_text(exc)}){hint}", path=location, line=lineno))
                continue
            except RecursionError:
                bad_row(DataError("not valid JSON (nested too deeply)", path=location, line=lineno))
                continue
            if not isinstance(obj, dict):
                hint = "; rmbench reads JSON Lines: one object per line" if isinstance(obj, list) else ""
                bad_row(DataError(f"expected a JSON object, got {_json_type(obj)}{hint}", path=location, line=lineno))
                continue
            if check_row_values(obj, location, lineno):
                yield lineno, obj
    if rows == 0:
        raise DataError("not UTF-8 text: no line of it decodes as UTF-8 (save it as UTF-8)" if undecodable
                        else "the file is empty (no rows)", path=location)


def _json_type(value: Any) -> str:
    """How a value reads in a message: its JSON type, and a short preview of scalars."""
    kind = {list: "an array", dict: "an object", str: "a string", int: "a number", float: "a number",
            bool: "a boolean", type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} ({_preview(value, 40)})" if isinstance(value, (str, int, float, bool)) else kind


class TextRow(dict):
    """A row whose cells are all text (a CSV record). :class:`RowReader` reads fields that hold
    lists, objects or integers from it as JSON written in the cell (``["a", "b"]``, ``[1, 0]``)."""


def iter_csv(path: str | Path, delimiter: str = ",") -> Iterator[tuple[int, TextRow]]:
    """Yield (line number of the record's first line, row) for each record of a CSV file with a
    header. Empty cells are absent fields. Errors as in :func:`iter_jsonl`."""
    path = Path(path)
    check_text_file(path, "a CSV file")
    location = str(path)
    # A cell may hold a long response: lift the csv module's 128 KiB default cell limit.
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
    with path.open("r", encoding="utf-8", errors="surrogateescape", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        header: list[str] | None = None
        rows = undecodable = 0
        end = 0
        while True:
            start = end + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                end = reader.line_num
                if header is None:
                    raise DataError(f"cannot read the CSV header ({exc})", path=location, line=start) from None
                bad_row(DataError(f"not valid CSV ({exc})", path=location, line=start))
                continue
            end = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if start == 1 and cells[0].startswith("\ufeff"):
                cells[0] = cells[0][1:]
            bad_text = next((i for i, c in enumerate(cells) if _has_surrogates(c)), None)
            if header is None:
                if bad_text is not None:
                    raise DataError("the CSV header is not valid UTF-8; save the file as UTF-8", path=location,
                                    line=start)
                header = [c.strip() for c in cells]
                missing = [i + 1 for i, c in enumerate(header) if not c]
                if missing:
                    raise DataError(f"the CSV header has an empty column name (column {missing[0]})",
                                    path=location, line=start)
                dupes = sorted({c for c in header if header.count(c) > 1})
                if dupes:
                    raise DataError(f"the CSV header names column {dupes[0]!r} twice", path=location, line=start)
                continue
            rows += 1
            if bad_text is not None:
                undecodable += 1
                bad_row(DataError("not valid UTF-8; save the file as UTF-8", path=location, line=start,
                                  field=header[bad_text] if bad_text < len(header) else None))
                continue
            if len(cells) != len(header):
                bad_row(DataError(f"has {len(cells)} cells, but the header has {len(header)} columns "
                                  f"(an unquoted comma or an unclosed quote?)", path=location, line=start))
                continue
            yield start, TextRow((k, v) for k, v in zip(header, cells) if v != "")
    if header is None or rows == 0:
        raise DataError("the file is empty (no rows)" if header is None else
                        "not UTF-8 text: no record of it decodes as UTF-8" if rows and rows == undecodable else
                        "the file has a header but no rows", path=location)


_SURROGATE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8


def _has_surrogates(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def iter_parquet(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (row number, row) for each row of a parquet file; the row number is 1-based and is
    reported as the "line" of errors."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such file", path=str(path))
    location = str(path)
    try:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        n_rows = pf.metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file: one clear message
        raise DataError(f"not a readable parquet file ({type(exc).__name__}: {exc})", path=location) from None
    if n_rows == 0:
        raise DataError("the file is empty (no rows)", path=location)
    number = 0
    try:
        for batch in pf.iter_batches(batch_size=512):
            for row in batch.to_pylist():
                number += 1
                if check_row_values(row, location, number):
                    yield number, row
    except (OSError, ValueError) as exc:  # pyarrow's errors for a corrupt column chunk
        if type(exc).__module__.startswith("pyarrow") or "parquet" in str(exc).lower():
            raise DataError(f"cannot read rows after row {number} ({type(exc).__name__}: {exc})",
                            path=location) from None
        raise


class RowReader:
    """Typed field access for one row, raising DataError with file, line and field.

    In a :class:`TextRow` (CSV) every cell is text: fields read as lists, objects or integers are
    parsed from JSON in the cell, and a prompt cell that holds a JSON list of chat messages is read
    as one.
    """

    def __init__(self, row: dict, path: str | None, line: int | None) -> None:
        self.row, self.path, self.line = row, path, line
        self.textual = isinstance(row, TextRow)

    def error(self, field: str | None, message: str) -> DataError:
        return DataError(message, path=self.path, line=self.line, field=field)

    @contextmanager
    def skippable(self) -> Iterator[None]:
        """Wrap the work on one row: under ``--skip-bad-rows`` its DataError is recorded and the
        loader goes on with the next row (otherwise it propagates). Change state that outlives the
        row (ids seen, pairs kept) only once the row has passed every check, just before yielding.

        Loaders that do not use it still skip bad rows, by a slower route: the task is read again
        without the row (see :func:`rmbench.scoring.runner.load_groups_skipping`).
        """
        try:
            yield
        except DataError as exc:
            log = _BAD_ROWS.get()
            if log is None or (exc.path, exc.line) != (self.path, self.line) or exc.line is None:
                raise
            log.add(exc)

    def get(self, field: str, default: Any = ...) -> Any:
        if field not in self.row or self.row[field] is None:
            if default is ...:
                raise self.error(field, "missing")
            return default
        return self.row[field]

    def _cell(self, field: str, value: Any, expected: str) -> Any:
        """A text cell that must hold ``expected`` is read as JSON."""
        if not (self.textual and isinstance(value, str)):
            return value
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise self.error(field, f"expected {expected} written as JSON in the cell, got {_preview(value)}") from None

    def string(self, field: str, default: Any = ...) -> Any:
        """A string field; ``default`` (when given) stands in for a missing or null one.

        Integer ids are accepted and read as strings (many datasets number their rows).
        """
        if default is not ... and self.row.get(field) is None:
            return default
        value = self.get(field)
        if field == "id" and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, (bytes, bytearray)):
            raise self.error(field, "expected a string, got bytes (a binary column, not text)")
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {_json_type(value)}")
        return value

    def strings(self, field: str, allow_empty: bool = False) -> list[str]:
        value = self._cell(field, self.get(field), "a list of strings")
        if not isinstance(value, list):
            raise self.error(field, f"expected a list of strings, got {_json_type(value)}")
        for i, v in enumerate(value):
            if not isinstance(v, str):
                raise self.error(field, f"expected a list of strings, but item {i} is {_json_type(v)}")
        if not value and not allow_empty:
            raise self.error(field, "is empty")
        return value

    def integers(self, field: str) -> list[int]:
        value = self._cell(field, self.get(field), "a list of integers")
        if not isinstance(value, list):
            raise self.error(field, f"expected a list of integers, got {_json_type(value)}")
        for i, v in enumerate(value):
            if not isinstance(v, int) or isinstance(v, bool):
                raise self.error(field, f"expected a list of integers, but item {i} is {_preview(v)}")
        return value

    def _typed(self, field: str, default: Any, expected: str, ok: Callable[[Any], bool],
               describe: Callable[[Any], str]) -> Any:
        """A field that must hold ``expected`` (JSON in a CSV cell); ``default`` (when given)
        stands in for a missing or null one."""
        if default is not ... and self.row.get(field) is None:
            return default
        value = self._cell(field, self.get(field), expected)
        if not ok(value):
            raise self.error(field, f"expected {expected}, got {describe(value)}")
        return value

    def integer(self, field: str, default: Any = ...) -> Any:
        return self._typed(field, default, "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool),
                           _preview)

    def mapping(self, field: str, default: Any = ...) -> Any:
        return self._typed(field, default, "an object", lambda v: isinstance(v, dict), _json_type)

    def prompt(self, field: str = "prompt"):
        value = self.get(field)
        if self.textual and isinstance(value, str) and value.lstrip().startswith("["):
            try:  # a JSON list of chat messages; any other text (even "[1, 2]") is the prompt itself
                return prompt_from_json(json.loads(value))
            except (ValueError, RecursionError):
                pass
        if isinstance(value, (bytes, bytearray)):
            raise self.error(field, "expected a string, got bytes (a binary column, not text)")
        try:
            return prompt_from_json(value)
        except ValueError as exc:
            raise self.error(field, str(exc)) from None

    def group(self, **kwargs: Any) -> ComparisonGroup:
        try:
            return ComparisonGroup(**kwargs)
        except ValueError as exc:
            raise self.error(None, str(exc)) from None


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
