"""What a judge asks and how its answer becomes a value: one :class:`Protocol` per mode and prompt.

A protocol turns one :class:`~rmbench.models.base.ScoreRequest` into the chat requests it needs
(:meth:`Protocol.calls`) and their answers into the request's value (:meth:`Protocol.value`).
Values are what :class:`~rmbench.models.judge.adapter.JudgeRM` returns as rewards:

* ``rating`` (RewardBench 2, :mod:`~rmbench.models.judge.rewardbench2`): one call per response
  (``n`` calls, seeds ``seed .. seed+n-1``); the value is the mean of the parsed 1-10 ratings,
  or with ``score: expected`` of the expected ratings from ``top_logprobs``;
* ``pairwise`` (JudgeBench, :mod:`~rmbench.models.judge.judgebench`): a group of two responses
  is one pair judged in both orders (game 1 puts first the response whose seeded hash is lower,
  game 2 swaps them); the two verdicts combine into v in {+1, 0, -1} (JudgeBench's rule) and the
  values are +v/2 and -v/2, so that r(a) - r(b) = v;
* ``fourway`` (RewardBench 2's best-of-4): a group of four responses is one call, its answers
  placed in slots by a seeded permutation of the group's texts; the value is 1 for the
  response in the chosen slot, 0 for the others.

An answer that does not parse (also a reasoning judge cut off by ``max_tokens``:
``finish_reason: length``) gives no value (None), unless ``unparsed: rewardbench``, which
scores an unparsed rating -1 and an unparsed best-of-4 answer as no winner (every value 0), as
RewardBench 2's scripts do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmbench.core.types import Prompt
from rmbench.errors import ConfigError
from rmbench.models.base import ScoreRequest
from rmbench.models.judge import judgebench as JB
from rmbench.models.judge import rewardbench2 as RB2
from rmbench.models.judge.client import ChatReply, ChatRequest

MODES = ("rating", "pairwise", "fourway")
DEFAULT_PROMPT = {"rating": "rewardbench2", "pairwise": "vanilla", "fourway": "rewardbench2"}
NAMED_PROMPTS = {"rating": ("rewardbench2",), "pairwise": JB.PROTOCOLS, "fourway": ("rewardbench2",)}
FILE_FIELDS = {"rating": ("question", "answer"), "pairwise": ("question", "answer_a", "answer_b"),
               "fourway": ("question", "answer_a", "answer_b", "answer_c", "answer_d")}
TIES_SUBSETS = ("Ties", "tied", "ref")
"""Subsets of RewardBench 2's Ties rows: ``Ties`` in the ``rewardbench2`` task, ``tied``/``ref``
in the ``ties`` task; a rating judge asks them with RewardBench 2's Ties prompt."""


def question_text(prompt: Prompt) -> str:
    """The prompt as the judge's question: a string as it is; a conversation's single user turn
    as its content, longer conversations as ``role: content`` turns."""
    if isinstance(prompt, str):
        return prompt
    if len(prompt) == 1 and prompt[0].role == "user":
        return prompt[0].content
    return "\n\n".join(f"{m.role}: {m.content}" for m in prompt)


def _hash(*parts: Any) -> str:
    return hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()


def answer_text(reply: ChatReply) -> str:
    """The part of a reply that holds the verdict: after a reasoning judge's ``<think>`` block,
    or the content when the server returns the reasoning apart; "" for an answer cut off by
    ``max_tokens`` (never a verdict)."""
    if reply.finish_reason == "length":
        return ""
    return JB.strip_reasoning(reply.text, reply.reasoning)


