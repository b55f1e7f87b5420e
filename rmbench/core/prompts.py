"""Prompts: a string, or a conversation of :class:`Message` objects that may carry images.

The JSON form (:func:`prompt_to_json`) is what keys, fingerprints and records hold: a string, or
``[{"role", "content"}]`` with ``"images": [{"sha256": ...}]`` on a message that carries images
(only then, so every text prompt's key is what it always was). With ``sources=True`` each image
also says where its bytes are, and :func:`prompt_from_json` builds the prompt back from it.

:func:`prompt_from_json` also reads the OpenAI-style content parts data files use
(``"content": [{"type": "text", "text": ...}, {"type": "image_url", "image_url": {"url": ...}}]``):
a message's text parts are joined with a newline and its images kept in order. A message holds its
text and its images apart, so text that comes *after* an image, when text also comes before it, is
refused rather than silently moved: how images and text are laid out is the model's or the judge
protocol's choice (both multimodal benchmarks send the text, then the image).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmbench.core.images import Image


@dataclass(frozen=True, repr=False)
class Message:
    """One chat message of a prompt given as a conversation."""

    role: str
    """Who speaks: ``"system"``, ``"user"`` or ``"assistant"``."""
    content: str
    """What the message says (its text)."""
    images: tuple[Image, ...] = ()
    """The images the message carries (none for a text message), in order."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "images", tuple(self.images))
        if not all(isinstance(i, Image) for i in self.images):
            raise ValueError("a message's images must be Image objects (rmbench.core.images.Image)")

    def __repr__(self) -> str:
        # A text message's repr is what it was before messages carried images (seeded draws hash it).
        images = f", images={self.images!r}" if self.images else ""
        return f"Message(role={self.role!r}, content={self.content!r}{images})"


Prompt = str | tuple[Message, ...]


def prompt_images(prompt: Prompt) -> tuple[Image, ...]:
    """Every image the prompt carries, in message order (none for a string prompt)."""
    if isinstance(prompt, str):
        return ()
    return tuple(image for m in prompt for image in m.images)


def prompt_to_json(prompt: Prompt, sources: bool = False) -> Any:
    """The prompt as JSON: a string, or its messages; images by content hash (and, with
    ``sources``, where their bytes are: :meth:`Image.to_json`)."""
    if isinstance(prompt, str):
        return prompt
    out = []
    for m in prompt:
        message: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.images:
            message["images"] = [image.to_json(sources) for image in m.images]
        out.append(message)
    return out


def prompt_from_json(value: Any, base: Path | None = None) -> Prompt:
    """Accept a string or a non-empty list of ``{"role", "content"}`` messages (content a string
    or a list of content parts; an optional ``"images"`` list); image paths are relative to
    ``base``, the data file's folder. A ValueError of one line otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and value:
        return tuple(_message(i, m, base) for i, m in enumerate(value))
    raise ValueError("must be a string or a non-empty list of chat messages")


def _message(i: int, m: Any, base: Path | None) -> Message:
    if not (isinstance(m, Mapping) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), (str, list, tuple))):
        raise ValueError(f"message {i} must be an object with string 'role' and 'content'")
    content = m["content"]
    text, images = (content, []) if isinstance(content, str) else _parts(i, content, base)
    extra = m.get("images")
    if extra is not None:
        if not isinstance(extra, (list, tuple)):
            raise ValueError(f"message {i}: 'images' must be a list")
        images += [_image(i, ref, base) for ref in extra]
    return Message(m["role"], text, tuple(images))


def _parts(i: int, parts: Sequence[Any], base: Path | None) -> tuple[str, list[Image]]:
    """A message's content parts: its texts joined by newlines, its images in order."""
    texts: list[str] = []
    images: list[Image] = []
    for j, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            if images and texts:
                raise ValueError(f"message {i}, part {j}: text after an image that follows text: a message "
                                 f"keeps its text and its images apart (give the text, then the images)")
            texts.append(part["text"])
        elif kind in ("image_url", "image"):
            ref = part.get(kind)
            if isinstance(ref, Mapping) and kind == "image_url":
                ref = ref.get("url")
            images.append(_image(i, part if ref is None else ref, base, j))
        else:
            raise ValueError(f"message {i}, part {j}: a content part must be {{'type': 'text', 'text': ...}} "
                             f"or an image ('image_url' / 'image')")
    return "\n".join(texts), images


def _image(i: int, ref: Any, base: Path | None, part: int | None = None) -> Image:
    try:
        return Image.from_ref(ref, base)
    except ValueError as e:
        where = f"message {i}" + (f", part {part}" if part is not None else "")
        raise ValueError(f"{where}: {e}") from None
