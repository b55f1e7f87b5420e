"""The call cache: an LLM judge's answers, one SQLite file per served model, keyed by request.

A judge (:class:`rmbench.models.base.CallingModel`) is not given the score cache: its rewards
are re-derived on every run from its calls, which this cache keeps, so a re-run, another
``--eps``, another task with the same requests or a run killed half-way costs no call for what
was answered before, and the run folder's ``judgments.jsonl`` is always whole.

* The file is named by the judge's :meth:`~rmbench.models.base.CallingModel.call_fingerprint`:
  the served model's name and reported id and a pinned revision, never the server's address,
  so the same model served elsewhere shares its calls. A key is the sha256 of that identity and
  the request body (messages, sampling arguments).
* Each answer is written as it arrives (one small transaction), so Ctrl-C or a server that
  dies keeps every finished call. The first write wins, as in the score cache.
* Faults are the score cache's (:mod:`rmbench.scoring.cache`): a damaged file is moved aside,
  an unwritable folder turns the cache off with one warning; the run goes on either way.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from rmbench.scoring.cache import ScoreCache


class CallCache(ScoreCache):
    """Judge calls as JSON objects (a :class:`rmbench.models.judge.client.ChatReply`'s form)."""

    what = "judge call cache"
    folder_name = "judge-calls"
    lost = "every call is still made and the run written, but a re-run must make them again"

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        return self._read(keys)

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store one answer now (first write wins); a write fault turns the cache off."""
        if self._db is None:
            return
        try:
            with self._db:
                self._db.execute("INSERT OR IGNORE INTO scores (key, value) VALUES (?, ?)",
                                 (key, json.dumps(value, ensure_ascii=False, allow_nan=False)))
        except sqlite3.DatabaseError as exc:
            self._disable(f"writing {self.path} failed ({exc})")
