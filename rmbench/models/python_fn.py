"""``python:PATH_OR_MODULE:FUNC``: any Python function as a reward model.

FUNC takes a list of ``(prompt, response)`` tuples and returns a list of floats. The prompt is
a string, or a list of ``{"role", "content"}`` dicts for chat prompts.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from pathlib import Path

from rmbench.core.types import prompt_to_json
from rmbench.models.base import RewardModel, ScoreRequest
from rmbench.registry import import_target


class PythonFunctionRM(RewardModel):
    kind = "python"
    description = "python:PATH_OR_MODULE:FUNC, FUNC(list of (prompt, response)) -> list of floats"
    target_arg = "target"
    reads_images = True  # the function gets each image's file or data URL (prompt_to_json with sources)

    def __init__(self, target: str, max_batch: int | None = None) -> None:
        self.target = target
        self.max_batch = max_batch
        self.fn = import_target(target)
        if not callable(self.fn):
            raise TypeError(f"{target!r} is not callable")

    def score(self, batch: Sequence[ScoreRequest]):
        # The engine checks what comes back (count, numbers, finite) and names the request at fault.
        return self.fn([(prompt_to_json(r.prompt, sources=True), r.response) for r in batch])

    def identity(self) -> dict:
        """The function's qualified name and its source file's content (edit the file and its
        cached scores no longer apply), not the path it was named by."""
        try:
            source = Path(inspect.getsourcefile(self.fn) or "").read_bytes()
        except (OSError, TypeError):
            source = b""
        return {"kind": self.kind_name(), "args": {},
                "function": getattr(self.fn, "__qualname__", self.target),
                "source": hashlib.sha256(source).hexdigest()}
