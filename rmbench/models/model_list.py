"""A model list file (``rmbench eval --model-list FILE``): one model per line, ``SPEC`` or
``NAME=SPEC``, the spec as ``--model`` takes it, but never split at commas (a JudgeBench file
name holds commas); blank lines and lines starting with ``#`` are skipped.

``NAME=SPEC`` names the model as ``--name`` does (its label in tables and its run folder). A
line is read as ``NAME=SPEC`` when the text before its first ``=`` holds no ``:`` (a spec's
``KIND:``) and the whole line is not an existing path, so a spec such as
``published:judgebench:outputs/dataset=judgebench,...jsonl`` stays whole."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmbench.errors import ConfigError


@dataclass(frozen=True)
class ListedModel:
    """One line of a model list: the model spec and the name it gives it (None: none given)."""

    spec: str
    name: str | None = None


def parse_list_line(line: str) -> ListedModel:
    """One (stripped, non-comment) line as a :class:`ListedModel` (module doc)."""
    name, sep, spec = line.partition("=")
    if not sep or ":" in name or not name.strip() or not spec.strip() or Path(line).expanduser().exists():
        return ListedModel(line)
    return ListedModel(spec.strip(), name.strip())


def read_model_list(path: str | Path) -> list[ListedModel]:
    """The models of the list file ``path``, in order; a file that cannot be read or names no
    model is one :class:`ConfigError` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--model-list {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    lines = [line.strip() for line in text.splitlines()]
    models = [parse_list_line(m) for m in lines if m and not m.startswith("#")]
    if not models:
        raise ConfigError(f"--model-list {path}: names no model (one model spec per line, or NAME=SPEC; # starts a "
                          f"comment line)")
    return models


__all__ = ["ListedModel", "parse_list_line", "read_model_list"]
