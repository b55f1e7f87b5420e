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

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from rmbench.core.types import prompt_from_json, prompt_to_json
from rmbench.errors import ModelError, RMBenchError
from rmbench.models.base import RewardModel, ScoreRequest
from rmbench.models.batching import BatchLimits
from rmbench.models.threads import ThreadGovernor
from rmbench.scoring.engines import BackendOptions, Engine, Factory
from rmbench.scoring.memory import MemoryRetries, failure_text, is_out_of_memory, score_in_halves
from rmbench.scoring.timeout import BatchDeadline


def request_to_json(r: ScoreRequest) -> dict[str, Any]:
    return {"prompt": prompt_to_json(r.prompt), "response": r.response, "group_id": r.group_id, "index": r.index,
            "utility": r.utility, "context": list(r.context), "subset": r.subset}


def request_from_json(d: dict[str, Any]) -> ScoreRequest:
    return ScoreRequest(prompt_from_json(d["prompt"]), d["response"], d["group_id"], int(d["index"]), d["utility"],
                        tuple(d.get("context", ())), d.get("subset"))


def score_batch(model: RewardModel, batch: Sequence[ScoreRequest], retries: MemoryRetries | None = None
                ) -> np.ndarray:
    """``model.score(batch)`` as checked floats (:func:`checked_rewards`), with a failure
    reported as where it happened. Every backend scores through it, in whatever process; its
    errors say what the model did, and the engine adds which model it was. A batch that runs out
    of memory is scored again in halves (:mod:`rmbench.scoring.memory`), counted in ``retries``."""
    try:
        out = model.score(batch)
    except RMBenchError:  # already says what is wrong (a model that cannot load, a bad setting)
        raise
    except Exception as exc:  # the model's own failure, reported with where it happened
        if not is_out_of_memory(exc):
            raise ModelError(f"failed on a batch starting at group {batch[0].group_id!r}, "
                             f"response {batch[0].index}: {type(exc).__name__}: {exc}") from exc
        failure = failure_text(exc)
    else:
        return checked_rewards(batch, out)
    # Out of the except clause, so the failed attempt's frames (and their tensors) are freed first.
    retries = retries if retries is not None else MemoryRetries()
    return score_in_halves(batch, failure, retries, lambda half: score_batch(model, half, retries))


def checked_rewards(batch: Sequence[ScoreRequest], out: Any) -> np.ndarray:
    """One finite float (or one fixed-length vector) per request, or a ModelError that names the
    offending request: a value that is not a number (a string or a bool is refused even where
    numpy would convert it), the wrong count, or NaN/infinity."""
    if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
        raise ModelError(f"returned {type(out).__name__}, not a list of floats, for a batch of "
                         f"{len(batch)} responses starting at group {batch[0].group_id!r}, response "
                         f"{batch[0].index}")
    if not isinstance(out, np.ndarray):
        out = list(out)
        for request, value in zip(batch, out):
            if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
                raise ModelError(f"returned rewards that are not numbers: {type(value).__name__} "
                                 f"{str(value)[:60]!r} for group {request.group_id!r}, response {request.index}; "
                                 f"return one float per (prompt, response) pair")
    try:
        values = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"returned rewards that are not numbers: {str(out)[:200]}") from None
    if values.ndim == 0 or values.shape[0] != len(batch) or values.ndim > 2:
        raise ModelError(f"returned {values.shape[0] if values.ndim else 'a scalar'} rewards for a "
                         f"batch of {len(batch)} responses (group {batch[0].group_id!r}, response {batch[0].index} "
                         f"to group {batch[-1].group_id!r}, response {batch[-1].index}); return one reward per "
                         f"(prompt, response) pair, in order")
    bad = np.flatnonzero(~np.isfinite(values.reshape(len(batch), -1)).all(axis=1))
    if bad.size:
        request = batch[int(bad[0])]
        raise ModelError(f"returned a non-finite reward ({values[bad[0]]}) for group "
                         f"{request.group_id!r}, response {request.index}")
    return values


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

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[ScoreRequest]]
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