@dataclass(frozen=True)
class Protocol:
    """A mode with its prompt (a named protocol or a template file's text) and sampling."""

    mode: str
    prompt: str
    template: str | None
    max_tokens: int
    temperature: float
    n: int
    seed: int
    score: str
    unparsed: str

    @classmethod
    def make(cls, mode: str, prompt: str | None, max_tokens: int | None, temperature: float, n: int, seed: int,
             score: str, unparsed: str) -> Protocol:
        if mode not in MODES:
            raise ConfigError(f"judge mode must be one of {', '.join(MODES)}, got {mode!r}")
        prompt = prompt or DEFAULT_PROMPT[mode]
        template = None
        if prompt not in NAMED_PROMPTS[mode]:
            template = _read_template(prompt, mode)
        if score not in ("rating", "expected") or (score == "expected" and mode != "rating"):
            raise ConfigError(f"judge score must be 'rating' or, in mode rating, 'expected', got {score!r}")
        if unparsed not in ("skip", "rewardbench"):
            raise ConfigError(f"judge unparsed must be 'skip' (leave the response out) or 'rewardbench' "
                              f"(score it as RewardBench 2 does), got {unparsed!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1 or (n > 1 and mode != "rating"):
            raise ConfigError(f"judge n (ratings averaged) must be a positive integer, and 1 outside mode rating; "
                              f"got {n!r}")
        if max_tokens is None:
            max_tokens = 2048 if mode != "rating" else 1024
        return cls(mode, prompt, template, int(max_tokens), float(temperature), n, int(seed), score, unparsed)

    def identity(self) -> dict[str, Any]:
        """The prompt's text (a named protocol by name and its module's text hash) and the sampling."""
        return {"mode": self.mode, "prompt": self.prompt if self.template is None else {"template": self.template},
                "prompt_sha256": _hash(self.template if self.template is not None else self._named_text()),
                "max_tokens": self.max_tokens, "temperature": self.temperature, "n": self.n, "seed": self.seed,
                "score": self.score, "unparsed": self.unparsed}

    def _named_text(self) -> str:
        if self.mode == "rating":
            return RB2.RATINGS_PROMPT + RB2.RATINGS_PROMPT_TIES + RB2.RATINGS_SYSTEM_PROMPT
        if self.mode == "fourway":
            return RB2.FOURWAY_SYSTEM_PROMPT + RB2.FOURWAY_TEMPLATE
        return repr(JB.pair_messages(self.prompt, "{question}", "{answer_a}", "{answer_b}"))

    # --- requests -----------------------------------------------------------------------------
    def _request(self, messages: Sequence[tuple[str, str]], seed: int) -> ChatRequest:
        return ChatRequest(tuple(messages), self.max_tokens, self.temperature, seed,
                           top_logprobs=20 if self.score == "expected" else None)

    def calls(self, req: ScoreRequest) -> tuple[list[ChatRequest], dict[str, Any]]:
        """The chat requests behind ``req``'s value, and what the judgments record about them
        (the pair's order, the best-of-4 slots)."""
        q = question_text(req.prompt)
        if self.mode == "rating":
            messages = self._rating_messages(q, req.response, req.subset in TIES_SUBSETS)
            return [self._request(messages, self.seed + i) for i in range(self.n)], {}
        if self.mode == "pairwise":
            first, second = self.pair_order(req)
            return [self._request(self._pair_messages(q, first, second), self.seed),
                    self._request(self._pair_messages(q, second, first), self.seed)], {}
        texts = self.fourway_texts(req)
        return [self._request(self._fourway_messages(q, texts), self.seed)], {}

    def _rating_messages(self, q: str, answer: str, ties: bool):
        if self.template is None:
            return RB2.rating_messages(q, answer, ties)
        return (("user", self.template.format(question=q, answer=answer)),)

    def _pair_messages(self, q: str, a: str, b: str):
        if self.template is None:
            return JB.pair_messages(self.prompt, q, a, b)
        return (("user", self.template.format(question=q, answer_a=a, answer_b=b)),)

    def _fourway_messages(self, q: str, texts: Sequence[str]):
        if self.template is None:
            return RB2.fourway_messages(q, texts)
        return (("user", self.template.format(question=q, **dict(zip(FILE_FIELDS["fourway"][1:], texts)))),)

    def pair_order(self, req: ScoreRequest) -> tuple[str, str]:
        """The pair's two texts, game 1's first answer first: the lower seeded hash goes first."""
        if len(req.context) != 1:
            raise ConfigError(f"judge mode pairwise judges groups of two responses; group {req.group_id!r} has "
                              f"{len(req.context) + 1} (use mode rating, or fourway for groups of four)")
        a, b = req.response, req.context[0]
        return (a, b) if _hash(self.seed, a) <= _hash(self.seed, b) else (b, a)

    def fourway_texts(self, req: ScoreRequest) -> list[str]:
        """The group's four texts in their slots (A-D), as RewardBench 2 places them: the row's
        first answer (a RewardBench 2 row lists its correct answer first) swapped with the slot
        :func:`~rmbench.models.judge.rewardbench2.fourway_slots` draws from the seed and the row's
        texts, so the four requests of a group make the same call."""
        if len(req.context) != 3:
            raise ConfigError(f"judge mode fourway (RewardBench 2's best-of-4) judges groups of four responses; "
                              f"group {req.group_id!r} has {len(req.context) + 1}")
        if req.subset in TIES_SUBSETS:
            raise ConfigError(f"group {req.group_id!r} is a Ties row, which RewardBench 2 scores by rating only: use "
                              f"mode rating")
        row = [*req.context[:req.index], req.response, *req.context[req.index:]]  # the group's order
        slots = RB2.fourway_slots(4, _hash(req.prompt, *row), self.seed)
        placed = [""] * 4
        for text, slot in zip(row, slots):
            placed[slot] = text
        return placed

    # --- values -------------------------------------------------------------------------------
    def continuation(self, call: ChatRequest, reply: ChatReply) -> ChatRequest | None:
        """The follow-up JudgeBench's arena_hard judge sends when a reply holds no verdict label:
        the reply as the assistant's turn and a request to finish (asked once), else None."""
        if self.mode != "pairwise" or not JB.needs_continuation(self._verdict_rule(), answer_text(reply)):
            return None
        if reply.finish_reason == "length" or len(call.messages) > 2:
            return None  # cut off (never a verdict), or already a follow-up
        return ChatRequest(JB.continue_messages(call.messages, reply.text), call.max_tokens, call.temperature,
                           call.seed, call.top_logprobs)

    def value(self, req: ScoreRequest, chains: Sequence[Sequence[ChatReply]]) -> tuple[float | None, list[Any]]:
        """``req``'s value from the replies to its calls (one chain per call: the reply, and a
        follow-up's), or None for no value; and each call's parsed value."""
        if self.mode == "rating":
            return self._rating_value([chain[0] for chain in chains])
        if self.mode == "pairwise":
            first, _ = self.pair_order(req)
            # JudgeBench parses a game's replies accumulated as "\n" + reply_1 + "\n" + reply_2.
            verdicts = [JB.parse_verdict(self._verdict_rule(), "".join("\n" + answer_text(r) for r in chain))
                        for chain in chains]
            v = JB.combine_games(verdicts[0], verdicts[1])
            if v is None:
                if self.unparsed != "rewardbench":
                    return None, verdicts
                v = 0  # as JudgeBench counts a pair without a verdict: not correct
            return (0.5 * v if req.response == first else -0.5 * v), verdicts
        slot = RB2.parse_fourway(answer_text(chains[0][0]))
        if slot is None:
            return (0.0 if self.unparsed == "rewardbench" else None), [slot]
        texts = self.fourway_texts(req)
        return float(texts[RB2.FOURWAY_SLOTS.index(slot)] == req.response), [slot]

    def _verdict_rule(self) -> str:
        return self.prompt if self.template is None else "arena_hard"

    def _rating_value(self, replies: Sequence[ChatReply]) -> tuple[float | None, list[Any]]:
        parsed: list[float | None] = []
        for r in replies:
            if self.score == "expected":
                parsed.append(None if r.finish_reason == "length" or r.top_logprobs is None
                              else RB2.expected_rating(r.top_logprobs))
            else:
                rating = RB2.parse_rating(answer_text(r))
                parsed.append(None if rating is None else float(rating))
        if self.unparsed == "rewardbench":
            parsed = [-1.0 if p is None else p for p in parsed]
        values = [p for p in parsed if p is not None]
        return (sum(values) / len(values) if values else None), parsed


def _read_template(prompt: str, mode: str) -> str:
    """A prompt file's text, checked for the mode's fields (``{question}``, ``{answer}``...)."""
    path = Path(prompt)
    if not path.is_file():
        named = ", ".join(NAMED_PROMPTS[mode])
        raise ConfigError(f"judge prompt {prompt!r} is neither a named {mode} protocol ({named}) nor a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"judge prompt {prompt}: cannot read it ({exc})") from None
    fields = FILE_FIELDS[mode]
    try:
        text.format(**{f: "" for f in fields})
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"judge prompt {prompt}: a {mode} template may use only "
                          f"{', '.join('{' + f + '}' for f in fields)} (double other braces); {type(exc).__name__}: "
                          f"{exc}"
                          ) from None
    missing = [f for f in fields if "{" + f + "}" not in text]
    if missing:
        raise ConfigError(f"judge prompt {prompt}: a {mode} template needs {', '.join('{' + f + '}' for f in missing)}")
    return text
