"""Example pairs a report shows: the most oversensitive equal-utility pairs, the worst
discrimination failures, the rewrite-preference flips, and the length-bias points.

Pure selection over a task's reloaded groups and the run's aligned rewards (one reward per
response, flattened in group order, as :func:`rmbench.results.storage.reload.aligned_rewards` gives
them); the pairs come from :class:`rmbench.core.types.PairIndex`, the same pairs the metrics
count. Gaps in sigma divide by the run's reward sigma (:func:`rmbench.core.metrics.reward_sigma`),
the unit eps has in sigma units.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.core.images import Image
from rmbench.core.metrics import reward_sigma
from rmbench.core.metrics_bias import length_correlation
from rmbench.core.prompts import prompt_images
from rmbench.core.types import ComparisonGroup, PairIndex, Prompt


@dataclass(frozen=True)
class Answer:
    """One response of a pair: its index in its group, text, utility, reward and form."""

    index: int
    text: str
    utility: int
    reward: float
    form: str | None = None
    judgment: str | None = None
    """What an LLM judge answered about this response (its calls' text and parsed values)."""


@dataclass(frozen=True)
class DiffSegment:
    """A run of words of a word-level diff: ``op`` is ``equal``, ``delete`` (only in a) or ``insert`` (only in b)."""

    op: str
    text: str


@dataclass(frozen=True)
class PairExample:
    """Two responses of one group side by side. ``gap`` = r(a) - r(b) (raw); ``gap_sigma`` = gap / sigma.
    ``diff``: the word-level diff a -> b where one is a rewrite of the other, else empty.
    ``images``: the images the prompt carries, in order (the report shows their thumbnails)."""

    task: str
    group_id: str
    subset: str | None
    shift: str | None
    prompt: str
    a: Answer
    b: Answer
    gap: float
    gap_sigma: float
    diff: tuple[DiffSegment, ...] = ()
    images: tuple[Image, ...] = ()


@dataclass(frozen=True)
class FlipExample:
    """A preference flip: the originals' pair and the rewritten pair, whose preferences disagree in sign."""

    original: PairExample
    rewritten: PairExample


PER_PROMPT = 2
"""Pairs of one prompt (group) a list shows at most, so one prompt cannot fill a list."""


@dataclass(frozen=True)
class Selection:
    """The top examples of one table, how many candidates there were in all, and how many
    ranked among them were left out because their prompt had :data:`PER_PROMPT` shown already."""

    examples: tuple
    total: int
    left_out: int = 0


@dataclass(frozen=True)
class LengthPoints:
    """Specificity pairs as points: length difference (chars) and reward difference (sigma), with
    the length correlation the metrics report (Spearman, both orientations)."""

    length_diff: tuple[float, ...]
    reward_diff: tuple[float, ...]
    correlation: float
    total: int


def prompt_text(prompt: Prompt) -> str:
    """A prompt as plain text: a string as is, chat messages as ``role: content`` lines."""
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(f"{m.role}: {m.content}" for m in prompt)


def word_diff(a: str, b: str) -> tuple[DiffSegment, ...]:
    """Word-level diff of ``a`` -> ``b`` (difflib on whitespace-split words)."""
    wa, wb = a.split(), b.split()
    out: list[DiffSegment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(DiffSegment("equal", " ".join(wa[i1:i2])))
            continue
        if i2 > i1:
            out.append(DiffSegment("delete", " ".join(wa[i1:i2])))
        if j2 > j1:
            out.append(DiffSegment("insert", " ".join(wb[j1:j2])))
    return tuple(out)


class _Task:
    """A task's groups and rewards with the index maps the selections share."""

    def __init__(self, task: str, groups: Sequence[ComparisonGroup], rewards: np.ndarray,
                 sigma: float | None = None) -> None:
        self.task, self.groups = task, list(groups)
        self.rewards = np.asarray(rewards, dtype=np.float64)
        self.index = PairIndex.from_groups(self.groups)
        sizes = [len(g.responses) for g in self.groups]
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.sigma = float(sigma) if sigma else reward_sigma(self.rewards)

    def group_of(self, flat: np.ndarray) -> np.ndarray:
        """The group index of each flat answer index."""
        return np.searchsorted(self.starts, flat, side="right") - 1

    def in_sigma(self, gap: float) -> float:
        return gap / self.sigma if self.sigma > 0 else math.nan

    def answer(self, flat: int) -> tuple[ComparisonGroup, Answer]:
        gi = int(np.searchsorted(self.starts, flat, side="right") - 1)
        g, j = self.groups[gi], int(flat - self.starts[gi])
        form = g.forms[j] if g.forms is not None else None
        return g, Answer(j, g.responses[j], int(g.utilities[j]), float(self.rewards[flat]), form)

    def pair(self, fa: int, fb: int) -> PairExample:
        g, a = self.answer(fa)
        _, b = self.answer(fb)
        gap = a.reward - b.reward
        rewrite = g.rewrite_of is not None and (g.rewrite_of[b.index] == a.index or g.rewrite_of[a.index] == b.index)
        return PairExample(self.task, g.id, g.subset, g.shift, prompt_text(g.prompt), a, b, gap,
                           self.in_sigma(gap), word_diff(a.text, b.text) if rewrite else (),
                           prompt_images(g.prompt))


def _top(order_key: np.ndarray, top: int, groups: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Positions of the ``top`` smallest keys (ties keep pair order: a stable sort), at most
    :data:`PER_PROMPT` of each group when ``groups`` gives each position's group; and how many
    positions ranked before the last one kept were passed over for that."""
    order = np.argsort(order_key, kind="stable")
    if groups is None:
        return order[:max(top, 0)], 0
    kept: list[int] = []
    shown: dict[int, int] = {}
    passed = 0
    for k in order:
        if len(kept) >= top:
            break
        g = int(groups[k])
        if shown.get(g, 0) >= PER_PROMPT:
            passed += 1
            continue
        shown[g] = shown.get(g, 0) + 1
        kept.append(k)
    return np.asarray(kept, dtype=np.int64), passed


def oversensitive_pairs(task: str, groups: Sequence[ComparisonGroup], rewards, top: int,
                        sigma: float | None = None) -> Selection:
    """Equal-utility (specificity) pairs with the largest |r(a) - r(b)|, largest first; each shown
    with the higher-reward answer as ``a``. Ties in the gap keep group and pair order."""
    t = _Task(task, groups, rewards, sigma)
    ea, eb = t.index.eq_a, t.index.eq_b
    gaps = np.abs(t.rewards[ea] - t.rewards[eb])
    picked = []
    order, passed = _top(-gaps, top, t.group_of(ea))
    for k in order:
        a, b = int(ea[k]), int(eb[k])
        if t.rewards[b] > t.rewards[a]:
            a, b = b, a
        picked.append(t.pair(a, b))
    return Selection(tuple(picked), len(gaps), passed)


def discrimination_failures(task: str, groups: Sequence[ComparisonGroup], rewards, top: int,
                            sigma: float | None = None) -> Selection:
    """Discrimination pairs (``a`` better, ``b`` worse) with the lowest margin r(a) - r(b), lowest first."""
    t = _Task(task, groups, rewards, sigma)
    da, db = t.index.diff_better, t.index.diff_worse
    margins = t.rewards[da] - t.rewards[db]
    order, passed = _top(margins, top, t.group_of(da))
    return Selection(tuple(t.pair(int(da[k]), int(db[k])) for k in order), len(margins), passed)


def preference_flips(task: str, groups: Sequence[ComparisonGroup], rewards, top: int,
                     sigma: float | None = None) -> Selection:
    """Rewritten discrimination pairs whose preference differs in sign from their originals'
    (the pairs ``preference_flip_rate`` counts as flips), the largest rewritten gap change first."""
    t = _Task(task, groups, rewards, sigma)
    ix, r = t.index, t.rewards
    new, old = r[ix.flip_a] - r[ix.flip_b], r[ix.flip_oa] - r[ix.flip_ob]
    flipped = np.flatnonzero(np.sign(new) != np.sign(old))
    positions, passed = _top(-np.abs(new[flipped] - old[flipped]), top, t.group_of(ix.flip_a[flipped]))
    order = flipped[positions]
    flips = tuple(FlipExample(t.pair(int(ix.flip_oa[k]), int(ix.flip_ob[k])),
                              t.pair(int(ix.flip_a[k]), int(ix.flip_b[k])))
                  for k in order)
    return Selection(flips, len(flipped), passed)


def length_points(groups: Sequence[ComparisonGroup], rewards, limit: int,
                  sigma: float | None = None) -> LengthPoints:
    """Length and reward differences of the specificity pairs (at most ``limit`` points, evenly
    spaced, for the scatter); the correlation is over all of them."""
    t = _Task("", groups, rewards, sigma)
    ea, eb = t.index.eq_a, t.index.eq_b
    dr = t.rewards[ea] - t.rewards[eb]
    dl = (t.index.response_length[ea] - t.index.response_length[eb]).astype(np.float64)
    rho = length_correlation(dr, dl) if len(dr) else math.nan
    keep: np.ndarray | list[int] = (np.unique(np.linspace(0, len(dr) - 1, min(len(dr), max(limit, 0))).astype(np.int64))
                                    if len(dr) else [])
    scale = t.sigma if t.sigma > 0 else 1.0
    return LengthPoints(tuple(float(dl[k]) for k in keep), tuple(float(dr[k] / scale) for k in keep),
                        float(rho), len(dr))


def annotate(sel: Selection, index: dict[str, tuple[int, ...]], judged: dict[tuple[str, int], str]) -> Selection:
    """The selection with each answer numbered by its index in its original group (``index``:
    group id -> original indices, for groups that lost an unscored response) and given the
    judge's answer about it (``judged``: (group id, original index) -> text)."""
    if not index and not judged:
        return sel

    def answer(group_id: str, a: Answer) -> Answer:
        original = index[group_id][a.index] if group_id in index else a.index
        return dataclasses.replace(a, index=original, judgment=judged.get((group_id, original)))

    def pair(p: PairExample) -> PairExample:
        return dataclasses.replace(p, a=answer(p.group_id, p.a), b=answer(p.group_id, p.b))

    def one(e):
        return FlipExample(pair(e.original), pair(e.rewritten)) if isinstance(e, FlipExample) else pair(e)

    return dataclasses.replace(sel, examples=tuple(one(e) for e in sel.examples))

