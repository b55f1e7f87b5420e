"""Scoring solutions step by step: the step requests' adapter over the one scoring engine.

A :class:`~rmbench.models.step_model.StepScoringModel` (a PRM) scores (problem, steps) requests
(:class:`~rmbench.models.step_model.StepRequest`) through :func:`rmbench.scoring.engine.score_requests`,
as responses are scored: one request per distinct input (the problem and the steps, so a
solution that two tasks share is scored once), every list of step scores the cache holds taken
as it is, the rest planned in length-sorted batches under the run's batch limits and run by the
run's backend (this process, Ray, accelerate or a plugin's engine), each list checked (one
finite score per step: :func:`rmbench.models.steps.checked_step_scores`) and each batch written
to the cache in one transaction, so an interrupted run resumes from its whole batches.

A run's step-level tasks get their rewards from :func:`step_task_rewards`. The step scores have
their own cache (:func:`step_cache`): a :class:`~rmbench.scoring.cache.ScoreCache` under the
model's :meth:`~rmbench.models.step_model.StepScoringModel.step_fingerprint` (which leaves out the
response-level ``aggregate``), in a ``steps`` folder beside the response scores'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rmbench.models.base import RewardModel, Runtime
from rmbench.models.step_model import StepRequest, StepScoringModel
from rmbench.results.storage.engine_stats import EngineStats
from rmbench.scoring.cache import ScoreCache
from rmbench.scoring.engine import score_requests
from rmbench.scoring.engines import Backend

if TYPE_CHECKING:
    from rmbench.scoring.planning import LoadedTask


class StepScoreCache(ScoreCache):
    what = "step-score cache"
    folder_name = "steps"


def step_cache(model: StepScoringModel, cache_dir: str | Path | None = None,
               warn: Callable[[str], None] | None = None) -> StepScoreCache:
    """The step-score cache of ``model``: in ``cache_dir``'s ``steps`` folder (the run's
    ``--cache-dir``, beside the response scores), or in the user cache's ``steps`` folder when
    ``cache_dir`` is None, as the response scores default to the user cache's ``scores``."""
    folder = Path(cache_dir) / StepScoreCache.folder_name if cache_dir is not None else None
    return StepScoreCache(model.step_fingerprint(), folder, warn)


def score_steps(model: RewardModel, requests: Sequence[StepRequest], runtime: Runtime | None = None,
                cache: ScoreCache | None = None, progress: Callable[[int], None] | None = None,
                name: str | None = None, backend: Backend | None = None,
                factory: Callable[[], RewardModel] | None = None) -> tuple[list[np.ndarray], EngineStats]:
    """One array of step scores per request, in order, and what it cost
    (:func:`~rmbench.scoring.engine.score_requests`, whose arguments these are; ``progress``
    counts solutions)."""
    return score_requests(model, requests, runtime, progress, cache, backend, factory, name)


@dataclass(frozen=True)
class StepCache:
    """Where a run keeps its step scores: ``on`` False for ``--no-cache`` or a judge (whose calls
    are cached instead); ``cache_dir`` None: the default location (:func:`step_cache`), as for
    response scores."""

    on: bool
    cache_dir: str | Path | None
    warn: Callable[[str], None] | None = None

    def open(self, model: StepScoringModel) -> ScoreCache | None:
        return step_cache(model, self.cache_dir, self.warn) if self.on else None


def step_task_rewards(model: RewardModel, step_tasks: Sequence[LoadedTask], runtime: Runtime, caching: StepCache,
                      progress: Callable[[int], None] | None = None, name: str | None = None,
                      backend: Backend | None = None, factory: Callable[[], RewardModel] | None = None
                      ) -> tuple[list[np.ndarray], EngineStats]:
    """Each step-level task's rewards: the step scores of its solutions, as P(step correct)
    (a logit-scale model's through the sigmoid), one per step, solutions in order; and what the
    engine did (:func:`score_steps` on the run's backend, with the model's own step cache;
    ``progress`` counts solutions)."""
    if not step_tasks:
        return [], EngineStats()
    assert isinstance(model, StepScoringModel)  # plan_run checked it
    requests = [StepRequest(problem=g.prompt if isinstance(g.prompt, str) else "", steps=g.responses, group_id=g.id)
                for t in step_tasks for g in t.groups]
    cache = caching.open(model)
    try:
        scores, stats = score_steps(model, requests, runtime, cache, progress, name, backend, factory)
    finally:
        if cache is not None:
            cache.close()
    flat = np.concatenate(scores).astype(np.float64) if scores else np.zeros(0)
    if model.step_scale == "logit":
        flat = 1.0 / (1.0 + np.exp(-flat))
    bounds = np.cumsum([0] + [t.n_responses for t in step_tasks])
    return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])], stats
