"""Atomic file writes (a file is written to a temporary name and renamed into place, so no
reader ever sees half of it), writes that Ctrl-C and SIGTERM wait for (:func:`signals_deferred`),
safe file names, and how a bad JSON line is described."""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmbench.errors import WriteError

DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def json_error_text(exc: json.JSONDecodeError) -> str:
    """``exc`` as words: ``Unterminated string starting at column 28``, never "at at" (some of
    json's messages end with their own "at"). Parse a line without its newline, so that a line cut
    mid-string reads as unterminated rather than as "Invalid control character"."""
    at = "" if exc.msg.endswith(" at") else " at"
    return f"{exc.msg}{at} column {exc.colno}"


def safe_file_name(text: str, fallback: str = "x") -> str:
    """``text`` as a file name: letters, digits, ``.``, ``_``, ``+`` and ``-``; other runs become ``_``."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_.") or fallback


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, renamed into place.
    A failed write (a full disk, a read-only folder, no permission) leaves no file behind, neither
    the temporary one nor half of ``path`` (an earlier ``path`` stays as it was), nor a folder it
    made for it that is still empty, and is one
    :class:`~rmbench.errors.WriteError` naming ``path`` and the cause."""
    path = Path(path)
    tmp: str | None = None
    made = [p for p in reversed(path.parents) if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        _write_all(fd, data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        for folder in reversed(made):  # the folders made for it, while empty
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(path, exc) from None
        raise


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd`` and close it (where the bytes meet the disk: a full one raises here)."""
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs (the writing of a run folder: its files, a
    second or so), then deliver them as they would have come: to the handler there was before
    (Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM handler, or the default that ends the
    process). A set of files written together is so never left with some of them the new run's
    and some the old one's by an interrupt. Only the main thread receives signals in Python:
    elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for signum in DEFERRED_SIGNALS:
        handler = signal.getsignal(signum)
        if handler is None or handler == signal.SIG_IGN:  # set outside Python, or ignored: left as it is
            continue
        previous[signum] = signal.signal(signum, lambda number, _frame: caught.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)
