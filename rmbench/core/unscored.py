"""Responses a model gave no reward: an LLM judge's unparsed answer (reward NaN).

Such a response is left out of its task's pairs and official scores, and counted: a judge that
refuses, rambles or is cut off before its verdict says nothing about the response, and scoring
it as the worst (RewardBench 2 scores an unparsed rating -1) would mix the judge's format
failures into its discrimination. :func:`drop_unscored` removes those responses from their
groups before any metric is computed:

* a group keeps its other responses, in their order, with their utilities (so its remaining
  pairs are exactly the pairs of the full group that involve no unscored response);
* a group left out whole: one left with fewer than 2 responses; one that had a better and a worse
  answer and kept answers of one utility only (what it measured is gone: a RewardBench 2 Ties row
  needs a correct and an incorrect answer); one whose responses hold rewrites of one another
  (``forms``: removing an original would orphan its rewrites) with any response unscored; a
  solution's steps (:class:`~rmbench.core.step_groups.StepGroup`, a critic that named no step) with any
  step unscored: a solution without one of its steps is another solution.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rmbench.core.step_groups import StepGroup
from rmbench.core.types import ComparisonGroup, group_slices


@dataclass(frozen=True)
class Scored:
    """The groups and rewards that metrics see, and what was left out."""

    groups: list[ComparisonGroup]
    rewards: np.ndarray
    unscored_responses: int
    """responses with no reward (NaN)"""
    dropped_groups: int
    """groups left out whole (under 2 scored responses, one utility left of several, or rewrites with one unscored)"""
    kept: np.ndarray
    """the flat index of each kept response in the input: ``rewards == input[kept]``, and any
    other reward vector aligned with the input (another run's) selects the same responses so"""

    moved: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """group id -> the original index of each response the group kept, for the groups that lost one
    (their responses are numbered anew; a report names them by their original index)"""

    @classmethod
    def whole(cls, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> Scored:
        """Every group and reward as they are (nothing left out)."""
        return cls(list(groups), rewards, 0, 0, np.arange(len(rewards)))


def drop_unscored(groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> Scored:
    """``groups`` and their flat ``rewards`` without the responses whose reward is NaN (see the
    module docstring); unchanged (the same list) when every response has a reward."""
    rewards = np.asarray(rewards, dtype=np.float64)
    missing = np.isnan(rewards)
    if not missing.any():
        return Scored.whole(groups, rewards)
    moved: dict[str, tuple[int, ...]] = {}
    kept_groups: list[ComparisonGroup] = []
    kept: list[int] = []
    dropped = 0
    for g, where in zip(groups, group_slices(groups)):
        n = len(g.responses)
        gone = missing[where]
        if not gone.any():
            kept_groups.append(g)
            kept += range(where.start, where.stop)
            continue
        keep = [i for i in range(n) if not gone[i]]
        mixed = len({g.utilities[i] for i in keep}) > 1 or len(set(g.utilities)) == 1
        if len(keep) < 2 or g.forms is not None or not mixed or isinstance(g, StepGroup):
            dropped += 1
            continue
        kept_groups.append(dataclasses.replace(g, responses=tuple(g.responses[i] for i in keep),
                                               utilities=tuple(g.utilities[i] for i in keep)))
        kept += [where.start + i for i in keep]
        moved[g.id] = tuple(keep)
    index = np.asarray(kept, dtype=np.int64)
    return Scored(kept_groups, rewards[index], int(missing.sum()), dropped, index, moved)
