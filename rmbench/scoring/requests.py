"""What the scoring engine scores: one :class:`RequestKind` per type of request.

The engine (:func:`rmbench.scoring.engine.score_requests`) is generic over the request: it
dedupes requests by key, reads and writes the cache, plans batches by token length and hands
them to a backend, whatever the request is. A request kind says the rest, once:

* its **key** (the cache key of the scored input);
* its **token lengths** (what the batch plan sorts and packs) and, for responses, the prompt
  prefix a batch may share;
* how a **batch is scored and checked** in whatever process runs it (:func:`score_checked`:
  ``model.score`` for a :class:`~rmbench.models.base.ScoreRequest`, ``model.score_steps`` for a
  :class:`~rmbench.models.step_model.StepRequest`);
* the **shape of its result**: a batch's checked values are one flat float array (one reward, or
  one fixed-length vector, per response; every step's score, solution after solution, for steps),
  so every backend ships, joins and splits them the same way, and :meth:`RequestKind.unflatten`
  cuts them back into one value per request;
* its JSON form, for a backend that ships batches to other processes (Ray);
* where a request is, in an error (:func:`where`).

Two kinds exist: :data:`RESPONSES` and :data:`STEPS`; :func:`kind_of` picks one from a
request's type, so a backend (a plugin's too) needs to know neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from rmbench.core.types import prompt_from_json, prompt_to_json
from rmbench.errors import ModelError
from rmbench.models.base import RewardModel, ScoreRequest, TokenizedModel
from rmbench.models.step_model import StepRequest, StepScoringModel
from rmbench.models.steps import checked_step_scores

Request: TypeAlias = ScoreRequest | StepRequest
"""What the engine scores: a response, or a solution whose steps a process RM scores."""


@dataclass(frozen=True)
class RequestKind:
    """How the engine handles one type of request (module docstring)."""

    name: str
    """``responses`` or ``steps``."""
    request_type: type
    unit: str
    """What a progress bar counts (``responses``, ``solutions``)."""
    key: Callable[[RewardModel, Any], str]
    lengths: Callable[[RewardModel, Sequence[Any]], list[int]]
    shareable: Callable[[RewardModel, Sequence[Any]], list[int] | None]
    """Each request's prompt prefix that a batch may run once (None: nothing is shared)."""
    score: Callable[[RewardModel, Sequence[Any]], np.ndarray]
    """The model's checked values of a batch, as one flat array (module docstring)."""
    unflatten: Callable[[Sequence[Any], np.ndarray], list[np.ndarray]]
    fits: Callable[[Any, np.ndarray], bool]
    """Whether a cached value has the request's shape (one that has not is damage: scored again)."""
    to_json: Callable[[Any], dict[str, Any]]
    from_json: Callable[[dict[str, Any]], Any]


# --- responses ---------------------------------------------------------------------------------

def _response_key(model: RewardModel, r: ScoreRequest) -> str:
    return r.key(model.uses_utility)


def _response_shareable(model: RewardModel, batch: Sequence[ScoreRequest]) -> list[int] | None:
    return model.prefix_lengths(batch) if isinstance(model, TokenizedModel) else None


def checked_rewards(batch: Sequence[ScoreRequest], out: Any) -> np.ndarray:
    """One finite float (or one fixed-length vector) per request, or a ModelError that names the
    offending request: a value that is not a number (a string or a bool is refused even where
    numpy would convert it), the wrong count, or NaN/infinity."""
    if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
        raise ModelError(f"returned {type(out).__name__}, not a list of floats, for a batch of "
                         f"{len(batch)} responses starting at group {batch[0].group_id!r}, response "
                         f"{batch[0].index}")
    if not isinstance(out, np.ndarray):
        out = list(out)
        for request, value in zip(batch, out):
            if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
                raise ModelError(f"returned rewards that are not numbers: {type(value).__name__} "
                                 f"{str(value)[:60]!r} for group {request.group_id!r}, response {request.index}; "
                                 f"return one float per (prompt, response) pair")
    try:
        values = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"returned rewards that are not numbers: {str(out)[:200]}") from None
    if values.ndim == 0 or values.shape[0] != len(batch) or values.ndim > 2:
        raise ModelError(f"returned {values.shape[0] if values.ndim else 'a scalar'} rewards for a "
                         f"batch of {len(batch)} responses (group {batch[0].group_id!r}, response {batch[0].index} "
                         f"to group {batch[-1].group_id!r}, response {batch[-1].index}); return one reward per "
                         f"(prompt, response) pair, in order")
    bad = np.flatnonzero(~np.isfinite(values.reshape(len(batch), -1)).all(axis=1))
    if bad.size:
        request = batch[int(bad[0])]
        raise ModelError(f"returned a non-finite reward ({values[bad[0]]}) for group "
                         f"{request.group_id!r}, response {request.index}")
    return values


