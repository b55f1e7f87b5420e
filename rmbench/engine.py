"""The scoring engine: the only place that calls ``model.score``.

It flattens the responses of all groups into requests, hands them to the model in batches
(longest first, so that batches of similar length pad little), checks what comes back, and
returns one reward per response in the original order.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from rmbench.errors import ModelError
from rmbench.models.base import RewardModel, ScoreRequest
from rmbench.types import ComparisonGroup

Progress = Callable[[int], None]
"""Called with the number of responses just scored."""


def requests_for(groups: Sequence[ComparisonGroup]) -> list[ScoreRequest]:
    return [ScoreRequest(prompt=g.prompt, response=resp, group_id=g.id, index=i, utility=u)
            for g in groups for i, (resp, u) in enumerate(zip(g.responses, g.utilities))]


def _length(req: ScoreRequest) -> int:
    prompt = req.prompt if isinstance(req.prompt, str) else "".join(m.content for m in req.prompt)
    return len(prompt) + len(req.response)


def score_groups(model: RewardModel, groups: Sequence[ComparisonGroup], batch_size: int | None = None,
                 progress: Progress | None = None) -> np.ndarray:
    """One reward per response of ``groups``, flattened in group order."""
    requests = requests_for(groups)
    size = max(1, int(batch_size or getattr(model, "batch_size", 64)))
    order = sorted(range(len(requests)), key=lambda i: -_length(requests[i]))
    rewards = np.empty(len(requests), dtype=np.float64)
    name = model.spec.name if hasattr(model, "spec") else type(model).__name__
    for start in range(0, len(order), size):
        idx = order[start: start + size]
        batch = [requests[i] for i in idx]
        try:
            out = model.score(batch)
        except Exception as exc:  # the model's own failure, reported with where it happened
            raise ModelError(f"model {name!r} failed on a batch starting at group {batch[0].group_id!r}, response "
                             f"{batch[0].index}: {type(exc).__name__}: {exc}") from exc
        try:
            values = np.asarray(list(out), dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ModelError(f"model {name!r} returned rewards that are not numbers: {str(out)[:200]}") from None
        if values.size != len(batch):
            raise ModelError(f"model {name!r} returned {values.size} rewards for a batch of {len(batch)} responses")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            req = batch[int(bad[0])]
            raise ModelError(f"model {name!r} returned a non-finite reward ({values[bad[0]]}) for group "
                             f"{req.group_id!r}, response {req.index}")
        rewards[idx] = values
        if progress is not None:
            progress(len(batch))
    return rewards
