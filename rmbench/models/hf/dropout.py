"""MC dropout at inference: dropout forced on inside a backbone, restored on exit."""

from __future__ import annotations

import contextlib
from typing import Iterator

from rmbench.errors import ConfigError


@contextlib.contextmanager
def mc_dropout(backbone, p: float) -> Iterator[None]:
    """Dropout at rate ``p`` forced on during inference.

    Decoder LMs (Llama, Gemma, Qwen, Mistral...) have no dropout modules at inference, so it is
    injected on the outputs of every attention block and MLP (modules named ``self_attn`` and
    ``mlp``). Encoders such as BERT carry ``nn.Dropout`` modules: their rate is set to ``p`` and
    they are switched to training mode. Everything is restored on exit.
    """
    import torch
    import torch.nn.functional as F

    handles, restore = [], []
    targets = [m for name, m in backbone.named_modules() if name.rsplit(".", 1)[-1] in ("self_attn", "mlp")]
    if targets:
        def hook(_module, _inputs, output):
            if isinstance(output, tuple):
                return (F.dropout(output[0], p, training=True),) + tuple(output[1:])
            return F.dropout(output, p, training=True)
        handles = [m.register_forward_hook(hook) for m in targets]
    else:
        drops = [m for m in backbone.modules() if isinstance(m, torch.nn.Dropout)]
        if not drops:
            raise ConfigError(f"cannot inject dropout into {type(backbone).__name__}: it has neither self_attn/mlp "
                              f"blocks nor dropout modules; use variant 'head'")
        for m in drops:
            restore.append((m, m.p, m.training))
            m.p = p
            m.train()
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        for m, old_p, was_training in restore:
            m.p = old_p
            m.train(was_training)
