"""Stopping ``rmbench train`` at a safe point: Ctrl-C or SIGTERM during the update steps asks
the loop to stop after the step under way (never with an optimizer step half applied); the loop
then saves a checkpoint of where it stands (mid-epoch) and raises :class:`TrainingStopped`, and
the same command resumes from that step. A second signal stops at once, keeping the checkpoint
before. Outside the steps (loading the base, the IM-RM's reference pass) a signal stops at once as
usual; nothing of the run is lost that a checkpoint held.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingStopped(KeyboardInterrupt):
    """A signal stopped training at a safe point, after a checkpoint of ``pairs_done`` pairs of
    epoch ``epoch`` (1-based) was saved in ``folder``; ``signum`` is the signal."""

    def __init__(self, signum: int, folder: Path, epoch: int, epochs: int, pairs_done: int, n_pairs: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum, self.folder, self.epoch, self.epochs = signum, folder, epoch, epochs
        self.pairs_done, self.n_pairs = pairs_done, n_pairs

    def kept(self) -> str:
        """What the checkpoint holds, in words."""
        return (f"{self.folder} keeps a checkpoint after {self.pairs_done} of {self.n_pairs} pairs of epoch "
                f"{self.epoch}/{self.epochs}")


@dataclass
class StopRequest:
    """The signal that asked to stop (None while none did)."""

    signum: int | None = None


@contextmanager
def stop_at_safe_points() -> Iterator[StopRequest]:
    """While the block runs, the first SIGINT or SIGTERM sets ``request.signum`` (the loop looks
    at it after each step); a second raises KeyboardInterrupt at once. Off the main thread (where
    Python delivers no signals) the request is never set."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def asked(signum: int, _frame) -> None:
        if request.signum is not None:
            raise KeyboardInterrupt
        request.signum = signum

    previous = {}
    for signum in STOP_SIGNALS:
        handler = signal.getsignal(signum)
        if handler is not None and handler != signal.SIG_IGN:
            previous[signum] = signal.signal(signum, asked)
    try:
        yield request
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
