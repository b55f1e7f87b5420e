"""One writer per run folder: an exclusive lock that a run takes before it checks its folder and
holds until the folder is written, so two runs given the same ``--out`` at once never mix their
files. The second is refused at once, before it scores anything, naming the folder and the
process that holds it.

The lock is ``fcntl.flock`` on a small file *beside* the folder (``PARENT/.NAME.rmbench-lock``,
holding the holder's pid), so that the run folder itself only ever holds the run's own files. The
OS releases a flock when its process ends, however it ends: a killed run leaves no stale lock (at
most the empty lock file, which the next run takes over). A finished run removes the file; a run
that takes the lock checks afterwards that the file it locked is still the one at the path (its
holder may have just removed it) and tries again if not.

A run takes its folder's lock once: ``evaluate`` around its check and write, ``evaluate_models``
every folder's before the first model scores (its runs then write to the folders it checked,
:class:`~rmbench.results.storage.folder.Destination`). Locks are re-entrant within a process all
the same. Where the OS has no ``fcntl`` (Windows) no lock is taken; the atomic writes still
never leave a half file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rmbench.errors import ConfigError, write_error_text
from rmbench.files import try_flock
from rmbench.results.storage.folder import check_writable

LOCK_SUFFIX = ".rmbench-lock"


class RunFolderBusy(ConfigError):
    """Another process is writing the run folder (it holds the folder's lock)."""


@dataclass
class _Held:
    fd: int
    path: Path
    count: int = 1
    made: list[Path] = field(default_factory=list)
    """Folders made to hold the lock file, removed again on release when they are still empty."""


_HELD: dict[Path, _Held] = {}


def lock_file(out_dir: str | Path) -> Path:
    """Where the lock of run folder ``out_dir`` lies: beside it, or inside it when its parent
    cannot be written (an existing writable folder under a read-only one)."""
    folder = Path(out_dir).expanduser().resolve()
    parent = folder.parent
    if folder.is_dir() and parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
        return folder / LOCK_SUFFIX
    return parent / f".{folder.name}{LOCK_SUFFIX}"


def _make_parents(path: Path) -> list[Path]:
    made = []
    for p in reversed(path.parents):
        if not p.exists():
            p.mkdir()
            made.append(p)
    return made


def _open(out_dir: Path, path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"--out {out_dir}: cannot create its lock file {path}: {exc.strerror or exc}; "
                          f"choose another --out") from None


def _acquire(out_dir: Path) -> _Held:
    check_writable(out_dir)  # a file, a folder under a file, a read-only folder: said as such
    path = lock_file(out_dir)
    try:
        made = _make_parents(path)
    except OSError as exc:
        raise ConfigError(f"--out {out_dir}: cannot create {path.parent}: {exc.strerror or exc}") from None
    fd, pid = try_flock(path, lambda p: _open(out_dir, p))
    if fd is None:
        raise RunFolderBusy(f"{out_dir} is being written by another rmbench run"
                            f"{f' (pid {pid})' if pid else ''}; nothing was scored. Wait for it to finish "
                            f"(the same command then reuses its scores), or choose another --out")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except OSError as exc:  # a full disk: no lock file (nor folder made for it) is left behind
        _release(_Held(fd, path, made=made))
        raise ConfigError(f"--out {out_dir}: cannot write its lock file {path}: {write_error_text(exc)}; "
                          f"nothing was scored") from None
    return _Held(fd, path, made=made)


def _release(held: _Held) -> None:
    try:
        held.path.unlink(missing_ok=True)  # still locked: no one can take the file we remove
    except OSError:
        pass
    os.close(held.fd)
    for folder in reversed(held.made):
        try:
            folder.rmdir()  # only while empty: the run wrote nothing there
        except OSError:
            break


@contextmanager
def run_folders_locked(folders: Iterable[str | Path]) -> Iterator[None]:
    """Hold the lock of every folder in ``folders`` for the block; :class:`RunFolderBusy` (a
    ConfigError) when another process holds one of them (the ones taken are released)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        yield
        return
    keys: list[Path] = []
    try:
        for folder in folders:
            key = Path(folder).expanduser().resolve()
            if key in _HELD:
                _HELD[key].count += 1
            else:
                _HELD[key] = _acquire(Path(folder))
            keys.append(key)
        yield
    finally:
        for key in reversed(keys):
            held = _HELD[key]
            held.count -= 1
            if not held.count:
                del _HELD[key]
                _release(held)
