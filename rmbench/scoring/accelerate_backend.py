"""``--engine accelerate``: one process per GPU (or CPU process) under ``accelerate launch``;
batch j goes to rank ``j % world_size``, so ranks get interleaved batches of the length-sorted
plan (equal work), and the results are gathered on every rank; only rank 0 writes cache and files.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import RewardModel
from rmbench.models.batching import BatchLimits
from rmbench.scoring.backends import score_batch
from rmbench.scoring.engines import BackendOptions, Engine, Factory
from rmbench.scoring.memory import MemoryRetries
from rmbench.scoring.requests import Request


class AccelerateBackend:
    """One rank per process of ``accelerate launch``; see the module docstring."""

    name = "accelerate"
    scores_here = True

    def __init__(self) -> None:
        try:
            from accelerate import PartialState
        except ImportError:
            raise ConfigError("--engine accelerate needs accelerate: pip install 'rmbench[accelerate]'") from None
        import torch

        # Without GPUs, the ranks that torchrun (or ``accelerate launch --multi_gpu``) starts are
        # joined as CPU processes over gloo.
        self.state = PartialState(cpu=not torch.cuda.is_available())
        self.rank, self.workers = self.state.process_index, self.state.num_processes
        self.is_main = self.state.is_main_process
        self.device = str(self.state.device)
        self.memory = MemoryRetries()  # every rank's out-of-memory splits, gathered with the scores
        if self.device == "cpu" and self.workers > 1:  # share the cores instead of oversubscribing them
            local = int(os.environ.get("LOCAL_WORLD_SIZE", self.workers))
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[Request]]
            ) -> Iterator[tuple[int, Any]]:
        from accelerate.utils import gather_object

        retries = MemoryRetries()
        mine = [(j, score_batch(model, batches[j], retries).tolist())
                for j in range(self.rank, len(batches), self.workers)]
        mine.append((-1, [retries.splits, retries.first]))  # this rank's splits ride with its scores
        gathered = gather_object(mine) if self.workers > 1 else mine
        for j, values in sorted(gathered, key=lambda t: t[0]):
            if j < 0:
                self.memory.add(*values)
            else:
                yield j, np.asarray(values)

    def agree(self, limits: BatchLimits) -> BatchLimits:
        """Every rank must plan the same batches (batch j runs on rank j % world size): the
        smallest token budget of all ranks (each measured its own GPU's free memory)."""
        if self.workers == 1:
            return limits
        from accelerate.utils import gather_object

        budgets = gather_object([limits.token_budget])
        if min(budgets) == max(budgets):
            return limits
        return dataclasses.replace(limits, token_budget=min(budgets),
                                   chosen_by=f"{limits.chosen_by}; the smallest of the {self.workers} ranks' budgets")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.workers, "device": self.device}


def _accelerate(options: BackendOptions) -> AccelerateBackend:
    return AccelerateBackend()


def _is_main() -> bool:
    """False on the ranks of ``accelerate launch`` other than 0 (they score, but write nothing);
    the process group is joined as the engine joins it."""
    return bool(AccelerateBackend().is_main)


ACCELERATE_ENGINE = Engine(build=_accelerate, main_process=_is_main)
