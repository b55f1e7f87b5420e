"""``python:PATH_OR_MODULE:FUNC``: any Python function as a reward model.

FUNC takes a list of ``(prompt, response)`` tuples and returns a list of floats. The prompt is
a string, or a list of ``{"role", "content"}`` dicts for chat prompts.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Sequence

from rmbench.models.base import RewardModel, ScoreRequest
from rmbench.registry import import_target
from rmbench.types import prompt_to_json


class PythonFunctionRM(RewardModel):
    description = "python:PATH_OR_MODULE:FUNC, FUNC(list of (prompt, response)) -> list of floats"

    def __init__(self, target: str, batch_size: int = 64) -> None:
        self.target = target
        self.batch_size = int(batch_size)
        self.fn = import_target(target)
        if not callable(self.fn):
            raise TypeError(f"{target!r} is not callable")

    def score(self, batch: Sequence[ScoreRequest]) -> list[float]:
        return list(self.fn([(prompt_to_json(r.prompt), r.response) for r in batch]))

    def fingerprint(self) -> str:
        # The function's source is part of its identity: editing it changes the scores.
        try:
            source = inspect.getsource(self.fn)
        except (OSError, TypeError):
            source = ""
        return hashlib.sha256((super().fingerprint() + source).encode()).hexdigest()
