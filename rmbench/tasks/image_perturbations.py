"""Meaning-preserving image perturbations: the pixel analogue of a paraphrase (``image_shift``).

Each perturbation is a frozen record with its parameters, written and read back as one label
(``KIND`` or ``KIND:PARAM``), which is also the shifted groups' ``shift``:

* ``jpeg:QUALITY`` (:class:`Jpeg`): re-encoded as baseline JPEG at ``QUALITY`` in [50, 95]
  (4:2:0 chroma subsampling, no metadata; an alpha channel composited onto white first);
* ``png`` (:class:`Png`): re-encoded as PNG (lossless: the same pixels, other bytes);
* ``resize:FACTOR`` (:class:`Resize`): both sides scaled by ``FACTOR`` in [0.5, 2] (rounded, at
  least 1 pixel), Lanczos resampling;
* ``crop:FRACTION`` (:class:`Crop`): a box of ``1 - FRACTION`` of each side kept,
  ``FRACTION`` in (0, 0.2], its offset drawn;
* ``jitter:BOUND`` (:class:`ColorJitter`): brightness, contrast and saturation each multiplied
  by a factor drawn uniformly from [1 - BOUND, 1 + BOUND], ``BOUND`` in (0, 0.3], applied in
  that order (Pillow's ``ImageEnhance``), alpha kept.

Every perturbation but JPEG writes PNG, so that the only change is the declared one; the picture
is taken as it is shown (a JPEG's EXIF orientation applied), and an animated image is refused
rather than cut to its first frame. What is drawn
(a crop's offset, the jitter factors) comes from a generator seeded by the task's ``seed``, the
group's id, the perturbation's label and the image's position in the prompt
(:func:`perturbation_rng`), so a perturbed image is the same bytes on every run with the same
Pillow; each :class:`Applied` records what was drawn. A perturbed image is a new image (a new
content hash, :class:`~rmbench.core.images.Image`), so score caches need nothing new. Pillow is
imported when an image is perturbed, never when the task kinds are registered.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbench.errors import ConfigError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

JPEG_QUALITY = (50, 95)
"""The JPEG qualities accepted: below 50, blocking artefacts can hide small text or details."""
RESIZE_FACTOR = (0.5, 2.0)
"""The resize factors accepted (each side)."""
MAX_CROP = 0.2
"""The largest share of each side a crop removes."""
MAX_JITTER = 0.3
"""The largest relative change of brightness, contrast or saturation."""


@dataclass(frozen=True)
class Applied:
    """What one perturbation did to one image: its label and what was drawn for it."""

    label: str
    drawn: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"perturbation": self.label, **dict(self.drawn)}


@dataclass(frozen=True)
class Jpeg:
    """Re-encode as JPEG at ``quality``."""

    quality: int

    def __post_init__(self) -> None:
        if isinstance(self.quality, bool) or not isinstance(self.quality, int):
            raise ConfigError(f"jpeg: quality must be an integer, got {self.quality!r}")
        if not JPEG_QUALITY[0] <= self.quality <= JPEG_QUALITY[1]:
            raise ConfigError(f"jpeg:{self.quality}: the quality must be in [{JPEG_QUALITY[0]}, {JPEG_QUALITY[1]}] "
                              f"(a lower one can change what the image shows)")

    @property
    def label(self) -> str:
        return f"jpeg:{self.quality}"

    def apply(self, image: PILImage, rng: np.random.Generator) -> tuple[bytes, Applied]:
        rgb = _flatten(image)
        out = io.BytesIO()
        rgb.save(out, format="JPEG", quality=self.quality, subsampling=2, optimize=False, progressive=False)
        return out.getvalue(), Applied(self.label)


@dataclass(frozen=True)
class Png:
    """Re-encode as PNG: the same pixels, other bytes (and another content hash)."""

    @property
    def label(self) -> str:
        return "png"

    def apply(self, image: PILImage, rng: np.random.Generator) -> tuple[bytes, Applied]:
        return _png(_plain(image)), Applied(self.label)


@dataclass(frozen=True)
class Resize:
    """Scale both sides by ``factor``."""

    factor: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _number("resize", "factor", self.factor))
        if not RESIZE_FACTOR[0] <= self.factor <= RESIZE_FACTOR[1]:
            raise ConfigError(f"resize:{self.factor:g}: the factor must be in [{RESIZE_FACTOR[0]:g}, "
                              f"{RESIZE_FACTOR[1]:g}]")

    @property
    def label(self) -> str:
        return f"resize:{self.factor:g}"

    def apply(self, image: PILImage, rng: np.random.Generator) -> tuple[bytes, Applied]:
        from PIL import Image as PIL

        plain = _plain(image)
        size = (max(1, round(plain.width * self.factor)), max(1, round(plain.height * self.factor)))
        return _png(plain.resize(size, PIL.Resampling.LANCZOS)), Applied(self.label)


@dataclass(frozen=True)
class Crop:
    """Keep a box of ``1 - fraction`` of each side, at a drawn offset."""

    fraction: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", _number("crop", "fraction", self.fraction))
        if not 0 < self.fraction <= MAX_CROP:
            raise ConfigError(f"crop:{self.fraction:g}: the fraction must be in (0, {MAX_CROP:g}] (a larger crop "
                              f"can cut off what the question asks about)")

    @property
    def label(self) -> str:
        return f"crop:{self.fraction:g}"

    def box(self, width: int, height: int, rng: np.random.Generator) -> tuple[int, int, int, int]:
        """(left, top, right, bottom): ``1 - fraction`` of each side (at least 1 pixel), offset drawn."""
        w, h = max(1, round(width * (1 - self.fraction))), max(1, round(height * (1 - self.fraction)))
        left, top = int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1))
        return left, top, left + w, top + h

    def apply(self, image: PILImage, rng: np.random.Generator) -> tuple[bytes, Applied]:
        plain = _plain(image)
        box = self.box(plain.width, plain.height, rng)
        drawn = tuple(zip(("left", "top", "right", "bottom"), map(float, box)))
        return _png(plain.crop(box)), Applied(self.label, drawn)


@dataclass(frozen=True)
class ColorJitter:
    """Brightness, contrast and saturation each times a factor drawn from [1 - bound, 1 + bound]."""

    bound: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "bound", _number("jitter", "bound", self.bound))
        if not 0 < self.bound <= MAX_JITTER:
            raise ConfigError(f"jitter:{self.bound:g}: the bound must be in (0, {MAX_JITTER:g}]")

    @property
    def label(self) -> str:
        return f"jitter:{self.bound:g}"

    def factors(self, rng: np.random.Generator) -> tuple[float, float, float]:
        """(brightness, contrast, saturation), each uniform in [1 - bound, 1 + bound]."""
        b, c, s = rng.uniform(1 - self.bound, 1 + self.bound, size=3)
        return float(b), float(c), float(s)

    def apply(self, image: PILImage, rng: np.random.Generator) -> tuple[bytes, Applied]:
        from PIL import ImageEnhance

        plain = _plain(image)
        alpha = plain.getchannel("A") if plain.mode in ("RGBA", "LA") else None
        colour = plain.convert("RGB" if plain.mode in ("RGB", "RGBA") else "L")
        factors = self.factors(rng)
        for enhancer, factor in zip((ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color), factors):
            colour = enhancer(colour).enhance(factor)
        if alpha is not None:
            colour.putalpha(alpha)
        drawn = tuple(zip(("brightness", "contrast", "saturation"), factors))
        return _png(colour), Applied(self.label, drawn)


Perturbation = Jpeg | Png | Resize | Crop | ColorJitter

KINDS: dict[str, str] = {"jpeg": "QUALITY (an integer)", "png": "", "resize": "FACTOR", "crop": "FRACTION",
                         "jitter": "BOUND"}
"""Each perturbation kind and what its label's parameter is."""


