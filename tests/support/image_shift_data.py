"""A small synthetic VL-RewardBench-format folder for image shift (never real data), and two
``python:`` reward models: one that looks at the pixels, one that reads the text alone.

Each item is a PIL-drawn picture, a brightness level with a gradient and seeded noise, asked
"Is this picture bright or dark?"; the human-preferred response says the truth (mean pixel value
above or below the middle), the other the opposite. ``python -m tests.support.image_shift_data
FOLDER [N]`` writes ``FOLDER/data.jsonl`` and ``FOLDER/images/`` (the docs' image-shift page
runs it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

DATASETS = ("RLAIF-V", "mathverse", "wildvision-battle")
"""Id prefixes: VL-RewardBench's hallucination, reasoning and general groups."""


def picture(level: float, rng: np.random.Generator, size: tuple[int, int] = (64, 48)) -> bytes:
    """A PNG: brightness ``level`` (0..1) with a left-to-right gradient, a darker square and noise."""
    import io

    from PIL import Image as PIL

    w, h = size
    x = np.linspace(-0.15, 0.15, w)[None, :, None]
    base = level + x + rng.normal(0, 0.05, (h, w, 3)) + np.array([0.05, 0.0, -0.05])
    base[h // 4: h // 2, w // 4: w // 2] -= 0.2
    pixels = (np.clip(base, 0, 1) * 255).round().astype(np.uint8)
    out = io.BytesIO()
    PIL.fromarray(pixels, "RGB").save(out, format="PNG", optimize=True)  # other bytes than a re-encoding
    return out.getvalue()


def write_folder(folder: Path, n: int = 30, seed: int = 0) -> Path:
    """``n`` items in VL-RewardBench's layout under ``folder``; brightness levels spread over
    [0.2, 0.8], so some pictures lie near the middle, where a perturbation can tip them."""
    rng = np.random.default_rng(seed)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n):
        level = 0.2 + 0.6 * k / max(1, n - 1)
        (folder / "images" / f"{k}.png").write_bytes(picture(level, rng))
        truth = "bright" if mean_level((folder / "images" / f"{k}.png").read_bytes()) > 0.5 else "dark"
        other = "dark" if truth == "bright" else "bright"
        responses = [f"The picture is {truth}.", f"The picture is {other}."]
        ranking = [0, 1]
        if k % 2:
            responses, ranking = responses[::-1], ranking[::-1]
        rows.append({"id": f"{DATASETS[k % 3]}_{k}", "query": "Is this picture bright or dark?",
                     "response": responses, "human_ranking": ranking, "image_path": f"images/{k}.png",
                     "query_source": "synthetic", "meta": {}})
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def mean_level(data: bytes) -> float:
    """The mean pixel value of an image's bytes, in [0, 1] (every channel, RGB)."""
    import io

    from PIL import Image as PIL

    with PIL.open(io.BytesIO(data)) as image:
        return float(np.asarray(image.convert("RGB"), dtype=np.float64).mean() / 255)


def _image_bytes(prompt: Any) -> bytes:
    from rmbench.core.images import Image

    refs = [ref for m in prompt for ref in m.get("images", [])]
    return Image.from_ref(refs[0]).read_bytes()


def pixel_reward(batch: list[tuple[Any, str]]) -> list[float]:
    """Looks at the picture: (mean level - 0.5) signed by the brightness the response claims."""
    out = []
    for prompt, response in batch:
        level = mean_level(_image_bytes(prompt))
        out.append((level - 0.5) * (1.0 if "bright" in response else -1.0))
    return out


def text_reward(batch: list[tuple[Any, str]]) -> list[float]:
    """Reads the response alone (pixels ignored): prefers "bright"."""
    return [1.0 if "bright" in response else 0.0 for _, response in batch]


if __name__ == "__main__":
    write_folder(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30)
