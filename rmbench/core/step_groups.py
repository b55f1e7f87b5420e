"""One solution of a step-level task, as a comparison group of its steps: the pairs of
step-level discrimination and specificity (ProcessBench, PRMBench)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rmbench.core.arrays import IntArray
from rmbench.core.types import ComparisonGroup


@dataclass(frozen=True)
class StepGroup(ComparisonGroup):
    """One solution of a step-level task (ProcessBench, PRMBench): ``prompt`` the problem,
    ``responses`` its steps in order (a process reward model scores them together: one
    :class:`~rmbench.models.step_model.StepRequest`), ``utilities`` each step's label, 1 correct and
    0 wrong (a step after the first wrong one that the benchmark does not label: 0, unused).

    Its rewards are the step scores, as P(step correct). Its pairs are the step-level
    counterpart of a response group's, over the steps up to and including the first wrong one
    (all steps when none is wrong): each **discrimination pair** is (a correct step before the
    first error, the first wrong step), each **specificity pair** two of those correct steps
    (``equivalence_levels`` = (1,)). So D(eps) asks whether a PRM scores the first wrong step
    below the correct steps that lead to it, and Spec(eps) whether it scores a solution's
    correct steps alike. A solution may have one step (no pairs).
    """

    min_responses: ClassVar[int] = 1
    """A solution may have one step."""

    def __post_init__(self) -> None:
        if self.equivalence_levels is None:
            object.__setattr__(self, "equivalence_levels", (1,))
        super().__post_init__()
        if any(u not in (0, 1) for u in self.utilities):
            raise ValueError(f"solution {self.id!r}: a step's label is 1 (correct) or 0 (wrong), "
                             f"got {list(self.utilities)}")
        if not isinstance(self.prompt, str):
            raise ValueError(f"solution {self.id!r}: the problem must be a string")

    @property
    def first_error(self) -> int:
        """Index of the first wrong step, -1 when every step is correct."""
        return self.utilities.index(0) if 0 in self.utilities else -1

    def pair_arrays(self) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """The pairs of the steps up to and including the first wrong one (class docstring)."""
        k = self.first_error
        u = np.asarray(self.utilities[: k + 1] if k >= 0 else self.utilities, dtype=np.int64)
        better, worse = np.nonzero(u[:, None] > u[None, :])
        a, b = np.nonzero(np.triu((u[:, None] == u[None, :]) & (u[:, None] == 1), 1))
        return better.astype(np.int64), worse.astype(np.int64), a.astype(np.int64), b.astype(np.int64)

    def pair_counts(self) -> tuple[int, int]:
        """k and k(k-1)/2 for k correct steps before the first error (0 and n(n-1)/2 with none
        wrong): the pairs of :meth:`pair_arrays`, counted without listing them."""
        k = self.first_error
        n = k if k >= 0 else len(self.utilities)
        return max(k, 0), n * (n - 1) // 2

    def to_json(self, sources: bool = False) -> dict[str, Any]:
        """The group's JSON, marked as a solution's steps (``"steps": true``)."""
        return {**super().to_json(sources), "steps": True}
