"""Every run to every chosen tracker (:func:`log_runs`).

A tracker is called only after the run's folder is written, and reads the run back from it, so
a tracker that fails (a server down, a quota, a bad setting it could not check beforehand)
loses nothing: the failure is one :class:`TrackerFailure` line naming the tracker, the run, the
error and the command that logs the run again (``rmbench log RUN --to TRACKER``), the other
trackers and runs still go on, and the caller exits non-zero (``rmbench eval`` exits 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rmbench.results.storage.folder import RunFolder
from rmbench.results.trackers.payload import tracked_run
from rmbench.results.trackers.sink import TrackerSink, without_credentials

MAX_ERROR = 300


@dataclass(frozen=True)
class Logged:
    tracker: str
    run: str
    where: str

    def line(self) -> str:
        return f"Logged {self.run} to {self.tracker}: {self.where}"


@dataclass(frozen=True)
class TrackerFailure:
    tracker: str
    folder: str
    error: str

    def line(self) -> str:
        return (f"{self.tracker}: logging the run in {self.folder} failed ({self.error}); its results are written "
                f"there, unchanged: rmbench log {self.folder} --to {self.tracker} logs them again")


def _error_text(exc: BaseException) -> str:
    text = without_credentials(" ".join(f"{type(exc).__name__}: {exc}".split()))
    return text if len(text) <= MAX_ERROR else text[:MAX_ERROR - 3] + "..."


def log_runs(folders: Sequence[RunFolder], sinks: Sequence[TrackerSink], step: int = 0,
             said: Callable[[Logged], None] | None = None) -> list[TrackerFailure]:
    """Log each run folder to each sink at ``step``; returns the failures (module doc).
    ``said``: called with each run logged, as it is."""
    failures: list[TrackerFailure] = []
    if not sinks:
        return failures
    for folder in folders:
        done: set[str] = set()
        try:
            with tracked_run(folder) as run:
                for sink in sinks:
                    done.add(sink.name)
                    try:
                        where = sink.log(run, step)
                    except Exception as exc:  # any library's error: the run's own files stand
                        failures.append(TrackerFailure(sink.name, str(folder.path), _error_text(exc)))
                        continue
                    if said is not None:
                        said(Logged(sink.name, run.name, where))
        except Exception as exc:  # what every tracker logs could not be made (the report): each is told
            failures += [TrackerFailure(s.name, str(folder.path), _error_text(exc)) for s in sinks
                         if s.name not in done]
    return failures
