"""Images a prompt carries: an :class:`Image` is known by the sha256 of its bytes, never by its path.

A multimodal task's prompt is a conversation whose messages may carry images
(:attr:`rmbench.core.prompts.Message.images`). An image comes from a file (VL-RewardBench's
``FOLDER/<image_path>``), from bytes (a parquet column) or from a ``data:`` URL, and is
**identified by its content**: two files with the same bytes are one image, one file edited is a
new image. Every cache key, fingerprint and record holds the content hash (:meth:`Image.identity`);
where an image's bytes must be read again (a judge's request, a worker process, a written groups
file), :meth:`Image.to_json` with ``sources=True`` also gives where they live.

A file's bytes are read once to hash them and then dropped; :meth:`Image.read_bytes` reads them
again when they are needed and refuses a file that changed since (its hash no longer matches), so
a score can never be cached under the hash of other pixels. Bytes given inline are held.

The MIME type is sniffed from the bytes (PNG, JPEG, GIF, WebP, BMP, TIFF), else guessed from the
file name, else ``application/octet-stream``; a judge protocol may send another (VL-RewardBench's
client labels every image ``image/png``: :meth:`Image.data_url` takes the type to write).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)

MAX_IMAGE_BYTES = 64 * 1024 * 1024
"""The largest image read (64 MiB): a bigger file is refused in one line rather than held."""


def sniff_mime(data: bytes, name: str = "") -> str:
    """The image type of ``data`` from its first bytes; else from ``name``'s extension; else
    ``application/octet-stream``."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    return mime_from_name(name)


