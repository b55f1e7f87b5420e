"""One-game pairwise judging, as pure functions: the pair in its file's order, each sample's
order draw, and the majority over K answers.

A one-game protocol (:attr:`~rmbench.models.judge.judge_protocol.JudgeProtocol.order` ``file`` or
``random``: Multimodal RewardBench's and VL-RewardBench's clients) asks a pair ONCE per sample, K
samples, instead of JudgeBench's two games. :class:`~rmbench.models.judge.protocol.Protocol`
builds its calls and value from these.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from rmbench.core.prompts import prompt_images
from rmbench.core.types import Prompt
from rmbench.core.vl_rewardbench import majority
from rmbench.errors import ConfigError
from rmbench.models.base import ScoreRequest


def seeded_hash(*parts: Any) -> str:
    """sha256 (hex) of the parts' text joined by NUL bytes (the judge's seeded hashes)."""
    return hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()


def pair_row(req: ScoreRequest, prompt_name: str) -> tuple[str, str]:
    """The pair's two texts in the group's (the file's) order."""
    if len(req.context) != 1:
        raise ConfigError(f"judge prompt {prompt_name!r} judges groups of two responses; group {req.group_id!r} "
                          f"has {len(req.context) + 1}")
    return (req.response, req.context[0]) if req.index == 0 else (req.context[0], req.response)


def draws(order: str, seed: int, question: str, prompt: Prompt, row: tuple[str, str], k: int) -> tuple[int, ...]:
    """Each of ``k`` samples' order, as the official ``random_number``: 0 shows the pair in the
    file's order, 1 swapped. Order ``file``: all 0. Order ``random``: sample i's bit of the sha256
    of the seed, the question, its images' hashes, the two texts and i, so both responses'
    requests make the same calls, a rerun draws the same, and sample i's draw does not depend on k."""
    if order != "random":
        return (0,) * k
    head = (seed, "draw", question, *(image.sha256 for image in prompt_images(prompt)), *row)
    return tuple(int(seeded_hash(*head, i), 16) & 1 for i in range(k))


def shown_first(index: int, draw: int) -> bool:
    """Whether the group's response ``index`` (0 or 1) is shown first under ``draw``."""
    return (index == 0) == (draw == 0)


def majority_value(index: int, verdicts: Sequence[str | None], sample_draws: Sequence[int],
                   count_unparsed: bool) -> float | None:
    """Response ``index``'s value from the K answers (``"A"``: the text shown first, ``"B"``, or
    None) under their draws: v = +1 when more than half of the K answers pick it, -1 when more than
    half pick the other, else 0 (VL-RewardBench's ``cal.py``: agree / reject by a strict majority
    of all K, an unparsed answer counted in K); the value is v/2. ``count_unparsed`` False
    (``unparsed: skip``): the unparsed answers are left out of K, and with none parsed there is no
    value (None)."""
    mine = other = 0
    for verdict, draw in zip(verdicts, sample_draws):
        if verdict is None:
            continue
        if (verdict == "A") == shown_first(index, draw):
            mine += 1
        else:
            other += 1
    k = len(verdicts) if count_unparsed else mine + other
    if k == 0:
        return None
    return 0.5 * int(majority(mine, other, k)) + 0.0  # cal.py's rule: AGREE 1, REJECT -1, NO_VERDICT 0
