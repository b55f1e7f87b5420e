"""Explicit reward models (EX-RM): a scalar head on the backbone's hidden states.

``seqcls``: an ``AutoModelForSequenceClassification`` with one output (the usual released RM).
For decoder models the reward is the head applied to the hidden state of the last real token,
found from the attention mask (not from ``pad_token_id``, which misreads a sequence that ends in
EOS when pad == eos) with position ids counted over real tokens, so left and right padding give
the same reward. Encoder classifiers (BERT-like, a ``classifier`` on the pooled output) use
their own forward pass.

``linear``: r = <u, h(x, y)> + b on any backbone's last hidden state, pooled at the last real
token (decoders), the mean of real tokens, or the first token (``cls``); u and b come from a
head file, the form ``rmbench train`` writes: safetensors (or a torch file) with ``weight`` of
shape (H,) or (1, H) and an optional ``bias``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbench.core.choices import PaddingSide
from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest, Truncation
from rmbench.models.hf import Encoding, HFRewardModel, load_weights
from rmbench.models.hf.identity import file_sha256
from rmbench.models.hf.vision import check_sequence_classification

if TYPE_CHECKING:
    import torch

POOLINGS = ("last", "mean", "cls")


def last_token_index(attention_mask):
    """Index of the last real token of each row, for left or right padding."""
    import torch

    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    return (positions * attention_mask).argmax(dim=1)


def pool(hidden, attention_mask, how: str):
    import torch

    mask = attention_mask.to(hidden.device)
    if how == "last":
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last_token_index(mask)]
    if how == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1)
    if how == "cls":
        return hidden[:, 0]
    raise ConfigError(f"pooling must be last, mean or cls, got {how!r}")


class _TextRM(HFRewardModel):
    """Scores the whole rendered (prompt, response) text."""

    def _encode(self, batch: Sequence[ScoreRequest]) -> Encoding:
        if self.vision is not None:
            return self.vision.encode(batch)
        if not self.shares_prefix:
            return self.front.encode(self._texts(batch))
        return self.front.encode_responses(batch, share=True)


class SeqClsRM(_TextRM):
    kind = "seqcls"
    description = "AutoModelForSequenceClassification with one output: reward = logit at the last real token"

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 padding_side: PaddingSide = "right", num_labels: int | None = None,
                 truncation: Truncation | None = None) -> None:
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation, padding_side)
        # num_labels=1 turns a plain LM checkpoint into a (freshly initialised) one-output head.
        self.num_labels = None if num_labels is None else int(num_labels)
        self.head: torch.nn.Module | None = None  # a decoder's score layer, once the weights are loaded

    def _load_weights(self):
        from transformers import AutoModelForSequenceClassification

        extra = {"num_labels": self.num_labels} if self.num_labels is not None else {}
        if self.vision is not None:
            check_sequence_classification(self.model_name, self.loaded_config())
        # An explicit num_labels asks for a fresh head (the docstring above): only then may it be missing.
        model = load_weights(AutoModelForSequenceClassification, self.model_name, self.source, self.runtime,
                             self.dtype, self.device, kind=self.kind, allow_missing=self.num_labels is not None,
                             **extra)
        if model.config.num_labels != 1:
            raise ConfigError(f"model {self.model_name!r} has {model.config.num_labels} outputs; a reward model has 1")
        self.head = getattr(model, "score", None)  # decoder-style heads; encoders use their own forward
        return model

    @property
    def decoder_head(self) -> bool:
        self.model  # noqa: B018 - the head is known once the weights are loaded
        return self.head is not None

    @property
    def backbone(self):
        return self.model.base_model if self.decoder_head else self.model

    @property
    def shares_prefix(self) -> bool:  # a decoder read at its last token, right-padded, reading text
        return self.front.padding_side == "right" and self.decoder_head and self.vision is None

    def _hidden(self, enc: Encoding):
        if self.decoder_head:
            return self.backbone_hidden(enc)
        return enc  # encoder classifiers: the whole forward happens in _head

    def _head(self, enc: Encoding, hidden) -> np.ndarray:
        if not self.decoder_head:
            out = self.model(input_ids=enc.input_ids.to(self.device), attention_mask=enc.attention_mask.to(self.device))
            return out.logits[:, 0].double().cpu().numpy()
        h = pool(hidden, enc.attention_mask, "last")
        assert self.head is not None  # decoder_head
        return self.head(h)[:, 0].double().cpu().numpy()

    def sample(self, batch, n_samples, p, variant, seed):
        if not self.decoder_head and variant == "head":
            raise ConfigError("variant 'head' needs a decoder-style reward head; use variant 'full' for encoders")
        return super().sample(batch, n_samples, p, variant, seed)


class LinearHeadRM(_TextRM):
    kind = "linear"
    description = "linear head r = <u, h(x, y)> + b on a backbone's last hidden state (head from a file)"

    def __init__(self, model: str, head: str, pooling: str = "auto", runtime: Runtime | None = None,
                 revision: str | None = None, template: str = "auto", system_prompt: str | None = None,
                 max_length: int | None = None, truncation: Truncation | None = None) -> None:
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation)
        if pooling not in ("auto",) + POOLINGS:
            raise ConfigError(f"pooling must be auto, last, mean or cls, got {pooling!r}")
        self.pooling_arg = pooling
        self.head_path = Path(head).expanduser().resolve()
        if not self.head_path.is_file():
            raise ConfigError(f"{self.head_path}: no such head file")
        self._causal: bool | None = None

    @property
    def is_causal(self) -> bool:
        if self._causal is None:
            config = self.loaded_config()
            self._causal = self.vision is not None or any(
                a.endswith("ForCausalLM") for a in (getattr(config, "architectures", None) or []))
        return self._causal

    @property
    def pooling(self) -> str:
        return ("last" if self.is_causal else "mean") if self.pooling_arg == "auto" else self.pooling_arg

    def _load_weights(self):
        import torch
        from transformers import AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText

        if self.vision is not None:  # a VLM's language model over its image and text tokens
            model = load_weights(AutoModelForImageTextToText, self.model_name, self.source, self.runtime, self.dtype,
                                 self.device, kind=self.kind, backbone_only=True).base_model
        elif self.is_causal:
            model = load_weights(AutoModelForCausalLM, self.model_name, self.source, self.runtime, self.dtype,
                                 self.device, kind=self.kind, backbone_only=True).base_model
        else:
            model = load_weights(AutoModel, self.model_name, self.source, self.runtime, self.dtype, self.device,
                                 kind=self.kind)
        weight, bias = load_head(self.head_path)
        hidden_size = model.config.get_text_config().hidden_size
        if weight.shape[-1] != hidden_size:
            raise ConfigError(f"{self.head_path}: head has {weight.shape[-1]} weights but {self.model_name!r} has "
                              f"hidden size {hidden_size}")
        self.weight = weight.reshape(-1).to(self.device, torch.float32)
        self.bias = float(bias)
        return model

    @property
    def backbone(self):
        return self.model

    @property
    def shares_prefix(self) -> bool:  # a causal backbone read at its last token, reading text
        return self.is_causal and self.pooling == "last" and self.vision is None

    def _head(self, enc: Encoding, hidden) -> np.ndarray:
        h = pool(hidden, enc.attention_mask, self.pooling).float()
        return (h @ self.weight + self.bias).double().cpu().numpy()

    def identity(self) -> dict[str, Any]:
        out = super().identity()
        return {**out, "args": {**out["args"], "head": file_sha256(self.head_path)}}


def load_head(path: Path):
    """(weight, bias) from a safetensors or torch file with ``weight`` and optional ``bias``."""
    import torch

    if not path.is_file():
        raise ConfigError(f"{path}: no such head file")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            tensors = load_file(str(path))
        else:
            tensors = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"{path}: cannot read the head file: {exc}") from None
    if "weight" not in tensors:
        raise ConfigError(f"{path}: field 'weight': missing (found {sorted(tensors)})")
    weight = tensors["weight"].float()
    if weight.dim() > 2 or (weight.dim() == 2 and weight.shape[0] != 1):
        raise ConfigError(f"{path}: field 'weight': expected shape (H,) or (1, H), got {tuple(weight.shape)}")
    bias = tensors.get("bias", torch.zeros(1)).float().reshape(-1)
    return weight, float(bias[0]) if bias.numel() else 0.0
