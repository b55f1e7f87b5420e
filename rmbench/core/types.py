"""The data model: comparison groups, the pairs that come from them, and specs.

A task yields :class:`ComparisonGroup` objects. Every group is one prompt with several
responses and one integer utility per response (higher is better). From a group come

* **discrimination pairs** ``(a, b)`` with ``u(a) > u(b)``, and
* **specificity pairs** ``(a, b)`` with ``u(a) = u(b)`` inside a utility level that the task
  declares an equivalence class (by default every level is one).

A task's rewards are one flat array, one reward per response, its groups in order:
:func:`group_slices` and :func:`split_by_group` cut it back into groups.

All value types here are frozen and hashable, so they can key caches and be compared. The specs
(:class:`~rmbench.core.specs.TaskSpec`, :class:`~rmbench.core.specs.ModelSpec`) live in
:mod:`rmbench.core.specs`, the canonical JSON in :mod:`rmbench.core.canonical`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from numpy.typing import DTypeLike

from rmbench.core.arrays import AnyArray, IntArray
from rmbench.core.canonical import canonical_json
from rmbench.core.prompts import Message as Message
from rmbench.core.prompts import Prompt as Prompt
from rmbench.core.prompts import prompt_from_json as prompt_from_json
from rmbench.core.prompts import prompt_to_json as prompt_to_json

ORIGINAL = "original"
"""The form of a response that is no rewrite (:attr:`ComparisonGroup.forms`)."""


@dataclass(frozen=True)
class ComparisonGroup:
    """One prompt, its responses and their true utilities.

    ``equivalence_levels``: the utility levels whose equal-utility responses form specificity
    pairs. ``None`` means every level (the default); ``()`` means none. RewardBench 2 Ties, for
    example, declares only the "correct" level: two equally wrong answers are not a tie.
    ``source_id``/``shift``: a shifted copy (``paraphrase``, ``translation:fr``, ``domain:math``)
    points at the group it was made from, so original and shifted results can be paired.
    ``forms``/``rewrite_of``: for a group whose responses include rewrites of one another (the
    same answer in other words, so of equal utility), each response's surface form
    (``"original"``, or the rewrite's kind) and the index of the response it was rewritten from
    (itself for an original). Pairs then split into within-form and cross-form ones
    (:class:`PairIndex`), and a rewrite's preferences pair with its originals' (flips).
    """

    id: str
    """The group's id, unique within its task (a benchmark's own id where it has one)."""
    prompt: Prompt
    """The prompt every response answers: a string, or a conversation (a tuple of :class:`Message`)."""
    responses: tuple[str, ...]
    """The responses compared: two or more (one or more steps in a StepGroup)."""
    utilities: tuple[int, ...]
    """Each response's true utility, an integer (higher: better); equal utilities are ties."""
    subset: str | None = None
    """The benchmark's subset the group belongs to (scores are also reported per subset); None: none."""
    source_id: str | None = None
    shift: str | None = None
    equivalence_levels: tuple[int, ...] | None = None
    meta: str = "{}"  # canonical JSON; pass a dict, read back with ``meta_dict``
    """Anything else about the group, as canonical JSON (pass a dict; :meth:`meta_dict` reads it back)."""
    forms: tuple[str, ...] | None = None
    rewrite_of: tuple[int, ...] | None = None
    min_responses: ClassVar[int] = 2
    """A comparison needs two responses; a :class:`~rmbench.core.step_groups.StepGroup` (one
    solution's steps) may hold one."""

    def __post_init__(self) -> None:
        # Accept lists/dicts from callers and store them frozen.
        object.__setattr__(self, "responses", tuple(self.responses))
        if not all(isinstance(u, (int, np.integer)) and not isinstance(u, bool) for u in self.utilities):
            raise ValueError(f"group {self.id!r}: utilities must be integers, got {list(self.utilities)}")
        object.__setattr__(self, "utilities", tuple(int(u) for u in self.utilities))
        if self.equivalence_levels is not None:
            object.__setattr__(self, "equivalence_levels", tuple(int(u) for u in self.equivalence_levels))
        if not isinstance(self.prompt, str):
            messages: Prompt = tuple(self.prompt)
            if not all(isinstance(m, Message) for m in messages):
                messages = prompt_from_json(list(messages))
            object.__setattr__(self, "prompt", messages)
        if not isinstance(self.meta, str):
            object.__setattr__(self, "meta", canonical_json(dict(self.meta or {})))
        if len(self.responses) != len(self.utilities):
            raise ValueError(
                f"group {self.id!r}: {len(self.responses)} responses but {len(self.utilities)} utilities")
        if len(self.responses) < self.min_responses:
            raise ValueError(f"group {self.id!r}: a comparison group needs at least {self.min_responses} responses")
        if not all(isinstance(r, str) for r in self.responses):
            raise ValueError(f"group {self.id!r}: every response must be a string")
        if self.forms is not None or self.rewrite_of is not None:
            self._check_forms()

    def _check_forms(self) -> None:
        """``forms`` and ``rewrite_of`` come together, one per response; a rewrite points at an
        original response of the same utility."""
        if self.forms is None or self.rewrite_of is None:
            raise ValueError(f"group {self.id!r}: give both forms and rewrite_of, or neither")
        object.__setattr__(self, "forms", tuple(str(f) for f in self.forms))
        object.__setattr__(self, "rewrite_of", tuple(int(j) for j in self.rewrite_of))
        n = len(self.responses)
        if len(self.forms) != n or len(self.rewrite_of) != n:
            raise ValueError(f"group {self.id!r}: {len(self.forms)} forms and {len(self.rewrite_of)} rewrite_of "
                             f"entries for {n} responses")
        for j, (form, src) in enumerate(zip(self.forms, self.rewrite_of)):
            if not 0 <= src < n or self.forms[src] != ORIGINAL or self.rewrite_of[src] != src:
                raise ValueError(f"group {self.id!r}: response {j} is rewritten from {src}, which is not an "
                                 f"original response of the group")
            if (form == ORIGINAL) != (src == j) or self.utilities[src] != self.utilities[j]:
                raise ValueError(f"group {self.id!r}: response {j} ({form}) must have the utility of the original "
                                 f"it rewrites, and only originals rewrite themselves")

    @classmethod
    def preference_pair(cls, id: str, prompt: Prompt, chosen: str, rejected: str, **kwargs: Any) -> ComparisonGroup:
        """A plain preference pair: two responses with utilities (1, 0)."""
        return cls(id=id, prompt=prompt, responses=(chosen, rejected), utilities=(1, 0), **kwargs)

    @property
    def meta_dict(self) -> dict[str, Any]:
        """``meta`` as a dict."""
        meta: dict[str, Any] = json.loads(self.meta)
        return meta

    def is_equivalence_level(self, level: int) -> bool:
        """Whether two responses of utility ``level`` form a specificity pair (``equivalence_levels``
        None: every level)."""
        return self.equivalence_levels is None or level in self.equivalence_levels

    def pair_arrays(self) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """(better, worse, a, b): the discrimination pairs, u(better) > u(worse), ordered by
        better then worse; the specificity pairs, a < b with u(a) = u(b) in a declared
        equivalence level, ordered by a then b (row-major order of the utility comparisons)."""
        u = np.asarray(self.utilities, dtype=np.int64)
        better, worse = np.nonzero(u[:, None] > u[None, :])
        equal = np.triu(u[:, None] == u[None, :], 1)
        if self.equivalence_levels is not None:
            equal &= np.isin(u, self.equivalence_levels)[:, None]
        a, b = np.nonzero(equal)
        return better.astype(np.int64), worse.astype(np.int64), a.astype(np.int64), b.astype(np.int64)

    def pair_counts(self) -> tuple[int, int]:
        """How many discrimination and specificity pairs :meth:`pair_arrays` gives."""
        better, _, a, _ = self.pair_arrays()
        return len(better), len(a)

    def discrimination_pairs(self) -> list[tuple[int, int]]:
        """Index pairs (better, worse) with u(better) > u(worse)."""
        better, worse, _, _ = self.pair_arrays()
        return list(zip(better.tolist(), worse.tolist()))

    def specificity_pairs(self) -> list[tuple[int, int]]:
        """Index pairs (a, b), a < b, with u(a) = u(b) in a declared equivalence level."""
        _, _, a, b = self.pair_arrays()
        return list(zip(a.tolist(), b.tolist()))

    def to_json(self, sources: bool = False) -> dict[str, Any]:
        """The canonical JSON form (also the line format of ``groups_jsonl`` task files): images by
        their content hash, and, with ``sources`` (a file to be read again), where their bytes are."""
        return {
            "id": self.id,
            "prompt": prompt_to_json(self.prompt, sources),
            "responses": list(self.responses),
            "utilities": list(self.utilities),
            "subset": self.subset,
            "source_id": self.source_id,
            "shift": self.shift,
            "equivalence_levels": None if self.equivalence_levels is None else list(self.equivalence_levels),
            "meta": self.meta_dict,
            # Only when set, so that the fingerprints of groups without forms stay as they were.
            **({"forms": list(self.forms), "rewrite_of": list(self.rewrite_of or ())}
               if self.forms is not None else {}),
        }


