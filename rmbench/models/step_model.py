"""The step-scoring capability: a process reward model (PRM) scores each step of a solution
(:class:`StepRequest`) on a declared scale; :mod:`rmbench.models.steps` makes one a
response-level RM too, and :mod:`rmbench.scoring.steps` batches and caches its step scores."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rmbench import __version__
from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.models.base import RewardModel


@dataclass(frozen=True)
class StepRequest:
    """One solution whose steps a :class:`StepScoringModel` scores: the problem and its steps,
    in order. ``group_id`` names it in errors only (never part of the key)."""

    problem: str
    """The problem the solution solves."""
    steps: tuple[str, ...]
    """The solution's steps, in order: one score each."""
    group_id: str = ""

    def key(self) -> str:
        """sha256 of the scored input: the problem and the steps."""
        return sha256_hex(canonical_json({"problem": self.problem, "steps": list(self.steps)}))


STEP_SCALES = ("probability", "logit")
"""How a step score reads: ``probability``, P(step correct) in [0, 1]; ``logit``, its log-odds."""


class StepScoringModel(ABC):
    """A process reward model: one score per step of a (problem, steps) request.

    ``step_scale``: :data:`STEP_SCALES` (an instance attribute or a class one). Such a model
    is also an ordinary response-level RM when it subclasses :class:`RewardModel` too
    (:class:`rmbench.models.steps.StepRanker`): its ``aggregate`` argument is then part of its
    :meth:`RewardModel.identity`, but never of :meth:`step_identity` (the step scores do not
    depend on it, so their cache is shared by every aggregate)."""

    step_scale: str = "probability"
    step_abstains: bool = False
    """Whether :meth:`score_steps` may give a solution's steps NaN, "no verdict" (an LLM critic's
    answer that names no step): such a solution has no prediction (a step-level task counts it as
    one that matches no label)."""

    @abstractmethod
    def score_steps(self, batch: Sequence[StepRequest]) -> Sequence[Sequence[float]]:
        """One list of scores per request, one score per step, in order."""

    def step_lengths(self, batch: Sequence[StepRequest]) -> list[int]:
        """Cost of each request in tokens, for batching (default: characters / 4)."""
        return [1 + (len(r.problem) + sum(len(s) for s in r.steps)) // 4 for r in batch]

    def step_identity(self) -> dict[str, Any]:
        """What makes the step scores what they are: :meth:`RewardModel.identity` without the
        response-level ``aggregate``."""
        ident: dict[str, Any] = self.identity() if isinstance(self, RewardModel) else {"kind": type(self).__qualname__}
        given: Mapping[str, Any] = ident.get("args") or {}
        args = {k: v for k, v in given.items() if k != "aggregate"}
        return {**ident, "args": args, "scores": "steps"}

    def step_fingerprint(self) -> str:
        """sha256 of :meth:`step_identity`, rmbench's version and, for a plugin's model kind, the
        plugin's distribution and module hash (:meth:`RewardModel.fingerprint_of`): keys the
        step-score cache, so an edited plugin PRM scores its steps again."""
        if isinstance(self, RewardModel):
            return self.fingerprint_of(self.step_identity())
        return sha256_hex(canonical_json({"identity": self.step_identity(), "rmbench": __version__}))
