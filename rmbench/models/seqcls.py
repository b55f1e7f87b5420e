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

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest
from rmbench.models.hf import HFRewardModel, load_weights, shareable_prefix


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

    target_arg = "model"

    def _encode(self, batch: Sequence[ScoreRequest]) -> dict[str, Any]:
        if not self.shares_prefix:
            return self.tokenize(self._texts(batch))
        enc, positions = self.encode_responses(batch)
        enc["shared"] = [shareable_prefix(p) for p in positions]
        return enc


class SeqClsRM(_TextRM):
    description = "AutoModelForSequenceClassification with one output: reward = logit at the last real token"

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 padding_side: str = "right", num_labels: int | None = None) -> None:
        from transformers import AutoModelForSequenceClassification

        super().__init__(model, runtime, revision, template, system_prompt, max_length)
        if padding_side not in ("left", "right"):
            raise ConfigError(f"padding_side must be left or right, got {padding_side!r}")
        self.tokenizer.padding_side = padding_side
        # num_labels=1 turns a plain LM checkpoint into a (freshly initialised) one-output head.
        extra = {"num_labels": int(num_labels)} if num_labels is not None else {}
        self.model = load_weights(AutoModelForSequenceClassification, model, self.source, self.runtime, self.dtype,
                                  self.device, **extra)
        if self.model.config.num_labels != 1:
            raise ConfigError(f"model {model!r} has {self.model.config.num_labels} outputs; a reward model has 1")
        self.head = getattr(self.model, "score", None)  # decoder-style heads; encoders use their own forward

    @property
    def backbone(self):
        return self.model.base_model if self.head is not None else self.model

    @property
    def shares_prefix(self) -> bool:  # a decoder read at its last token, right-padded
        return self.head is not None and self.tokenizer.padding_side == "right"

    def _hidden(self, enc):
        if self.head is not None:
            return self.backbone_hidden(enc)
        return enc  # encoder classifiers: the whole forward happens in _head

    def _head(self, enc, hidden) -> np.ndarray:
        if self.head is None:
            out = self.model(input_ids=enc["input_ids"].to(self.device),
                             attention_mask=enc["attention_mask"].to(self.device))
            return out.logits[:, 0].double().cpu().numpy()
        h = pool(hidden, enc["attention_mask"], "last")
        return self.head(h)[:, 0].double().cpu().numpy()

    def sample(self, batch, n_samples, p, variant, seed):
        if self.head is None and variant == "head":
            raise ConfigError("variant 'head' needs a decoder-style reward head; use variant 'full' for encoders")
        return super().sample(batch, n_samples, p, variant, seed)


class LinearHeadRM(_TextRM):
    description = "linear head r = <u, h(x, y)> + b on a backbone's last hidden state (head from a file)"

    def __init__(self, model: str, head: str, pooling: str = "auto", runtime: Runtime | None = None,
                 revision: str | None = None, template: str = "auto", system_prompt: str | None = None,
                 max_length: int | None = None) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

        super().__init__(model, runtime, revision, template, system_prompt, max_length)
        config = AutoConfig.from_pretrained(self.source.location, revision=self.source.revision,
                                            gguf_file=self.source.gguf_file,
                                            trust_remote_code=self.runtime.trust_remote_code)
        is_causal = any(a.endswith("ForCausalLM") for a in (getattr(config, "architectures", None) or []))
        self.is_causal = is_causal
        if is_causal:
            lm = load_weights(AutoModelForCausalLM, model, self.source, self.runtime, self.dtype, self.device)
            self.model = lm.base_model
        else:
            self.model = load_weights(AutoModel, model, self.source, self.runtime, self.dtype, self.device)
        self.pooling = ("last" if is_causal else "mean") if pooling == "auto" else pooling
        pool(torch.zeros(1, 1, 1), torch.ones(1, 1, dtype=torch.long), self.pooling)  # validate the name
        self.head_path = Path(head).expanduser().resolve()
        weight, bias = load_head(self.head_path)
        hidden_size = self.model.config.hidden_size
        if weight.shape[-1] != hidden_size:
            raise ConfigError(f"{self.head_path}: head has {weight.shape[-1]} weights but {model!r} has hidden size "
                              f"{hidden_size}")
        self.weight = weight.reshape(-1).to(self.device, torch.float32)
        self.bias = float(bias)

    @property
    def backbone(self):
        return self.model

    @property
    def shares_prefix(self) -> bool:  # a causal backbone read at its last token
        return self.is_causal and self.pooling == "last"

    def _hidden(self, enc):
        return self.backbone_hidden(enc)

    def _head(self, enc, hidden) -> np.ndarray:
        h = pool(hidden, enc["attention_mask"], self.pooling).float()
        return (h @ self.weight + self.bias).double().cpu().numpy()

    def adapter_config(self) -> dict[str, Any]:
        return {**super().adapter_config(), "pooling": self.pooling,
                "head": file_sha256(self.head_path)}


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


def file_sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
