"""``python:PATH_OR_MODULE:FUNC``: any Python function as a reward model.

FUNC takes a list of ``(prompt, response)`` tuples and returns a list of floats. The prompt is
a string, or a list of ``{"role", "content"}`` dicts for chat prompts.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from pathlib import Path
from typing import Sequence

import numpy as np

from rmbench.errors import ModelError
from rmbench.models.base import RewardModel, ScoreRequest
from rmbench.registry import import_target
from rmbench.types import prompt_to_json


class PythonFunctionRM(RewardModel):
    description = "python:PATH_OR_MODULE:FUNC, FUNC(list of (prompt, response)) -> list of floats"
    target_arg = "target"

    def __init__(self, target: str, max_batch: int | None = None) -> None:
        self.target = target
        self.max_batch = max_batch
        self.fn = import_target(target)
        if not callable(self.fn):
            raise TypeError(f"{target!r} is not callable")

    @property
    def _who(self) -> str:
        return f"model {self.spec.name!r}" if hasattr(self, "spec") else f"function {self.target!r}"

    def score(self, batch: Sequence[ScoreRequest]) -> list[float]:
        out = self.fn([(prompt_to_json(r.prompt), r.response) for r in batch])
        try:
            values = list(out)
        except TypeError:
            raise ModelError(f"{self._who} returned {type(out).__name__}, not a list of floats, for a batch of "
                             f"{len(batch)} responses starting at group {batch[0].group_id!r}, response "
                             f"{batch[0].index}") from None
        if len(values) != len(batch):
            raise ModelError(f"{self._who} returned {len(values)} rewards for a batch of {len(batch)} responses "
                             f"(group {batch[0].group_id!r}, response {batch[0].index} to group "
                             f"{batch[-1].group_id!r}, response {batch[-1].index}); return one float per "
                             f"(prompt, response) pair, in order")
        rewards = []
        for request, value in zip(batch, values):
            # A string or a bool is a bug in the function even where numpy would convert it;
            # anything else that float() takes (numpy and 0-d torch scalars) is a number.
            try:
                if isinstance(value, (str, bytes, bool, np.bool_)):
                    raise TypeError
                reward = float(value)
            except (TypeError, ValueError):
                raise ModelError(f"{self._who} returned rewards that are not numbers: {type(value).__name__} "
                                 f"{str(value)[:60]!r} for group {request.group_id!r}, response {request.index}; "
                                 f"return one float per (prompt, response) pair") from None
            if not math.isfinite(reward):
                raise ModelError(f"{self._who} returned a non-finite reward ({reward}) for group "
                                 f"{request.group_id!r}, response {request.index}")
            rewards.append(reward)
        return rewards

    def fingerprint(self) -> str:
        # The source file's content and the function's name are its identity: edit the file and
        # its cached scores no longer apply.
        try:
            source = Path(inspect.getsourcefile(self.fn) or "").read_bytes()
        except (OSError, TypeError):
            source = b""
        name = getattr(self.fn, "__qualname__", self.target)
        return hashlib.sha256(source + b"\0" + name.encode() + b"\0" + super().fingerprint().encode()).hexdigest()
