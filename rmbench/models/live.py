"""Reward models around weights in memory: a model that a trainer is updating, scored exactly as
the adapter of its saved checkpoint would score it (the TRL callback,
:mod:`rmbench.integrations.trl`, and ``rmbench train --eval-every``).

Each adapter wraps the live module as it is (no second copy of its weights) with the tokenizer it
was trained with (a copy: an adapter sets its padding and truncation sides, which must not change
the trainer's). Everything else is the file-backed adapter's own code: :class:`LiveSeqClsRM` is
``seqcls``, :class:`LiveLinearRM` is ``linear`` (``rmbench train``'s EX-RM: a backbone and a head
held as tensors), :class:`LiveImplicitRM` is ``implicit`` (a DPO policy and its reference). Their
identity is the file-backed kind's with the weights named by a label (the run and the step)
instead of a hash of files, which a model in memory does not have.

:func:`evaluating` puts the modules in evaluation mode for the scoring and gives each back the
mode it had; the adapters score under ``torch.inference_mode`` (no gradients, nothing kept for
backward).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, Truncation
from rmbench.models.hf import HFRewardModel
from rmbench.models.implicit import ImplicitRM
from rmbench.models.seqcls import LinearHeadRM, SeqClsRM, _TextRM

IN_MEMORY = "(in memory)"
"""The adapters' ``model`` argument: no folder or hub id (their weights are the module given)."""

LIVE_ARGS = frozenset({"module", "tokenizer", "label", "reference", "backbone", "weight", "bias"})
"""Constructor arguments that are objects in memory, left out of an identity (the label stands for them)."""


def live_runtime(module) -> Runtime:
    """The runtime a module runs in as it is: its parameters' dtype and device."""
    param = next(module.parameters())
    dtype = str(param.dtype).removeprefix("torch.")
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ConfigError(f"the model's parameters are {dtype}; rmbench scores float32, bfloat16 or float16 weights")
    return Runtime(dtype=dtype, device=str(param.device))  # type: ignore[arg-type]  # checked just above


@contextlib.contextmanager
def evaluating(*modules) -> Iterator[None]:
    """Evaluation mode (no dropout) for the scoring; each module's own mode back afterwards."""
    modes = [(m, m.training) for m in modules if m is not None]
    for m, _ in modes:
        m.eval()
    try:
        yield
    finally:
        for m, was_training in modes:
            m.train(was_training)


class _Live(HFRewardModel):
    """What the live adapters share: the module, a copy of the tokenizer, the label as weights
    (mixed in before a file-backed adapter class)."""

    def _attach(self, module, tokenizer, label: str) -> None:
        self._model = module
        self._device = str(next(module.parameters()).device)
        self._weights_id = f"live:{label}"
        self.front.adopt(copy.deepcopy(tokenizer))

    def _load_weights(self):
        return self._model  # attached in __init__: nothing to load

    def identity(self) -> dict[str, Any]:
        out = super().identity()
        return {**out, "args": {k: v for k, v in out["args"].items() if k not in LIVE_ARGS}}


class LiveSeqClsRM(_Live, SeqClsRM):
    """``seqcls`` on a sequence-classification module in memory (TRL's ``RewardTrainer``)."""

    def __init__(self, module, tokenizer, label: str, template: str = "auto", system_prompt: str | None = None,
                 max_length: int | None = None, padding_side: str = "right",
                 truncation: Truncation | None = None) -> None:
        super().__init__(IN_MEMORY, live_runtime(module), None, template, system_prompt, max_length,
                         padding_side, None, truncation)  # type: ignore[arg-type]  # checked by the base
        if getattr(module.config, "num_labels", None) != 1:
            raise ConfigError(f"the model has {getattr(module.config, 'num_labels', None)} outputs; a reward model "
                              f"has 1 (num_labels=1)")
        self._attach(module, tokenizer, label)
        self.head = getattr(module, "score", None)


class LiveLinearRM(_Live, LinearHeadRM):
    """``linear`` on a causal LM's backbone in memory and a head given as tensors (``rmbench train``'s EX-RM)."""

    def __init__(self, backbone, weight, bias, tokenizer, label: str, template: str = "auto",
                 max_length: int | None = None, pooling: str = "last", truncation: Truncation | None = None) -> None:
        _TextRM.__init__(self, IN_MEMORY, live_runtime(backbone), None, template, None, max_length, truncation)
        self.pooling_arg, self._causal = pooling, True
        self.weight, self.bias = weight, bias  # read at each score: the head as it is now
        self._attach(backbone, tokenizer, label)

    def identity(self) -> dict[str, Any]:  # LinearHeadRM's would hash a head file, which this has not
        out = _TextRM.identity(self)
        return {**out, "args": {k: v for k, v in out["args"].items() if k not in LIVE_ARGS}}

    def _head(self, enc, hidden):
        import torch

        from rmbench.models.seqcls import pool

        h = pool(hidden, enc.attention_mask, self.pooling).float()
        weight = self.weight.detach().reshape(-1).to(h.device, torch.float32)
        return (h @ weight + float(self.bias.detach().reshape(-1)[0])).double().cpu().numpy()


class LiveImplicitRM(_Live, ImplicitRM):
    """``implicit`` on a causal LM in memory, against a reference LM in memory (TRL's
    ``DPOTrainer``: its policy and ``ref_model``) or reference-free without one."""

    def __init__(self, module, tokenizer, label: str, reference=None, beta: float = 1.0, normalize: str = "sum",
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None) -> None:
        super().__init__(IN_MEMORY, None, beta, normalize, live_runtime(module), None, None, template, system_prompt,
                         max_length, truncation)
        self._attach(module, tokenizer, label)
        if reference is not None:
            self.reference = LiveImplicitRM(reference, tokenizer, f"reference of {label}", None, 1.0, normalize,
                                            template, system_prompt, max_length, truncation)


__all__ = ["IN_MEMORY", "LiveImplicitRM", "LiveLinearRM", "LiveSeqClsRM", "evaluating", "live_runtime"]
