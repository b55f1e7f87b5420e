"""The deterministic train / held-out split that ``rmbench train`` and ``rmbench eval`` share, so a
model is never scored on the rows it was trained on, and the sample that ``--limit N`` takes.

A task's groups fall into bootstrap units (groups resampled together: an original with its
shifted copies, RewardBench 2's ``tied:K`` with ``ref:K``); each unit is keyed by the smallest
id among its groups and goes to ``held_out`` when the first 8 bytes of that key's SHA-256, as
an integer, modulo 100 are below :data:`HELD_OUT_PERCENT`, else to ``train``. The split does not
depend on the order of the rows, on ``--limit`` or on the other rows of the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

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


LIMIT_SAMPLING = ("stratified: bootstrap units (paired groups together) ordered within each slice (subset, shift) "
                  "by the sha256 of their smallest group id, slices interleaved in proportion to their sizes; the "
                  "first units holding N groups")
"""How ``--limit N`` samples a task, as results.json records it (``config.limit_sampling``)."""
LIMIT_FIRST = "first"
"""The rule of runs written before the sample existed: the first N groups in file order."""


def _unit_key_order(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def limit_sample(groups: Sequence[ComparisonGroup], units: np.ndarray, n: int) -> list[int]:
    """The indices (in file order) of the groups ``--limit n`` keeps (:data:`LIMIT_SAMPLING`).

    A unit's slice is the set of (subset, shift) of its groups. Within a slice its units are
    ranked by the hash of their smallest group id; unit r of a slice of k units sits at position
    (r + 0.5) / k, and all units are taken in order of position (then hash), so every prefix
    keeps each slice's share, a larger limit keeps every group a smaller one kept (limit 40 is
    inside limit 80), and neither the order of the rows nor the other rows change the choice."""
    members: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        members.setdefault(int(u), []).append(i)
    slices: dict[tuple[tuple[str, str], ...], list[tuple[int, int]]] = {}
    for u, idx in members.items():
        key = min(groups[i].id for i in idx)
        where = tuple(sorted({(groups[i].subset or "", groups[i].shift or "") for i in idx}))
        slices.setdefault(where, []).append((_unit_key_order(key), u))
    order = []
    for ranked in slices.values():
        ranked.sort()
        order += [((r + 0.5) / len(ranked), h, u) for r, (h, u) in enumerate(ranked)]
    order.sort()
    kept: list[int] = []
    for _, _, u in order:
        if len(kept) >= n:
            break
        kept += members[u]
    return sorted(kept)
