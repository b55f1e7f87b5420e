"""``discretize``: MC-dropout discretisation of any dropout-capable adapter (arXiv 2606.21795).

1. T stochastic forward passes with dropout at rate p forced on (defaults T = 4, p = 0.02):
   ``variant: full`` injects dropout inside the backbone (attention and MLP outputs) and re-runs
   it T times; ``variant: head`` runs the backbone once and drops out only the final hidden
   states before the head (cheap). Each response gets a mean m and a variance v (ddof = 1).
2. Within each prompt (comparison group), agglomerative clustering: repeatedly merge the two
   clusters whose rewards are most probably within Delta of each other,
   P(|r_a - r_b| <= Delta) with r_a - r_b ~ N(m_a - m_b, v_a + v_b), while that probability
   exceeds p* (a cluster's m and v are the means of its members'). ``delta`` is in units of the
   pair's noise sd sqrt(v_a + v_b) (``delta_unit: noise``, default 1.0) or raw reward units
   (``delta_unit: raw``); p* defaults to 0.5. So by default two responses merge when their means
   differ by less than about one noise sd.
3. Each cluster gets one integer reward, 0 for the lowest cluster mean upwards.

Seeded: the dropout masks of a batch come from ``seed`` and the batch's inputs, so the same seed
gives the same rewards, and a resumed run (which re-forms the same batches) gives the same too.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rmbench.core.types import group_slices
from rmbench.errors import ConfigError
from rmbench.models.base import (
    CompositeModel,
    RewardModel,
    Runtime,
    ScoreRequest,
    StochasticModel,
    TokenizedModel,
    Truncation,
)

SAMPLER = 2
"""How dropout samples are drawn, part of the identity (cached samples of another sampler never
mix in): 2 = zeros drawn as Geometric gaps (rmbench.models.hf.dropout.sparse_dropout), the
prompt's tokens shared by the responses of one prompt in a pass."""


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def prob_within(diff: float, var: float, delta: float) -> float:
    """P(|X| <= delta) for X ~ N(diff, var); a point mass when var = 0."""
    if var <= 0:
        return 1.0 if abs(diff) <= delta else 0.0
    s = math.sqrt(var)
    return _phi((delta - diff) / s) - _phi((-delta - diff) / s)


def cluster_levels(means: np.ndarray, variances: np.ndarray, delta: float = 1.0, p_star: float = 0.5,
                   delta_unit: str = "noise") -> np.ndarray:
    """Integer level of each response of one prompt (0 = lowest cluster mean); see the module doc."""
    clusters = [[i] for i in range(len(means))]

    def stats(c):
        return float(np.mean(means[c])), float(np.mean(variances[c]))

    while len(clusters) > 1:
        best, best_p = None, p_star
        for a in range(len(clusters)):
            ma, va = stats(clusters[a])
            for b in range(a + 1, len(clusters)):
                mb, vb = stats(clusters[b])
                var = va + vb
                d = delta * math.sqrt(var) if delta_unit == "noise" else delta
                p = prob_within(ma - mb, var, d)
                if p > best_p:
                    best, best_p = (a, b), p
        if best is None:
            break
        a, b = best
        clusters[a] = clusters[a] + clusters[b]
        del clusters[b]
    order = sorted(range(len(clusters)), key=lambda c: stats(clusters[c])[0])
    levels = np.empty(len(means), dtype=np.int64)
    for level, c in enumerate(order):
        levels[clusters[c]] = level
    return levels


class DiscretizedRM(RewardModel, CompositeModel, TokenizedModel):
    kind = "discretize"
    description = "MC-dropout discretisation of another adapter: integer reward levels per prompt"
    target_arg = "inner"
    model_refs = ("inner",)

    def __init__(self, inner: str | Mapping[str, Any], T: int = 4, p: float = 0.02, variant: str = "full",
                 delta: float = 1.0, delta_unit: str = "noise", p_star: float = 0.5, seed: int = 0,
                 runtime: Runtime | None = None, truncation: Truncation | None = None) -> None:
        from rmbench.models import build_model
        from rmbench.models.names import resolve_model
        from rmbench.models.presets import presets

        if int(T) < 2:
            raise ConfigError(f"T must be at least 2 (a variance needs two samples), got {T}")
        if not 0 < float(p) < 1:
            raise ConfigError(f"p must be in (0, 1), got {p}")
        if variant not in ("full", "head") or delta_unit not in ("noise", "raw"):
            raise ConfigError("variant must be full or head, delta_unit noise or raw")
        spec = resolve_model(inner, presets())  # a name or a {"name", "kind", "args"} mapping
        self.inner = build_model(spec, runtime, truncation)
        if not isinstance(self.inner, StochasticModel):
            raise ConfigError(f"discretize needs a model that can sample with dropout (implicit, seqcls, linear, "
                              f"generative: a StochasticModel); {spec.name!r} ({spec.kind}) is not one")
        self.T, self.p, self.variant = int(T), float(p), variant
        self.delta, self.delta_unit, self.p_star, self.seed = float(delta), delta_unit, float(p_star), int(seed)
        self.max_batch = self.inner.max_batch

    def _batch_seed(self, batch: Sequence[ScoreRequest]) -> int:
        h = hashlib.sha256(f"{self.seed}|".encode())
        for r in batch:
            h.update(r.key().encode())
        return int.from_bytes(h.digest()[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF

    def children(self) -> list[RewardModel]:
        return [self.inner]

    @property
    def reads_images(self) -> bool:  # type: ignore[override]  # as its inner model (a VLM's MC dropout)
        return self.inner.reads_images

    # Batching follows the inner model: its token lengths, and the prompt prefixes it shares
    # (under dropout too, see HFRewardModel.sample), so the engine plans T passes like one.
    def lengths(self, batch):
        return self.inner.lengths(batch)

    def prefix_lengths(self, batch):
        return self.inner.prefix_lengths(batch) if isinstance(self.inner, TokenizedModel) else None

    def context_limit(self):
        return self.inner.context_limit() if isinstance(self.inner, TokenizedModel) else None

    @property
    def truncation(self) -> Truncation:
        return self.inner.truncation if isinstance(self.inner, TokenizedModel) else Truncation()

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        assert isinstance(self.inner, StochasticModel)  # checked in __init__
        return self.inner.sample(batch, self.T, self.p, self.variant, self._batch_seed(batch))

    def postprocess(self, groups, raw: np.ndarray) -> np.ndarray:
        raw = raw.reshape(len(raw), -1)
        if raw.shape[1] != self.T:
            raise ValueError(f"expected {self.T} dropout samples per response, got {raw.shape[1]}")
        means, variances = raw.mean(axis=1), raw.var(axis=1, ddof=1)
        out = np.empty(len(raw))
        for sl in group_slices(groups):
            out[sl] = cluster_levels(means[sl], variances[sl], self.delta, self.p_star, self.delta_unit)
        return out

    def identity(self) -> dict[str, Any]:
        """The inner model's identity and what shapes the dropout samples (T, p, variant, seed):
        the score cache holds the samples, so the clustering's delta and p* are left out (a run
        with another delta re-clusters cached samples)."""
        return {"kind": self.kind_name(), "args": {"T": self.T, "p": self.p, "variant": self.variant,
                                                   "seed": self.seed}, "sampler": SAMPLER,
                "inner": self.inner.identity()}

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "discretize": {"T": self.T, "p": self.p, "variant": self.variant,
                                                        "delta": self.delta, "delta_unit": self.delta_unit,
                                                        "p_star": self.p_star, "seed": self.seed}}
