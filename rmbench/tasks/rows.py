"""Reading the fields of a row: every error names file, line and field; bad rows recorded and
skipped under ``--skip-bad-rows``; values checked (no NaN, bounded nesting)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from rmbench.core.types import ComparisonGroup, prompt_from_json
from rmbench.errors import DataError
from rmbench.tasks.schemas import RowSchema, schema_hint

# --- helpers for loaders: every error names file, line and field ------------------------------

class BadRows:
    """The rows left out under ``--skip-bad-rows``: their errors, and where they are."""

    def __init__(self) -> None:
        self.errors: list[DataError] = []
        self.excluded: set[tuple[str, int]] = set()

    def add(self, error: DataError) -> None:
        assert error.line is not None, "only errors with a line are recorded"  # every caller checks
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
    bad = BadRows()
    token = _BAD_ROWS.set(bad)
    try:
        yield bad
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



def _json_type(value: Any) -> str:
    """How a value reads in a message: its JSON type, and a short preview of scalars."""
    kind = {list: "an array", dict: "an object", str: "a string", int: "a number", float: "a number",
            bool: "a boolean", type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} ({_preview(value, 40)})" if isinstance(value, (str, int, float, bool)) else kind


class TextRow(dict):
    """A row whose cells are all text (a CSV record). :class:`RowReader` reads fields that hold
    lists, objects or integers from it as JSON written in the cell (``["a", "b"]``, ``[1, 0]``)."""



class RowReader:
    """Typed field access for one row, raising DataError with file, line and field.

    In a :class:`TextRow` (CSV) every cell is text: fields read as lists, objects or integers are
    parsed from JSON in the cell, and a prompt cell that holds a JSON list of chat messages is read
    as one.
    """

    def __init__(self, row: dict, path: str | None, line: int | None, schema: RowSchema | None = None) -> None:
        self.row, self.path, self.line = row, path, line
        self.textual = isinstance(row, TextRow)
        self.schema = schema
        """The row format the task reads: a missing or mistyped field's error then names it, and
        the format the row looks like instead (:func:`rmbench.tasks.schemas.schema_hint`)."""

    def error(self, field: str | None, message: str) -> DataError:
        """A DataError naming this row's file, line and ``field`` (None: the row as a whole), for
        the loader to raise: one line for the user, no traceback."""
        return DataError(message, path=self.path, line=self.line, field=field)

    def schema_error(self, field: str, message: str) -> DataError:
        """A missing or mistyped field: the row may be in another task's format; say which."""
        hint = schema_hint(self.row, self.schema, self.path)
        return self.error(field, f"{message}; {hint}" if hint else message)

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
        """The field's value as it is, unchecked; ``default`` (when given) stands in for a missing or
        null one, which is otherwise a DataError naming the row format the task reads."""
        if field not in self.row or self.row[field] is None:
            if default is ...:
                raise self.schema_error(field, "missing")
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
            raise self.schema_error(field, f"expected a string, got {_json_type(value)}")
        return value

    def strings(self, field: str, allow_empty: bool = False) -> list[str]:
        """A list of strings (JSON in a CSV cell); an empty list is an error unless ``allow_empty``."""
        value = self._cell(field, self.get(field), "a list of strings")
        if not isinstance(value, list):
            raise self.schema_error(field, f"expected a list of strings, got {_json_type(value)}")
        for i, v in enumerate(value):
            if not isinstance(v, str):
                raise self.error(field, f"expected a list of strings, but item {i} is {_json_type(v)}")
        if not value and not allow_empty:
            raise self.error(field, "is empty")
        return value

    def integers(self, field: str) -> list[int]:
        """A list of integers (JSON in a CSV cell; a boolean is no integer)."""
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
        """An integer (a boolean is none); ``default`` (when given) stands in for a missing or null one."""
        return self._typed(field, default, "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool),
                           _preview)

    def mapping(self, field: str, default: Any = ...) -> Any:
        """An object (a dict; JSON in a CSV cell); ``default`` (when given) stands in for a missing or
        null one."""
        return self._typed(field, default, "an object", lambda v: isinstance(v, dict), _json_type)

    def prompt(self, field: str = "prompt"):
        """The prompt: a string, or a list of chat messages (``{"role", "content"}`` objects, which
        may carry images, their paths relative to the row's file: :mod:`rmbench.core.prompts`; in a
        CSV cell, written as JSON), read as :func:`rmbench.core.prompts.prompt_from_json` reads it."""
        value = self.get(field)
        base = None if isinstance(value, str) and not self.textual else self.folder()  # text: no image paths
        if self.textual and isinstance(value, str) and value.lstrip().startswith("["):
            try:  # a JSON list of chat messages; any other text (even "[1, 2]") is the prompt itself
                return prompt_from_json(json.loads(value), base)
            except (ValueError, RecursionError):
                pass
        if isinstance(value, (bytes, bytearray)):
            raise self.error(field, "expected a string, got bytes (a binary column, not text)")
        try:
            return prompt_from_json(value, base)
        except ValueError as exc:
            raise self.error(field, str(exc)) from None

    def folder(self) -> Path | None:
        """The folder of the row's file, where relative image paths are read from (None: the rows
        come from no local file)."""
        if not self.path:
            return None
        p = Path(self.path)
        return p.parent if p.is_file() else None

    def group(self, **kwargs: Any) -> ComparisonGroup:
        """``ComparisonGroup(**kwargs)``, its checks (at least two responses, one utility each ...)
        failing as a DataError naming this row rather than a ValueError."""
        try:
            return ComparisonGroup(**kwargs)
        except ValueError as exc:
            raise self.error(None, str(exc)) from None


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."

