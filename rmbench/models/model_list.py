"""A model list file (``rmbench eval --model-list FILE``): one model spec per line, as ``--model``
takes it, but never split at commas (a JudgeBench file name holds commas); blank lines and lines
starting with ``#`` are skipped."""

from __future__ import annotations

from pathlib import Path

from rmbench.errors import ConfigError


def read_model_list(path: str | Path) -> list[str]:
    """The model specs of the list file ``path``, in order; a file that cannot be read or names
    no model is one :class:`ConfigError` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--model-list {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    models = [line.strip() for line in text.splitlines()]
    models = [m for m in models if m and not m.startswith("#")]
    if not models:
        raise ConfigError(f"--model-list {path}: names no model (one model spec per line; # starts a comment line)")
    return models


__all__ = ["read_model_list"]
