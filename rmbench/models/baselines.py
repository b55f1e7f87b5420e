"""Reference baselines: the oracle, a constant, and response length (the known length bias)."""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.models.base import RewardModel, ScoreRequest


class OracleRM(RewardModel):
    """reward = true utility. Perfect discrimination and specificity; for tests and sanity checks."""

    kind = "oracle"
    reads_images = True  # reads no prompt
    description = "reward = true utility (upper bound; for tests)"
    uses_utility = True

    def score(self, batch: Sequence[ScoreRequest]) -> list[float]:
        utilities = [r.utility for r in batch if r.utility is not None]
        if len(utilities) != len(batch):
            raise ValueError("the oracle needs the true utility of every request")
        return [float(u) for u in utilities]


class ConstantRM(RewardModel):
    """reward = a constant (``value``, default 0): D = 0 and Spec = 1 at every eps."""

    kind = "constant"
    reads_images = True  # reads no prompt
    description = "reward = a constant (lower bound on discrimination)"

    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def score(self, batch: Sequence[ScoreRequest]) -> list[float]:
        return [self.value] * len(batch)


class LengthRM(RewardModel):
    """reward = response length, in characters (``unit: chars``) or whitespace words (``unit: words``)."""

    kind = "length"
    reads_images = True  # reads no prompt
    description = "reward = response length (the length-bias baseline)"

    def __init__(self, unit: str = "chars") -> None:
        if unit not in ("chars", "words"):
            raise ValueError(f"length unit must be 'chars' or 'words', got {unit!r}")
        self.unit = unit

    def score(self, batch: Sequence[ScoreRequest]) -> list[float]:
        if self.unit == "words":
            return [float(len(r.response.split())) for r in batch]
        return [float(len(r.response)) for r in batch]
