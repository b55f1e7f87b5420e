"""``python-prm:PATH_OR_MODULE:FUNC``: any Python function as a process reward model.

FUNC takes a list of ``(problem, steps)`` tuples (``problem`` a string, ``steps`` a list of
strings) and returns one list of step scores per tuple, one per step: P(step correct) in
[0, 1] (``--model-arg scale=probability``, the default) or its log-odds (``scale=logit``).
As a response-level RM it splits responses into steps and aggregates their scores
(``--model-arg aggregate=min|last|prod|mean``: :mod:`rmbench.models.steps`).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from pathlib import Path

from rmbench.models.base import RewardModel
from rmbench.models.step_model import StepRequest
from rmbench.models.steps import StepRanker, check_aggregate, check_scale
from rmbench.registry import import_target


class PythonPRM(StepRanker, RewardModel):
    kind = "python-prm"
    description = "python-prm:PATH_OR_MODULE:FUNC, FUNC(list of (problem, steps)) -> list of lists of step scores"
    target_arg = "target"

    def __init__(self, target: str, aggregate: str = "min", scale: str = "probability",
                 max_batch: int | None = None) -> None:
        self.target = target
        self.aggregate = check_aggregate(aggregate)
        self.step_scale = check_scale(scale)
        self.max_batch = max_batch
        self.fn = import_target(target)
        if not callable(self.fn):
            raise TypeError(f"{target!r} is not callable")

    def score_steps(self, batch: Sequence[StepRequest]):
        # Checked by the caller (rmbench.models.steps.checked_step_scores), which names the solution at fault.
        return self.fn([(r.problem, list(r.steps)) for r in batch])

    def identity(self) -> dict:
        """The function's qualified name, its source file's content (edit the file and its cached
        scores no longer apply), the scale and the aggregate; not the path it was named by."""
        try:
            source = Path(inspect.getsourcefile(self.fn) or "").read_bytes()
        except (OSError, TypeError):
            source = b""
        return {"kind": self.kind_name(), "args": {"aggregate": self.aggregate, "scale": self.step_scale},
                "function": getattr(self.fn, "__qualname__", self.target),
                "source": hashlib.sha256(source).hexdigest()}
