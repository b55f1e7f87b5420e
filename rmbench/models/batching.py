"""How big the engine's batches are on the device at hand: padded tokens and rows per batch.

The engine (:mod:`rmbench.scoring.engine`) plans batches under two limits, chosen here once per
scoring call, when something is left to score (:func:`batch_limits`), and recorded in the run's
``execution.stats`` (``token_budget``, ``max_batch``, ``batch_limits``):

* ``--token-budget N`` (:attr:`Runtime.token_budget`) always wins; ``Runtime.max_batch`` likewise.
* **CPU** (and MPS, and every adapter that is not a transformers model in this process): 8,192
  padded tokens and 64 rows per batch, what the CPU benchmarks measured best (bench/RESULTS.md).
* **CUDA** (a transformers adapter whose weights run on a CUDA device in this process): the
  weights of every part (an implicit RM's reference too) are loaded first, then

      token_budget = 0.5 x (free - workspace) / bytes_per_token,   rounded down to 1,024,
                     kept within [8,192, 131,072]
      bytes_per_token = b x (8 d + 4 f + 2 L k [prompt KV reuse only]) + W

  with ``free`` the device's free memory (``torch.cuda.mem_get_info``, plus what torch's
  allocator holds unused), ``b`` the bytes of the dtype, ``d`` the hidden size, ``f`` the MLP
  width, ``L`` layers and ``k`` the key/value width (KV heads x head size), ``W`` the width of
  the boolean attention mask (the context, at most 8,192), and ``workspace`` the LM head's chunk
  of logits (:func:`lm_head_chunk`; the implicit RM's). The terms are the activations that live at
  once inside one layer (residual, norm, q/k/v/o, the MLP's gate, up and product), the prompt
  KV cache copied to every row when a batch shares prompts (:mod:`rmbench.models.prefix`), and
  the mask; the factor 0.5 leaves room for the allocator's fragmentation and what the formula
  leaves out. Rows: 1,024 per batch (short texts need many rows to fill a GPU). A forward pass
  on a GPU also has a fixed cost (:data:`CUDA_BATCH_OVERHEAD`), which the engine's plan weighs
  against padding and prompt KV reuse. The upper
  bound keeps a batch to a few seconds on a large model, so progress, the cache and an
  out-of-memory retry (:mod:`rmbench.scoring.memory`) stay fine-grained.

An adapter's own cap (``RewardModel.max_batch``) applies on every device. The limits never
enter a model's identity: they change which rows share a batch, and so rewards only to float
rounding (see :mod:`rmbench.scoring.memory`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmbench.models.base import RewardModel, Runtime, parts

CPU_TOKEN_BUDGET = 8192
CPU_MAX_BATCH = 64
CUDA_MAX_BATCH = 1024
CUDA_TOKEN_RANGE = (8192, 131072)
CUDA_MEMORY_FRACTION = 0.5
MASK_WIDTH_CAP = 8192
LM_HEAD_CPU_CHUNK = 256
LM_HEAD_LOGITS_BYTES = 512 * 2**20
"""The float32 logits one LM-head chunk may hold on a GPU (the CPU's chunk is 256 positions)."""


CUDA_BATCH_OVERHEAD = 4096
"""The fixed cost of one forward pass on a GPU, in tokens of work: on an H200 a pass of a small
batch took 35-40 ms whatever its size (bench/RESULTS.md, the plain loop's batches of 8 on the
1B-shaped model), the time an 8B-shaped model takes for 2,000-4,000 tokens."""


@dataclass(frozen=True)
class BatchLimits:
    """The engine's limits for one scoring call, and how they were chosen (one line).

    ``batch_overhead``: the fixed cost of a forward pass in tokens of work (0 on a CPU, where
    a batch costs its padded tokens; :data:`CUDA_BATCH_OVERHEAD` on a GPU); the engine then
    weighs fewer, wider batches against padding and prompt KV reuse
    (:func:`rmbench.scoring.engine.plan_for`)."""

    token_budget: int
    max_batch: int
    chosen_by: str
    batch_overhead: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"token_budget": self.token_budget, "max_batch": self.max_batch, "batch_limits": self.chosen_by}


