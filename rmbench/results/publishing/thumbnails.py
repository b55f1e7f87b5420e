"""Thumbnails of the images an example's prompt carries, for the HTML report.

An image is shown as a small PNG (at most :data:`THUMB_PX` pixels on its longer side, downscaled
with Pillow) embedded as a ``data:image/png;base64,...`` URL, so the report stays one
self-contained file. The image's bytes are read from the run's data, which the report reloads
and checks against the run's data fingerprint (a changed image is other data and is refused
there); results.json and rewards.jsonl hold no image, only its content hash.

Nothing in the page names where an image lives: a thumbnail is known by its sha256, and an image
shown without a thumbnail gets its hash and a one-line reason (:attr:`Thumbnail.note`) that never
quotes a path: Pillow is not installed, the bytes cannot be read or decoded, or the page's
thumbnail budget is spent.

Sizes are bounded: one thumbnail's PNG is at most :data:`MAX_THUMB_BYTES` (a photo whose
full-colour PNG is larger is written with an adaptive 256-colour palette, at most
``THUMB_PX**2`` bytes of pixels), and the distinct thumbnails of one page at most
:data:`MAX_TOTAL_BYTES` together (later images get their hash and a note). An image shown in
several examples repeats its data URL, so a page holds at most ``top`` x tables x runs x tasks
of them.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable
from dataclasses import dataclass

from rmbench.core.images import Image

THUMB_PX = 96
"""A thumbnail's longer side, in pixels (a smaller image keeps its size)."""

MAX_THUMB_BYTES = 16 * 1024
"""The largest thumbnail PNG (bytes, before base64)."""

MAX_TOTAL_BYTES = 1024 * 1024
"""The most bytes of thumbnail PNGs one page embeds (distinct images, before base64)."""


@dataclass(frozen=True)
class Thumbnail:
    """One image as the report shows it: its hash, and its thumbnail PNG or why there is none."""

    sha256: str
    png: bytes | None = None
    """The thumbnail's PNG bytes (None: not shown, :attr:`note` says why)."""
    width: int = 0
    height: int = 0
    note: str = ""

    @property
    def data_url(self) -> str | None:
        return None if self.png is None else "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _encode(picture, palette: bool) -> bytes:
    from PIL import Image as PILImage

    if palette:
        picture = picture.convert("RGB").quantize(256, method=PILImage.Quantize.MEDIANCUT)
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=True)
    return out.getvalue()


def make_thumbnail(image: Image, px: int = THUMB_PX) -> Thumbnail:
    """``image`` downscaled to at most ``px`` pixels a side, as a PNG of at most
    :data:`MAX_THUMB_BYTES`; or its hash and a one-line note (never a path) saying why not."""
    try:
        from PIL import Image as PILImage
    except ImportError:
        return Thumbnail(image.sha256, note="no thumbnail: install Pillow (pip install pillow) to see it")
    try:
        data = image.read_bytes()
    except ValueError:
        return Thumbnail(image.sha256, note="no thumbnail: its file cannot be read now, or changed since the data "
                                            "was loaded")
    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            opened.draft("RGB", (px, px))  # a JPEG decodes at a smaller scale directly
            picture = opened.convert("RGBA" if opened.mode in ("RGBA", "LA", "PA") or "transparency" in opened.info
                                     else "RGB")
        picture.thumbnail((px, px))
        png = _encode(picture, palette=False)
        if len(png) > MAX_THUMB_BYTES:
            png = _encode(picture, palette=True)
    except Exception:  # Pillow raises many kinds for bytes it cannot decode (and for decompression bombs)
        return Thumbnail(image.sha256, note=f"no thumbnail: Pillow cannot decode its bytes ({image.mime})")
    if len(png) > MAX_THUMB_BYTES:
        return Thumbnail(image.sha256, note=f"no thumbnail: over {MAX_THUMB_BYTES:,} bytes at {px} px")
    return Thumbnail(image.sha256, png, picture.width, picture.height)


def thumbnails(images: Iterable[Image], px: int = THUMB_PX, budget: int = MAX_TOTAL_BYTES) -> dict[str, Thumbnail]:
    """sha256 -> :class:`Thumbnail` of every distinct image, in the order given; once the
    thumbnails together reach ``budget`` bytes, the rest get their hash and a note."""
    out: dict[str, Thumbnail] = {}
    used = 0
    for image in images:
        if image.sha256 in out:
            continue
        thumb = make_thumbnail(image, px)
        if thumb.png is not None and used + len(thumb.png) > budget:
            thumb = Thumbnail(image.sha256, note=f"no thumbnail: the page's {budget:,}-byte thumbnail budget is spent")
        used += len(thumb.png or b"")
        out[image.sha256] = thumb
    return out
