"""The input path of the transformers adapters that read images (vision-language models).

A checkpoint reads images when it ships a processor with an image processor
(``processor_config.json`` with an ``image_processor``, or a ``preprocessor_config.json``):
:func:`has_image_processor`, from its files alone. Its adapter then encodes through
:class:`VisionFront` instead of the tokenizer front:

* each message becomes content parts, one ``{"type": "image"}`` per image (in order) and then its
  text, rendered by the processor's chat template (the response as the assistant's turn, as the
  text front renders it; a VLM has no plain rendering);
* the images are opened from :meth:`rmbench.core.images.Image.read_bytes` with PIL (RGB), and the
  processor expands each placeholder into the model's image tokens and makes the pixel inputs;
* a batch is one processor call over its texts and per-row image lists (right-padded; the pixel
  tensors are the processor's own batched form, e.g. Idefics3's padded ``pixel_values`` with
  ``pixel_attention_mask``, Gemma 3's stacked images with ``token_type_ids``), carried in
  :attr:`rmbench.models.hf.encoding.Encoding.pixels` into the backbone's forward pass;
* the response's tokens are those of the rendered text that hold any character of the response
  (:func:`rmbench.models.hf.rendering.response_boundary`, as for text), found in the text before
  the image tokens are expanded; images lie only in the prompt, so the expanded row ends with the
  same tokens, which is checked.

Texts are not truncated: cutting a row would cut image tokens out of their image. A row longer than
``max_length`` is refused in one line.

The identity: the folder fingerprint already hashes the processor's files (``processor_config.json``,
``chat_template.jinja`` or ``chat_template.json``, the tokenizer's), and an image is keyed by its
content hash in :meth:`rmbench.models.base.ScoreRequest.key`; :func:`processor_identity` hashes a
loaded processor (an implicit RM's reference reuses the policy's encoding only when they match).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.prompts import prompt_images
from rmbench.core.types import Prompt
from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest, Truncation
from rmbench.models.hf.encoding import Encoding
from rmbench.models.hf.loading import ModelSource, _hub_kwargs, load_error
from rmbench.models.hf.rendering import response_boundary, response_token_positions
from rmbench.models.quiet import quiet_loading

PROCESSOR_FILE = "processor_config.json"
IMAGE_PROCESSOR_FILE = "preprocessor_config.json"
HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def _source_file(source: ModelSource, name: str) -> Path | None:
    """A file of the checkpoint: in its folder, or fetched (or read from the hub cache) for a hub id."""
    if source.is_local:
        path = Path(source.location) / name
        return path if path.is_file() else None
    if source.gguf_file is not None or not HUB_ID.match(source.location):
        return None
    from rmbench import hub

    try:
        from huggingface_hub import hf_hub_download, try_to_load_from_cache

        cached = try_to_load_from_cache(source.location, name, cache_dir=hub.cache_dir(), revision=source.revision)
        if isinstance(cached, str):
            return Path(cached)
        if cached is not None or hub.unreachable() is not None:  # known absent, or nothing to ask
            return None
        return Path(hf_hub_download(source.location, name, revision=source.revision, cache_dir=hub.cache_dir()))
    except Exception:  # noqa: BLE001 - no such file: the checkpoint reads text
        return None


def has_image_processor(source: ModelSource) -> bool:
    """True when the checkpoint ships an image processor (see the module docstring)."""
    if _source_file(source, IMAGE_PROCESSOR_FILE) is not None:
        return True
    path = _source_file(source, PROCESSOR_FILE)
    if path is None:
        return False
    try:
        return "image_processor" in json.loads(path.read_text())
    except (OSError, ValueError):
        return False


def processor_identity(processor) -> str:
    """A hash of how a processor turns messages and images into inputs: its configuration (the
    image processor's included), its chat template and its tokenizer's."""
    from rmbench.models.hf.identity import tokenizer_identity

    described = {"processor": processor.to_json_string(), "class": type(processor).__name__,
                 "chat_template": getattr(processor, "chat_template", None),
                 "tokenizer": tokenizer_identity(processor.tokenizer)}
    return sha256_hex(canonical_json(described))


def open_image(image) -> Any:
    """An :class:`rmbench.core.images.Image` as an RGB PIL image."""
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(image.read_bytes())) as opened:
            return opened.convert("RGB")
    except (OSError, ValueError) as exc:
        raise ValueError(f"image sha256 {image.sha256[:12]}: cannot be opened as an image: {exc}") from None


class VisionFront:
    """Encodes requests with their images for one adapter (see the module docstring); the
    processor loads on first use, so an adapter's identity reads nothing but files."""

    def __init__(self, model: str, source: ModelSource, runtime: Runtime, system_prompt: str | None = None,
                 truncation: Truncation = Truncation()) -> None:
        self.model_name, self.source, self.runtime = model, source, runtime
        self.system_prompt, self.truncation = system_prompt, truncation
        self._processor: Any = None
        self._lengths: dict[str, int] = {}

    @property
    def processor(self):
        if self._processor is None:
            hub_kwargs = _hub_kwargs(self.model_name, self.source)
            from transformers import AutoProcessor

            try:
                with quiet_loading():
                    processor = AutoProcessor.from_pretrained(self.source.location, revision=self.source.revision,
                                                              trust_remote_code=self.runtime.trust_remote_code,
                                                              **hub_kwargs)
            except Exception as exc:  # noqa: BLE001 - any loading failure becomes one clear message
                raise load_error(self.model_name, self.source, exc) from None
            if not getattr(processor, "chat_template", None):
                raise ConfigError(f"model {self.model_name!r}: its processor has no chat template, and a model that "
                                  f"reads images places them through it")
            processor.tokenizer.padding_side = "right"
            self._processor = processor
        return self._processor

    @property
    def tokenizer(self):
        return self.processor.tokenizer

    # --- rendering -----------------------------------------------------------------------------
    def messages(self, prompt: Prompt, text: str | None = None) -> list[dict]:
        """The prompt's messages as content parts, each message's images before its text. With
        ``text``, one user message instead: every image of the prompt, then ``text`` (a
        generative verifier's question)."""
        if text is not None:
            turns = [("user", prompt_images(prompt), text)]
        elif isinstance(prompt, str):
            turns = [("user", (), prompt)]
        else:
            turns = [(m.role, m.images, m.content) for m in prompt]
        msgs = [{"role": role, "content": [{"type": "image"} for _ in images] + [{"type": "text", "text": body}]}
                for role, images, body in turns]
        if self.system_prompt is not None and msgs[0]["role"] != "system":
            msgs = [{"role": "system", "content": [{"type": "text", "text": self.system_prompt}]}] + msgs
        return msgs

    def render(self, messages: list[dict], response: str | None) -> tuple[str, str]:
        """(text before the response, whole text); without a response both are the prompt ready
        for the assistant's reply."""
        context = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        if response is None:
            return context, context
        full = self.processor.apply_chat_template(
            messages + [{"role": "assistant", "content": [{"type": "text", "text": response}]}], tokenize=False)
        return context, full

    # --- encoding ------------------------------------------------------------------------------
    def encode(self, batch: Sequence[ScoreRequest], texts: Sequence[str] | None = None) -> Encoding:
        """Each request's prompt and images with its response as the assistant's turn, the
        response's token indices marked; with ``texts``, each request's images and its text as one
        user turn ready for the reply (no response tokens)."""
        import torch

        rendered = [self.render(self.messages(r.prompt, None if texts is None else texts[i]),
                                None if texts is not None else r.response) for i, r in enumerate(batch)]
        opened: dict[str, Any] = {}  # each image decoded once a batch (a group's responses share its prompt)
        images = [[opened[i.sha256] if i.sha256 in opened else opened.setdefault(i.sha256, open_image(i))
                   for i in prompt_images(r.prompt)] for r in batch]
        fulls = [full for _, full in rendered]
        kwargs: dict[str, Any] = {"images": images} if any(images) else {}
        out = self.processor(text=fulls, padding=True, return_tensors="pt", add_special_tokens=False, **kwargs)
        ids, mask = out.pop("input_ids"), out.pop("attention_mask")
        lengths = [int(n) for n in mask.sum(1).tolist()]
        limit = self.truncation.max_length
        for r, n in zip(batch, lengths):
            if limit is not None and n > limit:
                raise ConfigError(f"group {r.group_id!r}, response {r.index} is {n} tokens with its images, longer "
                                  f"than --max-length {limit}; a model that reads images is not truncated (that "
                                  f"would cut an image's tokens): raise --max-length or drop the row")
        positions = None
        if texts is None:
            positions = tuple(self._response_positions(ids[i, :lengths[i]].tolist(), context, full, batch[i])
                              for i, (context, full) in enumerate(rendered))
        return Encoding(ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), positions, None,
                        {k: v for k, v in out.items() if isinstance(v, torch.Tensor)})

    def _response_positions(self, expanded: list[int], context: str, full: str, request: ScoreRequest) -> tuple:
        """The response's token indices in the row with its images expanded (module docstring)."""
        enc = self.tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
        plain = enc["input_ids"]
        own = response_token_positions(enc["offset_mapping"], [1] * len(plain), response_boundary(context, full))
        shift = len(expanded) - len(plain)
        if not own or shift < 0 or expanded[own[0] + shift:] != plain[own[0]:]:
            raise ConfigError(f"group {request.group_id!r}, response {request.index}: the processor's tokens of the "
                              f"response differ from its tokenizer's, so they cannot be found")
        return tuple(j + shift for j in own)

    def lengths(self, batch: Sequence[ScoreRequest], encode: Callable[[Sequence[ScoreRequest]], Encoding]) -> list[int]:
        """Tokens of each request with its images expanded, as ``encode`` (the adapter's own
        encoding of one request) makes them; remembered by the request's key."""
        out = []
        for r in batch:
            key = r.key()
            if key not in self._lengths:
                self._lengths[key] = encode([r]).lengths()[0]
            out.append(self._lengths[key])
        return out


def check_sequence_classification(model: str, config) -> None:
    """Refuse, in one line, a VLM whose architecture has no sequence-classification class in
    transformers (Gemma 3 has one; Idefics3 or Qwen2-VL do not), naming the linear head instead."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

    if config.model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
        raise ConfigError(f"model {model!r} reads images, but its architecture ({config.model_type}) has no "
                          f"sequence-classification class in transformers: score it with a linear head over its "
                          f"last hidden state (linear, with model={model} and head=FILE)")
