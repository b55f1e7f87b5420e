"""The built-in judge protocols as records: RewardBench 2's ratings, Ties ratings and best-of-4,
JudgeBench's arena_hard and vanilla; ProcessBench's chat PRM (steps) and critic; VL-RewardBench's and
Multimodal RewardBench's one-game pairwise protocols with images.

Each is a :class:`~rmbench.models.judge.judge_protocol.JudgeProtocol` over the pure functions of
:mod:`~rmbench.models.judge.rewardbench2` and :mod:`~rmbench.models.judge.judgebench`, with the
official client it reproduces: ``rewardbench/generative_v2.py`` at reward-bench 05a9005
(``get_single_rating``: ``max_tokens=1024``; ``run_judge_four`` -> ``chat_completion_openai``:
``n=1, max_tokens=2048``) and JudgeBench's ``utils/judges.py`` at e2c52c2 (``ArenaHard``:
``max_tokens=4096``; ``Vanilla``: ``top_p=1.0, max_tokens=1024``); all at temperature 0, no seed.
ProcessBench at e802463 (:mod:`~rmbench.models.judge.processbench`): ``run_eval_prm_rlhflow.py``
sends ``n=1, temperature=0., max_tokens=1``; ``run_eval.py`` samples ``temperature=0.,
max_tokens=8192, seed=42`` (32768 for QwQ: give ``max_tokens``).
Each ``text`` is the string whose sha256 the judge's identity has held since before the
registry, so cached scores and calls stay hits.
"""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.models.judge import judgebench as JB
from rmbench.models.judge import multimodal as MM
from rmbench.models.judge import processbench as PB
from rmbench.models.judge import rewardbench2 as RB2
from rmbench.models.judge.judge_protocol import JudgeProtocol, Messages, Official
from rmbench.models.judge.wire import MIME_FROM_NAME

TIES_SUBSETS = ("Ties", "tied", "ref")
"""Subsets of RewardBench 2's Ties rows: ``Ties`` in the ``rewardbench2`` task, ``tied``/``ref``
in the ``ties`` task; RewardBench 2's rating protocol asks them with its Ties prompt."""

_RATINGS_CLIENT = Official("RewardBench 2 run_generative_v2.py (ratings)", 1024)


def _rating(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return RB2.rating_messages(question, answers[0], subset in TIES_SUBSETS)


def _ties_rating(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return RB2.rating_messages(question, answers[0], True)


def _fourway(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return RB2.fourway_messages(question, answers)


def _pair(protocol: str):
    def messages(question: str, answers: Sequence[str], subset: str | None) -> Messages:
        return JB.pair_messages(protocol, question, answers[0], answers[1])
    return messages


def _verdict(protocol: str):
    def parse(text: str) -> str | None:
        return JB.parse_verdict(protocol, text)
    return parse


def _arena_hard_follow_up(messages: Messages, read: str, reply: str) -> Messages | None:
    """``ArenaHard.get_judgment``: a reply with no ``[[label]]`` in ``read`` is followed by the
    reply as the assistant's turn and a request to finish, once (``ARENA_HARD_ATTEMPTS``)."""
    if len(messages) > 2 or not JB.needs_continuation("arena_hard", read):
        return None  # already a follow-up, or a label was given
    return JB.continue_messages(messages, reply)


def _pair_text(protocol: str) -> str:
    return repr(JB.pair_messages(protocol, "{question}", "{answer_a}", "{answer_b}"))


RB2_RATINGS = JudgeProtocol(
    "rewardbench2", "rating", _rating, RB2.parse_rating,
    RB2.RATINGS_PROMPT + RB2.RATINGS_PROMPT_TIES + RB2.RATINGS_SYSTEM_PROMPT,
    scale=(1, 10), official=_RATINGS_CLIENT, expected=RB2.expected_rating)

RB2_TIES_RATINGS = JudgeProtocol(
    "rewardbench2_ties", "rating", _ties_rating, RB2.parse_rating,
    RB2.RATINGS_PROMPT_TIES + RB2.RATINGS_SYSTEM_PROMPT,
    scale=(1, 10), official=_RATINGS_CLIENT, expected=RB2.expected_rating)

RB2_FOURWAY = JudgeProtocol(
    "rewardbench2", "fourway", _fourway, RB2.parse_fourway, RB2.FOURWAY_SYSTEM_PROMPT + RB2.FOURWAY_TEMPLATE,
    official=Official("RewardBench 2 run_generative_v2.py (best-of-4)", 2048, n=1))

ARENA_HARD = JudgeProtocol(
    "arena_hard", "pairwise", _pair("arena_hard"), _verdict("arena_hard"), _pair_text("arena_hard"),
    official=Official("JudgeBench run_judge.py (arena_hard)", 4096), follow_up=_arena_hard_follow_up)

VANILLA = JudgeProtocol(
    "vanilla", "pairwise", _pair("vanilla"), _verdict("vanilla"), _pair_text("vanilla"),
    official=Official("JudgeBench run_judge.py (vanilla)", 1024, top_p=1.0))


def _steps(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return PB.step_messages(question, answers)


def _critic(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return PB.critic_messages(question, answers)


def _step_verdict(text: str) -> float:
    return 1.0 if PB.parse_step(text) == PB.PLUS else 0.0


STEPS_RLHFLOW = JudgeProtocol(
    "rlhflow", "steps", _steps, _step_verdict, PB.STEP_PROMPT_TEXT,
    official=Official("ProcessBench run_eval_prm_rlhflow.py (RLHFlow PRM)", 1, n=1), probability=PB.plus_probability)

CRITIC_PROCESSBENCH = JudgeProtocol(
    "processbench", "critic", _critic, PB.parse_critic, PB.CRITIQUE_TEMPLATE,
    official=Official("ProcessBench run_eval.py (critic)", 8192, seed=42))


# --- the multimodal benchmarks' one-game protocols (rmbench.models.judge.multimodal) ---------------

def _vlrb(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return MM.vlrb_messages(question, answers[0], answers[1])


def _mmrb(question: str, answers: Sequence[str], subset: str | None) -> Messages:
    return MM.mmrb_messages(question, answers[0], answers[1])


VL_REWARDBENCH = JudgeProtocol(
    "vl_rewardbench", "pairwise", _vlrb, MM.vlrb_verdict, MM.VLRB_PROMPT + MM.VLRB_PATTERN.pattern,
    official=Official("VL-RewardBench inference_hf.py", 2048, top_p=0.2, temperature=0.2, extra=(("stream", False),)),
    order="random", samples=10, image_mime=MM.VLRB_IMAGE_MIME)
"""VL-RewardBench's ``inference_hf.py`` (9b10abd): temperature 0.2, top_p 0.2, max_tokens 2048,
``stream: false``, no seed; the answer order drawn per sample, ``--k 10`` samples per item (its README's), every image
labelled ``image/png``."""

MM_REWARDBENCH = JudgeProtocol(
    "mm_rewardbench", "pairwise", _mmrb, MM.mmrb_verdict, MM.MMRB_PROMPT,
    official=Official("Multimodal RewardBench 1_run_model_as_judge_gpt4o.py", 1024, temperature=None),
    order="file", image_mime=MIME_FROM_NAME)
"""Multimodal RewardBench's ``scripts/1_run_model_as_judge_gpt4o.py``: max_tokens 1024, no
temperature (the server's default), no seed; one game in the file's order (Output1 as A), one
sample (``--num-samples 1``, the only one ``2_get_accuracy.py`` reads), each image labelled with the
type its file name says."""
