"""The score cache: one SQLite file per model fingerprint, keyed by a hash of each input.

A batch's scores are written in one transaction, so a run killed mid-way leaves only whole
batches behind and the next run resumes from them. Values are JSON lists of floats (a reward,
or an adapter's raw vector).

Several processes may share one cache (two ``rmbench eval`` runs of the same model on other
tasks write the same file): the file is in WAL mode, so readers never wait for a writer, and a
writer waits up to ``BUSY_TIMEOUT_S`` for another writer's transaction instead of failing.

The cache only saves work, so its faults never end a run:

* a damaged file (garbage, a half copy: SQLite's "file is not a database" or "malformed") is
  moved aside as ``NAME.corrupt-TIMESTAMP`` (kept for a post-mortem) with one warning, and a
  fresh file takes its place;
* a cache folder that cannot be created or written, or a disk that fills up, turns the cache
  off for the rest of the run with one warning: every score is still computed and the run
  still written, only the next run cannot reuse them;
* damage found while reading turns the cache off the same way (the scores are recomputed).
"""

from __future__ import annotations

import json
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from rmbench.models.base import ScoreRequest
from rmbench.paths import user_cache_dir

BUSY_TIMEOUT_S = 60.0


def request_key(req: ScoreRequest, with_utility: bool = False) -> str:
    """The cache key of a request (:meth:`ScoreRequest.key`)."""
    return req.key(with_utility)


class ScoreCache:
    what = "score cache"
    folder_name = "scores"
    lost = "every score is still computed and the run written, but a re-run cannot reuse them"

    def __init__(self, model_fingerprint: str, cache_dir: str | Path | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        folder = Path(cache_dir) if cache_dir is not None else user_cache_dir() / self.folder_name
        self.path = folder / f"{model_fingerprint}.sqlite"
        self._warn = warn or (lambda message: warnings.warn(message, stacklevel=3))
        self._db: sqlite3.Connection | None = None
        self.disabled: str | None = None
        """Why the cache is off for this run (None while it works)."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                self._disable(f"cannot open {self.path}: {exc}")
                return
            moved = self._move_aside()
            self._warn(f"the {self.what} {self.path} was damaged ({exc}); moved it to {moved.name} and "
                       f"started a new one: what it held is computed again")
            try:
                self._db = self._open()
            except (sqlite3.DatabaseError, OSError) as again:
                self._disable(f"cannot open a new {self.path}: {again}")
        except OSError as exc:
            self._disable(f"cannot create {folder}: {exc.strerror or exc}")

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        try:
            try:
                # Persistent in the file; where WAL is unavailable the default rollback journal,
                # with the busy timeout, is still safe, only readers then wait for writers.
                db.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError as exc:
                if _is_damage(exc):
                    raise
            db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.commit()
            db.execute("SELECT key, value FROM scores LIMIT 1").fetchall()  # a cut file fails here, not later
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        moved = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        self.path.replace(moved)
        for suffix in ("-wal", "-shm"):  # the damaged file's journal belongs to it, not to the new one
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.replace(moved.with_name(moved.name + suffix))
        return moved

    def _disable(self, why: str) -> None:
        if self.disabled is None:
            self.disabled = why
            self._warn(f"{self.what} off for this run: {why}; {self.lost} (--cache-dir DIR puts the cache elsewhere)")
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        try:
            return {k: np.asarray(v, dtype=np.float64) for k, v in self._read(keys).items()}
        except (ValueError, TypeError) as exc:  # a stored value that is not numbers: damage
            self._disable(f"reading {self.path} failed ({exc})")
            return {}

    def _read(self, keys: Sequence[str]) -> dict[str, object]:
        """The stored JSON values of ``keys`` (those the cache holds); a fault turns the cache off."""
        out: dict[str, object] = {}
        if self._db is None:
            return out
        try:
            for i in range(0, len(keys), 500):
                chunk = list(keys[i:i + 500])
                rows = self._db.execute(f"SELECT key, value FROM scores WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk)
                out.update((k, json.loads(v)) for k, v in rows)
        except (sqlite3.DatabaseError, ValueError) as exc:  # damage inside the file, or a value that is not JSON
            self._disable(f"reading {self.path} failed ({exc})")
            return {}
        return out

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """Store the scores of keys the cache lacks, in one transaction; a key already stored
        keeps its value (the first write wins: a cached reward is never replaced, so an earlier
        command re-run returns its earlier rewards whatever ran in between). Returns the stored
        values of these keys, the earlier ones where another run (another process) wrote first;
        empty where the cache is off."""
        if self._db is None:
            return {}
        items = list(items)
        rows = [(k, json.dumps(np.asarray(v, dtype=np.float64).tolist())) for k, v in items]
        try:
            with self._db:  # one transaction: all of the batch or none of it
                self._db.executemany("INSERT OR IGNORE INTO scores (key, value) VALUES (?, ?)", rows)
        except sqlite3.DatabaseError as exc:  # disk full, read-only, damaged: the scores are kept in memory
            self._disable(f"writing {self.path} failed ({exc})")
            return {}
        return self.get_many([k for k, _ in items])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """SQLite's words for a file that is not (or no longer) a database."""
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "corrupt" in text
