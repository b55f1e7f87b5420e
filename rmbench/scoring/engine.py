"""The scoring engine: the one path by which every model is asked for scores (``model.score`` for
responses, ``model.score_steps`` for a process RM's steps), generic over the request
(:func:`score_requests`; each kind of request says its key, lengths, scoring and result shape in
:mod:`rmbench.scoring.requests`; :func:`score_groups` and :func:`rmbench.scoring.steps.score_steps`
are its two adapters).

1. Flatten the responses of all groups into requests (or take a task's solutions, for steps) and
   keep one per distinct input (prompt, response; problem, steps): a response that several
   groups, tasks or shifts share is scored once.
2. Plan batches: sort by the model's token lengths, longest first, and fill each batch up to
   a budget of padded tokens (count x longest), so batches of short texts are wide and batches
   of long ones narrow; a batch also ends where lengths fall below 90% of its longest, which
   bounds padding waste. Adapters that reuse a prompt's KV cache (``prefix_lengths``: causal
   models) get batches that keep a prompt's responses together instead, so its tokens run once
   per batch, not once per response (:func:`plan_shared_batches`). The plan depends only on the
   inputs, so a resumed run re-forms exactly the batches an uninterrupted run would have, and
   returns identical scores.
3. Take every score the cache holds (a cached score is never computed again nor replaced: the
   first write wins, so an earlier command re-run returns its earlier rewards bit for bit), and
   hand the rest of each planned batch to a backend
   (:mod:`rmbench.scoring.backends`: this process, Ray or accelerate), which scores and checks them
   (one finite number per request, or an error naming the request; a batch that runs out of
   memory again in halves, :mod:`rmbench.scoring.memory`; under ``--score-timeout`` each batch
   within a deadline, :mod:`rmbench.scoring.timeout`), and write each batch to the cache in one
   transaction. A batch runs whole unless the cache holds some of it: a run resumed after a crash
   re-forms the uninterrupted run's batches and gets its scores; a run that extends another's
   (``--limit 80`` after ``--limit 40``) runs some batches without their cached members, and
   those scores can differ from one clean run's by the dtype's rounding where the kernels
   depend on the batch's shape (measured: docs/fault_model.md).
4. Hand the raw outputs of whole groups to ``model.postprocess`` (MC-dropout clustering needs
   all responses of a prompt at once) and check the rewards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from rmbench.core.types import ComparisonGroup
from rmbench.errors import ModelError
from rmbench.models.base import GroupContextModel, RewardModel, Runtime, ScoreRequest, use_prompt_reuse
from rmbench.models.batching import BatchLimits, batch_limits
from rmbench.results.storage.engine_stats import EngineStats
from rmbench.scoring.backends import LocalBackend
from rmbench.scoring.cache import ScoreCache
from rmbench.scoring.engines import Backend
from rmbench.scoring.requests import RESPONSES, Request, kind_of

Progress = Callable[[int], None]
"""Called with the number of distinct responses just scored (or found in the cache)."""


def requests_for(groups: Sequence[ComparisonGroup], with_context: bool = False,
                 with_subset: bool = False) -> list[ScoreRequest]:
    """One request per response, in group order; ``with_context``: each carries the other
    responses of its group (for a :class:`~rmbench.models.base.GroupContextModel`);
    ``with_subset``: its group's subset (for a model that ``reads_subset``)."""
    return [ScoreRequest(prompt=g.prompt, response=resp, group_id=g.id, index=i, utility=u,
                         context=tuple(r for j, r in enumerate(g.responses) if j != i) if with_context else (),
                         subset=g.subset if with_subset else None)
            for g in groups for i, (resp, u) in enumerate(zip(g.responses, g.utilities))]


def model_requests(model: RewardModel, groups: Sequence[ComparisonGroup]) -> list[ScoreRequest]:
    """The requests ``model`` scores for ``groups`` (with group context and subset where it
    declares it reads them)."""
    return requests_for(groups, with_context=isinstance(model, GroupContextModel), with_subset=model.reads_subset)


