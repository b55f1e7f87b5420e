"""TensorBoard (``--log-to tensorboard``): event files, one TensorBoard run per rmbench run.

Where: ``<run folder>/tensorboard/`` (so ``tensorboard --logdir runs`` shows every run, each
named by its folder), or ``<logdir>/<run folder name>/`` with ``--log-arg tensorboard.logdir=DIR``.
Each number is a scalar at one step, stored as a float64 tensor (the scalars plugin reads it;
the older float32 ``simple_value`` would round it); the config and each leaderboard section are
text (Markdown: TensorBoard's Text tab draws the tables); TensorBoard has no artifacts, so
report.html and ``rmbench-results.json`` (the run's results.json) are copied beside the event
files. A rerun that replaces the run
replaces its event files too (the earlier ones are removed once the new ones are written), so
the folder never shows two runs' numbers as one.

The writer is ``torch.utils.tensorboard`` (torch is rmbench's own dependency); it needs the
``tensorboard`` package (the ``tensorboard`` extra).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmbench.core.options import Option
from rmbench.errors import WriteError
from rmbench.files import atomic_write_bytes
from rmbench.results.trackers.payload import TrackedRun
from rmbench.results.trackers.sink import TrackerSink

EVENTS_GLOB = "events.out.tfevents.*"


def _indented(text: str) -> str:
    """A Markdown code block (indented: TensorBoard's Markdown reads it as preformatted text)."""
    return "\n".join("    " + line for line in text.splitlines())


class TensorBoardSink(TrackerSink):
    name = "tensorboard"
    library = "tensorboard"
    package = "tensorboard"
    extra = "tensorboard"
    options = (Option("logdir", help="the parent of one folder per run (default: each run folder's tensorboard/)"),)
    credentials = "TensorBoard writes local files and takes none"

    def logdir(self, run: TrackedRun) -> Path:
        base = self.setting("logdir")
        return Path(base) / run.name if base else run.folder / "tensorboard"

    def log(self, run: TrackedRun, step: int = 0) -> str:
        """A failed write (a full disk, a read-only logdir) is one :class:`WriteError` naming the
        folder and the cause, raised here rather than printed as the writer thread's traceback,
        and the event files begun are removed (the earlier run's stay)."""
        from torch.utils.tensorboard import SummaryWriter

        where = self.logdir(run)
        earlier = set(where.glob(EVENTS_GLOB)) if where.is_dir() else set()
        try:
            with _writer_thread_errors_raised_here():
                writer = SummaryWriter(log_dir=str(where))
                try:
                    for key, value in run.scalars().items():
                        writer.add_scalar(key, value, step, new_style=True, double_precision=True)
                    writer.add_text("config", _indented(json.dumps(run.config, indent=2, default=str)), step)
                    for key, frame in run.tables:
                        writer.add_text(key, frame.to_markdown(index=False), step)
                finally:
                    writer.close()  # joins the writer thread; raises what it met
            for path in run.files:
                atomic_write_bytes(where / path.name, path.read_bytes())
        except OSError as exc:
            for begun in set(where.glob(EVENTS_GLOB)) - earlier if where.is_dir() else ():
                begun.unlink(missing_ok=True)
            if isinstance(exc, WriteError):
                raise
            raise WriteError(exc.filename or where, exc) from None
        for old in earlier:
            old.unlink(missing_ok=True)
        return str(where)


@contextmanager
def _writer_thread_errors_raised_here() -> Iterator[None]:
    """While the block runs, an OSError of tensorboard's writer thread is not printed as a thread's
    traceback: the writer keeps it and raises it in this thread (at ``close()`` at the latest), where
    it is the tracker's one error line."""
    before = threading.excepthook

    def hook(args) -> None:
        if (args.thread is not None and type(args.thread).__module__.startswith("tensorboard.")
                and args.exc_type is not None and issubclass(args.exc_type, OSError)):
            return
        before(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = before
