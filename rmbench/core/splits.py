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


LIMIT_SAMPLING_V1 = ("stratified: bootstrap units (paired groups together) ordered within each slice (subset, shift) "
                     "by the sha256 of their smallest group id, slices interleaved in proportion to their sizes; the "
                     "first units holding N groups")
"""The rule of runs written before every reported slice kept a unit (issue 44): :data:`LIMIT_SAMPLING`
without its first step, so a small slice whose share was below one group could be left out."""
LIMIT_SAMPLING = ("stratified v2: bootstrap units (paired groups together) ordered within each slice (subset, shift) "
                  "by the sha256 of their smallest group id, slices interleaved in proportion to their sizes; first "
                  "the earliest unit of every reported slice (the task's limit_slice: its official sections, else "
                  "subset and shift), then the rest in that order; the first units holding N groups")
"""How ``--limit N`` samples a task, as results.json records it (``config.limit_sampling``)."""
LIMIT_FIRST = "first"
"""The rule of runs written before the sample existed: the first N groups in file order."""
LIMIT_RULES = (LIMIT_SAMPLING, LIMIT_SAMPLING_V1, LIMIT_FIRST)


def _unit_key_order(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def slice_label(group: ComparisonGroup) -> str:
    """A group's (subset, shift) slice as words: ``subset``, ``subset (shift)``, ``(shift)`` or ``all``."""
    subset, shift = group.subset or "", group.shift or ""
    return (f"{subset} ({shift})" if subset and shift else subset or (f"({shift})" if shift else "all"))


def limit_sample(groups: Sequence[ComparisonGroup], units: np.ndarray, n: int,
                 slices: Sequence[str] | None = None) -> list[int]:
    """The indices (in file order) of the groups ``--limit n`` keeps (:data:`LIMIT_SAMPLING`).

    A unit's slice is the set of (subset, shift) of its groups. Within a slice its units are
    ranked by the hash of their smallest group id; unit r of a slice of k units sits at position
    (r + 0.5) / k, and all units are taken in order of position (then hash), so every prefix
    keeps each slice's share, a larger limit keeps every group a smaller one kept (limit 40 is
    inside limit 80), and neither the order of the rows nor the other rows change the choice.

    ``slices``: each group's reported slice (``Task.limit_slice``; a unit's is its smallest
    group's). The first unit in that order of every reported slice comes first, so a limit of
    at least as many units as reported slices keeps one of each (RMB's four sections, however
    small a share one has); where every slice's share is a group or more, the sample is the one
    without this step. None: the rule :data:`LIMIT_SAMPLING_V1`, without it."""
    members: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        members.setdefault(int(u), []).append(i)
    by_slice: dict[tuple[tuple[str, str], ...], list[tuple[int, int]]] = {}
    for u, idx in members.items():
        key = min(groups[i].id for i in idx)
        where = tuple(sorted({(groups[i].subset or "", groups[i].shift or "") for i in idx}))
        by_slice.setdefault(where, []).append((_unit_key_order(key), u))
    order = []
    for ranked in by_slice.values():
        ranked.sort()
        order += [((r + 0.5) / len(ranked), h, u) for r, (h, u) in enumerate(ranked)]
    order.sort()
    units_in_order = [u for _, _, u in order]
    if slices is not None:
        first: dict[str, int] = {}
        for u in units_in_order:
            first.setdefault(min(slices[i] for i in members[u]), u)
        leading = set(first.values())
        units_in_order = list(first.values()) + [u for u in units_in_order if u not in leading]
    kept: list[int] = []
    for u in units_in_order:
        if len(kept) >= n:
            break
        kept += members[u]
    return sorted(kept)