def plan_batches(lengths: Sequence[int], token_budget: int, max_batch: int, spread: float = 0.1) -> list[list[int]]:
    """Indices sorted longest first, cut into batches whose padded size (n x longest) fits the
    budget and whose shortest text is at least (1 - spread) x the longest, so padding wastes at
    most ``spread`` of a batch; a text longer than the budget gets a batch of its own."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = lengths[current[0]] if current else lengths[i]  # the first (longest) sets the width
        if current and ((len(current) + 1) * width > token_budget or len(current) >= max_batch
                        or lengths[i] < (1.0 - spread) * width):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def batch_cost(lengths: Sequence[int], prefix: Sequence[int], keys: Sequence, idx: Sequence[int]) -> tuple[int, int]:
    """(tokens a batch runs without padding, tokens it runs padded) when the rows of one key
    share their first ``prefix`` tokens: each unit's prefix once, padded to the longest prefix,
    then every row's rest, padded to the longest rest (see rmbench.models.prefix)."""
    units: dict = {}
    for i in idx:
        units.setdefault(keys[i], prefix[i])
    rest = [lengths[i] - prefix[i] for i in idx]
    work = sum(units.values()) + sum(rest)
    if len(units) == len(idx):  # nothing shared: one plain pass
        return sum(lengths[i] for i in idx), len(idx) * max(lengths[i] for i in idx)
    return work, len(units) * max(units.values()) + len(idx) * max(rest)


def _padding(lengths, prefix, keys, idx) -> int:
    work, padded = batch_cost(lengths, prefix, keys, idx)
    return padded - work


def _split_prompt(members: list[int], lengths: Sequence[int], prefix: Sequence[int], token_budget: int,
                  max_batch: int) -> list[list[int]]:
    """Cut one prompt's responses (sorted longest rest first) into contiguous pieces that
    minimise the tokens run: each piece runs the prompt once (q) and its rows padded to its
    longest rest, so the cost of a piece is q + rows x rest[first]. Exact dynamic programming
    over the cut points (O(n^2); n is the number of responses to one prompt)."""
    n = len(members)
    rest = [lengths[i] - prefix[i] for i in members]
    q = prefix[members[0]]
    best = [0.0] + [float("inf")] * n  # best[k]: cost of the first k members
    cut = [0] * (n + 1)
    for k in range(1, n + 1):
        for start in range(k - 1, -1, -1):
            rows = k - start
            if rows > max_batch or (rows > 1 and rows * lengths[members[start]] > token_budget):
                break
            cost = best[start] + q + rows * rest[start]
            if cost < best[k]:
                best[k], cut[k] = cost, start
    pieces, k = [], n
    while k > 0:
        pieces.append(members[cut[k]:k])
        k = cut[k]
    return pieces[::-1]


def plan_shared_batches(lengths: Sequence[int], prefix: Sequence[int], keys: Sequence, token_budget: int,
                        max_batch: int, spread: float = 0.1) -> list[list[int]]:
    """Batches that keep the responses of one prompt (same key) together, so their prompt runs
    once per batch. Each prompt's responses, longest rest first, are cut into the pieces that run
    the fewest tokens (padding against re-running the prompt: :func:`_split_prompt`); pieces,
    widest rest first, are packed into batches while the padded size (rows x longest text) fits
    the budget and the padding a piece adds stays within ``spread`` of the piece's own work."""
    by_key: dict = {}
    for i in sorted(range(len(lengths)), key=lambda i: (-(lengths[i] - prefix[i]), i)):
        by_key.setdefault(keys[i], []).append(i)
    pieces: list[list[int]] = []
    for members in by_key.values():
        pieces += _split_prompt(members, lengths, prefix, token_budget, max_batch)
    pieces.sort(key=lambda p: (-(lengths[p[0]] - prefix[p[0]]), -prefix[p[0]], p[0]))  # widest rest first
    batches: list[list[int]] = []
    current: list[int] = []
    for piece in pieces:
        if current:
            merged = current + piece
            added = _padding(lengths, prefix, keys, merged) - _padding(lengths, prefix, keys, current) \
                - _padding(lengths, prefix, keys, piece)
            if (len(merged) * max(lengths[i] for i in merged) > token_budget or len(merged) > max_batch
                    or added > spread * batch_cost(lengths, prefix, keys, piece)[0]):
                batches.append(current)
                current = []
        current = current + piece
    if current:
        batches.append(current)
    return batches


PLAIN_SPREADS = (0.1, 0.2, 0.3, 0.5)
SHARED_SPREADS = (0.1, 0.5, 1.0)


