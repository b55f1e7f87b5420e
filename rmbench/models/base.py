"""The reward-model interface: every adapter scores whole batches of (prompt, response) requests."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from rmbench import __version__
from rmbench.types import ModelSpec, Prompt, canonical_json, sha256_hex

if TYPE_CHECKING:
    from rmbench.types import ComparisonGroup


@dataclass(frozen=True)
class ScoreRequest:
    """One response to score.

    ``utility`` is the ground truth, present only so that the ``oracle`` baseline can exist;
    real adapters must ignore it (and leave ``uses_utility`` False).
    """

    prompt: Prompt
    response: str
    group_id: str = ""
    index: int = 0
    utility: int | None = None


@dataclass(frozen=True)
class Runtime:
    """How to run models: never part of a task's comparability, recorded in every run.

    ``dtype``: ``auto`` (bf16 where the CPU has bf16 units or on a GPU, fp32 otherwise),
    ``float32``, ``bfloat16`` or ``float16``. ``device``: ``auto``, ``cpu``, ``cuda``, ``mps``.
    ``token_budget``: padded tokens per batch. ``max_batch``: requests per batch at most.
    ``trust_remote_code``: let model repositories run their own Python code (off by default).
    ``allow_pickle``: let weights load from pickle files (``pytorch_model.bin``, ``.pt``), which
    can run code when unpickled; off by default, so only safetensors (and GGUF) weights load.
    """

    dtype: str = "auto"
    device: str = "auto"
    trust_remote_code: bool = False
    allow_pickle: bool = False
    token_budget: int = 8192
    max_batch: int = 64


class RewardModel(ABC):
    """Base class of model adapters.

    Subclasses implement :meth:`score` over a whole batch, so an adapter can pad and vectorise
    as it likes. The engine plans batches (sorted by :meth:`lengths`, under a token budget),
    skips what its cache holds, and finally calls :meth:`postprocess` with whole groups in view.
    """

    spec: ModelSpec
    uses_utility: bool = False
    max_batch: int | None = None  # an adapter's own cap on requests per batch, if any

    @abstractmethod
    def score(self, batch: Sequence[ScoreRequest]) -> Sequence[float] | np.ndarray:
        """One finite value per request, in order: a float, or a fixed-length vector of raw
        outputs that :meth:`postprocess` turns into a reward."""

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        """Cost of each request in tokens, for batching (default: characters / 4)."""
        return [1 + (_text_length(r.prompt) + len(r.response)) // 4 for r in batch]

    def prefix_lengths(self, batch: Sequence[ScoreRequest]) -> list[int] | None:
        """Tokens at the start of each request that other requests with the same prompt can
        reuse (a causal model's prompt KV cache), or None when the adapter does not reuse any.
        The engine then keeps a prompt's requests in one batch."""
        return None

    def postprocess(self, groups: Sequence["ComparisonGroup"], raw: np.ndarray) -> np.ndarray:
        """Raw outputs of all responses (flattened in group order) -> one reward each."""
        if raw.ndim != 1:
            raise ValueError(f"{type(self).__name__} returned vectors but does not post-process them")
        return raw

    def fingerprint(self) -> str:
        """Identity of the scoring function: keys the score cache. Adapters with weights or
        code add their hash; built-ins include rmbench's version so a new release re-scores."""
        spec = getattr(self, "spec", None)  # set by build_model; absent when built directly in code
        described = spec.to_json() if spec is not None else {"class": type(self).__name__}
        return sha256_hex(canonical_json({"spec": described, "rmbench": __version__}))

    def runtime_info(self) -> dict[str, Any]:
        """What the run record should say about how this model ran (dtype, device, versions)."""
        return {}


def _text_length(prompt: Prompt) -> int:
    return len(prompt) if isinstance(prompt, str) else sum(len(m.content) for m in prompt)
