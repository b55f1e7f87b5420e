"""The reward-model interface: every adapter scores whole batches of (prompt, response) requests."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Sequence

from rmbench.types import ModelSpec, Prompt


@dataclass(frozen=True)
class ScoreRequest:
    """One response to score.

    ``utility`` is the ground truth, present only so that the ``oracle`` baseline can exist;
    real adapters must ignore it.
    """

    prompt: Prompt
    response: str
    group_id: str = ""
    index: int = 0
    utility: int | None = None


class RewardModel(ABC):
    """Base class of model adapters.

    Subclasses implement :meth:`score` over a whole batch, so an adapter can batch, pad and
    cache as it likes; the engine decides nothing about model types. ``batch_size`` is the
    number of requests the engine hands over per call.
    """

    spec: ModelSpec
    batch_size: int = 64

    @abstractmethod
    def score(self, batch: Sequence[ScoreRequest]) -> Sequence[float]:
        """One finite float reward per request, in order."""

    def fingerprint(self) -> str:
        """Identity of the scoring function; adapters with weights or code add their hash."""
        return self.spec.fingerprint()