class Plan(NamedTuple):
    """The batches of one scoring call, each request's shared prefix (all 0 when no prompt's
    responses are kept together) and the plan's name."""

    batches: list[list[int]]
    prefix: list[int]
    name: str

    @property
    def reuse(self) -> bool:
        """Whether the model reuses prompts' KV caches in these batches."""
        return any(self.prefix)


def plan_for(lengths: Sequence[int], shareable: Sequence[int] | None, prompts: Sequence, limits: BatchLimits) -> Plan:
    """The plan of one scoring call.

    Where a batch costs only its padded tokens (a CPU: ``limits.batch_overhead`` 0), the plan
    of the module docstring: prompt KV reuse (:func:`plan_shared_batches`) where the model
    shares prompts, else length-sorted batches (:func:`plan_batches`), each with at most 10%
    padding. Where a forward pass has a fixed cost (a GPU), fewer and wider batches can beat
    less padding, and keeping a prompt's responses together can cost more batches than its KV
    cache saves (short prompts): the engine then takes the cheapest of length-sorted plans with
    10-50% padding and reuse plans with 10-100%, by padded tokens + overhead x forward passes
    (two per batch that reuses prompts: the prompts' pass, then the responses'). The choice
    depends only on the inputs and the limits, so a resumed run plans the same batches."""
    budget, rows, overhead = limits.token_budget, limits.max_batch, limits.batch_overhead
    none = [0] * len(lengths)
    if not overhead:
        if shareable is None:
            return Plan(plan_batches(lengths, budget, rows), none, "length-sorted, padding <= 10%")
        return Plan(plan_shared_batches(lengths, shareable, prompts, budget, rows), list(shareable),
                    "prompt KV reuse, padding <= 10%")
    candidates = [Plan(plan_batches(lengths, budget, rows, spread), none, f"length-sorted, padding <= {spread:.0%}")
                  for spread in PLAIN_SPREADS]
    if shareable is not None:
        candidates += [Plan(plan_shared_batches(lengths, shareable, prompts, budget, rows, spread), list(shareable),
                            f"prompt KV reuse, padding <= {spread:.0%}") for spread in SHARED_SPREADS]

    def cost(plan: Plan) -> int:  # padded tokens + the passes' fixed cost
        padded = sum(batch_cost(lengths, plan.prefix, prompts, b)[1] for b in plan.batches)
        return padded + (2 if plan.reuse else 1) * overhead * len(plan.batches)

    best = min(candidates, key=cost)  # the first of equal costs: deterministic
    return best._replace(name=f"{best.name} (cheapest at {overhead} tokens per forward pass)")


