"""The thin bases of the transformers and vLLM adapters.

:class:`HFTokenizedModel`: a model read through a Hugging Face tokenizer (``implicit``,
``seqcls``, ``linear``, ``generative``, the vLLM adapters): its source, dtype, truncation,
token lengths and identity, all known before any weights load.

:class:`HFRewardModel`: adds transformers weights, loaded on first use (a re-run whose scores
are all cached never loads them), and the three steps that :meth:`~HFRewardModel.score` and
:meth:`~HFRewardModel.sample` combine: ``_encode`` (texts -> :class:`Encoding`), ``_hidden``
(backbone -> final hidden states) and ``_head`` (hidden states -> one value per request).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from importlib import metadata
from typing import Any, ClassVar

import numpy as np

from rmbench.core.choices import PADDING_SIDES, PaddingSide, choice
from rmbench.errors import ConfigError
from rmbench.models.base import RewardModel, Runtime, ScoreRequest, StochasticModel, TokenizedModel, Truncation
from rmbench.models.hf.dropout import mc_dropout
from rmbench.models.hf.encoding import Encoding
from rmbench.models.hf.front import TokenizerFront
from rmbench.models.hf.identity import weights_identity
from rmbench.models.hf.loading import check_local_source, cpu_has_bf16, resolve_device, resolve_dtype, resolve_source
from rmbench.models.hf.rendering import check_template
from rmbench.models.hf.vision import VisionFront, has_image_processor
from rmbench.models.prefix import forward_takes, shared_prefix_hidden

LOCATION_ARGS = ("model", "revision", "max_length")
"""Constructor arguments an identity replaces: where the weights are (by their content) and the
max length (by the effective truncation)."""


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


class HFTokenizedModel(RewardModel, TokenizedModel):
    """A model read through a Hugging Face tokenizer; see the module docstring."""

    target_arg: ClassVar[str] = "model"
    truncation: Truncation  # set in __init__ (TokenizedModel reads it)

    @property
    def shares_prefix(self) -> bool:
        """True for causal adapters whose head reads only from the token before the response on:
        rows of one prompt then share the prompt's KV cache (:mod:`rmbench.models.prefix`).
        Subclasses override it with a property or a plain class attribute."""
        return False

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None, padding_side: PaddingSide = "right") -> None:
        check_template(template)
        padding_side = choice(padding_side, PADDING_SIDES, "padding_side")
        self.runtime = runtime or Runtime()
        self.model_name = model
        self.dtype = resolve_dtype(self.runtime.dtype, self.runtime.device)
        self.source = resolve_source(model, revision, self.dtype)
        check_local_source(model, self.source, self.runtime)
        self.truncation = Truncation(max_length).over(truncation)
        self.front = TokenizerFront(model, self.source, self.runtime, template, system_prompt, self.truncation,
                                    padding_side)
        self._weights_id: str | None = None

    @property
    def tokenizer(self):
        return self.front.tokenizer

    @property
    def formatter(self):
        return self.front.formatter

    @property
    def max_length(self) -> int | None:
        return self.truncation.max_length

    def _texts(self, batch: Sequence[ScoreRequest]) -> list[str]:
        """The texts the model reads (default: each rendered (prompt, response))."""
        return self.front.full_texts(batch)

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        if self.shares_prefix:
            return [self.front.measure(r)[0] for r in batch]
        return self.front.text_lengths(self._texts(batch))

    def prefix_lengths(self, batch: Sequence[ScoreRequest]) -> list[int] | None:
        return [self.front.measure(r)[1] for r in batch] if self.shares_prefix else None

    def loaded_config(self):
        """The model's config (its weights' ``config.json``)."""
        from rmbench.models.hf.loading import load_config

        return load_config(self.model_name, self.source, self.runtime)

    def context_limit(self) -> int | None:
        """``max_position_embeddings`` or the like from the model's config, if it has one."""
        config = self.loaded_config().get_text_config()  # a VLM's language model's
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = getattr(config, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    # --- identity, from files and arguments only ------------------------------------------------
    def weights_id(self) -> str:
        if self._weights_id is None:
            self._weights_id = weights_identity(self.source)
        return self._weights_id

    def identity(self) -> dict[str, Any]:
        base = super().identity()
        args = {k: v for k, v in base["args"].items() if k not in LOCATION_ARGS}
        truncation: dict[str, Any] = {"max_length": self.truncation.max_length}
        if self.truncation.max_length is not None:
            truncation["side"] = self.truncation.side
        return {"kind": base["kind"], "args": args, "weights": self.weights_id(), "dtype": self.dtype,
                "truncation": truncation}

    def describe(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "weights": self.weights_id(), "torch": _version("torch"),
                "transformers": _version("transformers"), "cpu_bf16": cpu_has_bf16(),
                "template": self.front.template, "max_length": self.truncation.max_length,
                "truncation": self.truncation.side}


class HFWeights(HFTokenizedModel):
    """Transformers weights loaded on first use (:meth:`_load_weights`), on the run's device:
    what every transformers adapter holds (:class:`HFRewardModel`, the ``prm:`` adapter)."""

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None, padding_side: PaddingSide = "right") -> None:
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            raise ConfigError("the transformers adapters need torch: pip install torch")
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation, padding_side)
        self._model: Any = None
        self._device: str | None = None

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = resolve_device(self.runtime.device)
        return self._device

    @property
    def model(self):
        """The transformers model, loaded on first use."""
        if self._model is None:
            self._model = self._load_weights()
        return self._model

    @property
    def weights_loaded(self) -> bool:
        return self._model is not None

    def loaded_config(self):
        return self.model.config if self._model is not None else super().loaded_config()

    def describe(self) -> dict[str, Any]:
        """The base's description and the device: the one the weights run on, or where no batch
        needed them (every score cached), the one asked for (so a warm re-run of a command
        describes itself as the cold run did when the device was named)."""
        return {**super().describe(), "device": self._device or self.runtime.device}

    def ran_with(self) -> dict[str, Any]:
        """How the weights ran in this process, once loaded: the attention implementation
        transformers chose (SDPA where the architecture has it) and the GPU's name."""
        if self._model is None:
            return {}
        out = {"device": self.device, "attention": getattr(self._model.config, "_attn_implementation", None)}
        if self.device.startswith("cuda"):
            import torch

            out["gpu"] = torch.cuda.get_device_name(torch.device(self.device))
        return out

    @abstractmethod
    def _load_weights(self):
        """Load the transformers model (in ``self.dtype`` on ``self.device``, evaluation mode)."""


