"""Where the engine's batches run, and what every backend shares: this process (``local``,
here), a Ray cluster (``ray``, :mod:`rmbench.scoring.ray_backend`) or the processes of
``accelerate launch`` (``accelerate``, :mod:`rmbench.scoring.accelerate_backend`); ``--engine``
picks one from the registry of :mod:`rmbench.scoring.engines`, where a plugin adds its own.

rmbench does not grow its own distributed system. The engine (:mod:`rmbench.scoring.engine`) still
dedupes the requests, plans the batches, reads and writes the score cache, and checks and
post-processes the rewards; a backend (:class:`rmbench.scoring.engines.Backend`) only turns a
list of planned batches into raw scores, yielding ``(batch index, values)`` as batches finish,
in any order. Because the plan is the same whatever runs it, every backend computes the same
batches and so the same scores; each scores a batch through :func:`score_batch`.

Workers rebuild the model from a picklable ``factory`` and check that its fingerprint equals
the driver's, so a worker with other weights or code fails loudly instead of mixing scores.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from rmbench.errors import ModelError, RMBenchError
from rmbench.models.base import RewardModel
from rmbench.models.batching import BatchLimits
from rmbench.models.threads import ThreadGovernor
from rmbench.scoring.engines import BackendOptions, Engine, Factory
from rmbench.scoring.memory import MemoryRetries, failure_text, is_out_of_memory, score_in_halves
from rmbench.scoring.requests import Request, kind_of, where
from rmbench.scoring.timeout import BatchDeadline


def score_batch(model: RewardModel, batch: Sequence[Request], retries: MemoryRetries | None = None
                ) -> np.ndarray:
    """A batch's checked values, as one flat float array, with a failure reported as where it
    happened: ``model.score(batch)`` for responses (one finite reward, or one fixed-length vector,
    per response), ``model.score_steps(batch)`` for steps (every step's score, solution after
    solution); :mod:`rmbench.scoring.requests` says which from the requests' type. Every backend
    scores through it, in whatever process; its errors say what the model did, and the engine adds
    which model it was. A batch that runs out of memory is scored again in halves
    (:mod:`rmbench.scoring.memory`), counted in ``retries``."""
    return _score_or_split(model, batch, retries if retries is not None else MemoryRetries(), top=True)


def _score_or_split(model: RewardModel, batch: Sequence[Request], retries: MemoryRetries, top: bool) -> np.ndarray:
    """:func:`score_batch`; ``top``: ``batch`` is a whole planned batch, not a half of one (only a
    failed whole batch pays for a full garbage collection before its halves)."""
    kind = kind_of(batch[0])
    try:
        return kind.score(model, batch)
    except RMBenchError:  # already says what is wrong (a model that cannot load, a bad setting, bad values)
        raise
    except Exception as exc:  # the model's own failure, reported with where it happened
        if not is_out_of_memory(exc):
            raise ModelError(f"failed on a batch starting at {where(batch[0])}: {type(exc).__name__}: {exc}"
                             ) from exc
        failure = failure_text(exc)
    # Out of the except clause, so the failed attempt's frames (and their tensors) are freed first.
    return score_in_halves(batch, failure, retries, lambda half: _score_or_split(model, half, retries, top=False),
                           collect=top)


class LocalBackend:
    """The batches in order, in this process; with a thread governor
    (:mod:`rmbench.models.threads`), each batch on the threads the machine's load leaves free."""

    name = "local"
    workers = 1
    is_main = True
    scores_here = True  # this process's device decides the batch limits (rmbench.models.batching)
    device: str | None = None  # the device this process must use, when the backend decides it

    def __init__(self, threads: ThreadGovernor | None = None, deadline: BatchDeadline | None = None) -> None:
        self.threads, self.deadline = threads, deadline
        self.memory = MemoryRetries()

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[Request]]
            ) -> Iterator[tuple[int, Any]]:
        for j, batch in enumerate(batches):
            if self.threads is not None:
                self.threads.before_batch()
            if self.deadline is None:
                values = score_batch(model, batch, self.memory)
            else:  # the deadline covers the scoring only, not the cache write while the engine holds the batch
                values = self.deadline.call(batch, partial(score_batch, model, batch, self.memory))
            yield j, values

    def agree(self, limits: BatchLimits) -> BatchLimits:
        """The batch limits every process plans with (one process: its own)."""
        return limits

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.workers}




def _local(options: BackendOptions) -> LocalBackend:
    return LocalBackend(options.threads, options.deadline)


LOCAL_ENGINE = Engine(build=_local, in_process=True)