def mime_from_name(name: str) -> str:
    """The type ``name``'s extension says (``mimetypes.guess_type``), else ``application/octet-stream``."""
    return (mimetypes.guess_type(name)[0] if name else None) or "application/octet-stream"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Image:
    """One image: its content hash and type, and where its bytes are read from.

    Equality and hashing use the content hash alone (``sha256``): the same pixels from two
    paths are one image."""

    sha256: str
    """sha256 of the image's bytes (hex): its identity in every key."""
    mime: str = field(compare=False, repr=False)
    """Its MIME type, sniffed from the bytes (:func:`sniff_mime`)."""
    source: str = field(default="", compare=False, repr=False)
    """Where its bytes live: an absolute file path, or ``""`` when they are held (:attr:`data`)."""
    data: bytes | None = field(default=None, compare=False, repr=False)
    """The bytes, held for an image given as bytes or a data URL; None for a file (read again)."""
    name: str = field(default="", compare=False, repr=False)
    """The file name the image was given by (before links are followed; ``""`` for bytes): a judge
    protocol that labels an image by its extension reads it (:meth:`name_mime`)."""

    # --- building ----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, mime: str | None = None) -> Image:
        """An image held in memory (a parquet column's bytes, a decoded data URL)."""
        if not isinstance(data, (bytes, bytearray)) or not data:
            raise ValueError("an image must be non-empty bytes")
        data = bytes(data)
        return cls(_sha256(data), mime or sniff_mime(data), "", data)

    @classmethod
    def from_file(cls, path: str | Path) -> Image:
        """An image file: read once to hash it; its bytes are read again when needed."""
        p = Path(path).expanduser()
        try:
            size = p.stat().st_size
            if size > MAX_IMAGE_BYTES:
                raise ValueError(f"image {p} is {size:,} bytes, over the {MAX_IMAGE_BYTES:,}-byte limit")
            data = p.read_bytes()
        except FileNotFoundError:
            raise ValueError(f"no such image file: {p}") from None
        except IsADirectoryError:
            raise ValueError(f"image path is a folder, not a file: {p}") from None
        except OSError as e:
            raise ValueError(f"cannot read image {p}: {e.strerror or e}") from None
        if not data:
            raise ValueError(f"image file {p} is empty")
        return cls(_sha256(data), sniff_mime(data, p.name), str(p.resolve()), None, p.name)

    @classmethod
    def from_data_url(cls, url: str) -> Image:
        """An image written as ``data:<mime>;base64,<bytes>``; its bytes are held."""
        head, sep, body = url.partition(",")
        if not (url.startswith("data:") and sep and head.endswith(";base64")):
            raise ValueError("an image data URL must read data:<type>;base64,<data>")
        try:
            data = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("an image data URL holds invalid base64") from None
        return cls.from_bytes(data)

    @classmethod
    def from_ref(cls, value: Any, base: Path | None = None) -> Image:
        """An image from how data files write one: a path (relative to ``base``, the data file's
        folder), a ``data:`` URL, or an object ``{"path": ...}`` / ``{"url": "data:..."}`` /
        ``{"bytes": ...}`` (bytes or base64 text; the Hub's image feature) /
        ``{"source": ..., "sha256": ...}`` (this module's own :meth:`to_json`, the hash checked).
        A ValueError of one line for anything else, or for an ``http(s)`` URL (download the images
        first: a score must rest on bytes the run has read)."""
        if isinstance(value, Image):
            return value
        if isinstance(value, str):
            return cls._from_text(value, base)
        if isinstance(value, Mapping):
            expected = value.get("sha256")
            image = cls._from_mapping(value, base)
            if isinstance(value.get("name"), str) and value["name"]:
                image = replace(image, name=value["name"])
            if expected is not None and expected != image.sha256:
                raise ValueError(f"image {image.source or 'given inline'} has sha256 {image.sha256[:12]}..., "
                                 f"not the {str(expected)[:12]}... recorded: it changed")
            return image
        raise ValueError(f"an image must be a path, a data URL or an object, not {type(value).__name__}")

    @classmethod
    def _from_text(cls, text: str, base: Path | None) -> Image:
        if text.startswith("data:"):
            return cls.from_data_url(text)
        if text.startswith(("http://", "https://")):
            raise ValueError(f"image {text} is a web address: download the images and give their files "
                             f"(rmbench reads no image from the network)")
        if not text:
            raise ValueError("an image path is empty")
        p = Path(text).expanduser()
        return cls.from_file(p if p.is_absolute() or base is None else base / p)

    @classmethod
    def _from_mapping(cls, value: Mapping[str, Any], base: Path | None) -> Image:
        raw = value.get("bytes")
        if raw is not None:
            if isinstance(raw, str):
                try:
                    raw = base64.b64decode(raw, validate=True)
                except (binascii.Error, ValueError):
                    raise ValueError("an image's 'bytes' text is not base64") from None
            return cls.from_bytes(raw)
        for key in ("path", "url", "source", "image_path"):
            if isinstance(value.get(key), str):
                return cls._from_text(value[key], base)
        raise ValueError("an image object needs 'path', 'url', 'source' or 'bytes'")

    # --- reading -----------------------------------------------------------------------------
    def read_bytes(self) -> bytes:
        """The image's bytes: held ones, or its file read again and checked against its hash."""
        if self.data is not None:
            return self.data
        try:
            data = Path(self.source).read_bytes()
        except OSError as e:
            raise ValueError(f"cannot read image {self.source}: {e.strerror or e}") from None
        if _sha256(data) != self.sha256:
            raise ValueError(f"image {self.source} changed since it was loaded (its sha256 differs)")
        return data

    def name_mime(self) -> str:
        """The type the file name's extension says (``mimetypes.guess_type``), else
        ``application/octet-stream``, as Multimodal RewardBench's client labels an image (not its
        bytes' type: a ``.jpg`` holding PNG bytes is ``image/jpeg`` there)."""
        return mime_from_name(self.name)

    def data_url(self, mime: str | None = None) -> str:
        """``data:<mime>;base64,<bytes>``, the form OpenAI-compatible servers take; ``mime``
        overrides the sniffed type (a protocol that labels every image alike)."""
        return f"data:{mime or self.mime};base64,{base64.b64encode(self.read_bytes()).decode('ascii')}"

    # --- JSON --------------------------------------------------------------------------------
    def identity(self) -> dict[str, str]:
        """What keys, fingerprints and records hold: the content hash, never a path."""
        return {"sha256": self.sha256}

    def to_json(self, sources: bool = False) -> dict[str, str]:
        """:meth:`identity`; with ``sources``, also its type and where its bytes are (a file path,
        or a data URL for held bytes), so :meth:`from_ref` can build it again."""
        if not sources:
            return self.identity()
        where = self.source or self.data_url()
        out = {"sha256": self.sha256, "mime": self.mime, "source": where}
        if self.name and self.name != Path(self.source).name:
            out["name"] = self.name  # a link's own name (the source is where it leads)
        return out