@dataclass(frozen=True)
class Shape:
    """What the memory rule reads from a transformers config."""

    hidden: int
    ffn: int
    layers: int
    kv_width: int
    vocab: int
    context: int | None

    @classmethod
    def of(cls, config) -> Shape:
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        d = int(_first(text, ("hidden_size", "n_embd", "d_model"), 0))
        layers = int(_first(text, ("num_hidden_layers", "n_layer", "num_layers"), 0))
        heads = int(_first(text, ("num_attention_heads", "n_head"), 1)) or 1
        head_dim = int(getattr(text, "head_dim", None) or d // heads)
        kv_heads = int(getattr(text, "num_key_value_heads", None) or heads)
        ffn = int(_first(text, ("intermediate_size", "n_inner", "ffn_dim"), 0) or 4 * d)
        context = _first(text, ("max_position_embeddings", "n_positions"), None)
        return cls(d, ffn, layers, kv_heads * head_dim, int(getattr(text, "vocab_size", 0) or 0),
                   int(context) if context else None)


def _first(config, names, default):
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def bytes_per_token(shape: Shape, dtype_bytes: int, kv_reuse: bool) -> int:
    """Device memory one padded token of a batch takes at the peak of a forward pass (module
    docstring: b x (8 d + 4 f + 2 L k [KV reuse]) + W)."""
    width = min(shape.context or MASK_WIDTH_CAP, MASK_WIDTH_CAP)
    kv = 2 * shape.layers * shape.kv_width if kv_reuse else 0
    return dtype_bytes * (8 * shape.hidden + 4 * shape.ffn + kv) + width


def lm_head_chunk(vocab: int, on_cuda: bool) -> int:
    """Response positions per LM-head call: 256 on a CPU; on a GPU as many as keep the float32
    logits of a chunk near 512 MiB (1,046 at a 128k vocabulary), at least 256."""
    if not on_cuda or vocab <= 0:
        return LM_HEAD_CPU_CHUNK
    return max(LM_HEAD_CPU_CHUNK, LM_HEAD_LOGITS_BYTES // (4 * vocab))


def lm_head_workspace(vocab: int, dtype_bytes: int, on_cuda: bool) -> int:
    """Bytes of one LM-head chunk: its logits in the model's dtype, as float32 and their log-softmax."""
    return lm_head_chunk(vocab, on_cuda) * vocab * (dtype_bytes + 8)


def cuda_token_budget(free_bytes: float, workspace_bytes: float, per_token: float) -> int:
    """The CUDA rule of the module docstring on measured numbers."""
    low, high = CUDA_TOKEN_RANGE
    tokens = int(CUDA_MEMORY_FRACTION * max(free_bytes - workspace_bytes, 0.0) / max(per_token, 1.0))
    return min(max(tokens // 1024 * 1024, low), high)


def batch_limits(model: RewardModel, runtime: Runtime, scores_here: bool = True) -> BatchLimits:
    """The limits for scoring ``model`` under ``runtime`` (module docstring). ``scores_here``:
    the batches run in this process (the local and accelerate engines), so this process's
    device decides; a Ray driver plans for workers it cannot see, with the CPU defaults unless
    the runtime sets them. On CUDA this loads the weights (the engine asks only when a batch is
    left to score)."""
    from rmbench.models.hf.base import HFWeights

    on_cuda = [p for p in parts(model) if scores_here and isinstance(p, HFWeights)
               and p.device.startswith("cuda")] if _torch_loaded() else []
    rows = runtime.max_batch or model.preferred_batch or (CUDA_MAX_BATCH if on_cuda else CPU_MAX_BATCH)
    if model.max_batch:
        rows = min(rows, model.max_batch)
    overhead = CUDA_BATCH_OVERHEAD if on_cuda else 0
    if runtime.token_budget is not None:
        return BatchLimits(runtime.token_budget, rows, "--token-budget", overhead)
    if not on_cuda:
        return BatchLimits(CPU_TOKEN_BUDGET, rows, "the CPU default")
    tokens, why = _cuda_budget(on_cuda)
    return BatchLimits(tokens, rows, why, overhead)


def _torch_loaded() -> bool:
    import sys

    return "torch" in sys.modules  # a transformers adapter has imported it; a python function never needs it


def _cuda_budget(models: list) -> tuple[int, str]:
    import torch

    for m in models:
        m.model  # noqa: B018 - every part's weights take their memory before the free memory is read
    device = torch.device(models[0].device)
    torch.cuda.synchronize(device)
    free, _ = torch.cuda.mem_get_info(device)
    free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)  # torch's unused blocks
    per_token = workspace = 0
    for m in models:
        shape, b = Shape.of(m.loaded_config()), m.model.dtype.itemsize
        per_token = max(per_token, bytes_per_token(shape, b, m.shares_prefix))
        workspace = max(workspace, m.head_workspace_bytes())
    tokens = cuda_token_budget(free, workspace, per_token)
    low, high = CUDA_TOKEN_RANGE
    why = (f"CUDA free memory: {CUDA_MEMORY_FRACTION} x ({free / 2**30:.1f} GiB free - {workspace / 2**30:.2f} GiB "
           f"LM-head workspace) / {per_token / 1024:.0f} KiB per token, within [{low}, {high}]")
    return tokens, why
