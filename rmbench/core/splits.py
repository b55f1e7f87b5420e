"""The deterministic train / held-out split that ``rmbench train`` and ``rmbench eval`` share, so a
model is never scored on the rows it was trained on.

A task's groups fall into bootstrap units (groups resampled together: an original with its
shifted copies, RewardBench 2's ``tied:K`` with ``ref:K``); each unit is keyed by the smallest
id among its groups and goes to ``held_out`` when the first 8 bytes of that key's SHA-256, as
an integer, modulo 100 are below :data:`HELD_OUT_PERCENT`, else to ``train``. The split does not
depend on the order of the rows, on ``--limit`` or on the other rows of the file.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from rmbench.core.types import ComparisonGroup

HELD_OUT_PERCENT = 20
PARTS = ("train", "held_out")
RULE = (f"sha256 of each bootstrap unit's smallest group id, mod 100: below {HELD_OUT_PERCENT} held_out, "
        f"else train")


def key_part(key: str) -> str:
    """``train`` or ``held_out`` for a unit's key (:data:`RULE`)."""
    value = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")
    return "held_out" if value % 100 < HELD_OUT_PERCENT else "train"


def parts_of(groups: Sequence[ComparisonGroup], units: np.ndarray) -> list[str]:
    """Each group's part, given its bootstrap unit number (``Task.bootstrap_units``)."""
    keys: dict[int, str] = {}
    for g, u in zip(groups, units):
        u = int(u)
        keys[u] = min(keys.get(u, g.id), g.id)
    part_of_unit = {u: key_part(k) for u, k in keys.items()}
    return [part_of_unit[int(u)] for u in units]
