"""``execution.stats`` of a run record: what the scoring engine did, typed, and its JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EngineStats:
    """What the scoring engine did in a run (``execution.stats``): its counts, the batch plan's
    limits, how the model ran (``ran_with``: the GPU, the attention kernels) and what the thread
    policy saw and did (``threads``, the local engine). They say how this run went on this
    machine (a warm cache or a busy machine changes them), so they sit apart from the settings."""

    requests: int = 0
    distinct: int = 0
    cached: int = 0
    computed: int = 0
    batches_computed: int = 0
    real_tokens: int = 0  # tokens of the texts scored
    work_tokens: int = 0  # tokens run through the model: fewer than real_tokens where prompts are shared
    padded_tokens: int = 0  # work_tokens plus padding
    seconds: float = 0.0
    oom_splits: int = 0  # batches scored again in halves after running out of memory (rmbench.scoring.memory)
    token_budget: int | None = None  # the plan's limits (rmbench.models.batching); None: every score was cached
    max_batch: int | None = None
    batch_limits: str | None = None  # how the limits were chosen
    plan: str | None = None  # which plan the engine chose (rmbench.scoring.engine.plan_for)
    ran_with: Mapping[str, Any] | None = None  # None (not written): nothing was scored
    threads: Mapping[str, Any] | None = None  # None (not written): not the local engine
    other: Mapping[str, Any] = field(default_factory=dict)
    """Fields of a results.json that this version does not know, kept as they were read."""

    def plus(self, other: EngineStats) -> EngineStats:
        """The stats of two scoring calls of one run (a run's responses, then its solutions'
        steps): counts, tokens and seconds added; ``oom_splits`` is the backend's running count
        over the run, so the later call's; the limits and plan of the call that planned (both
        plans named where both did)."""
        if other == EngineStats():
            return self
        if self == EngineStats():
            return other
        plans = [p for p in (self.plan, other.plan) if p]
        return EngineStats(
            self.requests + other.requests, self.distinct + other.distinct, self.cached + other.cached,
            self.computed + other.computed, self.batches_computed + other.batches_computed,
            self.real_tokens + other.real_tokens, self.work_tokens + other.work_tokens,
            self.padded_tokens + other.padded_tokens, self.seconds + other.seconds,
            max(self.oom_splits, other.oom_splits),
            self.token_budget if self.token_budget is not None else other.token_budget,
            self.max_batch if self.max_batch is not None else other.max_batch,
            self.batch_limits if self.batch_limits is not None else other.batch_limits,
            "; ".join(dict.fromkeys(plans)) or None, self.ran_with or other.ran_with,
            self.threads if self.threads is not None else other.threads, {**other.other, **self.other})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {f: getattr(self, f) for f in _STATS_FIELDS}
        if self.ran_with:
            out["ran_with"] = dict(self.ran_with)
        if self.threads is not None:
            out["threads"] = dict(self.threads)
        return {**out, **self.other}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EngineStats:
        """The stats of a results.json (fields it lacks, as older versions wrote it, at their
        defaults); a value of the wrong type is a ``ValueError(field, problem)``."""
        values: dict[str, Any] = {}
        for name, kinds in _STATS_FIELDS.items():
            if name in d:
                v = d[name]
                if v is not None and (isinstance(v, bool) or not isinstance(v, kinds)):
                    raise ValueError(name, f"expected {'/'.join(k.__name__ for k in kinds)}, got {v!r}"[:300])
                values[name] = float(d[name]) if name == "seconds" else v
        for name in ("ran_with", "threads"):
            if d.get(name) is not None and not isinstance(d[name], Mapping):
                raise ValueError(name, f"expected an object, got {d[name]!r}"[:300])
        known = set(_STATS_FIELDS) | {"ran_with", "threads"}
        return cls(**values, ran_with=d.get("ran_with"), threads=d.get("threads"),
                   other={k: v for k, v in d.items() if k not in known})


_STATS_FIELDS: dict[str, tuple[type, ...]] = {
    "requests": (int,), "distinct": (int,), "cached": (int,), "computed": (int,), "batches_computed": (int,),
    "real_tokens": (int,), "work_tokens": (int,), "padded_tokens": (int,), "seconds": (int, float),
    "oom_splits": (int,), "token_budget": (int,), "max_batch": (int,), "batch_limits": (str,), "plan": (str,)}
"""The counters of :class:`EngineStats` (written always, in this order) and their JSON types."""
