"""A model kind: a pure-Python reward model, a reward per occurrence of a keyword."""

from collections.abc import Sequence

from rmbench.plugins import RewardModel, ScoreRequest


class KeywordRM(RewardModel):
    kind = "keyword-rm"  # its registered name: the identity (and score cache key) uses it

    def __init__(self, keyword: str = "please") -> None:  # its arguments: --model-arg keyword=thanks
        self.keyword = keyword

    def score(self, batch: Sequence[ScoreRequest]) -> list[float]:  # one float per request
        return [float(r.response.count(self.keyword)) for r in batch]
