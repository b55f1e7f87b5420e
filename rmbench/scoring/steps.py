"""Scoring solutions step by step: the step requests' adapter over the one scoring engine.

A :class:`~rmbench.models.step_model.StepScoringModel` (a PRM) scores (problem, steps) requests
(:class:`~rmbench.models.step_model.StepRequest`) through :func:`rmbench.scoring.engine.score_requests`,
as responses are scored: one request per distinct input (the problem and the steps, so a
solution that two tasks share is scored once), every list of step scores the cache holds taken
as it is, the rest planned in length-sorted batches under the run's batch limits and run by the
run's backend (this process, Ray, accelerate or a plugin's engine), each list checked (one
finite score per step: :func:`rmbench.models.steps.checked_step_scores`) and each batch written
to the cache in one transaction, so an interrupted run resumes from its whole batches.

The step scores have their own cache (:func:`step_cache`): a :class:`~rmbench.scoring.cache.ScoreCache`
under the model's :meth:`~rmbench.models.step_model.StepScoringModel.step_fingerprint` (which
leaves out the response-level ``aggregate``), in a ``steps`` folder beside the response scores'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rmbench.models.base import RewardModel, Runtime
from rmbench.models.step_model import StepRequest, StepScoringModel
from rmbench.results.storage.engine_stats import EngineStats
from rmbench.scoring.cache import ScoreCache
from rmbench.scoring.engine import score_requests
from rmbench.scoring.engines import Backend


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
