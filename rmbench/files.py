"""Atomic file writes (a file is written to a temporary name and renamed into place, so no
reader ever sees half of it), writes that Ctrl-C and SIGTERM wait for (:func:`signals_deferred`),
a lock that processes wait for (:func:`waiting_lock`), safe file names, and how a bad JSON line is
described."""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
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


class LockWaitExpired(TimeoutError):
    """:func:`waiting_lock` waited its ``wait_limit`` and another process still holds the lock."""


def try_flock(path: Path, open_file: Callable[[Path], int] | None = None) -> tuple[int | None, str]:
    """One try at an exclusive ``fcntl.flock`` on the file ``path`` (``open_file(path)`` opens it,
    made if absent): ``(fd, "")`` with the lock held on the file that is at ``path`` now (a file
    its last holder removed after we opened it is opened again), or ``(None, pid)`` while another
    process holds it (pid "" when the holder has not written it yet). Both locks that wait or
    refuse (:func:`waiting_lock`, the run folder's lock) take theirs through it."""
    import fcntl

    while True:
        fd = open_file(path) if open_file is not None else os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            return None, holder if holder.isdigit() else ""
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:  # its last holder removed it after we opened it
            same = False
        if same:
            return fd, ""
        os.close(fd)


@contextmanager
def waiting_lock(path: Path, *, wait_limit: float | None = None,
                 on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on the file ``path`` (made if absent, holding the
    holder's pid) for the block, waiting while another process holds it: ``on_wait(pid)`` once
    when the wait begins (pid "" when the holder has not written it yet), :class:`LockWaitExpired`
    after ``wait_limit`` seconds (None: wait as long as it takes). The OS releases a flock when
    its process ends, however it ends, so a killed holder leaves no stale lock. The file is
    removed on release; a taker checks that the file it locked is still the one at ``path``. Two
    holders in one process exclude each other too (a flock belongs to the open file). Where the
    OS has no ``fcntl`` (Windows) no lock is taken."""
    try:
        import fcntl  # noqa: F401  (only asks whether the OS has flock)
    except ImportError:
        yield
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if wait_limit is None else time.monotonic() + wait_limit
    told, pause = False, 0.05
    while True:
        fd, holder = try_flock(path)
        if fd is not None:
            break
        if not told and on_wait is not None:
            on_wait(holder)
        told = True
        if deadline is not None and time.monotonic() + pause > deadline:
            raise LockWaitExpired(f"{path} is held by another process") from None
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        try:
            path.unlink(missing_ok=True)  # still locked: no one can take the file we remove
        except OSError:
            pass
        os.close(fd)
