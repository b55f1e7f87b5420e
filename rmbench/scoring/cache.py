"""The score cache: one SQLite file per model fingerprint, keyed by a hash of each input.

A batch's scores are written in one transaction, so a run killed mid-way leaves only whole
batches behind and the next run resumes from them. Values are JSON lists of floats (a reward,
or an adapter's raw vector).

Several processes may share one cache (two ``rmbench eval`` runs of the same model on other
tasks write the same file): the file is in WAL mode, so readers never wait for a writer, and a
writer waits up to ``BUSY_TIMEOUT_S`` for another writer's transaction instead of failing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from rmbench.models.base import ScoreRequest
from rmbench.paths import user_cache_dir

BUSY_TIMEOUT_S = 60.0


def request_key(req: ScoreRequest, with_utility: bool = False) -> str:
    """The cache key of a request (:meth:`ScoreRequest.key`)."""
    return req.key(with_utility)


class ScoreCache:
    def __init__(self, model_fingerprint: str, cache_dir: str | Path | None = None) -> None:
        folder = Path(cache_dir) if cache_dir is not None else user_cache_dir() / "scores"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{model_fingerprint}.sqlite"
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        try:
            # Persistent in the file; where WAL is unavailable the default rollback journal,
            # with the busy timeout, is still safe, only readers then wait for writers.
            self._db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:
            pass
        self._db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            rows = self._db.execute(f"SELECT key, value FROM scores WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            out.update((k, np.asarray(json.loads(v), dtype=np.float64)) for k, v in rows)
        return out

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        with self._db:  # one transaction: all of the batch or none of it
            self._db.executemany("INSERT OR REPLACE INTO scores (key, value) VALUES (?, ?)",
                                 [(k, json.dumps(np.asarray(v, dtype=np.float64).tolist())) for k, v in items])

    def close(self) -> None:
        self._db.close()
