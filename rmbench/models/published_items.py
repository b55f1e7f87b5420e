"""What a published file holds, read (:class:`PublishedScores`): its items by the task's group id
(:class:`PublishedItem`), read from the file only for the groups a run scores (:class:`RowItems`).
The readers of each format are in :mod:`rmbench.models.published_files`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

RewardsKind = Literal["scores", "verdicts", "mixed"]
"""What a file's rewards are: the tool's recorded scores, rewards made from its verdicts (winner
1, others 0: they reproduce the official score, but D and Spec then describe verdicts), or both."""


@dataclass(frozen=True)
class PublishedItem:
    """One item of a published file: its rewards in the task's response order, or the official
    credit they must give (``credit``: a RewardBench 2 generative row), and what it says of its
    group: the utilities of its responses, its subset, its responses' texts (None: not recorded)."""

    rewards: tuple[float, ...] | None
    utilities: tuple[int, ...] | None = None
    subset: str | None = None
    responses: tuple[str, ...] | None = None
    credit: float | None = None


class RowItems(Mapping[str, PublishedItem]):
    """A published file's items by group id, each read from the file when first asked for
    (:meth:`select` reads many in one pass, in file order) and kept: what is held is each id's
    place in the file (``places``, whatever ``load`` takes) and the items read so far, never the
    rows no one asked for. ``load(places)`` gives the items at those places, in that order."""

    def __init__(self, places: Mapping[str, Any], load: Callable[[list[Any]], list[PublishedItem]]) -> None:
        self._places, self._load = places, load
        self._read: dict[str, PublishedItem] = {}

    def select(self, keys: Iterable[str]) -> dict[str, PublishedItem]:
        """The items of ``keys`` that the file holds (the others are left out), read once."""
        wanted = [k for k in dict.fromkeys(keys) if k in self._places]
        todo = [k for k in wanted if k not in self._read]
        if todo:
            self._read.update(zip(todo, self._load([self._places[k] for k in todo]), strict=True))
        return {k: self._read[k] for k in wanted}

    @property
    def held(self) -> int:
        """How many items have been read (and are held)."""
        return len(self._read)

    def __getitem__(self, key: str) -> PublishedItem:
        if key not in self._places:
            raise KeyError(key)
        return self.select([key])[key]

    def __contains__(self, key: object) -> bool:
        return key in self._places

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)

    __eq__ = object.__eq__  # never read a whole file to compare two
    __hash__ = object.__hash__


@dataclass(frozen=True)
class PublishedScores:
    """A published file, read: its items by the task's group id, and where it came from."""

    source: str
    items: Mapping[str, PublishedItem]
    rewards_are: RewardsKind
    sha256: str
    location: str
    model: str | None = None
    games: int | None = None  # JudgeBench: games per pair
    why_verdicts: str | None = None
    """Why a file that records scores is read as verdicts (its scores do not give its decisions)."""
    verdict_items: int | None = None
    """How many items replay verdicts (a mixed file; None: count them in ``items``)."""

    def select(self, keys: Iterable[str]) -> Mapping[str, PublishedItem]:
        """The items of ``keys`` the file holds, read now if not yet (:class:`RowItems`)."""
        if isinstance(self.items, RowItems):
            return self.items.select(keys)
        return {k: self.items[k] for k in keys if k in self.items}

    @property
    def reading(self) -> str:
        """Which reading of the file gives the rewards, in words (the run's note says it)."""
        what = f"the published {self.source} file {Path(self.location).name}"
        if self.rewards_are == "scores":
            return f"{what} replays its recorded scores as rewards"
        verdicts = ("its verdicts as rewards (winner 1, the others 0): they give the official score, but D and Spec "
                    "describe verdicts, not scores")
        if self.rewards_are == "mixed":
            n = self.verdict_items if self.verdict_items is not None else \
                sum(item.rewards is None for item in self.items.values())
            return (f"{what} replays its recorded scores as rewards where it has them, and on {n} of its "
                    f"{len(self.items)} items {verdicts}")
        return f"{what} replays {verdicts}" + (f" ({self.why_verdicts})" if self.why_verdicts else "")

    @property
    def single_game(self) -> bool:
        """A JudgeBench file of one game read as scores: the judgebench task scores its rewards by
        one game's rule (``single_game: true``, a tie is B>A). Every other JudgeBench file is
        scored by the combined verdict of its games (``single_game: false``)."""
        return self.source == "judgebench" and self.games == 1 and self.rewards_are == "scores"


def verdict_rewards(credit: float, n_correct: int, n: int) -> tuple[float, ...]:
    """Rewards of ``n`` responses (the first ``n_correct`` correct) that earn RewardBench 2's
    best-of-n credit ``credit`` (1/#top if the first is at the top, else 0): credit 1/k puts the
    first response and the next k - 1 at 1, the rest at 0; credit 0 puts response 1 alone at 1.
    Which responses shared the top is not recorded, so D and Spec on these are of the verdicts."""
    if credit == 0:
        return tuple(1.0 if i == 1 else 0.0 for i in range(n))
    k = 1.0 / credit
    if not math.isfinite(k) or abs(k - round(k)) > 1e-9 or not 1 <= round(k) <= n:
        raise ValueError(f"result {credit!r} is not 1/k for k in 1..{n} (the official best-of-n credit)")
    return tuple(1.0 if i < round(k) else 0.0 for i in range(n))


def is_number(x: Any) -> TypeGuard[int | float]:
    """An int or float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_int(x: Any) -> bool:
    """An int, not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


def rewards_kind(kinds: set[str]) -> RewardsKind:
    """What a file's rewards are from the kinds of its rows ("scores", "verdicts")."""
    return "mixed" if len(kinds) > 1 else "verdicts" if kinds == {"verdicts"} else "scores"


__all__ = ["PublishedItem", "PublishedScores", "RewardsKind", "RowItems", "is_int", "is_number", "rewards_kind",
           "verdict_rewards"]
