"""``--score-timeout SECONDS``: a deadline on each batch the local engine scores.

Before a batch, the main thread arms a real-time timer (``signal.setitimer``); when it fires,
its handler raises :class:`BatchTimeout` inside whatever Python code the model is running (a
``python:`` reward function in a loop, a ``time.sleep``, a lock, a socket read, the adapter's own
code between torch calls), and the batch fails as one :class:`~rmbench.errors.ModelError` that
names it: the group and response it began at, the timeout and how to raise it. Every batch
before it is already in the score cache (one transaction per batch), so a re-run computes only
the rest. ``BatchTimeout`` derives from ``BaseException``, so a model's own ``except Exception``
cannot swallow it.

What a signal cannot interrupt: a call into C that never returns to Python (a native library
stuck in a loop, code that blocks SIGALRM). For that a watchdog thread waits :data:`GRACE_SECONDS`
more; if the batch still has not ended, it prints the same ``error:`` line and ends the process
(exit 2, :data:`STUCK_EXIT_CODE`): nothing else can stop a thread stuck in C, and the cache already
holds every finished batch. A C call that also holds the GIL stops the watchdog too; only a
signal from outside (SIGTERM, SIGKILL) ends that process.

The first batch a run computes is where a transformers model loads its weights; the deadline
covers that too, so a timeout must leave room for the load.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from rmbench.errors import ConfigError, ModelError
from rmbench.scoring.requests import Request, what, where

GRACE_SECONDS = 5.0
"""How long after the timeout the watchdog waits for the model to return to Python."""
STUCK_EXIT_CODE = 2
"""The exit code when the watchdog ends a process stuck in C (a user error's code)."""

T = TypeVar("T")


class BatchTimeout(BaseException):
    """Raised inside the model's code when its batch runs past the deadline (BaseException: a
    model's ``except Exception`` lets it through)."""


def check_score_timeout(seconds: float | None) -> None:
    """``--score-timeout`` is a finite number of seconds > 0 (or None: no limit), on a platform
    with ``signal.setitimer``."""
    if seconds is None:
        return
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds <= 0:
        raise ConfigError(f"--score-timeout must be a number of seconds > 0, got {seconds!r}")
    if not hasattr(signal, "setitimer"):
        raise ConfigError("--score-timeout needs signal.setitimer, which this platform (Windows) lacks")


def _where(batch: Sequence[Request]) -> str:
    return f"a batch of {what(batch)} starting at {where(batch[0])}"


def _stop_process(message: str) -> None:
    """The watchdog's last resort: the error line, then the process ends (no Python can run in
    the stuck main thread to raise anything)."""
    sys.stderr.write(f"\nerror: {message}\n")
    sys.stderr.flush()
    os._exit(STUCK_EXIT_CODE)


class BatchDeadline:
    """Runs one batch at a time under a deadline of ``seconds`` (see the module docstring).

    ``label``: the model's display name, for the watchdog's line (the engine names the model in
    the ordinary error); ``stuck``: what the watchdog does with that line (default: print it and
    end the process; a test may record it instead)."""

    def __init__(self, seconds: float, label: str = "", grace: float = GRACE_SECONDS,
                 stuck: Callable[[str], None] = _stop_process) -> None:
        check_score_timeout(seconds)
        self.seconds, self.label, self.grace, self.stuck = float(seconds), label, grace, stuck
        self._active = False

    def describe(self) -> dict:
        return {"score_timeout": self.seconds}

    def _message(self, batch: Sequence[Request]) -> str:
        return (f"took longer than --score-timeout {self.seconds:g} s on {_where(batch)}; every batch "
                f"before it is in the score cache, so the same command resumes from it; if the model is only "
                f"slow, raise --score-timeout (or leave it out: no limit)")

    def _alarm(self, signum, frame) -> None:
        if self._active:  # a late alarm, after the batch ended, is ignored
            raise BatchTimeout()

    def _watchdog(self, batch: Sequence[Request]) -> None:
        if self._active:
            name = f"model {self.label!r} " if self.label else ""
            self.stuck(f"{name}{self._message(batch)} (the model did not return to Python within {self.grace:g} s "
                       f"after the timeout, inside a call that signals cannot interrupt, so rmbench ended the process)")

    def call(self, batch: Sequence[Request], score: Callable[[], T]) -> T:
        """``score()`` for ``batch``, or a ModelError when it runs past the deadline."""
        if threading.current_thread() is not threading.main_thread():
            raise ConfigError("--score-timeout works only when rmbench scores in the main thread (only it receives "
                              "signals); call evaluate() from the main thread, or leave score_timeout out")
        watchdog = threading.Timer(self.seconds + self.grace, self._watchdog, args=(batch,))
        watchdog.daemon = True
        try:
            previous = signal.signal(signal.SIGALRM, self._alarm)
            try:
                self._active = True
                signal.setitimer(signal.ITIMER_REAL, self.seconds)
                watchdog.start()
                return score()
            finally:
                self._active = False  # from here on an alarm raises nothing
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
                watchdog.cancel()
        except BatchTimeout:  # the model's frames are gone: the traceback would only show its sleep
            raise ModelError(self._message(batch)) from None
