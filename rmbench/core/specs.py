"""Specs: a registered task or model kind with the arguments it is built with, frozen and hashable.

A :class:`TaskSpec` names a task, a :class:`ModelSpec` a model; both are a :class:`Spec` (a
name, the registry's kind, its keyword arguments and an optional version) but neither is the
other, so mypy keeps a model's spec from reaching a function that takes a task's. Build one with
``TaskSpec.make(name, kind, {"path": ...})``; the base :class:`Spec` is never built itself.

``args`` is a :class:`FrozenArgs`: a read-only mapping, nested objects and lists frozen too
(objects as :class:`FrozenArgs`, lists as tuples), that hashes and compares by its canonical JSON,
the very text that :meth:`Spec.fingerprint` (and every identity built from a spec) is taken over.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from rmbench.core.canonical import canonical_json, sha256_hex


def _plain(value: Any) -> Any:
    """``value`` as plain JSON values: every mapping a dict, every tuple a list."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _frozen(value: Any) -> Any:
    """A JSON value (from ``json.loads``) with its objects and lists frozen."""
    if isinstance(value, dict):
        return FrozenArgs._of(value)
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


class FrozenArgs(Mapping[str, Any]):
    """Keyword arguments as a read-only, hashable mapping of JSON values.

    Built from any mapping (nested mappings, lists and tuples included): the arguments go
    through their canonical JSON, so keys become strings and a tuple reads back as a list would,
    exactly as the JSON in a run record has them. Equal when their canonical JSON is equal; equal
    to a plain dict with the same JSON content. :meth:`to_dict` gives a fresh, editable copy.
    """

    __slots__ = ("_items", "_json")
    _items: dict[str, Any]
    _json: str

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        text = canonical_json(_plain(dict(args or {})))
        self._init(text, json.loads(text))

    def _init(self, text: str, data: dict[str, Any]) -> None:
        self._json = text
        self._items = {k: _frozen(v) for k, v in data.items()}

    @classmethod
    def _of(cls, data: dict[str, Any]) -> FrozenArgs:
        """From an already plain JSON object (a nested one of a parsed document)."""
        out = cls.__new__(cls)
        out._init(canonical_json(data), data)
        return out

    @property
    def canonical(self) -> str:
        """The canonical JSON text of the arguments (:func:`~rmbench.core.canonical.canonical_json`)."""
        return self._json

    def to_dict(self) -> dict[str, Any]:
        """A fresh, plain copy (dicts and lists) that the caller may edit."""
        out: dict[str, Any] = json.loads(self._json)
        return out

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._json)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenArgs):
            return self._json == other._json
        if isinstance(other, Mapping):
            return bool(self.to_dict() == _plain(other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenArgs({self.to_dict()!r})"

    def __reduce__(self) -> tuple[type[FrozenArgs], tuple[dict[str, Any]]]:
        return FrozenArgs, (self.to_dict(),)


@dataclass(frozen=True)
class Spec:
    """A registered kind built with arguments: the base of :class:`TaskSpec` and :class:`ModelSpec`.

    ``kind`` names the factory in a registry, ``args`` its keyword arguments (any mapping given
    is stored as :class:`FrozenArgs`), ``version`` a task's version (None for a model).
    """

    name: str
    kind: str
    args: FrozenArgs = field(default_factory=FrozenArgs)
    version: int | None = None

    def __post_init__(self) -> None:
        if type(self) is Spec:
            raise TypeError("build a TaskSpec or a ModelSpec, not their base Spec")
        if not isinstance(self.args, FrozenArgs):
            if not isinstance(self.args, Mapping):
                raise TypeError(f"spec {self.name!r}: args must be a mapping, got {type(self.args).__name__}")
            object.__setattr__(self, "args", FrozenArgs(self.args))

    @classmethod
    def make(cls, name: str, kind: str, args: Mapping[str, Any] | None = None, version: int | None = None) -> Self:
        return cls(name=name, kind=kind, args=FrozenArgs(args), version=version)

    @property
    def args_dict(self) -> dict[str, Any]:
        """The arguments as a fresh, plain dict (lists, dicts): to edit, or to write out as JSON."""
        return self.args.to_dict()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "args": self.args_dict}
        if self.version is not None:
            out["version"] = self.version
        return out

    def fingerprint(self) -> str:
        return sha256_hex(canonical_json(self.to_json()))


@dataclass(frozen=True)
class TaskSpec(Spec):
    """A task: its name, task kind, the kind's arguments and the task's version."""


@dataclass(frozen=True)
class ModelSpec(Spec):
    """A model: its name, model kind and the kind's arguments."""