def parse_perturbation(spec: Any) -> Perturbation:
    """A perturbation from its label (``jpeg:85``, ``png``, ``resize:0.75``, ``crop:0.1``,
    ``jitter:0.1``) or a mapping (``{kind: jpeg, quality: 85}``); one :class:`ConfigError` line
    naming what is wrong otherwise."""
    if isinstance(spec, Mapping):
        params = {k: v for k, v in spec.items() if k != "kind"}
        kind = str(spec.get("kind", ""))
        value = next(iter(params.values())) if len(params) == 1 else None
        if kind == "png" and not params:
            return Png()
        if value is None:
            raise ConfigError(f"perturbation {dict(spec)!r}: give kind and its one parameter "
                              f"({', '.join(KINDS)}), e.g. {{kind: jpeg, quality: 85}}")
        return _make(kind, value, str(dict(spec)))
    if not isinstance(spec, str):
        raise ConfigError(f"perturbation {spec!r}: expected a label such as jpeg:85 or a mapping")
    kind, sep, param = spec.strip().partition(":")
    if kind == "png" and not sep:
        return Png()
    if not sep or not param:
        raise ConfigError(f"perturbation {spec!r}: expected KIND:PARAM ({_kinds_text()}) or png")
    return _make(kind, param, spec)


def _make(kind: str, value: Any, spec: str) -> Perturbation:
    try:
        if kind == "jpeg":
            number = float(value)
            if not number.is_integer():
                raise ConfigError(f"perturbation {spec!r}: the JPEG quality must be an integer")
            return Jpeg(int(number))
        if kind == "resize":
            return Resize(float(value))
        if kind == "crop":
            return Crop(float(value))
        if kind == "jitter":
            return ColorJitter(float(value))
    except (TypeError, ValueError):
        raise ConfigError(f"perturbation {spec!r}: {value!r} is not a number") from None
    raise ConfigError(f"perturbation {spec!r}: unknown kind {kind!r}; the kinds are {_kinds_text()}, png")


