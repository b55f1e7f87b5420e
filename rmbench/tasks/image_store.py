"""Perturbed images, made once and kept: image shift's copies of a prompt (:func:`perturb_prompt`).

A perturbed image is written under the user cache (``image_shift/``, named by its content hash)
and read from there, so a task of many images does not hold their bytes in memory. Beside it, a
small record keyed by everything the image rests on (the original's content hash, the
perturbation's label, the seed, the group's id, the image's position, Pillow's version and
:data:`PERTURBATION_VERSION`) names the result and what was drawn, so reading the task again (a
second run, ``rmbench compare``, a resumed run) does not perturb every image again. A record whose
image is missing or no longer has its hash is made again.

A perturbed image is named for the bytes it now holds: its original's stem (the content hash for
an original with no file name) and the extension of its new type (``0.jpg`` perturbed to PNG is
``0.png``; ``jpeg:Q`` writes ``.jpg``), so a judge protocol that labels an image by its file
name's type (``prompt=mm_rewardbench``, as Multimodal RewardBench's client) labels it truly.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.images import Image
from rmbench.core.prompts import Message, Prompt
from rmbench.errors import DataError, RMBenchError
from rmbench.files import atomic_write_bytes, atomic_write_text
from rmbench.paths import user_cache_dir
from rmbench.tasks.image_perturbations import Applied, Perturbation, perturb_bytes, perturbation_rng

PERTURBATION_VERSION = 1
"""Bump when a perturbation's code changes what it writes: the kept results are then made again."""


def perturb_prompt(prompt: Prompt, perturbation: Perturbation, seed: int, group_id: str
                   ) -> tuple[Prompt, tuple[Applied, ...]]:
    """``prompt`` with every image perturbed (the k-th image of the prompt drawn from
    :func:`~rmbench.tasks.image_perturbations.perturbation_rng` at position k), and what was done
    to each. A string prompt has no image and comes back as it is."""
    if isinstance(prompt, str):
        return prompt, ()
    applied: list[Applied] = []
    messages: list[Message] = []
    position = 0
    for m in prompt:
        images = []
        for image in m.images:
            try:
                new, done = perturbed_image(image, perturbation, seed, group_id, position)
            except ValueError as exc:
                raise DataError(f"image_shift: group {group_id!r}, image {position + 1}: {exc}") from None
            images.append(new)
            applied.append(done)
            position += 1
        messages.append(Message(m.role, m.content, tuple(images)) if images else m)
    return tuple(messages), tuple(applied)


def perturbed_image(image: Image, perturbation: Perturbation, seed: int, group_id: str,
                    position: int) -> tuple[Image, Applied]:
    """``image`` perturbed, from the kept result where there is one (module doc)."""
    from PIL import __version__ as pillow

    key = sha256_hex(canonical_json({"version": PERTURBATION_VERSION, "pillow": pillow, "image": image.sha256,
                                     "perturbation": perturbation.label, "seed": int(seed), "group": group_id,
                                     "position": position}))
    record = user_cache_dir() / "image_shift" / "made" / key[:2] / f"{key}.json"
    kept = _kept(record)
    if kept is not None:
        return _named(kept[0], image), kept[1]
    data, done = perturb_bytes(image.read_bytes(), perturbation, perturbation_rng(seed, group_id, perturbation.label,
                                                                                 position))
    new = stored_image(data)
    if new.source:  # kept on disk: note where, for the next reading
        try:
            atomic_write_text(record, json.dumps({"sha256": new.sha256, "source": new.source, "label": done.label,
                                                  "drawn": [list(d) for d in done.drawn]}))
        except RMBenchError:
            pass  # a cache that cannot be written only costs the next reading the work again
    return _named(new, image), done


def _named(new: Image, original: Image) -> Image:
    """``new`` named by ``original``'s stem (its content hash when it has no name) and the
    extension of ``new``'s own type (module doc)."""
    stem = Path(original.name).stem if original.name else new.sha256
    return replace(new, name=stem + _suffix(new.mime))


def _suffix(mime: str) -> str:
    """The file extension of a perturbation's output type."""
    return {"image/png": ".png", "image/jpeg": ".jpg"}.get(mime, ".img")


def _kept(record_path) -> tuple[Image, Applied] | None:
    """The kept result a record names, or None (no record, or its image gone or changed)."""
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        image = Image.from_ref({"source": record["source"], "sha256": record["sha256"]})
        drawn = tuple((str(k), float(v)) for k, v in record["drawn"])
        return image, Applied(str(record["label"]), drawn)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stored_image(data: bytes) -> Image:
    """A perturbed image, written once under the user cache (``image_shift/``, by its content
    hash) and read from there; its bytes held in memory where the cache cannot be written."""
    held = Image.from_bytes(data)
    path = user_cache_dir() / "image_shift" / held.sha256[:2] / f"{held.sha256}{_suffix(held.mime)}"
    try:
        if not path.is_file() or Image.from_file(path) != held:  # absent, or damaged: (re)written
            atomic_write_bytes(path, data)
    except (ValueError, OSError, RMBenchError):
        return held
    # Read from the file from now on (Image.read_bytes checks its hash on every read).
    return replace(held, source=str(path.resolve()), data=None, name=path.name)
