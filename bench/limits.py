"""What the hardware allows: a matmul probe and the model's FLOPs, for the scoring benchmark.

The limit for a workload is  tokens / (FLOPs / probe FLOP/s), with
    FLOPs = sum over texts of  2 * P * n  +  2 * L * d * n^2
P = every parameter (the tied embedding counts once, as the LM head), n = the text's tokens,
L layers of width d; the second term is causal attention (QK^T and AV, each n^2/2 * d
multiply-adds per layer). The probe times matmuls of the model's own shapes (a 2048-token
activation against the attention, MLP and LM-head weights) and keeps the best of several runs,
so the limit is what this CPU's matmul kernels sustain, not a datasheet peak.
"""

from __future__ import annotations

import time
from collections.abc import Sequence


def matmul_probe(dtype: str, d: int, ffn: int, vocab: int, tokens: int = 2048, reps: int = 5) -> float:
    """Sustained FLOP/s of ``tokens x d`` activations times the model's weight shapes."""
    import torch

    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, d, generator=g).to(dt)
    h = torch.randn(tokens, ffn, generator=g).to(dt)
    weights = [(x, torch.randn(d, d, generator=g).to(dt)), (x, torch.randn(d, ffn, generator=g).to(dt)),
               (h, torch.randn(ffn, d, generator=g).to(dt)), (x[:256], torch.randn(d, vocab, generator=g).to(dt))]
    flops = sum(2 * a.shape[0] * a.shape[1] * w.shape[1] for a, w in weights)
    best = float("inf")
    with torch.inference_mode():
        for a, w in weights:  # warm-up
            a @ w
        for _ in range(reps):
            t0 = time.perf_counter()
            for a, w in weights:
                a @ w
            best = min(best, time.perf_counter() - t0)
    return flops / best


def model_flops(config, n_params: int, lengths: Sequence[int]) -> float:
    """Forward FLOPs of the texts (module docstring); ``config`` is the transformers config."""
    d, layers = config.hidden_size, config.num_hidden_layers
    return float(sum(2 * n_params * n + 2 * layers * d * n * n for n in lengths))
