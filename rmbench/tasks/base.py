"""The task interface: a task yields comparison groups; everything else is optional."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from rmbench.errors import DataError
from rmbench.types import ComparisonGroup, TaskSpec, prompt_from_json

ExtraMetric = Callable[[np.ndarray], float]
"""A task-specific statistic of the resampling units (see :meth:`Task.bootstrap_units`)."""


class Task(ABC):
    """A benchmark task. Subclasses implement :meth:`groups`; the rest has sensible defaults."""

    spec: TaskSpec
    description: str = ""

    @abstractmethod
    def groups(self) -> Iterator[ComparisonGroup]:
        """The task's comparison groups, in a fixed order."""

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        """Unit number of each group for the bootstrap (default: every group is its own unit).

        Groups that must be resampled together (e.g. RewardBench 2's ``tied:k`` and ``ref:k``)
        share a unit.
        """
        return np.arange(len(groups))

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> dict[str, ExtraMetric]:
        """Task-specific metrics, each a function of an array of resampled unit numbers."""
        return {}


def units_by_source(groups: Sequence[ComparisonGroup]) -> np.ndarray:
    """Bootstrap units that keep each original with its shifted copies (``source_id``)."""
    keys = [g.source_id or g.id for g in groups]
    unit_of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return np.array([unit_of[k] for k in keys], dtype=np.int64)


# --- helpers for loaders: every error names file, line and field ------------------------------

def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line of a JSON Lines file."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such file", path=str(path))
    with path.open("r", encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"not valid JSON ({exc.msg} at column {exc.colno})", path=str(path), line=lineno) from None
            if not isinstance(obj, dict):
                raise DataError(f"expected a JSON object, got {type(obj).__name__}", path=str(path), line=lineno)
            yield lineno, obj


class RowReader:
    """Typed field access for one row, raising DataError with file, line and field."""

    def __init__(self, row: dict, path: str | None, line: int | None) -> None:
        self.row, self.path, self.line = row, path, line

    def error(self, field: str | None, message: str) -> DataError:
        return DataError(message, path=self.path, line=self.line, field=field)

    def get(self, field: str, default: Any = ...) -> Any:
        if field not in self.row or self.row[field] is None:
            if default is ...:
                raise self.error(field, "missing")
            return default
        return self.row[field]

    def string(self, field: str, default: Any = ...) -> Any:
        """A string field; ``default`` (when given) stands in for a missing or null one.

        Integer ids are accepted and read as strings (many datasets number their rows).
        """
        if default is not ... and self.row.get(field) is None:
            return default
        value = self.get(field)
        if field == "id" and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {type(value).__name__}")
        return value

    def strings(self, field: str, allow_empty: bool = False) -> list[str]:
        value = self.get(field)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(field, "expected a list of strings")
        if not value and not allow_empty:
            raise self.error(field, "is empty")
        return value

    def integers(self, field: str) -> list[int]:
        value = self.get(field)
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.error(field, "expected a list of integers")
        return value

    def prompt(self, field: str = "prompt"):
        try:
            return prompt_from_json(self.get(field))
        except ValueError as exc:
            raise self.error(field, str(exc)) from None

    def group(self, **kwargs: Any) -> ComparisonGroup:
        try:
            return ComparisonGroup(**kwargs)
        except ValueError as exc:
            raise self.error(None, str(exc)) from None
