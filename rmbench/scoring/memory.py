"""A batch that runs out of memory is scored again in halves, down to one request (a response,
or a solution's steps).

Every backend scores through :func:`rmbench.scoring.backends.score_batch`, which hands a model's
out-of-memory failure here: :func:`score_in_halves` frees what the failed attempt held, scores
the first half and then the second (each half may split again), and joins the values in order.
A python function that scores pair by pair gives the whole batch's rewards bit for bit; a
transformers model gives them to float32 rounding (torch's kernels round a row differently in a
batch of another shape: ~6e-7 on the tiny test models, as a batch of one does without any split;
``tests/scoring/test_memory_faults.py`` checks both); an MC-dropout model (``discretize``) draws other
masks for other batch shapes, so its split batches give rewards of the same distribution.

A single response that still runs out of memory is one :class:`~rmbench.errors.ModelError`
naming it, the allocator's message and what makes a row smaller (``--max-length``, ``--dtype``).
The retries are counted (:class:`MemoryRetries`; ``execution.stats.oom_splits`` in the run record)
and the run warns about them once.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.errors import ModelError
from rmbench.scoring.requests import Request, kind_of, where

OOM_TEXTS = ("out of memory", "not enough memory", "defaultcpuallocator: can't allocate")
"""What the allocators write (lower case): CUDA and MPS ``... out of memory``, the CPU allocator's
``DefaultCPUAllocator: not enough memory`` / ``can't allocate memory``."""


@dataclass
class MemoryRetries:
    """How often batches were split because they ran out of memory, and the first failure."""

    splits: int = 0
    """How many batches were split in two."""
    first: str | None = None
    """The first out-of-memory failure's message; None: none."""

    def note(self, failure: str) -> None:
        """Count one split after ``failure`` (the out-of-memory message)."""
        self.splits += 1
        if self.first is None:
            self.first = failure

    def add(self, splits: int, first: str | None) -> None:
        """Counts from another process (a Ray worker, an accelerate rank)."""
        self.splits += splits
        if self.first is None:
            self.first = first


def _torch_oom_types() -> tuple[type, ...]:
    torch = sys.modules.get("torch")  # never imported here: a model that uses torch has imported it
    if torch is None:
        return ()
    found = (getattr(torch, "OutOfMemoryError", None), getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None))
    return tuple(t for t in found if isinstance(t, type))


def is_out_of_memory(exc: BaseException) -> bool:
    """``MemoryError``, torch's ``OutOfMemoryError`` (CUDA's too), or a RuntimeError whose message
    says the allocator found no memory."""
    if isinstance(exc, MemoryError) or isinstance(exc, _torch_oom_types()):
        return True
    return isinstance(exc, RuntimeError) and any(t in str(exc).lower() for t in OOM_TEXTS)


def failure_text(exc: BaseException) -> str:
    """The allocator's message, first line, as the user sees it in an error."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0][:300] if lines else 'no message'}"


def _free_memory() -> None:
    """What the failed attempt held goes back before the retry (its tensors, a GPU's cached blocks)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def score_in_halves(batch: Sequence[Request], failure: str, retries: MemoryRetries,
                    score: Callable[[Sequence[Request]], np.ndarray], collect: bool = True) -> np.ndarray:
    """The values of ``batch`` after its whole failed with out-of-memory ``failure``: ``score``
    (which may split again) on each half, joined in order; for one response, the error.
    ``collect``: free what the failed attempt held first (:func:`_free_memory`, a full garbage
    collection: tens of milliseconds with torch loaded), done once per failed top-level batch; a
    half that fails again frees its own attempt's tensors by reference counting as it unwinds."""
    if len(batch) == 1:
        raise ModelError(f"ran out of memory on a single {kind_of(batch[0]).unit[:-1]} ({where(batch[0])}), so "
                         f"no smaller batch is left to try: {failure}; make the texts shorter (--max-length N) or "
                         f"the weights smaller (--dtype bfloat16 or float16), or run on a device with more memory "
                         f"(a smaller --token-budget makes batches smaller, not single responses)")
    retries.note(failure)
    if collect:
        _free_memory()
    half = (len(batch) + 1) // 2
    first, second = score(batch[:half]), score(batch[half:])
    return np.concatenate([first, second], axis=0)
