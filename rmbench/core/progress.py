"""Plain progress lines, for a log file or a pipe: what, done/total, rate, elapsed and ETA.

On a terminal rmbench draws rich progress bars; when stderr is not a terminal (CI logs, nohup,
a pipe) it prints one of these lines per unfinished task every :func:`progress_every` seconds
(``RMBENCH_PROGRESS_EVERY``, default 30) and one when a task ends (the reporters are
:class:`rmbench.cli.progress.PlainProgress` and the download's own, in
:mod:`rmbench.tasks.downloads`). Only the text is made here: no clock, no I/O.
"""

from __future__ import annotations

import math
import os

from rmbench.errors import ConfigError

EVERY_ENV = "RMBENCH_PROGRESS_EVERY"
DEFAULT_EVERY = 30.0


def progress_every() -> float:
    """Seconds between plain progress lines: ``RMBENCH_PROGRESS_EVERY`` or 30."""
    text = os.environ.get(EVERY_ENV, "").strip()
    if not text:
        return DEFAULT_EVERY
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{EVERY_ENV}={text!r}: expected a number of seconds > 0 (default {DEFAULT_EVERY:g})")
    return value


def clock_text(seconds: float) -> str:
    """``0:01:02``."""
    s = max(int(round(seconds)), 0)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def progress_line(description: str, done: float, total: float | None, unit: str, elapsed: float,
                  eta: str | None = None, finished: bool = False) -> str:
    """``ties: 120/528 responses (23%), 4.1 responses/s, elapsed 0:00:29, eta 0:01:39``; a finished
    task says ``done`` and its overall rate. ``eta``: a caller's own ETA text (``eta ~0:40:00``)
    instead of the one extrapolated from this task's rate."""
    count = f"{done:,.0f}/{total:,.0f} {unit} ({100 * done / total:.0f}%)" if total else f"{done:,.0f} {unit}"
    rate = f"{done / elapsed:,.1f} {unit}/s" if done and elapsed >= 0.5 else f"– {unit}/s"  # none from an instant
    if finished:
        return f"{description}: done, {count} in {clock_text(elapsed)}, {rate}"
    if eta is None:
        eta = "eta ?"
        if total and done and elapsed > 0:
            eta = f"eta {clock_text((total - done) * elapsed / done)}"
    return f"{description}: {count}, {rate}, elapsed {clock_text(elapsed)}, {eta}"