def group_slices(groups: Iterable[ComparisonGroup]) -> list[slice]:
    """Where each group's responses lie in a flat per-response array (one entry per response,
    the groups in order): ``rewards[group_slices(groups)[k]]`` are group k's rewards."""
    out, start = [], 0
    for g in groups:
        out.append(slice(start, start + len(g.responses)))
        start += len(g.responses)
    return out


def split_by_group(groups: Iterable[ComparisonGroup], values: Any) -> list[np.ndarray]:
    """``values`` (an array, one entry per response of ``groups``, the groups in order) cut into
    one view per group; a ValueError when the lengths do not match."""
    slices = group_slices(groups)
    values = np.asarray(values)
    n = slices[-1].stop if slices else 0
    if len(values) != n:
        raise ValueError(f"{len(values)} values for the {n} responses of {len(slices)} groups")
    return [values[s] for s in slices]


def data_fingerprint(groups: Iterable[ComparisonGroup]) -> str:
    """sha256 over the canonical serialisation of the groups, in order."""
    h = hashlib.sha256()
    for g in groups:
        h.update(canonical_json(g.to_json()).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def with_score_args(data: str, score_args: Mapping[str, Any] | None) -> str:
    """The fingerprint a task's comparability rests on: ``data`` (its :func:`data_fingerprint`)
    alone for a task without score arguments, else sha256 of both (``{"data": ..., "score_args":
    {...}}``, the value results.json files written before the score arguments were recorded apart
    hold as their data fingerprint, so their task keys stay what they were)."""
    if not score_args:
        return data
    return hashlib.sha256(canonical_json({"data": data, "score_args": dict(score_args)}).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PairIndex:
    """All pairs of a task as flat index arrays into the task's response-level reward vector.

    ``diff_better``/``diff_worse``/``diff_group``: discrimination pairs and their group number.
    ``eq_a``/``eq_b``/``eq_group``: specificity pairs and their group number.
    ``response_group``: for each response (flattened in group order) its group number;
    ``response_length``: its length in characters.
    ``diff_cross``/``eq_cross``: whether a pair's two responses have different forms (groups
    with :attr:`ComparisonGroup.forms`; False elsewhere).
    ``flip_a``/``flip_b`` with ``flip_oa``/``flip_ob`` and ``flip_group``: each discrimination
    pair of two rewrites of one form, beside the pair of the originals they rewrite.
    """

    response_group: np.ndarray
    diff_better: np.ndarray
    diff_worse: np.ndarray
    diff_group: np.ndarray
    eq_a: np.ndarray
    eq_b: np.ndarray
    eq_group: np.ndarray
    response_length: np.ndarray
    diff_cross: np.ndarray
    eq_cross: np.ndarray
    flip_a: np.ndarray
    flip_b: np.ndarray
    flip_oa: np.ndarray
    flip_ob: np.ndarray
    flip_group: np.ndarray
    response_source: np.ndarray | None = None
    """Of a selection (:meth:`select_groups`): each response's index in the task's reward vector."""

    @property
    def n_groups(self) -> int:
        return len(self._counts[0])

    @property
    def has_forms(self) -> bool:
        """Whether any pair joins two forms (a task of rewrites)."""
        return bool(self.eq_cross.any() or self.diff_cross.any())

    @cached_property
    def _counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Responses, discrimination pairs, specificity pairs and flip pairs per group: fixed, and
        needed by every bootstrap draw, so counted once."""
        n = int(self.response_group.max()) + 1 if len(self.response_group) else 0
        return (np.bincount(self.response_group, minlength=n), np.bincount(self.diff_group, minlength=n),
                np.bincount(self.eq_group, minlength=n), np.bincount(self.flip_group, minlength=n))

    @cached_property
    def _starts(self) -> tuple[np.ndarray, ...]:
        """Where each group's responses and pairs start in the flat arrays (for :func:`segment_gather`)."""
        return tuple(segment_starts(c) for c in self._counts)

    @classmethod
    def from_groups(cls, groups: Sequence[ComparisonGroup]) -> PairIndex:
        parts: dict[str, list[AnyArray]] = {k: [] for k in ("db", "dw", "dg", "dx", "ea", "eb", "eg", "ex")}
        flips: list[tuple[int, int, int, int, int]] = []
        for gi, (g, where) in enumerate(zip(groups, group_slices(groups))):
            offset = where.start
            better, worse, a, b = g.pair_arrays()
            for key, value in (("db", better + offset), ("dw", worse + offset), ("dg", np.full(len(better), gi)),
                               ("ea", a + offset), ("eb", b + offset), ("eg", np.full(len(a), gi))):
                parts[key].append(value)
            if g.forms is None:
                parts["dx"].append(np.zeros(len(better), dtype=bool))
                parts["ex"].append(np.zeros(len(a), dtype=bool))
                continue
            forms = np.array(g.forms, dtype=object)
            parts["dx"].append(forms[better] != forms[worse])
            parts["ex"].append(forms[a] != forms[b])
            if g.rewrite_of is not None:
                for x, y in zip(better.tolist(), worse.tolist()):
                    if g.forms[x] == g.forms[y] != ORIGINAL:
                        flips.append((offset + x, offset + y, offset + g.rewrite_of[x], offset + g.rewrite_of[y], gi))

        def arr(x: list[Any], dtype: DTypeLike = np.int64) -> AnyArray:
            return np.asarray(x, dtype=dtype)

        def joined(key: str, dtype: DTypeLike = np.int64) -> AnyArray:
            return np.concatenate(parts[key]).astype(dtype) if parts[key] else arr([], dtype)

        sizes = [len(g.responses) for g in groups]
        response_group = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
        lengths = arr([len(r) for g in groups for r in g.responses], np.float64)
        fa, fb, foa, fob, fg = (arr(list(c)) for c in zip(*flips)) if flips else (arr([]),) * 5
        return cls(response_group, joined("db"), joined("dw"), joined("dg"), joined("ea"), joined("eb"), joined("eg"),
                   lengths, joined("dx", bool), joined("ex", bool), fa, fb, foa, fob, fg)

    def select_groups(self, group_ids: np.ndarray) -> PairIndex:
        """The pairs of the given groups (with repeats, as a bootstrap resample needs).

        Repeated groups get fresh response indices, so the result indexes the reward vector
        returned by :meth:`gather_rewards` for the same ``group_ids``. Pairs are stored in
        group order (``from_groups`` builds them so, and so does this), which the gathers rely on.
        """
        sel = np.asarray(group_ids, dtype=np.int64)
        counts, starts = self._counts, self._starts
        resp_src, resp_pos = segment_gather(counts[0], sel, starts[0])
        new_start = np.searchsorted(resp_pos, np.arange(len(sel)))  # first new response index of each pick
        old_start = resp_src[new_start] if resp_src.size else np.zeros(len(sel), np.int64)
        shift = new_start - old_start  # new response index = old index + shift of its pick

        def take(k: int, *indices: IntArray) -> tuple[IntArray, IntArray, list[IntArray]]:
            if not len(indices[0]):  # e.g. no flip pairs: a task without rewrites
                return indices[0], indices[0], list(indices)
            src, pos = segment_gather(counts[k], sel, starts[k])
            return src, pos, [idx[src] + shift[pos] for idx in indices]

        d_src, dg, (db, dw) = take(1, self.diff_better, self.diff_worse)
        e_src, eg, (ea, eb) = take(2, self.eq_a, self.eq_b)
        _, fg, (fa, fb, foa, fob) = take(3, self.flip_a, self.flip_b, self.flip_oa, self.flip_ob)
        return PairIndex(resp_pos, db, dw, dg, ea, eb, eg, self.response_length[resp_src], self.diff_cross[d_src],
                         self.eq_cross[e_src], fa, fb, foa, fob, fg, resp_src)

    def gather_rewards(self, rewards: np.ndarray, group_ids: np.ndarray) -> np.ndarray:
        """The response-level rewards of the given groups, concatenated in that order."""
        src, _ = segment_gather(self._counts[0], np.asarray(group_ids, dtype=np.int64), self._starts[0])
        gathered: AnyArray = np.asarray(rewards)[src]
        return gathered


def segment_starts(counts: np.ndarray) -> np.ndarray:
    """The flat index where each segment of ``counts`` items starts."""
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def segment_gather(counts: np.ndarray, picks: np.ndarray,
                   starts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate whole segments of a flat array, segment by segment, with repeats allowed.

    Segment k holds ``counts[k]`` consecutive items (starting at ``starts[k]``, computed when not
    given). Returns the flat indices of the items of segments ``picks[0], picks[1], ...`` in that
    order, and for each the position in ``picks``.
    """
    starts = segment_starts(counts) if starts is None else starts
    c = counts[picks]
    total = int(c.sum())
    pos = np.repeat(np.arange(len(picks)), c)
    within = np.arange(total) - np.repeat(np.cumsum(c) - c, c)
    return starts[picks][pos] + within, pos
