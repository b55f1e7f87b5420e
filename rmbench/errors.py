"""Errors a user can cause. The CLI prints these as one clear message, never a traceback."""

from __future__ import annotations

import errno


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


WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG,
                          errno.EIO, errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.EEXIST})
"""The errors a write meets that are the machine's or the user's, not a bug (a full disk, a quota,
a read-only or forbidden folder, a name too long): said in one line (:class:`WriteError`)."""

_WHY = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
        errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
        errno.EPERM: "permission denied"}


def write_error_text(exc: OSError) -> str:
    """The cause of a failed write in words: ``No space left on device (the disk is full)``."""
    text = exc.strerror or str(exc) or type(exc).__name__
    why = _WHY.get(exc.errno or 0)
    return f"{text} ({why})" if why and why.lower() != text.lower() else text


class WriteError(RMBenchError, OSError):
    """A file could not be written (a full disk, a read-only folder, no permission): one line
    naming the file and the cause. Also an :class:`OSError` (its ``errno`` and ``filename`` are
    the failed write's), so code that handles a failed write as an OSError still does."""

    def __init__(self, path, exc: OSError, *, note: str = "") -> None:
        OSError.__init__(self, exc.errno, exc.strerror or str(exc), str(path))
        self.path, self.cause, self.note = str(path), exc, note

    def __str__(self) -> str:
        note = f"; {self.note}" if self.note else ""
        return f"cannot write {self.path}: {write_error_text(self.cause)}{note}"

    def __reduce__(self):  # OSError's pickles as (errno, strerror, filename): rebuilt from our own
        return (type(self), (self.path, self.cause), {"note": self.note})


def did_you_mean(name: str, choices, *, n: int = 3, cutoff: float = 0.5) -> str:
    """The hint for a misspelt ``name``: ``"; did you mean 'a', 'b'?"``, or ``""`` when nothing is close.

    Every "unknown X" message builds its hint here, so they all read alike."""
    import difflib

    close = difflib.get_close_matches(str(name), sorted({str(c) for c in choices}), n=n, cutoff=cutoff)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