def _kinds_text() -> str:
    return ", ".join(f"{k}:{v.split(' ')[0]}" for k, v in KINDS.items() if v)


def _number(kind: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{kind}: {name} must be a finite number, got {value!r}")
    return float(value)


def perturbation_rng(seed: int, group_id: str, label: str, position: int) -> np.random.Generator:
    """The generator of one image's draws: seeded by sha256 of (seed, group id, label, position
    of the image in the prompt), so it does not depend on the order groups are read in."""
    key = hashlib.sha256(f"{int(seed)}\x00{group_id}\x00{label}\x00{position}".encode()).digest()
    return np.random.default_rng(int.from_bytes(key[:16], "little"))


def perturb_bytes(data: bytes, perturbation: Perturbation, rng: np.random.Generator) -> tuple[bytes, Applied]:
    """``data`` (an image file's bytes) perturbed: the new file's bytes and what was done. A
    ValueError of one line when Pillow cannot read the image."""
    from PIL import Image as PIL
    from PIL import ImageOps, UnidentifiedImageError

    try:
        with PIL.open(io.BytesIO(data)) as opened:
            frames = getattr(opened, "n_frames", 1)
            if frames > 1:
                raise ValueError(f"an animated image ({frames} frames) is not perturbed: its frames would be lost")
            opened.load()
            # As the picture is shown: a JPEG's EXIF orientation applied (the metadata is not written back).
            image = ImageOps.exif_transpose(opened)
    except (UnidentifiedImageError, OSError, SyntaxError, PIL.DecompressionBombError) as exc:
        raise ValueError(f"cannot read the image to perturb it ({exc})") from None
    return perturbation.apply(image, rng)


def _plain(image: PILImage) -> PILImage:
    """The image in a mode every perturbation handles (RGB, RGBA, L or LA): a palette or CMYK
    image converted, with its transparency where it has one; metadata dropped."""
    if image.mode in ("RGB", "RGBA", "L", "LA"):
        return image
    if image.mode == "P" and "transparency" in image.info:
        return image.convert("RGBA")
    if image.mode in ("I", "I;16", "F"):
        return image.convert("L")
    return image.convert("RGBA" if "A" in image.getbands() else "RGB")


def _flatten(image: PILImage) -> PILImage:
    """RGB (or L) for JPEG, which has no alpha: a transparent image composited onto white."""
    from PIL import Image as PIL

    plain = _plain(image)
    if plain.mode in ("RGBA", "LA"):
        rgba = plain.convert("RGBA")
        white = PIL.new("RGBA", rgba.size, (255, 255, 255, 255))
        return PIL.alpha_composite(white, rgba).convert("RGB")
    return plain


def _png(image: PILImage) -> bytes:
    """PNG bytes with no metadata, at a fixed compression level (the same bytes every time)."""
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=6, optimize=False)
    return out.getvalue()
