"""Errors a user can cause. The CLI prints these as one clear message, never a traceback."""

from __future__ import annotations


class RMBenchError(Exception):
    """Base class of every error caused by user input (bad data, bad spec, bad plugin)."""


class DataError(RMBenchError):
    """A data file or row is malformed. Says which file, line and field."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field = path, line, field
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ConfigError(RMBenchError):
    """A task or model entry (YAML/TOML), a spec string or a CLI option is invalid."""


class ModelError(RMBenchError):
    """A reward model returned something unusable (wrong count, NaN, not a number)."""


def did_you_mean(name: str, choices, *, n: int = 3, cutoff: float = 0.5) -> str:
    """The hint for a misspelt ``name``: ``"; did you mean 'a', 'b'?"``, or ``""`` when nothing is close.

    Every "unknown X" message builds its hint here, so they all read alike."""
    import difflib

    close = difflib.get_close_matches(str(name), sorted({str(c) for c in choices}), n=n, cutoff=cutoff)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
