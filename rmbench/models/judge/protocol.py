"""What a judge asks and how its answer becomes a value: one :class:`Protocol` per mode and prompt.

A protocol turns one :class:`~rmbench.models.base.ScoreRequest` into the chat requests it needs
(:meth:`Protocol.calls`) and their answers into the request's value (:meth:`Protocol.value`).
Values are what :class:`~rmbench.models.judge.adapter.JudgeRM` returns as rewards:

* ``rating`` (RewardBench 2, :mod:`~rmbench.models.judge.rewardbench2`): one call per response
  (``n`` calls, seeds ``seed .. seed+n-1``); the value is the mean of the parsed grades (1-10
  for RewardBench 2's; a grade outside the protocol's scale is no verdict), or with
  ``score: expected`` of the expected ratings from ``top_logprobs``;
* ``pairwise`` (JudgeBench, :mod:`~rmbench.models.judge.judgebench`): a group of two responses
  is one pair judged in both orders (game 1 puts first the response whose seeded hash is lower,
  game 2 swaps them); the two verdicts combine into v in {+1, 0, -1} (JudgeBench's rule) and the
  values are +v/2 and -v/2, so that r(a) - r(b) = v; a one-game protocol (its record's ``order``
  ``file`` or ``random``: Multimodal RewardBench's, VL-RewardBench's) asks the pair once per
  sample (K = ``n`` samples), in the file's order or in an order drawn per sample from the seed
  (:meth:`Protocol.draws`, recorded in every judgment), and v is +1 / -1 when more than half of the
  K answers pick the one / the other response, else 0 (VL-RewardBench's ``cal.py`` majority);
* ``fourway`` (RewardBench 2's best-of-4): a group of four responses is one call, its answers
  placed in slots by a seeded permutation of the group's texts; the value is 1 for the
  response in the chosen slot, 0 for the others.

How a reply is read depends on ``fidelity``:

* ``official`` (the default for the named protocols): request for request and reply for reply as
  the official client (RewardBench 2's ``run_generative_v2.py``, JudgeBench's ``run_judge.py``):
  its ``max_tokens``, temperature, ``n``/``top_p`` where it sends them, no ``seed`` unless one
  is given; every reply parsed as its code parses the reply's content, whatever the finish
  reason and ``<think>`` text included; arena_hard asked once more when no label is found; and
  an answer with no verdict scored as its score does (``unparsed: official``: a rating -1, a
  best-of-4 row with no winner, a JudgeBench game with no decision);
* ``strict``: rmbench's stricter reading: a reply cut off by ``max_tokens``
  (``finish_reason: length``) is never a verdict, and only the text after a reasoning judge's
  last ``</think>`` is read; an answer with no verdict is left out (``unparsed: skip``).

What differs between protocols (the messages, the parse, the scale, the official client and its
sampling, a follow-up) is asked of the protocol's record, a
:class:`~rmbench.models.judge.judge_protocol.JudgeProtocol` from the registry or a template file
(:mod:`~rmbench.models.judge.template`); nothing here names a protocol. A template file is always
read strictly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rmbench.core.images import Image
from rmbench.core.prompts import prompt_images
from rmbench.core.types import Prompt
from rmbench.errors import ConfigError
from rmbench.models.base import ScoreRequest
from rmbench.models.judge import judgebench as JB
from rmbench.models.judge import one_game as G
from rmbench.models.judge import rewardbench2 as RB2
from rmbench.models.judge.builtin_protocols import TIES_SUBSETS
from rmbench.models.judge.client import ChatReply, ChatRequest
from rmbench.models.judge.judge_protocol import MODES
from rmbench.models.judge.protocol_settings import FIDELITIES, LOGPROB_SCORES, UNPARSED, ProtocolSettings

__all__ = ["FIDELITIES", "MODES", "TIES_SUBSETS", "UNPARSED", "Protocol", "answer_text", "question_text"]


def question_text(prompt: Prompt) -> str:
    """The prompt as the judge's question: a string as it is; a conversation's single user turn
    as its content, longer conversations as ``role: content`` turns."""
    if isinstance(prompt, str):
        return prompt
    if len(prompt) == 1 and prompt[0].role == "user":
        return prompt[0].content
    return "\n\n".join(f"{m.role}: {m.content}" for m in prompt)


_hash = G.seeded_hash


def answer_text(reply: ChatReply, fidelity: str = "strict") -> str:
    """The part of a reply that holds the verdict. ``official``: the reply's content as it is (the
    official clients read ``message.content``, whatever the finish reason). ``strict``: after a
    reasoning judge's last ``</think>``, or the content when the server returns the reasoning
    apart; "" for an answer cut off by ``max_tokens`` (never a verdict)."""
    if fidelity == "official":
        return reply.text
    if reply.finish_reason == "length":
        return ""
    return JB.strip_reasoning(reply.text, reply.reasoning)


@dataclass(frozen=True)
class Protocol(ProtocolSettings):
    """A judge protocol with its settings (:class:`~rmbench.models.judge.protocol_settings.ProtocolSettings`):
    the chat requests behind a score request, and the value its replies give."""

    # --- requests -----------------------------------------------------------------------------
    def _request(self, messages: Sequence[tuple[str, str]], seed: int | None,
                 images: tuple[Image, ...] = (), sample: int = 0) -> ChatRequest:
        """The request for ``messages``; the prompt's ``images`` go on its last user message (the
        one that holds the question), after its text."""
        messages = tuple(messages)
        attached: tuple[tuple[Image, ...], ...] = ()
        if images:
            last = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=len(messages) - 1)
            attached = tuple(images if i == last else () for i in range(len(messages)))
        return ChatRequest(messages, self.max_tokens, self.temperature, seed,
                           top_logprobs=20 if self.score in LOGPROB_SCORES else None, top_p=self.top_p, n=self.n_key,
                           images=attached, image_mime=self.spec.image_mime if attached else None, extra=self.extra,
                           sample=sample)

    def request(self, messages: Sequence[tuple[str, str]]) -> ChatRequest:
        """The chat request for ``messages`` under this protocol's sampling (its seed)."""
        return self._request(messages, self.seed)

    def calls(self, req: ScoreRequest) -> tuple[list[ChatRequest], dict[str, Any]]:
        """The chat requests behind ``req``'s value, and what the judgments record about them
        (the pair's order, the best-of-4 slots)."""
        q, images = question_text(req.prompt), prompt_images(req.prompt)
        if self.mode == "rating":
            messages = self.spec.messages(q, (req.response,), req.subset)
            seeds = [self.seed + i for i in range(self.n)] if self.seed is not None else [None]
            return [self._request(messages, seed, images) for seed in seeds], {}
        if self.mode == "pairwise" and self.spec.single_game:
            row = self.pair_row(req)
            return [self._request(self.spec.messages(q, row[::-1] if draw else row, req.subset),
                                  None if self.seed is None else self.seed + k, images, sample=k)
                    for k, draw in enumerate(self.draws(req))], {}
        if self.mode == "pairwise":
            first, second = self.pair_order(req)
            return [self._request(self.spec.messages(q, (first, second), req.subset), self.seed, images),
                    self._request(self.spec.messages(q, (second, first), req.subset), self.seed, images)], {}
        texts = self.fourway_texts(req)
        return [self._request(self.spec.messages(q, texts, req.subset), self.seed, images)], {}

    def pair_order(self, req: ScoreRequest) -> tuple[str, str]:
        """The pair's two texts, game 1's first answer first: the lower seeded hash goes first."""
        if len(req.context) != 1:
            raise ConfigError(f"judge mode pairwise judges groups of two responses; group {req.group_id!r} has "
                              f"{len(req.context) + 1} (use mode rating, or fourway for groups of four)")
        a, b = req.response, req.context[0]
        return (a, b) if _hash(self.order_seed, a) <= _hash(self.order_seed, b) else (b, a)

    def pair_row(self, req: ScoreRequest) -> tuple[str, str]:
        """The pair's two texts in the group's (the file's) order, for a one-game protocol."""
        return G.pair_row(req, self.prompt)

    def draws(self, req: ScoreRequest) -> tuple[int, ...]:
        """Each sample's order (:func:`~rmbench.models.judge.one_game.draws`, seeded by the seed, 0
        when none is given): 0 the file's order, 1 swapped, as the official ``random_number``."""
        return G.draws(self.spec.order, self.order_seed, question_text(req.prompt), req.prompt, self.pair_row(req),
                       self.n)

    def judgment_fields(self, req: ScoreRequest, i: int) -> dict[str, Any]:
        """What a judgments.jsonl row records of call ``i`` behind ``req`` (its order or slot, its
        sample, a one-game protocol's draw)."""
        if self.mode == "pairwise" and self.spec.single_game:
            draw = self.draws(req)[i]
            return {"order": "AB" if G.shown_first(req.index, draw) else "BA", "sample": i, "draw": draw}
        if self.mode == "pairwise":
            first, _ = self.pair_order(req)
            return {"order": "AB" if (req.response == first) == (i == 0) else "BA"}  # where this response stood
        if self.mode == "fourway":
            return {"slot": "ABCD"[self.fourway_texts(req).index(req.response)]}
        return {"sample": i} if self.n > 1 else {}

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
        slots = RB2.fourway_slots(4, _hash(req.prompt, *row), self.order_seed)
        placed = [""] * 4
        for text, slot in zip(row, slots):
            placed[slot] = text
        return placed

    # --- values -------------------------------------------------------------------------------
    def continuation(self, call: ChatRequest, reply: ChatReply) -> ChatRequest | None:
        """The follow-up the protocol sends after ``reply`` (JudgeBench's arena_hard, when a reply
        holds no verdict label: the reply as the assistant's turn and a request to finish, once),
        else None. ``official``: whatever the finish reason, the label searched in the whole reply
        (as ``ArenaHard.get_judgment`` does); ``strict``: never after a cut-off reply."""
        if self.spec.follow_up is None:
            return None
        if self.fidelity == "official" and reply.no_content:
            return None  # JudgeBench fails the game on a null content (it adds "\n" + None), asking nothing
        if self.fidelity != "official" and reply.finish_reason == "length":
            return None  # cut off: never a verdict, not asked again
        messages = self.spec.follow_up(call.messages, "\n" + answer_text(reply, self.fidelity), reply.text)
        if messages is None:
            return None
        return call.with_messages(tuple(messages))

    def value(self, req: ScoreRequest, chains: Sequence[Sequence[ChatReply]]) -> tuple[float | None, list[Any]]:
        """``req``'s value from the replies to its calls (one chain per call: the reply, and a
        follow-up's), or None for no value; and each call's parsed value."""
        if self.mode == "rating":
            return self._rating_value([chain[0] for chain in chains])
        if self.mode == "pairwise" and self.spec.single_game:
            return self._majority_value(req, chains)
        if self.mode == "pairwise":
            first, _ = self.pair_order(req)
            # JudgeBench parses a game's replies accumulated as "\n" + reply_1 + "\n" + reply_2.
            verdicts = [self._game_verdict(chain) for chain in chains]
            v = JB.combine_games(verdicts[0], verdicts[1])
            if v is None:
                if self.unparsed != "official":
                    return None, verdicts
                v = 0  # as JudgeBench counts a pair without a verdict: not correct
            return (0.5 * v if req.response == first else -0.5 * v) + 0.0, verdicts  # + 0.0: no -0.0
        slot = self.spec.parse(answer_text(chains[0][0], self.fidelity))
        if slot not in RB2.FOURWAY_SLOTS:
            return (0.0 if self.unparsed == "official" else None), [None]
        texts = self.fourway_texts(req)
        return float(texts[RB2.FOURWAY_SLOTS.index(slot)] == req.response), [slot]

    def _majority_value(self, req: ScoreRequest, chains: Sequence[Sequence[ChatReply]]
                        ) -> tuple[float | None, list[Any]]:
        """A one-game protocol's value from its K answers
        (:func:`~rmbench.models.judge.one_game.majority_value`) and each answer's verdict."""
        verdicts: list[str | None] = []
        for chain in chains:
            verdict = None if chain[0].no_content else self.spec.parse(answer_text(chain[0], self.fidelity))
            verdicts.append(verdict if verdict in ("A", "B") else None)
        value = G.majority_value(req.index, verdicts, self.draws(req), self.unparsed == "official")
        return value, list(verdicts)

    def _game_verdict(self, chain: Sequence[ChatReply]) -> str | None:
        """One game's decision from its replies (a follow-up's after the first), read as JudgeBench
        accumulates them: ``"\n" + reply_1 + "\n" + reply_2``. Officially, a reply with no content
        at all fails the game (JudgeBench's ``get_judgment`` raises on it: no decision)."""
        if self.fidelity == "official" and any(r.no_content for r in chain):
            return None
        verdict = self.spec.parse("".join("\n" + answer_text(r, self.fidelity) for r in chain))
        return None if verdict is None else str(verdict)

    def _grade(self, text: str) -> float | None:
        """The parsed grade, or None: no verdict, or a grade outside the protocol's scale."""
        grade = self.spec.parse(text)
        if grade is None:
            return None
        grade = float(grade)
        low, high = self.spec.scale if self.spec.scale is not None else (-math.inf, math.inf)
        return grade if low <= grade <= high and math.isfinite(grade) else None

    def _rating_value(self, replies: Sequence[ChatReply]) -> tuple[float | None, list[Any]]:
        parsed: list[float | None] = []
        for r in replies:
            if self.score == "expected":
                cut = r.finish_reason == "length" and self.fidelity != "official"
                expected = self.spec.expected
                assert expected is not None  # make() refuses score=expected without it
                parsed.append(None if cut or r.top_logprobs is None else expected(r.top_logprobs))
            else:
                parsed.append(self._grade(answer_text(r, self.fidelity)))
        # unparsed official: a rating with no verdict is -1, as RewardBench 2 records it (the
        # judgment keeps None: no verdict was read)
        values = [p if p is not None else -1.0 for p in parsed] if self.unparsed == "official" else \
            [p for p in parsed if p is not None]
        return (sum(values) / len(values) if values else None), parsed
