"""Typed reads from a JSON document (``results.json``): every error names the file and the
field's path (``tasks[0].counts.groups``), in one line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypeVar

from rmbench.core.choices import is_choice
from rmbench.errors import ConfigError

W = TypeVar("W", bound=str)


class Fields:
    """Typed reads from one JSON object; errors name the file and the field's path."""

    def __init__(self, data: Any, file: Path, where: str) -> None:
        if not isinstance(data, dict):
            raise ConfigError(f"{file}: field {where or 'top level'!r}: expected an object, got "
                              f"{type(data).__name__}")
        self.data, self.file, self.where = data, file, where

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.file}: field {self._name(key)!r}: {problem}")

    def get(self, key: str, types: tuple[type, ...], default: Any = ..., what: str = "") -> Any:
        if key not in self.data or (self.data[key] is None and default is not ... and type(None) not in types):
            if default is ...:
                raise self.fail(key, "missing")
            return default
        value = self.data[key]
        bad_bool = isinstance(value, bool) and bool not in types
        if not isinstance(value, types) or bad_bool:
            raise self.fail(key, f"expected {what or '/'.join(t.__name__ for t in types)}, got {value!r}"[:300])
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(key, "not a finite number")
        return value

    def string(self, key: str, default: Any = ...) -> str:
        value: str = self.get(key, (str,), default)
        return value

    def opt_string(self, key: str) -> str | None:
        value: str | None = self.get(key, (str, type(None)), None)
        return value

    def word(self, key: str, allowed: tuple[W, ...], default: Any = ...) -> W:
        """One of a closed set of words (:mod:`rmbench.core.choices`: a status, an eps unit)."""
        value = self.string(key, default)
        if not is_choice(value, allowed):
            raise self.fail(key, f"expected one of {', '.join(allowed)}, got {value!r}"[:300])
        return value

    def opt_word(self, key: str, allowed: tuple[W, ...]) -> W | None:
        return None if self.opt_string(key) is None else self.word(key, allowed)

    def integer(self, key: str, default: Any = ...) -> int:
        value: int = self.get(key, (int,), default, "an integer")
        return value

    def opt_integer(self, key: str) -> int | None:
        value: int | None = self.get(key, (int, type(None)), None, "an integer or null")
        return value

    def number(self, key: str, default: Any = ...) -> float:
        return float(self.get(key, (int, float), default, "a number"))

    def opt_number(self, key: str) -> float | None:
        v = self.get(key, (int, float, type(None)), None, "a number or null")
        return None if v is None else float(v)

    def obj(self, key: str, required: bool = True) -> Fields:
        """A nested object; a missing (or null) optional one reads as empty."""
        return Fields(self.get(key, (dict,), ... if required else {}, "an object"), self.file, self._name(key))

    def mapping(self, key: str) -> dict[str, Any]:
        """A free-form optional object (an adapter's own description, package versions...)."""
        return self.obj(key, required=False).data

    def items(self, key: str, default: Any = ...) -> list[Fields]:
        value = self.get(key, (list,), default, "a list")
        return [Fields(v, self.file, f"{self._name(key)}[{i}]") for i, v in enumerate(value)]

    def numbers(self, key: str, default: Any = ...) -> tuple[float, ...]:
        value = self.get(key, (list,), default, "a list of numbers")
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
            raise self.fail(key, f"expected a list of numbers, got {value!r}"[:300])
        return tuple(float(v) for v in value)

    def strings(self, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(key, (list,), default, "a list of strings")
        if any(not isinstance(v, str) for v in value):
            raise self.fail(key, f"expected a list of strings, got {value!r}"[:300])
        return tuple(value)
