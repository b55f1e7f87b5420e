"""Process reward models as response-level RMs: splitting a response into steps, checking step
scores, and aggregating them into one reward.

A :class:`~rmbench.models.step_model.StepScoringModel` that also subclasses :class:`StepRanker`
scores whole responses like any RM, so it runs on every task (``ppe_correctness``,
``rewardbench2``...):

* **Steps of a response** (:func:`split_steps`): the response split at blank lines
  (``"\\n\\n"``, the step delimiter of HF search-and-learn's PRM scorers,
  ``ans.split("\\n\\n")``), each step stripped, empty ones dropped; a response without a blank
  line is one step (an empty response is one empty step). A single newline does not split.
* **The problem** (:func:`problem_text`): the prompt when it is text; for a chat prompt, the
  content of its last user turn.
* **The reward** (:func:`aggregate`, ``--model-arg aggregate=``): over p_1..p_n, the steps'
  P(correct) (a ``logit`` score s is read as p = sigmoid(s)):
  ``min`` (the default): min_i p_i; ``last``: p_n; ``prod``: prod_i p_i; ``mean``: (1/n) sum_i p_i.
  The aggregate is part of the model's identity (its scores are cached apart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from rmbench.core.types import Prompt
from rmbench.errors import ConfigError, ModelError
from rmbench.models.base import ScoreRequest
from rmbench.models.step_model import STEP_SCALES, StepRequest, StepScoringModel

AGGREGATES = ("min", "last", "prod", "mean")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def split_steps(response: str) -> tuple[str, ...]:
    """The steps of a response: its paragraphs between blank lines, stripped, empty ones
    dropped; at least one step (``("",)`` for an empty response)."""
    steps = tuple(s.strip() for s in _BLANK_LINE.split(response) if s.strip())
    return steps or ("",)


def problem_text(prompt: Prompt) -> str:
    """The problem a PRM reads: a text prompt itself, or a chat prompt's last user turn."""
    if isinstance(prompt, str):
        return prompt
    users = [m.content for m in prompt if m.role == "user"]
    return users[-1] if users else (prompt[-1].content if prompt else "")


def check_aggregate(name: str) -> str:
    if name not in AGGREGATES:
        raise ConfigError(f"--model-arg aggregate must be one of {', '.join(AGGREGATES)}, got {name!r}")
    return name


def check_scale(name: str) -> str:
    if name not in STEP_SCALES:
        raise ConfigError(f"--model-arg scale must be one of {', '.join(STEP_SCALES)}, got {name!r}")
    return name


def to_probability(scores: Sequence[float] | np.ndarray, scale: str) -> np.ndarray:
    """Step scores as P(step correct): as they are on the ``probability`` scale, sigmoid(s) on ``logit``."""
    values = np.asarray(scores, dtype=np.float64)
    return values if scale == "probability" else 1.0 / (1.0 + np.exp(-values))


def aggregate(scores: Sequence[float] | np.ndarray, how: str, scale: str = "probability") -> float:
    """One reward from one response's step scores (formulas in the module docstring)."""
    p = to_probability(scores, scale)
    if how == "min":
        return float(p.min())
    if how == "last":
        return float(p[-1])
    if how == "prod":
        return float(np.prod(p))
    if how == "mean":
        return float(p.mean())
    raise ConfigError(f"--model-arg aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")


def checked_step_scores(batch: Sequence[StepRequest], out: Any, scale: str, abstains: bool = False) -> list[np.ndarray]:
    """One array of finite step scores per request, as many as its steps (in [0, 1] on the
    ``probability`` scale), or a ModelError naming the first request at fault. ``abstains`` (a
    model's ``step_abstains``): a solution's scores may also be all NaN, no verdict."""
    if isinstance(out, (str, bytes)) or not isinstance(out, Sequence | np.ndarray):
        raise ModelError(f"returned {type(out).__name__}, not a list of lists of step scores, for a batch of "
                         f"{len(batch)} solutions")
    out = list(out)
    if len(out) != len(batch):
        raise ModelError(f"returned {len(out)} lists of step scores for a batch of {len(batch)} solutions")
    checked = []
    for request, values in zip(batch, out):
        where = f"solution {request.group_id!r}" if request.group_id else "a solution"
        try:
            if isinstance(values, (str, bytes)) or any(isinstance(v, (str, bytes, bool, np.bool_)) for v in values):
                raise TypeError
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ModelError(f"returned step scores that are not numbers for {where}: {str(values)[:120]}") from None
        if array.shape != (len(request.steps),):
            raise ModelError(f"returned {array.size} step scores for {where} with {len(request.steps)} steps; "
                             f"return one score per step")
        if abstains and np.isnan(array).all():
            checked.append(array)
            continue
        if not np.isfinite(array).all():
            raise ModelError(f"returned a step score that is not finite for {where}: {array.tolist()}")
        if scale == "probability" and ((array < 0) | (array > 1)).any():
            raise ModelError(f"returned a step score outside [0, 1] for {where}: {array.tolist()}; a PRM whose "
                             f"scores are log-odds says so with --model-arg scale=logit")
        checked.append(array)
    return checked


class StepRanker(StepScoringModel):
    """A PRM as a response-level RM: :meth:`score` splits each response into steps, scores
    them (:meth:`score_steps`) and aggregates them. A subclass that is also a
    :class:`~rmbench.models.base.RewardModel` sets ``aggregate`` (checked) in its constructor."""

    aggregate: str = "min"

    def score(self, batch: Sequence[ScoreRequest]) -> Sequence[float] | np.ndarray:
        requests = [StepRequest(problem_text(r.prompt), split_steps(r.response), r.group_id) for r in batch]
        scores = checked_step_scores(requests, self.score_steps(requests), self.step_scale, self.step_abstains)
        return [aggregate(s, self.aggregate, self.step_scale) for s in scores]

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        return self.step_lengths([StepRequest(problem_text(r.prompt), split_steps(r.response)) for r in batch])
