"""Progress when stderr is not a terminal: plain lines instead of rich bars.

Rich draws nothing on a pipe or a log file until its display stops, so a 17-minute ``rmbench
eval`` under nohup or in CI showed no sign of life. :class:`PlainProgress` has the part of
``rich.progress.Progress`` that rmbench's commands use (``add_task``, ``advance``, ``start``,
``stop``, a context manager) and prints, through ``write``, a line when a task starts, one per
unfinished task every ``every`` seconds (``RMBENCH_PROGRESS_EVERY``, default 30; a timer thread,
so a long batch or a model still loading shows too) and one when it finishes
(:func:`rmbench.core.progress.progress_line`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rmbench.core.progress import progress_every, progress_line


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float
    fields: dict[str, Any]
    start: float
    reported_done: bool = False
    done_at: float | None = None

    @property
    def finished(self) -> bool:
        return self.total is not None and self.completed >= self.total


@dataclass
class PlainProgress:
    """Plain progress lines; ``eta(fields)`` may give a task's ETA text from its fields (the
    training job's whole-job estimate), else the task's own rate extrapolates."""

    write: Callable[[str], None]
    unit: str = "items"
    every: float = field(default_factory=progress_every)
    eta: Callable[[dict], str | None] | None = None
    clock: Callable[[], float] = time.monotonic
    _tasks: list[_Task] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._tick, name="rmbench-progress", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        with self._lock:
            for task in self._tasks:
                if not task.reported_done and (task.total is None or task.finished):
                    self._report(task, finished=True)

    def __enter__(self) -> PlainProgress:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields) -> int:
        with self._lock:
            task = _Task(description, total, completed, fields, self.clock())
            self._tasks.append(task)
            self._report(task, finished=task.finished)
            return len(self._tasks) - 1

    def advance(self, task_id: int, n: float = 1) -> None:
        with self._lock:
            task = self._tasks[task_id]
            task.completed += n
            if task.finished and not task.reported_done:
                self._report(task, finished=True)

    def _report(self, task: _Task, finished: bool) -> None:
        now = self.clock()
        if finished:
            task.reported_done, task.done_at = True, now
        eta = None if finished or self.eta is None else self.eta(task.fields)
        self.write(progress_line(task.description, task.completed, task.total, task.fields.get("unit", self.unit),
                                 now - task.start, eta, finished))

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            with self._lock:
                for task in self._tasks:
                    if not task.reported_done:
                        self._report(task, finished=False)
