"""Scoring solutions step by step: the step-level counterpart of :func:`rmbench.scoring.engine.score_groups`.

For a :class:`~rmbench.models.step_model.StepScoringModel` (a PRM) over (problem, steps) requests:

1. keep one request per distinct input (:meth:`~rmbench.models.step_model.StepRequest.key`: the problem
   and the steps), so a solution that two tasks share is scored once;
2. take every list of step scores the cache holds (a :class:`~rmbench.scoring.cache.ScoreCache`
   under the model's :meth:`~rmbench.models.step_model.StepScoringModel.step_fingerprint`, in its own
   ``steps`` folder: a cached step score is the step score, never computed again nor replaced);
3. plan the rest with the engine's length-sorted batches (:func:`~rmbench.scoring.engine.plan_batches`
   over :meth:`~rmbench.models.step_model.StepScoringModel.step_lengths`, under the run's batch limits)
   and score each batch in this process, checking each list (one finite score per step:
   :func:`rmbench.models.steps.checked_step_scores`), and write each batch to the cache in one
   transaction, so an interrupted run resumes from its whole batches.

Only the local engine scores steps (no Ray/accelerate distribution yet).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rmbench.errors import ModelError, RMBenchError
from rmbench.models.base import RewardModel, Runtime
from rmbench.models.batching import batch_limits
from rmbench.models.step_model import StepRequest, StepScoringModel
from rmbench.models.steps import checked_step_scores
from rmbench.scoring.cache import ScoreCache
from rmbench.scoring.engine import plan_batches


class StepScoreCache(ScoreCache):
    what = "step-score cache"
    folder_name = "steps"


def step_cache(model: StepScoringModel, cache_dir: str | Path | None = None) -> StepScoreCache:
    """The step-score cache of ``model`` (``cache_dir``: the run's ``--cache-dir``; the
    step scores go in its ``steps`` folder, beside the response scores)."""
    folder = Path(cache_dir) / StepScoreCache.folder_name if cache_dir is not None else None
    return StepScoreCache(model.step_fingerprint(), folder)


def score_steps(model: StepScoringModel, requests: Sequence[StepRequest], runtime: Runtime | None = None,
                cache: ScoreCache | None = None, progress: Callable[[int], None] | None = None,
                name: str | None = None) -> list[np.ndarray]:
    """One array of step scores per request, in order (module docstring). ``name``: the
    model's display name in errors."""
    name = name or (model.kind_name() if isinstance(model, RewardModel) else type(model).__name__)
    keys = [r.key() for r in requests]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    distinct_keys = list(first)
    distinct = [requests[first[k]] for k in distinct_keys]
    results: dict[str, np.ndarray] = dict(cache.get_many(distinct_keys)) if cache is not None else {}
    for k, r in zip(distinct_keys, distinct):  # a stored list of another length is damage: scored again
        if k in results and results[k].shape != (len(r.steps),):
            del results[k]
    todo = [i for i, k in enumerate(distinct_keys) if k not in results]
    if progress is not None and len(distinct) > len(todo):
        progress(len(distinct) - len(todo))
    if todo:
        limits = batch_limits(model, runtime or Runtime()) if isinstance(model, RewardModel) else None
        budget, rows = (limits.token_budget, limits.max_batch) if limits is not None else (8192, 64)
        lengths = model.step_lengths([distinct[i] for i in todo])
        for idx in plan_batches(lengths, budget, rows):
            batch = [distinct[todo[j]] for j in idx]
            batch_keys = [distinct_keys[todo[j]] for j in idx]
            values = _score_batch(model, batch, name)
            results.update(zip(batch_keys, values))
            if cache is not None:
                results.update(cache.put_many(zip(batch_keys, values)))  # an earlier write wins
            if progress is not None:
                progress(len(batch))
    return [results[k] for k in keys]


def _score_batch(model: StepScoringModel, batch: list[StepRequest], name: str) -> list[np.ndarray]:
    try:
        out = model.score_steps(batch)
        return checked_step_scores(batch, out, model.step_scale, model.step_abstains)
    except ModelError as exc:
        raise ModelError(f"model {name!r} {exc}") from exc
    except RMBenchError:
        raise
    except Exception as exc:
        where = f"solution {batch[0].group_id!r}" if batch[0].group_id else "the first solution"
        raise ModelError(f"model {name!r} failed on a batch starting at {where}: {type(exc).__name__}: {exc}") from exc