def _score_responses(model: RewardModel, batch: Sequence[ScoreRequest]) -> np.ndarray:
    return checked_rewards(batch, model.score(batch))


def _response_rows(batch: Sequence[ScoreRequest], values: np.ndarray) -> list[np.ndarray]:
    values = np.asarray(values, dtype=np.float64)
    return list(values.reshape(len(batch), -1) if values.ndim > 1 else values)


def _response_to_json(r: ScoreRequest) -> dict[str, Any]:
    return {"prompt": prompt_to_json(r.prompt, sources=True), "response": r.response, "group_id": r.group_id,
            "index": r.index,
            "utility": r.utility, "context": list(r.context), "subset": r.subset}


def _response_from_json(d: dict[str, Any]) -> ScoreRequest:
    return ScoreRequest(prompt_from_json(d["prompt"]), d["response"], d["group_id"], int(d["index"]), d["utility"],
                        tuple(d.get("context", ())), d.get("subset"))


RESPONSES = RequestKind(
    name="responses", request_type=ScoreRequest, unit="responses", key=_response_key,
    lengths=lambda model, batch: model.lengths(batch), shareable=_response_shareable, score=_score_responses,
    unflatten=_response_rows, fits=lambda r, v: True, to_json=_response_to_json, from_json=_response_from_json)


# --- steps -------------------------------------------------------------------------------------

def _step_model(model: RewardModel) -> StepScoringModel:
    if not isinstance(model, StepScoringModel):  # plan_run refuses it first; a direct caller gets this
        raise TypeError(f"{type(model).__name__} does not score steps (not a StepScoringModel)")
    return model


def _score_steps(model: RewardModel, batch: Sequence[StepRequest]) -> np.ndarray:
    prm = _step_model(model)
    checked = checked_step_scores(batch, prm.score_steps(batch), prm.step_scale, prm.step_abstains)
    return np.concatenate(checked) if checked else np.zeros(0)


def _step_rows(batch: Sequence[StepRequest], values: np.ndarray) -> list[np.ndarray]:
    values = np.asarray(values, dtype=np.float64)
    bounds = np.cumsum([0] + [len(r.steps) for r in batch])
    if values.shape != (bounds[-1],):
        raise ValueError(f"{values.size} step scores for {bounds[-1]} steps")
    return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _step_to_json(r: StepRequest) -> dict[str, Any]:
    return {"problem": r.problem, "steps": list(r.steps), "group_id": r.group_id}


def _step_from_json(d: dict[str, Any]) -> StepRequest:
    return StepRequest(d["problem"], tuple(d["steps"]), d.get("group_id", ""))


STEPS = RequestKind(
    name="steps", request_type=StepRequest, unit="solutions", key=lambda model, r: r.key(),
    lengths=lambda model, batch: _step_model(model).step_lengths(batch), shareable=lambda model, batch: None,
    score=_score_steps, unflatten=_step_rows, fits=lambda r, v: np.shape(v) == (len(r.steps),),
    to_json=_step_to_json, from_json=_step_from_json)

KINDS = (RESPONSES, STEPS)


def kind_of(request: Request) -> RequestKind:
    """The kind of ``request``, by its type."""
    for kind in KINDS:
        if isinstance(request, kind.request_type):
            return kind
    raise TypeError(f"the scoring engine scores {' and '.join(k.request_type.__name__ for k in KINDS)}, "
                    f"not {type(request).__name__}")


def request_to_json(r: Request) -> dict[str, Any]:
    """A request as JSON, tagged with its kind (for a backend that ships batches)."""
    kind = kind_of(r)
    return {"kind": kind.name, **kind.to_json(r)}


def request_from_json(d: dict[str, Any]) -> Request:
    """The request of :func:`request_to_json` (an untagged one is a response, as older versions wrote)."""
    kind = next((k for k in KINDS if k.name == d.get("kind", RESPONSES.name)), None)
    if kind is None:
        raise ValueError(f"unknown request kind {d.get('kind')!r}")
    return kind.from_json(d)


def where(r: Request) -> str:
    """Where ``r`` is, for an error: ``group 'g1', response 2`` or ``solution 's7'``."""
    if isinstance(r, StepRequest):
        return f"solution {r.group_id!r}" if r.group_id else "a solution"
    return f"group {r.group_id!r}, response {r.index}"


def what(batch: Sequence[Request]) -> str:
    """``3 responses`` or ``1 solution``: what a batch holds, for an error."""
    unit = kind_of(batch[0]).unit if batch else "responses"
    return f"{len(batch)} {unit if len(batch) != 1 else unit[:-1]}"