def score_requests(model: RewardModel, requests: Sequence[Request], runtime: Runtime | None = None,
                   progress: Progress | None = None, cache: ScoreCache | None = None,
                   backend: Backend | None = None, factory: Callable[[], RewardModel] | None = None,
                   name: str | None = None) -> tuple[list[np.ndarray], EngineStats]:
    """One value per request, in order, and what it cost: steps 1-3 of the module docstring,
    for any kind of request (:mod:`rmbench.scoring.requests`: responses or a solution's steps;
    all of ``requests`` of one kind).

    ``backend`` (:mod:`rmbench.scoring.backends`; default local) runs the batches that the cache does
    not hold; ``factory`` rebuilds ``model`` in a worker process (the Ray backend needs it);
    ``name``: the model's display name in errors. A model whose values are all cached is never
    asked for anything, so its weights (and tokenizer) never load."""
    t0 = time.perf_counter()
    runtime = runtime or Runtime()
    name = name or model.kind_name()
    kind = kind_of(requests[0]) if requests else RESPONSES
    keys = [kind.key(model, r) for r in requests]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    distinct_keys = list(first)
    distinct = [requests[first[k]] for k in distinct_keys]

    stored = cache.get_many(distinct_keys) if cache is not None else {}
    known = {k: v for k, v in stored.items() if kind.fits(requests[first[k]], v)}  # another shape: damage, rescored
    backend = backend or LocalBackend()
    # what a plan that reuses prompts groups by: a response's prompt; a solution shares nothing
    prompts = [r.prompt if isinstance(r, ScoreRequest) else k for r, k in zip(distinct, distinct_keys)]
    limits: BatchLimits | None = None
    plan_name: str | None = None
    if len(known) == len(distinct):  # all cached (a re-run with other --eps): no tokenising, no plan
        lengths = prefix = [0] * len(distinct)
        plan = [list(range(len(distinct)))] if distinct else []
    else:
        limits = backend.agree(batch_limits(model, runtime, scores_here=backend.scores_here))
        shareable = kind.shareable(model, distinct)
        lengths = kind.lengths(model, distinct)
        chosen = plan_for(lengths, shareable, prompts, limits)
        plan, prefix, plan_name = chosen
        use_prompt_reuse(model, chosen.reuse)
    results: dict[str, np.ndarray] = {}
    cached = computed = batches = real = work = padded = 0
    todo = []
    for idx in plan:  # a cached value is the value: only the batch's other requests run
        hits = [i for i in idx if distinct_keys[i] in known]
        results.update((distinct_keys[i], known[distinct_keys[i]]) for i in hits)
        cached += len(hits)
        if hits and progress is not None:
            progress(len(hits))
        if len(hits) < len(idx):
            todo.append([i for i in idx if distinct_keys[i] not in known])
    for j, out in _named(name, backend.run(model, factory, [[distinct[i] for i in idx] for idx in todo])):
        idx = todo[j]
        batch_keys = [distinct_keys[i] for i in idx]
        # checked by the backend (rmbench.scoring.backends.score_batch), as one flat array
        values = kind.unflatten([distinct[i] for i in idx], np.asarray(out, dtype=np.float64))
        results.update(zip(batch_keys, values))
        if cache is not None and backend.is_main:
            results.update(cache.put_many(zip(batch_keys, values)))  # another process's earlier write wins
        computed += len(idx)
        batches += 1
        real += sum(lengths[i] for i in idx)
        batch_work, batch_padded = batch_cost(lengths, prefix, prompts, idx)
        work += batch_work
        padded += batch_padded
        if progress is not None:
            progress(len(idx))

    if progress is not None and len(requests) > len(distinct):
        progress(len(requests) - len(distinct))  # the duplicates: done with their first copy
    stats = EngineStats(len(requests), len(distinct), cached, computed, batches, real, work, padded,
                        time.perf_counter() - t0, backend.memory.splits,
                        **(limits.to_json() if limits is not None else {}),
                        plan=plan_name)
    return [results[k] for k in keys], stats


def score_groups(model: RewardModel, groups: Sequence[ComparisonGroup], runtime: Runtime | None = None,
                 progress: Progress | None = None, cache: ScoreCache | None = None,
                 backend: Backend | None = None,
                 factory: Callable[[], RewardModel] | None = None, name: str | None = None
                 ) -> tuple[np.ndarray, EngineStats]:
    """One reward per response of ``groups``, flattened in group order, and what it cost: the
    responses' requests through :func:`score_requests` (arguments as there), then step 4 of the
    module docstring. A model whose scores are all cached is never asked for anything but
    :meth:`~rmbench.models.base.RewardModel.postprocess`."""
    name = name or model.kind_name()
    try:
        model.check_images(groups)
        model.check_groups(groups)  # before any progress: nothing says "done" of groups it cannot score
    except ValueError as exc:
        raise ModelError(f"model {name!r}: {exc}") from None
    requests = model_requests(model, groups)
    values, stats = score_requests(model, requests, runtime, progress, cache, backend, factory, name)
    raw = np.stack([np.atleast_1d(v) for v in values]) if values else np.zeros((0, 1))
    if raw.shape[1] == 1:
        raw = raw[:, 0]
    try:
        rewards = np.asarray(model.postprocess(groups, raw), dtype=np.float64)
    except ValueError as exc:
        raise ModelError(f"model {name!r}: {exc}") from None
    finite = np.isfinite(rewards) | (np.isnan(rewards) if model.may_abstain else False)  # NaN: "no reward"
    if rewards.shape != (len(requests),) or not finite.all():
        raise ModelError(f"model {name!r} post-processing returned {rewards.shape} values, some not finite, "
                         f"for {len(requests)} responses")
    return rewards, stats


def _named(name: str, results):
    """The backend's results, with a model error said to come from model ``name``."""
    try:
        yield from results
    except ModelError as exc:
        raise ModelError(f"model {name!r} {exc}") from exc.__cause__