class HFRewardModel(HFWeights, StochasticModel):
    """Transformers weights behind :class:`HFTokenizedModel`; see the module docstring.

    A checkpoint that ships an image processor reads images (:attr:`vision`, the
    :class:`~rmbench.models.hf.vision.VisionFront` its ``_encode`` then uses): the same head and
    hidden steps, the processor's pixel inputs passed to the backbone, no prompt KV sharing and no
    truncation (:mod:`rmbench.models.hf.vision`). Its identity is the text one: the processor's
    files are in the weights' fingerprint (a local folder's hash, a hub id's commit)."""

    _vision: VisionFront | None = None
    _vision_checked = False  # looked for in the checkpoint's files

    @property
    def vision(self) -> VisionFront | None:
        """The image input path when the checkpoint ships an image processor, else None; looked
        for in its files on first use (a hub id's in the hub cache, or fetched)."""
        if not self._vision_checked:
            if has_image_processor(self.source):
                self.check_image_settings()
                self._vision = VisionFront(self.model_name, self.source, self.runtime, self.front.system_prompt,
                                           self.truncation)
            self._vision_checked = True
        return self._vision

    def check_image_settings(self) -> None:
        """Refuse, in one line, settings a model that reads images cannot honour."""
        if self.front.template == "plain" or self.front.padding_side != "right":
            raise ConfigError(f"model {self.model_name!r} reads images, which its processor's chat template places "
                              f"and its tokenizer pads on the right: template {self.front.template!r} and "
                              f"padding_side {self.front.padding_side!r} do not apply (give template auto or chat, "
                              f"padding_side right)")

    @property
    def reads_images(self) -> bool:  # type: ignore[override]  # a class attribute on text-only models
        return self.vision is not None

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        if self.vision is not None:
            return self.vision.lengths(batch, self._encode)
        return super().lengths(batch)

    def prefix_lengths(self, batch: Sequence[ScoreRequest]) -> list[int] | None:
        return None if self.vision is not None else super().prefix_lengths(batch)

    # --- subclasses implement (and HFWeights._load_weights) ------------------------------------
    @property
    @abstractmethod
    def backbone(self):
        """The module whose last hidden states the head reads."""

    @abstractmethod
    def _encode(self, batch: Sequence[ScoreRequest]) -> Encoding: ...

    @abstractmethod
    def _head(self, enc: Encoding, hidden) -> np.ndarray: ...

    def _hidden(self, enc: Encoding):
        return self.backbone_hidden(enc)

    def _finish(self, batch: Sequence[ScoreRequest], enc: Encoding, values: np.ndarray) -> np.ndarray:
        """Last step on the (n,) or (n, T) values; the implicit RM subtracts its reference here."""
        return values

    def head_workspace_bytes(self) -> int:
        """Device memory the head takes per batch whatever the batch's size (the implicit RM's
        chunk of LM-head logits), for the batch limits (:mod:`rmbench.models.batching`)."""
        return 0

    # --- shared -------------------------------------------------------------------------------
    def backbone_hidden(self, enc: Encoding):
        import torch

        if enc.shared is not None and self.shares_prefix and self.prompt_reuse:
            hidden = shared_prefix_hidden(self.backbone, enc.input_ids, enc.attention_mask, enc.shared, self.device)
            if hidden is not None:
                return hidden
        # With images: the pixels in the weights' dtype, and positions from the model's own rule (right
        # padding; Qwen-VL's M-RoPE) rather than ours.
        extra = ({"position_ids": enc.position_ids.to(self.device)} if enc.pixels is None else
                 {k: v.to(self.device, self.model.dtype) if v.is_floating_point() else v.to(self.device)
                  for k, v in enc.pixels.items()})
        with torch.inference_mode():
            out = self.backbone(input_ids=enc.input_ids.to(self.device),
                                attention_mask=enc.attention_mask.to(self.device), **extra,
                                **no_kv_cache(self.backbone))
        return out.last_hidden_state

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        return self.score_encoded(batch, self._encode(batch))

    def score_encoded(self, batch: Sequence[ScoreRequest], enc: Encoding) -> np.ndarray:
        """:meth:`score` on an encoding already made (an implicit RM's reference reuses its
        model's when both tokenise alike)."""
        import torch

        with torch.inference_mode():
            values = self._head(enc, self._hidden(enc))
        return self._finish(batch, enc, values)

    def sample(self, batch: Sequence[ScoreRequest], n_samples: int, p: float, variant: str, seed: int) -> np.ndarray:
        """(n, n_samples) values with dropout at rate p: ``full`` re-runs the backbone with
        dropout inside; ``head`` runs it once and drops out only the final hidden states."""
        import torch
        import torch.nn.functional as F

        if variant not in ("full", "head"):
            raise ConfigError(f"dropout variant must be 'full' or 'head', got {variant!r}")
        enc = self._encode(batch)
        samples = []
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            torch.manual_seed(seed)
            if variant == "head":
                hidden = self._hidden(enc)
                for _ in range(n_samples):
                    samples.append(self._head(enc, F.dropout(hidden, p, training=True)))
            else:
                # The responses of one prompt share its KV cache under dropout too, so a pass draws
                # one dropout mask for the prompt's tokens (common random numbers): each response's
                # samples are distributed as with a mask of its own, at the cost of one pass.
                with mc_dropout(self.backbone, p):
                    for _ in range(n_samples):
                        samples.append(self._head(enc, self._hidden(enc)))
        return self._finish(batch, enc, np.stack(samples, axis=1))


def no_kv_cache(backbone) -> dict[str, Any]:
    """``use_cache=False`` where the backbone's forward takes it: a plain pass keeps no key/value
    cache (a decoder would otherwise hold every layer's keys and values of the whole batch until
    the pass returns, which on a GPU is memory the batch could use)."""
    return {"use_cache": False} if forward_takes(backbone, "use_cache") else {}
