"""How an LLM judge's replies on one task were read and scored: :class:`JudgeReplies`.

A judge's reply can be cut off by ``max_tokens`` (``finish_reason: length``), hold a reasoning
block (``<think>...</think>``, or the server's separate ``reasoning_content``), or hold no verdict
the protocol's rule can read. How such replies count depends on the judge's ``fidelity``
(``official``: as the official client reads and scores them; ``strict``: a cut-off reply or a
label inside ``<think>`` is never a verdict). results.json records these counts per task so that
a score never hides how many of its replies were read at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JudgeReplies:
    """Counts of one task's judge replies (each call once, follow-ups included) and how they were read."""

    fidelity: str
    """``official`` (read and scored as the official client does), ``strict`` (rmbench's stricter
    reading) or ``template`` (a prompt file, read strictly by the grade its front matter declares)."""
    calls: int
    """Replies behind the task's rewards (a call shared by two responses of a pair counts once)."""
    cut_off: int
    """Replies cut off by ``max_tokens`` (``finish_reason: length``)."""
    think: int
    """Replies with a reasoning block (``<think>`` in the text, or reasoning the server returned apart)."""
    no_verdict: int
    """Replies from which the protocol's rule read no verdict (rating, label, slot)."""
    responses_no_verdict: int
    """Responses whose value rests on at least one reply with no verdict."""
    left_out: int
    """Responses given no reward (left out of the pairs and official scores)."""
    reading: str
    """How a cut-off reply and a ``<think>`` block were read, in words."""
    no_verdict_scored: str
    """How a reply with no verdict was scored, in words."""

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def has_think(text: str | None, reasoning: str | None) -> bool:
    """Whether a reply carries a reasoning block: reasoning returned apart, or ``<think>`` in its text."""
    return reasoning is not None or "<think>" in (text or "")


def count_replies(rows: Iterable[Mapping[str, Any]], left_out: int, fidelity: str, reading: str,
                  no_verdict_scored: str) -> JudgeReplies:
    """:class:`JudgeReplies` from a task's judgment rows (one per response and call: ``call``,
    ``text``, ``reasoning``, ``finish_reason``, ``parsed``, ``group_id``, ``response_index``)."""
    calls: dict[str, Mapping[str, Any]] = {}
    responses: set[tuple[Any, Any]] = set()
    for row in rows:
        calls.setdefault(str(row["call"]), row)
        if row.get("parsed") is None:
            responses.add((row.get("group_id"), row.get("response_index")))
    replies = list(calls.values())
    return JudgeReplies(
        fidelity=fidelity, calls=len(replies),
        cut_off=sum(r.get("finish_reason") == "length" for r in replies),
        think=sum(has_think(r.get("text"), r.get("reasoning")) for r in replies),
        no_verdict=sum(r.get("parsed") is None for r in replies),
        responses_no_verdict=len(responses), left_out=int(left_out), reading=reading,
        no_verdict_scored=no_verdict_scored)
